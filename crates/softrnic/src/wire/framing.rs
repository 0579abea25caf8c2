//! Which opcode (and which AETH) a packet carries at its position in a
//! message or READ response stream: one place for the rule the requester,
//! the responder and trains all follow.

use super::ext::Aeth;
use super::opcode::Opcode;
use super::psn::PSN_MASK;
use super::syndrome::Syndrome;

/// A message that carries data from the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrying {
    /// An RDMA WRITE.
    Write,
    /// A SEND.
    Send,
    /// A SEND with invalidate.
    SendInvalidate,
}

/// The opcode of a SEND or WRITE packet at a position in its message.
pub fn request_opcode(what: Carrying, first: bool, last: bool) -> Opcode {
    match (what, first, last) {
        (Carrying::SendInvalidate, true, true) => Opcode::SEND_ONLY_WITH_INVALIDATE,
        (Carrying::Send, true, true) => Opcode::SEND_ONLY,
        (Carrying::Send | Carrying::SendInvalidate, true, false) => Opcode::SEND_FIRST,
        (Carrying::Send | Carrying::SendInvalidate, false, false) => Opcode::SEND_MIDDLE,
        (Carrying::SendInvalidate, false, true) => Opcode::SEND_LAST_WITH_INVALIDATE,
        (Carrying::Send, false, true) => Opcode::SEND_LAST,
        (Carrying::Write, true, true) => Opcode::RDMA_WRITE_ONLY,
        (Carrying::Write, true, false) => Opcode::RDMA_WRITE_FIRST,
        (Carrying::Write, false, false) => Opcode::RDMA_WRITE_MIDDLE,
        (Carrying::Write, false, true) => Opcode::RDMA_WRITE_LAST,
    }
}

/// The opcode of a READ response at a position in its stream, and the
/// AETH (with `msn`) that the first and last carry.
pub fn read_response_framing(first: bool, last: bool, msn: u32) -> (Opcode, Option<Aeth>) {
    let opcode = match (first, last) {
        (true, true) => Opcode::RDMA_READ_RESPONSE_ONLY,
        (true, false) => Opcode::RDMA_READ_RESPONSE_FIRST,
        (false, false) => Opcode::RDMA_READ_RESPONSE_MIDDLE,
        (false, true) => Opcode::RDMA_READ_RESPONSE_LAST,
    };
    let aeth = (first || last).then_some(Aeth {
        syndrome: Syndrome::ACK,
        msn: msn & PSN_MASK,
    });
    (opcode, aeth)
}

//! The responder's checks of a request, one function each, in the order
//! the responder makes them (as Linux rxe's `resp_states` names them):
//! PSN ([`check_psn`]), opcode sequence ([`check_op_seq`]), payload length
//! ([`check_length`]), the RETH's DMA length ([`check_dma_len`]), and the
//! remote key with its bounds and access right ([`check_rkey`]). A check
//! that has a counter bumps it itself, so a refusal is counted wherever it
//! is found.

use core::cmp::Ordering;

use hwq::MemoryKey;

use super::{Context, InMessage, Responder};
use crate::memory::Need;
use crate::wire::{Operation, Position, Reth, psn_diff};

/// Largest RETH DMA length accepted.
pub(super) const MAX_DMA_LEN: u32 = 1 << 31;

/// Where a request's PSN stands against the expected one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PsnCheck {
    /// The expected PSN: execute it.
    Expected,
    /// Ahead of it (a request was lost): counted as out of sequence.
    Ahead,
    /// Behind it (executed already): counted as a duplicate.
    Duplicate,
}

/// The PSN check: `psn` against the responder's expected PSN.
pub(super) fn check_psn(cx: &Context<'_>, resp: &Responder, psn: u32) -> PsnCheck {
    match psn_diff(psn, resp.epsn).cmp(&0) {
        Ordering::Greater => {
            cx.stats.out_of_sequence.inc();
            PsnCheck::Ahead
        }
        Ordering::Less => {
            cx.stats.duplicates.inc();
            PsnCheck::Duplicate
        }
        Ordering::Equal => PsnCheck::Expected,
    }
}

/// The opcode sequence check: a request at position `pos` of operation
/// `op` may follow the message the responder is in (`msg`): a new message
/// only starts after the last one ended, and a message's later packets
/// continue a message of their own kind.
pub(super) fn check_op_seq(msg: InMessage, op: Operation, pos: Position) -> bool {
    match (msg, op) {
        (InMessage::None, _) => pos.starts_message(),
        (InMessage::Send { .. }, Operation::Send) | (InMessage::Write { .. }, Operation::Write) => {
            !pos.starts_message()
        }
        _ => false,
    }
}

/// The length check of a SEND or WRITE packet's payload of `n` bytes at
/// position `pos`: First and Middle carry exactly a PMTU, Last one byte to
/// a PMTU, Only at most a PMTU.
pub(super) fn check_length(pos: Position, n: usize, pmtu: usize) -> bool {
    match pos {
        Position::First | Position::Middle => n == pmtu,
        Position::Last => (1..=pmtu).contains(&n),
        Position::Only => n <= pmtu,
    }
}

/// The DMA length check of a RETH: at most [`MAX_DMA_LEN`].
pub(super) fn check_dma_len(reth: &Reth) -> bool {
    reth.dma_len <= MAX_DMA_LEN
}

/// The remote key check: `rkey` of protection domain `pd` is valid and
/// grants `need` over `len` bytes at `va` (true for `len` 0). A refusal is
/// counted (`remote_access_refused`).
pub(super) fn check_rkey(
    cx: &Context<'_>,
    pd: u32,
    rkey: u32,
    va: u64,
    len: u64,
    need: Need,
) -> bool {
    let ok = len == 0
        || cx
            .mem
            .keys
            .read()
            .check(MemoryKey(rkey), pd, va, len, need)
            .is_ok();
    cx.stats.remote_access_refused.inc_if(!ok);
    ok
}

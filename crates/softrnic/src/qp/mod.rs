//! Reliable-Connection queue pairs: state shared by the requester (sends
//! the SQ's work), the responder (executes the peer's requests) and the
//! completer (matches ACKs and read responses to SQ work), as Linux rxe
//! splits the engine.

mod flush;

use core::net::SocketAddrV4;

use hwq::{Consumer, RecvWqe, SendWqe};

pub use flush::flush;

/// A QP's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created: receives may be posted, nothing is sent.
    Init,
    /// Connected: the requester and responder run.
    Connected,
    /// Failed or flushed: all work completes as flushed.
    Error,
}

/// Where a QP's receives come from.
#[derive(Debug)]
pub enum Receives {
    /// Its own receive queue.
    Own(Consumer<RecvWqe>),
    /// A shared receive queue.
    Shared(u32),
}

/// Addressing of a connected QP, fixed by connection management.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    /// The peer's RoCEv2 endpoint (its address, UDP port 4791).
    pub remote: SocketAddrV4,
    /// The peer's QP number.
    pub remote_qpn: u32,
    /// Payload bytes per packet.
    pub pmtu: u32,
    /// First PSN we send.
    pub send_psn: u32,
    /// First PSN we expect.
    pub recv_psn: u32,
    /// RDMA READs we may have outstanding (ORD).
    pub outbound_reads: u32,
    /// RDMA READs we serve at once (IRD).
    pub inbound_reads: u32,
}

/// A queue pair.
#[derive(Debug)]
pub struct QueuePair {
    /// Protection domain.
    pub pd: u32,
    /// CQ for send-queue completions.
    pub send_cqn: u32,
    /// CQ for receive completions.
    pub recv_cqn: u32,
    /// The send queue.
    pub sq: Consumer<SendWqe>,
    /// Receive buffers.
    pub rq: Receives,
    /// Echoed in every CQE.
    pub context: u64,
    /// Lifecycle state.
    pub state: QpState,
    /// Set once connected.
    pub path: Option<Path>,
}

impl QueuePair {
    /// A new QP in [`QpState::Init`].
    pub fn new(
        pd: u32,
        send_cqn: u32,
        recv_cqn: u32,
        sq: Consumer<SendWqe>,
        rq: Receives,
        context: u64,
    ) -> Self {
        Self {
            pd,
            send_cqn,
            recv_cqn,
            sq,
            rq,
            context,
            state: QpState::Init,
            path: None,
        }
    }
}

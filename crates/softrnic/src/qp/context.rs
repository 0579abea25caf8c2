//! What the queue pairs' state machines work with instead of the device:
//! memory and keys, the counters, the completion queues and SRQs (and the
//! events they raise), the send doorbells, the outbox packets are recorded
//! in ([`crate::outbox`]), whether the runtime takes trains, and the time.
//!
//! The engine builds one per pass or per arrival from the device's parts
//! and hands it down; nothing under [`crate::qp`] reaches the device
//! itself, so the transport sits below the device in the module graph.

use hwq::{Cqe, RecvWqe, TryArc};

use super::{QueuePair, flush};
use crate::bitset::AtomicBitset;
use crate::cq::{CompletionQueue, Pushed};
use crate::env::Wake;
use crate::memory::DeviceMemory;
use crate::outbox::Outbox;
use crate::signals::{self, PendingEvents};
use crate::srq::SharedReceiveQueue;
use crate::stats::Counters;
use crate::table::Table;

/// The transport's view of its device for one arrival or pass.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    /// Key table and DMA (shared with trains in flight).
    pub(crate) mem: &'a TryArc<DeviceMemory>,
    /// The counters.
    pub(crate) stats: &'a Counters,
    /// Completion queues.
    pub(crate) cqs: &'a Table<CompletionQueue>,
    /// Shared receive queues.
    pub(crate) srqs: &'a Table<SharedReceiveQueue>,
    /// Events raised for delivery.
    pub(crate) events: &'a PendingEvents,
    /// QPs whose send side has work (the send doorbells).
    pub(crate) sq_ready: &'a AtomicBitset,
    /// Asks for the device's poll.
    pub(crate) waker: &'a dyn Wake,
    /// Where packets are recorded, to leave once the QP's slot is let go.
    pub(crate) out: &'a Outbox,
    /// The runtime's last transmit turn took trains
    /// ([`crate::transmit::Carriage::trains`]): a run of packets is
    /// recorded as one entry, to leave as a train.
    pub(crate) trains: bool,
    /// The time of this arrival or pass (µs, the device's clock).
    pub(crate) now: u64,
}

impl Context<'_> {
    /// Writes a CQE to CQ `cqn` (`solicited`: a solicited receive or an
    /// error, which satisfies a solicited arm). Returns false if the CQ is
    /// dead or gone, in which case the caller's QP must enter error.
    pub(crate) fn complete(&self, cqn: u32, cqe: Cqe, solicited: bool) -> bool {
        match self.cqs.with(cqn, |cq| cq.push(cqe, solicited, self.now)) {
            Some(Pushed::Written { event }) => {
                if event {
                    signals::raise(&self.events.cq, cqn, self.waker);
                }
                true
            }
            Some(Pushed::Overflowed) => {
                signals::raise(&self.events.cq_overflow, cqn, self.waker);
                false
            }
            Some(Pushed::Dead) | None => false,
        }
    }

    /// Takes a receive from SRQ `srqn` for the responder, raising its
    /// limit event.
    pub(crate) fn take_srq_receive(&self, srqn: u32) -> Option<RecvWqe> {
        let (wqe, fire) = self.srqs.with(srqn, SharedReceiveQueue::take)??;
        if fire {
            signals::raise(&self.events.srq_limit, srqn, self.waker);
        }
        Some(wqe)
    }

    /// Rings QP `qpn`'s send doorbell (its send side has more to do).
    pub(crate) fn sq_doorbell(&self, qpn: u32) {
        signals::ring(self.sq_ready, qpn, self.waker);
    }

    /// Completes all of QP `qpn`'s work as flushed (after any error CQE
    /// already written).
    pub(crate) fn flush(&self, qpn: u32, qp: &mut QueuePair) {
        let (s, r) = (qp.send_cqn, qp.recv_cqn);
        flush(
            qp,
            qpn,
            |c| _ = self.complete(s, c, true),
            |c| _ = self.complete(r, c, true),
        );
    }

    /// Moves QP `qpn` to error: flushes its work and queues the QP error
    /// event.
    pub(crate) fn enter_error(&self, qpn: u32, qp: &mut QueuePair) {
        self.flush(qpn, qp);
        signals::raise(&self.events.qp_error, qpn, self.waker);
    }
}

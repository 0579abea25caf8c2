//! What the device signals to its driver and to its own engine: events
//! waiting for delivery (lock-free bitsets the device's poll drains) and
//! the [`Wake`] that asks for that poll. Raising an event never delivers
//! it (the raiser may hold its own locks); the poll does, like an
//! interrupt that arrives after the register write that caused it.

use crate::bitset::AtomicBitset;
use crate::env::Wake;

/// Events waiting for delivery, by object number.
#[derive(Debug)]
pub(crate) struct PendingEvents {
    /// CQs with a completion event.
    pub(crate) cq: AtomicBitset,
    /// CQs that overflowed.
    pub(crate) cq_overflow: AtomicBitset,
    /// SRQs whose limit fired.
    pub(crate) srq_limit: AtomicBitset,
    /// QPs that entered error.
    pub(crate) qp_error: AtomicBitset,
}

impl PendingEvents {
    /// Sets for CQ numbers up to `max_cqs`, SRQ numbers up to `max_srqs`
    /// and QP numbers below `qp_bound`; `None` if memory ran out.
    pub(crate) fn new(max_cqs: u32, max_srqs: u32, qp_bound: u32) -> Option<Self> {
        Some(Self {
            cq: AtomicBitset::new(max_cqs + 1)?,
            cq_overflow: AtomicBitset::new(max_cqs + 1)?,
            srq_limit: AtomicBitset::new(max_srqs + 1)?,
            qp_error: AtomicBitset::new(qp_bound)?,
        })
    }

    /// Every set, for dropping what nobody listens to.
    pub(crate) fn all(&self) -> [&AtomicBitset; 4] {
        [&self.cq, &self.cq_overflow, &self.srq_limit, &self.qp_error]
    }
}

/// Records event `n` of `set` for delivery, which only the device's own
/// context does (so it is woken even while a consumer busy polls).
pub(crate) fn raise(set: &AtomicBitset, n: u32, waker: &dyn Wake) {
    if set.insert(n) {
        waker.wake_engine();
    }
}

/// Records doorbell `n` of `set`; a busy poller may serve it.
pub(crate) fn ring(set: &AtomicBitset, n: u32, waker: &dyn Wake) {
    if set.insert(n) {
        waker.wake();
    }
}

//! Doorbells: the fast path. A doorbell only tells the device where to
//! look (new work was published on a ring); the work itself is read from
//! the ring, later, by the device's own context or a busy poller.
//!
//! IRQL: any level up to `DISPATCH_LEVEL`, unraised (see [the module's
//! IRQL rule](super#irql)). A device takes no lock in a doorbell (an atomic
//! store and a wake-up of its own context, as a register write is), which
//! is what makes a doorbell legal at `PASSIVE_LEVEL` next to a DPC that
//! takes the device's locks, and cheap enough to ring on every post.

use crate::id::{Qpn, Srqn};

/// The doorbells. IRQL: at or below `DISPATCH_LEVEL` for every entry; no
/// lock taken.
pub trait Doorbells: Send + Sync {
    /// New send WQEs were published on QP `qpn`. The driver rings one
    /// queue's doorbell from one processor at a time (in publish order,
    /// under the queue's lock), as a register write would be.
    fn sq_doorbell(&self, qpn: Qpn);

    /// New receive WQEs were published on QP `qpn`.
    fn rq_doorbell(&self, qpn: Qpn);

    /// New receive WQEs were published on SRQ `srqn`.
    fn srq_doorbell(&self, srqn: Srqn);
}

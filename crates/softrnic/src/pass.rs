//! The device's part of one pass, and the turn that lets only one pass run
//! at a time ([`PassTurn`]).
//!
//! A pass is the runtime's: it hands in what its wire received
//! ([`SoftRnic::receive`]), runs the device's work ([`PassTurn::work`],
//! [`SoftRnic::poll`]'s), and takes what the device sends
//! ([`crate::transmit`]); the `links` crate's `LinkPass` is that pass for
//! a runtime whose wire is a software link. Who runs passes, and
//! when, is the runtime's policy: the device's own context (the host's
//! engine thread, the kernel's DPC), and, while a consumer spins on a CQ,
//! the consumer itself (busy polling, through
//! [`crate::env::Wake::consumer_poll`]). A second caller while one pass
//! runs gets no turn and returns at once instead of contending for the QP
//! locks the first one holds, which on a small machine costs more than the
//! work (the device was built for one thread per device). A pass that does
//! not deliver events leaves them to the device's own context, which they
//! wake ([`crate::env::Wake::wake_engine`]).

use core::sync::atomic::Ordering;

use crate::device::SoftRnic;

/// The device's pass turn, held while a runtime runs one pass (its
/// receive, the work, its transmit turn); given back on drop.
pub struct PassTurn<'a>(&'a SoftRnic);

impl core::fmt::Debug for PassTurn<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PassTurn")
    }
}

impl SoftRnic {
    /// The pass turn, unless another pass holds it.
    pub fn pass_turn(&self) -> Option<PassTurn<'_>> {
        self.engine()
            .turn
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            // Lazily: a turn built and dropped on failure would give back
            // the holder's.
            .then(|| PassTurn(self))
    }

    /// Whether send doorbells rang since the last pass took them.
    pub fn has_send_work(&self) -> bool {
        !self.sq_ready.is_empty()
    }
}

impl PassTurn<'_> {
    /// The device's work at `now` (due timers, doorbells, CQ moderation)
    /// and, if `deliver_events` (only the device's own context), event
    /// delivery with no lock held; whether anything was done.
    pub fn work(&self, now: u64, deliver_events: bool) -> bool {
        let worked = self.0.poll_work(now);
        if deliver_events {
            return self.0.deliver_events() || worked;
        }
        worked
    }
}

impl Drop for PassTurn<'_> {
    fn drop(&mut self) {
        self.0.engine().turn.store(false, Ordering::Release);
    }
}

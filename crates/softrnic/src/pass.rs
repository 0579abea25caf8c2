//! One pass of the device's work, and the turn that lets only one pass run
//! at a time ([`RunPass`]).
//!
//! A pass takes what the link has received and then runs
//! [`SoftRnic::poll`]'s work. Who runs passes, and when, is the runtime's
//! policy: the device's own context (the host's engine thread, the
//! kernel's DPC), and, while a consumer spins on a CQ, the consumer itself
//! (busy polling, through [`crate::env::Wake::consumer_poll`]). A second
//! caller while one pass runs returns at once instead of contending for
//! the QP locks the first one holds, which on a small machine costs more
//! than the work (the device was built for one thread per device). A pass
//! that does not deliver events leaves them to the device's own context,
//! which they wake ([`crate::env::Wake::wake_engine`]).

use core::sync::atomic::Ordering;

use crate::device::SoftRnic;
use crate::env::{Pass, PassPlan, RunPass};
use crate::link::Link;

/// Holds the device's turn; gives it back on drop.
struct Turn<'a>(&'a SoftRnic);

impl<'a> Turn<'a> {
    fn try_take(rnic: &'a SoftRnic) -> Option<Self> {
        rnic.engine()
            .turn
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            // Lazily: a `Turn` built and dropped on failure would give
            // back the holder's turn.
            .then(|| Self(rnic))
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.engine().turn.store(false, Ordering::Release);
    }
}

impl RunPass for SoftRnic {
    fn try_pass(&self, now: u64, plan: PassPlan) -> Option<Pass> {
        let turn = Turn::try_take(self)?;
        Some(self.pass(&turn, now, plan))
    }
}

impl SoftRnic {
    /// One pass at `now`; the caller holds the turn.
    fn pass(&self, _turn: &Turn<'_>, now: u64, plan: PassPlan) -> Pass {
        let mut pass = Pass::default();
        if plan.send_first && !self.sq_ready.is_empty() {
            pass.worked = self.poll_work(now);
            if plan.deliver_events {
                pass.worked |= self.deliver_events();
            }
            return pass;
        }
        for _ in 0..plan.rx_batches {
            // A capture wrapper around the link shows what it hands out.
            let got = self.link.receive(&mut |arrival| self.receive(now, arrival));
            pass.received += got.count;
            pass.next_due_us = got.next_due_us;
            if !got.more {
                break;
            }
        }
        pass.worked = self.poll_work(now);
        if plan.deliver_events {
            pass.worked |= self.deliver_events();
        }
        pass
    }
}

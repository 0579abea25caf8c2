//! Rundown protection: users of a shared object at any IRQL up to
//! DISPATCH_LEVEL enter and leave; a PASSIVE_LEVEL owner closes it and
//! waits until the last user has left before taking the object away (the
//! kernel's `ExAcquireRundownProtection` pattern, on one atomic word).

use core::sync::atomic::{AtomicU32, Ordering};

/// Set while the rundown is closed: entries fail.
const CLOSED: u32 = 1 << 31;

/// A count of users plus a closed bit.
#[derive(Debug)]
pub struct Rundown(AtomicU32);

impl Rundown {
    /// A closed rundown (nothing to use yet); [`Rundown::open`] allows entry.
    pub const fn closed() -> Self {
        Self(AtomicU32::new(CLOSED))
    }

    /// Allows entries again (`PASSIVE_LEVEL`, by the owner).
    pub fn open(&self) {
        self.0.fetch_and(!CLOSED, Ordering::SeqCst);
    }

    /// Enters (any IRQL `<= DISPATCH_LEVEL`); `false` when closed. A
    /// `true` must be paired with [`Rundown::leave`].
    pub fn enter(&self) -> bool {
        let old = self.0.fetch_add(1, Ordering::SeqCst);
        if old & CLOSED != 0 {
            self.0.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Leaves after a successful [`Rundown::enter`].
    pub fn leave(&self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }

    /// Closes and waits until every user has left (`PASSIVE_LEVEL`).
    pub fn close_and_wait(&self) {
        self.0.fetch_or(CLOSED, Ordering::SeqCst);
        while self.0.load(Ordering::SeqCst) & !CLOSED != 0 {
            super::kernel::wait_briefly();
        }
    }
}

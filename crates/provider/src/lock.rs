//! The provider's spin lock: an atomic test-and-set that raises the thread
//! to `DISPATCH_LEVEL` while held (as `KeAcquireSpinLock` does) and reports
//! acquire/release to the platform's lock checker.
//!
//! Rules for users: hold a lock only for bounded, non-blocking work; never
//! call into the consumer while holding one (collect what to deliver, drop
//! the guard, then call out); never drop the last reference to an object
//! while holding one (its teardown may call out).

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::platform::{Irql, LockClass, Platform};

/// A spin lock protecting a `T`.
pub struct SpinLock<T> {
    locked: AtomicBool,
    class: &'static LockClass,
    platform: &'static dyn Platform,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time (the
// test-and-set in `SpinLock::lock`), so sharing the lock is sound when `T`
// may be sent between threads, exactly like `std::sync::Mutex`.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// A new, unlocked lock of `class`.
    pub const fn new(platform: &'static dyn Platform, class: &'static LockClass, value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            class,
            platform,
            value: UnsafeCell::new(value),
        }
    }

    /// Raises to `DISPATCH_LEVEL` and spins until the lock is ours.
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let old_irql = self.platform.raise_to_dispatch();
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Spin on a plain load so contended waiters do not keep the
            // cache line in exclusive state.
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
        self.platform.lock_acquired(self.class, self.address());
        SpinGuard {
            lock: self,
            old_irql,
        }
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// The lock's identity for the platform's checker.
    fn address(&self) -> usize {
        core::ptr::from_ref(self).addr()
    }

    /// The platform this lock reports to.
    pub fn platform(&self) -> &'static dyn Platform {
        self.platform
    }
}

impl<T> fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinLock")
            .field("class", &self.class.name)
            .field("locked", &self.locked.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Proof that a [`SpinLock`] is held; releases it (and lowers the IRQL) on
/// drop.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    old_irql: Irql,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a guard exists only while its thread holds the lock (taken
        // in `SpinLock::lock`, released in the guard's drop), so no other
        // reference to the value can be live.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this thread holds the lock while the guard exists (taken in
        // `SpinLock::lock`), and `&mut self` makes this the only access
        // through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock
            .platform
            .lock_released(self.lock.class, self.lock.address());
        self.lock.locked.store(false, Ordering::Release);
        self.lock.platform.lower_irql(self.old_irql);
    }
}

impl<T> fmt::Debug for SpinGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinGuard")
            .field("class", &self.lock.class.name)
            .finish_non_exhaustive()
    }
}

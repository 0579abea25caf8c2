//! The provider's spin lock: a lock word whose acquire and release are the
//! platform's ([`Platform::acquire_spin_lock`]): in the kernel a
//! `KSPIN_LOCK` taken with `KeAcquireSpinLockRaiseToDpc`, so Driver
//! Verifier checks its IRQL and its order against every other driver lock;
//! on the host a test-and-test-and-set lock reported to the checked
//! platform's lock-order checker. Either way the thread is at
//! `DISPATCH_LEVEL` while it holds the lock.
//!
//! Not an in-stack queued spin lock: its `KLOCK_QUEUE_HANDLE` must stay at
//! one address from acquire to release (later waiters link to it), which
//! a guard returned by value cannot promise.
//!
//! Rules for users: hold a lock only for bounded, non-blocking work; never
//! call into the consumer while holding one (collect what to deliver, drop
//! the guard, then call out); never drop the last reference to an object
//! while holding one (its teardown may call out).

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::platform::{LockClass, LockToken, Platform};

/// A spin lock protecting a `T`.
pub struct SpinLock<T> {
    /// The platform's lock state (a `KSPIN_LOCK` in the kernel); zero is
    /// free.
    word: AtomicUsize,
    class: &'static LockClass,
    platform: &'static dyn Platform,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time (the
// platform's acquire in `SpinLock::lock`), so sharing the lock is sound when `T`
// may be sent between threads, exactly like `std::sync::Mutex`.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// A new, unlocked lock of `class`.
    pub const fn new(platform: &'static dyn Platform, class: &'static LockClass, value: T) -> Self {
        Self {
            word: AtomicUsize::new(0),
            class,
            platform,
            value: UnsafeCell::new(value),
        }
    }

    /// Raises to `DISPATCH_LEVEL` and spins until the lock is ours.
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let token = self.platform.acquire_spin_lock(&self.word, self.class);
        SpinGuard { lock: self, token }
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
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
            .field("locked", &(self.word.load(Ordering::Relaxed) != 0))
            .finish_non_exhaustive()
    }
}

/// Proof that a [`SpinLock`] is held; releases it (and lowers the IRQL) on
/// drop.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    token: LockToken,
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
        let lock = self.lock;
        lock.platform
            .release_spin_lock(&lock.word, lock.class, self.token);
    }
}

impl<T> fmt::Debug for SpinGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinGuard")
            .field("class", &self.lock.class.name)
            .finish_non_exhaustive()
    }
}

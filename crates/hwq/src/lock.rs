//! Spin locks whose acquire and release belong to the platform, for the
//! device's locks (and the lock classes the provider's share).
//!
//! A [`SpinMutex`] is a lock word and the data it guards; taking it goes
//! through a [`SpinLockOps`] the runtime supplies. In the kernel that is
//! `KeAcquireSpinLockRaiseToDpc`/`KeReleaseSpinLock` on the word as a
//! `KSPIN_LOCK`, so Driver Verifier checks the IRQL of every device lock
//! and its order against every other driver lock (deadlock detection); the
//! checked host platform reports the same acquires to its lock-order
//! checker. [`TestAndSet`] is the plain lock for code that runs with no
//! runtime at all (unit tests, fuzzing).
//!
//! A [`SpinRwLock`] ([`rw`]) is the reader/writer form: an `EX_SPIN_LOCK`
//! in the kernel (`ExAcquireSpinLockShared`/`Exclusive`), writer-preferring
//! on every platform, so a reader must never wait for a second lock of the
//! same kind while holding one (a writer queued on each deadlocks them).
//!
//! `unsafe` here is the data access a held lock allows, as in any mutex.

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

pub mod rw;

pub use rw::{SpinRwLock, SpinRwReadGuard, SpinRwWriteGuard};

/// A class of locks, for a lock-order checker: every lock of one kind (all
/// SQ locks, all outbox locks...) shares one `'static` class.
#[derive(Debug)]
pub struct LockClass {
    /// Human-readable name of the class.
    pub name: &'static str,
    /// Whether two locks of this class may be held at once by one thread
    /// (the code that nests them orders them itself). A checker reports
    /// nesting of a class that does not declare it.
    pub nestable: bool,
}

impl LockClass {
    /// A new class whose locks are never nested in each other.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            nestable: false,
        }
    }

    /// A new class whose locks may be nested in each other.
    pub const fn nestable(name: &'static str) -> Self {
        Self {
            name,
            nestable: true,
        }
    }
}

/// What a spin-lock acquire hands to its release, in the platform's own
/// encoding (the kernel's: the IRQL before the acquire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockToken(pub u32);

/// A platform's spin lock, over a word that is zero when the lock is free
/// (a `KSPIN_LOCK` after `KeInitializeSpinLock`). The holder runs at
/// `DISPATCH_LEVEL` where the platform has IRQLs.
pub trait SpinLockOps: Sync {
    /// Acquires the lock whose state is `word`, of `class`, spinning while
    /// another thread holds it.
    fn acquire(&self, word: &AtomicUsize, class: &'static LockClass) -> LockToken;

    /// Releases what [`SpinLockOps::acquire`] acquired on this thread;
    /// `token` is what it returned.
    fn release(&self, word: &AtomicUsize, class: &'static LockClass, token: LockToken);

    /// Acquires the reader/writer lock whose state is `word` (an
    /// `EX_SPIN_LOCK`, zero when free) for shared access, spinning while a
    /// writer holds it or waits for it.
    fn acquire_shared(&self, word: &AtomicI32, class: &'static LockClass) -> LockToken;

    /// Releases a shared hold [`SpinLockOps::acquire_shared`] made on this
    /// thread; `token` is what it returned.
    fn release_shared(&self, word: &AtomicI32, class: &'static LockClass, token: LockToken);

    /// Acquires the reader/writer lock `word` for exclusive access,
    /// spinning until no reader or writer holds it.
    fn acquire_exclusive(&self, word: &AtomicI32, class: &'static LockClass) -> LockToken;

    /// Releases an exclusive hold [`SpinLockOps::acquire_exclusive`] made
    /// on this thread; `token` is what it returned.
    fn release_exclusive(&self, word: &AtomicI32, class: &'static LockClass, token: LockToken);
}

/// Spins until `word` goes from free (0) to held (1).
pub fn test_and_set(word: &AtomicUsize) {
    while word
        .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        // Spin on a plain load so contended waiters do not keep the cache
        // line in exclusive state.
        while word.load(Ordering::Relaxed) != 0 {
            core::hint::spin_loop();
        }
    }
}

/// Frees a word [`test_and_set`] took.
pub fn clear(word: &AtomicUsize) {
    word.store(0, Ordering::Release);
}

/// A test-and-test-and-set lock with no IRQL and no checks: for code that
/// runs without a platform (unit tests, fuzzing).
#[derive(Debug)]
pub struct TestAndSet;

impl SpinLockOps for TestAndSet {
    fn acquire(&self, word: &AtomicUsize, _class: &'static LockClass) -> LockToken {
        test_and_set(word);
        LockToken(0)
    }

    fn release(&self, word: &AtomicUsize, _class: &'static LockClass, _token: LockToken) {
        clear(word);
    }

    fn acquire_shared(&self, word: &AtomicI32, _class: &'static LockClass) -> LockToken {
        rw::read_lock(word);
        LockToken(0)
    }

    fn release_shared(&self, word: &AtomicI32, _class: &'static LockClass, _token: LockToken) {
        rw::read_unlock(word);
    }

    fn acquire_exclusive(&self, word: &AtomicI32, _class: &'static LockClass) -> LockToken {
        rw::write_lock(word);
        LockToken(0)
    }

    fn release_exclusive(&self, word: &AtomicI32, _class: &'static LockClass, _token: LockToken) {
        rw::write_unlock(word);
    }
}

/// A spin lock protecting a `T`, taken through a [`SpinLockOps`].
pub struct SpinMutex<T> {
    word: AtomicUsize,
    class: &'static LockClass,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time
// (the platform's acquire in `SpinMutex::lock`), so sharing the lock is
// sound when `T` may be sent between threads, exactly like
// `std::sync::Mutex`.
unsafe impl<T: Send> Sync for SpinMutex<T> {}

impl<T> SpinMutex<T> {
    /// A new, unlocked lock of `class`.
    pub const fn new(class: &'static LockClass, value: T) -> Self {
        Self {
            word: AtomicUsize::new(0),
            class,
            value: UnsafeCell::new(value),
        }
    }

    /// Acquires the lock through `ops`; the guard releases it through the
    /// same `ops` (the same lock must always be taken through the same
    /// `ops`).
    pub fn lock<'a>(&'a self, ops: &'a dyn SpinLockOps) -> SpinMutexGuard<'a, T> {
        let token = ops.acquire(&self.word, self.class);
        SpinMutexGuard {
            lock: self,
            ops,
            token,
        }
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T> fmt::Debug for SpinMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinMutex")
            .field("class", &self.class.name)
            .field("locked", &(self.word.load(Ordering::Relaxed) != 0))
            .finish_non_exhaustive()
    }
}

/// Proof that a [`SpinMutex`] is held; releases it on drop.
pub struct SpinMutexGuard<'a, T> {
    lock: &'a SpinMutex<T>,
    ops: &'a dyn SpinLockOps,
    token: LockToken,
}

impl<T> Deref for SpinMutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a guard exists only while its thread holds the lock
        // (taken in `SpinMutex::lock`, released in the guard's drop), so no
        // other reference to the value can be live.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this thread holds the lock while the guard exists (taken
        // in `SpinMutex::lock`), and `&mut self` makes this the only access
        // through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinMutexGuard<'_, T> {
    fn drop(&mut self) {
        self.ops
            .release(&self.lock.word, self.lock.class, self.token);
    }
}

impl<T> fmt::Debug for SpinMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinMutexGuard")
            .field("class", &self.lock.class.name)
            .finish_non_exhaustive()
    }
}

//! Reader/writer spin locks taken through a [`SpinLockOps`]: an
//! `EX_SPIN_LOCK` in the kernel, so Driver Verifier sees them as it sees
//! the exclusive ones.
//!
//! Every platform's form prefers writers, as Windows' does: once a writer
//! waits, new shared acquirers wait behind it. Hence the rule for callers:
//! never wait for a second lock of one class while holding a lock of that
//! class (two readers, each holding one table and wanting the other's
//! while a writer waits on each, never finish).
//!
//! The word's encoding for the platform-less form ([`read_lock`] and
//! friends, also the checked host platform's and the bottle's): bit 31 a
//! writer holds it, bit 30 a writer waits, the rest the readers holding it.

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicI32, Ordering};

use super::{LockClass, LockToken, SpinLockOps};

/// A writer holds the lock.
const WRITER: i32 = i32::MIN;
/// A writer waits for it: new readers wait too.
const WRITER_WAITING: i32 = 1 << 30;
/// The readers holding it.
const READERS: i32 = WRITER_WAITING - 1;

/// Spins until `word` is held shared: no writer holds or waits for it.
pub fn read_lock(word: &AtomicI32) {
    loop {
        let v = word.load(Ordering::Relaxed);
        if v & (WRITER | WRITER_WAITING) == 0
            && v & READERS < READERS
            && word
                .compare_exchange_weak(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
        core::hint::spin_loop();
    }
}

/// Drops a shared hold [`read_lock`] made.
pub fn read_unlock(word: &AtomicI32) {
    word.fetch_sub(1, Ordering::Release);
}

/// Spins until `word` is held exclusively; while it waits, new readers
/// wait behind it.
pub fn write_lock(word: &AtomicI32) {
    loop {
        let v = word.load(Ordering::Relaxed);
        if v & (WRITER | READERS) == 0 {
            // Free (perhaps with writers waiting, this one among them):
            // taking it clears the waiting bit; other waiting writers set
            // it again on their next look.
            if word
                .compare_exchange_weak(v, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        } else if v & WRITER_WAITING == 0 {
            word.fetch_or(WRITER_WAITING, Ordering::Relaxed);
        }
        core::hint::spin_loop();
    }
}

/// Drops the exclusive hold [`write_lock`] made (writers still waiting
/// stay marked).
pub fn write_unlock(word: &AtomicI32) {
    word.fetch_and(!WRITER, Ordering::Release);
}

/// A reader/writer spin lock protecting a `T`, taken through a
/// [`SpinLockOps`].
pub struct SpinRwLock<T> {
    word: AtomicI32,
    class: &'static LockClass,
    value: UnsafeCell<T>,
}

// SAFETY: readers on several threads share `&T` (hence `T: Sync`) and a
// writer gets `&mut T` on one thread at a time (hence `T: Send`), the
// platform's shared and exclusive acquires keeping the two apart, exactly
// like `std::sync::RwLock`.
unsafe impl<T: Send + Sync> Sync for SpinRwLock<T> {}

impl<T> SpinRwLock<T> {
    /// A new, free lock of `class`.
    pub const fn new(class: &'static LockClass, value: T) -> Self {
        Self {
            word: AtomicI32::new(0),
            class,
            value: UnsafeCell::new(value),
        }
    }

    /// Acquires the lock shared through `ops`; the guard releases it
    /// through the same `ops`.
    pub fn read<'a>(&'a self, ops: &'a dyn SpinLockOps) -> SpinRwReadGuard<'a, T> {
        let token = ops.acquire_shared(&self.word, self.class);
        SpinRwReadGuard {
            lock: self,
            ops,
            token,
        }
    }

    /// Acquires the lock exclusively through `ops`; the guard releases it
    /// through the same `ops`.
    pub fn write<'a>(&'a self, ops: &'a dyn SpinLockOps) -> SpinRwWriteGuard<'a, T> {
        let token = ops.acquire_exclusive(&self.word, self.class);
        SpinRwWriteGuard {
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

impl<T> fmt::Debug for SpinRwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinRwLock")
            .field("class", &self.class.name)
            .field("state", &self.word.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Proof that a [`SpinRwLock`] is held shared; releases it on drop.
pub struct SpinRwReadGuard<'a, T> {
    lock: &'a SpinRwLock<T>,
    ops: &'a dyn SpinLockOps,
    token: LockToken,
}

impl<T> Deref for SpinRwReadGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a read guard exists only while its thread holds the lock
        // shared (taken in `SpinRwLock::read`, released in its drop), so no
        // writer, the only source of `&mut T`, holds it meanwhile.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> Drop for SpinRwReadGuard<'_, T> {
    fn drop(&mut self) {
        self.ops
            .release_shared(&self.lock.word, self.lock.class, self.token);
    }
}

impl<T> fmt::Debug for SpinRwReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinRwReadGuard")
            .field("class", &self.lock.class.name)
            .finish_non_exhaustive()
    }
}

/// Proof that a [`SpinRwLock`] is held exclusively; releases it on drop.
pub struct SpinRwWriteGuard<'a, T> {
    lock: &'a SpinRwLock<T>,
    ops: &'a dyn SpinLockOps,
    token: LockToken,
}

impl<T> Deref for SpinRwWriteGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: this thread holds the lock exclusively while the guard
        // exists (taken in `SpinRwLock::write`), so no other reference to
        // the value is live.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinRwWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this thread holds the lock exclusively while the guard
        // exists, and `&mut self` makes this the only access through it.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinRwWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.ops
            .release_exclusive(&self.lock.word, self.lock.class, self.token);
    }
}

impl<T> fmt::Debug for SpinRwWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinRwWriteGuard")
            .field("class", &self.lock.class.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::TestAndSet;

    static CLASS: LockClass = LockClass::new("test rw");

    #[test]
    fn readers_share_and_a_writer_excludes() {
        let lock = SpinRwLock::new(&CLASS, 5u32);
        {
            let a = lock.read(&TestAndSet);
            let b = lock.read(&TestAndSet);
            assert_eq!(*a + *b, 10);
            assert_eq!(lock.word.load(Ordering::Relaxed), 2);
        }
        *lock.write(&TestAndSet) = 7;
        assert_eq!(lock.word.load(Ordering::Relaxed), 0);
        assert_eq!(*lock.read(&TestAndSet), 7);
    }

    #[test]
    fn a_waiting_writer_holds_new_readers_back() {
        let word = AtomicI32::new(0);
        read_lock(&word);
        // What a writer does while the reader holds it.
        word.fetch_or(WRITER_WAITING, Ordering::Relaxed);
        let v = word.load(Ordering::Relaxed);
        assert_ne!(v & WRITER_WAITING, 0);
        // A new reader would spin: the fast path refuses.
        assert_ne!(v & (WRITER | WRITER_WAITING), 0);
        read_unlock(&word);
        write_lock(&word);
        assert_eq!(word.load(Ordering::Relaxed), WRITER);
        write_unlock(&word);
        assert_eq!(word.load(Ordering::Relaxed), 0);
    }
}

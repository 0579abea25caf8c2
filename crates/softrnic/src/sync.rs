//! The device's locks, taken through the spin-lock operations its runtime
//! installs once ([`use_lock_ops`]): kernel spin locks in the driver
//! (`KSPIN_LOCK`s for [`Mutex`], `EX_SPIN_LOCK`s for [`RwLock`]), so
//! Driver Verifier checks every device lock's IRQL and its order against
//! the provider's and the shell's locks; the checked host platform's on
//! Linux. With none installed (unit tests, fuzzing) a lock is a plain
//! test-and-test-and-set lock (reader/writer for [`RwLock`]).
//!
//! Reader/writer locks prefer writers on every platform (Windows' do), so
//! no code holds one device's lock of a class while it takes another
//! device's lock of the same class: a train's payload crosses from the
//! sender's memory to the receiver's through a small buffer, each side
//! under its own key table alone (`train::scatter_train`).

use hwq::lock::{
    LockClass, SpinLockOps, SpinMutex, SpinMutexGuard, SpinRwLock, SpinRwReadGuard,
    SpinRwWriteGuard, TestAndSet,
};

/// The runtime's lock operations, once installed.
static OPS: spin::Once<&'static dyn SpinLockOps> = spin::Once::new();

/// Makes every device lock acquired from now on use `ops`. Called once by
/// the runtime before it makes a device; `false` (and `ops` unused) if
/// other operations were installed first, which stay: a lock must be
/// released through the operations that acquired it, which every guard
/// remembers.
pub fn use_lock_ops(ops: &'static dyn SpinLockOps) -> bool {
    let mut installed = false;
    OPS.call_once(|| {
        installed = true;
        ops
    });
    installed
}

/// The operations locks use now.
fn ops() -> &'static dyn SpinLockOps {
    OPS.get().copied().unwrap_or(&TestAndSet)
}

/// A device spin lock protecting a `T`.
#[derive(Debug)]
pub struct Mutex<T>(SpinMutex<T>);

impl<T> Mutex<T> {
    /// A new, unlocked lock of `class`.
    pub const fn new(class: &'static LockClass, value: T) -> Self {
        Self(SpinMutex::new(class, value))
    }

    /// Spins until the lock is held (at `DISPATCH_LEVEL` in the kernel).
    pub fn lock(&self) -> SpinMutexGuard<'_, T> {
        self.0.lock(ops())
    }
}

/// A device reader/writer spin lock protecting a `T`.
#[derive(Debug)]
pub struct RwLock<T>(SpinRwLock<T>);

impl<T> RwLock<T> {
    /// A new, free lock of `class`.
    pub const fn new(class: &'static LockClass, value: T) -> Self {
        Self(SpinRwLock::new(class, value))
    }

    /// Spins until the lock is held shared (at `DISPATCH_LEVEL` in the
    /// kernel).
    pub fn read(&self) -> SpinRwReadGuard<'_, T> {
        self.0.read(ops())
    }

    /// Spins until the lock is held exclusively (at `DISPATCH_LEVEL` in
    /// the kernel).
    pub fn write(&self) -> SpinRwWriteGuard<'_, T> {
        self.0.write(ops())
    }
}

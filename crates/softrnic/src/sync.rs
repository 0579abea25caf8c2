//! The device's locks, taken through the spin-lock operations its runtime
//! installs once ([`use_lock_ops`]): kernel spin locks in the driver, so
//! Driver Verifier checks every device lock's IRQL and its order against
//! the provider's and the shell's locks; the checked host platform's on
//! Linux. With none installed (unit tests, fuzzing) a lock is a plain
//! test-and-test-and-set lock.
//!
//! Only the device's exclusive locks are these. Its reader/writer locks
//! (the key table, addresses, event sink, neighbour cache, capture, RC
//! defaults) stay `spin::RwLock`s: the engines of two devices hold their
//! own key table and read each other's at once (`train::scatter_train`),
//! which needs shared holds; their kernel form is an `EX_SPIN_LOCK`
//! (`ExAcquireSpinLockShared`/`Exclusive`), not done yet.

use hwq::lock::{LockClass, SpinLockOps, SpinMutex, SpinMutexGuard, TestAndSet};

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

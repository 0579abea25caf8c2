//! Reader/writer spin locks (`EX_SPIN_LOCK`: `ExAcquireSpinLockShared`,
//! `ExAcquireSpinLockExclusive` and their releases, wdm.h:27111-27192)
//! with the rules the exclusive ones have (`spinlock`): IRQL, recursion,
//! owner, and Verifier's deadlock detection (`lock_order`), a shared hold
//! counting as a hold, so a cycle through them is 0xC4/0x1001 too.
//!
//! They prefer writers as Windows' do: once an exclusive acquirer waits,
//! new shared acquirers wait behind it. The word (a 32-bit `LONG`, zero
//! when free) holds: bit 31 a writer holds it, bit 30 a writer waits, the
//! rest the readers holding it (the driver never reads it).

#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

use ndis::{EX_SPIN_LOCK, KIRQL};

use super::spinlock::{ACQUIRED, SPIN_LOCKS, check_recursion_and_order};
use crate::kernel::cpu::{self, DISPATCH_LEVEL};
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION, firewall};
use crate::sync::lock;

/// A writer holds the lock.
const WRITER: i32 = i32::MIN;
/// A writer waits for it.
const WRITER_WAITING: i32 = 1 << 30;
/// Readers holding it.
const READERS: i32 = WRITER_WAITING - 1;

/// Reader/writer holds now: (lock address, processor, shared).
static HOLDS: Mutex<Vec<(usize, u32, bool)>> = Mutex::new(Vec::new());

/// Every reader/writer lock address ever acquired.
static ACQUIRED_RW: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// How an acquire wants the lock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Shared,
    Exclusive,
}

/// The checks of an acquire, then the lock-order edges, the raise and the
/// spin; returns the IRQL before.
fn acquire(api: &str, lock_ptr: *mut EX_SPIN_LOCK, mode: Mode) -> KIRQL {
    let lock_addr = lock_ptr as usize;
    super::require_irql_at_most(DISPATCH_LEVEL, api);
    if lock_addr == 0 || lock_addr % 4 != 0 {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x16, lock_addr as u64, 0, 0],
            format!("{api} on a null or misaligned lock {lock_addr:#x}"),
        );
    }
    let me = check_recursion_and_order(lock_addr, Some(api));
    let old = cpu::raise(DISPATCH_LEVEL);
    // SAFETY: an EX_SPIN_LOCK is an aligned LONG (checked above) in driver
    // memory that lives while the lock is used; Windows updates it only
    // atomically, as this does.
    let word = unsafe { AtomicI32::from_ptr(lock_ptr) };
    match mode {
        Mode::Shared => spin_shared(word),
        Mode::Exclusive => spin_exclusive(word),
    }
    lock(&SPIN_LOCKS).push((lock_addr, me, old));
    lock(&HOLDS).push((lock_addr, me, mode == Mode::Shared));
    lock(&ACQUIRED).insert(lock_addr);
    let mut seen = lock(&ACQUIRED_RW);
    if !seen.contains(&lock_addr) {
        seen.push(lock_addr);
    }
    old
}

fn spin_shared(word: &AtomicI32) {
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
        std::hint::spin_loop();
    }
}

fn spin_exclusive(word: &AtomicI32) {
    loop {
        let v = word.load(Ordering::Relaxed);
        if v & (WRITER | READERS) == 0 {
            if word
                .compare_exchange_weak(v, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        } else if v & WRITER_WAITING == 0 {
            word.fetch_or(WRITER_WAITING, Ordering::Relaxed);
        }
        std::hint::spin_loop();
    }
}

/// The checks of a release, then the release and the lower.
fn release(api: &str, lock_ptr: *mut EX_SPIN_LOCK, old_irql: KIRQL, mode: Mode) {
    let lock_addr = lock_ptr as usize;
    let irql = cpu::current();
    if irql != DISPATCH_LEVEL {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0xE5, u64::from(irql), lock_addr as u64, 0],
            format!("{api} at IRQL {irql} (it requires DISPATCH_LEVEL; double release?)"),
        );
    }
    let me = cpu::current_number();
    let shared = mode == Mode::Shared;
    let hold = {
        let mut holds = lock(&HOLDS);
        let at = holds
            .iter()
            .position(|&(l, p, s)| l == lock_addr && p == me && s == shared);
        at.map(|i| holds.remove(i))
    };
    if hold.is_none() {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x1007, lock_addr as u64, 0, 0],
            format!(
                "{api} of {lock_addr:#x}, which processor {} does not hold {}",
                cpu::current_name(),
                if shared { "shared" } else { "exclusively" }
            ),
        );
    }
    let before = {
        let mut locks = lock(&SPIN_LOCKS);
        let at = locks
            .iter()
            .position(|&(l, p, _)| l == lock_addr && p == me);
        at.map(|i| locks.remove(i).2)
    };
    if before != Some(old_irql) {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x0002_0015, 0, 0, 0],
            format!(
                "{api}: OldIrql {old_irql} is not the IRQL {before:?} the lock was acquired at"
            ),
        );
    }
    // SAFETY: the lock word was validated (aligned, live) at acquire.
    let word = unsafe { AtomicI32::from_ptr(lock_ptr) };
    match mode {
        Mode::Shared => word.fetch_sub(1, Ordering::Release),
        Mode::Exclusive => word.fetch_and(!WRITER, Ordering::Release),
    };
    cpu::lower(old_irql);
}

/// `ExAcquireSpinLockShared`: from `<= DISPATCH_LEVEL`, raises to
/// `DISPATCH_LEVEL` and spins while a writer holds or waits for the lock;
/// returns the previous IRQL.
pub unsafe extern "win64" fn ExAcquireSpinLockShared(SpinLock: *mut EX_SPIN_LOCK) -> KIRQL {
    firewall("ExAcquireSpinLockShared", || {
        acquire("ExAcquireSpinLockShared", SpinLock, Mode::Shared)
    })
}

/// `ExReleaseSpinLockShared`: at `DISPATCH_LEVEL`, drops this processor's
/// shared hold and lowers to `OldIrql`.
pub unsafe extern "win64" fn ExReleaseSpinLockShared(SpinLock: *mut EX_SPIN_LOCK, OldIrql: KIRQL) {
    firewall("ExReleaseSpinLockShared", || {
        release("ExReleaseSpinLockShared", SpinLock, OldIrql, Mode::Shared);
    });
}

/// `ExAcquireSpinLockExclusive`: from `<= DISPATCH_LEVEL`, raises to
/// `DISPATCH_LEVEL` and spins until no reader or writer holds the lock
/// (new readers wait meanwhile); returns the previous IRQL.
pub unsafe extern "win64" fn ExAcquireSpinLockExclusive(SpinLock: *mut EX_SPIN_LOCK) -> KIRQL {
    firewall("ExAcquireSpinLockExclusive", || {
        acquire("ExAcquireSpinLockExclusive", SpinLock, Mode::Exclusive)
    })
}

/// `ExReleaseSpinLockExclusive`: at `DISPATCH_LEVEL`, drops this
/// processor's exclusive hold and lowers to `OldIrql`.
pub unsafe extern "win64" fn ExReleaseSpinLockExclusive(
    SpinLock: *mut EX_SPIN_LOCK,
    OldIrql: KIRQL,
) {
    firewall("ExReleaseSpinLockExclusive", || {
        release(
            "ExReleaseSpinLockExclusive",
            SpinLock,
            OldIrql,
            Mode::Exclusive,
        );
    });
}

/// How many different reader/writer spin locks (by address) were ever
/// acquired.
pub fn distinct_rw_spin_locks() -> usize {
    lock(&ACQUIRED_RW).len()
}

//! Spin locks (`KeAcquireSpinLockRaiseToDpc`, `KeReleaseSpinLock`) with
//! the Verifier's lock rules (IRQL, recursion, owner, and the lock order
//! of `lock_order`), and the IRQL imports.

#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use ndis::{KIRQL, KSPIN_LOCK};

use super::lock_order;
use crate::kernel::cpu::{self, DISPATCH_LEVEL};
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION, firewall};
use crate::sync::lock;

/// Held spin locks: lock address → (processor, IRQL before the acquire).
pub(super) static SPIN_LOCKS: Mutex<Vec<(usize, u32, KIRQL)>> = Mutex::new(Vec::new());

/// Every lock address ever acquired (which of the driver's locks are
/// kernel spin locks, for tests).
pub(super) static ACQUIRED: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// `KeAcquireSpinLockRaiseToDpc`: raises to `DISPATCH_LEVEL`, spins until
/// the lock is free, returns the previous IRQL.
pub unsafe extern "win64" fn KeAcquireSpinLockRaiseToDpc(SpinLock: *mut KSPIN_LOCK) -> KIRQL {
    firewall("KeAcquireSpinLockRaiseToDpc", || {
        let lock_addr = SpinLock as usize;
        let irql = cpu::current();
        if irql > DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x42, u64::from(irql), lock_addr as u64, 0],
                format!("KeAcquireSpinLock at IRQL {irql}"),
            );
        }
        if lock_addr == 0 || lock_addr % 8 != 0 {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, lock_addr as u64, 0, 0],
                format!("KeAcquireSpinLock on a null or misaligned lock {lock_addr:#x}"),
            );
        }
        let me = check_recursion_and_order(lock_addr, None);
        let old = cpu::raise(DISPATCH_LEVEL);
        // SAFETY: a KSPIN_LOCK is an aligned ULONG_PTR (checked above) in
        // driver memory that lives while the lock is used; the kernel
        // updates it atomically as this does.
        let word = unsafe { std::sync::atomic::AtomicUsize::from_ptr(SpinLock) };
        while word
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        lock(&SPIN_LOCKS).push((lock_addr, me, old));
        lock(&ACQUIRED).insert(lock_addr);
        old
    })
}

/// `KeReleaseSpinLock`: releases and lowers to `NewIrql`.
pub unsafe extern "win64" fn KeReleaseSpinLock(SpinLock: *mut KSPIN_LOCK, NewIrql: KIRQL) {
    firewall("KeReleaseSpinLock", || {
        let lock_addr = SpinLock as usize;
        let irql = cpu::current();
        if irql != DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x32, u64::from(irql), lock_addr as u64, 0],
                format!("KeReleaseSpinLock at IRQL {irql} (double release?)"),
            );
        }
        let me = cpu::current_number();
        let held = {
            let mut locks = lock(&SPIN_LOCKS);
            let at = locks.iter().position(|&(l, _, _)| l == lock_addr);
            at.map(|i| locks.remove(i))
        };
        match held {
            None => verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x1007, lock_addr as u64, 0, 0],
                format!("KeReleaseSpinLock of {lock_addr:#x}, which is not held"),
            ),
            Some((_, owner, _)) if owner != me => verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x1004, lock_addr as u64, u64::from(owner), u64::from(me)],
                format!("KeReleaseSpinLock of {lock_addr:#x} by processor {me}, held by {owner}"),
            ),
            Some((_, _, before)) if before != NewIrql => verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x0002_0015, 0, 0, 0],
                format!(
                    "IrqlKeReleaseSpinLock: NewIrql {NewIrql} is not the IRQL {before} the lock was acquired at"
                ),
            ),
            Some(_) => {}
        }
        // SAFETY: the lock word was validated (aligned, live) at acquire.
        let word = unsafe { std::sync::atomic::AtomicUsize::from_ptr(SpinLock) };
        word.store(0, Ordering::Release);
        cpu::lower(NewIrql);
    });
}

/// How many different spin locks (by address) were ever acquired.
pub fn distinct_spin_locks() -> usize {
    lock(&ACQUIRED).len()
}

/// Spin locks held now (all processors).
pub fn held_spin_locks() -> usize {
    lock(&SPIN_LOCKS).len()
}

/// `KfRaiseIrql`.
pub unsafe extern "win64" fn KfRaiseIrql(NewIrql: KIRQL) -> KIRQL {
    firewall("KfRaiseIrql", || cpu::raise(NewIrql))
}

/// `KeLowerIrql`.
pub unsafe extern "win64" fn KeLowerIrql(NewIrql: KIRQL) {
    firewall("KeLowerIrql", || cpu::lower(NewIrql));
}

/// `KeGetCurrentIrql`.
pub unsafe extern "win64" fn KeGetCurrentIrql() -> KIRQL {
    firewall("KeGetCurrentIrql", cpu::current)
}

/// Verifier's deadlock detection for an acquire of the lock at
/// `lock_addr` by the current processor, over every spin lock it holds
/// (`KSPIN_LOCK`s and `EX_SPIN_LOCK`s alike): 0x1000 if it holds this one,
/// 0x1001 if taking it closes a cycle in the lock-order graph. `ex_api`
/// names the `Ex*SpinLock*` call in the reports. Returns the processor's
/// number, under which the caller records the hold.
pub(super) fn check_recursion_and_order(lock_addr: usize, ex_api: Option<&str>) -> u32 {
    let me = cpu::current_number();
    if lock(&SPIN_LOCKS)
        .iter()
        .any(|&(l, p, _)| l == lock_addr && p == me)
    {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x1000, lock_addr as u64, 0, 0],
            format!(
                "self-deadlock: processor {} acquires spin lock {lock_addr:#x} it holds{}",
                cpu::current_name(),
                ex_api.map_or(String::new(), |api| format!(
                    " ({api}; recursion is not allowed, shared or not)"
                ))
            ),
        );
    }
    let held: Vec<usize> = lock(&SPIN_LOCKS)
        .iter()
        .filter(|&&(_, p, _)| p == me)
        .map(|&(l, _, _)| l)
        .collect();
    if let Err(v) = lock_order::check_acquire(lock_addr, &held) {
        let cycle: Vec<String> = v.cycle.iter().map(|l| format!("{l:#x}")).collect();
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x1001, lock_addr as u64, v.held as u64, 0],
            format!(
                "deadlock detected: processor {} acquires spin lock {lock_addr:#x}{} holding {:#x}, but {lock_addr:#x} was held when {:#x} was acquired elsewhere (cycle {})",
                cpu::current_name(),
                ex_api.map_or(String::new(), |api| format!(" ({api})")),
                v.held,
                v.held,
                cycle.join(" -> ")
            ),
        );
    }
    me
}

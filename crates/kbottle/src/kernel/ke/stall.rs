//! Call counters of the hooked imports and the one-shot test stall
//! ([`stall_in_dpc`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::kernel::cpu::{self};
use crate::sync::lock;

pub(super) static TIMER_FIRES: AtomicU64 = AtomicU64::new(0);

/// DPC routines run so far (all processors).
pub fn dpc_runs() -> u64 {
    crate::kernel::dpc_queue::DPC_RUNS.load(Ordering::SeqCst)
}

/// Timer expirations so far.
pub fn timer_fires() -> u64 {
    TIMER_FIRES.load(Ordering::SeqCst)
}

/// The armed stall.
#[derive(Debug)]
pub(super) struct Stall {
    pub(super) import: &'static str,
    pub(super) until: &'static str,
    pub(super) timeout: Duration,
    pub(super) baseline: u64,
}

pub(super) static STALL_ARMED: AtomicBool = AtomicBool::new(false);
pub(super) static STALL: Mutex<Option<Stall>> = Mutex::new(None);
/// Calls of each hooked import (a fixed table: counting is one atomic
/// add on the driver's hot paths).
pub(super) static CALLS: [(&str, AtomicU64); 9] = [
    ("KeInsertQueueDpc", AtomicU64::new(0)),
    ("KeRemoveQueueDpc", AtomicU64::new(0)),
    ("KeFlushQueuedDpcs", AtomicU64::new(0)),
    ("KeSetTimer", AtomicU64::new(0)),
    ("KeCancelTimer", AtomicU64::new(0)),
    ("KeSetEvent", AtomicU64::new(0)),
    ("KeWaitForSingleObject", AtomicU64::new(0)),
    ("KeDelayExecutionThread", AtomicU64::new(0)),
    ("KeQueryPerformanceCounter", AtomicU64::new(0)),
];
/// A stalled DPC waits on this (with `STALL_LOCK`) for a counted call.
pub(super) static STALL_LOCK: Mutex<()> = Mutex::new(());
pub(super) static CALLS_CV: Condvar = Condvar::new();
/// A stall is waiting: counted calls notify `CALLS_CV`.
pub(super) static STALL_WAITING: AtomicBool = AtomicBool::new(false);
pub(super) static STALLS_DONE: AtomicU64 = AtomicU64::new(0);

pub(super) fn calls_of(name: &str) -> u64 {
    CALLS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, c)| c.load(Ordering::SeqCst))
}

/// Test hook, one-shot: the next call of `import` made from inside a DPC
/// routine blocks (before doing its work) until `until` has been called
/// by another thread after this arming, or `timeout` passes.
/// `KeCancelTimer` and `KeRemoveQueueDpc` count as called when they
/// return (the stalled DPC then acts after their work);
/// `KeFlushQueuedDpcs` when it is entered (it waits for that DPC). `import`:
/// "KeQueryPerformanceCounter", "KeSetTimer", "KeInsertQueueDpc" (any ke
/// import that notes itself); `until`: "KeCancelTimer",
/// "KeRemoveQueueDpc", "KeFlushQueuedDpcs" (likewise). The watchdog does
/// not count the stall.
pub fn stall_in_dpc(import: &'static str, until: &'static str, timeout: Duration) {
    let baseline = calls_of(until);
    *lock(&STALL) = Some(Stall {
        import,
        until,
        timeout,
        baseline,
    });
    STALL_ARMED.store(true, Ordering::SeqCst);
}

/// Stalls fired (and finished) so far.
pub fn stalls_done() -> u64 {
    STALLS_DONE.load(Ordering::SeqCst)
}

/// Entry of a hooked import: stalls if the armed stall names it and this
/// processor is in a DPC, then counts the call (a flush counts on entry:
/// the stalled DPC is what it waits for).
pub(super) fn hook(name: &'static str) {
    stall_point(name);
    note_call(name);
}

/// A hooked import counted when it returns (`KeCancelTimer`,
/// `KeRemoveQueueDpc`): a DPC stalled until it is called resumes only
/// after its work is done.
pub(super) fn hooked_on_return<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
    stall_point(name);
    let r = f();
    note_call(name);
    r
}

pub(super) fn stall_point(name: &'static str) {
    if !(STALL_ARMED.load(Ordering::SeqCst) && cpu::in_dpc()) {
        return;
    }
    let stall = {
        let mut s = lock(&STALL);
        if s.as_ref().is_some_and(|s| s.import == name) {
            STALL_ARMED.store(false, Ordering::SeqCst);
            s.take()
        } else {
            None
        }
    };
    let Some(stall) = stall else { return };
    cpu::pause_watchdog(true);
    let deadline = Instant::now() + stall.timeout;
    let mut guard = lock(&STALL_LOCK);
    STALL_WAITING.store(true, Ordering::SeqCst);
    while calls_of(stall.until) <= stall.baseline {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        guard = CALLS_CV
            .wait_timeout(guard, deadline - now)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
    STALL_WAITING.store(false, Ordering::SeqCst);
    drop(guard);
    cpu::pause_watchdog(false);
    STALLS_DONE.fetch_add(1, Ordering::SeqCst);
}

pub(super) fn note_call(name: &'static str) {
    if let Some((_, c)) = CALLS.iter().find(|(n, _)| *n == name) {
        c.fetch_add(1, Ordering::SeqCst);
    }
    if STALL_WAITING.load(Ordering::SeqCst) {
        // Under the lock: the waiter is either before its check (and sees
        // the new count) or inside wait (and gets this notification).
        let _g = lock(&STALL_LOCK);
        CALLS_CV.notify_all();
    }
}

/// Calls of a hooked ke import so far.
pub fn calls(import: &str) -> u64 {
    calls_of(import)
}

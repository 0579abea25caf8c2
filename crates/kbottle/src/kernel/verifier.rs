//! The rules' outcome: a would-be bugcheck is recorded with its code and
//! parameters, reported on stderr, and ends the test (abort, or park the
//! processor that hit it); low-resources simulation (fault points); the
//! DPC watchdog's limits (the thread that applies them is
//! `watchdog`).
//!
//! Codes and parameters follow the public bug check reference (0xC4
//! `DRIVER_VERIFIER_DETECTED_VIOLATION` and its Parameter 1 table, 0xC7
//! `TIMER_OR_DPC_INVALID`, 0xC8 `IRQL_UNEXPECTED_VALUE`, 0x133
//! `DPC_WATCHDOG_VIOLATION`, ...). Where Windows would not stop but the
//! bottle cannot model what the driver did, the code is [`UNMODELLED`].

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use crate::sync::lock;

/// `DRIVER_VERIFIER_DETECTED_VIOLATION`.
pub const DRIVER_VERIFIER_DETECTED_VIOLATION: u32 = 0xC4;
/// `TIMER_OR_DPC_INVALID`.
pub const TIMER_OR_DPC_INVALID: u32 = 0xC7;
/// `IRQL_UNEXPECTED_VALUE`.
pub const IRQL_UNEXPECTED_VALUE: u32 = 0xC8;
/// `DPC_WATCHDOG_VIOLATION`.
pub const DPC_WATCHDOG_VIOLATION: u32 = 0x133;
/// `KMODE_EXCEPTION_NOT_HANDLED`.
pub const KMODE_EXCEPTION_NOT_HANDLED: u32 = 0x1E;
/// `BAD_POOL_CALLER`.
pub const BAD_POOL_CALLER: u32 = 0xC2;
/// `KERNEL_SECURITY_CHECK_FAILURE`.
pub const KERNEL_SECURITY_CHECK_FAILURE: u32 = 0x139;
/// `NO_MORE_IRP_STACK_LOCATIONS`.
pub const NO_MORE_IRP_STACK_LOCATIONS: u32 = 0x35;
/// `DRIVER_VERIFIER_IOMANAGER_VIOLATION`.
pub const DRIVER_VERIFIER_IOMANAGER_VIOLATION: u32 = 0xC9;
/// `DRIVER_IRQL_NOT_LESS_OR_EQUAL`.
pub const DRIVER_IRQL_NOT_LESS_OR_EQUAL: u32 = 0xD1;
/// `PAGE_FAULT_IN_NONPAGED_AREA`.
pub const PAGE_FAULT_IN_NONPAGED_AREA: u32 = 0x50;
/// `SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION` (special pool, at free).
pub const SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION: u32 = 0xC1;
/// `DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL` (special pool).
pub const DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL: u32 = 0xD5;
/// `DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION` (special pool).
pub const DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION: u32 = 0xD6;
/// Not a Windows code ("KBOT"): the driver did something the bottle does
/// not model (an inline CR8 move, a user-mode mapping, a wait on an object
/// type it does not know). The rule text says what.
pub const UNMODELLED: u32 = u32::from_be_bytes(*b"KBOT");

/// One recorded bugcheck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bugcheck {
    /// Bug check code (0xC4, 0x133, the driver's own `KeBugCheckEx` code).
    pub code: u32,
    /// Parameters 1 to 4.
    pub params: [u64; 4],
    /// What rule was broken, in words, with the driver RVA where known.
    pub rule: String,
    /// Name of the processor (thread) that hit it.
    pub processor: String,
    /// Driver return addresses found on that processor's stack, innermost
    /// first, as `rsndk.sys+0xRVA (function+0xoffset)` (empty for a
    /// bugcheck filed on behalf of another processor, the watchdog's).
    pub driver_frames: Vec<String>,
}

/// What a bugcheck does to the process after it is recorded and reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `std::process::abort()` (the default: the test binary dies loudly).
    Abort,
    /// Park the processor that hit it forever; the test observes
    /// [`bugchecks`].
    Park,
}

static POLICY: AtomicU8 = AtomicU8::new(0);
static BUGCHECKS: Mutex<Vec<Bugcheck>> = Mutex::new(Vec::new());

/// Sets what a bugcheck does from now on.
pub fn set_policy(policy: Policy) {
    POLICY.store(
        match policy {
            Policy::Abort => 0,
            Policy::Park => 1,
        },
        Ordering::SeqCst,
    );
}

/// The current policy.
pub fn policy() -> Policy {
    if POLICY.load(Ordering::SeqCst) == 1 {
        Policy::Park
    } else {
        Policy::Abort
    }
}

/// Every bugcheck recorded so far, oldest first.
pub fn bugchecks() -> Vec<Bugcheck> {
    lock(&BUGCHECKS).clone()
}

/// Forgets the recorded bugchecks (a new machine).
pub fn clear_bugchecks() {
    lock(&BUGCHECKS).clear();
}

/// Stops the machine: records the bugcheck, prints the report (code,
/// parameters, rule, processor, harness backtrace, driver return addresses
/// found on the stack) and then aborts or parks this thread per [`policy`].
pub fn bugcheck(code: u32, params: [u64; 4], rule: impl Into<String>) -> ! {
    let processor = super::processor::current_name();
    record(code, params, rule.into(), processor, true);
    halt_this_processor()
}

/// Records and reports a bugcheck detected on behalf of another processor
/// (the watchdog); does not stop the caller.
pub(crate) fn record(code: u32, params: [u64; 4], rule: String, processor: String, here: bool) {
    let mut report = String::new();
    let _ = writeln!(
        report,
        "\n*** kbottle BUGCHECK 0x{code:X} ({:#x}, {:#x}, {:#x}, {:#x})",
        params[0], params[1], params[2], params[3]
    );
    let _ = writeln!(report, "*** rule: {rule}");
    let _ = writeln!(report, "*** processor: {processor}");
    let driver_frames = if here {
        crate::loader::pe::driver_frames_on_stack()
    } else {
        Vec::new()
    };
    if !driver_frames.is_empty() {
        let _ = writeln!(
            report,
            "*** driver return addresses on the stack (innermost first):"
        );
        for f in &driver_frames {
            let _ = writeln!(report, "      {f}");
        }
    }
    if here {
        let _ = writeln!(
            report,
            "*** harness backtrace:\n{}",
            std::backtrace::Backtrace::force_capture()
        );
    }
    eprint!("{report}");
    lock(&BUGCHECKS).push(Bugcheck {
        code,
        params,
        rule,
        processor,
        driver_frames,
    });
}

/// Ends this processor after a recorded bugcheck, per [`policy`].
pub(crate) fn halt_this_processor() -> ! {
    match policy() {
        Policy::Abort => std::process::abort(),
        Policy::Park => {
            super::processor::mark_halted();
            loop {
                std::thread::park();
            }
        }
    }
}

/// Runs `f`, turning a panic of harness code into a bugcheck report
/// (a panic must never unwind into driver frames).
pub(crate) fn firewall<R>(import: &'static str, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic".to_owned());
            bugcheck(
                UNMODELLED,
                [0; 4],
                format!("harness panic inside import {import}: {what}"),
            )
        }
    }
}

// ---- Low resources simulation ----

/// Which fault points fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultPlan {
    /// None.
    Off,
    /// The Nth fault point reached after [`set_fault_plan`] (1-based)
    /// fails, once; later ones succeed.
    FailNth(u64),
}

static FAIL_NTH: AtomicU64 = AtomicU64::new(0);
static SEEN: AtomicU64 = AtomicU64::new(0);
static INJECTED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// Installs a fault plan and resets the counter and the injected list.
pub fn set_fault_plan(plan: FaultPlan) {
    let nth = match plan {
        FaultPlan::Off => 0,
        FaultPlan::FailNth(n) => n,
    };
    FAIL_NTH.store(0, Ordering::SeqCst);
    SEEN.store(0, Ordering::SeqCst);
    lock(&INJECTED).clear();
    FAIL_NTH.store(nth, Ordering::SeqCst);
}

/// Called by every allocating import; true when this call must fail.
pub fn fault_point(api: &'static str) -> bool {
    let n = SEEN.fetch_add(1, Ordering::SeqCst) + 1;
    let nth = FAIL_NTH.load(Ordering::SeqCst);
    if nth != 0 && n == nth {
        lock(&INJECTED).push(api);
        true
    } else {
        false
    }
}

/// Fault points reached since the last [`set_fault_plan`].
pub fn fault_points_seen() -> u64 {
    SEEN.load(Ordering::SeqCst)
}

/// The APIs that were made to fail since the last [`set_fault_plan`].
pub fn faults_injected() -> Vec<&'static str> {
    lock(&INJECTED).clone()
}

// ---- DPC watchdog ----

pub(super) static SINGLE_LIMIT_NS: AtomicU64 = AtomicU64::new(1_000_000_000);
pub(super) static CUMULATIVE_LIMIT_NS: AtomicU64 = AtomicU64::new(2_000_000_000);

/// Sets the DPC watchdog's limits: how long one DPC may run, and how long
/// a processor may stay at or above `DISPATCH_LEVEL` without a break
/// (defaults 1 s and 2 s).
pub fn set_watchdog_limits(single_dpc: Duration, cumulative: Duration) {
    SINGLE_LIMIT_NS.store(single_dpc.as_nanos() as u64, Ordering::SeqCst);
    CUMULATIVE_LIMIT_NS.store(cumulative.as_nanos() as u64, Ordering::SeqCst);
}

/// The watchdog's limits (single DPC, cumulative).
pub fn watchdog_limits() -> (Duration, Duration) {
    (
        Duration::from_nanos(SINGLE_LIMIT_NS.load(Ordering::SeqCst)),
        Duration::from_nanos(CUMULATIVE_LIMIT_NS.load(Ordering::SeqCst)),
    )
}

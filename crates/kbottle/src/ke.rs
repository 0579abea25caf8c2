//! The kernel's dispatcher services: DPCs, timers, events, waits, spin
//! locks, IRQL, time, processor numbers, `KeBugCheckEx`, `DbgBreakPoint`.
//!
//! Kernel objects live in driver memory; the bottle keeps their state in
//! side tables keyed by address and also fills the real header fields
//! (`Type`, `Size`, `SignalState`, the KDPC routine and arguments), so an
//! inline macro reading them sees sane values. An object the driver never
//! initialised through an import is bound lazily from its header type, as
//! Wine does, or is a violation.
//!
//! DPC model: a DPC is queued on the processor that inserts it. Inserted
//! below `DISPATCH_LEVEL` it runs at once, on that thread, at
//! `DISPATCH_LEVEL`, before `KeInsertQueueDpc` returns (what a processor
//! does when the DISPATCH software interrupt is unmasked); inserted at or
//! above, it runs when that processor lowers below `DISPATCH_LEVEL`.
//! Timers fire on one timer thread (processor "timer"), which queues the
//! timer's DPC there and runs it at `DISPATCH_LEVEL`.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ndis::{KDEFERRED_ROUTINE, KDPC, KIRQL, KSPIN_LOCK, KTIMER, LARGE_INTEGER};
use ndkpi::{BOOLEAN, NTSTATUS, PVOID};

use crate::cpu::{self, DISPATCH_LEVEL, Processor};
use crate::export;
use crate::pe::Export;
use crate::verifier::{
    self, DRIVER_VERIFIER_DETECTED_VIOLATION, IRQL_UNEXPECTED_VALUE, TIMER_OR_DPC_INVALID,
    UNMODELLED, firewall, lock,
};

/// `STATUS_SUCCESS`.
pub const STATUS_SUCCESS: NTSTATUS = 0;
/// `STATUS_TIMEOUT`.
pub const STATUS_TIMEOUT: NTSTATUS = 0x102;
/// Performance counter frequency (10 MHz).
pub const PERFORMANCE_FREQUENCY: i64 = 10_000_000;

/// `DISPATCHER_HEADER.Type` of the objects the bottle models.
const EVENT_NOTIFICATION_OBJECT: u8 = 0;
const EVENT_SYNCHRONIZATION_OBJECT: u8 = 1;
const TIMER_NOTIFICATION_OBJECT: u8 = 8;
const TIMER_SYNCHRONIZATION_OBJECT: u8 = 9;
/// `KOBJECTS` value of a DPC (`DpcObject`).
const DPC_OBJECT: u8 = 19;
/// `MediumImportance`.
const MEDIUM_IMPORTANCE: u8 = 1;

/// x64 `DISPATCHER_HEADER` (0x18 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct DispatcherHeader {
    kind: u8,
    signalling: u8,
    /// Object size in `ULONG`s.
    size: u8,
    reserved: u8,
    signal_state: i32,
    wait_list_head: [usize; 2],
}

/// x64 `KTIMER` (0x40 bytes).
#[repr(C)]
struct KtimerLayout {
    header: DispatcherHeader,
    due_time: u64,
    timer_list_entry: [usize; 2],
    dpc: usize,
    processor: u32,
    period: u32,
}

/// x64 `KDPC` (0x40 bytes).
#[repr(C)]
struct KdpcLayout {
    kind: u8,
    importance: u8,
    number: u16,
    reserved: u32,
    dpc_list_entry: usize,
    processor_history: usize,
    deferred_routine: usize,
    deferred_context: usize,
    system_argument1: usize,
    system_argument2: usize,
    dpc_data: usize,
}

const _: () = assert!(size_of::<KtimerLayout>() == size_of::<KTIMER>());
const _: () = assert!(size_of::<KdpcLayout>() == size_of::<KDPC>());
const _: () = assert!(size_of::<DispatcherHeader>() == size_of::<ndis::KEVENT>());

/// Offset of `SignalState` in a dispatcher header.
const SIGNAL_STATE: usize = 4;
/// Offset of `KDPC.SystemArgument1`.
const DPC_SYSTEM_ARGUMENT1: usize = 0x28;
/// Offset of `KDPC.DpcData` (non-null while queued).
const DPC_DATA: usize = 0x38;

/// Stores `SignalState` in a dispatcher header.
///
/// # Safety
/// `addr` is a writable dispatcher object (an event or timer the driver
/// handed to an import and still owns).
unsafe fn store_signal_state(addr: usize, state: bool) {
    // SAFETY: per the contract; the field is at offset 4, 4-byte aligned.
    unsafe { ((addr + SIGNAL_STATE) as *mut i32).write_volatile(i32::from(state)) };
}

/// 100 ns intervals since 1601-01-01 (system time).
pub fn system_time() -> i64 {
    const UNIX_TO_1601: i64 = 116_444_736_000_000_000;
    let since_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    UNIX_TO_1601 + (since_unix.as_nanos() / 100) as i64
}

/// The instant a kernel due time names: negative = relative 100 ns units,
/// positive = absolute system time, zero = now.
fn instant_of(due: i64) -> Instant {
    let now = Instant::now();
    if due < 0 {
        now + Duration::from_nanos(due.unsigned_abs().saturating_mul(100))
    } else {
        let delta = due.saturating_sub(system_time());
        now + Duration::from_nanos((delta.max(0) as u64).saturating_mul(100))
    }
}

// ---- Counters and the test stall hook ----

static DPC_RUNS: AtomicU64 = AtomicU64::new(0);
static TIMER_FIRES: AtomicU64 = AtomicU64::new(0);

/// DPC routines run so far (all processors).
pub fn dpc_runs() -> u64 {
    DPC_RUNS.load(Ordering::SeqCst)
}

/// Timer expirations so far.
pub fn timer_fires() -> u64 {
    TIMER_FIRES.load(Ordering::SeqCst)
}

/// The armed stall.
#[derive(Debug)]
struct Stall {
    import: &'static str,
    until: &'static str,
    timeout: Duration,
    baseline: u64,
}

static STALL_ARMED: AtomicBool = AtomicBool::new(false);
static STALL: Mutex<Option<Stall>> = Mutex::new(None);
/// Calls of each hooked import (a fixed table: counting is one atomic
/// add on the driver's hot paths).
static CALLS: [(&str, AtomicU64); 9] = [
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
static STALL_LOCK: Mutex<()> = Mutex::new(());
static CALLS_CV: Condvar = Condvar::new();
/// A stall is waiting: counted calls notify `CALLS_CV`.
static STALL_WAITING: AtomicBool = AtomicBool::new(false);
static STALLS_DONE: AtomicU64 = AtomicU64::new(0);

fn calls_of(name: &str) -> u64 {
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
fn hook(name: &'static str) {
    stall_point(name);
    note_call(name);
}

/// A hooked import counted when it returns (`KeCancelTimer`,
/// `KeRemoveQueueDpc`): a DPC stalled until it is called resumes only
/// after its work is done.
fn hooked_on_return<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
    stall_point(name);
    let r = f();
    note_call(name);
    r
}

fn stall_point(name: &'static str) {
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

fn note_call(name: &'static str) {
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

// ---- IRQL checks ----

/// 0xC4/0xE5 ("a kernel API at the incorrect IRQL") unless the current
/// IRQL is at most `max`.
pub(crate) fn require_irql_at_most(max: KIRQL, api: &str) -> KIRQL {
    let irql = cpu::current();
    if irql > max {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0xE5, u64::from(irql), 0, 0],
            format!("{api} called at IRQL {irql} (allowed: <= {max})"),
        );
    }
    irql
}

// ---- DPCs ----

#[derive(Debug)]
struct DpcObject {
    routine: usize,
    context: usize,
    /// (processor, sequence number, SystemArgument1, SystemArgument2).
    queued: Option<(u32, u64, usize, usize)>,
}

#[derive(Debug, Default)]
struct DpcState {
    objects: HashMap<usize, DpcObject>,
    queues: HashMap<u32, VecDeque<(usize, u64)>>,
    /// Per processor: the DPC running there and its sequence number.
    running: HashMap<u32, (usize, u64)>,
    next_seq: u64,
}

static DPCS: OnceLock<Mutex<DpcState>> = OnceLock::new();
static DPC_CV: Condvar = Condvar::new();

fn dpcs() -> std::sync::MutexGuard<'static, DpcState> {
    lock(DPCS.get_or_init(Mutex::default))
}

fn uninitialised(kind: &str, addr: usize, api: &str) -> ! {
    verifier::bugcheck(
        DRIVER_VERIFIER_DETECTED_VIOLATION,
        [0x1002, addr as u64, 0, 0],
        format!("{api}: {kind} at {addr:#x} was never initialised"),
    )
}

/// Queues `dpc` on this processor; false if it is queued anywhere. Runs
/// it (and anything else queued here) at once when below
/// `DISPATCH_LEVEL`.
fn insert_dpc(dpc: usize, sa1: usize, sa2: usize, api: &str) -> bool {
    let p = cpu::this();
    {
        let mut st = dpcs();
        let seq = st.next_seq;
        let Some(obj) = st.objects.get_mut(&dpc) else {
            drop(st);
            uninitialised("KDPC", dpc, api);
        };
        if obj.queued.is_some() {
            return false;
        }
        obj.queued = Some((p.id, seq, sa1, sa2));
        st.next_seq += 1;
        st.queues.entry(p.id).or_default().push_back((dpc, seq));
        // SAFETY: `dpc` is an initialised KDPC the driver owns (it is in
        // the table); SystemArgument1/2 are consecutive words at 0x28.
        unsafe { ((dpc + DPC_SYSTEM_ARGUMENT1) as *mut [usize; 2]).write_volatile([sa1, sa2]) };
        // SAFETY: as above; DpcData (0x38) is non-null while queued.
        unsafe { ((dpc + DPC_DATA) as *mut usize).write_volatile(1) };
    }
    if cpu::current() < DISPATCH_LEVEL {
        cpu::run_at_dispatch(|| ());
    }
    true
}

/// Runs every DPC queued on processor `p` (the caller is `p`, at
/// `DISPATCH_LEVEL`, lowering below it).
pub(crate) fn drain_dpcs(p: &Arc<Processor>) {
    loop {
        let (dpc, seq, routine, context, sa1, sa2) = {
            let mut st = dpcs();
            let Some((dpc, seq)) = st.queues.get_mut(&p.id).and_then(VecDeque::pop_front) else {
                return;
            };
            let Some(obj) = st.objects.get_mut(&dpc) else {
                continue;
            };
            let Some((_, _, sa1, sa2)) = obj.queued.take() else {
                continue;
            };
            let (routine, context) = (obj.routine, obj.context);
            st.running.insert(p.id, (dpc, seq));
            // SAFETY: a queued KDPC is driver memory that must stay valid
            // until it runs (freeing it while queued is caught by pool).
            unsafe { ((dpc + DPC_DATA) as *mut usize).write_volatile(0) };
            (dpc, seq, routine, context, sa1, sa2)
        };
        let _ = seq;
        cpu::set_in_dpc(p, true);
        // SAFETY: `routine` came from KeInitializeDpc, a KDEFERRED_ROUTINE
        // of the loaded image (non-null: checked there).
        let f: KDEFERRED_ROUTINE =
            unsafe { std::mem::transmute::<usize, KDEFERRED_ROUTINE>(routine) };
        // SAFETY: the DPC contract: called at DISPATCH_LEVEL with its
        // object, context and the two insertion arguments.
        unsafe {
            f(
                dpc as *mut KDPC,
                context as PVOID,
                sa1 as PVOID,
                sa2 as PVOID,
            );
        }
        cpu::set_in_dpc(p, false);
        DPC_RUNS.fetch_add(1, Ordering::SeqCst);
        let now = cpu::current();
        if now != DISPATCH_LEVEL {
            verifier::bugcheck(
                IRQL_UNEXPECTED_VALUE,
                [
                    (u64::from(now) << 16) | (u64::from(DISPATCH_LEVEL) << 8) | 0xFE,
                    routine as u64,
                    dpc as u64,
                    0,
                ],
                format!(
                    "DPC routine {} returned at IRQL {now}, not DISPATCH_LEVEL",
                    crate::pe::describe(routine)
                ),
            );
        }
        dpcs().running.remove(&p.id);
        DPC_CV.notify_all();
    }
}

/// Whether no DPC is queued or running anywhere.
pub(crate) fn dpcs_idle() -> bool {
    let st = dpcs();
    st.running.is_empty() && st.queues.values().all(VecDeque::is_empty)
}

/// DPCs queued now (all processors).
pub fn queued_dpcs() -> usize {
    dpcs().queues.values().map(VecDeque::len).sum()
}

/// `KeInitializeDpc`.
pub unsafe extern "win64" fn KeInitializeDpc(
    Dpc: *mut KDPC,
    DeferredRoutine: Option<KDEFERRED_ROUTINE>,
    DeferredContext: PVOID,
) {
    firewall("KeInitializeDpc", || {
        let dpc = Dpc as usize;
        let routine = DeferredRoutine.map_or(0, |f| f as usize);
        if dpc == 0 || routine == 0 {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, dpc as u64, routine as u64, 0],
                "KeInitializeDpc with a null DPC or routine",
            );
        }
        let mut st = dpcs();
        if st.objects.get(&dpc).is_some_and(|o| o.queued.is_some()) {
            drop(st);
            verifier::bugcheck(
                TIMER_OR_DPC_INVALID,
                [1, dpc as u64, dpc as u64, dpc as u64 + 0x40],
                format!("KeInitializeDpc on DPC {dpc:#x} while it is queued"),
            );
        }
        // SAFETY: the caller passes a writable KDPC of 0x40 bytes.
        unsafe {
            Dpc.cast::<KdpcLayout>().write(KdpcLayout {
                kind: DPC_OBJECT,
                importance: MEDIUM_IMPORTANCE,
                number: 0,
                reserved: 0,
                dpc_list_entry: 0,
                processor_history: 0,
                deferred_routine: routine,
                deferred_context: DeferredContext as usize,
                system_argument1: 0,
                system_argument2: 0,
                dpc_data: 0,
            });
        };
        st.objects.insert(
            dpc,
            DpcObject {
                routine,
                context: DeferredContext as usize,
                queued: None,
            },
        );
    });
}

/// `KeInsertQueueDpc`: TRUE if queued, FALSE if it already was.
pub unsafe extern "win64" fn KeInsertQueueDpc(
    Dpc: *mut KDPC,
    SystemArgument1: PVOID,
    SystemArgument2: PVOID,
) -> BOOLEAN {
    firewall("KeInsertQueueDpc", || {
        hook("KeInsertQueueDpc");
        u8::from(insert_dpc(
            Dpc as usize,
            SystemArgument1 as usize,
            SystemArgument2 as usize,
            "KeInsertQueueDpc",
        ))
    })
}

/// `KeRemoveQueueDpc`: TRUE if it was queued.
pub unsafe extern "win64" fn KeRemoveQueueDpc(Dpc: *mut KDPC) -> BOOLEAN {
    firewall("KeRemoveQueueDpc", || {
        hooked_on_return("KeRemoveQueueDpc", || remove_dpc(Dpc as usize))
    })
}

fn remove_dpc(dpc: usize) -> BOOLEAN {
    let mut st = dpcs();
    let Some(obj) = st.objects.get_mut(&dpc) else {
        drop(st);
        uninitialised("KDPC", dpc, "KeRemoveQueueDpc");
    };
    let Some((proc_id, seq, _, _)) = obj.queued.take() else {
        return 0;
    };
    if let Some(q) = st.queues.get_mut(&proc_id) {
        q.retain(|&(d, s)| !(d == dpc && s == seq));
    }
    // SAFETY: an initialised KDPC the driver owns; DpcData cleared.
    unsafe { ((dpc + DPC_DATA) as *mut usize).write_volatile(0) };
    drop(st);
    DPC_CV.notify_all();
    1
}

/// `KeFlushQueuedDpcs` (`PASSIVE_LEVEL`): returns when every DPC queued or
/// running at the time of the call has run or been removed, on every
/// processor (not stopped by a bugcheck).
pub unsafe extern "win64" fn KeFlushQueuedDpcs() {
    firewall("KeFlushQueuedDpcs", || {
        hook("KeFlushQueuedDpcs");
        require_irql_at_most(cpu::PASSIVE_LEVEL, "KeFlushQueuedDpcs");
        let mut st = dpcs();
        let horizon = st.next_seq;
        loop {
            let pending = st
                .queues
                .iter()
                .any(|(id, q)| q.iter().any(|&(_, s)| s < horizon) && !cpu::is_halted(*id))
                || st
                    .running
                    .iter()
                    .any(|(id, &(_, s))| s < horizon && !cpu::is_halted(*id));
            if !pending {
                return;
            }
            st = DPC_CV
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    });
}

// ---- Timers, events, waits ----

#[derive(Debug)]
enum Object {
    Event {
        synchronization: bool,
        signalled: bool,
    },
    Timer {
        synchronization: bool,
        signalled: bool,
        /// (due, sequence, DPC or 0).
        armed: Option<(Instant, u64, usize)>,
    },
}

#[derive(Debug, Default)]
struct Objects {
    table: HashMap<usize, Object>,
    /// Armed timers by due time: (due, sequence, timer).
    heap: BTreeSet<(Instant, u64, usize)>,
    next_seq: u64,
}

static OBJECTS: OnceLock<Mutex<Objects>> = OnceLock::new();
/// Signalled on every object state change (waiters re-check).
static WAIT_CV: Condvar = Condvar::new();
/// Signalled when the earliest timer may have changed.
static TIMER_CV: Condvar = Condvar::new();
static TIMER_THREAD: OnceLock<()> = OnceLock::new();

fn objects() -> std::sync::MutexGuard<'static, Objects> {
    lock(OBJECTS.get_or_init(Mutex::default))
}

/// Binds an object the driver did not initialise through an import from
/// its header type (Wine's lazy binding), or None.
fn bind_lazily(addr: usize) -> Option<Object> {
    // SAFETY: the driver passed `addr` as a dispatcher object; reading
    // its header (0x18 bytes) is what the kernel would do.
    let header = unsafe { (addr as *const DispatcherHeader).read_volatile() };
    let signalled = header.signal_state != 0;
    match header.kind {
        EVENT_NOTIFICATION_OBJECT | EVENT_SYNCHRONIZATION_OBJECT if header.size == 6 => {
            Some(Object::Event {
                synchronization: header.kind == EVENT_SYNCHRONIZATION_OBJECT,
                signalled,
            })
        }
        TIMER_NOTIFICATION_OBJECT | TIMER_SYNCHRONIZATION_OBJECT if header.size == 16 => {
            Some(Object::Timer {
                synchronization: header.kind == TIMER_SYNCHRONIZATION_OBJECT,
                signalled,
                armed: None,
            })
        }
        _ => None,
    }
}

/// Binds `addr` lazily unless the table knows it; false if it is no
/// object the bottle models.
fn ensure_bound(objs: &mut Objects, addr: usize) -> bool {
    if let std::collections::hash_map::Entry::Vacant(e) = objs.table.entry(addr) {
        match bind_lazily(addr) {
            Some(o) => {
                e.insert(o);
            }
            None => return false,
        }
    }
    true
}

fn ensure_timer_thread() {
    TIMER_THREAD.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("kbottle-timer".into())
            .spawn(timer_loop);
        if let Err(e) = spawned {
            eprintln!("kbottle: cannot start the timer thread: {e}");
        }
    });
}

fn timer_loop() {
    cpu::enter("timer");
    let mut objs = objects();
    loop {
        let Some(&(due, seq, timer)) = objs.heap.first() else {
            objs = TIMER_CV
                .wait(objs)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            continue;
        };
        let now = Instant::now();
        if due > now {
            objs = TIMER_CV
                .wait_timeout(objs, due - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
            continue;
        }
        objs.heap.remove(&(due, seq, timer));
        let mut dpc = 0;
        if let Some(Object::Timer {
            signalled, armed, ..
        }) = objs.table.get_mut(&timer)
            && armed.is_some_and(|(_, s, _)| s == seq)
        {
            dpc = armed.map_or(0, |(_, _, d)| d);
            *armed = None;
            *signalled = true;
            // SAFETY: an armed timer's memory stays valid until it fires or
            // is cancelled (freeing it armed is caught by pool).
            unsafe { store_signal_state(timer, true) };
        }
        drop(objs);
        WAIT_CV.notify_all();
        TIMER_FIRES.fetch_add(1, Ordering::SeqCst);
        if dpc != 0 {
            let time = system_time();
            cpu::run_at_dispatch(|| {
                insert_dpc(
                    dpc,
                    time as u32 as usize,
                    (time >> 32) as u32 as usize,
                    "timer expiry",
                )
            });
        }
        objs = objects();
    }
}

/// Timers armed now.
pub fn armed_timers() -> usize {
    objects()
        .table
        .values()
        .filter(|o| matches!(o, Object::Timer { armed: Some(_), .. }))
        .count()
}

/// `KeInitializeTimerEx`.
pub unsafe extern "win64" fn KeInitializeTimerEx(Timer: *mut KTIMER, Type: i32) {
    firewall("KeInitializeTimerEx", || {
        require_irql_at_most(DISPATCH_LEVEL, "KeInitializeTimerEx");
        let timer = Timer as usize;
        let synchronization = Type == 1;
        if timer == 0 || !(0..=1).contains(&Type) {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, timer as u64, Type as u64, 0],
                format!("KeInitializeTimerEx({timer:#x}, {Type}): bad timer or type"),
            );
        }
        let mut objs = objects();
        if matches!(
            objs.table.get(&timer),
            Some(Object::Timer { armed: Some(_), .. })
        ) {
            drop(objs);
            verifier::bugcheck(
                TIMER_OR_DPC_INVALID,
                [0, timer as u64, timer as u64, timer as u64 + 0x40],
                format!("KeInitializeTimerEx on timer {timer:#x} while it is armed"),
            );
        }
        // SAFETY: the caller passes a writable KTIMER of 0x40 bytes.
        unsafe {
            Timer.cast::<KtimerLayout>().write(KtimerLayout {
                header: DispatcherHeader {
                    kind: if synchronization {
                        TIMER_SYNCHRONIZATION_OBJECT
                    } else {
                        TIMER_NOTIFICATION_OBJECT
                    },
                    signalling: 0,
                    size: 16,
                    reserved: 0,
                    signal_state: 0,
                    wait_list_head: [timer + 8, timer + 8],
                },
                due_time: 0,
                timer_list_entry: [0, 0],
                dpc: 0,
                processor: 0,
                period: 0,
            });
        };
        objs.table.insert(
            timer,
            Object::Timer {
                synchronization,
                signalled: false,
                armed: None,
            },
        );
    });
}

/// `KeSetTimer`: arms (or re-arms, replacing the due time) the timer;
/// TRUE if it was armed.
pub unsafe extern "win64" fn KeSetTimer(
    Timer: *mut KTIMER,
    DueTime: LARGE_INTEGER,
    Dpc: *mut KDPC,
) -> BOOLEAN {
    firewall("KeSetTimer", || {
        hook("KeSetTimer");
        require_irql_at_most(DISPATCH_LEVEL, "KeSetTimer");
        let timer = Timer as usize;
        let dpc = Dpc as usize;
        if dpc != 0 && !dpcs().objects.contains_key(&dpc) {
            uninitialised("KDPC", dpc, "KeSetTimer");
        }
        ensure_timer_thread();
        let due = instant_of(DueTime);
        let mut objs = objects();
        if !ensure_bound(&mut objs, timer) {
            drop(objs);
            uninitialised("KTIMER", timer, "KeSetTimer");
        }
        let seq = objs.next_seq;
        objs.next_seq += 1;
        let Some(Object::Timer {
            signalled, armed, ..
        }) = objs.table.get_mut(&timer)
        else {
            drop(objs);
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, timer as u64, 0, 0],
                format!("KeSetTimer on {timer:#x}, which is an event"),
            );
        };
        let was = armed.replace((due, seq, dpc));
        *signalled = false;
        // SAFETY: an initialised KTIMER the driver owns.
        unsafe { store_signal_state(timer, false) };
        // SAFETY: as above; KTIMER.DueTime at 0x18 and Dpc at 0x30.
        unsafe { ((timer + 0x18) as *mut i64).write_volatile(DueTime) };
        // SAFETY: as above.
        unsafe { ((timer + 0x30) as *mut usize).write_volatile(dpc) };
        if let Some((old_due, old_seq, _)) = was {
            objs.heap.remove(&(old_due, old_seq, timer));
        }
        objs.heap.insert((due, seq, timer));
        drop(objs);
        TIMER_CV.notify_all();
        u8::from(was.is_some())
    })
}

/// `KeCancelTimer`: TRUE if the timer was armed.
pub unsafe extern "win64" fn KeCancelTimer(Timer: *mut KTIMER) -> BOOLEAN {
    firewall("KeCancelTimer", || {
        hooked_on_return("KeCancelTimer", || cancel_timer(Timer))
    })
}

fn cancel_timer(timer: *mut KTIMER) -> BOOLEAN {
    {
        require_irql_at_most(DISPATCH_LEVEL, "KeCancelTimer");
        let timer = timer as usize;
        let mut objs = objects();
        let was = match objs.table.get_mut(&timer) {
            Some(Object::Timer { armed, .. }) => armed.take(),
            _ => None,
        };
        if let Some((due, seq, _)) = was {
            objs.heap.remove(&(due, seq, timer));
        }
        u8::from(was.is_some())
    }
}

/// `KeInitializeEvent`.
pub unsafe extern "win64" fn KeInitializeEvent(
    Event: *mut ndis::KEVENT,
    Type: i32,
    State: BOOLEAN,
) {
    firewall("KeInitializeEvent", || {
        let event = Event as usize;
        if event == 0 || !(0..=1).contains(&Type) {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, event as u64, Type as u64, 0],
                format!("KeInitializeEvent({event:#x}, {Type}): bad event or type"),
            );
        }
        // SAFETY: the caller passes a writable KEVENT of 0x18 bytes.
        unsafe {
            Event.cast::<DispatcherHeader>().write(DispatcherHeader {
                kind: Type as u8,
                signalling: 0,
                size: 6,
                reserved: 0,
                signal_state: i32::from(State != 0),
                wait_list_head: [event + 8, event + 8],
            });
        };
        objects().table.insert(
            event,
            Object::Event {
                synchronization: Type == 1,
                signalled: State != 0,
            },
        );
    });
}

/// `KeSetEvent`: signals; returns the previous state.
pub unsafe extern "win64" fn KeSetEvent(
    Event: *mut ndis::KEVENT,
    Increment: i32,
    Wait: BOOLEAN,
) -> i32 {
    let _ = (Increment, Wait);
    firewall("KeSetEvent", || {
        hook("KeSetEvent");
        let event = Event as usize;
        let irql = cpu::current();
        if irql > DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x80, u64::from(irql), event as u64, 0],
                format!("KeSetEvent at IRQL {irql}"),
            );
        }
        let mut objs = objects();
        if !ensure_bound(&mut objs, event) {
            drop(objs);
            uninitialised("KEVENT", event, "KeSetEvent");
        }
        let Some(Object::Event { signalled, .. }) = objs.table.get_mut(&event) else {
            drop(objs);
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, event as u64, 0, 0],
                format!("KeSetEvent on {event:#x}, which is a timer"),
            );
        };
        let previous = *signalled;
        *signalled = true;
        // SAFETY: an initialised KEVENT the driver owns.
        unsafe { store_signal_state(event, true) };
        drop(objs);
        WAIT_CV.notify_all();
        i32::from(previous)
    })
}

/// The IRQL rules of a wait: > DISPATCH 0xC4/0x120; at DISPATCH with no
/// timeout 0x121, with a nonzero one 0x122.
fn check_wait_irql(object: usize, timeout: Option<i64>, api: &str) {
    let irql = cpu::current();
    let p1 = if irql > DISPATCH_LEVEL {
        0x120
    } else if irql == DISPATCH_LEVEL && timeout.is_none() {
        0x121
    } else if irql == DISPATCH_LEVEL && timeout != Some(0) {
        0x122
    } else {
        return;
    };
    verifier::bugcheck(
        DRIVER_VERIFIER_DETECTED_VIOLATION,
        [
            p1,
            u64::from(irql),
            object as u64,
            timeout.unwrap_or(0) as u64,
        ],
        format!("{api} at IRQL {irql} with timeout {timeout:?} (100 ns units)"),
    );
}

/// `KeWaitForSingleObject` on an event or timer: `STATUS_SUCCESS` or
/// `STATUS_TIMEOUT`.
pub unsafe extern "win64" fn KeWaitForSingleObject(
    Object: PVOID,
    WaitReason: i32,
    WaitMode: i8,
    Alertable: BOOLEAN,
    Timeout: *mut LARGE_INTEGER,
) -> NTSTATUS {
    let _ = (WaitReason, Alertable);
    firewall("KeWaitForSingleObject", || {
        hook("KeWaitForSingleObject");
        let object = Object as usize;
        let timeout = (!Timeout.is_null()).then(|| {
            // SAFETY: a non-null Timeout points to a LARGE_INTEGER.
            unsafe { Timeout.read_unaligned() }
        });
        check_wait_irql(object, timeout, "KeWaitForSingleObject");
        if WaitMode != ndis::KernelMode {
            verifier::bugcheck(
                UNMODELLED,
                [object as u64, WaitMode as u64, 0, 0],
                "KeWaitForSingleObject with UserMode: the bottle models kernel-mode waits only",
            );
        }
        let deadline = timeout.map(instant_of);
        let mut objs = objects();
        if !ensure_bound(&mut objs, object) {
            {
                drop(objs);
                verifier::bugcheck(
                    UNMODELLED,
                    [object as u64, 0, 0, 0],
                    format!(
                        "KeWaitForSingleObject on {object:#x}: not an event or timer the bottle knows"
                    ),
                );
            }
        }
        loop {
            match objs.table.get_mut(&object) {
                Some(
                    Object::Event {
                        synchronization,
                        signalled,
                    }
                    | Object::Timer {
                        synchronization,
                        signalled,
                        ..
                    },
                ) if *signalled => {
                    if *synchronization {
                        *signalled = false;
                        // SAFETY: the object the driver waits on is valid
                        // for the wait.
                        unsafe { store_signal_state(object, false) };
                    }
                    return STATUS_SUCCESS;
                }
                Some(_) => {}
                None => {
                    drop(objs);
                    verifier::bugcheck(
                        DRIVER_VERIFIER_DETECTED_VIOLATION,
                        [0x16, object as u64, 0, 0],
                        format!("object {object:#x} was freed during a wait on it"),
                    );
                }
            }
            let now = Instant::now();
            objs = match deadline {
                Some(d) if d <= now => return STATUS_TIMEOUT,
                Some(d) => {
                    WAIT_CV
                        .wait_timeout(objs, d - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
                None => WAIT_CV
                    .wait(objs)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            };
        }
    })
}

/// `KeDelayExecutionThread`: sleeps (`<= APC_LEVEL`).
pub unsafe extern "win64" fn KeDelayExecutionThread(
    WaitMode: i8,
    Alertable: BOOLEAN,
    Interval: *mut LARGE_INTEGER,
) -> NTSTATUS {
    let _ = (WaitMode, Alertable);
    firewall("KeDelayExecutionThread", || {
        hook("KeDelayExecutionThread");
        if Interval.is_null() {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, 0, 0, 0],
                "KeDelayExecutionThread with a null Interval",
            );
        }
        // SAFETY: a non-null Interval points to a LARGE_INTEGER.
        let interval = unsafe { Interval.read_unaligned() };
        let irql = cpu::current();
        if irql >= DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [
                    if irql > DISPATCH_LEVEL { 0x120 } else { 0x122 },
                    u64::from(irql),
                    0,
                    interval as u64,
                ],
                format!("KeDelayExecutionThread at IRQL {irql} (allowed: <= APC_LEVEL)"),
            );
        }
        let until = instant_of(interval);
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
        STATUS_SUCCESS
    })
}

// ---- Spin locks and IRQL ----

/// Held spin locks: lock address → (processor, IRQL before the acquire).
static SPIN_LOCKS: Mutex<Vec<(usize, u32, KIRQL)>> = Mutex::new(Vec::new());

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
        let me = cpu::current_number();
        if lock(&SPIN_LOCKS)
            .iter()
            .any(|&(l, p, _)| l == lock_addr && p == me)
        {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x1000, lock_addr as u64, 0, 0],
                format!(
                    "self-deadlock: processor {} acquires spin lock {lock_addr:#x} it holds",
                    cpu::current_name()
                ),
            );
        }
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

// ---- Time, processors, bug checks ----

/// `KeQueryPerformanceCounter` (10 MHz, `CLOCK_MONOTONIC`).
pub unsafe extern "win64" fn KeQueryPerformanceCounter(
    PerformanceFrequency: *mut LARGE_INTEGER,
) -> LARGE_INTEGER {
    firewall("KeQueryPerformanceCounter", || {
        hook("KeQueryPerformanceCounter");
        if !PerformanceFrequency.is_null() {
            // SAFETY: a non-null pointer to a LARGE_INTEGER.
            unsafe { PerformanceFrequency.write_unaligned(PERFORMANCE_FREQUENCY) };
        }
        (cpu::now_ns() / 100) as i64
    })
}

/// `PROCESSOR_NUMBER`.
#[repr(C)]
struct ProcessorNumber {
    group: u16,
    number: u8,
    reserved: u8,
}

/// `KeGetCurrentProcessorNumberEx`: the processor's number (group 0).
pub unsafe extern "win64" fn KeGetCurrentProcessorNumberEx(ProcNumber: PVOID) -> u32 {
    firewall("KeGetCurrentProcessorNumberEx", || {
        let n = cpu::current_number();
        if !ProcNumber.is_null() {
            // SAFETY: a non-null pointer to a PROCESSOR_NUMBER.
            unsafe {
                ProcNumber
                    .cast::<ProcessorNumber>()
                    .write_unaligned(ProcessorNumber {
                        group: 0,
                        number: n as u8,
                        reserved: 0,
                    });
            };
        }
        n
    })
}

/// `KeBugCheckEx`: a naked thunk that adds the caller's return address as
/// a sixth argument, so the report names the calling RVA.
#[unsafe(naked)]
pub unsafe extern "win64" fn KeBugCheckEx() {
    core::arch::naked_asm!(
        "mov rax, [rsp]",
        "mov r10, [rsp + 0x28]",
        "sub rsp, 0x38",
        "mov [rsp + 0x20], r10",
        "mov [rsp + 0x28], rax",
        "call {imp}",
        "ud2",
        imp = sym bugcheck_ex,
    )
}

unsafe extern "win64" fn bugcheck_ex(
    code: u32,
    p1: usize,
    p2: usize,
    p3: usize,
    p4: usize,
    caller: usize,
) -> ! {
    let params = [p1 as u64, p2 as u64, p3 as u64, p4 as u64];
    let mut rule = format!(
        "KeBugCheckEx called by the driver at {}",
        crate::pe::describe(caller)
    );
    if code == u32::from_be_bytes(*b"RSNK") && p2 < 4096 && p1 != 0 {
        // rsndk's panic code: P1/P2 = file name (UTF-8), P3 line, P4 column.
        // SAFETY: the panic handler passes a file name of P2 bytes at P1
        // (static data of the image).
        let bytes = unsafe { std::slice::from_raw_parts(p1 as *const u8, p2) };
        let _ = write!(
            rule,
            ": rsndk panic at {}:{p3}:{p4}",
            String::from_utf8_lossy(bytes)
        );
    }
    verifier::bugcheck(code, params, rule)
}

/// `DbgBreakPoint`: the bottle plays a kernel debugger that logs the break
/// and continues (`g`), so what the driver does next (its bugcheck) is
/// still observed.
pub unsafe extern "win64" fn DbgBreakPoint() {
    firewall("DbgBreakPoint", || {
        crate::crt::log_line(format!(
            "DbgBreakPoint on processor {}: continuing",
            cpu::current_name()
        ));
    });
}

// ---- Live objects ----

/// What [`live_objects_in`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveKind {
    /// An armed `KTIMER`.
    ArmedTimer,
    /// A queued `KDPC`.
    QueuedDpc,
    /// A held `KSPIN_LOCK`.
    HeldSpinLock,
    /// A `KDPC` an armed timer (elsewhere) will queue when it fires.
    TimerDpc,
}

/// A live kernel object in a memory range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveObject {
    /// What it is.
    pub kind: LiveKind,
    /// Its address.
    pub addr: usize,
    /// For a DPC or a timer with a DPC: the deferred routine.
    pub routine: Option<usize>,
}

/// Armed timers, queued DPCs, held spin locks and DPCs an armed timer
/// will queue, inside `range`.
pub fn live_objects_in(range: Range<usize>) -> Vec<LiveObject> {
    let mut out = Vec::new();
    let routine_of = |st: &DpcState, dpc: usize| st.objects.get(&dpc).map(|o| o.routine);
    {
        let st = dpcs();
        for (&addr, o) in &st.objects {
            if range.contains(&addr) && o.queued.is_some() {
                out.push(LiveObject {
                    kind: LiveKind::QueuedDpc,
                    addr,
                    routine: Some(o.routine),
                });
            }
        }
        let objs = objects();
        for (&addr, o) in &objs.table {
            let Object::Timer {
                armed: Some((_, _, dpc)),
                ..
            } = o
            else {
                continue;
            };
            if range.contains(&addr) {
                out.push(LiveObject {
                    kind: LiveKind::ArmedTimer,
                    addr,
                    routine: routine_of(&st, *dpc),
                });
            } else if *dpc != 0 && range.contains(dpc) {
                out.push(LiveObject {
                    kind: LiveKind::TimerDpc,
                    addr: *dpc,
                    routine: routine_of(&st, *dpc),
                });
            }
        }
    }
    for &(addr, _, _) in lock(&SPIN_LOCKS).iter() {
        if range.contains(&addr) {
            out.push(LiveObject {
                kind: LiveKind::HeldSpinLock,
                addr,
                routine: None,
            });
        }
    }
    out.sort_by_key(|o| o.addr);
    out
}

/// Queued DPCs and armed timers whose routine lies inside `range` (an
/// image being unloaded: 0xC7 P1 2).
pub fn routines_in(range: Range<usize>) -> Vec<LiveObject> {
    live_objects_in(0..usize::MAX)
        .into_iter()
        .filter(|o| o.routine.is_some_and(|r| range.contains(&r)))
        .collect()
}

/// Forgets every object inside `range` that is not live (its memory is
/// being freed or unmapped), so a later object at the same address
/// starts fresh.
pub fn forget_objects_in(range: Range<usize>) {
    dpcs()
        .objects
        .retain(|a, o| !range.contains(a) || o.queued.is_some());
    objects()
        .table
        .retain(|a, o| !range.contains(a) || matches!(o, Object::Timer { armed: Some(_), .. }));
}

/// Every ke import.
pub fn exports() -> Vec<Export> {
    vec![
        export!("ntoskrnl.exe", KeInitializeDpc),
        export!("ntoskrnl.exe", KeInsertQueueDpc),
        export!("ntoskrnl.exe", KeRemoveQueueDpc),
        export!("ntoskrnl.exe", KeFlushQueuedDpcs),
        export!("ntoskrnl.exe", KeInitializeTimerEx),
        export!("ntoskrnl.exe", KeSetTimer),
        export!("ntoskrnl.exe", KeCancelTimer),
        export!("ntoskrnl.exe", KeInitializeEvent),
        export!("ntoskrnl.exe", KeSetEvent),
        export!("ntoskrnl.exe", KeWaitForSingleObject),
        export!("ntoskrnl.exe", KeDelayExecutionThread),
        export!("ntoskrnl.exe", KeQueryPerformanceCounter),
        // wdm.h declares it NTHALAPI: drivers import it from HAL.dll.
        export!("HAL.dll", "KeQueryPerformanceCounter" => KeQueryPerformanceCounter),
        export!("ntoskrnl.exe", KeGetCurrentProcessorNumberEx),
        export!("ntoskrnl.exe", KeBugCheckEx),
        export!("ntoskrnl.exe", DbgBreakPoint),
        export!("ntoskrnl.exe", KfRaiseIrql),
        export!("ntoskrnl.exe", KeLowerIrql),
        export!("ntoskrnl.exe", KeGetCurrentIrql),
        export!("ntoskrnl.exe", KeAcquireSpinLockRaiseToDpc),
        export!("ntoskrnl.exe", KeReleaseSpinLock),
    ]
}

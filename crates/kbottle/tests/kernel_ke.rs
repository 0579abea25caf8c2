//! DPCs, timers, events, waits, spin locks, time and processor numbers,
//! called through their win64 entry points as the driver calls them.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(unsafe_code, non_snake_case)]

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use kbottle::cpu;
use kbottle::ke::{self, *};
use ndis::{KDPC, KEVENT, KSPIN_LOCK, KTIMER};

/// Tests here share the kernel's global state (the stall hook counts
/// KeCancelTimer calls of any thread; flush waits for every processor):
/// they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a DPC routine saw.
#[derive(Debug, Default)]
struct Seen {
    runs: AtomicUsize,
    irql: AtomicU8,
    processor: Mutex<String>,
    args: Mutex<(usize, usize)>,
    /// Sleep this long inside the routine.
    sleep_ms: AtomicU64,
    /// Arm this timer from inside the routine (stall test).
    rearm: AtomicUsize,
    entered: AtomicBool,
}

unsafe extern "win64" fn record(
    _dpc: *mut KDPC,
    context: *mut core::ffi::c_void,
    a1: *mut core::ffi::c_void,
    a2: *mut core::ffi::c_void,
) {
    // SAFETY: every test passes a `Seen` that outlives the DPC.
    let seen = unsafe { &*context.cast::<Seen>() };
    seen.entered.store(true, Ordering::SeqCst);
    seen.irql.store(cpu::current(), Ordering::SeqCst);
    *seen.processor.lock().unwrap() = cpu::current_name();
    *seen.args.lock().unwrap() = (a1 as usize, a2 as usize);
    let ms = seen.sleep_ms.load(Ordering::SeqCst);
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let timer = seen.rearm.load(Ordering::SeqCst);
    if timer != 0 {
        // SAFETY: the stall test's timer, initialised and alive.
        unsafe { KeSetTimer(timer as *mut KTIMER, -10_000_000, std::ptr::null_mut()) };
    }
    seen.runs.fetch_add(1, Ordering::SeqCst);
}

/// A DPC with its `Seen`, boxed so addresses stay put.
struct Dpc {
    dpc: Box<KDPC>,
    seen: Box<Seen>,
}

impl Dpc {
    fn new() -> Self {
        let mut d = Self {
            dpc: Box::new(KDPC::zeroed()),
            seen: Box::default(),
        };
        let ctx = (&raw const *d.seen).cast_mut().cast();
        // SAFETY: a zeroed KDPC and a routine of the right type.
        unsafe { KeInitializeDpc(&raw mut *d.dpc, Some(record), ctx) };
        d
    }

    fn ptr(&mut self) -> *mut KDPC {
        &raw mut *self.dpc
    }

    fn runs(&self) -> usize {
        self.seen.runs.load(Ordering::SeqCst)
    }

    fn insert(&mut self, a1: usize, a2: usize) -> u8 {
        // SAFETY: an initialised DPC that outlives the call and the run.
        unsafe { KeInsertQueueDpc(self.ptr(), a1 as _, a2 as _) }
    }
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Runs `f` on a fresh processor thread named `name`.
fn on_processor<R: Send + 'static>(
    name: &'static str,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    std::thread::spawn(move || {
        cpu::enter(name);
        f()
    })
    .join()
    .unwrap()
}

#[test]
fn a_dpc_inserted_at_passive_runs_before_the_insert_returns() {
    let _serial = serial();
    on_processor("passive-insert", || {
        let mut d = Dpc::new();
        assert_eq!(d.insert(11, 22), 1);
        assert_eq!(d.runs(), 1);
        assert_eq!(d.seen.irql.load(Ordering::SeqCst), cpu::DISPATCH_LEVEL);
        assert_eq!(*d.seen.processor.lock().unwrap(), "passive-insert");
        assert_eq!(*d.seen.args.lock().unwrap(), (11, 22));
        assert_eq!(cpu::current(), cpu::PASSIVE_LEVEL);
    });
}

#[test]
fn a_dpc_inserted_at_dispatch_runs_when_the_processor_lowers() {
    let _serial = serial();
    on_processor("dispatch-insert", || {
        let mut d = Dpc::new();
        // SAFETY: raising from PASSIVE_LEVEL.
        let old = unsafe { KfRaiseIrql(cpu::DISPATCH_LEVEL) };
        assert_eq!(old, cpu::PASSIVE_LEVEL);
        // SAFETY: no arguments.
        assert_eq!(unsafe { KeGetCurrentIrql() }, cpu::DISPATCH_LEVEL);
        assert_eq!(d.insert(1, 2), 1);
        assert_eq!(d.insert(3, 4), 0, "already queued");
        assert_eq!(d.runs(), 0, "deferred at DISPATCH_LEVEL");
        let live = live_objects_in(d.ptr() as usize..d.ptr() as usize + 0x40);
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].kind, LiveKind::QueuedDpc);
        // SAFETY: lowering to the level raised from.
        unsafe { KeLowerIrql(old) };
        assert_eq!(d.runs(), 1, "ran once on lowering");
        assert_eq!(
            *d.seen.args.lock().unwrap(),
            (1, 2),
            "the first insertion's arguments"
        );
        assert!(live_objects_in(d.ptr() as usize..d.ptr() as usize + 0x40).is_empty());
    });
}

#[test]
fn a_removed_dpc_does_not_run() {
    let _serial = serial();
    on_processor("remove", || {
        let mut d = Dpc::new();
        let old = cpu::raise(cpu::DISPATCH_LEVEL);
        assert_eq!(d.insert(0, 0), 1);
        // SAFETY: an initialised DPC.
        assert_eq!(unsafe { KeRemoveQueueDpc(d.ptr()) }, 1);
        // SAFETY: `d`'s KDPC, initialised by `Dpc::new` and boxed in `d`, which
        // lives to the end of the closure; it is no longer queued.
        assert_eq!(unsafe { KeRemoveQueueDpc(d.ptr()) }, 0);
        cpu::lower(old);
        assert_eq!(d.runs(), 0);
    });
}

#[test]
fn flush_waits_for_a_dpc_queued_on_another_processor() {
    let _serial = serial();
    let ready = Arc::new(Barrier::new(2));
    let r2 = Arc::clone(&ready);
    let mut d = Dpc::new();
    let dpc_addr = d.ptr() as usize;
    let seen_addr = &raw const *d.seen as usize;
    let other = std::thread::spawn(move || {
        cpu::enter("flush-holder");
        let old = cpu::raise(cpu::DISPATCH_LEVEL);
        assert_eq!(
            // SAFETY: the DPC outlives this thread (joined below).
            unsafe {
                KeInsertQueueDpc(
                    dpc_addr as *mut KDPC,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            },
            1
        );
        r2.wait();
        std::thread::sleep(Duration::from_millis(150));
        cpu::lower(old);
    });
    ready.wait();
    let start = Instant::now();
    // SAFETY: PASSIVE_LEVEL.
    unsafe { KeFlushQueuedDpcs() };
    // SAFETY: `Seen` outlives the thread.
    let seen = unsafe { &*(seen_addr as *const Seen) };
    assert_eq!(
        seen.runs.load(Ordering::SeqCst),
        1,
        "flush returned after the DPC ran"
    );
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert_eq!(*seen.processor.lock().unwrap(), "flush-holder");
    other.join().unwrap();
    drop(d);
}

struct Timer {
    timer: Box<KTIMER>,
}

impl Timer {
    fn new() -> Self {
        let mut t = Self {
            timer: Box::new(KTIMER::zeroed()),
        };
        // SAFETY: a zeroed KTIMER.
        unsafe { KeInitializeTimerEx(&raw mut *t.timer, ndis::NotificationTimer) };
        t
    }

    fn ptr(&mut self) -> *mut KTIMER {
        &raw mut *self.timer
    }

    fn set(&mut self, due_100ns: i64, dpc: *mut KDPC) -> u8 {
        // SAFETY: an initialised timer and DPC that outlive it.
        unsafe { KeSetTimer(self.ptr(), due_100ns, dpc) }
    }

    fn cancel(&mut self) -> u8 {
        // SAFETY: an initialised timer.
        unsafe { KeCancelTimer(self.ptr()) }
    }
}

const MS: i64 = -10_000;

#[test]
fn a_timer_fires_its_dpc_on_the_timer_processor_at_dispatch() {
    let _serial = serial();
    let mut d = Dpc::new();
    let mut t = Timer::new();
    let start = Instant::now();
    assert_eq!(t.set(20 * MS, d.ptr()), 0, "was not armed");
    wait_until("the timer DPC", Duration::from_secs(3), || d.runs() == 1);
    assert!(start.elapsed() >= Duration::from_millis(19));
    assert_eq!(*d.seen.processor.lock().unwrap(), "timer");
    assert_eq!(d.seen.irql.load(Ordering::SeqCst), cpu::DISPATCH_LEVEL);
    assert_eq!(t.cancel(), 0, "expired, so not armed");
    // A notification timer stays signalled: a wait on it returns at once.
    let mut zero = 0i64;
    assert_eq!(
        // SAFETY: a timer is a dispatcher object; zero timeout polls.
        unsafe { KeWaitForSingleObject(t.ptr().cast(), 0, 0, 0, &raw mut zero) },
        STATUS_SUCCESS
    );
}

#[test]
fn re_arming_replaces_the_due_time_and_reports_it_was_armed() {
    let _serial = serial();
    let mut d = Dpc::new();
    let mut t = Timer::new();
    assert_eq!(t.set(5_000 * MS, d.ptr()), 0);
    assert_eq!(t.set(20 * MS, d.ptr()), 1, "was armed");
    wait_until("the re-armed timer", Duration::from_secs(2), || {
        d.runs() == 1
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(d.runs(), 1, "fires once");
}

#[test]
fn a_cancelled_timer_does_not_fire() {
    let _serial = serial();
    let mut d = Dpc::new();
    let mut t = Timer::new();
    assert_eq!(t.set(50 * MS, d.ptr()), 0);
    let range = t.ptr() as usize..t.ptr() as usize + 0x40;
    assert_eq!(live_objects_in(range.clone())[0].kind, LiveKind::ArmedTimer);
    assert_eq!(t.cancel(), 1);
    assert!(live_objects_in(range).is_empty());
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(d.runs(), 0);
    assert_eq!(t.cancel(), 0);
}

#[test]
fn events_wake_waiters_and_waits_time_out() {
    let _serial = serial();
    let mut ev = Box::new(KEVENT::zeroed());
    // SAFETY: a zeroed KEVENT.
    unsafe { KeInitializeEvent(&raw mut *ev, ndis::NotificationEvent, 0) };
    let addr = &raw mut *ev as usize;
    let mut ten_ms = 10 * MS;
    assert_eq!(
        // SAFETY: an initialised event; relative 10 ms timeout.
        unsafe { KeWaitForSingleObject(addr as _, 0, 0, 0, &raw mut ten_ms) },
        STATUS_TIMEOUT
    );
    let waiter = std::thread::spawn(move || {
        // SAFETY: the event outlives the thread; no timeout.
        unsafe { KeWaitForSingleObject(addr as _, 0, 0, 0, std::ptr::null_mut()) }
    });
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        // SAFETY: an initialised event, PASSIVE_LEVEL.
        unsafe { KeSetEvent(addr as _, 0, 0) },
        0,
        "was not signalled"
    );
    assert_eq!(waiter.join().unwrap(), STATUS_SUCCESS);
    // Notification events stay signalled.
    // SAFETY: `ev`, initialised above and boxed in this frame; the
    // waiter was joined; PASSIVE_LEVEL, Wait is FALSE.
    assert_eq!(unsafe { KeSetEvent(addr as _, 0, 0) }, 1);

    // A synchronization event is consumed by one wait.
    // SAFETY: a fresh event.
    unsafe { KeInitializeEvent(&raw mut *ev, 1, 1) };
    let mut zero = 0i64;
    assert_eq!(
        // SAFETY: an initialised event; zero timeout polls.
        unsafe { KeWaitForSingleObject(addr as _, 0, 0, 0, &raw mut zero) },
        STATUS_SUCCESS
    );
    assert_eq!(
        // SAFETY: `ev`, reinitialised above as a synchronization event and
        // boxed in this frame; a zero timeout polls.
        unsafe { KeWaitForSingleObject(addr as _, 0, 0, 0, &raw mut zero) },
        STATUS_TIMEOUT
    );
}

#[test]
fn delay_sleeps_the_interval() {
    let _serial = serial();
    let start = Instant::now();
    let mut interval = 30 * MS;
    assert_eq!(
        // SAFETY: PASSIVE_LEVEL, a valid interval.
        unsafe { KeDelayExecutionThread(0, 0, &raw mut interval) },
        STATUS_SUCCESS
    );
    assert!(start.elapsed() >= Duration::from_millis(29));
}

#[test]
fn spin_locks_raise_to_dispatch_and_exclude() {
    let _serial = serial();
    let lock = Arc::new(Mutex::new(0 as KSPIN_LOCK));
    let lock_addr = {
        let mut g = lock.lock().unwrap();
        &raw mut *g as usize
    };
    let counter = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let counter = Arc::clone(&counter);
            std::thread::spawn(move || {
                cpu::enter(if i == 0 { "lock-a" } else { "lock-b" });
                for _ in 0..2000 {
                    // SAFETY: an aligned KSPIN_LOCK that outlives the threads.
                    let old = unsafe { KeAcquireSpinLockRaiseToDpc(lock_addr as *mut KSPIN_LOCK) };
                    assert_eq!(old, cpu::PASSIVE_LEVEL);
                    assert_eq!(cpu::current(), cpu::DISPATCH_LEVEL);
                    // Non-atomic read-modify-write under the lock.
                    let v = counter.load(Ordering::Relaxed);
                    counter.store(v + 1, Ordering::Relaxed);
                    // SAFETY: held by this processor, acquired at PASSIVE.
                    unsafe { KeReleaseSpinLock(lock_addr as *mut KSPIN_LOCK, old) };
                    assert_eq!(cpu::current(), cpu::PASSIVE_LEVEL);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(counter.load(Ordering::SeqCst), 4000);
    assert_eq!(*lock.lock().unwrap(), 0, "released");
}

#[test]
fn the_performance_counter_runs_at_10_mhz() {
    let _serial = serial();
    let mut freq = 0i64;
    // SAFETY: a valid out-pointer.
    let a = unsafe { KeQueryPerformanceCounter(&raw mut freq) };
    assert_eq!(freq, 10_000_000);
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: a null frequency pointer is allowed.
    let b = unsafe { KeQueryPerformanceCounter(std::ptr::null_mut()) };
    let elapsed = b - a;
    assert!(
        (400_000..5_000_000).contains(&elapsed),
        "{elapsed} ticks in 50 ms"
    );
}

#[test]
fn processors_have_distinct_small_numbers() {
    let _serial = serial();
    let barrier = Arc::new(Barrier::new(3));
    let numbers: Vec<_> = (0..3)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut pn = [0xFFu8; 4];
                // SAFETY: a PROCESSOR_NUMBER-sized out-buffer.
                let n = unsafe { KeGetCurrentProcessorNumberEx(pn.as_mut_ptr().cast()) };
                assert_eq!(u32::from(pn[2]), n, "Number");
                assert_eq!(&pn[..2], &[0, 0], "Group 0");
                barrier.wait();
                n
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let mut sorted = numbers.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 3, "{numbers:?}");
    assert!(numbers.iter().all(|&n| n < 64));
}

/// The DRIVER engineer's race: a DPC already running arms the timer after
/// the stopping thread cancelled it; flushing waits for that DPC, and the
/// timer is armed afterwards.
#[test]
fn stall_in_dpc_lets_a_running_dpc_arm_a_cancelled_timer() {
    let _serial = serial();
    let mut d = Dpc::new();
    let mut t = Timer::new();
    d.seen.rearm.store(t.ptr() as usize, Ordering::SeqCst);
    let before = ke::stalls_done();
    ke::stall_in_dpc("KeSetTimer", "KeCancelTimer", Duration::from_secs(5));
    let dpc_addr = d.ptr() as usize;
    let runner = std::thread::spawn(move || {
        cpu::enter("stalled-dpc");
        // SAFETY: the DPC outlives the thread (joined below).
        unsafe {
            KeInsertQueueDpc(
                dpc_addr as *mut KDPC,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    });
    wait_until("the DPC to start", Duration::from_secs(3), || {
        d.seen.entered.load(Ordering::SeqCst)
    });
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        t.cancel(),
        0,
        "not armed yet: the DPC is stalled before KeSetTimer"
    );
    // SAFETY: PASSIVE_LEVEL.
    unsafe { KeFlushQueuedDpcs() };
    assert_eq!(d.runs(), 1, "flush waited for the running DPC");
    assert_eq!(ke::stalls_done(), before + 1);
    let range = t.ptr() as usize..t.ptr() as usize + 0x40;
    assert_eq!(
        live_objects_in(range)[0].kind,
        LiveKind::ArmedTimer,
        "the timer was armed after it was cancelled"
    );
    assert_eq!(t.cancel(), 1);
    runner.join().unwrap();
}

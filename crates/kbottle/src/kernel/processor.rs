//! Processors: a *processor* is an OS thread that runs driver code, with
//! its own IRQL and DPC queue (the queue is [`super::dpc_queue`]; raising
//! and lowering the IRQL, which runs that queue, is [`super::cpu`]).
//!
//! Each processor's state is thread-local for the fast path, and also in a
//! global registry so that `KeFlushQueuedDpcs` can see every queue and the
//! watchdog thread can see how long each processor has been at
//! `DISPATCH_LEVEL` or inside one DPC. Processor numbers are small and
//! reused: a new processor takes the lowest number no live one holds, as a
//! machine has a fixed set of processors.
//!
//! The floor of the kernel: it imports only [`super::signals`] and
//! [`crate::sync`], so the verifier, the trap handlers and the DPC queue
//! can name the processor they run on.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::signals;
use crate::sync::lock;

/// Interrupt request level.
pub type KIRQL = ndis::KIRQL;
/// `PASSIVE_LEVEL`.
pub const PASSIVE_LEVEL: KIRQL = ndis::PASSIVE_LEVEL;
/// `APC_LEVEL`.
pub const APC_LEVEL: KIRQL = ndis::APC_LEVEL;
/// `DISPATCH_LEVEL`.
pub const DISPATCH_LEVEL: KIRQL = ndis::DISPATCH_LEVEL;
/// `PROFILE_LEVEL` (x64).
pub const PROFILE_LEVEL: KIRQL = 15;
/// `HIGH_LEVEL` (x64).
pub const HIGH_LEVEL: KIRQL = 15;

/// Nanoseconds since the bottle's epoch (monotonic); never 0.
pub(crate) fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// CPU time the thread with CPU-time clock `clock` has run, in ns; never
/// 0. The DPC watchdog counts a processor's time at DISPATCH_LEVEL in the
/// CPU time of its thread: on Windows nothing preempts a processor at
/// DISPATCH_LEVEL, so all of that time is the driver's, while a bottle
/// processor is a thread Linux may deschedule at any moment, which is not
/// the driver's doing (on a loaded two-core machine a wall-clock watchdog
/// counted hundreds of milliseconds of someone else's work). A DPC that
/// spins, on a lock or in a loop, burns CPU time and is still caught.
fn cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a clock id from pthread_getcpuclockid of a live registered
    // thread (the registry drops a processor before its thread ends) and a
    // valid out-pointer.
    let rc = unsafe { libc::clock_gettime(clock, &raw mut ts) };
    if rc != 0 {
        return 1;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
        + 1
}

/// One processor's shared state.
#[derive(Debug)]
pub(crate) struct Processor {
    pub(crate) id: u32,
    name: Mutex<String>,
    irql: AtomicU8,
    /// The thread's CPU time ([`cpu_ns`]) when the IRQL went to
    /// `>= DISPATCH_LEVEL`, 0 below it.
    dispatch_since: AtomicU64,
    /// The thread's CPU time when the running DPC started, 0 when none
    /// runs.
    dpc_since: AtomicU64,
    /// The thread's CPU-time clock.
    cpu_clock: libc::clockid_t,
    /// The harness holds this processor on purpose (a test stall): the
    /// watchdog does not count it.
    watch_paused: AtomicBool,
    /// Stopped by a bugcheck under `Policy::Park`.
    halted: AtomicBool,
    thread: libc::pthread_t,
}

impl Processor {
    pub(crate) fn name(&self) -> String {
        lock(&self.name).clone()
    }

    /// Its IRQL.
    pub(crate) fn irql(&self) -> KIRQL {
        self.irql.load(Ordering::Relaxed)
    }

    /// Whether a DPC routine runs on it.
    pub(crate) fn in_dpc_routine(&self) -> bool {
        self.dpc_since.load(Ordering::Relaxed) != 0
    }
}

static REGISTRY: Mutex<Vec<Arc<Processor>>> = Mutex::new(Vec::new());

/// Removes the processor from the registry when its thread ends.
struct Registration(Arc<Processor>);

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&REGISTRY).retain(|p| !Arc::ptr_eq(p, &self.0));
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Registration>> = const { RefCell::new(None) };
    /// This thread's IRQL, readable from a signal handler (a const
    /// initialised thread-local without destructor is a plain TLS slot).
    static IRQL_MIRROR: Cell<KIRQL> = const { Cell::new(PASSIVE_LEVEL) };
    /// This thread is a registered processor.
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// The calling thread's IRQL, async-signal-safe.
pub(crate) fn irql_signal_safe() -> KIRQL {
    IRQL_MIRROR.with(Cell::get)
}

/// The calling thread's CPU-time clock (`CLOCK_THREAD_CPUTIME_ID` as an
/// id other threads can read).
fn this_thread_cpu_clock() -> libc::clockid_t {
    let mut clock: libc::clockid_t = libc::CLOCK_THREAD_CPUTIME_ID;
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() };
    // SAFETY: `me` is the calling, live thread; a valid out-pointer.
    let rc = unsafe { libc::pthread_getcpuclockid(me, &raw mut clock) };
    if rc == 0 {
        clock
    } else {
        libc::CLOCK_THREAD_CPUTIME_ID
    }
}

fn register(name: String) -> Arc<Processor> {
    let mut reg = lock(&REGISTRY);
    let mut id = 0;
    while reg.iter().any(|p| p.id == id) {
        id += 1;
    }
    let p = Arc::new(Processor {
        id,
        name: Mutex::new(name),
        irql: AtomicU8::new(PASSIVE_LEVEL),
        dispatch_since: AtomicU64::new(0),
        dpc_since: AtomicU64::new(0),
        cpu_clock: this_thread_cpu_clock(),
        watch_paused: AtomicBool::new(false),
        halted: AtomicBool::new(false),
        // SAFETY: pthread_self has no preconditions.
        thread: unsafe { libc::pthread_self() },
    });
    reg.push(Arc::clone(&p));
    drop(reg);
    signals::ensure_altstack();
    p
}

/// This thread's processor, registering it under an automatic name if it
/// never called [`enter`].
pub(crate) fn this() -> Arc<Processor> {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(r) = c.as_ref() {
            return Arc::clone(&r.0);
        }
        let t = std::thread::current();
        let name = match t.name() {
            Some(n) => format!("thread {n}"),
            None => format!("thread {:?}", t.id()),
        };
        let p = register(name);
        *c = Some(Registration(Arc::clone(&p)));
        REGISTERED.with(|r| r.set(true));
        p
    })
}

/// Names the calling thread as a processor (a thread that calls driver
/// code without it gets an automatic name).
pub fn enter(name: &str) {
    let p = this();
    name.clone_into(&mut lock(&p.name));
}

/// The calling processor's name.
pub fn current_name() -> String {
    CURRENT
        .try_with(|c| {
            c.try_borrow()
                .ok()
                .and_then(|c| c.as_ref().map(|r| r.0.name()))
        })
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            let t = std::thread::current();
            t.name()
                .map_or_else(|| format!("{:?}", t.id()), str::to_owned)
        })
}

/// The calling processor's number.
pub fn current_number() -> u32 {
    this().id
}

/// Number of live processors.
pub fn processor_count() -> usize {
    lock(&REGISTRY).len()
}

/// The current IRQL (`KeGetCurrentIrql`).
pub fn current() -> KIRQL {
    if !REGISTERED.with(Cell::get) {
        this();
    }
    IRQL_MIRROR.with(Cell::get)
}

/// Sets `p`'s IRQL (the calling processor's) and starts or stops the
/// watchdog's clock of its time at `DISPATCH_LEVEL`.
pub(crate) fn set_irql(p: &Processor, new: KIRQL) {
    let old = p.irql.swap(new, Ordering::SeqCst);
    IRQL_MIRROR.with(|m| m.set(new));
    if old < DISPATCH_LEVEL && new >= DISPATCH_LEVEL {
        p.dispatch_since
            .store(cpu_ns(p.cpu_clock), Ordering::SeqCst);
    } else if old >= DISPATCH_LEVEL && new < DISPATCH_LEVEL {
        p.dispatch_since.store(0, Ordering::SeqCst);
    }
}

/// Marks the start (`Some`) or end (`None`) of a DPC routine on this
/// processor, for the watchdog and the lowering-inside-a-DPC rule.
pub(crate) fn set_in_dpc(p: &Processor, running: bool) {
    p.dpc_since.store(
        if running { cpu_ns(p.cpu_clock) } else { 0 },
        Ordering::SeqCst,
    );
}

/// Whether this processor is inside a DPC routine.
pub fn in_dpc() -> bool {
    this().dpc_since.load(Ordering::Relaxed) != 0
}

/// Pauses or resumes the watchdog's accounting of this processor (the
/// harness holds it on purpose). Resuming restarts both clocks.
pub(crate) fn pause_watchdog(paused: bool) {
    let p = this();
    p.watch_paused.store(paused, Ordering::SeqCst);
    if !paused {
        let now = cpu_ns(p.cpu_clock);
        if p.dispatch_since.load(Ordering::SeqCst) != 0 {
            p.dispatch_since.store(now, Ordering::SeqCst);
        }
        if p.dpc_since.load(Ordering::SeqCst) != 0 {
            p.dpc_since.store(now, Ordering::SeqCst);
        }
    }
}

/// What the watchdog needs of one processor.
#[derive(Debug)]
pub(crate) struct Watch {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) at_dispatch_ns: u64,
    pub(crate) in_dpc_ns: u64,
}

/// Every running, watched processor's time at `DISPATCH_LEVEL` and in its
/// current DPC.
pub(crate) fn watch_list() -> Vec<Watch> {
    lock(&REGISTRY)
        .iter()
        .filter(|p| !p.halted.load(Ordering::SeqCst) && !p.watch_paused.load(Ordering::SeqCst))
        .map(|p| {
            let now = cpu_ns(p.cpu_clock);
            let since = |t: u64| if t == 0 { 0 } else { now.saturating_sub(t) };
            Watch {
                id: p.id,
                name: p.name(),
                at_dispatch_ns: since(p.dispatch_since.load(Ordering::SeqCst)),
                in_dpc_ns: since(p.dpc_since.load(Ordering::SeqCst)),
            }
        })
        .collect()
}

/// Marks this processor as stopped by a bugcheck (`Policy::Park`): the
/// watchdog ignores it from now on.
pub(crate) fn mark_halted() {
    if let Ok(Some(p)) = CURRENT.try_with(|c| {
        c.try_borrow()
            .ok()
            .and_then(|c| c.as_ref().map(|r| Arc::clone(&r.0)))
    }) {
        p.halted.store(true, Ordering::SeqCst);
    }
}

/// Whether processor `id` was stopped by a bugcheck (or is gone).
pub(crate) fn is_halted(id: u32) -> bool {
    lock(&REGISTRY)
        .iter()
        .find(|p| p.id == id)
        .is_none_or(|p| p.halted.load(Ordering::SeqCst))
}

/// Stops another processor after the watchdog's bugcheck (`Policy::Park`):
/// it is marked halted and sent the park signal, whose handler never
/// returns (see [`signals`]).
pub(crate) fn stop_processor(id: u32) {
    let target = lock(&REGISTRY).iter().find(|p| p.id == id).cloned();
    if let Some(p) = target {
        p.halted.store(true, Ordering::SeqCst);
        signals::park_thread(p.thread);
    }
}

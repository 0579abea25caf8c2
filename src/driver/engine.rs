//! Running the software RNIC's engine in the kernel: a DPC polls it, a
//! timer wakes it for its retransmission and connection-management timers.
//!
//! The host runs the same loop on a thread (`crates/host/src/engine.rs`:
//! poll while there is work, then sleep until woken or until the next
//! timer). Here a doorbell or a received packet queues the DPC
//! ([`EngineWaker`]); the DPC polls up to [`POLL_BUDGET`] passes or
//! [`DPC_BUDGET_US`] (DPCs should finish within ~100 µs) and, when the
//! device is idle, arms the timer for the engine's earliest deadline. The
//! timer's resolution is the system clock tick (15.6 ms by default), which
//! bounds how early a retransmission can fire; RC timeouts are far longer.
//!
//! When the budget is spent and work remains, the DPC is not queued again
//! on its processor: back-to-back DPCs keep a processor at DISPATCH_LEVEL,
//! which the DPC watchdog counts cumulatively (bug check 0x133, parameter
//! 1 = 1) under sustained traffic. It hands the continuation to
//! PASSIVE_LEVEL instead: the device's NDIS I/O work item kicks the DPC
//! again from a system thread, so the processor drops below DISPATCH_LEVEL
//! between runs (other threads and DPCs get it, the watchdog's count
//! restarts).
//!
//! That includes the device's own wake-ups during a run (a completion
//! raising a CQ event, a doorbell rung from a consumer callback):
//! `KeInsertQueueDpc` on a running DPC queues it again on the caller's
//! processor, which would chain runs just the same. So one run polls at a
//! time (the `polling` turn), and a kick while a run polls only leaves a
//! note (`pending`) that the run reads before it ends: it polls again
//! within its budget, or hands the rest to the continuation.
//!
//! Each pass also runs the engine's [`Pump`], if it has one: the L2 port's
//! datagrams to the device's own addresses, which the port queued while
//! the device sent them (inside its locks) and the pass hands back to the
//! device outside every lock of its; and the port's note that its send
//! frames, which had run out, are free again (a send completion kicks the
//! engine for it), which the pass passes on to the device so that the
//! QPs that stopped for want of a frame go on.

use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

use alloc::boxed::Box;
use ndis::{
    KDPC, KTIMER, KeCancelTimer, KeFlushQueuedDpcs, KeInitializeDpc, KeInitializeTimerEx,
    KeInsertQueueDpc, KeRemoveQueueDpc, KeSetTimer, NDIS_HANDLE, NdisAllocateIoWorkItem,
    NdisFreeIoWorkItem, NdisQueueIoWorkItem, NotificationTimer,
};
use ndkpi::{NTSTATUS, PVOID, STATUS_INSUFFICIENT_RESOURCES};
use softrnic::device::SoftRnic;
use softrnic::env::{RunPass, Wake};

use super::alloc::try_box;
use super::clock;

/// Poll passes one DPC run makes at most.
const POLL_BUDGET: u32 = 64;
/// Time one DPC run spends at most before handing the rest of its work
/// to the continuation, µs.
const DPC_BUDGET_US: u64 = 100;
/// Longest the timer is armed for; the engine is looked at this often
/// even when idle (like the host's `IDLE_PARK`).
const IDLE_US: u64 = 50_000;

/// `continuation` bit: the work item is queued or its routine is running.
const CONTINUATION_QUEUED: u32 = 1;
/// `continuation` bit: a DPC run left work behind; the routine kicks the
/// DPC once more for it.
const CONTINUATION_WANTED: u32 = 2;

/// The DPC, the timer, the continuation work item and the device they
/// run. Lives in a `Box` (the kernel keeps pointers to the DPC and timer)
/// from [`Engine::create`] until after [`Engine::stop`].
pub struct Engine {
    dpc: UnsafeCell<KDPC>,
    timer: UnsafeCell<KTIMER>,
    /// NDIS I/O work item that continues a run's work from PASSIVE_LEVEL.
    work_item: NDIS_HANDLE,
    /// [`CONTINUATION_QUEUED`] and [`CONTINUATION_WANTED`], one word so
    /// that the routine can find nothing wanted and drop the queued flag
    /// in one atomic step (see [`Engine::continue_at_passive`]).
    continuation: AtomicU32,
    /// A DPC run holds the turn to poll the device (one at a time).
    polling: AtomicBool,
    /// Something asked for a poll (a kick, a timer run finding the turn
    /// taken) that the run holding the turn has not looked at yet.
    pending: AtomicBool,
    rnic: AtomicPtr<SoftRnic>,
    /// Set by [`Engine::set_pump`] before [`Engine::start`], read only by
    /// DPC runs after it.
    pump: Option<NonNull<dyn Pump>>,
    stopping: AtomicBool,
}

/// Work a pass of the engine does besides polling the device: handing it
/// datagrams a link holds for it (the L2 port's own-address loopback), and
/// telling it the link has room again.
pub trait Pump: Send + Sync {
    /// Hands what waits to `rnic` at time `now` (µs, [`clock::now_us`]),
    /// holding none of its locks (`DISPATCH_LEVEL`, the engine's DPC);
    /// whether anything did.
    fn pump(&self, rnic: &SoftRnic, now: u64) -> bool;
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("stopping", &self.stopping.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// SAFETY: the KDPC and KTIMER are only handed to the kernel, which
// synchronises them itself; the work item handle is an opaque token NDIS
// allows on any thread; the pump is a `Send + Sync` object written only
// through `&mut self` before the engine runs; the other fields are atomics.
unsafe impl Send for Engine {}
// SAFETY: shared access only reads the pump (immutable once the engine
// runs: `set_pump` takes `&mut self`), hands the KDPC and KTIMER to the
// kernel, which synchronises them, and uses atomics.
unsafe impl Sync for Engine {}

impl Engine {
    /// An engine with no device yet, its work item bound to the NDIS
    /// adapter `adapter` (`PASSIVE_LEVEL`, from `MiniportInitializeEx`).
    pub fn create(adapter: NDIS_HANDLE) -> Result<Box<Self>, NTSTATUS> {
        // SAFETY: <= DISPATCH_LEVEL; the caller's live adapter handle.
        let work_item = unsafe { NdisAllocateIoWorkItem(adapter) };
        if work_item.is_null() {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        let engine = try_box(Self {
            dpc: UnsafeCell::new(KDPC::zeroed()),
            timer: UnsafeCell::new(KTIMER::zeroed()),
            work_item,
            continuation: AtomicU32::new(0),
            polling: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            rnic: AtomicPtr::new(ptr::null_mut()),
            pump: None,
            stopping: AtomicBool::new(false),
        })
        .map_err(|engine| {
            // Its DPC and timer were never initialised: no `Drop` (which
            // stops them); only the work item to give back.
            core::mem::forget(engine);
            // SAFETY: allocated above, never queued.
            unsafe { NdisFreeIoWorkItem(work_item) };
            STATUS_INSUFFICIENT_RESOURCES
        })?;
        let context = ptr::from_ref::<Self>(&engine).cast_mut().cast();
        // SAFETY: the DPC object is in the box, which does not move; the
        // context is the engine, valid until `stop` has flushed the DPC.
        unsafe { KeInitializeDpc(engine.dpc.get(), run, context) };
        // SAFETY: a zeroed timer in the box, initialised once.
        unsafe { KeInitializeTimerEx(engine.timer.get(), NotificationTimer) };
        Ok(engine)
    }

    /// Makes every pass run `pump` after polling the device. Before
    /// [`Engine::start`] (`&mut self`: nothing runs the engine yet).
    ///
    /// # Safety
    /// `pump` stays alive until [`Engine::stop`] has returned (the engine
    /// keeps a pointer to it).
    pub unsafe fn set_pump(&mut self, pump: &dyn Pump) {
        let pump: NonNull<dyn Pump + '_> = NonNull::from(pump);
        // SAFETY: only the trait object's lifetime bound changes (same
        // pointer, same vtable); the caller keeps the pump alive until
        // `stop` returned, after which no DPC run reads it.
        let pump: NonNull<dyn Pump> = unsafe { core::mem::transmute(pump) };
        self.pump = Some(pump);
    }

    /// Starts running `rnic`. It must stay alive until [`Engine::stop`]
    /// returns.
    pub fn start(&self, rnic: &SoftRnic) {
        self.rnic
            .store(ptr::from_ref(rnic).cast_mut(), Ordering::Release);
        self.kick();
    }

    /// Asks for a poll (any IRQL up to `DISPATCH_LEVEL`): queues the DPC,
    /// unless a run is polling, which then looks again before it ends (see
    /// `poll`); a no-op once stopping, and while the DPC is queued.
    pub fn kick(&self) {
        if self.stopping.load(Ordering::Acquire) {
            return;
        }
        // The note first, then the look at the turn: with `poll`'s
        // give-back (turn first, then the note), both sequentially
        // consistent, either the holder sees the note or this sees the
        // turn free.
        self.pending.store(true, Ordering::SeqCst);
        if self.polling.load(Ordering::SeqCst) {
            return;
        }
        // SAFETY: an initialised DPC in a live engine.
        unsafe { KeInsertQueueDpc(self.dpc.get(), ptr::null_mut(), ptr::null_mut()) };
    }

    /// Stops the engine: when it returns, the DPC is neither queued nor
    /// running, the timer is not armed, and neither can happen again; the
    /// device may be freed, and so may the engine. `PASSIVE_LEVEL`; by
    /// then nothing but the engine itself kicks it (the device's other
    /// callers are gone: provider detached, socket closed). Idempotent.
    ///
    /// Why this order: a DPC run that began before `stopping` was set
    /// (it read `false` on entry) may still arm the timer or requeue the
    /// DPC at any point until it returns, even after a `KeCancelTimer`
    /// made here; cancelling first would leave the timer armed in memory
    /// about to be freed (Verifier: 0xC4/0x15, 0xC7). So:
    /// 1. `stopping = true`: every run that starts from now on returns at
    ///    once, arming, queueing and continuing nothing; kicks are no-ops.
    /// 2. `KeFlushQueuedDpcs`: every run that may have read `false` has
    ///    returned; from here on nobody arms the timer or asks for a
    ///    continuation.
    /// 3. Wait for the continuation routine to end (it may have kicked
    ///    the DPC before step 1).
    /// 4. `KeCancelTimer`: disarms what the runs of step 2 armed.
    /// 5. `KeRemoveQueueDpc`: dequeues what they, the continuation or the
    ///    timer (firing before step 4) queued.
    /// 6. `KeFlushQueuedDpcs`: a run dequeued before step 5 (a no-op run,
    ///    it started after step 1) has returned.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        // SAFETY: PASSIVE_LEVEL (this function's contract).
        unsafe { KeFlushQueuedDpcs() };
        while self.continuation.load(Ordering::Acquire) != 0 {
            super::platform_wait();
        }
        // SAFETY: an initialised timer of a live engine.
        unsafe { KeCancelTimer(self.timer.get()) };
        // SAFETY: an initialised DPC of a live engine.
        unsafe { KeRemoveQueueDpc(self.dpc.get()) };
        // SAFETY: PASSIVE_LEVEL (this function's contract).
        unsafe { KeFlushQueuedDpcs() };
        self.rnic.store(ptr::null_mut(), Ordering::Release);
    }

    /// One DPC run: takes the turn (or leaves a note for its holder) and
    /// polls until the device is idle and nothing new was asked for, or
    /// until the budget is spent.
    fn poll(&self) {
        if self.stopping.load(Ordering::Acquire) {
            return;
        }
        let Some(rnic) = NonNull::new(self.rnic.load(Ordering::Acquire)) else {
            return;
        };
        // SAFETY: `start`'s contract keeps the device alive until `stop`,
        // which flushes this DPC before returning.
        let rnic = unsafe { rnic.as_ref() };
        // This run's own reason (a timer run was not kicked), then the turn.
        self.pending.store(true, Ordering::SeqCst);
        if !self.take_turn() {
            return;
        }
        let began = clock::now_us();
        let mut passes = 0;
        loop {
            // Whatever was asked for so far, this pass covers.
            self.pending.store(false, Ordering::SeqCst);
            // The device keeps no clock: each pass runs at the time read here.
            let now = clock::now_us();
            let worked = self.run_pump(rnic, now) | rnic.poll(now);
            passes += 1;
            if !worked && !self.pending.load(Ordering::SeqCst) {
                self.arm_timer(rnic);
                // Give the turn back; a kick that saw it taken left a
                // note, so look once more (and go on if we get it again).
                self.polling.store(false, Ordering::SeqCst);
                if !self.pending.load(Ordering::SeqCst) || !self.take_turn() {
                    return;
                }
            }
            if passes >= POLL_BUDGET || clock::now_us().saturating_sub(began) >= DPC_BUDGET_US {
                break;
            }
        }
        // Work remains and the budget is spent: go on from PASSIVE_LEVEL,
        // never straight back into another DPC (see the module docs).
        self.polling.store(false, Ordering::SeqCst);
        self.continue_at_passive();
    }

    /// Runs the pump, if any, for `rnic` at `now` (a DPC run holding the
    /// turn).
    fn run_pump(&self, rnic: &SoftRnic, now: u64) -> bool {
        self.pump.is_some_and(|pump| {
            // SAFETY: `set_pump`'s caller keeps the pump alive until `stop`
            // returned, and this runs inside a DPC run, which `stop`
            // flushes before it returns.
            unsafe { pump.as_ref() }.pump(rnic, now)
        })
    }

    /// Takes the polling turn; false if another run holds it (that run
    /// reads `pending` before it lets go).
    fn take_turn(&self) -> bool {
        self.polling
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Asks the work item to kick the DPC again (`DISPATCH_LEVEL`, from a
    /// run that read `stopping == false`; no allocation: the item was
    /// allocated in `create`). While the routine is queued or running the
    /// request is only recorded; the routine looks for it before it ends.
    fn continue_at_passive(&self) {
        let old = self
            .continuation
            .fetch_or(CONTINUATION_QUEUED | CONTINUATION_WANTED, Ordering::AcqRel);
        if old & CONTINUATION_QUEUED != 0 {
            return;
        }
        let context = ptr::from_ref(self).cast_mut().cast();
        // SAFETY: <= DISPATCH_LEVEL; the engine's own work item, not queued
        // now (the flag was clear); the engine outlives the routine (`stop`
        // waits for the flag to clear before anything is freed).
        unsafe { NdisQueueIoWorkItem(self.work_item, continuation, context) };
    }

    /// The continuation routine (`PASSIVE_LEVEL`, system worker thread):
    /// kicks the DPC once for the request that queued it. A kick at
    /// PASSIVE_LEVEL runs the DPC on this processor, which comes back to
    /// PASSIVE_LEVEL after it. If that run (or another) asked again, the
    /// item is queued again rather than looped on: system worker threads
    /// are shared, and a routine that kept one for as long as traffic lasts
    /// would hold up every other work item behind it (the adapters' own
    /// among them).
    fn run_continuation(&self) {
        // Take the request; the queued flag stays ours.
        self.continuation
            .fetch_and(!CONTINUATION_WANTED, Ordering::AcqRel);
        self.kick();
        loop {
            let state = self.continuation.load(Ordering::Acquire);
            if state & CONTINUATION_WANTED != 0 {
                let context = ptr::from_ref(self).cast_mut().cast();
                // SAFETY: PASSIVE_LEVEL; the engine's own work item, whose
                // routine is this one (so it is not queued: NDIS dequeued it
                // to run it); the queued flag stays set, so `stop` keeps
                // waiting and the engine outlives the next run.
                unsafe { NdisQueueIoWorkItem(self.work_item, continuation, context) };
                return;
            }
            // Nothing asked: drop the flag, and touch nothing after it
            // (`stop` may free the engine as soon as it sees it clear).
            if self
                .continuation
                .compare_exchange(state, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Arms the timer for the engine's next deadline. Only a DPC run that
    /// read `stopping == false` on entry calls it ([`Engine::stop`]
    /// relies on that).
    fn arm_timer(&self, rnic: &SoftRnic) {
        let now = clock::now_us();
        let wait_us = rnic
            .next_timer_us()
            .map_or(IDLE_US, |t| t.saturating_sub(now).min(IDLE_US))
            .max(1);
        // Relative due time: negative, in 100 ns units.
        let due = -((wait_us * 10) as i64);
        // SAFETY: initialised timer and DPC of a live engine; re-arming an
        // armed timer replaces its due time.
        unsafe { KeSetTimer(self.timer.get(), due, self.dpc.get()) };
    }
}

impl Drop for Engine {
    /// Stops the engine if its owner has not (failed construction paths),
    /// then frees the work item, which `stop` left idle. `PASSIVE_LEVEL`.
    fn drop(&mut self) {
        self.stop();
        // SAFETY: allocated in `create`; not queued and its routine has
        // returned (`stop` waited for the flag; nothing queues it after).
        unsafe { NdisFreeIoWorkItem(self.work_item) };
    }
}

/// The continuation work item's routine (`PASSIVE_LEVEL`).
unsafe extern "win64" fn continuation(context: PVOID, _item: NDIS_HANDLE) {
    // SAFETY: the engine queued itself and `stop` waits for this routine
    // to drop the queued flag before the engine can go.
    let engine = unsafe { &*context.cast::<Engine>() };
    engine.run_continuation();
}

/// The DPC routine (`DISPATCH_LEVEL`), for both the kick and the timer.
unsafe extern "win64" fn run(_dpc: *mut KDPC, context: PVOID, _a1: PVOID, _a2: PVOID) {
    // SAFETY: the context registered in `create` is the engine, alive
    // until `stop` has flushed this DPC.
    let engine = unsafe { &*context.cast::<Engine>() };
    engine.poll();
}

/// The device's [`Wake`]: queues the engine's DPC.
#[derive(Debug)]
pub struct EngineWaker(NonNull<Engine>);

// SAFETY: `Engine` is Sync and the pointer is only used for `kick`.
unsafe impl Send for EngineWaker {}
// SAFETY: shared use only calls `kick` through the pointer, which takes
// `&Engine`, and `Engine` is Sync.
unsafe impl Sync for EngineWaker {}

impl EngineWaker {
    /// A waker for `engine`, which must outlive the device holding it.
    pub fn new(engine: &Engine) -> Self {
        Self(NonNull::from(engine))
    }
}

impl Wake for EngineWaker {
    fn wake(&self) {
        // SAFETY: the engine outlives the device (see `new`).
        unsafe { self.0.as_ref() }.kick();
    }

    /// No busy polling in the kernel: a consumer's `NdkGetCqResults` runs
    /// no pass, the DPC does all the device's work. A kernel consumer
    /// polls from its own DPCs and completion callbacks, where a pass
    /// would lengthen its time at `DISPATCH_LEVEL`; the host's reason for
    /// busy polling (a scheduler hand-off per packet, several us on a
    /// small VM) is a DPC queued on the caller's processor here.
    fn consumer_poll(&self, _device: &dyn RunPass) -> bool {
        false
    }
}

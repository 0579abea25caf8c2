//! Running the software RNIC's engine in the kernel: a DPC polls it, a
//! timer wakes it for its retransmission and connection-management timers.
//!
//! The host runs the same loop on a thread (`crates/host/src/runtime.rs`:
//! poll while there is work, then sleep until woken or until the next
//! timer). Here a doorbell or a received packet queues the DPC
//! ([`EngineWaker`]); the DPC polls up to [`POLL_BUDGET`] passes or
//! [`DPC_BUDGET_US`], requeues itself if work remains (so one adapter never
//! holds a processor for long: DPCs should finish within ~100 µs), and
//! otherwise arms the timer for the engine's earliest deadline. The timer's
//! resolution is the system clock tick (15.6 ms by default), which bounds
//! how early a retransmission can fire; RC timeouts are far longer.

use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use alloc::boxed::Box;
use ndis::{
    KDPC, KTIMER, KeCancelTimer, KeFlushQueuedDpcs, KeInitializeDpc, KeInitializeTimerEx,
    KeInsertQueueDpc, KeRemoveQueueDpc, KeSetTimer, NotificationTimer,
};
use ndkpi::{NTSTATUS, PVOID, STATUS_INSUFFICIENT_RESOURCES};
use softrnic::device::SoftRnic;
use softrnic::env::{Clock, Wake};

use super::alloc::try_box;
use super::clock::KernelClock;

/// Poll passes one DPC run makes at most.
const POLL_BUDGET: u32 = 64;
/// Time one DPC run spends at most before requeueing itself, µs.
const DPC_BUDGET_US: u64 = 100;
/// Longest the timer is armed for; the engine is looked at this often
/// even when idle (like the host's `IDLE_PARK`).
const IDLE_US: u64 = 50_000;

/// The DPC, the timer and the device they run. Lives in a `Box` (the
/// kernel keeps pointers to the DPC and timer) from [`Engine::create`]
/// until after [`Engine::stop`].
pub struct Engine {
    dpc: UnsafeCell<KDPC>,
    timer: UnsafeCell<KTIMER>,
    rnic: AtomicPtr<SoftRnic>,
    stopping: AtomicBool,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("stopping", &self.stopping.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// SAFETY: the KDPC and KTIMER are only handed to the kernel, which
// synchronises them itself; the other fields are atomics.
unsafe impl Send for Engine {}
// SAFETY: as above.
unsafe impl Sync for Engine {}

impl Engine {
    /// An engine with no device yet (`<= DISPATCH_LEVEL`).
    pub fn create() -> Result<Box<Self>, NTSTATUS> {
        let engine = try_box(Self {
            dpc: UnsafeCell::new(KDPC::zeroed()),
            timer: UnsafeCell::new(KTIMER::zeroed()),
            rnic: AtomicPtr::new(ptr::null_mut()),
            stopping: AtomicBool::new(false),
        })
        .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let context = ptr::from_ref::<Self>(&engine).cast_mut().cast();
        // SAFETY: the DPC object is in the box, which does not move; the
        // context is the engine, valid until `stop` has flushed the DPC.
        unsafe { KeInitializeDpc(engine.dpc.get(), run, context) };
        // SAFETY: a zeroed timer in the box, initialised once.
        unsafe { KeInitializeTimerEx(engine.timer.get(), NotificationTimer) };
        Ok(engine)
    }

    /// Starts running `rnic`. It must stay alive until [`Engine::stop`]
    /// returns.
    pub fn start(&self, rnic: &SoftRnic) {
        self.rnic
            .store(ptr::from_ref(rnic).cast_mut(), Ordering::Release);
        self.kick();
    }

    /// Queues the DPC (any IRQL up to `DISPATCH_LEVEL`); a no-op once
    /// stopping or while already queued.
    pub fn kick(&self) {
        if !self.stopping.load(Ordering::Acquire) {
            // SAFETY: an initialised DPC in a live engine.
            unsafe { KeInsertQueueDpc(self.dpc.get(), ptr::null_mut(), ptr::null_mut()) };
        }
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
    ///    once, arming and queueing nothing.
    /// 2. `KeFlushQueuedDpcs`: every run that may have read `false` has
    ///    returned; from here on nobody arms the timer.
    /// 3. `KeCancelTimer`: disarms what those runs armed.
    /// 4. `KeRemoveQueueDpc`: dequeues what they (or the timer, firing
    ///    before step 3) queued.
    /// 5. `KeFlushQueuedDpcs`: a run dequeued before step 4 (a no-op run,
    ///    it started after step 1) has returned.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        // SAFETY: PASSIVE_LEVEL (this function's contract).
        unsafe { KeFlushQueuedDpcs() };
        // SAFETY: an initialised timer of a live engine.
        unsafe { KeCancelTimer(self.timer.get()) };
        // SAFETY: an initialised DPC of a live engine.
        unsafe { KeRemoveQueueDpc(self.dpc.get()) };
        // SAFETY: PASSIVE_LEVEL (this function's contract).
        unsafe { KeFlushQueuedDpcs() };
        self.rnic.store(ptr::null_mut(), Ordering::Release);
    }

    /// One DPC run.
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
        let clock = KernelClock;
        let began = clock.now_us();
        for _ in 0..POLL_BUDGET {
            if !rnic.poll() {
                self.arm_timer(rnic, &clock);
                return;
            }
            if clock.now_us().saturating_sub(began) >= DPC_BUDGET_US {
                break;
            }
        }
        // Work remains: run again after the DPCs queued behind this one.
        self.kick();
    }

    /// Arms the timer for the engine's next deadline. Only a DPC run that
    /// read `stopping == false` on entry calls it ([`Engine::stop`]
    /// relies on that).
    fn arm_timer(&self, rnic: &SoftRnic, clock: &KernelClock) {
        let now = clock.now_us();
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
// SAFETY: as above.
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
}

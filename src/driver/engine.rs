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

    /// Stops the engine: when it returns, neither the DPC nor the timer
    /// runs or will run, and the device may be freed. `PASSIVE_LEVEL`.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        // SAFETY: initialised objects of a live engine.
        unsafe { KeCancelTimer(self.timer.get()) };
        // SAFETY: as above.
        unsafe { KeRemoveQueueDpc(self.dpc.get()) };
        // A DPC already running (or queued by a timer that fired just
        // before the cancel) finishes before this returns.
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

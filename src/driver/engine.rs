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
//! The DPC, the timer and the work item are the kit's
//! [`Deferred`]: it owns them with the engine's state, cannot be freed
//! while any of them is queued, and its close is the engine's stop.
//!
//! Each pass also runs the engine's [`Pump`], if it has one, around the
//! device's work: before it, the L2 port's datagrams to the device's own
//! addresses, which the port queued while it sent them and the pass hands
//! back to the device outside every lock of its; after it, what the device
//! sends (it owns no link: its packets wait in its outboxes until taken),
//! taken onto the port. A pass takes them whether or not its work did
//! anything, so packets recorded elsewhere (a consumer's doorbell, a
//! receive indication whose pump found the turn taken) or left behind
//! when the port's send frames ran out (a send completion that frees
//! enough kicks the engine) go out with the next pass, and the QPs that
//! stopped for want of room go on.

use core::sync::atomic::{AtomicBool, Ordering};

use hwq::TryArc;
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};
use softrnic::device::SoftRnic;
use softrnic::env::Wake;

use super::clock;
use super::kit::deferred::{Deferred, DeferredRoutines};
use super::kit::memory::Attached;
use super::kit::ndis::AdapterHandle;

/// Poll passes one DPC run makes at most.
const POLL_BUDGET: u32 = 64;
/// Time one DPC run spends at most before handing the rest of its work
/// to the continuation, µs.
const DPC_BUDGET_US: u64 = 100;
/// Longest the timer is armed for; the engine is looked at this often
/// even when idle (like the host's `IDLE_PARK`).
const IDLE_US: u64 = 50_000;

/// Work-item task: a DPC run left work behind; the routine kicks the DPC
/// once more for it.
const CONTINUATION_WANTED: u32 = 1;

/// Work a pass of the engine does besides polling the device: handing it
/// datagrams a link holds for it (the L2 port's own-address loopback), and
/// taking what it sends onto the wire.
pub trait Pump: Send + Sync {
    /// Hands what waits to `rnic` at time `now` (µs, [`clock::now_us`]),
    /// holding none of its locks (`DISPATCH_LEVEL`, the engine's DPC),
    /// before the device's work; whether anything did.
    fn pump(&self, rnic: &SoftRnic, now: u64) -> bool;

    /// Takes what `rnic` sends onto the wire at `now`, after the device's
    /// work (`DISPATCH_LEVEL`, the engine's DPC), every pass: it leaves
    /// nothing it could take, and kicks the engine for what it could not
    /// take while it had room.
    fn transmit(&self, rnic: &SoftRnic, now: u64);
}

/// The engine's state, which its DPC and continuation run on.
pub struct EngineCore<P: Pump> {
    /// A DPC run holds the turn to poll the device (one at a time).
    polling: AtomicBool,
    /// Something asked for a poll (a kick, a timer run finding the turn
    /// taken) that the run holding the turn has not looked at yet.
    pending: AtomicBool,
    /// The device, from [`Engine::start`] until [`Engine::stop`].
    rnic: Attached<SoftRnic>,
    /// Set by [`Engine::set_pump`] before [`Engine::start`], until
    /// [`Engine::stop`].
    pump: Attached<P>,
}

impl<P: Pump> core::fmt::Debug for EngineCore<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EngineCore")
            .field("polling", &self.polling.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<P: Pump> DeferredRoutines for EngineCore<P> {
    /// A system worker thread is shared: the continuation queues itself
    /// again rather than loop for as long as traffic lasts, which would
    /// hold up every other work item behind it (the adapters' own among
    /// them).
    const REQUEUE: bool = true;
    const USES_DPC: bool = true;

    /// The DPC (`DISPATCH_LEVEL`), for both the kick and the timer.
    fn dpc(this: &Deferred<Self>) {
        poll(this);
    }

    /// The continuation (`PASSIVE_LEVEL`, system worker thread): kicks
    /// the DPC once for the request that queued it. A kick at
    /// PASSIVE_LEVEL runs the DPC on this processor, which comes back to
    /// PASSIVE_LEVEL after it.
    fn work(this: &Deferred<Self>, _tasks: u32) {
        kick(this);
    }
}

/// The DPC, the timer, the continuation work item and the device they
/// run, from [`Engine::create`] until after [`Engine::stop`].
pub struct Engine<P: Pump> {
    deferred: TryArc<Deferred<EngineCore<P>>>,
}

impl<P: Pump> core::fmt::Debug for Engine<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("stopping", &self.deferred.is_closed())
            .finish_non_exhaustive()
    }
}

impl<P: Pump> Engine<P> {
    /// An engine with no device yet, its work item bound to the NDIS
    /// adapter `adapter` (`PASSIVE_LEVEL`, from `MiniportInitializeEx`).
    pub fn create(adapter: AdapterHandle) -> Result<Self, NTSTATUS> {
        let core = EngineCore {
            polling: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            rnic: Attached::new(),
            pump: Attached::new(),
        };
        let deferred =
            Deferred::create_shared(adapter, core).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        Ok(Self { deferred })
    }

    /// Makes every pass run `pump` after polling the device. Before
    /// [`Engine::start`]; the engine holds it until [`Engine::stop`].
    pub fn set_pump(&self, pump: &TryArc<P>) {
        self.deferred.target().pump.attach(pump);
    }

    /// Starts running `rnic`, which the engine holds until
    /// [`Engine::stop`].
    pub fn start(&self, rnic: &TryArc<SoftRnic>) {
        self.deferred.target().rnic.attach(rnic);
        self.kick();
    }

    /// Asks for a poll (any IRQL up to `DISPATCH_LEVEL`): queues the DPC,
    /// unless a run is polling, which then looks again before it ends (see
    /// `poll`); a no-op once stopping, and while the DPC is queued.
    pub fn kick(&self) {
        kick(&self.deferred);
    }

    /// The engine's DPC, timer and work item with its state, for a kicker
    /// that holds it ([`kick`]).
    pub fn shared(&self) -> &TryArc<Deferred<EngineCore<P>>> {
        &self.deferred
    }

    /// The device's [`Wake`] for this engine.
    pub fn waker(&self) -> EngineWaker<P> {
        EngineWaker(self.deferred.clone())
    }

    /// Stops the engine: when it returns, the DPC is neither queued nor
    /// running, the timer is not armed, the continuation neither queued
    /// nor running, and none can happen again ([`Deferred::close`]: every
    /// run that starts from now on returns at once, arming, queueing and
    /// continuing nothing; kicks are no-ops); then the engine lets go of
    /// the device and the pump. `PASSIVE_LEVEL`; by then nothing but the
    /// engine itself kicks it (the device's other callers are gone:
    /// provider detached, socket closed). Idempotent.
    pub fn stop(&self) {
        // The engine registers no address notification: nothing to fail.
        let _ = self.deferred.close();
        let core = self.deferred.target();
        core.rnic.detach();
        core.pump.detach();
    }
}

impl<P: Pump> Drop for Engine<P> {
    /// Stops the engine if its owner has not (failed construction paths).
    /// `PASSIVE_LEVEL`.
    fn drop(&mut self) {
        self.stop();
    }
}

/// Asks for a poll of the engine `this` (see [`Engine::kick`]).
pub fn kick<P: Pump>(this: &Deferred<EngineCore<P>>) {
    if this.is_closed() {
        return;
    }
    let core = this.target();
    // The note first, then the look at the turn: with `poll`'s give-back
    // (turn first, then the note), both sequentially consistent, either
    // the holder sees the note or this sees the turn free.
    core.pending.store(true, Ordering::SeqCst);
    if core.polling.load(Ordering::SeqCst) {
        return;
    }
    this.queue_dpc();
}

/// One DPC run: takes the turn (or leaves a note for its holder) and
/// polls until the device is idle and nothing new was asked for, or until
/// the budget is spent.
fn poll<P: Pump>(this: &Deferred<EngineCore<P>>) {
    let core = this.target();
    let Some(rnic) = core.rnic.enter() else {
        return;
    };
    // This run's own reason (a timer run was not kicked), then the turn.
    core.pending.store(true, Ordering::SeqCst);
    if !core.take_turn() {
        return;
    }
    let began = clock::now_us();
    let mut passes = 0;
    loop {
        // Whatever was asked for so far, this pass covers.
        core.pending.store(false, Ordering::SeqCst);
        // The device keeps no clock: each pass runs at the time read here.
        let now = clock::now_us();
        let worked = core.run_pump(&rnic, now) | rnic.poll(now);
        // What the device sent, whether or not this pass did anything.
        core.run_transmit(&rnic, now);
        passes += 1;
        if !worked && !core.pending.load(Ordering::SeqCst) {
            arm_timer(this, &rnic);
            // Give the turn back; a kick that saw it taken left a note, so
            // look once more (and go on if we get it again).
            core.polling.store(false, Ordering::SeqCst);
            if !core.pending.load(Ordering::SeqCst) || !core.take_turn() {
                return;
            }
        }
        if passes >= POLL_BUDGET || clock::now_us().saturating_sub(began) >= DPC_BUDGET_US {
            break;
        }
    }
    // Work remains and the budget is spent: go on from PASSIVE_LEVEL, never
    // straight back into another DPC (see the module docs). While the
    // continuation is queued or running the request is only recorded; the
    // routine looks for it before it ends.
    core.polling.store(false, Ordering::SeqCst);
    this.queue_work(CONTINUATION_WANTED);
}

/// Arms the timer for the engine's next deadline (a DPC run holding the
/// device).
fn arm_timer<P: Pump>(this: &Deferred<EngineCore<P>>, rnic: &SoftRnic) {
    let now = clock::now_us();
    let wait_us = rnic
        .next_timer_us()
        .map_or(IDLE_US, |t| t.saturating_sub(now).min(IDLE_US))
        .max(1);
    // In 100 ns units; re-arming an armed timer replaces its due time.
    this.set_timer(wait_us * 10);
}

impl<P: Pump> EngineCore<P> {
    /// Runs the pump, if any, for `rnic` at `now` (a DPC run holding the
    /// turn).
    fn run_pump(&self, rnic: &SoftRnic, now: u64) -> bool {
        self.pump.enter().is_some_and(|pump| pump.pump(rnic, now))
    }

    /// Runs the pump's transmit, if any, for `rnic` at `now` (a DPC run
    /// holding the turn).
    fn run_transmit(&self, rnic: &SoftRnic, now: u64) {
        if let Some(pump) = self.pump.enter() {
            pump.transmit(rnic, now);
        }
    }

    /// Takes the polling turn; false if another run holds it (that run
    /// reads `pending` before it lets go).
    fn take_turn(&self) -> bool {
        self.polling
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }
}

/// The device's [`Wake`]: queues the engine's DPC.
#[derive(Debug)]
pub struct EngineWaker<P: Pump>(TryArc<Deferred<EngineCore<P>>>);

impl<P: Pump> Wake for EngineWaker<P> {
    fn wake(&self) {
        kick(&self.0);
    }

    /// No busy polling in the kernel: a consumer's `NdkGetCqResults` runs
    /// no pass, the DPC does all the device's work. A kernel consumer
    /// polls from its own DPCs and completion callbacks, where a pass
    /// would lengthen its time at `DISPATCH_LEVEL`; the host's reason for
    /// busy polling (a scheduler hand-off per packet, several us on a
    /// small VM) is a DPC queued on the caller's processor here.
    fn consumer_poll(&self) -> bool {
        false
    }
}

//! Running software RNICs in a process: the clock, the wake-up, the engine
//! thread that runs a device, and the transports it serves (a UDP socket,
//! or an in-memory fabric shared by the adapters of this process).
//!
//! Each device has exactly one thread: it takes the device's inbound
//! packets (from its socket or its fabric queue), runs
//! [`SoftRnic::poll`], and parks when neither has work. One thread per
//! device means the device's spin locks are never contended by a second
//! transport thread that the scheduler may have preempted while holding one
//! (the first profile showed a third of the CPU spinning on QP locks).
//!
//! A doorbell is a bitset update plus [`ThreadWaker::wake`]: an atomic swap
//! and, only if the engine thread is parked, one wake (a futex for a fabric
//! device; an eventfd write for a UDP device, whose engine parks in
//! `poll(2)` on its socket and the eventfd, so a datagram wakes it just as
//! a doorbell does). No system call is made per posted work request when
//! the engine is busy, and no fixed sleep sits on the critical path: an idle
//! engine sleeps until its next timer, or `IDLE_PARK` at most.
//!
//! Busy polling: a consumer spinning on an empty CQ runs the device's pass
//! itself when [`crate::busy`] says so. While it does (a poll within the last
//! `BUSY_WINDOW`), the engine thread stands aside, as Linux defers a
//! NIC's interrupts while a socket busy polls (`SO_PREFER_BUSY_POLL`): it
//! parks on its wake-up only, not on its socket, and doorbells and
//! arrivals do not wake it (the poller takes them). Events to deliver, a
//! CQ being armed (the consumer is about to sleep) and the window running
//! out bring it back.

use std::collections::HashMap;
use std::net::IpAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec, eventfd, poll};
use softrnic::device::SoftRnic;
use softrnic::env::{Clock, PassPlan, RunPass, Wake};
use softrnic::fabric::Fabric;
use softrnic::link::{Arrival, FaultInjector, FaultLink, Faults, Link, Load, Received};
use softrnic::qp::{Negotiated, RcConfig};
use softrnic::train::Train;

use crate::busy::BusyPoll;
#[cfg(test)]
use crate::udp::RxBuffers;
use crate::udp::UdpPort;

/// Longest an idle engine sleeps before looking at its timers again (a
/// safety net only: every event that creates work wakes it).
const IDLE_PARK: Duration = Duration::from_millis(50);

/// How long an engine keeps looking for work (yielding the core between
/// looks) after its last work before it parks: a wake-up through the
/// scheduler costs several microseconds, a look far less.
const SPIN: Duration = Duration::from_micros(50);

/// An engine that has been working without a park for this long is in a
/// stream (a bulk transfer): it looks for work for [`STREAM_SPIN`] instead
/// of [`SPIN`] before it parks.
const STREAM_AFTER: Duration = Duration::from_micros(200);

/// [`SPIN`] for an engine in a stream. Between a stream's bursts (a batch
/// of READ responses placed, the next READs not posted yet) a parked
/// engine's wake-up through its socket costs more than the gap, and its
/// processor may go idle meanwhile (ndkperf's README has the figures).
/// Sparse traffic keeps the short window: its engine parks soon.
const STREAM_SPIN: Duration = Duration::from_millis(2);

/// [`SPIN`] for a device on a [`FabricHub`]. Its arrivals come from the
/// other engines of this process, each one waking a parked engine through
/// the scheduler (a futex) and no socket readiness to wait on. In a stream
/// of 1 MiB READs the responder gets a request every 50-100 us: at 50 us it
/// parked between requests and every request cost the requester a futex
/// wake-up and the responder a scheduling round (measured: 9.5-14.9 GB/s);
/// looking on for 200 us keeps it awake (15.1-18.9 GB/s, same runs
/// interleaved).
const HUB_SPIN: Duration = Duration::from_micros(200);

/// The engine's pass: it delivers events; receive batches before the work
/// bound how long a flood holds back timers (up to 512 datagrams over UDP).
const ENGINE_PASS: PassPlan = PassPlan {
    deliver_events: true,
    rx_batches: 8,
    send_first: false,
};

/// Inbound datagrams a fabric device takes in one batch.
const RX_BURST: usize = 64;

/// How long after a consumer's last busy poll the engine still leaves the
/// device to it: wake-ups in that window are left to the poller.
const BUSY_WINDOW: Duration = Duration::from_micros(50);

/// An engine whose device was busy polled this recently does not spin
/// after its work: the pollers are likely to come back.
const BUSY_RECENT: Duration = Duration::from_millis(10);

/// How long an engine that stands aside for a busy poller sleeps before it
/// looks again: the bound on how late work left to a poller that then
/// stopped without arming a CQ (or a timer it would have fired) is taken
/// over. Wake-ups after the window reach the engine at once.
const BUSY_PARK: Duration = Duration::from_millis(1);

/// How long a responder may hold the ACK of a lone SEND for the answer its
/// consumer is about to send, so both leave in one datagram batch (one
/// system call instead of two on each side of a ping-pong). Short against
/// the 8 ms retransmit timeout; a longer answer gets its ACK from the timer.
const ACK_DEFER_US: u64 = 20;

/// Monotonic microseconds since the process's first use of the clock: the
/// time this runtime passes to its devices and its fabric hub's links.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostClock;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for HostClock {
    fn now_us(&self) -> u64 {
        u64::try_from(origin().elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// Wakes one thread (the engine) that parks when it has nothing to do:
/// with `thread::park` by default, or in `poll(2)` with an eventfd once
/// `ThreadWaker::use_eventfd` was called.
#[derive(Debug, Default)]
pub struct ThreadWaker {
    thread: OnceLock<Thread>,
    eventfd: OnceLock<OwnedFd>,
    pending: AtomicBool,
    /// The engine is (about to be) blocked in `poll(2)`.
    parked: AtomicBool,
    /// A consumer busy polls the device until then ([`HostClock`] µs).
    busy_until: AtomicU64,
    /// When a consumer last busy polled ([`HostClock`] µs; 0: never).
    last_busy_poll: AtomicU64,
    /// A wake-up was left to a busy poller.
    absorbed: AtomicBool,
    /// The engine is (about to be) parked without a bound tied to the busy
    /// window: an absorbed wake-up must then wake it after all.
    parked_long: AtomicBool,
}

impl ThreadWaker {
    /// Binds the waker to the calling thread.
    pub fn bind_current(&self) {
        let _ = self.thread.set(thread::current());
    }

    /// Makes wake-ups write an eventfd (for an engine parking in `poll`).
    fn use_eventfd(&self) -> std::io::Result<()> {
        let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        let _ = self.eventfd.set(fd);
        Ok(())
    }

    /// Consumes a pending wake-up.
    pub fn take(&self) -> bool {
        self.pending.swap(false, Ordering::SeqCst)
    }

    /// Re-arms a wake-up that was taken but could not be served yet.
    fn repend(&self) {
        self.pending.store(true, Ordering::SeqCst);
    }

    /// Before an engine parks until its next timer or wake-up: whether it
    /// may (false: work was left to a busy poller that stopped, or one
    /// polls right now). Pair with [`ThreadWaker::unpark_long`].
    fn may_park_long(&self) -> bool {
        // Dekker-style with `wake` (both sides SeqCst): either `wake` sees
        // `parked_long` and wakes us, or we see `absorbed`.
        self.parked_long.store(true, Ordering::SeqCst);
        if self.absorbed.swap(false, Ordering::SeqCst)
            || self.busy_remaining_at(HostClock.now_us()).is_some()
        {
            self.parked_long.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    fn unpark_long(&self) {
        self.parked_long.store(false, Ordering::SeqCst);
    }

    /// Whether a consumer busy polled within the last [`BUSY_RECENT`].
    fn busy_polled_lately(&self) -> bool {
        let last = self.last_busy_poll.load(Ordering::Relaxed);
        last != 0 && HostClock.now_us().saturating_sub(last) < BUSY_RECENT.as_micros() as u64
    }

    /// How much longer after `now` ([`HostClock`] µs) a busy-polling
    /// consumer owns the device, if one does.
    pub(crate) fn busy_remaining_at(&self, now: u64) -> Option<Duration> {
        let until = self.busy_until.load(Ordering::SeqCst);
        (until > now).then(|| Duration::from_micros(until - now))
    }

    /// Notes that a consumer busy polls the device at `now` ([`HostClock`]
    /// µs): the engine stands aside for [`BUSY_WINDOW`].
    pub(crate) fn note_busy_poll(&self, now: u64) {
        self.last_busy_poll.store(now, Ordering::Relaxed);
        let until = now + BUSY_WINDOW.as_micros() as u64;
        self.busy_until.fetch_max(until, Ordering::SeqCst);
    }

    /// Ends busy polling at once (a CQ was armed, or a bulk transfer was
    /// found): the engine is in charge again, spinning after work as usual.
    pub(crate) fn end_busy_poll(&self) {
        self.last_busy_poll.store(0, Ordering::Relaxed);
        if self.busy_until.swap(0, Ordering::SeqCst) != 0 {
            self.wake_engine();
        }
    }

    /// Parks the bound thread for at most `timeout`, unless a wake-up is
    /// pending. With an eventfd, also returns when `also` becomes readable.
    fn park(&self, timeout: Duration, also: Option<&impl AsFd>) {
        let Some(efd) = self.eventfd.get() else {
            if !self.take() {
                thread::park_timeout(timeout);
            }
            return;
        };
        // Dekker-style handshake with `wake` (both sides SeqCst): either
        // `wake` sees `parked` and writes the eventfd, or we see `pending`.
        self.parked.store(true, Ordering::SeqCst);
        if self.take() {
            self.parked.store(false, Ordering::SeqCst);
            return;
        }
        let ts = Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        let efd_readable = if let Some(sock) = also {
            let mut fds = [
                PollFd::new(efd, PollFlags::IN),
                PollFd::new(sock, PollFlags::IN),
            ];
            let _ = poll(&mut fds, Some(&ts));
            !fds[0].revents().is_empty()
        } else {
            let mut fds = [PollFd::new(efd, PollFlags::IN)];
            let _ = poll(&mut fds, Some(&ts));
            !fds[0].revents().is_empty()
        };
        self.parked.store(false, Ordering::SeqCst);
        if efd_readable {
            let mut count = [0u8; 8];
            let _ = rustix::io::read(efd, &mut count);
            // The wake-up that ended the park is served by the pass that
            // follows it, as one taken before the park would be; a wake-up
            // arriving from here on is too (that pass comes after it).
            self.take();
        }
    }
}

impl Wake for ThreadWaker {
    fn wake(&self) {
        if self.busy_remaining_at(HostClock.now_us()).is_some() {
            // The busy poller takes this work on its next pass; if it never
            // comes, the engine does when the window closes (it parks no
            // longer than the window while one polls) or before it parks
            // for longer (it sees `absorbed`).
            self.absorbed.store(true, Ordering::SeqCst);
            if !self.parked_long.load(Ordering::SeqCst) {
                return;
            }
        }
        self.wake_engine();
    }

    /// The engine's own waker runs no consumer passes; a device gets
    /// [`SharedWaker`], which asks its [`BusyPoll`] policy.
    fn consumer_poll(&self, _device: &dyn RunPass) -> bool {
        false
    }

    fn cq_armed(&self) {
        self.end_busy_poll();
    }

    fn wake_engine(&self) {
        if self.pending.swap(true, Ordering::SeqCst) {
            // Already pending: the engine takes it before it sleeps.
            return;
        }
        if let Some(efd) = self.eventfd.get() {
            if self.parked.load(Ordering::SeqCst) {
                let _ = rustix::io::write(efd, &1u64.to_ne_bytes());
            }
        } else if let Some(t) = self.thread.get() {
            // Cheap when the thread is not parked (an atomic swap).
            t.unpark();
        }
    }
}

/// What a device asks of this runtime: wake-ups go to the engine's
/// [`ThreadWaker`], consumers' polls to the device's [`BusyPoll`] policy.
#[derive(Debug, Clone)]
pub struct SharedWaker {
    engine: Arc<ThreadWaker>,
    busy: Arc<BusyPoll>,
}

impl SharedWaker {
    /// The hooks of a device whose engine parks on `engine` and whose
    /// consumers poll as `busy` allows.
    pub fn new(engine: Arc<ThreadWaker>, busy: Arc<BusyPoll>) -> Self {
        Self { engine, busy }
    }
}

impl Wake for SharedWaker {
    fn wake(&self) {
        self.engine.wake();
    }

    fn wake_engine(&self) {
        self.engine.wake_engine();
    }

    fn consumer_poll(&self, device: &dyn RunPass) -> bool {
        self.busy
            .consumer_poll(HostClock.now_us(), device, &self.engine)
    }

    fn cq_armed(&self) {
        self.engine.end_busy_poll();
    }
}

/// Threads serving one device; stopped and joined on drop.
#[derive(Debug)]
pub struct DeviceThreads {
    stop: Arc<AtomicBool>,
    engine_waker: Arc<ThreadWaker>,
    threads: Vec<JoinHandle<()>>,
}

impl DeviceThreads {
    fn new(engine_waker: Arc<ThreadWaker>) -> Self {
        Self {
            stop: Arc::new(AtomicBool::new(false)),
            engine_waker,
            threads: Vec::new(),
        }
    }
}

impl Drop for DeviceThreads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.engine_waker.wake_engine();
        for t in self.threads.drain(..) {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// How long an engine with nothing to do may sleep: until the earliest of
/// its timers and `other` (e.g. a delayed datagram's due time).
fn idle_sleep(rnic: &SoftRnic, other: Option<u64>) -> Duration {
    let now = HostClock.now_us();
    let due = [rnic.next_timer_us(), other].into_iter().flatten().min();
    due.map_or(IDLE_PARK, |t| {
        Duration::from_micros(t.saturating_sub(now)).min(IDLE_PARK)
    })
}

/// Reliability defaults of a device run by this runtime; `ack_timeout`
/// (the configuration's) fixes the QPs' retransmit timeout in place of
/// the negotiated one.
fn set_rc_defaults(rnic: &SoftRnic, ack_timeout: Option<u8>) {
    let mut config = RcConfig {
        ack_defer_us: ACK_DEFER_US,
        ..RcConfig::default()
    };
    if let Some(timeout) = ack_timeout {
        config.follow_cm = false;
        config.ack_timeout_us = Negotiated {
            timeout,
            retry_count: config.retry_count,
            rnr_retry: config.rnr_retry,
        }
        .ack_timeout_us();
    }
    rnic.set_default_rc_config(config);
}

/// Starts the engine thread of `rnic`: it runs the device's passes
/// (receive, then poll work and events); with nothing done it parks until
/// woken, until `wait_fd` (the device's socket) is readable, or until the
/// next timer. While a consumer busy polls it parks on its wake-up only.
fn spawn_engine<F>(
    threads: &mut DeviceThreads,
    name: String,
    rnic: Weak<SoftRnic>,
    wait_fd: Option<Arc<F>>,
    spin: Duration,
) -> std::io::Result<()>
where
    F: AsFd + Send + Sync + 'static,
{
    let stop = threads.stop.clone();
    let waker = threads.engine_waker.clone();
    if wait_fd.is_some() {
        waker.use_eventfd()?;
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = thread::Builder::new().name(name).spawn(move || {
        waker.bind_current();
        let _ = ready_tx.send(());
        let mut last_work = Instant::now();
        // Since when the engine has been awake (working or looking).
        let mut awake_since = last_work;
        while !stop.load(Ordering::Acquire) {
            let Some(rnic) = rnic.upgrade() else { break };
            if waker.busy_remaining_at(HostClock.now_us()).is_some() && !waker.take() {
                // A consumer drives the device (its passes also fire the
                // timers): stay out of its way, unless events need
                // delivering or it arms a CQ. Not waking at the end of
                // each window keeps the engine from preempting the
                // poller every 50 us.
                drop(rnic);
                waker.park(BUSY_PARK, None::<&F>);
                last_work = Instant::now();
                awake_since = last_work;
                continue;
            }
            let Some(pass) = rnic.try_pass(HostClock.now_us(), ENGINE_PASS) else {
                // A busy poller holds the turn: come back for whatever
                // woke us once it is done.
                waker.repend();
                drop(rnic);
                thread::yield_now();
                continue;
            };
            if pass.received > 0 || pass.worked || waker.take() {
                last_work = Instant::now();
                continue;
            }
            let in_stream = last_work.saturating_duration_since(awake_since) >= STREAM_AFTER;
            let window = if in_stream {
                spin.max(STREAM_SPIN)
            } else {
                spin
            };
            if last_work.elapsed() < window && !waker.busy_polled_lately() {
                // Work tends to come back within a round trip: look again
                // after letting any other runnable thread have the core.
                // Not while consumers busy poll: they will be back, and
                // an engine spinning beside them takes the cores they
                // need (measured: 5.5 engine passes per round trip, 1 in
                // 120 with work, and a slower ping-pong).
                drop(rnic);
                thread::yield_now();
                continue;
            }
            let sleep = idle_sleep(&rnic, pass.next_due_us);
            drop(rnic);
            if sleep.is_zero() || !waker.may_park_long() {
                continue;
            }
            waker.park(sleep, wait_fd.as_deref());
            waker.unpark_long();
            awake_since = Instant::now();
            last_work = Instant::now()
                .checked_sub(spin)
                .unwrap_or_else(Instant::now);
        }
    })?;
    // The waker must know the engine thread before the first doorbell.
    let _ = ready_rx.recv();
    threads.threads.push(handle);
    Ok(())
}

/// A device on a UDP socket: one engine thread that also receives.
/// `ack_timeout`: the configuration's fixed retransmit timeout exponent.
pub fn start_udp(
    rnic: &Arc<SoftRnic>,
    port: Arc<UdpPort>,
    waker: Arc<ThreadWaker>,
    ack_timeout: Option<u8>,
) -> std::io::Result<DeviceThreads> {
    let mut threads = DeviceThreads::new(waker);
    set_rc_defaults(rnic, ack_timeout);
    let name = format!("rsndk-engine-{}", port.local().ip());
    spawn_engine(&mut threads, name, Arc::downgrade(rnic), Some(port), SPIN)?;
    Ok(threads)
}

/// A device attached to a [`FabricHub`].
#[derive(Debug)]
struct Node {
    rnic: Weak<SoftRnic>,
    waker: Arc<ThreadWaker>,
}

/// An in-memory fabric shared by the devices of this process that name it.
/// It has no thread of its own: a transmit queues the datagram for its
/// destination and wakes that device's engine, which takes it. Each
/// device's link draws faults from the hub's one generator.
#[derive(Debug)]
pub struct FabricHub {
    fabric: Arc<Fabric>,
    faults: Arc<FaultInjector>,
    nodes: RwLock<HashMap<IpAddr, Node>>,
    /// Changes with every attach and detach, so links can cache wakers.
    generation: AtomicU64,
}

impl FabricHub {
    /// An empty hub.
    pub fn start(_name: &str, faults: Faults) -> std::io::Result<Arc<Self>> {
        Ok(Arc::new(Self {
            fabric: Fabric::new(),
            faults: FaultInjector::new(faults),
            nodes: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
        }))
    }

    /// The fabric (for statistics).
    pub fn fabric(&self) -> &Arc<Fabric> {
        &self.fabric
    }

    /// The fault generator its links draw from (for statistics and fault
    /// changes).
    pub fn faults(&self) -> &Arc<FaultInjector> {
        &self.faults
    }

    /// Attaches a device at `addr` (woken by `waker` when a datagram for
    /// it arrives); fails if the address is taken.
    pub fn attach(&self, addr: IpAddr, rnic: &Arc<SoftRnic>, waker: Arc<ThreadWaker>) -> bool {
        let mut nodes = self
            .nodes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if nodes.get(&addr).is_some_and(|n| n.rnic.strong_count() > 0) {
            return false;
        }
        nodes.insert(
            addr,
            Node {
                rnic: Arc::downgrade(rnic),
                waker,
            },
        );
        self.generation.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// Detaches the device at `addr`, dropping what is in flight to it.
    pub fn detach(&self, addr: IpAddr) {
        {
            let mut nodes = self
                .nodes
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            nodes.remove(&addr);
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        self.discard_queued_for(addr);
    }

    /// Drops what is queued for `addr` (the buffers go back to the fabric).
    fn discard_queued_for(&self, addr: IpAddr) {
        self.fabric.discard_for(addr);
    }

    /// The waker of the device at `addr` (and the generation it is valid
    /// for); `None` (after dropping what is queued for it) if there is no
    /// device there.
    fn waker_of(&self, addr: IpAddr) -> Option<(u64, Arc<ThreadWaker>)> {
        let nodes = self
            .nodes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(node) = nodes.get(&addr) {
            return Some((generation, node.waker.clone()));
        }
        drop(nodes);
        // No device at that address: the packet is lost, as on a real
        // network.
        self.discard_queued_for(addr);
        None
    }

    /// The link of a device at `addr` on this hub, injecting the hub's
    /// faults.
    pub fn link(self: &Arc<Self>, addr: impl Into<IpAddr>) -> FaultLink<HubLink> {
        let addr = addr.into();
        let link = HubLink {
            hub: self.clone(),
            addr,
            batch: Mutex::new(Vec::with_capacity(RX_BURST)),
            last_waker: Mutex::new(None),
        };
        FaultLink::new(link, self.faults.clone(), Arc::new(HostClock))
    }

    /// Starts the engine thread of a device attached at `addr`
    /// (`ack_timeout` as [`start_udp`]'s).
    pub fn start_device(
        self: &Arc<Self>,
        addr: IpAddr,
        rnic: &Arc<SoftRnic>,
        waker: Arc<ThreadWaker>,
        ack_timeout: Option<u8>,
    ) -> std::io::Result<DeviceThreads> {
        let mut threads = DeviceThreads::new(waker);
        set_rc_defaults(rnic, ack_timeout);
        spawn_engine::<OwnedFd>(
            &mut threads,
            format!("rsndk-engine-mem-{addr}"),
            Arc::downgrade(rnic),
            None,
            HUB_SPIN,
        )?;
        Ok(threads)
    }
}

/// A device's [`Link`] onto a [`FabricHub`].
#[derive(Debug)]
pub struct HubLink {
    hub: Arc<FabricHub>,
    addr: IpAddr,
    /// The last batch taken; its buffers go back to the fabric with the
    /// next take.
    batch: Mutex<Vec<Load>>,
    /// The last destination's waker, valid while the hub's generation is
    /// unchanged: a bulk transfer wakes its peer per packet without the
    /// hub's shared lock and map lookup.
    last_waker: Mutex<Option<(IpAddr, u64, Arc<ThreadWaker>)>>,
}

impl HubLink {
    /// Wakes the device a datagram was just queued for. Per packet, so the
    /// receiver starts on the first packet of a burst (waking per flush
    /// instead measured slower: the receiver then idles while the sender
    /// builds the burst).
    fn sent_to(&self, dst: IpAddr) {
        let mut last = self
            .last_waker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let generation = self.hub.generation.load(Ordering::Acquire);
        if let Some((addr, g, waker)) = last.as_ref()
            && *addr == dst
            && *g == generation
        {
            waker.wake();
            return;
        }
        *last = None;
        if let Some((g, waker)) = self.hub.waker_of(dst) {
            waker.wake();
            *last = Some((dst, g, waker));
        }
    }
}

impl Link for HubLink {
    fn transmit(&self, datagram: &[u8]) {
        if let Some(dst) = self.hub.fabric.transmit(HostClock.now_us(), datagram) {
            self.sent_to(dst);
        }
    }

    fn transmit_owned(&self, buf: &mut Vec<u8>, len: usize) {
        if let Some(dst) = self.hub.fabric.transmit_owned(HostClock.now_us(), buf, len) {
            self.sent_to(dst);
        }
    }

    /// The fabric queues it until due; the receiver, woken now, sleeps
    /// until then (its pass reports when the next datagram is due).
    fn transmit_owned_later(&self, hold_us: u64, buf: &mut Vec<u8>, len: usize) -> bool {
        let due = HostClock.now_us().saturating_add(hold_us);
        if let Some(dst) = self.hub.fabric.transmit_owned(due, buf, len) {
            self.sent_to(dst);
        }
        true
    }

    /// Every device on a hub is in this process and reaches memory through
    /// [`crate::platform::HostDma`] (logical address = virtual address):
    /// one DMA space, so trains may cross it (the hub's
    /// [`FaultLink`] refuses them while it draws per-packet faults).
    fn carries_trains(&self, _dst: IpAddr) -> bool {
        true
    }

    fn transmit_train(&self, train: Train) {
        let dst = self.hub.fabric.transmit_train(HostClock.now_us(), train);
        self.sent_to(dst);
    }

    fn transmit_train_later(&self, hold_us: u64, train: Train) -> Option<Train> {
        let due = HostClock.now_us().saturating_add(hold_us);
        let dst = self.hub.fabric.transmit_train(due, train);
        self.sent_to(dst);
        None
    }

    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        let Ok(mut batch) = self.batch.try_lock() else {
            return Received::default();
        };
        // One lock round gives back the last batch's buffers and takes
        // the next batch.
        let (count, next_due_us) =
            self.hub
                .fabric
                .exchange_due_for(self.addr, HostClock.now_us(), &mut batch, RX_BURST);
        // A train counts the packets it stands for.
        let mut packets: usize = 0;
        for load in batch.iter() {
            packets = packets.saturating_add(usize::try_from(load.packets()).unwrap_or(usize::MAX));
            match load {
                Load::Datagram(bytes) => deliver(Arrival::Datagram(bytes)),
                Load::Train(train) => deliver(Arrival::Train(train)),
            }
        }
        Received {
            count: packets,
            more: count >= RX_BURST,
            next_due_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::sync::mpsc;

    /// Bound on a wake-up that must happen (a liveness check, not a
    /// timing: a lost wake-up would otherwise park for the full timeout).
    const LONG: Duration = Duration::from_secs(600);

    fn parked_engine(
        also: Option<Arc<UdpPort>>,
    ) -> (Arc<ThreadWaker>, mpsc::Receiver<()>, JoinHandle<()>) {
        let waker = Arc::new(ThreadWaker::default());
        waker.use_eventfd().unwrap();
        let (tx, rx) = mpsc::channel();
        let w = waker.clone();
        let handle = thread::spawn(move || {
            w.park(LONG, also.as_deref());
            tx.send(()).unwrap();
        });
        (waker, rx, handle)
    }

    #[test]
    fn a_doorbell_wakes_an_engine_parked_in_poll() {
        let (waker, rx, handle) = parked_engine(None::<Arc<UdpPort>>);
        // Whether the wake lands before or during the park, it must end it.
        waker.wake();
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the wake-up ended the park");
        handle.join().unwrap();
        // The wake-up was consumed by the park.
        assert!(!waker.take());
    }

    #[test]
    fn a_doorbell_during_the_park_is_consumed_by_it() {
        let (waker, rx, handle) = parked_engine(None::<Arc<UdpPort>>);
        // Most likely lands while the engine sits in poll(2) (and if not,
        // before the park, which consumes it too): either way the park
        // ends and no wake-up is left over for a needless extra pass.
        thread::sleep(Duration::from_millis(50));
        waker.wake();
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the wake-up ended the park");
        handle.join().unwrap();
        assert!(!waker.take());
    }

    #[test]
    fn a_wake_left_to_a_busy_poller_keeps_the_engine_from_parking_long() {
        let waker = ThreadWaker::default();
        waker.note_busy_poll(HostClock.now_us());
        waker.wake();
        assert!(!waker.take(), "the doorbell was left to the busy poller");
        // Whether or not the window is still open, the engine must not
        // sleep on work that was left to a poller.
        assert!(!waker.may_park_long());
        waker.end_busy_poll();
        assert!(waker.may_park_long(), "nothing left over");
        waker.unpark_long();
    }

    #[test]
    fn a_wake_during_busy_polling_wakes_an_engine_parked_long() {
        let waker = Arc::new(ThreadWaker::default());
        waker.use_eventfd().unwrap();
        let (tx, rx) = mpsc::channel();
        let (decided_tx, decided_rx) = mpsc::channel();
        let w = waker.clone();
        let handle = thread::spawn(move || {
            assert!(w.may_park_long());
            decided_tx.send(()).unwrap();
            w.park(LONG, None::<&OwnedFd>);
            w.unpark_long();
            tx.send(()).unwrap();
        });
        // Not `parked_long` alone: `may_park_long` sets it before it looks
        // for busy polling, so a poll noted in between made it (rightly)
        // refuse, and the test failed (seen once in CI).
        decided_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the engine decided to park long");
        // A consumer starts polling, and a doorbell rings: the engine,
        // asleep for long, must still be woken.
        waker.note_busy_poll(HostClock.now_us());
        waker.wake();
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the absorbed wake-up still ended the long park");
        handle.join().unwrap();
    }

    #[test]
    fn arming_ends_busy_polling_and_wakes_the_engine() {
        let waker = ThreadWaker::default();
        waker.note_busy_poll(HostClock.now_us());
        assert!(waker.busy_remaining_at(HostClock.now_us()).is_some());
        waker.cq_armed();
        assert!(waker.busy_remaining_at(HostClock.now_us()).is_none());
        assert!(waker.take(), "the engine was asked to take over");
    }

    #[test]
    fn a_datagram_wakes_an_engine_parked_on_its_socket() {
        let port = Arc::new(UdpPort::bind(Ipv4Addr::new(127, 0, 80, 10)).unwrap());
        let sender = UdpPort::bind(Ipv4Addr::new(127, 0, 80, 11)).unwrap();
        let (_waker, rx, handle) = parked_engine(Some(port.clone()));
        sender.queue(port.local(), &[1, 2, 3]);
        sender.flush();
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the datagram ended the park");
        handle.join().unwrap();
        let mut got = 0;
        let mut bufs = RxBuffers::default();
        port.try_receive(&mut bufs, |a| {
            if let softrnic::link::Arrival::Datagram(d) = a {
                got += d.len();
            }
        })
        .unwrap();
        // An IPv4 port takes whole datagrams: 20 + 8 header bytes.
        assert_eq!(got, 28 + 3);
    }

    #[test]
    fn a_hub_loses_datagrams_for_addresses_without_a_device() {
        let hub = FabricHub::start("runtime-test", Faults::default()).unwrap();
        let mut d = vec![0u8; 28];
        d[0] = 0x45;
        d[16..20].copy_from_slice(&[127, 0, 80, 12]);
        hub.link(Ipv4Addr::new(127, 0, 80, 13)).transmit(&d);
        assert_eq!(hub.fabric().stats().sent, 1);
        assert_eq!(hub.fabric().in_flight(), 0);
    }
}

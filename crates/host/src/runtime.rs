//! Running software RNICs in a process: the clock, the wake-up, the engine
//! thread that polls a device, and the threads that carry its packets
//! (a UDP socket, or an in-memory fabric shared by the adapters of this
//! process).
//!
//! A doorbell is a bitset update plus [`ThreadWaker::wake`]: an atomic swap
//! and, only if the engine thread is parked, one futex wake. No system call
//! is made per posted work request when the engine is busy.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use softrnic::device::SoftRnic;
use softrnic::env::{Clock, Link, Wake};
use softrnic::fabric::{Fabric, Faults};

use crate::udp::{RxBuffers, UdpPort};

/// Longest an idle engine sleeps before looking at its timers again.
const IDLE_PARK: Duration = Duration::from_millis(5);

/// Monotonic microseconds since the process's first use of the clock.
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

/// Wakes one thread (the engine) that parks when it has nothing to do.
#[derive(Debug, Default)]
pub struct ThreadWaker {
    thread: OnceLock<Thread>,
    pending: AtomicBool,
}

impl ThreadWaker {
    /// Binds the waker to the calling thread.
    pub fn bind_current(&self) {
        let _ = self.thread.set(thread::current());
    }

    /// Consumes a pending wake-up.
    pub fn take(&self) -> bool {
        self.pending.swap(false, Ordering::AcqRel)
    }
}

impl Wake for ThreadWaker {
    fn wake(&self) {
        if !self.pending.swap(true, Ordering::AcqRel) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }
}

/// The waker handed to a device: shares the engine's [`ThreadWaker`].
#[derive(Debug, Clone)]
pub struct SharedWaker(pub Arc<ThreadWaker>);

impl Wake for SharedWaker {
    fn wake(&self) {
        self.0.wake();
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
        self.engine_waker.wake();
        for t in self.threads.drain(..) {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// Starts the engine thread of `rnic`: poll while there is work, park until
/// woken or the next timer is due. `flush` runs after every poll pass so a
/// batching link sends what the pass produced.
fn spawn_engine(
    threads: &mut DeviceThreads,
    name: String,
    rnic: Weak<SoftRnic>,
    flush: impl Fn() + Send + 'static,
) -> std::io::Result<()> {
    let stop = threads.stop.clone();
    let waker = threads.engine_waker.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = thread::Builder::new().name(name).spawn(move || {
        waker.bind_current();
        let _ = ready_tx.send(());
        let clock = HostClock;
        while !stop.load(Ordering::Acquire) {
            let Some(rnic) = rnic.upgrade() else { break };
            let worked = rnic.poll();
            flush();
            if worked || waker.take() {
                continue;
            }
            let now = clock.now_us();
            let sleep = rnic.next_timer_us().map_or(IDLE_PARK, |t| {
                Duration::from_micros(t.saturating_sub(now)).min(IDLE_PARK)
            });
            drop(rnic);
            if !sleep.is_zero() {
                thread::park_timeout(sleep);
            }
        }
    })?;
    // The waker must know the engine thread before the first doorbell.
    let _ = ready_rx.recv();
    threads.threads.push(handle);
    Ok(())
}

/// A device on a UDP socket: engine thread plus receive thread.
pub fn start_udp(
    rnic: &Arc<SoftRnic>,
    port: Arc<UdpPort>,
    waker: Arc<ThreadWaker>,
) -> std::io::Result<DeviceThreads> {
    let mut threads = DeviceThreads::new(waker);
    let flush_port = port.clone();
    spawn_engine(
        &mut threads,
        format!("rsndk-engine-{}", port.local().ip()),
        Arc::downgrade(rnic),
        move || {
            flush_port.flush();
        },
    )?;
    let stop = threads.stop.clone();
    let weak = Arc::downgrade(rnic);
    let handle = thread::Builder::new()
        .name(format!("rsndk-rx-{}", port.local().ip()))
        .spawn(move || {
            let mut buffers = RxBuffers::default();
            while !stop.load(Ordering::Acquire) {
                let Some(rnic) = weak.upgrade() else { break };
                let received = port.receive(
                    &mut buffers,
                    Duration::from_millis(20),
                    |src, dst, payload| {
                        rnic.receive_udp_payload(src, dst, payload);
                    },
                );
                // Responses produced while receiving (ACKs, READ responses)
                // leave in the same batch.
                port.flush();
                if received.is_err() {
                    thread::sleep(Duration::from_millis(1));
                }
            }
        })?;
    threads.threads.push(handle);
    Ok(threads)
}

/// An in-memory fabric shared by the devices of this process that name it.
#[derive(Debug)]
pub struct FabricHub {
    fabric: Arc<Fabric>,
    nodes: Mutex<HashMap<Ipv4Addr, Weak<SoftRnic>>>,
    waker: Arc<ThreadWaker>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl FabricHub {
    /// A hub with its delivery thread.
    pub fn start(name: &str, faults: Faults) -> std::io::Result<Arc<Self>> {
        let hub = Arc::new(Self {
            fabric: Fabric::new(faults),
            nodes: Mutex::new(HashMap::new()),
            waker: Arc::new(ThreadWaker::default()),
            stop: Arc::new(AtomicBool::new(false)),
            thread: Mutex::new(None),
        });
        let weak = Arc::downgrade(&hub);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = thread::Builder::new()
            .name(format!("rsndk-fabric-{name}"))
            .spawn(move || {
                if let Some(h) = weak.upgrade() {
                    h.waker.bind_current();
                }
                let _ = ready_tx.send(());
                let clock = HostClock;
                loop {
                    let Some(hub) = weak.upgrade() else { break };
                    if hub.stop.load(Ordering::Acquire) {
                        break;
                    }
                    let now = clock.now_us();
                    let mut delivered = false;
                    while let Some((dst, bytes)) = hub.fabric.take_due(now) {
                        delivered = true;
                        let node = hub
                            .nodes
                            .lock()
                            .ok()
                            .and_then(|n| n.get(&dst).and_then(Weak::upgrade));
                        // No device at that address: the packet is lost, as on
                        // a real network.
                        if let Some(rnic) = node {
                            rnic.receive(&bytes);
                        }
                    }
                    if delivered || hub.waker.take() {
                        continue;
                    }
                    let sleep = hub.fabric.next_due().map_or(IDLE_PARK, |t| {
                        Duration::from_micros(t.saturating_sub(now)).min(IDLE_PARK)
                    });
                    drop(hub);
                    thread::park_timeout(sleep);
                }
            })?;
        let _ = ready_rx.recv();
        *hub.thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
        Ok(hub)
    }

    /// The fabric (for statistics and fault changes).
    pub fn fabric(&self) -> &Arc<Fabric> {
        &self.fabric
    }

    /// Attaches a device at `addr`; fails if the address is taken.
    pub fn attach(&self, addr: Ipv4Addr, rnic: &Arc<SoftRnic>) -> bool {
        let mut nodes = self
            .nodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if nodes.get(&addr).is_some_and(|w| w.strong_count() > 0) {
            return false;
        }
        nodes.insert(addr, Arc::downgrade(rnic));
        true
    }

    /// Detaches the device at `addr`.
    pub fn detach(&self, addr: Ipv4Addr) {
        self.nodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&addr);
    }

    /// A link for a device on this hub.
    pub fn link(self: &Arc<Self>) -> HubLink {
        HubLink { hub: self.clone() }
    }

    /// Starts the engine thread of a device on this hub.
    pub fn start_device(
        &self,
        rnic: &Arc<SoftRnic>,
        waker: Arc<ThreadWaker>,
    ) -> std::io::Result<DeviceThreads> {
        let mut threads = DeviceThreads::new(waker);
        spawn_engine(
            &mut threads,
            "rsndk-engine-mem".to_owned(),
            Arc::downgrade(rnic),
            || {},
        )?;
        Ok(threads)
    }
}

impl Drop for FabricHub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
        if let Some(t) = self.thread.get_mut().ok().and_then(Option::take) {
            // The delivery thread holds only a weak reference; it exits on
            // its next turn. It may be this very thread dropping the last
            // strong reference, which must not join itself.
            if t.thread().id() != thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// A device's [`Link`] onto a [`FabricHub`].
#[derive(Debug)]
pub struct HubLink {
    hub: Arc<FabricHub>,
}

impl Link for HubLink {
    fn transmit(&self, datagram: &[u8]) {
        self.hub.fabric.transmit(HostClock.now_us(), datagram);
        self.hub.waker.wake();
    }
}

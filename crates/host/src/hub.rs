//! The in-memory fabric hub: devices of this process that name the same
//! hub exchange datagrams through a shared [`Fabric`], each through its
//! [`FabricEndpoint`] (the one endpoint type tests use too), with no
//! socket and no thread of the hub's own: a transmit wakes the receiving
//! device's engine, whose pass takes what is due.

use std::collections::HashMap;
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use links::{
    FaultInjector, FaultLink, Faults,
    fabric::{Fabric, FabricEndpoint, Queued},
};
use softrnic::device::SoftRnic;
use softrnic::env::Wake;

use crate::clock::HostClock;
use crate::engine::{DeviceThreads, set_rc_defaults, spawn_engine};
use crate::pass::DevicePass;
use crate::waker::ThreadWaker;

/// [`SPIN`](crate::engine::SPIN) for a device on a [`FabricHub`]. Its arrivals come from the
/// other engines of this process, each one waking a parked engine through
/// the scheduler (a futex) and no socket readiness to wait on. In a stream
/// of 1 MiB READs the responder gets a request every 50-100 us: at 50 us it
/// parked between requests and every request cost the requester a futex
/// wake-up and the responder a scheduling round (measured: 9.5-14.9 GB/s);
/// looking on for 200 us keeps it awake (15.1-18.9 GB/s, same runs
/// interleaved).
const HUB_SPIN: Duration = Duration::from_micros(200);

/// Inbound datagrams a fabric device takes in one batch.
const RX_BURST: usize = 64;

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

    /// [`FabricHub::attach`], waiting up to `wait` for a device that still
    /// holds `addr` to stop (one whose last adapter closed on another
    /// thread detaches once its engine is joined); whether it attached.
    pub fn attach_when_free(
        &self,
        addr: IpAddr,
        rnic: &Arc<SoftRnic>,
        waker: &Arc<ThreadWaker>,
        wait: std::time::Duration,
    ) -> bool {
        let until = std::time::Instant::now() + wait;
        loop {
            if self.attach(addr, rnic, waker.clone()) {
                return true;
            }
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
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

    /// The link of a device at `addr` on this hub: its fabric endpoint
    /// there (the one type tests use too), waking the device each load is
    /// queued for, injecting the hub's faults.
    pub fn link(self: &Arc<Self>, addr: impl Into<IpAddr>) -> FaultLink<FabricEndpoint> {
        // Every device on a hub is in this process and reaches memory
        // through [`crate::platform::HostDma`] (logical address = virtual
        // address): one DMA space, so trains may cross it (the hub's
        // [`FaultLink`] refuses them while it draws per-packet faults).
        let endpoint = FabricEndpoint::with_trains(self.fabric.clone(), Arc::new(HostClock))
            .receiving_at(addr, RX_BURST)
            .notifying(Box::new(WakeReceiver {
                hub: self.clone(),
                last_waker: Mutex::new(None),
            }));
        FaultLink::new(endpoint, self.faults.clone(), Arc::new(HostClock))
    }

    /// Starts the engine thread of a device attached at `addr`, which
    /// runs `pass` (over this hub's [`FabricHub::link`]; `ack_timeout` as
    /// [`start_udp`](crate::engine::start_udp)'s).
    pub fn start_device(
        self: &Arc<Self>,
        addr: IpAddr,
        rnic: &Arc<SoftRnic>,
        pass: Arc<DevicePass>,
        waker: Arc<ThreadWaker>,
        ack_timeout: Option<u8>,
    ) -> std::io::Result<DeviceThreads> {
        let mut threads = DeviceThreads::new(waker);
        set_rc_defaults(rnic, ack_timeout);
        spawn_engine::<OwnedFd>(
            &mut threads,
            format!("rsndk-engine-mem-{addr}"),
            pass,
            None,
            HUB_SPIN,
        )?;
        Ok(threads)
    }
}

/// Wakes the device on a [`FabricHub`] a load was just queued for: per
/// packet, so the receiver starts on the first packet of a burst (waking
/// per flush instead measured slower: the receiver then idles while the
/// sender builds the burst).
#[derive(Debug)]
struct WakeReceiver {
    hub: Arc<FabricHub>,
    /// The last destination's waker, valid while the hub's generation is
    /// unchanged: a bulk transfer wakes its peer per packet without the
    /// hub's shared lock and map lookup.
    last_waker: Mutex<Option<(IpAddr, u64, Arc<ThreadWaker>)>>,
}

impl Queued for WakeReceiver {
    fn queued_for(&self, dst: IpAddr) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// A device at `addr`, its time and memory those of a device that
    /// moves no data.
    fn device(addr: IpAddr) -> Arc<SoftRnic> {
        use links::Clock;
        use softrnic::device::DeviceConfig;
        use softrnic::env::NoRoutes;
        // SAFETY: the test registers no memory and posts no work, so the
        // device never makes a DMA access.
        let dma = unsafe { crate::platform::HostDma::new() };
        let waker = Arc::new(ThreadWaker::default());
        let hooks =
            crate::busy::SharedWaker::new(waker, Arc::new(crate::busy::BusyPoll::new(false)));
        Arc::new(
            SoftRnic::new(
                DeviceConfig::new(addr, 1024),
                Box::new(dma),
                Box::new(NoRoutes),
                crate::clock::HostClock.now_us(),
                Box::new(hooks),
            )
            .unwrap(),
        )
    }

    #[test]
    fn an_address_still_held_by_a_stopping_device_is_attached_once_it_is_free() {
        let hub = FabricHub::start("hub-test-stopping", Faults::default()).unwrap();
        let addr = IpAddr::V4(Ipv4Addr::new(127, 0, 80, 21));
        let (old, new) = (device(addr), device(addr));
        let waker = Arc::new(ThreadWaker::default());
        assert!(hub.attach(addr, &old, waker.clone()));
        // Still held, never freed: refused after the wait.
        let wait = std::time::Duration::from_millis(30);
        assert!(!hub.attach_when_free(addr, &new, &waker, wait));
        // Freed by another thread while the open waits: attached then.
        let stopping = {
            let hub = hub.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                hub.detach(addr);
                drop(old);
            })
        };
        let started = std::time::Instant::now();
        assert!(hub.attach_when_free(addr, &new, &waker, std::time::Duration::from_secs(5)));
        assert!(started.elapsed() >= std::time::Duration::from_millis(80));
        stopping.join().unwrap();
    }

    #[test]
    fn a_hub_loses_datagrams_for_addresses_without_a_device() {
        let hub = FabricHub::start("runtime-test", Faults::default()).unwrap();
        let mut d = vec![0u8; 28];
        d[0] = 0x45;
        d[16..20].copy_from_slice(&[127, 0, 80, 12]);
        links::transmit_copy(&hub.link(Ipv4Addr::new(127, 0, 80, 13)), &d);
        assert_eq!(hub.fabric().stats().sent, 1);
        assert_eq!(hub.fabric().in_flight(), 0);
    }
}

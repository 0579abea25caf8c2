//! The adapters and devices a process has open.
//!
//! One software RNIC (a [`SoftRnic`] with its threads) exists per adapter
//! address; opening the same configuration again opens another
//! `NDK_ADAPTER` on the same device, as NDIS does for several kernel
//! consumers of one NIC. The device goes away when its last adapter closes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use hwq::TryArc;
use links::{CaptureLink, Clock, Faults, Link, LinkPass};
use ndkpi::{
    NDK_ADAPTER, NDK_VERSION, NTSTATUS, STATUS_ACCESS_DENIED, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_PARAMETER, STATUS_SHARING_VIOLATION,
};
use provider::device::DeviceContext;
use softrnic::device::{DeviceConfig, SoftRnic};
use softrnic::env::{NoRoutes, Routes};

use crate::busy::{BusyPoll, SharedWaker};
use crate::clock::HostClock;
use crate::config::{AdapterConfig, FaultConfig, Transport};
use crate::engine::{DeviceThreads, start_udp};
use crate::hub::FabricHub;
use crate::pass::{DevicePass, Tap};
use crate::pcap::{PcapCapture, SharedCapture};
use crate::platform::{DeviceLease, HostDma, HostPlatform};
use crate::udp::{UdpPass, UdpPort};
use crate::waker::ThreadWaker;

/// How far a reordered or duplicated packet lags on an in-memory fabric.
const REORDER_WINDOW_US: u64 = 200;

/// A running software RNIC and what serves it. Field order is drop order:
/// the threads stop first, then the provider detaches, then the device goes.
struct HostDevice {
    config: AdapterConfig,
    threads: Option<DeviceThreads>,
    ctx: TryArc<DeviceContext>,
    rnic: Arc<SoftRnic>,
    busy: Arc<BusyPoll>,
    hub: Option<Arc<FabricHub>>,
    /// The capture wrapper around the device's wire (the runtime's, not
    /// the device's: softrnic holds no capture).
    tap: Tap,
    _capture: Option<Arc<PcapCapture>>,
    /// Last: once everything else is gone, the platform checks that none
    /// of the device's pool remains.
    _lease: DeviceLease,
}

impl Drop for HostDevice {
    fn drop(&mut self) {
        self.threads.take();
        self.ctx.detach();
        if let (Some(hub), Transport::Memory { addr, .. }) = (&self.hub, &self.config.transport) {
            hub.detach(*addr);
        }
    }
}

/// How long opening an address on a fabric waits for the device that
/// last had it to finish stopping.
const STOPPING_WAIT: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Registry {
    devices: HashMap<IpAddr, Weak<HostDevice>>,
    hubs: HashMap<String, Weak<FabricHub>>,
    /// Open adapters (by address) and the device each keeps alive.
    adapters: HashMap<usize, Arc<HostDevice>>,
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);
    // A panic elsewhere must not make every later open fail.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

fn faults(f: &FaultConfig) -> Faults {
    Faults {
        loss: f.loss,
        reorder: f.reorder,
        duplicate: f.duplicate,
        delay_us: f.delay_us,
        reorder_window_us: REORDER_WINDOW_US,
        seed: f.seed,
    }
}

fn hub_for(reg: &mut Registry, name: &str, f: &FaultConfig) -> Result<Arc<FabricHub>, NTSTATUS> {
    if let Some(hub) = reg.hubs.get(name).and_then(Weak::upgrade) {
        if *f != FaultConfig::default() {
            hub.faults().set_faults(faults(f));
        }
        return Ok(hub);
    }
    let hub = FabricHub::start(name, faults(f)).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
    reg.hubs.insert(name.to_owned(), Arc::downgrade(&hub));
    Ok(hub)
}

fn start_device(reg: &mut Registry, config: &AdapterConfig) -> Result<Arc<HostDevice>, NTSTATUS> {
    let addr = config.addr();
    let waker = Arc::new(ThreadWaker::default());
    let busy = Arc::new(BusyPoll::new(config.busy_poll));
    let capture = match &config.pcap {
        Some(path) => Some(Arc::new(
            PcapCapture::create(path).map_err(|_| STATUS_INVALID_PARAMETER)?,
        )),
        None => None,
    };
    let mut dev_config = DeviceConfig::new(addr, config.pmtu);
    // The fabric carries whole datagrams, so per-QP source ports are real
    // there; a UDP socket sends from 4791 (see softrnic's engine docs).
    dev_config.per_qp_source_port = matches!(config.transport, Transport::Memory { .. });
    // The host clock starts at zero in each process: without this a new
    // process would reuse a killed one's comm IDs (softrnic's
    // `DeviceConfig::cm_entropy`).
    dev_config.cm_entropy = process_entropy();
    HostPlatform::check_device_locks();
    let hooks = SharedWaker::new(waker.clone(), busy.clone());
    let new_rnic = |routes: Box<dyn Routes>| {
        // SAFETY: this RNIC serves only NDK consumers through the provider;
        // it reaches memory only inside regions the provider registered
        // from their MDLs (key, bounds and rights checked per access) or
        // provider buffers it was given, and NDK requires registered memory
        // to stay live until deregistration.
        let dma = unsafe { HostDma::new() };
        SoftRnic::new(
            dev_config,
            Box::new(dma),
            routes,
            HostClock.now_us(),
            Box::new(hooks.clone()),
        )
        .map(Arc::new)
        .ok_or(STATUS_INSUFFICIENT_RESOURCES)
    };
    // The pass (made after the device, which owns the waker that runs it
    // for busy-polling consumers) holds the device weakly.
    let (rnic, pass, hub, threads) = match &config.transport {
        Transport::Udp { .. } => {
            let mut port = UdpPort::bind(addr).map_err(|e| match e.kind() {
                std::io::ErrorKind::AddrInUse => STATUS_SHARING_VIOLATION,
                std::io::ErrorKind::PermissionDenied => {
                    // No silent fallback to a header the ICRC would not
                    // match: say what is missing.
                    eprintln!("{}", crate::udp::NO_RAW_SOCKETS);
                    STATUS_ACCESS_DENIED
                }
                _ => STATUS_INVALID_PARAMETER,
            })?;
            if config.peer_sockets && config.pcap.is_none() {
                port = port.with_peer_sockets();
            }
            let port = Arc::new(port);
            let udp = UdpPass::new(port.clone()).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
            let rnic = new_rnic(Box::new(port.routes()))?;
            let pass = Arc::new(DevicePass::udp(&rnic, udp));
            hooks.set_pass(pass.clone());
            let threads = start_udp(&rnic, pass.clone(), port, waker.clone(), config.ack_timeout)
                .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
            (rnic, pass, None, threads)
        }
        Transport::Memory {
            fabric, faults: f, ..
        } => {
            let hub = hub_for(reg, fabric, f)?;
            // The capture wraps the link (and so sees what the device sends
            // before any fault, what it receives after).
            let link: Box<dyn Link> = Box::new(hub.link(addr));
            let link = LinkPass::new(Arc::new(CaptureLink::new(link)))
                .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
            // The fabric carries any size: the configured path MTU applies.
            let rnic = new_rnic(Box::new(NoRoutes))?;
            let pass = Arc::new(DevicePass::link(&rnic, link));
            hooks.set_pass(pass.clone());
            // A device at this address whose last adapter just closed may
            // still be stopping on another thread (joining its engine
            // before it detaches): the registry no longer holds it, and no
            // live device of this process can hold the address otherwise
            // (the registry would have found it). Wait for it to go.
            if !hub.attach_when_free(addr, &rnic, &waker, STOPPING_WAIT) {
                return Err(STATUS_SHARING_VIOLATION);
            }
            let threads = hub
                .start_device(addr, &rnic, pass.clone(), waker.clone(), config.ack_timeout)
                .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
            (rnic, pass, Some(hub), threads)
        }
    };
    let tap = pass.tap().clone();
    if let Some(c) = &capture {
        tap.set_capture(Some(Box::new(SharedCapture(c.clone()))));
    }
    let lease = DeviceLease::new(addr);
    let ctx = DeviceContext::new(hwq::SharedDevice::from_arc(rnic.clone()), lease.platform())?;
    Ok(Arc::new(HostDevice {
        config: config.clone(),
        threads: Some(threads),
        ctx,
        rnic,
        busy,
        hub,
        tap,
        _capture: capture,
        _lease: lease,
    }))
}

/// Opens an adapter for `config` at NDK version `version`.
pub fn open(config: &AdapterConfig, version: NDK_VERSION) -> Result<*mut NDK_ADAPTER, NTSTATUS> {
    let mut reg = registry();
    let device = match reg.devices.get(&config.addr()).and_then(Weak::upgrade) {
        Some(d) if d.config == *config => d,
        // The address is owned by a device configured differently.
        Some(_) => return Err(STATUS_SHARING_VIOLATION),
        None => {
            // Forget devices and fabrics that stopped since: a long-running
            // process opening many addresses must not grow the registry.
            reg.devices.retain(|_, d| d.strong_count() > 0);
            reg.hubs.retain(|_, h| h.strong_count() > 0);
            let d = start_device(&mut reg, config)?;
            reg.devices.insert(config.addr(), Arc::downgrade(&d));
            d
        }
    };
    let adapter = provider::adapter::open_adapter(&device.ctx, version)?;
    reg.adapters.insert(adapter as usize, device);
    Ok(adapter)
}

/// Closes an adapter opened by [`open`]; `STATUS_INVALID_PARAMETER` for any
/// other pointer (which is never dereferenced).
///
/// # Safety
/// No other call on `adapter` (or on objects created from it) may be
/// running, as the NDK close contract requires.
pub unsafe fn close(adapter: *mut NDK_ADAPTER) -> NTSTATUS {
    let Some(device) = registry().adapters.remove(&(adapter as usize)) else {
        return STATUS_INVALID_PARAMETER;
    };
    // SAFETY: the pointer was registered by `open` and removed from the
    // registry just now, so it names an open adapter closed exactly once;
    // the caller guarantees no concurrent call on it.
    let status = unsafe { provider::close_adapter(adapter) };
    // Dropping the last adapter's reference stops the device, outside the
    // registry lock (it joins threads).
    drop(device);
    status
}

/// The software RNIC behind an open adapter (for tools and tests that want
/// its statistics).
pub fn device_of(adapter: *mut NDK_ADAPTER) -> Option<Arc<SoftRnic>> {
    registry()
        .adapters
        .get(&(adapter as usize))
        .map(|d| d.rnic.clone())
}

/// The capture wrapper around the link of the device behind an open
/// adapter (for tests that tap it: [`CaptureLink::set_capture`]).
pub fn tap_of(adapter: *mut NDK_ADAPTER) -> Option<Arc<CaptureLink<Box<dyn Link>>>> {
    registry()
        .adapters
        .get(&(adapter as usize))
        .map(|d| d.tap.clone())
}

/// The busy-polling policy (and its counters) of the device behind an
/// open adapter.
pub fn busy_poll_of(adapter: *mut NDK_ADAPTER) -> Option<Arc<BusyPoll>> {
    registry()
        .adapters
        .get(&(adapter as usize))
        .map(|d| d.busy.clone())
}

/// The in-memory fabric behind an open adapter, if it is on one.
pub fn fabric_of(adapter: *mut NDK_ADAPTER) -> Option<Arc<FabricHub>> {
    registry()
        .adapters
        .get(&(adapter as usize))
        .and_then(|d| d.hub.clone())
}

/// Bits that differ between processes and between adapters of one
/// process: std's per-process random hash keys over the process id and
/// the wall clock.
fn process_entropy() -> u64 {
    use std::hash::BuildHasher;
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((std::process::id(), wall))
}

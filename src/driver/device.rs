//! One adapter's software RNIC and everything that serves it: the engine
//! DPC, the WSK transport and the provider's device context. Built in
//! `MiniportInitializeEx`, torn down in `MiniportHaltEx`, like the host's
//! `HostDevice` (`crates/host/src/adapters.rs`).

use alloc::boxed::Box;
use core::net::{Ipv4Addr, SocketAddrV4};

use hwq::TryArc;
use ndis::NDIS_HANDLE;
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};
use provider::device::DeviceContext;
use softrnic::device::{DeviceConfig, SoftRnic};
use softrnic::env::{Clock, Link, Wake};

use super::alloc::try_box;
use super::clock::KernelClock;
use super::counters::NdkCounters;
use super::dispatch_device::AtDispatch;
use super::dma::KernelDma;
use super::engine::{Engine, EngineWaker};
use super::udp::{ROCEV2_UDP_PORT, UdpTransport, WskLink};

/// A running software RNIC. Teardown order is [`RnicDevice::shutdown`]'s.
#[derive(Debug)]
pub struct RnicDevice {
    /// The provider's per-device state; NDK adapters open on it.
    pub ctx: TryArc<DeviceContext>,
    /// The device.
    pub rnic: TryArc<SoftRnic>,
    /// Its UDP socket.
    pub transport: TryArc<UdpTransport>,
    /// Connection counters the device wrapper keeps.
    pub counters: TryArc<NdkCounters>,
    engine: Box<Engine>,
}

fn boxed<T>(value: T) -> Result<Box<T>, NTSTATUS> {
    try_box(value).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)
}

impl RnicDevice {
    /// Builds the device of NDIS adapter `adapter` for `addr` with path
    /// MTU `pmtu` and starts its engine (`PASSIVE_LEVEL`). The socket is not open yet: see
    /// [`UdpTransport::open`].
    pub fn create(adapter: NDIS_HANDLE, addr: Ipv4Addr, pmtu: u32) -> Result<Self, NTSTATUS> {
        let engine = Engine::create(adapter)?;
        let transport = UdpTransport::create(SocketAddrV4::new(addr, ROCEV2_UDP_PORT))?;
        let dma: Box<dyn hwq::DmaAccess> =
            boxed(KernelDma::new().ok_or(STATUS_INSUFFICIENT_RESOURCES)?)?;
        let link: Box<dyn Link> = boxed(WskLink(transport.clone()))?;
        let clock: Box<dyn Clock> = boxed(KernelClock)?;
        let waker: Box<dyn Wake> = boxed(EngineWaker::new(&engine))?;
        let rnic = SoftRnic::new(DeviceConfig::new(addr, pmtu), dma, link, clock, waker)
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let rnic = TryArc::try_new_or_drop(rnic).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let counters = TryArc::try_new_or_drop(NdkCounters::default())
            .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        // The provider calls the device at its caller's IRQL; every call
        // runs at DISPATCH_LEVEL (see `AtDispatch`), which also counts.
        let device: Box<dyn hwq::Device> = boxed(AtDispatch::new(rnic.clone(), counters.clone()))?;
        transport.attach(&rnic);
        engine.start(&rnic);
        let ctx = match DeviceContext::new(device, super::platform()) {
            Ok(ctx) => ctx,
            Err(status) => {
                engine.stop();
                transport.close(super::platform_wait);
                return Err(status);
            }
        };
        Ok(Self {
            ctx,
            rnic,
            transport,
            counters,
            engine,
        })
    }

    /// Stops everything (`PASSIVE_LEVEL`, every NDK adapter on it closed):
    /// device events first, then the socket, then the engine; the memory
    /// goes when `self` drops (the RNIC before the engine its waker names).
    pub fn shutdown(self) {
        self.ctx.detach();
        self.transport.close(super::platform_wait);
        self.engine.stop();
        let Self {
            ctx,
            rnic,
            transport,
            counters,
            engine,
        } = self;
        drop(ctx);
        drop(rnic);
        drop(transport);
        drop(counters);
        drop(engine);
    }
}

//! One V's software RNIC and everything that serves it: the engine DPC,
//! the L2 port that takes what it sends and hands it what it receives as
//! RoCEv2 frames (on the binding to P; the device owns no link) and the
//! provider's device context. Built in
//! `MiniportInitializeEx`, torn down in `MiniportHaltEx`, like the host's
//! `HostDevice` (`crates/host/src/adapters.rs`).

use alloc::boxed::Box;
use core::net::Ipv4Addr;

use hwq::TryArc;
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};
use provider::device::DeviceContext;
use softrnic::device::{DeviceConfig, SoftRnic};
use softrnic::env::{Routes, Wake};

use super::clock;
use super::dma::KernelDma;
use super::engine::Engine;
use super::globals;
use super::kit::memory::try_box;
use super::kit::ndis::AdapterHandle;
use super::l2::L2Port;

/// `FRMRPageCount` of V's RNIC: SMB Direct registers each I/O buffer,
/// which need not start on a page, with one fast registration, and an
/// unaligned 1 MiB buffer spans 257 pages (smbdirect logs an event for
/// FRMR page counts it finds too small, at an unpublished threshold).
pub const FRMR_PAGES: u32 = 512;

/// A running software RNIC. Teardown order is [`RnicDevice::shutdown`]'s.
#[derive(Debug)]
pub struct RnicDevice {
    /// The provider's per-device state; NDK adapters open on it.
    pub ctx: TryArc<DeviceContext>,
    /// The device.
    pub rnic: TryArc<SoftRnic>,
    /// Its L2 port on the binding.
    pub port: TryArc<L2Port>,
    engine: Engine<L2Port>,
}

fn boxed<T>(value: T) -> Result<Box<T>, NTSTATUS> {
    try_box(value).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)
}

impl RnicDevice {
    /// Builds the device of V (NDIS adapter `adapter`) over `port`, with
    /// path MTU `pmtu`, and starts its engine (`PASSIVE_LEVEL`). It starts
    /// with no address: the address watcher gives it V's.
    pub fn create(
        adapter: AdapterHandle,
        port: &TryArc<L2Port>,
        pmtu: u32,
    ) -> Result<Self, NTSTATUS> {
        let engine = Engine::create(adapter)?;
        let dma: Box<dyn hwq::DmaAccess> =
            boxed(KernelDma::new().ok_or(STATUS_INSUFFICIENT_RESOURCES)?)?;
        let routes: Box<dyn Routes> = port.routes()?;
        let waker: Box<dyn Wake> = boxed(engine.waker())?;
        let mut config = DeviceConfig::new(Ipv4Addr::UNSPECIFIED, pmtu);
        config.max_fast_register_pages = FRMR_PAGES;
        let rnic = SoftRnic::new(config, dma, routes, clock::now_us(), waker)
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let rnic = TryArc::try_new_or_drop(rnic).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        // The provider raises to DISPATCH_LEVEL around commands (the hwq
        // contract's IRQL rule); the device counts connection outcomes in
        // its own statistics (`OID_NDK_STATISTICS` reads them).
        let device = hwq::SharedDevice::from_try_arc(rnic.clone());
        L2Port::attach(port, &rnic, &engine);
        engine.start(&rnic);
        let ctx = match DeviceContext::new(device, globals::platform()) {
            Ok(ctx) => ctx,
            Err(status) => {
                port.detach();
                engine.stop();
                return Err(status);
            }
        };
        Ok(Self {
            ctx,
            rnic,
            port: port.clone(),
            engine,
        })
    }

    /// Stops everything (`PASSIVE_LEVEL`, every NDK adapter on it closed):
    /// device events first, then the port's receive steering, then the
    /// engine; the memory goes when `self` drops (the RNIC before the
    /// engine its waker names). The port lives on while others hold it
    /// (its frames still at P).
    pub fn shutdown(self) {
        self.ctx.detach();
        self.port.detach();
        self.engine.stop();
        let Self {
            ctx,
            rnic,
            port,
            engine,
        } = self;
        drop(ctx);
        drop(rnic);
        drop(port);
        drop(engine);
    }
}

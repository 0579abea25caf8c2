//! The virtual miniport (V): what `MiniportInitializeEx` builds and reports
//! to NDIS (registration, general and NDK attributes), its NDK state, and
//! the work item that does what must not run inside an NDIS callback.
//!
//! V exists only over a binding: NDIS initialises it after the protocol
//! edge's `NdisIMInitializeDeviceInstanceEx`, with the pairing ([`Mux`]) in
//! `IMDeviceInstanceContext` (the MUX sample's `MPInitialize`). V takes P's
//! MAC address, MTU, link speeds and media state; it is the IP interface
//! of the link and the NDK provider. Its RNIC sends and receives through
//! the L2 port on the binding ([`super::l2`]) and learns V's IP addresses
//! from the IP stack ([`super::addresses`]).

pub mod event_log;

use alloc::boxed::Box;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use hwq::TryArc;
use ndis::{
    NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA, NDIS_MAC_OPTION_NO_LOOPBACK,
    NDIS_MAC_OPTION_TRANSFERS_NOT_PEND, NDIS_MAX_PHYS_ADDRESS_LENGTH,
    NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES, NDIS_MINIPORT_ATTRIBUTES_NO_HALT_ON_SUSPEND,
    NDIS_MINIPORT_INIT_PARAMETERS, NDIS_NDK_CAPABILITIES, NdisInterfaceInternal, NdisMedium802_3,
    NdisPauseFunctionsUnsupported, NetEventNDKDisable, NetEventNDKEnable,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS, NDK_ADAPTER_INFO};
use provider::PROVIDER_VERSION;
use provider::info::adapter_info;

use super::addresses::AddressWatcher;
use super::binding::Binding;
use super::config::{AdapterConfig, read_config};
use super::device::RnicDevice;
use super::kit::deferred::{Deferred, DeferredRoutines};
use super::kit::kernel::wait_briefly;
use super::kit::memory::try_box;
use super::kit::ndis::{self as kit_ndis, AdapterHandle};
use super::kit::oid::Forward;
use super::l2::L2Port;
use super::log::{log_error, log_info};
use super::mux::{INSTANCE_HALTING, INSTANCE_NONE, INSTANCE_UP, Mux, SUPPORTED_STATISTICS};
use super::supported_oids::SUPPORTED_OIDS;

/// `NDIS_MAC_OPTION_*` of V (general attributes and
/// `OID_GEN_MAC_OPTIONS`): NDIS loops sends back above V, V never does.
pub const MAC_OPTIONS: u32 = NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA
    | NDIS_MAC_OPTION_TRANSFERS_NOT_PEND
    | NDIS_MAC_OPTION_NO_LOOPBACK;

/// Counters rsndk does not keep (bits of `MissingCounterMask` in the NDK
/// capabilities): none. Every counter of `NDIS_NDK_PERFORMANCE_COUNTERS`
/// is filled by [`super::ndk::counters`]; the reserved ones are not
/// counters.
pub const MISSING_COUNTERS: u64 = 0;

/// Work-item task: tell NDIS NDK was enabled or disabled.
const TASK_NDK_EVENT: u32 = 2;
/// How often a wait for NDK consumers to close their adapters says it is
/// still waiting, in ms. It never gives up: the RNIC those adapters use is
/// freed only once the last one is closed.
const NDK_CLOSE_LOG_MS: u64 = 30_000;

/// V's NDK state as the work item that raises its PnP events sees it.
#[derive(Debug)]
pub struct NdkEvents {
    /// NDIS's handle of V.
    handle: AdapterHandle,
    /// NDK state set by `OID_NDK_SET_STATE` (starts as `*NetworkDirect`).
    enabled: AtomicBool,
}

impl DeferredRoutines for NdkEvents {
    const REQUEUE: bool = false;
    const USES_DPC: bool = false;

    fn dpc(_this: &Deferred<Self>) {}

    /// Runs the queued tasks (`PASSIVE_LEVEL`, work item).
    fn work(this: &Deferred<Self>, tasks: u32) {
        if tasks & TASK_NDK_EVENT != 0 {
            this.target().indicate();
        }
    }
}

impl NdkEvents {
    /// Raises `NetEventNDKEnable`/`NetEventNDKDisable` for the current
    /// state (`PASSIVE_LEVEL`, never inside an OID request).
    fn indicate(&self) {
        let event = if self.enabled.load(Ordering::Acquire) {
            NetEventNDKEnable
        } else {
            NetEventNDKDisable
        };
        if let Err(status) = kit_ndis::net_pnp_event(self.handle, event) {
            log_error!(
                "rsndk: NDK PnP event {event} failed: {:#010x}",
                status as u32
            );
        }
    }
}

/// The context NDIS passes to every handler of V.
#[derive(Debug)]
pub struct Adapter {
    /// NDIS's handle of V.
    pub handle: AdapterHandle,
    /// The pairing V lives over (it outlives V: the unbind waits for V's
    /// halt).
    mux: TryArc<Mux>,
    /// Registry keywords.
    pub config: AdapterConfig,
    /// The unbind disabled NDK for good: no NDK adapter opens any more.
    ndk_stopped: AtomicBool,
    /// NDK adapters open now.
    pub open_ndk_adapters: AtomicU32,
    /// The software RNIC.
    pub device: Option<RnicDevice>,
    /// The RNIC's L2 port (also reachable from the binding's data path
    /// while V is up).
    port: Option<TryArc<L2Port>>,
    /// V's addresses, fed to the RNIC.
    watcher: Option<AddressWatcher>,
    /// V's OID requests forwarded to P.
    pub forward: Box<Forward<Mux>>,
    /// V's `ifIndex` once the `ifStack` entry V over P was added.
    if_stack: Option<u32>,
    /// NDK state and the work item that does what must not run inside an
    /// NDIS callback (the NDK PnP events).
    ndk: Pin<Box<Deferred<NdkEvents>>>,
}

impl Adapter {
    /// The pairing V lives over.
    pub fn mux(&self) -> &Mux {
        &self.mux
    }

    /// The binding to P.
    pub fn binding(&self) -> &Binding {
        &self.mux().binding
    }

    /// `MiniportInitializeEx` (`PASSIVE_LEVEL`): V over the binding in
    /// `IMDeviceInstanceContext`. On success the box is the adapter context
    /// NDIS keeps until `MiniportHaltEx`, and V is reachable from the
    /// binding. Either way the pairing learns initialisation finished (an
    /// unbind may be waiting for it).
    pub fn initialize(
        handle: AdapterHandle,
        mux: &TryArc<Mux>,
        params: &NDIS_MINIPORT_INIT_PARAMETERS,
    ) -> Result<Box<Self>, NDIS_STATUS> {
        let result = Self::build(handle, params, mux.clone());
        let virt = &mux.virt;
        match &result {
            Ok(adapter) => {
                if let Some(port) = &adapter.port {
                    let binding = adapter.binding();
                    port.set_link(
                        binding.link.is_up(),
                        binding.mtu(),
                        binding.link.xmit_speed(),
                    );
                    virt.attach(handle, &**adapter, port);
                }
                virt.set_instance(INSTANCE_UP);
            }
            Err(_) => virt.set_instance(INSTANCE_NONE),
        }
        virt.init_done.store(true, Ordering::SeqCst);
        result
    }

    fn build(
        handle: AdapterHandle,
        params: &NDIS_MINIPORT_INIT_PARAMETERS,
        mux: TryArc<Mux>,
    ) -> Result<Box<Self>, NDIS_STATUS> {
        let config = read_config(handle);
        let ndk = Deferred::create(
            handle,
            NdkEvents {
                handle,
                enabled: AtomicBool::new(config.network_direct),
            },
        )
        .ok_or(NDIS_STATUS_RESOURCES)?;
        let Ok(forward) = try_box(Forward::new(handle, mux.clone())) else {
            return Err(NDIS_STATUS_RESOURCES);
        };
        // The lookahead P accepts for this V starts as P's own.
        mux.virt
            .lookahead
            .store(mux.binding.lower.lookahead, Ordering::Relaxed);
        let adapter = try_box(Self {
            handle,
            mux,
            config,
            ndk_stopped: AtomicBool::new(false),
            open_ndk_adapters: AtomicU32::new(0),
            device: None,
            port: None,
            watcher: None,
            forward,
            if_stack: None,
            ndk,
        });
        let Ok(mut adapter) = adapter else {
            return Err(NDIS_STATUS_RESOURCES);
        };
        if let Err(status) = adapter.start(params) {
            adapter.teardown();
            return Err(status);
        }
        Ok(adapter)
    }

    /// The RNIC with its L2 port, the attributes, the `ifStack` entry and
    /// the address watcher.
    fn start(&mut self, params: &NDIS_MINIPORT_INIT_PARAMETERS) -> Result<(), NDIS_STATUS> {
        let mux = self.mux.clone();
        let port = L2Port::create(&mux.binding).map_err(|_| NDIS_STATUS_RESOURCES)?;
        let port = self.port.insert(port);
        // The RNIC's path MTU is fixed at creation: the configured RoCE
        // frame size, capped by what P's MTU carries with RoCEv2's headers
        // (a larger one would have every full-size frame dropped as too
        // long for the link).
        let link_mtu = mux.binding.mtu();
        let link_pmtu = softrnic::l2::path_mtu_for(link_mtu).unwrap_or(256);
        let pmtu = self.config.pmtu.min(link_pmtu);
        if pmtu != self.config.pmtu {
            log_info!(
                "rsndk: RoCE frame size {} capped to {pmtu} by P's MTU {link_mtu}",
                self.config.pmtu
            );
            event_log::roce_frame_size_capped(self.config.pmtu, pmtu, link_mtu);
        }
        let device = RnicDevice::create(self.handle, port, pmtu)?;
        self.device = Some(device);
        self.set_all_attributes()?;
        let lower = mux.binding.lower.bound_if_index;
        if let Err(status) = kit_ndis::add_if_stack_entry(params.IfIndex, lower) {
            // The sample ignores this failure too: only the ifStack table
            // misses the entry.
            log_error!(
                "rsndk: NdisIfAddIfStackEntry failed: {:#010x}",
                status as u32
            );
        } else {
            self.if_stack = Some(params.IfIndex);
        }
        if let (Some(device), Some(port)) = (&self.device, &self.port) {
            // Without address notifications the RNIC would never serve an
            // address: V fails to initialise rather than come up so.
            let watcher =
                AddressWatcher::start(self.handle, params.NetLuid.Value, &device.rnic, port)
                    .inspect_err(|status| {
                        log_error!(
                            "rsndk: address notifications failed: {:#010x}",
                            *status as u32
                        );
                    })?;
            self.watcher = Some(watcher);
        }
        Ok(())
    }

    fn set_all_attributes(&mut self) -> Result<(), NDIS_STATUS> {
        let registration = NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES::new(
            core::ptr::from_ref(self).cast_mut().cast(),
            NDIS_MINIPORT_ATTRIBUTES_NO_HALT_ON_SUSPEND,
            0,
            NdisInterfaceInternal,
        );
        kit_ndis::set_attributes(self.handle, registration)?;

        let binding = self.binding();
        let lower = binding.lower;
        let link = binding.link.get();
        let mut mac = [0u8; NDIS_MAX_PHYS_ADDRESS_LENGTH];
        mac[..6].copy_from_slice(&lower.mac);
        let mut general = NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new();
        general.MediaType = NdisMedium802_3;
        general.PhysicalMediumType = lower.physical_medium;
        general.MtuSize = lower.mtu;
        general.MaxXmitLinkSpeed = lower.max_xmit_speed;
        general.XmitLinkSpeed = link.XmitLinkSpeed;
        general.MaxRcvLinkSpeed = lower.max_rcv_speed;
        general.RcvLinkSpeed = link.RcvLinkSpeed;
        general.MediaConnectState = link.MediaConnectState;
        general.MediaDuplexState = link.MediaDuplexState;
        general.LookaheadSize = lower.lookahead;
        general.MacOptions = MAC_OPTIONS;
        general.SupportedPacketFilters = lower.supported_filters;
        general.MaxMulticastListSize = lower.max_multicast;
        general.MacAddressLength = 6;
        general.PermanentMacAddress = mac;
        general.CurrentMacAddress = mac;
        general.AccessType = lower.access_type;
        general.DirectionType = lower.direction_type;
        general.ConnectionType = lower.connection_type;
        general.IfType = lower.if_type;
        // RFC 2665: TRUE only for a physical adapter.
        general.IfConnectorPresent = 0;
        // What OID_GEN_STATISTICS and the counter OIDs answer.
        general.SupportedStatistics = SUPPORTED_STATISTICS;
        general.SupportedPauseFunctions = NdisPauseFunctionsUnsupported as u32;
        general.SupportedOidList = SUPPORTED_OIDS.as_ptr().cast_mut();
        general.SupportedOidListLength = size_of_val(SUPPORTED_OIDS) as u32;
        kit_ndis::set_attributes(self.handle, general)?;

        // NDK attributes go in every initialisation, NDK enabled or not.
        if let Some(device) = &self.device {
            let mut info: NDK_ADAPTER_INFO = adapter_info(PROVIDER_VERSION, device.ctx.caps());
            let mut caps = capabilities(device, &raw mut info);
            let ndk = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES::new(
                self.ndk.target().enabled.load(Ordering::Acquire),
                &raw mut caps,
            );
            kit_ndis::set_attributes(self.handle, ndk)?;
        }
        Ok(())
    }

    /// Whether an NDK adapter may be opened now: V is up with its RNIC,
    /// `*NetworkDirect` allows NDK and it is enabled. The RNIC's addresses
    /// arrive later from the IP stack; an address V does not have is
    /// refused by the RNIC.
    pub fn ndk_ready(&self) -> bool {
        self.config.network_direct
            && self.ndk.target().enabled.load(Ordering::Acquire)
            && !self.ndk_stopped.load(Ordering::Acquire)
            && self.device.is_some()
    }

    /// Records `OID_NDK_SET_STATE` and schedules the matching PnP event
    /// (which must not be raised from inside the OID request).
    ///
    /// NDK is enabled only when the request says TRUE *and* `*NetworkDirect`
    /// is nonzero (OID_NDK_SET_STATE: "If the BOOLEAN value is TRUE and the
    /// *NetworkDirect keyword value is nonzero, the miniport adapter's NDK
    /// functionality must be enabled"; with the keyword 0 "NDK
    /// functionality cannot be enabled"). A TRUE request while the keyword
    /// is 0 therefore succeeds (the OID must not fail unless an error
    /// occurs) and leaves NDK disabled: no `NetEventNDKEnable`, opens keep
    /// answering `NDIS_STATUS_ADAPTER_NOT_READY`.
    pub fn set_ndk_state(&self, requested: bool) {
        // Once the unbind disabled NDK, it stays disabled.
        let enabled =
            requested && self.config.network_direct && !self.ndk_stopped.load(Ordering::Acquire);
        if requested && !enabled {
            log_info!("rsndk: NDK enable requested, but *NetworkDirect is 0: NDK stays disabled");
        }
        let was = self.ndk.target().enabled.swap(enabled, Ordering::AcqRel);
        if was != enabled {
            log_info!(
                "rsndk: NDK {}",
                if enabled { "enabled" } else { "disabled" }
            );
            self.ndk.queue_work(TASK_NDK_EVENT);
        }
    }

    /// The unbind's first step (`PASSIVE_LEVEL`, outside any OID request
    /// of V's): NDK is disabled for good, consumers are told
    /// (`NetEventNDKDisable`, which has NDIS and the drivers above close
    /// their NDK adapters), and every NDK adapter is waited for, however
    /// long its consumer takes: V's halt frees the RNIC they use.
    pub fn disable_ndk_and_wait(&self) {
        self.ndk_stopped.store(true, Ordering::SeqCst);
        // A queued NDK event would race ours: let it run first.
        self.ndk.wait_work();
        if self.ndk.target().enabled.swap(false, Ordering::AcqRel) {
            log_info!("rsndk: NDK disabled for the unbind");
            self.ndk.target().indicate();
        }
        self.wait_ndk_closed("unbind");
    }

    /// Waits (`PASSIVE_LEVEL`) until no NDK adapter is open, saying every
    /// [`NDK_CLOSE_LOG_MS`] that it still waits. NDIS documents that
    /// `NetEventNDKDisable` stays pending until every NDK adapter is
    /// closed; this wait does not rely on it, and never gives up, since
    /// going on would free the RNIC under adapters still in use.
    fn wait_ndk_closed(&self, during: &str) {
        let mut since = super::clock::now_ns();
        loop {
            let open = self.open_ndk_adapters.load(Ordering::Acquire);
            if open == 0 {
                return;
            }
            let now = super::clock::now_ns();
            if now.saturating_sub(since) > NDK_CLOSE_LOG_MS * 1_000_000 {
                log_error!("rsndk: {during} still waits for {open} NDK adapter(s) to close");
                since = now;
            }
            wait_briefly();
        }
    }

    /// `MiniportHaltEx` (`PASSIVE_LEVEL`; V is paused): the sample's
    /// `MPHalt`. Nothing reaches V from the binding any more, P is asked
    /// to receive nothing, V's NBLs and the RNIC's frames are waited out,
    /// the RNIC stops and everything is freed; the pairing learns V is gone
    /// last (the unbind may free it right after).
    pub fn halt(&mut self) {
        let virt = &self.mux().virt;
        virt.set_instance(INSTANCE_HALTING);
        virt.detach();
        if virt.packet_filter.swap(0, Ordering::SeqCst) != 0 {
            let binding = self.binding();
            binding.packet_filter.store(0, Ordering::SeqCst);
            let mut filter = 0u32.to_ne_bytes();
            let status = binding.request_sync(
                ndis::NdisRequestSetInformation,
                ndis::OID_GEN_CURRENT_PACKET_FILTER,
                &mut filter,
            );
            if status != NDIS_STATUS_SUCCESS {
                log_error!(
                    "rsndk: clearing P's packet filter failed: {:#010x}",
                    status as u32
                );
            }
        }
        while virt.gate.outstanding() != 0 {
            wait_briefly();
        }
        self.teardown();
        let virt = &self.mux().virt;
        virt.forget_miniport();
        virt.set_instance(INSTANCE_NONE);
    }

    fn teardown(&mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.stop();
        }
        self.ndk.wait_work();
        // NDIS has the consumers close before a halt, and the unbind
        // waited for them; a halt that still finds one open waits too
        // rather than free the RNIC under it.
        self.wait_ndk_closed("halt");
        if let Some(device) = self.device.take() {
            // Afterwards the RNIC transmits nothing more.
            device.shutdown();
        }
        if let Some(port) = self.port.take() {
            // Its frames still at P come back through the binding, which
            // reaches the port until it is detached.
            self.binding().wait_own_sends();
            self.mux().virt.detach_port();
            port.shutdown();
            drop(port);
        }
        if let Some(if_index) = self.if_stack.take() {
            let lower = self.binding().lower.bound_if_index;
            // The entry added in `start`.
            kit_ndis::delete_if_stack_entry(if_index, lower);
        }
    }
}

/// The adapter-wide NDK limits of a device.
fn capabilities(device: &RnicDevice, info: *mut NDK_ADAPTER_INFO) -> NDIS_NDK_CAPABILITIES {
    let config = device.rnic.config();
    let mut caps = NDIS_NDK_CAPABILITIES::new(info);
    caps.MaxQpCount = config.max_qps;
    caps.MaxCqCount = config.max_cqs;
    caps.MaxMrCount = config.max_keys;
    caps.MaxPdCount = config.max_pds;
    caps.MaxMwCount = config.max_keys;
    caps.MaxSrqCount = config.max_srqs;
    // No adapter-wide read limits beyond the per-QP ones.
    caps.MaxInboundReadLimit = 0;
    caps.MaxOutboundReadLimit = 0;
    caps.MissingCounterMask = MISSING_COUNTERS;
    caps
}

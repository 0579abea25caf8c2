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
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use hwq::TryArc;
use ndis::{
    NDIS_HANDLE, NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA, NDIS_MAC_OPTION_NO_LOOPBACK,
    NDIS_MAC_OPTION_TRANSFERS_NOT_PEND, NDIS_MAX_PHYS_ADDRESS_LENGTH,
    NDIS_MINIPORT_ADAPTER_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES,
    NDIS_MINIPORT_ATTRIBUTES_NO_HALT_ON_SUSPEND, NDIS_MINIPORT_INIT_PARAMETERS,
    NDIS_NDK_CAPABILITIES, NET_PNP_EVENT_NOTIFICATION, NdisAllocateIoWorkItem, NdisFreeIoWorkItem,
    NdisIfAddIfStackEntry, NdisIfDeleteIfStackEntry, NdisInterfaceInternal, NdisMNetPnPEvent,
    NdisMSetMiniportAttributes, NdisMedium802_3, NdisPauseFunctionsUnsupported,
    NdisQueueIoWorkItem, NetEventNDKDisable, NetEventNDKEnable,
};
use ndkpi::{
    NDIS_STATUS, NDIS_STATUS_FAILURE, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS, NDK_ADAPTER_INFO,
    PVOID,
};
use provider::PROVIDER_VERSION;
use provider::info::adapter_info;

use super::addresses::AddressWatcher;
use super::alloc::try_box;
use super::binding::Binding;
use super::config::{AdapterConfig, read_config};
use super::device::RnicDevice;
use super::l2::L2Port;
use super::log::{log_error, log_info};
use super::mux::{INSTANCE_HALTING, INSTANCE_NONE, INSTANCE_UP, Mux, SUPPORTED_STATISTICS};
use super::oid::SUPPORTED_OIDS;
use super::protocol::oid_forward::ForwardSlot;

/// `NDIS_MAC_OPTION_*` of V (general attributes and
/// `OID_GEN_MAC_OPTIONS`): NDIS loops sends back above V, V never does.
pub const MAC_OPTIONS: u32 = NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA
    | NDIS_MAC_OPTION_TRANSFERS_NOT_PEND
    | NDIS_MAC_OPTION_NO_LOOPBACK;

/// Work-item task: tell NDIS NDK was enabled or disabled.
const TASK_NDK_EVENT: u32 = 2;
/// `work_state` bit: the work item is queued or running.
const WORK_QUEUED: u32 = 1 << 31;
/// How often a wait for NDK consumers to close their adapters says it is
/// still waiting, in ms. It never gives up: the RNIC those adapters use is
/// freed only once the last one is closed.
const NDK_CLOSE_LOG_MS: u64 = 30_000;

/// The context NDIS passes to every handler of V.
pub struct Adapter {
    /// NDIS's handle of V.
    pub handle: NDIS_HANDLE,
    /// The pairing V lives over.
    mux: NonNull<Mux>,
    /// Registry keywords.
    pub config: AdapterConfig,
    /// NDK state set by `OID_NDK_SET_STATE` (starts as `*NetworkDirect`).
    pub ndk_enabled: AtomicBool,
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
    watcher: Option<Box<AddressWatcher>>,
    /// V's OID requests forwarded to P.
    pub forward: Box<ForwardSlot>,
    /// V's `ifIndex` once the `ifStack` entry V over P was added.
    if_stack: Option<u32>,
    work_item: NDIS_HANDLE,
    /// Pending `TASK_*` bits, plus [`WORK_QUEUED`] while the work item is
    /// queued or running. One word, so that the routine can finish and
    /// drop the flag in the same atomic step (see `run_work`).
    work_state: AtomicU32,
}

impl core::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Adapter")
            .field("config", &self.config)
            .field("ndk_enabled", &self.ndk_enabled.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// SAFETY: the NDIS handles are opaque tokens NDIS allows on any thread;
// the pairing is Sync and outlives V (the unbind waits for V's halt);
// everything mutable is atomic or changed only at PASSIVE_LEVEL by
// initialisation and halt, when NDIS runs no other handler of V.
unsafe impl Send for Adapter {}
// SAFETY: shared use reads immutable fields, atomics and the Sync pairing;
// `&mut` use (initialisation, halt) happens while NDIS calls nothing else
// of V's.
unsafe impl Sync for Adapter {}

fn set_attributes(
    handle: NDIS_HANDLE,
    attributes: impl Into<NDIS_MINIPORT_ADAPTER_ATTRIBUTES>,
) -> NDIS_STATUS {
    let mut attributes = attributes.into();
    // SAFETY: PASSIVE_LEVEL inside MiniportInitializeEx; NDIS reads
    // `Header.Size` bytes of the structure during the call.
    unsafe { NdisMSetMiniportAttributes(handle, &raw mut attributes) }
}

impl Adapter {
    /// The adapter behind V's context.
    ///
    /// # Safety
    /// `context` is the context `initialize` registered, V not halted yet.
    pub unsafe fn from_context<'a>(context: NDIS_HANDLE) -> &'a Self {
        // SAFETY: per contract, a live `Box<Adapter>`'s address.
        unsafe { &*context.cast::<Self>() }
    }

    /// The pairing V lives over.
    pub fn mux(&self) -> &Mux {
        // SAFETY: the pairing outlives V: the unbind frees it only after
        // V's halt ended (`protocol::bind::stop_virtual`).
        unsafe { self.mux.as_ref() }
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
        handle: NDIS_HANDLE,
        params: &NDIS_MINIPORT_INIT_PARAMETERS,
    ) -> Result<Box<Self>, NDIS_STATUS> {
        let Some(mux) = NonNull::new(params.IMDeviceInstanceContext.cast::<Mux>()) else {
            // V is only ever initialised by the protocol edge.
            log_error!("rsndk: MiniportInitializeEx without an IM device instance context");
            return Err(NDIS_STATUS_FAILURE);
        };
        // SAFETY: the context `NdisIMInitializeDeviceInstanceEx` was given:
        // a pairing that outlives V.
        let virt = &unsafe { mux.as_ref() }.virt;
        let result = Self::build(handle, params, mux);
        match &result {
            Ok(adapter) => {
                if let Some(port) = &adapter.port {
                    let binding = adapter.binding();
                    port.set_link(
                        binding.link.is_up(),
                        binding.mtu(),
                        binding.link.xmit_speed(),
                    );
                    virt.attach(handle, adapter.context(), port);
                }
                virt.set_instance(INSTANCE_UP);
            }
            Err(_) => virt.set_instance(INSTANCE_NONE),
        }
        virt.init_done.store(true, Ordering::SeqCst);
        result
    }

    fn build(
        handle: NDIS_HANDLE,
        params: &NDIS_MINIPORT_INIT_PARAMETERS,
        mux: NonNull<Mux>,
    ) -> Result<Box<Self>, NDIS_STATUS> {
        // SAFETY: the IMDeviceInstanceContext `initialize` checked: a
        // pairing the protocol edge leaked, freed only after V's halt, so
        // it outlives V and everything built here.
        let mux_ref: &'static Mux = unsafe { mux.as_ref() };
        let config = read_config(handle);
        // SAFETY: PASSIVE_LEVEL; the adapter handle is valid.
        let work_item = unsafe { NdisAllocateIoWorkItem(handle) };
        if work_item.is_null() {
            return Err(NDIS_STATUS_RESOURCES);
        }
        let Ok(forward) = try_box(ForwardSlot::new(mux_ref, handle)) else {
            Self::free_work_item(work_item);
            return Err(NDIS_STATUS_RESOURCES);
        };
        let adapter = try_box(Self {
            handle,
            mux,
            config,
            ndk_enabled: AtomicBool::new(config.network_direct),
            ndk_stopped: AtomicBool::new(false),
            open_ndk_adapters: AtomicU32::new(0),
            device: None,
            port: None,
            watcher: None,
            forward,
            if_stack: None,
            work_item,
            work_state: AtomicU32::new(0),
        });
        let Ok(mut adapter) = adapter else {
            Self::free_work_item(work_item);
            return Err(NDIS_STATUS_RESOURCES);
        };
        if let Err(status) = adapter.start(mux_ref, params) {
            adapter.teardown();
            return Err(status);
        }
        Ok(adapter)
    }

    /// The RNIC with its L2 port, the attributes, the `ifStack` entry and
    /// the address watcher.
    fn start(
        &mut self,
        mux: &'static Mux,
        params: &NDIS_MINIPORT_INIT_PARAMETERS,
    ) -> Result<(), NDIS_STATUS> {
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
        // SAFETY: PASSIVE_LEVEL; V's and P's interface indexes.
        let status = unsafe { NdisIfAddIfStackEntry(params.IfIndex, lower) };
        if status == NDIS_STATUS_SUCCESS {
            self.if_stack = Some(params.IfIndex);
        } else {
            // The sample ignores this failure too: only the ifStack table
            // misses the entry.
            log_error!(
                "rsndk: NdisIfAddIfStackEntry failed: {:#010x}",
                status as u32
            );
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

    fn context(&self) -> NDIS_HANDLE {
        ptr::from_ref(self).cast_mut().cast()
    }

    fn set_all_attributes(&mut self) -> Result<(), NDIS_STATUS> {
        let registration = NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES::new(
            self.context(),
            NDIS_MINIPORT_ATTRIBUTES_NO_HALT_ON_SUSPEND,
            0,
            NdisInterfaceInternal,
        );
        check(set_attributes(self.handle, registration))?;

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
        check(set_attributes(self.handle, general))?;

        // NDK attributes go in every initialisation, NDK enabled or not.
        if let Some(device) = &self.device {
            let mut info: NDK_ADAPTER_INFO = adapter_info(PROVIDER_VERSION, device.ctx.caps());
            let mut caps = capabilities(device, &raw mut info);
            let ndk = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES::new(
                self.ndk_enabled.load(Ordering::Acquire),
                &raw mut caps,
            );
            check(set_attributes(self.handle, ndk))?;
        }
        Ok(())
    }

    /// Whether an NDK adapter may be opened now: V is up with its RNIC,
    /// `*NetworkDirect` allows NDK and it is enabled. The RNIC's addresses
    /// arrive later from the IP stack; an address V does not have is
    /// refused by the RNIC.
    pub fn ndk_ready(&self) -> bool {
        self.config.network_direct
            && self.ndk_enabled.load(Ordering::Acquire)
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
        let was = self.ndk_enabled.swap(enabled, Ordering::AcqRel);
        if was != enabled {
            log_info!(
                "rsndk: NDK {}",
                if enabled { "enabled" } else { "disabled" }
            );
            self.queue_work(TASK_NDK_EVENT);
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
        self.wait_work();
        if self.ndk_enabled.swap(false, Ordering::AcqRel) {
            log_info!("rsndk: NDK disabled for the unbind");
            self.indicate_ndk_state();
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
            super::platform_wait();
        }
    }

    /// Queues the adapter's work item for `task` (`<= DISPATCH_LEVEL`);
    /// the item is queued at most once at a time.
    fn queue_work(&self, task: u32) {
        let old = self
            .work_state
            .fetch_or(task | WORK_QUEUED, Ordering::AcqRel);
        if old & WORK_QUEUED != 0 {
            // Queued or running: the routine sees the new bit before it
            // can drop the flag.
            return;
        }
        let context = ptr::from_ref(self).cast_mut().cast();
        // SAFETY: an allocated work item of a live adapter, not queued now
        // (the flag was clear); the adapter outlives it (halt waits for the
        // flag to clear).
        unsafe { NdisQueueIoWorkItem(self.work_item, work, context) };
    }

    /// Runs the queued tasks (`PASSIVE_LEVEL`, work item).
    fn run_work(&self) {
        loop {
            let state = self.work_state.load(Ordering::Acquire);
            let tasks = state & !WORK_QUEUED;
            if tasks == 0 {
                // Nothing left: drop the flag, and touch nothing after it
                // (halt may free the adapter as soon as it sees it clear).
                if self
                    .work_state
                    .compare_exchange(state, 0, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            if self
                .work_state
                .compare_exchange(state, WORK_QUEUED, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            if tasks & TASK_NDK_EVENT != 0 {
                self.indicate_ndk_state();
            }
        }
    }

    fn wait_work(&self) {
        while self.work_state.load(Ordering::Acquire) & WORK_QUEUED != 0 {
            super::platform_wait();
        }
    }

    /// Raises `NetEventNDKEnable`/`NetEventNDKDisable` for the current
    /// state (`PASSIVE_LEVEL`, never inside an OID request).
    fn indicate_ndk_state(&self) {
        let event = if self.ndk_enabled.load(Ordering::Acquire) {
            NetEventNDKEnable
        } else {
            NetEventNDKDisable
        };
        let mut notification = NET_PNP_EVENT_NOTIFICATION::new(event);
        // SAFETY: PASSIVE_LEVEL, outside any OID request.
        let status = unsafe { NdisMNetPnPEvent(self.handle, &raw mut notification) };
        if status != NDIS_STATUS_SUCCESS {
            log_error!(
                "rsndk: NDK PnP event {event} failed: {:#010x}",
                status as u32
            );
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
            let mut filter: u32 = 0;
            let status = binding.request_sync(
                ndis::NdisRequestSetInformation,
                ndis::OID_GEN_CURRENT_PACKET_FILTER,
                (&raw mut filter).cast(),
                4,
            );
            if status != NDIS_STATUS_SUCCESS {
                log_error!(
                    "rsndk: clearing P's packet filter failed: {:#010x}",
                    status as u32
                );
            }
        }
        while virt.gate.outstanding() != 0 {
            super::platform_wait();
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
        self.wait_work();
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
            // SAFETY: PASSIVE_LEVEL; the entry added in `build`.
            unsafe { NdisIfDeleteIfStackEntry(if_index, lower) };
        }
        Self::free_work_item(self.work_item);
        self.work_item = ptr::null_mut();
    }

    fn free_work_item(work_item: NDIS_HANDLE) {
        if !work_item.is_null() {
            // SAFETY: allocated by NdisAllocateIoWorkItem and not queued
            // (the caller waited for the routine or never queued it).
            unsafe { NdisFreeIoWorkItem(work_item) };
        }
    }
}

fn check(status: NDIS_STATUS) -> Result<(), NDIS_STATUS> {
    if status == NDIS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(status)
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
    caps.MissingCounterMask = super::ndk::MISSING_COUNTERS;
    caps
}

/// The work-item routine (`PASSIVE_LEVEL`).
unsafe extern "win64" fn work(context: PVOID, _item: NDIS_HANDLE) {
    // SAFETY: the adapter queued itself and halt waits for this routine.
    let adapter = unsafe { &*context.cast::<Adapter>() };
    adapter.run_work();
}

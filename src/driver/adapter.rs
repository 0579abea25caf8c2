//! The miniport adapter: what `MiniportInitializeEx` builds and reports to
//! NDIS (registration, general and NDK attributes), its state, and the
//! work item that does what must not run inside an NDIS callback.
//!
//! The adapter is a virtual Ethernet NIC whose only purpose is to carry an
//! IP interface for NDK: RoCEv2 traffic goes through the software RNIC's
//! WSK socket, not through this adapter's Ethernet data path, which
//! completes every send without transmitting it and never indicates a
//! receive (docs/windows.md, "Addresses", explains the routing this needs).

use alloc::boxed::Box;
use core::net::Ipv4Addr;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use ndis::{
    IF_TYPE_ETHERNET_CSMACD, MediaConnectStateConnected, MediaDuplexStateFull, NDIS_HANDLE,
    NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA, NDIS_MAC_OPTION_NO_LOOPBACK,
    NDIS_MAC_OPTION_TRANSFERS_NOT_PEND, NDIS_MAX_PHYS_ADDRESS_LENGTH,
    NDIS_MINIPORT_ADAPTER_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES,
    NDIS_MINIPORT_ATTRIBUTES_SURPRISE_REMOVE_OK, NDIS_MINIPORT_INIT_PARAMETERS,
    NDIS_NDK_CAPABILITIES, NDIS_PACKET_TYPE_ALL_MULTICAST, NDIS_PACKET_TYPE_BROADCAST,
    NDIS_PACKET_TYPE_DIRECTED, NDIS_PACKET_TYPE_MULTICAST, NDIS_PACKET_TYPE_PROMISCUOUS,
    NDIS_STATISTICS_BYTES_RCV_SUPPORTED, NDIS_STATISTICS_BYTES_XMIT_SUPPORTED,
    NDIS_STATISTICS_GEN_STATISTICS_SUPPORTED, NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED,
    NDIS_STATISTICS_RCV_ERROR_SUPPORTED, NDIS_STATISTICS_RCV_OK_SUPPORTED,
    NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED, NDIS_STATISTICS_XMIT_ERROR_SUPPORTED,
    NDIS_STATISTICS_XMIT_OK_SUPPORTED, NET_IF_ACCESS_BROADCAST, NET_IF_CONNECTION_DEDICATED,
    NET_IF_DIRECTION_SENDRECEIVE, NET_PNP_EVENT_NOTIFICATION, NdisAllocateIoWorkItem,
    NdisFreeIoWorkItem, NdisInterfaceInternal, NdisMNetPnPEvent, NdisMSetMiniportAttributes,
    NdisMedium802_3, NdisPauseFunctionsUnsupported, NdisPhysicalMedium802_3, NdisQueueIoWorkItem,
    NetEventNDKDisable, NetEventNDKEnable,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS, NDK_ADAPTER_INFO, PVOID};
use provider::PROVIDER_VERSION;
use provider::info::adapter_info;

use super::alloc::try_box;
use super::config::{AdapterConfig, read_config};
use super::device::RnicDevice;
use super::log::{log_error, log_info};
use super::oid::SUPPORTED_OIDS;
use super::udp::report_open_failure;

/// Ethernet MTU the IP interface sees.
pub const MTU: u32 = 1500;
/// Link speed reported (the software RNIC has no line rate; 10 Gbit/s is
/// what SMB's interface selection considers RDMA-worthy).
pub const LINK_SPEED: u64 = 10_000_000_000;
/// Receive filters accepted (nothing is received, so all are).
pub const PACKET_FILTERS: u32 = NDIS_PACKET_TYPE_DIRECTED
    | NDIS_PACKET_TYPE_MULTICAST
    | NDIS_PACKET_TYPE_ALL_MULTICAST
    | NDIS_PACKET_TYPE_BROADCAST
    | NDIS_PACKET_TYPE_PROMISCUOUS;
/// `NDIS_MAC_OPTION_*` of the adapter (general attributes and
/// `OID_GEN_MAC_OPTIONS`).
pub const MAC_OPTIONS: u32 = NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA
    | NDIS_MAC_OPTION_TRANSFERS_NOT_PEND
    | NDIS_MAC_OPTION_NO_LOOPBACK;
/// Longest multicast list.
pub const MULTICAST_LIST_SIZE: u32 = 32;

/// Work-item task: open the RoCEv2 socket (waits for WSK).
const TASK_OPEN_SOCKET: u32 = 1;
/// Work-item task: tell NDIS NDK was enabled or disabled.
const TASK_NDK_EVENT: u32 = 2;
/// `work_state` bit: the work item is queued or running.
const WORK_QUEUED: u32 = 1 << 31;

/// The context NDIS passes to every adapter handler.
#[derive(Debug)]
pub struct Adapter {
    /// NDIS's handle of this adapter.
    pub handle: NDIS_HANDLE,
    /// Registry keywords.
    pub config: AdapterConfig,
    /// Locally administered MAC address.
    pub mac: [u8; 6],
    /// Paused by `MiniportPause` (sends complete with `NDIS_STATUS_PAUSED`).
    pub paused: AtomicBool,
    /// NDK state set by `OID_NDK_SET_STATE` (starts as `*NetworkDirect`).
    pub ndk_enabled: AtomicBool,
    /// The RoCEv2 socket is open, so NDK adapters can be opened.
    pub socket_open: AtomicBool,
    /// NDK adapters open now.
    pub open_ndk_adapters: AtomicU32,
    /// Current packet filter and lookahead (stored, not used).
    pub packet_filter: AtomicU32,
    /// Current lookahead.
    pub lookahead: AtomicU32,
    /// Send lists completed without being transmitted (`ifOutDiscards`).
    pub send_discards: AtomicU64,
    /// The software RNIC.
    pub device: Option<RnicDevice>,
    work_item: NDIS_HANDLE,
    /// Pending `TASK_*` bits, plus [`WORK_QUEUED`] while the work item is
    /// queued or running. One word, so that the routine can finish and
    /// drop the flag in the same atomic step (see `run_work`).
    work_state: AtomicU32,
}

// SAFETY: the NDIS handles are opaque tokens NDIS allows on any thread;
// everything mutable is atomic or immutable after initialisation.
unsafe impl Send for Adapter {}
// SAFETY: as above.
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
    /// `MiniportInitializeEx` (`PASSIVE_LEVEL`): builds the adapter and
    /// its device and sets the attributes. On success the box is the
    /// adapter context NDIS keeps until `MiniportHaltEx`.
    pub fn initialize(
        handle: NDIS_HANDLE,
        params: &NDIS_MINIPORT_INIT_PARAMETERS,
    ) -> Result<Box<Self>, NDIS_STATUS> {
        let config = read_config(handle);
        let addr = config.ipv4.unwrap_or(Ipv4Addr::UNSPECIFIED);
        let device = RnicDevice::create(handle, addr, config.pmtu)?;
        // SAFETY: PASSIVE_LEVEL; the adapter handle is valid.
        let work_item = unsafe { NdisAllocateIoWorkItem(handle) };
        let adapter = try_box(Self {
            handle,
            config,
            mac: crate::portable::mac_for_interface(params.IfIndex),
            // NDIS 6: an adapter starts Paused; MiniportRestart runs it.
            paused: AtomicBool::new(true),
            ndk_enabled: AtomicBool::new(config.network_direct),
            socket_open: AtomicBool::new(false),
            open_ndk_adapters: AtomicU32::new(0),
            packet_filter: AtomicU32::new(0),
            lookahead: AtomicU32::new(MTU),
            send_discards: AtomicU64::new(0),
            device: Some(device),
            work_item,
            work_state: AtomicU32::new(0),
        });
        let mut adapter = match adapter {
            Ok(a) if !work_item.is_null() => a,
            Ok(mut a) => {
                a.teardown();
                return Err(NDIS_STATUS_RESOURCES);
            }
            Err(mut a) => {
                a.teardown();
                return Err(NDIS_STATUS_RESOURCES);
            }
        };
        if let Err(status) = adapter.set_all_attributes() {
            adapter.teardown();
            return Err(status);
        }
        if config.ipv4.is_some() {
            adapter.queue_work(TASK_OPEN_SOCKET);
        } else {
            log_error!(
                "rsndk: no RsNdkIPv4Address keyword; NDK stays unavailable (docs/windows.md)"
            );
        }
        Ok(adapter)
    }

    fn set_all_attributes(&mut self) -> Result<(), NDIS_STATUS> {
        let context = ptr::from_mut(self).cast::<core::ffi::c_void>();
        let registration = NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES::new(
            context,
            NDIS_MINIPORT_ATTRIBUTES_SURPRISE_REMOVE_OK,
            0,
            NdisInterfaceInternal,
        );
        check(set_attributes(self.handle, registration))?;

        let mut mac = [0u8; NDIS_MAX_PHYS_ADDRESS_LENGTH];
        mac[..6].copy_from_slice(&self.mac);
        let mut general = NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new();
        general.MediaType = NdisMedium802_3;
        general.PhysicalMediumType = NdisPhysicalMedium802_3;
        general.MtuSize = MTU;
        general.MaxXmitLinkSpeed = LINK_SPEED;
        general.XmitLinkSpeed = LINK_SPEED;
        general.MaxRcvLinkSpeed = LINK_SPEED;
        general.RcvLinkSpeed = LINK_SPEED;
        general.MediaConnectState = MediaConnectStateConnected;
        general.MediaDuplexState = MediaDuplexStateFull;
        general.LookaheadSize = MTU;
        general.MacOptions = MAC_OPTIONS;
        general.SupportedPacketFilters = PACKET_FILTERS;
        general.MaxMulticastListSize = MULTICAST_LIST_SIZE;
        general.MacAddressLength = 6;
        general.PermanentMacAddress = mac;
        general.CurrentMacAddress = mac;
        general.AccessType = NET_IF_ACCESS_BROADCAST;
        general.DirectionType = NET_IF_DIRECTION_SENDRECEIVE;
        general.ConnectionType = NET_IF_CONNECTION_DEDICATED;
        general.IfType = IF_TYPE_ETHERNET_CSMACD;
        general.IfConnectorPresent = 0;
        // OID_GEN_STATISTICS answers every counter (see `oid`).
        general.SupportedStatistics = NDIS_STATISTICS_GEN_STATISTICS_SUPPORTED
            | NDIS_STATISTICS_XMIT_OK_SUPPORTED
            | NDIS_STATISTICS_RCV_OK_SUPPORTED
            | NDIS_STATISTICS_XMIT_ERROR_SUPPORTED
            | NDIS_STATISTICS_RCV_ERROR_SUPPORTED
            | NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED
            | NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED
            | NDIS_STATISTICS_BYTES_XMIT_SUPPORTED
            | NDIS_STATISTICS_BYTES_RCV_SUPPORTED;
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

    /// Whether an NDK adapter may be opened now.
    pub fn ndk_ready(&self) -> bool {
        self.config.network_direct
            && self.ndk_enabled.load(Ordering::Acquire)
            && self.socket_open.load(Ordering::Acquire)
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
        let enabled = requested && self.config.network_direct;
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
            if tasks & TASK_OPEN_SOCKET != 0 {
                self.open_socket();
            }
            if tasks & TASK_NDK_EVENT != 0 {
                self.indicate_ndk_state();
            }
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

    fn open_socket(&self) {
        let Some(device) = &self.device else { return };
        match device.transport.open() {
            Ok(()) => {
                self.socket_open.store(true, Ordering::Release);
                log_info!("rsndk: RoCEv2 socket open on {}", device.transport.local());
                // Consumers that looked while the socket was not open were
                // refused; tell NDIS the provider is usable now.
                if self.ndk_enabled.load(Ordering::Acquire) {
                    self.indicate_ndk_state();
                }
            }
            Err(status) => report_open_failure(device.transport.local(), status),
        }
    }

    /// `MiniportHaltEx` (`PASSIVE_LEVEL`): waits for the work item, stops
    /// the device and frees everything.
    pub fn halt(&mut self) {
        self.teardown();
    }

    fn teardown(&mut self) {
        if let Some(device) = &self.device {
            device.transport.abandon_open();
        }
        while self.work_state.load(Ordering::Acquire) & WORK_QUEUED != 0 {
            super::platform_wait();
        }
        self.socket_open.store(false, Ordering::Release);
        let open = self.open_ndk_adapters.load(Ordering::Acquire);
        if open != 0 {
            log_error!("rsndk: halting with {open} NDK adapter(s) still open");
        }
        if let Some(device) = self.device.take() {
            device.shutdown();
        }
        if !self.work_item.is_null() {
            // SAFETY: allocated in `initialize`, not queued (waited above).
            unsafe { NdisFreeIoWorkItem(self.work_item) };
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

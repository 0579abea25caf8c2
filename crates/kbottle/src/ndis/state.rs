//! What NDIS knows about the loaded miniport: its registration, its
//! adapters, its work items and open configuration handles. One table per
//! process (kernel state is process-global), behind one lock that is never
//! held while driver code runs; [`changed`] wakes whoever waits on it.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ndis::{
    CLOSE_NDK_ADAPTER, NDIS_MINIPORT_DRIVER_CHARACTERISTICS, NDIS_NDK_CAPABILITIES, NDIS_OID,
    NDIS_PROTOCOL_DRIVER_CHARACTERISTICS, NET_PNP_EVENT_CODE, OPEN_NDK_ADAPTER,
};
use ndkpi::{NDIS_STATUS, NDK_ADAPTER_INFO};

use crate::ids::Keyword;

/// The memory behind an NDIS handle: a real, unique, zeroed block, so a
/// driver that dereferences a handle (it must not) reads zeros rather than
/// faulting, and so every handle is a distinct address.
#[derive(Debug)]
pub struct Handle(Box<[u64; 8]>);

impl Handle {
    /// A fresh handle.
    pub fn new() -> Self {
        Self(Box::new([0; 8]))
    }

    /// The handle value the driver sees.
    pub fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

impl Default for Handle {
    fn default() -> Self {
        Self::new()
    }
}

/// The NDK provider entry points registered with
/// `NdisSetOptionalHandlers`.
#[derive(Clone, Copy, Debug)]
pub struct NdkHandlers {
    /// `OpenNDKAdapterHandler`.
    pub open: OPEN_NDK_ADAPTER,
    /// `CloseNDKAdapterHandler`.
    pub close: CLOSE_NDK_ADAPTER,
}

/// The registered miniport driver.
#[derive(Debug)]
pub struct Driver {
    /// `NdisMiniportDriverHandle`.
    pub handle: Handle,
    /// The characteristics as NDIS read them (`Header.Size` bytes; the
    /// rest zero).
    pub characteristics: NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    /// `MiniportDriverContext`.
    pub context: usize,
    /// The NDK provider handlers, once registered.
    pub ndk: Option<NdkHandlers>,
    /// `MiniportSetOptions` is running (optional handlers may be set).
    pub in_set_options: bool,
    /// Registered from inside `DriverEntry`.
    pub from_driver_entry: bool,
}

/// Where an adapter is in the NDIS state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterState {
    /// `MiniportInitializeEx` is running.
    Initializing,
    /// Initialised or paused: no sends.
    Paused,
    /// `MiniportRestart` returned pending.
    Restarting,
    /// Running.
    Running,
    /// `MiniportPause` returned pending.
    Pausing,
    /// `MiniportHaltEx` is running.
    Halting,
    /// Halted, or `MiniportInitializeEx` failed: the handle is dead.
    Gone,
}

/// The registration attributes an adapter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistrationAttributes {
    /// `MiniportAdapterContext`.
    pub context: usize,
    /// `AttributeFlags`.
    pub flags: u32,
    /// `CheckForHangTimeInSeconds`.
    pub check_for_hang_seconds: u32,
    /// `InterfaceType`.
    pub interface_type: i32,
}

/// The general attributes an adapter set (the parts NDIS acts on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneralAttributes {
    /// `MediaType`.
    pub media_type: i32,
    /// `PhysicalMediumType`.
    pub physical_medium: i32,
    /// `MtuSize`.
    pub mtu: u32,
    /// `XmitLinkSpeed`.
    pub xmit_link_speed: u64,
    /// `MediaConnectState`.
    pub media_connect_state: i32,
    /// `MacAddressLength` bytes of `CurrentMacAddress`.
    pub current_mac: Vec<u8>,
    /// `SupportedStatistics`.
    pub supported_statistics: u32,
    /// The OIDs of `SupportedOidList`.
    pub supported_oids: Vec<NDIS_OID>,
}

/// The NDK attributes an adapter set.
#[derive(Clone, Copy, Debug)]
pub struct NdkAttributes {
    /// `Enabled`.
    pub enabled: bool,
    /// The capabilities, with `NdkInfo` cleared (it pointed into the
    /// driver's stack).
    pub capabilities: NDIS_NDK_CAPABILITIES,
    /// The `NDK_ADAPTER_INFO` that `NdkInfo` pointed to.
    pub info: NDK_ADAPTER_INFO,
}

// SAFETY: the only pointer, `capabilities.NdkInfo`, is always null here
// (cleared when the attributes are recorded): plain data.
unsafe impl Send for NdkAttributes {}

/// One adapter (miniport instance) of the driver.
#[derive(Debug)]
pub struct Adapter {
    /// The bottle's number for it (`AdapterId`).
    pub id: u32,
    /// `MiniportAdapterHandle` (the "miniport block").
    pub handle: Handle,
    /// Its registry keywords.
    pub keywords: Vec<(String, Keyword)>,
    /// Where it is in its life.
    pub state: AdapterState,
    /// Set by `NdisMSetMiniportAttributes`.
    pub registration: Option<RegistrationAttributes>,
    /// Set by `NdisMSetMiniportAttributes`.
    pub general: Option<GeneralAttributes>,
    /// Set by `NdisMSetMiniportAttributes`.
    pub ndk: Option<NdkAttributes>,
    /// `NetEventNDKEnable`/`Disable` and other PnP events, in order.
    pub pnp_events: Vec<NET_PNP_EVENT_CODE>,
    /// Status codes indicated with `NdisMIndicateStatusEx`, in order.
    pub status_indications: Vec<NDIS_STATUS>,
    /// The OID request that returned `NDIS_STATUS_PENDING`, and its
    /// completion status once `NdisMOidRequestComplete` came.
    pub pending_oid: Option<(usize, Option<NDIS_STATUS>)>,
    /// Completion status of a pended pause or restart, once it came.
    pub pending_pause_restart: Option<NDIS_STATUS>,
    /// The last value `OID_NDK_SET_STATE` set successfully.
    pub ndk_set_state: Option<bool>,
    /// NDK adapters open through `OpenNDKAdapterHandler`.
    pub open_ndk: Vec<usize>,
    /// Send lists handed to the miniport and not yet completed.
    pub sends_outstanding: Vec<usize>,
    /// Statuses of completed send lists, in completion order.
    pub send_completions: Vec<NDIS_STATUS>,
    /// The NIC it is the virtual miniport of (an intermediate driver's
    /// V), or `None` for a root-enumerated adapter.
    pub nic: Option<u32>,
    /// `IfIndex` NDIS gave it.
    pub if_index: u32,
    /// `NetLuid` NDIS gave it.
    pub luid: u64,
    /// The connect state of its latest `NDIS_STATUS_LINK_STATE`
    /// indication, if it made one.
    pub link_indicated: Option<bool>,
}

impl Adapter {
    /// A new adapter in `Initializing`, with nothing set yet.
    pub fn new(id: u32, handle: Handle, keywords: Vec<(String, Keyword)>) -> Self {
        Self {
            id,
            handle,
            keywords,
            state: AdapterState::Initializing,
            registration: None,
            general: None,
            ndk: None,
            pnp_events: Vec::new(),
            status_indications: Vec::new(),
            pending_oid: None,
            pending_pause_restart: None,
            ndk_set_state: None,
            open_ndk: Vec::new(),
            sends_outstanding: Vec::new(),
            send_completions: Vec::new(),
            nic: None,
            if_index: 0,
            luid: 0,
            link_indicated: None,
        }
    }
}

/// The registered protocol driver (the intermediate driver's lower edge).
#[derive(Debug)]
pub struct Protocol {
    /// `NdisProtocolHandle`.
    pub handle: Handle,
    /// The characteristics as NDIS read them, `Name.Buffer` cleared (the
    /// name is in `name`).
    pub characteristics: NDIS_PROTOCOL_DRIVER_CHARACTERISTICS,
    /// `ProtocolDriverContext`.
    pub context: usize,
    /// The protocol's name.
    pub name: String,
    /// The miniport driver handle `NdisIMAssociateMiniport` tied it to.
    pub associated: Option<usize>,
    /// Registered from inside `DriverEntry`.
    pub from_driver_entry: bool,
}

// SAFETY: the characteristics hold function pointers and integers; the
// one data pointer, `Name.Buffer`, is cleared when recorded.
unsafe impl Send for Protocol {}

/// Where a binding is in NDIS's state machine for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingState {
    /// `NdisOpenAdapterEx` pended and has not completed.
    Opening,
    /// Open and paused: no sends, no receive indications.
    Paused,
    /// `NetEventRestart` is being delivered.
    Restarting,
    /// Sends and receives flow.
    Running,
    /// `NetEventPause` is being delivered.
    Pausing,
    /// `NdisCloseAdapterEx` pended.
    Closing,
    /// Closed: the handle is dead.
    Closed,
}

/// One binding of the protocol to a NIC (an open of the NIC).
#[derive(Debug)]
pub struct Binding {
    /// `NdisBindingHandle`.
    pub handle: Handle,
    /// The NIC it opened.
    pub nic: u32,
    /// `ProtocolBindingContext`.
    pub context: usize,
    /// Its state.
    pub state: BindingState,
    /// OID requests that returned `NDIS_STATUS_PENDING` to the protocol
    /// and have not been completed to it.
    pub oids_pending: Vec<usize>,
    /// The status of a pended `NetPnPEvent`, once
    /// `NdisCompleteNetPnPEvent` came (the event's address first).
    pub pnp_pending: Option<(usize, Option<NDIS_STATUS>)>,
    /// `NdisOpenAdapterEx` pended and completed with this status.
    pub open_completed: Option<NDIS_STATUS>,
    /// `NdisCloseAdapterEx` was called.
    pub close_called: bool,
    /// A pended close completed (`ProtocolCloseAdapterCompleteEx` ran).
    pub close_completed: bool,
    /// Send calls so far (picks inline or deferred completion).
    pub send_calls: u64,
    /// OID requests so far (picks synchronous or pended completion).
    pub oid_calls: u64,
}

/// A virtual miniport instance an intermediate driver asked for with
/// `NdisIMInitializeDeviceInstanceEx`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImDevice {
    /// The device instance name (as given, compared case-insensitively).
    pub name: String,
    /// The NIC whose `UpperBindings` names it.
    pub nic: u32,
    /// `IMDeviceInstanceContext` for `MiniportInitializeEx`.
    pub context: usize,
    /// Where it is.
    pub state: ImState,
}

/// Where a requested virtual miniport is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImState {
    /// Requested; `MiniportInitializeEx` has not run.
    Requested,
    /// `MiniportInitializeEx` is running.
    Initializing,
    /// Initialised: the adapter's id.
    Up(u32),
    /// `MiniportInitializeEx` failed with this status.
    Failed(NDIS_STATUS),
    /// `NdisIMCancelInitializeDeviceInstance` cancelled it first.
    Cancelled,
    /// Halted.
    Gone,
}

/// Which operations on a NIC pend (and complete from another thread).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pends {
    /// `NdisOpenAdapterEx`.
    pub open: bool,
    /// `NdisCloseAdapterEx`.
    pub close: bool,
}

/// What NDIS knows of a NIC the bottle plays (P).
#[derive(Debug)]
pub struct NicInfo {
    /// The bottle's number for it.
    pub id: u32,
    /// The NIC's own NDIS handle (`SourceHandle` of its indications).
    pub handle: Handle,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its MTU.
    pub mtu: u32,
    /// `AdapterName` of its bind parameters (`\DEVICE\{GUID}`).
    pub name: String,
    /// The device instance its `UpperBindings` names (V's).
    pub upper_binding: String,
    /// The keywords V is initialised with.
    pub v_keywords: Vec<(String, Keyword)>,
    /// Its interface index and NET_LUID (`BoundIfIndex`, `BoundIfNetluid`).
    pub if_index: u32,
    /// Its NET_LUID value.
    pub luid: u64,
    /// Which of its opens and closes pend.
    pub pends: Pends,
    /// The live bind context while `ProtocolBindAdapterEx` runs (or pended).
    pub bind_context: Option<Handle>,
    /// A pended bind's completion status.
    pub bind_completed: Option<NDIS_STATUS>,
    /// The live unbind context while `ProtocolUnbindAdapterEx` runs (or
    /// pended).
    pub unbind_context: Option<Handle>,
    /// A pended unbind completed.
    pub unbind_completed: bool,
    /// The binding open on it.
    pub binding: Option<usize>,
    /// Whether its link is up.
    pub link_up: bool,
    /// `NDIS_PACKET_TYPE_*` receive filter set through the binding.
    pub packet_filter: u32,
    /// Multicast addresses set through the binding.
    pub multicast: Vec<[u8; 6]>,
    /// Gone (unbound and detached).
    pub removed: bool,
}

/// A work item allocated with `NdisAllocateIoWorkItem`.
#[derive(Debug)]
pub struct WorkItem {
    /// Its handle.
    pub handle: Handle,
    /// The handle it was allocated for.
    pub owner: usize,
    /// Queued and not yet started.
    pub queued: bool,
}

/// An open configuration handle: its adapter's keywords and the values
/// handed out, which live until `NdisCloseConfiguration`.
#[derive(Debug)]
pub struct Configuration {
    /// Its handle.
    pub handle: Handle,
    /// The adapter (or driver) handle it was opened for.
    pub owner: usize,
    /// The keywords of that handle.
    pub keywords: Vec<(String, Keyword)>,
    /// Every `NDIS_CONFIGURATION_PARAMETER` handed out, with the UTF-16
    /// text of string values.
    pub values: Vec<super::config_value::Value>,
}

/// Everything NDIS tracks.
#[derive(Debug, Default)]
pub struct Ndis {
    /// The registered miniport driver.
    pub driver: Option<Driver>,
    /// Adapters by miniport handle, including halted ones (their handles
    /// stay allocated so no later handle reuses the address).
    pub adapters: BTreeMap<usize, Adapter>,
    /// Work items by handle.
    pub work_items: BTreeMap<usize, WorkItem>,
    /// Freed work-item and configuration handles, kept so their
    /// addresses are not reused.
    pub retired: Vec<Handle>,
    /// Open configuration handles.
    pub configurations: BTreeMap<usize, Configuration>,
    /// The next `AdapterId`.
    pub next_adapter: u32,
    /// The `DRIVER_OBJECT` the bottle passed to `DriverEntry`.
    pub driver_object: usize,
    /// The registry path the bottle passed to `DriverEntry`.
    pub registry_path: usize,
    /// `DriverEntry` is running (registrations made now are its own).
    pub in_driver_entry: bool,
    /// The registered protocol driver.
    pub protocol: Option<Protocol>,
    /// Bindings by handle, including closed ones (their handles stay
    /// allocated so no later handle reuses the address).
    pub bindings: BTreeMap<usize, Binding>,
    /// The NICs, by number.
    pub nics: BTreeMap<u32, NicInfo>,
    /// Virtual miniports requested through `NdisIMInitializeDeviceInstanceEx`.
    pub im_devices: Vec<ImDevice>,
    /// Interface stack entries (higher, lower) added with
    /// `NdisIfAddIfStackEntry`.
    pub if_stack: Vec<(u32, u32)>,
    /// The next NIC number.
    pub next_nic: u32,
    /// What protocol or intermediate drivers left wrong without a bug
    /// check (reported at unload).
    pub faults: Vec<String>,
}

impl Ndis {
    /// The live adapter with miniport handle `handle`.
    pub fn live_adapter(&mut self, handle: usize) -> Option<&mut Adapter> {
        self.adapters
            .get_mut(&handle)
            .filter(|a| a.state != AdapterState::Gone)
    }

    /// The adapter numbered `id`.
    pub fn adapter_by_id(&mut self, id: u32) -> Option<&mut Adapter> {
        self.adapters.values_mut().find(|a| a.id == id)
    }

    /// Whether `handle` is one NDIS gave out for the driver, an adapter,
    /// the protocol or a binding (what pools and work items may be
    /// allocated for).
    pub fn is_ndis_handle(&mut self, handle: usize) -> bool {
        self.is_driver(handle)
            || self.live_adapter(handle).is_some()
            || self.is_protocol(handle)
            || self.live_binding(handle).is_some()
    }

    /// Whether `handle` is the protocol driver handle.
    pub fn is_protocol(&self, handle: usize) -> bool {
        self.protocol
            .as_ref()
            .is_some_and(|p| p.handle.addr() == handle)
    }

    /// The open (not closed) binding with handle `handle`.
    pub fn live_binding(&mut self, handle: usize) -> Option<&mut Binding> {
        self.bindings
            .get_mut(&handle)
            .filter(|b| b.state != BindingState::Closed)
    }

    /// The NIC numbered `id`, unless removed.
    pub fn live_nic(&mut self, id: u32) -> Option<&mut NicInfo> {
        self.nics.get_mut(&id).filter(|n| !n.removed)
    }

    /// Whether `handle` is the driver handle.
    pub fn is_driver(&self, handle: usize) -> bool {
        self.driver
            .as_ref()
            .is_some_and(|d| d.handle.addr() == handle)
    }
}

static STATE: Mutex<Option<Ndis>> = Mutex::new(None);
static CHANGED: Condvar = Condvar::new();

/// The NDIS table, locked. Never hold it while calling driver code.
pub fn lock() -> MutexGuard<'static, Option<Ndis>> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the table (created on first use).
pub fn with<R>(f: impl FnOnce(&mut Ndis) -> R) -> R {
    let mut guard = lock();
    f(guard.get_or_insert_with(Ndis::default))
}

/// Wakes everyone waiting in [`wait_until`]: call after a change.
pub fn changed() {
    CHANGED.notify_all();
}

/// Waits until `done` holds on the table or `timeout` passes; whether it
/// holds.
pub fn wait_until(timeout: Duration, mut done: impl FnMut(&mut Ndis) -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    let mut guard = lock();
    loop {
        if done(guard.get_or_insert_with(Ndis::default)) {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        guard = CHANGED
            .wait_timeout(guard, deadline - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Forgets everything (a new machine boots). Handles of a previous
/// machine become invalid.
pub fn reset() {
    *lock() = Some(Ndis::default());
}

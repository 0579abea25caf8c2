//! Miniport driver registration (`ndis.h`): the handler types a miniport
//! implements, `NDIS_MINIPORT_DRIVER_CHARACTERISTICS`, and the parameter
//! structures NDIS passes to those handlers.
//!
//! Each C function class `MINIPORT_X` becomes two Rust types: `MINIPORT_X`,
//! a non-null function pointer (to check a handler's signature, e.g.
//! `const _: MINIPORT_HALT = halt;`), and `MINIPORT_X_HANDLER`, the
//! nullable `Option` stored in the characteristics. The C typedefs spell
//! no calling convention; on x64 there is only one, which is Rust's
//! `extern "win64"`.

use ndkpi::{BOOLEAN, NDIS_STATUS, PVOID, UCHAR, ULONG};

use crate::nbl::NET_BUFFER_LIST;
use crate::object::{NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_MINIPORT_DRIVER_CHARACTERISTICS};
use crate::oid::NDIS_OID_REQUEST;
use crate::types::{
    DRIVER_OBJECT, NDIS_HANDLE, NDIS_PCI_DEVICE_CUSTOM_PROPERTIES,
    NDIS_PORT_AUTHENTICATION_PARAMETERS, NDIS_PORT_NUMBER, NDIS_RESOURCE_LIST,
    NDIS_RESTART_ATTRIBUTES, NET_IFINDEX, NET_LUID,
};
use crate::version::{NDIS_MINIPORT_MAJOR_VERSION, NDIS_MINIPORT_MINOR_VERSION};

// ---------------------------------------------------------------------
// Parameter structures.

/// `NDIS_MINIPORT_INIT_PARAMETERS` revision.
pub const NDIS_MINIPORT_INIT_PARAMETERS_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(..., PciDeviceCustomProperties)` (the C name
/// says `PARAMETER`, singular).
pub const NDIS_SIZEOF_MINIPORT_INIT_PARAMETER_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_MINIPORT_INIT_PARAMETERS, PciDeviceCustomProperties);

/// What NDIS passes to `MiniportInitializeEx`. A virtual adapter reads at
/// most `IfIndex`/`NetLuid`; the pointed-to types are opaque here.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_MINIPORT_INIT_PARAMETERS {
    /// `NDIS_OBJECT_TYPE_MINIPORT_INIT_PARAMETERS`.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved flags.
    pub Flags: ULONG,
    /// Translated hardware resources (none for a virtual adapter).
    pub AllocatedResources: *mut NDIS_RESOURCE_LIST,
    /// Intermediate-driver device context.
    pub IMDeviceInstanceContext: NDIS_HANDLE,
    /// Context from `MiniportAddDevice`, if the driver has one.
    pub MiniportAddDeviceContext: NDIS_HANDLE,
    /// Interface index NDIS assigned to the adapter.
    pub IfIndex: NET_IFINDEX,
    /// Interface LUID NDIS assigned to the adapter.
    pub NetLuid: NET_LUID,
    /// Default port authentication states.
    pub DefaultPortAuthStates: *mut NDIS_PORT_AUTHENTICATION_PARAMETERS,
    /// PCI device properties (none for a virtual adapter).
    pub PciDeviceCustomProperties: *mut NDIS_PCI_DEVICE_CUSTOM_PROPERTIES,
}

/// `NDIS_MINIPORT_PAUSE_PARAMETERS` revision.
pub const NDIS_MINIPORT_PAUSE_PARAMETERS_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_MINIPORT_PAUSE_PARAMETERS, PauseReason)`.
pub const NDIS_SIZEOF_MINIPORT_PAUSE_PARAMETERS_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_MINIPORT_PAUSE_PARAMETERS, PauseReason);

/// What NDIS passes to `MiniportPause`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_MINIPORT_PAUSE_PARAMETERS {
    /// Header set by NDIS.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved flags.
    pub Flags: ULONG,
    /// `NDIS_PAUSE_*` reason bits.
    pub PauseReason: ULONG,
}

/// Pause reason bit: NDIS-internal.
pub const NDIS_PAUSE_NDIS_INTERNAL: ULONG = 0x0000_0001;
/// Pause reason bit: entering low power.
pub const NDIS_PAUSE_LOW_POWER: ULONG = 0x0000_0002;
/// Pause reason bit: the adapter is being removed.
pub const NDIS_PAUSE_MINIPORT_DEVICE_REMOVE: ULONG = 0x0000_0080;

/// `NDIS_MINIPORT_RESTART_PARAMETERS` revision.
pub const NDIS_MINIPORT_RESTART_PARAMETERS_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_MINIPORT_RESTART_PARAMETERS, Flags)`.
pub const NDIS_SIZEOF_MINIPORT_RESTART_PARAMETERS_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_MINIPORT_RESTART_PARAMETERS, Flags);

/// What NDIS passes to `MiniportRestart`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_MINIPORT_RESTART_PARAMETERS {
    /// Header set by NDIS.
    pub Header: NDIS_OBJECT_HEADER,
    /// Restart attribute chain (opaque, never read).
    pub RestartAttributes: *mut NDIS_RESTART_ATTRIBUTES,
    /// Reserved flags.
    pub Flags: ULONG,
}

/// Why `MiniportHaltEx` is called (C enum).
pub type NDIS_HALT_ACTION = i32;
/// The device was disabled.
pub const NdisHaltDeviceDisabled: NDIS_HALT_ACTION = 0;
/// The device instance was de-initialised.
pub const NdisHaltDeviceInstanceDeInitialized: NDIS_HALT_ACTION = 1;
/// The device was powered down.
pub const NdisHaltDevicePoweredDown: NDIS_HALT_ACTION = 2;
/// The device was surprise-removed.
pub const NdisHaltDeviceSurpriseRemoved: NDIS_HALT_ACTION = 3;
/// The device failed.
pub const NdisHaltDeviceFailed: NDIS_HALT_ACTION = 4;
/// Initialisation failed.
pub const NdisHaltDeviceInitializationFailed: NDIS_HALT_ACTION = 5;
/// The device was stopped.
pub const NdisHaltDeviceStopped: NDIS_HALT_ACTION = 6;

/// Why `MiniportShutdownEx` is called (C enum).
pub type NDIS_SHUTDOWN_ACTION = i32;
/// Power-off (called at `PASSIVE_LEVEL`).
pub const NdisShutdownPowerOff: NDIS_SHUTDOWN_ACTION = 0;
/// Bug check (called at `HIGH_LEVEL`).
pub const NdisShutdownBugCheck: NDIS_SHUTDOWN_ACTION = 1;

/// Device PnP event passed to `MiniportDevicePnPEventNotify` (C enum).
pub type NDIS_DEVICE_PNP_EVENT = i32;
/// Query remove.
pub const NdisDevicePnPEventQueryRemoved: NDIS_DEVICE_PNP_EVENT = 0;
/// Removed.
pub const NdisDevicePnPEventRemoved: NDIS_DEVICE_PNP_EVENT = 1;
/// Surprise-removed.
pub const NdisDevicePnPEventSurpriseRemoved: NDIS_DEVICE_PNP_EVENT = 2;
/// Query stop.
pub const NdisDevicePnPEventQueryStopped: NDIS_DEVICE_PNP_EVENT = 3;
/// Stopped.
pub const NdisDevicePnPEventStopped: NDIS_DEVICE_PNP_EVENT = 4;
/// Power profile changed.
pub const NdisDevicePnPEventPowerProfileChanged: NDIS_DEVICE_PNP_EVENT = 5;
/// Filter list changed (NDIS 6).
pub const NdisDevicePnPEventFilterListChanged: NDIS_DEVICE_PNP_EVENT = 6;

/// `NET_DEVICE_PNP_EVENT` revision.
pub const NET_DEVICE_PNP_EVENT_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NET_DEVICE_PNP_EVENT, NdisReserved)`.
pub const NDIS_SIZEOF_NET_DEVICE_PNP_EVENT_REVISION_1: u16 =
    crate::sizeof_through_field!(NET_DEVICE_PNP_EVENT, NdisReserved);

/// What NDIS passes to `MiniportDevicePnPEventNotify`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_DEVICE_PNP_EVENT {
    /// Header set by NDIS.
    pub Header: NDIS_OBJECT_HEADER,
    /// Port the event concerns.
    pub PortNumber: NDIS_PORT_NUMBER,
    /// The event.
    pub DevicePnPEvent: NDIS_DEVICE_PNP_EVENT,
    /// Event-specific data.
    pub InformationBuffer: PVOID,
    /// Bytes at `InformationBuffer`.
    pub InformationBufferLength: ULONG,
    /// Owned by NDIS.
    pub NdisReserved: [UCHAR; 2 * size_of::<PVOID>()],
}

// ---------------------------------------------------------------------
// Handler types, in the order of the characteristics.

/// `MiniportSetOptions`: register optional services such as NDK
/// (`PASSIVE_LEVEL`, during `NdisMRegisterMiniportDriver`).
pub type SET_OPTIONS = unsafe extern "win64" fn(
    NdisDriverHandle: NDIS_HANDLE,
    DriverContext: NDIS_HANDLE,
) -> NDIS_STATUS;
/// Nullable [`SET_OPTIONS`].
pub type SET_OPTIONS_HANDLER = Option<SET_OPTIONS>;

/// `MiniportInitializeEx` (`PASSIVE_LEVEL`).
pub type MINIPORT_INITIALIZE = unsafe extern "win64" fn(
    NdisMiniportHandle: NDIS_HANDLE,
    MiniportDriverContext: NDIS_HANDLE,
    MiniportInitParameters: *mut NDIS_MINIPORT_INIT_PARAMETERS,
) -> NDIS_STATUS;
/// Nullable [`MINIPORT_INITIALIZE`].
pub type MINIPORT_INITIALIZE_HANDLER = Option<MINIPORT_INITIALIZE>;

/// `MiniportHaltEx` (`PASSIVE_LEVEL`).
pub type MINIPORT_HALT =
    unsafe extern "win64" fn(MiniportAdapterContext: NDIS_HANDLE, HaltAction: NDIS_HALT_ACTION);
/// Nullable [`MINIPORT_HALT`].
pub type MINIPORT_HALT_HANDLER = Option<MINIPORT_HALT>;

/// `MiniportDriverUnload` (`PASSIVE_LEVEL`; C function class
/// `MINIPORT_UNLOAD`).
pub type MINIPORT_UNLOAD = unsafe extern "win64" fn(DriverObject: *mut DRIVER_OBJECT);
/// Nullable [`MINIPORT_UNLOAD`] (the C name of the pointer type).
pub type MINIPORT_DRIVER_UNLOAD = Option<MINIPORT_UNLOAD>;

/// `MiniportPause` (`PASSIVE_LEVEL`).
pub type MINIPORT_PAUSE = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    PauseParameters: *mut NDIS_MINIPORT_PAUSE_PARAMETERS,
) -> NDIS_STATUS;
/// Nullable [`MINIPORT_PAUSE`].
pub type MINIPORT_PAUSE_HANDLER = Option<MINIPORT_PAUSE>;

/// `MiniportRestart` (`PASSIVE_LEVEL`).
pub type MINIPORT_RESTART = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    RestartParameters: *mut NDIS_MINIPORT_RESTART_PARAMETERS,
) -> NDIS_STATUS;
/// Nullable [`MINIPORT_RESTART`].
pub type MINIPORT_RESTART_HANDLER = Option<MINIPORT_RESTART>;

/// `MiniportOidRequest` (`PASSIVE_LEVEL`).
pub type MINIPORT_OID_REQUEST = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS;
/// Nullable [`MINIPORT_OID_REQUEST`].
pub type MINIPORT_OID_REQUEST_HANDLER = Option<MINIPORT_OID_REQUEST>;

/// `MiniportSendNetBufferLists` (`<= DISPATCH_LEVEL`).
pub type MINIPORT_SEND_NET_BUFFER_LISTS = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    NetBufferList: *mut NET_BUFFER_LIST,
    PortNumber: NDIS_PORT_NUMBER,
    SendFlags: ULONG,
);
/// Nullable [`MINIPORT_SEND_NET_BUFFER_LISTS`].
pub type MINIPORT_SEND_NET_BUFFER_LISTS_HANDLER = Option<MINIPORT_SEND_NET_BUFFER_LISTS>;

/// `MiniportReturnNetBufferLists` (`<= DISPATCH_LEVEL`).
pub type MINIPORT_RETURN_NET_BUFFER_LISTS = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    NetBufferLists: *mut NET_BUFFER_LIST,
    ReturnFlags: ULONG,
);
/// Nullable [`MINIPORT_RETURN_NET_BUFFER_LISTS`].
pub type MINIPORT_RETURN_NET_BUFFER_LISTS_HANDLER = Option<MINIPORT_RETURN_NET_BUFFER_LISTS>;

/// `MiniportCancelSend` (`<= DISPATCH_LEVEL`).
pub type MINIPORT_CANCEL_SEND =
    unsafe extern "win64" fn(MiniportAdapterContext: NDIS_HANDLE, CancelId: PVOID);
/// Nullable [`MINIPORT_CANCEL_SEND`].
pub type MINIPORT_CANCEL_SEND_HANDLER = Option<MINIPORT_CANCEL_SEND>;

/// `MiniportCheckForHangEx` (`PASSIVE_LEVEL`); true asks for a reset.
pub type MINIPORT_CHECK_FOR_HANG =
    unsafe extern "win64" fn(MiniportAdapterContext: NDIS_HANDLE) -> BOOLEAN;
/// Nullable [`MINIPORT_CHECK_FOR_HANG`].
pub type MINIPORT_CHECK_FOR_HANG_HANDLER = Option<MINIPORT_CHECK_FOR_HANG>;

/// `MiniportResetEx` (`<= DISPATCH_LEVEL`).
pub type MINIPORT_RESET = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    AddressingReset: *mut BOOLEAN,
) -> NDIS_STATUS;
/// Nullable [`MINIPORT_RESET`].
pub type MINIPORT_RESET_HANDLER = Option<MINIPORT_RESET>;

/// `MiniportDevicePnPEventNotify` (`PASSIVE_LEVEL`).
pub type MINIPORT_DEVICE_PNP_EVENT_NOTIFY = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    NetDevicePnPEvent: *mut NET_DEVICE_PNP_EVENT,
);
/// Nullable [`MINIPORT_DEVICE_PNP_EVENT_NOTIFY`].
pub type MINIPORT_DEVICE_PNP_EVENT_NOTIFY_HANDLER = Option<MINIPORT_DEVICE_PNP_EVENT_NOTIFY>;

/// `MiniportShutdownEx` (`PASSIVE_LEVEL` on power-off, `HIGH_LEVEL` on a
/// bug check).
pub type MINIPORT_SHUTDOWN = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    ShutdownAction: NDIS_SHUTDOWN_ACTION,
);
/// Nullable [`MINIPORT_SHUTDOWN`].
pub type MINIPORT_SHUTDOWN_HANDLER = Option<MINIPORT_SHUTDOWN>;

/// `MiniportCancelOidRequest` (`<= DISPATCH_LEVEL`).
pub type MINIPORT_CANCEL_OID_REQUEST =
    unsafe extern "win64" fn(MiniportAdapterContext: NDIS_HANDLE, RequestId: PVOID);
/// Nullable [`MINIPORT_CANCEL_OID_REQUEST`].
pub type MINIPORT_CANCEL_OID_REQUEST_HANDLER = Option<MINIPORT_CANCEL_OID_REQUEST>;

/// `MiniportDirectOidRequest` (`<= DISPATCH_LEVEL`; NDIS 6.1).
pub type MINIPORT_DIRECT_OID_REQUEST = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS;
/// Nullable [`MINIPORT_DIRECT_OID_REQUEST`].
pub type MINIPORT_DIRECT_OID_REQUEST_HANDLER = Option<MINIPORT_DIRECT_OID_REQUEST>;

/// `MiniportCancelDirectOidRequest` (`<= DISPATCH_LEVEL`; NDIS 6.1).
pub type MINIPORT_CANCEL_DIRECT_OID_REQUEST =
    unsafe extern "win64" fn(MiniportAdapterContext: NDIS_HANDLE, RequestId: PVOID);
/// Nullable [`MINIPORT_CANCEL_DIRECT_OID_REQUEST`].
pub type MINIPORT_CANCEL_DIRECT_OID_REQUEST_HANDLER = Option<MINIPORT_CANCEL_DIRECT_OID_REQUEST>;

/// `MiniportSynchronousOidRequest` (`<= DISPATCH_LEVEL`; NDIS 6.80).
pub type MINIPORT_SYNCHRONOUS_OID_REQUEST = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS;
/// Nullable [`MINIPORT_SYNCHRONOUS_OID_REQUEST`].
pub type MINIPORT_SYNCHRONOUS_OID_REQUEST_HANDLER = Option<MINIPORT_SYNCHRONOUS_OID_REQUEST>;

// ---------------------------------------------------------------------
// NDIS_MINIPORT_DRIVER_CHARACTERISTICS.

/// `Flags`: an intermediate driver.
pub const NDIS_INTERMEDIATE_DRIVER: ULONG = 0x0000_0001;
/// `Flags`: an NDIS-WDM driver.
pub const NDIS_WDM_DRIVER: ULONG = 0x0000_0002;
/// `Flags`: reserved (NDIS 6.30).
pub const NDIS_DRIVER_FLAGS_RESERVED: ULONG = 0x0000_0008;

/// Characteristics revision of NDIS 6.0 (through `CancelOidRequestHandler`).
pub const NDIS_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_1: UCHAR = 1;
/// Characteristics revision of NDIS 6.1 (adds the direct OID handlers).
pub const NDIS_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2: UCHAR = 2;
/// Characteristics revision of NDIS 6.80 (adds the synchronous OID handler).
pub const NDIS_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_3: UCHAR = 3;
/// `RTL_SIZEOF_THROUGH_FIELD(..., CancelOidRequestHandler)`.
pub const NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_1: u16 = crate::sizeof_through_field!(
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    CancelOidRequestHandler
);
/// `RTL_SIZEOF_THROUGH_FIELD(..., CancelDirectOidRequestHandler)`.
pub const NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2: u16 = crate::sizeof_through_field!(
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    CancelDirectOidRequestHandler
);
/// `RTL_SIZEOF_THROUGH_FIELD(..., SynchronousOidRequestHandler)`.
pub const NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_3: u16 = crate::sizeof_through_field!(
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    SynchronousOidRequestHandler
);

/// What `NdisMRegisterMiniportDriver` registers: the NDIS contract
/// version and every handler, in header order. The struct declares all
/// revision-3 fields; NDIS reads `Header.Size` bytes, so at revision 2
/// (NDIS 6.50, see [`crate::version`]) `SynchronousOidRequestHandler` is
/// ignored.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
    /// `NDIS_OBJECT_TYPE_MINIPORT_DRIVER_CHARACTERISTICS`, revision and size.
    pub Header: NDIS_OBJECT_HEADER,
    /// NDIS contract major version (6).
    pub MajorNdisVersion: UCHAR,
    /// NDIS contract minor version.
    pub MinorNdisVersion: UCHAR,
    /// Driver's own major version.
    pub MajorDriverVersion: UCHAR,
    /// Driver's own minor version.
    pub MinorDriverVersion: UCHAR,
    /// `NDIS_INTERMEDIATE_DRIVER`, `NDIS_WDM_DRIVER`.
    pub Flags: ULONG,
    /// `MiniportSetOptions`.
    pub SetOptionsHandler: SET_OPTIONS_HANDLER,
    /// `MiniportInitializeEx`.
    pub InitializeHandlerEx: MINIPORT_INITIALIZE_HANDLER,
    /// `MiniportHaltEx`.
    pub HaltHandlerEx: MINIPORT_HALT_HANDLER,
    /// `MiniportDriverUnload`.
    pub UnloadHandler: MINIPORT_DRIVER_UNLOAD,
    /// `MiniportPause`.
    pub PauseHandler: MINIPORT_PAUSE_HANDLER,
    /// `MiniportRestart`.
    pub RestartHandler: MINIPORT_RESTART_HANDLER,
    /// `MiniportOidRequest`.
    pub OidRequestHandler: MINIPORT_OID_REQUEST_HANDLER,
    /// `MiniportSendNetBufferLists`.
    pub SendNetBufferListsHandler: MINIPORT_SEND_NET_BUFFER_LISTS_HANDLER,
    /// `MiniportReturnNetBufferLists`.
    pub ReturnNetBufferListsHandler: MINIPORT_RETURN_NET_BUFFER_LISTS_HANDLER,
    /// `MiniportCancelSend`.
    pub CancelSendHandler: MINIPORT_CANCEL_SEND_HANDLER,
    /// `MiniportCheckForHangEx`.
    pub CheckForHangHandlerEx: MINIPORT_CHECK_FOR_HANG_HANDLER,
    /// `MiniportResetEx`.
    pub ResetHandlerEx: MINIPORT_RESET_HANDLER,
    /// `MiniportDevicePnPEventNotify`.
    pub DevicePnPEventNotifyHandler: MINIPORT_DEVICE_PNP_EVENT_NOTIFY_HANDLER,
    /// `MiniportShutdownEx`.
    pub ShutdownHandlerEx: MINIPORT_SHUTDOWN_HANDLER,
    /// `MiniportCancelOidRequest`.
    pub CancelOidRequestHandler: MINIPORT_CANCEL_OID_REQUEST_HANDLER,
    /// `MiniportDirectOidRequest` (revision 2).
    pub DirectOidRequestHandler: MINIPORT_DIRECT_OID_REQUEST_HANDLER,
    /// `MiniportCancelDirectOidRequest` (revision 2).
    pub CancelDirectOidRequestHandler: MINIPORT_CANCEL_DIRECT_OID_REQUEST_HANDLER,
    /// `MiniportSynchronousOidRequest` (revision 3, NDIS 6.80).
    pub SynchronousOidRequestHandler: MINIPORT_SYNCHRONOUS_OID_REQUEST_HANDLER,
}

impl NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
    /// Revision-2 characteristics for the NDIS version of
    /// [`crate::version`], with the given driver version and no handlers.
    pub const fn new(MajorDriverVersion: UCHAR, MinorDriverVersion: UCHAR) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_MINIPORT_DRIVER_CHARACTERISTICS,
                NDIS_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2,
                NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2,
            ),
            MajorNdisVersion: NDIS_MINIPORT_MAJOR_VERSION,
            MinorNdisVersion: NDIS_MINIPORT_MINOR_VERSION,
            MajorDriverVersion,
            MinorDriverVersion,
            Flags: 0,
            SetOptionsHandler: None,
            InitializeHandlerEx: None,
            HaltHandlerEx: None,
            UnloadHandler: None,
            PauseHandler: None,
            RestartHandler: None,
            OidRequestHandler: None,
            SendNetBufferListsHandler: None,
            ReturnNetBufferListsHandler: None,
            CancelSendHandler: None,
            CheckForHangHandlerEx: None,
            ResetHandlerEx: None,
            DevicePnPEventNotifyHandler: None,
            ShutdownHandlerEx: None,
            CancelOidRequestHandler: None,
            DirectOidRequestHandler: None,
            CancelDirectOidRequestHandler: None,
            SynchronousOidRequestHandler: None,
        }
    }
}

/// The header-only view `NdisSetOptionalHandlers` takes; the real
/// argument is a larger structure (for NDK,
/// [`crate::NDIS_NDK_PROVIDER_CHARACTERISTICS`]) that starts with it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDIS_DRIVER_OPTIONAL_HANDLERS {
    /// Type, revision and size of the actual structure.
    pub Header: NDIS_OBJECT_HEADER,
}

// ---------------------------------------------------------------------
// Flags of the data-path calls.

/// `SendFlags`: called at `DISPATCH_LEVEL`.
pub const NDIS_SEND_FLAGS_DISPATCH_LEVEL: ULONG = 0x0000_0001;
/// `SendFlags`: the miniport should check for loopback.
pub const NDIS_SEND_FLAGS_CHECK_FOR_LOOPBACK: ULONG = 0x0000_0002;
/// `SendCompleteFlags`: caller runs at `DISPATCH_LEVEL`.
pub const NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL: ULONG = 0x0000_0001;
/// `ReceiveFlags`: caller runs at `DISPATCH_LEVEL`.
pub const NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL: ULONG = 0x0000_0001;
/// `ReceiveFlags`: the receiver may not keep the lists past the call
/// (the receive "cannot pend").
pub const NDIS_RECEIVE_FLAGS_RESOURCES: ULONG = 0x0000_0002;
/// `ReturnFlags`: called at `DISPATCH_LEVEL`.
pub const NDIS_RETURN_FLAGS_DISPATCH_LEVEL: ULONG = 0x0000_0001;

/// Work-item routine for `NdisQueueIoWorkItem` (`PASSIVE_LEVEL`).
pub type NDIS_IO_WORKITEM_FUNCTION =
    unsafe extern "win64" fn(WorkItemContext: PVOID, NdisIoWorkItemHandle: NDIS_HANDLE);
/// Nullable [`NDIS_IO_WORKITEM_FUNCTION`] (C `NDIS_IO_WORKITEM_ROUTINE`).
pub type NDIS_IO_WORKITEM_ROUTINE = Option<NDIS_IO_WORKITEM_FUNCTION>;

//! The NDIS 6 protocol edge (`ndis.h:8310-8860`, WDK 10.0.22621.0): the
//! handlers a protocol driver implements, its characteristics, and the
//! parameter structures of binding, opening and restarting. The MUX
//! driver's lower edge is such a protocol, bound to the physical NIC.
//!
//! Handler types follow [`crate::miniport`]: `PROTOCOL_X` is the non-null
//! function pointer of the C function class, and the nullable form stored
//! in the characteristics carries the C pointer-type name
//! (`BIND_HANDLER_EX`, `STATUS_HANDLER_EX`, ...).
//!
//! `NDIS_BIND_PARAMETERS` is declared through its latest revision (4,
//! NDIS 6.30): NDIS hands a 6.50 protocol revision 4, and `Header.Size`
//! says which fields are present.

use ndkpi::{BOOLEAN, NDIS_STATUS, UCHAR, ULONG, USHORT};

use crate::attributes::{
    NDIS_MEDIA_CONNECT_STATE, NDIS_MEDIA_DUPLEX_STATE, NET_IF_ACCESS_TYPE, NET_IF_CONNECTION_TYPE,
    NET_IF_DIRECTION_TYPE,
};
use crate::indicate::{NDIS_STATUS_INDICATION, NET_PNP_EVENT_NOTIFICATION};
use crate::kernel::DEVICE_OBJECT;
use crate::miniport::SET_OPTIONS_HANDLER;
use crate::nbl::NET_BUFFER_LIST;
use crate::ndk::NDIS_NDK_CAPABILITIES;
use crate::object::NDIS_OBJECT_HEADER;
use crate::oid::{NDIS_MEDIUM, NDIS_OID_REQUEST, NDIS_PHYSICAL_MEDIUM};
use crate::types::{
    NDIS_HANDLE, NDIS_MAX_PHYS_ADDRESS_LENGTH, NDIS_PM_CAPABILITIES, NDIS_PNP_CAPABILITIES,
    NDIS_PORT_NUMBER, NDIS_RECEIVE_SCALE_CAPABILITIES, NDIS_RESTART_ATTRIBUTES, NDIS_STRING,
    NET_IFINDEX, NET_IFTYPE, NET_LUID, UINT, ULONG64,
};
use crate::version::{NDIS_MINIPORT_MAJOR_VERSION, NDIS_MINIPORT_MINOR_VERSION};

/// Object type of [`NDIS_BIND_PARAMETERS`] (`ntddndis.h`).
pub const NDIS_OBJECT_TYPE_BIND_PARAMETERS: UCHAR = 0x86;
/// Object type of [`NDIS_OPEN_PARAMETERS`].
pub const NDIS_OBJECT_TYPE_OPEN_PARAMETERS: UCHAR = 0x87;
/// Object type of [`NDIS_PROTOCOL_DRIVER_CHARACTERISTICS`].
pub const NDIS_OBJECT_TYPE_PROTOCOL_DRIVER_CHARACTERISTICS: UCHAR = 0x95;

/// Network compartment identifier (`ifdef.h`, `UINT32`).
pub type NET_IF_COMPARTMENT_ID = u32;
/// Link-layer frame type (EtherType) a protocol opens for
/// (`ndis.h:3906`, `USHORT`).
pub type NET_FRAME_TYPE = USHORT;

/// Declares zero-sized, unconstructible stand-ins for the capability and
/// configuration structures `NDIS_BIND_PARAMETERS` points to and this
/// crate never reads.
macro_rules! opaque_types {
    ($( $(#[$doc:meta])* $name:ident; )*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            pub struct $name {
                _data: [u8; 0],
                _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
            }

            impl core::fmt::Debug for $name {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    f.write_str(stringify!($name))
                }
            }
        )*
    };
}

opaque_types! {
    /// `NDIS_PORT` chain of the active ports.
    NDIS_PORT;
    /// `NDIS_OFFLOAD` default offload configuration.
    NDIS_OFFLOAD;
    /// `NDIS_TCP_CONNECTION_OFFLOAD` (chimney) capabilities.
    NDIS_TCP_CONNECTION_OFFLOAD;
    /// `NDIS_HD_SPLIT_CURRENT_CONFIG` (NDIS 6.1).
    NDIS_HD_SPLIT_CURRENT_CONFIG;
    /// `NDIS_RECEIVE_FILTER_CAPABILITIES` (NDIS 6.20).
    NDIS_RECEIVE_FILTER_CAPABILITIES;
    /// `NDIS_NIC_SWITCH_CAPABILITIES` (NDIS 6.20).
    NDIS_NIC_SWITCH_CAPABILITIES;
    /// `NDIS_SRIOV_CAPABILITIES` (NDIS 6.30).
    NDIS_SRIOV_CAPABILITIES;
    /// `NDIS_NIC_SWITCH_INFO_ARRAY` (NDIS 6.30).
    NDIS_NIC_SWITCH_INFO_ARRAY;
}

// ---------------------------------------------------------------------
// NDIS_BIND_PARAMETERS (ndis.h:8453).

/// `NDIS_BIND_PARAMETERS` revision 1 (NDIS 6.0).
pub const NDIS_BIND_PARAMETERS_REVISION_1: UCHAR = 1;
/// Revision 2 (NDIS 6.1): adds `HDSplitCurrentConfig`.
pub const NDIS_BIND_PARAMETERS_REVISION_2: UCHAR = 2;
/// Revision 3 (NDIS 6.20): adds receive filter, PM and NIC switch
/// capabilities.
pub const NDIS_BIND_PARAMETERS_REVISION_3: UCHAR = 3;
/// Revision 4 (NDIS 6.30): adds NDK, SR-IOV and NIC switch arrays.
pub const NDIS_BIND_PARAMETERS_REVISION_4: UCHAR = 4;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_BIND_PARAMETERS, BoundAdapterName)`.
pub const NDIS_SIZEOF_BIND_PARAMETERS_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_BIND_PARAMETERS, BoundAdapterName);
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_BIND_PARAMETERS, HDSplitCurrentConfig)`.
pub const NDIS_SIZEOF_BIND_PARAMETERS_REVISION_2: u16 =
    crate::sizeof_through_field!(NDIS_BIND_PARAMETERS, HDSplitCurrentConfig);
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_BIND_PARAMETERS, NicSwitchCapabilities)`.
pub const NDIS_SIZEOF_BIND_PARAMETERS_REVISION_3: u16 =
    crate::sizeof_through_field!(NDIS_BIND_PARAMETERS, NicSwitchCapabilities);
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_BIND_PARAMETERS, NicSwitchArray)`.
pub const NDIS_SIZEOF_BIND_PARAMETERS_REVISION_4: u16 =
    crate::sizeof_through_field!(NDIS_BIND_PARAMETERS, NicSwitchArray);

/// What NDIS passes to `ProtocolBindAdapterEx`: the lower adapter's
/// identity and attributes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_BIND_PARAMETERS {
    /// `NDIS_OBJECT_TYPE_BIND_PARAMETERS`.
    pub Header: NDIS_OBJECT_HEADER,
    /// Registry section of the protocol for this binding.
    pub ProtocolSection: *mut NDIS_STRING,
    /// Name to pass to `NdisOpenAdapterEx`.
    pub AdapterName: *mut NDIS_STRING,
    /// The adapter's PDO.
    pub PhysicalDeviceObject: *mut DEVICE_OBJECT,
    /// Medium of the adapter.
    pub MediaType: NDIS_MEDIUM,
    /// MTU (without the link header).
    pub MtuSize: ULONG,
    /// Maximum transmit speed, bit/s.
    pub MaxXmitLinkSpeed: ULONG64,
    /// Current transmit speed, bit/s.
    pub XmitLinkSpeed: ULONG64,
    /// Maximum receive speed, bit/s.
    pub MaxRcvLinkSpeed: ULONG64,
    /// Current receive speed, bit/s.
    pub RcvLinkSpeed: ULONG64,
    /// Connect state.
    pub MediaConnectState: NDIS_MEDIA_CONNECT_STATE,
    /// Duplex state.
    pub MediaDuplexState: NDIS_MEDIA_DUPLEX_STATE,
    /// Lookahead size.
    pub LookaheadSize: ULONG,
    /// Legacy power management capabilities.
    pub PowerManagementCapabilities: *mut NDIS_PNP_CAPABILITIES,
    /// `NDIS_PACKET_TYPE_*` the adapter supports.
    pub SupportedPacketFilters: ULONG,
    /// Multicast list capacity.
    pub MaxMulticastListSize: ULONG,
    /// Bytes of `CurrentMacAddress` used.
    pub MacAddressLength: USHORT,
    /// Current MAC address.
    pub CurrentMacAddress: [UCHAR; NDIS_MAX_PHYS_ADDRESS_LENGTH],
    /// Physical medium.
    pub PhysicalMediumType: NDIS_PHYSICAL_MEDIUM,
    /// RSS capabilities.
    pub RcvScaleCapabilities: *mut NDIS_RECEIVE_SCALE_CAPABILITIES,
    /// LUID of the interface bound to.
    pub BoundIfNetluid: NET_LUID,
    /// Index of the interface bound to.
    pub BoundIfIndex: NET_IFINDEX,
    /// LUID of the lowest interface of the stack.
    pub LowestIfNetluid: NET_LUID,
    /// Index of the lowest interface of the stack.
    pub LowestIfIndex: NET_IFINDEX,
    /// `NET_IF_ACCESS_*`.
    pub AccessType: NET_IF_ACCESS_TYPE,
    /// `NET_IF_DIRECTION_*`.
    pub DirectionType: NET_IF_DIRECTION_TYPE,
    /// `NET_IF_CONNECTION_*`.
    pub ConnectionType: NET_IF_CONNECTION_TYPE,
    /// IANA interface type.
    pub IfType: NET_IFTYPE,
    /// `TRUE` for a physical adapter.
    pub IfConnectorPresent: BOOLEAN,
    /// Active ports.
    pub ActivePorts: *mut NDIS_PORT,
    /// Data backfill the adapter asks for.
    pub DataBackFillSize: ULONG,
    /// Context backfill the adapter asks for.
    pub ContextBackFillSize: ULONG,
    /// `NDIS_MAC_OPTION_*`.
    pub MacOptions: ULONG,
    /// Network compartment.
    pub CompartmentId: NET_IF_COMPARTMENT_ID,
    /// Default offload configuration.
    pub DefaultOffloadConfiguration: *mut NDIS_OFFLOAD,
    /// Chimney offload capabilities.
    pub TcpConnectionOffloadCapabilities: *mut NDIS_TCP_CONNECTION_OFFLOAD,
    /// Name of the adapter bound to.
    pub BoundAdapterName: *mut NDIS_STRING,
    /// Header-data split configuration (revision 2).
    pub HDSplitCurrentConfig: *mut NDIS_HD_SPLIT_CURRENT_CONFIG,
    /// Receive filter capabilities (revision 3).
    pub ReceiveFilterCapabilities: *mut NDIS_RECEIVE_FILTER_CAPABILITIES,
    /// NDIS 6.20 power management capabilities (revision 3).
    pub PowerManagementCapabilitiesEx: *mut NDIS_PM_CAPABILITIES,
    /// NIC switch capabilities (revision 3).
    pub NicSwitchCapabilities: *mut NDIS_NIC_SWITCH_CAPABILITIES,
    /// `TRUE` if NDK is enabled on the adapter (revision 4).
    pub NDKEnabled: BOOLEAN,
    /// NDK capabilities (revision 4).
    pub NDKCapabilities: *mut NDIS_NDK_CAPABILITIES,
    /// SR-IOV capabilities (revision 4).
    pub SriovCapabilities: *mut NDIS_SRIOV_CAPABILITIES,
    /// NIC switches (revision 4).
    pub NicSwitchArray: *mut NDIS_NIC_SWITCH_INFO_ARRAY,
}

// ---------------------------------------------------------------------
// NDIS_OPEN_PARAMETERS (ndis.h:8757).

/// `NDIS_OPEN_PARAMETERS` revision.
pub const NDIS_OPEN_PARAMETERS_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_OPEN_PARAMETERS, FrameTypeArraySize)`.
pub const NDIS_SIZEOF_OPEN_PARAMETERS_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_OPEN_PARAMETERS, FrameTypeArraySize);

/// What a protocol passes to `NdisOpenAdapterEx`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_OPEN_PARAMETERS {
    /// `NDIS_OBJECT_TYPE_OPEN_PARAMETERS`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// `NDIS_BIND_PARAMETERS.AdapterName`.
    pub AdapterName: *mut NDIS_STRING,
    /// Media the protocol accepts.
    pub MediumArray: *mut NDIS_MEDIUM,
    /// Entries of `MediumArray`.
    pub MediumArraySize: UINT,
    /// Where NDIS writes the index of the medium chosen.
    pub SelectedMediumIndex: *mut UINT,
    /// EtherTypes the protocol receives (network byte order).
    pub FrameTypeArray: *mut NET_FRAME_TYPE,
    /// Entries of `FrameTypeArray`.
    pub FrameTypeArraySize: UINT,
}

// ---------------------------------------------------------------------
// Pause and restart (ndis.h:8813-8842).

/// `NDIS_PROTOCOL_PAUSE_PARAMETERS` revision.
pub const NDIS_PROTOCOL_PAUSE_PARAMETERS_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_PROTOCOL_PAUSE_PARAMETERS, PauseReason)`.
pub const NDIS_SIZEOF_PROTOCOL_PAUSE_PARAMETERS_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_PROTOCOL_PAUSE_PARAMETERS, PauseReason);

/// The `Buffer` of a `NetEventPause` notification.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NDIS_PROTOCOL_PAUSE_PARAMETERS {
    /// Header set by NDIS.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved flags.
    pub Flags: ULONG,
    /// `NDIS_PAUSE_*` reason bits.
    pub PauseReason: ULONG,
}

/// `NDIS_PROTOCOL_RESTART_PARAMETERS` revision.
pub const NDIS_PROTOCOL_RESTART_PARAMETERS_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_PROTOCOL_RESTART_PARAMETERS, Flags)`.
pub const NDIS_SIZEOF_PROTOCOL_RESTART_PARAMETERS_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_PROTOCOL_RESTART_PARAMETERS, Flags);

/// The `Buffer` of a `NetEventRestart` notification.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_PROTOCOL_RESTART_PARAMETERS {
    /// Header set by NDIS.
    pub Header: NDIS_OBJECT_HEADER,
    /// Names of the filter modules below (multi-string).
    pub FilterModuleNameBuffer: *mut UCHAR,
    /// Bytes of `FilterModuleNameBuffer`.
    pub FilterModuleNameBufferLength: ULONG,
    /// Restart attribute chain (opaque, never read).
    pub RestartAttributes: *mut NDIS_RESTART_ATTRIBUTES,
    /// Index of the interface bound to.
    pub BoundIfIndex: NET_IFINDEX,
    /// LUID of the interface bound to.
    pub BoundIfNetluid: NET_LUID,
    /// Reserved flags.
    pub Flags: ULONG,
}

// ---------------------------------------------------------------------
// Handler types, in the order of the characteristics.

/// `ProtocolBindAdapterEx` (`PASSIVE_LEVEL`).
pub type PROTOCOL_BIND_ADAPTER_EX = unsafe extern "win64" fn(
    ProtocolDriverContext: NDIS_HANDLE,
    BindContext: NDIS_HANDLE,
    BindParameters: *mut NDIS_BIND_PARAMETERS,
) -> NDIS_STATUS;
/// Nullable [`PROTOCOL_BIND_ADAPTER_EX`].
pub type BIND_HANDLER_EX = Option<PROTOCOL_BIND_ADAPTER_EX>;

/// `ProtocolUnbindAdapterEx` (`PASSIVE_LEVEL`).
pub type PROTOCOL_UNBIND_ADAPTER_EX = unsafe extern "win64" fn(
    UnbindContext: NDIS_HANDLE,
    ProtocolBindingContext: NDIS_HANDLE,
) -> NDIS_STATUS;
/// Nullable [`PROTOCOL_UNBIND_ADAPTER_EX`].
pub type UNBIND_HANDLER_EX = Option<PROTOCOL_UNBIND_ADAPTER_EX>;

/// `ProtocolOpenAdapterCompleteEx` (`PASSIVE_LEVEL`).
pub type PROTOCOL_OPEN_ADAPTER_COMPLETE_EX =
    unsafe extern "win64" fn(ProtocolBindingContext: NDIS_HANDLE, Status: NDIS_STATUS);
/// Nullable [`PROTOCOL_OPEN_ADAPTER_COMPLETE_EX`].
pub type OPEN_ADAPTER_COMPLETE_HANDLER_EX = Option<PROTOCOL_OPEN_ADAPTER_COMPLETE_EX>;

/// `ProtocolCloseAdapterCompleteEx` (`PASSIVE_LEVEL`).
pub type PROTOCOL_CLOSE_ADAPTER_COMPLETE_EX =
    unsafe extern "win64" fn(ProtocolBindingContext: NDIS_HANDLE);
/// Nullable [`PROTOCOL_CLOSE_ADAPTER_COMPLETE_EX`].
pub type CLOSE_ADAPTER_COMPLETE_HANDLER_EX = Option<PROTOCOL_CLOSE_ADAPTER_COMPLETE_EX>;

/// `ProtocolNetPnPEvent` (`PASSIVE_LEVEL`).
pub type PROTOCOL_NET_PNP_EVENT = unsafe extern "win64" fn(
    ProtocolBindingContext: NDIS_HANDLE,
    NetPnPEventNotification: *mut NET_PNP_EVENT_NOTIFICATION,
) -> NDIS_STATUS;
/// Nullable [`PROTOCOL_NET_PNP_EVENT`].
pub type NET_PNP_EVENT_HANDLER = Option<PROTOCOL_NET_PNP_EVENT>;

/// `ProtocolUninstall` (`PASSIVE_LEVEL`).
pub type PROTOCOL_UNINSTALL = unsafe extern "win64" fn();
/// Nullable [`PROTOCOL_UNINSTALL`].
pub type UNINSTALL_PROTOCOL_HANDLER = Option<PROTOCOL_UNINSTALL>;

/// `ProtocolOidRequestComplete` (`<= DISPATCH_LEVEL`).
pub type PROTOCOL_OID_REQUEST_COMPLETE = unsafe extern "win64" fn(
    ProtocolBindingContext: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
    Status: NDIS_STATUS,
);
/// Nullable [`PROTOCOL_OID_REQUEST_COMPLETE`].
pub type OID_REQUEST_COMPLETE_HANDLER = Option<PROTOCOL_OID_REQUEST_COMPLETE>;

/// `ProtocolStatusEx` (`<= DISPATCH_LEVEL`).
pub type PROTOCOL_STATUS_EX = unsafe extern "win64" fn(
    ProtocolBindingContext: NDIS_HANDLE,
    StatusIndication: *mut NDIS_STATUS_INDICATION,
);
/// Nullable [`PROTOCOL_STATUS_EX`].
pub type STATUS_HANDLER_EX = Option<PROTOCOL_STATUS_EX>;

/// `ProtocolReceiveNetBufferLists` (`<= DISPATCH_LEVEL`).
pub type PROTOCOL_RECEIVE_NET_BUFFER_LISTS = unsafe extern "win64" fn(
    ProtocolBindingContext: NDIS_HANDLE,
    NetBufferLists: *mut NET_BUFFER_LIST,
    PortNumber: NDIS_PORT_NUMBER,
    NumberOfNetBufferLists: ULONG,
    ReceiveFlags: ULONG,
);
/// Nullable [`PROTOCOL_RECEIVE_NET_BUFFER_LISTS`].
pub type RECEIVE_NET_BUFFER_LISTS_HANDLER = Option<PROTOCOL_RECEIVE_NET_BUFFER_LISTS>;

/// `ProtocolSendNetBufferListsComplete` (`<= DISPATCH_LEVEL`).
pub type PROTOCOL_SEND_NET_BUFFER_LISTS_COMPLETE = unsafe extern "win64" fn(
    ProtocolBindingContext: NDIS_HANDLE,
    NetBufferList: *mut NET_BUFFER_LIST,
    SendCompleteFlags: ULONG,
);
/// Nullable [`PROTOCOL_SEND_NET_BUFFER_LISTS_COMPLETE`].
pub type SEND_NET_BUFFER_LISTS_COMPLETE_HANDLER = Option<PROTOCOL_SEND_NET_BUFFER_LISTS_COMPLETE>;

/// `ProtocolDirectOidRequestComplete` (`<= DISPATCH_LEVEL`, NDIS 6.1).
pub type PROTOCOL_DIRECT_OID_REQUEST_COMPLETE = unsafe extern "win64" fn(
    ProtocolBindingContext: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
    Status: NDIS_STATUS,
);
/// Nullable [`PROTOCOL_DIRECT_OID_REQUEST_COMPLETE`].
pub type DIRECT_OID_REQUEST_COMPLETE_HANDLER = Option<PROTOCOL_DIRECT_OID_REQUEST_COMPLETE>;

// ---------------------------------------------------------------------
// NDIS_PROTOCOL_DRIVER_CHARACTERISTICS (ndis.h:8627).

/// `NDIS_PROTOCOL_DRIVER_CHARACTERISTICS` revision 1 (NDIS 6.0).
pub const NDIS_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_1: UCHAR = 1;
/// Revision 2 (NDIS 6.1): adds `DirectOidRequestCompleteHandler`.
pub const NDIS_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2: UCHAR = 2;
/// `RTL_SIZEOF_THROUGH_FIELD(..., SendNetBufferListsCompleteHandler)`.
pub const NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_1: u16 = crate::sizeof_through_field!(
    NDIS_PROTOCOL_DRIVER_CHARACTERISTICS,
    SendNetBufferListsCompleteHandler
);
/// `RTL_SIZEOF_THROUGH_FIELD(..., DirectOidRequestCompleteHandler)`.
pub const NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2: u16 = crate::sizeof_through_field!(
    NDIS_PROTOCOL_DRIVER_CHARACTERISTICS,
    DirectOidRequestCompleteHandler
);
/// Characteristics flag: the protocol copes with a current MAC address
/// change without rebinding (NDIS 6.50).
pub const NDIS_PROTOCOL_DRIVER_SUPPORTS_CURRENT_MAC_ADDRESS_CHANGE: ULONG = 0x0000_0002;
/// Characteristics flag: the protocol copes with an L2 MTU change without
/// rebinding (NDIS 6.50).
pub const NDIS_PROTOCOL_DRIVER_SUPPORTS_L2_MTU_SIZE_CHANGE: ULONG = 0x0000_0004;

/// What a protocol driver registers with `NdisRegisterProtocolDriver`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
    /// `NDIS_OBJECT_TYPE_PROTOCOL_DRIVER_CHARACTERISTICS`.
    pub Header: NDIS_OBJECT_HEADER,
    /// NDIS major version the protocol is written for.
    pub MajorNdisVersion: UCHAR,
    /// NDIS minor version the protocol is written for.
    pub MinorNdisVersion: UCHAR,
    /// Driver's own major version.
    pub MajorDriverVersion: UCHAR,
    /// Driver's own minor version.
    pub MinorDriverVersion: UCHAR,
    /// `NDIS_PROTOCOL_DRIVER_SUPPORTS_*`.
    pub Flags: ULONG,
    /// The protocol's service name (as in its INF).
    pub Name: NDIS_STRING,
    /// `ProtocolSetOptions`.
    pub SetOptionsHandler: SET_OPTIONS_HANDLER,
    /// `ProtocolBindAdapterEx`.
    pub BindAdapterHandlerEx: BIND_HANDLER_EX,
    /// `ProtocolUnbindAdapterEx`.
    pub UnbindAdapterHandlerEx: UNBIND_HANDLER_EX,
    /// `ProtocolOpenAdapterCompleteEx`.
    pub OpenAdapterCompleteHandlerEx: OPEN_ADAPTER_COMPLETE_HANDLER_EX,
    /// `ProtocolCloseAdapterCompleteEx`.
    pub CloseAdapterCompleteHandlerEx: CLOSE_ADAPTER_COMPLETE_HANDLER_EX,
    /// `ProtocolNetPnPEvent`.
    pub NetPnPEventHandler: NET_PNP_EVENT_HANDLER,
    /// `ProtocolUninstall`.
    pub UninstallHandler: UNINSTALL_PROTOCOL_HANDLER,
    /// `ProtocolOidRequestComplete`.
    pub OidRequestCompleteHandler: OID_REQUEST_COMPLETE_HANDLER,
    /// `ProtocolStatusEx`.
    pub StatusHandlerEx: STATUS_HANDLER_EX,
    /// `ProtocolReceiveNetBufferLists`.
    pub ReceiveNetBufferListsHandler: RECEIVE_NET_BUFFER_LISTS_HANDLER,
    /// `ProtocolSendNetBufferListsComplete`.
    pub SendNetBufferListsCompleteHandler: SEND_NET_BUFFER_LISTS_COMPLETE_HANDLER,
    /// `ProtocolDirectOidRequestComplete` (revision 2).
    pub DirectOidRequestCompleteHandler: DIRECT_OID_REQUEST_COMPLETE_HANDLER,
}

impl NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
    /// Revision-2 characteristics for the NDIS version this crate
    /// registers ([`crate::version`]), named `Name`, with no handlers yet.
    pub const fn new(
        Name: NDIS_STRING,
        MajorDriverVersion: UCHAR,
        MinorDriverVersion: UCHAR,
    ) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_PROTOCOL_DRIVER_CHARACTERISTICS,
                NDIS_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2,
                NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2,
            ),
            MajorNdisVersion: NDIS_MINIPORT_MAJOR_VERSION,
            MinorNdisVersion: NDIS_MINIPORT_MINOR_VERSION,
            MajorDriverVersion,
            MinorDriverVersion,
            Flags: 0,
            Name,
            SetOptionsHandler: None,
            BindAdapterHandlerEx: None,
            UnbindAdapterHandlerEx: None,
            OpenAdapterCompleteHandlerEx: None,
            CloseAdapterCompleteHandlerEx: None,
            NetPnPEventHandler: None,
            UninstallHandler: None,
            OidRequestCompleteHandler: None,
            StatusHandlerEx: None,
            ReceiveNetBufferListsHandler: None,
            SendNetBufferListsCompleteHandler: None,
            DirectOidRequestCompleteHandler: None,
        }
    }
}

impl NDIS_OPEN_PARAMETERS {
    /// Revision-1 open parameters; NDIS writes the chosen medium's index
    /// to `*SelectedMediumIndex`.
    pub const fn new(
        AdapterName: *mut NDIS_STRING,
        MediumArray: *mut NDIS_MEDIUM,
        MediumArraySize: UINT,
        SelectedMediumIndex: *mut UINT,
        FrameTypeArray: *mut NET_FRAME_TYPE,
        FrameTypeArraySize: UINT,
    ) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_OPEN_PARAMETERS,
                NDIS_OPEN_PARAMETERS_REVISION_1,
                NDIS_SIZEOF_OPEN_PARAMETERS_REVISION_1,
            ),
            AdapterName,
            MediumArray,
            MediumArraySize,
            SelectedMediumIndex,
            FrameTypeArray,
            FrameTypeArraySize,
        }
    }
}

//! Miniport adapter attributes (`ndis.h`) that `MiniportInitializeEx`
//! sets with `NdisMSetMiniportAttributes`: registration, general and NDK
//! attributes, plus the interface enums (`ifdef.h`) and media states they
//! carry.
//!
//! `NDIS_MINIPORT_ADAPTER_ATTRIBUTES` is a C union discriminated by
//! `Header.Type`, and NDIS reads only `Header.Size` bytes of it. The arms
//! this driver never sets are left out. Their x64 sizes at NDIS 6.50,
//! computed from their `ndis.h` field lists: add-device registration 24,
//! offload 40, native 802.11 64, hardware assist 96, PacketDirect 12; all
//! below the general attributes' 224, so the union keeps the C size.

use core::fmt;
use core::ptr;

use ndkpi::{BOOLEAN, UCHAR, ULONG};

use crate::ndk::NDIS_NDK_CAPABILITIES;
use crate::object::{
    NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
    NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES,
};
use crate::oid::{NDIS_MEDIUM, NDIS_PHYSICAL_MEDIUM};
use crate::types::{
    NDIS_HANDLE, NDIS_MAX_PHYS_ADDRESS_LENGTH, NDIS_OID, NDIS_PM_CAPABILITIES,
    NDIS_PNP_CAPABILITIES, NDIS_RECEIVE_SCALE_CAPABILITIES, NET_IFTYPE, UINT, ULONG64,
};

// ---------------------------------------------------------------------
// Interface enums (ifdef.h) and media states (ntddndis.h).

/// Bus of the adapter (`NDIS_INTERFACE_TYPE`, mirrors `INTERFACE_TYPE`).
pub type NDIS_INTERFACE_TYPE = i32;
/// Internal (what a virtual adapter reports).
pub const NdisInterfaceInternal: NDIS_INTERFACE_TYPE = 0;
/// PCI.
pub const NdisInterfacePci: NDIS_INTERFACE_TYPE = 5;
/// PnP-enumerated bus.
pub const NdisInterfacePNPBus: NDIS_INTERFACE_TYPE = 15;

/// Connect state (`NET_IF_MEDIA_CONNECT_STATE`, alias
/// `NDIS_MEDIA_CONNECT_STATE`).
pub type NDIS_MEDIA_CONNECT_STATE = i32;
/// Unknown.
pub const MediaConnectStateUnknown: NDIS_MEDIA_CONNECT_STATE = 0;
/// Connected.
pub const MediaConnectStateConnected: NDIS_MEDIA_CONNECT_STATE = 1;
/// Disconnected.
pub const MediaConnectStateDisconnected: NDIS_MEDIA_CONNECT_STATE = 2;

/// Duplex state (`NET_IF_MEDIA_DUPLEX_STATE`, alias
/// `NDIS_MEDIA_DUPLEX_STATE`).
pub type NDIS_MEDIA_DUPLEX_STATE = i32;
/// Unknown.
pub const MediaDuplexStateUnknown: NDIS_MEDIA_DUPLEX_STATE = 0;
/// Half duplex.
pub const MediaDuplexStateHalf: NDIS_MEDIA_DUPLEX_STATE = 1;
/// Full duplex.
pub const MediaDuplexStateFull: NDIS_MEDIA_DUPLEX_STATE = 2;

/// Access type of the interface (`NET_IF_ACCESS_TYPE`).
pub type NET_IF_ACCESS_TYPE = i32;
/// Loops transmit data back as receive data.
pub const NET_IF_ACCESS_LOOPBACK: NET_IF_ACCESS_TYPE = 1;
/// LAN with broadcast/multicast (Ethernet).
pub const NET_IF_ACCESS_BROADCAST: NET_IF_ACCESS_TYPE = 2;
/// Point to point.
pub const NET_IF_ACCESS_POINT_TO_POINT: NET_IF_ACCESS_TYPE = 3;
/// Point to multipoint.
pub const NET_IF_ACCESS_POINT_TO_MULTI_POINT: NET_IF_ACCESS_TYPE = 4;

/// Direction of the interface (`NET_IF_DIRECTION_TYPE`).
pub type NET_IF_DIRECTION_TYPE = i32;
/// Sends and receives.
pub const NET_IF_DIRECTION_SENDRECEIVE: NET_IF_DIRECTION_TYPE = 0;
/// Sends only.
pub const NET_IF_DIRECTION_SENDONLY: NET_IF_DIRECTION_TYPE = 1;
/// Receives only.
pub const NET_IF_DIRECTION_RECEIVEONLY: NET_IF_DIRECTION_TYPE = 2;

/// Connection type of the interface (`NET_IF_CONNECTION_TYPE`).
pub type NET_IF_CONNECTION_TYPE = i32;
/// Always connected (Ethernet).
pub const NET_IF_CONNECTION_DEDICATED: NET_IF_CONNECTION_TYPE = 1;
/// Connected by the remote side.
pub const NET_IF_CONNECTION_PASSIVE: NET_IF_CONNECTION_TYPE = 2;
/// Connected on demand.
pub const NET_IF_CONNECTION_DEMAND: NET_IF_CONNECTION_TYPE = 3;

/// IANA `ifType` of Ethernet (`IF_TYPE_ETHERNET_CSMACD`, `*IfType` 6).
pub const IF_TYPE_ETHERNET_CSMACD: NET_IFTYPE = 6;

/// Link speed that is not known (`NET_IF_LINK_SPEED_UNKNOWN`, all ones).
pub const NDIS_LINK_SPEED_UNKNOWN: ULONG64 = u64::MAX;

// ---------------------------------------------------------------------
// Registration attributes.

/// `AttributeFlags`: a hardware device.
pub const NDIS_MINIPORT_ATTRIBUTES_HARDWARE_DEVICE: ULONG = 0x0000_0001;
/// `AttributeFlags`: an NDIS-WDM driver.
pub const NDIS_MINIPORT_ATTRIBUTES_NDIS_WDM: ULONG = 0x0000_0002;
/// `AttributeFlags`: surprise removal is handled.
pub const NDIS_MINIPORT_ATTRIBUTES_SURPRISE_REMOVE_OK: ULONG = 0x0000_0004;
/// `AttributeFlags`: not a connection-oriented (CoNDIS) miniport.
pub const NDIS_MINIPORT_ATTRIBUTES_NOT_CO_NDIS: ULONG = 0x0000_0008;
/// `AttributeFlags`: do not bind to all CoNDIS protocols.
pub const NDIS_MINIPORT_ATTRIBUTES_DO_NOT_BIND_TO_ALL_CO: ULONG = 0x0000_0010;
/// `AttributeFlags`: no halt on system suspend.
pub const NDIS_MINIPORT_ATTRIBUTES_NO_HALT_ON_SUSPEND: ULONG = 0x0000_0020;
/// `AttributeFlags`: a bus-master DMA device.
pub const NDIS_MINIPORT_ATTRIBUTES_BUS_MASTER: ULONG = 0x0000_0040;
/// `AttributeFlags`: the miniport controls the default port.
pub const NDIS_MINIPORT_ATTRIBUTES_CONTROLS_DEFAULT_PORT: ULONG = 0x0000_0080;
/// `AttributeFlags`: no pause on system suspend (NDIS 6.30).
pub const NDIS_MINIPORT_ATTRIBUTES_NO_PAUSE_ON_SUSPEND: ULONG = 0x0000_0100;
/// `AttributeFlags`: no OID interception on non-default ports (NDIS 6.30).
pub const NDIS_MINIPORT_ATTRIBUTES_NO_OID_INTERCEPT_ON_NONDEFAULT_PORTS: ULONG = 0x0000_0200;
/// `AttributeFlags`: register a bugcheck callback (NDIS 6.30).
pub const NDIS_MINIPORT_ATTRIBUTES_REGISTER_BUGCHECK_CALLBACK: ULONG = 0x0000_0400;

/// Registration attributes revision for NDIS 6.0.
pub const NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_1: UCHAR = 1;
/// Registration attributes revision for NDIS 6.30 (same layout).
pub const NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2: UCHAR = 2;
/// `RTL_SIZEOF_THROUGH_FIELD(..., InterfaceType)`.
pub const NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES, InterfaceType);
/// Same value as revision 1.
pub const NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2: u16 =
    NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_1;

/// The first attributes a miniport sets: its adapter context and flags.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES {
    /// `NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES`.
    pub Header: NDIS_OBJECT_HEADER,
    /// The context NDIS passes back to every adapter handler.
    pub MiniportAdapterContext: NDIS_HANDLE,
    /// `NDIS_MINIPORT_ATTRIBUTES_*`.
    pub AttributeFlags: ULONG,
    /// Interval of `MiniportCheckForHangEx` calls, in seconds.
    pub CheckForHangTimeInSeconds: UINT,
    /// Bus type.
    pub InterfaceType: NDIS_INTERFACE_TYPE,
}

impl NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES {
    /// Revision-2 attributes with the given context and flags.
    pub const fn new(
        MiniportAdapterContext: NDIS_HANDLE,
        AttributeFlags: ULONG,
        CheckForHangTimeInSeconds: UINT,
        InterfaceType: NDIS_INTERFACE_TYPE,
    ) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES,
                NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2,
                NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2,
            ),
            MiniportAdapterContext,
            AttributeFlags,
            CheckForHangTimeInSeconds,
            InterfaceType,
        }
    }
}

// ---------------------------------------------------------------------
// General attributes.

/// `SupportedStatistics` bit: `OID_GEN_XMIT_OK`.
pub const NDIS_STATISTICS_XMIT_OK_SUPPORTED: ULONG = 0x0000_0001;
/// `SupportedStatistics` bit: `OID_GEN_RCV_OK`.
pub const NDIS_STATISTICS_RCV_OK_SUPPORTED: ULONG = 0x0000_0002;
/// `SupportedStatistics` bit: `OID_GEN_XMIT_ERROR`.
pub const NDIS_STATISTICS_XMIT_ERROR_SUPPORTED: ULONG = 0x0000_0004;
/// `SupportedStatistics` bit: `OID_GEN_RCV_ERROR`.
pub const NDIS_STATISTICS_RCV_ERROR_SUPPORTED: ULONG = 0x0000_0008;
/// `SupportedStatistics` bit: `OID_GEN_RCV_NO_BUFFER`.
pub const NDIS_STATISTICS_RCV_NO_BUFFER_SUPPORTED: ULONG = 0x0000_0010;
/// `SupportedStatistics` bit: directed bytes sent.
pub const NDIS_STATISTICS_DIRECTED_BYTES_XMIT_SUPPORTED: ULONG = 0x0000_0020;
/// `SupportedStatistics` bit: directed frames sent.
pub const NDIS_STATISTICS_DIRECTED_FRAMES_XMIT_SUPPORTED: ULONG = 0x0000_0040;
/// `SupportedStatistics` bit: multicast bytes sent.
pub const NDIS_STATISTICS_MULTICAST_BYTES_XMIT_SUPPORTED: ULONG = 0x0000_0080;
/// `SupportedStatistics` bit: multicast frames sent.
pub const NDIS_STATISTICS_MULTICAST_FRAMES_XMIT_SUPPORTED: ULONG = 0x0000_0100;
/// `SupportedStatistics` bit: broadcast bytes sent.
pub const NDIS_STATISTICS_BROADCAST_BYTES_XMIT_SUPPORTED: ULONG = 0x0000_0200;
/// `SupportedStatistics` bit: broadcast frames sent.
pub const NDIS_STATISTICS_BROADCAST_FRAMES_XMIT_SUPPORTED: ULONG = 0x0000_0400;
/// `SupportedStatistics` bit: directed bytes received.
pub const NDIS_STATISTICS_DIRECTED_BYTES_RCV_SUPPORTED: ULONG = 0x0000_0800;
/// `SupportedStatistics` bit: directed frames received.
pub const NDIS_STATISTICS_DIRECTED_FRAMES_RCV_SUPPORTED: ULONG = 0x0000_1000;
/// `SupportedStatistics` bit: multicast bytes received.
pub const NDIS_STATISTICS_MULTICAST_BYTES_RCV_SUPPORTED: ULONG = 0x0000_2000;
/// `SupportedStatistics` bit: multicast frames received.
pub const NDIS_STATISTICS_MULTICAST_FRAMES_RCV_SUPPORTED: ULONG = 0x0000_4000;
/// `SupportedStatistics` bit: broadcast bytes received.
pub const NDIS_STATISTICS_BROADCAST_BYTES_RCV_SUPPORTED: ULONG = 0x0000_8000;
/// `SupportedStatistics` bit: broadcast frames received.
pub const NDIS_STATISTICS_BROADCAST_FRAMES_RCV_SUPPORTED: ULONG = 0x0001_0000;
/// `SupportedStatistics` bit: CRC errors received.
pub const NDIS_STATISTICS_RCV_CRC_ERROR_SUPPORTED: ULONG = 0x0002_0000;
/// `SupportedStatistics` bit: transmit queue length.
pub const NDIS_STATISTICS_TRANSMIT_QUEUE_LENGTH_SUPPORTED: ULONG = 0x0004_0000;
/// `SupportedStatistics` bit: bytes received.
pub const NDIS_STATISTICS_BYTES_RCV_SUPPORTED: ULONG = 0x0008_0000;
/// `SupportedStatistics` bit: bytes sent.
pub const NDIS_STATISTICS_BYTES_XMIT_SUPPORTED: ULONG = 0x0010_0000;
/// `SupportedStatistics` bit: receive discards.
pub const NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED: ULONG = 0x0020_0000;
/// `SupportedStatistics` bit: `OID_GEN_STATISTICS`.
pub const NDIS_STATISTICS_GEN_STATISTICS_SUPPORTED: ULONG = 0x0040_0000;
/// `SupportedStatistics` bit: transmit discards.
pub const NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED: ULONG = 0x0800_0000;

/// General attributes revision for NDIS 6.0.
pub const NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_1: UCHAR = 1;
/// General attributes revision for NDIS 6.20 (adds
/// `PowerManagementCapabilitiesEx`).
pub const NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2: UCHAR = 2;
/// `RTL_SIZEOF_THROUGH_FIELD(..., AutoNegotiationFlags)`.
pub const NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_1: u16 = crate::sizeof_through_field!(
    NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    AutoNegotiationFlags
);
/// `RTL_SIZEOF_THROUGH_FIELD(..., PowerManagementCapabilitiesEx)`.
pub const NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2: u16 = crate::sizeof_through_field!(
    NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    PowerManagementCapabilitiesEx
);

/// Medium, speeds, addresses, filters and supported OIDs of the adapter.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES {
    /// `NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES`.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved flags.
    pub Flags: ULONG,
    /// `NdisMedium802_3` for Ethernet.
    pub MediaType: NDIS_MEDIUM,
    /// `NdisPhysicalMedium802_3` for wired Ethernet.
    pub PhysicalMediumType: NDIS_PHYSICAL_MEDIUM,
    /// Largest frame without the link header.
    pub MtuSize: ULONG,
    /// Highest transmit speed, bit/s.
    pub MaxXmitLinkSpeed: ULONG64,
    /// Current transmit speed, bit/s.
    pub XmitLinkSpeed: ULONG64,
    /// Highest receive speed, bit/s.
    pub MaxRcvLinkSpeed: ULONG64,
    /// Current receive speed, bit/s.
    pub RcvLinkSpeed: ULONG64,
    /// Connect state.
    pub MediaConnectState: NDIS_MEDIA_CONNECT_STATE,
    /// Duplex state.
    pub MediaDuplexState: NDIS_MEDIA_DUPLEX_STATE,
    /// Lookahead size.
    pub LookaheadSize: ULONG,
    /// Legacy power capabilities; null when unsupported.
    pub PowerManagementCapabilities: *mut NDIS_PNP_CAPABILITIES,
    /// `NDIS_MAC_OPTION_*`.
    pub MacOptions: ULONG,
    /// `NDIS_PACKET_TYPE_*` the adapter can filter on.
    pub SupportedPacketFilters: ULONG,
    /// Longest multicast list.
    pub MaxMulticastListSize: ULONG,
    /// Bytes of the MAC addresses below that are used (6 for Ethernet).
    pub MacAddressLength: u16,
    /// Burned-in address.
    pub PermanentMacAddress: [UCHAR; NDIS_MAX_PHYS_ADDRESS_LENGTH],
    /// Address in use.
    pub CurrentMacAddress: [UCHAR; NDIS_MAX_PHYS_ADDRESS_LENGTH],
    /// RSS capabilities; null when unsupported.
    pub RecvScaleCapabilities: *mut NDIS_RECEIVE_SCALE_CAPABILITIES,
    /// `NET_IF_ACCESS_BROADCAST` for Ethernet.
    pub AccessType: NET_IF_ACCESS_TYPE,
    /// `NET_IF_DIRECTION_SENDRECEIVE` for Ethernet.
    pub DirectionType: NET_IF_DIRECTION_TYPE,
    /// `NET_IF_CONNECTION_DEDICATED` for Ethernet.
    pub ConnectionType: NET_IF_CONNECTION_TYPE,
    /// `IF_TYPE_ETHERNET_CSMACD` for Ethernet.
    pub IfType: NET_IFTYPE,
    /// Whether a physical connector is present (false for a virtual NIC).
    pub IfConnectorPresent: BOOLEAN,
    /// `NDIS_STATISTICS_*_SUPPORTED`.
    pub SupportedStatistics: ULONG,
    /// `NDIS_SUPPORTED_PAUSE_FUNCTIONS` value.
    pub SupportedPauseFunctions: ULONG,
    /// Data back-fill size.
    pub DataBackFillSize: ULONG,
    /// Context back-fill size.
    pub ContextBackFillSize: ULONG,
    /// The OIDs answered, `SupportedOidListLength` bytes.
    pub SupportedOidList: *mut NDIS_OID,
    /// Byte length of `SupportedOidList`.
    pub SupportedOidListLength: ULONG,
    /// Auto-negotiation flags.
    pub AutoNegotiationFlags: ULONG,
    /// NDIS 6.20 power capabilities (revision 2); null when unsupported.
    pub PowerManagementCapabilitiesEx: *mut NDIS_PM_CAPABILITIES,
}

impl NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES {
    /// Revision-2 attributes with every other field zero or null, ready to
    /// be filled.
    pub const fn new() -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
                NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2,
                NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2,
            ),
            Flags: 0,
            MediaType: 0,
            PhysicalMediumType: 0,
            MtuSize: 0,
            MaxXmitLinkSpeed: 0,
            XmitLinkSpeed: 0,
            MaxRcvLinkSpeed: 0,
            RcvLinkSpeed: 0,
            MediaConnectState: 0,
            MediaDuplexState: 0,
            LookaheadSize: 0,
            PowerManagementCapabilities: ptr::null_mut(),
            MacOptions: 0,
            SupportedPacketFilters: 0,
            MaxMulticastListSize: 0,
            MacAddressLength: 0,
            PermanentMacAddress: [0; NDIS_MAX_PHYS_ADDRESS_LENGTH],
            CurrentMacAddress: [0; NDIS_MAX_PHYS_ADDRESS_LENGTH],
            RecvScaleCapabilities: ptr::null_mut(),
            AccessType: 0,
            DirectionType: 0,
            ConnectionType: 0,
            IfType: 0,
            IfConnectorPresent: 0,
            SupportedStatistics: 0,
            SupportedPauseFunctions: 0,
            DataBackFillSize: 0,
            ContextBackFillSize: 0,
            SupportedOidList: ptr::null_mut(),
            SupportedOidListLength: 0,
            AutoNegotiationFlags: 0,
            PowerManagementCapabilitiesEx: ptr::null_mut(),
        }
    }
}

impl Default for NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES {
    fn default() -> Self {
        Self::new()
    }
}

// ---------------------------------------------------------------------
// NDK attributes.

/// NDK attributes revision (NDIS 6.30).
pub const NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(..., NdkCapabilities)`.
pub const NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES, NdkCapabilities);

/// What an NDK-capable adapter sets in every `MiniportInitializeEx`, even
/// while NDK is disabled.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES {
    /// `NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// Whether NDK is enabled now.
    pub Enabled: BOOLEAN,
    /// Capabilities, reported whether or not NDK is enabled.
    pub NdkCapabilities: *mut NDIS_NDK_CAPABILITIES,
}

impl NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES {
    /// Revision-1 attributes.
    pub const fn new(Enabled: bool, NdkCapabilities: *mut NDIS_NDK_CAPABILITIES) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
                NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1,
                NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1,
            ),
            Enabled: Enabled as BOOLEAN,
            NdkCapabilities,
        }
    }
}

// ---------------------------------------------------------------------
// The union passed to NdisMSetMiniportAttributes.

/// Argument of `NdisMSetMiniportAttributes`: one attribute structure,
/// identified by its header. Build it from the member, e.g.
/// `NDIS_MINIPORT_ADAPTER_ATTRIBUTES { NDKAttributes: attrs }`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union NDIS_MINIPORT_ADAPTER_ATTRIBUTES {
    /// The header every member starts with.
    pub Header: NDIS_OBJECT_HEADER,
    /// Registration attributes.
    pub RegistrationAttributes: NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES,
    /// General attributes.
    pub GeneralAttributes: NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    /// NDK attributes (NDIS 6.30).
    pub NDKAttributes: NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
}

impl From<NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES> for NDIS_MINIPORT_ADAPTER_ATTRIBUTES {
    fn from(RegistrationAttributes: NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES) -> Self {
        Self {
            RegistrationAttributes,
        }
    }
}

impl From<NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES> for NDIS_MINIPORT_ADAPTER_ATTRIBUTES {
    fn from(GeneralAttributes: NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES) -> Self {
        Self { GeneralAttributes }
    }
}

impl From<NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES> for NDIS_MINIPORT_ADAPTER_ATTRIBUTES {
    fn from(NDKAttributes: NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES) -> Self {
        Self { NDKAttributes }
    }
}

impl fmt::Debug for NDIS_MINIPORT_ADAPTER_ATTRIBUTES {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The live member is named by `Header.Type`; reading needs unsafe.
        f.debug_struct("NDIS_MINIPORT_ADAPTER_ATTRIBUTES")
            .finish_non_exhaustive()
    }
}

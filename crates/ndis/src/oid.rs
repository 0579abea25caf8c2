//! OID requests (`NDIS_OID_REQUEST`, `ndis.h`) and the general and 802.3
//! OIDs an Ethernet miniport answers, with the value types they carry
//! (`ntddndis.h`). The NDK OIDs live in [`crate::ndk`].
//!
//! The request's `DATA` member is a C union; reading one of its members
//! needs `unsafe` in Rust, which stays in the driver. All three members
//! start with `Oid` and `InformationBuffer` at the same offsets.

use core::fmt;

use ndkpi::{PVOID, UCHAR, ULONG, USHORT};

use crate::object::NDIS_OBJECT_HEADER;
use crate::types::{
    NDIS_HANDLE, NDIS_NIC_SWITCH_ID, NDIS_NIC_SWITCH_VPORT_ID, NDIS_OID, NDIS_PORT_NUMBER, UINT,
};

/// Kind of an OID request (C enum).
pub type NDIS_REQUEST_TYPE = i32;
/// Query: the miniport fills `InformationBuffer`.
pub const NdisRequestQueryInformation: NDIS_REQUEST_TYPE = 0;
/// Set: the miniport consumes `InformationBuffer`.
pub const NdisRequestSetInformation: NDIS_REQUEST_TYPE = 1;
/// Statistics query (sent by NDIS on behalf of WMI/user mode).
pub const NdisRequestQueryStatistics: NDIS_REQUEST_TYPE = 2;
/// Method: input and output share `InformationBuffer` (NDIS 6).
pub const NdisRequestMethod: NDIS_REQUEST_TYPE = 12;

/// `NDIS_OID_REQUEST.Header.Revision` for NDIS 6.0.
pub const NDIS_OID_REQUEST_REVISION_1: UCHAR = 1;
/// `NDIS_OID_REQUEST.Header.Revision` with the switch fields (NDIS 6.50).
pub const NDIS_OID_REQUEST_REVISION_2: UCHAR = 2;
/// `Timeout` value meaning no timeout.
pub const NDIS_OID_REQUEST_TIMEOUT_INFINITE: UINT = 0;
/// Pointer-sized slots in `NdisReserved`.
pub const NDIS_OID_REQUEST_NDIS_RESERVED_SIZE: usize = 16;
/// `Flags` bit: `VPortId` is valid (NDIS 6.50).
pub const NDIS_OID_REQUEST_FLAGS_VPORT_ID_VALID: ULONG = 0x0001;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_OID_REQUEST, Reserved2)`.
pub const NDIS_SIZEOF_OID_REQUEST_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_OID_REQUEST, Reserved2);
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_OID_REQUEST, Flags)` (NDIS 6.50).
pub const NDIS_SIZEOF_OID_REQUEST_REVISION_2: u16 =
    crate::sizeof_through_field!(NDIS_OID_REQUEST, Flags);

/// `DATA.QUERY_INFORMATION` (C `struct _QUERY`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_OID_REQUEST_QUERY_INFORMATION {
    /// The OID asked for.
    pub Oid: NDIS_OID,
    /// Where the answer goes.
    pub InformationBuffer: PVOID,
    /// Size of `InformationBuffer` in bytes.
    pub InformationBufferLength: UINT,
    /// Bytes the miniport wrote.
    pub BytesWritten: UINT,
    /// Bytes the answer needs, when the buffer was too short.
    pub BytesNeeded: UINT,
}

/// `DATA.SET_INFORMATION` (C `struct _SET`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_OID_REQUEST_SET_INFORMATION {
    /// The OID set.
    pub Oid: NDIS_OID,
    /// The value to set.
    pub InformationBuffer: PVOID,
    /// Size of `InformationBuffer` in bytes.
    pub InformationBufferLength: UINT,
    /// Bytes the miniport consumed.
    pub BytesRead: UINT,
    /// Bytes the value needs, when the buffer was too short.
    pub BytesNeeded: UINT,
}

/// `DATA.METHOD_INFORMATION` (C `struct _METHOD`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_OID_REQUEST_METHOD_INFORMATION {
    /// The OID invoked.
    pub Oid: NDIS_OID,
    /// Input on entry, output on return.
    pub InformationBuffer: PVOID,
    /// Input bytes.
    pub InputBufferLength: ULONG,
    /// Room for output, in bytes.
    pub OutputBufferLength: ULONG,
    /// Method selector.
    pub MethodId: ULONG,
    /// Output bytes written.
    pub BytesWritten: UINT,
    /// Input bytes read.
    pub BytesRead: UINT,
    /// Bytes needed, when a buffer was too short.
    pub BytesNeeded: UINT,
}

/// `NDIS_OID_REQUEST.DATA` (C `union _REQUEST_DATA`); `RequestType`
/// says which member is meant.
#[repr(C)]
#[derive(Clone, Copy)]
pub union NDIS_OID_REQUEST_DATA {
    /// For `NdisRequestQueryInformation` and `NdisRequestQueryStatistics`.
    pub QUERY_INFORMATION: NDIS_OID_REQUEST_QUERY_INFORMATION,
    /// For `NdisRequestSetInformation`.
    pub SET_INFORMATION: NDIS_OID_REQUEST_SET_INFORMATION,
    /// For `NdisRequestMethod`.
    pub METHOD_INFORMATION: NDIS_OID_REQUEST_METHOD_INFORMATION,
}

impl fmt::Debug for NDIS_OID_REQUEST_DATA {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Which member is live depends on `RequestType`; reading needs unsafe.
        f.debug_struct("NDIS_OID_REQUEST_DATA")
            .finish_non_exhaustive()
    }
}

/// An OID request as NDIS hands it to `MiniportOidRequest` (and the
/// direct and synchronous OID handlers). The miniport owns it until it
/// returns a status other than `NDIS_STATUS_PENDING` or calls
/// `NdisMOidRequestComplete`. Revision 1 ends at `Reserved2`; revision 2
/// (NDIS 6.50) adds the last three fields.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_OID_REQUEST {
    /// `NDIS_OBJECT_TYPE_OID_REQUEST`, revision 1 or 2.
    pub Header: NDIS_OBJECT_HEADER,
    /// Query, set or method.
    pub RequestType: NDIS_REQUEST_TYPE,
    /// Target port.
    pub PortNumber: NDIS_PORT_NUMBER,
    /// Seconds before NDIS may cancel it; 0 = never.
    pub Timeout: UINT,
    /// Identifier used by the cancel handlers.
    pub RequestId: PVOID,
    /// NDIS's handle of the request's source.
    pub RequestHandle: NDIS_HANDLE,
    /// OID, buffer and byte counts.
    pub DATA: NDIS_OID_REQUEST_DATA,
    /// Owned by NDIS.
    pub NdisReserved: [UCHAR; NDIS_OID_REQUEST_NDIS_RESERVED_SIZE * size_of::<PVOID>()],
    /// Scratch space the miniport may use while it owns the request.
    pub MiniportReserved: [UCHAR; 2 * size_of::<PVOID>()],
    /// Owned by the request's source.
    pub SourceReserved: [UCHAR; 2 * size_of::<PVOID>()],
    /// Highest revision of the OID's structure that the source knows.
    pub SupportedRevision: UCHAR,
    /// Reserved.
    pub Reserved1: UCHAR,
    /// Reserved.
    pub Reserved2: USHORT,
    /// NIC switch the request targets (revision 2).
    pub SwitchId: NDIS_NIC_SWITCH_ID,
    /// Virtual port the request targets (revision 2).
    pub VPortId: NDIS_NIC_SWITCH_VPORT_ID,
    /// `NDIS_OID_REQUEST_FLAGS_*` (revision 2).
    pub Flags: ULONG,
}

// ---------------------------------------------------------------------
// General OIDs (ntddndis.h).

/// Query: the OIDs this miniport supports (`NDIS_OID[]`).
pub const OID_GEN_SUPPORTED_LIST: NDIS_OID = 0x0001_0101;
/// Query: `NDIS_HARDWARE_STATUS`.
pub const OID_GEN_HARDWARE_STATUS: NDIS_OID = 0x0001_0102;
/// Query: supported media (`NDIS_MEDIUM[]`).
pub const OID_GEN_MEDIA_SUPPORTED: NDIS_OID = 0x0001_0103;
/// Query: medium in use (`NDIS_MEDIUM[]`).
pub const OID_GEN_MEDIA_IN_USE: NDIS_OID = 0x0001_0104;
/// Query: largest lookahead the miniport can provide.
pub const OID_GEN_MAXIMUM_LOOKAHEAD: NDIS_OID = 0x0001_0105;
/// Query: largest frame without the link header (the MTU).
pub const OID_GEN_MAXIMUM_FRAME_SIZE: NDIS_OID = 0x0001_0106;
/// Query: link speed (legacy).
pub const OID_GEN_LINK_SPEED: NDIS_OID = 0x0001_0107;
/// Query: transmit buffer space in bytes.
pub const OID_GEN_TRANSMIT_BUFFER_SPACE: NDIS_OID = 0x0001_0108;
/// Query: receive buffer space in bytes.
pub const OID_GEN_RECEIVE_BUFFER_SPACE: NDIS_OID = 0x0001_0109;
/// Query: transmit block size.
pub const OID_GEN_TRANSMIT_BLOCK_SIZE: NDIS_OID = 0x0001_010A;
/// Query: receive block size.
pub const OID_GEN_RECEIVE_BLOCK_SIZE: NDIS_OID = 0x0001_010B;
/// Query: vendor id.
pub const OID_GEN_VENDOR_ID: NDIS_OID = 0x0001_010C;
/// Query: vendor description string.
pub const OID_GEN_VENDOR_DESCRIPTION: NDIS_OID = 0x0001_010D;
/// Query/set: `NDIS_PACKET_TYPE_*` receive filter.
pub const OID_GEN_CURRENT_PACKET_FILTER: NDIS_OID = 0x0001_010E;
/// Query/set: current lookahead size.
pub const OID_GEN_CURRENT_LOOKAHEAD: NDIS_OID = 0x0001_010F;
/// Query: NDIS version the driver uses.
pub const OID_GEN_DRIVER_VERSION: NDIS_OID = 0x0001_0110;
/// Query: largest frame including the link header.
pub const OID_GEN_MAXIMUM_TOTAL_SIZE: NDIS_OID = 0x0001_0111;
/// Set: protocol options (legacy).
pub const OID_GEN_PROTOCOL_OPTIONS: NDIS_OID = 0x0001_0112;
/// Query: `NDIS_MAC_OPTION_*`.
pub const OID_GEN_MAC_OPTIONS: NDIS_OID = 0x0001_0113;
/// Query: media connect status (legacy).
pub const OID_GEN_MEDIA_CONNECT_STATUS: NDIS_OID = 0x0001_0114;
/// Query: most sends accepted per call (legacy).
pub const OID_GEN_MAXIMUM_SEND_PACKETS: NDIS_OID = 0x0001_0115;
/// Query: vendor's own driver version.
pub const OID_GEN_VENDOR_DRIVER_VERSION: NDIS_OID = 0x0001_0116;
/// Query: custom WMI GUIDs of the miniport.
pub const OID_GEN_SUPPORTED_GUIDS: NDIS_OID = 0x0001_0117;
/// Set: protocol network-layer addresses.
pub const OID_GEN_NETWORK_LAYER_ADDRESSES: NDIS_OID = 0x0001_0118;
/// Set: length of the link header a protocol uses.
pub const OID_GEN_TRANSPORT_HEADER_OFFSET: NDIS_OID = 0x0001_0119;
/// Query: `NDIS_PHYSICAL_MEDIUM`.
pub const OID_GEN_PHYSICAL_MEDIUM: NDIS_OID = 0x0001_0202;
/// Query: maximum link speeds (`NDIS_LINK_SPEED`).
pub const OID_GEN_MAX_LINK_SPEED: NDIS_OID = 0x0001_0206;
/// Query: `NDIS_LINK_STATE`.
pub const OID_GEN_LINK_STATE: NDIS_OID = 0x0001_0207;
/// Set: `NDIS_LINK_PARAMETERS`.
pub const OID_GEN_LINK_PARAMETERS: NDIS_OID = 0x0001_0208;
/// Query/set: interrupt moderation parameters.
pub const OID_GEN_INTERRUPT_MODERATION: NDIS_OID = 0x0001_0209;
/// Query/set: VLAN id.
pub const OID_GEN_VLAN_ID: NDIS_OID = 0x0001_021C;
/// Query: restart attributes (handled by NDIS).
pub const OID_GEN_MINIPORT_RESTART_ATTRIBUTES: NDIS_OID = 0x0001_021D;
/// Query: transmit link speed.
pub const OID_GEN_XMIT_LINK_SPEED: NDIS_OID = 0x0001_0284;
/// Query: receive link speed.
pub const OID_GEN_RCV_LINK_SPEED: NDIS_OID = 0x0001_0285;
/// Query: `NDIS_MEDIA_CONNECT_STATE`.
pub const OID_GEN_MEDIA_CONNECT_STATUS_EX: NDIS_OID = 0x0001_028A;
/// Query: `NDIS_MEDIA_DUPLEX_STATE`.
pub const OID_GEN_MEDIA_DUPLEX_STATE: NDIS_OID = 0x0001_028C;
/// Query: frames sent without error.
pub const OID_GEN_XMIT_OK: NDIS_OID = 0x0002_0101;
/// Query: frames received without error.
pub const OID_GEN_RCV_OK: NDIS_OID = 0x0002_0102;
/// Query: frames that failed to send.
pub const OID_GEN_XMIT_ERROR: NDIS_OID = 0x0002_0103;
/// Query: frames received with errors.
pub const OID_GEN_RCV_ERROR: NDIS_OID = 0x0002_0104;
/// Query: frames dropped for lack of receive buffers.
pub const OID_GEN_RCV_NO_BUFFER: NDIS_OID = 0x0002_0105;
/// Query: `NDIS_STATISTICS_INFO`.
pub const OID_GEN_STATISTICS: NDIS_OID = 0x0002_0106;

// 802.3 OIDs.

/// Query: burned-in MAC address (6 bytes).
pub const OID_802_3_PERMANENT_ADDRESS: NDIS_OID = 0x0101_0101;
/// Query: MAC address in use (6 bytes).
pub const OID_802_3_CURRENT_ADDRESS: NDIS_OID = 0x0101_0102;
/// Query/set: multicast address list (6-byte entries).
pub const OID_802_3_MULTICAST_LIST: NDIS_OID = 0x0101_0103;
/// Query: longest multicast list supported.
pub const OID_802_3_MAXIMUM_LIST_SIZE: NDIS_OID = 0x0101_0104;
/// Query: frames received with alignment errors.
pub const OID_802_3_RCV_ERROR_ALIGNMENT: NDIS_OID = 0x0102_0101;
/// Query: frames sent after one collision.
pub const OID_802_3_XMIT_ONE_COLLISION: NDIS_OID = 0x0102_0102;
/// Query: frames sent after more than one collision.
pub const OID_802_3_XMIT_MORE_COLLISIONS: NDIS_OID = 0x0102_0103;

// Power management OIDs.

/// Query: legacy PnP power capabilities.
pub const OID_PNP_CAPABILITIES: NDIS_OID = 0xFD01_0100;
/// Set: enter a device power state.
pub const OID_PNP_SET_POWER: NDIS_OID = 0xFD01_0101;
/// Query: may the device enter a power state.
pub const OID_PNP_QUERY_POWER: NDIS_OID = 0xFD01_0102;

// ---------------------------------------------------------------------
// Value types of the general OIDs.

/// `OID_GEN_HARDWARE_STATUS` answer (C enum).
pub type NDIS_HARDWARE_STATUS = i32;
/// Ready to send and receive.
pub const NdisHardwareStatusReady: NDIS_HARDWARE_STATUS = 0;
/// Initialising.
pub const NdisHardwareStatusInitializing: NDIS_HARDWARE_STATUS = 1;
/// Resetting.
pub const NdisHardwareStatusReset: NDIS_HARDWARE_STATUS = 2;
/// Closing.
pub const NdisHardwareStatusClosing: NDIS_HARDWARE_STATUS = 3;
/// Not ready.
pub const NdisHardwareStatusNotReady: NDIS_HARDWARE_STATUS = 4;

/// Link medium (C enum; only the values used here are named).
pub type NDIS_MEDIUM = i32;
/// Ethernet (802.3), also what a RoCE adapter reports.
pub const NdisMedium802_3: NDIS_MEDIUM = 0;

/// Physical medium (C enum; only the values used here are named).
pub type NDIS_PHYSICAL_MEDIUM = i32;
/// Not specified.
pub const NdisPhysicalMediumUnspecified: NDIS_PHYSICAL_MEDIUM = 0;
/// Wired Ethernet (`*PhysicalMediaType` 14 in the INF).
pub const NdisPhysicalMedium802_3: NDIS_PHYSICAL_MEDIUM = 14;

/// Receive filter bit: frames addressed to this station.
pub const NDIS_PACKET_TYPE_DIRECTED: ULONG = 0x0000_0001;
/// Receive filter bit: listed multicast frames.
pub const NDIS_PACKET_TYPE_MULTICAST: ULONG = 0x0000_0002;
/// Receive filter bit: all multicast frames.
pub const NDIS_PACKET_TYPE_ALL_MULTICAST: ULONG = 0x0000_0004;
/// Receive filter bit: broadcast frames.
pub const NDIS_PACKET_TYPE_BROADCAST: ULONG = 0x0000_0008;
/// Receive filter bit: every frame on the wire.
pub const NDIS_PACKET_TYPE_PROMISCUOUS: ULONG = 0x0000_0020;
/// Receive filter bit: every frame, including ones the host sent.
pub const NDIS_PACKET_TYPE_ALL_LOCAL: ULONG = 0x0000_0080;

/// MAC option: lookahead data may be copied.
pub const NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA: ULONG = 0x0000_0001;
/// MAC option: receives are serialised.
pub const NDIS_MAC_OPTION_RECEIVE_SERIALIZED: ULONG = 0x0000_0002;
/// MAC option: transfers never pend.
pub const NDIS_MAC_OPTION_TRANSFERS_NOT_PEND: ULONG = 0x0000_0004;
/// MAC option: the adapter does not loop sent frames back.
pub const NDIS_MAC_OPTION_NO_LOOPBACK: ULONG = 0x0000_0008;
/// MAC option: 802.1p priority supported.
pub const NDIS_MAC_OPTION_8021P_PRIORITY: ULONG = 0x0000_0040;
/// MAC option: 802.1Q VLAN supported.
pub const NDIS_MAC_OPTION_8021Q_VLAN: ULONG = 0x0000_0200;

// ---------------------------------------------------------------------
// OID_GEN_STATISTICS (mandatory for NDIS 6 miniports).

/// `NDIS_STATISTICS_INFO` revision.
pub const NDIS_STATISTICS_INFO_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_STATISTICS_INFO, ifHCOutBroadcastOctets)`.
pub const NDIS_SIZEOF_STATISTICS_INFO_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_STATISTICS_INFO, ifHCOutBroadcastOctets);

/// `SupportedStatistics` of the answer: `ifHCInUcastPkts` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_RCV: ULONG = 0x0000_0001;
/// `ifHCInMulticastPkts` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_RCV: ULONG = 0x0000_0002;
/// `ifHCInBroadcastPkts` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_RCV: ULONG = 0x0000_0004;
/// `ifHCInOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_BYTES_RCV: ULONG = 0x0000_0008;
/// `ifInDiscards` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_RCV_DISCARDS: ULONG = 0x0000_0010;
/// `ifInErrors` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_RCV_ERROR: ULONG = 0x0000_0020;
/// `ifHCOutUcastPkts` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_XMIT: ULONG = 0x0000_0040;
/// `ifHCOutMulticastPkts` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_XMIT: ULONG = 0x0000_0080;
/// `ifHCOutBroadcastPkts` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_XMIT: ULONG = 0x0000_0100;
/// `ifHCOutOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_BYTES_XMIT: ULONG = 0x0000_0200;
/// `ifOutErrors` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_XMIT_ERROR: ULONG = 0x0000_0400;
/// `ifOutDiscards` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_XMIT_DISCARDS: ULONG = 0x0000_8000;
/// `ifHCInUcastOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_RCV: ULONG = 0x0001_0000;
/// `ifHCInMulticastOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_RCV: ULONG = 0x0002_0000;
/// `ifHCInBroadcastOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_RCV: ULONG = 0x0004_0000;
/// `ifHCOutUcastOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_XMIT: ULONG = 0x0008_0000;
/// `ifHCOutMulticastOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_XMIT: ULONG = 0x0010_0000;
/// `ifHCOutBroadcastOctets` is valid.
pub const NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_XMIT: ULONG = 0x0020_0000;

/// Answer to `OID_GEN_STATISTICS`: the interface counters (RFC 2863
/// names).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NDIS_STATISTICS_INFO {
    /// `NDIS_OBJECT_TYPE_DEFAULT`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// `NDIS_STATISTICS_FLAGS_VALID_*` of the counters filled in.
    pub SupportedStatistics: ULONG,
    /// Received frames dropped.
    pub ifInDiscards: u64,
    /// Received frames with errors.
    pub ifInErrors: u64,
    /// Bytes received.
    pub ifHCInOctets: u64,
    /// Unicast frames received.
    pub ifHCInUcastPkts: u64,
    /// Multicast frames received.
    pub ifHCInMulticastPkts: u64,
    /// Broadcast frames received.
    pub ifHCInBroadcastPkts: u64,
    /// Bytes sent.
    pub ifHCOutOctets: u64,
    /// Unicast frames sent.
    pub ifHCOutUcastPkts: u64,
    /// Multicast frames sent.
    pub ifHCOutMulticastPkts: u64,
    /// Broadcast frames sent.
    pub ifHCOutBroadcastPkts: u64,
    /// Frames that failed to send.
    pub ifOutErrors: u64,
    /// Frames dropped instead of sent.
    pub ifOutDiscards: u64,
    /// Unicast bytes received.
    pub ifHCInUcastOctets: u64,
    /// Multicast bytes received.
    pub ifHCInMulticastOctets: u64,
    /// Broadcast bytes received.
    pub ifHCInBroadcastOctets: u64,
    /// Unicast bytes sent.
    pub ifHCOutUcastOctets: u64,
    /// Multicast bytes sent.
    pub ifHCOutMulticastOctets: u64,
    /// Broadcast bytes sent.
    pub ifHCOutBroadcastOctets: u64,
}

impl NDIS_STATISTICS_INFO {
    /// A revision-1 answer with every counter 0 and valid.
    pub const fn new() -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                crate::object::NDIS_OBJECT_TYPE_DEFAULT,
                NDIS_STATISTICS_INFO_REVISION_1,
                NDIS_SIZEOF_STATISTICS_INFO_REVISION_1,
            ),
            SupportedStatistics: NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_RCV
                | NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_RCV
                | NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_RCV
                | NDIS_STATISTICS_FLAGS_VALID_BYTES_RCV
                | NDIS_STATISTICS_FLAGS_VALID_RCV_DISCARDS
                | NDIS_STATISTICS_FLAGS_VALID_RCV_ERROR
                | NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_XMIT
                | NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_XMIT
                | NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_XMIT
                | NDIS_STATISTICS_FLAGS_VALID_BYTES_XMIT
                | NDIS_STATISTICS_FLAGS_VALID_XMIT_ERROR
                | NDIS_STATISTICS_FLAGS_VALID_XMIT_DISCARDS
                | NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_RCV
                | NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_RCV
                | NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_RCV
                | NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_XMIT
                | NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_XMIT
                | NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_XMIT,
            ifInDiscards: 0,
            ifInErrors: 0,
            ifHCInOctets: 0,
            ifHCInUcastPkts: 0,
            ifHCInMulticastPkts: 0,
            ifHCInBroadcastPkts: 0,
            ifHCOutOctets: 0,
            ifHCOutUcastPkts: 0,
            ifHCOutMulticastPkts: 0,
            ifHCOutBroadcastPkts: 0,
            ifOutErrors: 0,
            ifOutDiscards: 0,
            ifHCInUcastOctets: 0,
            ifHCInMulticastOctets: 0,
            ifHCInBroadcastOctets: 0,
            ifHCOutUcastOctets: 0,
            ifHCOutMulticastOctets: 0,
            ifHCOutBroadcastOctets: 0,
        }
    }
}

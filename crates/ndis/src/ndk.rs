//! NDIS side of NDK (`ndisndk.h`, the NDK part of `ntddndis.h`, NDIS
//! 6.30+): the provider characteristics registered in `MiniportSetOptions`,
//! the open/close handlers, the capabilities reported in the NDK
//! attributes, and the `OID_NDK_*` requests with their structures.
//!
//! The `Flags` member of `NDIS_NDK_CAPABILITIES`,
//! `NDIS_NDK_STATISTICS_INFO`, `NDIS_NDK_CONNECTIONS` and
//! `NDIS_NDK_LOCAL_ENDPOINTS` is present in the WDK's `ntddndis.h` (a
//! reserved `ULONG`, must be 0) even where older documentation omits it.

use core::ptr;

use ndkpi::{BOOLEAN, GUID, NDIS_STATUS, NDK_ADAPTER, NDK_ADAPTER_INFO, NDK_VERSION, UCHAR, ULONG};

use crate::miniport::NDIS_DRIVER_OPTIONAL_HANDLERS;
use crate::object::{
    NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT, NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS,
};
use crate::types::{
    MAXUSHORT, NDIS_HANDLE, NDIS_NIC_SWITCH_ID, NDIS_NIC_SWITCH_VPORT_ID, NDIS_OID, SOCKADDR_INET,
    ascii_to_utf16,
};

// ---------------------------------------------------------------------
// ndisndk.h

/// Registry keyword that allows (1) or forbids (0) NDK on the adapter
/// (`NETWORK_DIRECT_KEYWORD`, UTF-16 without terminator).
pub const NETWORK_DIRECT_KEYWORD: [u16; 14] = ascii_to_utf16(b"*NetworkDirect");
/// Registry keyword of the NDK global flags
/// (`NETWORK_DIRECT_GLOBAL_FLAGS_KEYWORD`, UTF-16 without terminator).
pub const NETWORK_DIRECT_GLOBAL_FLAGS_KEYWORD: [u16; 25] =
    ascii_to_utf16(b"*NetworkDirectGlobalFlags");
/// Global flag: allow remote IP subnets.
pub const NETWORK_DIRECT_GLOBAL_FLAGS_ALLOW_REMOTE_IP_SUBNET: ULONG = 0x0000_0001;

/// What NDIS passes to the open handler. The switch fields exist from
/// NDIS 6.50.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NDIS_OPEN_NDK_ADAPTER_PARAMETERS {
    /// NDKPI version the consumer asks for.
    pub Version: NDK_VERSION,
    /// NIC switch of the requested adapter (NDIS 6.50).
    pub SwitchId: NDIS_NIC_SWITCH_ID,
    /// Virtual port of the requested adapter (NDIS 6.50).
    pub VPortId: NDIS_NIC_SWITCH_VPORT_ID,
}

/// `OpenNDKAdapterHandler`: open one NDK adapter instance on the miniport
/// adapter. Returns `NDIS_STATUS_SUCCESS`, or e.g. `BAD_VERSION`,
/// `ADAPTER_NOT_READY` (NDK disabled) or `RESOURCES`. There is no
/// completion routine: the open is synchronous.
pub type OPEN_NDK_ADAPTER = unsafe extern "win64" fn(
    MiniportAdapterContext: NDIS_HANDLE,
    Parameters: *mut NDIS_OPEN_NDK_ADAPTER_PARAMETERS,
    ppNdkAdapter: *mut *mut NDK_ADAPTER,
) -> NDIS_STATUS;
/// Nullable [`OPEN_NDK_ADAPTER`] (the C typedef is this pointer type).
pub type OPEN_NDK_ADAPTER_HANDLER = Option<OPEN_NDK_ADAPTER>;

/// `CloseNDKAdapterHandler`: close an instance opened by the open handler.
pub type CLOSE_NDK_ADAPTER =
    unsafe extern "win64" fn(MiniportAdapterContext: NDIS_HANDLE, pNdkAdapter: *mut NDK_ADAPTER);
/// Nullable [`CLOSE_NDK_ADAPTER`] (the C typedef is this pointer type).
pub type CLOSE_NDK_ADAPTER_HANDLER = Option<CLOSE_NDK_ADAPTER>;

/// Provider characteristics revision.
pub const NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(..., CloseNDKAdapterHandler)`.
pub const NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_NDK_PROVIDER_CHARACTERISTICS, CloseNDKAdapterHandler);

/// Registered with `NdisSetOptionalHandlers` from `MiniportSetOptions`;
/// its header is what marks the miniport as an NDK provider.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_NDK_PROVIDER_CHARACTERISTICS {
    /// `NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved, 0.
    pub Flags: ULONG,
    /// Opens an NDK adapter instance.
    pub OpenNDKAdapterHandler: OPEN_NDK_ADAPTER_HANDLER,
    /// Closes an NDK adapter instance.
    pub CloseNDKAdapterHandler: CLOSE_NDK_ADAPTER_HANDLER,
}

impl NDIS_NDK_PROVIDER_CHARACTERISTICS {
    /// Revision-1 characteristics with the two handlers.
    pub const fn new(open: OPEN_NDK_ADAPTER, close: CLOSE_NDK_ADAPTER) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS,
                NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1,
                NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1,
            ),
            Flags: 0,
            OpenNDKAdapterHandler: Some(open),
            CloseNDKAdapterHandler: Some(close),
        }
    }

    /// This structure as the header-only argument type of
    /// `NdisSetOptionalHandlers`.
    pub const fn as_optional_handlers(&mut self) -> *mut NDIS_DRIVER_OPTIONAL_HANDLERS {
        ptr::from_mut(self).cast()
    }
}

// ---------------------------------------------------------------------
// ntddndis.h: capabilities, statistics, connections, endpoints.

/// Request: enable (TRUE) or disable (FALSE) NDK; buffer is one
/// `BOOLEAN`. Must not pend.
pub const OID_NDK_SET_STATE: NDIS_OID = 0xFC04_0201;
/// Request: `NDIS_NDK_STATISTICS_INFO`.
pub const OID_NDK_STATISTICS: NDIS_OID = 0xFC04_0202;
/// Request: `NDIS_NDK_CONNECTIONS`.
pub const OID_NDK_CONNECTIONS: NDIS_OID = 0xFC04_0203;
/// Request: `NDIS_NDK_LOCAL_ENDPOINTS`.
pub const OID_NDK_LOCAL_ENDPOINTS: NDIS_OID = 0xFC04_0204;

/// WMI GUID: query the NDK capabilities of an adapter
/// {7969ba4d-dd80-4bc7-b3e6-68043997e519}.
pub const GUID_NDIS_NDK_CAPABILITIES: GUID = GUID {
    Data1: 0x7969_ba4d,
    Data2: 0xdd80,
    Data3: 0x4bc7,
    Data4: [0xb3, 0xe6, 0x68, 0x04, 0x39, 0x97, 0xe5, 0x19],
};
/// WMI GUID: query or set the NDK enabled state of an adapter
/// {530c69c9-2f51-49de-a1af-088d54ffa474}.
pub const GUID_NDIS_NDK_STATE: GUID = GUID {
    Data1: 0x530c_69c9,
    Data2: 0x2f51,
    Data3: 0x49de,
    Data4: [0xa1, 0xaf, 0x08, 0x8d, 0x54, 0xff, 0xa4, 0x74],
};

/// The NDK counters NDIS publishes as performance counters, in the order
/// of the NDIS counter manifest (30 × `ULONG64`, 240 bytes). A
/// provider that cannot keep one sets its bit (index = field offset / 8,
/// see [`ndis_ndk_performance_counter_mask!`](crate::ndis_ndk_performance_counter_mask))
/// in `NDIS_NDK_CAPABILITIES.MissingCounterMask`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NDIS_NDK_PERFORMANCE_COUNTERS {
    /// Outbound connections established.
    pub Connect: u64,
    /// Inbound connections accepted.
    pub Accept: u64,
    /// Connection attempts that failed.
    pub ConnectFailure: u64,
    /// Connections that failed after being established.
    pub ConnectionError: u64,
    /// Connections active now.
    pub ActiveConnection: u64,
    /// Reserved, 0.
    pub Reserved01: u64,
    /// Reserved, 0.
    pub Reserved02: u64,
    /// Reserved, 0.
    pub Reserved03: u64,
    /// Reserved, 0.
    pub Reserved04: u64,
    /// Reserved, 0.
    pub Reserved05: u64,
    /// Reserved, 0.
    pub Reserved06: u64,
    /// Reserved, 0.
    pub Reserved07: u64,
    /// Reserved, 0.
    pub Reserved08: u64,
    /// Reserved, 0.
    pub Reserved09: u64,
    /// Reserved, 0.
    pub Reserved10: u64,
    /// Reserved, 0.
    pub Reserved11: u64,
    /// Reserved, 0.
    pub Reserved12: u64,
    /// Reserved, 0.
    pub Reserved13: u64,
    /// Reserved, 0.
    pub Reserved14: u64,
    /// Reserved, 0.
    pub Reserved15: u64,
    /// Reserved, 0.
    pub Reserved16: u64,
    /// Reserved, 0.
    pub Reserved17: u64,
    /// Reserved, 0.
    pub Reserved18: u64,
    /// Reserved, 0.
    pub Reserved19: u64,
    /// Reserved, 0.
    pub Reserved20: u64,
    /// Completion-queue errors.
    pub CQError: u64,
    /// RDMA bytes received.
    pub RDMAInOctets: u64,
    /// RDMA bytes sent.
    pub RDMAOutOctets: u64,
    /// RDMA frames received.
    pub RDMAInFrames: u64,
    /// RDMA frames sent.
    pub RDMAOutFrames: u64,
}

/// The `MissingCounterMask` bit of one `NDIS_NDK_PERFORMANCE_COUNTERS`
/// field (C macro `NDIS_NDK_PERFORMANCE_COUNTER_MASK`), e.g.
/// `ndis_ndk_performance_counter_mask!(CQError)`.
#[macro_export]
macro_rules! ndis_ndk_performance_counter_mask {
    ($field:ident) => {
        1u64 << (::core::mem::offset_of!($crate::NDIS_NDK_PERFORMANCE_COUNTERS, $field)
            / ::core::mem::size_of::<u64>())
    };
}

/// Capabilities revision.
pub const NDIS_NDK_CAPABILITIES_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_NDK_CAPABILITIES, NdkInfo)`.
pub const NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_NDK_CAPABILITIES, NdkInfo);

/// Adapter-wide NDK limits, reported through the NDK attributes whether
/// NDK is enabled or not. `NdkInfo` is the per-consumer view.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_NDK_CAPABILITIES {
    /// `NDIS_OBJECT_TYPE_DEFAULT`, revision 1, `sizeof`.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved, 0.
    pub Flags: ULONG,
    /// Queue pairs the adapter supports.
    pub MaxQpCount: ULONG,
    /// Completion queues the adapter supports.
    pub MaxCqCount: ULONG,
    /// Memory regions the adapter supports.
    pub MaxMrCount: ULONG,
    /// Protection domains the adapter supports.
    pub MaxPdCount: ULONG,
    /// Incoming outstanding reads, adapter-wide; 0 = no adapter-wide limit.
    pub MaxInboundReadLimit: ULONG,
    /// Outgoing outstanding reads, adapter-wide; 0 = no adapter-wide limit.
    pub MaxOutboundReadLimit: ULONG,
    /// Memory windows the adapter supports.
    pub MaxMwCount: ULONG,
    /// Shared receive queues; 0 = SRQs unsupported.
    pub MaxSrqCount: ULONG,
    /// Bits of counters the provider cannot keep.
    pub MissingCounterMask: u64,
    /// Per-consumer capabilities and limits.
    pub NdkInfo: *mut NDK_ADAPTER_INFO,
}

impl NDIS_NDK_CAPABILITIES {
    /// Revision-1 capabilities with zero limits and the given `NdkInfo`.
    pub const fn new(NdkInfo: *mut NDK_ADAPTER_INFO) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_DEFAULT,
                NDIS_NDK_CAPABILITIES_REVISION_1,
                size_of::<Self>() as u16,
            ),
            Flags: 0,
            MaxQpCount: 0,
            MaxCqCount: 0,
            MaxMrCount: 0,
            MaxPdCount: 0,
            MaxInboundReadLimit: 0,
            MaxOutboundReadLimit: 0,
            MaxMwCount: 0,
            MaxSrqCount: 0,
            MissingCounterMask: 0,
            NdkInfo,
        }
    }
}

/// Statistics info revision.
pub const NDIS_NDK_STATISTICS_INFO_REVISION_1: UCHAR = 1;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_NDK_STATISTICS_INFO, CounterSet)`.
pub const NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_NDK_STATISTICS_INFO, CounterSet);

/// Answer to `OID_NDK_STATISTICS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NDIS_NDK_STATISTICS_INFO {
    /// `NDIS_OBJECT_TYPE_DEFAULT`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved, 0.
    pub Flags: ULONG,
    /// The counters.
    pub CounterSet: NDIS_NDK_PERFORMANCE_COUNTERS,
}

impl NDIS_NDK_STATISTICS_INFO {
    /// A revision-1 answer carrying `CounterSet`.
    pub const fn new(CounterSet: NDIS_NDK_PERFORMANCE_COUNTERS) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_DEFAULT,
                NDIS_NDK_STATISTICS_INFO_REVISION_1,
                NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1,
            ),
            Flags: 0,
            CounterSet,
        }
    }
}

/// One connection of `NDIS_NDK_CONNECTIONS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDIS_NDK_CONNECTION_ENTRY {
    /// Local IP address and ND port.
    pub Local: SOCKADDR_INET,
    /// Remote IP address and ND port.
    pub Remote: SOCKADDR_INET,
    /// TRUE for a user-mode (NDSPI) connection, FALSE for NDK.
    pub UserModeOwner: BOOLEAN,
    /// Owning process of a user-mode connection.
    pub OwnerPid: ULONG,
}

/// Connections revision.
pub const NDIS_NDK_CONNECTIONS_REVISION_1: UCHAR = 1;

/// Answer to `OID_NDK_CONNECTIONS`: a header followed by `Count` entries
/// (the C array is declared with one element). With
/// `NDConnectionsMappedtoTCPConnections`, entries come in pairs: ND
/// addressing at even indices, the underlying TCP 4-tuple at odd ones.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_NDK_CONNECTIONS {
    /// `NDIS_OBJECT_TYPE_DEFAULT`, revision 1, size capped at `MAXUSHORT`.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved, 0.
    pub Flags: ULONG,
    /// Entries that follow.
    pub Count: ULONG,
    /// TRUE when ND connections are mapped onto TCP connections.
    pub NDConnectionsMappedtoTCPConnections: BOOLEAN,
    /// First of `Count` entries.
    pub Connections: [NDIS_NDK_CONNECTION_ENTRY; 1],
}

/// `NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(n)`: bytes of the answer with
/// `n` entries (`FIELD_OFFSET(NDIS_NDK_CONNECTIONS, Connections[n])`).
pub const fn NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(n: usize) -> usize {
    core::mem::offset_of!(NDIS_NDK_CONNECTIONS, Connections)
        + n * size_of::<NDIS_NDK_CONNECTION_ENTRY>()
}

/// One local endpoint of `NDIS_NDK_LOCAL_ENDPOINTS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDIS_NDK_LOCAL_ENDPOINT_ENTRY {
    /// Local IP address and ND port.
    pub Local: SOCKADDR_INET,
    /// TRUE for a user-mode (NDSPI) endpoint, FALSE for NDK.
    pub UserModeOwner: BOOLEAN,
    /// TRUE for a listener, FALSE for a shared endpoint.
    pub Listener: BOOLEAN,
    /// Owning process of a user-mode endpoint.
    pub OwnerPid: ULONG,
}

/// Local endpoints revision.
pub const NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1: UCHAR = 1;

/// Answer to `OID_NDK_LOCAL_ENDPOINTS`: a header followed by `Count`
/// entries, paired like the connections when mapped onto TCP.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_NDK_LOCAL_ENDPOINTS {
    /// `NDIS_OBJECT_TYPE_DEFAULT`, revision 1, size capped at `MAXUSHORT`.
    pub Header: NDIS_OBJECT_HEADER,
    /// Reserved, 0.
    pub Flags: ULONG,
    /// Entries that follow.
    pub Count: ULONG,
    /// TRUE when ND endpoints are mapped onto TCP endpoints.
    pub NDLocalEndpointsMappedtoTCPLocalEndpoints: BOOLEAN,
    /// First of `Count` entries.
    pub LocalEndpoints: [NDIS_NDK_LOCAL_ENDPOINT_ENTRY; 1],
}

/// `NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(n)`: bytes of the answer
/// with `n` entries.
pub const fn NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(n: usize) -> usize {
    core::mem::offset_of!(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints)
        + n * size_of::<NDIS_NDK_LOCAL_ENDPOINT_ENTRY>()
}

/// `Header.Size` for a variable-size answer of `bytes` bytes:
/// `(USHORT)min(MAXUSHORT, bytes)`, as the header comments prescribe.
pub const fn ndk_variable_header_size(bytes: usize) -> u16 {
    if bytes > MAXUSHORT as usize {
        MAXUSHORT
    } else {
        bytes as u16
    }
}

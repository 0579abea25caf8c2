//! The x64 layout facts of every declared structure and union and the
//! values of the header constants, written once in the `layout_facts!`
//! table below, as read from `ndis.h` (and its sub-headers `ndis/nbl.h`,
//! `ndis/nblinfo.h`, `ndis/nblapi.h`), `ntddndis.h` and `ndisndk.h` (plus
//! `ifdef.h`, `ws2ipdef.h`, `wdm.h` and `ntstatus.h` for the few values
//! NDIS borrows from them), and `netioapi.h`/`nldef.h`/`ws2def.h` for the
//! IP Helper routines.
//!
//! From that one table the macro produces
//! * a compile-time assertion per size, per field offset and per constant
//!   value, so a wrong declaration does not build;
//! * a compile-time check that each struct's field list is complete (a
//!   struct pattern without `..`; unions are exempt, a union pattern names
//!   one field);
//! * [`LAYOUT`], the same facts with the values the compiler computed, in
//!   the [`LayoutFact`] form of `ndkpi`, which the `layout` example prints.
//!
//! Sizes and offsets hold on 64-bit Windows and are asserted only for
//! 64-bit targets. `NDIS_STATUS` values print as the decimal of their `u32`
//! bit pattern, like `ndkpi` prints NTSTATUS values.
//!
//! The `kernel` entries (spin locks, DPCs, IRPs, pool) follow `wdm.h` and
//! `ntddk.h`; where each value was checked is said in that module's docs.
//!
//! One value is not header text but arithmetic on it: the size of the
//! `NDIS_MINIPORT_ADAPTER_ATTRIBUTES` union, whose omitted members are all
//! smaller than the general attributes at NDIS 6.50 (see
//! [`crate::attributes`]). The `INTERFACE_TYPE` numbers behind
//! `NDIS_INTERFACE_TYPE` come from the `wdm.h` enum as Microsoft's
//! documentation prints it.

pub use ndkpi::{FactKind, LayoutFact};

// The table names nearly every item of the crate.
#[allow(clippy::wildcard_imports)]
use crate::*;

// Widening conversions of constants to the table's `u64`. Signed C values
// are shown as the unsigned bit pattern of their own width.
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn usz(v: usize) -> u64 {
    v as u64
}
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn u8v(v: u8) -> u64 {
    v as u64
}
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn u16v(v: u16) -> u64 {
    v as u64
}
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn u32v(v: u32) -> u64 {
    v as u64
}
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn i32v(v: i32) -> u64 {
    v as u32 as u64
}
const fn u64v(v: u64) -> u64 {
    v
}

const fn fact(name: &'static str, kind: FactKind, value: u64) -> LayoutFact {
    LayoutFact { name, kind, value }
}

/// A struct pattern naming every field: fails to compile if the table
/// forgets one. Structs with nested entries list their fields explicitly.
macro_rules! all_fields {
    ($t:ident; []; [$($label:ident),*]) => {
        const _: fn(&$t) = |v| {
            let $t { $($label: _),* } = v;
        };
    };
    ($t:ident; [$($field:ident),+]; [$($label:ident),*]) => {
        const _: fn(&$t) = |v| {
            let $t { $($field: _),+ } = v;
        };
    };
}

/// The single table of layout and constant facts. Struct entries are
/// `NAME: size (fields)? { Field: offset, Field.Inner.Path: offset, ... }`
/// (the field list is needed when nested paths repeat a field); union
/// entries are `NAME: size { Member: offset, ... }`; constant groups are
/// `converter { NAME = value, ... }`.
macro_rules! layout_facts {
    (
        structs {
            $(
                $t:ident : $size:literal $( ( $($field:ident),+ ) )? {
                    $( $label:ident $( . $rest:ident )* : $off:literal ),* $(,)?
                }
            ),* $(,)?
        }
        unions {
            $(
                $u:ident : $usize:literal {
                    $( $member:ident : $moff:literal ),* $(,)?
                }
            ),* $(,)?
        }
        consts {
            $( $conv:ident { $( $c:ident = $v:literal ),* $(,)? } ),* $(,)?
        }
    ) => {
        $(
            #[cfg(target_pointer_width = "64")]
            const _: () = assert!(size_of::<$t>() == $size, stringify!($t));
            $(
                #[cfg(target_pointer_width = "64")]
                const _: () = assert!(
                    core::mem::offset_of!($t, $label $(. $rest)*) == $off,
                    concat!(stringify!($t), ".", stringify!($label) $(, ".", stringify!($rest))*),
                );
            )*
            all_fields!($t; [$($($field),+)?]; [$($label),*]);
        )*
        $(
            #[cfg(target_pointer_width = "64")]
            const _: () = assert!(size_of::<$u>() == $usize, stringify!($u));
            $(
                #[cfg(target_pointer_width = "64")]
                const _: () = assert!(
                    core::mem::offset_of!($u, $member) == $moff,
                    concat!(stringify!($u), ".", stringify!($member)),
                );
            )*
        )*
        $( $(
            const _: () = assert!($conv($c) == $v, stringify!($c));
        )* )*

        /// Every size, field offset and constant of the table, in table
        /// order, with the values the compiler computed.
        pub const LAYOUT: &[LayoutFact] = &[
            $(
                fact(stringify!($t), FactKind::Size, usz(size_of::<$t>())),
                $(
                    fact(
                        concat!(stringify!($t), ".", stringify!($label) $(, ".", stringify!($rest))*),
                        FactKind::Offset,
                        usz(core::mem::offset_of!($t, $label $(. $rest)*)),
                    ),
                )*
            )*
            $(
                fact(stringify!($u), FactKind::Size, usz(size_of::<$u>())),
                $(
                    fact(
                        concat!(stringify!($u), ".", stringify!($member)),
                        FactKind::Offset,
                        usz(core::mem::offset_of!($u, $member)),
                    ),
                )*
            )*
            $( $(
                fact(stringify!($c), FactKind::Const, $conv($c)),
            )* )*
        ];
    };
}

layout_facts! {
    structs {
        // ntddndis.h / ndis.h base types
        NDIS_OBJECT_HEADER: 4 { Type: 0, Revision: 1, Size: 2 },
        NET_LUID: 8 { Value: 0 },
        UNICODE_STRING: 16 { Length: 0, MaximumLength: 2, Buffer: 8 },
        // ndis.h: driver registration and handler parameters
        NDIS_MINIPORT_DRIVER_CHARACTERISTICS: 160 {
            Header: 0,
            MajorNdisVersion: 4,
            MinorNdisVersion: 5,
            MajorDriverVersion: 6,
            MinorDriverVersion: 7,
            Flags: 8,
            SetOptionsHandler: 16,
            InitializeHandlerEx: 24,
            HaltHandlerEx: 32,
            UnloadHandler: 40,
            PauseHandler: 48,
            RestartHandler: 56,
            OidRequestHandler: 64,
            SendNetBufferListsHandler: 72,
            ReturnNetBufferListsHandler: 80,
            CancelSendHandler: 88,
            CheckForHangHandlerEx: 96,
            ResetHandlerEx: 104,
            DevicePnPEventNotifyHandler: 112,
            ShutdownHandlerEx: 120,
            CancelOidRequestHandler: 128,
            DirectOidRequestHandler: 136,
            CancelDirectOidRequestHandler: 144,
            SynchronousOidRequestHandler: 152,
        },
        NDIS_DRIVER_OPTIONAL_HANDLERS: 4 { Header: 0 },
        NDIS_MINIPORT_INIT_PARAMETERS: 64 {
            Header: 0,
            Flags: 4,
            AllocatedResources: 8,
            IMDeviceInstanceContext: 16,
            MiniportAddDeviceContext: 24,
            IfIndex: 32,
            NetLuid: 40,
            DefaultPortAuthStates: 48,
            PciDeviceCustomProperties: 56,
        },
        NDIS_MINIPORT_PAUSE_PARAMETERS: 12 { Header: 0, Flags: 4, PauseReason: 8 },
        NDIS_MINIPORT_RESTART_PARAMETERS: 24 { Header: 0, RestartAttributes: 8, Flags: 16 },
        NET_DEVICE_PNP_EVENT: 48 {
            Header: 0,
            PortNumber: 4,
            DevicePnPEvent: 8,
            InformationBuffer: 16,
            InformationBufferLength: 24,
            NdisReserved: 28,
        },
        // ndis.h: OID requests
        NDIS_OID_REQUEST_QUERY_INFORMATION: 32 {
            Oid: 0,
            InformationBuffer: 8,
            InformationBufferLength: 16,
            BytesWritten: 20,
            BytesNeeded: 24,
        },
        NDIS_OID_REQUEST_SET_INFORMATION: 32 {
            Oid: 0,
            InformationBuffer: 8,
            InformationBufferLength: 16,
            BytesRead: 20,
            BytesNeeded: 24,
        },
        NDIS_OID_REQUEST_METHOD_INFORMATION: 40 {
            Oid: 0,
            InformationBuffer: 8,
            InputBufferLength: 16,
            OutputBufferLength: 20,
            MethodId: 24,
            BytesWritten: 28,
            BytesRead: 32,
            BytesNeeded: 36,
        },
        NDIS_OID_REQUEST: 248 (
            Header, RequestType, PortNumber, Timeout, RequestId, RequestHandle, DATA,
            NdisReserved, MiniportReserved, SourceReserved, SupportedRevision, Reserved1,
            Reserved2, SwitchId, VPortId, Flags
        ) {
            Header: 0,
            RequestType: 4,
            PortNumber: 8,
            Timeout: 12,
            RequestId: 16,
            RequestHandle: 24,
            DATA: 32,
            DATA.QUERY_INFORMATION.Oid: 32,
            DATA.QUERY_INFORMATION.InformationBuffer: 40,
            DATA.QUERY_INFORMATION.InformationBufferLength: 48,
            DATA.QUERY_INFORMATION.BytesWritten: 52,
            DATA.QUERY_INFORMATION.BytesNeeded: 56,
            DATA.SET_INFORMATION.BytesRead: 52,
            DATA.METHOD_INFORMATION.MethodId: 56,
            DATA.METHOD_INFORMATION.BytesNeeded: 68,
            NdisReserved: 72,
            MiniportReserved: 200,
            SourceReserved: 216,
            SupportedRevision: 232,
            Reserved1: 233,
            Reserved2: 234,
            SwitchId: 236,
            VPortId: 240,
            Flags: 244,
        },
        // ntddndis.h: OID_GEN_STATISTICS
        NDIS_STATISTICS_INFO: 152 {
            Header: 0,
            SupportedStatistics: 4,
            ifInDiscards: 8,
            ifInErrors: 16,
            ifHCInOctets: 24,
            ifHCInUcastPkts: 32,
            ifHCInMulticastPkts: 40,
            ifHCInBroadcastPkts: 48,
            ifHCOutOctets: 56,
            ifHCOutUcastPkts: 64,
            ifHCOutMulticastPkts: 72,
            ifHCOutBroadcastPkts: 80,
            ifOutErrors: 88,
            ifOutDiscards: 96,
            ifHCInUcastOctets: 104,
            ifHCInMulticastOctets: 112,
            ifHCInBroadcastOctets: 120,
            ifHCOutUcastOctets: 128,
            ifHCOutMulticastOctets: 136,
            ifHCOutBroadcastOctets: 144,
        },
        // ndis.h: adapter attributes
        NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES: 32 {
            Header: 0,
            MiniportAdapterContext: 8,
            AttributeFlags: 16,
            CheckForHangTimeInSeconds: 20,
            InterfaceType: 24,
        },
        NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES: 224 {
            Header: 0,
            Flags: 4,
            MediaType: 8,
            PhysicalMediumType: 12,
            MtuSize: 16,
            MaxXmitLinkSpeed: 24,
            XmitLinkSpeed: 32,
            MaxRcvLinkSpeed: 40,
            RcvLinkSpeed: 48,
            MediaConnectState: 56,
            MediaDuplexState: 60,
            LookaheadSize: 64,
            PowerManagementCapabilities: 72,
            MacOptions: 80,
            SupportedPacketFilters: 84,
            MaxMulticastListSize: 88,
            MacAddressLength: 92,
            PermanentMacAddress: 94,
            CurrentMacAddress: 126,
            RecvScaleCapabilities: 160,
            AccessType: 168,
            DirectionType: 172,
            ConnectionType: 176,
            IfType: 180,
            IfConnectorPresent: 182,
            SupportedStatistics: 184,
            SupportedPauseFunctions: 188,
            DataBackFillSize: 192,
            ContextBackFillSize: 196,
            SupportedOidList: 200,
            SupportedOidListLength: 208,
            AutoNegotiationFlags: 212,
            PowerManagementCapabilitiesEx: 216,
        },
        NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES: 16 { Header: 0, Enabled: 4, NdkCapabilities: 8 },
        // ndis.h / ntddndis.h / netpnp.h: indications and PnP events
        NDIS_STATUS_INDICATION: 112 {
            Header: 0,
            SourceHandle: 8,
            PortNumber: 16,
            StatusCode: 20,
            Flags: 24,
            DestinationHandle: 32,
            RequestId: 40,
            StatusBuffer: 48,
            StatusBufferSize: 56,
            Guid: 60,
            NdisReserved: 80,
        },
        NDIS_LINK_STATE: 40 {
            Header: 0,
            MediaConnectState: 4,
            MediaDuplexState: 8,
            XmitLinkSpeed: 16,
            RcvLinkSpeed: 24,
            PauseFunctions: 32,
            AutoNegotiationFlags: 36,
        },
        NET_PNP_EVENT: 152 {
            NetEvent: 0,
            Buffer: 8,
            BufferLength: 16,
            NdisReserved: 24,
            TransportReserved: 56,
            TdiReserved: 88,
            TdiClientReserved: 120,
        },
        NET_PNP_EVENT_NOTIFICATION: 176 {
            Header: 0,
            PortNumber: 4,
            NetPnPEvent: 8,
            Flags: 160,
            SwitchId: 164,
            VPortId: 168,
        },
        // ndis/nbl.h, ndis/nblapi.h (WDK 10.0.22621.0): packets and pools.
        // NET_BUFFER and NET_BUFFER_LIST also match the x64 ndis.sys type
        // dumps of the public ntdiff/headers repository (0xB0 and 0x160
        // bytes, NetBufferListInfo[26] at 0x90).
        NET_BUFFER_SHARED_MEMORY: 32 {
            NextSharedMemorySegment: 0,
            SharedMemoryFlags: 8,
            SharedMemoryHandle: 16,
            SharedMemoryOffset: 24,
            SharedMemoryLength: 28,
        },
        NET_BUFFER: 176 {
            Next: 0,
            CurrentMdl: 8,
            CurrentMdlOffset: 16,
            NbDataLength: 24,
            MdlChain: 32,
            DataOffset: 40,
            HeaderUnionEnd: 48,
            ChecksumBias: 48,
            Reserved: 50,
            NdisPoolHandle: 56,
            NdisReservedAlign: 64,
            NdisReserved: 64,
            ProtocolReservedAlign: 80,
            ProtocolReserved: 80,
            MiniportReservedAlign: 128,
            MiniportReserved: 128,
            DataPhysicalAddress: 160,
            MemoryInfo: 168,
        },
        NET_BUFFER_LIST_CONTEXT: 16 {
            Next: 0,
            Size: 8,
            Offset: 10,
            ContextDataAlign: 16,
            ContextData: 16,
        },
        NET_BUFFER_LIST: 352 {
            Next: 0,
            FirstNetBuffer: 8,
            Context: 16,
            ParentNetBufferList: 24,
            NdisPoolHandle: 32,
            NdisReservedAlign: 48,
            NdisReserved: 48,
            ProtocolReservedAlign: 64,
            ProtocolReserved: 64,
            MiniportReservedAlign: 96,
            MiniportReserved: 96,
            Scratch: 112,
            SourceHandle: 120,
            NblFlags: 128,
            ChildRefCount: 132,
            Flags: 136,
            Status: 140,
            NetBufferListInfo: 144,
        },
        NET_BUFFER_LIST_POOL_PARAMETERS: 20 {
            Header: 0,
            ProtocolId: 4,
            fAllocateNetBuffer: 5,
            ContextSize: 6,
            PoolTag: 8,
            DataSize: 12,
            Flags: 16,
        },
        // ndis.h: the protocol edge (protocol.rs).
        NDIS_PROTOCOL_DRIVER_CHARACTERISTICS: 128 {
            Header: 0,
            MajorNdisVersion: 4,
            MinorNdisVersion: 5,
            MajorDriverVersion: 6,
            MinorDriverVersion: 7,
            Flags: 8,
            Name: 16,
            SetOptionsHandler: 32,
            BindAdapterHandlerEx: 40,
            UnbindAdapterHandlerEx: 48,
            OpenAdapterCompleteHandlerEx: 56,
            CloseAdapterCompleteHandlerEx: 64,
            NetPnPEventHandler: 72,
            UninstallHandler: 80,
            OidRequestCompleteHandler: 88,
            StatusHandlerEx: 96,
            ReceiveNetBufferListsHandler: 104,
            SendNetBufferListsCompleteHandler: 112,
            DirectOidRequestCompleteHandler: 120,
        },
        NDIS_BIND_PARAMETERS: 312 {
            Header: 0,
            ProtocolSection: 8,
            AdapterName: 16,
            PhysicalDeviceObject: 24,
            MediaType: 32,
            MtuSize: 36,
            MaxXmitLinkSpeed: 40,
            XmitLinkSpeed: 48,
            MaxRcvLinkSpeed: 56,
            RcvLinkSpeed: 64,
            MediaConnectState: 72,
            MediaDuplexState: 76,
            LookaheadSize: 80,
            PowerManagementCapabilities: 88,
            SupportedPacketFilters: 96,
            MaxMulticastListSize: 100,
            MacAddressLength: 104,
            CurrentMacAddress: 106,
            PhysicalMediumType: 140,
            RcvScaleCapabilities: 144,
            BoundIfNetluid: 152,
            BoundIfIndex: 160,
            LowestIfNetluid: 168,
            LowestIfIndex: 176,
            AccessType: 180,
            DirectionType: 184,
            ConnectionType: 188,
            IfType: 192,
            IfConnectorPresent: 194,
            ActivePorts: 200,
            DataBackFillSize: 208,
            ContextBackFillSize: 212,
            MacOptions: 216,
            CompartmentId: 220,
            DefaultOffloadConfiguration: 224,
            TcpConnectionOffloadCapabilities: 232,
            BoundAdapterName: 240,
            HDSplitCurrentConfig: 248,
            ReceiveFilterCapabilities: 256,
            PowerManagementCapabilitiesEx: 264,
            NicSwitchCapabilities: 272,
            NDKEnabled: 280,
            NDKCapabilities: 288,
            SriovCapabilities: 296,
            NicSwitchArray: 304,
        },
        NDIS_OPEN_PARAMETERS: 56 {
            Header: 0,
            AdapterName: 8,
            MediumArray: 16,
            MediumArraySize: 24,
            SelectedMediumIndex: 32,
            FrameTypeArray: 40,
            FrameTypeArraySize: 48,
        },
        NDIS_PROTOCOL_PAUSE_PARAMETERS: 12 { Header: 0, Flags: 4, PauseReason: 8 },
        NDIS_PROTOCOL_RESTART_PARAMETERS: 56 {
            Header: 0,
            FilterModuleNameBuffer: 8,
            FilterModuleNameBufferLength: 16,
            RestartAttributes: 24,
            BoundIfIndex: 32,
            BoundIfNetluid: 40,
            Flags: 48,
        },
        // ndisndk.h
        NDIS_OPEN_NDK_ADAPTER_PARAMETERS: 12 { Version: 0, SwitchId: 4, VPortId: 8 },
        NDIS_NDK_PROVIDER_CHARACTERISTICS: 24 {
            Header: 0,
            Flags: 4,
            OpenNDKAdapterHandler: 8,
            CloseNDKAdapterHandler: 16,
        },
        // ntddndis.h: NDK
        NDIS_NDK_PERFORMANCE_COUNTERS: 240 {
            Connect: 0,
            Accept: 8,
            ConnectFailure: 16,
            ConnectionError: 24,
            ActiveConnection: 32,
            Reserved01: 40,
            Reserved02: 48,
            Reserved03: 56,
            Reserved04: 64,
            Reserved05: 72,
            Reserved06: 80,
            Reserved07: 88,
            Reserved08: 96,
            Reserved09: 104,
            Reserved10: 112,
            Reserved11: 120,
            Reserved12: 128,
            Reserved13: 136,
            Reserved14: 144,
            Reserved15: 152,
            Reserved16: 160,
            Reserved17: 168,
            Reserved18: 176,
            Reserved19: 184,
            Reserved20: 192,
            CQError: 200,
            RDMAInOctets: 208,
            RDMAOutOctets: 216,
            RDMAInFrames: 224,
            RDMAOutFrames: 232,
        },
        NDIS_NDK_CAPABILITIES: 56 {
            Header: 0,
            Flags: 4,
            MaxQpCount: 8,
            MaxCqCount: 12,
            MaxMrCount: 16,
            MaxPdCount: 20,
            MaxInboundReadLimit: 24,
            MaxOutboundReadLimit: 28,
            MaxMwCount: 32,
            MaxSrqCount: 36,
            MissingCounterMask: 40,
            NdkInfo: 48,
        },
        NDIS_NDK_STATISTICS_INFO: 248 { Header: 0, Flags: 4, CounterSet: 8 },
        NDIS_NDK_CONNECTION_ENTRY: 64 { Local: 0, Remote: 28, UserModeOwner: 56, OwnerPid: 60 },
        NDIS_NDK_CONNECTIONS: 80 {
            Header: 0,
            Flags: 4,
            Count: 8,
            NDConnectionsMappedtoTCPConnections: 12,
            Connections: 16,
        },
        NDIS_NDK_LOCAL_ENDPOINT_ENTRY: 36 { Local: 0, UserModeOwner: 28, Listener: 29, OwnerPid: 32 },
        NDIS_NDK_LOCAL_ENDPOINTS: 52 {
            Header: 0,
            Flags: 4,
            Count: 8,
            NDLocalEndpointsMappedtoTCPLocalEndpoints: 12,
            LocalEndpoints: 16,
        },
        // ndis.h: configuration
        BINARY_DATA: 16 { Length: 0, Buffer: 8 },
        NDIS_CONFIGURATION_PARAMETER: 24 { ParameterType: 0, ParameterData: 8 },
        NDIS_CONFIGURATION_OBJECT: 24 { Header: 0, NdisHandle: 8, Flags: 16 },
        // wdm.h / ntddk.h (kernel.rs): objects the shell allocates, and the
        // IRP fields the IoSetCompletionRoutine macro touches. Sizes and
        // offsets as in the Windows 10 x64 kernel type dumps of the public
        // ntdiff/headers repository (Win10_20H1_18885/x64, ntoskrnl.exe).
        KDPC: 64 { Opaque: 0 },
        KTIMER: 64 { Opaque: 0 },
        KEVENT: 24 { Opaque: 0 },
        LIST_ENTRY: 16 { Flink: 0, Blink: 8 },
        IO_STATUS_BLOCK: 16 { Status: 0, Reserved: 4, Information: 8 },
        IO_STACK_LOCATION: 72 {
            MajorFunction: 0,
            MinorFunction: 1,
            Flags: 2,
            Control: 3,
            Parameters: 8,
            DeviceObject: 40,
            FileObject: 48,
            CompletionRoutine: 56,
            Context: 64,
        },
        IRP: 208 (
            Type, Size, AllocationProcessorNumber, Reserved, MdlAddress, Flags, AssociatedIrp,
            ThreadListEntry, IoStatus, RequestorMode, PendingReturned, StackCount,
            CurrentLocation, Cancel, CancelIrql, ApcEnvironment, AllocationFlags, UserIosb,
            UserEvent, Overlay, CancelRoutine, UserBuffer, Tail_DriverContext, Tail_Thread,
            Tail_AuxiliaryBuffer, Tail_ListEntry, Tail_CurrentStackLocation,
            Tail_OriginalFileObject, Tail_IrpExtension
        ) {
            Type: 0,
            Size: 2,
            AllocationProcessorNumber: 4,
            Reserved: 6,
            MdlAddress: 8,
            Flags: 16,
            AssociatedIrp: 24,
            ThreadListEntry: 32,
            IoStatus: 48,
            IoStatus.Status: 48,
            IoStatus.Information: 56,
            RequestorMode: 64,
            PendingReturned: 65,
            StackCount: 66,
            CurrentLocation: 67,
            Cancel: 68,
            CancelIrql: 69,
            ApcEnvironment: 70,
            AllocationFlags: 71,
            UserIosb: 72,
            UserEvent: 80,
            Overlay: 88,
            CancelRoutine: 104,
            UserBuffer: 112,
            Tail_DriverContext: 120,
            Tail_Thread: 152,
            Tail_AuxiliaryBuffer: 160,
            Tail_ListEntry: 168,
            Tail_CurrentStackLocation: 184,
            Tail_OriginalFileObject: 192,
            Tail_IrpExtension: 200,
        },
        // netioapi.h, ws2def.h (netioapi.rs), SDK 10.0.22000.
        SCOPE_ID: 4 { Value: 0 },
        MIB_UNICASTIPADDRESS_ROW: 80 {
            Address: 0,
            InterfaceLuid: 32,
            InterfaceIndex: 40,
            PrefixOrigin: 44,
            SuffixOrigin: 48,
            ValidLifetime: 52,
            PreferredLifetime: 56,
            OnLinkPrefixLength: 60,
            SkipAsSource: 61,
            DadState: 64,
            ScopeId: 68,
            CreationTimeStamp: 72,
        },
        MIB_UNICASTIPADDRESS_TABLE: 88 { NumEntries: 0, Table: 8 },
    }
    unions {
        SOCKADDR_INET: 28 { Ipv4: 0, Ipv6: 0, si_family: 0 },
        NDIS_OID_REQUEST_DATA: 40 { QUERY_INFORMATION: 0, SET_INFORMATION: 0, METHOD_INFORMATION: 0 },
        NDIS_MINIPORT_ADAPTER_ATTRIBUTES: 224 {
            Header: 0,
            RegistrationAttributes: 0,
            GeneralAttributes: 0,
            NDKAttributes: 0,
        },
        NDIS_CONFIGURATION_PARAMETER_DATA: 16 { IntegerData: 0, StringData: 0, BinaryData: 0 },
        NET_BUFFER_DATA_LENGTH: 8 { DataLength: 0, stDataLength: 0 },
        NET_BUFFER_MEMORY_INFO: 8 { SharedMemoryInfo: 0, ScatterGatherList: 0 },
    }
    consts {
        u8v {
            NDIS_OBJECT_TYPE_DEFAULT = 0x80,
            NDIS_OBJECT_TYPE_MINIPORT_INIT_PARAMETERS = 0x81,
            NDIS_OBJECT_TYPE_MINIPORT_DRIVER_CHARACTERISTICS = 0x8A,
            NDIS_OBJECT_TYPE_OID_REQUEST = 0x96,
            NDIS_OBJECT_TYPE_STATUS_INDICATION = 0x98,
            NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES = 0x9E,
            NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES = 0x9F,
            NDIS_OBJECT_TYPE_CONFIGURATION_OBJECT = 0xA9,
            NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS = 0xB2,
            NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES = 0xB3,
            NDIS_OBJECT_REVISION_1 = 1,
            NDIS_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_1 = 1,
            NDIS_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2 = 2,
            NDIS_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_3 = 3,
            NDIS_MINIPORT_INIT_PARAMETERS_REVISION_1 = 1,
            NDIS_MINIPORT_PAUSE_PARAMETERS_REVISION_1 = 1,
            NDIS_MINIPORT_RESTART_PARAMETERS_REVISION_1 = 1,
            NET_DEVICE_PNP_EVENT_REVISION_1 = 1,
            NDIS_OID_REQUEST_REVISION_1 = 1,
            NDIS_OID_REQUEST_REVISION_2 = 2,
            NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_1 = 1,
            NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2 = 2,
            NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_1 = 1,
            NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2 = 2,
            NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1 = 1,
            NDIS_STATUS_INDICATION_REVISION_1 = 1,
            NDIS_LINK_STATE_REVISION_1 = 1,
            NET_PNP_EVENT_NOTIFICATION_REVISION_1 = 1,
            NET_PNP_EVENT_NOTIFICATION_REVISION_2 = 2,
            NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 = 1,
            NDIS_NDK_CAPABILITIES_REVISION_1 = 1,
            NDIS_NDK_STATISTICS_INFO_REVISION_1 = 1,
            NDIS_NDK_CONNECTIONS_REVISION_1 = 1,
            NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1 = 1,
            NDIS_CONFIGURATION_OBJECT_REVISION_1 = 1,
            NDIS_MINIPORT_MAJOR_VERSION_6 = 6,
            NDIS_MINIPORT_MINOR_VERSION_30 = 30,
            NDIS_MINIPORT_MINOR_VERSION_40 = 40,
            NDIS_MINIPORT_MINOR_VERSION_50 = 50,
            NDIS_MINIPORT_MINOR_VERSION_60 = 60,
            NDIS_MINIPORT_MINOR_VERSION_80 = 80,
            NDIS_MINIPORT_MINOR_VERSION_82 = 82,
            NDIS_MINIPORT_MAJOR_VERSION = 6,
            NDIS_MINIPORT_MINOR_VERSION = 50,
        },
        u16v {
            NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_1 = 136,
            NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2 = 152,
            NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_3 = 160,
            NDIS_SIZEOF_MINIPORT_INIT_PARAMETER_REVISION_1 = 64,
            NDIS_SIZEOF_MINIPORT_PAUSE_PARAMETERS_REVISION_1 = 12,
            NDIS_SIZEOF_MINIPORT_RESTART_PARAMETERS_REVISION_1 = 20,
            NDIS_SIZEOF_NET_DEVICE_PNP_EVENT_REVISION_1 = 44,
            NDIS_SIZEOF_OID_REQUEST_REVISION_1 = 236,
            NDIS_SIZEOF_OID_REQUEST_REVISION_2 = 248,
            NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_1 = 28,
            NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2 = 28,
            NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_1 = 216,
            NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2 = 224,
            NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1 = 16,
            NDIS_SIZEOF_STATUS_INDICATION_REVISION_1 = 112,
            NDIS_SIZEOF_LINK_STATE_REVISION_1 = 40,
            NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_1 = 164,
            NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_2 = 172,
            NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 = 24,
            NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1 = 56,
            NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1 = 248,
            NDIS_SIZEOF_CONFIGURATION_OBJECT_REVISION_1 = 20,
            IF_TYPE_ETHERNET_CSMACD = 6,
            MAXUSHORT = 0xFFFF,
        },
        usz {
            NDIS_MAX_PHYS_ADDRESS_LENGTH = 32,
            NDIS_OID_REQUEST_NDIS_RESERVED_SIZE = 16,
            NET_BUFFER_LIST_NEXT_OFFSET = 0,
            NET_BUFFER_LIST_STATUS_OFFSET = 0x8C,
        },
        u64v { NDIS_LINK_SPEED_UNKNOWN = 0xFFFF_FFFF_FFFF_FFFF },
        u32v {
            NDIS_DEFAULT_PORT_NUMBER = 0,
            NET_IFINDEX_UNSPECIFIED = 0,
            // Driver characteristics and registration attribute flags.
            NDIS_INTERMEDIATE_DRIVER = 0x0000_0001,
            NDIS_WDM_DRIVER = 0x0000_0002,
            NDIS_DRIVER_FLAGS_RESERVED = 0x0000_0008,
            NDIS_MINIPORT_ATTRIBUTES_HARDWARE_DEVICE = 0x0000_0001,
            NDIS_MINIPORT_ATTRIBUTES_NDIS_WDM = 0x0000_0002,
            NDIS_MINIPORT_ATTRIBUTES_SURPRISE_REMOVE_OK = 0x0000_0004,
            NDIS_MINIPORT_ATTRIBUTES_NOT_CO_NDIS = 0x0000_0008,
            NDIS_MINIPORT_ATTRIBUTES_DO_NOT_BIND_TO_ALL_CO = 0x0000_0010,
            NDIS_MINIPORT_ATTRIBUTES_NO_HALT_ON_SUSPEND = 0x0000_0020,
            NDIS_MINIPORT_ATTRIBUTES_BUS_MASTER = 0x0000_0040,
            NDIS_MINIPORT_ATTRIBUTES_CONTROLS_DEFAULT_PORT = 0x0000_0080,
            NDIS_MINIPORT_ATTRIBUTES_NO_PAUSE_ON_SUSPEND = 0x0000_0100,
            NDIS_MINIPORT_ATTRIBUTES_NO_OID_INTERCEPT_ON_NONDEFAULT_PORTS = 0x0000_0200,
            NDIS_MINIPORT_ATTRIBUTES_REGISTER_BUGCHECK_CALLBACK = 0x0000_0400,
            // Data path and pause flags.
            NDIS_SEND_FLAGS_DISPATCH_LEVEL = 0x0000_0001,
            NDIS_SEND_FLAGS_CHECK_FOR_LOOPBACK = 0x0000_0002,
            NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL = 0x0000_0001,
            NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL = 0x0000_0001,
            NDIS_RECEIVE_FLAGS_RESOURCES = 0x0000_0002,
            NDIS_RETURN_FLAGS_DISPATCH_LEVEL = 0x0000_0001,
            NDIS_PAUSE_NDIS_INTERNAL = 0x0000_0001,
            NDIS_PAUSE_LOW_POWER = 0x0000_0002,
            NDIS_PAUSE_MINIPORT_DEVICE_REMOVE = 0x0000_0080,
            // OID requests.
            NDIS_OID_REQUEST_TIMEOUT_INFINITE = 0,
            NDIS_OID_REQUEST_FLAGS_VPORT_ID_VALID = 0x0001,
            // General OIDs.
            OID_GEN_SUPPORTED_LIST = 0x0001_0101,
            OID_GEN_HARDWARE_STATUS = 0x0001_0102,
            OID_GEN_MEDIA_SUPPORTED = 0x0001_0103,
            OID_GEN_MEDIA_IN_USE = 0x0001_0104,
            OID_GEN_MAXIMUM_LOOKAHEAD = 0x0001_0105,
            OID_GEN_MAXIMUM_FRAME_SIZE = 0x0001_0106,
            OID_GEN_LINK_SPEED = 0x0001_0107,
            OID_GEN_TRANSMIT_BUFFER_SPACE = 0x0001_0108,
            OID_GEN_RECEIVE_BUFFER_SPACE = 0x0001_0109,
            OID_GEN_TRANSMIT_BLOCK_SIZE = 0x0001_010A,
            OID_GEN_RECEIVE_BLOCK_SIZE = 0x0001_010B,
            OID_GEN_VENDOR_ID = 0x0001_010C,
            OID_GEN_VENDOR_DESCRIPTION = 0x0001_010D,
            OID_GEN_CURRENT_PACKET_FILTER = 0x0001_010E,
            OID_GEN_CURRENT_LOOKAHEAD = 0x0001_010F,
            OID_GEN_DRIVER_VERSION = 0x0001_0110,
            OID_GEN_MAXIMUM_TOTAL_SIZE = 0x0001_0111,
            OID_GEN_PROTOCOL_OPTIONS = 0x0001_0112,
            OID_GEN_MAC_OPTIONS = 0x0001_0113,
            OID_GEN_MEDIA_CONNECT_STATUS = 0x0001_0114,
            OID_GEN_MAXIMUM_SEND_PACKETS = 0x0001_0115,
            OID_GEN_VENDOR_DRIVER_VERSION = 0x0001_0116,
            OID_GEN_SUPPORTED_GUIDS = 0x0001_0117,
            OID_GEN_NETWORK_LAYER_ADDRESSES = 0x0001_0118,
            OID_GEN_TRANSPORT_HEADER_OFFSET = 0x0001_0119,
            OID_GEN_PHYSICAL_MEDIUM = 0x0001_0202,
            OID_GEN_MAX_LINK_SPEED = 0x0001_0206,
            OID_GEN_LINK_STATE = 0x0001_0207,
            OID_GEN_LINK_PARAMETERS = 0x0001_0208,
            OID_GEN_INTERRUPT_MODERATION = 0x0001_0209,
            OID_GEN_VLAN_ID = 0x0001_021C,
            OID_GEN_MINIPORT_RESTART_ATTRIBUTES = 0x0001_021D,
            OID_GEN_XMIT_LINK_SPEED = 0x0001_0284,
            OID_GEN_RCV_LINK_SPEED = 0x0001_0285,
            OID_GEN_MEDIA_CONNECT_STATUS_EX = 0x0001_028A,
            OID_GEN_MEDIA_DUPLEX_STATE = 0x0001_028C,
            OID_GEN_XMIT_OK = 0x0002_0101,
            OID_GEN_RCV_OK = 0x0002_0102,
            OID_GEN_XMIT_ERROR = 0x0002_0103,
            OID_GEN_RCV_ERROR = 0x0002_0104,
            OID_GEN_RCV_NO_BUFFER = 0x0002_0105,
            OID_GEN_STATISTICS = 0x0002_0106,
            OID_802_3_PERMANENT_ADDRESS = 0x0101_0101,
            OID_802_3_CURRENT_ADDRESS = 0x0101_0102,
            OID_802_3_MULTICAST_LIST = 0x0101_0103,
            OID_802_3_MAXIMUM_LIST_SIZE = 0x0101_0104,
            OID_802_3_RCV_ERROR_ALIGNMENT = 0x0102_0101,
            OID_802_3_XMIT_ONE_COLLISION = 0x0102_0102,
            OID_802_3_XMIT_MORE_COLLISIONS = 0x0102_0103,
            OID_PNP_CAPABILITIES = 0xFD01_0100,
            OID_PNP_SET_POWER = 0xFD01_0101,
            OID_PNP_QUERY_POWER = 0xFD01_0102,
            // NDK OIDs.
            OID_NDK_SET_STATE = 0xFC04_0201,
            OID_NDK_STATISTICS = 0xFC04_0202,
            OID_NDK_CONNECTIONS = 0xFC04_0203,
            OID_NDK_LOCAL_ENDPOINTS = 0xFC04_0204,
            // Receive filter and MAC options.
            NDIS_PACKET_TYPE_DIRECTED = 0x0000_0001,
            NDIS_PACKET_TYPE_MULTICAST = 0x0000_0002,
            NDIS_PACKET_TYPE_ALL_MULTICAST = 0x0000_0004,
            NDIS_PACKET_TYPE_BROADCAST = 0x0000_0008,
            NDIS_PACKET_TYPE_PROMISCUOUS = 0x0000_0020,
            NDIS_PACKET_TYPE_ALL_LOCAL = 0x0000_0080,
            NDIS_MAC_OPTION_COPY_LOOKAHEAD_DATA = 0x0000_0001,
            NDIS_MAC_OPTION_RECEIVE_SERIALIZED = 0x0000_0002,
            NDIS_MAC_OPTION_TRANSFERS_NOT_PEND = 0x0000_0004,
            NDIS_MAC_OPTION_NO_LOOPBACK = 0x0000_0008,
            NDIS_MAC_OPTION_8021P_PRIORITY = 0x0000_0040,
            NDIS_MAC_OPTION_8021Q_VLAN = 0x0000_0200,
            // General attribute statistics bits.
            NDIS_STATISTICS_XMIT_OK_SUPPORTED = 0x0000_0001,
            NDIS_STATISTICS_RCV_OK_SUPPORTED = 0x0000_0002,
            NDIS_STATISTICS_XMIT_ERROR_SUPPORTED = 0x0000_0004,
            NDIS_STATISTICS_RCV_ERROR_SUPPORTED = 0x0000_0008,
            NDIS_STATISTICS_RCV_NO_BUFFER_SUPPORTED = 0x0000_0010,
            NDIS_STATISTICS_DIRECTED_BYTES_XMIT_SUPPORTED = 0x0000_0020,
            NDIS_STATISTICS_DIRECTED_FRAMES_XMIT_SUPPORTED = 0x0000_0040,
            NDIS_STATISTICS_MULTICAST_BYTES_XMIT_SUPPORTED = 0x0000_0080,
            NDIS_STATISTICS_MULTICAST_FRAMES_XMIT_SUPPORTED = 0x0000_0100,
            NDIS_STATISTICS_BROADCAST_BYTES_XMIT_SUPPORTED = 0x0000_0200,
            NDIS_STATISTICS_BROADCAST_FRAMES_XMIT_SUPPORTED = 0x0000_0400,
            NDIS_STATISTICS_DIRECTED_BYTES_RCV_SUPPORTED = 0x0000_0800,
            NDIS_STATISTICS_DIRECTED_FRAMES_RCV_SUPPORTED = 0x0000_1000,
            NDIS_STATISTICS_MULTICAST_BYTES_RCV_SUPPORTED = 0x0000_2000,
            NDIS_STATISTICS_MULTICAST_FRAMES_RCV_SUPPORTED = 0x0000_4000,
            NDIS_STATISTICS_BROADCAST_BYTES_RCV_SUPPORTED = 0x0000_8000,
            NDIS_STATISTICS_BROADCAST_FRAMES_RCV_SUPPORTED = 0x0001_0000,
            NDIS_STATISTICS_RCV_CRC_ERROR_SUPPORTED = 0x0002_0000,
            NDIS_STATISTICS_TRANSMIT_QUEUE_LENGTH_SUPPORTED = 0x0004_0000,
            NDIS_STATISTICS_BYTES_RCV_SUPPORTED = 0x0008_0000,
            NDIS_STATISTICS_BYTES_XMIT_SUPPORTED = 0x0010_0000,
            NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED = 0x0020_0000,
            NDIS_STATISTICS_GEN_STATISTICS_SUPPORTED = 0x0040_0000,
            NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED = 0x0800_0000,
            // PnP notification, configuration and ndisndk.h flags.
            NET_EVENT_HALT_MINIPORT_ON_LOW_POWER = 0x0000_0001,
            NET_EVENT_FLAGS_VPORT_ID_VALID = 0x0000_0002,
            NDIS_CONFIG_FLAG_FILTER_INSTANCE_CONFIGURATION = 0x0000_0001,
            NETWORK_DIRECT_GLOBAL_FLAGS_ALLOW_REMOTE_IP_SUBNET = 0x0000_0001,
        },
        i32v {
            // C enums.
            NdisRequestQueryInformation = 0,
            NdisRequestSetInformation = 1,
            NdisRequestQueryStatistics = 2,
            NdisRequestMethod = 12,
            NdisHardwareStatusReady = 0,
            NdisHardwareStatusInitializing = 1,
            NdisHardwareStatusReset = 2,
            NdisHardwareStatusClosing = 3,
            NdisHardwareStatusNotReady = 4,
            NdisMedium802_3 = 0,
            NdisPhysicalMediumUnspecified = 0,
            NdisPhysicalMedium802_3 = 14,
            NdisInterfaceInternal = 0,
            NdisInterfacePci = 5,
            NdisInterfacePNPBus = 15,
            MediaConnectStateUnknown = 0,
            MediaConnectStateConnected = 1,
            MediaConnectStateDisconnected = 2,
            MediaDuplexStateUnknown = 0,
            MediaDuplexStateHalf = 1,
            MediaDuplexStateFull = 2,
            NET_IF_ACCESS_LOOPBACK = 1,
            NET_IF_ACCESS_BROADCAST = 2,
            NET_IF_ACCESS_POINT_TO_POINT = 3,
            NET_IF_ACCESS_POINT_TO_MULTI_POINT = 4,
            NET_IF_DIRECTION_SENDRECEIVE = 0,
            NET_IF_DIRECTION_SENDONLY = 1,
            NET_IF_DIRECTION_RECEIVEONLY = 2,
            NET_IF_CONNECTION_DEDICATED = 1,
            NET_IF_CONNECTION_PASSIVE = 2,
            NET_IF_CONNECTION_DEMAND = 3,
            NdisHaltDeviceDisabled = 0,
            NdisHaltDeviceInstanceDeInitialized = 1,
            NdisHaltDevicePoweredDown = 2,
            NdisHaltDeviceSurpriseRemoved = 3,
            NdisHaltDeviceFailed = 4,
            NdisHaltDeviceInitializationFailed = 5,
            NdisHaltDeviceStopped = 6,
            NdisShutdownPowerOff = 0,
            NdisShutdownBugCheck = 1,
            NdisDevicePnPEventQueryRemoved = 0,
            NdisDevicePnPEventRemoved = 1,
            NdisDevicePnPEventSurpriseRemoved = 2,
            NdisDevicePnPEventQueryStopped = 3,
            NdisDevicePnPEventStopped = 4,
            NdisDevicePnPEventPowerProfileChanged = 5,
            NdisDevicePnPEventFilterListChanged = 6,
            NdisPauseFunctionsUnsupported = 0,
            NdisPauseFunctionsSendOnly = 1,
            NdisPauseFunctionsReceiveOnly = 2,
            NdisPauseFunctionsSendAndReceive = 3,
            NdisPauseFunctionsUnknown = 4,
            NetEventNDKEnable = 13,
            NetEventNDKDisable = 14,
            NdisParameterInteger = 0,
            NdisParameterHexInteger = 1,
            NdisParameterString = 2,
            NdisParameterMultiString = 3,
            NdisParameterBinary = 4,
            // NDIS_STATUS codes.
            NDIS_STATUS_SUCCESS = 0,
            NDIS_STATUS_PENDING = 0x0000_0103,
            NDIS_STATUS_NOT_RECOGNIZED = 0x0001_0001,
            NDIS_STATUS_NOT_COPIED = 0x0001_0002,
            NDIS_STATUS_NOT_ACCEPTED = 0x0001_0003,
            NDIS_STATUS_INDICATION_REQUIRED = 0x4023_0001,
            NDIS_STATUS_NOT_RESETTABLE = 0x8001_0001,
            NDIS_STATUS_SOFT_ERRORS = 0x8001_0003,
            NDIS_STATUS_HARD_ERRORS = 0x8001_0004,
            NDIS_STATUS_BUFFER_OVERFLOW = 0x8000_0005,
            NDIS_STATUS_FAILURE = 0xC000_0001,
            NDIS_STATUS_RESOURCES = 0xC000_009A,
            NDIS_STATUS_CLOSING = 0xC001_0002,
            NDIS_STATUS_BAD_VERSION = 0xC001_0004,
            NDIS_STATUS_BAD_CHARACTERISTICS = 0xC001_0005,
            NDIS_STATUS_ADAPTER_NOT_FOUND = 0xC001_0006,
            NDIS_STATUS_OPEN_FAILED = 0xC001_0007,
            NDIS_STATUS_DEVICE_FAILED = 0xC001_0008,
            NDIS_STATUS_MULTICAST_FULL = 0xC001_0009,
            NDIS_STATUS_MULTICAST_EXISTS = 0xC001_000A,
            NDIS_STATUS_MULTICAST_NOT_FOUND = 0xC001_000B,
            NDIS_STATUS_REQUEST_ABORTED = 0xC001_000C,
            NDIS_STATUS_RESET_IN_PROGRESS = 0xC001_000D,
            NDIS_STATUS_NOT_SUPPORTED = 0xC000_00BB,
            NDIS_STATUS_ADAPTER_NOT_READY = 0xC001_0011,
            NDIS_STATUS_INVALID_LENGTH = 0xC001_0014,
            NDIS_STATUS_INVALID_DATA = 0xC001_0015,
            NDIS_STATUS_BUFFER_TOO_SHORT = 0xC001_0016,
            NDIS_STATUS_INVALID_OID = 0xC001_0017,
            NDIS_STATUS_ADAPTER_REMOVED = 0xC001_0018,
            NDIS_STATUS_UNSUPPORTED_MEDIA = 0xC001_0019,
            NDIS_STATUS_INVALID_DEVICE_REQUEST = 0xC000_0010,
            NDIS_STATUS_INVALID_PARAMETER = 0xC000_000D,
            NDIS_STATUS_INVALID_STATE = 0xC000_0184,
            NDIS_STATUS_SEND_ABORTED = 0xC023_000C,
            NDIS_STATUS_MEDIA_DISCONNECTED = 0xC023_001F,
            NDIS_STATUS_PAUSED = 0xC023_002A,
            NDIS_STATUS_UNSUPPORTED_REVISION = 0xC023_002C,
            NDIS_STATUS_LOW_POWER_STATE = 0xC023_002F,
            NDIS_STATUS_RESET_START = 0x4001_0004,
            NDIS_STATUS_RESET_END = 0x4001_0005,
            NDIS_STATUS_MEDIA_CONNECT = 0x4001_000B,
            NDIS_STATUS_MEDIA_DISCONNECT = 0x4001_000C,
            NDIS_STATUS_LINK_SPEED_CHANGE = 0x4001_0013,
            NDIS_STATUS_LINK_STATE = 0x4001_0017,
        },
        // nbl.rs (ndis/nbl.h, ndis/nblinfo.h, ndis/nblapi.h, ntddndis.h).
        usz { MEMORY_ALLOCATION_ALIGNMENT = 16 },
        u8v {
            NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1 = 1,
            NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_2 = 2,
            NDIS_PROTOCOL_ID_DEFAULT = 0x00,
            NDIS_PROTOCOL_ID_TCP_IP = 0x02,
            NDIS_PROTOCOL_ID_IPX = 0x06,
            NDIS_PROTOCOL_ID_NBF = 0x07,
            NDIS_PROTOCOL_ID_MAX = 0x0F,
            NDIS_PROTOCOL_ID_MASK = 0x0F,
        },
        u16v {
            NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1 = 16,
            NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_2 = 20,
        },
        u32v {
            NET_BUFFER_LIST_POOL_FLAG_VERIFY = 0x0000_0001,
            NBL_FLAGS_PROTOCOL_RESERVED = 0xFFF0_0003,
            NBL_FLAGS_MINIPORT_RESERVED = 0x0000_F000,
            NBL_FLAGS_SCRATCH = 0x000F_0000,
            NBL_FLAGS_NDIS_RESERVED = 0x0000_0FFC,
            NDIS_NBL_FLAGS_SEND_READ_ONLY = 0x0000_0001,
            NDIS_NBL_FLAGS_RECV_READ_ONLY = 0x0000_0002,
            NDIS_NBL_FLAGS_HD_SPLIT = 0x0000_0100,
            NDIS_NBL_FLAGS_IS_IPV4 = 0x0000_0200,
            NDIS_NBL_FLAGS_IS_IPV6 = 0x0000_0400,
            NDIS_NBL_FLAGS_IS_TCP = 0x0000_0800,
            NDIS_NBL_FLAGS_IS_UDP = 0x0000_1000,
            NDIS_NBL_FLAGS_SPLIT_AT_UPPER_LAYER_PROTOCOL_HEADER = 0x0000_2000,
            NDIS_NBL_FLAGS_SPLIT_AT_UPPER_LAYER_PROTOCOL_PAYLOAD = 0x0000_4000,
            NDIS_NBL_FLAGS_IS_LOOPBACK_PACKET = 0x0000_8000,
        },
        i32v {
            TcpIpChecksumNetBufferListInfo = 0,
            IPsecOffloadV1NetBufferListInfo = 1,
            TcpLargeSendNetBufferListInfo = 2,
            ClassificationHandleNetBufferListInfo = 3,
            Ieee8021QNetBufferListInfo = 4,
            NetBufferListCancelId = 5,
            MediaSpecificInformation = 6,
            NetBufferListFrameType = 7,
            NetBufferListProtocolId = 7,
            NetBufferListHashValue = 8,
            NetBufferListHashInfo = 9,
            WfpNetBufferListInfo = 10,
            IPsecOffloadV2TunnelNetBufferListInfo = 11,
            IPsecOffloadV2HeaderNetBufferListInfo = 12,
            NetBufferListCorrelationId = 13,
            NetBufferListFilteringInfo = 14,
            MediaSpecificInformationEx = 15,
            NblOriginalInterfaceIfIndex = 16,
            TcpReceiveBytesTransferred = 17,
            SwitchForwardingReserved = 18,
            SwitchForwardingDetail = 19,
            VirtualSubnetInfo = 20,
            IMReserved = 21,
            TcpRecvSegCoalesceInfo = 22,
            RscTcpTimestampDelta = 23,
            GftOffloadInformation = 24,
            GftFlowEntryId = 25,
            MaxNetBufferListInfo = 26,
        },
        // protocol.rs (ndis.h, ntddndis.h) and netpnp.h codes (indicate.rs).
        u8v {
            NDIS_OBJECT_TYPE_BIND_PARAMETERS = 0x86,
            NDIS_OBJECT_TYPE_OPEN_PARAMETERS = 0x87,
            NDIS_OBJECT_TYPE_PROTOCOL_DRIVER_CHARACTERISTICS = 0x95,
            NDIS_BIND_PARAMETERS_REVISION_1 = 1,
            NDIS_BIND_PARAMETERS_REVISION_2 = 2,
            NDIS_BIND_PARAMETERS_REVISION_3 = 3,
            NDIS_BIND_PARAMETERS_REVISION_4 = 4,
            NDIS_OPEN_PARAMETERS_REVISION_1 = 1,
            NDIS_PROTOCOL_PAUSE_PARAMETERS_REVISION_1 = 1,
            NDIS_PROTOCOL_RESTART_PARAMETERS_REVISION_1 = 1,
            NDIS_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_1 = 1,
            NDIS_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2 = 2,
        },
        u16v {
            NDIS_SIZEOF_BIND_PARAMETERS_REVISION_1 = 248,
            NDIS_SIZEOF_BIND_PARAMETERS_REVISION_2 = 256,
            NDIS_SIZEOF_BIND_PARAMETERS_REVISION_3 = 280,
            NDIS_SIZEOF_BIND_PARAMETERS_REVISION_4 = 312,
            NDIS_SIZEOF_OPEN_PARAMETERS_REVISION_1 = 52,
            NDIS_SIZEOF_PROTOCOL_PAUSE_PARAMETERS_REVISION_1 = 12,
            NDIS_SIZEOF_PROTOCOL_RESTART_PARAMETERS_REVISION_1 = 52,
            NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_1 = 120,
            NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2 = 128,
        },
        u32v {
            NDIS_PROTOCOL_DRIVER_SUPPORTS_CURRENT_MAC_ADDRESS_CHANGE = 0x0000_0002,
            NDIS_PROTOCOL_DRIVER_SUPPORTS_L2_MTU_SIZE_CHANGE = 0x0000_0004,
        },
        i32v {
            NetEventSetPower = 0,
            NetEventQueryPower = 1,
            NetEventQueryRemoveDevice = 2,
            NetEventCancelRemoveDevice = 3,
            NetEventReconfigure = 4,
            NetEventBindList = 5,
            NetEventBindsComplete = 6,
            NetEventPnPCapabilities = 7,
            NetEventPause = 8,
            NetEventRestart = 9,
            NetEventPortActivation = 10,
            NetEventPortDeactivation = 11,
            NetEventIMReEnableDevice = 12,
            NetEventFilterPreDetach = 15,
            NetEventBindFailed = 16,
            NetEventSwitchActivate = 17,
            NetEventAllowBindsAbove = 18,
            NetEventInhibitBindsAbove = 19,
            NetEventAllowStart = 20,
            NetEventRequirePause = 21,
            NetEventUploadGftFlowEntries = 22,
            NetDeviceStateUnspecified = 0,
            NetDeviceStateD0 = 1,
            NetDeviceStateD1 = 2,
            NetDeviceStateD2 = 3,
            NetDeviceStateD3 = 4,
        },
        // netioapi.rs (netioapi.h, nldef.h, ws2def.h).
        u16v { AF_UNSPEC = 0, AF_INET = 2, AF_INET6 = 23 },
        usz { ANY_SIZE = 1 },
        i32v {
            MibParameterNotification = 0,
            MibAddInstance = 1,
            MibDeleteInstance = 2,
            MibInitialNotification = 3,
            IpPrefixOriginOther = 0,
            IpPrefixOriginManual = 1,
            IpPrefixOriginWellKnown = 2,
            IpPrefixOriginDhcp = 3,
            IpPrefixOriginRouterAdvertisement = 4,
            IpPrefixOriginUnchanged = 16,
            IpSuffixOriginOther = 0,
            IpSuffixOriginManual = 1,
            IpSuffixOriginWellKnown = 2,
            IpSuffixOriginDhcp = 3,
            IpSuffixOriginLinkLayerAddress = 4,
            IpSuffixOriginRandom = 5,
            IpSuffixOriginUnchanged = 16,
            NlsoOther = 0,
            NlsoManual = 1,
            NlsoWellKnown = 2,
            NlsoDhcp = 3,
            NlsoLinkLayerAddress = 4,
            NlsoRandom = 5,
            IpDadStateInvalid = 0,
            IpDadStateTentative = 1,
            IpDadStateDuplicate = 2,
            IpDadStateDeprecated = 3,
            IpDadStatePreferred = 4,
        },
        // kernel.rs (wdm.h, ntddk.h, dpfilter.h, ntstatus.h).
        u8v {
            PASSIVE_LEVEL = 0,
            APC_LEVEL = 1,
            DISPATCH_LEVEL = 2,
            SL_INVOKE_ON_CANCEL = 0x20,
            SL_INVOKE_ON_SUCCESS = 0x40,
            SL_INVOKE_ON_ERROR = 0x80,
        },
        u64v {
            POOL_FLAG_UNINITIALIZED = 0x02,
            POOL_FLAG_CACHE_ALIGNED = 0x08,
            POOL_FLAG_NON_PAGED = 0x40,
        },
        u32v {
            NormalPagePriority = 16,
            MdlMappingNoExecute = 0x4000_0000,
            DPFLTR_IHVNETWORK_ID = 80,
            DPFLTR_ERROR_LEVEL = 0,
            DPFLTR_INFO_LEVEL = 3,
        },
        i32v {
            MmCached = 1,
            NotificationEvent = 0,
            Executive = 0,
            NotificationTimer = 0,
            STATUS_MORE_PROCESSING_REQUIRED = 0xC000_0016,
        },
        // oid.rs: OID_GEN_STATISTICS (ntddndis.h).
        u8v { NDIS_STATISTICS_INFO_REVISION_1 = 1 },
        u16v { NDIS_SIZEOF_STATISTICS_INFO_REVISION_1 = 152 },
        u32v {
            NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_RCV = 0x0000_0001,
            NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_RCV = 0x0000_0002,
            NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_RCV = 0x0000_0004,
            NDIS_STATISTICS_FLAGS_VALID_BYTES_RCV = 0x0000_0008,
            NDIS_STATISTICS_FLAGS_VALID_RCV_DISCARDS = 0x0000_0010,
            NDIS_STATISTICS_FLAGS_VALID_RCV_ERROR = 0x0000_0020,
            NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_XMIT = 0x0000_0040,
            NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_XMIT = 0x0000_0080,
            NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_XMIT = 0x0000_0100,
            NDIS_STATISTICS_FLAGS_VALID_BYTES_XMIT = 0x0000_0200,
            NDIS_STATISTICS_FLAGS_VALID_XMIT_ERROR = 0x0000_0400,
            NDIS_STATISTICS_FLAGS_VALID_XMIT_DISCARDS = 0x0000_8000,
            NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_RCV = 0x0001_0000,
            NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_RCV = 0x0002_0000,
            NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_RCV = 0x0004_0000,
            NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_XMIT = 0x0008_0000,
            NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_XMIT = 0x0010_0000,
            NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_XMIT = 0x0020_0000,
        },
    }
}

/// All facts, in table order (the lines the `layout` example prints).
pub fn facts() -> impl Iterator<Item = LayoutFact> {
    LAYOUT.iter().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<String> {
        facts().map(|f| f.to_string()).collect()
    }

    #[test]
    fn known_lines_present() {
        let lines = lines();
        for want in [
            "NDIS_OBJECT_HEADER size 4",
            "NDIS_NDK_PROVIDER_CHARACTERISTICS size 24",
            "NDIS_NDK_PROVIDER_CHARACTERISTICS.OpenNDKAdapterHandler offset 8",
            "NDIS_NDK_PROVIDER_CHARACTERISTICS.CloseNDKAdapterHandler offset 16",
            "NDIS_MINIPORT_DRIVER_CHARACTERISTICS size 160",
            "NDIS_MINIPORT_DRIVER_CHARACTERISTICS.SetOptionsHandler offset 16",
            "NDIS_MINIPORT_DRIVER_CHARACTERISTICS.SynchronousOidRequestHandler offset 152",
            "NDIS_OID_REQUEST size 248",
            "NDIS_OID_REQUEST.DATA offset 32",
            "NDIS_OID_REQUEST.DATA.QUERY_INFORMATION.InformationBuffer offset 40",
            "NDIS_OID_REQUEST.SupportedRevision offset 232",
            "NDIS_MINIPORT_ADAPTER_ATTRIBUTES size 224",
            "NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES.NdkCapabilities offset 8",
            "NDIS_NDK_CAPABILITIES size 56",
            "NDIS_NDK_CAPABILITIES.MissingCounterMask offset 40",
            "NDIS_NDK_PERFORMANCE_COUNTERS size 240",
            "NDIS_NDK_PERFORMANCE_COUNTERS.RDMAOutFrames offset 232",
            "NDIS_NDK_STATISTICS_INFO.CounterSet offset 8",
            "NDIS_NDK_CONNECTION_ENTRY size 64",
            "NDIS_NDK_LOCAL_ENDPOINT_ENTRY.OwnerPid offset 32",
            "KDPC size 64",
            "IRP size 208",
            "IRP.IoStatus offset 48",
            "IRP.Tail_CurrentStackLocation offset 184",
            "IO_STACK_LOCATION.CompletionRoutine offset 56",
            "SOCKADDR_INET size 28",
            "NET_PNP_EVENT size 152",
            "NET_BUFFER size 176",
            "MIB_UNICASTIPADDRESS_ROW size 80",
            "MIB_UNICASTIPADDRESS_ROW.CreationTimeStamp offset 72",
            "MIB_UNICASTIPADDRESS_TABLE.Table offset 8",
            "const IpDadStatePreferred 4",
            "NDIS_PROTOCOL_DRIVER_CHARACTERISTICS size 128",
            "NDIS_PROTOCOL_DRIVER_CHARACTERISTICS.DirectOidRequestCompleteHandler offset 120",
            "NDIS_BIND_PARAMETERS size 312",
            "NDIS_BIND_PARAMETERS.BoundAdapterName offset 240",
            "NDIS_BIND_PARAMETERS.NicSwitchArray offset 304",
            "const NDIS_SIZEOF_BIND_PARAMETERS_REVISION_4 312",
            "const NDIS_SIZEOF_OPEN_PARAMETERS_REVISION_1 52",
            "NET_BUFFER.MemoryInfo offset 168",
            "NET_BUFFER_LIST size 352",
            "NET_BUFFER_LIST.Status offset 140",
            "NET_BUFFER_LIST.NetBufferListInfo offset 144",
            "NET_BUFFER_LIST_POOL_PARAMETERS size 20",
            "const NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1 16",
            "NDIS_OPEN_NDK_ADAPTER_PARAMETERS.VPortId offset 8",
            "const OID_NDK_SET_STATE 4228121089",
            "const OID_NDK_LOCAL_ENDPOINTS 4228121092",
            "const OID_GEN_SUPPORTED_LIST 65793",
            "const OID_802_3_CURRENT_ADDRESS 16843010",
            "const NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS 178",
            "const NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES 179",
            "const NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2 152",
            "const NDIS_SIZEOF_OID_REQUEST_REVISION_1 236",
            "const NetEventNDKEnable 13",
            "const NetEventNDKDisable 14",
            "const NDIS_STATUS_BUFFER_TOO_SHORT 3221291030",
            "const NDIS_STATUS_PENDING 259",
            "const NDIS_MINIPORT_MINOR_VERSION 50",
        ] {
            assert!(lines.iter().any(|l| l == want), "missing line: {want}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = facts().map(|f| (f.kind, f.name)).collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
    }

    #[test]
    fn guids_match_the_header() {
        let as_u128 = |g: ndkpi::GUID| {
            (u128::from(g.Data1) << 96)
                | (u128::from(g.Data2) << 80)
                | (u128::from(g.Data3) << 64)
                | u128::from(u64::from_be_bytes(g.Data4))
        };
        assert_eq!(
            as_u128(GUID_NDIS_NDK_CAPABILITIES),
            0x7969ba4d_dd80_4bc7_b3e6_68043997e519
        );
        assert_eq!(
            as_u128(GUID_NDIS_NDK_STATE),
            0x530c69c9_2f51_49de_a1af_088d54ffa474
        );
    }

    #[test]
    fn variable_size_answers() {
        assert_eq!(NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(0), 16);
        assert_eq!(NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(1), 80);
        assert_eq!(NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(3), 16 + 3 * 64);
        assert_eq!(NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(1), 52);
        assert_eq!(NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(2), 88);
        assert_eq!(ndk_variable_header_size(80), 80);
        assert_eq!(ndk_variable_header_size(70_000), MAXUSHORT);
    }

    #[test]
    fn counter_mask_bits() {
        assert_eq!(crate::ndis_ndk_performance_counter_mask!(Connect), 1);
        assert_eq!(crate::ndis_ndk_performance_counter_mask!(CQError), 1 << 25);
        assert_eq!(
            crate::ndis_ndk_performance_counter_mask!(RDMAOutFrames),
            1 << 29
        );
    }

    #[test]
    fn keyword_is_utf16() {
        let text: String = char::decode_utf16(NETWORK_DIRECT_KEYWORD)
            .map(Result::unwrap)
            .collect();
        assert_eq!(text, "*NetworkDirect");
        let text: String = char::decode_utf16(NETWORK_DIRECT_GLOBAL_FLAGS_KEYWORD)
            .map(Result::unwrap)
            .collect();
        assert_eq!(text, "*NetworkDirectGlobalFlags");
        let s = UNICODE_STRING::from_static(&NETWORK_DIRECT_KEYWORD);
        assert_eq!((s.Length, s.MaximumLength), (28, 28));
    }

    #[test]
    fn constructors_fill_headers() {
        let c = NDIS_MINIPORT_DRIVER_CHARACTERISTICS::new(1, 0);
        assert_eq!(
            c.Header,
            NDIS_OBJECT_HEADER::new(
                0x8A,
                2,
                NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2
            )
        );
        assert_eq!((c.MajorNdisVersion, c.MinorNdisVersion), (6, 50));

        let a = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES::new(true, core::ptr::null_mut());
        assert_eq!(a.Header, NDIS_OBJECT_HEADER::new(0xB3, 1, 16));
        assert_eq!(a.Enabled, 1);

        let caps = NDIS_NDK_CAPABILITIES::new(core::ptr::null_mut());
        assert_eq!(caps.Header, NDIS_OBJECT_HEADER::new(0x80, 1, 56));

        let e = NET_PNP_EVENT_NOTIFICATION::new(NetEventNDKDisable);
        assert_eq!(e.Header, NDIS_OBJECT_HEADER::new(0x80, 1, 164));
        assert_eq!(e.NetPnPEvent.NetEvent, 14);

        let s = NDIS_NDK_STATISTICS_INFO::new(NDIS_NDK_PERFORMANCE_COUNTERS::default());
        assert_eq!(s.Header, NDIS_OBJECT_HEADER::new(0x80, 1, 248));
    }
}

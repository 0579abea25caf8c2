//! The x64 layout facts of every mirrored struct and the values of the
//! header constants, written once in the `layout_facts!` table below, as transcribed from
//! `ndkpi.h` (NDKPI 2.1), `ndkinfo.h`, `ws2def.h`/`ws2ipdef.h` and `wdm.h`.
//!
//! From that one table the macro produces
//! * a compile-time assertion per struct size, per field offset and per
//!   constant value, so a wrong declaration does not build;
//! * a compile-time check that each struct's field list is complete (a
//!   struct pattern without `..`);
//! * [`LAYOUT`], the same facts with the values the compiler computed,
//!   which the `layout` example prints through [`facts`].
//!
//! Offsets and sizes hold on 64-bit Windows; the assertions are compiled
//! only for 64-bit targets (the 32-bit layout differs and is not a goal).
//! Constants print as unsigned decimals; NTSTATUS values print as the
//! decimal of their `u32` bit pattern (e.g. `STATUS_PENDING` is 259).

use core::fmt;

// The table names nearly every item of these modules.
#[allow(clippy::wildcard_imports)]
use crate::dispatch::*;
#[allow(clippy::wildcard_imports)]
use crate::flags::*;
#[allow(clippy::wildcard_imports)]
use crate::info::*;
use crate::lam::NDK_LOGICAL_ADDRESS_MAPPING;
#[allow(clippy::wildcard_imports)]
use crate::mdl::*;
#[allow(clippy::wildcard_imports)]
use crate::object::*;
#[allow(clippy::wildcard_imports)]
use crate::result::*;
use crate::sge::NDK_SGE;
#[allow(clippy::wildcard_imports)]
use crate::sockaddr::*;
use crate::status::{
    NDIS_STATUS_FAILURE, NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_NOT_SUPPORTED,
    NDIS_STATUS_PENDING, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS, STATUS_NAMES,
};
use crate::types::{GROUP_AFFINITY, GUID, PAGE_SHIFT, PAGE_SIZE};

/// What a [`LayoutFact`] states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FactKind {
    /// `size_of` a struct.
    Size,
    /// `offset_of` a field, named `Struct.Field`.
    Offset,
    /// The value of a constant.
    Const,
}

/// One layout or constant fact; its `Display` form is the line the
/// `layout` example prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LayoutFact {
    /// C name: `NDK_QP`, `NDK_QP_DISPATCH.NdkRead`, `NDK_OP_FLAG_DEFER`.
    pub name: &'static str,
    /// Which kind of fact.
    pub kind: FactKind,
    /// Size or offset in bytes, or the constant as an unsigned number.
    pub value: u64,
}

impl LayoutFact {
    const fn new(name: &'static str, kind: FactKind, value: u64) -> Self {
        Self { name, kind, value }
    }
}

impl fmt::Display for LayoutFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FactKind::Size => write!(f, "{} size {}", self.name, self.value),
            FactKind::Offset => write!(f, "{} offset {}", self.name, self.value),
            FactKind::Const => write!(f, "const {} {}", self.name, self.value),
        }
    }
}

// Widening conversions of constants to the table's `u64`. Signed C values
// are shown as the unsigned bit pattern of their own width.
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn usz(v: usize) -> u64 {
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
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn u16v(v: u16) -> u64 {
    v as u64
}
#[allow(clippy::cast_lossless, reason = "`From` is not callable in const fn")]
const fn i16v(v: i16) -> u64 {
    v as u16 as u64
}

/// Offset of a plain field, or of a field reached through a path (the
/// members of `NDK_SGE`'s anonymous union).
macro_rules! field_offset {
    ($t:ty, $label:ident) => {
        core::mem::offset_of!($t, $label)
    };
    ($t:ty, $label:ident, $($path:ident).+) => {
        core::mem::offset_of!($t, $($path).+)
    };
}

/// A struct pattern naming every field: fails to compile if the table
/// forgets one. Fields reached through a path are listed explicitly.
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
/// `NAME: size (pattern fields)? { Field: offset, Label @ path.to.field:
/// offset, ... }`; constant groups are `converter { NAME = value, ... }`.
macro_rules! layout_facts {
    (
        structs {
            $(
                $t:ident : $size:literal $( ( $($field:ident),+ ) )? {
                    $( $label:ident $( @ $($path:ident).+ )? : $off:literal ),* $(,)?
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
                    field_offset!($t, $label $(, $($path).+)?) == $off,
                    concat!(stringify!($t), ".", stringify!($label)),
                );
            )*
            all_fields!($t; [$($($field),+)?]; [$($label),*]);
        )*
        $( $(
            const _: () = assert!($conv($c) == $v, stringify!($c));
        )* )*

        /// Every size, field offset and constant of the table, in table
        /// order, with the values the compiler computed.
        pub const LAYOUT: &[LayoutFact] = &[
            $(
                LayoutFact::new(stringify!($t), FactKind::Size, usz(size_of::<$t>())),
                $(
                    LayoutFact::new(
                        concat!(stringify!($t), ".", stringify!($label)),
                        FactKind::Offset,
                        usz(field_offset!($t, $label $(, $($path).+)?)),
                    ),
                )*
            )*
            $( $(
                LayoutFact::new(stringify!($c), FactKind::Const, $conv($c)),
            )* )*
        ];
    };
}

layout_facts! {
    structs {
        // ndkinfo.h
        NDK_VERSION: 4 { Major: 0, Minor: 2 },
        NDK_ADAPTER_INFO: 104 {
            Version: 0,
            VendorId: 4,
            DeviceId: 8,
            MaxRegistrationSize: 16,
            MaxWindowSize: 24,
            FRMRPageCount: 32,
            MaxInitiatorRequestSge: 36,
            MaxReceiveRequestSge: 40,
            MaxReadRequestSge: 44,
            MaxTransferLength: 48,
            MaxInlineDataSize: 52,
            MaxInboundReadLimit: 56,
            MaxOutboundReadLimit: 60,
            MaxReceiveQueueDepth: 64,
            MaxInitiatorQueueDepth: 68,
            MaxSrqDepth: 72,
            MaxCqDepth: 76,
            LargeRequestThreshold: 80,
            MaxCallerData: 84,
            MaxCalleeData: 88,
            AdapterFlags: 92,
            RdmaTechnology: 96,
        },
        // ndkpi.h, in header order
        NDK_OBJECT_HEADER_RESERVED_BLOCK: 32 { rf: 0 },
        NDK_OBJECT_HEADER: 40 { Version: 0, ObjectType: 4, NdkReserved: 8 },
        NDK_RESULT: 24 { Status: 0, BytesTransferred: 4, QPContext: 8, RequestContext: 16 },
        NDK_RESULT_EX: 40 {
            Status: 0,
            BytesTransferred: 4,
            QPContext: 8,
            RequestContext: 16,
            Type: 24,
            ProviderErrorCode: 28,
            TypeSpecificCompletionOutput: 32,
        },
        NDK_LOGICAL_ADDRESS_MAPPING: 24 { AdapterContext: 0, AdapterPageCount: 8, AdapterPageArray: 16 },
        NDK_SGE: 16 (u, Length, MemoryRegionToken) {
            VirtualAddress @ u.VirtualAddress: 0,
            LogicalAddress @ u.LogicalAddress: 0,
            Length: 8,
            MemoryRegionToken: 12,
        },
        NDK_EXTENSION_INTERFACE: 8 { Dispatch: 0 },
        NDK_CQ_DISPATCH: 56 {
            NdkCloseCq: 0,
            NdkQueryExtension: 8,
            NdkResizeCq: 16,
            NdkArmCq: 24,
            NdkGetCqResults: 32,
            NdkControlCqInterruptModeration: 40,
            NdkGetCqResultsEx: 48,
        },
        NDK_CQ: 48 { Header: 0, Dispatch: 40 },
        NDK_MR_DISPATCH: 56 {
            NdkCloseMr: 0,
            NdkQueryExtension: 8,
            NdkRegisterMr: 16,
            NdkDeregisterMr: 24,
            NdkInitializeFastRegisterMr: 32,
            NdkGetRemoteTokenFromMr: 40,
            NdkGetLocalTokenFromMr: 48,
        },
        NDK_MR: 48 { Header: 0, Dispatch: 40 },
        NDK_MW_DISPATCH: 24 { NdkCloseMw: 0, NdkQueryExtension: 8, NdkGetRemoteTokenFromMw: 16 },
        NDK_MW: 48 { Header: 0, Dispatch: 40 },
        NDK_SRQ_DISPATCH: 32 { NdkCloseSrq: 0, NdkQueryExtension: 8, NdkModifySrq: 16, NdkSrqReceive: 24 },
        NDK_SRQ: 48 { Header: 0, Dispatch: 40 },
        NDK_QP_DISPATCH: 88 {
            NdkCloseQp: 0,
            NdkQueryExtension: 8,
            NdkFlush: 16,
            NdkSend: 24,
            NdkReceive: 32,
            NdkBind: 40,
            NdkFastRegister: 48,
            NdkInvalidate: 56,
            NdkRead: 64,
            NdkWrite: 72,
            NdkSendAndInvalidate: 80,
        },
        NDK_QP: 48 { Header: 0, Dispatch: 40 },
        NDK_PD_DISPATCH: 64 {
            NdkClosePd: 0,
            NdkQueryExtension: 8,
            NdkCreateMr: 16,
            NdkCreateMw: 24,
            NdkCreateSrq: 32,
            NdkCreateQp: 40,
            NdkCreateQpWithSrq: 48,
            NdkGetPrivilegedMemoryRegionToken: 56,
        },
        NDK_PD: 48 { Header: 0, Dispatch: 40 },
        NDK_SHARED_ENDPOINT_DISPATCH: 24 {
            NdkCloseSharedEndpoint: 0,
            NdkQueryExtension: 8,
            NdkGetLocalAddress: 16,
        },
        NDK_SHARED_ENDPOINT: 48 { Header: 0, Dispatch: 40 },
        NDK_CONNECTOR_DISPATCH: 104 {
            NdkCloseConnector: 0,
            NdkQueryExtension: 8,
            NdkConnect: 16,
            NdkConnectWithSharedEndpoint: 24,
            NdkCompleteConnect: 32,
            NdkAccept: 40,
            NdkReject: 48,
            NdkGetConnectionData: 56,
            NdkGetLocalAddress: 64,
            NdkGetPeerAddress: 72,
            NdkDisconnect: 80,
            NdkCompleteConnectEx: 88,
            NdkAcceptEx: 96,
        },
        NDK_CONNECTOR: 48 { Header: 0, Dispatch: 40 },
        NDK_LISTENER_DISPATCH: 40 {
            NdkCloseListener: 0,
            NdkQueryExtension: 8,
            NdkListen: 16,
            NdkGetLocalAddress: 24,
            NdkControlConnectEvents: 32,
        },
        NDK_LISTENER: 48 { Header: 0, Dispatch: 40 },
        NDK_ADAPTER_DISPATCH: 72 {
            NdkQueryExtension: 0,
            NdkQueryAdapterInfo: 8,
            NdkCreateCq: 16,
            NdkCreatePd: 24,
            NdkCreateSharedEndpoint: 32,
            NdkCreateConnector: 40,
            NdkCreateListener: 48,
            NdkBuildLAM: 56,
            NdkReleaseLAM: 64,
        },
        NDK_ADAPTER: 48 { Header: 0, Dispatch: 40 },
        // Windows base types (guiddef.h, winnt.h/wdm.h, ws2def.h, ws2ipdef.h)
        GUID: 16 { Data1: 0, Data2: 4, Data3: 6, Data4: 8 },
        GROUP_AFFINITY: 16 { Mask: 0, Group: 8, Reserved: 10 },
        SOCKADDR: 16 { sa_family: 0, sa_data: 2 },
        IN_ADDR: 4 { S_un: 0 },
        SOCKADDR_IN: 16 { sin_family: 0, sin_port: 2, sin_addr: 4, sin_zero: 8 },
        IN6_ADDR: 16 { u: 0 },
        SOCKADDR_IN6: 28 {
            sin6_family: 0,
            sin6_port: 2,
            sin6_flowinfo: 4,
            sin6_addr: 8,
            sin6_scope_id: 24,
        },
        MDL: 48 {
            Next: 0,
            Size: 8,
            MdlFlags: 10,
            Process: 16,
            MappedSystemVa: 24,
            StartVa: 32,
            ByteCount: 40,
            ByteOffset: 44,
        },
    }
    consts {
        i32v {
            NdkUndefined = 0,
            NdkiWarp = 1,
            NdkInfiniBand = 2,
            NdkRoCE = 3,
            NdkRoCEv2 = 4,
            NdkMaxTechnology = 5,
        },
        u32v {
            NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED = 0x0000_0001,
            NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED = 0x0000_0002,
            NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED = 0x0000_0004,
            NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED = 0x0000_0008,
            NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED = 0x0000_0010,
            NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED = 0x0000_0100,
            NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED = 0x0001_0000,
        },
        i32v {
            NdkObjectTypeUndefined = 0,
            NdkObjectTypeAdapter = 1,
            NdkObjectTypeQp = 2,
            NdkObjectTypeCq = 3,
            NdkObjectTypeMr = 4,
            NdkObjectTypeMw = 5,
            NdkObjectTypePd = 6,
            NdkObjectTypeSharedEndpoint = 7,
            NdkObjectTypeConnector = 8,
            NdkObjectTypeListener = 9,
            NdkObjectTypeSrq = 10,
            NdkObjectTypeMax = 11,
            NdkOperationTypeReceive = 1,
            NdkOperationTypeReceiveAndInvalidate = 32769,
            NdkOperationTypeSend = 2,
            NdkOperationTypeFastRegister = 4,
            NdkOperationTypeBind = 8,
            NdkOperationTypeInvalidate = 16,
            NdkOperationTypeRead = 32,
            NdkOperationTypeWrite = 64,
        },
        u32v {
            NDK_CQ_NOTIFY_ERRORS = 0,
            NDK_CQ_NOTIFY_ANY = 1,
            NDK_CQ_NOTIFY_SOLICITED = 2,
            NDK_MR_FLAG_ALLOW_LOCAL_READ = 0x0000_0000,
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE = 0x0000_0001,
            NDK_MR_FLAG_ALLOW_REMOTE_READ = 0x0000_0002,
            NDK_MR_FLAG_ALLOW_REMOTE_WRITE = 0x0000_0005,
            NDK_MR_FLAG_RDMA_READ_SINK = 0x0000_0008,
            NDK_OP_FLAG_SILENT_SUCCESS = 0x0000_0001,
            NDK_OP_FLAG_READ_FENCE = 0x0000_0002,
            NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT = 0x0000_0004,
            NDK_OP_FLAG_ALLOW_REMOTE_READ = 0x0000_0008,
            NDK_OP_FLAG_ALLOW_LOCAL_WRITE = 0x0000_0010,
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE = 0x0000_0030,
            NDK_OP_FLAG_INLINE = 0x0000_0040,
            NDK_OP_FLAG_RDMA_READ_SINK = 0x0000_0080,
            NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE = 0x0000_0100,
            NDK_OP_FLAG_DEFER = 0x0000_0200,
            PAGE_SHIFT = 12,
        },
        usz { PAGE_SIZE = 4096, NDK_CONNECTOR_DISPATCH_1_SIZE = 88 },
        i32v {
            NDIS_STATUS_SUCCESS = 0,
            NDIS_STATUS_PENDING = 0x0000_0103,
            NDIS_STATUS_FAILURE = 0xC000_0001,
            NDIS_STATUS_RESOURCES = 0xC000_009A,
            NDIS_STATUS_NOT_SUPPORTED = 0xC000_00BB,
            NDIS_STATUS_INVALID_PARAMETER = 0xC000_000D,
        },
        u16v { AF_INET = 2, AF_INET6 = 23 },
        i16v {
            MDL_MAPPED_TO_SYSTEM_VA = 0x0001,
            MDL_PAGES_LOCKED = 0x0002,
            MDL_SOURCE_IS_NONPAGED_POOL = 0x0004,
            MDL_ALLOCATED_FIXED_SIZE = 0x0008,
            MDL_PARTIAL = 0x0010,
            MDL_PARTIAL_HAS_BEEN_MAPPED = 0x0020,
            MDL_IO_PAGE_READ = 0x0040,
            MDL_WRITE_OPERATION = 0x0080,
            MDL_LOCKED_PAGE_TABLES = 0x0100,
            MDL_PARENT_MAPPED_SYSTEM_VA = 0x0100,
            MDL_FREE_EXTRA_PTES = 0x0200,
            MDL_DESCRIBES_AWE = 0x0400,
            MDL_IO_SPACE = 0x0800,
            MDL_NETWORK_HEADER = 0x1000,
            MDL_MAPPING_CAN_FAIL = 0x2000,
            MDL_PAGE_CONTENTS_INVARIANT = 0x4000,
            MDL_ALLOCATED_MUST_SUCCEED = 0x4000,
            MDL_INTERNAL = 0x8000,
        },
    }
}

/// All facts: [`LAYOUT`] followed by one constant fact per entry of
/// [`STATUS_NAMES`] (the `u32` bit pattern of the NTSTATUS, in decimal).
pub fn facts() -> impl Iterator<Item = LayoutFact> {
    LAYOUT.iter().copied().chain(
        STATUS_NAMES
            .iter()
            .map(|&(name, value)| LayoutFact::new(name, FactKind::Const, i32v(value))),
    )
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
            "NDK_ADAPTER_INFO size 104",
            "NDK_RESULT_EX size 40",
            "NDK_SGE size 16",
            "NDK_OBJECT_HEADER size 40",
            "NDK_QP size 48",
            "NDK_QP_DISPATCH.NdkRead offset 64",
            "NDK_CONNECTOR_DISPATCH size 104",
            "NDK_CONNECTOR_DISPATCH.NdkDisconnect offset 80",
            "NDK_CONNECTOR_DISPATCH.NdkCompleteConnectEx offset 88",
            "NDK_CONNECTOR_DISPATCH.NdkAcceptEx offset 96",
            "NDK_RESULT_EX.ProviderErrorCode offset 28",
            "NDK_RESULT_EX.TypeSpecificCompletionOutput offset 32",
            "const NDK_CONNECTOR_DISPATCH_1_SIZE 88",
            "NDK_SGE.VirtualAddress offset 0",
            "NDK_SGE.LogicalAddress offset 0",
            "NDK_SGE.MemoryRegionToken offset 12",
            "NDK_OBJECT_HEADER.NdkReserved offset 8",
            "NDK_ADAPTER_INFO.RdmaTechnology offset 96",
            "MDL.Process offset 16",
            "MDL size 48",
            "SOCKADDR_IN6 size 28",
            "const NDK_OP_FLAG_DEFER 512",
            "const NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE 256",
            "const NDK_MR_FLAG_ALLOW_REMOTE_WRITE 5",
            "const NdkRoCEv2 4",
            "const NdkObjectTypeQp 2",
            "const NdkOperationTypeReceiveAndInvalidate 32769",
            "const AF_INET6 23",
            "const STATUS_PENDING 259",
            "const STATUS_CONNECTION_INVALID 3221226042",
        ] {
            assert!(lines.iter().any(|l| l == want), "missing line: {want}");
        }
    }

    #[test]
    fn names_are_unique() {
        let lines = lines();
        let mut names: Vec<_> = facts().map(|f| (f.kind, f.name)).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), lines.len());
    }

    #[test]
    fn every_object_is_header_plus_dispatch() {
        for object in [
            "NDK_ADAPTER",
            "NDK_CQ",
            "NDK_PD",
            "NDK_MR",
            "NDK_MW",
            "NDK_SRQ",
            "NDK_QP",
            "NDK_CONNECTOR",
            "NDK_LISTENER",
            "NDK_SHARED_ENDPOINT",
        ] {
            let find = |name: String| {
                LAYOUT
                    .iter()
                    .find(|f| f.name == name)
                    .unwrap_or_else(|| panic!("no fact {name}"))
                    .value
            };
            assert_eq!(find(object.to_string()), 48);
            assert_eq!(find(format!("{object}.Header")), 0);
            assert_eq!(find(format!("{object}.Dispatch")), 40);
        }
    }
}

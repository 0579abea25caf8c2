//! Object identity: the interface version, the object type tag and the
//! header that starts every NDK object. `NDK_VERSION` is declared in
//! `ndkinfo.h`, the rest at the top of `ndkpi.h`.

use core::ffi::c_void;
use core::ptr;

use crate::types::{PVOID, USHORT};

/// An NDKPI interface version. The derived ordering compares `Major`
/// first, then `Minor`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NDK_VERSION {
    /// Major version.
    pub Major: USHORT,
    /// Minor version.
    pub Minor: USHORT,
}

impl NDK_VERSION {
    /// The version `major.minor`.
    pub const fn new(major: USHORT, minor: USHORT) -> Self {
        Self {
            Major: major,
            Minor: minor,
        }
    }
}

/// NDKPI 1.1 (Windows Server 2012). The headers define no version macros;
/// these constants are ours.
pub const NDK_VERSION_1_1: NDK_VERSION = NDK_VERSION::new(1, 1);
/// NDKPI 1.2 (Windows Server 2012 R2): adds `NdkGetCqResultsEx`,
/// `NdkSendAndInvalidate`, `NDK_RESULT_EX` and the DEFER and
/// read-local-invalidate flags.
pub const NDK_VERSION_1_2: NDK_VERSION = NDK_VERSION::new(1, 2);
/// NDKPI 2.0. Documented only as the layout `NDK_RESULT_EX` had before
/// 2.1 (no `ProviderErrorCode`); on x64 that layout is byte-for-byte the
/// 2.1 one, the field sitting in what was padding.
pub const NDK_VERSION_2_0: NDK_VERSION = NDK_VERSION::new(2, 0);
/// NDKPI 2.1 (Windows 10 21H1, Windows 11, Server 2022): the ABI this
/// crate mirrors. Adds `NdkCompleteConnectEx` and `NdkAcceptEx` to
/// `NDK_CONNECTOR_DISPATCH`, `NDK_FN_DISCONNECT_EVENT_CALLBACK_EX` and
/// `NDK_RESULT_EX::ProviderErrorCode`.
pub const NDK_VERSION_2_1: NDK_VERSION = NDK_VERSION::new(2, 1);

/// Kind of an NDK object, stored in its header. A C enum: kept as `i32`
/// because the consumer may hand us any value.
pub type NDK_OBJECT_TYPE = i32;

/// No type (never valid in a live object).
pub const NdkObjectTypeUndefined: NDK_OBJECT_TYPE = 0;
/// Adapter.
pub const NdkObjectTypeAdapter: NDK_OBJECT_TYPE = 1;
/// Queue pair.
pub const NdkObjectTypeQp: NDK_OBJECT_TYPE = 2;
/// Completion queue.
pub const NdkObjectTypeCq: NDK_OBJECT_TYPE = 3;
/// Memory region.
pub const NdkObjectTypeMr: NDK_OBJECT_TYPE = 4;
/// Memory window.
pub const NdkObjectTypeMw: NDK_OBJECT_TYPE = 5;
/// Protection domain.
pub const NdkObjectTypePd: NDK_OBJECT_TYPE = 6;
/// Shared endpoint.
pub const NdkObjectTypeSharedEndpoint: NDK_OBJECT_TYPE = 7;
/// Connector.
pub const NdkObjectTypeConnector: NDK_OBJECT_TYPE = 8;
/// Listener.
pub const NdkObjectTypeListener: NDK_OBJECT_TYPE = 9;
/// Shared receive queue.
pub const NdkObjectTypeSrq: NDK_OBJECT_TYPE = 10;
/// One past the last valid type.
pub const NdkObjectTypeMax: NDK_OBJECT_TYPE = 11;

/// Four pointers in every object header owned by NDIS and the consumer.
/// The provider zeroes them when it creates the object and does not touch
/// them afterwards.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDK_OBJECT_HEADER_RESERVED_BLOCK {
    /// The reserved pointers.
    pub rf: [PVOID; 4],
}

impl Default for NDK_OBJECT_HEADER_RESERVED_BLOCK {
    fn default() -> Self {
        Self {
            rf: [ptr::null_mut(); 4],
        }
    }
}

/// First member of every NDK object (40 bytes on x64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_OBJECT_HEADER {
    /// Version the object runs at (the negotiated one).
    pub Version: NDK_VERSION,
    /// Object kind (`NdkObjectType*`).
    pub ObjectType: NDK_OBJECT_TYPE,
    /// Consumer/NDIS scratch space; see the block's docs.
    pub NdkReserved: NDK_OBJECT_HEADER_RESERVED_BLOCK,
}

/// Output of `NdkQueryExtension`: the dispatch table of an extension
/// interface.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDK_EXTENSION_INTERFACE {
    /// The extension's dispatch table (its type depends on the extension).
    pub Dispatch: *const c_void,
}

impl Default for NDK_EXTENSION_INTERFACE {
    fn default() -> Self {
        Self {
            Dispatch: ptr::null(),
        }
    }
}

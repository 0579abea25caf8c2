//! Memory region: entry types, `NDK_MR_DISPATCH` and `NDK_MR`.
//! (The `NDK_MR_FLAG_*` values of this header section are in
//! [`crate::flags`].)

use super::common::{
    NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE, NDK_FN_REQUEST_COMPLETION,
};
use crate::mdl::MDL;
use crate::object::NDK_OBJECT_HEADER;
use crate::types::{BOOLEAN, NTSTATUS, PVOID, SIZE_T, UINT32, ULONG};

/// Provider entry: register `Length` bytes of a virtually contiguous MDL
/// chain with `NDK_MR_FLAG_*` access.
pub type NDK_FN_REGISTER_MR = Option<
    unsafe extern "win64" fn(
        pNdkMr: *mut NDK_MR,
        Mdl: *mut MDL,
        Length: SIZE_T,
        Flags: ULONG,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: undo a registration.
pub type NDK_FN_DEREGISTER_MR = Option<
    unsafe extern "win64" fn(
        pNdkMr: *mut NDK_MR,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: prepare a fast-register MR for up to `AdapterPageCount`
/// pages, optionally with remote access.
pub type NDK_FN_INITIALIZE_FAST_REGISTER_MR = Option<
    unsafe extern "win64" fn(
        pNdkMr: *mut NDK_MR,
        AdapterPageCount: ULONG,
        RemoteAccess: BOOLEAN,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: the MR's remote token.
pub type NDK_FN_GET_REMOTE_TOKEN_FROM_MR =
    Option<unsafe extern "win64" fn(pNdkMr: *mut NDK_MR) -> UINT32>;

/// Provider entry: the MR's local token.
pub type NDK_FN_GET_LOCAL_TOKEN_FROM_MR =
    Option<unsafe extern "win64" fn(pNdkMr: *mut NDK_MR) -> UINT32>;

/// Entry points of a memory region.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_MR_DISPATCH {
    /// Closes the MR.
    pub NdkCloseMr: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Registers memory.
    pub NdkRegisterMr: NDK_FN_REGISTER_MR,
    /// Deregisters memory.
    pub NdkDeregisterMr: NDK_FN_DEREGISTER_MR,
    /// Prepares for fast registration.
    pub NdkInitializeFastRegisterMr: NDK_FN_INITIALIZE_FAST_REGISTER_MR,
    /// Returns the remote token.
    pub NdkGetRemoteTokenFromMr: NDK_FN_GET_REMOTE_TOKEN_FROM_MR,
    /// Returns the local token.
    pub NdkGetLocalTokenFromMr: NDK_FN_GET_LOCAL_TOKEN_FROM_MR,
}

/// A memory region object.
#[repr(C)]
#[derive(Debug)]
pub struct NDK_MR {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's MR entry points.
    pub Dispatch: *const NDK_MR_DISPATCH,
}

//! Queue pair: work-request entry types, `NDK_QP_DISPATCH` and `NDK_QP`.
//! (The `NDK_OP_FLAG_*` values of this header section are in
//! [`crate::flags`].)

use super::common::{NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE};
use super::mr::NDK_MR;
use super::mw::NDK_MW;
use crate::lam::NDK_LOGICAL_ADDRESS;
use crate::object::NDK_OBJECT_HEADER;
use crate::sge::NDK_SGE;
use crate::types::{NTSTATUS, PVOID, SIZE_T, UINT32, UINT64, ULONG};

/// Provider entry: cancel every queued request of the QP.
pub type NDK_FN_FLUSH = Option<unsafe extern "win64" fn(pNdkQp: *mut NDK_QP)>;

/// Provider entry: post a send.
pub type NDK_FN_SEND = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pSgl: *const NDK_SGE,
        nSge: ULONG,
        Flags: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: post a receive.
pub type NDK_FN_RECEIVE = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pSgl: *const NDK_SGE,
        nSge: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: bind a memory window to part of a memory region.
pub type NDK_FN_BIND = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pMr: *mut NDK_MR,
        pMw: *mut NDK_MW,
        VirtualAddress: PVOID,
        Length: SIZE_T,
        Flags: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: fast-register pages into an MR.
pub type NDK_FN_FAST_REGISTER = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pMr: *mut NDK_MR,
        AdapterPageCount: ULONG,
        AdapterPageArray: *const NDK_LOGICAL_ADDRESS,
        FBO: ULONG,
        Length: SIZE_T,
        BaseVirtualAddress: PVOID,
        Flags: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: invalidate a fast-register MR or an MW.
pub type NDK_FN_INVALIDATE = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pNdkMrOrMw: *mut NDK_OBJECT_HEADER,
        Flags: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: post an RDMA read.
pub type NDK_FN_READ = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pSgl: *const NDK_SGE,
        nSge: ULONG,
        RemoteAddress: UINT64,
        RemoteToken: UINT32,
        Flags: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: post an RDMA write.
pub type NDK_FN_WRITE = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pSgl: *const NDK_SGE,
        nSge: ULONG,
        RemoteAddress: UINT64,
        RemoteToken: UINT32,
        Flags: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: post a send that also invalidates `RemoteToken` at the
/// peer (NDKPI 1.2). Note `Flags` comes before the token here.
pub type NDK_FN_SEND_AND_INVALIDATE = Option<
    unsafe extern "win64" fn(
        pNdkQp: *mut NDK_QP,
        RequestContext: PVOID,
        pSgl: *const NDK_SGE,
        nSge: ULONG,
        Flags: ULONG,
        RemoteToken: UINT32,
    ) -> NTSTATUS,
>;

/// Entry points of a queue pair.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_QP_DISPATCH {
    /// Closes the QP.
    pub NdkCloseQp: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Cancels queued requests.
    pub NdkFlush: NDK_FN_FLUSH,
    /// Posts a send.
    pub NdkSend: NDK_FN_SEND,
    /// Posts a receive.
    pub NdkReceive: NDK_FN_RECEIVE,
    /// Binds a memory window.
    pub NdkBind: NDK_FN_BIND,
    /// Fast-registers an MR.
    pub NdkFastRegister: NDK_FN_FAST_REGISTER,
    /// Invalidates an MR or MW.
    pub NdkInvalidate: NDK_FN_INVALIDATE,
    /// Posts an RDMA read.
    pub NdkRead: NDK_FN_READ,
    /// Posts an RDMA write.
    pub NdkWrite: NDK_FN_WRITE,
    /// Posts a send with remote invalidate (NDKPI 1.2).
    pub NdkSendAndInvalidate: NDK_FN_SEND_AND_INVALIDATE,
}

/// A queue pair object.
#[repr(C)]
#[derive(Debug)]
pub struct NDK_QP {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's QP entry points.
    pub Dispatch: *const NDK_QP_DISPATCH,
}

//! Protection domain: entry types, `NDK_PD_DISPATCH` and `NDK_PD`.

use super::common::{
    NDK_FN_CLOSE_OBJECT, NDK_FN_CREATE_COMPLETION, NDK_FN_QUERY_EXTENSION_INTERFACE,
};
use super::cq::NDK_CQ;
use super::mr::NDK_MR;
use super::mw::NDK_MW;
use super::qp::NDK_QP;
use super::srq::{NDK_FN_SRQ_NOTIFICATION_CALLBACK, NDK_SRQ};
use crate::object::NDK_OBJECT_HEADER;
use crate::types::{BOOLEAN, GROUP_AFFINITY, NTSTATUS, PVOID, UINT32, ULONG};

/// Provider entry: create an MR, for `NdkRegisterMr` or (if
/// `FastRegister`) for fast registration.
pub type NDK_FN_CREATE_MR = Option<
    unsafe extern "win64" fn(
        pNdkPd: *mut NDK_PD,
        FastRegister: BOOLEAN,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkMr: *mut *mut NDK_MR,
    ) -> NTSTATUS,
>;

/// Provider entry: create a memory window.
pub type NDK_FN_CREATE_MW = Option<
    unsafe extern "win64" fn(
        pNdkPd: *mut NDK_PD,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkMw: *mut *mut NDK_MW,
    ) -> NTSTATUS,
>;

/// Provider entry: create a shared receive queue.
pub type NDK_FN_CREATE_SRQ = Option<
    unsafe extern "win64" fn(
        pNdkPd: *mut NDK_PD,
        SrqDepth: ULONG,
        MaxReceiveRequestSge: ULONG,
        NotifyThreshold: ULONG,
        SrqNotification: NDK_FN_SRQ_NOTIFICATION_CALLBACK,
        SrqNotificationContext: PVOID,
        Affinity: *mut GROUP_AFFINITY,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkSrq: *mut *mut NDK_SRQ,
    ) -> NTSTATUS,
>;

/// Provider entry: create a QP with its own receive queue.
pub type NDK_FN_CREATE_QP = Option<
    unsafe extern "win64" fn(
        pNdkPd: *mut NDK_PD,
        pReceiveCq: *mut NDK_CQ,
        pInitiatorCq: *mut NDK_CQ,
        QPContext: PVOID,
        ReceiveQueueDepth: ULONG,
        InitiatorQueueDepth: ULONG,
        MaxReceiveRequestSge: ULONG,
        MaxInitiatorRequestSge: ULONG,
        InlineDataSize: ULONG,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkQp: *mut *mut NDK_QP,
    ) -> NTSTATUS,
>;

/// Provider entry: create a QP that receives through an SRQ.
pub type NDK_FN_CREATE_QP_WITH_SRQ = Option<
    unsafe extern "win64" fn(
        pNdkPd: *mut NDK_PD,
        pReceiveCq: *mut NDK_CQ,
        pInitiatorCq: *mut NDK_CQ,
        pSrq: *mut NDK_SRQ,
        QPContext: PVOID,
        InitiatorQueueDepth: ULONG,
        MaxInitiatorRequestSge: ULONG,
        InlineDataSize: ULONG,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkQp: *mut *mut NDK_QP,
    ) -> NTSTATUS,
>;

/// Provider entry: the PD's privileged token (local access by logical
/// address, no registration).
pub type NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN =
    Option<unsafe extern "win64" fn(pNdkPd: *mut NDK_PD, pToken: *mut UINT32)>;

/// Entry points of a protection domain.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_PD_DISPATCH {
    /// Closes the PD.
    pub NdkClosePd: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Creates an MR.
    pub NdkCreateMr: NDK_FN_CREATE_MR,
    /// Creates an MW.
    pub NdkCreateMw: NDK_FN_CREATE_MW,
    /// Creates an SRQ.
    pub NdkCreateSrq: NDK_FN_CREATE_SRQ,
    /// Creates a QP.
    pub NdkCreateQp: NDK_FN_CREATE_QP,
    /// Creates a QP on an SRQ.
    pub NdkCreateQpWithSrq: NDK_FN_CREATE_QP_WITH_SRQ,
    /// Returns the privileged token.
    pub NdkGetPrivilegedMemoryRegionToken: NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN,
}

/// A protection domain object.
#[repr(C)]
#[derive(Debug)]
pub struct NDK_PD {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's PD entry points.
    pub Dispatch: *const NDK_PD_DISPATCH,
}

//! Shared receive queue: entry types, `NDK_SRQ_DISPATCH` and `NDK_SRQ`.

use super::common::{
    NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE, NDK_FN_REQUEST_COMPLETION,
};
use crate::object::NDK_OBJECT_HEADER;
use crate::sge::NDK_SGE;
use crate::types::{NTSTATUS, PVOID, ULONG};

/// Provider entry: change the depth and/or the notification threshold.
pub type NDK_FN_MODIFY_SRQ = Option<
    unsafe extern "win64" fn(
        pNdkSrq: *mut NDK_SRQ,
        SrqDepth: ULONG,
        NotifyThreshold: ULONG,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Consumer callback: the SRQ fell below its threshold, or failed.
pub type NDK_FN_SRQ_NOTIFICATION_CALLBACK =
    Option<unsafe extern "win64" fn(SrqNotificationContext: PVOID, SrqStatus: NTSTATUS)>;

/// Provider entry: post a receive to the SRQ.
pub type NDK_FN_SRQ_RECEIVE = Option<
    unsafe extern "win64" fn(
        pNdkSrq: *mut NDK_SRQ,
        RequestContext: PVOID,
        pSgl: *const NDK_SGE,
        nSge: ULONG,
    ) -> NTSTATUS,
>;

/// Entry points of a shared receive queue.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_SRQ_DISPATCH {
    /// Closes the SRQ.
    pub NdkCloseSrq: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Changes depth or threshold.
    pub NdkModifySrq: NDK_FN_MODIFY_SRQ,
    /// Posts a receive.
    pub NdkSrqReceive: NDK_FN_SRQ_RECEIVE,
}

/// A shared receive queue object.
#[repr(C)]
#[derive(Debug)]
pub struct NDK_SRQ {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's SRQ entry points.
    pub Dispatch: *const NDK_SRQ_DISPATCH,
}

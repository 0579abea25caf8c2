//! Completion queue: entry types, `NDK_CQ_DISPATCH` and `NDK_CQ`.
//! (The `NDK_CQ_NOTIFY_*` values of this header section are in
//! [`crate::flags`].)

use super::common::{
    NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE, NDK_FN_REQUEST_COMPLETION,
};
use crate::object::NDK_OBJECT_HEADER;
use crate::result::{NDK_RESULT, NDK_RESULT_EX};
use crate::types::{NTSTATUS, PVOID, ULONG};

/// Provider entry: change the depth of a CQ.
pub type NDK_FN_RESIZE_CQ = Option<
    unsafe extern "win64" fn(
        pNdkCq: *mut NDK_CQ,
        CqDepth: ULONG,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Consumer callback: an armed CQ has something to report (`CqStatus` is
/// success, or the error that broke the CQ).
pub type NDK_FN_CQ_NOTIFICATION_CALLBACK =
    Option<unsafe extern "win64" fn(CqNotificationContext: PVOID, CqStatus: NTSTATUS)>;

/// Provider entry: arm a CQ for one notification (`Type` is an
/// `NDK_CQ_NOTIFY_*` value).
pub type NDK_FN_ARM_CQ = Option<unsafe extern "win64" fn(pNdkCq: *mut NDK_CQ, Type: ULONG)>;

/// Provider entry: take up to `nResults` completions; returns how many.
pub type NDK_FN_GET_CQ_RESULTS = Option<
    unsafe extern "win64" fn(
        pNdkCq: *mut NDK_CQ,
        Results: *mut NDK_RESULT,
        nResults: ULONG,
    ) -> ULONG,
>;

/// Provider entry: set interrupt moderation (microseconds, count).
pub type NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION = Option<
    unsafe extern "win64" fn(
        pNdkCq: *mut NDK_CQ,
        ModerationInterval: ULONG,
        ModerationCount: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: take up to `nResults` extended completions; returns how
/// many (NDKPI 1.2).
pub type NDK_FN_GET_CQ_RESULTS_EX = Option<
    unsafe extern "win64" fn(
        pNdkCq: *mut NDK_CQ,
        Results: *mut NDK_RESULT_EX,
        nResults: ULONG,
    ) -> ULONG,
>;

/// Entry points of a completion queue.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_CQ_DISPATCH {
    /// Closes the CQ.
    pub NdkCloseCq: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Changes the depth.
    pub NdkResizeCq: NDK_FN_RESIZE_CQ,
    /// Arms one notification.
    pub NdkArmCq: NDK_FN_ARM_CQ,
    /// Takes completions.
    pub NdkGetCqResults: NDK_FN_GET_CQ_RESULTS,
    /// Sets interrupt moderation.
    pub NdkControlCqInterruptModeration: NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION,
    /// Takes extended completions (NDKPI 1.2).
    pub NdkGetCqResultsEx: NDK_FN_GET_CQ_RESULTS_EX,
}

/// A completion queue object.
#[repr(C)]
#[derive(Debug)]
pub struct NDK_CQ {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's CQ entry points.
    pub Dispatch: *const NDK_CQ_DISPATCH,
}

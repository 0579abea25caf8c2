//! Completion records returned by `NdkGetCqResults` and
//! `NdkGetCqResultsEx`, and the operation type of the extended record.

use core::ptr;

use crate::types::{NTSTATUS, PVOID, ULONG, ULONG_PTR};

/// One completed work request (24 bytes on x64).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDK_RESULT {
    /// Outcome of the request.
    pub Status: NTSTATUS,
    /// Bytes received; defined for receive completions only.
    pub BytesTransferred: ULONG,
    /// The context given when the QP was created.
    pub QPContext: PVOID,
    /// The context given when the request was posted.
    pub RequestContext: PVOID,
}

impl Default for NDK_RESULT {
    fn default() -> Self {
        Self {
            Status: 0,
            BytesTransferred: 0,
            QPContext: ptr::null_mut(),
            RequestContext: ptr::null_mut(),
        }
    }
}

/// Kind of operation an extended completion reports. A C enum: kept as
/// `i32` because any value can cross the ABI.
pub type NDK_OPERATION_TYPE = i32;

/// A receive.
pub const NdkOperationTypeReceive: NDK_OPERATION_TYPE = 1;
/// A receive whose incoming send also invalidated a local token (the token
/// is in `TypeSpecificCompletionOutput`). Equals `0x8000 | Receive`.
pub const NdkOperationTypeReceiveAndInvalidate: NDK_OPERATION_TYPE = 32769;
/// A send (also reported for send-and-invalidate).
pub const NdkOperationTypeSend: NDK_OPERATION_TYPE = 2;
/// A fast-register.
pub const NdkOperationTypeFastRegister: NDK_OPERATION_TYPE = 4;
/// A memory-window bind.
pub const NdkOperationTypeBind: NDK_OPERATION_TYPE = 8;
/// An invalidate.
pub const NdkOperationTypeInvalidate: NDK_OPERATION_TYPE = 16;
/// An RDMA read.
pub const NdkOperationTypeRead: NDK_OPERATION_TYPE = 32;
/// An RDMA write.
pub const NdkOperationTypeWrite: NDK_OPERATION_TYPE = 64;

/// Extended completion record (NDKPI 1.2, with 2.1's `ProviderErrorCode`;
/// 40 bytes on x64). The first 24 bytes match [`NDK_RESULT`].
///
/// `ProviderErrorCode` occupies what was padding after `Type` in 1.2 and
/// 2.0, so the x64 layout is the same for every version: a provider that
/// writes 0 there serves older consumers unchanged.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDK_RESULT_EX {
    /// Outcome of the request.
    pub Status: NTSTATUS,
    /// Bytes received; defined for receive completions only.
    pub BytesTransferred: ULONG,
    /// The context given when the QP was created.
    pub QPContext: PVOID,
    /// The context given when the request was posted.
    pub RequestContext: PVOID,
    /// Which operation completed (`NdkOperationType*`).
    pub Type: NDK_OPERATION_TYPE,
    /// NDKPI 2.1: 0 when `Status` is `STATUS_SUCCESS`; otherwise a
    /// provider-specific diagnostic of `Status`, or 0 for none.
    pub ProviderErrorCode: ULONG,
    /// Per-type extra output (the invalidated token for
    /// receive-and-invalidate).
    pub TypeSpecificCompletionOutput: ULONG_PTR,
}

impl Default for NDK_RESULT_EX {
    fn default() -> Self {
        Self {
            Status: 0,
            BytesTransferred: 0,
            QPContext: ptr::null_mut(),
            RequestContext: ptr::null_mut(),
            Type: 0,
            ProviderErrorCode: 0,
            TypeSpecificCompletionOutput: 0,
        }
    }
}

//! The shared receive queue's edge: the SRQ dispatch table
//! (`NdkCreateSrq` is the PD's entry).

use core::ffi::c_void;

use ndkpi::{
    NDK_FN_CLOSE_COMPLETION, NDK_FN_REQUEST_COMPLETION, NDK_OBJECT_HEADER, NDK_SGE, NDK_SRQ,
    NDK_SRQ_DISPATCH, NDK_VERSION, NTSTATUS, NdkObjectTypeSrq, STATUS_INVALID_HANDLE,
    STATUS_SUCCESS,
};

use super::adapter::{close, query_extension};
use crate::abi::{self, NdkObject};
use crate::srq::Srq;

// SAFETY: `Srq` is `#[repr(C)]` with `ndk: NdkCell<NDK_SRQ>` first (srq.rs),
// and `Srq::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for Srq {
    type Ndk = NDK_SRQ;
    const TYPE: i32 = NdkObjectTypeSrq;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_SRQ {
        NDK_SRQ {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves an SRQ argument.
///
/// # Safety
/// As [`abi::object`]: a non-null pointer must be readable for an NDK
/// object header and dispatch pointer.
pub(super) unsafe fn srq_arg<'a>(srq: *mut NDK_SRQ) -> Option<&'a Srq> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Srq>(srq) }
}

unsafe extern "win64" fn close_srq(
    srq: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once, with no
    // other call on it running (NDK contract).
    unsafe { close::<Srq>(srq, completion, context) }
}

unsafe extern "win64" fn modify_srq(
    srq: *mut NDK_SRQ,
    depth: u32,
    threshold: u32,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open SRQ (NDK contract).
    let Some(srq) = (unsafe { srq_arg(srq) }) else {
        return STATUS_INVALID_HANDLE;
    };
    match srq.modify(depth, threshold) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

unsafe extern "win64" fn srq_receive(
    srq: *mut NDK_SRQ,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open SRQ (NDK contract).
    let Some(srq) = (unsafe { srq_arg(srq) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: a non-null `sgl` is the consumer's array of `count` SGEs,
    // unchanged during the call (NDK contract).
    let sges = match unsafe { abi::sge_list(sgl, count) } {
        Ok(s) => s,
        Err(status) => return status,
    };
    match srq.receive(context as usize as u64, sges) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

/// The SRQ dispatch table.
pub static DISPATCH: NDK_SRQ_DISPATCH = NDK_SRQ_DISPATCH {
    NdkCloseSrq: Some(close_srq),
    NdkQueryExtension: Some(query_extension),
    NdkModifySrq: Some(modify_srq),
    NdkSrqReceive: Some(srq_receive),
};

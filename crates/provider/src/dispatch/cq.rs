//! The completion queue's edge: the CQ dispatch table (`NdkCreateCq` is
//! the adapter's entry).

use core::ffi::c_void;

use ndkpi::{
    NDK_CQ, NDK_CQ_DISPATCH, NDK_FN_CLOSE_COMPLETION, NDK_FN_REQUEST_COMPLETION, NDK_OBJECT_HEADER,
    NDK_RESULT, NDK_RESULT_EX, NDK_VERSION, NTSTATUS, NdkObjectTypeCq, STATUS_INVALID_HANDLE,
    STATUS_SUCCESS,
};

use super::adapter::{close, query_extension};
use crate::abi::{self, NdkObject, OutArray};
use crate::cq::{Arm, Cq};

// SAFETY: `Cq` is `#[repr(C)]` with `ndk: NdkCell<NDK_CQ>` first (cq.rs),
// and `Cq::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for Cq {
    type Ndk = NDK_CQ;
    const TYPE: i32 = NdkObjectTypeCq;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_CQ {
        NDK_CQ {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves a CQ argument.
///
/// # Safety
/// As [`abi::object`]: a non-null `cq` must be readable for an NDK object
/// header and dispatch pointer.
pub(super) unsafe fn cq_arg<'a>(cq: *mut NDK_CQ) -> Option<&'a Cq> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Cq>(cq) }
}

unsafe extern "win64" fn close_cq(
    cq: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes a CQ it owns, once, with no other call on
    // it running (NDK contract).
    unsafe { close::<Cq>(cq, completion, context) }
}

unsafe extern "win64" fn resize_cq(
    cq: *mut NDK_CQ,
    depth: u32,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open CQ (NDK contract).
    let Some(cq) = (unsafe { cq_arg(cq) }) else {
        return STATUS_INVALID_HANDLE;
    };
    match cq.resize(depth) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

unsafe extern "win64" fn arm_cq(cq: *mut NDK_CQ, kind: u32) {
    // SAFETY: the consumer passes its open CQ (NDK contract).
    let Some(cq) = (unsafe { cq_arg(cq) }) else {
        return;
    };
    // An unknown type arms nothing (the function cannot report errors).
    if let Some(arm) = Arm::from_ndk(kind) {
        Cq::arm(&abi::arc(cq), arm);
    }
}

unsafe extern "win64" fn get_cq_results(
    cq: *mut NDK_CQ,
    results: *mut NDK_RESULT,
    max: u32,
) -> u32 {
    // SAFETY: the consumer passes its open CQ (NDK contract).
    let Some(cq) = (unsafe { cq_arg(cq) }) else {
        return 0;
    };
    // SAFETY: a non-null `results` is the consumer's array of `max`
    // writable results (NDK contract).
    let Some(mut out) = (unsafe { OutArray::new(results, max as usize) }) else {
        return 0;
    };
    cq.get_results(&mut out, max)
}

unsafe extern "win64" fn get_cq_results_ex(
    cq: *mut NDK_CQ,
    results: *mut NDK_RESULT_EX,
    max: u32,
) -> u32 {
    // SAFETY: the consumer passes its open CQ (NDK contract).
    let Some(cq) = (unsafe { cq_arg(cq) }) else {
        return 0;
    };
    // SAFETY: a non-null `results` is the consumer's array of `max`
    // writable results (NDK contract).
    let Some(mut out) = (unsafe { OutArray::new(results, max as usize) }) else {
        return 0;
    };
    cq.get_results_ex(&mut out, max)
}

unsafe extern "win64" fn control_cq_interrupt_moderation(
    cq: *mut NDK_CQ,
    interval: u32,
    count: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open CQ (NDK contract).
    let Some(cq) = (unsafe { cq_arg(cq) }) else {
        return STATUS_INVALID_HANDLE;
    };
    match cq.moderate(interval, count) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

/// The CQ dispatch table.
pub static DISPATCH: NDK_CQ_DISPATCH = NDK_CQ_DISPATCH {
    NdkCloseCq: Some(close_cq),
    NdkQueryExtension: Some(query_extension),
    NdkResizeCq: Some(resize_cq),
    NdkArmCq: Some(arm_cq),
    NdkGetCqResults: Some(get_cq_results),
    NdkControlCqInterruptModeration: Some(control_cq_interrupt_moderation),
    NdkGetCqResultsEx: Some(get_cq_results_ex),
};

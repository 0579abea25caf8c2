//! The protection domain's edge: the PD dispatch table (the create
//! entries of MRs, MWs, SRQs and QPs, and the privileged token;
//! `NdkCreatePd` is the adapter's entry).

use core::ffi::c_void;

use ndkpi::{
    NDK_FN_CLOSE_COMPLETION, NDK_FN_CREATE_COMPLETION, NDK_OBJECT_HEADER, NDK_PD, NDK_PD_DISPATCH,
    NDK_VERSION, NTSTATUS, NdkObjectTypePd, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER,
    STATUS_SUCCESS,
};

use super::adapter::{close, query_extension};
use ndkpi::{
    GROUP_AFFINITY, NDK_CQ, NDK_FN_SRQ_NOTIFICATION_CALLBACK, NDK_MR, NDK_MW, NDK_QP, NDK_SRQ,
};

use super::cq::cq_arg;
use super::srq::srq_arg;
use crate::abi::{self, NdkObject};
use crate::mr::Mr;
use crate::mw::Mw;
use crate::pd::Pd;
use crate::qp::Qp;
use crate::qp::create::{self, QpRequest};
use crate::srq::Srq;

// SAFETY: `Pd` is `#[repr(C)]` with `ndk: NdkCell<NDK_PD>` first (pd.rs),
// and `Pd::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for Pd {
    type Ndk = NDK_PD;
    const TYPE: i32 = NdkObjectTypePd;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_PD {
        NDK_PD {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves a PD argument.
///
/// # Safety
/// As [`abi::object`]: a non-null `pd` must be readable for an NDK object
/// header and dispatch pointer.
pub(super) unsafe fn pd_arg<'a>(pd: *mut NDK_PD) -> Option<&'a Pd> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Pd>(pd) }
}

unsafe extern "win64" fn close_pd(
    pd: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes a PD it owns, once, with no other call on
    // it running (NDK contract).
    unsafe { close::<Pd>(pd, completion, context) }
}

unsafe extern "win64" fn get_privileged_memory_region_token(pd: *mut NDK_PD, token: *mut u32) {
    // SAFETY: the consumer passes its open PD (NDK contract).
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return;
    };
    // SAFETY: a non-null `token` is the consumer's writable out-pointer
    // (NDK contract); null is ignored by `write_out`.
    unsafe { abi::write_out(token, pd.privileged_key().0) };
}

/// `NdkCreateMr`: completes synchronously.
unsafe extern "win64" fn create_mr(
    pd: *mut NDK_PD,
    fast_register: u8,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_MR,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD (NDK contract).
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Mr::create(pd, fast_register != 0) {
        Ok(mr) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(mr)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreateMw`: completes synchronously.
unsafe extern "win64" fn create_mw(
    pd: *mut NDK_PD,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_MW,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD (NDK contract).
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Mw::create(pd) {
        Ok(mw) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(mw)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreateSrq`: completes synchronously.
unsafe extern "win64" fn create_srq(
    pd: *mut NDK_PD,
    depth: u32,
    max_sge: u32,
    threshold: u32,
    notification: NDK_FN_SRQ_NOTIFICATION_CALLBACK,
    notification_context: *mut c_void,
    _affinity: *mut GROUP_AFFINITY,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_SRQ,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD (NDK contract).
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Srq::create(
        pd,
        depth,
        max_sge,
        threshold,
        notification,
        notification_context,
    ) {
        Ok(srq) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(srq)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// Hands a new QP to the consumer's (non-null) out-pointer.
///
/// # Safety
/// `out` must be non-null and valid for a write of a pointer.
unsafe fn deliver(result: Result<hwq::TryArc<Qp>, NTSTATUS>, out: *mut *mut NDK_QP) -> NTSTATUS {
    match result {
        Ok(qp) => {
            // SAFETY: `out` is non-null and writable (this function's
            // contract).
            unsafe { abi::write_out(out, abi::into_handle(qp)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreateQp`: completes synchronously.
unsafe extern "win64" fn create_qp(
    pd: *mut NDK_PD,
    receive_cq: *mut NDK_CQ,
    initiator_cq: *mut NDK_CQ,
    context: *mut c_void,
    receive_depth: u32,
    initiator_depth: u32,
    max_receive_sge: u32,
    max_initiator_sge: u32,
    inline_size: u32,
    _completion: NDK_FN_CREATE_COMPLETION,
    _request_context: *mut c_void,
    out: *mut *mut NDK_QP,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD (NDK contract).
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open receive CQ (NDK contract).
    let rcq = unsafe { cq_arg(receive_cq) };
    // SAFETY: the consumer passes its open initiator CQ (NDK contract).
    let icq = unsafe { cq_arg(initiator_cq) };
    let (Some(rcq), Some(icq)) = (rcq, icq) else {
        return STATUS_INVALID_PARAMETER;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    let req = QpRequest {
        context: context as usize as u64,
        receive_depth,
        initiator_depth,
        max_receive_sge,
        max_initiator_sge,
        inline_size,
    };
    // SAFETY: `out` is non-null (checked) and the consumer's writable
    // out-pointer (NDK contract).
    unsafe { deliver(create::create(pd, rcq, icq, None, req), out) }
}

/// `NdkCreateQpWithSrq`: completes synchronously.
unsafe extern "win64" fn create_qp_with_srq(
    pd: *mut NDK_PD,
    receive_cq: *mut NDK_CQ,
    initiator_cq: *mut NDK_CQ,
    srq: *mut NDK_SRQ,
    context: *mut c_void,
    initiator_depth: u32,
    max_initiator_sge: u32,
    inline_size: u32,
    _completion: NDK_FN_CREATE_COMPLETION,
    _request_context: *mut c_void,
    out: *mut *mut NDK_QP,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD (NDK contract).
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open receive CQ (NDK contract).
    let rcq = unsafe { cq_arg(receive_cq) };
    // SAFETY: the consumer passes its open initiator CQ (NDK contract).
    let icq = unsafe { cq_arg(initiator_cq) };
    // SAFETY: the consumer passes its open SRQ (NDK contract).
    let srq = unsafe { srq_arg(srq) };
    let (Some(rcq), Some(icq), Some(srq)) = (rcq, icq, srq) else {
        return STATUS_INVALID_PARAMETER;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    let req = QpRequest {
        context: context as usize as u64,
        receive_depth: 0,
        initiator_depth,
        max_receive_sge: 0,
        max_initiator_sge,
        inline_size,
    };
    // SAFETY: `out` is non-null (checked) and the consumer's writable
    // out-pointer (NDK contract).
    unsafe { deliver(create::create(pd, rcq, icq, Some(srq), req), out) }
}

/// The PD dispatch table.
pub static DISPATCH: NDK_PD_DISPATCH = NDK_PD_DISPATCH {
    NdkClosePd: Some(close_pd),
    NdkQueryExtension: Some(query_extension),
    NdkCreateMr: Some(create_mr),
    NdkCreateMw: Some(create_mw),
    NdkCreateSrq: Some(create_srq),
    NdkCreateQp: Some(create_qp),
    NdkCreateQpWithSrq: Some(create_qp_with_srq),
    NdkGetPrivilegedMemoryRegionToken: Some(get_privileged_memory_region_token),
};

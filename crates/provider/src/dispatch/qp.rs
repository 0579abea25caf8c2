//! The queue pair's edge: the QP dispatch table (posting, flush, close;
//! `NdkCreateQp` and `NdkCreateQpWithSrq` are the PD's entries).
//!
//! The post entries are the provider's hot path: each resolves the QP and
//! its SGE array here and hands [`crate::qp`] checked references; see
//! [`crate::qp`] for what a post validates and the DEFER rule.

use core::ffi::c_void;

use hwq::wqe::SendOpcode;
use ndkpi::{
    NDK_FN_CLOSE_COMPLETION, NDK_LOGICAL_ADDRESS, NDK_MR, NDK_MW, NDK_OBJECT_HEADER, NDK_QP,
    NDK_QP_DISPATCH, NDK_SGE, NDK_VERSION, NTSTATUS, NdkObjectTypeQp, STATUS_INVALID_HANDLE,
    STATUS_SUCCESS,
};

use super::adapter::{close, query_extension};
use super::mr::mr_arg;
use super::mw::mw_arg;
use crate::abi::{self, NdkObject};
use crate::mr::Mr;
use crate::mw::Mw;
use crate::qp::Qp;
use crate::qp::bind::{self, Target};
use crate::qp::fast_register::FastRegisterArgs;
use crate::qp::post_send::DataRequest;

// SAFETY: `Qp` is `#[repr(C)]` with `ndk: NdkCell<NDK_QP>` first
// (qp/mod.rs), and `qp::create::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for Qp {
    type Ndk = NDK_QP;
    const TYPE: i32 = NdkObjectTypeQp;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_QP {
        NDK_QP {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves a QP argument.
///
/// # Safety
/// As [`abi::object`]: a non-null `qp` must be readable for an NDK object
/// header and dispatch pointer.
#[inline]
pub(super) unsafe fn qp_arg<'a>(qp: *mut NDK_QP) -> Option<&'a Qp> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Qp>(qp) }
}

unsafe extern "win64" fn close_qp(
    qp: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes a QP it owns, once, with no other call on
    // it running (NDK contract).
    unsafe { close::<Qp>(qp, completion, context) }
}

unsafe extern "win64" fn flush(qp: *mut NDK_QP) {
    // SAFETY: the consumer passes its open QP (NDK contract).
    if let Some(qp) = unsafe { qp_arg(qp) } {
        qp.flush();
    }
}

/// Resolves the QP and SGEs and posts a data request. Inlined into each
/// entry point: the extra call frame was a measurable part of a post.
///
/// # Safety
/// `qp` must be null or readable as [`abi::object`] requires, and a
/// non-null `sgl` the consumer's array of `count` SGEs, unchanged during
/// the call.
#[allow(clippy::inline_always)] // measured: `post_send` bench
#[inline(always)]
unsafe fn post(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    flags: u32,
    opcode: SendOpcode,
    key: u32,
    remote_addr: u64,
) -> NTSTATUS {
    // SAFETY: a non-null `qp` is readable (this function's contract).
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: a non-null `sgl` holds `count` SGEs, unchanged during the
    // call (this function's contract).
    let sges = match unsafe { abi::sge_list(sgl, count) } {
        Ok(s) => s,
        Err(status) => return qp.fail_post(status),
    };
    let req = DataRequest {
        opcode,
        wr_id: context as usize as u64,
        sges,
        flags,
        key,
        remote_addr,
    };
    match qp.post_data(&req) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

/// `NdkSend`.
unsafe extern "win64" fn send(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP and its array of `count`
    // SGEs (NDK contract), as `post` requires.
    unsafe { post(qp, context, sgl, count, flags, SendOpcode::Send, 0, 0) }
}

/// `NdkSendAndInvalidate` (flags before the token, as in the header).
unsafe extern "win64" fn send_and_invalidate(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    flags: u32,
    remote_token: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP and its array of `count`
    // SGEs (NDK contract), as `post` requires.
    unsafe {
        post(
            qp,
            context,
            sgl,
            count,
            flags,
            SendOpcode::SendInvalidate,
            remote_token,
            0,
        )
    }
}

/// `NdkWrite`.
unsafe extern "win64" fn write(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    remote_address: u64,
    remote_token: u32,
    flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP and its array of `count`
    // SGEs (NDK contract), as `post` requires.
    unsafe {
        post(
            qp,
            context,
            sgl,
            count,
            flags,
            SendOpcode::Write,
            remote_token,
            remote_address,
        )
    }
}

/// `NdkRead`.
unsafe extern "win64" fn read(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    remote_address: u64,
    remote_token: u32,
    flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP and its array of `count`
    // SGEs (NDK contract), as `post` requires.
    unsafe {
        post(
            qp,
            context,
            sgl,
            count,
            flags,
            SendOpcode::Read,
            remote_token,
            remote_address,
        )
    }
}

/// `NdkReceive`.
unsafe extern "win64" fn receive(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP (NDK contract).
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: a non-null `sgl` is the consumer's array of `count` SGEs,
    // unchanged during the call (NDK contract).
    let sges = match unsafe { abi::sge_list(sgl, count) } {
        Ok(s) => s,
        Err(status) => return status,
    };
    match qp.post_receive(context as usize as u64, sges) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

/// `NdkBind`.
unsafe extern "win64" fn bind(
    qp: *mut NDK_QP,
    context: *mut c_void,
    mr: *mut NDK_MR,
    mw: *mut NDK_MW,
    va: *mut c_void,
    length: usize,
    op_flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP (NDK contract).
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open MR (NDK contract).
    let mr = unsafe { mr_arg(mr) };
    // SAFETY: the consumer passes its open MW (NDK contract).
    let mw = unsafe { mw_arg(mw) };
    let wr_id = context as usize as u64;
    bind::bind(qp, wr_id, mr, mw, va as u64, length as u64, op_flags)
}

/// `NdkInvalidate`.
unsafe extern "win64" fn invalidate(
    qp: *mut NDK_QP,
    context: *mut c_void,
    object: *mut NDK_OBJECT_HEADER,
    op_flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP (NDK contract).
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // The header says which kind it is; each lookup checks type and
    // dispatch table.
    // SAFETY: the consumer passes an open MR or MW (NDK contract), so a
    // non-null `object` is readable as `abi::object` requires.
    let as_mr = unsafe { abi::object::<Mr>(object.cast()) };
    // SAFETY: the same readable object, checked as an MW this time.
    let as_mw = unsafe { abi::object::<Mw>(object.cast()) };
    let target = match (as_mr, as_mw) {
        (Some(mr), _) => Some(Target::Mr(mr)),
        (None, Some(mw)) => Some(Target::Mw(mw)),
        (None, None) => None,
    };
    bind::invalidate(qp, context as usize as u64, target, op_flags)
}

/// `NdkFastRegister`.
unsafe extern "win64" fn fast_register(
    qp: *mut NDK_QP,
    context: *mut c_void,
    mr: *mut NDK_MR,
    page_count: u32,
    pages: *const NDK_LOGICAL_ADDRESS,
    fbo: u32,
    length: usize,
    base_va: *mut c_void,
    op_flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP (NDK contract).
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open MR (NDK contract).
    let mr = unsafe { mr_arg(mr) };
    // Logical addresses are `PHYSICAL_ADDRESS` (i64); the device wants them
    // as u64, the same bits.
    // SAFETY: a non-null `pages` is the consumer's array of `page_count`
    // addresses, unchanged during the call (NDK contract); i64 and u64
    // share size and alignment.
    let pages = unsafe { abi::slice(pages.cast::<u64>(), page_count as usize) };
    let args = FastRegisterArgs {
        wr_id: context as usize as u64,
        page_count,
        pages,
        fbo,
        length: length as u64,
        base_va: base_va as u64,
        op_flags,
    };
    qp.fast_register(mr, &args)
}

/// The QP dispatch table.
pub static DISPATCH: NDK_QP_DISPATCH = NDK_QP_DISPATCH {
    NdkCloseQp: Some(close_qp),
    NdkQueryExtension: Some(query_extension),
    NdkFlush: Some(flush),
    NdkSend: Some(send),
    NdkReceive: Some(receive),
    NdkBind: Some(bind),
    NdkFastRegister: Some(fast_register),
    NdkInvalidate: Some(invalidate),
    NdkRead: Some(read),
    NdkWrite: Some(write),
    NdkSendAndInvalidate: Some(send_and_invalidate),
};

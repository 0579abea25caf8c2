//! `NdkBind` (memory window to MR range) and `NdkInvalidate` (fast-register
//! MR or memory window).
//!
//! Bind checks at post time: the MR is a registered (not fast-register) MR
//! of the QP's PD, `[VA, VA + Length)` lies inside it, `Length` is within
//! `MaxWindowSize`, and remote write needs an MR registered with local
//! write (else `STATUS_ACCESS_VIOLATION`). The window's new token is decided
//! at post time and readable when `NdkBind` returns. Invalidate targets only
//! fast-register MRs and windows, never an `NdkRegisterMr` region.

use core::ffi::c_void;

use hwq::wqe::{Access, SendOpcode};
use ndkpi::{
    NDK_MR, NDK_MW, NDK_OBJECT_HEADER, NDK_QP, NTSTATUS, STATUS_INVALID_HANDLE,
    STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use super::{flags, qp_arg};
use crate::abi;
use crate::mr::{Mr, mr_arg};
use crate::mw::{Mw, mw_arg};

/// `NdkBind`.
pub(crate) unsafe extern "win64" fn bind(
    qp: *mut NDK_QP,
    context: *mut c_void,
    mr: *mut NDK_MR,
    mw: *mut NDK_MW,
    va: *mut c_void,
    length: usize,
    op_flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP.
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open MR.
    let mr = unsafe { mr_arg(mr) };
    // SAFETY: the consumer passes its open MW.
    let mw = unsafe { mw_arg(mw) };
    let (Some(mr), Some(mw)) = (mr, mw) else {
        return qp.fail_post(STATUS_INVALID_PARAMETER);
    };
    if let Err(status) = flags::check(op_flags, flags::BIND) {
        return qp.fail_post(status);
    }
    let access = match flags::access(op_flags) {
        // Windows grant remote rights only; local write alone means nothing.
        Ok(a) if a.contains(Access::LOCAL_WRITE) && !a.contains(Access::REMOTE_WRITE) => {
            return qp.fail_post(STATUS_INVALID_PARAMETER);
        }
        Ok(a) => a & (Access::REMOTE_READ | Access::REMOTE_WRITE),
        Err(status) => return qp.fail_post(status),
    };
    if !hwq::TryArc::ptr_eq(mr.pd(), qp.pd()) {
        return qp.fail_post(STATUS_INVALID_PARAMETER);
    }
    let (va, length) = (va as u64, length as u64);
    let result = qp.post_send(flags::defer(op_flags), |wqe| {
        let grant = mw.bind(mr, va, length, access)?;
        wqe.opcode = SendOpcode::Bind as u8;
        wqe.flags = flags::wqe_flags(op_flags).bits();
        wqe.wr_id = context as usize as u64;
        wqe.access = access.bits();
        wqe.key = grant.key.0;
        wqe.aux32 = grant.mr_key.0;
        wqe.remote_addr = va;
        wqe.length = length;
        Ok(())
    });
    match result {
        Ok(()) => {
            mw.set_binding(mr);
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// What an invalidate targets.
enum Target<'a> {
    Mr(&'a Mr),
    Mw(&'a Mw),
}

/// `NdkInvalidate`.
pub(crate) unsafe extern "win64" fn invalidate(
    qp: *mut NDK_QP,
    context: *mut c_void,
    object: *mut NDK_OBJECT_HEADER,
    op_flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open QP.
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // The header says which kind it is; each lookup checks type and
    // dispatch table.
    // SAFETY: the consumer passes an open MR or MW.
    let as_mr = unsafe { abi::object::<Mr>(object.cast()) };
    // SAFETY: as above.
    let as_mw = unsafe { abi::object::<Mw>(object.cast()) };
    let target = match (as_mr, as_mw) {
        (Some(mr), _) => Target::Mr(mr),
        (None, Some(mw)) => Target::Mw(mw),
        (None, None) => return qp.fail_post(STATUS_INVALID_PARAMETER),
    };
    let key = match target {
        Target::Mr(mr) if mr.is_fast() => mr.key(),
        Target::Mw(mw) => mw.key(),
        // A regular registration is undone by NdkDeregisterMr only.
        Target::Mr(_) => return qp.fail_post(STATUS_INVALID_PARAMETER),
    };
    if let Err(status) = flags::check(op_flags, flags::INVALIDATE) {
        return qp.fail_post(status);
    }
    let result = qp.post_send(flags::defer(op_flags), |wqe| {
        wqe.opcode = SendOpcode::LocalInvalidate as u8;
        wqe.flags = flags::wqe_flags(op_flags).bits();
        wqe.wr_id = context as usize as u64;
        wqe.key = key.0;
        Ok(())
    });
    match result {
        Ok(()) => {
            if let Target::Mw(mw) = target {
                mw.unbind();
            }
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

//! `NdkBind` (memory window to MR range) and `NdkInvalidate` (fast-register
//! MR or memory window).
//!
//! Bind checks at post time: the MR is a registered (not fast-register) MR
//! of the QP's PD, `[VA, VA + Length)` lies inside it, `Length` is within
//! `MaxWindowSize`, and remote write needs an MR registered with local
//! write (else `STATUS_ACCESS_VIOLATION`). The window's new token is decided
//! at post time and readable when `NdkBind` returns. Invalidate targets only
//! fast-register MRs and windows, never an `NdkRegisterMr` region.

use hwq::wqe::{self, Access, SendOp};
use ndkpi::{NTSTATUS, STATUS_INVALID_PARAMETER, STATUS_SUCCESS};

use super::{Qp, flags};
use crate::mr::Mr;
use crate::mw::Mw;

/// `NdkBind` of `mw` to `[va, va + length)` of `mr` (`None`: the argument
/// was not an open object of that kind).
pub(crate) fn bind(
    qp: &Qp,
    wr_id: u64,
    mr: Option<&Mr>,
    mw: Option<&Mw>,
    va: u64,
    length: u64,
    op_flags: u32,
) -> NTSTATUS {
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
    let result = qp.post_send(flags::defer(op_flags), |wqe| {
        let grant = mw.bind(mr, va, length, access)?;
        let bind = wqe::Bind {
            window: grant.key,
            region: grant.mr_key,
            access,
            va,
            length,
        };
        flags::request(op_flags, wr_id, SendOp::Bind(bind)).encode(wqe);
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
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target<'a> {
    /// A fast-register MR (a regular one is refused).
    Mr(&'a Mr),
    /// A memory window.
    Mw(&'a Mw),
}

/// `NdkInvalidate` of `target` (`None`: neither an open MR nor MW).
pub(crate) fn invalidate(
    qp: &Qp,
    wr_id: u64,
    target: Option<Target<'_>>,
    op_flags: u32,
) -> NTSTATUS {
    let Some(target) = target else {
        return qp.fail_post(STATUS_INVALID_PARAMETER);
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
        flags::request(op_flags, wr_id, SendOp::LocalInvalidate { key }).encode(wqe);
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

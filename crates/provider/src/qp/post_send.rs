//! `NdkSend`, `NdkSendAndInvalidate`, `NdkWrite` and `NdkRead`: data-moving
//! initiator requests.
//!
//! Non-inline requests copy the consumer's SGE list into the WQE (at most
//! the QP's `MaxInitiatorRequestSge` entries; for reads the adapter's
//! `MaxReadRequestSge`). Inline requests (`NDK_OP_FLAG_INLINE`) copy the
//! payload itself into the WQE at post time, because the consumer's buffers
//! are only guaranteed readable until the post returns: SGE tokens are
//! ignored, the SGE count is not limited by `MaxInitiatorRequestSge`, and
//! the total must fit the QP's `InlineDataSize`.

use core::ffi::c_void;

use hwq::wqe::{SendOpcode, WqeFlags};
use hwq::{SendWqe, Sge};
use ndkpi::{
    NDK_QP, NDK_SGE, NTSTATUS, STATUS_ACCESS_VIOLATION, STATUS_INVALID_HANDLE,
    STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use super::{Qp, flags, qp_arg};
use crate::info;
use crate::platform::Platform;
use crate::sge;

/// What a data request asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DataRequest<'a> {
    pub opcode: SendOpcode,
    pub wr_id: u64,
    pub sges: &'a [Sge],
    pub flags: u32,
    /// Remote token (write/read) or the token to invalidate (send-inv).
    pub key: u32,
    pub remote_addr: u64,
}

fn allowed(opcode: SendOpcode) -> u32 {
    match opcode {
        SendOpcode::Write => flags::WRITE,
        SendOpcode::Read => flags::READ,
        _ => flags::SEND,
    }
}

/// Copies the inline payload of `sges` into `wqe`.
fn copy_inline(platform: &dyn Platform, wqe: &mut SendWqe, sges: &[Sge]) -> Result<u32, NTSTATUS> {
    let area = wqe.inline_area_mut();
    let mut at = 0usize;
    for s in sges {
        let len = s.length as usize;
        if len == 0 {
            continue;
        }
        let dst = area.get_mut(at..at + len).ok_or(STATUS_INVALID_PARAMETER)?;
        if !platform.copy_from_va(s.addr, dst) {
            return Err(STATUS_ACCESS_VIOLATION);
        }
        at += len;
    }
    Ok(at as u32)
}

impl Qp {
    /// Validates a data request (nothing touched on failure); returns the
    /// total payload length of a non-inline request (inline requests get
    /// theirs while copying).
    fn check_data(&self, req: &DataRequest<'_>) -> Result<u32, NTSTATUS> {
        flags::check(req.flags, allowed(req.opcode))?;
        let limits = self.limits();
        let total = if flags::inline(req.flags) {
            let total: u64 = req.sges.iter().map(|s| u64::from(s.length)).sum();
            if total > u64::from(limits.inline_size) {
                return Err(STATUS_INVALID_PARAMETER);
            }
            0
        } else {
            let max_sge = if req.opcode == SendOpcode::Read {
                info::MAX_REQUEST_SGE
            } else {
                limits.max_initiator_sge
            };
            if req.sges.len() > max_sge as usize {
                return Err(STATUS_INVALID_PARAMETER);
            }
            sge::total(req.sges, limits.max_transfer)?
        };
        if req.opcode == SendOpcode::Read
            && req.flags & ndkpi::NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE != 0
            && req.sges.is_empty()
        {
            // The token to invalidate is SGE[0]'s.
            return Err(STATUS_INVALID_PARAMETER);
        }
        Ok(total)
    }

    /// Posts a data request.
    pub(crate) fn post_data(&self, req: &DataRequest<'_>) -> Result<(), NTSTATUS> {
        let total_len = match self.check_data(req) {
            Ok(total) => total,
            Err(status) => return Err(self.fail_post(status)),
        };
        // Computed before the SQ lock is taken, outside the locked section.
        let wflags = flags::wqe_flags(req.flags);
        self.post_send(flags::defer(req.flags), |wqe| {
            wqe.opcode = req.opcode as u8;
            wqe.wr_id = req.wr_id;
            wqe.key = req.key;
            wqe.remote_addr = req.remote_addr;
            if flags::inline(req.flags) {
                let platform = crate::object::Object::platform(self);
                let len = copy_inline(platform, wqe, req.sges)?;
                wqe.flags = (wflags | WqeFlags::INLINE).bits();
                wqe.inline_len = len as u16;
                wqe.total_len = len;
                wqe.sge_count = 0;
            } else {
                // At most MAX_SGE (checked above); refused rather than
                // trusted.
                sge::copy_into(&mut wqe.sges, req.sges).ok_or(STATUS_INVALID_PARAMETER)?;
                wqe.flags = wflags.bits();
                wqe.sge_count = req.sges.len() as u8;
                wqe.total_len = total_len;
            }
            Ok(())
        })
    }
}

/// Resolves the QP and SGEs and posts. Inlined into each entry point: the
/// extra call frame was a measurable part of a post.
///
/// # Safety
/// `qp` must be the consumer's open QP (or null) and `sgl` its array of
/// `count` SGEs.
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
    // SAFETY: forwarded.
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: forwarded.
    let sges = match unsafe { sge::list(sgl, count) } {
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
pub(crate) unsafe extern "win64" fn send(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer's QP and SGE array.
    unsafe { post(qp, context, sgl, count, flags, SendOpcode::Send, 0, 0) }
}

/// `NdkSendAndInvalidate` (flags before the token, as in the header).
pub(crate) unsafe extern "win64" fn send_and_invalidate(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    flags: u32,
    remote_token: u32,
) -> NTSTATUS {
    // SAFETY: the consumer's QP and SGE array.
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
pub(crate) unsafe extern "win64" fn write(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    remote_address: u64,
    remote_token: u32,
    flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer's QP and SGE array.
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
pub(crate) unsafe extern "win64" fn read(
    qp: *mut NDK_QP,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
    remote_address: u64,
    remote_token: u32,
    flags: u32,
) -> NTSTATUS {
    // SAFETY: the consumer's QP and SGE array.
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

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

use hwq::wqe::{Data, Gather, Remote, SendOp, SendOpcode, SendRequest};
use hwq::{MemoryKey, SendWqe, Sge};
use ndkpi::{NTSTATUS, STATUS_ACCESS_VIOLATION, STATUS_INVALID_PARAMETER};

use super::{Qp, flags};
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
        self.post_send(flags::defer(req.flags), |wqe| {
            let data = if flags::inline(req.flags) {
                let platform = crate::object::Object::platform(self);
                let len = copy_inline(platform, wqe, req.sges)?;
                Data::Inline { len: len as u16 }
            } else {
                // At most MAX_SGE (checked above); refused rather than
                // trusted.
                sge::copy_into(&mut wqe.sges, req.sges).ok_or(STATUS_INVALID_PARAMETER)?;
                Data::Gather(Gather {
                    count: req.sges.len() as u8,
                    total_len,
                })
            };
            data_request(req, data)?.encode(wqe);
            Ok(())
        })
    }
}

/// The send request `req` asks for, moving `data`.
#[inline]
fn data_request(req: &DataRequest<'_>, data: Data) -> Result<SendRequest, NTSTATUS> {
    let remote = Remote {
        addr: req.remote_addr,
        key: MemoryKey(req.key),
    };
    let op = match (req.opcode, data) {
        (SendOpcode::Send, data) => SendOp::Send {
            data,
            solicited: flags::solicited(req.flags),
            invalidate: None,
        },
        (SendOpcode::SendInvalidate, data) => SendOp::Send {
            data,
            solicited: flags::solicited(req.flags),
            invalidate: Some(MemoryKey(req.key)),
        },
        (SendOpcode::Write, data) => SendOp::Write { data, remote },
        (SendOpcode::Read, Data::Gather(sink)) => SendOp::Read {
            sink,
            remote,
            invalidate_sink: flags::invalidate_sink(req.flags),
        },
        // A READ's flags refuse INLINE; the other opcodes move no data.
        _ => return Err(STATUS_INVALID_PARAMETER),
    };
    Ok(flags::request(req.flags, req.wr_id, op))
}

//! `NdkFastRegister`: give a fast-register MR a page list, address, length
//! and rights, by work request.
//!
//! All checks run at post time (see `mr::Mr::fast_register`): the
//! MR was created with `FastRegister = TRUE` and initialised with enough
//! pages; `FBO < PAGE_SIZE`; `Length <= pages * PAGE_SIZE - FBO`;
//! `BaseVirtualAddress % PAGE_SIZE == FBO`; remote rights need an MR
//! initialised with `RemoteAccess`. The registration keeps the token the
//! MR has had since `NdkInitializeFastRegisterMr` (see [`crate::mr`]), so
//! it is readable before and after this call. The page array is copied into
//! the MR's page buffer (allocated at initialisation) and the WQE carries
//! that buffer's logical address.

use hwq::wqe::{self, SendOp};
use ndkpi::{NTSTATUS, STATUS_INVALID_PARAMETER, STATUS_SUCCESS};

use super::{Qp, flags};
use crate::mr::{FastRegisterRequest, Mr};

/// `NdkFastRegister`'s arguments past the QP and MR.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastRegisterArgs<'a> {
    /// The request's context (the CQE's `wr_id`).
    pub wr_id: u64,
    /// `PageCount`, as the consumer passed it.
    pub page_count: u32,
    /// The page array (`None`: null with a nonzero count).
    pub pages: Option<&'a [u64]>,
    /// `FBO`.
    pub fbo: u32,
    /// `Length`.
    pub length: u64,
    /// `BaseVirtualAddress`.
    pub base_va: u64,
    /// The operation flags.
    pub op_flags: u32,
}

impl Qp {
    /// `NdkFastRegister` of `mr` (`None`: not an open MR).
    pub(crate) fn fast_register(&self, mr: Option<&Mr>, args: &FastRegisterArgs<'_>) -> NTSTATUS {
        let qp = self;
        let FastRegisterArgs {
            wr_id,
            page_count,
            pages,
            fbo,
            length,
            base_va,
            op_flags,
        } = *args;
        let Some(mr) = mr else {
            return qp.fail_post(STATUS_INVALID_PARAMETER);
        };
        if let Err(status) = flags::check(op_flags, flags::FAST_REGISTER) {
            return qp.fail_post(status);
        }
        let access = match flags::access(op_flags) {
            Ok(a) => a,
            Err(status) => return qp.fail_post(status),
        };
        let Some(pages) = pages else {
            return qp.fail_post(STATUS_INVALID_PARAMETER);
        };
        if !hwq::TryArc::ptr_eq(mr.pd(), qp.pd()) {
            return qp.fail_post(STATUS_INVALID_PARAMETER);
        }
        let req = FastRegisterRequest {
            pages,
            fbo,
            length,
            va: base_va,
            access,
        };
        let platform = crate::object::Object::platform(qp);
        let result = qp.post_send(flags::defer(op_flags), |wqe| {
            let grant = mr.fast_register(platform, &req)?;
            let fr = wqe::FastRegister {
                key: grant.key,
                access,
                va: req.va,
                length: req.length,
                fbo,
                page_count,
                page_list: grant.page_list,
            };
            flags::request(op_flags, wr_id, SendOp::FastRegister(fr)).encode(wqe);
            Ok(())
        });
        match result {
            Ok(()) => STATUS_SUCCESS,
            Err(status) => status,
        }
    }
}

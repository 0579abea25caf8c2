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

use core::ffi::c_void;

use hwq::wqe::SendOpcode;
use ndkpi::{
    NDK_LOGICAL_ADDRESS, NDK_MR, NDK_QP, NTSTATUS, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER,
    STATUS_SUCCESS,
};

use super::{flags, qp_arg};
use crate::abi;
use crate::mr::{FastRegisterRequest, mr_arg};

/// `NdkFastRegister`.
pub(crate) unsafe extern "win64" fn fast_register(
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
    // SAFETY: the consumer passes its open QP.
    let Some(qp) = (unsafe { qp_arg(qp) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open MR.
    let Some(mr) = (unsafe { mr_arg(mr) }) else {
        return qp.fail_post(STATUS_INVALID_PARAMETER);
    };
    if let Err(status) = flags::check(op_flags, flags::FAST_REGISTER) {
        return qp.fail_post(status);
    }
    let access = match flags::access(op_flags) {
        Ok(a) => a,
        Err(status) => return qp.fail_post(status),
    };
    // Logical addresses are `PHYSICAL_ADDRESS` (i64); the device wants them
    // as u64, the same bits.
    // SAFETY: the consumer's array of `page_count` addresses.
    let Some(pages) = (unsafe { abi::slice(pages.cast::<u64>(), page_count as usize) }) else {
        return qp.fail_post(STATUS_INVALID_PARAMETER);
    };
    if !hwq::TryArc::ptr_eq(mr.pd(), qp.pd()) {
        return qp.fail_post(STATUS_INVALID_PARAMETER);
    }
    let req = FastRegisterRequest {
        pages,
        fbo,
        length: length as u64,
        va: base_va as u64,
        access,
    };
    let platform = crate::object::Object::platform(qp);
    let result = qp.post_send(flags::defer(op_flags), |wqe| {
        let grant = mr.fast_register(platform, &req)?;
        wqe.opcode = SendOpcode::FastRegister as u8;
        wqe.flags = flags::wqe_flags(op_flags).bits();
        wqe.wr_id = context as usize as u64;
        wqe.access = access.bits();
        wqe.key = grant.key.0;
        wqe.aux32 = page_count;
        wqe.remote_addr = req.va;
        wqe.length = req.length;
        wqe.aux64 = grant.page_list;
        wqe.fbo = fbo;
        Ok(())
    });
    match result {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

//! The protection domain's edge: `NdkCreatePd` and the PD dispatch table
//! (the create entries of MRs, MWs, SRQs and QPs, and the privileged
//! token).

use core::ffi::c_void;

use ndkpi::{
    NDK_ADAPTER, NDK_FN_CLOSE_COMPLETION, NDK_FN_CREATE_COMPLETION, NDK_OBJECT_HEADER, NDK_PD,
    NDK_PD_DISPATCH, NDK_VERSION, NTSTATUS, NdkObjectTypePd, STATUS_INVALID_HANDLE,
    STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use super::adapter::{adapter_arg, query_extension};
use crate::abi::{self, NdkObject};
use crate::pd::Pd;

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

/// `NdkCreatePd`: completes synchronously.
pub(super) unsafe extern "win64" fn create_pd(
    adapter: *mut NDK_ADAPTER,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_PD,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Pd::create(adapter) {
        Ok(pd) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(pd)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

unsafe extern "win64" fn close_pd(
    pd: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes a PD it owns, once, with no other call on
    // it running (NDK contract).
    unsafe { abi::close::<Pd>(pd, completion, context) }
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

/// The PD dispatch table.
pub static DISPATCH: NDK_PD_DISPATCH = NDK_PD_DISPATCH {
    NdkClosePd: Some(close_pd),
    NdkQueryExtension: Some(query_extension),
    NdkCreateMr: Some(super::mr::create_mr),
    NdkCreateMw: Some(super::mw::create_mw),
    NdkCreateSrq: Some(super::srq::create_srq),
    NdkCreateQp: Some(super::qp::create_qp),
    NdkCreateQpWithSrq: Some(super::qp::create_qp_with_srq),
    NdkGetPrivilegedMemoryRegionToken: Some(get_privileged_memory_region_token),
};

//! The memory window's edge: `NdkCreateMw` and the MW dispatch table.

use core::ffi::c_void;

use ndkpi::{
    NDK_FN_CLOSE_COMPLETION, NDK_FN_CREATE_COMPLETION, NDK_MW, NDK_MW_DISPATCH, NDK_OBJECT_HEADER,
    NDK_PD, NDK_VERSION, NTSTATUS, NdkObjectTypeMw, STATUS_INVALID_HANDLE,
    STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use super::adapter::query_extension;
use super::pd::pd_arg;
use crate::abi::{self, NdkObject};
use crate::mw::Mw;

// SAFETY: `Mw` is `#[repr(C)]` with `ndk: NdkCell<NDK_MW>` first (mw.rs),
// and `Mw::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for Mw {
    type Ndk = NDK_MW;
    const TYPE: i32 = NdkObjectTypeMw;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_MW {
        NDK_MW {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves an MW argument.
///
/// # Safety
/// As [`abi::object`]: a non-null pointer must be readable for an NDK
/// object header and dispatch pointer.
pub(super) unsafe fn mw_arg<'a>(mw: *mut NDK_MW) -> Option<&'a Mw> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Mw>(mw) }
}

/// `NdkCreateMw`: completes synchronously.
pub(super) unsafe extern "win64" fn create_mw(
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

unsafe extern "win64" fn close_mw(
    mw: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once, with no
    // other call on it running (NDK contract).
    unsafe { abi::close::<Mw>(mw, completion, context) }
}

unsafe extern "win64" fn get_remote_token_from_mw(mw: *mut NDK_MW) -> u32 {
    // SAFETY: the consumer passes its open MW (NDK contract).
    unsafe { mw_arg(mw) }.map_or(0, |mw| mw.key().0)
}

/// The MW dispatch table.
pub static DISPATCH: NDK_MW_DISPATCH = NDK_MW_DISPATCH {
    NdkCloseMw: Some(close_mw),
    NdkQueryExtension: Some(query_extension),
    NdkGetRemoteTokenFromMw: Some(get_remote_token_from_mw),
};

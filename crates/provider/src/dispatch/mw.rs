//! The memory window's edge: the MW dispatch table (`NdkCreateMw` is the
//! PD's entry).

use core::ffi::c_void;

use ndkpi::{
    NDK_FN_CLOSE_COMPLETION, NDK_MW, NDK_MW_DISPATCH, NDK_OBJECT_HEADER, NDK_VERSION, NTSTATUS,
    NdkObjectTypeMw,
};

use super::adapter::{close, query_extension};
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

unsafe extern "win64" fn close_mw(
    mw: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once, with no
    // other call on it running (NDK contract).
    unsafe { close::<Mw>(mw, completion, context) }
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

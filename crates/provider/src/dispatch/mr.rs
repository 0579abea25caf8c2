//! The memory region's edge: the MR dispatch table (`NdkCreateMr` is the
//! PD's entry).

use core::ffi::c_void;

use ndkpi::{
    MDL, NDK_FN_CLOSE_COMPLETION, NDK_FN_REQUEST_COMPLETION, NDK_MR, NDK_MR_DISPATCH,
    NDK_OBJECT_HEADER, NDK_VERSION, NTSTATUS, NdkObjectTypeMr, STATUS_INVALID_HANDLE,
    STATUS_SUCCESS,
};

use super::adapter::{close, query_extension};
use crate::abi::{self, MdlChain, NdkObject};
use crate::mr::Mr;

// SAFETY: `Mr` is `#[repr(C)]` with `ndk: NdkCell<NDK_MR>` first (mr.rs),
// and `Mr::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for Mr {
    type Ndk = NDK_MR;
    const TYPE: i32 = NdkObjectTypeMr;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_MR {
        NDK_MR {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves an MR argument.
///
/// # Safety
/// As [`abi::object`]: a non-null `mr` must be readable for an NDK object
/// header and dispatch pointer.
pub(super) unsafe fn mr_arg<'a>(mr: *mut NDK_MR) -> Option<&'a Mr> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Mr>(mr) }
}

unsafe extern "win64" fn close_mr(
    mr: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an MR it owns, once, with no other call on
    // it running (NDK contract).
    unsafe { close::<Mr>(mr, completion, context) }
}

unsafe extern "win64" fn register_mr(
    mr: *mut NDK_MR,
    mdl: *mut MDL,
    length: usize,
    flags: u32,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open MR (NDK contract).
    let Some(mr) = (unsafe { mr_arg(mr) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes a locked, valid MDL chain (or null) that
    // it does not touch during the call (NDK contract).
    let chain = unsafe { MdlChain::new(mdl) };
    match mr.register(chain, length, flags) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

unsafe extern "win64" fn deregister_mr(
    mr: *mut NDK_MR,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open MR (NDK contract).
    let Some(mr) = (unsafe { mr_arg(mr) }) else {
        return STATUS_INVALID_HANDLE;
    };
    match mr.deregister() {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

unsafe extern "win64" fn initialize_fast_register_mr(
    mr: *mut NDK_MR,
    page_count: u32,
    remote_access: u8,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open MR (NDK contract).
    let Some(mr) = (unsafe { mr_arg(mr) }) else {
        return STATUS_INVALID_HANDLE;
    };
    match mr.initialize_fast_register(page_count, remote_access != 0) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

unsafe extern "win64" fn get_token_from_mr(mr: *mut NDK_MR) -> u32 {
    // SAFETY: the consumer passes its open MR (NDK contract).
    unsafe { mr_arg(mr) }.map_or(0, |mr| mr.key().0)
}

/// The MR dispatch table. Local and remote tokens are the same key.
pub static DISPATCH: NDK_MR_DISPATCH = NDK_MR_DISPATCH {
    NdkCloseMr: Some(close_mr),
    NdkQueryExtension: Some(query_extension),
    NdkRegisterMr: Some(register_mr),
    NdkDeregisterMr: Some(deregister_mr),
    NdkInitializeFastRegisterMr: Some(initialize_fast_register_mr),
    NdkGetRemoteTokenFromMr: Some(get_token_from_mr),
    NdkGetLocalTokenFromMr: Some(get_token_from_mr),
};

/// The MDL walk over consumer-built chains, as `NdkRegisterMr` and
/// `NdkBuildLAM` read them.
#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::mdl::{Span, span_pages, walk};
    use crate::testing::TestPlatform;
    use ndkpi::STATUS_INVALID_PARAMETER;
    use std::vec;
    use std::vec::Vec;

    /// One MDL (header words + PFNs) for `len` bytes at `va`.
    fn build(va: u64, len: u32, pfn_base: u64) -> Vec<u64> {
        let pages = span_pages(va, u64::from(len));
        let mut words = vec![0u64; size_of::<MDL>() / 8 + pages as usize];
        let mdl = MDL {
            Next: core::ptr::null_mut(),
            Size: (size_of::<MDL>() + 8 * pages as usize) as i16,
            MdlFlags: 0,
            Process: core::ptr::null_mut(),
            MappedSystemVa: core::ptr::null_mut(),
            StartVa: (va & !0xfff) as *mut core::ffi::c_void,
            ByteCount: len,
            ByteOffset: (va & 0xfff) as u32,
        };
        // SAFETY: `words` holds at least `size_of::<MDL>()` bytes at an
        // 8-byte-aligned start (a `Vec<u64>`), MDL's alignment.
        unsafe { words.as_mut_ptr().cast::<MDL>().write(mdl) };
        for i in 0..pages as usize {
            words[size_of::<MDL>() / 8 + i] = pfn_base + i as u64;
        }
        words
    }

    #[test]
    fn pages_of_one_mdl() {
        let p = TestPlatform::leaked();
        let m = build(0x10_0ff0, 0x20, 0x500);
        let mut seen = Vec::new();
        // SAFETY: `m` is one well-formed MDL (`build`) whose `Size` covers
        // its PFNs, with a null `Next`, alive and unchanged for the walk.
        let chain = unsafe { MdlChain::new(m.as_ptr().cast()) };
        let span = walk(p, chain, 0x20, |a| seen.push(a)).unwrap();
        assert_eq!(
            span,
            Span {
                va: 0x10_0ff0,
                fbo: 0xff0,
                pages: 2
            }
        );
        assert_eq!(
            seen,
            vec![0x50_0000, 0x50_1000],
            "PFNs, not VAs, become logical addresses"
        );
    }

    #[test]
    fn a_size_too_small_for_the_pfns_is_refused() {
        let p = TestPlatform::leaked();
        let mut m = build(0x1000, 0x3000, 1);
        // Claim room for one PFN only (`Size` is the 16 bits at byte 8).
        m[1] = (m[1] & !0xffff) | (size_of::<MDL>() as u64 + 8);
        // SAFETY: `m` is one MDL whose `Size` (now covering one PFN, less
        // than the buffer holds) bounds every PFN read; `Next` is null.
        let chain = unsafe { MdlChain::new(m.as_ptr().cast()) };
        // The walk must refuse before reading past Size.
        let r = walk(p, chain, 0x3000, |_| {});
        assert_eq!(r, Err(STATUS_INVALID_PARAMETER));
    }
}

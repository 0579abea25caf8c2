//! Logical address mappings: `NdkBuildLAM` / `NdkReleaseLAM`.
//!
//! A LAM lists the logical addresses of the pages under an MDL span, for
//! privileged-token SGEs and fast registration. Building one allocates
//! nothing (the consumer supplies the buffer) and completes synchronously,
//! so a NULL completion is fine. The LAM counts as a child of the adapter
//! until released; `AdapterContext` (ours to use) records the owning
//! adapter and is cleared on release, so a second release is ignored.

use core::ffi::c_void;
use core::mem::offset_of;

use ndkpi::{
    MDL, NDK_ADAPTER, NDK_FN_REQUEST_COMPLETION, NDK_LOGICAL_ADDRESS, NDK_LOGICAL_ADDRESS_MAPPING,
    NTSTATUS, STATUS_BUFFER_TOO_SMALL, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER,
    STATUS_SUCCESS,
};

use crate::abi;
use crate::adapter::{Adapter, adapter_arg};
use crate::mdl;

/// Bytes of a LAM holding `pages` pages.
pub fn lam_size(pages: usize) -> Option<usize> {
    pages
        .checked_mul(size_of::<NDK_LOGICAL_ADDRESS>())?
        .checked_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray))
}

/// Address of a LAM's `AdapterContext` (computing it reads nothing).
fn context_ptr(lam: *mut NDK_LOGICAL_ADDRESS_MAPPING) -> *mut *mut c_void {
    lam.wrapping_byte_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterContext))
        .cast()
}

/// Address of a LAM's `AdapterPageCount`.
fn count_ptr(lam: *mut NDK_LOGICAL_ADDRESS_MAPPING) -> *mut u32 {
    lam.wrapping_byte_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount))
        .cast()
}

fn owner_tag(adapter: &Adapter) -> *mut c_void {
    core::ptr::from_ref(adapter).cast_mut().cast()
}

/// `NdkBuildLAM`.
pub(crate) unsafe extern "win64" fn build_lam(
    adapter: *mut NDK_ADAPTER,
    mdl: *mut MDL,
    length: usize,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
    lam: *mut NDK_LOGICAL_ADDRESS_MAPPING,
    lam_size_io: *mut u32,
    fbo: *mut u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened.
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer's in/out size (null checked).
    let Some(have) = (unsafe { abi::read_in(lam_size_io) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    if fbo.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    let platform = adapter.platform();
    // First pass: validate the chain and count pages.
    // SAFETY: the consumer passes a locked, valid MDL chain.
    let span = match unsafe { mdl::walk(platform, mdl, length as u64, |_| {}) } {
        Ok(span) => span,
        Err(status) => return status,
    };
    let Some(need) = lam_size(span.pages).and_then(|n| u32::try_from(n).ok()) else {
        return STATUS_INVALID_PARAMETER;
    };
    // SAFETY: non-null (read above).
    unsafe { abi::write_out(lam_size_io, need) };
    if lam.is_null() || have < need {
        return STATUS_BUFFER_TOO_SMALL;
    }
    let array = lam
        .wrapping_byte_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray))
        .cast::<NDK_LOGICAL_ADDRESS>();
    let mut i = 0usize;
    let fill = |logical: u64| {
        if i < span.pages {
            // SAFETY: `i < pages`, and the buffer holds `pages` entries.
            unsafe {
                array
                    .wrapping_add(i)
                    .write_unaligned(logical as NDK_LOGICAL_ADDRESS);
            };
        }
        i += 1;
    };
    // Second pass: fill the consumer's buffer, which holds `need` bytes.
    // SAFETY: same chain as the first pass.
    let filled = unsafe { mdl::walk(platform, mdl, length as u64, fill) };
    if filled.is_err() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: `lam` holds at least the header (need >= header size).
    unsafe { context_ptr(lam).write_unaligned(owner_tag(adapter)) };
    // SAFETY: as above.
    unsafe { count_ptr(lam).write_unaligned(span.pages as u32) };
    // SAFETY: checked non-null above.
    unsafe { abi::write_out(fbo, span.fbo) };
    adapter.hold();
    STATUS_SUCCESS
}

/// `NdkReleaseLAM`.
pub(crate) unsafe extern "win64" fn release_lam(
    adapter: *mut NDK_ADAPTER,
    lam: *mut NDK_LOGICAL_ADDRESS_MAPPING,
) {
    // SAFETY: the consumer passes the adapter it opened.
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return;
    };
    if lam.is_null() {
        return;
    }
    // SAFETY: a LAM the consumer built with us (readable header).
    let owner = unsafe { context_ptr(lam).read_unaligned() };
    if owner != owner_tag(adapter) {
        return;
    }
    // SAFETY: as above; clearing marks the LAM released.
    unsafe { context_ptr(lam).write_unaligned(core::ptr::null_mut()) };
    adapter.unhold();
}

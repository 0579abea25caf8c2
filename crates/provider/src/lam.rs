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

use ndkpi::{NDK_LOGICAL_ADDRESS, NDK_LOGICAL_ADDRESS_MAPPING, NTSTATUS, STATUS_INVALID_PARAMETER};

use crate::abi::{MdlChain, OutArray};
use crate::adapter::Adapter;
use crate::mdl::{self, Span};

/// Bytes of a LAM holding `pages` pages.
pub fn lam_size(pages: usize) -> Option<usize> {
    pages
        .checked_mul(size_of::<NDK_LOGICAL_ADDRESS>())?
        .checked_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray))
}

/// What a built LAM's `AdapterContext` holds: its adapter's address.
pub(crate) fn owner_tag(adapter: &Adapter) -> *mut c_void {
    core::ptr::from_ref(adapter).cast_mut().cast()
}

/// `NdkBuildLAM`'s first pass: validates the chain over `length` bytes and
/// counts its pages; returns the span and the LAM size it needs.
pub(crate) fn measure(
    adapter: &Adapter,
    chain: MdlChain<'_>,
    length: u64,
) -> Result<(Span, u32), NTSTATUS> {
    let span = mdl::walk(adapter.platform(), chain, length, |_| {})?;
    let need = lam_size(span.pages)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or(STATUS_INVALID_PARAMETER)?;
    Ok((span, need))
}

/// `NdkBuildLAM`'s second pass: the page addresses, into the consumer's
/// array (sized by the first pass).
pub(crate) fn fill(
    adapter: &Adapter,
    chain: MdlChain<'_>,
    length: u64,
    pages: &mut OutArray<'_, NDK_LOGICAL_ADDRESS>,
) -> Result<(), NTSTATUS> {
    let mut i = 0usize;
    mdl::walk(adapter.platform(), chain, length, |logical| {
        pages.write(i, logical as NDK_LOGICAL_ADDRESS);
        i += 1;
    })?;
    Ok(())
}

//! MDLs for Linux consumers: `RsNdkAllocateMdl` / `RsNdkFreeMdl`.
//!
//! A kernel consumer hands the provider MDLs (`NdkRegisterMr`,
//! `NdkBuildLAM`). On the Linux host an MDL is the Windows x64 `MDL` layout
//! followed by its PFN array, each PFN being a host virtual page number
//! (`va >> 12`); the host platform turns a PFN back into a logical address,
//! which is the host virtual address. The `Size` field is a 16-bit count,
//! so a long buffer is described by a chain of MDLs linked through `Next`,
//! each continuing where the previous one ended, as Windows chains MDLs.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ffi::c_void;
use std::ptr;

use ndkpi::{
    MDL, MDL_PAGES_LOCKED, MDL_SOURCE_IS_NONPAGED_POOL, PAGE_SHIFT, PAGE_SIZE, PFN_NUMBER,
};

/// PFNs one MDL can list with its size in a 16-bit field.
const MAX_PAGES_PER_MDL: usize = (i16::MAX as usize - size_of::<MDL>()) / size_of::<PFN_NUMBER>();

fn layout(pages: usize) -> Option<Layout> {
    let bytes = size_of::<MDL>().checked_add(pages.checked_mul(size_of::<PFN_NUMBER>())?)?;
    Layout::from_size_align(bytes, align_of::<MDL>()).ok()
}

/// Builds one MDL for `[va, va + len)`; `len` spans at most
/// `MAX_PAGES_PER_MDL` pages.
fn allocate_one(va: usize, len: usize) -> *mut MDL {
    let page = PAGE_SIZE;
    let offset = va % page;
    let pages = (offset + len).div_ceil(page);
    let Some(layout) = layout(pages) else {
        return ptr::null_mut();
    };
    // SAFETY: the layout has a non-zero size (it includes the MDL header).
    let raw = unsafe { alloc_zeroed(layout) };
    // The layout's alignment is the MDL's, so the cast is aligned.
    #[allow(clippy::cast_ptr_alignment)]
    let mdl = raw.cast::<MDL>();
    if mdl.is_null() {
        return mdl;
    }
    let header = MDL {
        Next: ptr::null_mut(),
        Size: layout.size() as i16,
        MdlFlags: MDL_PAGES_LOCKED | MDL_SOURCE_IS_NONPAGED_POOL,
        Process: ptr::null_mut(),
        MappedSystemVa: va as *mut c_void,
        StartVa: (va - offset) as *mut c_void,
        ByteCount: len as u32,
        ByteOffset: offset as u32,
    };
    // SAFETY: `mdl` is a fresh allocation sized and aligned for the header.
    unsafe { mdl.write(header) };
    let pfns = ndkpi::mdl_pfn_array(mdl);
    for i in 0..pages {
        let pfn = ((va - offset) >> PAGE_SHIFT) + i;
        // SAFETY: the allocation holds `pages` PFNs after the header and
        // `i < pages`, so the slot is in bounds.
        let slot = unsafe { pfns.add(i) };
        // SAFETY: in bounds (above) and aligned like the MDL.
        unsafe { slot.write(pfn) };
    }
    mdl
}

/// Describes `length` bytes at `va` with an MDL chain, or returns NULL for a
/// null address, a zero length, a range that wraps, or exhausted memory.
/// The memory itself is not touched; it must stay valid while the MDL (and
/// any registration made from it) is in use.
#[unsafe(no_mangle)]
pub extern "C" fn RsNdkAllocateMdl(va: *mut c_void, length: usize) -> *mut MDL {
    let start = va as usize;
    if start == 0 || length == 0 || start.checked_add(length).is_none() {
        return ptr::null_mut();
    }
    let page = PAGE_SIZE;
    let max_bytes = MAX_PAGES_PER_MDL * page;
    let mut head: *mut MDL = ptr::null_mut();
    let mut tail: *mut MDL = ptr::null_mut();
    let mut at = start;
    let end = start + length;
    while at < end {
        // Each MDL but the last ends on a page boundary.
        let limit = (at - at % page) + max_bytes;
        let piece = end.min(limit) - at;
        let mdl = allocate_one(at, piece);
        if mdl.is_null() {
            // SAFETY: `head` is null or a chain this function built.
            unsafe { RsNdkFreeMdl(head) };
            return ptr::null_mut();
        }
        if tail.is_null() {
            head = mdl;
        } else {
            // SAFETY: `tail` is the last MDL of the chain being built.
            unsafe { (*tail).Next = mdl };
        }
        tail = mdl;
        at += piece;
    }
    head
}

/// Frees a chain made by [`RsNdkAllocateMdl`]. NULL is ignored.
///
/// # Safety
/// `mdl` must be null or a chain returned by [`RsNdkAllocateMdl`] that was
/// not freed yet and is no longer used by any registration or mapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RsNdkFreeMdl(mdl: *mut MDL) {
    let mut next = mdl;
    while !next.is_null() {
        let current = next;
        // SAFETY: `current` is an MDL of a chain we allocated (contract).
        let header = unsafe { current.read() };
        next = header.Next;
        let pages = (header.Size as usize - size_of::<MDL>()) / size_of::<PFN_NUMBER>();
        if let Some(layout) = layout(pages) {
            // SAFETY: allocated by `allocate_one` with this same layout
            // (recomputed from the size it recorded).
            unsafe { dealloc(current.cast(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(mdl: *mut MDL) -> Vec<MDL> {
        let mut out = Vec::new();
        let mut p = mdl;
        while !p.is_null() {
            // SAFETY: a chain built by RsNdkAllocateMdl in this test.
            let m = unsafe { p.read() };
            p = m.Next;
            out.push(m);
        }
        out
    }

    #[test]
    fn small_buffer_is_one_mdl_with_host_pfns() {
        let mut buf = vec![0u8; 10_000];
        let va = buf.as_mut_ptr();
        let mdl = RsNdkAllocateMdl(va.cast(), buf.len());
        let links = chain(mdl);
        assert_eq!(links.len(), 1);
        let m = &links[0];
        assert_eq!(m.ByteCount as usize, buf.len());
        assert_eq!(m.StartVa as usize + m.ByteOffset as usize, va as usize);
        let pages = (m.ByteOffset as usize + buf.len()).div_ceil(4096);
        let pfns = ndkpi::mdl_pfn_array(mdl);
        for i in 0..pages {
            // SAFETY: the MDL lists `pages` PFNs.
            let slot = unsafe { pfns.add(i) };
            // SAFETY: in bounds and initialised.
            let pfn = unsafe { slot.read() };
            assert_eq!(pfn, (m.StartVa as usize >> 12) + i);
        }
        // SAFETY: built above, freed once.
        unsafe { RsNdkFreeMdl(mdl) };
    }

    #[test]
    fn long_buffer_is_a_contiguous_chain() {
        let len = 40 << 20;
        let mut buf = vec![0u8; len];
        let mdl = RsNdkAllocateMdl(buf.as_mut_ptr().cast(), len);
        let links = chain(mdl);
        assert!(links.len() > 1);
        let total: usize = links.iter().map(|m| m.ByteCount as usize).sum();
        assert_eq!(total, len);
        for w in links.windows(2) {
            let end = w[0].StartVa as usize + w[0].ByteOffset as usize + w[0].ByteCount as usize;
            assert_eq!(
                end,
                w[1].StartVa as usize + w[1].ByteOffset as usize,
                "virtually contiguous"
            );
            assert_eq!(end % 4096, 0);
        }
        // SAFETY: built above, freed once.
        unsafe { RsNdkFreeMdl(mdl) };
    }

    #[test]
    fn bad_arguments_give_null() {
        assert!(RsNdkAllocateMdl(ptr::null_mut(), 10).is_null());
        let mut b = [0u8; 4];
        assert!(RsNdkAllocateMdl(b.as_mut_ptr().cast(), 0).is_null());
        assert!(RsNdkAllocateMdl(usize::MAX as *mut c_void, 2).is_null());
        // SAFETY: null is ignored.
        unsafe { RsNdkFreeMdl(ptr::null_mut()) };
    }
}

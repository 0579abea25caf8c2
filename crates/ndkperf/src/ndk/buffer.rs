//! Page-aligned host buffers and the MDLs that describe them.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use host::{RsNdkAllocateMdl, RsNdkFreeMdl};
use ndkpi::{MDL, PAGE_SIZE, PFN_NUMBER};

use crate::error::{Error, Result};

/// A zeroed, page-aligned heap buffer whose address the adapter may use.
#[derive(Debug)]
pub struct Buffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory; the device's concurrent
// accesses are ordered by the NDK completion protocol (module docs).
unsafe impl Send for Buffer {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// `len` zeroed bytes (rounded up to whole pages), page aligned.
    pub fn new(len: usize) -> Result<Self> {
        let rounded = len
            .max(1)
            .checked_next_multiple_of(PAGE_SIZE)
            .ok_or_else(|| Error::msg(format!("cannot allocate {len} bytes")))?;
        let layout = Layout::from_size_align(rounded, PAGE_SIZE)
            .map_err(|_| Error::msg(format!("cannot allocate {len} bytes")))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw)
            .ok_or_else(|| Error::msg(format!("out of memory allocating {len} bytes")))?;
        Ok(Self { ptr, layout })
    }

    /// Length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Never: a buffer has at least one page.
    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }

    /// The buffer's address (what the adapter and the peer see).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// The start as a raw pointer.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Reads `len` bytes at `offset`. No posted operation may be writing
    /// them (module docs of `ndk`).
    pub fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len()));
        // SAFETY: in bounds (checked above) of our live allocation; the
        // device does not write this range now (the protocol rule above).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().wrapping_add(offset), len) }
    }

    /// Writes access to `len` bytes at `offset`. No posted operation may
    /// be using them.
    pub fn bytes_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len()));
        // SAFETY: in bounds of our allocation, exclusively borrowed, and
        // not in use by the device (the protocol rule above).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().wrapping_add(offset), len) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// An MDL chain describing (part of) a buffer, from `RsNdkAllocateMdl`
/// (whose page numbers are virtual, `va >> 12`, as librsndk reads them;
/// a bottled driver's are shifted to the bottle's physical pages).
#[derive(Debug)]
pub struct Mdl {
    raw: NonNull<MDL>,
}

// SAFETY: the MDL is plain memory owned by this value.
unsafe impl Send for Mdl {}

impl Mdl {
    /// Describes `len` bytes at `offset` of `buffer`, each page number
    /// being the page's virtual one plus `pfn_offset` (the adapter's
    /// [`Adapter::pfn_offset`](super::Adapter::pfn_offset)). The buffer
    /// must outlive the MDL and any registration made from it.
    pub fn new(buffer: &Buffer, offset: usize, len: usize, pfn_offset: u64) -> Result<Self> {
        assert!(
            offset
                .checked_add(len)
                .is_some_and(|end| end <= buffer.len())
        );
        let va = buffer.as_ptr().wrapping_add(offset);
        let raw = RsNdkAllocateMdl(va.cast(), len);
        let mdl = NonNull::new(raw)
            .map(|raw| Self { raw })
            .ok_or_else(|| Error::msg(format!("RsNdkAllocateMdl failed for {len} bytes")))?;
        if pfn_offset != 0 {
            mdl.shift_page_numbers(pfn_offset);
        }
        Ok(mdl)
    }

    /// Adds `pages` to every page number of the chain.
    fn shift_page_numbers(&self, pages: u64) {
        let mut at = self.raw.as_ptr();
        while !at.is_null() {
            // SAFETY: `at` is an MDL of the chain RsNdkAllocateMdl built,
            // owned by `self` and not shared with a provider yet.
            let header = unsafe { &*at };
            let count =
                (header.ByteOffset as usize + header.ByteCount as usize).div_ceil(PAGE_SIZE);
            let pfns = ndkpi::mdl_pfn_array(at);
            for i in 0..count {
                // SAFETY: RsNdkAllocateMdl sized the array for the span
                // of ByteOffset + ByteCount, so slot `i < count` is in it.
                let slot = unsafe { pfns.add(i) };
                // SAFETY: in bounds (above), aligned like the MDL, ours.
                unsafe { *slot += pages as PFN_NUMBER };
            }
            at = header.Next;
        }
    }

    /// The chain's head.
    pub fn as_ptr(&self) -> *mut MDL {
        self.raw.as_ptr()
    }
}

impl Drop for Mdl {
    fn drop(&mut self) {
        // SAFETY: a chain from RsNdkAllocateMdl, freed once; its owner
        // (a Region) closes the MR before dropping the MDL.
        unsafe { RsNdkFreeMdl(self.raw.as_ptr()) };
    }
}

//! The DMA side of host memory as a Windows consumer describes it: MDL
//! chains whose page frame numbers the provider turns into the logical
//! addresses the device reads and writes, page-aligned buffers to
//! describe, and the logical address of a host address as the device under
//! test sees it (the host's own virtual address, or its physical one in
//! the kernel bottle).

use std::ptr;

use ndkpi::{MDL, MDL_PAGES_LOCKED, PVOID};

thread_local! {
    /// Added to every page frame number an [`Mdl`] built on this thread
    /// holds ([`set_pfn_offset`]).
    static PFN_OFFSET: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Sets what is added, on this thread, to every page frame number an
/// [`Mdl`] holds: 0 on the host (page frame number = virtual address >>
/// 12), the bottle's physical offset in pages for a bottled adapter (the
/// harness sets it when it opens the adapter under test).
pub fn set_pfn_offset(pages: u64) {
    PFN_OFFSET.with(|o| o.set(pages));
}

/// This thread's [`PFN_OFFSET`].
fn pfn_offset() -> u64 {
    PFN_OFFSET.with(std::cell::Cell::get)
}

/// The logical (device-visible) address of host memory at `va` for the
/// adapter this thread set up last: `va` on the host, its physical
/// address in the bottle.
pub fn logical_of(va: u64) -> u64 {
    va + (pfn_offset() << 12)
}

/// An MDL chain describing host memory the way Windows would (page frame
/// number = virtual address >> 12 on the host, plus the bottle's physical
/// offset for a bottled adapter: see [`set_pfn_offset`]).
#[derive(Debug)]
pub struct Mdl {
    /// Each MDL: a 48-byte header followed by its PFNs, as u64 words.
    parts: Vec<Vec<u64>>,
}

impl Mdl {
    /// One MDL for `len` bytes at `va`.
    pub fn new(va: u64, len: u32) -> Self {
        Self::chain(&[(va, len)])
    }

    /// A chain of MDLs, linked in order.
    pub fn chain(parts: &[(u64, u32)]) -> Self {
        let mut built: Vec<Vec<u64>> = parts
            .iter()
            .map(|&(va, len)| {
                let start = va & !0xfff;
                let offset = va & 0xfff;
                let pages = if len == 0 {
                    0
                } else {
                    ((offset + u64::from(len) - 1) >> 12) + 1
                };
                let header_words = size_of::<MDL>() / 8;
                let mut words = vec![0u64; header_words + pages as usize];
                let mdl = MDL {
                    Next: ptr::null_mut(),
                    Size: (size_of::<MDL>() + 8 * pages as usize) as i16,
                    MdlFlags: MDL_PAGES_LOCKED,
                    Process: ptr::null_mut(),
                    MappedSystemVa: ptr::null_mut(),
                    StartVa: start as PVOID,
                    ByteCount: len,
                    ByteOffset: offset as u32,
                };
                // SAFETY: `words` starts with room for an MDL, 8-aligned.
                unsafe { words.as_mut_ptr().cast::<MDL>().write(mdl) };
                for i in 0..pages {
                    words[header_words + i as usize] = (start >> 12) + i + pfn_offset();
                }
                words
            })
            .collect();
        for i in (0..built.len().saturating_sub(1)).rev() {
            let next = built[i + 1].as_mut_ptr().cast::<MDL>();
            // SAFETY: `built[i]` starts with an MDL we wrote above.
            unsafe { (*built[i].as_mut_ptr().cast::<MDL>()).Next = next };
        }
        Self { parts: built }
    }

    /// The first MDL of the chain, as the provider takes it.
    pub fn ptr(&mut self) -> *mut MDL {
        self.parts[0].as_mut_ptr().cast()
    }

    /// Overwrites one PFN (to build a non-contiguous physical layout);
    /// `pfn` is the host's (virtual address >> 12).
    pub fn set_pfn(&mut self, part: usize, index: usize, pfn: u64) {
        self.parts[part][size_of::<MDL>() / 8 + index] = pfn + pfn_offset();
    }
}

/// A page-aligned host buffer.
#[derive(Debug)]
pub struct Pages {
    raw: Vec<u8>,
    offset: usize,
    len: usize,
}

impl Pages {
    /// `pages` zeroed pages.
    pub fn new(pages: usize) -> Self {
        let raw = vec![0u8; (pages + 1) * 4096];
        let offset = (4096 - (raw.as_ptr() as usize % 4096)) % 4096;
        Self {
            raw,
            offset,
            len: pages * 4096,
        }
    }

    /// The address of the first page.
    pub fn addr(&self) -> u64 {
        self.raw.as_ptr() as u64 + self.offset as u64
    }

    /// The pages' bytes.
    pub fn bytes(&mut self) -> &mut [u8] {
        &mut self.raw[self.offset..self.offset + self.len]
    }
}

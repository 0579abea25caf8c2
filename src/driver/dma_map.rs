//! The system mappings of registered memory.
//!
//! What an NDK registration describes (an MR's pages, a LAM's, a
//! fast-register page list) is mapped into system space once, when the
//! registration is made (`NdkRegisterMr`, `NdkBuildLAM`,
//! `NdkInitializeFastRegisterMr`, all at `<= DISPATCH_LEVEL`, where
//! `MmMapLockedPagesSpecifyCache` is legal), and unmapped when it goes
//! (`NdkDeregisterMr`, `NdkReleaseLAM`, the MR's close). The device's
//! copies ([`super::dma::KernelDma`]) only look pages up here, so the
//! per-packet path makes no mapping call: nothing there for Driver
//! Verifier's low-resources simulation to fail, and no TLB-flush IPI per
//! packet. A failed mapping fails the registration with
//! `STATUS_INSUFFICIENT_RESOURCES`, a status each of those calls
//! documents.
//!
//! Each registration's pages are mapped through driver-owned MDLs, one
//! per run of consecutive page frames of at most [`CHUNK_PAGES`] pages
//! (an MDL's `Size` is a `CSHORT`). One MDL per registration would do on
//! Windows, which maps any page list into one range; per run keeps the
//! kernel bottle able to check it (it aliases nothing, so it maps runs
//! only), at the cost of more MDLs for fragmented memory, all made when
//! the registration is. The MDLs are built as
//! [`super::dma`] builds its mapping MDLs: the PFNs of pages their owner
//! keeps locked for the registration's life, `MDL_PAGES_LOCKED` set while
//! they describe them. The table is one for the driver (physical memory
//! is), under one kernel spin lock that a copy holds while it uses a
//! mapping, so an unmapping waits for the copies in flight.

use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};

use ndis::{IoAllocateMdl, IoFreeMdl, KSPIN_LOCK, KeAcquireSpinLockRaiseToDpc, KeReleaseSpinLock};
use ndkpi::{MDL, MDL_PAGES_LOCKED, PAGE_SHIFT, PAGE_SIZE, mdl_pfn_array};

use super::dma::map_locked_pages;

/// Pages one mapping MDL describes at most (its `Size`, a `CSHORT`,
/// covers the header and 8 bytes per page).
const CHUNK_PAGES: usize = 2048;
/// Page-aligned stand-in virtual address the mapping MDLs are built over;
/// only its page offset (0) is ever used.
const STUB_VA: usize = 0x10_0000;

/// One mapped page of a registration.
#[derive(Clone, Copy, Debug)]
struct Page {
    pfn: u64,
    owner: usize,
    va: usize,
}

/// One mapping MDL of a registration and where it is mapped.
#[derive(Debug)]
struct Chunk {
    owner: usize,
    mdl: NonNull<MDL>,
    va: *mut u8,
}

#[derive(Debug)]
struct Table {
    /// Sorted by (pfn, owner).
    pages: Vec<Page>,
    chunks: Vec<Chunk>,
}

impl Table {
    /// Frees the table's memory when nothing is registered, so that none
    /// is left behind at unload.
    fn free_if_empty(&mut self) {
        if self.chunks.is_empty() {
            self.pages = Vec::new();
            self.chunks = Vec::new();
        }
    }
}

/// The driver's table of registered mappings.
pub struct Mappings {
    lock: UnsafeCell<KSPIN_LOCK>,
    table: UnsafeCell<Table>,
}

// SAFETY: `table` is only touched with `lock` held (at DISPATCH_LEVEL);
// the MDLs and mappings it names are the driver's, usable from any
// processor.
unsafe impl Sync for Mappings {}

/// The one table.
pub static MAPPINGS: Mappings = Mappings {
    lock: UnsafeCell::new(0),
    table: UnsafeCell::new(Table {
        pages: Vec::new(),
        chunks: Vec::new(),
    }),
};

impl Mappings {
    /// Runs `f` on the table with the spin lock held.
    fn locked<R>(&self, f: impl FnOnce(&mut Table) -> R) -> R {
        // SAFETY: a valid spin lock (static, initialised to 0), acquired at
        // <= DISPATCH_LEVEL (every caller's IRQL).
        let old = unsafe { KeAcquireSpinLockRaiseToDpc(self.lock.get()) };
        // SAFETY: the lock is held: nobody else touches the table.
        let r = f(unsafe { &mut *self.table.get() });
        // SAFETY: acquired above, released once, with its IRQL.
        unsafe { KeReleaseSpinLock(self.lock.get(), old) };
        r
    }

    /// Maps the pages `pages` yields for `owner`, replacing a mapping
    /// `owner` had; false if the system had no resources for it (then
    /// nothing of it stays).
    pub fn map(&self, owner: usize, pages: &mut dyn ExactSizeIterator<Item = u64>) -> bool {
        self.unmap(owner);
        let count = pages.len();
        if count == 0 {
            return true;
        }
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut new_pages: Vec<Page> = Vec::new();
        // At worst one chunk per page (no two of them adjacent).
        if chunks.try_reserve_exact(count).is_err() || new_pages.try_reserve_exact(count).is_err() {
            return false;
        }
        for pfn in pages.take(count) {
            new_pages.push(Page {
                pfn: pfn >> PAGE_SHIFT,
                owner,
                va: 0,
            });
        }
        for run in new_pages.chunk_by_mut(|a, b| b.pfn == a.pfn + 1) {
            for part in run.chunks_mut(CHUNK_PAGES) {
                let Some(chunk) = map_chunk(owner, part) else {
                    release(&chunks);
                    return false;
                };
                for (i, page) in part.iter_mut().enumerate() {
                    page.va = chunk.va as usize + i * PAGE_SIZE;
                }
                chunks.push(chunk);
            }
        }
        let added = self.locked(|table| {
            if table.pages.try_reserve(new_pages.len()).is_err()
                || table.chunks.try_reserve(chunks.len()).is_err()
            {
                table.free_if_empty();
                return false;
            }
            table.pages.extend_from_slice(&new_pages);
            table.pages.sort_unstable_by_key(|p| (p.pfn, p.owner));
            table.chunks.append(&mut chunks);
            true
        });
        if !added {
            release(&chunks);
        }
        added
    }

    /// Unmaps what `owner` mapped (nothing if it has no mapping).
    pub fn unmap(&self, owner: usize) {
        self.locked(|table| {
            if !table.chunks.iter().any(|c| c.owner == owner) {
                return;
            }
            table.pages.retain(|p| p.owner != owner);
            table.chunks.retain(|c| {
                if c.owner != owner {
                    return true;
                }
                // SAFETY: a chunk `map_chunk` mapped and the table held
                // alone, now out of it; no copy uses it (the lock is
                // held); at DISPATCH_LEVEL, where unmapping is legal.
                unsafe { unmap_chunk(c) };
                false
            });
            table.free_if_empty();
        });
    }

    /// Runs `f(system address, offset, bytes)` over the pages of `len`
    /// bytes at logical address `addr`, in order, as far as they are
    /// mapped, with the lock held (so no mapping goes meanwhile); the
    /// bytes done (less than `len` if a page is not mapped).
    pub fn with_mapped(
        &self,
        addr: u64,
        len: usize,
        f: &mut dyn FnMut(*mut u8, usize, usize),
    ) -> usize {
        self.locked(|table| {
            if table.pages.is_empty() {
                return 0;
            }
            let mut done = 0;
            while done < len {
                let at = addr + done as u64;
                let offset = (at % PAGE_SIZE as u64) as usize;
                let n = (len - done).min(PAGE_SIZE - offset);
                let pfn = at >> PAGE_SHIFT;
                let i = table.pages.partition_point(|p| p.pfn < pfn);
                let Some(page) = table.pages.get(i).filter(|p| p.pfn == pfn) else {
                    break;
                };
                f((page.va + offset) as *mut u8, done, n);
                done += n;
            }
            done
        })
    }
}

/// Maps `pages` (by their PFNs) through a new mapping MDL of `owner`.
fn map_chunk(owner: usize, pages: &[Page]) -> Option<Chunk> {
    let bytes = pages.len() * PAGE_SIZE;
    // SAFETY: IoAllocateMdl only computes the MDL's size from the (never
    // dereferenced) address and length; no IRP.
    let mdl = unsafe { IoAllocateMdl(STUB_VA as *mut _, bytes as u32, 0, 0, ptr::null_mut()) };
    let mdl = NonNull::new(mdl)?;
    let array = mdl_pfn_array(mdl.as_ptr());
    for (i, page) in pages.iter().enumerate() {
        // SAFETY: the MDL was allocated for `pages.len()` pages.
        unsafe { array.wrapping_add(i).write(page.pfn as usize) };
    }
    // SAFETY: ours, fresh from IoAllocateMdl.
    let header = unsafe { &mut *mdl.as_ptr() };
    header.ByteCount = bytes as u32;
    header.ByteOffset = 0;
    // It describes pages their owner keeps locked for the registration's
    // life (see `super::dma`); cleared again before the MDL is freed.
    header.MdlFlags |= MDL_PAGES_LOCKED;
    // SAFETY: a locked-pages MDL describing resident pages, not mapped.
    let Some(va) = (unsafe { map_locked_pages(mdl.as_ptr()) }) else {
        header.MdlFlags &= !MDL_PAGES_LOCKED;
        // SAFETY: from IoAllocateMdl, not mapped, not marked locked.
        unsafe { IoFreeMdl(mdl.as_ptr()) };
        return None;
    };
    Some(Chunk { owner, mdl, va })
}

/// Unmaps and frees a chunk's MDL.
///
/// # Safety
/// `chunk` was made by [`map_chunk`], is mapped, and nothing uses the
/// mapping any more.
unsafe fn unmap_chunk(chunk: &Chunk) {
    let mdl = chunk.mdl.as_ptr();
    // SAFETY: per the contract; it clears MDL_MAPPED_TO_SYSTEM_VA.
    unsafe { ndis::MmUnmapLockedPages(chunk.va.cast(), mdl) };
    // SAFETY: ours, unmapped now.
    unsafe { (*mdl).MdlFlags &= !MDL_PAGES_LOCKED };
    // SAFETY: from IoAllocateMdl, neither mapped nor marked locked.
    unsafe { IoFreeMdl(mdl) };
}

/// Unmaps chunks that never made it into the table.
fn release(chunks: &[Chunk]) {
    for chunk in chunks {
        // SAFETY: made by `map_chunk` for a mapping that failed; nothing
        // else knows it.
        unsafe { unmap_chunk(chunk) };
    }
}

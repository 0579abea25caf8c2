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
use core::sync::atomic::{AtomicU64, Ordering};

use ndkpi::{PAGE_SHIFT, PAGE_SIZE};

use super::kit::kernel::SpinLock;
use super::kit::memory::{OwnedMapping, PageMdl, View};

/// Pages one mapping MDL describes at most (its `Size`, a `CSHORT`,
/// covers the header and 8 bytes per page).
const CHUNK_PAGES: usize = 2048;

/// One mapped page of a registration: its frame, its owner, and where it
/// is mapped (its chunk, and its page index there).
#[derive(Clone, Copy, Debug)]
struct Page {
    pfn: u64,
    owner: usize,
    chunk: u64,
    index: usize,
}

/// One mapping MDL of a registration and where it is mapped.
#[derive(Debug)]
struct Chunk {
    id: u64,
    owner: usize,
    mapping: OwnedMapping,
}

#[derive(Debug)]
struct Table {
    /// Sorted by (pfn, owner).
    pages: Vec<Page>,
    /// Every chunk, sorted by id.
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
    table: SpinLock<Table>,
}

impl core::fmt::Debug for Mappings {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Mappings").finish_non_exhaustive()
    }
}

/// The one table.
pub static MAPPINGS: Mappings = Mappings {
    table: SpinLock::new(Table {
        pages: Vec::new(),
        chunks: Vec::new(),
    }),
};

/// The id the next chunk gets (ids only grow).
static NEXT_CHUNK: AtomicU64 = AtomicU64::new(0);

impl Mappings {
    /// Runs `f` on the table with the spin lock held.
    fn locked<R>(&self, f: impl FnOnce(&mut Table) -> R) -> R {
        self.table.locked(f)
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
                chunk: 0,
                index: 0,
            });
        }
        for run in new_pages.chunk_by_mut(|a, b| b.pfn == a.pfn + 1) {
            for part in run.chunks_mut(CHUNK_PAGES) {
                let Some(chunk) = map_chunk(owner, part) else {
                    // Drops (unmaps and frees) the chunks made so far.
                    return false;
                };
                for (i, page) in part.iter_mut().enumerate() {
                    page.chunk = chunk.id;
                    page.index = i;
                }
                chunks.push(chunk);
            }
        }
        self.locked(|table| {
            if table.pages.try_reserve(new_pages.len()).is_err()
                || table.chunks.try_reserve(chunks.len()).is_err()
            {
                table.free_if_empty();
                // `chunks` goes when this returns: unmapped and freed.
                return false;
            }
            table.pages.extend_from_slice(&new_pages);
            table.pages.sort_unstable_by_key(|p| (p.pfn, p.owner));
            table.chunks.append(&mut chunks);
            table.chunks.sort_unstable_by_key(|c| c.id);
            true
        })
    }

    /// Unmaps what `owner` mapped (nothing if it has no mapping).
    pub fn unmap(&self, owner: usize) {
        self.locked(|table| {
            if !table.chunks.iter().any(|c| c.owner == owner) {
                return;
            }
            table.pages.retain(|p| p.owner != owner);
            // The chunks out of the table are unmapped and freed here, the
            // lock held: no copy uses them; at DISPATCH_LEVEL, where
            // unmapping is legal.
            table.chunks.retain(|c| c.owner != owner);
            table.free_if_empty();
        });
    }

    /// Runs `f(window, offset, at, n)` over the pages of `len` bytes at
    /// logical address `addr`, in order, as far as they are mapped (`n`
    /// bytes at `offset` of `window` are bytes `at..at + n` of the range),
    /// with the lock held (so no mapping goes meanwhile); the bytes done
    /// (less than `len` if a page is not mapped, or `f` could not copy).
    pub fn with_mapped(
        &self,
        addr: u64,
        len: usize,
        f: &mut dyn FnMut(View<'_>, usize, usize, usize) -> bool,
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
                let Ok(c) = table.chunks.binary_search_by_key(&page.chunk, |c| c.id) else {
                    break;
                };
                let window = table.chunks[c].mapping.view();
                if !f(window, page.index * PAGE_SIZE + offset, done, n) {
                    break;
                }
                done += n;
            }
            done
        })
    }
}

/// Maps `pages` (by their PFNs) through a new mapping MDL of `owner`.
fn map_chunk(owner: usize, pages: &[Page]) -> Option<Chunk> {
    let pfns = pages.iter().map(|p| p.pfn);
    let mapping = PageMdl::allocate(pages.len())?.map_owned(pfns, pages.len() * PAGE_SIZE)?;
    Some(Chunk {
        id: NEXT_CHUNK.fetch_add(1, Ordering::Relaxed),
        owner,
        mapping,
    })
}

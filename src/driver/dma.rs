//! Device access to host memory for the software RNIC.
//!
//! A logical address is a physical address: the "device" is the CPU, with
//! no IOMMU between it and memory (rsndk asks NDIS for no DMA adapter).
//! The provider turns a consumer's MDL page frame numbers into logical
//! addresses with `pfn << PAGE_SHIFT` ([`super::platform`]), so the engine
//! names consumer memory by physical address. Every page an NDK consumer
//! registers is locked by the consumer's own MDL for the registration's
//! life (the NDK contract); that is what makes mapping it here sound.
//!
//! To copy, a request's pages are looked up in the mappings every
//! registration made when it was registered ([`super::dma_map`]): the
//! per-packet path maps nothing. Only a logical address outside every
//! registration (which a consumer can only make up from a PFN, not get
//! from `NdkBuildLAM` or an MR) is mapped for the copy alone through one
//! of a few driver-owned mapping MDLs (`MmMapLockedPagesSpecifyCache`,
//! legal at `DISPATCH_LEVEL`), copied, and unmapped. The processor stays
//! at `DISPATCH_LEVEL` while it owns a mapping MDL, so an owner is never
//! preempted and waiting for one is a short spin.
//!
//! What the documentation allows, and which rule this relies on. MSDN
//! knows three ways to get an MDL of locked pages: `IoAllocateMdl` +
//! `MmBuildMdlForNonPagedPool` for non-paged pool (never mapped again:
//! `MappedSystemVa` is the pool address); `MmProbeAndLockPages` /
//! `MmUnlockPages` for pageable memory, which lock the pages themselves;
//! and an MDL the driver describes itself, through the documented fields
//! (`ByteCount`, `ByteOffset`, `StartVa` and the PFN array
//! `MmGetMdlPfnArray` returns), for pages that stay locked by their
//! owner for as long as the MDL names them. `MmMapLockedPagesSpecifyCache`
//! asks only that "this MDL must describe physical pages that are locked
//! down". rsndk relies on the third: the pages belong to consumer MDLs
//! locked for the life of their registration (the NDK contract), and
//! `IoBuildPartialMdl`, the packaged form of the same rule, needs the
//! consumer's MDL, which the device no longer has (it works by logical
//! address). So a mapping MDL carries `MDL_PAGES_LOCKED` exactly while it
//! describes such pages: set when its PFNs are filled, cleared (with the
//! mapping undone by `MmUnmapLockedPages`, which clears
//! `MDL_MAPPED_TO_SYSTEM_VA`) before the slot is released, so the MDL
//! `IoFreeMdl` gets back has neither flag, as one fresh from
//! `IoAllocateMdl`; nothing else of the MDL is touched (the allocator's
//! own flags, `Size` and `MappedSystemVa` are the kernel's).
//!
//! Cost: none per copy for registered memory; for a made-up logical
//! address, a map and unmap (with its TLB flush) per chunk of up to
//! [`MAP_PAGES`] pages.

use hwq::{DmaAccess, DmaFault};
use ndkpi::{PAGE_SHIFT, PAGE_SIZE};

use super::dma_map::MAPPINGS;
use super::irql;
use super::kit::kernel::{Claim, Claimable};
use super::kit::memory::{PageMdl, View};

/// Pages one mapping covers at most.
pub const MAP_PAGES: usize = 16;
/// Mapping MDLs, i.e. processors that can copy at once.
const SLOTS: usize = 8;

/// The software RNIC's [`DmaAccess`] in the kernel.
pub struct KernelDma {
    slots: [Option<Claimable<PageMdl>>; SLOTS],
}

impl core::fmt::Debug for KernelDma {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelDma").finish_non_exhaustive()
    }
}

impl KernelDma {
    /// Allocates the mapping MDLs (`PASSIVE_LEVEL` or `DISPATCH_LEVEL`).
    /// `None` if pool ran out.
    pub fn new() -> Option<Self> {
        // Filled in place, so that an allocation failing midway drops the
        // value and the MDLs already allocated with it.
        let mut dma = Self {
            slots: [const { None }; SLOTS],
        };
        for slot in &mut dma.slots {
            *slot = Some(Claimable::new(PageMdl::allocate(MAP_PAGES)?));
        }
        Some(dma)
    }

    /// Runs `f` on `len` bytes of memory at physical address `addr`,
    /// mapped in chunks of at most [`MAP_PAGES`] pages: `f(window, offset,
    /// at, n)` copies `n` bytes at `offset` of `window`, bytes `at..at + n`
    /// of the range, and answers whether it could.
    fn with_mapped(
        &self,
        addr: u64,
        len: usize,
        mut f: impl FnMut(View<'_>, usize, usize, usize) -> bool,
    ) -> Result<(), DmaFault> {
        let fault = DmaFault { addr, len };
        if addr == 0 || addr.checked_add(len as u64).is_none() {
            return Err(fault);
        }
        // Registered memory (MRs, LAMs, page lists): mapped already.
        let done = MAPPINGS.with_mapped(addr, len, &mut f);
        if done == len {
            return Ok(());
        }
        // The rest names memory outside every registration: only a
        // logical address a consumer made up itself (from a PFN) reaches
        // here, mapped for this copy alone.
        let (addr, len) = (addr + done as u64, len - done);
        let mut f = |window: View<'_>, offset, at, n| f(window, offset, done + at, n);
        let old = irql::raise_to_dispatch();
        let result = self.claim().map_or(Err(fault), |mut slot| {
            let mut done = 0;
            while done < len {
                let at = addr + done as u64;
                let offset = (at % PAGE_SIZE as u64) as usize;
                let chunk = (len - done).min(MAP_PAGES * PAGE_SIZE - offset);
                let bytes = offset + chunk;
                let first = (at - offset as u64) >> PAGE_SHIFT;
                let pfns = (0..bytes.div_ceil(PAGE_SIZE)).map(|i| first + i as u64);
                // The slot is ours (claimed) at DISPATCH_LEVEL and not
                // mapped (every mapping is undone before the next).
                let Some(mapping) = slot.map(pfns, bytes) else {
                    return Err(fault);
                };
                if !f(mapping.view(), offset, done, chunk) {
                    return Err(fault);
                }
                done += chunk;
            }
            Ok(())
        });
        irql::lower(old);
        result
    }

    /// Takes a free mapping MDL, spinning while all are busy (owners run at
    /// DISPATCH_LEVEL and hold one only for a copy).
    fn claim(&self) -> Option<Claim<'_, PageMdl>> {
        loop {
            let mut any = false;
            for slot in self.slots.iter().flatten() {
                any = true;
                if let Some(claim) = slot.try_claim() {
                    return Some(claim);
                }
            }
            if !any {
                return None;
            }
            core::hint::spin_loop();
        }
    }
}

impl DmaAccess for KernelDma {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        if buf.is_empty() {
            return Ok(());
        }
        self.with_mapped(addr, buf.len(), |window, offset, at, n| {
            window.read(offset, &mut buf[at..at + n])
        })
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        if data.is_empty() {
            return Ok(());
        }
        self.with_mapped(addr, data.len(), |window, offset, at, n| {
            window.write(offset, &data[at..at + n])
        })
    }
}

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

use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, Ordering};

use hwq::{DmaAccess, DmaFault};
use ndis::{
    IoAllocateMdl, IoFreeMdl, KernelMode, MdlMappingNoExecute, MmCached,
    MmMapLockedPagesSpecifyCache, MmUnmapLockedPages, NormalPagePriority,
};
use ndkpi::{MDL, MDL_PAGES_LOCKED, PAGE_SHIFT, PAGE_SIZE, mdl_pfn_array};

use super::dma_map::MAPPINGS;
use super::irql;

/// Pages one mapping covers at most.
pub const MAP_PAGES: usize = 16;
/// Mapping MDLs, i.e. processors that can copy at once.
const SLOTS: usize = 8;
/// Page-aligned stand-in virtual address the mapping MDLs are built over;
/// only its page offset (0) is ever used.
const STUB_VA: usize = 0x10_0000;

/// One mapping MDL and its owner flag.
struct Slot {
    mdl: NonNull<MDL>,
    busy: AtomicBool,
}

/// The software RNIC's [`DmaAccess`] in the kernel.
pub struct KernelDma {
    slots: [Option<Slot>; SLOTS],
}

impl core::fmt::Debug for KernelDma {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelDma").finish_non_exhaustive()
    }
}

// SAFETY: the MDLs are owned by this value and used by one processor at a
// time (the `busy` flag, taken with acquire and released with release).
unsafe impl Send for KernelDma {}
// SAFETY: `&KernelDma` only reads `slots` (never written after `new`)
// and takes an MDL through its `busy` flag (acquire compare-exchange,
// release store), so each MDL is used by one processor at a time.
unsafe impl Sync for KernelDma {}

impl KernelDma {
    /// Allocates the mapping MDLs (`PASSIVE_LEVEL` or `DISPATCH_LEVEL`).
    /// `None` if pool ran out.
    pub fn new() -> Option<Self> {
        // Filled in place, so that an allocation failing midway drops the
        // value and its `Drop` frees the MDLs already allocated.
        let mut dma = Self {
            slots: [const { None }; SLOTS],
        };
        for slot in &mut dma.slots {
            // SAFETY: IoAllocateMdl only computes the MDL's size from the
            // (never dereferenced) address and length; no IRP.
            let mdl = unsafe {
                IoAllocateMdl(
                    STUB_VA as *mut _,
                    (MAP_PAGES * PAGE_SIZE) as u32,
                    0,
                    0,
                    ptr::null_mut(),
                )
            };
            *slot = Some(Slot {
                mdl: NonNull::new(mdl)?,
                busy: AtomicBool::new(false),
            });
        }
        Some(dma)
    }

    /// Runs `f` on `len` bytes of memory at physical address `addr`,
    /// mapped in chunks of at most [`MAP_PAGES`] pages.
    fn with_mapped(
        &self,
        addr: u64,
        len: usize,
        mut f: impl FnMut(*mut u8, usize, usize),
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
        let mut f = |va, at, n| f(va, done + at, n);
        let old = irql::raise_to_dispatch();
        let result = self.claim().map_or(Err(fault), |slot| {
            let mut done = 0;
            let mut ok = true;
            while done < len {
                let at = addr + done as u64;
                let offset = (at % PAGE_SIZE as u64) as usize;
                let chunk = (len - done).min(MAP_PAGES * PAGE_SIZE - offset);
                // SAFETY: the slot is ours (claimed) at DISPATCH_LEVEL and
                // not mapped (every mapping is undone before the next).
                let Some(va) =
                    (unsafe { map(slot.mdl.as_ptr(), at - offset as u64, offset + chunk) })
                else {
                    ok = false;
                    break;
                };
                // `va` maps `offset + chunk` bytes.
                f(va.wrapping_add(offset), done, chunk);
                // SAFETY: `va` is this MDL's mapping, made just above.
                unsafe { unmap(slot.mdl.as_ptr(), va) };
                done += chunk;
            }
            slot.busy.store(false, Ordering::Release);
            if ok { Ok(()) } else { Err(fault) }
        });
        irql::lower(old);
        result
    }

    /// Takes a free mapping MDL, spinning while all are busy (owners run at
    /// DISPATCH_LEVEL and hold one only for a copy).
    fn claim(&self) -> Option<&Slot> {
        loop {
            let mut any = false;
            for slot in self.slots.iter().flatten() {
                any = true;
                if slot
                    .busy
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return Some(slot);
                }
            }
            if !any {
                return None;
            }
            core::hint::spin_loop();
        }
    }
}

/// Points `mdl` at the physical pages from page-aligned `base` for `bytes`
/// bytes and maps them; the system address of `base`, or `None` (the MDL
/// then describes nothing locked again).
///
/// # Safety
/// `mdl` is a mapping MDL owned by the caller, neither mapped nor marked
/// locked (fresh from `IoAllocateMdl` or last used through [`unmap`]),
/// allocated for [`MAP_PAGES`] pages; `bytes <= MAP_PAGES * PAGE_SIZE`;
/// the pages are locked by their owner for the duration of the mapping.
unsafe fn map(mdl: *mut MDL, base: u64, bytes: usize) -> Option<*mut u8> {
    let pages = bytes.div_ceil(PAGE_SIZE);
    let pfns = mdl_pfn_array(mdl);
    for i in 0..pages {
        // SAFETY: the PFN array has room for MAP_PAGES entries.
        unsafe {
            pfns.wrapping_add(i)
                .write(((base >> PAGE_SHIFT) as usize) + i);
        };
    }
    // SAFETY: the caller owns the MDL; a plain header update of the
    // documented fields (`StartVa` stays the page-aligned address it was
    // allocated for; only its offset, 0, is meaningful).
    let header = unsafe { &mut *mdl };
    header.ByteCount = bytes as u32;
    header.ByteOffset = 0;
    // The MDL now describes pages locked by their owner (see the module
    // docs); the flag goes again in `unmap` or below.
    header.MdlFlags |= MDL_PAGES_LOCKED;
    // SAFETY: a locked-pages MDL describing resident pages, not mapped.
    let va = unsafe { map_locked_pages(mdl) };
    if va.is_none() {
        // SAFETY: the caller owns `mdl` (contract); `map_locked_pages`
        // failed, so it is not mapped, as `release` requires.
        unsafe { release(mdl) };
    }
    va
}

/// Undoes [`map`]: unmaps `va` and marks the MDL as describing nothing
/// locked, as it was before `map`.
///
/// # Safety
/// `va` is the mapping `map` made of `mdl`, still mapped; the caller
/// owns the MDL.
unsafe fn unmap(mdl: *mut MDL, va: *mut u8) {
    // SAFETY: per the contract; <= DISPATCH_LEVEL. It clears
    // MDL_MAPPED_TO_SYSTEM_VA.
    unsafe { MmUnmapLockedPages(va.cast(), mdl) };
    // SAFETY: per the contract.
    unsafe { release(mdl) };
}

/// Clears `MDL_PAGES_LOCKED` of an unmapped mapping MDL (whose
/// `MDL_MAPPED_TO_SYSTEM_VA` `MmUnmapLockedPages` cleared, or which was
/// never mapped): its pages are their owner's alone again.
///
/// # Safety
/// The caller owns `mdl`, which is not mapped.
unsafe fn release(mdl: *mut MDL) {
    // SAFETY: the caller owns the MDL; a plain flag update.
    unsafe { (*mdl).MdlFlags &= !MDL_PAGES_LOCKED };
}

/// Maps an MDL's locked pages for kernel mode (cached, no-execute); the
/// system address of its first page, or `None` if the system has no
/// mapping to spare (failure returns null: no bugcheck, usable at
/// `DISPATCH_LEVEL`). The mapping belongs to the MDL; its owner undoes it.
///
/// # Safety
/// `mdl` is a valid MDL describing locked, resident pages.
pub(super) unsafe fn map_locked_pages(mdl: *mut MDL) -> Option<*mut u8> {
    // SAFETY: per the contract; kernel mode at or below DISPATCH_LEVEL.
    let va = unsafe {
        MmMapLockedPagesSpecifyCache(
            mdl,
            KernelMode,
            MmCached,
            ptr::null_mut(),
            0,
            NormalPagePriority | MdlMappingNoExecute,
        )
    };
    (!va.is_null()).then_some(va.cast())
}

impl DmaAccess for KernelDma {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let dst = buf.as_mut_ptr();
        self.with_mapped(addr, buf.len(), |src, at, n| {
            // SAFETY: `src` maps `n` bytes; `dst + at` is inside `buf`
            // (`at + n <= buf.len()`), which cannot overlap a mapping.
            unsafe { ptr::copy_nonoverlapping(src, dst.wrapping_add(at), n) };
        })
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        if data.is_empty() {
            return Ok(());
        }
        let src = data.as_ptr();
        self.with_mapped(addr, data.len(), |dst, at, n| {
            // SAFETY: as in `read`, the other way round.
            unsafe { ptr::copy_nonoverlapping(src.wrapping_add(at), dst, n) };
        })
    }
}

impl Drop for KernelDma {
    fn drop(&mut self) {
        for slot in self.slots.iter().flatten() {
            // SAFETY: allocated by IoAllocateMdl in `new`; neither mapped
            // nor marked locked (`unmap` and `map`'s failure path undo both
            // before a slot is released), as IoFreeMdl requires.
            unsafe { IoFreeMdl(slot.mdl.as_ptr()) };
        }
    }
}

//! MDLs and the physical address model.
//!
//! A "physical" address is the virtual address plus [`PHYS_OFFSET`], so
//! a page frame number names a page of this process, and a driver that
//! confuses virtual and physical addresses faults instead of working by
//! luck. Mapping an MDL's locked pages (`MmMapLockedPagesSpecifyCache`)
//! translates its PFNs back; pages that are one virtual run map to that
//! run (the bottle makes no aliases).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use ndkpi::{
    MDL, MDL_MAPPED_TO_SYSTEM_VA, MDL_PAGES_LOCKED, MDL_PARTIAL, MDL_SOURCE_IS_NONPAGED_POOL,
    PVOID, mdl_pfn_array,
};

use crate::export;
use crate::export::Export;
use crate::kernel::cpu::{self, DISPATCH_LEVEL};
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION, UNMODELLED, firewall};
use crate::sync::lock;

/// Physical address = virtual address + this.
pub const PHYS_OFFSET: u64 = 0x1_0000_0000_0000;
const PAGE: usize = 4096;
const MDL_HEADER: usize = size_of::<MDL>();
/// `DRIVER_LEFT_LOCKED_PAGES_IN_PROCESS` (P3 = the MDL, P4 = its pages).
const DRIVER_LEFT_LOCKED_PAGES_IN_PROCESS: u32 = 0xCB;

/// The physical address of a virtual address.
pub fn phys_of(va: usize) -> u64 {
    va as u64 + PHYS_OFFSET
}

/// The virtual address of a physical address (which must be at least
/// [`PHYS_OFFSET`]).
pub fn va_of(pa: u64) -> usize {
    pa.wrapping_sub(PHYS_OFFSET) as usize
}

/// Pages spanned by `len` bytes at `va` (`ADDRESS_AND_SIZE_TO_SPAN_PAGES`).
pub fn span_pages(va: usize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    ((va % PAGE) + len).div_ceil(PAGE)
}

/// MDLs from `IoAllocateMdl`: address → (allocation layout, pages).
static ALLOCATED: Mutex<Option<HashMap<usize, std::alloc::Layout>>> = Mutex::new(None);
/// MDLs mapped by `MmMapLockedPagesSpecifyCache`: MDL → returned address.
static MAPPED: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);
/// MDLs the bottle built itself ([`OwnedMdl`]).
static OWNED: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// Calls of `MmMapLockedPagesSpecifyCache` by the driver so far.
static MAP_CALLS: AtomicU64 = AtomicU64::new(0);

/// How many times the driver called `MmMapLockedPagesSpecifyCache` (in
/// this process): what a test counts to show a path maps nothing.
pub fn map_calls() -> u64 {
    MAP_CALLS.load(Ordering::SeqCst)
}

/// MDLs from `IoAllocateMdl` not yet freed.
pub fn outstanding_mdls() -> usize {
    lock(&ALLOCATED).as_ref().map_or(0, HashMap::len)
}

/// Fills an MDL header for `len` bytes at `va` (`MmInitializeMdl`).
///
/// # Safety
/// `mdl` is writable for the header and `span_pages(va, len)` PFNs.
unsafe fn initialize(mdl: *mut MDL, va: usize, len: usize) {
    let pages = span_pages(va, len);
    // SAFETY: per the contract.
    unsafe {
        mdl.write(MDL {
            Next: std::ptr::null_mut(),
            Size: (MDL_HEADER + pages * 8) as i16,
            MdlFlags: 0,
            Process: std::ptr::null_mut(),
            MappedSystemVa: std::ptr::null_mut(),
            StartVa: (va & !(PAGE - 1)) as PVOID,
            ByteCount: len as u32,
            ByteOffset: (va % PAGE) as u32,
        });
    };
}

/// `IoAllocateMdl` (`<= DISPATCH_LEVEL`).
pub unsafe extern "win64" fn IoAllocateMdl(
    VirtualAddress: PVOID,
    Length: u32,
    SecondaryBuffer: u8,
    ChargeQuota: u8,
    Irp: *mut ndis::IRP,
) -> *mut MDL {
    let _ = ChargeQuota;
    firewall("IoAllocateMdl", || {
        crate::kernel::ke::require_irql_at_most(DISPATCH_LEVEL, "IoAllocateMdl");
        if Length == 0 || verifier::fault_point("IoAllocateMdl") {
            return std::ptr::null_mut();
        }
        let va = VirtualAddress as usize;
        let pages = span_pages(va, Length as usize);
        let Ok(layout) = std::alloc::Layout::from_size_align(MDL_HEADER + pages * 8, 16) else {
            return std::ptr::null_mut();
        };
        #[expect(clippy::cast_ptr_alignment, reason = "the layout is 16-byte aligned")]
        // SAFETY: a non-zero-size layout.
        let mdl = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<MDL>();
        if mdl.is_null() {
            return mdl;
        }
        // SAFETY: fresh memory sized for the header and `pages` PFNs.
        unsafe { initialize(mdl, va, Length as usize) };
        lock(&ALLOCATED)
            .get_or_insert_with(HashMap::new)
            .insert(mdl as usize, layout);
        if !Irp.is_null() {
            // SAFETY: a non-null Irp is a valid IRP of the caller.
            let irp = unsafe { &mut *Irp };
            if SecondaryBuffer == 0 {
                irp.MdlAddress = mdl;
            } else {
                let mut at = irp.MdlAddress;
                if at.is_null() {
                    irp.MdlAddress = mdl;
                } else {
                    // SAFETY: the IRP's MDL chain consists of valid MDLs.
                    while !unsafe { (*at).Next }.is_null() {
                        // SAFETY: `at` is non-null and on the MDL chain of the
                        // caller's valid IRP, which links only valid MDLs.
                        at = unsafe { (*at).Next };
                    }
                    // SAFETY: `at` is the chain's last, valid MDL.
                    unsafe { (*at).Next = mdl };
                }
            }
        }
        mdl
    })
}

/// `IoFreeMdl`: 0xC4/0xB8 if the MDL is still mapped; 0xCB if its pages
/// are still marked locked (never unlocked); 0xC4/0x16 if it did not come
/// from `IoAllocateMdl`.
pub unsafe extern "win64" fn IoFreeMdl(Mdl: *mut MDL) {
    firewall("IoFreeMdl", || {
        let addr = Mdl as usize;
        let Some(layout) = lock(&ALLOCATED)
            .as_ref()
            .and_then(|m| m.get(&addr).copied())
        else {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, 0, addr as u64, 0],
                format!(
                    "IoFreeMdl of {addr:#x}, which IoAllocateMdl did not return (or freed twice)"
                ),
            );
        };
        // SAFETY: an MDL from IoAllocateMdl, still allocated.
        let flags = unsafe { (*Mdl).MdlFlags };
        let mapped = lock(&MAPPED)
            .as_ref()
            .is_some_and(|m| m.contains_key(&addr));
        if mapped || (flags & MDL_MAPPED_TO_SYSTEM_VA != 0 && flags & MDL_PARTIAL == 0) {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0xB8, addr as u64, u64::from(flags as u16), 0],
                format!(
                    "IoFreeMdl of MDL {addr:#x} whose pages are still mapped (flags {flags:#x})"
                ),
            );
        }
        if flags & MDL_PAGES_LOCKED != 0 {
            // SAFETY: `Mdl` is in ALLOCATED (checked above): a live MDL from
            // IoAllocateMdl whose header this copies.
            let header = unsafe { Mdl.read() };
            let pages = span_pages(header.ByteOffset as usize, header.ByteCount as usize);
            verifier::bugcheck(
                DRIVER_LEFT_LOCKED_PAGES_IN_PROCESS,
                [0, 0, addr as u64, pages as u64],
                format!(
                    "IoFreeMdl of MDL {addr:#x} with MDL_PAGES_LOCKED still set: its pages were never unlocked (flags {flags:#x})"
                ),
            );
        }
        lock(&ALLOCATED).as_mut().map(|m| m.remove(&addr));
        crate::kernel::ke::forget_objects_in(addr..addr + layout.size());
        // SAFETY: allocated by IoAllocateMdl with this layout, removed from
        // the table, so freed once.
        unsafe { std::alloc::dealloc(Mdl.cast(), layout) };
    });
}

/// Fills the PFN array of `mdl` from its virtual range, as
/// `MmBuildMdlForNonPagedPool` does.
///
/// # Safety
/// `mdl` is a valid MDL with room for its pages' PFNs.
unsafe fn build_for_nonpaged(mdl: *mut MDL) {
    // SAFETY: per the contract.
    let m = unsafe { &mut *mdl };
    let va = m.StartVa as usize + m.ByteOffset as usize;
    let pages = span_pages(va, m.ByteCount as usize);
    let pfns = mdl_pfn_array(mdl);
    for i in 0..pages {
        let pfn = (phys_of(m.StartVa as usize + i * PAGE) >> 12) as usize;
        // SAFETY: the array has room for `pages` entries.
        unsafe { pfns.wrapping_add(i).write(pfn) };
    }
    m.MappedSystemVa = va as PVOID;
    m.MdlFlags |= MDL_SOURCE_IS_NONPAGED_POOL;
}

/// `MmBuildMdlForNonPagedPool` (`<= DISPATCH_LEVEL`); 0xC4/0x7F on paged
/// pool.
pub unsafe extern "win64" fn MmBuildMdlForNonPagedPool(MemoryDescriptorList: *mut MDL) {
    firewall("MmBuildMdlForNonPagedPool", || {
        let irql =
            crate::kernel::ke::require_irql_at_most(DISPATCH_LEVEL, "MmBuildMdlForNonPagedPool");
        let mdl = MemoryDescriptorList;
        // SAFETY: the caller passes a valid MDL.
        let m = unsafe { &*mdl };
        let va = m.StartVa as usize + m.ByteOffset as usize;
        if let Some(flags) = crate::kernel::pool::block_flags_containing(va, m.ByteCount as usize)
            && flags & crate::kernel::pool::POOL_FLAG_PAGED != 0
        {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [
                    0x7F,
                    u64::from(irql),
                    mdl as u64,
                    u64::from(m.MdlFlags as u16),
                ],
                format!("MmBuildMdlForNonPagedPool on paged pool at {va:#x}"),
            );
        }
        // SAFETY: a valid MDL sized for its range.
        unsafe { build_for_nonpaged(mdl) };
    });
}

/// Whether every page of `va..va+len` is mapped in this process.
fn resident(va: usize, len: usize) -> bool {
    let start = va & !(PAGE - 1);
    let pages = span_pages(va, len).max(1);
    let mut vec = vec![0u8; pages];
    // SAFETY: mincore only inspects the mapping; `vec` has one byte per
    // page.
    unsafe { libc::mincore(start as *mut libc::c_void, pages * PAGE, vec.as_mut_ptr()) == 0 }
}

/// Maps `mdl`'s pages; the system address of its first byte, or null.
///
/// # Safety
/// `mdl` is a valid MDL.
unsafe fn map_locked(mdl: *mut MDL, api: &str) -> *mut u8 {
    // SAFETY: per the contract.
    let m = unsafe { &mut *mdl };
    let flags = m.MdlFlags;
    if flags & MDL_SOURCE_IS_NONPAGED_POOL != 0 {
        return m.MappedSystemVa.cast();
    }
    if flags & MDL_MAPPED_TO_SYSTEM_VA != 0 {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [
                0xB2,
                mdl as u64,
                u64::from(flags as u16),
                u64::from(MDL_MAPPED_TO_SYSTEM_VA as u16),
            ],
            format!("{api} on MDL {:#x}, which is already mapped", mdl as usize),
        );
    }
    if flags & MDL_PAGES_LOCKED == 0 {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [
                0xB3,
                mdl as u64,
                u64::from(flags as u16),
                u64::from(MDL_PAGES_LOCKED as u16),
            ],
            format!(
                "{api} on MDL {:#x}, whose pages are not locked",
                mdl as usize
            ),
        );
    }
    if verifier::fault_point("MmMapLockedPagesSpecifyCache") {
        return std::ptr::null_mut();
    }
    let pages = span_pages(m.ByteOffset as usize, m.ByteCount as usize);
    let pfns = mdl_pfn_array(mdl);
    let mut first_va = 0;
    for i in 0..pages {
        let at = pfns.wrapping_add(i);
        // SAFETY: a locked MDL holds `pages` PFNs after its header.
        let pfn = unsafe { at.read() } as u64;
        let pa = pfn << 12;
        if pa < PHYS_OFFSET || !resident(va_of(pa), PAGE) {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x89, mdl as u64, at as u64, pfn],
                format!(
                    "{api}: MDL {:#x} page {i} has PFN {pfn:#x}, which is not memory",
                    mdl as usize
                ),
            );
        }
        if i == 0 {
            first_va = va_of(pa);
        } else if va_of(pa) != first_va + i * PAGE {
            verifier::bugcheck(
                UNMODELLED,
                [mdl as u64, i as u64, pfn, 0],
                format!(
                    "{api}: MDL {:#x} pages are not one virtual run (the bottle maps no aliases)",
                    mdl as usize
                ),
            );
        }
    }
    let va = first_va + m.ByteOffset as usize;
    m.MappedSystemVa = va as PVOID;
    m.MdlFlags |= MDL_MAPPED_TO_SYSTEM_VA;
    lock(&MAPPED)
        .get_or_insert_with(HashMap::new)
        .insert(mdl as usize, va);
    va as *mut u8
}

/// `MmMapLockedPagesSpecifyCache` for kernel mode.
pub unsafe extern "win64" fn MmMapLockedPagesSpecifyCache(
    MemoryDescriptorList: *mut MDL,
    AccessMode: i8,
    CacheType: i32,
    RequestedAddress: PVOID,
    BugCheckOnFailure: u32,
    Priority: u32,
) -> PVOID {
    let _ = CacheType;
    MAP_CALLS.fetch_add(1, Ordering::SeqCst);
    firewall("MmMapLockedPagesSpecifyCache", || {
        let mdl = MemoryDescriptorList;
        let irql = cpu::current();
        if AccessMode != ndis::KernelMode || !RequestedAddress.is_null() {
            verifier::bugcheck(
                UNMODELLED,
                [mdl as u64, AccessMode as u64, RequestedAddress as u64, 0],
                "MmMapLockedPagesSpecifyCache: user-mode or fixed-address mappings are not modelled",
            );
        }
        if irql > DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x76, u64::from(irql), mdl as u64, AccessMode as u64],
                format!("MmMapLockedPagesSpecifyCache at IRQL {irql}"),
            );
        }
        // SAFETY: the caller passes a valid MDL.
        let flags = unsafe { (*mdl).MdlFlags };
        if BugCheckOnFailure != 0 {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x82, mdl as u64, u64::from(flags as u16), 0],
                "MmMapLockedPagesSpecifyCache with BugCheckOnFailure TRUE",
            );
        }
        if Priority & ndis::MdlMappingNoExecute == 0 {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x2002, mdl as u64, u64::from(Priority), 0],
                "code integrity: MmMapLockedPagesSpecifyCache without MdlMappingNoExecute (executable mapping)",
            );
        }
        // SAFETY: a valid MDL (contract).
        unsafe { map_locked(mdl, "MmMapLockedPagesSpecifyCache") }.cast()
    })
}

/// `MmUnmapLockedPages`.
pub unsafe extern "win64" fn MmUnmapLockedPages(
    BaseAddress: PVOID,
    MemoryDescriptorList: *mut MDL,
) {
    firewall("MmUnmapLockedPages", || {
        let mdl = MemoryDescriptorList;
        let irql = cpu::current();
        if irql > DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x79, u64::from(irql), BaseAddress as u64, mdl as u64],
                format!("MmUnmapLockedPages at IRQL {irql}"),
            );
        }
        let mapped = lock(&MAPPED)
            .as_mut()
            .and_then(|m| m.remove(&(mdl as usize)));
        match mapped {
            None => verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0xB6, mdl as u64, BaseAddress as u64, 0],
                format!(
                    "MmUnmapLockedPages of MDL {:#x}, which is not mapped",
                    mdl as usize
                ),
            ),
            Some(va) if va != BaseAddress as usize => verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, 0, BaseAddress as u64, 0],
                format!(
                    "MmUnmapLockedPages of {:#x}, but MDL {:#x} is mapped at {va:#x}",
                    BaseAddress as usize, mdl as usize
                ),
            ),
            Some(_) => {}
        }
        // SAFETY: a valid, mapped MDL (checked above).
        let m = unsafe { &mut *mdl };
        m.MdlFlags &= !MDL_MAPPED_TO_SYSTEM_VA;
        m.MappedSystemVa = std::ptr::null_mut();
    });
}

/// `MmGetPhysicalAddress`: VA + [`PHYS_OFFSET`] (0 for null).
pub unsafe extern "win64" fn MmGetPhysicalAddress(BaseAddress: PVOID) -> i64 {
    firewall("MmGetPhysicalAddress", || {
        crate::kernel::ke::require_irql_at_most(DISPATCH_LEVEL, "MmGetPhysicalAddress");
        let va = BaseAddress as usize;
        if va == 0 || !resident(va, 1) {
            return 0;
        }
        phys_of(va) as i64
    })
}

/// What `MmGetSystemAddressForMdlSafe` yields: `MappedSystemVa` when the
/// MDL is mapped or describes non-paged pool, else a new mapping (null on
/// failure).
///
/// # Safety
/// `mdl` is a valid MDL of locked pages.
pub unsafe fn system_va(mdl: *mut MDL) -> *mut u8 {
    // SAFETY: per the contract.
    let m = unsafe { &*mdl };
    if m.MdlFlags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL) != 0 {
        return m.MappedSystemVa.cast();
    }
    // SAFETY: per the contract.
    unsafe { map_locked(mdl, "MmGetSystemAddressForMdlSafe") }
}

/// An MDL and its PFN array in harness memory describing harness bytes,
/// built as `MmBuildMdlForNonPagedPool` would (what NDIS hands a
/// driver). Chain several with [`OwnedMdl::set_next`].
#[derive(Debug)]
pub struct OwnedMdl {
    storage: Box<[u64]>,
}

impl OwnedMdl {
    /// Describes `len` bytes at `va` (which must stay valid while the MDL
    /// is used).
    pub fn describe(va: *mut u8, len: usize) -> Self {
        let pages = span_pages(va as usize, len).max(1);
        let words = MDL_HEADER / 8 + pages;
        let mut storage = vec![0u64; words].into_boxed_slice();
        let mdl = storage.as_mut_ptr().cast::<MDL>();
        // SAFETY: `storage` is 8-aligned and sized for the header and PFNs.
        unsafe { initialize(mdl, va as usize, len) };
        // SAFETY: `mdl` was just initialised over `storage`, which has room for
        // the PFNs of its whole range (`pages`); this fills exactly those.
        unsafe { build_for_nonpaged(mdl) };
        lock(&OWNED)
            .get_or_insert_with(HashSet::new)
            .insert(mdl as usize);
        Self { storage }
    }

    /// The MDL.
    pub fn as_ptr(&self) -> *mut MDL {
        self.storage.as_ptr().cast_mut().cast()
    }

    /// Sets the MDL's `Next` link.
    pub fn set_next(&mut self, next: *mut MDL) {
        let mdl = self.storage.as_mut_ptr().cast::<MDL>();
        // SAFETY: our own header.
        unsafe { (*mdl).Next = next };
    }
}

impl Drop for OwnedMdl {
    fn drop(&mut self) {
        let addr = self.storage.as_ptr() as usize;
        lock(&OWNED).as_mut().map(|s| s.remove(&addr));
        lock(&MAPPED).as_mut().map(|m| m.remove(&addr));
    }
}

/// Every mm import.
pub fn exports() -> Vec<Export> {
    vec![
        export!("ntoskrnl.exe", IoAllocateMdl),
        export!("ntoskrnl.exe", IoFreeMdl),
        export!("ntoskrnl.exe", MmBuildMdlForNonPagedPool),
        export!("ntoskrnl.exe", MmMapLockedPagesSpecifyCache),
        export!("ntoskrnl.exe", MmUnmapLockedPages),
        export!("ntoskrnl.exe", MmGetPhysicalAddress),
    ]
}

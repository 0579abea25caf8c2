//! Kernel memory: the global allocator behind `alloc`, fallible boxes,
//! page-aligned buffers, and MDLs that map pages named by frame number.
//!
//! [`KernelAllocator`] replaces wdk-alloc's `WdkAllocator`, which ignores
//! `Layout::align()` (pool gives 16 bytes on x64): a ring or any type with
//! `#[repr(align(64))]` would then be misaligned. Here an alignment above
//! 16 and up to a page is met by allocating at least a page, which pool
//! returns page-aligned; larger alignments fail (null), they are never
//! needed.
//!
//! `Box::new` and friends abort on failure, which in the kernel is a bug
//! check (the allocation error handler panics). The shell therefore
//! allocates through [`try_box`] and [`PageBuffer::zeroed`], which return
//! an error instead.

use alloc::alloc::{GlobalAlloc, Layout, alloc as raw_alloc};
use alloc::boxed::Box;
use core::ptr::{self, NonNull};

use ndis::{
    ExAllocatePool2, ExFreePoolWithTag, IoAllocateMdl, IoFreeMdl, KernelMode, MdlMappingNoExecute,
    MmCached, MmMapLockedPagesSpecifyCache, MmUnmapLockedPages, NormalPagePriority,
    POOL_FLAG_NON_PAGED, POOL_FLAG_UNINITIALIZED,
};
use ndkpi::{MDL, MDL_PAGES_LOCKED, PAGE_SIZE, ULONG, mdl_pfn_array};

use super::kernel::ClaimFlag;

/// Pool tag of every rsndk allocation, shown as `RsNk` by `!poolused`
/// and poolmon (tags are stored little-endian).
pub const POOL_TAG: ULONG = u32::from_le_bytes(*b"RsNk");

/// Alignment every pool allocation has on x64.
const POOL_ALIGN: usize = 16;

/// Non-paged pool with `Layout` alignment honoured up to a page. Usable at
/// `IRQL <= DISPATCH_LEVEL`.
#[derive(Debug)]
pub struct KernelAllocator;

impl KernelAllocator {
    /// The byte count to ask pool for, or `None` if `layout` cannot be met.
    fn pool_size(layout: Layout) -> Option<usize> {
        match layout.align() {
            a if a <= POOL_ALIGN => Some(layout.size()),
            // Pool returns allocations of a page or more page-aligned.
            a if a <= PAGE_SIZE => Some(layout.size().max(PAGE_SIZE)),
            _ => None,
        }
    }

    fn allocate(layout: Layout, flags: u64) -> *mut u8 {
        let Some(size) = Self::pool_size(layout) else {
            return ptr::null_mut();
        };
        // SAFETY: ExAllocatePool2 with non-paged flags may be called at
        // IRQL <= DISPATCH_LEVEL, the contract of every allocation here.
        unsafe { ExAllocatePool2(flags, size, POOL_TAG) }.cast()
    }
}

// SAFETY: `alloc` returns null or a fresh pool block of at least
// `layout.size()` bytes aligned to `layout.align()` (see `pool_size`);
// `dealloc` frees exactly such blocks with the tag they were allocated with.
unsafe impl GlobalAlloc for KernelAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::allocate(layout, POOL_FLAG_NON_PAGED | POOL_FLAG_UNINITIALIZED)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::allocate(layout, POOL_FLAG_NON_PAGED)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from `alloc`/`alloc_zeroed` (GlobalAlloc
        // contract), i.e. from ExAllocatePool2 with POOL_TAG.
        unsafe { ExFreePoolWithTag(ptr.cast(), POOL_TAG) };
    }
}

#[cfg(not(test))]
#[global_allocator]
static GLOBAL_ALLOCATOR: KernelAllocator = KernelAllocator;

/// `Box::new` that reports allocation failure instead of bugchecking;
/// gives `value` back on failure.
pub fn try_box<T>(value: T) -> Result<Box<T>, T> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new(value));
    }
    // SAFETY: `layout` has a nonzero size.
    let raw = unsafe { raw_alloc(layout) }.cast::<T>();
    if raw.is_null() {
        return Err(value);
    }
    // SAFETY: `raw` is a fresh allocation for one `T`.
    unsafe { raw.write(value) };
    // SAFETY: allocated by the global allocator with `Layout::new::<T>()`
    // and initialised, which is what `Box::from_raw` requires.
    Ok(unsafe { Box::from_raw(raw) })
}

/// A zeroed, page-aligned buffer of whole pages from non-paged pool (for
/// memory a device reads by page, like receive scratch space and send
/// slots). Freed on drop.
#[derive(Debug)]
pub struct PageBuffer {
    ptr: NonNull<u8>,
}

// SAFETY: the buffer is plain memory owned by this value.
unsafe impl Send for PageBuffer {}
// SAFETY: shared access only hands out its address; writers synchronise
// through their own protocol (see the users).
unsafe impl Sync for PageBuffer {}

impl PageBuffer {
    /// At least `len` bytes (rounded up to pages), zeroed; `None` when
    /// pool is exhausted or `len` is 0.
    pub fn zeroed(len: usize) -> Option<Self> {
        let len = len.checked_next_multiple_of(PAGE_SIZE)?;
        if len == 0 {
            return None;
        }
        // SAFETY: non-paged allocation at IRQL <= DISPATCH_LEVEL; a size
        // of whole pages makes pool return it page-aligned.
        let raw = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, len, POOL_TAG) };
        Some(Self {
            ptr: NonNull::new(raw.cast())?,
        })
    }

    /// First byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for PageBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with POOL_TAG and not freed before.
        unsafe { ExFreePoolWithTag(self.ptr.as_ptr().cast(), POOL_TAG) };
    }
}

/// An MDL the driver describes itself: up to `pages` pages named by page
/// frame number, which stay locked by their owner while the MDL names them
/// (the rule [`crate::driver::dma`] explains). Allocated by `IoAllocateMdl`
/// for a made-up, never dereferenced address, freed by `IoFreeMdl`.
#[derive(Debug)]
pub struct PageMdl {
    mdl: NonNull<MDL>,
    pages: usize,
}

// SAFETY: the MDL is memory this value owns; the kernel lets any thread
// use and free it.
unsafe impl Send for PageMdl {}

/// The address an MDL of [`PageMdl`] is allocated for: page-aligned and
/// never dereferenced (`IoAllocateMdl` only computes the MDL's size from
/// it); the PFNs written into the MDL are what it describes.
const STUB_VA: usize = 0x10_0000;

impl PageMdl {
    /// An MDL for up to `pages` pages; `None` when pool is exhausted.
    pub fn allocate(pages: usize) -> Option<Self> {
        let bytes = u32::try_from(pages.checked_mul(PAGE_SIZE)?).ok()?;
        // SAFETY: IoAllocateMdl only computes the MDL's size from the
        // (never dereferenced) address and length; no IRP.
        let mdl = unsafe { IoAllocateMdl(STUB_VA as *mut _, bytes, 0, 0, ptr::null_mut()) };
        Some(Self {
            mdl: NonNull::new(mdl)?,
            pages,
        })
    }

    /// Describes `bytes` bytes of the pages `pfns` (at most the MDL's
    /// page count, `bytes` within them) and maps them into system space
    /// (`MmMapLockedPagesSpecifyCache`, `<= DISPATCH_LEVEL`); `None` when
    /// the request does not fit or the mapping fails. The pages must be
    /// locked by their owner while mapped: physical memory a consumer
    /// registered (the NDK contract), which is what device access means.
    pub fn map(
        &mut self,
        pfns: impl ExactSizeIterator<Item = u64>,
        bytes: usize,
    ) -> Option<Mapping<'_>> {
        let va = self.describe_and_map(pfns, bytes)?;
        Some(Mapping {
            mdl: self,
            va,
            len: bytes,
        })
    }

    /// [`PageMdl::map`] for a mapping that owns its MDL.
    pub fn map_owned(
        mut self,
        pfns: impl ExactSizeIterator<Item = u64>,
        bytes: usize,
    ) -> Option<OwnedMapping> {
        let va = self.describe_and_map(pfns, bytes)?;
        Some(OwnedMapping {
            mdl: self,
            va,
            len: bytes,
        })
    }

    fn describe_and_map(
        &mut self,
        pfns: impl ExactSizeIterator<Item = u64>,
        bytes: usize,
    ) -> Option<NonNull<u8>> {
        if pfns.len() > self.pages || bytes > pfns.len() * PAGE_SIZE {
            return None;
        }
        let array = mdl_pfn_array(self.mdl.as_ptr());
        for (i, pfn) in pfns.enumerate() {
            // SAFETY: the PFN array has room for `self.pages` entries, and
            // the iterator yields at most that many (checked above) (the MDL was allocated for that many pages).
            unsafe { array.wrapping_add(i).write(pfn as usize) };
        }
        // SAFETY: this value owns the MDL and nothing maps it now (a
        // `Mapping` borrows `self` mutably; `OwnedMapping` consumed it): a
        // plain header update of the documented fields (`StartVa` stays
        // the page-aligned address it was allocated for; only its offset,
        // 0, is meaningful).
        let header = unsafe { &mut *self.mdl.as_ptr() };
        header.ByteCount = bytes as u32;
        header.ByteOffset = 0;
        // The MDL now describes pages locked by their owner; the flag goes
        // again when the mapping is undone, or just below.
        header.MdlFlags |= MDL_PAGES_LOCKED;
        // SAFETY: a locked-pages MDL describing resident pages, not mapped;
        // kernel mode at or below DISPATCH_LEVEL.
        let va = unsafe {
            MmMapLockedPagesSpecifyCache(
                self.mdl.as_ptr(),
                KernelMode,
                MmCached,
                ptr::null_mut(),
                0,
                NormalPagePriority | MdlMappingNoExecute,
            )
        };
        let va = NonNull::new(va.cast::<u8>());
        if va.is_none() {
            header.MdlFlags &= !MDL_PAGES_LOCKED;
        }
        va
    }

    /// Undoes `describe_and_map`'s mapping at `va`.
    fn unmap(&mut self, va: NonNull<u8>) {
        // SAFETY: `va` is this MDL's mapping (made by `describe_and_map`
        // and not undone: each `Mapping`/`OwnedMapping` undoes it once);
        // <= DISPATCH_LEVEL. It clears MDL_MAPPED_TO_SYSTEM_VA.
        unsafe { MmUnmapLockedPages(va.as_ptr().cast(), self.mdl.as_ptr()) };
        // SAFETY: this value owns the MDL, unmapped now; a plain flag
        // update.
        unsafe { (*self.mdl.as_ptr()).MdlFlags &= !MDL_PAGES_LOCKED };
    }
}

impl Drop for PageMdl {
    fn drop(&mut self) {
        // SAFETY: allocated by IoAllocateMdl in `allocate`; neither mapped
        // nor marked locked (every mapping is undone, flag included,
        // before its borrow or ownership of the MDL ends), as IoFreeMdl
        // requires.
        unsafe { IoFreeMdl(self.mdl.as_ptr()) };
    }
}

/// A window of mapped pages to copy through, borrowed from a [`Mapping`]
/// or an [`OwnedMapping`].
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    va: NonNull<u8>,
    len: usize,
    mapping: core::marker::PhantomData<&'a ()>,
}

impl View<'_> {
    /// Copies `buf.len()` bytes from `offset` into `buf`; `false` (nothing
    /// copied) past the window's end.
    pub fn read(self, offset: usize, buf: &mut [u8]) -> bool {
        if offset
            .checked_add(buf.len())
            .is_none_or(|end| end > self.len)
        {
            return false;
        }
        // SAFETY: `va` maps `len >= offset + buf.len()` bytes (checked) of
        // pages locked while mapped (the mapping this view borrows is
        // alive); `buf` is the caller's own memory, which no mapping of
        // device pages overlaps.
        unsafe {
            ptr::copy_nonoverlapping(
                self.va.as_ptr().wrapping_add(offset),
                buf.as_mut_ptr(),
                buf.len(),
            );
        };
        true
    }

    /// Copies `data` to `offset`; `false` (nothing copied) past the end.
    pub fn write(self, offset: usize, data: &[u8]) -> bool {
        if offset
            .checked_add(data.len())
            .is_none_or(|end| end > self.len)
        {
            return false;
        }
        // SAFETY: as in `read`, the other way round.
        unsafe {
            ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.va.as_ptr().wrapping_add(offset),
                data.len(),
            );
        };
        true
    }
}

/// Pages of a [`PageMdl`] mapped into system space until dropped.
#[derive(Debug)]
pub struct Mapping<'a> {
    mdl: &'a mut PageMdl,
    va: NonNull<u8>,
    len: usize,
}

impl Mapping<'_> {
    /// The mapped bytes.
    pub fn view(&self) -> View<'_> {
        View {
            va: self.va,
            len: self.len,
            mapping: core::marker::PhantomData,
        }
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        self.mdl.unmap(self.va);
    }
}

/// Pages mapped into system space with the [`PageMdl`] that describes
/// them, until dropped (unmapped, then the MDL freed).
#[derive(Debug)]
pub struct OwnedMapping {
    mdl: PageMdl,
    va: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is system space, valid on every processor, and owned
// by this value alone; the MDL is Send.
unsafe impl Send for OwnedMapping {}

impl OwnedMapping {
    /// The mapped bytes.
    pub fn view(&self) -> View<'_> {
        View {
            va: self.va,
            len: self.len,
            mapping: core::marker::PhantomData,
        }
    }
}

impl Drop for OwnedMapping {
    fn drop(&mut self) {
        self.mdl.unmap(self.va);
    }
}

/// A global the driver installs once (`DriverEntry`) and frees at unload,
/// shared as `&'static` in between.
pub struct GlobalBox<T> {
    ptr: core::sync::atomic::AtomicPtr<T>,
}

impl<T> core::fmt::Debug for GlobalBox<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GlobalBox").finish_non_exhaustive()
    }
}

impl<T> GlobalBox<T> {
    /// Empty.
    pub const fn new() -> Self {
        Self {
            ptr: core::sync::atomic::AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Installs `value` (`DriverEntry`, before any handler can run).
    pub fn install(&self, value: Box<T>) {
        let old = self
            .ptr
            .swap(Box::into_raw(value), core::sync::atomic::Ordering::AcqRel);
        if let Some(old) = NonNull::new(old) {
            // SAFETY: a value a previous `install` boxed; replaced only by
            // a second DriverEntry of the same image, when no user of the
            // old one is left (the image was unloaded in between).
            drop(unsafe { Box::from_raw(old.as_ptr()) });
        }
    }

    /// The installed value.
    pub fn get(&self) -> Option<&'static T> {
        let ptr = NonNull::new(self.ptr.load(core::sync::atomic::Ordering::Acquire))?;
        // SAFETY: installed by `install` and freed only by `take`, whose
        // callers (a failed DriverEntry, unload) run when no user is left:
        // it outlives every user, which is what `'static` asks here.
        Some(unsafe { ptr.as_ref() })
    }

    /// Takes the value out, for freeing.
    ///
    /// # Safety
    /// No reference [`GlobalBox::get`] gave is in use, nor will be.
    pub unsafe fn take(&self) -> Option<Box<T>> {
        let ptr = NonNull::new(
            self.ptr
                .swap(ptr::null_mut(), core::sync::atomic::Ordering::AcqRel),
        )?;
        // SAFETY: boxed by `install`, taken out once (the swap); no user is
        // left (this function's contract).
        Some(unsafe { Box::from_raw(ptr.as_ptr()) })
    }
}

impl<T> Default for GlobalBox<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A reference to a shared object, attached for a while and used from any
/// IRQL up to `DISPATCH_LEVEL` in between (the kernel's rundown pattern
/// over a counted pointer): [`Attached::enter`] counts a user and gives
/// the object, [`Attached::detach`] (`PASSIVE_LEVEL`) withdraws it and
/// waits for the users before letting its reference go. The slot owns one
/// reference while attached, so the object lives at least that long.
pub struct Attached<T> {
    ptr: core::sync::atomic::AtomicPtr<T>,
    users: core::sync::atomic::AtomicU32,
}

impl<T> core::fmt::Debug for Attached<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Attached")
            .field(
                "attached",
                &!self
                    .ptr
                    .load(core::sync::atomic::Ordering::Relaxed)
                    .is_null(),
            )
            .finish_non_exhaustive()
    }
}

// SAFETY: the slot holds a `TryArc<T>`'s reference (Send and Sync for
// `T: Send + Sync`) and atomics.
unsafe impl<T: Send + Sync> Send for Attached<T> {}
// SAFETY: shared use hands out `&T` (fine for `T: Sync`) while counted,
// and moves the reference in and out atomically.
unsafe impl<T: Send + Sync> Sync for Attached<T> {}

impl<T> Default for Attached<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Attached<T> {
    /// Nothing attached.
    pub const fn new() -> Self {
        Self {
            ptr: core::sync::atomic::AtomicPtr::new(ptr::null_mut()),
            users: core::sync::atomic::AtomicU32::new(0),
        }
    }

    /// Attaches `value` (`PASSIVE_LEVEL`), detaching what was attached.
    pub fn attach(&self, value: &hwq::TryArc<T>) {
        self.detach();
        let raw = hwq::TryArc::into_raw(value.clone()).cast_mut();
        self.ptr.store(raw, core::sync::atomic::Ordering::SeqCst);
    }

    /// The object, counted as used until the guard drops; `None` when
    /// nothing is attached.
    pub fn enter(&self) -> Option<AttachedRef<'_, T>> {
        // The count first, then the look at the pointer; `detach` does the
        // reverse (both sequentially consistent), so either this sees the
        // pointer gone or `detach` sees this user.
        self.users
            .fetch_add(1, core::sync::atomic::Ordering::SeqCst);
        let ptr = NonNull::new(self.ptr.load(core::sync::atomic::Ordering::SeqCst));
        if ptr.is_none() {
            self.users
                .fetch_sub(1, core::sync::atomic::Ordering::SeqCst);
        }
        Some(AttachedRef {
            slot: self,
            ptr: ptr?,
        })
    }

    /// Detaches the object (`PASSIVE_LEVEL`): when this returns no user
    /// holds it, and the slot's reference is gone. Idempotent.
    pub fn detach(&self) {
        let old = self
            .ptr
            .swap(ptr::null_mut(), core::sync::atomic::Ordering::SeqCst);
        while self.users.load(core::sync::atomic::Ordering::SeqCst) != 0 {
            super::kernel::wait_briefly();
        }
        if let Some(old) = NonNull::new(old) {
            // SAFETY: the reference `attach` gave up with `into_raw`, taken
            // back once (the swap); no user holds the pointer any more.
            drop(unsafe { hwq::TryArc::from_raw(old.as_ptr()) });
        }
    }
}

impl<T> Drop for Attached<T> {
    fn drop(&mut self) {
        let old = core::mem::replace(self.ptr.get_mut(), ptr::null_mut());
        if let Some(old) = NonNull::new(old) {
            // SAFETY: the reference `attach` gave up; `&mut self` means no
            // user is left.
            drop(unsafe { hwq::TryArc::from_raw(old.as_ptr()) });
        }
    }
}

/// An attached object in use (see [`Attached::enter`]).
pub struct AttachedRef<'a, T> {
    slot: &'a Attached<T>,
    ptr: NonNull<T>,
}

impl<T> core::fmt::Debug for AttachedRef<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AttachedRef").finish_non_exhaustive()
    }
}

impl<T> core::ops::Deref for AttachedRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the slot's reference keeps the object alive while this
        // user is counted: `detach` waits for the count before dropping
        // the reference.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Drop for AttachedRef<'_, T> {
    fn drop(&mut self) {
        self.slot
            .users
            .fetch_sub(1, core::sync::atomic::Ordering::SeqCst);
    }
}

/// Equal slots of one [`PageBuffer`], each claimed by one user at a time
/// without waiting ([`SlotBuffers::try_claim`]): scratch space for
/// processors at `DISPATCH_LEVEL`.
pub struct SlotBuffers<const N: usize> {
    memory: PageBuffer,
    slot_bytes: usize,
    busy: [ClaimFlag; N],
}

impl<const N: usize> core::fmt::Debug for SlotBuffers<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SlotBuffers")
            .field("slot_bytes", &self.slot_bytes)
            .finish_non_exhaustive()
    }
}

impl<const N: usize> SlotBuffers<N> {
    /// `N` zeroed slots of `slot_bytes` bytes (`<= DISPATCH_LEVEL`);
    /// `None` when pool is exhausted.
    pub fn zeroed(slot_bytes: usize) -> Option<Self> {
        Some(Self {
            memory: PageBuffer::zeroed(slot_bytes.checked_mul(N)?)?,
            slot_bytes,
            busy: [const { ClaimFlag::new() }; N],
        })
    }

    /// Slot `k`, unless someone holds it (or `k >= N`).
    pub fn try_claim(&self, k: usize) -> Option<SlotGuard<'_, N>> {
        self.busy
            .get(k)?
            .try_claim()
            .then_some(SlotGuard { owner: self, k })
    }
}

/// A claimed slot of [`SlotBuffers`]; dropping it lets the slot go.
pub struct SlotGuard<'a, const N: usize> {
    owner: &'a SlotBuffers<N>,
    k: usize,
}

impl<const N: usize> core::fmt::Debug for SlotGuard<'_, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SlotGuard").field("k", &self.k).finish()
    }
}

impl<const N: usize> SlotGuard<'_, N> {
    /// The slot's bytes.
    pub fn bytes(&mut self) -> &mut [u8] {
        let start = self
            .owner
            .memory
            .as_ptr()
            .wrapping_add(self.k * self.owner.slot_bytes);
        // SAFETY: slot `k < N` lies inside the buffer of `N * slot_bytes`
        // bytes; this guard holds its `busy` flag, so nobody else reaches
        // it, and `&mut self` makes this the only reference through it.
        unsafe { core::slice::from_raw_parts_mut(start, self.owner.slot_bytes) }
    }
}

impl<const N: usize> Drop for SlotGuard<'_, N> {
    fn drop(&mut self) {
        if let Some(flag) = self.owner.busy.get(self.k) {
            flag.release();
        }
    }
}

//! Kernel memory: the global allocator behind `alloc`, fallible boxes, and
//! page-aligned buffers.
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

use ndis::{ExAllocatePool2, ExFreePoolWithTag, POOL_FLAG_NON_PAGED, POOL_FLAG_UNINITIALIZED};
use ndkpi::PAGE_SIZE;
use ndkpi::ULONG;

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

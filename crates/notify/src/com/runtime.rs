//! What a `no_std` DLL with no C runtime supplies itself: the heap (the
//! process heap), the panic handler (fail fast) and the entry point.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use core::ptr;

use super::imports::{GetProcessHeap, HEAP_ZERO_MEMORY, HeapAlloc, HeapFree, HeapReAlloc};

/// `MEMORY_ALLOCATION_ALIGNMENT` on x64: every heap block is aligned to
/// 16 bytes. Nothing here asks for more; a layout that does gets null
/// (an allocation failure) rather than a misaligned block.
const HEAP_ALIGNMENT: usize = 16;

/// `alloc` over the process heap (`HeapAlloc` on `GetProcessHeap()`).
struct ProcessHeap;

// SAFETY: HeapAlloc returns null or a block of at least `size` bytes
// aligned to HEAP_ALIGNMENT, which every accepted layout fits; blocks are
// freed and resized only through the same heap; the process heap is
// serialised, so any thread may call.
unsafe impl GlobalAlloc for ProcessHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        allocate(layout, 0)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        allocate(layout, HEAP_ZERO_MEMORY)
    }

    unsafe fn dealloc(&self, block: *mut u8, _layout: Layout) {
        // SAFETY: no argument; returns the process heap's handle.
        let heap = unsafe { GetProcessHeap() };
        // SAFETY: `block` came from HeapAlloc/HeapReAlloc on this heap
        // (GlobalAlloc's contract) and is freed once.
        unsafe { HeapFree(heap, 0, block.cast::<c_void>()) };
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() > HEAP_ALIGNMENT {
            return ptr::null_mut();
        }
        // SAFETY: no argument; returns the process heap's handle.
        let heap = unsafe { GetProcessHeap() };
        // SAFETY: `block` is a live block of this heap (GlobalAlloc's
        // contract); on failure it stays valid and null is returned.
        unsafe { HeapReAlloc(heap, 0, block.cast::<c_void>(), new_size) }.cast::<u8>()
    }
}

/// One heap block for `layout`, or null.
fn allocate(layout: Layout, flags: u32) -> *mut u8 {
    if layout.align() > HEAP_ALIGNMENT {
        return ptr::null_mut();
    }
    // SAFETY: no argument; returns the process heap's handle.
    let heap = unsafe { GetProcessHeap() };
    // SAFETY: a plain allocation request on the process heap.
    unsafe { HeapAlloc(heap, flags, layout.size()) }.cast::<u8>()
}

#[global_allocator]
static HEAP: ProcessHeap = ProcessHeap;

/// `FAST_FAIL_FATAL_APP_EXIT` (winnt.h).
const FAST_FAIL_FATAL_APP_EXIT: u32 = 7;

/// A panic (a bug: nothing here panics on bad input) ends the process
/// that hosts netcfg at once, with a Windows Error Reporting record,
/// instead of returning into netcfg with broken state: `__fastfail`.
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `int 0x29` is the documented __fastfail: it raises a
    // non-continuable failure with the code in ECX and never returns.
    unsafe {
        core::arch::asm!(
            "int 0x29",
            in("ecx") FAST_FAIL_FATAL_APP_EXIT,
            options(noreturn, nostack)
        )
    }
}

// The DLL's entry point (`/ENTRY:rsndknotify_entry`, build.rs): `DllMain`
// has nothing to do here (no C runtime to start, no per-thread state), so
// it returns TRUE for every reason. Written in assembly because a Rust
// function the linker can name would be exported (a cdylib exports every
// `no_mangle` item), and the DLL must export only its COM entry points.
// A leaf that touches no stack needs no unwind data.
core::arch::global_asm!(
    ".globl rsndknotify_entry",
    "rsndknotify_entry:",
    "mov eax, 1",
    "ret",
);

// Two symbols the precompiled core/alloc name, defined here in assembly
// so that no export table lists them:
// - `_fltused`: MSVC's marker that floating point is in use (data; its
//   value means nothing).
// - `__CxxFrameHandler3`: the C++ frame handler the unwind data of core
//   and alloc names. With `panic = "abort"` nothing ever unwinds through
//   Rust frames; if Windows dispatched an exception to it anyway, the
//   process fails fast (`int 0x29`, FAST_FAIL_FATAL_APP_EXIT) rather than
//   unwinding Rust state it cannot.
core::arch::global_asm!(
    ".data",
    ".globl _fltused",
    ".p2align 2",
    "_fltused:",
    ".long 0",
    ".text",
    ".globl __CxxFrameHandler3",
    "__CxxFrameHandler3:",
    "mov ecx, 7",
    "int 0x29",
    "ud2",
);

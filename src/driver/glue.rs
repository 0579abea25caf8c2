//! What the WDK's libraries supply to a C driver and a `no_std` Rust image
//! still references, so that the image links with rust-lld alone.
//!
//! - The C string and memory routines (`memcpy`, `memmove`, `memset`,
//!   `memcmp`, `strlen`) and the stack probe `__chkstk` that LLVM emits
//!   calls to are ntoskrnl exports:
//!   declaring them `raw-dylib` makes the image import them instead of
//!   carrying compiler_builtins' slower weak copies.
//! - `_fltused` tells the MSVC toolchain floating point is in use; core
//!   references it.
//! - `__CxxFrameHandler3` is named by the unwind tables of the
//!   precompiled `core`/`alloc`. With `panic = "abort"` no exception is
//!   ever raised through Rust frames, so the handler is never reached; if
//!   the kernel ever did call it, it bugchecks rather than guess.
#![allow(unsafe_code)]

use core::ffi::{c_char, c_int, c_void};

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "C" {
    fn memcpy(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memmove(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memset(dest: *mut c_void, c: c_int, n: usize) -> *mut c_void;
    fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int;
    fn strlen(s: *const c_char) -> usize;
    /// Probes the stack pages of a frame larger than a page (size in RAX;
    /// LLVM emits the call in unoptimised builds). Declared only to be
    /// imported: its register convention is not C's, and Rust never calls
    /// it.
    fn __chkstk();
}

/// Keeps the declarations above referenced, so rustc writes all five into
/// the import library LLVM's calls resolve against.
#[used]
static IMPORTED_CRT: [unsafe extern "C" fn(); 6] = [
    // SAFETY: only the addresses are taken, never called through these
    // types; the real signatures are the declarations above.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memcpy)
    },
    // SAFETY: as for memcpy: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memmove)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, c_int, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memset)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*const c_void, *const c_void, usize) -> c_int,
            unsafe extern "C" fn(),
        >(memcmp)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<unsafe extern "C" fn(*const c_char) -> usize, unsafe extern "C" fn()>(
            strlen,
        )
    },
    __chkstk,
];

/// The MSVC marker for floating-point use (any value; only its presence
/// counts).
#[cfg(not(feature = "wdk"))]
#[unsafe(no_mangle)]
pub static _fltused: i32 = 0;

/// The C++ frame handler the unwind data of `core` and `alloc` names.
/// Never called with `panic = "abort"`; if the kernel dispatched an
/// exception to it, continuing would run Rust code in an unknown state.
#[cfg(not(feature = "wdk"))]
#[unsafe(no_mangle)]
pub extern "win64" fn __CxxFrameHandler3() -> ! {
    panic!("__CxxFrameHandler3 reached: an exception unwound into Rust frames")
}

//! The little Win32 the harness needs: console output, exit, loading the
//! DLL, the registry, the heap (its allocator), and the symbols a
//! `no_std` image without a C runtime must define itself.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use core::ptr;

type Handle = *mut c_void;

#[link(name = "kernel32", kind = "raw-dylib")]
unsafe extern "system" {
    fn GetStdHandle(which: u32) -> Handle;
    fn WriteFile(
        file: Handle,
        data: *const u8,
        len: u32,
        written: *mut u32,
        overlapped: *mut c_void,
    ) -> i32;
    fn ExitProcess(code: u32) -> !;
    fn LoadLibraryW(name: *const u16) -> Handle;
    fn GetProcAddress(module: Handle, name: *const u8) -> *mut c_void;
    fn GetProcessHeap() -> Handle;
    fn HeapAlloc(heap: Handle, flags: u32, bytes: usize) -> *mut c_void;
    fn HeapFree(heap: Handle, flags: u32, memory: *mut c_void) -> i32;
    fn HeapReAlloc(heap: Handle, flags: u32, memory: *mut c_void, bytes: usize) -> *mut c_void;
}

#[link(name = "advapi32", kind = "raw-dylib")]
unsafe extern "system" {
    pub fn RegCreateKeyExW(
        key: Handle,
        sub_key: *const u16,
        reserved: u32,
        class: *mut u16,
        options: u32,
        sam: u32,
        security: *const c_void,
        result: *mut Handle,
        disposition: *mut u32,
    ) -> i32;
    pub fn RegSetValueExW(
        key: Handle,
        name: *const u16,
        reserved: u32,
        kind: u32,
        data: *const u8,
        size: u32,
    ) -> i32;
    fn RegGetValueW(
        key: Handle,
        sub_key: *const u16,
        value: *const u16,
        flags: u32,
        kind: *mut u32,
        data: *mut c_void,
        size: *mut u32,
    ) -> i32;
}

#[link(name = "ole32", kind = "raw-dylib")]
unsafe extern "system" {
    pub fn CoTaskMemAlloc(bytes: usize) -> *mut c_void;
}

#[link(name = "ntdll", kind = "raw-dylib")]
unsafe extern "C" {
    fn memcpy(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memmove(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memset(dest: *mut c_void, c: i32, n: usize) -> *mut c_void;
    fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> i32;
    fn strlen(s: *const u8) -> usize;
    fn __chkstk();
}

/// Keeps the CRT imports in the import library (see rsndknotify's
/// src/com/imports.rs).
#[used]
static IMPORTED_CRT: [unsafe extern "C" fn(); 6] = [
    // SAFETY: addresses only, never called through these types.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memcpy)
    },
    // SAFETY: as above.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memmove)
    },
    // SAFETY: as above.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, i32, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memset)
    },
    // SAFETY: as above.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*const c_void, *const c_void, usize) -> i32,
            unsafe extern "C" fn(),
        >(memcmp)
    },
    // SAFETY: as above.
    unsafe {
        core::mem::transmute::<unsafe extern "C" fn(*const u8) -> usize, unsafe extern "C" fn()>(
            strlen,
        )
    },
    __chkstk,
];

core::arch::global_asm!(
    ".data",
    ".globl _fltused",
    "_fltused:",
    ".long 0",
    ".text",
    ".globl __CxxFrameHandler3",
    "__CxxFrameHandler3:",
    "mov ecx, 7",
    "int 0x29",
    "ud2",
);

struct Heap;

// SAFETY: the process heap: 16-byte aligned blocks (larger alignments are
// refused), serialised.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > 16 {
            return ptr::null_mut();
        }
        // SAFETY: plain heap calls.
        unsafe { HeapAlloc(GetProcessHeap(), 0, layout.size()) }.cast()
    }
    unsafe fn dealloc(&self, block: *mut u8, _layout: Layout) {
        // SAFETY: a block of this heap, freed once.
        unsafe { HeapFree(GetProcessHeap(), 0, block.cast()) };
    }
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        if layout.align() > 16 {
            return ptr::null_mut();
        }
        // SAFETY: a live block of this heap.
        unsafe { HeapReAlloc(GetProcessHeap(), 0, block.cast(), size) }.cast()
    }
}

#[global_allocator]
static HEAP: Heap = Heap;

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    say(&alloc::format!("harness: panic: {info}"));
    exit(101)
}

/// Prints one line on standard output.
pub fn say(line: &str) {
    let mut text = String::from(line);
    text.push('\n');
    // SAFETY: STD_OUTPUT_HANDLE (-11).
    let out = unsafe { GetStdHandle(-11i32 as u32) };
    let mut written = 0u32;
    // SAFETY: the console handle and our buffer.
    unsafe {
        WriteFile(
            out,
            text.as_ptr(),
            text.len() as u32,
            &raw mut written,
            ptr::null_mut(),
        )
    };
}

pub fn exit(code: u32) -> ! {
    // SAFETY: ends the process.
    unsafe { ExitProcess(code) }
}

/// Fails the run with `what`.
pub fn fail(what: &str) -> ! {
    say(&alloc::format!("FAIL {what}"));
    exit(1)
}

/// One check: prints it, and ends the run if it failed.
pub fn check(ok: bool, what: &str) {
    if !ok {
        fail(what);
    }
    say(&alloc::format!("ok   {what}"));
}

pub fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(core::iter::once(0)).collect()
}

/// The vtable of the COM object at `this`, as `V`.
///
/// # Safety
/// `this` is a live interface pointer whose vtable has `V`'s layout.
pub unsafe fn vtable<'a, V>(this: *mut c_void) -> &'a V {
    // SAFETY: the contract.
    unsafe { &**this.cast::<*const V>() }
}

pub fn load_library(name: &str) -> Handle {
    let name16 = wide(name);
    // SAFETY: a NUL-terminated name.
    let module = unsafe { LoadLibraryW(name16.as_ptr()) };
    if module.is_null() {
        fail(&alloc::format!("LoadLibraryW({name})"));
    }
    say(&alloc::format!(
        "ok   LoadLibraryW({name}): every import resolved"
    ));
    module
}

/// The export `name` of `module`, as the function type `F`.
pub fn entry<F: Copy>(module: Handle, name: &str) -> F {
    let mut name8: Vec<u8> = name.bytes().collect();
    name8.push(0);
    // SAFETY: a loaded module and a NUL-terminated name.
    let address = unsafe { GetProcAddress(module, name8.as_ptr()) };
    if address.is_null() {
        fail(&alloc::format!("GetProcAddress({name})"));
    }
    // SAFETY: F is a function pointer type matching the export.
    unsafe { core::mem::transmute_copy::<*mut c_void, F>(&address) }
}

/// `HKEY_LOCAL_MACHINE`.
pub const HKLM: Handle = 0x8000_0002_u32 as i32 as isize as Handle;
/// `HKEY_CURRENT_USER`.
pub const HKCU: Handle = 0x8000_0001_u32 as i32 as isize as Handle;

/// The strings of a `REG_SZ`/`REG_MULTI_SZ` value under HKLM, if any.
pub fn registry_strings(key: &str, value: &str) -> Option<Vec<String>> {
    let key16 = wide(key);
    let value16 = wide(value);
    let mut size = 0u32;
    // RRF_RT_REG_SZ | RRF_RT_REG_MULTI_SZ.
    let flags = 0x2 | 0x20;
    // SAFETY: a size query.
    let status = unsafe {
        RegGetValueW(
            HKLM,
            key16.as_ptr(),
            value16.as_ptr(),
            flags,
            ptr::null_mut(),
            ptr::null_mut(),
            &raw mut size,
        )
    };
    if status != 0 {
        return None;
    }
    let mut data = vec![0u16; (size as usize).div_ceil(2)];
    // SAFETY: `data` holds `size` bytes.
    let status = unsafe {
        RegGetValueW(
            HKLM,
            key16.as_ptr(),
            value16.as_ptr(),
            flags,
            ptr::null_mut(),
            data.as_mut_ptr().cast(),
            &raw mut size,
        )
    };
    if status != 0 {
        return None;
    }
    data.truncate(size as usize / 2);
    Some(
        data.split(|&u| u == 0)
            .filter(|s| !s.is_empty())
            .map(String::from_utf16_lossy)
            .collect(),
    )
}

/// A CoTaskMem copy of `text`, as netcfg hands out strings.
pub fn co_string(text: &str) -> *mut u16 {
    let units = wide(text);
    // SAFETY: a plain allocation.
    let block = unsafe { CoTaskMemAlloc(units.len() * 2) }.cast::<u16>();
    if block.is_null() {
        fail("CoTaskMemAlloc");
    }
    // SAFETY: `block` has room for `units`.
    unsafe { ptr::copy_nonoverlapping(units.as_ptr(), block, units.len()) };
    block
}

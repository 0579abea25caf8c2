//! The Win32 routines the DLL imports, declared `raw-dylib` (rustc writes
//! their import libraries, so no SDK is needed to link). Each module is a
//! system DLL of every Windows since Vista, Server Core included.

use core::ffi::c_void;

use crate::sys::{BOOL, HKEY};

/// `HANDLE`.
pub type Handle = *mut c_void;
/// `LSTATUS`: a Win32 error code.
pub type Win32Status = i32;

#[link(name = "kernel32", kind = "raw-dylib")]
unsafe extern "system" {
    pub fn GetProcessHeap() -> Handle;
    pub fn HeapAlloc(heap: Handle, flags: u32, bytes: usize) -> *mut c_void;
    pub fn HeapReAlloc(heap: Handle, flags: u32, memory: *mut c_void, bytes: usize) -> *mut c_void;
    pub fn HeapFree(heap: Handle, flags: u32, memory: *mut c_void) -> BOOL;
    pub fn GetModuleFileNameW(module: *mut c_void, filename: *mut u16, size: u32) -> u32;
}

#[link(name = "advapi32", kind = "raw-dylib")]
unsafe extern "system" {
    pub fn RegCreateKeyExW(
        key: HKEY,
        sub_key: *const u16,
        reserved: u32,
        class: *mut u16,
        options: u32,
        sam_desired: u32,
        security_attributes: *const c_void,
        result: *mut HKEY,
        disposition: *mut u32,
    ) -> Win32Status;
    pub fn RegOpenKeyExW(
        key: HKEY,
        sub_key: *const u16,
        options: u32,
        sam_desired: u32,
        result: *mut HKEY,
    ) -> Win32Status;
    pub fn RegCloseKey(key: HKEY) -> Win32Status;
    pub fn RegSetValueExW(
        key: HKEY,
        value_name: *const u16,
        reserved: u32,
        kind: u32,
        data: *const u8,
        size: u32,
    ) -> Win32Status;
    pub fn RegGetValueW(
        key: HKEY,
        sub_key: *const u16,
        value: *const u16,
        flags: u32,
        kind: *mut u32,
        data: *mut c_void,
        size: *mut u32,
    ) -> Win32Status;
    pub fn RegEnumKeyExW(
        key: HKEY,
        index: u32,
        name: *mut u16,
        name_chars: *mut u32,
        reserved: *mut u32,
        class: *mut u16,
        class_chars: *mut u32,
        last_write_time: *mut c_void,
    ) -> Win32Status;
    pub fn RegDeleteKeyW(key: HKEY, sub_key: *const u16) -> Win32Status;
    pub fn RegDeleteTreeW(key: HKEY, sub_key: *const u16) -> Win32Status;
}

#[link(name = "ole32", kind = "raw-dylib")]
unsafe extern "system" {
    /// Frees the strings netcfg returns (`GetId`, `GetPathToken`).
    pub fn CoTaskMemFree(memory: *mut c_void);
}

/// `HKEY_LOCAL_MACHINE`: `(HKEY)(ULONG_PTR)(LONG)0x80000002`.
pub const HKEY_LOCAL_MACHINE: HKEY = 0x8000_0002_u32 as i32 as isize as HKEY;

/// `ERROR_SUCCESS`.
pub const ERROR_SUCCESS: Win32Status = 0;
/// `ERROR_FILE_NOT_FOUND`.
pub const ERROR_FILE_NOT_FOUND: Win32Status = 2;
/// `ERROR_MORE_DATA`.
pub const ERROR_MORE_DATA: Win32Status = 234;
/// `ERROR_UNSUPPORTED_TYPE`: `RegGetValueW` found the value with a type
/// its flags exclude.
pub const ERROR_UNSUPPORTED_TYPE: Win32Status = 1630;
/// `ERROR_NO_MORE_ITEMS`.
pub const ERROR_NO_MORE_ITEMS: Win32Status = 259;

/// `KEY_READ`.
pub const KEY_READ: u32 = 0x0002_0019;
/// `KEY_WRITE`.
pub const KEY_WRITE: u32 = 0x0002_0006;
/// `REG_OPTION_NON_VOLATILE`.
pub const REG_OPTION_NON_VOLATILE: u32 = 0;
/// `REG_SZ`.
pub const REG_SZ: u32 = 1;
/// `REG_DWORD`.
pub const REG_DWORD: u32 = 4;
/// `REG_MULTI_SZ`.
pub const REG_MULTI_SZ: u32 = 7;
/// `RRF_RT_REG_SZ`.
pub const RRF_RT_REG_SZ: u32 = 0x0000_0002;
/// `RRF_RT_REG_DWORD`.
pub const RRF_RT_REG_DWORD: u32 = 0x0000_0010;
/// `RRF_RT_REG_MULTI_SZ`.
pub const RRF_RT_REG_MULTI_SZ: u32 = 0x0000_0020;

/// `HEAP_ZERO_MEMORY`.
pub const HEAP_ZERO_MEMORY: u32 = 0x0000_0008;

// The C memory and string routines LLVM emits calls to, and the stack
// probe `__chkstk` it calls for frames over a page (core's sort keeps a
// 4 KiB scratch buffer): the MSVC C runtime would supply them; here they
// come from ntdll.dll, which exports all six on x64 (mingw-w64's
// `mingw-w64-crt/lib-common/ntdllcrt.def.in`: the string and memory
// routines since Windows NT 3.5, `__chkstk` on 64-bit since Windows XP
// x64 / Server 2003 SP1; Wine's `dlls/ntdll/ntdll.spec` exports
// `__chkstk` for every architecture but i386, as Windows does).
#[link(name = "ntdll", kind = "raw-dylib")]
unsafe extern "C" {
    fn memcpy(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memmove(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memset(dest: *mut c_void, c: i32, n: usize) -> *mut c_void;
    fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> i32;
    fn strlen(s: *const u8) -> usize;
    /// Probes a large frame's stack pages (size in RAX): declared only to
    /// be imported, never called from Rust (its convention is not C's).
    fn __chkstk();
}

/// Keeps the declarations above referenced, so that rustc writes them
/// into the import library LLVM's calls resolve against.
#[used]
static IMPORTED_CRT: [unsafe extern "C" fn(); 6] = [
    // SAFETY: only the address is kept, never called through this type.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memcpy)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memmove)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, i32, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memset)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*const c_void, *const c_void, usize) -> i32,
            unsafe extern "C" fn(),
        >(memcmp)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<unsafe extern "C" fn(*const u8) -> usize, unsafe extern "C" fn()>(
            strlen,
        )
    },
    __chkstk,
];

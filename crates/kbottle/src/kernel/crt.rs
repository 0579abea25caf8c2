//! The C runtime routines ntoskrnl exports (`memcpy`, `memmove`, `memset`,
//! `memcmp`, `strlen`, `__chkstk`) as win64 functions, and `DbgPrintEx`.
//!
//! They cannot be bound to libc's symbols: the argument registers differ
//! between the Windows x64 and System V conventions. `memcpy` checks the
//! Verifier rule against overlapping buffers (0xC4/0xF0). `DbgPrintEx` is
//! a naked variadic thunk feeding a formatter of the Windows format
//! specifiers; its lines go to an in-memory log ([`log_lines`]) and, with
//! `RSNDK_BOTTLE_LOG` set, to stderr prefixed `[rsndk.sys] `.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::VecDeque;
use std::sync::Mutex;

mod format;

pub use format::{Args, format_windows};

use crate::export;
use crate::export::Export;
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION, firewall};
use crate::sync::lock;

/// `memcpy`: 0xC4/0xF0 if the buffers overlap.
pub unsafe extern "win64" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    firewall("memcpy", || {
        let (d, s) = (dst as usize, src as usize);
        if n > 0 && d < s.wrapping_add(n) && s < d.wrapping_add(n) {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0xF0, d as u64, s as u64, n as u64],
                format!("memcpy with overlapping buffers: dst {d:#x}, src {s:#x}, {n} bytes"),
            );
        }
        if n > 0 {
            // SAFETY: the caller passes `n` readable bytes at `src` and `n`
            // writable bytes at `dst`; they do not overlap (checked).
            unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        }
        dst
    })
}

/// `memmove`.
pub unsafe extern "win64" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    firewall("memmove", || {
        if n > 0 {
            // SAFETY: the caller passes `n` readable bytes at `src` and `n`
            // writable bytes at `dst`; overlap is allowed.
            unsafe { std::ptr::copy(src, dst, n) };
        }
        dst
    })
}

/// `memset`.
pub unsafe extern "win64" fn memset(dst: *mut u8, c: i32, n: usize) -> *mut u8 {
    firewall("memset", || {
        if n > 0 {
            // SAFETY: the caller passes `n` writable bytes at `dst`.
            unsafe { std::ptr::write_bytes(dst, c as u8, n) };
        }
        dst
    })
}

/// `memcmp`: the difference of the first differing bytes (as unsigned).
pub unsafe extern "win64" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    firewall("memcmp", || {
        if n == 0 {
            return 0;
        }
        // SAFETY: the caller passes `n` readable bytes at `a`.
        let a = unsafe { std::slice::from_raw_parts(a, n) };
        // SAFETY: the caller passes `n` readable bytes at `b`.
        let b = unsafe { std::slice::from_raw_parts(b, n) };
        a.iter()
            .zip(b)
            .find(|(x, y)| x != y)
            .map_or(0, |(&x, &y)| i32::from(x) - i32::from(y))
    })
}

/// `strlen`.
pub unsafe extern "win64" fn strlen(s: *const u8) -> usize {
    firewall("strlen", || {
        // SAFETY: the caller passes a NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(s.cast()) }.count_bytes()
    })
}

/// `__chkstk`: probes each page of a frame of RAX bytes below the caller's
/// stack pointer, top down, so a frame larger than the stack hits the
/// guard page here. Preserves every register but the flags; RSP is
/// unchanged on return.
#[unsafe(naked)]
pub unsafe extern "win64" fn __chkstk() {
    core::arch::naked_asm!(
        "push rcx",
        "push rax",
        // rcx = the caller's RSP (before its call pushed the return address)
        "lea rcx, [rsp + 24]",
        "2:",
        "cmp rax, 0x1000",
        "jb 3f",
        "sub rcx, 0x1000",
        "test [rcx], cl",
        "sub rax, 0x1000",
        "jmp 2b",
        "3:",
        "sub rcx, rax",
        "test [rcx], cl",
        "pop rax",
        "pop rcx",
        "ret",
    )
}

/// `DbgPrintEx(ComponentId, Level, Format, ...)`: spills the register
/// arguments into the caller's home area, so that home area and the stack
/// arguments above it form one array of 8-byte slots, and hands a pointer
/// to it to `dbg_print_slots` (below).
#[unsafe(naked)]
pub unsafe extern "win64" fn DbgPrintEx() {
    core::arch::naked_asm!(
        "mov [rsp + 8], rcx",
        "mov [rsp + 16], rdx",
        "mov [rsp + 24], r8",
        "mov [rsp + 32], r9",
        "lea rcx, [rsp + 8]",
        "sub rsp, 40",
        "call {imp}",
        "add rsp, 40",
        "ret",
        imp = sym dbg_print_slots,
    )
}

/// `slots[0]` = ComponentId, `[1]` = Level, `[2]` = Format, `[3..]` the
/// variadic arguments.
unsafe extern "win64" fn dbg_print_slots(slots: *const u64) -> u32 {
    firewall("DbgPrintEx", || {
        // SAFETY: the thunk passes the caller's home area (4 slots) and
        // the stack arguments above it; the format is slot 2.
        let format = unsafe { slots.wrapping_add(2).read() } as *const u8;
        if format.is_null() {
            return 0;
        }
        // SAFETY: DbgPrintEx's Format is a NUL-terminated string.
        let fmt = unsafe { std::ffi::CStr::from_ptr(format.cast()) }.to_bytes();
        // SAFETY: the variadic slots start at slot 3; the format names how
        // many there are.
        let mut args = Args::new(slots.wrapping_add(3));
        // SAFETY: the caller passed arguments matching its format.
        let text = unsafe { format_windows(fmt, &mut args) };
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            log_line(line.to_owned());
        }
        0
    })
}

/// Lines kept in memory (the oldest are dropped beyond this).
const LOG_CAPACITY: usize = 100_000;
static LOG: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// Appends a line to the debugger log (and to stderr with
/// `RSNDK_BOTTLE_LOG` set).
pub fn log_line(line: String) {
    if std::env::var_os("RSNDK_BOTTLE_LOG").is_some() {
        eprintln!("[rsndk.sys] {line}");
    }
    let mut log = lock(&LOG);
    if log.len() == LOG_CAPACITY {
        log.pop_front();
    }
    log.push_back(line);
}

/// Every line of debugger output kept so far, oldest first.
pub fn log_lines() -> Vec<String> {
    lock(&LOG).iter().cloned().collect()
}

/// Every crt import.
pub fn exports() -> Vec<Export> {
    vec![
        export!("ntoskrnl.exe", memcpy),
        export!("ntoskrnl.exe", memmove),
        export!("ntoskrnl.exe", memset),
        export!("ntoskrnl.exe", memcmp),
        export!("ntoskrnl.exe", strlen),
        export!("ntoskrnl.exe", __chkstk),
        export!("ntoskrnl.exe", DbgPrintEx),
    ]
}

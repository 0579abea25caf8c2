//! Time (`KeQueryPerformanceCounter`), processor numbers, `KeBugCheckEx`
//! and `DbgBreakPoint`.

#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ndis::LARGE_INTEGER;
use ndkpi::PVOID;

use super::PERFORMANCE_FREQUENCY;
use super::stall::hook;
use crate::kernel::cpu::{self};
use crate::kernel::verifier::{self, firewall};

/// How far [`advance_performance_counter`] moved the counter ahead, in ns.
static COUNTER_AHEAD_NS: AtomicU64 = AtomicU64::new(0);

/// Moves `KeQueryPerformanceCounter` ahead by `by` for good, as if that
/// much time had passed at once: what a test uses to reach a driver's
/// timeout measured on the counter without waiting it out. (Kernel timers
/// keep the bottle's real clock.)
pub fn advance_performance_counter(by: Duration) {
    let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
    COUNTER_AHEAD_NS.fetch_add(ns, Ordering::SeqCst);
}

/// `KeQueryPerformanceCounter` (10 MHz, `CLOCK_MONOTONIC`, plus what
/// [`advance_performance_counter`] added).
pub unsafe extern "win64" fn KeQueryPerformanceCounter(
    PerformanceFrequency: *mut LARGE_INTEGER,
) -> LARGE_INTEGER {
    firewall("KeQueryPerformanceCounter", || {
        hook("KeQueryPerformanceCounter");
        if !PerformanceFrequency.is_null() {
            // SAFETY: a non-null pointer to a LARGE_INTEGER.
            unsafe { PerformanceFrequency.write_unaligned(PERFORMANCE_FREQUENCY) };
        }
        let ns = cpu::now_ns().saturating_add(COUNTER_AHEAD_NS.load(Ordering::SeqCst));
        (ns / 100) as i64
    })
}

/// `PROCESSOR_NUMBER`.
#[repr(C)]
pub(super) struct ProcessorNumber {
    pub(super) group: u16,
    pub(super) number: u8,
    pub(super) reserved: u8,
}

/// `KeGetCurrentProcessorNumberEx`: the processor's number (group 0).
pub unsafe extern "win64" fn KeGetCurrentProcessorNumberEx(ProcNumber: PVOID) -> u32 {
    firewall("KeGetCurrentProcessorNumberEx", || {
        let n = cpu::current_number();
        if !ProcNumber.is_null() {
            // SAFETY: a non-null pointer to a PROCESSOR_NUMBER.
            unsafe {
                ProcNumber
                    .cast::<ProcessorNumber>()
                    .write_unaligned(ProcessorNumber {
                        group: 0,
                        number: n as u8,
                        reserved: 0,
                    });
            };
        }
        n
    })
}

/// `KeBugCheckEx`: a naked thunk that adds the caller's return address as
/// a sixth argument, so the report names the calling RVA.
#[unsafe(naked)]
pub unsafe extern "win64" fn KeBugCheckEx() {
    core::arch::naked_asm!(
        "mov rax, [rsp]",
        "mov r10, [rsp + 0x28]",
        "sub rsp, 0x38",
        "mov [rsp + 0x20], r10",
        "mov [rsp + 0x28], rax",
        "call {imp}",
        "ud2",
        imp = sym bugcheck_ex,
    )
}

pub(super) unsafe extern "win64" fn bugcheck_ex(
    code: u32,
    p1: usize,
    p2: usize,
    p3: usize,
    p4: usize,
    caller: usize,
) -> ! {
    let params = [p1 as u64, p2 as u64, p3 as u64, p4 as u64];
    let mut rule = format!(
        "KeBugCheckEx called by the driver at {}",
        crate::loader::pe::describe(caller)
    );
    if code == u32::from_be_bytes(*b"RSNK") && p2 < 4096 && p1 != 0 {
        // rsndk's panic code: P1/P2 = file name (UTF-8), P3 line, P4 column.
        // SAFETY: the panic handler passes a file name of P2 bytes at P1
        // (static data of the image).
        let bytes = unsafe { std::slice::from_raw_parts(p1 as *const u8, p2) };
        let _ = write!(
            rule,
            ": rsndk panic at {}:{p3}:{p4}",
            String::from_utf8_lossy(bytes)
        );
    }
    verifier::bugcheck(code, params, rule)
}

/// `DbgBreakPoint`: the bottle plays a kernel debugger that logs the break
/// and continues (`g`), so what the driver does next (its bugcheck) is
/// still observed.
pub unsafe extern "win64" fn DbgBreakPoint() {
    firewall("DbgBreakPoint", || {
        crate::kernel::crt::log_line(format!(
            "DbgBreakPoint on processor {}: continuing",
            cpu::current_name()
        ));
    });
}

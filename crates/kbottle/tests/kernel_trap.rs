//! The trap handler on hand-made driver code: a few bytes mapped
//! executable and registered as an image, called on a processor thread
//! under `Policy::Park`. Each trapping instruction becomes a bugcheck that
//! names it and its RVA; the thread parks in normal context.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(unsafe_code)]

use kbottle::cpu;
use kbottle::pe::CodeRange;
use kbottle::trap::{self, Trapped};
use kbottle::verifier::{self, Bugcheck};

mod common;

/// Maps `code` at a fresh page (read + execute), preceded by `pad` bytes
/// of `nop`, registered as image `name` for the life of the process.
fn driver_code(pad: usize, code: &[u8]) -> usize {
    let len = 4096;
    // SAFETY: a fresh anonymous mapping.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let base = p as usize;
    // SAFETY: `pad + code.len()` < 4096 bytes of our mapping.
    unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0x90, pad) };
    // SAFETY: `pad + code.len()` < 4096, so the copy stays inside our
    // fresh writable mapping, which cannot overlap `code`.
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), (base + pad) as *mut u8, code.len()) };
    assert_eq!(
        // SAFETY: our mapping.
        unsafe { libc::mprotect(p, len, libc::PROT_READ | libc::PROT_EXEC) },
        0
    );
    std::mem::forget(CodeRange::register("test.sys", base..base + len));
    base
}

/// Calls the code at `addr` on a new processor (at `irql`) and returns
/// the bugcheck it hits.
fn trap_of(label: &str, irql: u8, addr: usize) -> Bugcheck {
    trap::install();
    common::on_new_processor(label, move || {
        if irql > 0 {
            cpu::raise(irql);
        }
        // SAFETY: hand-written code that traps before it could return.
        let f = unsafe { std::mem::transmute::<usize, unsafe extern "win64" fn()>(addr) };
        // SAFETY: `addr` is code `driver_code` mapped executable and
        // registered; it traps before returning, and the bottle parks this
        // processor.
        unsafe { f() };
    })
    .unwrap_or_else(|| panic!("{label}: returned"))
}

#[test]
fn a_cr8_write_is_reported_with_its_rva() {
    // nop x 0x20; mov cr8, rax; ret
    let base = driver_code(0x20, &[0x44, 0x0F, 0x22, 0xC0, 0xC3]);
    let b = trap_of("cr8-write", 0, base);
    assert_eq!(b.code, verifier::UNMODELLED);
    assert_eq!(b.params[0], (base + 0x20) as u64);
    assert!(
        b.rule.contains("mov cr8") && b.rule.contains("test.sys+0x20"),
        "{}",
        b.rule
    );
    // mov r10, cr8
    let base = driver_code(0, &[0x45, 0x0F, 0x20, 0xC2, 0xC3]);
    let b = trap_of("cr8-read", 0, base);
    assert!(b.rule.contains("with r10"), "{}", b.rule);
}

#[test]
fn ud2_is_an_illegal_instruction_exception() {
    let base = driver_code(5, &[0x0F, 0x0B]);
    let b = trap_of("ud2", 0, base);
    assert_eq!(
        (b.code, b.params[0], b.params[1]),
        (0x1E, 0xC000_001D, (base + 5) as u64)
    );
}

#[test]
fn fast_fail_reports_its_code() {
    // mov ecx, 3; int 29h
    let base = driver_code(0, &[0xB9, 0x03, 0x00, 0x00, 0x00, 0xCD, 0x29]);
    let b = trap_of("fastfail", 0, base);
    assert_eq!((b.code, b.params[0]), (0x139, 3));
}

#[test]
fn int3_is_a_breakpoint_exception() {
    let base = driver_code(3, &[0xCC, 0xC3]);
    let b = trap_of("int3", 0, base);
    assert_eq!(
        (b.code, b.params[0], b.params[1]),
        (0x1E, 0x8000_0003, (base + 3) as u64)
    );
}

#[test]
fn a_bad_access_depends_on_the_irql() {
    // mov rax, [0x10]; ret
    let code = [0x48, 0x8B, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00, 0xC3];
    let base = driver_code(0, &code);
    let b = trap_of("access-passive", 0, base);
    assert_eq!(
        (b.code, b.params[0], b.params[2]),
        (0x50, 0x10, base as u64)
    );
    let b = trap_of("access-dispatch", 2, base);
    assert_eq!(
        (b.code, b.params[0], b.params[1], b.params[2]),
        (0xD1, 0x10, 2, 0)
    );
}

#[test]
fn the_decoder_names_privileged_instructions() {
    assert_eq!(
        trap::decode(&[0x44, 0x0F, 0x20, 0xC0]),
        (Trapped::Cr8Read, 0)
    );
    assert_eq!(
        trap::decode(&[0x44, 0x0F, 0x22, 0xC1]),
        (Trapped::Cr8Write, 1)
    );
    assert_eq!(
        trap::decode(&[0x45, 0x0F, 0x20, 0xC0]),
        (Trapped::Cr8Read, 8)
    );
    assert_eq!(
        trap::decode(&[0x4C, 0x0F, 0x22, 0xC0]),
        (Trapped::Cr8Write, 0)
    );
    assert_eq!(
        trap::decode(&[0x0F, 0x20, 0xC0]).0,
        Trapped::Privileged,
        "CR0"
    );
    assert_eq!(trap::decode(&[0xFA]).0, Trapped::Cli);
    assert_eq!(trap::decode(&[0x0F, 0x30]).0, Trapped::Wrmsr);
    assert_eq!(trap::decode(&[0xCD, 0x2C]).0, Trapped::Assertion);
}

//! Special pool: pool blocks against guard pages, freed blocks kept
//! inaccessible. Hand-made driver code (a few bytes mapped executable and
//! registered as an image) writes past a block's end, before its start or
//! reads a freed block on a processor thread under `Policy::Park`; with
//! special pool on each access is a 0xD6 or 0xD5 report naming the
//! address (a write into a block's alignment bytes, which faults nothing,
//! a 0xC1 report when the block is freed), and with it off the same accesses pass unnoticed (what the
//! option is for).
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(unsafe_code)]

use std::sync::{Mutex, MutexGuard, PoisonError};

use kbottle::pe::CodeRange;
use kbottle::special_pool::{self, Align, Fault, SpecialPool};
use kbottle::verifier::{self, Bugcheck};
use kbottle::{cpu, pool, trap};

mod common;

static SERIAL: Mutex<()> = Mutex::new(());

/// Special pool's setting is process-wide: one test at a time.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

const NP: u64 = pool::POOL_FLAG_NON_PAGED;
const TAG: u32 = u32::from_le_bytes(*b"SpPl");
/// `mov byte ptr [rcx], 0x41; ret`: the driver writes its argument.
const WRITE_BYTE: [u8; 4] = [0xC6, 0x01, 0x41, 0xC3];
/// `mov al, byte ptr [rcx]; ret`: the driver reads its argument.
const READ_BYTE: [u8; 3] = [0x8A, 0x01, 0xC3];

/// Maps `code` at a fresh page (read + execute), registered as image
/// `special.sys` for the life of the process.
fn driver_code(code: &[u8]) -> usize {
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
    // SAFETY: `code` is a few bytes, inside our fresh writable mapping,
    // which cannot overlap it.
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), base as *mut u8, code.len()) };
    assert_eq!(
        // SAFETY: our mapping.
        unsafe { libc::mprotect(p, len, libc::PROT_READ | libc::PROT_EXEC) },
        0
    );
    std::mem::forget(CodeRange::register("special.sys", base..base + len));
    base
}

/// Runs the driver code at `code` with `arg` on a new processor (at
/// `irql`): the bugcheck it hits, or None if it returned.
fn run(label: &str, irql: u8, code: usize, arg: usize) -> Option<Bugcheck> {
    trap::install();
    common::on_new_processor(label, move || {
        if irql > 0 {
            cpu::raise(irql);
        }
        // SAFETY: hand-written code taking one pointer argument.
        let f = unsafe { std::mem::transmute::<usize, unsafe extern "win64" fn(usize)>(code) };
        // SAFETY: `code` is mapped executable and registered; it accesses
        // one byte at `arg` and returns, or faults and the bottle parks
        // this processor.
        unsafe { f(arg) };
        if irql > 0 {
            cpu::lower(0);
        }
    })
}

fn alloc(size: usize) -> usize {
    let p = pool::allocate(NP, size, TAG, 0) as usize;
    assert_ne!(p, 0, "pool allocation of {size} bytes");
    p
}

#[test]
fn a_driver_overrun_is_a_0xd6_report_with_the_address() {
    let _s = serial();
    special_pool::set(Some(SpecialPool::DEFAULT));
    let write = driver_code(&WRITE_BYTE);
    let p = alloc(48);
    assert_eq!((p + 48) % 4096, 0, "end-aligned: the block ends its page");
    // Inside the block: no report.
    assert_eq!(run("in-bounds", 0, write, p + 47), None);
    let b = run("overrun", 0, write, p + 48).expect("the overrun faults");
    assert_eq!(
        b.code,
        verifier::DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION,
        "{}",
        b.rule
    );
    assert_eq!(
        (b.params[0], b.params[1], b.params[2]),
        ((p + 48) as u64, 1, write as u64)
    );
    assert!(
        b.rule.contains("48-byte block") && b.rule.contains("special.sys+0x0"),
        "{}",
        b.rule
    );
    // At DISPATCH_LEVEL too (not 0xD1: special pool knows the page).
    let q = alloc(4096);
    assert_eq!(q % 4096, 0, "a page-sized block stays page-aligned");
    let b = run("overrun-dispatch", 2, write, q + 4096).expect("the overrun faults");
    assert_eq!((b.code, b.params[0]), (0xD6, (q + 4096) as u64));
    pool::free(p, Some(TAG), 0);
    pool::free(q, Some(TAG), 0);
}

#[test]
fn a_driver_use_after_free_is_a_0xd5_report_with_the_address() {
    let _s = serial();
    special_pool::set(Some(SpecialPool::DEFAULT));
    let read = driver_code(&READ_BYTE);
    let write = driver_code(&WRITE_BYTE);
    let p = alloc(100);
    assert_eq!(run("before-free", 0, read, p), None);
    pool::free(p, Some(TAG), 0);
    let b = run("use-after-free", 0, read, p + 10).expect("the read faults");
    assert_eq!(
        b.code,
        verifier::DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL,
        "{}",
        b.rule
    );
    assert_eq!(
        (b.params[0], b.params[1], b.params[2]),
        ((p + 10) as u64, 0, read as u64)
    );
    assert!(b.rule.contains("freed 100-byte block"), "{}", b.rule);
    let b = run("write-after-free", 2, write, p).expect("the write faults");
    assert_eq!((b.code, b.params[0], b.params[1]), (0xD5, p as u64, 1));
    // A double free is still told apart from a foreign free.
    let v = pool::check_free(p, Some(TAG)).expect("a violation");
    assert_eq!((v.code, v.params[0]), (0xC4, 0x13));
}

/// Frees `p` on a new processor: the bugcheck the free hits, if any.
fn free_on_processor(label: &str, p: usize) -> Option<Bugcheck> {
    common::on_new_processor(label, move || pool::free(p, Some(TAG), 0))
}

#[test]
fn a_write_into_the_alignment_bytes_is_a_0xc1_report_at_free() {
    let _s = serial();
    special_pool::set(Some(SpecialPool::DEFAULT));
    let write = driver_code(&WRITE_BYTE);
    // 40 bytes end-aligned to 16: 8 bytes between the block and its guard.
    let p = alloc(40);
    assert_eq!((p + 48) % 4096, 0);
    assert_eq!(run("into-slack", 0, write, p + 41), None, "no fault there");
    let b = free_on_processor("free-after-slack-write", p).expect("the free stops");
    assert_eq!(
        b.code,
        verifier::SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION,
        "{}",
        b.rule
    );
    assert_eq!(b.params, [p as u64, (p + 41) as u64, 0, 0x24]);
    // An untouched block frees quietly.
    let q = alloc(40);
    assert_eq!(free_on_processor("clean-free", q), None);
}

#[test]
fn start_alignment_catches_underruns() {
    let _s = serial();
    special_pool::set(Some(SpecialPool {
        align: Align::Start,
        ..SpecialPool::DEFAULT
    }));
    let write = driver_code(&WRITE_BYTE);
    let p = alloc(40);
    assert_eq!(p % 4096, 0);
    let b = run("underrun", 0, write, p - 1).expect("the underrun faults");
    assert_eq!((b.code, b.params[0]), (0xD6, (p - 1) as u64));
    pool::free(p, Some(TAG), 0);
    special_pool::set(Some(SpecialPool::DEFAULT));
}

#[test]
fn the_quarantine_keeps_the_latest_frees_inaccessible() {
    let _s = serial();
    special_pool::set(Some(SpecialPool {
        quarantine_blocks: 2,
        ..SpecialPool::DEFAULT
    }));
    let blocks: Vec<usize> = (0..3).map(|_| alloc(64)).collect();
    for &b in &blocks {
        pool::free(b, Some(TAG), 0);
    }
    // The oldest left quarantine (unmapped); the two latest are in it.
    assert_eq!(special_pool::classify(blocks[0]), None);
    for &b in &blocks[1..] {
        assert_eq!(
            special_pool::classify(b),
            Some(Fault::Freed { block: b, size: 64 })
        );
    }
    special_pool::set(Some(SpecialPool::DEFAULT));
}

#[test]
fn without_special_pool_the_same_mistakes_pass_unnoticed() {
    let _s = serial();
    special_pool::set(None);
    let read = driver_code(&READ_BYTE);
    let write = driver_code(&WRITE_BYTE);
    let p = alloc(48);
    assert_eq!(special_pool::classify(p + 48), None);
    // The byte after a 48-byte heap block is malloc's slack (56 usable):
    // the overrun lands and nothing reports it.
    assert_eq!(run("quiet-overrun", 0, write, p + 48), None);
    pool::free(p, Some(TAG), 0);
    // The freed block is poison, readable: no report either.
    assert_eq!(run("quiet-use-after-free", 0, read, p), None);
    special_pool::set(Some(SpecialPool::DEFAULT));
}

//! The kernel panic handler: a Rust panic stops the machine with a bug
//! check that names rsndk, so it leaves a crash dump instead of hanging a
//! processor.
//!
//! Why our own: wdk-panic 0.4.1 (the released crate) spins forever on a
//! panic, which at `DISPATCH_LEVEL` hangs a processor with no dump. Its
//! unreleased `main` bugchecks (code `'RPNC'`); once that is released,
//! `extern crate wdk_panic;` can replace this module.
//!
//! Bug check [`RSNDK_BUGCHECK_CODE`] (`0x52534E4B`, "RSNK") parameters:
//! 1. address of the source file name (UTF-8, not NUL-terminated),
//! 2. its length in bytes,
//! 3. line, 4. column.
//!
//! In `!analyze -v`, `da <p1> L<p2>` prints the file. The message itself
//! goes to the debugger first (`DbgPrintEx`, error level) when the
//! processor is at or below `DISPATCH_LEVEL`. Debug builds break into the
//! debugger before bugchecking (without a kernel debugger attached that
//! breakpoint itself bugchecks, with KMODE_EXCEPTION_NOT_HANDLED).
//!
//! Not compiled into this crate's own unit tests, whose harness brings std.

/// The bug check code of a Rust panic in rsndk ("RSNK").
pub const RSNDK_BUGCHECK_CODE: u32 = u32::from_be_bytes(*b"RSNK");

#[cfg(not(test))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let (file, line, column) = info
        .location()
        .map_or(("", 0, 0), |l| (l.file(), l.line(), l.column()));
    // Printing above DISPATCH_LEVEL could deadlock on the debugger's IPIs.
    if super::irql::current() <= ndis::DISPATCH_LEVEL {
        super::log::log_error!("rsndk: panic at {file}:{line}:{column}: {}", info.message());
    }
    if cfg!(debug_assertions) {
        // Debug builds are for machines with a kernel debugger (see
        // docs/windows.md).
        super::kit::kernel::break_into_debugger();
    }
    super::kit::kernel::bug_check(
        RSNDK_BUGCHECK_CODE,
        [
            file.as_ptr() as usize,
            file.len(),
            line as usize,
            column as usize,
        ],
    )
}

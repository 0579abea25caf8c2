//! Ctrl-C (SIGINT) during a measurement: the first one asks the run to
//! stop where it is, so that what was measured so far is reported
//! (marked interrupted) and the process exits with 130; a second one
//! ends the process at once, as an unhandled SIGINT would.

use std::sync::atomic::{AtomicBool, Ordering};

/// Exit code of an interrupted run (128 + SIGINT), as a shell reports it.
pub const EXIT_INTERRUPTED: u8 = 130;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The handler: only async-signal-safe work (an atomic swap, `_exit`).
extern "C" fn on_sigint(_: libc::c_int) {
    if REQUESTED.swap(true, Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe and never returns.
        unsafe { libc::_exit(i32::from(EXIT_INTERRUPTED)) };
    }
}

/// Routes SIGINT to [`requested`] from now on.
pub fn install() {
    let handler: extern "C" fn(libc::c_int) = on_sigint;
    // SAFETY: installs a handler that only touches an atomic and calls
    // `_exit`; `signal` has no other effect on this process.
    unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) };
}

/// A SIGINT arrived since [`install`] (or [`request`]).
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Asks the running measurement to stop, as a SIGINT does.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

//! The signal plumbing every processor thread needs, below the trap
//! handlers and the processors: an alternate signal stack (the trap
//! handlers and the park handler run on it), and the *park signal*, by
//! which the watchdog stops a processor it reported (under
//! `Policy::Park`): a signal whose handler never returns. A leaf: libc
//! only.

use std::mem::MaybeUninit;
use std::sync::Once;

static PARK_INSTALL: Once = Once::new();

/// Gives the calling thread an alternate signal stack unless it has one
/// (std's threads have one for its stack-overflow handler). The stack is
/// leaked: one per thread, 64 KiB.
pub fn ensure_altstack() {
    const SIZE: usize = 64 * 1024;
    let mut current = MaybeUninit::<libc::stack_t>::uninit();
    // SAFETY: querying the current alternate stack into `current`.
    if unsafe { libc::sigaltstack(std::ptr::null(), current.as_mut_ptr()) } != 0 {
        return;
    }
    // SAFETY: initialised by the successful call above.
    let current = unsafe { current.assume_init() };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        return;
    }
    let stack = Box::leak(vec![0u8; SIZE].into_boxed_slice());
    let st = libc::stack_t {
        ss_sp: stack.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: SIZE,
    };
    // SAFETY: `stack` is leaked, so valid for the thread's life.
    unsafe { libc::sigaltstack(&raw const st, std::ptr::null_mut()) };
}

/// The signal that parks a processor (a real-time signal).
fn park_signal() -> i32 {
    libc::SIGRTMIN() + 5
}

extern "C" fn on_park(_sig: i32) {
    loop {
        // SAFETY: pause is async-signal-safe; this thread never resumes.
        unsafe { libc::pause() };
    }
}

/// Stops `thread` for good: it takes the park signal, whose handler never
/// returns (it runs on the thread's alternate stack).
pub(crate) fn park_thread(thread: libc::pthread_t) {
    PARK_INSTALL.call_once(|| {
        // SAFETY: an all-zero sigaction is a valid value to build on.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_park as *const () as usize;
        act.sa_flags = libc::SA_ONSTACK;
        // SAFETY: installing a handler for a real-time signal nobody else
        // in the bottle uses.
        unsafe { libc::sigaction(park_signal(), &raw const act, std::ptr::null_mut()) };
    });
    // SAFETY: `thread` is a live processor thread (from the registry).
    unsafe { libc::pthread_kill(thread, park_signal()) };
}

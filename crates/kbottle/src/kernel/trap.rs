//! Traps: what driver code executes that user space cannot (privileged
//! instructions, `int 29h` fast fails, `int 2Ch` assertions, `ud2`,
//! `int3`) and faulting memory accesses from driver code become bugcheck
//! reports naming the instruction and its RVA.
//!
//! The SIGSEGV/SIGILL/SIGTRAP/SIGBUS handlers run on the thread's
//! alternate signal stack. For a fault whose RIP is inside a loaded
//! image they decode the instruction (no locks, no allocation), write a
//! preformatted line to stderr, and rewrite the interrupted context so
//! that, on return from the handler, the thread "calls" a landing
//! function that files the bugcheck in normal context (with the report,
//! backtrace and policy of [`crate::kernel::verifier::bugcheck`]). Faults outside
//! any image go to the handler that was installed before (Rust's own
//! stack-overflow handler, or the default action).

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::kernel::verifier::{
    self, DRIVER_IRQL_NOT_LESS_OR_EQUAL, DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION,
    DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL, KERNEL_SECURITY_CHECK_FAILURE,
    KMODE_EXCEPTION_NOT_HANDLED, PAGE_FAULT_IN_NONPAGED_AREA, UNMODELLED,
};

const SIGNALS: [i32; 4] = [libc::SIGSEGV, libc::SIGILL, libc::SIGTRAP, libc::SIGBUS];

/// The actions installed before ours, written once before our handlers
/// go live and only read afterwards.
struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; 4]>);

// SAFETY: written only inside `INSTALL.call_once` before any of our
// handlers is installed; read-only afterwards.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous(UnsafeCell::new([MaybeUninit::uninit(); 4]));
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the trap handlers (once per process; later calls do nothing)
/// and gives the calling thread an alternate signal stack if it has none.
pub fn install() {
    super::signals::ensure_altstack();
    INSTALL.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: an all-zero sigaction is a valid value to build on.
            let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
            act.sa_sigaction = on_trap as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // SAFETY: `act.sa_mask` is a valid sigset to fill.
            unsafe { libc::sigemptyset(&raw mut act.sa_mask) };
            // SAFETY: PREVIOUS is only written here, inside call_once,
            // before the handler that reads it is installed.
            let slot = unsafe { (*PREVIOUS.0.get())[i].as_mut_ptr() };
            // SAFETY: installing a handler for a valid signal; the old
            // action is stored in `slot`.
            unsafe { libc::sigaction(sig, &raw const act, slot) };
        }
        INSTALLED.store(true, Ordering::SeqCst);
    });
}

/// Whether [`install`] ran.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::SeqCst)
}

// ---- Signal-safe text ----

/// A fixed buffer implementing `fmt::Write` without allocating.
struct Line {
    buf: [u8; 320],
    len: usize,
}

impl Line {
    const fn new() -> Self {
        Self {
            buf: [0; 320],
            len: 0,
        }
    }

    fn emit(&self) {
        // SAFETY: writing our own initialised bytes to stderr.
        unsafe { libc::write(2, self.buf.as_ptr().cast(), self.len) };
    }
}

impl core::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

const GPR_NAMES: [&str; 16] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];

/// What the handler decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Trapped {
    /// `mov r64, cr8` (register in the detail byte).
    Cr8Read = 0,
    /// `mov cr8, r64`.
    Cr8Write = 1,
    /// `cli`.
    Cli = 2,
    /// `sti`.
    Sti = 3,
    /// `hlt`.
    Hlt = 4,
    /// `rdmsr`.
    Rdmsr = 5,
    /// `wrmsr`.
    Wrmsr = 6,
    /// `int 29h` (`__fastfail`).
    FastFail = 7,
    /// `int 2Ch` (assertion failure).
    Assertion = 8,
    /// `ud2`.
    Ud2 = 9,
    /// `int3`.
    Breakpoint = 10,
    /// A faulting data access at or above `DISPATCH_LEVEL`.
    AccessRaised = 11,
    /// A faulting data access below `DISPATCH_LEVEL`.
    AccessPassive = 12,
    /// Another instruction user space may not execute.
    Privileged = 13,
}

impl Trapped {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Cr8Read,
            1 => Self::Cr8Write,
            2 => Self::Cli,
            3 => Self::Sti,
            4 => Self::Hlt,
            5 => Self::Rdmsr,
            6 => Self::Wrmsr,
            7 => Self::FastFail,
            8 => Self::Assertion,
            9 => Self::Ud2,
            10 => Self::Breakpoint,
            11 => Self::AccessRaised,
            12 => Self::AccessPassive,
            _ => Self::Privileged,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Cr8Read => "mov r64, cr8 (inline KeGetCurrentIrql)",
            Self::Cr8Write => "mov cr8, r64 (inline KeRaiseIrql/KeLowerIrql)",
            Self::Cli => "cli",
            Self::Sti => "sti",
            Self::Hlt => "hlt",
            Self::Rdmsr => "rdmsr",
            Self::Wrmsr => "wrmsr",
            Self::FastFail => "int 29h (__fastfail)",
            Self::Assertion => "int 2Ch (assertion failure)",
            Self::Ud2 => "ud2",
            Self::Breakpoint => "int3",
            Self::AccessRaised | Self::AccessPassive => "faulting memory access",
            Self::Privileged => "privileged instruction",
        }
    }
}

/// Decodes the instruction at `code` (bytes of driver text) for a #GP,
/// #UD or #BP: (what, register index for CR8 moves).
pub fn decode(code: &[u8]) -> (Trapped, u8) {
    match code {
        [rex @ 0x40..=0x4F, 0x0F, op @ (0x20 | 0x22), modrm, ..] if rex & 0x4 != 0 => {
            let cr = 8 | ((modrm >> 3) & 7);
            let gpr = ((rex & 1) << 3) | (modrm & 7);
            if cr == 8 {
                (
                    if *op == 0x20 {
                        Trapped::Cr8Read
                    } else {
                        Trapped::Cr8Write
                    },
                    gpr,
                )
            } else {
                (Trapped::Privileged, 0)
            }
        }
        [0xFA, ..] => (Trapped::Cli, 0),
        [0xFB, ..] => (Trapped::Sti, 0),
        [0xF4, ..] => (Trapped::Hlt, 0),
        [0x0F, 0x32, ..] => (Trapped::Rdmsr, 0),
        [0x0F, 0x30, ..] => (Trapped::Wrmsr, 0),
        [0xCD, 0x29, ..] => (Trapped::FastFail, 0),
        [0xCD, 0x2C, ..] => (Trapped::Assertion, 0),
        [0x0F, 0x0B, ..] => (Trapped::Ud2, 0),
        [0xCC, ..] => (Trapped::Breakpoint, 0),
        _ => (Trapped::Privileged, 0),
    }
}

/// STATUS_BREAKPOINT, STATUS_ILLEGAL_INSTRUCTION, STATUS_PRIVILEGED_INSTRUCTION,
/// STATUS_ASSERTION_FAILURE.
const STATUS_BREAKPOINT: u64 = 0x8000_0003;
const STATUS_ILLEGAL_INSTRUCTION: u64 = 0xC000_001D;
const STATUS_PRIVILEGED_INSTRUCTION: u64 = 0xC000_0096;
const STATUS_ASSERTION_FAILURE: u64 = 0xC000_0420;

/// The landing: files the bugcheck in normal context. `what` = trapped
/// kind | register << 8.
extern "C" fn trap_landing(what: u64, rip: u64, a: u64, b: u64, c: u64, d: u64) -> ! {
    let kind = Trapped::from_u8(what as u8);
    let reg = GPR_NAMES[((what >> 8) & 15) as usize];
    let at = crate::loader::pe::describe(rip as usize);
    let special = matches!(kind, Trapped::AccessRaised | Trapped::AccessPassive)
        .then(|| crate::kernel::special_pool::classify(a as usize))
        .flatten();
    if let Some(fault) = special {
        let (code, params, rule) = special_pool_fault(fault, a, c, rip, &at);
        verifier::bugcheck(code, params, rule)
    }
    let (code, params, rule) = match kind {
        Trapped::Cr8Read | Trapped::Cr8Write => (
            UNMODELLED,
            [
                rip,
                u64::from(kind == Trapped::Cr8Write),
                (what >> 8) & 15,
                0,
            ],
            format!(
                "{} with {reg} at {at}: the bottle does not emulate CR8; import KeGetCurrentIrql/KfRaiseIrql/KeLowerIrql",
                kind.name()
            ),
        ),
        Trapped::Cli
        | Trapped::Sti
        | Trapped::Hlt
        | Trapped::Rdmsr
        | Trapped::Wrmsr
        | Trapped::Privileged => (
            UNMODELLED,
            [STATUS_PRIVILEGED_INSTRUCTION, rip, 0, 0],
            format!("{} at {at}: not modelled by the bottle", kind.name()),
        ),
        Trapped::FastFail => (
            KERNEL_SECURITY_CHECK_FAILURE,
            [a, 0, 0, 0],
            format!("__fastfail({a}) at {at}"),
        ),
        Trapped::Assertion => (
            KMODE_EXCEPTION_NOT_HANDLED,
            [STATUS_ASSERTION_FAILURE, rip, 0, 0],
            format!("assertion failure (int 2Ch) at {at}"),
        ),
        Trapped::Ud2 => (
            KMODE_EXCEPTION_NOT_HANDLED,
            [STATUS_ILLEGAL_INSTRUCTION, rip, 0, 0],
            format!("ud2 (illegal instruction) at {at}"),
        ),
        Trapped::Breakpoint => (
            KMODE_EXCEPTION_NOT_HANDLED,
            [STATUS_BREAKPOINT, rip, 0, 0],
            format!("int3 at {at} (no debugger would take it)"),
        ),
        Trapped::AccessRaised => (
            DRIVER_IRQL_NOT_LESS_OR_EQUAL,
            [a, b, c, rip],
            format!("driver access to {a:#x} at IRQL {b} faulted at {at}"),
        ),
        Trapped::AccessPassive => (
            PAGE_FAULT_IN_NONPAGED_AREA,
            [a, c, rip, d],
            format!("driver access to {a:#x} faulted at {at}"),
        ),
    };
    verifier::bugcheck(code, params, rule)
}

/// A driver access `addr` that special pool caught: beyond a live
/// block's end (0xD6) or into a freed one (0xD5); `access` is the trap's
/// read (0) / write (1) / fetch (2 or 8) code.
fn special_pool_fault(
    fault: crate::kernel::special_pool::Fault,
    addr: u64,
    access: u64,
    rip: u64,
    at: &str,
) -> (u32, [u64; 4], String) {
    use crate::kernel::special_pool::Fault;
    let write = u64::from(access == 1);
    let verb = if write == 1 { "write" } else { "read" };
    match fault {
        Fault::BeyondEnd { block, size } => (
            DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION,
            [addr, write, rip, 0],
            format!(
                "special pool: driver {verb} of {addr:#x}, outside the {size}-byte block at {block:#x} (offset {}), at {at}",
                signed_offset(addr, block)
            ),
        ),
        Fault::Freed { block, size } => (
            DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL,
            [addr, write, rip, 0],
            format!(
                "special pool: driver {verb} of {addr:#x} in the freed {size}-byte block at {block:#x} (offset {}), at {at}",
                signed_offset(addr, block)
            ),
        ),
    }
}

/// `addr - block` as `+0x..` or `-0x..`.
fn signed_offset(addr: u64, block: usize) -> String {
    let block = block as u64;
    if addr >= block {
        format!("+{:#x}", addr - block)
    } else {
        format!("-{:#x}", block - addr)
    }
}

/// The handler of SIGSEGV, SIGILL, SIGTRAP and SIGBUS.
extern "C" fn on_trap(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let uc = ctx.cast::<libc::ucontext_t>();
    // SAFETY: the kernel passes a valid ucontext to an SA_SIGINFO handler.
    let gregs = unsafe { &mut (*uc).uc_mcontext.gregs };
    let rip = gregs[libc::REG_RIP as usize] as usize;
    // int3 reports the address after the instruction.
    let at = if sig == libc::SIGTRAP {
        rip.wrapping_sub(1)
    } else {
        rip
    };
    if crate::loader::pe::image_base_of(at).is_none() {
        chain(sig, info, ctx);
        return;
    }
    // SAFETY: the kernel passes valid siginfo.
    let info_ref = unsafe { &*info };
    // SAFETY: SIGSEGV/SIGBUS/SIGILL/SIGTRAP siginfo carries si_addr.
    let fault_addr = unsafe { info_ref.si_addr() } as usize;
    let si_code = info_ref.si_code;
    let rsp = gregs[libc::REG_RSP as usize] as usize;
    let mut args = [0u64; 4];
    let (kind, reg) = if (sig == libc::SIGSEGV || sig == libc::SIGBUS) && si_code != 0x80 {
        // A data access (SEGV_MAPERR/ACCERR, BUS_*), not a #GP (SI_KERNEL).
        if fault_addr < rsp && rsp - fault_addr < 256 * 1024 {
            let mut l = Line::new();
            let _ = core::fmt::Write::write_fmt(
                &mut l,
                format_args!(
                    "\n*** kbottle: driver stack overflow at RVA {:#x} (fault address {fault_addr:#x})\n",
                    at - crate::loader::pe::image_base_of(at).unwrap_or(0)
                ),
            );
            l.emit();
            // SAFETY: abort is async-signal-safe.
            unsafe { libc::abort() };
        }
        let irql = super::processor::irql_signal_safe();
        let err = gregs[libc::REG_ERR as usize] as u64;
        let write = err & 2 != 0;
        let fetch = err & 0x10 != 0;
        args[0] = fault_addr as u64;
        args[1] = u64::from(irql);
        args[2] = if fetch { 8 } else { u64::from(write) };
        args[3] = 0;
        if irql >= super::processor::DISPATCH_LEVEL {
            (Trapped::AccessRaised, 0)
        } else {
            args[2] = if fetch { 2 } else { u64::from(write) };
            (Trapped::AccessPassive, 0)
        }
    } else {
        let base = crate::loader::pe::image_base_of(at).unwrap_or(at);
        let end = crate::loader::pe::image_end_of(at).unwrap_or(at);
        let n = (end - at).min(4);
        // SAFETY: `at..at+n` is inside a loaded image's mapping (its text,
        // readable) — the instruction that trapped.
        let bytes = unsafe { std::slice::from_raw_parts(at as *const u8, n) };
        let _ = base;
        let d = decode(bytes);
        if d.0 == Trapped::FastFail {
            args[0] = gregs[libc::REG_RCX as usize] as u64;
        }
        d
    };
    let base = crate::loader::pe::image_base_of(at).unwrap_or(0);
    let mut l = Line::new();
    let _ = core::fmt::Write::write_fmt(
        &mut l,
        format_args!(
            "\n*** kbottle trap: {} at driver RVA {:#x} (signal {sig})\n",
            kind.name(),
            at - base
        ),
    );
    l.emit();
    // Make the thread "call" the landing when the handler returns: a fake
    // return address (the trapping instruction) below the interrupted
    // stack, RSP at a call boundary (8 mod 16), SysV argument registers.
    let new_rsp = ((rsp - 1024) & !15) - 8;
    // SAFETY: the interrupted stack is mapped below RSP (it is the thread's
    // stack and not overflowing: checked above); x64 Windows code keeps no
    // data below RSP.
    unsafe { (new_rsp as *mut u64).write(at as u64) };
    gregs[libc::REG_RSP as usize] = new_rsp as i64;
    gregs[libc::REG_RIP as usize] = trap_landing as *const () as i64;
    gregs[libc::REG_RDI as usize] = (kind as u64 | (u64::from(reg) << 8)) as i64;
    gregs[libc::REG_RSI as usize] = at as i64;
    gregs[libc::REG_RDX as usize] = args[0] as i64;
    gregs[libc::REG_RCX as usize] = args[1] as i64;
    gregs[libc::REG_R8 as usize] = args[2] as i64;
    gregs[libc::REG_R9 as usize] = args[3] as i64;
}

/// Hands a signal that is not ours to the action installed before.
fn chain(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
        return;
    };
    // SAFETY: PREVIOUS is read-only once our handlers are installed.
    let previous = unsafe { &*PREVIOUS.0.get() };
    // SAFETY: slot `i` was written by sigaction before our handler went live.
    let prev = unsafe { previous[i].assume_init() };
    let handler = prev.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // Re-raise with the default action: restore it and return, so the
        // instruction faults again and the process dies as it would have.
        // SAFETY: an all-zero sigaction is SIG_DFL with no flags.
        let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
        dfl.sa_sigaction = libc::SIG_DFL;
        // SAFETY: restoring the default action of a valid signal.
        unsafe { libc::sigaction(sig, &raw const dfl, std::ptr::null_mut()) };
        return;
    }
    if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed with SA_SIGINFO, so it
        // has this signature.
        let f = unsafe {
            std::mem::transmute::<usize, extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void)>(
                handler,
            )
        };
        f(sig, info, ctx);
    } else {
        // SAFETY: a plain handler takes the signal number.
        let f = unsafe { std::mem::transmute::<usize, extern "C" fn(i32)>(handler) };
        f(sig);
    }
}

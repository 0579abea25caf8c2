//! The IRQL of the current processor. On x64 `KeGetCurrentIrql`,
//! `KeRaiseIrql` and `KeLowerIrql` are inline functions of the WDK headers
//! that read and write CR8 (the task-priority register); there is nothing
//! to import, so this module does what they do.

use core::arch::asm;

use ndis::{DISPATCH_LEVEL, KIRQL};

/// The current IRQL (`KeGetCurrentIrql`).
pub fn current() -> KIRQL {
    let cr8: u64;
    // SAFETY: reading CR8 is a register move without side effects; kernel
    // code runs at CPL 0, where it is allowed.
    unsafe { asm!("mov {}, cr8", out(reg) cr8, options(nomem, nostack, preserves_flags)) };
    cr8 as KIRQL
}

/// Raises to `DISPATCH_LEVEL` (`KeRaiseIrqlToDpcLevel`); returns the level
/// to give to [`lower`]. Raising from above `DISPATCH_LEVEL` keeps the
/// higher level (KeRaiseIrql would bug-check; the provider never runs there).
pub fn raise_to_dispatch() -> KIRQL {
    let old = current();
    if old < DISPATCH_LEVEL {
        let new = u64::from(DISPATCH_LEVEL);
        // SAFETY: raising CR8 only masks interrupts; the caller pairs it
        // with `lower(old)` on the same processor (no context switch can
        // happen at DISPATCH_LEVEL).
        unsafe { asm!("mov cr8, {}", in(reg) new, options(nomem, nostack, preserves_flags)) };
    }
    old
}

/// Returns to `old`, which a matching [`raise_to_dispatch`] returned
/// (`KeLowerIrql`).
pub fn lower(old: KIRQL) {
    if old < current() {
        let new = u64::from(old);
        // SAFETY: lowering to the level this processor ran at before the
        // matching raise; pending DPCs and APCs are delivered by the
        // hardware's task-priority logic (the inline KeLowerIrql does the
        // same write).
        unsafe { asm!("mov cr8, {}", in(reg) new, options(nomem, nostack, preserves_flags)) };
    }
}

//! The IRQL of the current processor, through the kernel's own routines.
//!
//! For Windows 8 and later `wdm.h` makes `KfRaiseIrql` and `KeLowerIrql`
//! ntoskrnl imports for drivers (`KeRaiseIrql(a, b)` is the macro
//! `*(b) = KfRaiseIrql(a)`); `KeGetCurrentIrql` is an ntoskrnl export too.
//! Only `NT_INLINE_IRQL` or pre-Windows 8 builds write CR8 inline. Going
//! through the imports lets Driver Verifier check every transition
//! (0xC4/0x30, 0x31) and makes a lowering the point where pending DPCs
//! run, exactly as the kernel defines it. No CR8 access is left in the
//! image.

use ndis::KIRQL;

use super::kit::kernel;

/// The current IRQL (`KeGetCurrentIrql`).
pub fn current() -> KIRQL {
    kernel::current_irql()
}

/// Raises to `DISPATCH_LEVEL` (`KeRaiseIrqlToDpcLevel`, i.e.
/// `KfRaiseIrql(DISPATCH_LEVEL)`); returns the previous level, exactly,
/// for [`lower`]. Callers run at or below `DISPATCH_LEVEL` (every path of
/// this driver does; raising from above would be Verifier's 0xC4/0x30).
pub fn raise_to_dispatch() -> KIRQL {
    kernel::raise_to_dispatch()
}

/// Returns to `old`, the level a matching [`raise_to_dispatch`] returned
/// (`KeLowerIrql`): PASSIVE, APC or DISPATCH, whichever it was. Lowering
/// below `DISPATCH_LEVEL` runs this processor's pending DPCs.
pub fn lower(old: KIRQL) {
    kernel::lower_irql(old);
}

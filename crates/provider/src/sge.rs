//! Scatter/gather lists as the consumer passes them.
//!
//! A consumer's list is read as `hwq::Sge`s ([`crate::abi::sge_list`]) and
//! copied into WQEs verbatim: a privileged-token SGE carries a logical
//! address, any other a virtual address inside a registered region; the
//! device checks tokens, bounds and rights and reports violations in the
//! CQE.

use hwq::Sge;
use ndkpi::{NTSTATUS, STATUS_INVALID_PARAMETER};

/// Sum of the SGE lengths, if it fits `max_transfer`.
pub fn total(sges: &[Sge], max_transfer: u32) -> Result<u32, NTSTATUS> {
    let sum: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    if sum > u64::from(max_transfer) {
        return Err(STATUS_INVALID_PARAMETER);
    }
    Ok(sum as u32)
}

/// Copies `src` into the front of `dst`; `None` if it does not fit.
///
/// Posts usually carry one SGE, and a variable-length `copy_from_slice`
/// of 16 bytes becomes a call into the C library's `memmove` that costs
/// more than the copy: the single entry is copied inline instead.
pub fn copy_into(dst: &mut [Sge], src: &[Sge]) -> Option<()> {
    let dst = dst.get_mut(..src.len())?;
    if let ([d], [s]) = (&mut *dst, src) {
        *d = *s;
    } else {
        dst.copy_from_slice(src);
    }
    Some(())
}

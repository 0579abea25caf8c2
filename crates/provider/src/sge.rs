//! Scatter/gather lists as the consumer passes them.
//!
//! `NDK_SGE` and `hwq::Sge` have the same layout (address union, length,
//! token), so a consumer's list is read as `hwq::Sge`s and copied into WQEs
//! verbatim: a privileged-token SGE carries a logical address, any other a
//! virtual address inside a registered region; the device checks tokens,
//! bounds and rights and reports violations in the CQE.

use hwq::Sge;
use ndkpi::{NDK_SGE, NTSTATUS, STATUS_INVALID_PARAMETER};

use crate::abi;

const _: () = assert!(size_of::<NDK_SGE>() == size_of::<Sge>());
const _: () = assert!(align_of::<NDK_SGE>() == align_of::<Sge>());

/// Borrows the consumer's SGE array.
///
/// # Safety
/// A non-null `sgl` must point to `count` readable `NDK_SGE`s that stay
/// unchanged during the call.
pub unsafe fn list<'a>(sgl: *const NDK_SGE, count: u32) -> Result<&'a [Sge], NTSTATUS> {
    // SAFETY: forwarded; `NDK_SGE` and `Sge` share size, alignment and
    // field layout (asserted above), and every bit pattern is a valid `Sge`.
    unsafe { abi::slice(sgl.cast::<Sge>(), count as usize) }.ok_or(STATUS_INVALID_PARAMETER)
}

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

//! The bytes a `WSK_BUF` describes: `Length` bytes starting `Offset` bytes
//! into the first MDL of a chain, each MDL read through its system address
//! ([`crate::mm::system_va`], what `MmGetSystemAddressForMdlSafe` yields).

use ndis::WSK_BUF;
use ndkpi::{MDL, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER};

use crate::mm;

/// Calls `piece(address, bytes)` for each run of the first `len` bytes of
/// `buf`. Fails with `STATUS_INVALID_PARAMETER` when the chain is shorter
/// than described and `STATUS_INSUFFICIENT_RESOURCES` when an MDL cannot
/// be mapped.
///
/// # Safety
/// `buf` is a WSK_BUF the driver passed: its chain consists of valid MDLs
/// of locked (or nonpaged) pages.
unsafe fn walk(
    buf: &WSK_BUF,
    len: usize,
    mut piece: impl FnMut(*mut u8, usize),
) -> Result<(), NTSTATUS> {
    let mut mdl: *mut MDL = buf.Mdl;
    let mut skip = buf.Offset as usize;
    let mut left = len;
    while left > 0 {
        if mdl.is_null() {
            return Err(STATUS_INVALID_PARAMETER);
        }
        // SAFETY: an MDL of the driver's chain (caller contract).
        let header = unsafe { mdl.read() };
        let count = header.ByteCount as usize;
        if skip < count {
            // SAFETY: `mdl` is a non-null MDL of the driver's chain, of locked
            // or nonpaged pages (caller contract), as `system_va` requires.
            let base = unsafe { mm::system_va(mdl) };
            if base.is_null() {
                return Err(STATUS_INSUFFICIENT_RESOURCES);
            }
            let n = (count - skip).min(left);
            piece(base.wrapping_add(skip), n);
            left -= n;
            skip = 0;
        } else {
            skip -= count;
        }
        mdl = header.Next;
    }
    Ok(())
}

/// The `Length` bytes `buf` describes.
///
/// # Safety
/// As for [`walk`].
pub unsafe fn gather(buf: &WSK_BUF) -> Result<Vec<u8>, NTSTATUS> {
    let mut out = Vec::with_capacity(buf.Length);
    let append = |at: *mut u8, n: usize| {
        // SAFETY: `n` bytes mapped at `at` inside one MDL's buffer.
        let bytes = unsafe { std::slice::from_raw_parts(at.cast_const(), n) };
        out.extend_from_slice(bytes);
    };
    // SAFETY: the caller's contract.
    unsafe { walk(buf, buf.Length, append) }?;
    Ok(out)
}

/// Copies as much of `bytes` as `buf` has room for (its `Length`) into the
/// buffer; the bytes copied.
///
/// # Safety
/// As for [`walk`], and the MDLs describe writable memory.
pub unsafe fn scatter(buf: &WSK_BUF, bytes: &[u8]) -> Result<usize, NTSTATUS> {
    let len = bytes.len().min(buf.Length);
    let mut done = 0;
    let copy = |at: *mut u8, n: usize| {
        // SAFETY: `n` writable bytes at `at`; `bytes` has `n` left at
        // `done` (the walk covers exactly `len` bytes).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().wrapping_add(done), at, n) };
        done += n;
    };
    // SAFETY: the caller's contract.
    unsafe { walk(buf, len, copy) }?;
    Ok(len)
}

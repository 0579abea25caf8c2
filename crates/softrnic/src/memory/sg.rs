//! Moving message bytes between packets and host memory: scatter/gather
//! lists walked at a byte offset, every piece checked against the key table
//! before any DMA (a failed check touches no memory).

use hwq::{DmaAccess, MemoryKey, Sge};

use super::{Chunks, KeyTable, Need, copy_from_host, copy_to_host};

/// Why a scatter/gather failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SgError {
    /// A key, PD, access right or bound was refused, or DMA faulted.
    Protection,
    /// The list is shorter than the bytes to move.
    Length,
}

/// Total bytes of a scatter/gather list.
pub(crate) fn total(sges: &[Sge]) -> u64 {
    sges.iter().map(|s| u64::from(s.length)).sum()
}

/// Whether every non-empty entry grants `need` over its whole range.
pub(crate) fn check_all(keys: &KeyTable, pd: u32, sges: &[Sge], need: Need) -> bool {
    sges.iter().filter(|s| s.length != 0).all(|s| {
        keys.check(MemoryKey(s.key), pd, s.addr, u64::from(s.length), need)
            .is_ok()
    })
}

/// Walks `sges` from message byte `offset` for `len` bytes, calling `f`
/// with (entry, address, piece length, position in the moved bytes).
pub(crate) fn walk(
    sges: &[Sge],
    offset: u64,
    len: usize,
    mut f: impl FnMut(&Sge, u64, u64, usize) -> Result<(), SgError>,
) -> Result<(), SgError> {
    let mut skip = offset;
    let mut at = 0usize;
    for sge in sges {
        if at == len {
            break;
        }
        let sl = u64::from(sge.length);
        if skip >= sl {
            skip -= sl;
            continue;
        }
        let take = (sl - skip).min((len - at) as u64);
        let addr = sge.addr.checked_add(skip).ok_or(SgError::Protection)?;
        f(sge, addr, take, at)?;
        at += take as usize;
        skip = 0;
    }
    if at == len {
        Ok(())
    } else {
        Err(SgError::Length)
    }
}

/// Gathers message bytes `[offset, offset + out.len())` from local memory
/// into `out`, calling `seen` on each chunk right after it lands.
pub(crate) fn gather(
    keys: &KeyTable,
    dma: &dyn DmaAccess,
    pd: u32,
    sges: &[Sge],
    offset: u64,
    out: &mut [u8],
    mut seen: impl FnMut(&[u8]),
) -> Result<(), SgError> {
    let len = out.len();
    walk(sges, offset, len, |sge, addr, take, at| {
        let range = keys
            .check(MemoryKey(sge.key), pd, addr, take, Need::LocalRead)
            .map_err(|_| SgError::Protection)?;
        let dst = out.get_mut(at..at + take as usize).ok_or(SgError::Length)?;
        copy_from_host(dma, range, dst, &mut seen).map_err(|_| SgError::Protection)
    })
}

/// Scatters `data` into local memory at message byte `offset` of `sges`.
pub(crate) fn scatter(
    keys: &KeyTable,
    dma: &dyn DmaAccess,
    pd: u32,
    sges: &[Sge],
    offset: u64,
    data: &[u8],
) -> Result<(), SgError> {
    place(keys, dma, pd, sges, offset, data, Need::LocalWrite)
}

/// Writes `data` at message byte `offset` of `sges`, each piece of which
/// must grant `need` (local write for a receive or READ buffer, remote
/// write for a peer's WRITE).
pub(crate) fn place(
    keys: &KeyTable,
    dma: &dyn DmaAccess,
    pd: u32,
    sges: &[Sge],
    offset: u64,
    data: &[u8],
    need: Need,
) -> Result<(), SgError> {
    // Check every piece before writing any, so a refusal touches nothing.
    walk(sges, offset, data.len(), |sge, addr, take, _| {
        keys.check(MemoryKey(sge.key), pd, addr, take, need)
            .map(|_| ())
            .map_err(|_| SgError::Protection)
    })?;
    walk(sges, offset, data.len(), |sge, addr, take, at| {
        let range = keys
            .check(MemoryKey(sge.key), pd, addr, take, need)
            .map_err(|_| SgError::Protection)?;
        let src = data.get(at..at + take as usize).ok_or(SgError::Length)?;
        copy_to_host(dma, range, src).map_err(|_| SgError::Protection)
    })
}

/// Checks that `rkey` grants `need` over `len` bytes at `va` and calls
/// `f` with each logical chunk (address, bytes) of the range, in order,
/// while `keys` is held; stops when `f` returns `false`. `false` if the
/// key refuses the range (nothing is called) or `f` stopped.
pub(crate) fn with_remote_chunks(
    keys: &KeyTable,
    pd: u32,
    rkey: u32,
    va: u64,
    len: usize,
    need: Need,
    mut f: impl FnMut(u64, usize) -> bool,
) -> bool {
    if len == 0 {
        return true;
    }
    match keys.check(MemoryKey(rkey), pd, va, len as u64, need) {
        Ok(range) => Chunks::new(range).all(|(addr, n)| f(addr, n)),
        Err(_) => false,
    }
}

/// Checks that every piece of `sges` from message byte `offset` for `len`
/// bytes grants local read, then calls `f` with each logical chunk
/// (address, bytes) in order, while `keys` is held; stops when `f`
/// returns `false`. `false` if a piece is refused (nothing is called) or
/// `f` stopped.
pub(crate) fn with_gather_chunks(
    keys: &KeyTable,
    pd: u32,
    sges: &[Sge],
    offset: u64,
    len: usize,
    mut f: impl FnMut(u64, usize) -> bool,
) -> bool {
    let granted = walk(sges, offset, len, |sge, addr, take, _| {
        keys.check(MemoryKey(sge.key), pd, addr, take, Need::LocalRead)
            .map(|_| ())
            .map_err(|_| SgError::Protection)
    });
    if granted.is_err() {
        return false;
    }
    walk(sges, offset, len, |sge, addr, take, _| {
        let range = keys
            .check(MemoryKey(sge.key), pd, addr, take, Need::LocalRead)
            .map_err(|_| SgError::Protection)?;
        if Chunks::new(range).all(|(a, n)| f(a, n)) {
            Ok(())
        } else {
            Err(SgError::Protection)
        }
    })
    .is_ok()
}

/// Reads `out.len()` bytes at `va` of remote key `rkey` (a peer's READ).
pub(crate) fn read_remote(
    keys: &KeyTable,
    dma: &dyn DmaAccess,
    pd: u32,
    rkey: u32,
    va: u64,
    out: &mut [u8],
    seen: impl FnMut(&[u8]),
) -> Result<(), SgError> {
    if out.is_empty() {
        return Ok(());
    }
    let range = keys
        .check(MemoryKey(rkey), pd, va, out.len() as u64, Need::RemoteRead)
        .map_err(|_| SgError::Protection)?;
    copy_from_host(dma, range, out, seen).map_err(|_| SgError::Protection)
}

/// Writes `data` at `va` of remote key `rkey` (a peer's WRITE).
pub(crate) fn write_remote(
    keys: &KeyTable,
    dma: &dyn DmaAccess,
    pd: u32,
    rkey: u32,
    va: u64,
    data: &[u8],
) -> Result<(), SgError> {
    if data.is_empty() {
        return Ok(());
    }
    let range = keys
        .check(
            MemoryKey(rkey),
            pd,
            va,
            data.len() as u64,
            Need::RemoteWrite,
        )
        .map_err(|_| SgError::Protection)?;
    copy_to_host(dma, range, data).map_err(|_| SgError::Protection)
}

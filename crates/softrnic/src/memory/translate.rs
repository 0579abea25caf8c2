//! Translating a checked range into logical-address chunks and moving bytes.

use hwq::{DmaAccess, DmaFault};

use super::keys::{PAGE_SIZE, Resolved};

/// Iterates the logical-address chunks of a resolved range: one per page
/// (or one in all for a privileged key, whose addresses are logical already).
#[derive(Clone, Debug)]
pub struct Chunks<'a> {
    pages: &'a [u64],
    offset: u64,
    remaining: u64,
}

impl<'a> Chunks<'a> {
    /// Chunks of `range`.
    pub fn new(range: Resolved<'a>) -> Self {
        Self {
            pages: range.pages,
            offset: range.offset,
            remaining: range.len,
        }
    }
}

impl Iterator for Chunks<'_> {
    /// (logical address, bytes)
    type Item = (u64, usize);

    fn next(&mut self) -> Option<(u64, usize)> {
        if self.remaining == 0 {
            return None;
        }
        if self.pages.is_empty() {
            let chunk = (
                self.offset,
                usize::try_from(self.remaining).unwrap_or(usize::MAX),
            );
            self.offset = self.offset.wrapping_add(self.remaining);
            self.remaining = 0;
            return Some(chunk);
        }
        let mut page = usize::try_from(self.offset / PAGE_SIZE).ok()?;
        let within = self.offset % PAGE_SIZE;
        let base = *self.pages.get(page)?;
        let mut len = (PAGE_SIZE - within).min(self.remaining);
        // Pages that follow each other in logical memory make one chunk:
        // one long copy instead of one per page.
        while len < self.remaining
            && self
                .pages
                .get(page + 1)
                .is_some_and(|&next| Some(next) == (base + within).checked_add(len))
        {
            len += PAGE_SIZE.min(self.remaining - len);
            page += 1;
        }
        self.offset += len;
        self.remaining -= len;
        Some((base + within, usize::try_from(len).ok()?))
    }
}

/// Copies a resolved range of host memory into `out` (whose length is the
/// range's), calling `seen` on each chunk right after it lands so a checksum
/// can run while the bytes are still in cache.
pub fn copy_from_host(
    dma: &dyn DmaAccess,
    range: Resolved<'_>,
    out: &mut [u8],
    mut seen: impl FnMut(&[u8]),
) -> Result<(), DmaFault> {
    let mut at = 0usize;
    for (addr, len) in Chunks::new(range) {
        let Some(dst) = out.get_mut(at..at + len) else {
            return Err(DmaFault { addr, len });
        };
        dma.read(addr, dst)?;
        seen(dst);
        at += len;
    }
    Ok(())
}

/// Copies `data` into a resolved range of host memory.
pub fn copy_to_host(dma: &dyn DmaAccess, range: Resolved<'_>, data: &[u8]) -> Result<(), DmaFault> {
    let mut at = 0usize;
    for (addr, len) in Chunks::new(range) {
        let Some(src) = data.get(at..at + len) else {
            return Err(DmaFault { addr, len });
        };
        dma.write(addr, src)?;
        at += len;
    }
    Ok(())
}

//! Walking a consumer's MDL chain into a list of page logical addresses.
//!
//! An MDL describes `ByteCount` bytes starting `ByteOffset` bytes into the
//! page at `StartVa`, and is followed in memory by one page frame number per
//! page it spans. NDK requires the chain to be virtually contiguous over the
//! requested length: each MDL must start where the previous one ended. Two
//! MDLs that meet inside a page both list that page; it is counted once.
//! The virtual address is only an index here (never dereferenced).

use ndkpi::{NTSTATUS, PAGE_SIZE, STATUS_INVALID_PARAMETER};

use crate::abi::{MdlChain, MdlEntry};
use crate::platform::Platform;

const PAGE: u64 = PAGE_SIZE as u64;
/// A chain longer than this is treated as corrupt (a cycle).
const MAX_CHAIN: usize = 1 << 16;

/// The result of a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Virtual address of the first byte.
    pub va: u64,
    /// Offset of that byte in its page.
    pub fbo: u32,
    /// Pages covering `[va, va + length)`.
    pub pages: usize,
}

/// Pages spanned by `len` bytes starting at `va`.
pub fn span_pages(va: u64, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    let first = va / PAGE;
    let last = (va + (len - 1)) / PAGE;
    last - first + 1
}

/// One MDL's fields, checked.
struct Entry<'a> {
    mdl: MdlEntry<'a>,
    va: u64,
    count: u64,
}

/// Checks one MDL: page-aligned start, offset inside the page, no
/// wrapping, and room in its `Size` for the PFNs of the pages it spans.
fn check(mdl: MdlEntry<'_>) -> Result<Entry<'_>, NTSTATUS> {
    let m = mdl.header();
    let start = m.StartVa as u64;
    let offset = u64::from(m.ByteOffset);
    if offset >= PAGE || start % PAGE != 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let va = start.checked_add(offset).ok_or(STATUS_INVALID_PARAMETER)?;
    let count = u64::from(m.ByteCount);
    va.checked_add(count).ok_or(STATUS_INVALID_PARAMETER)?;
    // `Size` covers the header and the PFN array: refuse one smaller than
    // the header, or with less room than the pages it spans.
    if i64::from(m.Size) < size_of::<ndkpi::MDL>() as i64
        || (mdl.room() as u64) < span_pages(va, count)
    {
        return Err(STATUS_INVALID_PARAMETER);
    }
    Ok(Entry { mdl, va, count })
}

/// Walks `length` bytes of `chain`, calling `page` with the logical
/// address of each page in order.
pub fn walk(
    platform: &dyn Platform,
    chain: MdlChain<'_>,
    length: u64,
    mut page: impl FnMut(u64),
) -> Result<Span, NTSTATUS> {
    if length == 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let mut current = chain.first();
    let mut first_va = None;
    let mut expected = 0;
    let mut remaining = length;
    let mut pages = 0usize;
    let mut last_page_va = None;
    for _ in 0..MAX_CHAIN {
        let Some(mdl) = current else { break };
        let e = check(mdl)?;
        match first_va {
            None => first_va = Some(e.va),
            Some(_) if e.va != expected => return Err(STATUS_INVALID_PARAMETER),
            Some(_) => {}
        }
        let take = e.count.min(remaining);
        let n = span_pages(e.va, take);
        for i in 0..n {
            let page_va = (e.va / PAGE + i) * PAGE;
            if last_page_va == Some(page_va) {
                // The page where two MDLs meet, listed by both.
                continue;
            }
            // `check` made sure the MDL has room for these PFNs.
            let pfn = e.mdl.pfn(i as usize).ok_or(STATUS_INVALID_PARAMETER)?;
            page(platform.pfn_to_logical(pfn));
            pages += 1;
            last_page_va = Some(page_va);
        }
        remaining -= take;
        expected = e.va + e.count;
        if remaining == 0 {
            let va = first_va.unwrap_or_default();
            return Ok(Span {
                va,
                fbo: (va % PAGE) as u32,
                pages,
            });
        }
        current = e.mdl.next();
    }
    // The chain ended (or looped) before `length` bytes.
    Err(STATUS_INVALID_PARAMETER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_pages_counts_partial_pages() {
        assert_eq!(span_pages(0, 0), 0);
        assert_eq!(span_pages(0, 1), 1);
        assert_eq!(span_pages(0xfff, 2), 2);
        assert_eq!(span_pages(0x1000, 0x1000), 1);
        assert_eq!(span_pages(0x1001, 0x1000), 2);
    }
}

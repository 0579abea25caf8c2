//! Walking a consumer's MDL chain into a list of page logical addresses.
//!
//! An MDL describes `ByteCount` bytes starting `ByteOffset` bytes into the
//! page at `StartVa`, and is followed in memory by one page frame number per
//! page it spans. NDK requires the chain to be virtually contiguous over the
//! requested length: each MDL must start where the previous one ended. Two
//! MDLs that meet inside a page both list that page; it is counted once.
//! The virtual address is only an index here (never dereferenced).

use ndkpi::{MDL, NTSTATUS, PAGE_SIZE, STATUS_INVALID_PARAMETER};

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

/// One MDL's fields, read once.
struct Entry {
    next: *const MDL,
    va: u64,
    count: u64,
    pfns: *const u64,
    pfn_count: u64,
}

/// Reads one MDL.
///
/// # Safety
/// `mdl` must be a valid MDL (header followed by its PFN array).
unsafe fn read_entry(mdl: *const MDL) -> Result<Entry, NTSTATUS> {
    // SAFETY: valid MDL per contract; a plain copy of its header.
    let m = unsafe { mdl.read_unaligned() };
    let start = m.StartVa as u64;
    let offset = u64::from(m.ByteOffset);
    if offset >= PAGE || start % PAGE != 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let va = start.checked_add(offset).ok_or(STATUS_INVALID_PARAMETER)?;
    let count = u64::from(m.ByteCount);
    va.checked_add(count).ok_or(STATUS_INVALID_PARAMETER)?;
    let pfn_count = span_pages(va, count);
    // `Size` covers the header and the PFN array; refuse an MDL that claims
    // more pages than it has room for.
    let room = (i64::from(m.Size) - size_of::<MDL>() as i64) / 8;
    if room < 0 || (room as u64) < pfn_count {
        return Err(STATUS_INVALID_PARAMETER);
    }
    Ok(Entry {
        next: m.Next.cast_const(),
        va,
        count,
        // The PFN array follows the header.
        pfns: mdl.wrapping_add(1).cast::<u64>(),
        pfn_count,
    })
}

/// Walks `length` bytes of the chain at `mdl`, calling `page` with the
/// logical address of each page in order.
///
/// # Safety
/// `mdl` must be null or the first MDL of a valid chain (each MDL followed
/// by its PFN array), not modified during the call.
pub unsafe fn walk(
    platform: &dyn Platform,
    mdl: *const MDL,
    length: u64,
    mut page: impl FnMut(u64),
) -> Result<Span, NTSTATUS> {
    if mdl.is_null() || length == 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let mut current = mdl;
    let mut first_va = None;
    let mut expected = 0;
    let mut remaining = length;
    let mut pages = 0usize;
    let mut last_page_va = None;
    for _ in 0..MAX_CHAIN {
        if current.is_null() {
            break;
        }
        // SAFETY: a member of the consumer's chain (contract above).
        let e = unsafe { read_entry(current)? };
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
            debug_assert!(i < e.pfn_count);
            // SAFETY: `i < pfn_count`, and `read_entry` checked that the
            // MDL's size holds `pfn_count` PFNs after the header.
            let pfn = unsafe { e.pfns.wrapping_add(i as usize).read_unaligned() };
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
        current = e.next;
    }
    // The chain ended (or looped) before `length` bytes.
    Err(STATUS_INVALID_PARAMETER)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::testing::TestPlatform;
    use std::vec;
    use std::vec::Vec;

    /// One MDL (header words + PFNs) for `len` bytes at `va`.
    fn build(va: u64, len: u32, pfn_base: u64) -> Vec<u64> {
        let pages = span_pages(va, u64::from(len));
        let mut words = vec![0u64; size_of::<MDL>() / 8 + pages as usize];
        let mdl = MDL {
            Next: core::ptr::null_mut(),
            Size: (size_of::<MDL>() + 8 * pages as usize) as i16,
            MdlFlags: 0,
            Process: core::ptr::null_mut(),
            MappedSystemVa: core::ptr::null_mut(),
            StartVa: (va & !0xfff) as *mut core::ffi::c_void,
            ByteCount: len,
            ByteOffset: (va & 0xfff) as u32,
        };
        // SAFETY: the vector starts with room for an 8-aligned MDL.
        unsafe { words.as_mut_ptr().cast::<MDL>().write(mdl) };
        for i in 0..pages as usize {
            words[size_of::<MDL>() / 8 + i] = pfn_base + i as u64;
        }
        words
    }

    #[test]
    fn pages_of_one_mdl() {
        let p = TestPlatform::leaked();
        let mut m = build(0x10_0ff0, 0x20, 0x500);
        let mut seen = Vec::new();
        // SAFETY: a well-formed MDL built above.
        let span = unsafe { walk(p, m.as_mut_ptr().cast(), 0x20, |a| seen.push(a)) }.unwrap();
        assert_eq!(
            span,
            Span {
                va: 0x10_0ff0,
                fbo: 0xff0,
                pages: 2
            }
        );
        assert_eq!(
            seen,
            vec![0x50_0000, 0x50_1000],
            "PFNs, not VAs, become logical addresses"
        );
    }

    #[test]
    fn a_size_too_small_for_the_pfns_is_refused() {
        let p = TestPlatform::leaked();
        let mut m = build(0x1000, 0x3000, 1);
        // Claim room for one PFN only.
        // SAFETY: the MDL built above.
        unsafe { (*m.as_mut_ptr().cast::<MDL>()).Size = (size_of::<MDL>() + 8) as i16 };
        // SAFETY: as above; the walk must refuse before reading past Size.
        let r = unsafe { walk(p, m.as_mut_ptr().cast(), 0x3000, |_| {}) };
        assert_eq!(r, Err(STATUS_INVALID_PARAMETER));
    }

    #[test]
    fn span_pages_counts_partial_pages() {
        assert_eq!(span_pages(0, 0), 0);
        assert_eq!(span_pages(0, 1), 1);
        assert_eq!(span_pages(0xfff, 2), 2);
        assert_eq!(span_pages(0x1000, 0x1000), 1);
        assert_eq!(span_pages(0x1001, 0x1000), 2);
    }
}

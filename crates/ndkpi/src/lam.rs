//! Logical address mappings (LAMs): the adapter-visible page addresses that
//! `NdkBuildLAM` produces for an MDL.

use core::mem::offset_of;
use core::ptr;

use crate::types::{PHYSICAL_ADDRESS, PVOID, ULONG};

/// An address of host memory as the adapter sees it (a `PHYSICAL_ADDRESS`,
/// i.e. a 64-bit `LARGE_INTEGER`).
pub type NDK_LOGICAL_ADDRESS = PHYSICAL_ADDRESS;

/// A logical address mapping: header plus a variable-length page array.
///
/// The C type declares `AdapterPageArray[1]` but the real array has
/// `AdapterPageCount` entries, each for one `PAGE_SIZE` page. The byte size
/// of a LAM with `n` pages is therefore
/// `offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + n * 8`
/// = `16 + 8 * n` on x64 (see [`Self::size_for`]), which is *not*
/// `size_of::<Self>()` (24, one element included) except for `n == 1`.
/// This Rust struct mirrors the C declaration exactly, so the entries past
/// the first are reached through raw pointers, never through this array.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDK_LOGICAL_ADDRESS_MAPPING {
    /// Free for the provider's own use.
    pub AdapterContext: PVOID,
    /// Number of entries in `AdapterPageArray`.
    pub AdapterPageCount: ULONG,
    /// Page-aligned logical addresses; only the first is declared here.
    pub AdapterPageArray: [NDK_LOGICAL_ADDRESS; 1],
}

impl NDK_LOGICAL_ADDRESS_MAPPING {
    /// Bytes needed for a mapping with `page_count` pages (what C computes
    /// as `FIELD_OFFSET(..., AdapterPageArray) + count * sizeof(entry)`).
    pub const fn size_for(page_count: ULONG) -> usize {
        offset_of!(Self, AdapterPageArray) + page_count as usize * size_of::<NDK_LOGICAL_ADDRESS>()
    }
}

impl Default for NDK_LOGICAL_ADDRESS_MAPPING {
    fn default() -> Self {
        Self {
            AdapterContext: ptr::null_mut(),
            AdapterPageCount: 0,
            AdapterPageArray: [0],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_rule() {
        assert_eq!(NDK_LOGICAL_ADDRESS_MAPPING::size_for(0), 16);
        assert_eq!(
            NDK_LOGICAL_ADDRESS_MAPPING::size_for(1),
            size_of::<NDK_LOGICAL_ADDRESS_MAPPING>()
        );
        assert_eq!(NDK_LOGICAL_ADDRESS_MAPPING::size_for(16), 16 + 128);
        assert_eq!(
            NDK_LOGICAL_ADDRESS_MAPPING::size_for(u32::MAX),
            16 + 8 * u32::MAX as usize
        );
    }
}

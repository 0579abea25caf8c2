//! The x64 memory descriptor list (`MDL`, from `wdm.h`) and its flags.
//!
//! An MDL describes a virtually contiguous buffer by its physical pages.
//! The structure below is only the header: an array of [`PFN_NUMBER`]s,
//! one per page spanned by `ByteOffset + ByteCount`, follows it directly in
//! memory (see [`mdl_pfn_array`]). MDLs chain through `Next`.

use core::ffi::c_void;

use crate::types::{CSHORT, PFN_NUMBER, PVOID, ULONG};

/// Memory descriptor list header (48 bytes on x64).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MDL {
    /// Next MDL of a chain, or null.
    pub Next: *mut MDL,
    /// Bytes of this header plus its page-number array.
    pub Size: CSHORT,
    /// `MDL_*` state bits.
    pub MdlFlags: CSHORT,
    /// Owning process (`PEPROCESS`, opaque here); 4 bytes of padding
    /// precede it on x64.
    pub Process: *mut c_void,
    /// System-space mapping of the buffer, valid when
    /// `MDL_MAPPED_TO_SYSTEM_VA` or `MDL_SOURCE_IS_NONPAGED_POOL` is set.
    pub MappedSystemVa: PVOID,
    /// Page-aligned virtual address of the buffer's first page.
    pub StartVa: PVOID,
    /// Length of the buffer in bytes.
    pub ByteCount: ULONG,
    /// Offset of the buffer's first byte inside the first page.
    pub ByteOffset: ULONG,
}

/// Address of the page-number array that follows `mdl` in memory
/// (`MmGetMdlPfnArray`). Computing it is safe; reading it is only valid if
/// `mdl` is a real MDL.
pub fn mdl_pfn_array(mdl: *mut MDL) -> *mut PFN_NUMBER {
    mdl.wrapping_add(1).cast()
}

/// The buffer is mapped into system space (`MappedSystemVa` is valid).
pub const MDL_MAPPED_TO_SYSTEM_VA: CSHORT = 0x0001;
/// The pages are locked in memory.
pub const MDL_PAGES_LOCKED: CSHORT = 0x0002;
/// The buffer is nonpaged pool (already system-mapped).
pub const MDL_SOURCE_IS_NONPAGED_POOL: CSHORT = 0x0004;
/// The MDL was allocated with a fixed size.
pub const MDL_ALLOCATED_FIXED_SIZE: CSHORT = 0x0008;
/// The MDL describes part of another MDL's buffer.
pub const MDL_PARTIAL: CSHORT = 0x0010;
/// A partial MDL that has been mapped.
pub const MDL_PARTIAL_HAS_BEEN_MAPPED: CSHORT = 0x0020;
/// Pages are being read in (paging I/O).
pub const MDL_IO_PAGE_READ: CSHORT = 0x0040;
/// The pages were locked for write access.
pub const MDL_WRITE_OPERATION: CSHORT = 0x0080;
/// Page tables of the range are locked (same bit as
/// `MDL_PARENT_MAPPED_SYSTEM_VA`).
pub const MDL_LOCKED_PAGE_TABLES: CSHORT = 0x0100;
/// The parent of this partial MDL is system-mapped (alias of
/// `MDL_LOCKED_PAGE_TABLES`).
pub const MDL_PARENT_MAPPED_SYSTEM_VA: CSHORT = MDL_LOCKED_PAGE_TABLES;
/// Extra PTEs of the mapping are to be freed.
pub const MDL_FREE_EXTRA_PTES: CSHORT = 0x0200;
/// The MDL describes AWE memory.
pub const MDL_DESCRIBES_AWE: CSHORT = 0x0400;
/// The MDL describes I/O space.
pub const MDL_IO_SPACE: CSHORT = 0x0800;
/// The MDL describes a network header.
pub const MDL_NETWORK_HEADER: CSHORT = 0x1000;
/// Mapping the MDL may fail instead of bug-checking.
pub const MDL_MAPPING_CAN_FAIL: CSHORT = 0x2000;
/// The page contents do not change while described (same bit as
/// `MDL_ALLOCATED_MUST_SUCCEED`).
pub const MDL_PAGE_CONTENTS_INVARIANT: CSHORT = 0x4000;
/// The MDL was allocated from must-succeed pool (alias of
/// `MDL_PAGE_CONTENTS_INVARIANT`).
pub const MDL_ALLOCATED_MUST_SUCCEED: CSHORT = MDL_PAGE_CONTENTS_INVARIANT;
/// Reserved for the memory manager (the sign bit of `MdlFlags`).
pub const MDL_INTERNAL: CSHORT = 0x8000_u16 as CSHORT;

//! Windows base types used by the NDK signatures, with their x64 (LLP64)
//! widths.
//!
//! Only what `ndkpi.h`/`ndkinfo.h` reach for is declared here; the socket
//! address types live in [`crate::sockaddr`] and the MDL in [`crate::mdl`].

use core::ffi::c_void;

/// Kernel status code (`LONG`): negative = error, non-negative = success.
pub type NTSTATUS = i32;
/// 32-bit signed integer (`long` is 32 bits on Windows, also on x64).
pub type LONG = i32;
/// 32-bit unsigned integer (`unsigned long`, 32 bits on Windows x64).
pub type ULONG = u32;
/// 16-bit unsigned integer.
pub type USHORT = u16;
/// 8-bit unsigned integer.
pub type UCHAR = u8;
/// 8-bit signed character (`char` is signed with MSVC).
pub type CHAR = i8;
/// 16-bit signed integer used for MDL `Size` and `MdlFlags`.
pub type CSHORT = i16;
/// One-byte boolean: 0 is false, anything else is true.
pub type BOOLEAN = u8;
/// Unsigned integer as wide as a pointer.
pub type SIZE_T = usize;
/// Unsigned integer as wide as a pointer.
pub type ULONG_PTR = usize;
/// Untyped pointer.
pub type PVOID = *mut c_void;
/// Exactly 32 bits, unsigned.
pub type UINT32 = u32;
/// Exactly 64 bits, unsigned.
pub type UINT64 = u64;
/// Processor bit mask, one bit per processor of a group (pointer-sized).
pub type KAFFINITY = usize;
/// Physical page frame number (pointer-sized).
pub type PFN_NUMBER = ULONG_PTR;

/// `BOOLEAN` true.
pub const TRUE: BOOLEAN = 1;
/// `BOOLEAN` false.
pub const FALSE: BOOLEAN = 0;

/// Bus-relative physical address.
///
/// In C this is `LARGE_INTEGER`, a union of a signed 64-bit value and a
/// low/high `ULONG`/`LONG` pair. Every member covers the same 8 bytes with
/// 8-byte alignment, so `i64` has the identical size, alignment and
/// argument-passing behaviour.
pub type PHYSICAL_ADDRESS = i64;

/// Size of a memory page on x64 Windows, in bytes.
pub const PAGE_SIZE: usize = 0x1000;
/// `log2(PAGE_SIZE)`.
pub const PAGE_SHIFT: u32 = 12;

/// A 128-bit globally unique identifier (used to name NDK extension
/// interfaces).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GUID {
    /// First 32 bits.
    pub Data1: u32,
    /// Next 16 bits.
    pub Data2: u16,
    /// Next 16 bits.
    pub Data3: u16,
    /// Last 64 bits as bytes.
    pub Data4: [u8; 8],
}

/// A processor group and a set of processors inside it (a scheduling
/// preference for CQ and SRQ notifications).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GROUP_AFFINITY {
    /// Processors of the group, one bit each.
    pub Mask: KAFFINITY,
    /// Processor group number.
    pub Group: USHORT,
    /// Must be zero.
    pub Reserved: [USHORT; 3],
}

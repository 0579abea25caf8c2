//! Scatter/gather entries (`NDK_SGE`).
//!
//! The entry's address is a C anonymous union: a virtual address when the
//! token is a memory region's local token, a logical address when the
//! token is the PD's privileged token. Rust needs a name for the union
//! member; it is `u`, of type [`NDK_SGE_ADDRESS`].
//!
//! This is the crate's only `unsafe` code: reading a union member. Both
//! members are 8 plain bytes for which every bit pattern is valid, so the
//! accessors below are sound whichever member was written.
#![allow(unsafe_code)]

use core::fmt;

use crate::lam::NDK_LOGICAL_ADDRESS;
use crate::types::{PVOID, UINT32, ULONG};

/// The address part of an [`NDK_SGE`] (the C anonymous union).
#[repr(C)]
#[derive(Clone, Copy)]
pub union NDK_SGE_ADDRESS {
    /// Virtual address inside a registered memory region.
    pub VirtualAddress: PVOID,
    /// Adapter logical address (from a LAM), used with the privileged
    /// token.
    pub LogicalAddress: NDK_LOGICAL_ADDRESS,
}

impl NDK_SGE_ADDRESS {
    /// The bytes read as a virtual address.
    pub const fn virtual_address(self) -> PVOID {
        // SAFETY: both members are 8 bytes at offset 0 and every bit
        // pattern is a valid pointer value (only dereferencing it needs
        // justification, which is the caller's business).
        unsafe { self.VirtualAddress }
    }

    /// The bytes read as a logical address.
    pub const fn logical_address(self) -> NDK_LOGICAL_ADDRESS {
        // SAFETY: both members are 8 bytes at offset 0 and every bit
        // pattern is a valid `i64`; reading pointer bytes as an integer is
        // a plain pointer-to-integer transmute.
        unsafe { self.LogicalAddress }
    }
}

impl Default for NDK_SGE_ADDRESS {
    fn default() -> Self {
        Self { LogicalAddress: 0 }
    }
}

impl fmt::Debug for NDK_SGE_ADDRESS {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Which member is meant depends on the token, so show the raw bits.
        write!(f, "{:#018x}", self.logical_address() as u64)
    }
}

/// One scatter/gather entry (16 bytes on x64).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct NDK_SGE {
    /// Start of the buffer (virtual or logical, see the module docs).
    pub u: NDK_SGE_ADDRESS,
    /// Length of the buffer in bytes.
    pub Length: ULONG,
    /// Local token of the region holding the buffer, or the PD's
    /// privileged token.
    pub MemoryRegionToken: UINT32,
}

impl NDK_SGE {
    /// An entry for `length` bytes at virtual address `va` of a region
    /// whose local token is `token`.
    pub const fn with_virtual_address(va: PVOID, length: ULONG, token: UINT32) -> Self {
        Self {
            u: NDK_SGE_ADDRESS { VirtualAddress: va },
            Length: length,
            MemoryRegionToken: token,
        }
    }

    /// An entry for `length` bytes at logical address `la`, used with the
    /// privileged token `token`.
    pub const fn with_logical_address(
        la: NDK_LOGICAL_ADDRESS,
        length: ULONG,
        token: UINT32,
    ) -> Self {
        Self {
            u: NDK_SGE_ADDRESS { LogicalAddress: la },
            Length: length,
            MemoryRegionToken: token,
        }
    }

    /// The address read as a virtual address.
    pub const fn virtual_address(&self) -> PVOID {
        self.u.virtual_address()
    }

    /// The address read as a logical address.
    pub const fn logical_address(&self) -> NDK_LOGICAL_ADDRESS {
        self.u.logical_address()
    }
}

impl fmt::Debug for NDK_SGE {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NDK_SGE")
            .field("Address", &self.u)
            .field("Length", &self.Length)
            .field("MemoryRegionToken", &self.MemoryRegionToken)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_views_share_bytes() {
        let sge = NDK_SGE::with_logical_address(0x1234_5000, 64, 7);
        assert_eq!(sge.virtual_address() as usize, 0x1234_5000);
        assert_eq!(sge.logical_address(), 0x1234_5000);
        let sge = NDK_SGE::with_virtual_address(0x2000 as PVOID, 8, 1);
        assert_eq!(sge.logical_address(), 0x2000);
        let text = format!("{sge:?}");
        assert!(text.contains("0x0000000000002000"), "{text}");
    }
}

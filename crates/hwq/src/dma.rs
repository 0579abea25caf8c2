//! How the device reaches host memory.
//!
//! The device never dereferences pointers: it asks the platform to copy
//! bytes to or from a *logical address* (on Windows, what the adapter's DMA
//! mapping gives for a page; on the Linux host, the virtual address). A
//! safe interface here is what lets the software RNIC be written with no
//! `unsafe` at all.

/// A DMA request named memory the platform refuses to touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaFault {
    /// The first logical address of the failed request.
    pub addr: u64,
    /// Its length in bytes.
    pub len: usize,
}

/// Device access to host memory by logical address.
pub trait DmaAccess: Send + Sync {
    /// Copies `buf.len()` bytes starting at logical address `addr` into `buf`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault>;

    /// Copies `data` to logical address `addr`.
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault>;
}

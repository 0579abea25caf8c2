//! Device access to host memory.

use hwq::{DmaAccess, DmaFault};

/// Device access to host memory: a logical address is a host virtual
/// address.
///
/// Its reads and writes go straight to the address they are given, so the
/// only thing standing between a device's request and arbitrary process
/// memory is the contract of [`HostDma::new`].
#[derive(Debug)]
pub struct HostDma {
    _contract: (),
}

impl HostDma {
    /// Device access to this process's memory.
    ///
    /// # Safety
    /// Every address a caller of the returned value's [`DmaAccess`] methods
    /// passes must name live memory valid for the access, for its whole
    /// length and for its duration: consumer memory registered with the
    /// device (kept live while work requests on it run) or provider memory
    /// given to the device. A device that reaches memory only through keys
    /// and bounds it checks (as the software RNIC does) meets this when its
    /// consumers register only live memory.
    pub const unsafe fn new() -> Self {
        Self { _contract: () }
    }

    fn check(addr: u64, len: usize) -> Result<(), DmaFault> {
        // Null and wrapping ranges are never live consumer memory.
        if addr == 0 || addr.checked_add(len as u64).is_none() {
            return Err(DmaFault { addr, len });
        }
        Ok(())
    }
}

impl DmaAccess for HostDma {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        Self::check(addr, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        // SAFETY: `addr..addr + buf.len()` is live readable memory: the
        // contract accepted by whoever called `HostDma::new`; `buf` is our
        // own buffer and cannot overlap it.
        unsafe {
            core::ptr::copy_nonoverlapping(addr as usize as *const u8, buf.as_mut_ptr(), buf.len());
        };
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        Self::check(addr, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: `addr..addr + data.len()` is live writable memory: the
        // contract accepted by whoever called `HostDma::new`; `data` is
        // borrowed shared, so it cannot be this destination.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len());
        };
        Ok(())
    }

    fn copy(&self, src: u64, dst: u64, len: usize) -> Result<(), DmaFault> {
        Self::check(src, len)?;
        Self::check(dst, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: both ranges are live memory valid for `len` bytes (the
        // source readable, the destination writable): the contract accepted
        // by whoever called `HostDma::new`; `copy` allows them to overlap.
        unsafe {
            core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, len);
        };
        Ok(())
    }
}

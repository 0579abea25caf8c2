//! Device access to host memory.

use hwq::{DmaAccess, DmaFault};

/// Device access to host memory: a logical address is a host virtual
/// address.
#[derive(Debug, Default)]
pub struct HostDma;

impl HostDma {
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
        // SAFETY: the host contract: logical addresses handed to the device
        // are virtual addresses of live memory the consumer registered (or
        // provider memory), valid for `buf.len()` bytes; `buf` is our own
        // buffer and cannot overlap it.
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
        // SAFETY: as in `read`: the consumer registered this range for the
        // device to write, and it stays live while the work request runs.
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
        // SAFETY: as in `read` and `write`: both ranges are live memory the
        // consumers registered with the device (the source for the peer to
        // read, the destination for this device to write), each valid for
        // `len` bytes; `copy` allows them to overlap.
        unsafe {
            core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, len);
        };
        Ok(())
    }
}

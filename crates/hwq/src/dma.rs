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

    /// Copies `len` bytes from logical address `src` to logical address
    /// `dst` (the ranges may overlap), as a device moving data between two
    /// buffers of the same memory does. The default goes through a small
    /// bounce buffer on the stack; a platform that can copy directly
    /// overrides it.
    fn copy(&self, src: u64, dst: u64, len: usize) -> Result<(), DmaFault> {
        let mut bounce = [0u8; COPY_BOUNCE];
        let fault = DmaFault { addr: src, len };
        // Overlapping ranges with `dst` above `src` are copied from the
        // end, so no byte is overwritten before it is read.
        let backwards = dst > src && dst - src < len as u64;
        let mut done = 0usize;
        while done < len {
            let n = (len - done).min(COPY_BOUNCE);
            let at = if backwards { len - done - n } else { done } as u64;
            let (from, to) = (
                src.checked_add(at).ok_or(fault)?,
                dst.checked_add(at).ok_or(fault)?,
            );
            let buf = bounce.get_mut(..n).ok_or(fault)?;
            self.read(from, buf)?;
            self.write(to, buf)?;
            done += n;
        }
        Ok(())
    }
}

/// Bytes per step of the default [`DmaAccess::copy`].
const COPY_BOUNCE: usize = 256;

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{DmaAccess, DmaFault};
    use std::sync::Mutex;
    use std::vec::Vec;

    /// Memory at logical addresses 0x1000.. (read and write only, so
    /// `copy` is the default).
    struct Flat(Mutex<Vec<u8>>);

    impl Flat {
        const BASE: u64 = 0x1000;
        fn range(&self, addr: u64, len: usize) -> Result<core::ops::Range<usize>, DmaFault> {
            let fault = DmaFault { addr, len };
            let start =
                usize::try_from(addr.checked_sub(Self::BASE).ok_or(fault)?).map_err(|_| fault)?;
            let end = start.checked_add(len).ok_or(fault)?;
            if end > self.0.lock().map_err(|_| fault)?.len() {
                return Err(fault);
            }
            Ok(start..end)
        }
    }

    impl DmaAccess for Flat {
        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
            let r = self.range(addr, buf.len())?;
            buf.copy_from_slice(&self.0.lock().unwrap()[r]);
            Ok(())
        }
        fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
            let r = self.range(addr, data.len())?;
            self.0.lock().unwrap()[r].copy_from_slice(data);
            Ok(())
        }
    }

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn default_copy_moves_overlapping_ranges_like_memmove() {
        let n = 2000;
        for (from, to, len) in [(0, 1000, 900), (300, 0, 1500), (10, 17, 1900), (0, 0, 50)] {
            let mem = Flat(Mutex::new(pattern(n)));
            let mut want = pattern(n);
            want.copy_within(from..from + len, to);
            mem.copy(Flat::BASE + from as u64, Flat::BASE + to as u64, len)
                .unwrap();
            assert_eq!(
                *mem.0.lock().unwrap(),
                want,
                "copy {from} -> {to}, {len} bytes"
            );
        }
    }

    #[test]
    fn default_copy_reports_a_fault_outside_memory() {
        let mem = Flat(Mutex::new(pattern(100)));
        assert!(mem.copy(Flat::BASE, Flat::BASE + 90, 20).is_err());
        assert!(mem.copy(u64::MAX - 4, Flat::BASE, 20).is_err());
    }
}

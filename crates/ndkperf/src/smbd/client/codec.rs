//! Little-endian field access for SMB2 and NTLMSSP messages: reads that
//! fail with a clear error instead of panicking on short or hostile input,
//! and appends for building messages.

use crate::error::{Error, Result};

/// A received message, read field by field with bounds checks.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// `what` names the message in errors ("SMB2 NEGOTIATE response").
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, what }
    }

    /// A malformed-message error naming the message and the field.
    pub fn error(&self, why: &str) -> Error {
        Error::msg(format!(
            "malformed {} ({why}; {} bytes)",
            self.what,
            self.bytes.len()
        ))
    }

    /// `len` bytes at `at`.
    pub fn slice(&self, at: usize, len: usize) -> Result<&'a [u8]> {
        at.checked_add(len)
            .and_then(|end| self.bytes.get(at..end))
            .ok_or_else(|| self.error(&format!("{len} bytes at {at} run past the end")))
    }

    /// A fixed-size array at `at`.
    pub fn array<const N: usize>(&self, at: usize) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.slice(at, N)?);
        Ok(a)
    }

    /// The byte at `at`.
    pub fn u8(&self, at: usize) -> Result<u8> {
        Ok(self.array::<1>(at)?[0])
    }

    /// The u16 at `at`.
    pub fn u16(&self, at: usize) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(at)?))
    }

    /// The u32 at `at`.
    pub fn u32(&self, at: usize) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(at)?))
    }

    /// The u64 at `at`.
    pub fn u64(&self, at: usize) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(at)?))
    }
}

/// Appends a u16.
pub fn put_u16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// Appends a u32.
pub fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// Appends a u64.
pub fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// Overwrites the u16 at `at` (a field whose value is known only later).
pub fn set_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// Overwrites the u32 at `at`.
pub fn set_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Zero bytes up to the next multiple of `align`.
pub fn pad_to(b: &mut Vec<u8>, align: usize) {
    while b.len() % align != 0 {
        b.push(0);
    }
}

/// UTF-16LE, the encoding of every SMB2 and NTLMSSP (Unicode) string.
pub fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// A length that must fit a u16 field, or a clear error.
pub fn len16(len: usize, what: &str) -> Result<u16> {
    u16::try_from(len).map_err(|_| Error::msg(format!("{what} of {len} bytes does not fit 64 KiB")))
}

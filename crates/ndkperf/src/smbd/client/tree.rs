//! SMB2 TREE_CONNECT ([MS-SMB2] 2.2.9, 2.2.10).

use super::codec::{Reader, len16, put_u16, utf16le};
use super::header::HEADER_LEN;
use crate::error::Result;

/// ShareType DISK.
pub const SHARE_TYPE_DISK: u8 = 0x01;
/// ShareFlags: the share requires encryption.
pub const SHARE_FLAG_ENCRYPT_DATA: u32 = 0x0000_8000;

/// A TREE_CONNECT request body for `\\server\share`.
pub fn request(server: &str, share: &str) -> Result<Vec<u8>> {
    let path = utf16le(&format!("\\\\{server}\\{share}"));
    let mut b = Vec::new();
    put_u16(&mut b, 9);
    put_u16(&mut b, 0); // Flags (3.1.1) / Reserved
    put_u16(&mut b, (HEADER_LEN + 8) as u16);
    put_u16(&mut b, len16(path.len(), "a share path")?);
    b.extend_from_slice(&path);
    Ok(b)
}

/// A TREE_CONNECT response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// ShareType.
    pub share_type: u8,
    /// ShareFlags.
    pub share_flags: u32,
    /// Capabilities of the share.
    pub capabilities: u32,
    /// MaximalAccess the user has.
    pub maximal_access: u32,
}

impl Response {
    /// Parses a whole response message.
    pub fn decode(message: &[u8]) -> Result<Self> {
        let r = Reader::new(message, "SMB2 TREE_CONNECT response");
        if r.u16(HEADER_LEN)? != 16 {
            return Err(r.error("StructureSize is not 16"));
        }
        Ok(Self {
            share_type: r.u8(HEADER_LEN + 2)?,
            share_flags: r.u32(HEADER_LEN + 4)?,
            capabilities: r.u32(HEADER_LEN + 8)?,
            maximal_access: r.u32(HEADER_LEN + 12)?,
        })
    }
}

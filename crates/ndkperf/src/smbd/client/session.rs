//! SMB2 SESSION_SETUP ([MS-SMB2] 2.2.5, 2.2.6) and LOGOFF (2.2.7, 2.2.8).

use super::codec::{Reader, len16, put_u16, put_u32, put_u64};
use super::header::HEADER_LEN;
use crate::error::Result;

/// SessionFlags: the server made this a guest session.
pub const SESSION_FLAG_IS_GUEST: u16 = 0x0001;
/// SessionFlags: an anonymous session.
pub const SESSION_FLAG_IS_NULL: u16 = 0x0002;
/// SessionFlags: the server requires encryption of this session.
pub const SESSION_FLAG_ENCRYPT_DATA: u16 = 0x0004;

/// Where the security buffer of a SESSION_SETUP request starts (64 + 24).
pub const REQUEST_BUFFER_AT: usize = HEADER_LEN + 24;

/// A SESSION_SETUP request body carrying `token` (no session binding, no
/// previous session).
pub fn request(security_mode: u8, token: &[u8]) -> Result<Vec<u8>> {
    let mut b = Vec::with_capacity(24 + token.len());
    put_u16(&mut b, 25);
    b.push(0); // Flags: not binding
    b.push(security_mode);
    put_u32(&mut b, 0); // Capabilities: DFS not claimed
    put_u32(&mut b, 0); // Channel
    put_u16(&mut b, REQUEST_BUFFER_AT as u16);
    put_u16(&mut b, len16(token.len(), "a SESSION_SETUP token")?);
    put_u64(&mut b, 0); // PreviousSessionId
    b.extend_from_slice(token);
    Ok(b)
}

/// A SESSION_SETUP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// SessionFlags.
    pub session_flags: u16,
    /// The server's security token.
    pub token: Vec<u8>,
}

impl Response {
    /// Parses a whole response message.
    pub fn decode(message: &[u8]) -> Result<Self> {
        let r = Reader::new(message, "SMB2 SESSION_SETUP response");
        if r.u16(HEADER_LEN)? != 9 {
            return Err(r.error("StructureSize is not 9"));
        }
        let off = usize::from(r.u16(HEADER_LEN + 4)?);
        let len = usize::from(r.u16(HEADER_LEN + 6)?);
        Ok(Self {
            session_flags: r.u16(HEADER_LEN + 2)?,
            token: if len == 0 {
                Vec::new()
            } else {
                r.slice(off, len)?.to_vec()
            },
        })
    }
}

/// The LOGOFF request body (and the response's shape): StructureSize 4.
pub fn logoff_request() -> Vec<u8> {
    vec![4, 0, 0, 0]
}

/// Checks a LOGOFF response body.
pub fn decode_logoff_response(message: &[u8]) -> Result<()> {
    let r = Reader::new(message, "SMB2 LOGOFF response");
    if r.u16(HEADER_LEN)? != 4 {
        return Err(r.error("StructureSize is not 4"));
    }
    Ok(())
}

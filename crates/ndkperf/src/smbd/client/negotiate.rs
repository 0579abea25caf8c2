//! SMB2 NEGOTIATE ([MS-SMB2] 2.2.3, 2.2.4) for dialects 3.0.2 and 3.1.1,
//! with the 3.1.1 negotiate contexts the client uses:
//! PREAUTH_INTEGRITY_CAPABILITIES (SHA-512) and SIGNING_CAPABILITIES
//! (AES-CMAC). ENCRYPTION_CAPABILITIES is not offered, so a server never
//! makes this session encrypt (the client has no AES-CCM/GCM transform).

use super::codec::{Reader, pad_to, put_u16, put_u32, set_u16, set_u32};
use super::header::HEADER_LEN;
use super::signing::{DIALECT_302, DIALECT_311};
use crate::error::{Error, Result};

/// SecurityMode: SMB2_NEGOTIATE_SIGNING_ENABLED.
pub const SIGNING_ENABLED: u16 = 0x0001;
/// SecurityMode: SMB2_NEGOTIATE_SIGNING_REQUIRED.
pub const SIGNING_REQUIRED: u16 = 0x0002;
/// Capabilities: SMB2_GLOBAL_CAP_LARGE_MTU (multi-credit requests).
pub const CAP_LARGE_MTU: u32 = 0x0000_0004;

/// Context type SMB2_PREAUTH_INTEGRITY_CAPABILITIES.
pub const CONTEXT_PREAUTH: u16 = 0x0001;
/// Context type SMB2_ENCRYPTION_CAPABILITIES.
pub const CONTEXT_ENCRYPTION: u16 = 0x0002;
/// Context type SMB2_SIGNING_CAPABILITIES.
pub const CONTEXT_SIGNING: u16 = 0x0008;
/// HashAlgorithm SHA-512.
pub const HASH_SHA512: u16 = 0x0001;
/// SigningAlgorithm AES-CMAC.
pub const SIGNING_AES_CMAC: u16 = 0x0001;

/// A NEGOTIATE request body (after the header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiateRequest {
    /// Dialects offered, e.g. [0x0302, 0x0311].
    pub dialects: Vec<u16>,
    /// [`SIGNING_ENABLED`], maybe [`SIGNING_REQUIRED`].
    pub security_mode: u16,
    /// Global capabilities.
    pub capabilities: u32,
    /// ClientGuid.
    pub client_guid: [u8; 16],
    /// The PREAUTH_INTEGRITY salt (3.1.1 only; 32 random bytes).
    pub salt: Vec<u8>,
}

/// One negotiate context, raw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// ContextType.
    pub kind: u16,
    /// Data.
    pub data: Vec<u8>,
}

fn encode_contexts(b: &mut Vec<u8>, contexts: &[Context]) {
    for (i, c) in contexts.iter().enumerate() {
        if i > 0 {
            pad_to(b, 8);
        }
        put_u16(b, c.kind);
        put_u16(b, c.data.len() as u16);
        put_u32(b, 0);
        b.extend_from_slice(&c.data);
    }
}

/// Parses `count` 8-aligned contexts starting at `at` (2.2.3.1).
pub fn decode_contexts(r: &Reader<'_>, mut at: usize, count: u16) -> Result<Vec<Context>> {
    let mut out = Vec::new();
    for i in 0..count {
        if i > 0 {
            at = at.div_ceil(8) * 8;
        }
        let kind = r.u16(at)?;
        let len = usize::from(r.u16(at + 2)?);
        out.push(Context {
            kind,
            data: r.slice(at + 8, len)?.to_vec(),
        });
        at += 8 + len;
    }
    Ok(out)
}

impl NegotiateRequest {
    /// The contexts this request carries when it offers 3.1.1.
    pub fn contexts(&self) -> Vec<Context> {
        let mut preauth = Vec::new();
        put_u16(&mut preauth, 1);
        put_u16(&mut preauth, self.salt.len() as u16);
        put_u16(&mut preauth, HASH_SHA512);
        preauth.extend_from_slice(&self.salt);
        let mut signing = Vec::new();
        put_u16(&mut signing, 1);
        put_u16(&mut signing, SIGNING_AES_CMAC);
        vec![
            Context {
                kind: CONTEXT_PREAUTH,
                data: preauth,
            },
            Context {
                kind: CONTEXT_SIGNING,
                data: signing,
            },
        ]
    }

    /// The body; offsets inside it count from the start of the header.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        put_u16(&mut b, 36);
        put_u16(&mut b, self.dialects.len() as u16);
        put_u16(&mut b, self.security_mode);
        put_u16(&mut b, 0);
        put_u32(&mut b, self.capabilities);
        b.extend_from_slice(&self.client_guid);
        put_u32(&mut b, 0); // NegotiateContextOffset, set below
        put_u16(&mut b, 0); // NegotiateContextCount
        put_u16(&mut b, 0);
        for d in &self.dialects {
            put_u16(&mut b, *d);
        }
        if self.dialects.contains(&DIALECT_311) {
            // Contexts start 8-aligned relative to the header.
            while (HEADER_LEN + b.len()) % 8 != 0 {
                b.push(0);
            }
            let at = HEADER_LEN + b.len();
            let contexts = self.contexts();
            set_u32(&mut b, 28, at as u32);
            set_u16(&mut b, 32, contexts.len() as u16);
            encode_contexts(&mut b, &contexts);
        }
        b
    }
}

/// What the client keeps from a NEGOTIATE response (2.2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiateResponse {
    /// The server's SecurityMode.
    pub security_mode: u16,
    /// DialectRevision chosen.
    pub dialect: u16,
    /// ServerGuid.
    pub server_guid: [u8; 16],
    /// The server's capabilities.
    pub capabilities: u32,
    /// MaxTransactSize.
    pub max_transact_size: u32,
    /// MaxReadSize.
    pub max_read_size: u32,
    /// MaxWriteSize.
    pub max_write_size: u32,
    /// The security buffer (SPNEGO NegTokenInit2, may be empty).
    pub security_buffer: Vec<u8>,
    /// Negotiate contexts (3.1.1).
    pub contexts: Vec<Context>,
}

impl NegotiateResponse {
    /// Parses a whole response message (header included: the offsets
    /// count from it).
    pub fn decode(message: &[u8]) -> Result<Self> {
        let r = Reader::new(message, "SMB2 NEGOTIATE response");
        let at = HEADER_LEN;
        if r.u16(at)? != 65 {
            return Err(r.error("StructureSize is not 65"));
        }
        let sec_off = usize::from(r.u16(at + 56)?);
        let sec_len = usize::from(r.u16(at + 58)?);
        let dialect = r.u16(at + 4)?;
        let contexts = if dialect == DIALECT_311 {
            decode_contexts(&r, r.u32(at + 60)? as usize, r.u16(at + 6)?)?
        } else {
            Vec::new()
        };
        Ok(Self {
            security_mode: r.u16(at + 2)?,
            dialect,
            server_guid: r.array(at + 8)?,
            capabilities: r.u32(at + 24)?,
            max_transact_size: r.u32(at + 28)?,
            max_read_size: r.u32(at + 32)?,
            max_write_size: r.u32(at + 36)?,
            security_buffer: if sec_len == 0 {
                Vec::new()
            } else {
                r.slice(sec_off, sec_len)?.to_vec()
            },
            contexts,
        })
    }

    /// Checks the answer against what `request` offered (3.2.5.2): a
    /// dialect we offered; for 3.1.1 exactly one preauth context naming
    /// SHA-512, a signing algorithm we offered (or none: AES-CMAC), and
    /// no cipher, as none was offered.
    pub fn validate(&self, request: &NegotiateRequest) -> Result<()> {
        if !request.dialects.contains(&self.dialect) {
            return Err(Error::msg(format!(
                "the server chose SMB dialect {:#06x}, which was not offered ({:04x?})",
                self.dialect, request.dialects
            )));
        }
        if self.dialect != DIALECT_311 {
            return Ok(());
        }
        let preauth: Vec<_> = self
            .contexts
            .iter()
            .filter(|c| c.kind == CONTEXT_PREAUTH)
            .collect();
        let [p] = preauth.as_slice() else {
            return Err(Error::msg(format!(
                "SMB 3.1.1 NEGOTIATE response with {} preauth integrity contexts (must be 1)",
                preauth.len()
            )));
        };
        let pr = Reader::new(&p.data, "PREAUTH_INTEGRITY_CAPABILITIES");
        if pr.u16(0)? != 1 || pr.u16(4)? != HASH_SHA512 {
            return Err(pr.error("the server did not choose SHA-512"));
        }
        for c in &self.contexts {
            match c.kind {
                CONTEXT_SIGNING => {
                    let sr = Reader::new(&c.data, "SIGNING_CAPABILITIES");
                    if sr.u16(0)? != 1 || sr.u16(2)? != SIGNING_AES_CMAC {
                        return Err(
                            sr.error("the server chose a signing algorithm other than AES-CMAC")
                        );
                    }
                }
                CONTEXT_ENCRYPTION => {
                    return Err(Error::msg(
                        "the server answered an ENCRYPTION_CAPABILITIES context the client did not send",
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether the server asked for every message to be signed.
    pub fn signing_required(&self) -> bool {
        self.security_mode & SIGNING_REQUIRED != 0
    }
}

/// The dialects this client offers, best last: 3.0.2 (SMB Direct's
/// remote invalidation starts there) and 3.1.1.
pub const DIALECTS: [u16; 2] = [DIALECT_302, DIALECT_311];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lays_out_dialects_and_aligned_contexts() {
        let q = NegotiateRequest {
            dialects: DIALECTS.to_vec(),
            security_mode: SIGNING_ENABLED,
            capabilities: CAP_LARGE_MTU,
            client_guid: [9; 16],
            salt: vec![0xA5; 32],
        };
        let b = q.encode();
        let r = Reader::new(&b, "t");
        assert_eq!(r.u16(0).unwrap(), 36);
        assert_eq!(r.u16(2).unwrap(), 2, "DialectCount");
        assert_eq!(r.u16(36).unwrap(), 0x0302);
        assert_eq!(r.u16(38).unwrap(), 0x0311);
        let ctx_at = r.u32(28).unwrap() as usize;
        assert_eq!(ctx_at % 8, 0);
        assert_eq!(ctx_at, 64 + 40, "right after the dialects, aligned");
        let mut whole = vec![0u8; 64];
        whole.extend_from_slice(&b);
        let ctxs = decode_contexts(&Reader::new(&whole, "t"), ctx_at, r.u16(32).unwrap()).unwrap();
        assert_eq!(ctxs, q.contexts());
        assert_eq!(
            &ctxs[0].data[..6],
            &[1, 0, 32, 0, 1, 0],
            "one hash, 32-byte salt, SHA-512"
        );
        let plain = NegotiateRequest {
            dialects: vec![DIALECT_302],
            ..q
        }
        .encode();
        assert_eq!(plain.len(), 38, "no contexts without 3.1.1");
    }
}

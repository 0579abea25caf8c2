//! A scripted SMB 3 server over an in-memory transport: it answers the
//! client's whole session (NEGOTIATE, SESSION_SETUP x2, TREE_CONNECT,
//! CREATE, WRITE/READ over "RDMA" into shared buffers, CLOSE, LOGOFF)
//! with responses laid out by hand from [MS-SMB2] 2.2, and checks every
//! field a real server checks: MessageId sequence, CreditCharge against
//! the credits it granted and the I/O size, SessionId, TreeId, FileId,
//! the NTLMv2 proof and MIC from the password, and request signatures
//! with a signing key it derives from its own preauth hash.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use hmac::{Hmac, Mac as _};
use md5::Md5;

use super::codec::{Reader, put_u16, put_u32, put_u64, utf16le};
use super::connection::{Config, Connection, Transport};
use super::io::DESCRIPTOR_LEN;
use super::ntlm::{self, Credentials};
use super::signing::{self, DIALECT_302, DIALECT_311, Key, PreauthHash};
use crate::error::{Error, Result};
use crate::smbd::proto::BufferDescriptor;

const SESSION_ID: u64 = 0x0000_1000_0000_0025;
pub(super) const TREE_ID: u32 = 0x0000_0007;
const PERSISTENT: u64 = 0x0123;
const VOLATILE: u64 = 0xFEED_0000_0042;
const SERVER_CHALLENGE: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
const SPNEGO_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
const NTLM_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a];

/// Registered client memory the server reaches "by RDMA": token -> bytes.
pub(super) type Memory = Rc<RefCell<HashMap<u32, Vec<u8>>>>;

fn der(tag: u8, v: &[u8]) -> Vec<u8> {
    assert!(v.len() < 0x10000);
    let mut b = vec![tag];
    if v.len() < 0x80 {
        b.push(v.len() as u8);
    } else {
        b.push(0x82);
        b.extend_from_slice(&(v.len() as u16).to_be_bytes());
    }
    b.extend_from_slice(v);
    b
}

/// The fields of a request, read at [MS-SMB2] 2.2.1.2 offsets.
struct Req<'a> {
    r: Reader<'a>,
    charge: u16,
    command: u16,
    credit_request: u16,
    flags: u32,
    message_id: u64,
    tree_id: u32,
    session_id: u64,
}

pub(super) struct Server {
    dialect: u16,
    password: String,
    memory: Memory,
    pub(super) outbox: VecDeque<Vec<u8>>,
    next_id: u64,
    granted: u32,
    preauth: PreauthHash,
    ntlm_negotiate: Vec<u8>,
    challenge: Vec<u8>,
    key: Option<Key>,
    pub(super) file: Vec<u8>,
    file_open: bool,
    log: Vec<String>,
    /// Credits each response grants, in order (the script).
    pub(super) grants: VecDeque<u16>,
    /// Hold responses until this many are ready, then answer them in
    /// reverse order (0: answer at once).
    hold: usize,
    held: Vec<Vec<u8>>,
    /// Answer READs with an interim STATUS_PENDING first, then an async
    /// final response.
    interim_reads: bool,
    /// MaxTransactSize, MaxReadSize and MaxWriteSize granted.
    pub(super) max_io: u32,
}

impl Server {
    fn header(q: &Req<'_>, status: u32, credits: u16, flags: u32) -> Vec<u8> {
        let mut b = vec![0xFE, b'S', b'M', b'B'];
        put_u16(&mut b, 64);
        put_u16(&mut b, q.charge);
        put_u32(&mut b, status);
        put_u16(&mut b, q.command);
        put_u16(&mut b, credits);
        put_u32(&mut b, 1 | flags); // SERVER_TO_REDIR
        put_u32(&mut b, 0);
        put_u64(&mut b, q.message_id);
        put_u32(&mut b, 0);
        put_u32(&mut b, if q.command == 3 { TREE_ID } else { q.tree_id });
        put_u64(&mut b, if q.command == 0 { 0 } else { SESSION_ID });
        b.extend_from_slice(&[0; 16]);
        b
    }

    fn respond(&mut self, q: &Req<'_>, status: u32, body: &[u8], sign: bool) -> Vec<u8> {
        let credits = self
            .grants
            .pop_front()
            .unwrap_or(1)
            .min(q.credit_request.max(1));
        self.granted += u32::from(credits);
        let mut m = Self::header(q, status, credits, 0);
        m.extend_from_slice(body);
        if sign {
            signing::sign(self.key.as_ref().expect("a key before signing"), &mut m);
        }
        if self.hold > 0 {
            self.held.push(m.clone());
            if self.held.len() == self.hold {
                self.outbox.extend(self.held.drain(..).rev());
            }
        } else {
            self.outbox.push_back(m.clone());
        }
        m
    }

    /// Turns the last queued response into the async form after an
    /// interim STATUS_PENDING one (3.3.4.2), both carrying `async_id`.
    fn go_async(&mut self, async_id: u64) {
        let mut last = self.outbox.pop_back().expect("a response to make async");
        let mut interim = last[..64].to_vec();
        for m in [&mut interim, &mut last] {
            m[16] |= 0x2; // ASYNC_COMMAND
            m[32..40].copy_from_slice(&async_id.to_le_bytes());
        }
        interim[8..12].copy_from_slice(&0x0000_0103u32.to_le_bytes());
        interim[16] &= !0x8; // interim responses are not signed
        interim[48..64].fill(0);
        interim[14..16].copy_from_slice(&1u16.to_le_bytes());
        self.granted += 1;
        interim.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0, 0]);
        last[48..64].fill(0);
        signing::sign(self.key.as_ref().expect("key"), &mut last);
        self.outbox.push_back(interim);
        self.outbox.push_back(last);
    }

    fn check(ok: bool, what: &str) -> Result<()> {
        if ok {
            Ok(())
        } else {
            Err(Error::msg(format!("scripted server: {what}")))
        }
    }

    pub(super) fn handle(&mut self, message: &[u8]) -> Result<()> {
        let r = Reader::new(message, "request");
        let q = Req {
            r,
            charge: r.u16(6)?,
            command: r.u16(12)?,
            credit_request: r.u16(14)?,
            flags: r.u32(16)?,
            message_id: r.u64(24)?,
            tree_id: r.u32(36)?,
            session_id: r.u64(40)?,
        };
        self.log
            .push(format!("{}#{}x{}", q.command, q.message_id, q.charge));
        Self::check(
            r.array::<4>(0)? == *b"\xFESMB" && r.u16(4)? == 64,
            "SMB2 header",
        )?;
        Self::check(q.flags & 1 == 0, "requests do not set SERVER_TO_REDIR")?;
        Self::check(
            q.message_id == self.next_id,
            &format!("MessageId {} (expected {})", q.message_id, self.next_id),
        )?;
        Self::check(
            u32::from(q.charge.max(1)) <= self.granted,
            "CreditCharge within the granted credits",
        )?;
        self.next_id += u64::from(q.charge.max(1));
        self.granted -= u32::from(q.charge.max(1));
        Self::check(q.credit_request >= 1, "CreditRequest of at least 1")?;
        let signed = q.flags & 8 != 0;
        if q.command >= 2 {
            Self::check(q.session_id == SESSION_ID, "SessionId")?;
            Self::check(signed, "post-authentication requests are signed")?;
            signing::verify(self.key.as_ref().expect("key"), message)?;
        } else {
            Self::check(!signed, "NEGOTIATE/SESSION_SETUP are not signed")?;
        }
        if matches!(q.command, 5 | 6 | 8 | 9) {
            Self::check(q.tree_id == TREE_ID, "TreeId")?;
        }
        match q.command {
            0 => self.negotiate(&q, message),
            1 => self.session_setup(&q, message),
            3 => {
                Self::check(r.u16(64)? == 9, "TREE_CONNECT StructureSize")?;
                let path = r.slice(usize::from(r.u16(68)?), usize::from(r.u16(70)?))?;
                Self::check(path == utf16le("\\\\192.0.2.1\\share"), "the share path")?;
                let mut body = Vec::new();
                put_u16(&mut body, 16);
                body.push(1); // DISK
                body.push(0);
                put_u32(&mut body, 0);
                put_u32(&mut body, 0);
                put_u32(&mut body, 0x001F_01FF);
                self.respond(&q, 0, &body, true);
                Ok(())
            }
            5 => {
                Self::check(r.u16(64)? == 57, "CREATE StructureSize")?;
                let name = r.slice(usize::from(r.u16(64 + 44)?), usize::from(r.u16(64 + 46)?))?;
                Self::check(name == utf16le("ndkperf.dat"), "the file name")?;
                Self::check(r.u32(64 + 36)? == 5, "FILE_OVERWRITE_IF")?;
                self.file_open = true;
                let mut body = Vec::new();
                put_u16(&mut body, 89);
                body.extend_from_slice(&[0, 0]);
                put_u32(&mut body, 2); // FILE_CREATED
                body.extend_from_slice(&[0; 48]);
                put_u32(&mut body, 0x80);
                put_u32(&mut body, 0);
                put_u64(&mut body, PERSISTENT);
                put_u64(&mut body, VOLATILE);
                put_u32(&mut body, 0);
                put_u32(&mut body, 0);
                self.respond(&q, 0, &body, true);
                Ok(())
            }
            9 => self.write(&q),
            8 => self.read(&q),
            6 => {
                Self::check(
                    r.u16(64)? == 24 && self.file_id(&r, 72)?,
                    "CLOSE of our FileId",
                )?;
                self.file_open = false;
                let mut body = Vec::new();
                put_u16(&mut body, 60);
                body.extend_from_slice(&[0; 58]);
                self.respond(&q, 0, &body, true);
                Ok(())
            }
            2 => {
                Self::check(r.u16(64)? == 4, "LOGOFF StructureSize")?;
                self.respond(&q, 0, &[4, 0, 0, 0], true);
                Ok(())
            }
            c => Err(Error::msg(format!(
                "scripted server: unexpected command {c}"
            ))),
        }
    }

    fn file_id(&self, r: &Reader<'_>, at: usize) -> Result<bool> {
        Ok(self.file_open && r.u64(at)? == PERSISTENT && r.u64(at + 8)? == VOLATILE)
    }

    fn negotiate(&mut self, q: &Req<'_>, message: &[u8]) -> Result<()> {
        let r = q.r;
        Self::check(r.u16(64)? == 36, "NEGOTIATE StructureSize")?;
        let dialect_count = usize::from(r.u16(66)?);
        let dialects: Vec<u16> = (0..dialect_count)
            .map(|i| r.u16(100 + 2 * i))
            .collect::<Result<_>>()?;
        Self::check(dialects.contains(&self.dialect), "our dialect is offered")?;
        Self::check(r.u32(72)? & 4 != 0, "LARGE_MTU offered")?;
        if dialects.contains(&DIALECT_311) {
            let at = r.u32(92)? as usize;
            Self::check(at % 8 == 0 && r.u16(96)? >= 1, "aligned negotiate contexts")?;
            Self::check(
                r.u16(at)? == 1 && r.u16(at + 8)? == 1 && r.u16(at + 12)? == 1,
                "SHA-512 preauth context first",
            )?;
        }
        if self.dialect == DIALECT_311 {
            self.preauth.update(message);
        }
        let mech = der(0xa0, &der(0x30, &der(0x06, NTLM_OID)));
        let token = der(
            0x60,
            &[der(0x06, SPNEGO_OID), der(0xa0, &der(0x30, &mech))].concat(),
        );
        let mut body = Vec::new();
        put_u16(&mut body, 65);
        put_u16(&mut body, 0x3); // signing enabled and required
        put_u16(&mut body, self.dialect);
        put_u16(&mut body, if self.dialect == DIALECT_311 { 2 } else { 0 });
        body.extend_from_slice(&[0x5A; 16]);
        put_u32(&mut body, 0x4); // LARGE_MTU
        for _ in 0..3 {
            put_u32(&mut body, self.max_io);
        }
        put_u64(&mut body, 0);
        put_u64(&mut body, 0);
        put_u16(&mut body, 128);
        put_u16(&mut body, token.len() as u16);
        let ctx_at_field = body.len();
        put_u32(&mut body, 0);
        body.extend_from_slice(&token);
        if self.dialect == DIALECT_311 {
            while (64 + body.len()) % 8 != 0 {
                body.push(0);
            }
            let at = (64 + body.len()) as u32;
            body[ctx_at_field..ctx_at_field + 4].copy_from_slice(&at.to_le_bytes());
            for (kind, data) in [
                (
                    1u16,
                    [1u16.to_le_bytes(), 32u16.to_le_bytes(), 1u16.to_le_bytes()].concat(),
                ),
                (8, [1u16.to_le_bytes(), 1u16.to_le_bytes()].concat()),
            ] {
                let mut d = data;
                if kind == 1 {
                    d.extend_from_slice(&[0x33; 32]);
                }
                put_u16(&mut body, kind);
                put_u16(&mut body, d.len() as u16);
                put_u32(&mut body, 0);
                body.extend_from_slice(&d);
                while (64 + body.len()) % 8 != 0 {
                    body.push(0);
                }
            }
        }
        let sent = self.respond(q, 0, &body, false);
        if self.dialect == DIALECT_311 {
            self.preauth.update(&sent);
        }
        Ok(())
    }

    fn session_setup(&mut self, q: &Req<'_>, message: &[u8]) -> Result<()> {
        let r = q.r;
        Self::check(r.u16(64)? == 25, "SESSION_SETUP StructureSize")?;
        let blob = r.slice(usize::from(r.u16(64 + 12)?), usize::from(r.u16(64 + 14)?))?;
        if self.dialect == DIALECT_311 {
            self.preauth.update(message);
        }
        let at = blob
            .windows(8)
            .position(|w| w == b"NTLMSSP\0")
            .ok_or_else(|| Error::msg("no NTLMSSP in the token"))?;
        let ntlm_msg = &blob[at..];
        if q.session_id == 0 {
            Self::check(blob[0] == 0x60, "a NegTokenInit first")?;
            Self::check(ntlm_msg[8] == 1, "an NTLM NEGOTIATE first")?;
            self.challenge_leg(q, ntlm_msg);
            return Ok(());
        }
        Self::check(
            q.session_id == SESSION_ID,
            "the second leg names our SessionId",
        )?;
        Self::check(blob[0] == 0xa1, "a NegTokenResp second")?;
        let a = Reader::new(ntlm_msg, "AUTHENTICATE");
        Self::check(a.u32(8)? == 3, "an NTLM AUTHENTICATE")?;
        let field = |at: usize| -> Result<&[u8]> {
            a.slice(a.u32(at + 4)? as usize, usize::from(a.u16(at)?))
        };
        let nt = field(20)?;
        let user = String::from_utf16(
            &field(36)?
                .chunks(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]]))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let domain = String::from_utf16(
            &field(28)?
                .chunks(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]]))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let key = ntlm::ntowf_v2(&user, &domain, &self.password);
        let hm = |k: &[u8], parts: &[&[u8]]| -> [u8; 16] {
            let mut mac = <Hmac<Md5>>::new_from_slice(k).unwrap();
            for p in parts {
                mac.update(p);
            }
            mac.finalize().into_bytes().into()
        };
        let proof = hm(&key, &[&SERVER_CHALLENGE, &nt[16..]]);
        if proof != nt[..16] {
            self.respond(q, 0xC000_006D, &[9, 0, 0, 0, 0, 0, 0, 0, 0], false);
            return Ok(());
        }
        Self::check(
            nt[24..32] == 0x01DC_0000_1234_5678u64.to_le_bytes(),
            "the client used the server's MsvAvTimestamp",
        )?;
        Self::check(
            field(12)? == [0u8; 24],
            "Z(24) LM response with a timestamp",
        )?;
        let session_key = hm(&key, &[&proof]);
        let mut zeroed = ntlm_msg.to_vec();
        zeroed[72..88].fill(0);
        let mic = hm(
            &session_key,
            &[&self.ntlm_negotiate, &self.challenge, &zeroed],
        );
        Self::check(ntlm_msg[72..88] == mic, "the AUTHENTICATE MIC")?;
        self.key = Some(signing::signing_key(
            self.dialect,
            &session_key,
            &self.preauth.0,
        ));
        let token = der(0xa1, &der(0x30, &der(0xa0, &der(0x0a, &[0]))));
        let mut body = Vec::new();
        put_u16(&mut body, 9);
        put_u16(&mut body, 0);
        put_u16(&mut body, 72);
        put_u16(&mut body, token.len() as u16);
        body.extend_from_slice(&token);
        self.respond(q, 0, &body, true);
        Ok(())
    }

    fn challenge_leg(&mut self, q: &Req<'_>, ntlm_msg: &[u8]) {
        self.ntlm_negotiate = ntlm_msg.to_vec();
        let mut ti = Vec::new();
        for (id, s) in [(2u16, "DOMAIN"), (1, "KSMBD")] {
            put_u16(&mut ti, id);
            put_u16(&mut ti, utf16le(s).len() as u16);
            ti.extend_from_slice(&utf16le(s));
        }
        put_u16(&mut ti, 7);
        put_u16(&mut ti, 8);
        put_u64(&mut ti, 0x01DC_0000_1234_5678);
        put_u32(&mut ti, 0);
        let mut c = b"NTLMSSP\0".to_vec();
        put_u32(&mut c, 2);
        put_u16(&mut c, 0);
        put_u16(&mut c, 0);
        put_u32(&mut c, 48);
        put_u32(&mut c, ntlm::CLIENT_FLAGS);
        c.extend_from_slice(&SERVER_CHALLENGE);
        c.extend_from_slice(&[0; 8]);
        put_u16(&mut c, ti.len() as u16);
        put_u16(&mut c, ti.len() as u16);
        put_u32(&mut c, 48);
        c.extend_from_slice(&ti);
        self.challenge = c.clone();
        let token = der(
            0xa1,
            &der(
                0x30,
                &[
                    der(0xa0, &der(0x0a, &[1])),
                    der(0xa1, &der(0x06, NTLM_OID)),
                    der(0xa2, &der(0x04, &c)),
                ]
                .concat(),
            ),
        );
        let mut body = Vec::new();
        put_u16(&mut body, 9);
        put_u16(&mut body, 0);
        put_u16(&mut body, 72);
        put_u16(&mut body, token.len() as u16);
        body.extend_from_slice(&token);
        let sent = self.respond(q, 0xC000_0016, &body, false);
        if self.dialect == DIALECT_311 {
            self.preauth.update(&sent);
        }
    }

    fn descriptors(r: &Reader<'_>, at: usize, len: usize) -> Result<Vec<BufferDescriptor>> {
        (0..len / DESCRIPTOR_LEN)
            .map(|i| {
                let a = at + i * DESCRIPTOR_LEN;
                Ok(BufferDescriptor {
                    offset: r.u64(a)?,
                    token: r.u32(a + 8)?,
                    length: r.u32(a + 12)?,
                })
            })
            .collect()
    }

    fn write(&mut self, q: &Req<'_>) -> Result<()> {
        let r = q.r;
        Self::check(
            r.u16(64)? == 49 && self.file_id(&r, 80)?,
            "WRITE of our FileId",
        )?;
        if r.u32(96)? == 0 {
            return self.write_inline(q);
        }
        Self::check(r.u32(96)? == 2, "Channel RDMA_V1_INVALIDATE")?;
        Self::check(
            r.u16(66)? == 0 && r.u32(68)? == 0,
            "RDMA WRITE: DataOffset and Length 0 (ksmbd)",
        )?;
        let n = r.u32(100)?;
        Self::check(
            u32::from(q.charge) >= n.div_ceil(65_536),
            "CreditCharge covers the I/O",
        )?;
        let (ci_at, ci_len) = (usize::from(r.u16(104)?), usize::from(r.u16(106)?));
        Self::check(
            ci_at >= 0x70 && ci_len >= DESCRIPTOR_LEN && ci_len % DESCRIPTOR_LEN == 0,
            "descriptors after the fixed part",
        )?;
        let d = Self::descriptors(&r, ci_at, ci_len)?;
        Self::check(
            d.iter().map(|d| u64::from(d.length)).sum::<u64>() == u64::from(n),
            "descriptor lengths add up to RemainingBytes",
        )?;
        let offset = r.u64(72)? as usize;
        let mut pulled = Vec::with_capacity(n as usize);
        for d in &d {
            let piece = self
                .memory
                .borrow_mut()
                .remove(&d.token)
                .ok_or_else(|| Error::msg("unknown token (or reused after invalidation)"))?;
            Self::check(piece.len() == d.length as usize, "a descriptor's bytes")?;
            pulled.extend_from_slice(&piece);
        }
        self.file
            .resize(self.file.len().max(offset + pulled.len()), 0);
        self.file[offset..offset + pulled.len()].copy_from_slice(&pulled);
        let mut body = Vec::new();
        put_u16(&mut body, 17);
        put_u16(&mut body, 0);
        put_u32(&mut body, n);
        put_u32(&mut body, 0);
        put_u32(&mut body, 0);
        self.respond(q, 0, &body, true);
        Ok(())
    }

    fn write_inline(&mut self, q: &Req<'_>) -> Result<()> {
        let r = q.r;
        let (at, n) = (usize::from(r.u16(66)?), r.u32(68)?);
        Self::check(at == 0x70, "inline WRITE data at 0x70")?;
        Self::check(
            u32::from(q.charge) >= n.div_ceil(65_536),
            "CreditCharge covers the I/O",
        )?;
        let data = r.slice(at, n as usize)?;
        let offset = r.u64(72)? as usize;
        self.file
            .resize(self.file.len().max(offset + data.len()), 0);
        self.file[offset..offset + data.len()].copy_from_slice(data);
        let mut body = Vec::new();
        put_u16(&mut body, 17);
        put_u16(&mut body, 0);
        put_u32(&mut body, n);
        put_u32(&mut body, 0);
        put_u32(&mut body, 0);
        self.respond(q, 0, &body, true);
        Ok(())
    }

    fn read(&mut self, q: &Req<'_>) -> Result<()> {
        let r = q.r;
        Self::check(
            r.u16(64)? == 49 && self.file_id(&r, 80)?,
            "READ of our FileId",
        )?;
        let n = r.u32(68)?;
        let offset = r.u64(72)? as usize;
        Self::check(
            u32::from(q.charge) >= n.div_ceil(65_536),
            "CreditCharge covers the I/O",
        )?;
        if r.u32(100)? == 0 {
            let data = self.file[offset..offset + n as usize].to_vec();
            let mut body = Vec::new();
            put_u16(&mut body, 17);
            body.push(0x50);
            body.push(0);
            put_u32(&mut body, n);
            put_u32(&mut body, 0);
            put_u32(&mut body, 0);
            body.extend_from_slice(&data);
            self.respond(q, 0, &body, true);
            return Ok(());
        }
        Self::check(r.u32(100)? == 2, "Channel RDMA_V1_INVALIDATE")?;
        let d = Self::descriptors(&r, usize::from(r.u16(108)?), usize::from(r.u16(110)?))?;
        Self::check(
            !d.is_empty() && d.iter().map(|d| u64::from(d.length)).sum::<u64>() >= u64::from(n),
            "descriptors as large as the READ",
        )?;
        // The file's bytes, split over the descriptors in order (as
        // ksmbd's smb_direct_rdma_xmit does).
        let mut at = offset;
        let end = offset + n as usize;
        for d in &d {
            let take = (d.length as usize).min(end - at);
            if take == 0 {
                break;
            }
            let piece = self.file[at..at + take].to_vec();
            self.memory.borrow_mut().insert(d.token, piece);
            at += take;
        }
        let mut body = Vec::new();
        put_u16(&mut body, 17);
        body.push(0x50);
        body.push(0);
        put_u32(&mut body, 0); // DataLength: the data went by RDMA
        put_u32(&mut body, n); // DataRemaining
        put_u32(&mut body, 0);
        self.respond(q, 0, &body, true);
        if self.interim_reads {
            self.go_async(0xA5A5_0000 + q.message_id);
        }
        Ok(())
    }
}

/// The in-memory transport: sends go to the server, receives come from
/// its outbox.
struct Wire(Rc<RefCell<Server>>);

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Wire")
    }
}

impl Transport for Wire {
    fn send(&mut self, message: &[u8]) -> Result<()> {
        self.0.borrow_mut().handle(message)
    }

    fn receive(&mut self) -> Result<Vec<u8>> {
        self.0
            .borrow_mut()
            .outbox
            .pop_front()
            .ok_or_else(|| Error::msg("the scripted server has nothing to say"))
    }
}

pub(super) fn server(dialect: u16, password: &str, memory: &Memory) -> Rc<RefCell<Server>> {
    Rc::new(RefCell::new(Server {
        dialect,
        password: password.into(),
        memory: memory.clone(),
        outbox: VecDeque::new(),
        next_id: 0,
        granted: 1,
        preauth: PreauthHash::default(),
        ntlm_negotiate: Vec::new(),
        challenge: Vec::new(),
        key: None,
        file: Vec::new(),
        file_open: false,
        log: Vec::new(),
        // NEGOTIATE 1, SESSION_SETUP 1 then 32, then 16 per answer.
        grants: [1, 1, 32]
            .into_iter()
            .chain(std::iter::repeat_n(16, 16))
            .collect(),
        hold: 0,
        held: Vec::new(),
        interim_reads: false,
        max_io: 8 << 20,
    }))
}

pub(super) fn config() -> Config {
    Config {
        server_name: "192.0.2.1".into(),
        credentials: Credentials {
            user: "tester".into(),
            domain: String::new(),
            password: "s3cret".into(),
            workstation: "NDKPERF".into(),
        },
        dialects: super::negotiate::DIALECTS.to_vec(),
        credit_target: 64,
        client_guid: [0x11; 16],
    }
}

fn whole_session(dialect: u16) {
    let memory: Memory = Rc::default();
    let srv = server(dialect, "s3cret", &memory);
    let cfg = config();
    let mut c = Connection::connect(Wire(srv.clone()), &cfg).expect("session");
    assert_eq!(c.negotiated().dialect, dialect);
    assert_eq!(c.session_id(), SESSION_ID);
    assert_eq!(c.next_message_id(), 3, "NEGOTIATE 0, SESSION_SETUP 1 and 2");
    assert_eq!(c.credits_available(), 32, "1 + 1 + 32 granted, 3 spent");
    let tree = c.tree_connect(&cfg.server_name, "share").expect("tree");
    assert_eq!(tree.id, TREE_ID);
    let file = c
        .create(
            &tree,
            "ndkperf.dat",
            super::create::DISPOSITION_OVERWRITE_IF,
        )
        .expect("create");
    assert_eq!(
        (file.file_id.persistent, file.file_id.volatile),
        (PERSISTENT, VOLATILE)
    );
    let pattern: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + i / 4096) as u8).collect();
    let wd = [BufferDescriptor {
        offset: 0x7f00_0010_0000,
        token: 0x1001,
        length: 1 << 20,
    }];
    memory.borrow_mut().insert(0x1001, pattern.clone());
    let id_before = c.next_message_id();
    let n = c
        .write(&tree, file.file_id, 0, &super::io::Data::Rdma(&wd))
        .expect("write");
    assert_eq!(n, 1 << 20);
    assert_eq!(
        c.next_message_id(),
        id_before + 16,
        "a 1 MiB WRITE takes 16 message ids"
    );
    let rd = [BufferDescriptor {
        offset: 0x7f00_0020_0000,
        token: 0x2002,
        length: 1 << 20,
    }];
    let got = c
        .read(&tree, file.file_id, 0, 1 << 20, Some(&rd))
        .expect("read");
    assert!(got.data.is_empty());
    assert_eq!(got.data_remaining, 1 << 20);
    assert!(
        memory.borrow().get(&0x2002) == Some(&pattern),
        "the READ placed the written bytes"
    );
    c.close(&tree, file.file_id).expect("close");
    c.logoff().expect("logoff");
    let s = srv.borrow();
    assert_eq!(s.file, pattern);
    assert!(s.outbox.is_empty());
    assert_eq!(s.log.len(), 9, "{:?}", s.log);
}

#[test]
fn whole_session_smb311_against_the_scripted_server() {
    whole_session(DIALECT_311);
}

#[test]
fn whole_session_smb302_against_the_scripted_server() {
    whole_session(DIALECT_302);
}

#[test]
fn wrong_password_is_a_logon_failure() {
    let memory: Memory = Rc::default();
    let srv = server(DIALECT_311, "other", &memory);
    let e = Connection::connect(Wire(srv), &config()).unwrap_err();
    assert!(e.to_string().contains("STATUS_LOGON_FAILURE"), "{e}");
}

/// A transport that flips one bit of the Nth message it delivers.
#[derive(Debug)]
struct Tamper(Wire, usize);

impl Transport for Tamper {
    fn send(&mut self, message: &[u8]) -> Result<()> {
        self.0.send(message)
    }

    fn receive(&mut self) -> Result<Vec<u8>> {
        let mut m = self.0.receive()?;
        self.1 -= 1;
        if self.1 == 0 {
            *m.last_mut().unwrap() ^= 0x80;
        }
        Ok(m)
    }
}

#[test]
fn a_tampered_signed_response_is_refused() {
    let memory: Memory = Rc::default();
    // The 3rd response is the signed final SESSION_SETUP.
    let srv = server(DIALECT_311, "s3cret", &memory);
    let e = Connection::connect(Tamper(Wire(srv), 3), &config()).unwrap_err();
    assert!(e.to_string().contains("signature"), "{e}");
    // The 4th is TREE_CONNECT's.
    let srv = server(DIALECT_311, "s3cret", &memory);
    let mut c = Connection::connect(Tamper(Wire(srv), 4), &config()).unwrap();
    let e = c.tree_connect("192.0.2.1", "share").unwrap_err();
    assert!(e.to_string().contains("signature"), "{e}");
}

#[test]
fn credits_bound_the_requests() {
    let memory: Memory = Rc::default();
    let srv = server(DIALECT_311, "s3cret", &memory);
    srv.borrow_mut().grants = [1, 1, 2].into_iter().collect();
    let mut c = Connection::connect(Wire(srv), &config()).unwrap();
    assert_eq!(c.credits_available(), 2);
    let tree = c.tree_connect("192.0.2.1", "share").unwrap();
    let file = c
        .create(
            &tree,
            "ndkperf.dat",
            super::create::DISPOSITION_OVERWRITE_IF,
        )
        .unwrap();
    let wd = [BufferDescriptor {
        offset: 0,
        token: 9,
        length: 1 << 20,
    }];
    let e = c
        .write(&tree, file.file_id, 0, &super::io::Data::Rdma(&wd))
        .unwrap_err();
    assert!(e.to_string().contains("out of SMB2 credits"), "{e}");
}

#[test]
fn pipelined_ios_match_out_of_order_responses_and_interim_pendings() {
    let memory: Memory = Rc::default();
    let srv = server(DIALECT_311, "s3cret", &memory);
    let cfg = config();
    let mut c = Connection::connect(Wire(srv.clone()), &cfg).unwrap();
    let tree = c.tree_connect(&cfg.server_name, "share").unwrap();
    let file = c
        .create(
            &tree,
            "ndkperf.dat",
            super::create::DISPOSITION_OVERWRITE_IF,
        )
        .unwrap()
        .file_id;
    // Four 64 KiB WRITEs in flight, answered last first.
    srv.borrow_mut().hold = 4;
    let mut ids = Vec::new();
    for i in 0..4u32 {
        let token = 0x100 + i;
        memory.borrow_mut().insert(token, vec![i as u8; 65_536]);
        let wd = [BufferDescriptor {
            offset: u64::from(i) << 16,
            token,
            length: 65_536,
        }];
        let (id, n) = c
            .submit_write(
                &tree,
                file,
                u64::from(i) * 65_536,
                &super::io::Data::Rdma(&wd),
            )
            .unwrap();
        assert_eq!(n, 65_536);
        ids.push(id);
    }
    assert_eq!(c.pending(), 4);
    let mut answered = Vec::new();
    while c.pending() > 0 {
        let r = c.receive().unwrap();
        assert_eq!(
            super::io::decode_write_response(&r.message).unwrap(),
            65_536
        );
        answered.push(r.header.message_id);
    }
    ids.reverse();
    assert_eq!(answered, ids, "matched by MessageId, in the server's order");
    // A READ answered with STATUS_PENDING first, then the async final.
    {
        let mut s = srv.borrow_mut();
        s.hold = 0;
        s.interim_reads = true;
    }
    let before = c.credits_available();
    let rd = [BufferDescriptor {
        offset: 0x9000,
        token: 0x777,
        length: 4 * 65_536,
    }];
    let got = c.read(&tree, file, 0, 4 * 65_536, Some(&rd)).unwrap();
    assert_eq!(got.data_remaining, 4 * 65_536);
    assert_eq!(
        c.credits_available(),
        before - 4 + 1 + 4,
        "the interim grant (1) and the final one (16 capped at the CreditRequest, 4) both count"
    );
    let placed = memory.borrow().get(&0x777).cloned().unwrap();
    assert!(
        placed
            .chunks(65_536)
            .enumerate()
            .all(|(i, ch)| ch.iter().all(|&b| b == i as u8))
    );
    c.close(&tree, file).unwrap();
    c.logoff().unwrap();
}

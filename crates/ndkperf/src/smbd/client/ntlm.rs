//! NTLMSSP with NTLMv2 ([MS-NLMP]): the NEGOTIATE, CHALLENGE and
//! AUTHENTICATE messages (2.2.1.1-2.2.1.3), NTOWFv2 and the NTLMv2
//! response (3.3.2), the MIC (3.1.5.1.2) and the session key SMB signs
//! with.
//!
//! The client does not set NTLMSSP_NEGOTIATE_KEY_EXCH, so
//! ExportedSessionKey is KeyExchangeKey = SessionBaseKey (3.4.5.1): no RC4
//! anywhere. SEAL is not offered either (SMB encrypts with its own keys).

use hmac::{Hmac, Mac as _};
use md4::{Digest as _, Md4};
use md5::Md5;

use super::codec::{Reader, len16, put_u16, put_u32, utf16le};
use crate::error::{Error, Result};

type HmacMd5 = Hmac<Md5>;

const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";

/// NegotiateFlags ([MS-NLMP] 2.2.2.5).
pub mod flag {
    /// NTLMSSP_NEGOTIATE_UNICODE.
    pub const UNICODE: u32 = 0x0000_0001;
    /// NTLMSSP_REQUEST_TARGET.
    pub const REQUEST_TARGET: u32 = 0x0000_0004;
    /// NTLMSSP_NEGOTIATE_SIGN.
    pub const SIGN: u32 = 0x0000_0010;
    /// NTLMSSP_NEGOTIATE_NTLM.
    pub const NTLM: u32 = 0x0000_0200;
    /// NTLMSSP_NEGOTIATE_ALWAYS_SIGN.
    pub const ALWAYS_SIGN: u32 = 0x0000_8000;
    /// NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY.
    pub const EXTENDED_SESSIONSECURITY: u32 = 0x0008_0000;
    /// NTLMSSP_NEGOTIATE_TARGET_INFO.
    pub const TARGET_INFO: u32 = 0x0080_0000;
    /// NTLMSSP_NEGOTIATE_VERSION.
    pub const VERSION: u32 = 0x0200_0000;
    /// NTLMSSP_NEGOTIATE_128.
    pub const N128: u32 = 0x2000_0000;
    /// NTLMSSP_NEGOTIATE_KEY_EXCH (not sent: see the module comment).
    #[cfg(test)]
    pub const KEY_EXCH: u32 = 0x4000_0000;
    /// NTLMSSP_NEGOTIATE_56.
    pub const N56: u32 = 0x8000_0000;
}

/// The flags of our NEGOTIATE and AUTHENTICATE messages.
pub const CLIENT_FLAGS: u32 = flag::UNICODE
    | flag::REQUEST_TARGET
    | flag::SIGN
    | flag::NTLM
    | flag::ALWAYS_SIGN
    | flag::EXTENDED_SESSIONSECURITY
    | flag::TARGET_INFO
    | flag::VERSION
    | flag::N128
    | flag::N56;

/// AV pair ids ([MS-NLMP] 2.2.2.1).
pub mod av {
    /// MsvAvEOL.
    pub const EOL: u16 = 0;
    /// MsvAvNbComputerName.
    #[cfg(test)]
    pub const NB_COMPUTER_NAME: u16 = 1;
    /// MsvAvNbDomainName.
    #[cfg(test)]
    pub const NB_DOMAIN_NAME: u16 = 2;
    /// MsvAvFlags.
    pub const FLAGS: u16 = 6;
    /// MsvAvTimestamp.
    pub const TIMESTAMP: u16 = 7;
}

/// MsvAvFlags bit: the AUTHENTICATE message carries a MIC.
const AV_FLAG_MIC_PRESENT: u32 = 0x2;

/// The VERSION field (2.2.2.10): 10.0, NTLMSSP_REVISION_W2K3 (15).
const VERSION: [u8; 8] = [10, 0, 0, 0, 0, 0, 0, 0x0F];

/// The NEGOTIATE_MESSAGE (2.2.1.1): no domain or workstation supplied.
pub fn negotiate_message() -> Vec<u8> {
    let mut b = SIGNATURE.to_vec();
    put_u32(&mut b, 1);
    put_u32(&mut b, CLIENT_FLAGS);
    // DomainNameFields, WorkstationFields: empty, offset past the header.
    for _ in 0..2 {
        put_u16(&mut b, 0);
        put_u16(&mut b, 0);
        put_u32(&mut b, 40);
    }
    b.extend_from_slice(&VERSION);
    b
}

/// What the client needs from a CHALLENGE_MESSAGE (2.2.1.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeMessage {
    /// NegotiateFlags the server chose.
    pub flags: u32,
    /// The 8-byte server challenge.
    pub server_challenge: [u8; 8],
    /// TargetInfo: AV pairs ending in MsvAvEOL.
    pub target_info: Vec<u8>,
}

fn security_buffer<'a>(r: &Reader<'a>, at: usize) -> Result<&'a [u8]> {
    let len = usize::from(r.u16(at)?);
    let offset = r.u32(at + 4)? as usize;
    r.slice(offset, len)
}

impl ChallengeMessage {
    /// Parses and checks a CHALLENGE_MESSAGE: NTLMv2 needs TargetInfo
    /// and extended session security, and Unicode strings.
    pub fn decode(b: &[u8]) -> Result<Self> {
        let r = Reader::new(b, "NTLMSSP CHALLENGE message");
        if r.slice(0, 8)? != SIGNATURE || r.u32(8)? != 2 {
            return Err(r.error("not an NTLMSSP CHALLENGE_MESSAGE"));
        }
        let flags = r.u32(20)?;
        let target_info = security_buffer(&r, 40)?.to_vec();
        if flags & flag::UNICODE == 0 {
            return Err(r.error("the server did not accept Unicode"));
        }
        if target_info.is_empty() {
            return Err(r.error("no TargetInfo, which NTLMv2 needs"));
        }
        av_pairs(&target_info)?;
        Ok(Self {
            flags,
            server_challenge: r.array(24)?,
            target_info,
        })
    }

    /// MsvAvTimestamp of TargetInfo, if the server sent one.
    pub fn timestamp(&self) -> Option<u64> {
        av_pairs(&self.target_info)
            .ok()?
            .into_iter()
            .find_map(|(id, v)| {
                (id == av::TIMESTAMP && v.len() == 8)
                    .then(|| u64::from_le_bytes(v.try_into().expect("8")))
            })
    }
}

/// Splits AV pairs up to MsvAvEOL (which must be there).
pub fn av_pairs(b: &[u8]) -> Result<Vec<(u16, &[u8])>> {
    let r = Reader::new(b, "NTLMSSP AV pair list");
    let mut at = 0;
    let mut pairs = Vec::new();
    loop {
        let id = r.u16(at)?;
        let len = usize::from(r.u16(at + 2)?);
        if id == av::EOL {
            return Ok(pairs);
        }
        pairs.push((id, r.slice(at + 4, len)?));
        at += 4 + len;
    }
}

/// NTOWFv2 ([MS-NLMP] 3.3.2): HMAC_MD5(MD4(UNICODE(password)),
/// UNICODE(Uppercase(user) + domain)). The domain keeps its case.
pub fn ntowf_v2(user: &str, domain: &str, password: &str) -> [u8; 16] {
    let nt_hash = Md4::digest(utf16le(password));
    let mut mac = HmacMd5::new_from_slice(&nt_hash).expect("any key length");
    mac.update(&utf16le(&user.to_uppercase()));
    mac.update(&utf16le(domain));
    mac.finalize().into_bytes().into()
}

fn hmac_md5(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut mac = HmacMd5::new_from_slice(key).expect("any key length");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

/// The results of ComputeResponse for NTLMv2 (3.3.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ntlmv2 {
    /// NtChallengeResponse: NTProofStr followed by `temp`.
    pub nt_response: Vec<u8>,
    /// LmChallengeResponse: HMAC_MD5(key, server || client challenge) ||
    /// client challenge.
    pub lm_response: [u8; 24],
    /// SessionBaseKey: HMAC_MD5(key, NTProofStr).
    pub session_base_key: [u8; 16],
}

/// ComputeResponse for NTLMv2 with the AV pairs `target_info` (as the
/// client sends them back, MsvAvEOL included) and `time` in FILETIME.
pub fn ntlmv2_response(
    response_key: &[u8; 16],
    server_challenge: [u8; 8],
    client_challenge: [u8; 8],
    time: u64,
    target_info: &[u8],
) -> Ntlmv2 {
    let mut temp = vec![1, 1, 0, 0, 0, 0, 0, 0];
    temp.extend_from_slice(&time.to_le_bytes());
    temp.extend_from_slice(&client_challenge);
    temp.extend_from_slice(&[0; 4]);
    temp.extend_from_slice(target_info);
    temp.extend_from_slice(&[0; 4]);
    let nt_proof = hmac_md5(response_key, &[&server_challenge, &temp]);
    let mut nt_response = nt_proof.to_vec();
    nt_response.extend_from_slice(&temp);
    let mut lm_response = [0u8; 24];
    lm_response[..16].copy_from_slice(&hmac_md5(
        response_key,
        &[&server_challenge, &client_challenge],
    ));
    lm_response[16..].copy_from_slice(&client_challenge);
    Ntlmv2 {
        nt_response,
        lm_response,
        session_base_key: hmac_md5(response_key, &[&nt_proof]),
    }
}

/// Who is authenticating.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name (case-insensitive for NTLM).
    pub user: String,
    /// Domain (ksmbd hashes with whatever the client sends; "" works).
    pub domain: String,
    /// Password.
    pub password: String,
    /// Our NetBIOS workstation name, informational.
    pub workstation: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("domain", &self.domain)
            .field("password", &"<hidden>")
            .field("workstation", &self.workstation)
            .finish()
    }
}

/// An AUTHENTICATE_MESSAGE and the key it establishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticate {
    /// The message bytes (2.2.1.3).
    pub message: Vec<u8>,
    /// ExportedSessionKey: SMB's Session.SessionKey.
    pub session_key: [u8; 16],
}

/// Offset of the MIC field in the AUTHENTICATE_MESSAGE.
pub const MIC_AT: usize = 72;
const AUTH_PAYLOAD_AT: usize = 88;

/// Builds the AUTHENTICATE_MESSAGE answering `challenge`, with the MIC
/// over `negotiate || challenge_bytes || authenticate`. The time is the
/// server's MsvAvTimestamp when present (3.1.5.1.2: then the LM response
/// is Z(24) and a MIC is due), else `now` (FILETIME).
pub fn authenticate(
    creds: &Credentials,
    negotiate: &[u8],
    challenge_bytes: &[u8],
    challenge: &ChallengeMessage,
    client_challenge: [u8; 8],
    now: u64,
) -> Result<Authenticate> {
    let server_time = challenge.timestamp();
    // Our copy of TargetInfo: the server's pairs, MsvAvFlags with the MIC
    // bit when a timestamp came (replacing any MsvAvFlags), then EOL.
    let mut target_info = Vec::new();
    for (id, value) in av_pairs(&challenge.target_info)? {
        if id == av::FLAGS {
            continue;
        }
        put_u16(&mut target_info, id);
        put_u16(&mut target_info, len16(value.len(), "an AV pair")?);
        target_info.extend_from_slice(value);
    }
    if server_time.is_some() {
        put_u16(&mut target_info, av::FLAGS);
        put_u16(&mut target_info, 4);
        put_u32(&mut target_info, AV_FLAG_MIC_PRESENT);
    }
    put_u32(&mut target_info, 0);
    let key = ntowf_v2(&creds.user, &creds.domain, &creds.password);
    let v2 = ntlmv2_response(
        &key,
        challenge.server_challenge,
        client_challenge,
        server_time.unwrap_or(now),
        &target_info,
    );
    let lm: &[u8] = if server_time.is_some() {
        &[0; 24]
    } else {
        &v2.lm_response
    };
    let session_key = v2.session_base_key;
    let fields: [Vec<u8>; 6] = [
        lm.to_vec(),
        v2.nt_response,
        utf16le(&creds.domain),
        utf16le(&creds.user),
        utf16le(&creds.workstation),
        Vec::new(), // EncryptedRandomSessionKey: no KEY_EXCH
    ];
    let mut b = SIGNATURE.to_vec();
    put_u32(&mut b, 3);
    let mut payload = Vec::new();
    for f in &fields {
        let len = len16(f.len(), "an AUTHENTICATE field")?;
        put_u16(&mut b, len);
        put_u16(&mut b, len);
        put_u32(&mut b, (AUTH_PAYLOAD_AT + payload.len()) as u32);
        payload.extend_from_slice(f);
    }
    put_u32(&mut b, CLIENT_FLAGS & (challenge.flags | flag::VERSION));
    b.extend_from_slice(&VERSION);
    b.extend_from_slice(&[0; 16]); // MIC, filled below
    debug_assert_eq!(b.len(), AUTH_PAYLOAD_AT);
    b.extend_from_slice(&payload);
    if server_time.is_some() {
        let mic = hmac_md5(&session_key, &[negotiate, challenge_bytes, &b]);
        b[MIC_AT..MIC_AT + 16].copy_from_slice(&mic);
    }
    Ok(Authenticate {
        message: b,
        session_key,
    })
}

/// The client challenge: 8 bytes from the OS's random source.
pub fn random_client_challenge() -> Result<[u8; 8]> {
    let mut c = [0u8; 8];
    getrandom::fill(&mut c).map_err(|e| Error::msg(format!("no random client challenge: {e}")))?;
    Ok(c)
}

/// Now as a FILETIME (100 ns ticks since 1601-01-01).
pub fn filetime_now() -> u64 {
    const UNIX_EPOCH_AS_FILETIME: u64 = 116_444_736_000_000_000;
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    UNIX_EPOCH_AS_FILETIME + (since.as_nanos() / 100) as u64
}

#[cfg(test)]
mod tests {
    use super::super::signing::tests::unhex;
    use super::*;

    /// [MS-NLMP] 4.2.4: user "User", domain "Domain", password
    /// "Password", server challenge 0123456789abcdef, client challenge
    /// aa x8, time 0, and the example's AV pairs (NbDomainName "Domain",
    /// NbComputerName "Server", EOL).
    fn spec_target_info() -> Vec<u8> {
        let mut t = Vec::new();
        for (id, s) in [
            (av::NB_DOMAIN_NAME, "Domain"),
            (av::NB_COMPUTER_NAME, "Server"),
        ] {
            put_u16(&mut t, id);
            put_u16(&mut t, 12);
            t.extend_from_slice(&utf16le(s));
        }
        put_u32(&mut t, 0);
        t
    }

    #[test]
    fn ntlmv2_matches_ms_nlmp_4_2_4() {
        let key = ntowf_v2("User", "Domain", "Password");
        assert_eq!(
            key.to_vec(),
            unhex("0c868a403bfd7a93a3001ef22ef02e3f"),
            "4.2.4.1.1 NTOWFv2"
        );
        let v2 = ntlmv2_response(
            &key,
            [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef],
            [0xaa; 8],
            0,
            &spec_target_info(),
        );
        assert_eq!(
            v2.lm_response.to_vec(),
            unhex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa"),
            "4.2.4.2.1 LMv2 response"
        );
        assert_eq!(
            v2.nt_response[..16].to_vec(),
            unhex("68cd0ab851e51c96aabc927bebef6a1c"),
            "4.2.4.2.2 NTProofStr"
        );
        assert_eq!(
            v2.nt_response[16..].to_vec(),
            unhex(
                "0101000000000000 0000000000000000 aaaaaaaaaaaaaaaa 00000000
                 02000c0044006f006d00610069006e00 01000c00530065007200760065007200 00000000 00000000"
            ),
            "temp"
        );
        assert_eq!(
            v2.session_base_key.to_vec(),
            unhex("8de40ccadbc14a82f15cb0ad0de95ca3"),
            "4.2.4.1.3 SessionBaseKey"
        );
        assert_eq!(
            ntowf_v2("user", "Domain", "Password"),
            key,
            "the user name is case-insensitive"
        );
        assert_ne!(
            ntowf_v2("User", "domain", "Password"),
            key,
            "the domain is not"
        );
    }

    fn challenge_message(target_info: &[u8]) -> Vec<u8> {
        let mut b = SIGNATURE.to_vec();
        put_u32(&mut b, 2);
        put_u16(&mut b, 0);
        put_u16(&mut b, 0);
        put_u32(&mut b, 56);
        put_u32(&mut b, CLIENT_FLAGS);
        b.extend_from_slice(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        b.extend_from_slice(&[0; 8]);
        put_u16(&mut b, target_info.len() as u16);
        put_u16(&mut b, target_info.len() as u16);
        put_u32(&mut b, 56);
        b.extend_from_slice(&VERSION);
        b.extend_from_slice(target_info);
        b
    }

    #[test]
    fn authenticate_without_timestamp_uses_the_spec_responses_and_no_mic() {
        let chal_bytes = challenge_message(&spec_target_info());
        let chal = ChallengeMessage::decode(&chal_bytes).unwrap();
        assert_eq!(chal.timestamp(), None);
        let creds = Credentials {
            user: "User".into(),
            domain: "Domain".into(),
            password: "Password".into(),
            workstation: "COMPUTER".into(),
        };
        let a = authenticate(
            &creds,
            &negotiate_message(),
            &chal_bytes,
            &chal,
            [0xaa; 8],
            0,
        )
        .unwrap();
        let r = Reader::new(&a.message, "test");
        assert_eq!(r.u32(8).unwrap(), 3);
        assert_eq!(
            security_buffer(&r, 12).unwrap().to_vec(),
            unhex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa")
        );
        assert_eq!(
            security_buffer(&r, 20).unwrap()[..16].to_vec(),
            unhex("68cd0ab851e51c96aabc927bebef6a1c")
        );
        assert_eq!(security_buffer(&r, 36).unwrap(), utf16le("User").as_slice());
        assert_eq!(
            &a.message[MIC_AT..MIC_AT + 16],
            &[0; 16],
            "no MIC without a timestamp"
        );
        assert_eq!(
            a.session_key.to_vec(),
            unhex("8de40ccadbc14a82f15cb0ad0de95ca3")
        );
        assert_eq!(r.u32(60).unwrap() & flag::KEY_EXCH, 0);
    }

    #[test]
    fn authenticate_with_timestamp_sends_z24_flags_and_a_mic() {
        let mut ti = spec_target_info();
        ti.truncate(ti.len() - 4);
        put_u16(&mut ti, av::TIMESTAMP);
        put_u16(&mut ti, 8);
        ti.extend_from_slice(&0x01D0_AECD_6C5C_8D24u64.to_le_bytes());
        put_u32(&mut ti, 0);
        let chal_bytes = challenge_message(&ti);
        let chal = ChallengeMessage::decode(&chal_bytes).unwrap();
        assert_eq!(chal.timestamp(), Some(0x01D0_AECD_6C5C_8D24));
        let creds = Credentials {
            user: "User".into(),
            domain: String::new(),
            password: "Password".into(),
            workstation: "NDKPERF".into(),
        };
        let neg = negotiate_message();
        let a = authenticate(&creds, &neg, &chal_bytes, &chal, [0x42; 8], 7).unwrap();
        let r = Reader::new(&a.message, "test");
        assert_eq!(security_buffer(&r, 12).unwrap(), &[0; 24]);
        let nt = security_buffer(&r, 20).unwrap();
        assert_eq!(
            &nt[24..32],
            &0x01D0_AECD_6C5C_8D24u64.to_le_bytes(),
            "the server's time"
        );
        let pairs = av_pairs(&nt[44..]).unwrap();
        assert!(pairs.contains(&(av::FLAGS, &AV_FLAG_MIC_PRESENT.to_le_bytes()[..])));
        let mut zeroed = a.message.clone();
        zeroed[MIC_AT..MIC_AT + 16].fill(0);
        assert_eq!(
            &a.message[MIC_AT..MIC_AT + 16],
            &hmac_md5(&a.session_key, &[&neg, &chal_bytes, &zeroed])
        );
    }

    #[test]
    fn hostile_challenges_are_errors() {
        assert!(ChallengeMessage::decode(b"NTLMSSP\0").is_err());
        let mut b = challenge_message(&spec_target_info());
        b[44] = 0xFF; // TargetInfo offset far past the end
        assert!(ChallengeMessage::decode(&b).is_err());
        let unterminated = challenge_message(&[2, 0, 12, 0]);
        assert!(ChallengeMessage::decode(&unterminated).is_err());
    }
}

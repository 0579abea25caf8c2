//! SMB 3.x message integrity: the SP800-108 counter-mode KDF with
//! HMAC-SHA256 ([MS-SMB2] 3.1.4.2), the signing key of dialects 3.0.2 and
//! 3.1.1, AES-128-CMAC signatures (3.1.4.1) and the 3.1.1 preauth
//! integrity hash (SHA-512, 3.2.5.2 / 3.2.5.3.1).
//!
//! AES-GMAC signing (3.1.1 SIGNING_CAPABILITIES id 2) is not implemented,
//! so the client never offers it; HMAC-SHA256 belongs to dialects 2.x,
//! which it never offers either.

use aes::Aes128;
use cmac::{Cmac, Mac as _};
use hmac::Hmac;
use sha2::{Digest as _, Sha256, Sha512};

use super::header::{FLAGS_AT, HEADER_LEN, SIGNATURE_AT, flags};
use crate::error::{Error, Result};

/// A 128-bit key (SessionKey, SigningKey).
pub type Key = [u8; 16];

/// KDF(Ki, Label, Context) of SP800-108 in counter mode, PRF HMAC-SHA256,
/// r = 32, L = 128: `HMAC(Ki, [1]_32be || Label || 0x00 || Context ||
/// [128]_32be)`, first 16 bytes ([MS-SMB2] 3.1.4.2). Labels and the 3.0.x
/// contexts include their NUL, as the spec writes them.
pub fn kdf(key: &Key, label: &[u8], context: &[u8]) -> Key {
    let mut mac =
        <Hmac<Sha256> as hmac::Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
    hmac::Mac::update(&mut mac, &1u32.to_be_bytes());
    hmac::Mac::update(&mut mac, label);
    hmac::Mac::update(&mut mac, &[0]);
    hmac::Mac::update(&mut mac, context);
    hmac::Mac::update(&mut mac, &128u32.to_be_bytes());
    let out = hmac::Mac::finalize(mac).into_bytes();
    let mut k = [0u8; 16];
    k.copy_from_slice(&out[..16]);
    k
}

/// Dialect 3.0.2.
pub const DIALECT_302: u16 = 0x0302;
/// Dialect 3.1.1.
pub const DIALECT_311: u16 = 0x0311;

/// Session.SigningKey ([MS-SMB2] 3.3.5.5.3 / 3.2.5.3.1): 3.0.x uses the
/// fixed label "SMB2AESCMAC" and context "SmbSign"; 3.1.1 uses
/// "SMBSigningKey" with the session's preauth integrity hash as context.
pub fn signing_key(dialect: u16, session_key: &Key, preauth: &[u8; 64]) -> Key {
    if dialect == DIALECT_311 {
        kdf(session_key, b"SMBSigningKey\0", preauth)
    } else {
        kdf(session_key, b"SMB2AESCMAC\0", b"SmbSign\0")
    }
}

fn cmac_of(key: &Key, message: &[u8]) -> Key {
    let mut mac = <Cmac<Aes128> as cmac::Mac>::new_from_slice(key).expect("AES-128 key");
    mac.update(&message[..SIGNATURE_AT]);
    mac.update(&[0u8; 16]);
    mac.update(&message[SIGNATURE_AT + 16..]);
    mac.finalize().into_bytes().into()
}

/// AES-128-CMAC of arbitrary bytes (the RFC 4493 primitive under
/// [`sign`]; its RFC 4493 vectors run in the tests).
#[cfg(test)]
pub fn aes_cmac(key: &Key, message: &[u8]) -> Key {
    let mut mac = <Cmac<Aes128> as cmac::Mac>::new_from_slice(key).expect("AES-128 key");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// Signs a whole SMB2 message in place: sets SMB2_FLAGS_SIGNED, then
/// writes AES-128-CMAC(SigningKey, message with a zero signature) into
/// the signature field (3.1.4.1).
pub fn sign(key: &Key, message: &mut [u8]) {
    assert!(message.len() >= HEADER_LEN, "an SMB2 message has a header");
    let f = u32::from_le_bytes(message[FLAGS_AT..FLAGS_AT + 4].try_into().expect("4 bytes"));
    message[FLAGS_AT..FLAGS_AT + 4].copy_from_slice(&(f | flags::SIGNED).to_le_bytes());
    let tag = cmac_of(key, message);
    message[SIGNATURE_AT..SIGNATURE_AT + 16].copy_from_slice(&tag);
}

/// Checks the signature of a received message (3.2.5.1.3), in constant
/// time.
pub fn verify(key: &Key, message: &[u8]) -> Result<()> {
    if message.len() < HEADER_LEN {
        return Err(Error::msg("a signed SMB2 message shorter than its header"));
    }
    let mut mac = <Cmac<Aes128> as cmac::Mac>::new_from_slice(key).expect("AES-128 key");
    mac.update(&message[..SIGNATURE_AT]);
    mac.update(&[0u8; 16]);
    mac.update(&message[SIGNATURE_AT + 16..]);
    mac.verify_slice(&message[SIGNATURE_AT..SIGNATURE_AT + 16])
        .map_err(|_| {
            Error::msg(
                "SMB2 signature check failed: the message was not signed with this session's key",
            )
        })
}

/// Checks a signature computed over the message preceded by its 4-byte
/// big-endian RFC 1002 length, as Linux ksmbd (Debian 12's 6.1.192, after
/// the 6.1.y backport of its response-iov rework) signs an
/// RDMA-channel READ response: it signs the iov before the response
/// header and the header, and without inline data the iov before is the
/// transport's length field. The same session key over a known prefix
/// and every byte of the message: the response's integrity holds.
pub fn verify_length_prefixed(key: &Key, message: &[u8]) -> Result<()> {
    if message.len() < HEADER_LEN {
        return Err(Error::msg("a signed SMB2 message shorter than its header"));
    }
    let len = u32::try_from(message.len())
        .map_err(|_| Error::msg("an SMB2 message longer than 4 GiB"))?;
    let mut mac = <Cmac<Aes128> as cmac::Mac>::new_from_slice(key).expect("AES-128 key");
    mac.update(&len.to_be_bytes());
    mac.update(&message[..SIGNATURE_AT]);
    mac.update(&[0u8; 16]);
    mac.update(&message[SIGNATURE_AT + 16..]);
    mac.verify_slice(&message[SIGNATURE_AT..SIGNATURE_AT + 16])
        .map_err(|_| Error::msg("SMB2 signature check failed (length-prefixed form too)"))
}

/// The 3.1.1 preauth integrity hash: starts at 64 zero bytes, and each
/// hashed message M makes it SHA-512(hash || M).
#[derive(Clone, PartialEq, Eq)]
pub struct PreauthHash(pub [u8; 64]);

impl std::fmt::Debug for PreauthHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PreauthHash({:02x?}..)", &self.0[..8])
    }
}

impl Default for PreauthHash {
    fn default() -> Self {
        Self([0; 64])
    }
}

impl PreauthHash {
    /// Folds one whole SMB2 message (header included) into the hash.
    pub fn update(&mut self, message: &[u8]) {
        let mut h = Sha512::new();
        h.update(self.0);
        h.update(message);
        self.0.copy_from_slice(&h.finalize());
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Hex (spaces and newlines ignored) to bytes.
    pub fn unhex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    fn key(s: &str) -> Key {
        unhex(s).try_into().unwrap()
    }

    /// RFC 4493 section 4, examples 1-4 (AES-128 key 2b7e1516...).
    #[test]
    fn aes_cmac_matches_rfc_4493() {
        let k = key("2b7e1516 28aed2a6 abf71588 09cf4f3c");
        let m = unhex(
            "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51
             30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710",
        );
        for (len, tag) in [
            (0, "bb1d6929 e9593728 7fa37d12 9b756746"),
            (16, "070a16b4 6b4d4144 f79bdd9d d04a287c"),
            (40, "dfa66747 de9ae630 30ca3261 1497c827"),
            (64, "51f0bebf 7e3b9d92 fc497417 79363cfe"),
        ] {
            assert_eq!(aes_cmac(&k, &m[..len]), key(tag), "RFC 4493 Mlen {len}");
        }
    }

    /// Microsoft Open Specifications blog, "SMB 3.1.1 Encryption in
    /// Windows 10" (2015), its pre-authentication and key walk-through:
    /// the hash before the final SESSION_SETUP request, that request, the
    /// hash after it, SessionKey, the derived SigningKey, and the signed
    /// SESSION_SETUP response with its signature.
    pub const BLOG_HASH_BEFORE: &str = "9A095455244172898902B0FBDF5FEFAFD8435BB66A47EB55CB7542732A423F58B12B3ED698BEF3878D8A346FD9F5CC882DA37AAF2A939290E98B935FC72B3944";
    pub const BLOG_SETUP_REQUEST: &str =
        "FE534D4240000100000000000100800000000000000000000200000000000000FFFE000000000000
        2500000000100000000000000000000000000000000000001900000101000000000000005800CF01
        0000000000000000A18201CB308201C7A0030A0101A28201AA048201A64E544C4D53535000030000
        001800180090000000EE00EE00A80000000C000C00580000001A001A0064000000120012007E0000
        001000100096010000158288E2060380250000000FA5E34268EF143BE5816251D02C564E9B530055
        005400330031003100610064006D0069006E006900730074007200610074006F0072004400520049
        005600450052003300310031000000000000000000000000000000000000000000000000002C263D
        A5C2D54785E8EDA0552472D3A30101000000000000248D5C6CCDAED001BEA7A53E2DC098EB000000
        0002000C0053005500540033003100310001000C0053005500540033003100310004000C00530055
        00540033003100310003000C0053005500540033003100310007000800248D5C6CCDAED001060004
        00020000000800300030000000000000000000000000300000B61FEFCAA857EA57BF1EDCEBF8974B
        8E0EBA5A6DFD9D07A31D11B548F8C9D0CC0A00100000000000000000000000000000000000090016
        0063006900660073002F00530055005400330031003100000000000000000000000000133FA6EA15
        4880BB44576C6E2490BDE7A31204100100000067890BD408F5680D00000000";
    pub const BLOG_HASH_AFTER: &str = "B23F3CBFD69487D9832B79B1594A367CDD950909B774C3A4C412B4FCEA9EDDDBA7DB256BA2EA30E977F11F9B113247578E0E915C6D2A513B8F2FCA5707DC8770";
    pub const BLOG_SETUP_RESPONSE: &str =
        "FE534D4240000100000000000100800009000000000000000200000000000000FFFE000000000000
        25000000001000006B85A4519A0F3EEA35BA946DD3AFE6B80900000048001D00A11B3019A0030A01
        00A3120410010000003932A87523AB660100000000";

    #[test]
    fn smb311_preauth_hash_key_and_signature_match_microsofts_walkthrough() {
        let mut h = PreauthHash(unhex(BLOG_HASH_BEFORE).try_into().unwrap());
        h.update(&unhex(BLOG_SETUP_REQUEST));
        assert_eq!(
            h.0.to_vec(),
            unhex(BLOG_HASH_AFTER),
            "PreauthIntegrityHashValue"
        );
        let session_key = key("419FDDF34C1E001909D362AE7FB6AF79");
        let signing = signing_key(DIALECT_311, &session_key, &h.0);
        assert_eq!(
            signing,
            key("8765949DFEAEE105CE9118B45BE988F0"),
            "SigningKey"
        );
        let response = unhex(BLOG_SETUP_RESPONSE);
        assert_eq!(response.len(), 64 + 8 + 29);
        verify(&signing, &response).expect("the blog's response signature");
        let mut resigned = response.clone();
        resigned[SIGNATURE_AT..SIGNATURE_AT + 16].fill(0);
        sign(&signing, &mut resigned);
        assert_eq!(resigned, response, "our signature equals Windows'");
        let mut tampered = response;
        *tampered.last_mut().unwrap() ^= 1;
        assert!(verify(&signing, &tampered).is_err());
    }

    #[test]
    fn smb30x_signing_key_uses_the_fixed_label_and_context() {
        let k = [0x11; 16];
        assert_eq!(
            signing_key(DIALECT_302, &k, &[0xEE; 64]),
            kdf(&k, b"SMB2AESCMAC\0", b"SmbSign\0"),
            "3.0.2 ignores the preauth hash"
        );
        assert_ne!(
            signing_key(DIALECT_302, &k, &[0; 64]),
            signing_key(DIALECT_311, &k, &[0; 64])
        );
    }

    #[test]
    fn length_prefixed_signature_is_the_cmac_of_the_be_length_and_the_message() {
        let key = [0x5A; 16];
        let mut m = vec![0u8; 80];
        m[..4].copy_from_slice(b"\xfeSMB");
        m[4] = 64;
        let mut prefixed = 80u32.to_be_bytes().to_vec();
        prefixed.extend_from_slice(&m);
        let tag = aes_cmac(&key, &prefixed);
        m[SIGNATURE_AT..SIGNATURE_AT + 16].copy_from_slice(&tag);
        assert!(verify_length_prefixed(&key, &m).is_ok());
        assert!(verify(&key, &m).is_err(), "not a standard signature");
        let mut tampered = m.clone();
        tampered[70] ^= 1;
        assert!(verify_length_prefixed(&key, &tampered).is_err());
        let mut standard = m;
        standard[SIGNATURE_AT..SIGNATURE_AT + 16].fill(0);
        sign(&key, &mut standard);
        assert!(verify_length_prefixed(&key, &standard).is_err());
    }
}

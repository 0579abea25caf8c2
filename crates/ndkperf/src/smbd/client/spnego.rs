//! SPNEGO ([RFC 4178], [MS-SPNG]) just wide enough to carry NTLMSSP:
//! DER for the client's NegTokenInit (mechTypes = NTLMSSP, mechToken) and
//! NegTokenResp (responseToken), and a reader for the server's tokens.
//! No mechListMIC is sent: NTLM's MIC in the AUTHENTICATE message already
//! binds the exchange, and ksmbd neither sends nor checks one.

use crate::error::{Error, Result};

/// 1.3.6.1.5.5.2, SPNEGO.
const SPNEGO_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
/// 1.3.6.1.4.1.311.2.2.10, NTLMSSP.
pub const NTLMSSP_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a];

/// One DER TLV with a definite length.
fn tlv(tag: u8, value: &[u8]) -> Vec<u8> {
    let mut b = vec![tag];
    let n = value.len();
    if n < 0x80 {
        b.push(n as u8);
    } else {
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take_while(|&&x| x == 0).count();
        b.push(0x80 | (bytes.len() - skip) as u8);
        b.extend_from_slice(&bytes[skip..]);
    }
    b.extend_from_slice(value);
    b
}

/// The first SESSION_SETUP token: InitialContextToken { SPNEGO,
/// NegTokenInit { mechTypes = (NTLMSSP), mechToken } }.
pub fn neg_token_init(mech_token: &[u8]) -> Vec<u8> {
    let mech_types = tlv(0xa0, &tlv(0x30, &tlv(0x06, NTLMSSP_OID)));
    let token = tlv(0xa2, &tlv(0x04, mech_token));
    let init = tlv(0xa0, &tlv(0x30, &[mech_types, token].concat()));
    tlv(0x60, &[tlv(0x06, SPNEGO_OID), init].concat())
}

/// A later client token: NegTokenResp { responseToken }.
pub fn neg_token_resp(response_token: &[u8]) -> Vec<u8> {
    tlv(0xa1, &tlv(0x30, &tlv(0xa2, &tlv(0x04, response_token))))
}

/// Reads one TLV from the front of `b`: (tag, value, rest).
fn read_tlv(b: &[u8]) -> Result<(u8, &[u8], &[u8])> {
    let bad = || Error::msg(format!("malformed SPNEGO token (DER of {} bytes)", b.len()));
    let (&tag, rest) = b.split_first().ok_or_else(bad)?;
    let (&first, rest) = rest.split_first().ok_or_else(bad)?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return Err(bad());
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &x| (a << 8) | usize::from(x));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return Err(bad());
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

/// The fields of a server's NegTokenResp.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerToken {
    /// negState: 0 accept-completed, 1 accept-incomplete, 2 reject.
    pub neg_state: Option<u8>,
    /// supportedMech, when present.
    pub supported_mech: Option<Vec<u8>>,
    /// responseToken (the NTLMSSP message).
    pub response_token: Option<Vec<u8>>,
}

/// negState reject.
pub const REJECT: u8 = 2;

/// Parses a server's SESSION_SETUP token. A raw NTLMSSP message (servers
/// may answer without SPNEGO) comes back as the response token.
pub fn parse_server_token(b: &[u8]) -> Result<ServerToken> {
    if b.starts_with(b"NTLMSSP\0") {
        return Ok(ServerToken {
            response_token: Some(b.to_vec()),
            ..ServerToken::default()
        });
    }
    let (tag, body, _) = read_tlv(b)?;
    if tag != 0xa1 {
        return Err(Error::msg(format!(
            "SPNEGO: expected a NegTokenResp ([1]), got tag {tag:#04x}"
        )));
    }
    let (tag, mut seq, _) = read_tlv(body)?;
    if tag != 0x30 {
        return Err(Error::msg("SPNEGO: NegTokenResp is not a SEQUENCE"));
    }
    let mut t = ServerToken::default();
    while !seq.is_empty() {
        let (tag, field, rest) = read_tlv(seq)?;
        seq = rest;
        let (inner_tag, value, _) = read_tlv(field)?;
        match (tag, inner_tag) {
            (0xa0, 0x0a) if value.len() == 1 => t.neg_state = Some(value[0]),
            (0xa1, 0x06) => t.supported_mech = Some(value.to_vec()),
            (0xa2, 0x04) => t.response_token = Some(value.to_vec()),
            (0xa3, 0x04) => {} // mechListMIC: not checked (module comment)
            _ => {
                return Err(Error::msg(format!(
                    "SPNEGO: unexpected NegTokenResp field {tag:#04x}/{inner_tag:#04x}"
                )));
            }
        }
    }
    Ok(t)
}

/// The mechanisms a server's NEGOTIATE security buffer (NegTokenInit2)
/// offers; an empty buffer offers nothing in particular.
pub fn offered_mechs(b: &[u8]) -> Result<Vec<Vec<u8>>> {
    if b.is_empty() {
        return Ok(Vec::new());
    }
    let bad = |why: &str| Error::msg(format!("SPNEGO: the server's NegTokenInit {why}"));
    let (tag, body, _) = read_tlv(b)?;
    if tag != 0x60 {
        return Err(bad("is not an InitialContextToken"));
    }
    let (tag, oid, rest) = read_tlv(body)?;
    if tag != 0x06 || oid != SPNEGO_OID {
        return Err(bad("does not name SPNEGO"));
    }
    let (_, init, _) = read_tlv(rest)?;
    let (_, mut seq, _) = read_tlv(init)?;
    while !seq.is_empty() {
        let (tag, field, rest) = read_tlv(seq)?;
        seq = rest;
        if tag == 0xa0 {
            let (_, mut list, _) = read_tlv(field)?;
            let mut mechs = Vec::new();
            while !list.is_empty() {
                let (_, oid, rest) = read_tlv(list)?;
                mechs.push(oid.to_vec());
                list = rest;
            }
            return Ok(mechs);
        }
    }
    Err(bad("has no mechTypes"))
}

#[cfg(test)]
mod tests {
    use super::super::signing::tests::{BLOG_SETUP_REQUEST, BLOG_SETUP_RESPONSE, unhex};
    use super::*;

    #[test]
    fn tokens_have_the_der_shape_windows_sends() {
        let init = neg_token_init(b"NTLMSSP\0abc");
        assert_eq!(&init[..2], &[0x60, (init.len() - 2) as u8]);
        assert_eq!(offered_mechs(&init).unwrap(), vec![NTLMSSP_OID.to_vec()]);
        // A 422-byte token needs the long length form, as in the blog's
        // SESSION_SETUP request (a1 82 01 cb 30 82 01 c7 ...).
        let resp = neg_token_resp(&[0x55; 422]);
        assert_eq!(
            &resp[..4],
            &[0xa1, 0x82, 0x01, 0xb2],
            "422 + 3 nested 4-byte headers"
        );
        let parsed = parse_server_token(&resp).unwrap();
        assert_eq!(parsed.response_token.unwrap(), vec![0x55; 422]);
    }

    #[test]
    fn parses_windows_negtokenresp_from_the_blog_exchange() {
        // The blog's client NegTokenResp (negState, responseToken,
        // mechListMIC) and its server accept-completed answer.
        let req = unhex(BLOG_SETUP_REQUEST);
        let t = parse_server_token(&req[88..]).unwrap();
        assert_eq!(t.neg_state, Some(1));
        assert!(t.response_token.unwrap().starts_with(b"NTLMSSP\0\x03"));
        let resp = unhex(BLOG_SETUP_RESPONSE);
        let t = parse_server_token(&resp[72..]).unwrap();
        assert_eq!(t.neg_state, Some(0), "accept-completed");
        assert_eq!(t.response_token, None);
    }

    #[test]
    fn truncated_der_is_an_error() {
        let resp = neg_token_resp(b"NTLMSSP\0x");
        for cut in 1..resp.len() {
            assert!(parse_server_token(&resp[..cut]).is_err(), "cut at {cut}");
        }
        assert!(offered_mechs(&[0x60, 0x05, 0x06]).is_err());
    }
}

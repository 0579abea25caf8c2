//! UDP (RFC 768; over IPv6 RFC 8200 section 8.1): the header, parsed
//! with its checksum checked, and built.

use super::checksum;

/// Length of the header.
pub const HEADER_LEN: usize = 8;

/// A received datagram's ports and payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// The payload, trimmed to the UDP length.
    pub payload: &'a [u8],
}

/// Parses `b` given the pseudo-header sum `pseudo` (from
/// [`checksum::pseudo_v4`] / [`checksum::pseudo_v6`] with `b.len()`);
/// a zero checksum means "none" only where `zero_allowed` (IPv4).
pub fn parse(b: &[u8], pseudo: u32, zero_allowed: bool) -> Option<Datagram<'_>> {
    let h = b.get(..HEADER_LEN)?;
    let length = usize::from(u16::from_be_bytes([h[4], h[5]]));
    let datagram = b.get(..length)?;
    if length < HEADER_LEN {
        return None;
    }
    let sum = u16::from_be_bytes([h[6], h[7]]);
    if sum == 0 {
        if !zero_allowed {
            return None;
        }
    } else if !checksum::verifies(pseudo, datagram) {
        return None;
    }
    Some(Datagram {
        src_port: u16::from_be_bytes([h[0], h[1]]),
        dst_port: u16::from_be_bytes([h[2], h[3]]),
        payload: datagram.get(HEADER_LEN..)?,
    })
}

/// A datagram with its checksum over `pseudo` (the pseudo-header sum for
/// the datagram's length) filled in (0xffff for a computed zero).
pub fn build(
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
    pseudo: impl FnOnce(usize) -> u32,
) -> Vec<u8> {
    let length = HEADER_LEN + payload.len();
    let mut b = Vec::with_capacity(length);
    b.extend_from_slice(&src_port.to_be_bytes());
    b.extend_from_slice(&dst_port.to_be_bytes());
    b.extend_from_slice(&(length as u16).to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(payload);
    let sum = match checksum::finish(checksum::add(pseudo(length), &b)) {
        0 => 0xffff,
        s => s,
    };
    b[6..8].copy_from_slice(&sum.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;
    use crate::tcpip::ipv4::PROTO_UDP;

    #[test]
    fn datagrams_round_trip_with_their_pseudo_header() {
        let (s, d) = (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2));
        let b = build(1000, 4791, b"bth", |len| {
            checksum::pseudo_v4(s, d, PROTO_UDP, len)
        });
        let p = parse(&b, checksum::pseudo_v4(s, d, PROTO_UDP, b.len()), true).unwrap();
        assert_eq!(
            (p.src_port, p.dst_port, p.payload),
            (1000, 4791, &b"bth"[..])
        );
        // The wrong pseudo-header (another destination) fails the checksum.
        let other = checksum::pseudo_v4(s, Ipv4Addr::new(198, 18, 0, 3), PROTO_UDP, b.len());
        assert_eq!(parse(&b, other, true), None);
    }

    #[test]
    fn a_zero_checksum_is_allowed_over_ipv4_only() {
        let (s, d) = (Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
        let mut b = build(1, 2, b"", |len| checksum::pseudo_v6(s, d, 17, len));
        b[6] = 0;
        b[7] = 0;
        assert!(parse(&b, 0, true).is_some());
        assert!(parse(&b, checksum::pseudo_v6(s, d, 17, b.len()), false).is_none());
        assert!(parse(&b[..7], 0, true).is_none());
    }
}

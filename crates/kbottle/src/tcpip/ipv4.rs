//! IPv4 (RFC 791) headers and the ICMP messages the stack sends and
//! answers (RFC 792: echo, destination unreachable).

use std::net::Ipv4Addr;

use super::checksum;

/// Protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// Protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// The TTL Windows uses by default (`DefaultTTL` 128).
pub const DEFAULT_TTL: u8 = 128;
/// ICMP type: echo reply.
pub const ICMP_ECHO_REPLY: u8 = 0;
/// ICMP type: destination unreachable.
pub const ICMP_UNREACHABLE: u8 = 3;
/// ICMP unreachable code: port unreachable.
pub const ICMP_PORT_UNREACHABLE: u8 = 3;
/// ICMP type: echo request.
pub const ICMP_ECHO_REQUEST: u8 = 8;
/// Length of a header without options.
pub const HEADER_LEN: usize = 20;

/// A received datagram, split. Only unfragmented datagrams are parsed
/// (the stack does not reassemble).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol.
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
    /// The whole header (options included), for ICMP errors to quote.
    pub header: &'a [u8],
    /// The payload, trimmed to the total length.
    pub payload: &'a [u8],
}

/// Why a datagram was not parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a well-formed IPv4 header (version, length, checksum).
    Malformed,
    /// A fragment (more-fragments set or a nonzero offset).
    Fragment,
}

/// Parses an IPv4 datagram (Ethernet padding after the total length is
/// dropped).
pub fn parse(b: &[u8]) -> Result<Datagram<'_>, Refused> {
    let first = *b.first().ok_or(Refused::Malformed)?;
    let ihl = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || ihl < HEADER_LEN {
        return Err(Refused::Malformed);
    }
    let header = b.get(..ihl).ok_or(Refused::Malformed)?;
    let total = usize::from(u16::from_be_bytes([header[2], header[3]]));
    if total < ihl || !checksum::verifies(0, header) {
        return Err(Refused::Malformed);
    }
    let payload = b.get(ihl..total).ok_or(Refused::Malformed)?;
    let flags_offset = u16::from_be_bytes([header[6], header[7]]);
    if flags_offset & 0x3fff != 0 {
        return Err(Refused::Fragment);
    }
    let addr =
        |at: usize| Ipv4Addr::new(header[at], header[at + 1], header[at + 2], header[at + 3]);
    Ok(Datagram {
        src: addr(12),
        dst: addr(16),
        protocol: header[9],
        ttl: header[8],
        header,
        payload,
    })
}

/// A datagram with a 20-byte header (DF set, as Windows sends), its
/// checksum filled in.
pub fn build(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, id: u16, payload: &[u8]) -> Vec<u8> {
    let total = (HEADER_LEN + payload.len()) as u16;
    let mut b = Vec::with_capacity(usize::from(total));
    b.extend_from_slice(&[0x45, 0]);
    b.extend_from_slice(&total.to_be_bytes());
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(&[0x40, 0, DEFAULT_TTL, protocol, 0, 0]);
    b.extend_from_slice(&src.octets());
    b.extend_from_slice(&dst.octets());
    let sum = checksum::of(&b);
    b[10..12].copy_from_slice(&sum.to_be_bytes());
    b.extend_from_slice(payload);
    b
}

/// An ICMP message: type, code, the 4 bytes after the checksum, and the
/// body; its checksum filled in.
pub fn icmp(kind: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + body.len());
    m.extend_from_slice(&[kind, code, 0, 0]);
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    let sum = checksum::of(&m);
    m[2..4].copy_from_slice(&sum.to_be_bytes());
    m
}

/// A received ICMP message, split; `None` when short or its checksum is
/// wrong.
pub fn parse_icmp(m: &[u8]) -> Option<(u8, u8, [u8; 4], &[u8])> {
    checksum::icmp_message(0, m)
}

/// Whether `a` can be the source of a datagram that an ICMP error may
/// answer (RFC 1122 3.2.2: never to broadcast, multicast, the
/// unspecified or a loopback source).
pub fn is_unicast_source(a: Ipv4Addr) -> bool {
    !(a.is_broadcast() || a.is_multicast() || a.is_unspecified() || a.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_round_trip_with_a_valid_checksum_and_padding_dropped() {
        let src = Ipv4Addr::new(198, 18, 0, 1);
        let dst = Ipv4Addr::new(198, 18, 0, 2);
        let mut d = build(src, dst, PROTO_UDP, 7, &[1, 2, 3]);
        d.extend_from_slice(&[0; 10]);
        let p = parse(&d).unwrap();
        assert_eq!(
            (p.src, p.dst, p.protocol, p.ttl),
            (src, dst, PROTO_UDP, DEFAULT_TTL)
        );
        assert_eq!(p.payload, &[1, 2, 3]);
        assert_eq!(p.header.len(), HEADER_LEN);
        d[8] = 1; // TTL changed without the checksum
        assert_eq!(parse(&d), Err(Refused::Malformed));
    }

    #[test]
    fn fragments_and_short_headers_are_refused() {
        let mut d = build(
            Ipv4Addr::LOCALHOST,
            Ipv4Addr::LOCALHOST,
            PROTO_UDP,
            1,
            &[0; 8],
        );
        d[6] = 0x20; // more fragments
        d[10] = 0;
        d[11] = 0;
        let sum = checksum::of(&d[..HEADER_LEN]);
        d[10..12].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(parse(&d), Err(Refused::Fragment));
        assert_eq!(parse(&d[..10]), Err(Refused::Malformed));
        assert_eq!(parse(&[]), Err(Refused::Malformed));
    }

    #[test]
    fn icmp_messages_verify() {
        let m = icmp(ICMP_ECHO_REQUEST, 0, [0, 1, 0, 2], b"abc");
        assert_eq!(parse_icmp(&m), Some((8, 0, [0, 1, 0, 2], &b"abc"[..])));
        let mut bad = m.clone();
        bad[9] ^= 0xff;
        assert_eq!(parse_icmp(&bad), None);
    }
}

//! IPv6 (RFC 8200) headers, the ICMPv6 messages the stack sends and
//! answers (RFC 4443: echo, destination unreachable), and Neighbor
//! Discovery's solicitation and advertisement (RFC 4861 sections 4.3,
//! 4.4, 4.6.1 and the validity checks of 7.1).

use std::net::Ipv6Addr;

use super::checksum;

/// Next header of ICMPv6.
pub const NEXT_ICMPV6: u8 = 58;
/// Next header of UDP.
pub const NEXT_UDP: u8 = 17;
/// The hop limit Windows uses by default.
pub const DEFAULT_HOP_LIMIT: u8 = 128;
/// The hop limit of every Neighbor Discovery message.
pub const ND_HOP_LIMIT: u8 = 255;
/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;
/// The minimum link MTU: an ICMPv6 error never exceeds it.
pub const MIN_MTU: usize = 1280;
/// ICMPv6 type: destination unreachable.
pub const ICMP_UNREACHABLE: u8 = 1;
/// ICMPv6 unreachable code: port unreachable.
pub const ICMP_PORT_UNREACHABLE: u8 = 4;
/// ICMPv6 type: echo request.
pub const ICMP_ECHO_REQUEST: u8 = 128;
/// ICMPv6 type: echo reply.
pub const ICMP_ECHO_REPLY: u8 = 129;
/// ICMPv6 type: neighbor solicitation.
pub const ND_NEIGHBOR_SOLICIT: u8 = 135;
/// ICMPv6 type: neighbor advertisement.
pub const ND_NEIGHBOR_ADVERT: u8 = 136;
/// ND option: source link-layer address.
const OPT_SOURCE_LL: u8 = 1;
/// ND option: target link-layer address.
const OPT_TARGET_LL: u8 = 2;
/// NA flag: the answer to a solicitation.
pub const NA_SOLICITED: u8 = 0x40;
/// NA flag: override an existing cache entry.
pub const NA_OVERRIDE: u8 = 0x20;
/// The all-nodes link-local multicast group.
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// A received datagram, split (no extension headers are walked: the
/// stack handles ICMPv6 and UDP right after the fixed header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Next header.
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// The payload, trimmed to the payload length.
    pub payload: &'a [u8],
}

/// Parses an IPv6 datagram (Ethernet padding is dropped); `None` unless
/// well formed.
pub fn parse(b: &[u8]) -> Option<Datagram<'_>> {
    let header = b.get(..HEADER_LEN)?;
    if header[0] >> 4 != 6 {
        return None;
    }
    let length = usize::from(u16::from_be_bytes([header[4], header[5]]));
    let addr = |at: usize| -> Option<Ipv6Addr> {
        let o: [u8; 16] = header.get(at..at + 16)?.try_into().ok()?;
        Some(Ipv6Addr::from(o))
    };
    Some(Datagram {
        src: addr(8)?,
        dst: addr(24)?,
        next_header: header[6],
        hop_limit: header[7],
        payload: b.get(HEADER_LEN..HEADER_LEN + length)?,
    })
}

/// A datagram with the fixed header only.
pub fn build(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next_header: u8,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_LEN + payload.len());
    b.extend_from_slice(&[0x60, 0, 0, 0]);
    b.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    b.extend_from_slice(&[next_header, hop_limit]);
    b.extend_from_slice(&src.octets());
    b.extend_from_slice(&dst.octets());
    b.extend_from_slice(payload);
    b
}

/// An ICMPv6 message from `src` to `dst`: type, code, the 4 bytes after
/// the checksum and the body; its checksum (over the pseudo-header)
/// filled in.
pub fn icmp(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    kind: u8,
    code: u8,
    rest: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + body.len());
    m.extend_from_slice(&[kind, code, 0, 0]);
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    let sum = checksum::finish(checksum::add(
        checksum::pseudo_v6(src, dst, NEXT_ICMPV6, m.len()),
        &m,
    ));
    m[2..4].copy_from_slice(&sum.to_be_bytes());
    m
}

/// A received ICMPv6 message of `d`, split: type, code, the 4 bytes
/// after the checksum, the body; `None` when short or its checksum is
/// wrong.
pub fn parse_icmp<'a>(d: &Datagram<'a>) -> Option<(u8, u8, [u8; 4], &'a [u8])> {
    let m = d.payload;
    checksum::icmp_message(checksum::pseudo_v6(d.src, d.dst, NEXT_ICMPV6, m.len()), m)
}

/// The solicited-node multicast group of `a` (ff02::1:ffXX:XXXX).
pub fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x02;
    g[11] = 1;
    g[12] = 0xff;
    g[13..16].copy_from_slice(&o[13..16]);
    Ipv6Addr::from(g)
}

/// The link-local address with the modified EUI-64 interface identifier
/// of `mac` (RFC 4291 appendix A, RFC 2464 section 4).
pub fn link_local_of(mac: [u8; 6]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a[0] = 0xfe;
    a[1] = 0x80;
    a[8] = mac[0] ^ 0x02;
    a[9] = mac[1];
    a[10] = mac[2];
    a[11] = 0xff;
    a[12] = 0xfe;
    a[13] = mac[3];
    a[14] = mac[4];
    a[15] = mac[5];
    Ipv6Addr::from(a)
}

/// Whether `a` is link-local unicast (fe80::/10).
pub fn is_link_local(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// A link-layer address option (8 bytes).
fn ll_option(kind: u8, mac: [u8; 6]) -> [u8; 8] {
    [kind, 1, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]]
}

/// A neighbor solicitation for `target` (with the source link-layer
/// option unless `src` is unspecified, as in DAD).
pub fn neighbor_solicit(src: Ipv6Addr, dst: Ipv6Addr, target: Ipv6Addr, mac: [u8; 6]) -> Vec<u8> {
    let mut body = target.octets().to_vec();
    if !src.is_unspecified() {
        body.extend_from_slice(&ll_option(OPT_SOURCE_LL, mac));
    }
    icmp(src, dst, ND_NEIGHBOR_SOLICIT, 0, [0; 4], &body)
}

/// A neighbor advertisement for `target` with `flags` (router, solicited,
/// override) and the target link-layer option.
pub fn neighbor_advert(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    target: Ipv6Addr,
    flags: u8,
    mac: [u8; 6],
) -> Vec<u8> {
    let mut body = target.octets().to_vec();
    body.extend_from_slice(&ll_option(OPT_TARGET_LL, mac));
    icmp(src, dst, ND_NEIGHBOR_ADVERT, 0, [flags, 0, 0, 0], &body)
}

/// A validated neighbor solicitation or advertisement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nd {
    /// `ND_NEIGHBOR_SOLICIT` or `ND_NEIGHBOR_ADVERT`.
    pub kind: u8,
    /// The target address.
    pub target: Ipv6Addr,
    /// The NA flags (0 for an NS).
    pub flags: u8,
    /// The source (NS) or target (NA) link-layer address option.
    pub link_layer: Option<[u8; 6]>,
}

/// Parses `kind`'s body `body` of datagram `d` as NS or NA, with the
/// validity checks of RFC 4861 7.1.1 and 7.1.2 (hop limit 255, code 0,
/// target not multicast, options of nonzero length, DAD's rules for an
/// unspecified source, S clear towards multicast); `None` when invalid.
pub fn parse_nd(d: &Datagram<'_>, kind: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Option<Nd> {
    if d.hop_limit != ND_HOP_LIMIT || code != 0 {
        return None;
    }
    let target: [u8; 16] = body.get(..16)?.try_into().ok()?;
    let target = Ipv6Addr::from(target);
    if target.is_multicast() {
        return None;
    }
    let wanted = if kind == ND_NEIGHBOR_SOLICIT {
        OPT_SOURCE_LL
    } else {
        OPT_TARGET_LL
    };
    let mut link_layer = None;
    let mut options = body.get(16..)?;
    while !options.is_empty() {
        let len = usize::from(*options.get(1)?) * 8;
        if len == 0 {
            return None;
        }
        let option = options.get(..len)?;
        if option[0] == wanted && len == 8 {
            link_layer = option.get(2..8).and_then(|m| m.try_into().ok());
        }
        options = &options[len..];
    }
    let flags = if kind == ND_NEIGHBOR_ADVERT {
        rest[0]
    } else {
        0
    };
    if kind == ND_NEIGHBOR_SOLICIT
        && d.src.is_unspecified()
        && (d.dst != solicited_node(target) || link_layer.is_some())
    {
        return None;
    }
    if kind == ND_NEIGHBOR_ADVERT && d.dst.is_multicast() && flags & NA_SOLICITED != 0 {
        return None;
    }
    Some(Nd {
        kind,
        target,
        flags,
        link_layer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn eui64_link_local_and_solicited_node_groups() {
        let mac = [0x02, 0x52, 0x53, 0x00, 0x00, 0x07];
        assert_eq!(link_local_of(mac), a("fe80::52:53ff:fe00:7"));
        assert!(is_link_local(link_local_of(mac)));
        assert!(!is_link_local(a("fd00:5253::1")));
        assert_eq!(
            solicited_node(a("fd00:5253::12:3456")),
            a("ff02::1:ff12:3456")
        );
    }

    #[test]
    fn an_ns_round_trips_through_the_checks() {
        let mac = [2, 0, 0, 0, 0, 1];
        let src = a("fe80::1");
        let target = a("fd00:5253::2");
        let dst = solicited_node(target);
        let d = build(
            src,
            dst,
            NEXT_ICMPV6,
            ND_HOP_LIMIT,
            &neighbor_solicit(src, dst, target, mac),
        );
        let p = parse(&d).unwrap();
        let (kind, code, rest, body) = parse_icmp(&p).unwrap();
        let nd = parse_nd(&p, kind, code, rest, body).unwrap();
        assert_eq!(
            nd,
            Nd {
                kind: ND_NEIGHBOR_SOLICIT,
                target,
                flags: 0,
                link_layer: Some(mac)
            }
        );
        // A forwarded copy (hop limit 254) is refused.
        let forwarded = Datagram {
            hop_limit: 254,
            ..p
        };
        assert_eq!(parse_nd(&forwarded, kind, code, rest, body), None);
        // DAD: no source option from the unspecified address.
        let dad = neighbor_solicit(Ipv6Addr::UNSPECIFIED, dst, target, mac);
        let d = build(Ipv6Addr::UNSPECIFIED, dst, NEXT_ICMPV6, ND_HOP_LIMIT, &dad);
        let p = parse(&d).unwrap();
        let (kind, code, rest, body) = parse_icmp(&p).unwrap();
        assert_eq!(
            parse_nd(&p, kind, code, rest, body).unwrap().link_layer,
            None
        );
    }

    #[test]
    fn a_bad_checksum_or_short_datagram_is_refused() {
        let src = a("fd00:5253::1");
        let dst = a("fd00:5253::2");
        let m = icmp(src, dst, ICMP_ECHO_REQUEST, 0, [0, 1, 0, 1], b"x");
        let mut d = build(src, dst, NEXT_ICMPV6, 64, &m);
        assert!(parse_icmp(&parse(&d).unwrap()).is_some());
        let last = d.len() - 1;
        d[last] ^= 1;
        assert!(parse_icmp(&parse(&d).unwrap()).is_none());
        assert!(
            parse(&d[..d.len() - 1]).is_none(),
            "payload length beyond the frame"
        );
    }
}

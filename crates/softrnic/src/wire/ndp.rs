//! IPv6 Neighbor Discovery (RFC 4861): the Neighbor Solicitation a port
//! sends to resolve a neighbour, and the parts of Neighbor Solicitations
//! and Advertisements a port learns from (who has which link-layer
//! address).

use core::net::Ipv6Addr;

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::ethernet::MacAddr;
use super::ipv6_udp::{IPV6_HEADER_LEN, Ipv6Header};

/// IPv6 next header of ICMPv6.
pub const IPPROTO_ICMPV6: u8 = 58;
/// ICMPv6 type of a Neighbor Solicitation.
pub const NEIGHBOR_SOLICITATION: u8 = 135;
/// ICMPv6 type of a Neighbor Advertisement.
pub const NEIGHBOR_ADVERTISEMENT: u8 = 136;
/// Option type: source link-layer address.
pub const OPTION_SOURCE_LINK_LAYER: u8 = 1;
/// Option type: target link-layer address.
pub const OPTION_TARGET_LINK_LAYER: u8 = 2;
/// The hop limit every Neighbor Discovery message carries (a receiver
/// drops others: they crossed a router).
pub const NDP_HOP_LIMIT: u8 = 255;
/// Length of a Neighbor Solicitation or Advertisement without options.
pub const NDP_MESSAGE_LEN: usize = 24;
/// Length of a link-layer address option for Ethernet.
pub const LINK_LAYER_OPTION_LEN: usize = 8;
/// Length of the IPv6 datagram of a Neighbor Solicitation with a source
/// link-layer address option.
pub const SOLICITATION_DATAGRAM_LEN: usize =
    IPV6_HEADER_LEN + NDP_MESSAGE_LEN + LINK_LAYER_OPTION_LEN;

/// A Neighbor Solicitation or Advertisement without its options (24
/// bytes, big-endian fields).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct NdpMessage {
    /// ICMPv6 type, 135 or 136.
    pub icmp_type: u8,
    /// ICMPv6 code, 0.
    pub code: u8,
    /// ICMPv6 checksum (over the pseudo-header and the whole message).
    pub checksum: U16,
    /// Reserved (solicitation); R, S, O flags and reserved (advertisement).
    pub flags: U32,
    /// The address being resolved (or advertised).
    pub target: [u8; 16],
}

/// A link-layer address option for Ethernet (8 bytes).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct LinkLayerOption {
    /// 1 (source) or 2 (target).
    pub kind: u8,
    /// Length in units of 8 bytes, 1.
    pub len: u8,
    /// The link-layer address.
    pub mac: MacAddr,
}

const _: () = assert!(size_of::<NdpMessage>() == NDP_MESSAGE_LEN);
const _: () = assert!(size_of::<LinkLayerOption>() == LINK_LAYER_OPTION_LEN);

/// The solicited-node multicast address of `target` (RFC 4291 §2.7.1):
/// ff02::1:ff and its last 24 bits.
pub const fn solicited_node(target: Ipv6Addr) -> Ipv6Addr {
    let o = target.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | o[13] as u16,
        ((o[14] as u16) << 8) | o[15] as u16,
    )
}

/// Adds `bytes` as big-endian 16-bit words (an odd last byte padded with
/// zero) to the running one's-complement sum `sum`, folded.
fn sum_words(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        if let [hi, lo] = *w {
            sum += u32::from(u16::from_be_bytes([hi, lo]));
        }
    }
    if let [last] = *words.remainder() {
        sum += u32::from(u16::from_be_bytes([last, 0]));
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum
}

/// The ICMPv6 checksum of `message` from `src` to `dst` (RFC 4443 §2.3:
/// over the IPv6 pseudo-header and the message). Over a message whose
/// checksum field already holds the right value the result is 0.
pub fn icmpv6_checksum(src: Ipv6Addr, dst: Ipv6Addr, message: &[u8]) -> u16 {
    let len = message.len() as u32;
    let mut sum = sum_words(0, &src.octets());
    sum = sum_words(sum, &dst.octets());
    sum = sum_words(sum, &len.to_be_bytes());
    sum = sum_words(sum, &[0, 0, 0, IPPROTO_ICMPV6]);
    !(sum_words(sum, message) as u16)
}

/// Writes the IPv6 datagram of a Neighbor Solicitation for `target` from
/// `src` (one of the sender's addresses) with the source link-layer
/// address option `mac`, to `target`'s solicited-node multicast address,
/// hop limit 255. Returns its length ([`SOLICITATION_DATAGRAM_LEN`]), or
/// `None` if `out` is too small.
pub fn write_neighbor_solicitation(
    src: Ipv6Addr,
    mac: MacAddr,
    target: Ipv6Addr,
    out: &mut [u8],
) -> Option<usize> {
    let dst = solicited_node(target);
    let ip = Ipv6Header {
        version_class_flow: U32::new(6 << 28),
        payload_len: U16::new((NDP_MESSAGE_LEN + LINK_LAYER_OPTION_LEN) as u16),
        next_header: IPPROTO_ICMPV6,
        hop_limit: NDP_HOP_LIMIT,
        src: src.octets(),
        dst: dst.octets(),
    };
    let out = out.get_mut(..SOLICITATION_DATAGRAM_LEN)?;
    let (head, icmp) = out.split_at_mut_checked(IPV6_HEADER_LEN)?;
    head.copy_from_slice(ip.as_bytes());
    let (msg, opt) = icmp.split_at_mut_checked(NDP_MESSAGE_LEN)?;
    let message = NdpMessage {
        icmp_type: NEIGHBOR_SOLICITATION,
        code: 0,
        checksum: U16::ZERO,
        flags: U32::ZERO,
        target: target.octets(),
    };
    msg.copy_from_slice(message.as_bytes());
    let option = LinkLayerOption {
        kind: OPTION_SOURCE_LINK_LAYER,
        len: 1,
        mac,
    };
    opt.copy_from_slice(option.as_bytes());
    let checksum = icmpv6_checksum(src, dst, icmp);
    icmp.get_mut(2..4)?.copy_from_slice(&checksum.to_be_bytes());
    Some(SOLICITATION_DATAGRAM_LEN)
}

/// Which Neighbor Discovery message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdpKind {
    /// A Neighbor Solicitation.
    Solicitation,
    /// A Neighbor Advertisement.
    Advertisement,
}

/// What a received Neighbor Solicitation or Advertisement tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbor {
    /// Which message.
    pub kind: NdpKind,
    /// The IPv6 source (`::` for a duplicate address detection probe).
    pub src: Ipv6Addr,
    /// The IPv6 destination.
    pub dst: Ipv6Addr,
    /// The target address.
    pub target: Ipv6Addr,
    /// The link-layer address it carries: a solicitation's source option
    /// (the sender's, for `src`), an advertisement's target option (for
    /// `target`).
    pub mac: Option<MacAddr>,
}

/// The Neighbor Solicitation or Advertisement in `datagram` (an IPv6
/// datagram; bytes after its payload length are ignored), validated as
/// RFC 4861 §7.1 asks of a receiver: ICMPv6 directly after the IPv6
/// header, hop limit 255, code 0, a correct checksum, a unicast target,
/// well-formed options (none of length 0). `None` for anything else.
pub fn parse_ndp(datagram: &[u8]) -> Option<Neighbor> {
    let (ip, rest) = Ipv6Header::ref_from_prefix(datagram).ok()?;
    let icmp = rest.get(..usize::from(ip.payload_len.get()))?;
    if ip.version() != 6 || ip.next_header != IPPROTO_ICMPV6 || ip.hop_limit != NDP_HOP_LIMIT {
        return None;
    }
    let (msg, mut options) = NdpMessage::ref_from_prefix(icmp).ok()?;
    let kind = match msg.icmp_type {
        NEIGHBOR_SOLICITATION => NdpKind::Solicitation,
        NEIGHBOR_ADVERTISEMENT => NdpKind::Advertisement,
        _ => return None,
    };
    let (src, dst) = (Ipv6Addr::from(ip.src), Ipv6Addr::from(ip.dst));
    let target = Ipv6Addr::from(msg.target);
    if msg.code != 0 || target.is_multicast() || icmpv6_checksum(src, dst, icmp) != 0 {
        return None;
    }
    let wanted = match kind {
        NdpKind::Solicitation => OPTION_SOURCE_LINK_LAYER,
        NdpKind::Advertisement => OPTION_TARGET_LINK_LAYER,
    };
    let mut mac = None;
    while let [option_type, units, ..] = *options {
        let len = usize::from(units) * 8;
        if len == 0 {
            return None;
        }
        let (option, next) = options.split_at_checked(len)?;
        if option_type == wanted
            && let Ok((lla, _)) = LinkLayerOption::ref_from_prefix(option)
        {
            mac = Some(lla.mac);
        }
        options = next;
    }
    if !options.is_empty() {
        return None;
    }
    // A duplicate address detection probe has no source to learn.
    if kind == NdpKind::Solicitation && src.is_unspecified() {
        mac = None;
    }
    Some(Neighbor {
        kind,
        src,
        dst,
        target,
        mac,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solicited_node_addresses_keep_the_last_24_bits() {
        let t: Ipv6Addr = "fd00:5253::12:3456".parse().unwrap();
        assert_eq!(
            solicited_node(t),
            "ff02::1:ff12:3456".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn a_solicitation_parses_back_and_any_damage_is_refused() {
        let src: Ipv6Addr = "fe80::52ff:fe53:1".parse().unwrap();
        let target: Ipv6Addr = "fd00:5253::2".parse().unwrap();
        let mac = MacAddr([0x02, 0x52, 0x53, 0, 0, 1]);
        let mut d = [0u8; 100];
        let n = write_neighbor_solicitation(src, mac, target, &mut d).unwrap();
        assert_eq!(n, SOLICITATION_DATAGRAM_LEN);
        assert!(write_neighbor_solicitation(src, mac, target, &mut [0; 71]).is_none());
        let parsed = parse_ndp(&d).unwrap();
        assert_eq!(
            parsed,
            Neighbor {
                kind: NdpKind::Solicitation,
                src,
                dst: solicited_node(target),
                target,
                mac: Some(mac),
            }
        );
        // Hop limit, next header, type, code, checksum, option length.
        for (at, value) in [(7, 64), (6, 17), (40, 128), (41, 1), (43, 0), (65, 0)] {
            let mut bad = d;
            bad[at] = value;
            assert!(parse_ndp(&bad[..n]).is_none(), "byte {at} = {value}");
        }
        assert!(parse_ndp(&d[..n - 1]).is_none(), "cut");
    }
}

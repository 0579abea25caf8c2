//! What a received frame is, by its headers alone: a RoCEv2 datagram for
//! one of the port's addresses, an ARP packet, a Neighbor Solicitation or
//! Advertisement, or something else. Never panics, whatever the bytes.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::ops::Range;

use crate::wire::arp::{ArpPacket, parse_arp};
use crate::wire::ethernet::{
    ETHERNET_HEADER_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, MacAddr, parse_ethernet,
};
use crate::wire::ipv4_udp::{IPPROTO_UDP, IPV4_HEADER_LEN, ROCEV2_PORT, UDP_HEADER_LEN};
use crate::wire::ipv6_udp::IPV6_HEADER_LEN;
use crate::wire::ndp::{IPPROTO_ICMPV6, Neighbor, parse_ndp};

/// A classified frame.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame<'a> {
    /// RoCEv2 for one of our addresses.
    Rocev2 {
        /// The IP datagram's bytes in the frame, cut to its IP length.
        ip: Range<usize>,
        /// The frame's source MAC address and the datagram's source.
        mac: MacAddr,
        src: IpAddr,
    },
    /// An Ethernet/IPv4 ARP request or reply.
    Arp(&'a ArpPacket),
    /// A valid Neighbor Solicitation or Advertisement.
    Ndp(Neighbor),
    /// Anything else.
    Other,
}

/// Classifies `frame`; `own` says whether an address is one of the
/// port's.
pub(super) fn classify(frame: &[u8], own: impl Fn(IpAddr) -> bool) -> Frame<'_> {
    let Some((eth, payload)) = parse_ethernet(frame) else {
        return Frame::Other;
    };
    let classified = match eth.ethertype.get() {
        ETHERTYPE_IPV4 => ipv4(payload, &own),
        ETHERTYPE_IPV6 => ipv6(payload, &own),
        ETHERTYPE_ARP => parse_arp(payload).map(Frame::Arp),
        _ => None,
    };
    match classified {
        Some(Frame::Rocev2 { ip, src, .. }) => Frame::Rocev2 {
            ip: ip.start + ETHERNET_HEADER_LEN..ip.end + ETHERNET_HEADER_LEN,
            mac: eth.src,
            src,
        },
        Some(other) => other,
        None => Frame::Other,
    }
}

/// The big-endian 16-bit field at `at`.
fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let b: [u8; 2] = bytes.get(at..at + 2)?.try_into().ok()?;
    Some(u16::from_be_bytes(b))
}

/// Whether a UDP header at the start of `udp` goes to port 4791.
fn to_rocev2_port(udp: &[u8]) -> bool {
    be16(udp, 2) == Some(ROCEV2_PORT)
}

/// An IPv4 datagram (Ethernet payload): RoCEv2 for us if its header is
/// whole (IHL at least 5, within the total length, which the payload
/// holds), it is no fragment, and it carries UDP to port 4791 at one of
/// our addresses.
fn ipv4<'a>(payload: &'a [u8], own: &impl Fn(IpAddr) -> bool) -> Option<Frame<'a>> {
    let first = *payload.first()?;
    let header_len = usize::from(first & 0x0F) * 4;
    let total = usize::from(be16(payload, 2)?);
    let whole = first >> 4 == 4
        && header_len >= IPV4_HEADER_LEN
        && header_len + UDP_HEADER_LEN <= total
        && total <= payload.len();
    let flags_frag = be16(payload, 6)?;
    // More fragments, or a fragment offset.
    let fragment = flags_frag & 0x3FFF != 0;
    if !whole || fragment || *payload.get(9)? != IPPROTO_UDP {
        return None;
    }
    let src: [u8; 4] = payload.get(12..16)?.try_into().ok()?;
    let dst: [u8; 4] = payload.get(16..20)?.try_into().ok()?;
    let rocev2 = to_rocev2_port(payload.get(header_len..)?) && own(Ipv4Addr::from(dst).into());
    rocev2.then(|| Frame::Rocev2 {
        ip: 0..total,
        mac: MacAddr::ZERO,
        src: Ipv4Addr::from(src).into(),
    })
}

/// An IPv6 datagram (Ethernet payload): RoCEv2 for us if it carries UDP
/// (directly after its header) to port 4791 at one of our addresses,
/// within a payload that holds it; Neighbor Discovery if ICMPv6 follows
/// the header and it validates.
fn ipv6<'a>(payload: &'a [u8], own: &impl Fn(IpAddr) -> bool) -> Option<Frame<'a>> {
    if payload.first()? >> 4 != 6 {
        return None;
    }
    let total = IPV6_HEADER_LEN + usize::from(be16(payload, 4)?);
    let datagram = payload.get(..total)?;
    match *datagram.get(6)? {
        IPPROTO_UDP => {
            let dst: [u8; 16] = datagram.get(24..40)?.try_into().ok()?;
            let src: [u8; 16] = datagram.get(8..24)?.try_into().ok()?;
            let udp = datagram.get(IPV6_HEADER_LEN..)?;
            let rocev2 = udp.len() >= UDP_HEADER_LEN
                && to_rocev2_port(udp)
                && own(Ipv6Addr::from(dst).into());
            rocev2.then(|| Frame::Rocev2 {
                ip: 0..total,
                mac: MacAddr::ZERO,
                src: Ipv6Addr::from(src).into(),
            })
        }
        IPPROTO_ICMPV6 => parse_ndp(datagram).map(Frame::Ndp),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ethernet::{ETHERTYPE_VLAN, EthernetHeader, write_frame};
    use crate::wire::{IpUdpFields, ROCEV2_PORT};
    use alloc::vec::Vec;
    use zerocopy::IntoBytes;

    const US: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const PEER: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn own(ip: IpAddr) -> bool {
        ip == IpAddr::from([10, 0, 0, 1]) || ip == "fd00::1".parse::<IpAddr>().unwrap()
    }

    /// A frame of `ethertype` around a UDP datagram from `src` to `dst`
    /// with `payload`, padded.
    fn udp_frame(src: &str, dst: &str, port: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = IpUdpFields::new(src.parse().unwrap(), dst.parse().unwrap(), 1).unwrap();
        match &mut f {
            IpUdpFields::V4(v4) => v4.dst_port = port,
            IpUdpFields::V6(v6) => v6.dst_port = port,
        }
        let (head, n) = f.header_bytes(payload.len()).unwrap();
        let mut datagram = head[..n].to_vec();
        datagram.extend_from_slice(payload);
        let ethertype = if f.as_v4().is_some() {
            ETHERTYPE_IPV4
        } else {
            ETHERTYPE_IPV6
        };
        let mut frame = alloc::vec![0u8; 14 + datagram.len() + 60];
        let n = write_frame(
            &EthernetHeader::new(US, PEER, ethertype),
            &datagram,
            &mut frame,
        )
        .unwrap();
        frame.truncate(n);
        frame
    }

    #[test]
    fn rocev2_to_us_is_cut_to_its_ip_length() {
        // 28 + 4 bytes: padded to a 60-byte frame; the range drops the pad.
        let f = udp_frame("10.0.0.2", "10.0.0.1", ROCEV2_PORT, &[1, 2, 3, 4]);
        assert_eq!(f.len(), 60);
        assert_eq!(
            classify(&f, own),
            Frame::Rocev2 {
                ip: 14..46,
                mac: PEER,
                src: IpAddr::from([10, 0, 0, 2])
            }
        );
        let f6 = udp_frame("fd00::2", "fd00::1", ROCEV2_PORT, &[9; 20]);
        assert_eq!(
            classify(&f6, own),
            Frame::Rocev2 {
                ip: 14..14 + 68,
                mac: PEER,
                src: "fd00::2".parse().unwrap()
            }
        );
    }

    #[test]
    fn anything_else_is_other() {
        let to_us = udp_frame("10.0.0.2", "10.0.0.1", ROCEV2_PORT, &[0; 40]);
        let mut cases: Vec<(&str, Vec<u8>)> = alloc::vec![
            (
                "another port",
                udp_frame("10.0.0.2", "10.0.0.1", 4792, &[0; 8])
            ),
            (
                "another address",
                udp_frame("10.0.0.2", "10.0.0.3", ROCEV2_PORT, &[0; 8])
            ),
            (
                "another IPv6 address",
                udp_frame("fd00::2", "fd00::3", ROCEV2_PORT, &[0; 8])
            ),
            ("empty", Vec::new()),
            ("header only", to_us[..14].to_vec()),
        ];
        let mut edit = |what: &'static str, at: usize, value: u8| {
            let mut f = to_us.clone();
            f[at] = value;
            cases.push((what, f));
        };
        edit("more fragments", 14 + 6, 0x20);
        edit("fragment offset", 14 + 7, 1);
        edit("IHL 4", 14, 0x44);
        edit("version 5", 14, 0x55);
        edit("total length past the frame", 14 + 2, 0xFF);
        edit("total length below the headers", 14 + 3, 20);
        edit("not UDP", 14 + 9, 6);
        edit("a VLAN tag", 12, (ETHERTYPE_VLAN >> 8) as u8);
        let mut v6 = udp_frame("fd00::2", "fd00::1", ROCEV2_PORT, &[0; 8]);
        v6[14 + 6] = 0; // hop-by-hop options first
        cases.push(("an IPv6 extension header", v6));
        let mut v6 = udp_frame("fd00::2", "fd00::1", ROCEV2_PORT, &[0; 8]);
        v6[14 + 5] = 200; // payload length past the frame
        cases.push(("IPv6 payload past the frame", v6));
        for (what, frame) in &cases {
            assert_eq!(classify(frame, own), Frame::Other, "{what}");
        }
        // Every cut of a good frame is Other, never a panic.
        for n in 0..to_us.len() {
            assert_eq!(classify(&to_us[..n], own), Frame::Other, "cut at {n}");
        }
    }

    #[test]
    fn arp_and_neighbor_discovery_are_recognised() {
        let arp = ArpPacket::request(
            PEER,
            core::net::Ipv4Addr::new(10, 0, 0, 2),
            core::net::Ipv4Addr::new(10, 0, 0, 1),
        );
        let mut frame = [0u8; 60];
        write_frame(
            &EthernetHeader::new(MacAddr::BROADCAST, PEER, ETHERTYPE_ARP),
            arp.as_bytes(),
            &mut frame,
        )
        .unwrap();
        assert_eq!(classify(&frame, own), Frame::Arp(&arp));
        let mut ns = [0u8; 72];
        let target: Ipv6Addr = "fd00::1".parse().unwrap();
        crate::wire::ndp::write_neighbor_solicitation(
            "fd00::2".parse().unwrap(),
            PEER,
            target,
            &mut ns,
        )
        .unwrap();
        let mut frame = [0u8; 86];
        write_frame(
            &EthernetHeader::new(US, PEER, ETHERTYPE_IPV6),
            &ns,
            &mut frame,
        )
        .unwrap();
        let Frame::Ndp(n) = classify(&frame, own) else {
            panic!("not NDP")
        };
        assert_eq!((n.target, n.mac), (target, Some(PEER)));
    }
}

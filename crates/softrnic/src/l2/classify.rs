//! What a received frame is, by its headers alone: a RoCEv2 datagram for
//! one of the port's addresses, an ARP packet, a Neighbor Solicitation or
//! Advertisement, or something else. Never panics, whatever the bytes.
//!
//! A frame that carries UDP to port 4791 has its IP and UDP headers
//! checked here, once, by the device's own parser
//! ([`CheckedDatagram::parse`]); the checked datagram is what the port
//! hands on ([`super::Verdict::Rnic`]) and what the device goes on from,
//! so no header is read twice on the way in. One whose headers do not
//! check (IPv4 options, a fragment, a bad header checksum, lengths that
//! disagree) is not the RNIC's: it goes up, where the host's stack drops
//! it.

use core::net::IpAddr;

use crate::wire::CheckedDatagram;
use crate::wire::arp::{ArpPacket, parse_arp};
use crate::wire::ethernet::{
    ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, MacAddr, parse_ethernet,
};
use crate::wire::ipv4_udp::{IPPROTO_UDP, ROCEV2_PORT};
use crate::wire::ipv6_udp::IPV6_HEADER_LEN;
use crate::wire::ndp::{IPPROTO_ICMPV6, Neighbor, parse_ndp};

/// A classified frame.
#[derive(Debug)]
pub(super) enum Frame<'a> {
    /// RoCEv2 for one of our addresses.
    Rocev2 {
        /// The IP datagram, its headers checked, cut to its IP length.
        datagram: CheckedDatagram<'a>,
        /// The frame's source MAC address.
        mac: MacAddr,
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
        ETHERTYPE_IPV4 => ipv4(payload).and_then(|d| rocev2(d, &own)),
        ETHERTYPE_IPV6 => ipv6(payload, &own),
        ETHERTYPE_ARP => parse_arp(payload).map(Frame::Arp),
        _ => None,
    };
    match classified {
        Some(Frame::Rocev2 { datagram, .. }) => Frame::Rocev2 {
            datagram,
            mac: eth.src,
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

/// The checked datagram, if it is one of ours.
fn rocev2<'a>(datagram: CheckedDatagram<'a>, own: &impl Fn(IpAddr) -> bool) -> Option<Frame<'a>> {
    own(datagram.fields().dst()).then_some(Frame::Rocev2 {
        datagram,
        mac: MacAddr::ZERO,
    })
}

/// An IPv4 datagram (Ethernet payload) carrying UDP to port 4791, its
/// headers checked. The protocol and port are looked at first, so the
/// host's other traffic costs two reads, no header checksum.
fn ipv4(payload: &[u8]) -> Option<CheckedDatagram<'_>> {
    let header_len = usize::from(payload.first()? & 0x0F) * 4;
    let udp = *payload.get(9)? == IPPROTO_UDP && to_rocev2_port(payload.get(header_len..)?);
    udp.then(|| CheckedDatagram::parse(payload).ok()).flatten()
}

/// An IPv6 datagram (Ethernet payload): RoCEv2 for us if it carries UDP
/// (directly after its header) to port 4791 at one of our addresses and
/// its headers check; Neighbor Discovery if ICMPv6 follows the header and
/// it validates.
fn ipv6<'a>(payload: &'a [u8], own: &impl Fn(IpAddr) -> bool) -> Option<Frame<'a>> {
    if payload.first()? >> 4 != 6 {
        return None;
    }
    match *payload.get(6)? {
        IPPROTO_UDP => {
            let udp = payload.get(IPV6_HEADER_LEN..)?;
            if !to_rocev2_port(udp) {
                return None;
            }
            rocev2(CheckedDatagram::parse(payload).ok()?, own)
        }
        IPPROTO_ICMPV6 => {
            let total = IPV6_HEADER_LEN + usize::from(be16(payload, 4)?);
            parse_ndp(payload.get(..total)?).map(Frame::Ndp)
        }
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

    /// The datagram and MAC address of a RoCEv2 frame.
    fn rocev2_of(frame: &[u8]) -> (&[u8], MacAddr, IpAddr, usize) {
        let Frame::Rocev2 { datagram, mac } = classify(frame, own) else {
            panic!("not RoCEv2: {:?}", classify(frame, own))
        };
        let src = datagram.fields().src();
        (datagram.bytes(), mac, src, datagram.udp_payload().len())
    }

    #[test]
    fn rocev2_to_us_is_cut_to_its_ip_length() {
        // 28 + 4 bytes: padded to a 60-byte frame; the datagram drops the
        // pad.
        let f = udp_frame("10.0.0.2", "10.0.0.1", ROCEV2_PORT, &[1, 2, 3, 4]);
        assert_eq!(f.len(), 60);
        assert_eq!(
            rocev2_of(&f),
            (&f[14..46], PEER, IpAddr::from([10, 0, 0, 2]), 4)
        );
        let f6 = udp_frame("fd00::2", "fd00::1", ROCEV2_PORT, &[9; 20]);
        assert_eq!(
            rocev2_of(&f6),
            (&f6[14..14 + 68], PEER, "fd00::2".parse().unwrap(), 20)
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
        edit("a bad header checksum", 14 + 10, 0);
        edit("a UDP length that disagrees", 14 + 20 + 5, 9);
        edit("a VLAN tag", 12, (ETHERTYPE_VLAN >> 8) as u8);
        let mut v6 = udp_frame("fd00::2", "fd00::1", ROCEV2_PORT, &[0; 8]);
        v6[14 + 6] = 0; // hop-by-hop options first
        cases.push(("an IPv6 extension header", v6));
        let mut v6 = udp_frame("fd00::2", "fd00::1", ROCEV2_PORT, &[0; 8]);
        v6[14 + 5] = 200; // payload length past the frame
        cases.push(("IPv6 payload past the frame", v6));
        for (what, frame) in &cases {
            assert!(matches!(classify(frame, own), Frame::Other), "{what}");
        }
        // Every cut of a good frame is Other, never a panic.
        for n in 0..to_us.len() {
            assert!(
                matches!(classify(&to_us[..n], own), Frame::Other),
                "cut at {n}"
            );
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
        assert!(matches!(classify(&frame, own), Frame::Arp(a) if *a == arp));
        let mut ns = [0u8; 72];
        let target: core::net::Ipv6Addr = "fd00::1".parse().unwrap();
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

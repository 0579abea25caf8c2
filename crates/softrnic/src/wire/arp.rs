//! ARP for IPv4 over Ethernet (RFC 826): the one packet layout RoCEv2
//! neighbours use (hardware type 1, protocol 0x0800, 6- and 4-byte
//! addresses).

use core::net::Ipv4Addr;

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::ethernet::{ETHERTYPE_IPV4, MacAddr};

/// Length of an Ethernet/IPv4 ARP packet.
pub const ARP_LEN: usize = 28;
/// Hardware type of Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;
/// Operation: request.
pub const ARP_REQUEST: u16 = 1;
/// Operation: reply.
pub const ARP_REPLY: u16 = 2;

/// An Ethernet/IPv4 ARP packet (28 bytes, big-endian fields).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct ArpPacket {
    /// Hardware type, 1 (Ethernet).
    pub htype: U16,
    /// Protocol type, 0x0800 (IPv4).
    pub ptype: U16,
    /// Hardware address length, 6.
    pub hlen: u8,
    /// Protocol address length, 4.
    pub plen: u8,
    /// Operation: 1 request, 2 reply.
    pub oper: U16,
    /// Sender hardware address.
    pub sha: MacAddr,
    /// Sender protocol address.
    pub spa: [u8; 4],
    /// Target hardware address (zero in a request).
    pub tha: MacAddr,
    /// Target protocol address.
    pub tpa: [u8; 4],
}

const _: () = assert!(size_of::<ArpPacket>() == ARP_LEN);

impl ArpPacket {
    /// A request from `sha`/`spa` asking who has `tpa`.
    pub const fn request(sha: MacAddr, spa: Ipv4Addr, tpa: Ipv4Addr) -> Self {
        Self {
            htype: U16::new(HTYPE_ETHERNET),
            ptype: U16::new(ETHERTYPE_IPV4),
            hlen: 6,
            plen: 4,
            oper: U16::new(ARP_REQUEST),
            sha,
            spa: spa.octets(),
            tha: MacAddr::ZERO,
            tpa: tpa.octets(),
        }
    }

    /// The sender's IPv4 address.
    pub fn sender_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.spa)
    }

    /// The target's IPv4 address.
    pub fn target_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.tpa)
    }
}

/// The ARP packet at the start of `payload` (an Ethernet payload of
/// EtherType 0x0806; padding after it is ignored), if it is an
/// Ethernet/IPv4 request or reply.
pub fn parse_arp(payload: &[u8]) -> Option<&ArpPacket> {
    let (arp, _) = ArpPacket::ref_from_prefix(payload).ok()?;
    let well_formed = arp.htype.get() == HTYPE_ETHERNET
        && arp.ptype.get() == ETHERTYPE_IPV4
        && arp.hlen == 6
        && arp.plen == 4
        && matches!(arp.oper.get(), ARP_REQUEST | ARP_REPLY);
    well_formed.then_some(arp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_has_the_rfc_826_layout() {
        let arp = ArpPacket::request(
            MacAddr([0x02, 0x52, 0x53, 0, 0, 1]),
            Ipv4Addr::new(198, 18, 0, 1),
            Ipv4Addr::new(198, 18, 0, 2),
        );
        assert_eq!(
            arp.as_bytes(),
            [
                0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // htype ptype hlen plen oper
                0x02, 0x52, 0x53, 0x00, 0x00, 0x01, 198, 18, 0, 1, // sender
                0, 0, 0, 0, 0, 0, 198, 18, 0, 2, // target
            ]
        );
        let parsed = parse_arp(arp.as_bytes()).unwrap();
        assert_eq!(parsed.sender_ip(), Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(parsed.target_ip(), Ipv4Addr::new(198, 18, 0, 2));
    }

    #[test]
    fn other_layouts_and_operations_are_not_parsed() {
        let good = ArpPacket::request(
            MacAddr([2, 0, 0, 0, 0, 1]),
            Ipv4Addr::LOCALHOST,
            Ipv4Addr::LOCALHOST,
        );
        let mut bytes = [0u8; 40];
        bytes[..ARP_LEN].copy_from_slice(good.as_bytes());
        assert!(parse_arp(&bytes).is_some(), "padding is ignored");
        assert!(parse_arp(&bytes[..ARP_LEN - 1]).is_none());
        for (at, value) in [(1, 6), (3, 0xDD), (4, 8), (5, 16), (7, 3)] {
            let mut bad = bytes;
            bad[at] = value;
            assert!(parse_arp(&bad).is_none(), "byte {at} = {value}");
        }
    }
}

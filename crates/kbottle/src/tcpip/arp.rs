//! ARP for IPv4 over Ethernet (RFC 826): the packet, parsed and built.

use std::net::Ipv4Addr;

/// `ar$op` of a request.
pub const REQUEST: u16 = 1;
/// `ar$op` of a reply.
pub const REPLY: u16 = 2;
/// Length of an Ethernet/IPv4 ARP packet.
pub const LEN: usize = 28;

/// An Ethernet/IPv4 ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// `ar$op`.
    pub op: u16,
    /// Sender hardware address.
    pub sha: [u8; 6],
    /// Sender protocol address.
    pub spa: Ipv4Addr,
    /// Target hardware address.
    pub tha: [u8; 6],
    /// Target protocol address.
    pub tpa: Ipv4Addr,
}

fn ip(b: &[u8]) -> Option<Ipv4Addr> {
    let o: [u8; 4] = b.try_into().ok()?;
    Some(Ipv4Addr::from(o))
}

fn mac(b: &[u8]) -> Option<[u8; 6]> {
    b.try_into().ok()
}

/// Parses an ARP payload; `None` unless it is Ethernet (1) / IPv4 with
/// 6- and 4-byte addresses (trailing padding is ignored).
pub fn parse(b: &[u8]) -> Option<Packet> {
    let fixed = b.get(0..8)?;
    if fixed[0..6] != [0, 1, 0x08, 0x00, 6, 4] {
        return None;
    }
    Some(Packet {
        op: u16::from_be_bytes([fixed[6], fixed[7]]),
        sha: mac(b.get(8..14)?)?,
        spa: ip(b.get(14..18)?)?,
        tha: mac(b.get(18..24)?)?,
        tpa: ip(b.get(24..28)?)?,
    })
}

impl Packet {
    /// The 28 bytes on the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(LEN);
        b.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4]);
        b.extend_from_slice(&self.op.to_be_bytes());
        b.extend_from_slice(&self.sha);
        b.extend_from_slice(&self.spa.octets());
        b.extend_from_slice(&self.tha);
        b.extend_from_slice(&self.tpa.octets());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_and_other_hardware_is_refused() {
        let p = Packet {
            op: REQUEST,
            sha: [2, 0, 0, 0, 0, 1],
            spa: Ipv4Addr::new(198, 18, 0, 1),
            tha: [0; 6],
            tpa: Ipv4Addr::new(198, 18, 0, 2),
        };
        let mut b = p.to_bytes();
        assert_eq!(b.len(), LEN);
        assert_eq!(parse(&b), Some(p));
        b.extend_from_slice(&[0; 18]);
        assert_eq!(parse(&b), Some(p), "padding is ignored");
        b[1] = 6; // IEEE 802 hardware
        assert_eq!(parse(&b), None);
        assert_eq!(parse(&p.to_bytes()[..27]), None);
    }
}

//! Ethernet II framing (IEEE 802.3 with an EtherType) and the multicast
//! MAC addresses IPv6 maps its groups to (RFC 2464 section 7).

use std::net::Ipv6Addr;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// The broadcast MAC address.
pub const BROADCAST: [u8; 6] = [0xff; 6];
/// Length of the header (destination, source, EtherType).
pub const HEADER_LEN: usize = 14;

/// A received frame, split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// EtherType.
    pub ethertype: u16,
    /// Everything after the header (padding included).
    pub payload: &'a [u8],
}

/// Splits `frame`; `None` when it is shorter than a header or carries an
/// 802.3 length instead of an EtherType.
pub fn parse(frame: &[u8]) -> Option<Frame<'_>> {
    let (header, payload) = frame.split_at_checked(HEADER_LEN)?;
    let mut dst = [0; 6];
    let mut src = [0; 6];
    dst.copy_from_slice(header.get(0..6)?);
    src.copy_from_slice(header.get(6..12)?);
    let ethertype = u16::from_be_bytes([*header.get(12)?, *header.get(13)?]);
    (ethertype >= 0x0600).then_some(Frame {
        dst,
        src,
        ethertype,
        payload,
    })
}

/// A frame from its parts (no padding: the NIC pads short frames).
pub fn build(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(HEADER_LEN + payload.len());
    frame.extend_from_slice(&dst);
    frame.extend_from_slice(&src);
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// The MAC address an IPv6 multicast group maps to: 33:33 and the
/// group's last 32 bits.
pub fn ipv6_multicast_mac(group: Ipv6Addr) -> [u8; 6] {
    let o = group.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// Whether `mac` is a group (multicast or broadcast) address.
pub fn is_group(mac: [u8; 6]) -> bool {
    mac[0] & 1 != 0
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_short_or_802_3_ones_are_refused() {
        let f = build([1; 6], [2; 6], ETHERTYPE_ARP, &[9, 8, 7]);
        let p = parse(&f).unwrap();
        assert_eq!(
            (p.dst, p.src, p.ethertype, p.payload),
            ([1; 6], [2; 6], 0x0806, &[9, 8, 7][..])
        );
        assert_eq!(parse(&f[..13]), None);
        let mut llc = f.clone();
        llc[12..14].copy_from_slice(&46u16.to_be_bytes());
        assert_eq!(parse(&llc), None);
    }

    #[test]
    fn ipv6_groups_map_to_33_33() {
        let g: Ipv6Addr = "ff02::1:ff00:1234".parse().unwrap();
        assert_eq!(ipv6_multicast_mac(g), [0x33, 0x33, 0xff, 0x00, 0x12, 0x34]);
        assert!(is_group(BROADCAST) && !is_group([2, 0, 0, 0, 0, 1]));
        assert_eq!(
            format_mac([0x02, 0, 0x5e, 0x10, 0xab, 0xff]),
            "02:00:5e:10:ab:ff"
        );
    }
}

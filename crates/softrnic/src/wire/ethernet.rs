//! The Ethernet II header (no 802.1Q tag, no FCS: the NIC adds and checks
//! the FCS) and MAC addresses.

use core::net::Ipv6Addr;

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Length of an Ethernet II header.
pub const ETHERNET_HEADER_LEN: usize = 14;
/// The shortest frame a sender may put on the wire, FCS excluded: shorter
/// frames are padded with zeros to this length.
pub const MIN_FRAME_LEN: usize = 60;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// EtherType (TPID) of an 802.1Q VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;

/// A 48-bit MAC address.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(transparent)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: Self = Self([0xFF; 6]);
    /// 00:00:00:00:00:00.
    pub const ZERO: Self = Self([0; 6]);

    /// Whether it is a group (multicast or broadcast) address: the I/G
    /// bit, the low bit of the first octet.
    pub const fn is_group(&self) -> bool {
        self.0[0] & 1 != 0
    }

    /// Whether it names one station: not a group address and not zero.
    pub fn is_unicast(&self) -> bool {
        !self.is_group() && *self != Self::ZERO
    }

    /// The MAC address IPv6 multicast `group` maps to (RFC 2464 §7):
    /// 33:33 and the group's last four octets.
    pub const fn ipv6_multicast(group: Ipv6Addr) -> Self {
        let o = group.octets();
        Self([0x33, 0x33, o[12], o[13], o[14], o[15]])
    }
}

impl From<[u8; 6]> for MacAddr {
    fn from(octets: [u8; 6]) -> Self {
        Self(octets)
    }
}

impl core::fmt::Display for MacAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, octet) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { ":" };
            write!(f, "{sep}{octet:02x}")?;
        }
        Ok(())
    }
}

/// An Ethernet II header (14 bytes, big-endian EtherType).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct EthernetHeader {
    /// Destination MAC address.
    pub dst: MacAddr,
    /// Source MAC address.
    pub src: MacAddr,
    /// EtherType of the payload.
    pub ethertype: U16,
}

const _: () = assert!(size_of::<EthernetHeader>() == ETHERNET_HEADER_LEN);

impl EthernetHeader {
    /// A header from `src` to `dst` for a payload of `ethertype`.
    pub const fn new(dst: MacAddr, src: MacAddr, ethertype: u16) -> Self {
        Self {
            dst,
            src,
            ethertype: U16::new(ethertype),
        }
    }
}

/// The Ethernet header of `frame` and its payload (everything after the
/// header, link padding included); `None` if the frame is shorter than a
/// header.
pub fn parse_ethernet(frame: &[u8]) -> Option<(&EthernetHeader, &[u8])> {
    EthernetHeader::ref_from_prefix(frame).ok()
}

/// Writes `header` and then `payload` into `out`, zero-padded to
/// [`MIN_FRAME_LEN`]; returns the frame's length, or `None` if `out` is
/// too small.
pub fn write_frame(header: &EthernetHeader, payload: &[u8], out: &mut [u8]) -> Option<usize> {
    let end = ETHERNET_HEADER_LEN + payload.len();
    out.get_mut(ETHERNET_HEADER_LEN..end)?
        .copy_from_slice(payload);
    frame_in_place(header, out, payload.len())
}

/// Frames the payload already in `out` after the header's room
/// (`out[ETHERNET_HEADER_LEN..][..payload_len]`) in place: writes `header`
/// in front and pads to the minimum frame length as [`write_frame`] does;
/// the frame's length, or `None` if `out` is too short.
pub fn frame_in_place(
    header: &EthernetHeader,
    out: &mut [u8],
    payload_len: usize,
) -> Option<usize> {
    let len = ETHERNET_HEADER_LEN + payload_len;
    let padded = len.max(MIN_FRAME_LEN);
    let frame = out.get_mut(..padded)?;
    frame
        .get_mut(..ETHERNET_HEADER_LEN)?
        .copy_from_slice(header.as_bytes());
    frame.get_mut(len..)?.fill(0);
    Some(padded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_short_frames_are_padded() {
        let h = EthernetHeader::new(
            MacAddr::BROADCAST,
            MacAddr([2, 0, 0, 0, 0, 1]),
            ETHERTYPE_ARP,
        );
        let mut out = [0xAAu8; 80];
        assert_eq!(write_frame(&h, &[1, 2, 3], &mut out), Some(MIN_FRAME_LEN));
        assert_eq!(
            out[..17],
            [
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06, 1, 2, 3
            ]
        );
        assert!(out[17..60].iter().all(|&b| b == 0), "zero padding");
        assert_eq!(out[60], 0xAA, "nothing past the frame");
        let (parsed, payload) = parse_ethernet(&out[..60]).unwrap();
        assert_eq!((*parsed, payload.len()), (h, 46));
        assert!(parse_ethernet(&out[..13]).is_none());
        assert!(write_frame(&h, &[0; 67], &mut out).is_none(), "too small");
        let long = [7u8; 50];
        assert_eq!(write_frame(&h, &long, &mut out), Some(64));
        // In place: the same frame from a payload already behind the
        // header's room, padding included.
        for payload in [&[1u8, 2, 3][..], &long] {
            let mut copied = [0xAAu8; 80];
            let n = write_frame(&h, payload, &mut copied).unwrap();
            let mut in_place = [0xAAu8; 80];
            in_place[14..14 + payload.len()].copy_from_slice(payload);
            assert_eq!(frame_in_place(&h, &mut in_place, payload.len()), Some(n));
            assert_eq!(in_place[..n], copied[..n]);
        }
        assert!(frame_in_place(&h, &mut [0; 59], 3).is_none(), "too small");
    }

    #[test]
    fn mac_kinds_and_the_ipv6_multicast_mapping() {
        assert!(MacAddr::BROADCAST.is_group() && !MacAddr::BROADCAST.is_unicast());
        assert!(!MacAddr::ZERO.is_unicast());
        assert!(MacAddr([0x02, 0, 0, 0, 0, 1]).is_unicast());
        let group: Ipv6Addr = "ff02::1:ff12:3456".parse().unwrap();
        let mac = MacAddr::ipv6_multicast(group);
        assert_eq!(mac.0, [0x33, 0x33, 0xff, 0x12, 0x34, 0x56]);
        assert!(mac.is_group());
        assert_eq!(alloc::format!("{mac}"), "33:33:ff:12:34:56");
    }
}

//! The driver shell's pure helpers: no kernel, no NDIS. Compiled for
//! Windows targets (the shell in `src/driver/` uses them) and for this
//! crate's unit tests on every host, so Linux CI runs their tests.

use core::net::{Ipv4Addr, SocketAddrV4};

/// Parses a dotted-decimal IPv4 address from UTF-16 (a registry string
/// keyword such as `RsNdkIPv4Address`); `None` for anything else (empty
/// parts, more than 3 digits or a value above 255 in a part, other than
/// four parts, any non-digit).
pub fn parse_ipv4_utf16(text: &[u16]) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = text.split(|&c| c == u16::from(b'.'));
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 {
            return None;
        }
        let mut value: u16 = 0;
        for &c in part {
            let digit = c.checked_sub(u16::from(b'0')).filter(|d| *d <= 9)?;
            value = value * 10 + digit;
        }
        *octet = u8::try_from(value).ok()?;
    }
    parts.next().is_none().then(|| Ipv4Addr::from(octets))
}

/// The RoCEv2 UDP port (IANA).
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// The UDP payload length (BTH through ICRC) of an IPv4 or IPv6 datagram
/// carrying UDP to port [`ROCEV2_UDP_PORT`] (for IPv6, UDP as the first
/// next header), from its UDP header's length field; `None` for any other
/// datagram or one too short for its headers.
pub fn rocev2_payload_len(datagram: &[u8]) -> Option<usize> {
    let first = *datagram.first()?;
    let (protocol, udp_at) = match first >> 4 {
        4 => {
            let ihl = usize::from(first & 0x0f) * 4;
            if ihl < 20 {
                return None;
            }
            (*datagram.get(9)?, ihl)
        }
        6 => (*datagram.get(6)?, 40),
        _ => return None,
    };
    if protocol != 17 {
        return None;
    }
    let udp: [u8; 8] = datagram.get(udp_at..udp_at + 8)?.try_into().ok()?;
    let [_, _, dst_hi, dst_lo, len_hi, len_lo, _, _] = udp;
    if u16::from_be_bytes([dst_hi, dst_lo]) != ROCEV2_UDP_PORT {
        return None;
    }
    usize::from(u16::from_be_bytes([len_hi, len_lo])).checked_sub(8)
}

/// [`rocev2_payload_len`] of the datagram in an untagged Ethernet II frame
/// (EtherType IPv4 or IPv6).
pub fn rocev2_frame_payload_len(frame: &[u8]) -> Option<usize> {
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    if ethertype != 0x0800 && ethertype != 0x86DD {
        return None;
    }
    rocev2_payload_len(frame.get(14..)?)
}

/// Splits a whole IPv4 datagram, as the software RNIC hands it to its link,
/// into (destination address and UDP port, UDP payload). `None` if the
/// datagram is too short for its own IPv4 header length or a UDP header.
pub fn split_ipv4_udp(datagram: &[u8]) -> Option<(SocketAddrV4, &[u8])> {
    let ihl = usize::from(*datagram.first()? & 0x0f) * 4;
    if ihl < 20 {
        return None;
    }
    let dst: [u8; 4] = datagram.get(16..20)?.try_into().ok()?;
    let port: [u8; 2] = datagram.get(ihl + 2..ihl + 4)?.try_into().ok()?;
    let payload = datagram.get(ihl + 8..)?;
    Some((
        SocketAddrV4::new(Ipv4Addr::from(dst), u16::from_be_bytes(port)),
        payload,
    ))
}

/// A locally administered, unicast MAC address for the adapter with
/// interface index `if_index` (02-52-53-xx-xx-xx, "RS", then the low 24
/// bits of the index).
pub fn mac_for_interface(if_index: u32) -> [u8; 6] {
    let i = if_index.to_be_bytes();
    [0x02, 0x52, 0x53, i[1], i[2], i[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn ipv4_keyword_values() {
        assert_eq!(
            parse_ipv4_utf16(&utf16("10.77.0.1")),
            Some(Ipv4Addr::new(10, 77, 0, 1))
        );
        assert_eq!(
            parse_ipv4_utf16(&utf16("255.255.255.255")),
            Some(Ipv4Addr::BROADCAST)
        );
        for bad in [
            "",
            "10.77.0",
            "10.77.0.1.2",
            "10..0.1",
            "256.1.1.1",
            "1.2.3.x",
            " 1.2.3.4",
            "1.2.3.0004",
        ] {
            assert_eq!(parse_ipv4_utf16(&utf16(bad)), None, "{bad:?}");
        }
    }

    /// An IPv4 datagram with `options` bytes of options and a UDP header
    /// to `port` whose length field says `udp_len`.
    fn ipv4_udp(options: usize, port: u16, udp_len: u16) -> Vec<u8> {
        let ihl = 20 + options;
        let mut d = vec![0u8; ihl + usize::from(udp_len).max(8)];
        d[0] = 0x40 | (ihl / 4) as u8;
        d[9] = 17;
        d[ihl + 2..ihl + 4].copy_from_slice(&port.to_be_bytes());
        d[ihl + 4..ihl + 6].copy_from_slice(&udp_len.to_be_bytes());
        d
    }

    #[test]
    fn rocev2_payload_of_ipv4_and_ipv6_datagrams() {
        assert_eq!(rocev2_payload_len(&ipv4_udp(0, 4791, 8 + 40)), Some(40));
        // IPv4 options move the UDP header.
        assert_eq!(rocev2_payload_len(&ipv4_udp(8, 4791, 8 + 12)), Some(12));
        let mut v6 = vec![0u8; 40 + 8 + 28];
        v6[0] = 0x60;
        v6[6] = 17;
        v6[42..44].copy_from_slice(&4791u16.to_be_bytes());
        v6[44..46].copy_from_slice(&36u16.to_be_bytes());
        assert_eq!(rocev2_payload_len(&v6), Some(28));
        let mut frame = vec![0u8; 14];
        frame[12..14].copy_from_slice(&0x86DDu16.to_be_bytes());
        frame.extend_from_slice(&v6);
        assert_eq!(rocev2_frame_payload_len(&frame), Some(28));
    }

    #[test]
    fn other_datagrams_have_no_rocev2_payload() {
        assert_eq!(rocev2_payload_len(&ipv4_udp(0, 53, 20)), None, "not 4791");
        let mut tcp = ipv4_udp(0, 4791, 20);
        tcp[9] = 6;
        assert_eq!(rocev2_payload_len(&tcp), None, "not UDP");
        let mut short_ihl = ipv4_udp(0, 4791, 20);
        short_ihl[0] = 0x44;
        assert_eq!(rocev2_payload_len(&short_ihl), None, "IHL below 5");
        assert_eq!(
            rocev2_payload_len(&ipv4_udp(0, 4791, 7)),
            None,
            "UDP length below 8"
        );
        assert_eq!(
            rocev2_payload_len(&ipv4_udp(0, 4791, 8)[..27]),
            None,
            "truncated"
        );
        let mut v6_ext = vec![0u8; 40 + 8];
        v6_ext[0] = 0x60;
        v6_ext[6] = 44; // a fragment header first
        assert_eq!(rocev2_payload_len(&v6_ext), None, "IPv6 extension header");
        assert_eq!(rocev2_payload_len(&[]), None);
        let mut arp = vec![0u8; 14];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        arp.extend_from_slice(&ipv4_udp(0, 4791, 20));
        assert_eq!(rocev2_frame_payload_len(&arp), None, "not IP");
        assert_eq!(rocev2_frame_payload_len(&[0; 13]), None);
    }

    #[test]
    fn mac_is_locally_administered_unicast() {
        let mac = mac_for_interface(0x0012_3456);
        assert_eq!(mac, [0x02, 0x52, 0x53, 0x12, 0x34, 0x56]);
        assert_eq!(mac[0] & 0x03, 0x02, "locally administered, not multicast");
    }
}

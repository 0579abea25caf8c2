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

    #[test]
    fn datagram_split_finds_destination_and_payload() {
        let mut d = vec![0u8; 28 + 5];
        d[0] = 0x45;
        d[16..20].copy_from_slice(&[192, 0, 2, 9]);
        d[22..24].copy_from_slice(&4791u16.to_be_bytes());
        d[28..].copy_from_slice(b"hello");
        let (dst, payload) = split_ipv4_udp(&d).unwrap();
        assert_eq!(dst, SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 9), 4791));
        assert_eq!(payload, b"hello");
        // IPv4 options move the UDP header.
        let mut o = vec![0u8; 24 + 8 + 1];
        o[0] = 0x46;
        o[16..20].copy_from_slice(&[192, 0, 2, 10]);
        o[26..28].copy_from_slice(&7u16.to_be_bytes());
        let (dst, payload) = split_ipv4_udp(&o).unwrap();
        assert_eq!(dst.port(), 7);
        assert_eq!(payload.len(), 1);
        assert_eq!(
            split_ipv4_udp(&d[..27]),
            None,
            "shorter than the UDP header"
        );
        assert_eq!(split_ipv4_udp(&[0x44; 40]), None, "header length below 20");
        assert_eq!(split_ipv4_udp(&[]), None);
    }

    #[test]
    fn mac_is_locally_administered_unicast() {
        let mac = mac_for_interface(0x0012_3456);
        assert_eq!(mac, [0x02, 0x52, 0x53, 0x12, 0x34, 0x56]);
        assert_eq!(mac[0] & 0x03, 0x02, "locally administered, not multicast");
    }
}

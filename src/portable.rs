//! The driver shell's pure helpers: no kernel, no NDIS. Compiled for
//! Windows targets (the shell in `src/driver/` uses them) and for this
//! crate's unit tests on every host, so Linux CI runs their tests.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

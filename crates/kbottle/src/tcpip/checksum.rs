//! The Internet checksum (RFC 1071) and the pseudo-header sums of UDP,
//! ICMPv6 (IPv4: RFC 768; IPv6: RFC 8200 section 8.1).

use std::net::{Ipv4Addr, Ipv6Addr};

/// Adds `data` as big-endian 16-bit words (an odd last byte padded with
/// zero) to the running sum `sum`.
pub fn add(mut sum: u32, data: &[u8]) -> u32 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([w[0], w[1]])));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if let [last] = words.remainder() {
        sum = sum.wrapping_add(u32::from(*last) << 8);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

/// The one's complement of the folded sum: the checksum field's value.
pub fn finish(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The checksum of `data` alone (IPv4 header, ICMPv4).
pub fn of(data: &[u8]) -> u16 {
    finish(add(0, data))
}

/// The IPv4 pseudo-header sum (source, destination, protocol, length).
pub fn pseudo_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: usize) -> u32 {
    let sum = add(add(0, &src.octets()), &dst.octets());
    add(sum, &[0, protocol]) + (length as u32 & 0xffff)
}

/// The IPv6 pseudo-header sum (source, destination, upper-layer length,
/// next header).
pub fn pseudo_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: usize) -> u32 {
    let sum = add(add(0, &src.octets()), &dst.octets());
    let len = length as u32;
    add(sum, &[0, next_header]) + (len >> 16) + (len & 0xffff)
}

/// Whether `data` (checksum field included) sums to the all-ones value,
/// starting from the pseudo-header sum `initial`.
pub fn verifies(initial: u32, data: &[u8]) -> bool {
    finish(add(initial, data)) == 0
}

/// An ICMP or ICMPv6 message `m` whose checksum verifies from the
/// pseudo-header sum `initial` (0 for ICMP over IPv4), split into its
/// type, code, the four bytes after the checksum and the body; `None`
/// when it is short or its checksum is wrong.
pub fn icmp_message(initial: u32, m: &[u8]) -> Option<(u8, u8, [u8; 4], &[u8])> {
    let head = m.get(..8)?;
    if !verifies(initial, m) {
        return None;
    }
    Some((
        head[0],
        head[1],
        [head[4], head[5], head[6], head[7]],
        m.get(8..)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example_sums_as_documented() {
        // RFC 1071 section 3's example bytes: sum 0xddf2, checksum !0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(of(&data), !0xddf2);
        // An odd length pads the last byte on the right.
        assert_eq!(of(&[0x12]), !0x1200);
    }

    #[test]
    fn a_filled_in_checksum_verifies() {
        let mut data = vec![
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 1, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
        ];
        let c = of(&data);
        data[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(verifies(0, &data));
        data[3] ^= 1;
        assert!(!verifies(0, &data));
    }
}

//! The RoCEv2 invariant CRC (ICRC).
//!
//! The ICRC is the Ethernet/zlib CRC-32 (reflected polynomial 0xEDB88320,
//! initial value and final XOR all-ones) of:
//!
//! 1. eight 0xFF bytes, standing in for the InfiniBand LRH that RoCEv2 lacks;
//! 2. the IPv4 header with TOS, TTL and header checksum replaced by all-ones,
//!    or the IPv6 header with traffic class, flow label and hop limit
//!    replaced by all-ones (version, payload length, next header and the
//!    addresses count);
//! 3. the UDP header with its checksum replaced by all-ones;
//! 4. the BTH with byte 4 (FECN, BECN, Resv6a) replaced by all-ones;
//! 5. the extension headers, payload and pad, unchanged.
//!
//! Everything else counts, including the IPv4 identification and flags and
//! both length fields (which already include the 4 ICRC bytes).
//!
//! **Wire byte order:** the 32-bit result is sent least-significant byte
//! first ([`icrc_to_wire`]). Wireshark and scapy display the four bytes read
//! big-endian, so a packet whose ICRC is `0x144e193f` ends in
//! `3f 19 4e 14` and is shown as `0x3f194e14`.
//!
//! [`IcrcHasher`] is incremental so the engine can hash each payload chunk
//! as it copies it: feed the headers, then the chunks in order, then the pad.

use super::ipv4_udp::{IPV4_HEADER_LEN, Ipv4Header, UDP_HEADER_LEN, UdpHeader};
pub use super::ipv6_udp::IPV6_HEADER_LEN;
use super::ipv6_udp::Ipv6Header;
use zerocopy::IntoBytes;

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// The CRC-32 of eight 0xFF bytes: the running value after the LRH
/// stand-in, so hashing can start there without feeding those bytes.
const AFTER_LRH_STANDIN: u32 = 0x2144_DF1C;

/// Offset of the BTH byte holding FECN, BECN and Resv6a.
const BTH_VARIANT_BYTE: usize = 4;

/// An incremental ICRC computation.
#[derive(Clone)]
pub struct IcrcHasher {
    crc: crc32fast::Hasher,
}

impl core::fmt::Debug for IcrcHasher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IcrcHasher").finish_non_exhaustive()
    }
}

impl Default for IcrcHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl IcrcHasher {
    /// A hasher that has already consumed the eight 0xFF LRH stand-in bytes.
    pub fn new() -> Self {
        Self {
            crc: crc32fast::Hasher::new_with_initial(AFTER_LRH_STANDIN),
        }
    }

    /// A hasher that has consumed the stand-in, `ip` and `udp` (masked).
    pub fn for_ipv4_udp(ip: &Ipv4Header, udp: &UdpHeader) -> Self {
        // One update over both masked headers: the CRC's per-call cost
        // outweighs these few bytes' own.
        let mut masked = [0u8; IPV4_HEADER_LEN + UDP_HEADER_LEN];
        let (ip_part, udp_part) = masked.split_at_mut(IPV4_HEADER_LEN);
        ip_part.copy_from_slice(masked_ipv4(ip).as_bytes());
        udp_part.copy_from_slice(masked_udp(*udp).as_bytes());
        let mut h = Self::new();
        h.crc.update(&masked);
        h
    }

    /// A hasher that has consumed the stand-in, `ip` and `udp` (masked).
    pub fn for_ipv6_udp(ip: &Ipv6Header, udp: &UdpHeader) -> Self {
        let mut masked = [0u8; IPV6_HEADER_LEN + UDP_HEADER_LEN];
        let (ip_part, udp_part) = masked.split_at_mut(IPV6_HEADER_LEN);
        ip_part.copy_from_slice(masked_ipv6(ip).as_bytes());
        udp_part.copy_from_slice(masked_udp(*udp).as_bytes());
        let mut h = Self::new();
        h.crc.update(&masked);
        h
    }

    /// Feeds an IPv6 header with traffic class, flow label and hop limit
    /// masked (rxe's `rxe_icrc_hdr`: the priority nibble, the three flow
    /// label bytes and the hop limit set to all-ones; version, payload
    /// length, next header and both addresses count).
    pub fn update_ipv6_header(&mut self, ip: &Ipv6Header) {
        self.crc.update(masked_ipv6(ip).as_bytes());
    }

    /// Feeds an IPv4 header with its variant fields masked.
    pub fn update_ipv4(&mut self, ip: &Ipv4Header) {
        self.crc.update(masked_ipv4(ip).as_bytes());
    }

    /// Feeds an IPv6 header with traffic class, flow label and hop limit
    /// masked. Only the first 40 bytes are used; a shorter slice is ignored
    /// and the returned flag is false.
    pub fn update_ipv6(&mut self, header: &[u8]) -> bool {
        use zerocopy::FromBytes;
        let Ok((ip, _)) = Ipv6Header::read_from_prefix(header) else {
            return false;
        };
        self.update_ipv6_header(&ip);
        true
    }

    /// Feeds a UDP header with its checksum masked.
    pub fn update_udp(&mut self, udp: &UdpHeader) {
        self.crc.update(masked_udp(*udp).as_bytes());
    }

    /// Feeds a 12-byte BTH with byte 4 (FECN, BECN, Resv6a) masked.
    pub fn update_bth(&mut self, bth: &[u8; 12]) {
        let mut masked = *bth;
        masked[BTH_VARIANT_BYTE] = 0xFF;
        self.crc.update(&masked);
    }

    /// Feeds bytes that are covered unchanged: extension headers, payload,
    /// pad.
    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
    }

    /// Feeds `n` zero bytes (the pad).
    pub fn update_zeros(&mut self, n: usize) {
        let zeros = [0u8; 4];
        let mut left = n;
        while left > 0 {
            let take = left.min(zeros.len());
            self.crc.update(&zeros[..take]);
            left -= take;
        }
    }

    /// The ICRC value. Put it on the wire with [`icrc_to_wire`].
    #[inline]
    pub fn finalize(self) -> u32 {
        self.crc.finalize()
    }
}

/// `ip` with traffic class, flow label and hop limit all-ones.
fn masked_ipv6(ip: &Ipv6Header) -> Ipv6Header {
    let mut masked = *ip;
    masked
        .version_class_flow
        .set(ip.version_class_flow.get() | 0x0FFF_FFFF);
    masked.hop_limit = 0xFF;
    masked
}

/// `ip` with TOS, TTL and header checksum all-ones.
fn masked_ipv4(ip: &Ipv4Header) -> Ipv4Header {
    let mut masked = *ip;
    masked.tos = 0xFF;
    masked.ttl = 0xFF;
    masked.checksum.set(0xFFFF);
    masked
}

/// `udp` with its checksum all-ones.
fn masked_udp(mut udp: UdpHeader) -> UdpHeader {
    udp.checksum.set(0xFFFF);
    udp
}

/// The four trailer bytes for an ICRC value (least-significant byte first).
#[inline]
pub const fn icrc_to_wire(icrc: u32) -> [u8; ICRC_LEN] {
    icrc.to_le_bytes()
}

/// The ICRC value carried by four trailer bytes.
#[inline]
pub const fn icrc_from_wire(bytes: [u8; ICRC_LEN]) -> u32 {
    u32::from_le_bytes(bytes)
}

/// The ICRC of an IPv4 RoCEv2 datagram given as the bytes it covers: from
/// the first byte of a 20-byte IPv4 header through the last pad byte (the
/// ICRC trailer excluded). `None` when shorter than IPv4 + UDP + BTH.
///
/// No field is validated: this is the raw procedure, for checkers and tests.
pub fn ipv4_datagram_icrc(covered: &[u8]) -> Option<u32> {
    use zerocopy::FromBytes;
    let (ip, rest) = Ipv4Header::read_from_prefix(covered).ok()?;
    let (udp, rest) = UdpHeader::read_from_prefix(rest).ok()?;
    let (bth, rest) = rest.split_first_chunk::<12>()?;
    let mut h = IcrcHasher::for_ipv4_udp(&ip, &udp);
    h.update_bth(bth);
    h.update(rest);
    Some(h.finalize())
}

/// The ICRC of an IPv6 RoCEv2 datagram given as the bytes it covers (IPv6
/// header through pad). `None` when shorter than IPv6 + UDP + BTH.
pub fn ipv6_datagram_icrc(covered: &[u8]) -> Option<u32> {
    use zerocopy::FromBytes;
    let (ip6, rest) = Ipv6Header::read_from_prefix(covered).ok()?;
    let (udp, rest) = UdpHeader::read_from_prefix(rest).ok()?;
    let (bth, rest) = rest.split_first_chunk::<12>()?;
    let mut h = IcrcHasher::for_ipv6_udp(&ip6, &udp);
    h.update_bth(bth);
    h.update(rest);
    Some(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standin_constant_matches_feeding_ff() {
        assert_eq!(crc32fast::hash(&[0xFF; 8]), AFTER_LRH_STANDIN);
        let mut a = IcrcHasher::new();
        a.update(b"roce");
        let mut b = crc32fast::Hasher::new();
        b.update(&[0xFF; 8]);
        b.update(b"roce");
        assert_eq!(a.finalize(), b.finalize());
    }

    #[test]
    fn zeros_feed() {
        let mut a = IcrcHasher::new();
        a.update_zeros(11);
        let mut b = IcrcHasher::new();
        b.update(&[0; 11]);
        assert_eq!(a.finalize(), b.finalize());
    }

    #[test]
    fn wire_order_is_little_endian() {
        assert_eq!(icrc_to_wire(0x144e_193f), [0x3f, 0x19, 0x4e, 0x14]);
        assert_eq!(icrc_from_wire([0x3f, 0x19, 0x4e, 0x14]), 0x144e_193f);
    }

    #[test]
    fn ipv6_variant_fields_are_masked_and_nothing_else() {
        use super::super::ipv6_udp::Ipv6UdpFields;
        let base = Ipv6UdpFields::new(
            core::net::Ipv6Addr::LOCALHOST,
            core::net::Ipv6Addr::LOCALHOST,
            7,
        );
        let hash = |ip: &Ipv6Header| {
            let mut h = IcrcHasher::new();
            h.update_ipv6_header(ip);
            h.finalize()
        };
        let ip = base.ipv6_header(100).unwrap();
        let mut routed = Ipv6UdpFields {
            traffic_class: 0xFF,
            flow_label: 0xA_BCDE,
            ..base
        }
        .ipv6_header(100)
        .unwrap();
        routed.hop_limit = 1;
        assert_eq!(hash(&ip), hash(&routed));
        // The byte-slice form agrees.
        let mut bytes = IcrcHasher::new();
        assert!(bytes.update_ipv6(ip.as_bytes()));
        assert_eq!(bytes.finalize(), hash(&ip));
        for covered in [
            base.ipv6_header(101).unwrap(),
            Ipv6UdpFields {
                src: core::net::Ipv6Addr::UNSPECIFIED,
                ..base
            }
            .ipv6_header(100)
            .unwrap(),
        ] {
            assert_ne!(hash(&ip), hash(&covered));
        }
        let mut next = ip;
        next.next_header = 6;
        assert_ne!(hash(&ip), hash(&next));
    }

    #[test]
    fn short_inputs_are_none() {
        assert_eq!(ipv4_datagram_icrc(&[0; 39]), None);
        assert!(ipv4_datagram_icrc(&[0; 40]).is_some());
        assert_eq!(ipv6_datagram_icrc(&[0; 59]), None);
        assert!(!IcrcHasher::new().update_ipv6(&[0; 39]));
    }
}

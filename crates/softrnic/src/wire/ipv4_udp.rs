//! IPv4 and UDP headers as RoCEv2 uses them, and the IPv4 header checksum.

use core::net::Ipv4Addr;

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::error::ParseError;

/// The IANA UDP destination port of RoCEv2.
pub const ROCEV2_PORT: u16 = 4791;
/// IPv4 protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// TTL the builder writes (masked out of the ICRC, so any value verifies).
pub const DEFAULT_TTL: u8 = 64;
/// Length of an IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// Length of a UDP header.
pub const UDP_HEADER_LEN: usize = 8;

const VERSION_IHL_5: u8 = 0x45;
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1FFF;

/// An IPv4 header without options (20 bytes, big-endian fields).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Ipv4Header {
    /// Version (high nibble, 4) and IHL in 32-bit words (low nibble, 5).
    pub version_ihl: u8,
    /// DSCP (6 bits) and ECN (2 bits). Variant: masked in the ICRC.
    pub tos: u8,
    /// Bytes from the start of this header to the end of the ICRC.
    pub total_len: U16,
    /// Identification. Invariant: covered by the ICRC.
    pub ident: U16,
    /// Flags (DF 0x4000, MF 0x2000) and fragment offset.
    pub flags_frag: U16,
    /// Time to live. Variant: masked in the ICRC.
    pub ttl: u8,
    /// Upper protocol, 17 for UDP.
    pub protocol: u8,
    /// Header checksum. Variant: masked in the ICRC.
    pub checksum: U16,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
}

/// A UDP header (8 bytes, big-endian fields).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct UdpHeader {
    /// Source port: RoCEv2 flow entropy, chosen per QP by the sender.
    pub src_port: U16,
    /// Destination port, 4791.
    pub dst_port: U16,
    /// Bytes from the start of this header to the end of the ICRC.
    pub length: U16,
    /// Checksum. RoCEv2 sends 0; variant: masked in the ICRC.
    pub checksum: U16,
}

const _: () = assert!(size_of::<Ipv4Header>() == IPV4_HEADER_LEN);
const _: () = assert!(size_of::<UdpHeader>() == UDP_HEADER_LEN);

/// The IPv4 and UDP facts of one RoCEv2 datagram.
///
/// On build these are what the caller chooses; on parse of a full datagram
/// they are what arrived. The ICRC covers the identification and flags, so
/// an IPv4 packet is checked only against the header it arrived with: no
/// receiver can stand in for a header it did not see (a UDP socket sees no
/// identification). The engine stamps each packet's identification
/// ([`Ipv4UdpFields::for_packet`]) before it builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4UdpFields {
    /// IPv4 source address.
    pub src: Ipv4Addr,
    /// IPv4 destination address.
    pub dst: Ipv4Addr,
    /// UDP source port (flow entropy, e.g. one fixed port per QP).
    pub src_port: u16,
    /// UDP destination port; 4791 for RoCEv2.
    pub dst_port: u16,
    /// IPv4 identification as sent. Covered by the ICRC.
    pub ident: u16,
    /// IPv4 don't-fragment flag as sent. Covered by the ICRC.
    pub dont_fragment: bool,
    /// DSCP/ECN byte. Not covered by the ICRC; the builder writes it.
    pub tos: u8,
}

impl Ipv4UdpFields {
    /// The fields of a RoCEv2 datagram from `src`:`src_port` to
    /// `dst`:4791: DF set (RoCEv2 datagrams are never fragmented), TOS 0,
    /// identification 0 until a packet is stamped with its own
    /// ([`Ipv4UdpFields::for_packet`]).
    pub const fn new(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16) -> Self {
        Self {
            src,
            dst,
            src_port,
            dst_port: ROCEV2_PORT,
            ident: 0,
            dont_fragment: true,
            tos: 0,
        }
    }

    /// These fields with the identification of the packet of PSN `psn`
    /// ([`ipv4_ident`]).
    #[must_use]
    pub const fn for_packet(self, psn: u32) -> Self {
        Self {
            ident: ipv4_ident(psn),
            ..self
        }
    }

    /// The IPv4 header for a UDP payload of `udp_payload_len` bytes
    /// (BTH through ICRC), with TTL 64 and a valid header checksum.
    /// `None` when the datagram would exceed 65535 bytes.
    pub fn ipv4_header(&self, udp_payload_len: usize) -> Option<Ipv4Header> {
        let total = u16::try_from(IPV4_HEADER_LEN + UDP_HEADER_LEN + udp_payload_len).ok()?;
        let mut h = Ipv4Header {
            version_ihl: VERSION_IHL_5,
            tos: self.tos,
            total_len: U16::new(total),
            ident: U16::new(self.ident),
            flags_frag: U16::new(if self.dont_fragment { FLAG_DF } else { 0 }),
            ttl: DEFAULT_TTL,
            protocol: IPPROTO_UDP,
            checksum: U16::ZERO,
            src: self.src.octets(),
            dst: self.dst.octets(),
        };
        h.checksum = U16::new(ipv4_checksum(h.as_bytes()));
        Some(h)
    }

    /// The UDP header for a UDP payload of `udp_payload_len` bytes, with
    /// checksum 0. `None` when the length does not fit 16 bits.
    pub fn udp_header(&self, udp_payload_len: usize) -> Option<UdpHeader> {
        let len = u16::try_from(UDP_HEADER_LEN + udp_payload_len).ok()?;
        Some(UdpHeader {
            src_port: U16::new(self.src_port),
            dst_port: U16::new(self.dst_port),
            length: U16::new(len),
            checksum: U16::ZERO,
        })
    }
}

/// The IPv4 identification of the packet of PSN `psn`: its low 16 bits,
/// 0 replaced by 0xFFFF.
///
/// The engine builds every IPv4 header itself, so it chooses the
/// identification its ICRC covers. RoCEv2 datagrams are atomic (DF set,
/// never fragmented), for which RFC 6864 lets the source pick any value;
/// one taken from the PSN changes packet to packet (up by one along a
/// stream, as a NIC's per-flow counter does), needs no shared counter on
/// the send path, and a retransmission carries the header it carried the
/// first time. Never 0: a Linux raw socket with `IP_HDRINCL` replaces an
/// identification of 0 with one of its own (`raw_send_hdrinc`), which the
/// ICRC would not cover.
pub const fn ipv4_ident(psn: u32) -> u16 {
    match psn as u16 {
        0 => u16::MAX,
        id => id,
    }
}

/// The Internet checksum of an IPv4 header: one's-complement of the
/// one's-complement sum of its 16-bit words. Over a header whose checksum
/// field already holds the right value the result is 0.
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = header.chunks_exact(2);
    for w in &mut words {
        if let [hi, lo] = *w {
            sum += u32::from(u16::from_be_bytes([hi, lo]));
        }
    }
    if let [last] = *words.remainder() {
        sum += u32::from(u16::from_be_bytes([last, 0]));
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// The IPv4 and UDP headers of a datagram, checked, and where the UDP
/// payload lies.
pub(crate) struct Ipv4UdpView<'a> {
    pub fields: Ipv4UdpFields,
    pub ip: &'a Ipv4Header,
    pub udp: &'a UdpHeader,
    /// BTH through ICRC, exactly as long as the length fields say.
    pub udp_payload: &'a [u8],
}

/// Checks the IPv4 and UDP headers at the start of `datagram` and locates
/// the UDP payload. Bytes after the IPv4 total length (link-layer padding)
/// are ignored. The UDP checksum is not verified (RoCEv2 sends 0 and the
/// ICRC protects the packet).
pub(crate) fn parse_ipv4_udp(datagram: &[u8]) -> Result<Ipv4UdpView<'_>, ParseError> {
    let (ip, rest) = Ipv4Header::ref_from_prefix(datagram).map_err(|_| ParseError::Truncated)?;
    if ip.version_ihl >> 4 != 4 {
        return Err(ParseError::BadVersion);
    }
    if ip.version_ihl & 0x0F != 5 {
        return Err(ParseError::BadIhl);
    }
    let total = usize::from(ip.total_len.get());
    if total < IPV4_HEADER_LEN + UDP_HEADER_LEN {
        return Err(ParseError::LengthMismatch);
    }
    if datagram.len() < total {
        return Err(ParseError::Truncated);
    }
    if ipv4_checksum(ip.as_bytes()) != 0 {
        return Err(ParseError::BadIpChecksum);
    }
    let flags = ip.flags_frag.get();
    if flags & (FLAG_MF | FRAG_OFFSET_MASK) != 0 {
        return Err(ParseError::Fragmented);
    }
    if ip.protocol != IPPROTO_UDP {
        return Err(ParseError::NotUdp);
    }
    let (udp, _) = UdpHeader::ref_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
    if udp.dst_port.get() != ROCEV2_PORT {
        return Err(ParseError::NotUdp4791);
    }
    if usize::from(udp.length.get()) != total - IPV4_HEADER_LEN {
        return Err(ParseError::LengthMismatch);
    }
    let udp_payload = datagram
        .get(IPV4_HEADER_LEN + UDP_HEADER_LEN..total)
        .ok_or(ParseError::Truncated)?;
    let fields = Ipv4UdpFields {
        src: Ipv4Addr::from(ip.src),
        dst: Ipv4Addr::from(ip.dst),
        src_port: udp.src_port.get(),
        dst_port: udp.dst_port.get(),
        ident: ip.ident.get(),
        dont_fragment: flags & FLAG_DF != 0,
        tos: ip.tos,
    };
    Ok(Ipv4UdpView {
        fields,
        ip,
        udp,
        udp_payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_known_header() {
        // The header of the digest's SEND Only vector: checksum 0xb961.
        let mut h = [
            0x45, 0x00, 0x00, 0x38, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0x02,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb961);
        h[10] = 0xb9;
        h[11] = 0x61;
        assert_eq!(ipv4_checksum(&h), 0);
    }

    #[test]
    fn header_from_fields() {
        let f = Ipv4UdpFields::new(
            Ipv4Addr::new(192, 168, 0, 1),
            Ipv4Addr::new(192, 168, 0, 2),
            49152,
        );
        let ip = f.ipv4_header(28).unwrap();
        assert_eq!(ip.total_len.get(), 56);
        assert_eq!(ip.checksum.get(), 0xb961);
        assert_eq!(f.udp_header(28).unwrap().length.get(), 36);
        assert!(f.ipv4_header(65535).is_none());
        assert!(f.udp_header(65528).is_none());
    }
}

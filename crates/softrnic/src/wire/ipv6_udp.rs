//! The IPv6 header as RoCEv2 uses it (no extension headers: UDP follows
//! directly), and the IPv6 facts of one datagram.

use core::net::Ipv6Addr;

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::error::ParseError;
use super::ipv4_udp::{IPPROTO_UDP, ROCEV2_PORT, UDP_HEADER_LEN, UdpHeader};

/// Length of an IPv6 header (without extension headers).
pub const IPV6_HEADER_LEN: usize = 40;
/// Hop limit the builder writes (masked out of the ICRC, so any value
/// verifies).
pub const DEFAULT_HOP_LIMIT: u8 = 64;

/// Largest flow label (20 bits).
pub const FLOW_LABEL_MASK: u32 = 0x000F_FFFF;

/// An IPv6 header (40 bytes, big-endian fields).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Ipv6Header {
    /// Version (bits 31..28, 6), traffic class (27..20) and flow label
    /// (19..0). Traffic class and flow label are variant: masked in the
    /// ICRC.
    pub version_class_flow: U32,
    /// Bytes after this header: the UDP header through the ICRC.
    pub payload_len: U16,
    /// The header that follows, 17 for UDP.
    pub next_header: u8,
    /// Hop limit. Variant: masked in the ICRC.
    pub hop_limit: u8,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
}

const _: () = assert!(size_of::<Ipv6Header>() == IPV6_HEADER_LEN);

impl Ipv6Header {
    /// The IP version (6 for a well-formed header).
    pub fn version(&self) -> u8 {
        (self.version_class_flow.get() >> 28) as u8
    }

    /// The traffic class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        (self.version_class_flow.get() >> 20) as u8
    }

    /// The flow label.
    pub fn flow_label(&self) -> u32 {
        self.version_class_flow.get() & FLOW_LABEL_MASK
    }
}

/// The IPv6 and UDP facts of one RoCEv2 datagram: what the builder writes
/// and the ICRC covers. Unlike IPv4 nothing here but the addresses and
/// ports is covered by the ICRC (traffic class, flow label and hop limit
/// are masked), so peers that cannot see each other's real IPv6 headers
/// (UDP sockets) need no further convention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6UdpFields {
    /// IPv6 source address.
    pub src: Ipv6Addr,
    /// IPv6 destination address.
    pub dst: Ipv6Addr,
    /// UDP source port (flow entropy, e.g. one fixed port per QP).
    pub src_port: u16,
    /// UDP destination port; 4791 for RoCEv2.
    pub dst_port: u16,
    /// Traffic class. Not covered by the ICRC; the builder writes it.
    pub traffic_class: u8,
    /// Flow label (20 bits). Not covered by the ICRC; the builder writes
    /// its low 20 bits.
    pub flow_label: u32,
}

impl Ipv6UdpFields {
    /// The facts of a datagram a UDP socket carries from `src`:`src_port`
    /// to `dst`:4791: traffic class and flow label 0.
    pub const fn new(src: Ipv6Addr, dst: Ipv6Addr, src_port: u16) -> Self {
        Self {
            src,
            dst,
            src_port,
            dst_port: ROCEV2_PORT,
            traffic_class: 0,
            flow_label: 0,
        }
    }

    /// The IPv6 header for a UDP payload of `udp_payload_len` bytes (BTH
    /// through ICRC), with hop limit 64. `None` when the UDP datagram would
    /// exceed 65535 bytes (the IPv6 payload length; jumbograms are not
    /// RoCEv2's).
    pub fn ipv6_header(&self, udp_payload_len: usize) -> Option<Ipv6Header> {
        let len = u16::try_from(UDP_HEADER_LEN + udp_payload_len).ok()?;
        let word =
            (6 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & FLOW_LABEL_MASK);
        Some(Ipv6Header {
            version_class_flow: U32::new(word),
            payload_len: U16::new(len),
            next_header: IPPROTO_UDP,
            hop_limit: DEFAULT_HOP_LIMIT,
            src: self.src.octets(),
            dst: self.dst.octets(),
        })
    }

    /// The UDP header for a UDP payload of `udp_payload_len` bytes, with
    /// checksum 0 (RFC 6935 allows a zero UDP checksum over IPv6 for
    /// tunnel protocols; RoCEv2's ICRC protects the packet, and the field
    /// is masked in it). `None` when the length does not fit 16 bits.
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

/// The IPv6 and UDP headers of a datagram, checked, and where the UDP
/// payload lies.
pub(crate) struct Ipv6UdpView<'a> {
    pub fields: Ipv6UdpFields,
    pub ip: &'a Ipv6Header,
    pub udp: &'a UdpHeader,
    /// BTH through ICRC, exactly as long as the length fields say.
    pub udp_payload: &'a [u8],
}

/// Checks the IPv6 and UDP headers at the start of `datagram` and locates
/// the UDP payload. Bytes after the IPv6 payload length (link-layer
/// padding) are ignored. Extension headers are not accepted (RoCEv2
/// senders put UDP right after the IPv6 header): any next header but UDP
/// is [`ParseError::NotUdp`]. The UDP checksum is not verified.
pub(crate) fn parse_ipv6_udp(datagram: &[u8]) -> Result<Ipv6UdpView<'_>, ParseError> {
    let (ip, rest) = Ipv6Header::ref_from_prefix(datagram).map_err(|_| ParseError::Truncated)?;
    if ip.version() != 6 {
        return Err(ParseError::BadVersion);
    }
    let payload_len = usize::from(ip.payload_len.get());
    if payload_len < UDP_HEADER_LEN {
        return Err(ParseError::LengthMismatch);
    }
    if rest.len() < payload_len {
        return Err(ParseError::Truncated);
    }
    if ip.next_header != IPPROTO_UDP {
        return Err(ParseError::NotUdp);
    }
    let (udp, _) = UdpHeader::ref_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
    if udp.dst_port.get() != ROCEV2_PORT {
        return Err(ParseError::NotUdp4791);
    }
    if usize::from(udp.length.get()) != payload_len {
        return Err(ParseError::LengthMismatch);
    }
    let udp_payload = rest
        .get(UDP_HEADER_LEN..payload_len)
        .ok_or(ParseError::Truncated)?;
    let fields = Ipv6UdpFields {
        src: Ipv6Addr::from(ip.src),
        dst: Ipv6Addr::from(ip.dst),
        src_port: udp.src_port.get(),
        dst_port: udp.dst_port.get(),
        traffic_class: ip.traffic_class(),
        flow_label: ip.flow_label(),
    };
    Ok(Ipv6UdpView {
        fields,
        ip,
        udp,
        udp_payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Ipv6UdpFields {
        Ipv6UdpFields {
            traffic_class: 0xB8,
            flow_label: 0xF_2345,
            ..Ipv6UdpFields::new(
                Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1),
                Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2),
                49152,
            )
        }
    }

    #[test]
    fn header_from_fields() {
        let f = fields();
        let ip = f.ipv6_header(28).unwrap();
        assert_eq!(
            &ip.as_bytes()[..8],
            &[0x6B, 0x8F, 0x23, 0x45, 0x00, 36, 17, 64]
        );
        assert_eq!(
            (ip.version(), ip.traffic_class(), ip.flow_label()),
            (6, 0xB8, 0xF_2345)
        );
        assert_eq!(&ip.src[..2], &[0xfd, 0x00]);
        assert_eq!(ip.dst[15], 2);
        assert_eq!(f.udp_header(28).unwrap().length.get(), 36);
        // The IPv6 payload length is the UDP length: 65535 at most.
        assert!(f.ipv6_header(65527).is_some());
        assert!(f.ipv6_header(65528).is_none());
        // A flow label wider than 20 bits is cut, never spills into the
        // traffic class.
        let wide = Ipv6UdpFields {
            flow_label: 0xFFF0_0001,
            ..f
        };
        assert_eq!(wide.ipv6_header(0).unwrap().traffic_class(), 0xB8);
        assert_eq!(wide.ipv6_header(0).unwrap().flow_label(), 1);
    }

    #[test]
    fn parse_checks_in_order() {
        let f = fields();
        let mut d = [0u8; 60];
        d[..40].copy_from_slice(f.ipv6_header(12).unwrap().as_bytes());
        d[40..48].copy_from_slice(f.udp_header(12).unwrap().as_bytes());
        let view = parse_ipv6_udp(&d).unwrap();
        assert_eq!(view.fields, f);
        assert_eq!(view.udp_payload.len(), 12);
        // Link-layer padding after the payload length is ignored.
        let mut padded = d.to_vec();
        padded.extend_from_slice(&[0xEE; 6]);
        assert_eq!(parse_ipv6_udp(&padded).unwrap().udp_payload.len(), 12);
        let broken = |i: usize, v: u8| {
            let mut b = d;
            b[i] = v;
            parse_ipv6_udp(&b).err()
        };
        assert_eq!(broken(0, 0x4B), Some(ParseError::BadVersion));
        assert_eq!(broken(6, 0), Some(ParseError::NotUdp), "hop-by-hop options");
        assert_eq!(broken(43, 0xB8), Some(ParseError::NotUdp4791));
        assert_eq!(broken(45, 21), Some(ParseError::LengthMismatch));
        assert_eq!(broken(5, 4), Some(ParseError::LengthMismatch));
        assert_eq!(broken(5, 21), Some(ParseError::Truncated));
        assert_eq!(parse_ipv6_udp(&d[..39]).err(), Some(ParseError::Truncated));
    }
}

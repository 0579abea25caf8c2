//! The IP and UDP facts of a RoCEv2 datagram of either family: the header
//! that starts a datagram decides (IPv4 or IPv6, by its version nibble),
//! and one connection's packets are all of its addresses' family.

use core::net::{IpAddr, SocketAddr};

use zerocopy::IntoBytes;

use super::error::{BuildError, ParseError};
use super::icrc::IcrcHasher;
use super::ipv4_udp::{IPV4_HEADER_LEN, Ipv4UdpFields, UDP_HEADER_LEN, UdpHeader, parse_ipv4_udp};
use super::ipv6_udp::{IPV6_HEADER_LEN, Ipv6UdpFields, parse_ipv6_udp};

/// The IP and UDP facts of one datagram, IPv4 or IPv6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpUdpFields {
    /// An IPv4 datagram.
    V4(Ipv4UdpFields),
    /// An IPv6 datagram.
    V6(Ipv6UdpFields),
}

impl From<Ipv4UdpFields> for IpUdpFields {
    fn from(f: Ipv4UdpFields) -> Self {
        Self::V4(f)
    }
}

impl From<Ipv6UdpFields> for IpUdpFields {
    fn from(f: Ipv6UdpFields) -> Self {
        Self::V6(f)
    }
}

/// The largest IP + UDP header (IPv6's 40 + 8).
pub const MAX_IP_UDP_HEADER_LEN: usize = IPV6_HEADER_LEN + UDP_HEADER_LEN;

impl IpUdpFields {
    /// The fields of a RoCEv2 datagram from `src`:`src_port` to `dst`:4791
    /// ([`Ipv4UdpFields::new`], [`Ipv6UdpFields::new`]); `None` when the
    /// two addresses are of different families.
    pub const fn new(src: IpAddr, dst: IpAddr, src_port: u16) -> Option<Self> {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Some(Self::V4(Ipv4UdpFields::new(s, d, src_port))),
            (IpAddr::V6(s), IpAddr::V6(d)) => Some(Self::V6(Ipv6UdpFields::new(s, d, src_port))),
            _ => None,
        }
    }

    /// The fields of a datagram from `src` to `dst` (both ports as given;
    /// see [`IpUdpFields::new`]); `None` for mixed families. For an IPv6
    /// UDP payload a socket received these are every field the ICRC
    /// covers; for IPv4 they lack the identification, which only the
    /// received header tells.
    pub fn between(src: SocketAddr, dst: SocketAddr) -> Option<Self> {
        let mut f = Self::new(src.ip(), dst.ip(), src.port())?;
        match &mut f {
            Self::V4(v4) => v4.dst_port = dst.port(),
            Self::V6(v6) => v6.dst_port = dst.port(),
        }
        Some(f)
    }

    /// These fields with the IPv4 identification of the packet of PSN
    /// `psn` ([`Ipv4UdpFields::for_packet`]); IPv6 has none.
    #[must_use]
    pub const fn for_packet(self, psn: u32) -> Self {
        match self {
            Self::V4(f) => Self::V4(f.for_packet(psn)),
            Self::V6(f) => Self::V6(f),
        }
    }

    /// Source address.
    pub const fn src(&self) -> IpAddr {
        match self {
            Self::V4(f) => IpAddr::V4(f.src),
            Self::V6(f) => IpAddr::V6(f.src),
        }
    }

    /// Destination address.
    pub const fn dst(&self) -> IpAddr {
        match self {
            Self::V4(f) => IpAddr::V4(f.dst),
            Self::V6(f) => IpAddr::V6(f.dst),
        }
    }

    /// UDP source port.
    pub const fn src_port(&self) -> u16 {
        match self {
            Self::V4(f) => f.src_port,
            Self::V6(f) => f.src_port,
        }
    }

    /// UDP destination port.
    pub const fn dst_port(&self) -> u16 {
        match self {
            Self::V4(f) => f.dst_port,
            Self::V6(f) => f.dst_port,
        }
    }

    /// Sets the UDP source port.
    pub fn set_src_port(&mut self, port: u16) {
        match self {
            Self::V4(f) => f.src_port = port,
            Self::V6(f) => f.src_port = port,
        }
    }

    /// Where the datagram goes: destination address and UDP port.
    pub const fn destination(&self) -> SocketAddr {
        SocketAddr::new(self.dst(), self.dst_port())
    }

    /// The IPv4 facts, for an IPv4 datagram.
    pub const fn as_v4(&self) -> Option<&Ipv4UdpFields> {
        match self {
            Self::V4(f) => Some(f),
            Self::V6(_) => None,
        }
    }

    /// The IPv6 facts, for an IPv6 datagram.
    pub const fn as_v6(&self) -> Option<&Ipv6UdpFields> {
        match self {
            Self::V4(_) => None,
            Self::V6(f) => Some(f),
        }
    }

    /// Bytes of the IP header (20 or 40).
    pub const fn ip_header_len(&self) -> usize {
        match self {
            Self::V4(_) => IPV4_HEADER_LEN,
            Self::V6(_) => IPV6_HEADER_LEN,
        }
    }

    /// Bytes of the IP and UDP headers in front of a UDP payload.
    pub const fn header_len(&self) -> usize {
        self.ip_header_len() + UDP_HEADER_LEN
    }

    /// The IP and UDP headers for a UDP payload of `udp_payload_len`
    /// bytes, written at the start of `out` (which must hold
    /// [`IpUdpFields::header_len`] bytes), and an ICRC hasher that has
    /// consumed them masked. `TooLong` when the datagram exceeds its
    /// family's limit.
    pub(crate) fn write_headers(
        &self,
        udp_payload_len: usize,
        out: &mut [u8],
    ) -> Result<IcrcHasher, BuildError> {
        let (udp, hasher, ip_len) = self.headers(udp_payload_len, Some(out))?;
        let at = out.get_mut(ip_len..).ok_or(BuildError::BufferTooSmall)?;
        udp.write_to_prefix(at)
            .map_err(|_| BuildError::BufferTooSmall)?;
        Ok(hasher)
    }

    /// An ICRC hasher that has consumed the (masked) IP and UDP headers
    /// of a datagram with a UDP payload of `udp_payload_len` bytes,
    /// without writing them (the UDP-payload framing). `TooLong` as for
    /// [`IpUdpFields::write_headers`].
    pub(crate) fn hasher(&self, udp_payload_len: usize) -> Result<IcrcHasher, BuildError> {
        self.headers(udp_payload_len, None).map(|(_, h, _)| h)
    }

    /// The headers' bytes for a UDP payload of `udp_payload_len` bytes
    /// (a capture shows a socket's payload with them): the buffer and
    /// how much of it they fill. `None` when too long.
    pub fn header_bytes(
        &self,
        udp_payload_len: usize,
    ) -> Option<([u8; MAX_IP_UDP_HEADER_LEN], usize)> {
        let mut out = [0u8; MAX_IP_UDP_HEADER_LEN];
        self.write_headers(udp_payload_len, &mut out).ok()?;
        Some((out, self.header_len()))
    }

    /// Builds the IP header (written into `out` if given) and the UDP
    /// header, and starts the ICRC over both.
    fn headers(
        &self,
        udp_payload_len: usize,
        out: Option<&mut [u8]>,
    ) -> Result<(UdpHeader, IcrcHasher, usize), BuildError> {
        match self {
            Self::V4(f) => {
                let ip = f.ipv4_header(udp_payload_len).ok_or(BuildError::TooLong)?;
                let udp = f.udp_header(udp_payload_len).ok_or(BuildError::TooLong)?;
                if let Some(out) = out {
                    ip.write_to_prefix(out)
                        .map_err(|_| BuildError::BufferTooSmall)?;
                }
                Ok((udp, IcrcHasher::for_ipv4_udp(&ip, &udp), IPV4_HEADER_LEN))
            }
            Self::V6(f) => {
                let ip = f.ipv6_header(udp_payload_len).ok_or(BuildError::TooLong)?;
                let udp = f.udp_header(udp_payload_len).ok_or(BuildError::TooLong)?;
                if let Some(out) = out {
                    ip.write_to_prefix(out)
                        .map_err(|_| BuildError::BufferTooSmall)?;
                }
                Ok((udp, IcrcHasher::for_ipv6_udp(&ip, &udp), IPV6_HEADER_LEN))
            }
        }
    }
}

/// The checked IP and UDP headers of a received datagram: its facts, the
/// ICRC hasher that has consumed them, and the UDP payload.
#[derive(Clone, Debug)]
pub(crate) struct IpUdpView<'a> {
    pub fields: IpUdpFields,
    pub hasher: IcrcHasher,
    pub udp_payload: &'a [u8],
}

/// Checks the IP (version 4 or 6, by the first nibble) and UDP headers at
/// the start of `datagram` and locates the UDP payload.
pub(crate) fn parse_ip_udp(datagram: &[u8]) -> Result<IpUdpView<'_>, ParseError> {
    match datagram.first().map(|b| b >> 4) {
        None => Err(ParseError::Truncated),
        Some(4) => {
            let v = parse_ipv4_udp(datagram)?;
            Ok(IpUdpView {
                fields: IpUdpFields::V4(v.fields),
                hasher: IcrcHasher::for_ipv4_udp(v.ip, v.udp),
                udp_payload: v.udp_payload,
            })
        }
        Some(6) => {
            let v = parse_ipv6_udp(datagram)?;
            Ok(IpUdpView {
                fields: IpUdpFields::V6(v.fields),
                hasher: IcrcHasher::for_ipv6_udp(v.ip, v.udp),
                udp_payload: v.udp_payload,
            })
        }
        Some(_) => Err(ParseError::BadVersion),
    }
}

/// A received IPv4 or IPv6 datagram to UDP port 4791 whose IP and UDP
/// headers have been checked, once ([`CheckedDatagram::parse`]): what
/// whoever received it (the Ethernet port's classification, a raw
/// socket) learnt from them, carried on to the device, which goes on from
/// the BTH ([`super::parse_checked`]) with the ICRC already fed the
/// headers. The checks are [`super::parse`]'s: IPv4 without options or
/// fragmentation with a good header checksum, IPv6 with UDP as its first
/// next header, and a UDP length that matches the IP length.
#[derive(Clone, Debug)]
pub struct CheckedDatagram<'a> {
    /// The datagram, cut to its IP length (link padding dropped).
    bytes: &'a [u8],
    view: IpUdpView<'a>,
}

impl<'a> CheckedDatagram<'a> {
    /// Checks the IP and UDP headers at the start of `datagram`; anything
    /// after the IP length (Ethernet padding) is left out.
    pub fn parse(datagram: &'a [u8]) -> Result<Self, ParseError> {
        let view = parse_ip_udp(datagram)?;
        let len = view.fields.header_len() + view.udp_payload.len();
        let bytes = datagram.get(..len).ok_or(ParseError::Truncated)?;
        Ok(Self { bytes, view })
    }

    /// The IP and UDP facts its headers carry.
    pub fn fields(&self) -> &IpUdpFields {
        &self.view.fields
    }

    /// The UDP payload (BTH through ICRC).
    pub fn udp_payload(&self) -> &'a [u8] {
        self.view.udp_payload
    }

    /// The whole datagram, IP header through ICRC.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The checked headers, for the transport parse.
    pub(crate) fn view(&self) -> &IpUdpView<'a> {
        &self.view
    }
}

/// The destination address of an IPv4 or IPv6 datagram (the IP header's
/// field, nothing else checked); `None` when too short or of another
/// version.
pub fn datagram_destination(datagram: &[u8]) -> Option<IpAddr> {
    match datagram.first()? >> 4 {
        4 => {
            let b: [u8; 4] = datagram.get(16..20)?.try_into().ok()?;
            Some(IpAddr::from(b))
        }
        6 => {
            let b: [u8; 16] = datagram.get(24..40)?.try_into().ok()?;
            Some(IpAddr::from(b))
        }
        _ => None,
    }
}

/// The source address of an IPv4 or IPv6 datagram (the IP header's
/// field, nothing else checked); `None` when too short or of another
/// version.
pub fn datagram_source(datagram: &[u8]) -> Option<IpAddr> {
    match datagram.first()? >> 4 {
        4 => {
            let b: [u8; 4] = datagram.get(12..16)?.try_into().ok()?;
            Some(IpAddr::from(b))
        }
        6 => {
            let b: [u8; 16] = datagram.get(8..24)?.try_into().ok()?;
            Some(IpAddr::from(b))
        }
        _ => None,
    }
}

/// The destination (address and UDP port) and the UDP payload of an IPv4
/// or IPv6 datagram, for a link that hands UDP payloads to a socket.
/// Nothing is checked but that the headers are there (an IPv4 header's
/// length is taken from its IHL).
pub fn split_datagram(datagram: &[u8]) -> Option<(SocketAddr, &[u8])> {
    let dst = datagram_destination(datagram)?;
    let ip_len = match dst {
        IpAddr::V4(_) => usize::from(*datagram.first()? & 0x0f) * 4,
        IpAddr::V6(_) => IPV6_HEADER_LEN,
    };
    let port: [u8; 2] = datagram.get(ip_len + 2..ip_len + 4)?.try_into().ok()?;
    let payload = datagram.get(ip_len + UDP_HEADER_LEN..)?;
    Some((SocketAddr::new(dst, u16::from_be_bytes(port)), payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn families_do_not_mix() {
        let v4 = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert!(IpUdpFields::new(v4, v6, 1).is_none());
        assert!(IpUdpFields::new(v6, v4, 1).is_none());
        let f = IpUdpFields::new(v6, v6, 7).unwrap();
        assert_eq!(
            (f.src(), f.dst(), f.src_port(), f.dst_port()),
            (v6, v6, 7, 4791)
        );
        assert_eq!((f.ip_header_len(), f.header_len()), (40, 48));
        let s = IpUdpFields::between(SocketAddr::new(v4, 9), SocketAddr::new(v4, 4791)).unwrap();
        assert_eq!(
            s.as_v4().map(|f| (f.ident, f.dont_fragment)),
            Some((0, true))
        );
        assert_eq!(s.destination(), SocketAddr::new(v4, 4791));
    }

    #[test]
    fn destinations_and_splits_of_both_families() {
        let f6 = IpUdpFields::new(
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)),
            49152,
        )
        .unwrap();
        let (head, n) = f6.header_bytes(5).unwrap();
        let mut d = head[..n].to_vec();
        d.extend_from_slice(b"hello");
        assert_eq!(datagram_destination(&d), Some(f6.dst()));
        assert_eq!(datagram_source(&d), Some(f6.src()));
        assert_eq!(split_datagram(&d), Some((f6.destination(), &b"hello"[..])));
        let f4 = IpUdpFields::new(
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            49152,
        )
        .unwrap();
        let (head, n) = f4.header_bytes(2).unwrap();
        assert_eq!(n, 28);
        let mut d = head[..n].to_vec();
        d.extend_from_slice(b"hi");
        assert_eq!(split_datagram(&d), Some((f4.destination(), &b"hi"[..])));
        assert_eq!(datagram_source(&d), Some(f4.src()));
        assert_eq!(datagram_source(&d[..15]), None);
        assert_eq!(datagram_destination(&[0x60; 39]), None);
        assert_eq!(datagram_destination(&[0x50; 60]), None);
        assert_eq!(datagram_destination(&[]), None);
    }
}

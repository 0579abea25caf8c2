//! The IP addressing header that RDMA CM puts at the start of REQ private
//! data (IBA annex A11), and IP-based service IDs.
//!
//! ```text
//! byte 0      version (0)
//! byte 1      IP version in bits 7..4 (4 or 6)
//! bytes 2-3   source port
//! bytes 4-19  source IP (IPv4: last 4 bytes, the first 12 zero;
//!             IPv6: all 16 bytes)
//! bytes 20-35 destination IP (same encoding)
//! ```
//!
//! The destination port is not in this header: it is the low 16 bits of
//! the REQ's service ID, `0x0000_0000_01PP_NNNN` with PP the port space
//! (0x06 for TCP-like RC connections) and NNNN the port ([`ip_service_id`]).
//! After the 36-byte header, 56 bytes of a REQ's private data remain for
//! the consumer.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::cm::{CmError, REQ_PRIVATE_LEN};

/// Bytes of the CMA header.
pub const CMA_HEADER_LEN: usize = 36;
/// Consumer private data bytes left in a REQ after the CMA header.
pub const REQ_CONSUMER_PRIVATE_LEN: usize = REQ_PRIVATE_LEN - CMA_HEADER_LEN;
/// The CMA header version.
pub const CMA_VERSION: u8 = 0;
/// Port space of reliable-connected "TCP-like" endpoints.
pub const PORT_SPACE_TCP: u8 = 0x06;
/// Port space of unreliable datagram "UDP-like" endpoints.
pub const PORT_SPACE_UDP: u8 = 0x11;

const IP_SERVICE_MARK: u64 = 0x01;

/// The service ID of an IP endpoint: port space and port.
pub const fn ip_service_id(port_space: u8, port: u16) -> u64 {
    (IP_SERVICE_MARK << 24) | ((port_space as u64) << 16) | port as u64
}

/// The port space and port of an IP-based service ID, if it is one.
pub const fn ip_service_port(service_id: u64) -> Option<(u8, u16)> {
    if service_id >> 24 == IP_SERVICE_MARK {
        Some(((service_id >> 16) as u8, service_id as u16))
    } else {
        None
    }
}

/// The CMA header.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct CmaHeader {
    version: u8,
    ip_version: u8,
    src_port: U16,
    src_addr: [u8; 16],
    dst_addr: [u8; 16],
}

const _: () = assert!(size_of::<CmaHeader>() == CMA_HEADER_LEN);

/// An IPv4 address in a 16-byte CMA address field: 12 zero bytes, then
/// the address.
fn ipv4_field(addr: Ipv4Addr) -> [u8; 16] {
    let mut field = [0u8; 16];
    let (_, low) = field.split_at_mut(12);
    low.copy_from_slice(&addr.octets());
    field
}

impl CmaHeader {
    /// The header for an IPv4 connection from `src`:`src_port` to `dst`.
    pub fn ipv4(src: Ipv4Addr, src_port: u16, dst: Ipv4Addr) -> Self {
        Self {
            version: CMA_VERSION,
            ip_version: 4 << 4,
            src_port: U16::new(src_port),
            src_addr: ipv4_field(src),
            dst_addr: ipv4_field(dst),
        }
    }

    /// The header for an IPv6 connection from `src`:`src_port` to `dst`:
    /// IP version 6, the addresses in full.
    pub fn ipv6(src: Ipv6Addr, src_port: u16, dst: Ipv6Addr) -> Self {
        Self {
            version: CMA_VERSION,
            ip_version: 6 << 4,
            src_port: U16::new(src_port),
            src_addr: src.octets(),
            dst_addr: dst.octets(),
        }
    }

    /// The header for a connection from `src`:`src_port` to `dst` of
    /// either family; `None` when the families differ.
    pub fn ip(src: IpAddr, src_port: u16, dst: IpAddr) -> Option<Self> {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Some(Self::ipv4(s, src_port, d)),
            (IpAddr::V6(s), IpAddr::V6(d)) => Some(Self::ipv6(s, src_port, d)),
            _ => None,
        }
    }

    /// Reads the header at the start of REQ private data, returning it and
    /// the consumer's private data after it.
    pub fn parse(private_data: &[u8]) -> Result<(&Self, &[u8]), CmError> {
        let (h, rest) = Self::ref_from_prefix(private_data).map_err(|_| CmError::BadCmaHeader)?;
        if h.version != CMA_VERSION || !matches!(h.ip_version(), 4 | 6) {
            return Err(CmError::BadCmaHeader);
        }
        Ok((h, rest))
    }

    /// Writes the header and `consumer` private data into REQ private
    /// data; `None` when `consumer` exceeds 56 bytes. Unused bytes are zero.
    pub fn write_req_private(&self, consumer: &[u8]) -> Option<[u8; REQ_PRIVATE_LEN]> {
        let mut out = [0u8; REQ_PRIVATE_LEN];
        let (head, tail) = out.split_at_mut(CMA_HEADER_LEN);
        head.copy_from_slice(self.as_bytes());
        tail.get_mut(..consumer.len())?.copy_from_slice(consumer);
        Some(out)
    }

    /// The header version (0).
    pub const fn version(&self) -> u8 {
        self.version
    }

    /// The IP version (4 or 6).
    pub const fn ip_version(&self) -> u8 {
        self.ip_version >> 4
    }

    /// The active side's port.
    pub fn src_port(&self) -> u16 {
        self.src_port.get()
    }

    /// The source address field as sent.
    pub const fn src_addr(&self) -> [u8; 16] {
        self.src_addr
    }

    /// The destination address field as sent.
    pub const fn dst_addr(&self) -> [u8; 16] {
        self.dst_addr
    }

    /// The IPv4 source address, for an IPv4 header.
    pub fn src_ipv4(&self) -> Option<Ipv4Addr> {
        self.ipv4_of(self.src_addr)
    }

    /// The IPv4 destination address, for an IPv4 header.
    pub fn dst_ipv4(&self) -> Option<Ipv4Addr> {
        self.ipv4_of(self.dst_addr)
    }

    fn ipv4_of(&self, field: [u8; 16]) -> Option<Ipv4Addr> {
        let [.., a, b, c, d] = field;
        (self.ip_version() == 4).then(|| Ipv4Addr::new(a, b, c, d))
    }

    /// The source address in the header's IP version.
    pub fn src_ip(&self) -> IpAddr {
        self.ip_of(self.src_addr)
    }

    /// The destination address in the header's IP version.
    pub fn dst_ip(&self) -> IpAddr {
        self.ip_of(self.dst_addr)
    }

    fn ip_of(&self, field: [u8; 16]) -> IpAddr {
        match self.ipv4_of(field) {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(field)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_round_trip() {
        let h = CmaHeader::ipv4(
            Ipv4Addr::new(10, 0, 0, 1),
            0xBEEF,
            Ipv4Addr::new(10, 0, 0, 2),
        );
        let b = h.as_bytes();
        assert_eq!(&b[..4], &[0x00, 0x40, 0xBE, 0xEF]);
        assert_eq!(
            &b[4..20],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1]
        );
        assert_eq!(&b[32..36], &[10, 0, 0, 2]);
        let private = h.write_req_private(b"consumer").unwrap();
        let (back, rest) = CmaHeader::parse(&private).unwrap();
        assert_eq!(back, &h);
        assert_eq!(rest.len(), REQ_CONSUMER_PRIVATE_LEN);
        assert_eq!(&rest[..8], b"consumer");
        assert_eq!(back.src_ipv4(), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(back.dst_ipv4(), Some(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!(back.src_port(), 0xBEEF);
        assert!(h.write_req_private(&[0; 57]).is_none());
        assert!(h.write_req_private(&[0; 56]).is_some());
    }

    #[test]
    fn ipv6_layout_and_round_trip() {
        let src = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
        let dst = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2);
        let h = CmaHeader::ipv6(src, 0xC001, dst);
        let b = h.as_bytes();
        assert_eq!(
            &b[..4],
            &[0x00, 0x60, 0xC0, 0x01],
            "version 0, IP version 6"
        );
        assert_eq!(&b[4..20], &src.octets());
        assert_eq!(&b[20..36], &dst.octets());
        let private = h.write_req_private(b"v6").unwrap();
        let (back, rest) = CmaHeader::parse(&private).unwrap();
        assert_eq!((back.ip_version(), back.src_port()), (6, 0xC001));
        assert_eq!(back.src_ip(), IpAddr::V6(src));
        assert_eq!(back.dst_ip(), IpAddr::V6(dst));
        assert_eq!(back.src_ipv4(), None);
        assert_eq!(&rest[..2], b"v6");
        assert_eq!(
            rest.len(),
            REQ_CONSUMER_PRIVATE_LEN,
            "56 bytes, as for IPv4"
        );
        let v4 = CmaHeader::ip(Ipv4Addr::LOCALHOST.into(), 1, Ipv4Addr::LOCALHOST.into()).unwrap();
        assert_eq!(v4.src_ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(CmaHeader::ip(src.into(), 1, Ipv4Addr::LOCALHOST.into()).is_none());
    }

    #[test]
    fn rejects_bad_headers() {
        let mut private = CmaHeader::ipv4(Ipv4Addr::LOCALHOST, 1, Ipv4Addr::LOCALHOST)
            .write_req_private(&[])
            .unwrap();
        private[1] = 0x50;
        assert_eq!(CmaHeader::parse(&private), Err(CmError::BadCmaHeader));
        private[1] = 0x40;
        private[0] = 1;
        assert_eq!(CmaHeader::parse(&private), Err(CmError::BadCmaHeader));
        assert_eq!(CmaHeader::parse(&private[..35]), Err(CmError::BadCmaHeader));
    }

    #[test]
    fn service_ids() {
        assert_eq!(ip_service_id(PORT_SPACE_TCP, 18515), 0x0000_0000_0106_4853);
        assert_eq!(ip_service_port(0x0106_4853), Some((PORT_SPACE_TCP, 18515)));
        assert_eq!(ip_service_port(0x1000_0000_0106_4853), None);
        assert_eq!(ip_service_port(0x0206_4853), None);
    }
}

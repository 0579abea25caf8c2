//! `SOCKADDR_IN` / `SOCKADDR_IN6` (Windows layout, `AF_INET6` = 23) to and
//! from `core::net::SocketAddr`. Ports and addresses are in network byte
//! order on the wire side.

use core::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use ndkpi::{
    AF_INET, AF_INET6, IN_ADDR, IN6_ADDR, NTSTATUS, SOCKADDR_IN, SOCKADDR_IN6,
    STATUS_INVALID_ADDRESS, STATUS_INVALID_PARAMETER,
};

/// `N` bytes of `bytes` at `at` (the caller checked the length).
fn array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

/// Parses a consumer's socket address (the `len` bytes it passed).
pub fn parse(bytes: &[u8]) -> Result<SocketAddr, NTSTATUS> {
    if bytes.len() < size_of::<u16>() {
        return Err(STATUS_INVALID_PARAMETER);
    }
    // Fields are read at their `SOCKADDR_IN`/`SOCKADDR_IN6` offsets: the
    // family in host order, the port in network order, IPv6's flow info
    // and scope id in host order.
    match u16::from_ne_bytes(array(bytes, 0)) {
        AF_INET if bytes.len() >= size_of::<SOCKADDR_IN>() => {
            Ok(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(array::<4>(bytes, 4)),
                u16::from_be_bytes(array(bytes, 2)),
            )))
        }
        AF_INET6 if bytes.len() >= size_of::<SOCKADDR_IN6>() => {
            Ok(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(array::<16>(bytes, 8)),
                u16::from_be_bytes(array(bytes, 2)),
                u32::from_ne_bytes(array(bytes, 4)),
                u32::from_ne_bytes(array(bytes, 24)),
            )))
        }
        AF_INET | AF_INET6 => Err(STATUS_INVALID_PARAMETER),
        // A family NDK does not carry.
        _ => Err(STATUS_INVALID_ADDRESS),
    }
}

/// Writes the Windows form of `addr` to the front of `out`: the bytes
/// written, or `Err` with the bytes needed if `out` is shorter.
pub fn encode(addr: SocketAddr, out: &mut [u8]) -> Result<u32, u32> {
    let need = size_of_addr(&addr);
    let Some(out) = out.get_mut(..need as usize) else {
        return Err(need);
    };
    out[2..4].copy_from_slice(&addr.port().to_be_bytes());
    match addr {
        SocketAddr::V4(a) => {
            out[0..2].copy_from_slice(&AF_INET.to_ne_bytes());
            out[4..8].copy_from_slice(&a.ip().octets());
            out[8..16].fill(0);
        }
        SocketAddr::V6(a) => {
            out[0..2].copy_from_slice(&AF_INET6.to_ne_bytes());
            out[4..8].copy_from_slice(&a.flowinfo().to_ne_bytes());
            out[8..24].copy_from_slice(&a.ip().octets());
            out[24..28].copy_from_slice(&a.scope_id().to_ne_bytes());
        }
    }
    Ok(need)
}

/// The Windows form of an address.
pub fn to_sockaddr_in(addr: SocketAddrV4) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: addr.port().to_be(),
        sin_addr: IN_ADDR::new(addr.ip().octets()),
        sin_zero: [0; 8],
    }
}

/// The Windows form of an IPv6 address.
pub fn to_sockaddr_in6(addr: SocketAddrV6) -> SOCKADDR_IN6 {
    SOCKADDR_IN6 {
        sin6_family: AF_INET6,
        sin6_port: addr.port().to_be(),
        sin6_flowinfo: addr.flowinfo(),
        sin6_addr: IN6_ADDR {
            u: addr.ip().octets(),
        },
        sin6_scope_id: addr.scope_id(),
    }
}

/// Bytes the Windows form of `addr` takes.
pub fn size_of_addr(addr: &SocketAddr) -> u32 {
    match addr {
        SocketAddr::V4(_) => size_of::<SOCKADDR_IN>() as u32,
        SocketAddr::V6(_) => size_of::<SOCKADDR_IN6>() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_both_families() {
        let v4: SocketAddr = "192.0.2.7:4791".parse().unwrap();
        let mut buf = [0u8; 28];
        assert_eq!(encode(v4, &mut buf), Ok(16));
        assert_eq!(
            &buf[..4],
            &[2, 0, 0x12, 0xb7],
            "AF_INET, port in network order"
        );
        assert_eq!(parse(&buf[..16]), Ok(v4));
        let v6: SocketAddr = "[2001:db8::5]:9".parse().unwrap();
        assert_eq!(encode(v6, &mut buf), Ok(28));
        assert_eq!(u16::from_le_bytes([buf[0], buf[1]]), 23);
        assert_eq!(parse(&buf[..28]), Ok(v6));
        // A truncated length is refused before reading past it.
        assert_eq!(parse(&buf[..27]), Err(STATUS_INVALID_PARAMETER));
        assert_eq!(encode(v6, &mut buf[..27]), Err(28));
    }

    #[test]
    fn encoding_matches_the_windows_structs() {
        let v4: SocketAddrV4 = "192.0.2.7:4791".parse().unwrap();
        let v6: SocketAddrV6 = "[2001:db8::5%3]:9".parse().unwrap();
        let mut buf = [0xffu8; 28];
        encode(SocketAddr::V4(v4), &mut buf).unwrap();
        let sin = to_sockaddr_in(v4);
        assert_eq!(u16::from_ne_bytes([buf[0], buf[1]]), sin.sin_family);
        assert_eq!(u16::from_ne_bytes([buf[2], buf[3]]), sin.sin_port);
        assert_eq!(buf[4..8], sin.sin_addr.S_un);
        assert_eq!(buf[8..16], [0; 8]);
        let mut v6buf = [0u8; 28];
        encode(SocketAddr::V6(v6), &mut v6buf).unwrap();
        let sin6 = to_sockaddr_in6(v6);
        assert_eq!(u16::from_ne_bytes([v6buf[2], v6buf[3]]), sin6.sin6_port);
        assert_eq!(v6buf[8..24], sin6.sin6_addr.u);
        assert_eq!(u32::from_ne_bytes(v6buf[24..28].try_into().unwrap()), 3);
        assert_eq!(parse(&v6buf), Ok(SocketAddr::V6(v6)));
    }
}

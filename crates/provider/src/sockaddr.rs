//! `SOCKADDR_IN` / `SOCKADDR_IN6` (Windows layout, `AF_INET6` = 23) to and
//! from `core::net::SocketAddr`. Ports and addresses are in network byte
//! order on the wire side.

use core::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use ndkpi::{
    AF_INET, AF_INET6, IN_ADDR, IN6_ADDR, NTSTATUS, SOCKADDR, SOCKADDR_IN, SOCKADDR_IN6,
    STATUS_BUFFER_TOO_SMALL, STATUS_INVALID_ADDRESS, STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use crate::abi;

/// Reads a consumer's socket address of `len` bytes.
///
/// # Safety
/// A non-null `addr` must be readable for `len` bytes.
pub unsafe fn read(addr: *const SOCKADDR, len: u32) -> Result<SocketAddr, NTSTATUS> {
    if addr.is_null() || (len as usize) < size_of::<u16>() {
        return Err(STATUS_INVALID_PARAMETER);
    }
    // SAFETY: at least the two family bytes are readable (checked).
    let family = unsafe { addr.cast::<u16>().read_unaligned() };
    match family {
        AF_INET if len as usize >= size_of::<SOCKADDR_IN>() => {
            // SAFETY: `len` covers a SOCKADDR_IN (checked).
            let sin = unsafe { addr.cast::<SOCKADDR_IN>().read_unaligned() };
            Ok(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(sin.sin_addr.S_un),
                u16::from_be(sin.sin_port),
            )))
        }
        AF_INET6 if len as usize >= size_of::<SOCKADDR_IN6>() => {
            // SAFETY: `len` covers a SOCKADDR_IN6 (checked).
            let sin6 = unsafe { addr.cast::<SOCKADDR_IN6>().read_unaligned() };
            Ok(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.u),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        AF_INET | AF_INET6 => Err(STATUS_INVALID_PARAMETER),
        // A family NDK does not carry.
        _ => Err(STATUS_INVALID_ADDRESS),
    }
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

/// Writes `addr` for a `GetLocalAddress`-style call: `*len` in = buffer
/// size, out = bytes written or required (`STATUS_BUFFER_TOO_SMALL`).
///
/// # Safety
/// A non-null `len` must be valid for read and write; a non-null `out`
/// must be writable for `*len` bytes.
pub unsafe fn write(addr: SocketAddr, out: *mut SOCKADDR, len: *mut u32) -> NTSTATUS {
    // SAFETY: forwarded (null checked inside).
    let Some(have) = (unsafe { abi::read_in(len) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    let need = size_of_addr(&addr);
    // SAFETY: `len` is non-null (read above).
    unsafe { abi::write_out(len, need) };
    if out.is_null() || have < need {
        return STATUS_BUFFER_TOO_SMALL;
    }
    match addr {
        // SAFETY: the buffer holds `have >= need` bytes (checked).
        SocketAddr::V4(a) => unsafe {
            out.cast::<SOCKADDR_IN>().write_unaligned(to_sockaddr_in(a));
        },
        // SAFETY: as above.
        SocketAddr::V6(a) => unsafe {
            out.cast::<SOCKADDR_IN6>()
                .write_unaligned(to_sockaddr_in6(a));
        },
    }
    STATUS_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_both_families() {
        let v4: SocketAddr = "192.0.2.7:4791".parse().unwrap();
        let mut buf = [0u8; 28];
        let mut len = 28;
        // SAFETY: a 28-byte buffer and its length.
        let st = unsafe { write(v4, buf.as_mut_ptr().cast(), &raw mut len) };
        assert_eq!((st, len), (STATUS_SUCCESS, 16));
        assert_eq!(
            &buf[..4],
            &[2, 0, 0x12, 0xb7],
            "AF_INET, port in network order"
        );
        // SAFETY: the bytes just written.
        assert_eq!(unsafe { read(buf.as_ptr().cast(), 16) }, Ok(v4));
        let v6: SocketAddr = "[2001:db8::5]:9".parse().unwrap();
        let mut len = 28;
        // SAFETY: as above.
        let st = unsafe { write(v6, buf.as_mut_ptr().cast(), &raw mut len) };
        assert_eq!(
            (st, len, u16::from_le_bytes([buf[0], buf[1]])),
            (STATUS_SUCCESS, 28, 23)
        );
        // SAFETY: the bytes just written.
        assert_eq!(unsafe { read(buf.as_ptr().cast(), 28) }, Ok(v6));
        // SAFETY: a truncated length is refused before reading past it.
        let truncated = unsafe { read(buf.as_ptr().cast(), 27) };
        assert_eq!(truncated, Err(STATUS_INVALID_PARAMETER));
        let mut len = 27;
        // SAFETY: a buffer of 28 described as 27 bytes.
        let st = unsafe { write(v6, buf.as_mut_ptr().cast(), &raw mut len) };
        assert_eq!((st, len), (STATUS_BUFFER_TOO_SMALL, 28));
    }
}

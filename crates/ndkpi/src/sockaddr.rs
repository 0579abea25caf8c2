//! Socket address types from `ws2def.h` / `ws2ipdef.h` (x64), which NDK
//! uses for local and peer addresses: an IP address plus an ND port.
//!
//! Ports and addresses are stored in network byte order, as in C.

use crate::types::{CHAR, ULONG, USHORT};

/// Address family tag at the start of every socket address.
pub type ADDRESS_FAMILY = USHORT;

/// IPv4 address family.
pub const AF_INET: ADDRESS_FAMILY = 2;
/// IPv6 address family (23 on Windows, unlike 10 on Linux).
pub const AF_INET6: ADDRESS_FAMILY = 23;

/// Generic socket address header (16 bytes); NDK passes `PSOCKADDR` plus a
/// byte length and the family picks the real type.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SOCKADDR {
    /// Address family (`AF_INET`, `AF_INET6`).
    pub sa_family: ADDRESS_FAMILY,
    /// Family-specific bytes.
    pub sa_data: [CHAR; 14],
}

/// Pointer to a generic socket address, as the NDK signatures spell it.
pub type PSOCKADDR = *mut SOCKADDR;

/// IPv4 address, network byte order.
///
/// In C the single member `S_un` is a union of byte, word and `ULONG`
/// views of the same 4 bytes; it is modelled as the bytes, with the
/// alignment of the `ULONG` view kept by `align(4)`.
#[repr(C, align(4))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IN_ADDR {
    /// The address bytes, most significant first (`a.b.c.d`).
    pub S_un: [u8; 4],
}

impl IN_ADDR {
    /// The address `a.b.c.d`.
    pub const fn new(octets: [u8; 4]) -> Self {
        Self { S_un: octets }
    }
}

/// IPv4 socket address (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SOCKADDR_IN {
    /// Always `AF_INET`.
    pub sin_family: ADDRESS_FAMILY,
    /// Port, network byte order.
    pub sin_port: USHORT,
    /// IPv4 address.
    pub sin_addr: IN_ADDR,
    /// Padding to the size of `SOCKADDR`; zero.
    pub sin_zero: [CHAR; 8],
}

/// IPv6 address, network byte order.
///
/// The C member `u` is a union of 16 bytes and 8 `USHORT`s; modelled as
/// the bytes, with the `USHORT` view's alignment kept by `align(2)`.
#[repr(C, align(2))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IN6_ADDR {
    /// The address bytes, most significant first.
    pub u: [u8; 16],
}

/// IPv6 socket address (28 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SOCKADDR_IN6 {
    /// Always `AF_INET6`.
    pub sin6_family: ADDRESS_FAMILY,
    /// Port, network byte order.
    pub sin6_port: USHORT,
    /// IPv6 flow information.
    pub sin6_flowinfo: ULONG,
    /// IPv6 address.
    pub sin6_addr: IN6_ADDR,
    /// Scope (interface) id. In C this is an anonymous union with the
    /// bit-field view `sin6_scope_struct`; both are one `ULONG`.
    pub sin6_scope_id: ULONG,
}

const _: () = assert!(align_of::<SOCKADDR>() == 2);
const _: () = assert!(align_of::<IN_ADDR>() == 4);
const _: () = assert!(align_of::<SOCKADDR_IN>() == 4);
const _: () = assert!(align_of::<IN6_ADDR>() == 2);
const _: () = assert!(align_of::<SOCKADDR_IN6>() == 4);

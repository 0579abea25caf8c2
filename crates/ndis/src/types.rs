//! Base NDIS types (`ndis.h`, `ntddndis.h`), the interface types NDIS
//! borrows from `ifdef.h`, the counted Unicode string from `wdm.h`, the
//! `SOCKADDR_INET` union from `ws2ipdef.h`, and opaque stand-ins for kernel
//! objects this crate only passes by pointer.

use core::fmt;
use core::marker::{PhantomData, PhantomPinned};

use ndkpi::{ADDRESS_FAMILY, PVOID, SOCKADDR_IN, SOCKADDR_IN6, ULONG, USHORT};

/// Opaque handle NDIS gives out or receives (`PVOID` in C).
pub type NDIS_HANDLE = PVOID;
/// Object identifier of an OID request.
pub type NDIS_OID = ULONG;
/// NDIS port number; 0 is the default port.
pub type NDIS_PORT_NUMBER = ULONG;
/// Index of a NIC switch.
pub type NDIS_NIC_SWITCH_ID = ULONG;
/// Index of a NIC switch virtual port.
pub type NDIS_NIC_SWITCH_VPORT_ID = ULONG;
/// Interface index (`ifIndex`).
pub type NET_IFINDEX = ULONG;
/// Interface type, an IANA `ifType` (16 bits, `UINT16` in C).
pub type NET_IFTYPE = u16;
/// C `unsigned int` (32 bits on Windows).
pub type UINT = u32;
/// 64-bit unsigned integer.
pub type ULONG64 = u64;

/// The default NDIS port.
pub const NDIS_DEFAULT_PORT_NUMBER: NDIS_PORT_NUMBER = 0;
/// `ifIndex` that names no interface.
pub const NET_IFINDEX_UNSPECIFIED: NET_IFINDEX = 0;
/// Longest link-layer address NDIS carries (`IF_MAX_PHYS_ADDRESS_LENGTH`).
pub const NDIS_MAX_PHYS_ADDRESS_LENGTH: usize = 32;
/// Largest `USHORT`, the cap on variable-size `Header.Size` values.
pub const MAXUSHORT: USHORT = 0xFFFF;

/// Locally unique interface identifier.
///
/// In C a union of the 64-bit `Value` and a bit-field view (`Reserved:24`,
/// `NetLuidIndex:24`, `IfType:16`); modelled as the value, which has the
/// same size and alignment.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NET_LUID {
    /// The whole identifier.
    pub Value: u64,
}

/// Counted UTF-16 string (`UNICODE_STRING`, alias `NDIS_STRING`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UNICODE_STRING {
    /// Length of the text in bytes, without a terminator.
    pub Length: USHORT,
    /// Size of `Buffer` in bytes.
    pub MaximumLength: USHORT,
    /// The UTF-16 code units.
    pub Buffer: *mut u16,
}

/// NDIS's name for `UNICODE_STRING`.
pub type NDIS_STRING = UNICODE_STRING;

impl UNICODE_STRING {
    /// A string over `text` (UTF-16, no terminator), as the C macro
    /// `NDIS_STRING_CONST` builds one; NDIS only reads it.
    pub const fn from_static(text: &'static [u16]) -> Self {
        let bytes = (text.len() * 2) as USHORT;
        Self {
            Length: bytes,
            MaximumLength: bytes,
            Buffer: text.as_ptr().cast_mut(),
        }
    }
}

/// Widens an ASCII string to UTF-16 at compile time (for registry
/// keywords such as [`crate::NETWORK_DIRECT_KEYWORD`]).
pub const fn ascii_to_utf16<const N: usize>(text: &[u8; N]) -> [u16; N] {
    let mut out = [0u16; N];
    let mut i = 0;
    while i < N {
        assert!(text[i].is_ascii(), "keyword must be ASCII");
        out[i] = text[i] as u16;
        i += 1;
    }
    out
}

/// An IPv4 or IPv6 socket address (`SOCKADDR_INET`, 28 bytes): the
/// family tag is shared by both members.
#[repr(C)]
#[derive(Clone, Copy)]
pub union SOCKADDR_INET {
    /// IPv4 view (`si_family == AF_INET`).
    pub Ipv4: SOCKADDR_IN,
    /// IPv6 view (`si_family == AF_INET6`).
    pub Ipv6: SOCKADDR_IN6,
    /// The family tag of either view.
    pub si_family: ADDRESS_FAMILY,
}

impl Default for SOCKADDR_INET {
    fn default() -> Self {
        Self {
            Ipv6: SOCKADDR_IN6::default(),
        }
    }
}

impl From<SOCKADDR_IN> for SOCKADDR_INET {
    fn from(v4: SOCKADDR_IN) -> Self {
        // Start from the larger member so the tail is zero, not undefined.
        let mut out = Self::default();
        out.Ipv4 = v4;
        out
    }
}

impl From<SOCKADDR_IN6> for SOCKADDR_INET {
    fn from(v6: SOCKADDR_IN6) -> Self {
        Self { Ipv6: v6 }
    }
}

impl fmt::Debug for SOCKADDR_INET {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Reading a member needs `unsafe`, which this crate does not use.
        f.debug_struct("SOCKADDR_INET").finish_non_exhaustive()
    }
}

/// Declares zero-sized, unconstructible stand-ins for C types this crate
/// only ever handles through pointers (the usual opaque-FFI-type shape:
/// not `Send`, not `Sync`, not `Unpin`).
macro_rules! opaque_types {
    ($( $(#[$doc:meta])* $name:ident; )*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            pub struct $name {
                _data: [u8; 0],
                _marker: PhantomData<(*mut u8, PhantomPinned)>,
            }

            impl fmt::Debug for $name {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str(stringify!($name))
                }
            }
        )*
    };
}

opaque_types! {
    /// `DRIVER_OBJECT` (`wdm.h`); the driver passes the one it received in
    /// `DriverEntry`.
    DRIVER_OBJECT;
    /// `NDIS_RESOURCE_LIST` (`CM_PARTIAL_RESOURCE_LIST`); a virtual adapter
    /// has no hardware resources.
    NDIS_RESOURCE_LIST;
    /// `NDIS_PORT_AUTHENTICATION_PARAMETERS`; never read.
    NDIS_PORT_AUTHENTICATION_PARAMETERS;
    /// `NDIS_PCI_DEVICE_CUSTOM_PROPERTIES`; never read.
    NDIS_PCI_DEVICE_CUSTOM_PROPERTIES;
    /// `NDIS_RESTART_ATTRIBUTES` chain handed to `MiniportRestart`; never read.
    NDIS_RESTART_ATTRIBUTES;
    /// `NDIS_PNP_CAPABILITIES` (legacy power management); never set.
    NDIS_PNP_CAPABILITIES;
    /// `NDIS_PM_CAPABILITIES` (NDIS 6.20 power management); never set.
    NDIS_PM_CAPABILITIES;
    /// `NDIS_RECEIVE_SCALE_CAPABILITIES` (RSS); never set.
    NDIS_RECEIVE_SCALE_CAPABILITIES;
}

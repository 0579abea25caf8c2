//! The bottle's address rows ([`crate::tcpip::AddressRow`]) as
//! `MIB_UNICASTIPADDRESS_ROW`s (netioapi.h), whole as
//! `GetUnicastIpAddressTable` and `GetUnicastIpAddressEntry` fill them, or
//! reduced to their key as change notifications carry them, and the
//! address family filter of the IP Helper calls.

use std::net::IpAddr;

use ndis::{
    AF_INET, AF_INET6, AF_UNSPEC, IpPrefixOriginManual, IpPrefixOriginWellKnown,
    IpSuffixOriginLinkLayerAddress, IpSuffixOriginManual, IpSuffixOriginWellKnown,
    MIB_UNICASTIPADDRESS_ROW, NET_LUID, SCOPE_ID, SOCKADDR_INET,
};
use ndkpi::{ADDRESS_FAMILY, IN_ADDR, IN6_ADDR, SOCKADDR_IN, SOCKADDR_IN6};

use crate::tcpip::{AddressRow, PrefixOrigin, SuffixOrigin, ipv6};

/// `ValidLifetime` / `PreferredLifetime` of an address that does not
/// expire (manual and well-known addresses).
pub const INFINITE_LIFETIME: u32 = 0xffff_ffff;

/// Which rows a call asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `AF_UNSPEC`: IPv4 and IPv6.
    Both,
    /// `AF_INET`.
    V4,
    /// `AF_INET6`.
    V6,
}

impl Family {
    /// The family an `ADDRESS_FAMILY` argument names; `None` for any
    /// other value (`STATUS_INVALID_PARAMETER`).
    pub fn of(family: ADDRESS_FAMILY) -> Option<Self> {
        match family {
            AF_UNSPEC => Some(Self::Both),
            AF_INET => Some(Self::V4),
            AF_INET6 => Some(Self::V6),
            _ => None,
        }
    }

    /// Whether `ip` is of this family.
    pub fn holds(self, ip: IpAddr) -> bool {
        match self {
            Self::Both => true,
            Self::V4 => ip.is_ipv4(),
            Self::V6 => ip.is_ipv6(),
        }
    }
}

/// Whether `ip` is an IPv6 link-local address (its rows carry the
/// interface index as their zone).
fn is_link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if ipv6::is_link_local(v6))
}

/// `ip` as a `SOCKADDR_INET` (port 0; a link-local IPv6 address has the
/// interface index `zone` as its scope id).
pub fn sockaddr_of(ip: IpAddr, zone: u32) -> SOCKADDR_INET {
    match ip {
        IpAddr::V4(v4) => SOCKADDR_INET {
            Ipv4: SOCKADDR_IN {
                sin_family: AF_INET,
                sin_port: 0,
                sin_addr: IN_ADDR::new(v4.octets()),
                sin_zero: [0; 8],
            },
        },
        IpAddr::V6(v6) => SOCKADDR_INET {
            Ipv6: SOCKADDR_IN6 {
                sin6_family: AF_INET6,
                sin6_port: 0,
                sin6_flowinfo: 0,
                sin6_addr: IN6_ADDR { u: v6.octets() },
                sin6_scope_id: if is_link_local(ip) { zone } else { 0 },
            },
        },
    }
}

/// The address a `SOCKADDR_INET` holds; `None` unless its family is
/// `AF_INET` or `AF_INET6`.
pub fn ip_of(address: &SOCKADDR_INET) -> Option<IpAddr> {
    // SAFETY: every view of the union starts with the family, and the
    // union is plain data whatever was written to it.
    let family = unsafe { address.si_family };
    match family {
        AF_INET => {
            // SAFETY: the family says the IPv4 view is the live one.
            let v4 = unsafe { address.Ipv4 };
            Some(IpAddr::from(v4.sin_addr.S_un))
        }
        AF_INET6 => {
            // SAFETY: the family says the IPv6 view is the live one.
            let v6 = unsafe { address.Ipv6 };
            Some(IpAddr::from(v6.sin6_addr.u))
        }
        _ => None,
    }
}

fn prefix_origin(o: PrefixOrigin) -> i32 {
    match o {
        PrefixOrigin::Manual => IpPrefixOriginManual,
        PrefixOrigin::WellKnown => IpPrefixOriginWellKnown,
    }
}

fn suffix_origin(o: SuffixOrigin) -> i32 {
    match o {
        SuffixOrigin::Manual => IpSuffixOriginManual,
        SuffixOrigin::WellKnown => IpSuffixOriginWellKnown,
        SuffixOrigin::LinkLayerAddress => IpSuffixOriginLinkLayerAddress,
    }
}

/// The key of a row (`Address`, `InterfaceLuid`, `InterfaceIndex`), the
/// rest zero: what a change notification's `Row` holds ("contains
/// incomplete data ... only enough information that an application can
/// call GetUnicastIpAddressEntry", NotifyUnicastIpAddressChange remarks).
pub fn key_row(row: &AddressRow) -> MIB_UNICASTIPADDRESS_ROW {
    MIB_UNICASTIPADDRESS_ROW {
        Address: sockaddr_of(row.address.ip, row.if_index),
        InterfaceLuid: NET_LUID { Value: row.luid },
        InterfaceIndex: row.if_index,
        ..MIB_UNICASTIPADDRESS_ROW::default()
    }
}

/// A whole row, as the table and `GetUnicastIpAddressEntry` give it.
pub fn full_row(row: &AddressRow) -> MIB_UNICASTIPADDRESS_ROW {
    let a = &row.address;
    MIB_UNICASTIPADDRESS_ROW {
        PrefixOrigin: prefix_origin(a.prefix_origin),
        SuffixOrigin: suffix_origin(a.suffix_origin),
        ValidLifetime: INFINITE_LIFETIME,
        PreferredLifetime: INFINITE_LIFETIME,
        OnLinkPrefixLength: a.prefix_len,
        SkipAsSource: 0,
        DadState: a.dad as i32,
        ScopeId: SCOPE_ID {
            Value: if is_link_local(a.ip) { row.if_index } else { 0 },
        },
        CreationTimeStamp: a.created,
        ..key_row(row)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;
    use crate::tcpip::{Address, DadState};

    fn row(ip: IpAddr, dad: DadState) -> AddressRow {
        AddressRow {
            address: Address {
                ip,
                prefix_len: 64,
                dad,
                prefix_origin: PrefixOrigin::WellKnown,
                suffix_origin: SuffixOrigin::LinkLayerAddress,
                created: 133_000_000_000_000_000,
                dad_ends: None,
            },
            luid: (6 << 48) | (3 << 24),
            if_index: 12,
        }
    }

    #[test]
    fn rows_carry_every_field_and_keys_only_the_key() {
        let ll: Ipv6Addr = "fe80::52:53ff:fe00:7".parse().unwrap();
        let r = row(IpAddr::V6(ll), DadState::Preferred);
        let full = full_row(&r);
        assert_eq!(ip_of(&full.Address), Some(IpAddr::V6(ll)));
        // SAFETY: an IPv6 row.
        assert_eq!(unsafe { full.Address.Ipv6 }.sin6_scope_id, 12);
        assert_eq!(full.InterfaceLuid.Value, (6 << 48) | (3 << 24));
        assert_eq!(full.InterfaceIndex, 12);
        assert_eq!((full.PrefixOrigin, full.SuffixOrigin), (2, 4));
        assert_eq!((full.ValidLifetime, full.PreferredLifetime), (!0, !0));
        assert_eq!((full.OnLinkPrefixLength, full.SkipAsSource), (64, 0));
        assert_eq!((full.DadState, full.ScopeId.Value), (4, 12));
        assert_eq!(full.CreationTimeStamp, 133_000_000_000_000_000);
        let key = key_row(&r);
        assert_eq!(ip_of(&key.Address), Some(IpAddr::V6(ll)));
        assert_eq!(
            (key.InterfaceLuid.Value, key.InterfaceIndex),
            (full.InterfaceLuid.Value, 12)
        );
        assert_eq!(
            (key.DadState, key.OnLinkPrefixLength, key.CreationTimeStamp),
            (0, 0, 0)
        );
    }

    #[test]
    fn ipv4_and_global_ipv6_rows_have_no_zone() {
        let v4 = full_row(&row(
            IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)),
            DadState::Tentative,
        ));
        // SAFETY: every view starts with the family.
        assert_eq!(unsafe { v4.Address.si_family }, AF_INET);
        assert_eq!((v4.ScopeId.Value, v4.DadState), (0, 1));
        let g = full_row(&row("fd00:5253::1".parse().unwrap(), DadState::Duplicate));
        // SAFETY: an IPv6 row.
        assert_eq!(unsafe { g.Address.Ipv6 }.sin6_scope_id, 0);
        assert_eq!((g.ScopeId.Value, g.DadState), (0, 2));
    }

    #[test]
    fn families_filter_and_unknown_ones_are_refused() {
        assert_eq!(Family::of(0), Some(Family::Both));
        assert_eq!(Family::of(2), Some(Family::V4));
        assert_eq!(Family::of(23), Some(Family::V6));
        assert_eq!(Family::of(10), None, "Linux's AF_INET6 is not Windows'");
        let v4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert!(Family::V4.holds(v4) && !Family::V6.holds(v4) && Family::Both.holds(v4));
        let mut bad = SOCKADDR_INET::default();
        bad.si_family = 10;
        assert_eq!(ip_of(&bad), None);
    }
}

//! The device's own addresses: a small fixed set of IPv4 and IPv6
//! addresses, replaced live as the host's IP configuration changes.
//!
//! The set is a fixed array (no allocation), read under a reader lock by
//! every received packet and written only when the host replaces it
//! ([`crate::device::SoftRnic::set_addresses`]). How the rest of the device uses it is
//! written down once, in [`crate::cm`]'s "Addresses" section.

use core::net::IpAddr;

use hwq::device::DeviceError;

/// Addresses a device holds at most.
pub const MAX_ADDRESSES: usize = 16;

/// A device's addresses: distinct, each a usable unicast address (see
/// [`AddressSet::new`]), in the order given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressSet {
    addrs: [IpAddr; MAX_ADDRESSES],
    len: usize,
}

impl Default for AddressSet {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// Whether `ip` may be one of a device's addresses: not unspecified,
/// multicast, IPv4 broadcast, or IPv4-mapped IPv6.
pub fn usable_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !v4.is_unspecified() && !v4.is_broadcast() && !v4.is_multicast(),
        IpAddr::V6(v6) => {
            !v6.is_unspecified() && !v6.is_multicast() && v6.to_ipv4_mapped().is_none()
        }
    }
}

/// Leading bits `a` and `b` share (0 for addresses of different
/// families).
fn common_prefix(a: IpAddr, b: IpAddr) -> u32 {
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (a.to_bits() ^ b.to_bits()).leading_zeros(),
        (IpAddr::V6(a), IpAddr::V6(b)) => (a.to_bits() ^ b.to_bits()).leading_zeros(),
        _ => 0,
    }
}

impl AddressSet {
    /// No address.
    pub const EMPTY: Self = Self {
        addrs: [IpAddr::V4(core::net::Ipv4Addr::UNSPECIFIED); MAX_ADDRESSES],
        len: 0,
    };

    /// The set of `addrs` (repeats folded). `InvalidAddress` if one is not
    /// a usable unicast address ([`usable_unicast`]), `NoResources` if
    /// there are more than [`MAX_ADDRESSES`] distinct ones.
    pub fn new(addrs: &[IpAddr]) -> Result<Self, DeviceError> {
        let mut set = Self::EMPTY;
        for &ip in addrs {
            if !usable_unicast(ip) {
                return Err(DeviceError::InvalidAddress);
            }
            if set.contains(ip) {
                continue;
            }
            let slot = set.addrs.get_mut(set.len).ok_or(DeviceError::NoResources)?;
            *slot = ip;
            set.len += 1;
        }
        Ok(set)
    }

    /// The set a device built with `addr` starts with: that address, or
    /// nothing if it is unspecified (addresses come later).
    pub(crate) fn initial(addr: IpAddr) -> Self {
        Self::new(&[addr]).unwrap_or(Self::EMPTY)
    }

    /// The addresses, in the order given.
    pub fn as_slice(&self) -> &[IpAddr] {
        self.addrs.get(..self.len).unwrap_or_default()
    }

    /// Whether the set holds no address.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `ip` is one of the addresses.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.as_slice().contains(&ip)
    }

    /// Whether the set holds an IPv4 address (`v4`) or an IPv6 one.
    pub fn has_family(&self, v4: bool) -> bool {
        self.as_slice().iter().any(|a| a.is_ipv4() == v4)
    }

    /// The source address for talking to `remote`: of its family, the one
    /// sharing the longest prefix with it (the first such on a tie, so the
    /// first of the family when none shares a bit). `None` if the set has
    /// no address of that family.
    pub fn source_for(&self, remote: IpAddr) -> Option<IpAddr> {
        let mut best: Option<(IpAddr, u32)> = None;
        for &a in self.as_slice() {
            if a.is_ipv4() != remote.is_ipv4() {
                continue;
            }
            let shared = common_prefix(a, remote);
            if best.is_none_or(|(_, b)| shared > b) {
                best = Some((a, shared));
            }
        }
        best.map(|(a, _)| a)
    }
}

/// The bits of an address folded into 64 (a seed's and a made-up GUID's
/// ingredient: distinct devices of one fabric get distinct values).
pub(crate) fn addr_bits(addr: IpAddr) -> u64 {
    match addr {
        IpAddr::V4(v4) => u64::from(v4.to_bits()),
        IpAddr::V6(v6) => {
            let bits = v6.to_bits();
            (bits >> 64) as u64 ^ bits as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn sets_fold_repeats_and_refuse_what_is_not_unicast() {
        let s = AddressSet::new(&[ip("10.0.0.1"), ip("fd00::1"), ip("10.0.0.1")]).unwrap();
        assert_eq!(s.as_slice(), [ip("10.0.0.1"), ip("fd00::1")]);
        assert!(s.has_family(true) && s.has_family(false));
        for bad in [
            "0.0.0.0",
            "::",
            "255.255.255.255",
            "224.0.0.1",
            "ff02::1",
            "::ffff:10.0.0.1",
        ] {
            assert_eq!(
                AddressSet::new(&[ip("10.0.0.1"), ip(bad)]),
                Err(DeviceError::InvalidAddress),
                "{bad}"
            );
        }
        let many: alloc::vec::Vec<IpAddr> = (0..=MAX_ADDRESSES as u8)
            .map(|i| IpAddr::V4(Ipv4Addr::new(10, 0, 1, i)))
            .collect();
        assert!(AddressSet::new(&many[..MAX_ADDRESSES]).is_ok());
        assert_eq!(AddressSet::new(&many), Err(DeviceError::NoResources));
        assert!(AddressSet::initial(Ipv6Addr::UNSPECIFIED.into()).is_empty());
        assert_eq!(
            AddressSet::initial(ip("10.0.0.1")).as_slice(),
            [ip("10.0.0.1")]
        );
    }

    #[test]
    fn the_source_shares_the_longest_prefix_else_is_the_first_of_the_family() {
        let s = AddressSet::new(&[
            ip("fe80::1"),
            ip("192.168.1.7"),
            ip("fd00:5253::1"),
            ip("198.18.0.1"),
        ])
        .unwrap();
        assert_eq!(s.source_for(ip("fd00:5253::2")), Some(ip("fd00:5253::1")));
        assert_eq!(s.source_for(ip("fe80::9")), Some(ip("fe80::1")));
        assert_eq!(s.source_for(ip("198.18.0.2")), Some(ip("198.18.0.1")));
        assert_eq!(s.source_for(ip("192.168.1.1")), Some(ip("192.168.1.7")));
        // No bit in common with either IPv4 address: the first IPv4 one.
        assert_eq!(s.source_for(ip("10.0.0.1")), Some(ip("192.168.1.7")));
        assert_eq!(s.source_for(ip("2001:db8::1")), Some(ip("fe80::1")));
        let v4 = AddressSet::new(&[ip("10.0.0.1")]).unwrap();
        assert_eq!(v4.source_for(ip("fd00::2")), None);
        assert_eq!(AddressSet::EMPTY.source_for(ip("10.0.0.2")), None);
    }
}

//! The port's own addresses with their on-link prefix lengths: which
//! received datagrams are the RNIC's, and which address a neighbour
//! request is sent from.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::addresses::{MAX_ADDRESSES, usable_unicast};

/// Up to [`MAX_ADDRESSES`] unicast addresses and prefix lengths.
#[derive(Clone, Copy, Debug)]
pub(super) struct OwnAddresses {
    addrs: [(IpAddr, u8); MAX_ADDRESSES],
    len: usize,
}

/// Whether `a` and `b` share their first `prefix_len` bits (of one
/// family).
fn on_prefix(a: IpAddr, b: IpAddr, prefix_len: u8) -> bool {
    let len = u32::from(prefix_len);
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => 32u32.checked_sub(len).is_some_and(|shift| {
            let mask = u32::MAX.checked_shl(shift).unwrap_or(0);
            (a.to_bits() ^ b.to_bits()) & mask == 0
        }),
        (IpAddr::V6(a), IpAddr::V6(b)) => 128u32.checked_sub(len).is_some_and(|shift| {
            let mask = u128::MAX.checked_shl(shift).unwrap_or(0);
            (a.to_bits() ^ b.to_bits()) & mask == 0
        }),
        _ => false,
    }
}

/// Whether `ip` is an IPv6 link-local unicast address (fe80::/10).
fn is_link_local(ip: Ipv6Addr) -> bool {
    ip.segments()[0] & 0xffc0 == 0xfe80
}

impl OwnAddresses {
    pub const EMPTY: Self = Self {
        addrs: [(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0); MAX_ADDRESSES],
        len: 0,
    };

    /// The usable ones of `addrs` (unicast, a prefix length within the
    /// family's, not seen before), the first [`MAX_ADDRESSES`] of them.
    pub fn new(addrs: &[(IpAddr, u8)]) -> Self {
        let mut own = Self::EMPTY;
        for &(ip, prefix_len) in addrs {
            let max_len = if ip.is_ipv4() { 32 } else { 128 };
            if !usable_unicast(ip) || prefix_len > max_len || own.contains(ip) {
                continue;
            }
            let Some(slot) = own.addrs.get_mut(own.len) else {
                break;
            };
            *slot = (ip, prefix_len);
            own.len += 1;
        }
        own
    }

    pub fn as_slice(&self) -> &[(IpAddr, u8)] {
        self.addrs.get(..self.len).unwrap_or_default()
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.as_slice().iter().any(|&(a, _)| a == ip)
    }

    /// The address an ARP request for `target` goes from: `hint` (the
    /// datagram's source) if it is ours, else ours on `target`'s prefix,
    /// else our first IPv4 address.
    pub fn arp_source(&self, target: Ipv4Addr, hint: Option<IpAddr>) -> Option<Ipv4Addr> {
        let v4 = |&(a, len): &(IpAddr, u8)| match a {
            IpAddr::V4(a) => Some((a, len)),
            IpAddr::V6(_) => None,
        };
        let mine = self.as_slice().iter().filter_map(v4);
        if let Some(IpAddr::V4(h)) = hint
            && self.contains(h.into())
        {
            return Some(h);
        }
        mine.clone()
            .find(|&(a, len)| on_prefix(a.into(), target.into(), len))
            .or_else(|| mine.clone().next())
            .map(|(a, _)| a)
    }

    /// The address a Neighbor Solicitation goes from (RFC 4861 §7.2.2):
    /// `hint` (the source of the datagram that prompted it) if it is
    /// ours, so the neighbour learns the address it will answer; else our
    /// link-local address; else our first IPv6 address.
    pub fn solicitation_source(&self, hint: Option<IpAddr>) -> Option<Ipv6Addr> {
        if let Some(IpAddr::V6(h)) = hint
            && self.contains(h.into())
        {
            return Some(h);
        }
        let mut mine = self.as_slice().iter().filter_map(|&(a, _)| match a {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        });
        mine.clone()
            .find(|&a| is_link_local(a))
            .or_else(|| mine.next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn unusable_entries_are_skipped_and_the_set_is_bounded() {
        let own = OwnAddresses::new(&[
            (ip("198.18.0.1"), 15),
            (ip("0.0.0.0"), 8),
            (ip("198.18.0.9"), 33),
            (ip("ff02::1"), 64),
            (ip("198.18.0.1"), 24),
            (ip("fd00:5253::1"), 64),
        ]);
        assert_eq!(
            own.as_slice(),
            [(ip("198.18.0.1"), 15), (ip("fd00:5253::1"), 64)]
        );
        let many: alloc::vec::Vec<(IpAddr, u8)> = (0..40u8)
            .map(|i| (IpAddr::from([10, 0, 0, i + 1]), 24))
            .collect();
        assert_eq!(OwnAddresses::new(&many).as_slice().len(), MAX_ADDRESSES);
    }

    #[test]
    fn request_sources_follow_hint_prefix_and_scope() {
        let own = OwnAddresses::new(&[
            (ip("192.168.7.1"), 24),
            (ip("198.18.0.1"), 15),
            (ip("fd00:5253::1"), 64),
            (ip("fe80::1"), 64),
        ]);
        let v4 = |s: &str| -> Ipv4Addr { s.parse().unwrap() };
        assert_eq!(
            own.arp_source(v4("198.19.3.4"), None),
            Some(v4("198.18.0.1"))
        );
        assert_eq!(
            own.arp_source(v4("10.1.1.1"), None),
            Some(v4("192.168.7.1"))
        );
        assert_eq!(
            own.arp_source(v4("192.168.7.2"), Some(ip("198.18.0.1"))),
            Some(v4("198.18.0.1")),
            "the datagram's own source first"
        );
        assert_eq!(
            own.arp_source(v4("192.168.7.2"), Some(ip("10.9.9.9"))),
            Some(v4("192.168.7.1")),
            "a hint not ours is ignored"
        );
        assert_eq!(
            own.solicitation_source(Some(ip("fd00:5253::1"))),
            Some("fd00:5253::1".parse().unwrap()),
            "the prompting datagram's source"
        );
        assert_eq!(
            own.solicitation_source(Some(ip("fd00:5253::9"))),
            Some("fe80::1".parse().unwrap()),
            "else link-local"
        );
        assert_eq!(
            own.solicitation_source(None),
            Some("fe80::1".parse().unwrap())
        );
        let global = OwnAddresses::new(&[(ip("fd00::1"), 64), (ip("fd00:5253::1"), 64)]);
        assert_eq!(
            global.solicitation_source(Some(ip("fd00:5253::1"))),
            Some("fd00:5253::1".parse().unwrap())
        );
        assert_eq!(
            global.solicitation_source(None),
            Some("fd00::1".parse().unwrap())
        );
        let v4_only = OwnAddresses::new(&[(ip("10.0.0.1"), 8)]);
        assert_eq!(v4_only.solicitation_source(None), None);
        assert_eq!(OwnAddresses::EMPTY.arp_source(v4("10.0.0.2"), None), None);
        assert!(on_prefix(ip("10.0.0.1"), ip("11.0.0.1"), 0));
        assert!(!on_prefix(ip("10.0.0.1"), ip("10.0.0.2"), 32));
        assert!(on_prefix(ip("fd00::1"), ip("fd00::1"), 128));
        assert!(!on_prefix(ip("10.0.0.1"), ip("10.0.0.1"), 33));
        assert!(!on_prefix(ip("10.0.0.1"), ip("fd00::1"), 0));
    }
}

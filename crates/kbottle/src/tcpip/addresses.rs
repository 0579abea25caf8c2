//! One interface's unicast address table: each address with its on-link
//! prefix length, duplicate address detection state and origins, as
//! `MIB_UNICASTIPADDRESS_ROW` reports them (netioapi.h, nldef.h).

use std::net::IpAddr;
use std::time::Instant;

use super::ipv6;

/// `NL_DAD_STATE` (nldef.h): where an address is in duplicate address
/// detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum DadState {
    /// `IpDadStateInvalid`.
    Invalid = 0,
    /// `IpDadStateTentative`: DAD runs (or the link is down); not usable.
    Tentative = 1,
    /// `IpDadStateDuplicate`: another node has it; not usable.
    Duplicate = 2,
    /// `IpDadStateDeprecated`: usable, not chosen as a source.
    Deprecated = 3,
    /// `IpDadStatePreferred`: usable.
    Preferred = 4,
}

/// `NL_PREFIX_ORIGIN` (nldef.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum PrefixOrigin {
    /// `IpPrefixOriginManual`: configured by hand.
    Manual = 1,
    /// `IpPrefixOriginWellKnown`: link-local, loopback.
    WellKnown = 2,
}

/// `NL_SUFFIX_ORIGIN` (nldef.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum SuffixOrigin {
    /// `NlsoManual`: configured by hand.
    Manual = 1,
    /// `NlsoWellKnown`: loopback.
    WellKnown = 2,
    /// `NlsoLinkLayerAddress`: the EUI-64 identifier from the MAC.
    LinkLayerAddress = 4,
}

/// One unicast address of an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    /// The address.
    pub ip: IpAddr,
    /// `OnLinkPrefixLength`.
    pub prefix_len: u8,
    /// `DadState`.
    pub dad: DadState,
    /// `PrefixOrigin`.
    pub prefix_origin: PrefixOrigin,
    /// `SuffixOrigin`.
    pub suffix_origin: SuffixOrigin,
    /// `CreationTimeStamp`: system time (100 ns units since 1601).
    pub created: i64,
    /// When a tentative IPv6 address becomes preferred (its DAD ends).
    pub dad_ends: Option<Instant>,
}

impl Address {
    /// Whether the address is assigned (may be a packet's destination or
    /// source): preferred or deprecated.
    pub fn is_assigned(&self) -> bool {
        matches!(self.dad, DadState::Preferred | DadState::Deprecated)
    }

    /// Whether `other` is on this address's prefix.
    pub fn on_link(&self, other: IpAddr) -> bool {
        match (self.ip, other) {
            (IpAddr::V4(a), IpAddr::V4(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix_len),
            (IpAddr::V6(a), IpAddr::V6(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix_len),
            _ => false,
        }
    }
}

/// Whether the first `len` bits of `a` and `b` agree.
fn prefix_eq(a: &[u8], b: &[u8], len: u8) -> bool {
    let len = usize::from(len);
    let bytes = len / 8;
    let bits = len % 8;
    if a.get(..bytes) != b.get(..bytes) {
        return false;
    }
    if bits == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - bits);
    match (a.get(bytes), b.get(bytes)) {
        (Some(x), Some(y)) => x & mask == y & mask,
        _ => false,
    }
}

/// Why an address cannot be added.
pub fn check_new(ip: IpAddr, prefix_len: u8) -> Result<(), String> {
    let (max, bad) = match ip {
        IpAddr::V4(a) => (
            32,
            a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a.is_loopback(),
        ),
        IpAddr::V6(a) => (
            128,
            a.is_unspecified() || a.is_multicast() || a.is_loopback(),
        ),
    };
    if bad {
        return Err(format!(
            "{ip} is not a unicast address an interface can hold"
        ));
    }
    if prefix_len > max {
        return Err(format!(
            "prefix length {prefix_len} is longer than {max} for {ip}"
        ));
    }
    Ok(())
}

/// An interface's addresses, in the order they were added.
#[derive(Clone, Debug, Default)]
pub struct AddressTable {
    entries: Vec<Address>,
}

impl AddressTable {
    /// Adds `address`; an error if the interface holds that address.
    pub fn add(&mut self, address: Address) -> Result<(), String> {
        if self.get(address.ip).is_some() {
            return Err(format!(
                "{} is already an address of the interface",
                address.ip
            ));
        }
        self.entries.push(address);
        Ok(())
    }

    /// Removes `ip`; the entry it was.
    pub fn remove(&mut self, ip: IpAddr) -> Option<Address> {
        let at = self.entries.iter().position(|a| a.ip == ip)?;
        Some(self.entries.remove(at))
    }

    /// The entry of `ip`.
    pub fn get(&self, ip: IpAddr) -> Option<&Address> {
        self.entries.iter().find(|a| a.ip == ip)
    }

    /// The entry of `ip`, to change.
    pub fn get_mut(&mut self, ip: IpAddr) -> Option<&mut Address> {
        self.entries.iter_mut().find(|a| a.ip == ip)
    }

    /// Every entry.
    pub fn iter(&self) -> impl Iterator<Item = &Address> {
        self.entries.iter()
    }

    /// Every entry, to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Address> {
        self.entries.iter_mut()
    }

    /// Whether `ip` is assigned (preferred or deprecated).
    pub fn is_assigned(&self, ip: IpAddr) -> bool {
        self.get(ip).is_some_and(Address::is_assigned)
    }

    /// Whether `dst` is on the link: on an assigned address's prefix,
    /// or IPv6 link-local.
    pub fn on_link(&self, dst: IpAddr) -> bool {
        match dst {
            IpAddr::V6(d) if ipv6::is_link_local(d) => true,
            _ => self
                .entries
                .iter()
                .any(|a| a.is_assigned() && a.on_link(dst)),
        }
    }

    /// The source address for `dst` (a much reduced RFC 6724): a
    /// preferred address of its family, link-local for a link-local
    /// destination, else one on `dst`'s prefix, else a global one, else
    /// any; `None` if the interface has no assigned address of the family.
    pub fn source_for(&self, dst: IpAddr) -> Option<IpAddr> {
        let usable = |a: &&Address| a.dad == DadState::Preferred && a.ip.is_ipv4() == dst.is_ipv4();
        let is_ll = |ip: IpAddr| matches!(ip, IpAddr::V6(v) if ipv6::is_link_local(v));
        let candidates: Vec<&Address> = self.entries.iter().filter(usable).collect();
        if is_ll(dst) {
            if let Some(a) = candidates.iter().find(|a| is_ll(a.ip)) {
                return Some(a.ip);
            }
        }
        candidates
            .iter()
            .find(|a| a.on_link(dst) && !is_ll(a.ip))
            .or_else(|| candidates.iter().find(|a| !is_ll(a.ip)))
            .or_else(|| candidates.first())
            .map(|a| a.ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ip: &str, prefix_len: u8, dad: DadState) -> Address {
        Address {
            ip: ip.parse().unwrap(),
            prefix_len,
            dad,
            prefix_origin: PrefixOrigin::Manual,
            suffix_origin: SuffixOrigin::Manual,
            created: 0,
            dad_ends: None,
        }
    }

    #[test]
    fn prefixes_compare_by_bits() {
        let a = entry("198.18.0.1", 15, DadState::Preferred);
        assert!(a.on_link("198.19.255.1".parse().unwrap()));
        assert!(!a.on_link("198.20.0.1".parse().unwrap()));
        assert!(!a.on_link("fd00:5253::1".parse().unwrap()));
        let b = entry("fd00:5253::1", 64, DadState::Preferred);
        assert!(b.on_link("fd00:5253::ffff".parse().unwrap()));
        assert!(!b.on_link("fd00:5254::1".parse().unwrap()));
        assert!(entry("198.18.0.1", 0, DadState::Preferred).on_link("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn bad_addresses_and_prefixes_are_refused_and_duplicates_too() {
        assert!(check_new("224.0.0.1".parse().unwrap(), 24).is_err());
        assert!(check_new("::".parse().unwrap(), 64).is_err());
        assert!(check_new("198.18.0.1".parse().unwrap(), 33).is_err());
        assert!(check_new("fd00:5253::1".parse().unwrap(), 129).is_err());
        assert!(check_new("fd00:5253::1".parse().unwrap(), 64).is_ok());
        let mut t = AddressTable::default();
        t.add(entry("198.18.0.1", 15, DadState::Preferred)).unwrap();
        assert!(t.add(entry("198.18.0.1", 24, DadState::Preferred)).is_err());
        assert_eq!(
            t.remove("198.18.0.1".parse().unwrap())
                .map(|a| a.prefix_len),
            Some(15)
        );
        assert!(t.remove("198.18.0.1".parse().unwrap()).is_none());
    }

    #[test]
    fn sources_are_preferred_addresses_of_the_family_and_scope() {
        let mut t = AddressTable::default();
        t.add(entry("fe80::1", 64, DadState::Preferred)).unwrap();
        t.add(entry("fd00:5253::1", 64, DadState::Tentative))
            .unwrap();
        t.add(entry("198.18.0.1", 15, DadState::Preferred)).unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(t.source_for(ip("198.18.0.9")), Some(ip("198.18.0.1")));
        assert_eq!(t.source_for(ip("fe80::2")), Some(ip("fe80::1")));
        // The global one is tentative: only the link-local is usable.
        assert_eq!(t.source_for(ip("fd00:5253::2")), Some(ip("fe80::1")));
        t.get_mut(ip("fd00:5253::1")).unwrap().dad = DadState::Preferred;
        assert_eq!(t.source_for(ip("fd00:5253::2")), Some(ip("fd00:5253::1")));
        assert!(t.on_link(ip("fd00:5253::2")) && !t.on_link(ip("fd00:1::2")));
        assert!(t.is_assigned(ip("198.18.0.1")) && !t.is_assigned(ip("198.18.0.2")));
    }
}

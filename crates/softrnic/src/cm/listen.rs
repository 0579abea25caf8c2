//! Listeners and local ports.
//!
//! A listener is bound to one of the device's addresses or to a wildcard:
//! `0.0.0.0` covers the IPv4 addresses, `::` all of them. Two listeners on
//! one port conflict when their addresses are equal or one covers the
//! other (listeners on two different addresses may share a port, as a
//! server listening on each of a host's addresses does). Ephemeral ports
//! (49152–65535) are reference-counted by the listeners and outbound
//! connections that hold them; a port is handed out only when nothing
//! holds it, whatever the address.

use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

use super::{EPHEMERAL_PORTS, slot_id, slot_index};

#[derive(Clone, Copy, Debug)]
struct Listener {
    generation: u16,
    live: bool,
    paused: bool,
    addr: SocketAddr,
}

/// Listener table and port references.
#[derive(Debug)]
pub(crate) struct Listeners {
    slots: Vec<Listener>,
    /// References per ephemeral port (index: port − 49152).
    port_refs: Vec<u16>,
    /// Where the next ephemeral search starts.
    cursor: u16,
}

/// Whether a listener bound to `bound` takes what arrives for `ip`: the
/// same address, or a wildcard of its family (`::` takes IPv4 too).
fn covers(bound: IpAddr, ip: IpAddr) -> bool {
    bound == ip || (bound.is_unspecified() && (bound.is_ipv6() || ip.is_ipv4()))
}

fn ephemeral_index(port: u16) -> Option<usize> {
    EPHEMERAL_PORTS
        .contains(&port)
        .then(|| usize::from(port - EPHEMERAL_PORTS.start()))
}

impl Listeners {
    pub fn new(capacity: u32, cursor: u32) -> Option<Self> {
        let mut slots = Vec::new();
        slots.try_reserve_exact(capacity as usize).ok()?;
        slots.resize(
            capacity as usize,
            Listener {
                generation: 0,
                live: false,
                paused: false,
                addr: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)),
            },
        );
        let span = usize::from(EPHEMERAL_PORTS.end() - EPHEMERAL_PORTS.start()) + 1;
        let mut port_refs = Vec::new();
        port_refs.try_reserve_exact(span).ok()?;
        port_refs.resize(span, 0);
        Some(Self {
            slots,
            port_refs,
            cursor: (cursor as usize % span) as u16,
        })
    }

    /// Takes a reference on `port` (no-op outside the ephemeral range).
    pub fn hold_port(&mut self, port: u16) {
        if let Some(r) = ephemeral_index(port).and_then(|i| self.port_refs.get_mut(i)) {
            *r = r.saturating_add(1);
        }
    }

    /// Drops a reference on `port`.
    pub fn release_port(&mut self, port: u16) {
        if let Some(r) = ephemeral_index(port).and_then(|i| self.port_refs.get_mut(i)) {
            *r = r.saturating_sub(1);
        }
    }

    /// A free ephemeral port, referenced for the caller.
    pub fn ephemeral_port(&mut self) -> Option<u16> {
        let span = self.port_refs.len();
        for step in 0..span {
            let i = (usize::from(self.cursor) + step) % span;
            if self.port_refs.get(i) == Some(&0) {
                self.cursor = ((i + 1) % span) as u16;
                let port = EPHEMERAL_PORTS.start() + i as u16;
                self.hold_port(port);
                return Some(port);
            }
        }
        None
    }

    /// Whether a live listener conflicts with one on `addr` (same port,
    /// addresses equal or one covering the other).
    pub fn port_taken(&self, addr: SocketAddr) -> bool {
        self.slots.iter().any(|l| {
            l.live
                && l.addr.port() == addr.port()
                && (covers(l.addr.ip(), addr.ip()) || covers(addr.ip(), l.addr.ip()))
        })
    }

    /// Adds a listener on `addr` (port already chosen and referenced);
    /// returns its id, or `None` if the table is full.
    pub fn add(&mut self, addr: SocketAddr) -> Option<u32> {
        let (index, slot) = self.slots.iter_mut().enumerate().find(|(_, l)| !l.live)?;
        slot.live = true;
        slot.paused = false;
        slot.addr = addr;
        Some(slot_id(index, slot.generation))
    }

    fn get(&mut self, id: u32) -> Option<&mut Listener> {
        let index = slot_index(id)?;
        let slot = self.slots.get_mut(index)?;
        (slot.live && slot_id(index, slot.generation) == id).then_some(slot)
    }

    /// Pauses or resumes listener `id`.
    pub fn pause(&mut self, id: u32, paused: bool) {
        if let Some(l) = self.get(id) {
            l.paused = paused;
        }
    }

    /// Removes listener `id`; returns the port it held.
    pub fn remove(&mut self, id: u32) -> Option<u16> {
        let l = self.get(id)?;
        l.live = false;
        l.generation = l.generation.wrapping_add(1);
        let port = l.addr.port();
        self.release_port(port);
        Some(port)
    }

    /// The active (not paused) listener for `port` on address `ip`.
    pub fn find(&self, ip: IpAddr, port: u16) -> Option<u32> {
        self.slots.iter().enumerate().find_map(|(index, l)| {
            let matches = l.live && !l.paused && l.addr.port() == port && covers(l.addr.ip(), ip);
            matches.then(|| slot_id(index, l.generation))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ephemeral_ports_exhaust_and_come_back() {
        let mut l = Listeners::new(4, 12_345).unwrap();
        l.hold_port(50_000);
        let mut got = alloc::vec::Vec::new();
        while let Some(p) = l.ephemeral_port() {
            assert_ne!(p, 50_000);
            got.push(p);
        }
        assert_eq!(got.len(), 16_384 - 1);
        l.release_port(got[7]);
        assert_eq!(l.ephemeral_port(), Some(got[7]));
        assert_eq!(l.ephemeral_port(), None);
        // Ports outside the range are not counted.
        l.hold_port(80);
        l.release_port(80);
    }

    #[test]
    fn paused_and_removed_listeners_are_not_found() {
        let mut l = Listeners::new(2, 0).unwrap();
        let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let a = l
            .add(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 80))
            .unwrap();
        assert_eq!(l.find(ip, 80), Some(a));
        l.pause(a, true);
        assert_eq!(l.find(ip, 80), None);
        l.pause(a, false);
        assert_eq!(l.remove(a), Some(80));
        assert_eq!(l.find(ip, 80), None);
        assert_eq!(l.remove(a), None, "stale id");
        let b = l.add(SocketAddr::new(ip, 81)).unwrap();
        assert_ne!(a, b);
        assert_eq!(l.find(Ipv4Addr::new(10, 0, 0, 2).into(), 81), None);
    }

    #[test]
    fn ipv6_listeners_match_their_address_or_any() {
        let mut l = Listeners::new(2, 0).unwrap();
        let own: IpAddr = "fd00::1".parse().unwrap();
        let any = l
            .add(SocketAddr::new(core::net::Ipv6Addr::UNSPECIFIED.into(), 90))
            .unwrap();
        let exact = l.add(SocketAddr::new(own, 91)).unwrap();
        assert_eq!(l.find(own, 90), Some(any));
        assert_eq!(l.find(own, 91), Some(exact));
        assert_eq!(l.find("fd00::2".parse().unwrap(), 91), None);
    }

    #[test]
    fn wildcards_cover_their_family_and_addresses_share_ports() {
        let mut l = Listeners::new(8, 0).unwrap();
        let sa = |s: &str| -> SocketAddr { s.parse().unwrap() };
        let v4 = l.add(sa("0.0.0.0:80")).unwrap();
        assert_eq!(l.find("10.0.0.1".parse().unwrap(), 80), Some(v4));
        assert_eq!(l.find("fd00::1".parse().unwrap(), 80), None);
        // `0.0.0.0` conflicts with IPv4 listeners and `::`, not with an
        // IPv6 address.
        assert!(l.port_taken(sa("10.0.0.1:80")));
        assert!(l.port_taken(sa("[::]:80")));
        assert!(!l.port_taken(sa("[fd00::1]:80")));
        let v6 = l.add(sa("[fd00::1]:80")).unwrap();
        assert_eq!(l.find("fd00::1".parse().unwrap(), 80), Some(v6));
        // Two addresses on one port; `::` covers both.
        let a = l.add(sa("10.0.0.1:81")).unwrap();
        assert!(!l.port_taken(sa("10.0.0.2:81")));
        let b = l.add(sa("10.0.0.2:81")).unwrap();
        assert!(l.port_taken(sa("[::]:81")));
        assert_eq!(l.find("10.0.0.1".parse().unwrap(), 81), Some(a));
        assert_eq!(l.find("10.0.0.2".parse().unwrap(), 81), Some(b));
        let any = l.add(sa("[::]:82")).unwrap();
        assert!(l.port_taken(sa("10.0.0.1:82")) && l.port_taken(sa("[fd00::1]:82")));
        assert_eq!(l.find("10.0.0.1".parse().unwrap(), 82), Some(any));
        assert_eq!(l.find("fd00::1".parse().unwrap(), 82), Some(any));
    }
}

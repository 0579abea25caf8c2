//! One interface's neighbour cache (ARP cache for IPv4, RFC 4861's
//! neighbor cache for IPv6), with the packets held while an address is
//! resolved.
//!
//! The model is reduced: an entry is incomplete (being resolved, up to
//! [`MAX_PROBES`] solicitations [`RETRANS`] apart, then dropped with
//! what it held) or reachable (kept until the link goes down or the
//! interface goes away; a newer ARP or override NA replaces its MAC).
//! There is no unreachability detection of reachable entries.

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Solicitations sent for one resolution (Windows' default too).
pub const MAX_PROBES: u32 = 3;
/// Time between solicitations: shorter than Windows' 1 s, so that a test
/// waiting for a peer that is not there ends sooner.
pub const RETRANS: Duration = Duration::from_millis(500);
/// Packets held per incomplete entry; the oldest is dropped beyond it.
pub const HELD_PER_ENTRY: usize = 4;

#[derive(Clone, Debug)]
enum Entry {
    Incomplete {
        /// IP datagrams waiting for the MAC.
        held: VecDeque<Vec<u8>>,
        /// Solicitations sent.
        probes: u32,
        /// When the next one is due.
        next: Instant,
    },
    Reachable([u8; 6]),
}

/// The cache.
#[derive(Clone, Debug, Default)]
pub struct NeighbourCache {
    entries: BTreeMap<IpAddr, Entry>,
}

impl NeighbourCache {
    /// The MAC of `ip`, if resolved.
    pub fn lookup(&self, ip: IpAddr) -> Option<[u8; 6]> {
        match self.entries.get(&ip) {
            Some(Entry::Reachable(mac)) => Some(*mac),
            _ => None,
        }
    }

    /// Whether `ip` has an entry (resolved or not).
    pub fn knows(&self, ip: IpAddr) -> bool {
        self.entries.contains_key(&ip)
    }

    /// Records that `ip` is at `mac`; the datagrams it held, to send now.
    pub fn learn(&mut self, ip: IpAddr, mac: [u8; 6]) -> Vec<Vec<u8>> {
        match self.entries.insert(ip, Entry::Reachable(mac)) {
            Some(Entry::Incomplete { held, .. }) => held.into(),
            _ => Vec::new(),
        }
    }

    /// Holds `datagram` for `ip`; whether a resolution starts (the caller
    /// sends the first solicitation).
    pub fn hold(&mut self, ip: IpAddr, datagram: Vec<u8>, now: Instant) -> bool {
        match self.entries.get_mut(&ip) {
            Some(Entry::Incomplete { held, .. }) => {
                if held.len() == HELD_PER_ENTRY {
                    held.pop_front();
                }
                held.push_back(datagram);
                false
            }
            Some(Entry::Reachable(_)) => false,
            None => {
                self.entries.insert(
                    ip,
                    Entry::Incomplete {
                        held: VecDeque::from([datagram]),
                        probes: 1,
                        next: now + RETRANS,
                    },
                );
                true
            }
        }
    }

    /// Resolutions whose next solicitation is due: they are counted and
    /// returned (to solicit again); those that ran out of probes are
    /// dropped with what they held.
    pub fn due(&mut self, now: Instant) -> Vec<IpAddr> {
        let mut again = Vec::new();
        self.entries.retain(|ip, e| match e {
            Entry::Incomplete { probes, next, .. } if *next <= now => {
                if *probes >= MAX_PROBES {
                    return false;
                }
                *probes += 1;
                *next = now + RETRANS;
                again.push(*ip);
                true
            }
            _ => true,
        });
        again
    }

    /// When the next solicitation is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.entries
            .values()
            .filter_map(|e| match e {
                Entry::Incomplete { next, .. } => Some(*next),
                Entry::Reachable(_) => None,
            })
            .min()
    }

    /// Resolved entries.
    pub fn resolved(&self) -> Vec<(IpAddr, [u8; 6])> {
        self.entries
            .iter()
            .filter_map(|(ip, e)| match e {
                Entry::Reachable(mac) => Some((*ip, *mac)),
                Entry::Incomplete { .. } => None,
            })
            .collect()
    }

    /// Forgets everything (link down).
    pub fn flush(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_packets_leave_when_the_address_is_learnt() {
        let mut c = NeighbourCache::default();
        let ip: IpAddr = "198.18.0.2".parse().unwrap();
        let now = Instant::now();
        assert!(c.hold(ip, vec![1], now));
        assert!(!c.hold(ip, vec![2], now), "one resolution at a time");
        assert!(c.knows(ip) && c.lookup(ip).is_none());
        assert_eq!(c.learn(ip, [2; 6]), vec![vec![1], vec![2]]);
        assert_eq!(c.lookup(ip), Some([2; 6]));
        assert_eq!(c.resolved(), vec![(ip, [2; 6])]);
    }

    #[test]
    fn resolutions_give_up_after_the_last_probe() {
        let mut c = NeighbourCache::default();
        let ip: IpAddr = "fd00:5253::2".parse().unwrap();
        let t0 = Instant::now();
        c.hold(ip, vec![0], t0);
        for n in 0..HELD_PER_ENTRY + 2 {
            c.hold(ip, vec![n as u8], t0);
        }
        assert_eq!(c.due(t0), Vec::<IpAddr>::new(), "not due yet");
        assert_eq!(c.next_deadline(), Some(t0 + RETRANS));
        let mut t = t0;
        for _ in 1..MAX_PROBES {
            t += RETRANS;
            assert_eq!(c.due(t), vec![ip]);
        }
        t += RETRANS;
        assert!(c.due(t).is_empty());
        assert!(!c.knows(ip), "dropped after {MAX_PROBES} probes");
        assert_eq!(c.next_deadline(), None);
    }
}

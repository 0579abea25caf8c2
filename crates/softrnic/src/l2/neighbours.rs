//! The neighbour cache: which MAC address an IP address on the link has,
//! how fresh that is, when it was last asked for, and which held frame
//! waits for it. A fixed number of entries and held-frame slots,
//! allocated at creation; the caller locks it and keeps the held frames'
//! bytes. The policy is the module's ([`crate::l2`]).

use alloc::vec::Vec;
use core::net::IpAddr;

use crate::wire::ethernet::MacAddr;

/// How long a learnt address is used without question (µs).
pub const REACHABLE_US: u64 = 60_000_000;
/// How long after that it is still used while asked for again (µs).
pub const STALE_US: u64 = 5_000_000;
/// At most one solicitation per address per this long (µs).
pub const SOLICIT_INTERVAL_US: u64 = 1_000_000;
/// A held frame is dropped if its neighbour stays unknown this long (µs).
pub const HOLD_US: u64 = 3_000_000;

#[derive(Clone, Copy, Debug)]
struct Entry {
    ip: IpAddr,
    /// The learnt MAC address (`None`: asked for, not known).
    mac: Option<MacAddr>,
    /// When `mac` was learnt or last confirmed.
    confirmed_us: u64,
    /// When the entry was created or last learnt (eviction order).
    touched_us: u64,
    /// When it was last asked for.
    solicited_us: Option<u64>,
    /// The held frame slot waiting for it, and since when.
    held: Option<(usize, u64)>,
}

/// What sending to an address needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resolved {
    /// Send to this MAC address; `solicit`: also ask for the address
    /// again (it is stale).
    Known { mac: MacAddr, solicit: bool },
    /// Unknown: `solicit` says whether to ask now (the rate limit allows);
    /// `hold` is the slot to put the frame in (the caller fills it before
    /// letting go of the cache), or `None` to drop it.
    Unknown { solicit: bool, hold: Option<usize> },
}

/// What learning did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Learnt {
    /// Nothing: the address is not known and was not to be added.
    No,
    /// Learnt; `held` is the held frame slot that waited for it
    /// (detached: the caller sends its frame, then
    /// [`NeighbourCache::free_slot`]s it).
    Yes { held: Option<usize> },
}

/// The cache.
#[derive(Debug)]
pub(super) struct NeighbourCache {
    entries: Vec<Entry>,
    capacity: usize,
    /// Held-frame slots nobody uses.
    free_held: Vec<usize>,
    /// Held frames dropped with their evicted entry, not yet counted
    /// ([`NeighbourCache::take_evicted_holds`]).
    evicted_holds: u64,
}

impl NeighbourCache {
    /// A cache of `capacity` entries (at least 1) and `held` held-frame
    /// slots; `None` if memory ran out.
    pub fn new(capacity: usize, held: usize) -> Option<Self> {
        let capacity = capacity.max(1);
        let mut entries = Vec::new();
        entries.try_reserve_exact(capacity).ok()?;
        let mut free_held = Vec::new();
        free_held.try_reserve_exact(held).ok()?;
        free_held.extend((0..held).rev());
        Some(Self {
            entries,
            capacity,
            free_held,
            evicted_holds: 0,
        })
    }

    fn find(&self, ip: IpAddr) -> Option<usize> {
        self.entries.iter().position(|e| e.ip == ip)
    }

    /// The MAC address to send to `ip` at `now` without further ado: a
    /// learnt one still reachable.
    pub fn reachable(&self, ip: IpAddr, now: u64) -> Option<MacAddr> {
        let e = self.entries.get(self.find(ip)?)?;
        let mac = e.mac?;
        (now.saturating_sub(e.confirmed_us) < REACHABLE_US).then_some(mac)
    }

    /// The MAC address known for `ip` at `now` (reachable or stale).
    pub fn known(&self, ip: IpAddr, now: u64) -> Option<MacAddr> {
        let e = self.entries.get(self.find(ip)?)?;
        let mac = e.mac?;
        (now.saturating_sub(e.confirmed_us) < REACHABLE_US + STALE_US).then_some(mac)
    }

    /// The entry of `ip`, made if there is none (evicting the one touched
    /// longest ago when full; its held frame is dropped).
    fn entry(&mut self, ip: IpAddr, now: u64) -> Option<&mut Entry> {
        if let Some(i) = self.find(ip) {
            return self.entries.get_mut(i);
        }
        let fresh = Entry {
            ip,
            mac: None,
            confirmed_us: 0,
            touched_us: now,
            solicited_us: None,
            held: None,
        };
        if self.entries.len() < self.capacity {
            // Within the capacity reserved at creation.
            self.entries.push(fresh);
            return self.entries.last_mut();
        }
        let (index, _) = self
            .entries
            .iter()
            .enumerate()
            .min_by_key(|(_, e)| e.touched_us)?;
        let old = core::mem::replace(self.entries.get_mut(index)?, fresh);
        if let Some((slot, _)) = old.held {
            self.free_held.push(slot);
            self.evicted_holds += 1;
        }
        self.entries.get_mut(index)
    }

    /// Sending to `ip` at `now` (after [`NeighbourCache::reachable`] said
    /// no): what to do, by the module's policy. (Holds past their time
    /// should be dropped first: [`NeighbourCache::drop_stale_holds`].)
    pub fn resolve(&mut self, ip: IpAddr, now: u64) -> Resolved {
        let Some(i) = self.find(ip) else {
            return self.resolve_new(ip, now);
        };
        let Self {
            entries, free_held, ..
        } = self;
        let Some(e) = entries.get_mut(i) else {
            return Resolved::Unknown {
                solicit: false,
                hold: None,
            };
        };
        let due = e
            .solicited_us
            .is_none_or(|t| now.saturating_sub(t) >= SOLICIT_INTERVAL_US);
        if due {
            e.solicited_us = Some(now);
        }
        let age = now.saturating_sub(e.confirmed_us);
        match e.mac {
            Some(mac) if age < REACHABLE_US => Resolved::Known {
                mac,
                solicit: false,
            },
            Some(mac) if age < REACHABLE_US + STALE_US => Resolved::Known { mac, solicit: due },
            _ => {
                e.mac = None;
                let hold = match e.held {
                    Some(_) => None,
                    None => free_held.pop(),
                };
                if let Some(slot) = hold {
                    e.held = Some((slot, now));
                }
                Resolved::Unknown { solicit: due, hold }
            }
        }
    }

    fn resolve_new(&mut self, ip: IpAddr, now: u64) -> Resolved {
        let hold = self.free_held.pop();
        let Some(e) = self.entry(ip, now) else {
            if let Some(slot) = hold {
                self.free_held.push(slot);
            }
            return Resolved::Unknown {
                solicit: false,
                hold: None,
            };
        };
        e.solicited_us = Some(now);
        e.held = hold.map(|slot| (slot, now));
        Resolved::Unknown {
            solicit: true,
            hold,
        }
    }

    /// Gives up a held slot whose frame could not be stored or sent.
    pub fn unhold(&mut self, ip: IpAddr, slot: usize) {
        if let Some(e) = self.find(ip).and_then(|i| self.entries.get_mut(i))
            && e.held.is_some_and(|(s, _)| s == slot)
        {
            e.held = None;
        }
        self.free_slot(slot);
    }

    /// Returns a held slot (its frame sent or dropped) to the free list.
    pub fn free_slot(&mut self, slot: usize) {
        if !self.free_held.contains(&slot) && self.free_held.len() < self.free_held.capacity() {
            self.free_held.push(slot);
        }
    }

    /// Learns that `ip` has `mac` at `now`: updates its entry, or makes
    /// one if `create`.
    pub fn learn(&mut self, ip: IpAddr, mac: MacAddr, now: u64, create: bool) -> Learnt {
        if !create && self.find(ip).is_none() {
            return Learnt::No;
        }
        let Some(e) = self.entry(ip, now) else {
            return Learnt::No;
        };
        e.mac = Some(mac);
        e.confirmed_us = now;
        e.touched_us = now;
        e.solicited_us = None;
        Learnt::Yes {
            held: e.held.take().map(|(slot, _)| slot),
        }
    }

    /// Held frames dropped with evicted entries since the last call.
    pub fn take_evicted_holds(&mut self) -> u64 {
        core::mem::take(&mut self.evicted_holds)
    }

    /// Whether a frame from `ip` with `mac` at `now` would refresh its
    /// entry (known with that MAC address, and past half its reachable
    /// time): readers check before taking the lock for writing.
    pub fn wants_confirmation(&self, ip: IpAddr, mac: MacAddr, now: u64) -> bool {
        self.find(ip)
            .and_then(|i| self.entries.get(i))
            .is_some_and(|e| {
                e.mac == Some(mac) && now.saturating_sub(e.confirmed_us) >= REACHABLE_US / 2
            })
    }

    /// A frame from `ip` with `mac` at `now` shows it reachable: refreshes
    /// the entry if it has that MAC address.
    pub fn confirm(&mut self, ip: IpAddr, mac: MacAddr, now: u64) {
        if let Some(e) = self.find(ip).and_then(|i| self.entries.get_mut(i))
            && e.mac == Some(mac)
        {
            e.confirmed_us = now;
        }
    }

    /// Drops held frames waiting longer than [`HOLD_US`]; returns how
    /// many.
    pub fn drop_stale_holds(&mut self, now: u64) -> u64 {
        let mut dropped = 0;
        for e in &mut self.entries {
            if let Some((slot, since)) = e.held
                && now.saturating_sub(since) >= HOLD_US
            {
                e.held = None;
                // Room for every slot was reserved at creation.
                if self.free_held.len() < self.free_held.capacity() {
                    self.free_held.push(slot);
                }
                dropped += 1;
            }
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M1: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const M2: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn a_miss_asks_once_a_second_and_holds_one_frame() {
        let mut c = NeighbourCache::new(4, 1).unwrap();
        assert_eq!(c.reachable(ip(2), 0), None);
        assert_eq!(
            c.resolve(ip(2), 100),
            Resolved::Unknown {
                solicit: true,
                hold: Some(0)
            }
        );
        // Within the interval: no request, nothing more held.
        assert_eq!(
            c.resolve(ip(2), 100 + SOLICIT_INTERVAL_US - 1),
            Resolved::Unknown {
                solicit: false,
                hold: None
            }
        );
        assert_eq!(
            c.resolve(ip(2), 100 + SOLICIT_INTERVAL_US),
            Resolved::Unknown {
                solicit: true,
                hold: None
            }
        );
        // Another neighbour finds no free slot.
        assert_eq!(
            c.resolve(ip(3), 200),
            Resolved::Unknown {
                solicit: true,
                hold: None
            }
        );
        // The answer hands the held slot back.
        assert_eq!(
            c.learn(ip(2), M1, 300, false),
            Learnt::Yes { held: Some(0) }
        );
        assert_eq!(c.reachable(ip(2), 300), Some(M1));
        c.free_slot(0);
        assert_eq!(
            c.resolve(ip(4), 400),
            Resolved::Unknown {
                solicit: true,
                hold: Some(0)
            }
        );
        // Unanswered for HOLD_US: the frame is dropped, the slot free.
        assert_eq!(c.drop_stale_holds(400 + HOLD_US - 1), 0);
        assert_eq!(c.drop_stale_holds(400 + HOLD_US), 1);
        assert_eq!(
            c.learn(ip(4), M2, 400 + HOLD_US, false),
            Learnt::Yes { held: None }
        );
        assert_eq!(c.reachable(ip(4), 400 + HOLD_US), Some(M2));
    }

    #[test]
    fn learnt_addresses_go_stale_then_unknown() {
        let mut c = NeighbourCache::new(4, 0).unwrap();
        assert_eq!(c.learn(ip(2), M1, 0, false), Learnt::No);
        assert_eq!(c.known(ip(2), 0), None, "not created when not asked to");
        c.learn(ip(2), M1, 1000, true);
        let t = 1000 + REACHABLE_US;
        assert_eq!(c.reachable(ip(2), t - 1), Some(M1));
        assert_eq!(c.reachable(ip(2), t), None);
        // Stale: still used, asked for again once a second.
        assert_eq!(
            c.resolve(ip(2), t),
            Resolved::Known {
                mac: M1,
                solicit: true
            }
        );
        assert_eq!(
            c.resolve(ip(2), t + 10),
            Resolved::Known {
                mac: M1,
                solicit: false
            }
        );
        // Confirmed by its traffic: reachable again.
        assert!(c.wants_confirmation(ip(2), M1, t + 20));
        assert!(!c.wants_confirmation(ip(2), M2, t + 20));
        c.confirm(ip(2), M2, t + 20);
        assert_eq!(
            c.reachable(ip(2), t + 20),
            None,
            "another MAC confirms nothing"
        );
        c.confirm(ip(2), M1, t + 20);
        assert_eq!(c.reachable(ip(2), t + 20), Some(M1));
        // Past the stale time: unknown.
        let gone = t + 20 + REACHABLE_US + STALE_US;
        assert_eq!(c.known(ip(2), gone), None);
        assert_eq!(
            c.resolve(ip(2), gone),
            Resolved::Unknown {
                solicit: true,
                hold: None
            }
        );
    }

    #[test]
    fn a_full_cache_evicts_the_entry_touched_longest_ago() {
        let mut c = NeighbourCache::new(2, 2).unwrap();
        c.learn(ip(1), M1, 10, true);
        assert!(matches!(
            c.resolve(ip(2), 20),
            Resolved::Unknown { hold: Some(_), .. }
        ));
        c.learn(ip(1), M1, 30, true);
        // ip(2) (touched at 20) goes, and its held slot with it.
        assert!(matches!(
            c.resolve(ip(3), 40),
            Resolved::Unknown { hold: Some(_), .. }
        ));
        assert_eq!(c.known(ip(1), 40), Some(M1));
        assert!(c.find(ip(2)).is_none());
        assert_eq!(c.free_held.len(), 1, "the evicted entry's slot came back");
        assert_eq!(c.take_evicted_holds(), 1);
        assert_eq!(c.take_evicted_holds(), 0);
        c.learn(ip(4), M2, 50, true);
        assert!(c.find(ip(1)).is_none() || c.find(ip(3)).is_none());
        assert_eq!(c.entries.len(), 2);
    }
}

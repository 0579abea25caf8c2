//! An in-memory Ethernet-less fabric for deterministic tests: devices
//! transmit IPv4 datagrams into it, and whoever drives the test takes them
//! out when they are due and hands them to the destination device.
//!
//! Faults are injected from a seeded generator, so a run with the same seed,
//! the same traffic and the same clock readings loses, duplicates, delays
//! and reorders exactly the same packets.

use alloc::collections::BinaryHeap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::net::Ipv4Addr;

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use spin::Mutex;

use crate::env::{Clock, Link};

/// Fault probabilities and delays.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Probability a packet is lost.
    pub loss: f64,
    /// Probability a packet is held back so later packets overtake it.
    pub reorder: f64,
    /// Probability a packet is delivered twice.
    pub duplicate: f64,
    /// Base one-way delay, microseconds.
    pub delay_us: u64,
    /// How far (microseconds) a reordered or duplicated packet lags.
    pub reorder_window_us: u64,
    /// Seed of the generator.
    pub seed: u64,
}

/// What the fabric did, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FabricStats {
    /// Datagrams transmitted into the fabric.
    pub sent: u64,
    /// Dropped by loss injection.
    pub lost: u64,
    /// Extra copies made by duplicate injection.
    pub duplicated: u64,
    /// Held back by reorder injection.
    pub reordered: u64,
    /// Handed out for delivery.
    pub delivered: u64,
    /// Too short to carry an IPv4 destination: dropped.
    pub malformed: u64,
}

#[derive(Debug)]
struct InFlight {
    due_us: u64,
    seq: u64,
    dst: Ipv4Addr,
    bytes: Vec<u8>,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        (self.due_us, self.seq) == (other.due_us, other.seq)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InFlight {
    // Earliest due first (BinaryHeap is a max-heap), ties by send order.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due_us, other.seq).cmp(&(self.due_us, self.seq))
    }
}

#[derive(Debug)]
struct State {
    faults: Faults,
    rng: Xoshiro256PlusPlus,
    queue: BinaryHeap<InFlight>,
    seq: u64,
    stats: FabricStats,
}

impl State {
    /// A uniform draw in [0, 1).
    #[allow(clippy::cast_precision_loss)] // 53-bit values convert exactly
    fn chance(&mut self) -> f64 {
        // 53 random bits make an exactly representable fraction.
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn lag(&mut self) -> u64 {
        let window = self.faults.reorder_window_us.max(1);
        1 + self.rng.next_u64() % window
    }

    fn enqueue(&mut self, due_us: u64, dst: Ipv4Addr, bytes: Vec<u8>) {
        self.seq += 1;
        let seq = self.seq;
        self.queue.push(InFlight {
            due_us,
            seq,
            dst,
            bytes,
        });
    }
}

/// The fabric.
#[derive(Debug)]
pub struct Fabric {
    state: Mutex<State>,
}

/// IPv4 destination of a datagram (bytes 16..20 of its header).
fn destination(datagram: &[u8]) -> Option<Ipv4Addr> {
    let b: [u8; 4] = datagram.get(16..20)?.try_into().ok()?;
    Some(Ipv4Addr::from(b))
}

impl Fabric {
    /// A fabric with the given faults.
    pub fn new(faults: Faults) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                faults,
                rng: Xoshiro256PlusPlus::seed_from_u64(faults.seed),
                queue: BinaryHeap::new(),
                seq: 0,
                stats: FabricStats::default(),
            }),
        })
    }

    /// Changes the faults (the generator keeps its position).
    pub fn set_faults(&self, faults: Faults) {
        self.state.lock().faults = faults;
    }

    /// Sends a datagram at time `now_us`.
    pub fn transmit(&self, now_us: u64, datagram: &[u8]) {
        let mut s = self.state.lock();
        s.stats.sent += 1;
        let Some(dst) = destination(datagram) else {
            s.stats.malformed += 1;
            return;
        };
        let faults = s.faults;
        if faults.loss > 0.0 && s.chance() < faults.loss {
            s.stats.lost += 1;
            return;
        }
        let mut due = now_us + faults.delay_us;
        if faults.reorder > 0.0 && s.chance() < faults.reorder {
            s.stats.reordered += 1;
            due += s.lag();
        }
        let copy = faults.duplicate > 0.0 && s.chance() < faults.duplicate;
        if copy {
            s.stats.duplicated += 1;
            let lag = s.lag();
            s.enqueue(due + lag, dst, datagram.to_vec());
        }
        s.enqueue(due, dst, datagram.to_vec());
    }

    /// Takes the next datagram due at or before `now_us`.
    pub fn take_due(&self, now_us: u64) -> Option<(Ipv4Addr, Vec<u8>)> {
        let mut s = self.state.lock();
        if s.queue.peek()?.due_us > now_us {
            return None;
        }
        let p = s.queue.pop()?;
        s.stats.delivered += 1;
        Some((p.dst, p.bytes))
    }

    /// When the next datagram is due, if any is in flight.
    pub fn next_due(&self) -> Option<u64> {
        self.state.lock().queue.peek().map(|p| p.due_us)
    }

    /// Datagrams in flight.
    pub fn in_flight(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Counters so far.
    pub fn stats(&self) -> FabricStats {
        self.state.lock().stats
    }
}

/// A device's attachment to a fabric.
pub struct FabricPort {
    fabric: Arc<Fabric>,
    clock: Arc<dyn Clock>,
}

impl FabricPort {
    /// Attaches to `fabric`, stamping sends with `clock`.
    pub fn new(fabric: Arc<Fabric>, clock: Arc<dyn Clock>) -> Self {
        Self { fabric, clock }
    }
}

impl core::fmt::Debug for FabricPort {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FabricPort")
            .field("fabric", &self.fabric)
            .finish_non_exhaustive()
    }
}

impl Link for FabricPort {
    fn transmit(&self, datagram: &[u8]) {
        self.fabric.transmit(self.clock.now_us(), datagram);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(dst: [u8; 4], tag: u8) -> Vec<u8> {
        let mut d = alloc::vec![0u8; 28];
        d[16..20].copy_from_slice(&dst);
        d[27] = tag;
        d
    }

    #[test]
    fn clean_fabric_delivers_in_order_after_delay() {
        let f = Fabric::new(Faults {
            delay_us: 5,
            ..Faults::default()
        });
        for tag in 0..3 {
            f.transmit(10, &datagram([127, 0, 0, 2], tag));
        }
        assert!(f.take_due(14).is_none());
        let tags: Vec<u8> = core::iter::from_fn(|| f.take_due(15))
            .map(|(_, d)| d[27])
            .collect();
        assert_eq!(tags, [0, 1, 2]);
        assert_eq!(f.stats().delivered, 3);
    }

    #[test]
    fn faults_are_deterministic_per_seed_and_roughly_at_rate() {
        let faults = Faults {
            loss: 0.1,
            reorder: 0.1,
            duplicate: 0.1,
            reorder_window_us: 50,
            seed: 42,
            ..Faults::default()
        };
        let run = || {
            let f = Fabric::new(faults);
            for i in 0..10_000u32 {
                f.transmit(u64::from(i), &datagram([127, 0, 0, 2], i as u8));
            }
            let order: Vec<u8> = core::iter::from_fn(|| f.take_due(u64::MAX))
                .map(|(_, d)| d[27])
                .collect();
            (f.stats(), order)
        };
        let (a, order_a) = run();
        let (b, order_b) = run();
        assert_eq!((a, &order_a), (b, &order_b), "same seed, same outcome");
        assert!((800..1200).contains(&a.lost), "{a:?}");
        assert!((800..1200).contains(&a.duplicated), "{a:?}");
        assert_eq!(a.delivered, a.sent - a.lost + a.duplicated);
        assert!(
            order_a.windows(2).any(|w| w[1] != w[0].wrapping_add(1)),
            "reordered"
        );
    }

    #[test]
    fn short_datagrams_are_counted_and_dropped() {
        let f = Fabric::new(Faults::default());
        f.transmit(0, &[0u8; 10]);
        assert_eq!(f.stats().malformed, 1);
        assert!(f.take_due(u64::MAX).is_none());
    }
}

//! The fault-injecting link wrapper ([`FaultLink`]) and its seeded
//! generator ([`FaultInjector`]): smoltcp's `phy::FaultInjector`, with the
//! reordering and delays of Linux's netem.
//!
//! The generator draws each datagram's fate — lost, or delivered after a
//! delay, possibly late enough for later datagrams to overtake it, possibly
//! twice — in the order datagrams are sent, so a run with the same seed,
//! the same traffic and the same clock readings loses, duplicates, delays
//! and reorders exactly the same datagrams. Several links may share one
//! generator (the devices of one simulated network draw from one
//! sequence, as before from their fabric).
//!
//! A datagram due later is handed to the wrapped link at once if that
//! link delays delivery itself ([`Link::transmit_later`], the
//! in-memory fabric's queue); otherwise the wrapper holds it and hands it
//! over once due, at its next call (or [`FaultLink::release_due`]), and
//! its [`Link::receive`] reports when that is, so a polling runtime wakes
//! in time.

use alloc::collections::BinaryHeap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Ordering;

use core::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use hwq::lock::LockClass;
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use softrnic::sync::Mutex;

/// A fault link's random draws.
static DRAWS_LOCK: LockClass = LockClass::new("links fault draws");
/// A fault link's held-back datagrams.
static HELD_BACK_LOCK: LockClass = LockClass::new("links fault held back");

use crate::clock::Clock;
use crate::link::{Link, Load, Outgoing, Received};
use softrnic::arrival::Arrival;
use softrnic::train::Train;

/// Fault probabilities and delays.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Probability a datagram is lost.
    pub loss: f64,
    /// Probability a datagram is held back so later datagrams overtake it.
    pub reorder: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
    /// Delay of every datagram and train, microseconds.
    pub delay_us: u64,
    /// How far (microseconds) a reordered or duplicated datagram lags.
    pub reorder_window_us: u64,
    /// Seed of the generator.
    pub seed: u64,
}

impl Faults {
    /// Whether faults are drawn per datagram (loss, reordering,
    /// duplication): trains, which stand for many, cannot pass then.
    pub fn per_packet(&self) -> bool {
        self.loss > 0.0 || self.reorder > 0.0 || self.duplicate > 0.0
    }

    /// Whether anything is done to what passes (else it passes untouched).
    pub fn any(&self) -> bool {
        self.per_packet() || self.delay_us > 0
    }
}

/// What a generator did. A train counts as the datagrams it stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Datagrams whose fate was drawn (those sent while faults were set).
    pub drawn: u64,
    /// Lost.
    pub lost: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Held back so later datagrams may overtake them.
    pub reordered: u64,
}

/// What happens to one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Lost,
    /// Delivered `hold` µs from now, and a copy `duplicate` µs from now.
    Delivered {
        hold: u64,
        duplicate: Option<u64>,
    },
}

#[derive(Debug)]
struct Draws {
    faults: Faults,
    rng: Xoshiro256PlusPlus,
    stats: FaultStats,
}

impl Draws {
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

    fn fate(&mut self) -> Fate {
        self.stats.drawn += 1;
        let faults = self.faults;
        if faults.loss > 0.0 && self.chance() < faults.loss {
            self.stats.lost += 1;
            return Fate::Lost;
        }
        let mut hold = faults.delay_us;
        if faults.reorder > 0.0 && self.chance() < faults.reorder {
            self.stats.reordered += 1;
            hold += self.lag();
        }
        let duplicate = (faults.duplicate > 0.0 && self.chance() < faults.duplicate).then(|| {
            self.stats.duplicated += 1;
            hold + self.lag()
        });
        Fate::Delivered { hold, duplicate }
    }
}

/// The seeded generator and its settings, shared by the [`FaultLink`]s
/// that draw from it.
#[derive(Debug)]
pub struct FaultInjector {
    draws: Mutex<Draws>,
    /// [`Faults::any`] of the current faults: read per datagram, without
    /// the lock.
    active: AtomicBool,
    /// [`Faults::per_packet`] of the current faults.
    per_packet: AtomicBool,
}

impl FaultInjector {
    /// A generator seeded with `faults.seed`, drawing `faults`.
    pub fn new(faults: Faults) -> Arc<Self> {
        Arc::new(Self {
            draws: Mutex::new(
                &DRAWS_LOCK,
                Draws {
                    faults,
                    rng: Xoshiro256PlusPlus::seed_from_u64(faults.seed),
                    stats: FaultStats::default(),
                },
            ),
            active: AtomicBool::new(faults.any()),
            per_packet: AtomicBool::new(faults.per_packet()),
        })
    }

    /// Changes the faults (the generator keeps its position: the seed is
    /// read only by [`FaultInjector::new`]).
    pub fn set_faults(&self, faults: Faults) {
        let mut d = self.draws.lock();
        d.faults = faults;
        self.active.store(faults.any(), AtomicOrdering::Relaxed);
        self.per_packet
            .store(faults.per_packet(), AtomicOrdering::Relaxed);
    }

    /// The current faults.
    pub fn faults(&self) -> Faults {
        self.draws.lock().faults
    }

    /// Counters so far.
    pub fn stats(&self) -> FaultStats {
        self.draws.lock().stats
    }

    fn active(&self) -> bool {
        self.active.load(AtomicOrdering::Relaxed)
    }

    fn fate(&self) -> Fate {
        self.draws.lock().fate()
    }

    /// A train of `segments` datagrams passes: its delay (no per-datagram
    /// fault is drawn for it; the sender asked
    /// [`Link::carries_trains`] first).
    fn train_hold(&self, segments: u32) -> u64 {
        let mut d = self.draws.lock();
        d.stats.drawn += u64::from(segments);
        d.faults.delay_us
    }
}

/// A load held back by a [`FaultLink`] until it is due.
#[derive(Debug)]
struct Held {
    due_us: u64,
    seq: u64,
    load: Load,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.due_us, self.seq) == (other.due_us, other.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    // Earliest due first (BinaryHeap is a max-heap), ties by send order.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due_us, other.seq).cmp(&(self.due_us, self.seq))
    }
}

#[derive(Debug, Default)]
struct HeldBack {
    heap: BinaryHeap<Held>,
    seq: u64,
    /// Released datagrams' buffers, for the next ones held.
    spare: Vec<Vec<u8>>,
}

/// Buffers a [`FaultLink`] keeps for reuse.
const MAX_SPARE: usize = 256;

/// A link that injects the faults its [`FaultInjector`] draws into what is
/// transmitted through it, whatever the link it wraps: each datagram may be
/// lost, delayed, reordered or duplicated; a train may only be delayed,
/// and while faults are drawn per datagram ([`Faults::per_packet`]) the
/// wrapper carries none ([`Link::carries_trains`] is false), so senders
/// send datagrams. With no
/// faults set, every call goes straight to the wrapped link.
pub struct FaultLink<L> {
    inner: L,
    injector: Arc<FaultInjector>,
    /// The time delays are counted on.
    clock: Arc<dyn Clock>,
    held: Mutex<HeldBack>,
    /// Something is held (read per call, without the lock).
    holding: AtomicBool,
}

impl<L> core::fmt::Debug for FaultLink<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FaultLink")
            .field("injector", &self.injector)
            .finish_non_exhaustive()
    }
}

impl<L: Link> FaultLink<L> {
    /// Wraps `inner`, drawing faults from `injector` and counting delays
    /// on `clock`.
    pub fn new(inner: L, injector: Arc<FaultInjector>, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner,
            injector,
            clock,
            held: Mutex::new(&HELD_BACK_LOCK, HeldBack::default()),
            holding: AtomicBool::new(false),
        }
    }

    /// The wrapped link.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The generator it draws from.
    pub fn injector(&self) -> &Arc<FaultInjector> {
        &self.injector
    }

    /// When the next load it holds is due (µs, its clock), if it holds one.
    pub fn next_due_us(&self) -> Option<u64> {
        if !self.holding.load(AtomicOrdering::Acquire) {
            return None;
        }
        self.held.lock().heap.peek().map(|h| h.due_us)
    }

    /// Hands what it holds that is due by now to the wrapped link, in due
    /// order (ties in send order).
    pub fn release_due(&self) {
        if !self.holding.load(AtomicOrdering::Acquire) {
            return;
        }
        let now = self.clock.now_us();
        loop {
            let mut held = self.held.lock();
            if held.heap.peek().is_none_or(|h| h.due_us > now) {
                self.holding
                    .store(!held.heap.is_empty(), AtomicOrdering::Release);
                return;
            }
            let Some(h) = held.heap.pop() else { return };
            drop(held);
            match h.load {
                Load::Datagram(mut bytes) => {
                    let len = bytes.len();
                    self.inner.transmit(Outgoing::Datagram {
                        buf: &mut bytes,
                        len,
                    });
                    let mut held = self.held.lock();
                    if held.spare.len() < MAX_SPARE {
                        held.spare.push(bytes);
                    }
                }
                Load::Train(train) => self.inner.transmit(Outgoing::Train(train)),
            }
        }
    }

    /// Holds `load` until `hold_us` from now.
    fn hold(&self, hold_us: u64, load: Load) {
        let due_us = self.clock.now_us().saturating_add(hold_us);
        let mut held = self.held.lock();
        held.seq += 1;
        let seq = held.seq;
        held.heap.push(Held { due_us, seq, load });
        self.holding.store(true, AtomicOrdering::Release);
    }

    /// Transmits the datagram in `buf[..len]` as the injector's fate for
    /// it says: lost, delayed, duplicated or sent at once.
    fn transmit_datagram(&self, buf: &mut Vec<u8>, len: usize) {
        if !self.injector.active() {
            return self.inner.transmit(Outgoing::Datagram { buf, len });
        }
        let Fate::Delivered { hold, duplicate } = self.injector.fate() else {
            return;
        };
        // The copy first: the original's buffer may be taken.
        if let Some(lag) = duplicate
            && let Some(datagram) = buf.get(..len)
        {
            self.send_copy_later(lag, datagram);
        }
        if hold == 0 {
            self.inner.transmit(Outgoing::Datagram { buf, len });
        } else {
            self.send_owned_later(hold, buf, len);
        }
    }

    /// Transmits `train`, held as a whole when the injector delays it.
    fn transmit_train(&self, train: Train) {
        let hold = if self.injector.active() {
            self.injector.train_hold(train.segments())
        } else {
            0
        };
        if hold == 0 {
            self.inner.transmit(Outgoing::Train(train));
        } else if let Some(Outgoing::Train(train)) =
            self.inner.transmit_later(hold, Outgoing::Train(train))
        {
            self.hold(hold, Load::Train(train));
        }
    }

    /// Sends a copy of `datagram` to be delivered `hold_us` from now.
    fn send_copy_later(&self, hold_us: u64, datagram: &[u8]) {
        let mut buf = self.held.lock().spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(datagram);
        let len = buf.len();
        let packet = Outgoing::Datagram { buf: &mut buf, len };
        if self.inner.transmit_later(hold_us, packet).is_none() {
            let mut held = self.held.lock();
            if held.spare.len() < MAX_SPARE {
                held.spare.push(buf);
            }
        } else {
            self.hold(hold_us, Load::Datagram(buf));
        }
    }

    /// Sends `buf[..len]` to be delivered `hold_us` from now, leaving a
    /// buffer of the same length in `buf`.
    fn send_owned_later(&self, hold_us: u64, buf: &mut Vec<u8>, len: usize) {
        let packet = Outgoing::Datagram {
            buf: &mut *buf,
            len,
        };
        if self.inner.transmit_later(hold_us, packet).is_none() {
            return;
        }
        let mut bytes = self.held.lock().spare.pop().unwrap_or_default();
        // Only the tail beyond the spare's length is written; the caller
        // overwrites what it uses.
        bytes.resize(buf.len(), 0);
        core::mem::swap(buf, &mut bytes);
        bytes.truncate(len);
        self.hold(hold_us, Load::Datagram(bytes));
    }
}

impl<L: Link> Link for FaultLink<L> {
    fn transmit(&self, packet: Outgoing<'_>) {
        self.release_due();
        match packet {
            Outgoing::Datagram { buf, len } => self.transmit_datagram(buf, len),
            Outgoing::Train(train) => self.transmit_train(train),
        }
    }

    fn flush(&self) {
        self.release_due();
        self.inner.flush();
    }

    fn can_transmit(&self) -> bool {
        self.inner.can_transmit()
    }

    fn carries_trains(&self) -> bool {
        !self.injector.per_packet.load(AtomicOrdering::Relaxed) && self.inner.carries_trains()
    }

    fn take_send_failures(&self, each: &mut dyn FnMut(softrnic::transmit::SendFailure)) {
        self.inner.take_send_failures(each);
    }

    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        self.release_due();
        let mut got = self.inner.receive(deliver);
        got.next_due_us = match (got.next_due_us, self.next_due_us()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        got
    }
}

#[cfg(test)]
mod tests {
    use crate::transmit_copy;
    use spin::Mutex;

    use super::*;
    use crate::{Capture, CaptureLink, Direction};
    use alloc::boxed::Box;
    use alloc::vec;
    use core::sync::atomic::AtomicU64;

    #[derive(Default)]
    struct TestClock(AtomicU64);

    impl TestClock {
        fn set(&self, t: u64) {
            self.0.store(t, AtomicOrdering::Relaxed);
        }
    }

    impl Clock for TestClock {
        fn now_us(&self) -> u64 {
            self.0.load(AtomicOrdering::Relaxed)
        }
    }

    /// A link that records the tag (last byte) of each datagram it is
    /// given, carries trains, and delays nothing itself.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<u8>>);

    impl Link for Recorder {
        fn transmit(&self, packet: Outgoing<'_>) {
            self.0
                .lock()
                .push(*packet.datagram().unwrap().last().unwrap());
        }
        fn carries_trains(&self) -> bool {
            true
        }
    }

    fn faulty(faults: Faults) -> (FaultLink<Recorder>, Arc<TestClock>) {
        let clock = Arc::new(TestClock::default());
        let link = FaultLink::new(
            Recorder::default(),
            FaultInjector::new(faults),
            clock.clone(),
        );
        (link, clock)
    }

    fn tags(link: &FaultLink<Recorder>) -> Vec<u8> {
        link.inner().0.lock().clone()
    }

    /// The fate of each of `n` datagrams under `loss` alone, drawn as the
    /// seed says: one uniform 53-bit fraction per datagram.
    fn losses_for(seed: u64, loss: f64, n: u8) -> Vec<bool> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                #[allow(clippy::cast_precision_loss)]
                let chance = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                chance < loss
            })
            .collect()
    }

    #[test]
    fn around_any_link_it_loses_exactly_what_the_seed_says() {
        for seed in [1, 7, 42] {
            let (link, _) = faulty(Faults {
                loss: 0.3,
                seed,
                ..Faults::default()
            });
            let mut buf = vec![0u8; 16];
            for tag in 0..100u8 {
                if tag % 2 == 0 {
                    transmit_copy(&link, &[0x45, tag]);
                } else {
                    // Owned sends draw from the same sequence.
                    buf[..2].copy_from_slice(&[0x45, tag]);
                    link.transmit(Outgoing::Datagram {
                        buf: &mut buf,
                        len: 2,
                    });
                    assert_eq!(buf.len(), 16, "the caller keeps its buffer's length");
                }
            }
            let expected: Vec<u8> = losses_for(seed, 0.3, 100)
                .iter()
                .zip(0..)
                .filter_map(|(&lost, tag)| (!lost).then_some(tag))
                .collect();
            assert_eq!(tags(&link), expected, "seed {seed}");
            let stats = link.injector().stats();
            assert_eq!(stats.drawn, 100);
            assert_eq!(stats.lost, 100 - expected.len() as u64);
            assert!(stats.lost > 10 && stats.lost < 50, "{stats:?}");
        }
    }

    #[test]
    fn around_any_link_it_duplicates_exactly_what_the_seed_says() {
        for seed in [2, 8, 43] {
            let (link, clock) = faulty(Faults {
                duplicate: 0.3,
                reorder_window_us: 1,
                seed,
                ..Faults::default()
            });
            for tag in 0..100u8 {
                transmit_copy(&link, &[0x45, tag]);
            }
            // The originals went at once; each copy lags 1 µs.
            assert_eq!(tags(&link), (0..100).collect::<Vec<u8>>());
            clock.set(1);
            link.release_due();
            // As the seed says: per datagram a fraction, and for a copy a
            // lag drawn after it.
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let copies: Vec<u8> = (0..100u8)
                .filter(|_| {
                    #[allow(clippy::cast_precision_loss)]
                    let chance = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    let copy = chance < 0.3;
                    if copy {
                        rng.next_u64();
                    }
                    copy
                })
                .collect();
            let mut expected: Vec<u8> = (0..100).collect();
            expected.extend(&copies);
            assert_eq!(tags(&link), expected, "seed {seed}");
            assert_eq!(link.injector().stats().duplicated, copies.len() as u64);
            assert!(copies.len() > 10, "{copies:?}");
        }
    }

    #[test]
    fn duplicates_and_reorders_are_held_until_due_and_repeat_per_seed() {
        let run = |seed| {
            let (link, clock) = faulty(Faults {
                duplicate: 0.2,
                reorder: 0.2,
                reorder_window_us: 30,
                seed,
                ..Faults::default()
            });
            for tag in 0..200u8 {
                clock.set(u64::from(tag) * 10);
                transmit_copy(&link, &[0x45, tag]);
            }
            let before = tags(&link).len();
            let due = link.next_due_us();
            clock.set(u64::MAX);
            link.release_due();
            assert_eq!(link.next_due_us(), None);
            let after = tags(&link);
            assert_eq!(due.is_some(), before < after.len(), "it said what it held");
            (after, before, link.injector().stats())
        };
        let (a, held_back, stats) = run(5);
        assert_eq!(
            run(5),
            (a.clone(), held_back, stats),
            "same seed, same outcome"
        );
        assert_ne!(run(6).0, a, "another seed, another outcome");
        assert_eq!(stats.lost, 0);
        assert!(stats.duplicated > 10 && stats.reordered > 10, "{stats:?}");
        assert_eq!(a.len() as u64, 200 + stats.duplicated);
        let mut counts = [0u32; 200];
        for &t in &a {
            counts[usize::from(t)] += 1;
        }
        assert!(counts.iter().all(|&c| c == 1 || c == 2));
        assert_eq!(
            counts.iter().filter(|&&c| c == 2).count() as u64,
            stats.duplicated
        );
        // Held ones (reordered, duplicates) reached the link only once
        // due, after later ones.
        assert!(a.windows(2).any(|w| w[1] < w[0]), "reordered");
    }

    #[test]
    fn a_delay_holds_every_datagram_until_due_and_a_receive_reports_when() {
        let (link, clock) = faulty(Faults {
            delay_us: 10,
            ..Faults::default()
        });
        clock.set(100);
        transmit_copy(&link, &[0x45, 1]);
        clock.set(105);
        transmit_copy(&link, &[0x45, 2]);
        assert!(tags(&link).is_empty());
        assert_eq!(link.receive(&mut |_| {}).next_due_us, Some(110));
        clock.set(110);
        // Any call hands over what is due.
        assert_eq!(link.receive(&mut |_| {}).next_due_us, Some(115));
        assert_eq!(tags(&link), [1]);
        clock.set(115);
        link.flush();
        assert_eq!(tags(&link), [1, 2]);
        assert_eq!(link.next_due_us(), None);
    }

    #[test]
    fn trains_pass_only_without_per_packet_faults() {
        let (link, _) = faulty(Faults::default());
        assert!(link.carries_trains());
        let injector = link.injector().clone();
        for per_packet in [
            Faults {
                loss: 0.1,
                ..Faults::default()
            },
            Faults {
                reorder: 0.1,
                ..Faults::default()
            },
            Faults {
                duplicate: 0.1,
                ..Faults::default()
            },
        ] {
            injector.set_faults(per_packet);
            assert!(!link.carries_trains(), "{per_packet:?}");
        }
        injector.set_faults(Faults {
            delay_us: 5,
            ..Faults::default()
        });
        assert!(link.carries_trains(), "a delay applies to trains too");
        injector.set_faults(Faults::default());
        assert!(link.carries_trains());
    }

    #[derive(Default)]
    struct Seen(Mutex<Vec<u8>>);

    impl Capture for Arc<Seen> {
        fn capture(&self, direction: Direction, datagram: &[u8]) {
            assert_eq!(direction, Direction::Transmit);
            self.0.lock().push(*datagram.last().unwrap());
        }
    }

    #[test]
    fn a_capture_around_a_faulty_link_sees_what_leaves_the_device() {
        let clock = Arc::new(TestClock::default());
        let faulty = FaultLink::new(
            Recorder::default(),
            FaultInjector::new(Faults {
                loss: 0.5,
                duplicate: 0.5,
                reorder_window_us: 3,
                seed: 9,
                ..Faults::default()
            }),
            clock.clone(),
        );
        let link = CaptureLink::new(faulty);
        let seen = Arc::new(Seen::default());
        link.set_capture(Some(Box::new(seen.clone())));
        for tag in 0..50u8 {
            transmit_copy(&link, &[0x45, tag]);
        }
        clock.set(10);
        link.inner().release_due();
        assert_eq!(
            *seen.0.lock(),
            (0..50).collect::<Vec<u8>>(),
            "every one, once"
        );
        let stats = link.inner().injector().stats();
        assert!(stats.lost > 0 && stats.duplicated > 0, "{stats:?}");
        assert_eq!(
            link.inner().inner().0.lock().len() as u64,
            50 - stats.lost + stats.duplicated,
            "the link behind got what the faults let through"
        );
    }
}

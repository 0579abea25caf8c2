//! An in-memory Ethernet-less fabric: a delivery queue per destination.
//! Devices transmit IPv4 or IPv6 datagrams into it through their
//! [`FabricEndpoint`], each due at a time its sender gives, and the
//! destination's endpoint hands them to its device when they are due (the
//! host's in-memory hub, whose engine passes take them), or whoever
//! drives a test takes them out and hands them over itself.
//!
//! The fabric loses, duplicates and reorders nothing itself: faults are
//! injected by a [`crate::FaultLink`] around a device's endpoint,
//! which hands it what it delays ([`Link::transmit_later`]) to queue
//! until due.
//!
//! Devices that share one memory may also send trains
//! ([`softrnic::train`]); whoever takes datagrams gets a train cut into the
//! datagrams it stands for.

use alloc::boxed::Box;
use alloc::collections::BinaryHeap;
use alloc::collections::binary_heap::PeekMut;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::net::IpAddr;

use hwq::lock::LockClass;

use softrnic::sync::Mutex;

/// The fabric's state.
static FABRIC_LOCK: LockClass = LockClass::new("links fabric");

use crate::clock::Clock;
use crate::link::{Link, Load, Outgoing, Received};
use softrnic::arrival::Arrival;
use softrnic::train::Train;

/// What the fabric did, for tests and reports. A train counts as the
/// packets it stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FabricStats {
    /// Datagrams transmitted into the fabric.
    pub sent: u64,
    /// Dropped: queued for a device that went away, or train segments
    /// whose source key died before they were cut.
    pub lost: u64,
    /// Handed out for delivery.
    pub delivered: u64,
    /// Too short to carry an IP destination (or of no IP version): dropped.
    pub malformed: u64,
}

#[derive(Debug)]
struct InFlight {
    due_us: u64,
    seq: u64,
    dst: IpAddr,
    load: Load,
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

/// The datagrams in flight to one destination.
#[derive(Debug)]
struct Queue {
    dst: IpAddr,
    heap: BinaryHeap<InFlight>,
}

impl Queue {
    fn head(&self) -> Option<(u64, u64)> {
        self.heap.peek().map(|p| (p.due_us, p.seq))
    }
}

/// Buffers kept for reuse: enough for a few windows of full-size packets,
/// so a bulk transfer allocates nothing per packet once warmed up.
const MAX_SPARE: usize = 4096;

#[derive(Debug)]
struct State {
    /// One queue per destination (a handful), so each receiver takes only
    /// its own packets without scanning the others'.
    queues: Vec<Queue>,
    /// Delivered datagrams' buffers, handed back by [`Fabric::recycle`].
    spare: Vec<Vec<u8>>,
    seq: u64,
    stats: FabricStats,
}

impl State {
    fn enqueue(&mut self, due_us: u64, dst: IpAddr, load: Load) {
        self.seq += 1;
        let flight = InFlight {
            due_us,
            seq: self.seq,
            dst,
            load,
        };
        if let Some(q) = self.queues.iter_mut().find(|q| q.dst == dst) {
            q.heap.push(flight);
        } else {
            let mut heap = BinaryHeap::new();
            heap.push(flight);
            self.queues.push(Queue { dst, heap });
        }
    }

    /// The queue holding the earliest datagram (ties by send order).
    fn earliest(&mut self) -> Option<&mut Queue> {
        self.queues
            .iter_mut()
            .filter(|q| q.head().is_some())
            .min_by_key(|q| q.head())
    }

    fn queue_of(&mut self, dst: IpAddr) -> Option<&mut Queue> {
        self.queues.iter_mut().find(|q| q.dst == dst)
    }

    /// Keeps a delivered datagram's buffer for reuse.
    fn recycle(&mut self, load: Load) {
        if let Load::Datagram(bytes) = load
            && self.spare.len() < MAX_SPARE
        {
            self.spare.push(bytes);
        }
    }
}

/// Takes the head of `q` if it is due at `now_us` as a datagram: a train
/// gives its first segment, built from the source, and stays queued with
/// the rest (segmentation where packets are needed). Segments whose
/// source key died are lost (counted).
fn take_datagram(s: &mut State, dst: Option<IpAddr>, now_us: u64) -> Option<(IpAddr, Vec<u8>)> {
    loop {
        let mut buf = s.spare.pop().unwrap_or_default();
        let q = match dst {
            Some(d) => s.queue_of(d)?,
            None => s.earliest()?,
        };
        let mut head = q.heap.peek_mut()?;
        if head.due_us > now_us {
            return None;
        }
        let to = head.dst;
        let built = match &mut head.load {
            Load::Datagram(_) => None,
            Load::Train(train) => {
                let n = train.build(0, &mut buf);
                Some((n, train.advance()))
            }
        };
        let datagram = match built {
            None => match PeekMut::pop(head).load {
                Load::Datagram(bytes) => {
                    s.spare.push(buf);
                    bytes
                }
                Load::Train(_) => return None,
            },
            Some((n, more)) => {
                if more {
                    drop(head);
                } else {
                    PeekMut::pop(head);
                }
                let Some(n) = n else {
                    s.stats.lost += 1;
                    s.spare.push(buf);
                    continue;
                };
                buf.truncate(n);
                buf
            }
        };
        s.stats.delivered += 1;
        return Some((to, datagram));
    }
}

/// The fabric.
#[derive(Debug)]
pub struct Fabric {
    state: Mutex<State>,
}

/// Destination of a datagram (IPv4 bytes 16..20, IPv6 bytes 24..40).
fn destination(datagram: &[u8]) -> Option<IpAddr> {
    softrnic::wire::ip_udp::datagram_destination(datagram)
}

impl Fabric {
    /// An empty fabric.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(
                &FABRIC_LOCK,
                State {
                    queues: Vec::new(),
                    spare: Vec::new(),
                    seq: 0,
                    stats: FabricStats::default(),
                },
            ),
        })
    }

    /// Queues a datagram due at `due_us`. Returns its destination if it
    /// was queued (not malformed), so the caller can wake the receiver.
    /// The bytes are copied with the lock released, so a receiver taking
    /// its packets never spins behind a 4 KiB copy.
    pub fn transmit(&self, due_us: u64, datagram: &[u8]) -> Option<IpAddr> {
        let (dst, mut bytes) = {
            let mut s = self.state.lock();
            let dst = Self::admit(&mut s, datagram)?;
            (dst, s.spare.pop().unwrap_or_default())
        };
        bytes.clear();
        bytes.extend_from_slice(datagram);
        self.state
            .lock()
            .enqueue(due_us, dst, Load::Datagram(bytes));
        Some(dst)
    }

    /// [`Fabric::transmit`] of `buf[..len]` that takes `buf` itself into
    /// the fabric, leaving a recycled buffer of the same length in its
    /// place: a full-size packet moves without being copied.
    pub fn transmit_owned(&self, due_us: u64, buf: &mut Vec<u8>, len: usize) -> Option<IpAddr> {
        // One lock round: nothing is copied, so nothing slow happens
        // under the lock.
        let mut s = self.state.lock();
        let dst = Self::admit(&mut s, buf.get(..len)?)?;
        let mut bytes = s.spare.pop().unwrap_or_default();
        // Only the tail beyond the recycled buffer's length is written;
        // the caller overwrites what it uses.
        bytes.resize(buf.len(), 0);
        core::mem::swap(buf, &mut bytes);
        bytes.truncate(len);
        s.enqueue(due_us, dst, Load::Datagram(bytes));
        Some(dst)
    }

    /// Queues a train due at `due_us`. Returns its destination.
    pub fn transmit_train(&self, due_us: u64, train: Train) -> IpAddr {
        let dst = train.dst();
        let mut s = self.state.lock();
        s.stats.sent += u64::from(train.segments());
        s.enqueue(due_us, dst, Load::Train(train));
        dst
    }

    /// Counts a datagram sent and finds its destination (`None`:
    /// malformed, counted and dropped).
    fn admit(s: &mut State, datagram: &[u8]) -> Option<IpAddr> {
        s.stats.sent += 1;
        let dst = destination(datagram);
        if dst.is_none() {
            s.stats.malformed += 1;
        }
        dst
    }

    /// Takes the next datagram due at or before `now_us`, whatever its
    /// destination (in due order, ties in send order). A train is handed
    /// out one segment at a time, each built as its datagram.
    pub fn take_due(&self, now_us: u64) -> Option<(IpAddr, Vec<u8>)> {
        take_datagram(&mut self.state.lock(), None, now_us)
    }

    /// Takes the next datagram for `dst` due at or before `now_us` (trains
    /// as in [`Fabric::take_due`]). Hand its buffer back with
    /// [`Fabric::recycle`] once done with it.
    pub fn take_due_for(&self, dst: impl Into<IpAddr>, now_us: u64) -> Option<Vec<u8>> {
        take_datagram(&mut self.state.lock(), Some(dst.into()), now_us).map(|(_, bytes)| bytes)
    }

    /// Drops everything queued for `dst` (its device went away: lost, as
    /// on a real network).
    pub fn discard_for(&self, dst: impl Into<IpAddr>) {
        let mut s = self.state.lock();
        let Some(q) = s.queue_of(dst.into()) else {
            return;
        };
        let dropped = core::mem::take(&mut q.heap);
        for flight in dropped {
            s.stats.lost += flight.load.packets();
            s.recycle(flight.load);
        }
    }

    /// Gives a delivered datagram's buffer back for reuse.
    pub fn recycle(&self, bytes: Vec<u8>) {
        self.state.lock().recycle(Load::Datagram(bytes));
    }

    /// Moves up to `max` loads (datagrams or trains) for `dst` due at or
    /// before `now_us` to `out` (in order), first giving the buffers left
    /// in `out` back for reuse: one lock round per batch. Returns how many
    /// were taken and when the next load for `dst` is due, if one is in
    /// flight.
    pub fn exchange_due_for(
        &self,
        dst: impl Into<IpAddr>,
        now_us: u64,
        out: &mut Vec<Load>,
        max: usize,
    ) -> (usize, Option<u64>) {
        let mut s = self.state.lock();
        for load in out.drain(..) {
            s.recycle(load);
        }
        let mut taken = 0;
        let mut segments = 0;
        let mut next = None;
        if let Some(q) = s.queue_of(dst.into()) {
            while taken < max && q.heap.peek().is_some_and(|p| p.due_us <= now_us) {
                if let Some(p) = q.heap.pop() {
                    segments += p.load.packets();
                    out.push(p.load);
                    taken += 1;
                }
            }
            next = q.heap.peek().map(|p| p.due_us);
        }
        s.stats.delivered += segments;
        (taken, next)
    }

    /// When the next datagram is due, if any is in flight.
    pub fn next_due(&self) -> Option<u64> {
        self.state
            .lock()
            .queues
            .iter()
            .filter_map(|q| q.heap.peek().map(|p| p.due_us))
            .min()
    }

    /// When the next datagram for `dst` is due, if any is in flight.
    pub fn next_due_for(&self, dst: impl Into<IpAddr>) -> Option<u64> {
        self.state
            .lock()
            .queue_of(dst.into())?
            .heap
            .peek()
            .map(|p| p.due_us)
    }

    /// Loads (datagrams and trains) in flight.
    pub fn in_flight(&self) -> usize {
        self.state.lock().queues.iter().map(|q| q.heap.len()).sum()
    }

    /// Counters so far.
    pub fn stats(&self) -> FabricStats {
        self.state.lock().stats
    }
}

/// Told of each destination a load was just queued for, so its runtime
/// can wake the device there (the host's hub wakes that device's engine
/// thread). Called from the sender's transmit: must not block.
pub trait Queued: Send + Sync {
    /// A datagram or train for `dst` was queued.
    fn queued_for(&self, dst: IpAddr);
}

/// What an endpoint with an address of its own receives.
struct Receiver {
    addr: IpAddr,
    /// Loads one [`Link::receive`] takes at most.
    burst: usize,
    /// The last batch taken; its buffers go back to the fabric with the
    /// next take.
    batch: Mutex<Vec<Load>>,
}

/// The endpoint batch a receive works through.
static BATCH_LOCK: LockClass = LockClass::new("links fabric endpoint batch");

/// A device's endpoint on a [`Fabric`]: the one link type over a fabric,
/// which tests and the host's in-memory hub give their devices alike.
///
/// What the device sends is queued for its destination, due at once, or
/// later when a [`crate::FaultLink`] around the endpoint delays it
/// ([`Link::transmit_later`]): the fabric holds it until due. An
/// endpoint at an address of its own ([`FabricEndpoint::receiving_at`])
/// hands what is due there to [`Link::receive`] (a pass takes it); one
/// without leaves it to whoever drives the test
/// ([`Fabric::take_due_for`]). A runtime that wakes receivers gives a
/// [`Queued`] ([`FabricEndpoint::notifying`]).
pub struct FabricEndpoint {
    fabric: Arc<Fabric>,
    clock: Arc<dyn Clock>,
    trains: bool,
    receiver: Option<Receiver>,
    queued: Option<Box<dyn Queued>>,
}

impl FabricEndpoint {
    /// Attaches to `fabric`, stamping sends with `clock`. Sends packets
    /// only (the devices may not share a DMA address space), receives
    /// nothing itself, tells no one.
    pub fn new(fabric: Arc<Fabric>, clock: Arc<dyn Clock>) -> Self {
        Self {
            fabric,
            clock,
            trains: false,
            receiver: None,
            queued: None,
        }
    }

    /// Like [`FabricEndpoint::new`], for devices that reach memory through
    /// one DMA address space: READ responses, SENDs and WRITEs may travel
    /// as trains ([`softrnic::train`]).
    pub fn with_trains(fabric: Arc<Fabric>, clock: Arc<dyn Clock>) -> Self {
        Self {
            trains: true,
            ..Self::new(fabric, clock)
        }
    }

    /// This endpoint at `addr`: [`Link::receive`] hands out what is due
    /// for `addr`, up to `burst` loads per call.
    #[must_use]
    pub fn receiving_at(self, addr: impl Into<IpAddr>, burst: usize) -> Self {
        Self {
            receiver: Some(Receiver {
                addr: addr.into(),
                burst,
                batch: Mutex::new(&BATCH_LOCK, Vec::new()),
            }),
            ..self
        }
    }

    /// This endpoint telling `queued` of every load it queues.
    #[must_use]
    pub fn notifying(self, queued: Box<dyn Queued>) -> Self {
        Self {
            queued: Some(queued),
            ..self
        }
    }

    /// Queues `packet` due at `due_us`.
    fn send_at(&self, due_us: u64, packet: Outgoing<'_>) {
        let dst = match packet {
            Outgoing::Datagram { buf, len } => self.fabric.transmit_owned(due_us, buf, len),
            Outgoing::Train(train) => Some(self.fabric.transmit_train(due_us, train)),
        };
        self.queued(dst);
    }

    /// Tells the runtime a load for `dst` was queued.
    fn queued(&self, dst: Option<IpAddr>) {
        if let (Some(queued), Some(dst)) = (&self.queued, dst) {
            queued.queued_for(dst);
        }
    }
}

impl core::fmt::Debug for FabricEndpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FabricEndpoint")
            .field("fabric", &self.fabric)
            .field("trains", &self.trains)
            .field("addr", &self.receiver.as_ref().map(|r| r.addr))
            .finish_non_exhaustive()
    }
}

impl Link for FabricEndpoint {
    fn transmit(&self, packet: Outgoing<'_>) {
        self.send_at(self.clock.now_us(), packet);
    }

    /// The fabric queues it until due; a receiver woken now sleeps until
    /// then (its pass reports when the next load is due).
    fn transmit_later<'a>(&self, hold_us: u64, packet: Outgoing<'a>) -> Option<Outgoing<'a>> {
        self.send_at(self.clock.now_us().saturating_add(hold_us), packet);
        None
    }

    fn carries_trains(&self) -> bool {
        self.trains
    }

    /// What is due for the endpoint's address, one lock round of the
    /// fabric per batch (which also gives the last batch's buffers back);
    /// a train counts the packets it stands for. An endpoint without an
    /// address takes nothing.
    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        let Some(rx) = &self.receiver else {
            return Received::default();
        };
        let mut batch = rx.batch.lock();
        let now = self.clock.now_us();
        let (count, next_due_us) = self
            .fabric
            .exchange_due_for(rx.addr, now, &mut batch, rx.burst);
        let mut packets: usize = 0;
        for load in batch.iter() {
            let n = usize::try_from(load.packets()).unwrap_or(usize::MAX);
            packets = packets.saturating_add(n);
            match load {
                Load::Datagram(bytes) => deliver(Arrival::Datagram(bytes)),
                Load::Train(train) => deliver(Arrival::Train(train)),
            }
        }
        Received {
            count: packets,
            more: count >= rx.burst,
            next_due_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transmit_copy;
    use crate::{FaultInjector, FaultLink, Faults};
    use core::net::{Ipv4Addr, Ipv6Addr};
    use core::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

    #[derive(Default)]
    struct TestClock(AtomicU64);

    impl Clock for TestClock {
        fn now_us(&self) -> u64 {
            self.0.load(AtomicOrdering::Relaxed)
        }
    }

    fn datagram(dst: [u8; 4], tag: u8) -> Vec<u8> {
        let mut d = alloc::vec![0u8; 28];
        d[0] = 0x45;
        d[16..20].copy_from_slice(&dst);
        d[27] = tag;
        d
    }

    #[test]
    fn fabric_delivers_in_order_when_due() {
        let f = Fabric::new();
        for tag in 0..3 {
            f.transmit(15, &datagram([127, 0, 0, 2], tag));
        }
        assert!(f.take_due(14).is_none());
        let tags: Vec<u8> = core::iter::from_fn(|| f.take_due(15))
            .map(|(_, d)| d[27])
            .collect();
        assert_eq!(tags, [0, 1, 2]);
        assert_eq!(f.stats().delivered, 3);
    }

    #[test]
    fn faults_around_a_port_are_deterministic_per_seed_and_roughly_at_rate() {
        let faults = Faults {
            loss: 0.1,
            reorder: 0.1,
            duplicate: 0.1,
            reorder_window_us: 50,
            seed: 42,
            ..Faults::default()
        };
        let run = || {
            let f = Fabric::new();
            let clock = Arc::new(TestClock::default());
            let port = FaultLink::new(
                FabricEndpoint::new(f.clone(), clock.clone()),
                FaultInjector::new(faults),
                clock.clone(),
            );
            for i in 0..10_000u32 {
                clock.0.store(u64::from(i), AtomicOrdering::Relaxed);
                transmit_copy(&port, &datagram([127, 0, 0, 2], i as u8));
            }
            let order: Vec<u8> = core::iter::from_fn(|| f.take_due(u64::MAX))
                .map(|(_, d)| d[27])
                .collect();
            (port.injector().stats(), f.stats(), order)
        };
        let (a, fa, order_a) = run();
        let (b, fb, order_b) = run();
        assert_eq!(
            (a, fa, &order_a),
            (b, fb, &order_b),
            "same seed, same outcome"
        );
        assert!((800..1200).contains(&a.lost), "{a:?}");
        assert!((800..1200).contains(&a.duplicated), "{a:?}");
        assert_eq!(a.drawn, 10_000);
        assert_eq!(fa.sent, a.drawn - a.lost + a.duplicated);
        assert_eq!(fa.delivered, fa.sent);
        assert!(
            order_a.windows(2).any(|w| w[1] != w[0].wrapping_add(1)),
            "reordered"
        );
    }

    /// Records the destinations it is told of.
    #[derive(Default)]
    struct Told(spin::Mutex<Vec<IpAddr>>);

    impl Queued for Arc<Told> {
        fn queued_for(&self, dst: IpAddr) {
            self.0.lock().push(dst);
        }
    }

    #[test]
    fn an_endpoint_at_an_address_receives_what_is_due_there_and_tells_the_runtime() {
        let f = Fabric::new();
        let clock = Arc::new(TestClock::default());
        let told = Arc::new(Told::default());
        let (a4, b4) = (Ipv4Addr::new(127, 0, 0, 3), Ipv4Addr::new(127, 0, 0, 2));
        let a = FabricEndpoint::new(f.clone(), clock.clone()).notifying(Box::new(told.clone()));
        let b = FabricEndpoint::new(f.clone(), clock.clone()).receiving_at(b4, 2);
        for tag in 1..=3 {
            transmit_copy(&a, &datagram(b4.octets(), tag));
        }
        let mut buf = datagram(b4.octets(), 4);
        let len = buf.len();
        assert!(
            a.transmit_later(10, Outgoing::Datagram { buf: &mut buf, len })
                .is_none(),
            "the fabric holds it"
        );
        transmit_copy(&a, &datagram(a4.octets(), 9));
        assert_eq!(
            *told.0.lock(),
            [IpAddr::V4(b4); 4]
                .iter()
                .copied()
                .chain([a4.into()])
                .collect::<Vec<_>>()
        );
        let mut got = Vec::new();
        let take = |got: &mut Vec<u8>| {
            b.receive(&mut |arrival| match arrival {
                Arrival::Datagram(d) => got.push(d[27]),
                other => panic!("{other:?}"),
            })
        };
        let first = take(&mut got);
        assert_eq!(
            (first.count, first.more, first.next_due_us),
            (2, true, Some(0))
        );
        let second = take(&mut got);
        assert_eq!(
            (second.count, second.more, second.next_due_us),
            (1, false, Some(10))
        );
        assert_eq!(got, [1, 2, 3], "in order, a burst at a time, only b's");
        clock.0.store(10, AtomicOrdering::Relaxed);
        assert_eq!(take(&mut got).count, 1);
        assert_eq!(got, [1, 2, 3, 4], "the held one when due");
        assert_eq!(
            a.receive(&mut |_| panic!("a has no address")),
            Received::default()
        );
        assert_eq!(
            f.take_due_for(a4, 10).map(|d| d[27]),
            Some(9),
            "a's is left in the fabric"
        );
    }

    #[test]
    fn each_destination_takes_only_its_own_datagrams() {
        let f = Fabric::new();
        let (a4, b4) = (Ipv4Addr::new(127, 0, 0, 3), Ipv4Addr::new(127, 0, 0, 2));
        let (a, b) = (IpAddr::V4(a4), IpAddr::V4(b4));
        assert_eq!(f.transmit(15, &datagram(b4.octets(), 1)), Some(b));
        assert_eq!(f.transmit(16, &datagram(a4.octets(), 2)), Some(a));
        assert_eq!(f.transmit(17, &datagram(b4.octets(), 3)), Some(b));
        assert_eq!(f.next_due_for(a), Some(16));
        assert_eq!(f.next_due_for(b), Some(15));
        assert!(f.take_due_for(b, 14).is_none());
        let first = f.take_due_for(b, 100).unwrap();
        assert_eq!(first[27], 1);
        f.recycle(first);
        assert_eq!(f.take_due_for(b, 100).unwrap()[27], 3);
        assert!(f.take_due_for(b, 100).is_none());
        assert_eq!(f.in_flight(), 1);
        // A recycled buffer carries the next datagram, not its old bytes.
        f.transmit(25, &datagram(b4.octets(), 4));
        assert_eq!(f.take_due(u64::MAX).map(|(d, p)| (d, p[27])), Some((a, 2)));
        assert_eq!(f.take_due(u64::MAX).map(|(d, p)| (d, p[27])), Some((b, 4)));
        assert_eq!(f.stats().delivered, 4);
    }

    #[test]
    fn owned_transmits_swap_buffers_and_batches_recycle_them() {
        let f = Fabric::new();
        let b4 = Ipv4Addr::new(127, 0, 0, 2);
        let b = IpAddr::V4(b4);
        let mut buf = datagram(b4.octets(), 7);
        buf.resize(64, 0xAA);
        assert_eq!(f.transmit_owned(1, &mut buf, 28), Some(b));
        // The caller keeps a buffer as long as before.
        assert_eq!(buf.len(), 64);
        buf[0] = 0x45;
        buf[16..20].copy_from_slice(&b4.octets());
        buf[27] = 8;
        f.transmit_owned(2, &mut buf, 28);
        let mut batch = Vec::new();
        assert_eq!(f.exchange_due_for(b, 1, &mut batch, 8), (1, Some(2)));
        assert_eq!(
            batch
                .iter()
                .map(|d| d.datagram().map(|d| (d.len(), d[27])))
                .collect::<Vec<_>>(),
            [Some((28, 7))]
        );
        assert_eq!(f.exchange_due_for(b, 10, &mut batch, 8), (1, None));
        assert_eq!(batch[0].datagram().map(|d| d[27]), Some(8));
        assert_eq!(f.exchange_due_for(b, 10, &mut batch, 8), (0, None));
        assert!(batch.is_empty());
        // Both buffers went back to the pool and carry the next datagrams.
        f.transmit(3, &datagram(b4.octets(), 9));
        assert_eq!(f.take_due_for(b, 10).map(|d| d[27]), Some(9));
        assert_eq!(f.stats().delivered, 3);
    }

    #[test]
    fn short_datagrams_are_counted_and_dropped() {
        let f = Fabric::new();
        f.transmit(0, &[0u8; 10]);
        // An IPv6 header cut before its destination, and no IP version.
        f.transmit(0, &[0x60; 39]);
        f.transmit(0, &[0x50; 60]);
        assert_eq!(f.stats().malformed, 3);
        assert!(f.take_due(u64::MAX).is_none());
    }

    #[test]
    fn ipv6_datagrams_go_to_their_ipv6_destination() {
        let f = Fabric::new();
        let v6 = |last: u8, tag: u8| {
            let mut d = alloc::vec![0u8; 48];
            d[0] = 0x60;
            d[24] = 0xfd;
            d[39] = last;
            d[47] = tag;
            d
        };
        let (a, b) = (
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)),
        );
        assert_eq!(f.transmit(1, &v6(2, 1)), Some(b));
        assert_eq!(f.transmit(2, &v6(1, 2)), Some(a));
        // An IPv4 node whose address is the last bytes of an IPv6 one is
        // another destination.
        assert_eq!(
            f.transmit(3, &datagram([0, 0, 0, 2], 3)),
            Some(IpAddr::V4(Ipv4Addr::new(0, 0, 0, 2)))
        );
        assert_eq!(f.take_due_for(b, 10).map(|d| d[47]), Some(1));
        assert!(f.take_due_for(b, 10).is_none());
        assert_eq!(f.take_due_for(a, 10).map(|d| d[47]), Some(2));
        assert_eq!(f.in_flight(), 1);
    }
}

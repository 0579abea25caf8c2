//! Transmit backpressure: each device sends through a bounded transmit
//! ring (a NIC's) that a simulated wire drains one datagram every
//! [`FRAME_US`]. A ring that is full says so
//! ([`links::Link::can_transmit`]), and the runtime's pump
//! ([`links::LinkPump`]) then takes nothing more from the device:
//! its outboxes fill and its QPs stop where they are (parked); the
//! runtime's next pass, once the ring drained some, takes packets again,
//! which resumes them. Bursts far larger than the ring (a READ's
//! responses, a large WRITE or SEND) complete with the right data, every
//! packet sent once, no timeout and nothing dropped at the ring; the same
//! bursts through a ring that drops instead of saying no lose packets and
//! retransmit.

use crate::common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus, Verbs};
use links::Outgoing;
use links::{Capture, Direction, Link};
use softrnic::engine::EngineStats;
use softrnic::qp::QpState;

/// BTH opcode of an RC SEND Only with Invalidate.
const SEND_ONLY_WITH_INVALIDATE: u8 = 0x17;
/// Time the wire takes per datagram (µs): the ring drains at this pace.
const FRAME_US: u64 = 2;
const STEPS: u64 = 2_000_000;
const REMOTE: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);
/// Offset of the BTH PSN in an IPv4 datagram (IPv4 20 + UDP 8 + 9).
const PSN_AT: usize = 28 + 9;

/// A transmit ring of `capacity` datagrams in front of the wire.
#[derive(Debug, Default)]
struct Ring {
    frames: Mutex<VecDeque<Vec<u8>>>,
    capacity: AtomicUsize,
    /// Say `false` from `can_transmit` when full (else always `true`,
    /// and a full ring drops: what the RNIC had before backpressure).
    stops: bool,
    /// Times `can_transmit` said `false` (the pump stopped taking).
    refusals: AtomicU64,
    /// Datagrams given while the ring was full (dropped).
    overflowed: AtomicU64,
    /// When the last datagram left for the wire (µs).
    last_departure: AtomicU64,
}

impl Ring {
    fn new(capacity: usize, stops: bool) -> Arc<Self> {
        Arc::new(Self {
            capacity: AtomicUsize::new(capacity),
            stops,
            ..Self::default()
        })
    }

    fn has_room(&self) -> bool {
        self.frames.lock().unwrap().len() < self.capacity.load(Ordering::SeqCst)
    }

    /// The datagram that leaves for the wire at `now`, if one is due.
    fn depart(&self, now: u64) -> Option<Vec<u8>> {
        if now < self.last_departure.load(Ordering::SeqCst) + FRAME_US {
            return None;
        }
        let frame = self.frames.lock().unwrap().pop_front()?;
        self.last_departure.store(now, Ordering::SeqCst);
        Some(frame)
    }

    /// When the next datagram leaves, if one waits.
    fn next_due(&self) -> Option<u64> {
        let waiting = !self.frames.lock().unwrap().is_empty();
        waiting.then(|| self.last_departure.load(Ordering::SeqCst) + FRAME_US)
    }
}

/// A device's link: its ring.
struct RingLink(Arc<Ring>);

impl Link for RingLink {
    fn transmit(&self, packet: Outgoing<'_>) {
        let Some(datagram) = packet.datagram() else {
            return;
        };
        let ring = &self.0;
        let mut frames = ring.frames.lock().unwrap();
        if frames.len() < ring.capacity.load(Ordering::SeqCst) {
            frames.push_back(datagram.to_vec());
        } else {
            ring.overflowed.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn can_transmit(&self) -> bool {
        let ring = &self.0;
        if !ring.stops {
            return true;
        }
        let room = ring.has_room();
        if !room {
            ring.refusals.fetch_add(1, Ordering::SeqCst);
        }
        room
    }
}

/// The PSNs of the request packets a device sent, in order.
#[derive(Debug, Default)]
struct SentPsns(Mutex<Vec<u32>>);

struct Tap(Arc<SentPsns>);

impl Capture for Tap {
    fn capture(&self, direction: Direction, datagram: &[u8]) {
        if direction == Direction::Transmit
            && let Some(b) = datagram.get(PSN_AT..PSN_AT + 3)
        {
            let psn = u32::from_be_bytes([0, b[0], b[1], b[2]]);
            self.0.0.lock().unwrap().push(psn);
        }
    }
}

/// Two devices, each behind its ring.
struct Rings {
    clock: Arc<common::SimClock>,
    a: Node,
    b: Node,
    ring_a: Arc<Ring>,
    ring_b: Arc<Ring>,
}

impl Rings {
    fn new(capacity: usize, stops: bool) -> Self {
        let clock = Arc::new(common::SimClock::default());
        clock.set(1_000);
        let ring_a = Ring::new(capacity, stops);
        let ring_b = Ring::new(capacity, stops);
        let node = |addr, ring: &Arc<Ring>| {
            let node = Node::custom(
                addr,
                1024,
                &clock,
                8 << 20,
                Box::new(RingLink(ring.clone())),
                Box::new(NoWake),
            );
            node.dev.set_default_rc_config(fast_rc());
            node
        };
        let a = node(ADDR_A, &ring_a);
        let b = node(ADDR_B, &ring_b);
        Self {
            clock,
            a,
            b,
            ring_a,
            ring_b,
        }
    }

    fn connect(&self, qa: &Qp, qb: &Qp, psn_a: u32, psn_b: u32) {
        let path = |remote, remote_qpn, send_psn, recv_psn| softrnic::qp::Path {
            remote: std::net::SocketAddr::new(remote, 4791),
            remote_qpn,
            pmtu: 1024,
            send_psn,
            recv_psn,
            outbound_reads: 4,
            inbound_reads: 4,
        };
        let (a, b) = (&self.a, &self.b);
        a.dev
            .connect_qp(qa.qpn.raw(), path(b.addr, qb.qpn.raw(), psn_a, psn_b))
            .unwrap();
        b.dev
            .connect_qp(qb.qpn.raw(), path(a.addr, qa.qpn.raw(), psn_b, psn_a))
            .unwrap();
    }

    /// One step of the runtime: the wire takes what is due from each
    /// ring to the other device (which takes what it answers onto its
    /// ring, room allowing), both devices poll and their packets are
    /// taken onto their rings as far as there is room (a ring that
    /// drained some takes more then: nothing else tells the device);
    /// with nothing done, time moves to the next thing due. `false`:
    /// nothing is left to happen.
    fn step(&self) -> bool {
        let now = self.clock.now();
        let mut worked = false;
        for (ring, peer) in [(&self.ring_a, &self.b), (&self.ring_b, &self.a)] {
            if let Some(datagram) = ring.depart(now) {
                peer.receive(&datagram);
                worked = true;
            }
        }
        worked |= self.a.poll();
        worked |= self.b.poll();
        if worked {
            return true;
        }
        let next = [
            self.ring_a.next_due(),
            self.ring_b.next_due(),
            self.a.dev.next_timer_us(),
            self.b.dev.next_timer_us(),
        ]
        .into_iter()
        .flatten()
        .min();
        next.inspect(|&t| self.clock.set(t.max(now + 1))).is_some()
    }

    /// Steps until `done` holds; panics if it never does.
    fn run_until(&self, mut done: impl FnMut() -> bool) {
        let mut bench = self;
        let met = common::run_until(&mut bench, STEPS, |b| b.step(), |_| done());
        assert!(met, "not done after the run");
    }

    /// Steps for `us` microseconds of device time (or until nothing is
    /// left to happen).
    fn run_for(&self, us: u64) {
        let end = self.clock.now() + us;
        while self.clock.now() < end {
            if !self.step() {
                self.clock.set(end);
            }
        }
    }
}

/// What one burst did.
#[derive(Debug)]
struct Burst {
    a: EngineStats,
    b: EngineStats,
    overflowed: u64,
    /// Request PSNs A sent, in order.
    psns: Vec<u32>,
}

const WRITE_LEN: u32 = 1 << 20;
const SEND_LEN: u32 = 256 << 10;
const READ_LEN: u32 = 1 << 20;
const PSN_A: u32 = 0x00FF_FF00;

/// A WRITEs 1 MiB to B, SENDs 256 KiB and READs 1 MiB back, all posted
/// at once, through rings of `capacity` (stopping or dropping); checks
/// the data and completions and returns what it took.
fn burst(capacity: usize, stops: bool) -> Burst {
    let r = Rings::new(capacity, stops);
    let psns = Arc::new(SentPsns::default());
    r.a.set_capture(Some(Box::new(Tap(psns.clone()))));
    let mut qa = r.a.qp(16);
    let mut qb = r.b.qp(16);
    r.connect(&qa, &qb, PSN_A, 0x42);

    let src =
        r.a.register(u64::from(WRITE_LEN + SEND_LEN), Access::LOCAL_WRITE);
    let sink = r.a.register(u64::from(READ_LEN), Access::LOCAL_WRITE);
    let target = r.b.register(u64::from(WRITE_LEN), REMOTE);
    let remote = r.b.register(u64::from(READ_LEN), REMOTE);
    let recv = r.b.register(u64::from(SEND_LEN), Access::LOCAL_WRITE);
    let written = pattern(1, WRITE_LEN as usize);
    let sent = pattern(2, SEND_LEN as usize);
    let read = pattern(3, READ_LEN as usize);
    r.a.mem.fill(src.logical, &written);
    r.a.mem.fill(src.logical + u64::from(WRITE_LEN), &sent);
    r.b.mem.fill(remote.logical, &read);

    r.b.post_recv(&mut qb, 7, &[recv.sge(0, SEND_LEN)]);
    r.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 1, &[src.sge(0, WRITE_LEN)], &target, 0),
    );
    r.a.post_send(
        &mut qa,
        wqe(
            SendOpcode::Send,
            2,
            &[src.sge(u64::from(WRITE_LEN), SEND_LEN)],
        ),
    );
    r.a.post_send(
        &mut qa,
        rdma(SendOpcode::Read, 3, &[sink.sge(0, READ_LEN)], &remote, 0),
    );
    r.run_until(|| {
        qa.scq.drain();
        qb.rcq.drain();
        qa.scq.seen.len() == 3 && qb.rcq.seen.len() == 1
    });
    let done: Vec<_> = statuses(&qa.scq.seen);
    assert_eq!(
        done,
        [
            (1, CqeStatus::Success),
            (2, CqeStatus::Success),
            (3, CqeStatus::Success)
        ]
    );
    let got = &qb.rcq.seen[0];
    assert_eq!(
        (got.wr_id, got.cqe_status(), got.op(), got.byte_len),
        (7, CqeStatus::Success, Some(CqeOpcode::Receive), SEND_LEN)
    );
    assert!(
        r.b.mem.get(target.logical, WRITE_LEN as usize) == written,
        "WRITE data"
    );
    assert!(
        r.b.mem.get(recv.logical, SEND_LEN as usize) == sent,
        "SEND data"
    );
    assert!(
        r.a.mem.get(sink.logical, READ_LEN as usize) == read,
        "READ data"
    );
    assert_eq!(r.a.state(&qa), QpState::Connected);
    assert_eq!(r.b.state(&qb), QpState::Connected);
    Burst {
        a: r.a.dev.stats(),
        b: r.b.dev.stats(),
        overflowed: r.ring_a.overflowed.load(Ordering::SeqCst)
            + r.ring_b.overflowed.load(Ordering::SeqCst),
        psns: psns.0.lock().unwrap().clone(),
    }
}

/// Packets of `len` bytes at PMTU 1024.
fn packets(len: u32) -> u32 {
    len.div_ceil(1024)
}

/// Bursts 64 times the ring go through a ring that stops its senders:
/// nothing dropped, no timeout, every packet sent once (A's request PSNs
/// strictly in sequence), while both devices were stopped many times.
#[test]
fn bursts_far_larger_than_the_ring_complete_without_a_retransmission() {
    let b = burst(16, true);
    assert_eq!(b.overflowed, 0, "the ring dropped datagrams");
    for (who, s) in [("A", &b.a), ("B", &b.b)] {
        assert_eq!(
            (
                s.retransmitted,
                s.timeouts,
                s.read_gap_retries,
                s.seq_naks_received
            ),
            (0, 0, 0, 0),
            "{who}: {s:?}"
        );
    }
    let requests = packets(WRITE_LEN) + packets(SEND_LEN) + 1;
    let expected: Vec<u32> = (0..requests).map(|k| (PSN_A + k) & 0xFF_FFFF).collect();
    assert!(
        b.psns == expected,
        "A's request PSNs: {} sent, not 0..{requests} once each",
        b.psns.len()
    );
    assert_eq!(b.b.read_responses_sent, u64::from(packets(READ_LEN)));
    // Each full outbox parks its QP; only a turn that empties an outbox
    // resumes them (a turn over an outbox that was empty already resumes
    // nothing, so a parked QP does not spin through passes).
    assert!(b.a.tx_stalls > 10, "A never waited for its ring: {:?}", b.a);
    assert!(b.b.tx_stalls > 3, "B never waited for its ring: {:?}", b.b);
    for s in [&b.a, &b.b] {
        assert!(
            s.tx_resumes > 0 && s.tx_resumes <= s.tx_stalls,
            "resumes without stalls: {s:?}"
        );
    }
}

/// The same bursts through rings that drop when full (a link without
/// backpressure): datagrams are lost and retransmitted. Shows the rings
/// above constrain the devices.
#[test]
fn the_same_bursts_through_dropping_rings_lose_and_retransmit() {
    let b = burst(16, false);
    assert!(b.overflowed > 0, "{b:?}");
    assert!(b.a.retransmitted + b.b.read_responses_sent > u64::from(packets(READ_LEN)));
    assert_eq!((b.a.tx_stalls, b.b.tx_stalls), (0, 0));
}

/// A ring that takes nothing: the runtime takes no packet, the QP
/// records into its outbox until it is full and is parked there, once
/// (not spun on), however long the ring stays closed (many retransmit
/// timeouts' worth): nothing leaves, no timeout is counted and nothing is
/// sent again for packets that never left the host. Opened, the QP sends
/// everything from where it stopped, once, in PSN order.
#[test]
fn a_closed_ring_holds_a_qp_where_it_is_until_it_opens() {
    /// Four WRITEs of this: more packets than an outbox holds.
    const PART: u64 = 64 << 10;
    const PACKETS: u32 = 4 * (PART as u32 / 1024);
    let r = Rings::new(0, true);
    let psns = Arc::new(SentPsns::default());
    r.a.set_capture(Some(Box::new(Tap(psns.clone()))));
    let mut qa = r.a.qp(16);
    let qb = r.b.qp(16);
    r.connect(&qa, &qb, PSN_A, 0x42);
    let src = r.a.register(4 * PART, Access::LOCAL_WRITE);
    let target = r.b.register(4 * PART, REMOTE);
    let data = pattern(9, 4 * PART as usize);
    r.a.mem.fill(src.logical, &data);
    for i in 0..4u64 {
        r.a.post_send(
            &mut qa,
            rdma(
                SendOpcode::Write,
                i,
                &[src.sge(i * PART, PART as u32)],
                &target,
                i * PART,
            ),
        );
    }
    r.run_for(50_000);
    let held = r.a.dev.stats();
    assert_eq!(held.tx_packets, 0, "{held:?}");
    assert!(r.ring_a.refusals.load(Ordering::SeqCst) > 0);
    assert!(r.a.dev.has_transmits(), "its packets wait to be taken");
    assert_eq!(held.tx_stalls, 1, "parked once, not spun on: {held:?}");
    assert_eq!(
        (held.timeouts, held.retransmitted),
        (0, 0),
        "a retry spent on packets that never left: {held:?}"
    );
    assert_eq!(r.a.state(&qa), QpState::Connected);
    qa.scq.drain();
    assert!(qa.scq.seen.is_empty());

    r.ring_a.capacity.store(4, Ordering::SeqCst);
    r.ring_b.capacity.store(4, Ordering::SeqCst);
    r.run_until(|| {
        qa.scq.drain();
        qa.scq.seen.len() == 4
    });
    assert!(
        qa.scq
            .seen
            .iter()
            .all(|c| c.cqe_status() == CqeStatus::Success)
    );
    assert!(r.b.mem.get(target.logical, 4 * PART as usize) == data);
    let s = r.a.dev.stats();
    assert_eq!((s.retransmitted, s.timeouts), (0, 0), "{s:?}");
    assert!(s.tx_resumes > 0, "{s:?}");
    let expected: Vec<u32> = (0..PACKETS).map(|k| (PSN_A + k) & 0xFF_FFFF).collect();
    assert!(
        *psns.0.lock().unwrap() == expected,
        "PSNs not sent once each in order"
    );
}

/// A link that refuses once, after a given number of packets: the
/// runtime's turn ends there with packets still waiting.
struct RefusesOnce {
    ring: RingLink,
    /// `Some(n)`: say yes `n` more times, then no once.
    after: Mutex<Option<usize>>,
}

impl Link for RefusesOnce {
    fn transmit(&self, packet: Outgoing<'_>) {
        self.ring.transmit(packet);
    }
    fn can_transmit(&self) -> bool {
        let mut after = self.after.lock().unwrap();
        match *after {
            Some(0) => {
                *after = None;
                false
            }
            Some(n) => {
                *after = Some(n - 1);
                true
            }
            None => true,
        }
    }
}

/// A runtime whose room runs out mid-turn (its link says no once): the
/// turn ends there, the packets it did not take wait in the outbox (the
/// device says so), and its next turn takes them, nothing lost, nothing
/// sent twice, in PSN order. The outbox never filled: no QP was parked.
#[test]
fn a_turn_that_stops_early_leaves_the_rest_for_the_next() {
    let clock = Arc::new(common::SimClock::default());
    clock.set(1_000);
    let ring_a = Ring::new(usize::MAX, true);
    let ring_b = Ring::new(usize::MAX, true);
    let link = Arc::new(RefusesOnce {
        ring: RingLink(ring_a.clone()),
        after: Mutex::new(None),
    });
    let a = Node::custom(
        ADDR_A,
        1024,
        &clock,
        1 << 20,
        Box::new(link.clone()),
        Box::new(NoWake),
    );
    let b = Node::custom(
        ADDR_B,
        1024,
        &clock,
        1 << 20,
        Box::new(RingLink(ring_b.clone())),
        Box::new(NoWake),
    );
    let r = Rings {
        clock,
        a,
        b,
        ring_a,
        ring_b,
    };
    let psns = Arc::new(SentPsns::default());
    r.a.set_capture(Some(Box::new(Tap(psns.clone()))));
    let mut qa = r.a.qp(16);
    let mut qb = r.b.qp(16);
    r.connect(&qa, &qb, 0, 0);
    // Connecting rang the doorbell: nothing to send yet.
    r.a.poll();
    let src = r.a.register(8 << 10, Access::LOCAL_WRITE);
    let dst = r.b.register(8 << 10, Access::LOCAL_WRITE);
    r.a.mem.fill(src.logical, &pattern(4, 8 << 10));
    r.b.post_recv(&mut qb, 1, &[dst.sge(0, 8 << 10)]);
    r.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 8 << 10)]));
    *link.after.lock().unwrap() = Some(3);
    // One pass records the SEND's eight packets; its turn takes three.
    assert!(r.a.poll());
    assert_eq!(r.ring_a.frames.lock().unwrap().len(), 3);
    assert_eq!(*psns.0.lock().unwrap(), [0, 1, 2]);
    assert_eq!(r.a.dev.stats().tx_packets, 3);
    assert!(r.a.dev.has_transmits(), "five wait for the next turn");
    // The next turn (nothing else happened) takes the rest.
    assert_eq!(r.a.pump(), 5);
    assert!(!r.a.dev.has_transmits());
    r.run_until(|| {
        qa.scq.drain();
        qa.scq.seen.len() == 1
    });
    assert_eq!(statuses(&qa.scq.seen), [(1, CqeStatus::Success)]);
    let s = r.a.dev.stats();
    assert_eq!(
        (
            s.tx_packets,
            s.tx_stalls,
            s.tx_resumes,
            s.retransmitted,
            s.timeouts
        ),
        (8, 0, 0, 0, 0),
        "{s:?}"
    );
    assert_eq!(*psns.0.lock().unwrap(), (0..8).collect::<Vec<u32>>());
    assert!(r.b.mem.get(dst.logical, 8 << 10) == pattern(4, 8 << 10));
}

/// Packets recorded in A's outbox while its ring is full keep their
/// payload in A's memory; the consumer deregisters that memory before
/// they leave. The runtime's next turn checks each one's key as it reads
/// the payload (the one check after the WRITE started), finds it dead and
/// is handed none of them (no byte read through a dead key reaches B); it
/// reports the first, and the WRITE fails in order with
/// `LocalProtection` at once, without waiting for a retransmission.
#[test]
fn packets_whose_source_died_in_the_outbox_are_not_sent() {
    let r = Rings::new(4, true);
    let mut qa = r.a.qp(16);
    let qb = r.b.qp(16);
    r.connect(&qa, &qb, PSN_A, 0x42);
    let src = r.a.register(16 << 10, Access::LOCAL_WRITE);
    let target = r.b.register(16 << 10, REMOTE);
    let data = pattern(11, 16 << 10);
    r.a.mem.fill(src.logical, &data);
    r.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 1, &[src.sge(0, 16 << 10)], &target, 0),
    );
    // One pass records all 16 packets (the outbox has room for them);
    // the runtime's turn fills the ring with 4, the rest wait.
    r.a.poll();
    assert_eq!(r.ring_a.frames.lock().unwrap().len(), 4);
    assert_eq!(r.a.dev.stats().tx_packets, 4);
    assert!(r.a.dev.has_transmits());
    r.a.dev.deregister(src.key).unwrap();
    r.run_until(|| {
        qa.scq.drain();
        !qa.scq.seen.is_empty()
    });
    assert_eq!(qa.scq.seen[0].cqe_status(), CqeStatus::LocalProtection);
    let s = r.a.dev.stats();
    assert_eq!(
        (s.tx_packets, s.tx_source_gone, s.timeouts, s.retransmitted),
        (4, 12, 0, 0),
        "{s:?}"
    );
    // The four taken before the key died still reach B.
    r.run_until(|| r.ring_a.frames.lock().unwrap().is_empty());
    r.run_for(1_000);
    assert_eq!(r.ring_a.overflowed.load(Ordering::SeqCst), 0);
    assert!(r.b.mem.get(target.logical, 4 << 10) == data[..4 << 10]);
    assert!(r.b.mem.get(target.logical + (4 << 10), 12 << 10) == vec![0; 12 << 10]);
    assert_eq!(r.b.state(&qb), QpState::Connected);
}

/// What a device's tap saw, in order: each datagram's direction and
/// BTH opcode.
#[derive(Default)]
struct Opcodes(Mutex<Vec<(Direction, u8)>>);

struct OpcodeTap(Arc<Opcodes>);

impl Capture for OpcodeTap {
    fn capture(&self, direction: Direction, datagram: &[u8]) {
        // IPv4 20 + UDP 8: the BTH's first byte.
        if let Some(&op) = datagram.get(28) {
            self.0.0.lock().unwrap().push((direction, op));
        }
    }
}

/// The SMB Direct write path through full rings: A READs B's
/// fast-registered buffer and SENDs-with-invalidate its key right after.
/// B records all the READ's responses at once; its ring takes 4, the rest
/// wait in B's outbox, their payload still under the key when the SEND
/// arrives. They are built before the key dies and all leave: the READ
/// completes with the data (without that, they would be lost and the
/// READ, asked again, refused for the dead key).
#[test]
fn responses_waiting_for_link_room_leave_before_a_send_with_invalidate_kills_their_key() {
    const LEN: u32 = 16 << 10;
    const PAGE: u64 = 4096;
    let r = Rings::new(4, true);
    let seen_b = Arc::new(Opcodes::default());
    r.b.set_capture(Some(Box::new(OpcodeTap(seen_b.clone()))));
    let mut qa = r.a.qp(16);
    let mut qb = r.b.qp(16);
    r.connect(&qa, &qb, PSN_A, 0x42);
    let entry = r.b.dev.alloc_key(r.b.pd, false).unwrap();
    let pages = u64::from(LEN) / PAGE;
    r.b.dev
        .init_fast_register(entry, pages as u32, true)
        .unwrap();
    let backing = r.b.mem.alloc(u64::from(LEN));
    let data = pattern(12, LEN as usize);
    r.b.mem.fill(backing, &data);
    let key: hwq::MemoryKey = entry.next_variant();
    let list: Vec<u8> = (0..pages)
        .flat_map(|i| (backing + i * PAGE).to_le_bytes())
        .collect();
    let list_at = r.b.mem.alloc(list.len() as u64);
    r.b.mem.fill(list_at, &list);
    let va = 0x6600_0000_0000;
    let fr = hwq::SendWqe::from(hwq::SendRequest {
        wr_id: 900,
        signaled: true,
        read_fence: false,
        op: hwq::SendOp::FastRegister(hwq::wqe::FastRegister {
            key,
            access: REMOTE,
            va,
            length: u64::from(LEN),
            fbo: 0,
            page_count: pages as u32,
            page_list: list_at,
        }),
    });
    r.b.post_send(&mut qb, fr);
    r.run_until(|| {
        qb.scq.drain();
        !qb.scq.seen.is_empty()
    });
    assert_eq!(qb.scq.seen[0].cqe_status(), CqeStatus::Success);
    let remote = Buf {
        logical: backing,
        va,
        len: u64::from(LEN),
        key,
    };
    let sink = r.a.register(u64::from(LEN), Access::LOCAL_WRITE);
    let rbuf = r.b.register(4096, Access::LOCAL_WRITE);
    r.b.post_recv(&mut qb, 8, &[rbuf.sge(0, 4096)]);
    r.a.post_send(
        &mut qa,
        rdma(SendOpcode::Read, 1, &[sink.sge(0, LEN)], &remote, 0),
    );
    let mut inv = wqe(SendOpcode::SendInvalidate, 2, &[sink.sge(0, 100)]);
    inv.key = key.0;
    r.a.post_send(&mut qa, inv);
    r.run_until(|| {
        qa.scq.drain();
        qb.rcq.drain();
        qa.scq.seen.len() == 2 && qb.rcq.seen.len() == 1
    });
    let done: Vec<_> = statuses(&qa.scq.seen);
    assert_eq!(done, [(1, CqeStatus::Success), (2, CqeStatus::Success)]);
    let got = qb.rcq.seen[0];
    assert_eq!(
        (got.op(), got.invalidated_key),
        (Some(CqeOpcode::ReceiveInvalidate), key.0)
    );
    assert!(r.a.mem.get(sink.logical, LEN as usize) == data);
    let sb = r.b.dev.stats();
    // Responses left B after the SEND with invalidate reached it: they
    // waited in its outbox (its ring full) while the key died.
    let seen = seen_b.0.lock().unwrap().clone();
    let invalidated = seen
        .iter()
        .position(|&s| s == (Direction::Receive, SEND_ONLY_WITH_INVALIDATE))
        .expect("B received the SEND with invalidate");
    let late = seen[invalidated..]
        .iter()
        .filter(|&&(d, op)| d == Direction::Transmit && (0x0D..=0x10).contains(&op))
        .count();
    assert!(late > 0, "B's responses never waited: {seen:?}");
    assert!(r.ring_b.refusals.load(Ordering::SeqCst) > 0);
    assert_eq!(sb.read_responses_sent, u64::from(LEN / 1024), "{sb:?}");
    assert_eq!(
        (sb.tx_source_gone, sb.stale_read_refusals),
        (0, 0),
        "{sb:?}"
    );
    assert_eq!(r.a.dev.stats().retransmitted, 0);
}

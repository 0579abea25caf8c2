//! The transmit turn (`softrnic::transmit_turn`): the runtime takes what
//! the device sends, one taker at a time. A turn held keeps every other
//! taker out (a pump that finds it taken moves nothing); a turn that
//! stops early leaves the rest, in order, for the next; a turn that took
//! everything while more was recorded behind it asks for the engine; and
//! several threads pumping one device at once never reorder a QP's
//! packets.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use hwq::CqeStatus;
use hwq::wqe::{Access, SendOpcode};
use links::Outgoing;
use links::{
    Clock, FaultInjector, Faults, Link, LinkPump,
    fabric::{Fabric, FabricEndpoint},
};
use softrnic::arrival::Arrival;
use softrnic::env::Wake;
use softrnic::transmit::{Carriage, MAX_DATAGRAM, Transmit};
use softrnic::wire;

const REMOTE: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

/// Counts the engine wakes a device asks for.
#[derive(Default)]
struct Wakes {
    engine: AtomicU32,
}

struct CountingWake(Arc<Wakes>);

impl Wake for CountingWake {
    fn wake(&self) {}
    fn wake_engine(&self) {
        self.0.engine.fetch_add(1, Ordering::SeqCst);
    }
    fn consumer_poll(&self) -> bool {
        false
    }
}

/// Two devices on a loss-free fabric; A's link is `link` in front of its
/// fabric port, and A's waker `waker`.
fn world(link: impl FnOnce(FabricEndpoint) -> Box<dyn Link>, waker: Box<dyn Wake>) -> World {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let fabric = Fabric::new();
    let faults = FaultInjector::new(Faults::default());
    let c: Arc<dyn Clock> = clock.clone();
    let port = FabricEndpoint::new(fabric.clone(), c);
    let a = Node::custom(ADDR_A, 1024, &clock, 8 << 20, link(port), waker);
    let b = Node::new(ADDR_B, 1024, &fabric, &faults, &clock, 8 << 20);
    World::of(clock, fabric, faults, a, b)
}

/// (BTH opcode, destination QP, PSN) of an IPv4 RoCEv2 datagram.
fn bth(datagram: &[u8]) -> (u8, u32, u32) {
    let p = wire::parse(datagram).expect("a valid packet");
    (p.bth.opcode.0, p.bth.dest_qp, p.bth.psn)
}

/// A turn held keeps every other taker out; one left before everything
/// was taken leaves the rest, in order, noted as waiting, for the next
/// turn; what was taken in two turns is every packet once, in PSN order,
/// and the peer takes the message without a NAK.
#[test]
fn a_turn_is_held_alone_and_one_left_early_leaves_the_rest_in_order() {
    let wakes = Arc::new(Wakes::default());
    let mut w = world(|port| Box::new(port), Box::new(CountingWake(wakes.clone())));
    let mut qa = w.a.qp(16);
    let mut qb = w.b.qp(16);
    w.connect(&qa, &qb, 1024, 500, 900, 4);
    w.settle(100);
    let src = w.a.register(8 << 10, Access::LOCAL_WRITE);
    let dst = w.b.register(8 << 10, Access::LOCAL_WRITE);
    w.a.mem.fill(src.logical, &pattern(3, 8 << 10));
    w.b.post_recv(&mut qb, 1, &[dst.sge(0, 8 << 10)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 8 << 10)]));
    // The device's pass alone: the SEND's eight packets are recorded and
    // wait for the runtime.
    let now = w.clock.now();
    assert!(w.a.dev.poll(now));
    assert!(w.a.dev.has_transmits());
    assert_eq!(w.fabric.in_flight(), 0, "nothing leaves by itself");

    let carriage = Carriage::default();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut taken = Vec::new();
    let mut take = |turn: &mut softrnic::transmit_turn::TransmitTurn<'_>| {
        let t = turn.poll_transmit(&mut buf, carriage)?;
        let Transmit::Datagram(n) = t else {
            panic!("a default carriage takes datagrams: {t:?}");
        };
        Some(buf[..n].to_vec())
    };
    {
        let mut first = w.a.dev.transmit_turn().expect("the turn is free");
        assert!(w.a.dev.transmit_turn().is_none(), "one taker at a time");
        assert_eq!(w.a.pump(), 0, "a pump finding the turn taken moves nothing");
        for _ in 0..3 {
            taken.push(take(&mut first).expect("a packet"));
        }
        // The runtime has no room for more: it lets go.
    }
    assert!(w.a.dev.has_transmits(), "five wait for the next turn");
    assert_eq!(w.a.dev.stats().tx_packets, 3);
    {
        let mut next = w.a.dev.transmit_turn().expect("given back");
        while let Some(d) = take(&mut next) {
            taken.push(d);
        }
    }
    assert!(!w.a.dev.has_transmits());
    let psns: Vec<u32> = taken.iter().map(|d| bth(d).2).collect();
    assert_eq!(
        psns,
        (500..508).collect::<Vec<u32>>(),
        "each once, in order"
    );
    assert!(taken.iter().all(|d| bth(d).1 == qb.qpn.raw()));
    // Neither turn asked for the engine: the first stopped for want of
    // room (its runtime comes back), the second found nothing recorded
    // behind it.
    assert_eq!(wakes.engine.load(Ordering::SeqCst), 0);

    for d in &taken {
        w.b.receive(d);
    }
    w.run_until(10_000, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        !qa.scq.seen.is_empty() && !qb.rcq.seen.is_empty()
    });
    assert_eq!(statuses(&qa.scq.seen), [(1, CqeStatus::Success)]);
    assert_eq!(statuses(&qb.rcq.seen), [(1, CqeStatus::Success)]);
    assert_eq!(w.b.mem.get(dst.logical, 8 << 10), pattern(3, 8 << 10));
    let sb = w.b.dev.stats();
    assert_eq!(
        (sb.duplicates, sb.out_of_sequence, sb.seq_naks_sent),
        (0, 0, 0),
        "{sb:?}"
    );
    assert_eq!(w.a.dev.stats().retransmitted, 0);
}

/// A turn that took everything while more was recorded behind it (a
/// caller that found the turn taken left its packets to the holder) asks
/// for the engine when it lets go, so they do not wait for the next
/// arrival; the next turn takes them.
#[test]
fn a_turn_that_took_everything_asks_for_the_engine_for_what_came_behind() {
    let wakes = Arc::new(Wakes::default());
    let w = world(|port| Box::new(port), Box::new(CountingWake(wakes.clone())));
    let mut qa = w.a.qp(16);
    let qb = w.b.qp(16);
    w.connect(&qa, &qb, 1024, 500, 900, 4);
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    let target = w.b.register(4096, REMOTE);
    let now = w.clock.now();
    w.a.dev.poll(now);
    w.a.pump();
    let before = wakes.engine.load(Ordering::SeqCst);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut turn = w.a.dev.transmit_turn().expect("the turn is free");
    assert!(turn.poll_transmit(&mut buf, Carriage::default()).is_none());
    // Recorded while the turn is held, after it looked.
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 1, &[src.sge(0, 2048)], &target, 0),
    );
    assert!(w.a.dev.poll(now));
    assert!(w.a.dev.has_transmits());
    assert_eq!(w.a.pump(), 0, "the turn is held: nothing moves");
    drop(turn);
    assert_eq!(
        wakes.engine.load(Ordering::SeqCst),
        before + 1,
        "the holder asked for the engine"
    );
    assert_eq!(w.a.pump(), 2, "the next turn takes them");
    assert!(!w.a.dev.has_transmits());
}

/// A's link: records the (destination QP, PSN) of every request it is
/// given, in the order given, yielding the processor first so that a
/// taker without the turn would overtake; then hands it to the fabric.
struct Recording {
    port: FabricEndpoint,
    sent: Mutex<Vec<(u32, u32)>>,
}

impl Link for Recording {
    fn transmit(&self, packet: Outgoing<'_>) {
        let (_, qp, psn) = bth(packet.datagram().expect("no trains on this link"));
        for _ in 0..8 {
            std::thread::yield_now();
        }
        self.sent.lock().unwrap().push((qp, psn));
        self.port.transmit(packet);
    }
}

const QPS: u32 = 4;
const WRITES: u32 = 8;
const LEN: u32 = 8 << 10;
/// Packets of one QP's WRITEs.
const PACKETS: u32 = WRITES * LEN / 1024;

/// `QPS` QPs of A connected to as many of B (QP `i` from PSN
/// `1000 * (i + 1)`), each with `WRITES` WRITEs of `LEN` bytes posted to
/// a buffer of its own on B; the QPs, B's QPs and the targets.
fn post_writes(w: &World) -> (Vec<Qp>, Vec<Qp>, Vec<Buf>) {
    let mut qas = Vec::new();
    let mut qbs = Vec::new();
    for i in 0..QPS {
        let (qa, qb) = (w.a.qp(16), w.b.qp(16));
        w.connect(&qa, &qb, 1024, 1000 * (i + 1), 50_000 + i, 4);
        qas.push(qa);
        qbs.push(qb);
    }
    let src = w.a.register(u64::from(LEN), Access::LOCAL_WRITE);
    w.a.mem.fill(src.logical, &pattern(8, LEN as usize));
    let targets: Vec<Buf> = (0..QPS)
        .map(|_| w.b.register(u64::from(WRITES * LEN), REMOTE))
        .collect();
    for (qa, target) in qas.iter_mut().zip(&targets) {
        for k in 0..WRITES {
            let write = rdma(
                SendOpcode::Write,
                u64::from(k),
                &[src.sge(0, LEN)],
                target,
                u64::from(k * LEN),
            );
            w.a.post_send(qa, write);
        }
    }
    (qas, qbs, targets)
}

/// Steps `w` (due packets delivered, both devices polled; B's packets
/// taken after each, A's left to `pumps` other threads) until every QP of
/// `qas` has its WRITEs' completions; whether they came. Time moves on
/// only while none of A's packets wait for a taker (`pumping` counts the
/// takers at work), so no timer runs out for a packet not yet taken.
fn run_until_written(w: &World, qas: &mut [Qp], pumping: &AtomicUsize) -> bool {
    for _ in 0..1_000_000 {
        let now = w.clock.now();
        let mut worked = false;
        while let Some((dst, bytes)) = w.fabric.take_due(now) {
            worked = true;
            if dst == w.a.addr {
                w.a.dev.receive(now, Arrival::Datagram(&bytes));
            } else {
                w.b.receive(&bytes);
            }
        }
        worked |= w.a.dev.poll(now);
        worked |= w.b.poll();
        let done = qas.iter_mut().all(|qa| {
            qa.scq.drain();
            qa.scq.seen.len() == WRITES as usize
        });
        if done {
            return true;
        }
        // In this order: a taker clears the flag only once counted.
        let waiting = w.a.dev.has_transmits() || pumping.load(Ordering::SeqCst) > 0;
        if worked || waiting || !advance_to_next_event(&w.clock, &w.fabric, [&w.a, &w.b]) {
            std::thread::yield_now();
        }
    }
    false
}

/// Two threads take A's packets at once, each into a buffer of its own,
/// while four QPs, one per outbox, WRITE to B (the stepping loop runs A's
/// passes and takes nothing): each QP's packets reach the wire once each,
/// in PSN order; B sees no duplicate and nothing out of sequence; nothing
/// is resent.
#[test]
fn threads_pumping_one_device_at_once_never_reorder_a_qps_packets() {
    let mut made = None;
    let w = world(
        |port| {
            let link = Arc::new(Recording {
                port,
                sent: Mutex::new(Vec::new()),
            });
            made = Some(link.clone());
            Box::new(link)
        },
        Box::new(NoWake),
    );
    let link = made.expect("the world's link");
    let (mut qas, qbs, targets) = post_writes(&w);
    let stop = AtomicBool::new(false);
    let pumping = AtomicUsize::new(0);
    let moved = [AtomicUsize::new(0), AtomicUsize::new(0)];
    std::thread::scope(|s| {
        for moved in &moved {
            s.spawn(|| {
                // A taker with a buffer of its own: only the device's
                // turn keeps it from taking beside the other.
                let pump = LinkPump::new().unwrap();
                while !stop.load(Ordering::SeqCst) {
                    pumping.fetch_add(1, Ordering::SeqCst);
                    let n = pump.pump(&w.a.dev, &*w.a.capture, w.clock.now());
                    pumping.fetch_sub(1, Ordering::SeqCst);
                    moved.fetch_add(n, Ordering::SeqCst);
                    std::thread::yield_now();
                }
            });
        }
        let done = run_until_written(&w, &mut qas, &pumping);
        stop.store(true, Ordering::SeqCst);
        assert!(done, "the WRITEs did not complete");
    });
    for qa in &qas {
        assert_eq!(
            statuses(&qa.scq.seen),
            (0..u64::from(WRITES))
                .map(|k| (k, CqeStatus::Success))
                .collect::<Vec<_>>()
        );
    }
    for target in &targets {
        for k in 0..WRITES {
            let at = target.logical + u64::from(k * LEN);
            assert!(w.b.mem.get(at, LEN as usize) == pattern(8, LEN as usize));
        }
    }
    let mut per_qp: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(qp, psn) in link.sent.lock().unwrap().iter() {
        per_qp.entry(qp).or_default().push(psn);
    }
    assert_eq!(per_qp.len(), QPS as usize);
    for (i, qb) in qbs.iter().enumerate() {
        let first = 1000 * (i as u32 + 1);
        assert!(
            per_qp[&qb.qpn.raw()] == (first..first + PACKETS).collect::<Vec<u32>>(),
            "QP {i}: its packets left out of order or more than once"
        );
    }
    let moved = moved.map(AtomicUsize::into_inner);
    assert_eq!(
        moved.iter().sum::<usize>(),
        link.sent.lock().unwrap().len(),
        "the two threads took every packet ({moved:?})"
    );
    let (sa, sb) = (w.a.dev.stats(), w.b.dev.stats());
    assert_eq!((sa.retransmitted, sa.timeouts), (0, 0), "{sa:?}");
    assert_eq!(
        (sb.duplicates, sb.out_of_sequence, sb.seq_naks_sent),
        (0, 0, 0),
        "{sb:?}"
    );
}

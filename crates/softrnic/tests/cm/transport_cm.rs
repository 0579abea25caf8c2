//! Connection establishment as the RC transport sees it: a lost RTU must
//! not cost the initiator's first message (the acceptor's QP establishes
//! on the first request packet), two sides with different path MTUs
//! agree on the smaller one, and a side offers no more than its runtime's
//! route to the peer carries.

use crate::common;
use hwq::{Connections, Device};

use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::net::accept_params;
use crate::common::net::{Ev, Recorder};
use common::*;
use hwq::device::{ConnectParams, EventSink};
use hwq::wqe::{Access, SendOpcode};
use hwq::{ConnId, CqeOpcode, CqeStatus};
use links::{
    Capture, Clock, Direction, FaultInjector, FaultLink, Faults,
    fabric::{Fabric, FabricEndpoint},
};
use softrnic::device::SoftRnic;
use softrnic::env::Routes;
use softrnic::qp::QpState;

const STEPS: u64 = 200_000;
/// Bytes moved each way in the MTU tests.
const LEN: u32 = 64 * 1024;

fn clean() -> Faults {
    Faults {
        delay_us: 10,
        ..Faults::default()
    }
}

fn recorder(dev: &SoftRnic) -> Arc<Recorder> {
    let r = Arc::new(Recorder::default());
    // Never dropped: the device may deliver to it until the process ends.
    std::mem::forget(r.clone());
    // SAFETY: the recorder lives for the rest of the process (see above)
    // and its `Arc` allocation does not move.
    dev.attach(unsafe { EventSink::new(&*r) }).unwrap();
    r
}

fn events(r: &Recorder) -> Vec<Ev> {
    r.cm.lock().unwrap().clone()
}

/// A world whose two devices have path MTUs `pmtu_a` and `pmtu_b`.
fn world(pmtu_a: u32, pmtu_b: u32) -> World {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let fabric = Fabric::new();
    let faults = FaultInjector::new(clean());
    let a = Node::new(ADDR_A, pmtu_a, &fabric, &faults, &clock, 4 << 20);
    let b = Node::new(ADDR_B, pmtu_b, &fabric, &faults, &clock, 4 << 20);
    World::of(clock, fabric, faults, a, b)
}

struct Connected {
    w: World,
    qa: Qp,
    qb: Qp,
    ra: Arc<Recorder>,
    rb: Arc<Recorder>,
    cb: ConnId,
}

/// A connects to B's listener; B accepts; A establishes, with the RTU
/// lost when `lose_rtu`.
fn connect(mut w: World, lose_rtu: bool) -> Connected {
    let (ra, rb) = (recorder(&w.a.dev), recorder(&w.b.dev));
    let service = SocketAddr::V4(SocketAddrV4::new(ADDR_B, 445));
    w.b.dev.cm_listen(service).unwrap();
    let (qa, qb) = (w.a.qp(16), w.b.qp(16));
    let params = ConnectParams {
        local: SocketAddr::V4(SocketAddrV4::new(ADDR_A, 0)),
        remote: service,
        inbound_reads: 4,
        outbound_reads: 4,
        private_data: b"",
    };
    let (ca, _) = w.a.dev.cm_connect(qa.qpn, &params).unwrap();
    w.run_until(STEPS, |_| {
        events(&rb)
            .iter()
            .any(|e| matches!(e, Ev::ConnectRequest { .. }))
    });
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = events(&rb).pop() else {
        panic!("no connect request")
    };
    w.b.dev
        .cm_accept(cb, &accept_params(qb.qpn, 4, 4, b""))
        .unwrap();
    w.run_until(STEPS, |_| {
        events(&ra).iter().any(|e| matches!(e, Ev::Replied { .. }))
    });
    if lose_rtu {
        w.faults.set_faults(Faults {
            loss: 1.0,
            ..clean()
        });
    }
    w.a.dev.cm_establish(ca).unwrap();
    // The runtime takes the RTU (its device woke it), into the loss if
    // it is to be lost.
    assert_eq!(w.a.pump(), 1);
    w.faults.set_faults(clean());
    Connected {
        w,
        qa,
        qb,
        ra,
        rb,
        cb,
    }
}

/// The RTU is lost and the initiator sends at once: the SEND lands (no
/// wait for the acceptor's REP retransmission), the acceptor reports the
/// connection established exactly once.
#[test]
fn first_send_establishes_when_the_rtu_is_lost() {
    let Connected {
        mut w,
        mut qa,
        mut qb,
        ra,
        rb,
        cb,
        ..
    } = connect(world(1024, 1024), true);
    assert_eq!(w.faults.stats().lost, 1, "the RTU was dropped");
    let all = Access::LOCAL_WRITE;
    let (src, dst) = (w.a.register(8192, all), w.b.register(8192, all));
    w.b.post_recv(&mut qb, 1, &[dst.sge(0, 8192)]);
    let message = pattern(5, 3000);
    w.a.mem.fill(src.logical, &message);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 7, &[src.sge(0, 3000)]));
    w.run_until(STEPS, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        !qa.scq.seen.is_empty() && !qb.rcq.seen.is_empty()
    });
    let (s, r) = (qa.scq.seen[0], qb.rcq.seen[0]);
    assert_eq!((s.wr_id, s.cqe_status()), (7, CqeStatus::Success));
    assert_eq!(
        (r.wr_id, r.op(), r.cqe_status(), r.byte_len),
        (1, Some(CqeOpcode::Receive), CqeStatus::Success, 3000)
    );
    assert_eq!(w.b.mem.get(dst.logical, 3000), message);
    // Established by the data, not by a REP retransmission and RTU.
    assert_eq!(w.b.dev.cm_stats().implicit_establish, 1);
    assert_eq!(w.b.dev.cm_stats().retransmitted, 0);
    assert_eq!(w.a.dev.stats().timeouts, 0, "no retransmission needed");
    w.settle(STEPS);
    let established: Vec<_> = events(&rb)
        .into_iter()
        .filter(|e| matches!(e, Ev::Established { .. }))
        .collect();
    assert_eq!(established, [Ev::Established { conn_id: cb }]);
    assert!(
        events(&ra)
            .iter()
            .chain(events(&rb).iter())
            .all(|e| !matches!(e, Ev::Failed { .. } | Ev::Disconnected { .. }))
    );
    assert_eq!(
        (w.a.state(&qa), w.b.state(&qb)),
        (QpState::Connected, QpState::Connected)
    );
}

/// A request from an address other than the peer's does not establish.
#[test]
fn a_stranger_does_not_establish_the_acceptor() {
    let c = connect(world(1024, 1024), true);
    let mut w = c.w;
    // A third device at another address sends to B's QP number.
    let stranger = Node::new(
        std::net::Ipv4Addr::new(10, 0, 0, 9),
        1024,
        &w.fabric,
        &w.faults,
        &w.clock,
        1 << 20,
    );
    let mut qs = stranger.qp(4);
    let path = softrnic::qp::Path {
        remote: SocketAddrV4::new(ADDR_B, 4791).into(),
        remote_qpn: c.qb.qpn.raw(),
        pmtu: 1024,
        send_psn: 0,
        recv_psn: 0,
        outbound_reads: 0,
        inbound_reads: 0,
    };
    stranger.dev.connect_qp(qs.qpn.raw(), path).unwrap();
    let buf = stranger.register(64, Access::LOCAL_WRITE);
    stranger.post_send(&mut qs, wqe(SendOpcode::Send, 1, &[buf.sge(0, 64)]));
    for _ in 0..20 {
        stranger.poll();
        let now = w.clock.now();
        while let Some((dst, bytes)) = w.fabric.take_due(now + 100) {
            if dst == ADDR_B {
                w.b.receive(&bytes);
            }
        }
        w.clock.set(now + 100);
    }
    assert_eq!(w.b.dev.cm_stats().implicit_establish, 0);
    assert_eq!(w.b.state(&c.qb), QpState::Init);
    // The real peer's REP retransmission and RTU still establish it.
    w.settle(STEPS);
    assert_eq!(w.b.state(&c.qb), QpState::Connected);
    assert!(events(&c.rb).contains(&Ev::Established { conn_id: c.cb }));
}

/// Records the largest RC payload a device transmits (MADs excluded).
#[derive(Default)]
struct LargestPayload(AtomicUsize);

impl Capture for LargestPayload {
    fn capture(&self, direction: Direction, datagram: &[u8]) {
        // IPv4 20 + UDP 8 + BTH 12; QP1 (the CM) is not data.
        let dest_qp = datagram
            .get(33..36)
            .map_or(1, |b| u32::from_be_bytes([0, b[0], b[1], b[2]]));
        if matches!(direction, Direction::Transmit) && dest_qp != 1 {
            let pad = usize::from(datagram.get(29).map_or(0, |b| (b >> 4) & 3));
            // Headers after the BTH differ by opcode; the payload is at
            // most the datagram less IPv4, UDP, BTH, pad and ICRC.
            let payload = datagram.len().saturating_sub(20 + 8 + 12 + pad + 4);
            self.0.fetch_max(payload, Ordering::Relaxed);
        }
    }
}

struct Tap(Arc<LargestPayload>);
impl Capture for Tap {
    fn capture(&self, direction: Direction, datagram: &[u8]) {
        self.0.capture(direction, datagram);
    }
}

/// Connects two devices with path MTUs `pmtu_a` (initiator) and `pmtu_b`
/// (acceptor), then moves 64 KiB each way by SEND, WRITE and READ; no
/// packet carries more than the smaller MTU (plus the largest extension
/// headers), and every byte arrives.
fn mismatched_mtus(pmtu_a: u32, pmtu_b: u32) {
    negotiated(world(pmtu_a, pmtu_b), pmtu_a.min(pmtu_b), pmtu_a > pmtu_b);
}

/// Connects `w`'s A to B, then moves 64 KiB each way by SEND, WRITE and
/// READ; the initiator asked again with a smaller MTU if `retried`; no
/// packet carries more than `mtu` (plus the largest extension headers),
/// and every byte arrives.
fn negotiated(w: World, mtu: u32, retried: bool) {
    let (pmtu_a, pmtu_b) = (w.a.dev.config().pmtu, w.b.dev.config().pmtu);
    let Connected {
        mut w,
        mut qa,
        mut qb,
        ra,
        rb,
        cb,
    } = connect(w, false);
    let small = mtu as usize;
    w.run_until(STEPS, |_| {
        events(&rb).contains(&Ev::Established { conn_id: cb })
    });
    assert!(
        events(&ra)
            .iter()
            .chain(events(&rb).iter())
            .all(|e| !matches!(e, Ev::Failed { .. } | Ev::Rejected { .. })),
        "connected"
    );
    assert_eq!(w.a.dev.cm_stats().mtu_retries, u64::from(retried));
    let (tap_a, tap_b) = (
        Arc::new(LargestPayload::default()),
        Arc::new(LargestPayload::default()),
    );
    w.a.set_capture(Some(Box::new(Tap(tap_a.clone()))));
    w.b.set_capture(Some(Box::new(Tap(tap_b.clone()))));
    let all = Access::LOCAL_WRITE
        .union(Access::REMOTE_READ)
        .union(Access::REMOTE_WRITE);
    let (ba, bb) = (
        w.a.register(u64::from(LEN) * 2, all),
        w.b.register(u64::from(LEN) * 2, all),
    );
    let (da, db) = (pattern(1, LEN as usize), pattern(2, LEN as usize));
    w.a.mem.fill(ba.logical, &da);
    w.b.mem.fill(bb.logical, &db);
    // SEND both ways.
    w.b.post_recv(&mut qb, 1, &[bb.sge(u64::from(LEN), LEN)]);
    w.a.post_recv(&mut qa, 2, &[ba.sge(u64::from(LEN), LEN)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 11, &[ba.sge(0, LEN)]));
    w.b.post_send(&mut qb, wqe(SendOpcode::Send, 12, &[bb.sge(0, LEN)]));
    w.run_until(STEPS, |_| {
        for q in [&mut qa, &mut qb] {
            q.scq.drain();
            q.rcq.drain();
        }
        qa.scq.seen.len() == 1
            && qb.scq.seen.len() == 1
            && qa.rcq.seen.len() == 1
            && qb.rcq.seen.len() == 1
    });
    for c in [
        qa.scq.seen[0],
        qb.scq.seen[0],
        qa.rcq.seen[0],
        qb.rcq.seen[0],
    ] {
        assert_eq!(c.cqe_status(), CqeStatus::Success, "{c:?}");
    }
    assert!(w.b.mem.get(bb.logical + u64::from(LEN), LEN as usize) == da);
    assert!(w.a.mem.get(ba.logical + u64::from(LEN), LEN as usize) == db);
    // A WRITEs and READs B's memory, B READs A's.
    let (da2, db2) = (pattern(3, LEN as usize), pattern(4, LEN as usize));
    w.a.mem.fill(ba.logical, &da2);
    w.b.mem.fill(bb.logical, &db2);
    w.a.post_send(
        &mut qa,
        rdma(
            SendOpcode::Write,
            21,
            &[ba.sge(0, LEN)],
            &bb,
            u64::from(LEN),
        ),
    );
    w.b.post_send(
        &mut qb,
        rdma(SendOpcode::Read, 22, &[bb.sge(0, LEN)], &ba, 0),
    );
    w.run_until(STEPS, |_| {
        qa.scq.drain();
        qb.scq.drain();
        qa.scq.seen.len() == 2 && qb.scq.seen.len() == 2
    });
    assert_eq!(
        (qa.scq.seen[1].cqe_status(), qb.scq.seen[1].cqe_status()),
        (CqeStatus::Success, CqeStatus::Success)
    );
    assert!(w.b.mem.get(bb.logical + u64::from(LEN), LEN as usize) == da2);
    assert!(w.b.mem.get(bb.logical, LEN as usize) == da2);
    // Segmentation followed the smaller MTU on both sides: the largest
    // payload seen is at least `small` (64 KiB needs full packets) and
    // below the next MTU step.
    for (side, tap) in [("A", &tap_a), ("B", &tap_b)] {
        let largest = tap.0.load(Ordering::Relaxed);
        assert!(
            largest >= small && largest < small * 2,
            "{side}: largest payload {largest} with MTUs {pmtu_a}/{pmtu_b}"
        );
    }
    assert_eq!(
        (w.a.state(&qa), w.b.state(&qb)),
        (QpState::Connected, QpState::Connected)
    );
}

/// The initiator's MTU is the larger: the acceptor refuses it with its
/// own, and the initiator asks again with that (one connection attempt
/// for the consumers).
#[test]
fn larger_initiator_mtu_is_negotiated_down() {
    mismatched_mtus(4096, 1024);
}

/// The acceptor's MTU is the larger: it takes the REQ's.
#[test]
fn larger_acceptor_mtu_takes_the_requests() {
    mismatched_mtus(1024, 4096);
}

/// A runtime's routes: one path MTU to every peer, and who was asked
/// about.
struct Route {
    mtu: Option<u32>,
    asked: Mutex<Vec<IpAddr>>,
}

impl Routes for Route {
    fn path_mtu(&self, dst: IpAddr) -> Option<u32> {
        self.asked.lock().unwrap().push(dst);
        self.mtu
    }
}

/// Both devices are configured for 4096, but A's runtime's route to B
/// carries 1024-byte payloads (a 1500-byte Ethernet path): A offers 1024
/// in its REQ at once (no second attempt), and every packet either way
/// carries at most that. The route is asked about B for the connection,
/// never per packet.
#[test]
fn a_route_s_mtu_caps_what_the_initiator_offers() {
    let route = Arc::new(Route {
        mtu: Some(1024),
        asked: Mutex::new(Vec::new()),
    });
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let fabric = Fabric::new();
    let faults = FaultInjector::new(clean());
    let c: Arc<dyn Clock> = clock.clone();
    let port = FaultLink::new(
        FabricEndpoint::new(fabric.clone(), c.clone()),
        faults.clone(),
        c,
    );
    let a = Node::routed(
        ADDR_A,
        4096,
        &clock,
        4 << 20,
        Box::new(port),
        Box::new(route.clone()),
        Box::new(NoWake),
    );
    let b = Node::new(ADDR_B, 4096, &fabric, &faults, &clock, 4 << 20);
    let w = World::of(clock, fabric, faults, a, b);
    negotiated(w, 1024, false);
    let asked = route.asked.lock().unwrap().clone();
    assert!(!asked.is_empty(), "the route was never asked");
    assert!(
        asked.iter().all(|&dst| dst == IpAddr::V4(ADDR_B)),
        "{asked:?}"
    );
    assert!(asked.len() <= 2, "asked per packet: {}", asked.len());
}

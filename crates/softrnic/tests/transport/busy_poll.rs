//! Passes and busy polling (`softrnic::pass`): a consumer's poll runs a
//! pass only when the runtime's hook says so; a consumer's pass sends rung
//! work and takes arrivals from a polled link, never delivers events (it
//! asks the device's own context instead), and no pass runs beside
//! another. When consumers poll (allowed, bulk backoff) is the runtime's
//! policy, tested with it (`host::busy`).

use crate::common;
use hwq::Verbs;

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use common::*;
use hwq::device::Device;
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus};
use links::Outgoing;
use links::{Link, Pass, PassPlan, Received};
use softrnic::arrival::Arrival;
use softrnic::env::Wake;
use softrnic::qp::RcConfig;

/// A wire with one inbound queue per address, read only by polling.
#[derive(Default)]
struct Wire {
    queues: Mutex<Vec<(Ipv4Addr, VecDeque<Vec<u8>>)>>,
}

impl Wire {
    fn queued_for(&self, addr: Ipv4Addr) -> usize {
        let q = self.queues.lock().unwrap();
        q.iter()
            .find(|(a, _)| *a == addr)
            .map_or(0, |(_, q)| q.len())
    }
}

/// A polled link; `during_receive` runs inside the device's pass.
struct PolledLink {
    wire: Arc<Wire>,
    addr: Ipv4Addr,
    during_receive: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Link for PolledLink {
    fn transmit(&self, packet: Outgoing<'_>) {
        let Some(datagram) = packet.datagram() else {
            return;
        };
        let dst = Ipv4Addr::new(datagram[16], datagram[17], datagram[18], datagram[19]);
        let mut q = self.wire.queues.lock().unwrap();
        if let Some((_, q)) = q.iter_mut().find(|(a, _)| *a == dst) {
            q.push_back(datagram.to_vec());
        } else {
            q.push((dst, VecDeque::from([datagram.to_vec()])));
        }
    }

    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        // Taken out first: the hook runs with no lock of the link held.
        let hook = self.during_receive.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        let taken: Vec<Vec<u8>> = {
            let mut q = self.wire.queues.lock().unwrap();
            q.iter_mut()
                .find(|(a, _)| *a == self.addr)
                .map(|(_, q)| q.drain(..).collect())
                .unwrap_or_default()
        };
        for d in &taken {
            deliver(Arrival::Datagram(d));
        }
        Received {
            count: taken.len(),
            ..Received::default()
        }
    }
}

/// A consumer's pass, as a runtime that busy polls runs it.
const CONSUMER_PASS: PassPlan = PassPlan {
    deliver_events: false,
    rx_batches: 8,
    send_first: true,
};

/// The device's own context's pass.
const ENGINE_PASS: PassPlan = PassPlan {
    deliver_events: true,
    rx_batches: 8,
    send_first: false,
};

/// Counts what the device asks of its surroundings; runs a consumer's
/// pass on every consumer poll once `busy_poll` is set.
#[derive(Default)]
struct Asks {
    wake: AtomicU32,
    wake_engine: AtomicU32,
    consumer_polls: AtomicU32,
    cq_armed: AtomicU32,
    busy_poll: std::sync::atomic::AtomicBool,
    /// What the last consumer pass reported (`None`: the turn was taken).
    last_pass: Mutex<Option<Pass>>,
}

/// The test's runtime: counts what the device asks, runs consumer passes
/// (the node's [`links::LinkPass`] over its link) at its clock's
/// time when busy polling is allowed. It reaches the node that owns the
/// device through a weak reference, set once the node is made.
struct CountingWake(Arc<Asks>, Arc<SimClock>, Arc<OnceLock<Weak<Node>>>);

impl Wake for CountingWake {
    fn wake(&self) {
        self.0.wake.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_engine(&self) {
        self.0.wake_engine.fetch_add(1, Ordering::SeqCst);
    }
    fn consumer_poll(&self) -> bool {
        self.0.consumer_polls.fetch_add(1, Ordering::SeqCst);
        if !self.0.busy_poll.load(Ordering::SeqCst) {
            return false;
        }
        let Some(node) = self.2.get().and_then(Weak::upgrade) else {
            return false;
        };
        let pass = node.pass.try_pass(&node.dev, self.1.now(), CONSUMER_PASS);
        *self.0.last_pass.lock().unwrap() = pass;
        pass.is_some_and(|p| p.received > 0 || p.worked)
    }
    fn cq_armed(&self) {
        self.0.cq_armed.fetch_add(1, Ordering::SeqCst);
    }
}

impl Side {
    fn allow_busy_poll(&self) {
        self.asks.busy_poll.store(true, Ordering::SeqCst);
    }
    fn last_pass(&self) -> Option<Pass> {
        *self.asks.last_pass.lock().unwrap()
    }
}

struct Side {
    node: Arc<Node>,
    asks: Arc<Asks>,
}

struct Bench {
    wire: Arc<Wire>,
    a: Side,
    b: Side,
    qa: Qp,
    qb: Qp,
    ba: Buf,
    bb: Buf,
}

/// A device on `wire` at `addr`, and its link (which the device shares).
fn side(addr: Ipv4Addr, wire: &Arc<Wire>, clock: &Arc<SimClock>) -> (Side, Arc<PolledLink>) {
    let asks = Arc::new(Asks::default());
    let runtime = Arc::new(OnceLock::new());
    let link = Arc::new(PolledLink {
        wire: wire.clone(),
        addr,
        during_receive: Mutex::new(None),
    });
    let node = Node::custom(
        addr,
        4096,
        clock,
        1 << 20,
        Box::new(SharedLink(link.clone())),
        Box::new(CountingWake(asks.clone(), clock.clone(), runtime.clone())),
    );
    node.dev.set_default_rc_config(RcConfig {
        ack_defer_us: 0,
        ..fast_rc()
    });
    let node = Arc::new(node);
    runtime.set(Arc::downgrade(&node)).ok().unwrap();
    (Side { node, asks }, link)
}

struct SharedLink(Arc<PolledLink>);

impl Link for SharedLink {
    fn transmit(&self, packet: Outgoing<'_>) {
        self.0.transmit(packet);
    }
    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        self.0.receive(deliver)
    }
}

fn bench() -> Bench {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let wire = Arc::new(Wire::default());
    let (a, _) = side(ADDR_A, &wire, &clock);
    let (b, _) = side(ADDR_B, &wire, &clock);
    let qa = a.node.qp(16);
    let qb = b.node.qp(16);
    let path = |remote, remote_qpn, send_psn, recv_psn| softrnic::qp::Path {
        remote: std::net::SocketAddrV4::new(remote, 4791).into(),
        remote_qpn,
        pmtu: 4096,
        send_psn,
        recv_psn,
        outbound_reads: 1,
        inbound_reads: 1,
    };
    a.node
        .dev
        .connect_qp(qa.qpn.raw(), path(ADDR_B, qb.qpn.raw(), 10, 20))
        .unwrap();
    b.node
        .dev
        .connect_qp(qb.qpn.raw(), path(ADDR_A, qa.qpn.raw(), 20, 10))
        .unwrap();
    let ba = a.node.register(4096, Access::LOCAL_WRITE);
    let bb = b.node.register(4096, Access::LOCAL_WRITE);
    // Connecting rang each send doorbell once: take that first, so that a
    // consumer's pass after it has only what the test posts to send.
    let _ = a.node.poll();
    let _ = b.node.poll();
    Bench {
        wire,
        a,
        b,
        qa,
        qb,
        ba,
        bb,
    }
}

#[test]
fn a_consumer_poll_runs_a_pass_only_when_the_runtime_says_so() {
    let mut t = bench();
    t.a.node.mem.fill(t.ba.logical, &[7; 64]);
    t.a.node
        .post_send(&mut t.qa, wqe(SendOpcode::Send, 1, &[t.ba.sge(0, 64)]));
    assert!(!t.a.node.dev.busy_poll(), "nothing runs while not allowed");
    assert_eq!(t.a.asks.consumer_polls.load(Ordering::SeqCst), 1);
    assert_eq!(t.wire.queued_for(ADDR_B), 0, "the SEND did not leave");
    t.a.allow_busy_poll();
    assert!(t.a.node.dev.busy_poll());
    assert_eq!(t.wire.queued_for(ADDR_B), 1, "the busy pass sent it");
    assert_eq!(t.a.asks.consumer_polls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_send_round_trip_runs_entirely_in_busy_passes() {
    let mut t = bench();
    t.a.allow_busy_poll();
    t.b.allow_busy_poll();
    t.b.node.post_recv(&mut t.qb, 5, &[t.bb.sge(0, 64)]);
    t.a.node.mem.fill(t.ba.logical, &pattern(1, 64));
    t.a.node
        .post_send(&mut t.qa, wqe(SendOpcode::Send, 6, &[t.ba.sge(0, 64)]));
    assert!(t.a.node.dev.busy_poll());
    let sent = t.a.last_pass().expect("A's pass ran");
    assert_eq!(
        (sent.received, sent.worked),
        (0, true),
        "a consumer's pass after a post sends and receives nothing"
    );
    assert!(t.b.node.dev.busy_poll(), "B took the SEND");
    assert_eq!(
        t.b.last_pass().map(|p| p.received),
        Some(1),
        "a pass reports what it took"
    );
    assert_eq!(t.qb.rcq.drain(), 1);
    let r = t.qb.rcq.seen[0];
    assert_eq!(
        (r.wr_id, r.op(), r.byte_len),
        (5, Some(CqeOpcode::Receive), 64)
    );
    assert_eq!(t.b.node.mem.get(t.bb.logical, 64), pattern(1, 64));
    assert!(t.a.node.dev.busy_poll(), "A took the ACK");
    assert_eq!(t.qa.scq.drain(), 1);
    let c = t.qa.scq.seen[0];
    assert_eq!((c.wr_id, c.cqe_status()), (6, CqeStatus::Success));
    // Nothing was left for the devices' own contexts.
    assert!(!t.a.node.dev.busy_poll());
    assert!(!t.b.node.dev.busy_poll());
}

#[test]
fn a_busy_pass_leaves_events_to_the_device_context() {
    let mut t = bench();
    t.b.allow_busy_poll();
    t.b.node.dev.arm_cq(t.qb.rcq.cqn, false);
    assert_eq!(
        t.b.asks.cq_armed.load(Ordering::SeqCst),
        1,
        "arming tells the runtime"
    );
    t.b.node.post_recv(&mut t.qb, 5, &[t.bb.sge(0, 64)]);
    t.a.node
        .post_send(&mut t.qa, wqe(SendOpcode::Send, 6, &[t.ba.sge(0, 64)]));
    assert!(t.a.node.poll());
    let engine_wakes = t.b.asks.wake_engine.load(Ordering::SeqCst);
    assert!(t.b.node.dev.busy_poll());
    assert_eq!(t.qb.rcq.drain(), 1, "the CQE is written by the busy pass");
    assert_eq!(
        t.b.asks.wake_engine.load(Ordering::SeqCst),
        engine_wakes + 1,
        "the armed CQ's event asked for the device's own context"
    );
    // The event is still pending: the engine delivers it.
    assert!(
        t.b.node.dev.deliver_events(),
        "the event waited for delivery"
    );
    assert!(!t.b.node.dev.deliver_events());
}

#[test]
fn a_doorbell_asks_for_a_poll_a_busy_poller_may_serve() {
    let mut t = bench();
    // Connecting rang the doorbell once already: take that first.
    let _ = t.a.node.poll();
    let before = (
        t.a.asks.wake.load(Ordering::SeqCst),
        t.a.asks.wake_engine.load(Ordering::SeqCst),
    );
    t.a.node
        .post_send(&mut t.qa, wqe(SendOpcode::Send, 6, &[t.ba.sge(0, 64)]));
    assert_eq!(
        (
            t.a.asks.wake.load(Ordering::SeqCst),
            t.a.asks.wake_engine.load(Ordering::SeqCst)
        ),
        (before.0 + 1, before.1),
        "a doorbell asks for a poll a busy poller may serve"
    );
}

#[test]
fn a_second_pass_does_not_run_beside_the_first() {
    let clock = Arc::new(SimClock::default());
    let wire = Arc::new(Wire::default());
    let (b, b_link) = side(ADDR_B, &wire, &clock);
    b.allow_busy_poll();
    let node = b.node.clone();
    let seen = Arc::new(Mutex::new(None));
    let out = seen.clone();
    let weak = Arc::downgrade(&node);
    let now = clock.now();
    // Runs on the pass's thread while it holds the turn: another thread
    // tries a busy poll and an engine pass meanwhile.
    let link = b_link;
    *link.during_receive.lock().unwrap() = Some(Box::new(move || {
        let node = weak.upgrade().unwrap();
        let other = std::thread::spawn(move || {
            (
                node.dev.busy_poll(),
                node.pass.try_pass(&node.dev, now, CONSUMER_PASS).is_none(),
                node.pass.try_pass(&node.dev, now, ENGINE_PASS).is_none(),
            )
        });
        *out.lock().unwrap() = Some(other.join().unwrap());
    }));
    let _ = node.dev.busy_poll();
    assert_eq!(
        *seen.lock().unwrap(),
        Some((false, true, true)),
        "a busy poll and both kinds of pass found the turn taken"
    );
    assert!(
        b.asks.last_pass.lock().unwrap().is_some(),
        "the first pass ran"
    );
    // The turn is free again.
    assert!(
        node.pass
            .try_pass(&node.dev, clock.now(), ENGINE_PASS)
            .is_some()
    );
}

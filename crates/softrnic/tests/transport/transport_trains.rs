//! Trains (`softrnic::train`): two devices on one memory send a READ's
//! responses, or a WRITE's or SEND's packets, as one fabric entry whose
//! payload stays at the sender until the receiver places it. The tests
//! drive the fabric by hand: trains delivered as trains, or cut into
//! datagrams by the fabric.

use crate::common;
use hwq::Verbs;

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use common::*;
use hwq::wqe::{Access, SendOpcode, WqeFlags};
use hwq::{CqeStatus, Sge};
use links::Outgoing;
use links::{
    Capture, Clock, Direction, FaultInjector, FaultLink, Faults, Link, Load,
    fabric::{Fabric, FabricEndpoint},
};
use softrnic::qp::QpState;
use softrnic::wire;

const PMTU: u32 = 1024;
/// Ten full segments and a short eleventh.
const LEN: u32 = 10 * 1024 + 300;
const SEGMENTS: u64 = 11;
const REMOTE_ACCESS: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);
const MAX_STEPS: u64 = 100_000;

/// Two devices on one memory (one DMA address space), one fabric.
struct Bench {
    clock: Arc<SimClock>,
    fabric: Arc<Fabric>,
    /// What both ports draw faults from.
    faults: Arc<FaultInjector>,
    a: Node,
    b: Node,
    qa: Qp,
    qb: Qp,
    /// Where A reads into (or writes or sends from): three pieces of odd
    /// sizes.
    dst: Buf,
    /// What A reads from (or writes to), on B.
    src: Buf,
    /// Trains `step` handed over.
    trains_taken: u64,
}

fn bench(trains: bool) -> Bench {
    bench_on(|fabric, faults, clock| {
        let port = if trains {
            FabricEndpoint::with_trains(fabric.clone(), clock.clone())
        } else {
            FabricEndpoint::new(fabric.clone(), clock.clone())
        };
        Box::new(FaultLink::new(port, faults.clone(), clock))
    })
}

/// A bench whose devices' links `link` makes (from the fabric, the fault
/// generator and the clock).
fn bench_on(
    link: impl Fn(&Arc<Fabric>, &Arc<FaultInjector>, Arc<dyn Clock>) -> Box<dyn Link>,
) -> Bench {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let fabric = Fabric::new();
    let faults = FaultInjector::new(Faults::default());
    let mem = HostMem::new(1 << 20);
    let port = |fabric: &Arc<Fabric>| link(fabric, &faults, clock.clone());
    let node = |addr| {
        let n = Node::sharing(
            addr,
            PMTU,
            &clock,
            mem.clone(),
            port(&fabric),
            Box::new(NoWake),
        );
        n.dev.set_default_rc_config(fast_rc());
        n
    };
    let (a, b) = (node(ADDR_A), node(ADDR_B));
    let (qa, qb) = (a.qp(8), b.qp(8));
    let src = b.register(u64::from(LEN), REMOTE_ACCESS);
    b.mem.fill(src.logical, &pattern(7, LEN as usize));
    let dst = a.register(u64::from(LEN) + 64, Access::LOCAL_WRITE);
    let w = World {
        clock: clock.clone(),
        fabric: fabric.clone(),
        faults: faults.clone(),
        a,
        b,
        steps: 0,
    };
    w.connect(&qa, &qb, PMTU, 100, 900, 4);
    let World { a, b, .. } = w;
    Bench {
        clock,
        fabric,
        faults,
        a,
        b,
        qa,
        qb,
        dst,
        src,
        trains_taken: 0,
    }
}

impl Bench {
    fn node(&self, addr: impl Into<std::net::IpAddr>) -> &Node {
        if addr.into() == ADDR_A {
            &self.a
        } else {
            &self.b
        }
    }

    /// A's three pieces of `dst`, LEN bytes in all.
    fn pieces(&self) -> [Sge; 3] {
        [
            self.dst.sge(0, 1000),
            self.dst.sge(1000, 5000),
            self.dst.sge(6000, LEN - 6000),
        ]
    }

    /// A's READ of the whole source into three destination pieces.
    fn post_read(&mut self) {
        let w = rdma(SendOpcode::Read, 1, &self.pieces(), &self.src, 0);
        self.a.post_send(&mut self.qa, w);
    }

    /// A's WRITE of its three pieces (filled with pattern 9) over B's
    /// buffer.
    fn post_write(&mut self) {
        self.a.mem.fill(self.dst.logical, &pattern(9, LEN as usize));
        let w = rdma(SendOpcode::Write, 2, &self.pieces(), &self.src, 0);
        self.a.post_send(&mut self.qa, w);
    }

    /// A's solicited SEND of its three pieces (pattern 11) into a receive
    /// B posted over two pieces of its buffer.
    fn post_send(&mut self) {
        self.a
            .mem
            .fill(self.dst.logical, &pattern(11, LEN as usize));
        let recv = [self.src.sge(0, 4000), self.src.sge(4000, LEN - 4000)];
        self.b.post_recv(&mut self.qb, 77, &recv);
        let mut w = wqe(SendOpcode::Send, 3, &self.pieces());
        w.flags |= WqeFlags::SOLICITED.bits();
        self.a.post_send(&mut self.qa, w);
    }

    /// One step: every due load handed over (trains as trains, or cut
    /// into datagrams by the fabric), both devices polled, else the clock
    /// moved to the next event. `false` when nothing is left to happen.
    fn step(&mut self, as_trains: bool) -> bool {
        let now = self.clock.now();
        let mut worked = false;
        if as_trains {
            for addr in [ADDR_A, ADDR_B] {
                let mut batch = Vec::new();
                self.fabric.exchange_due_for(addr, now, &mut batch, 64);
                for load in &batch {
                    worked = true;
                    match load {
                        Load::Datagram(d) => self.node(addr).receive(d),
                        Load::Train(t) => {
                            self.trains_taken += 1;
                            self.node(addr).receive_train(t);
                        }
                    }
                }
            }
        } else {
            while let Some((dst, bytes)) = self.fabric.take_due(now) {
                worked = true;
                self.node(dst).receive(&bytes);
            }
        }
        worked |= self.a.poll();
        worked |= self.b.poll();
        worked || advance_to_next_event(&self.clock, &self.fabric, [&self.a, &self.b])
    }

    /// Runs until something is sent to `to`, handing the other device
    /// everything, and takes it without delivering it.
    fn take_for(&mut self, to: Ipv4Addr) -> Vec<Load> {
        let other = if to == ADDR_A { ADDR_B } else { ADDR_A };
        let mut taken = Vec::new();
        while taken.is_empty() {
            let now = self.clock.now();
            let mut batch = Vec::new();
            self.fabric.exchange_due_for(other, now, &mut batch, 8);
            for load in &batch {
                match load {
                    Load::Datagram(d) => self.node(other).receive(d),
                    Load::Train(t) => self.node(other).receive_train(t),
                }
            }
            self.fabric.exchange_due_for(to, now, &mut taken, 8);
            assert!(self.step(true));
        }
        taken
    }

    /// Steps until A's send CQ has a completion; its status.
    fn send_status(&mut self, as_trains: bool) -> CqeStatus {
        self.read_status(as_trains)
    }

    /// Steps until A's send CQ has a completion; its status.
    fn read_status(&mut self, as_trains: bool) -> CqeStatus {
        for _ in 0..MAX_STEPS {
            self.qa.scq.drain();
            if let Some(c) = self.qa.scq.seen.first() {
                return c.cqe_status();
            }
            assert!(
                self.step(as_trains),
                "nothing left to happen, no completion"
            );
        }
        panic!("no completion within {MAX_STEPS} steps");
    }

    fn placed(&self) -> Vec<u8> {
        self.a.mem.get(self.dst.logical, LEN as usize)
    }
}

/// Records what a device's tap sees.
#[derive(Default)]
struct Seen(Mutex<Vec<(Direction, Vec<u8>)>>);

struct Tap(Arc<Seen>);

impl Capture for Tap {
    fn capture(&self, direction: Direction, datagram: &[u8]) {
        self.0
            .0
            .lock()
            .unwrap()
            .push((direction, datagram.to_vec()));
    }
}

fn read_responses(seen: &Seen, direction: Direction) -> Vec<Vec<u8>> {
    seen.0
        .lock()
        .unwrap()
        .iter()
        .filter(|(d, bytes)| {
            *d == direction
                && wire::parse(bytes)
                    .is_ok_and(|p| p.info.operation == wire::Operation::ReadResponse)
        })
        .map(|(_, bytes)| bytes.clone())
        .collect()
}

#[test]
fn a_read_travels_as_one_train_and_lands_whole() {
    let mut b = bench(true);
    b.post_read();
    // The request reaches B, which answers with one entry for all
    // eleven responses.
    while b.fabric.in_flight() == 0 {
        assert!(b.step(true));
    }
    let mut request = Vec::new();
    b.fabric.exchange_due_for(ADDR_B, u64::MAX, &mut request, 8);
    assert!(matches!(request.as_slice(), [Load::Datagram(_)]));
    for load in &request {
        b.b.receive(load.datagram().unwrap());
    }
    b.b.poll();
    assert_eq!(b.fabric.in_flight(), 1, "one entry for the whole READ");
    let mut trains = Vec::new();
    b.fabric.exchange_due_for(ADDR_A, u64::MAX, &mut trains, 8);
    let [Load::Train(train)] = trains.as_slice() else {
        panic!("expected one train, got {trains:?}");
    };
    assert_eq!(u64::from(train.segments()), SEGMENTS);
    assert_eq!(train.payload_len(), u64::from(LEN));
    b.a.receive_train(train);
    assert_eq!(b.read_status(true), CqeStatus::Success);
    assert_eq!(b.placed(), pattern(7, LEN as usize));
    assert_eq!(b.b.dev.stats().read_responses_sent, SEGMENTS);
    assert_eq!(b.a.dev.stats().train_segments_lost, 0);
    // Nothing beyond the READ's bytes was written.
    assert_eq!(b.a.mem.get(b.dst.logical + u64::from(LEN), 64), vec![0; 64]);
}

#[test]
fn a_train_to_an_address_the_device_no_longer_has_is_dropped() {
    let mut b = bench(true);
    b.post_read();
    let trains = b.take_for(ADDR_A);
    let [Load::Train(train)] = trains.as_slice() else {
        panic!("expected one train, got {trains:?}");
    };
    // A's address goes (the device keeps another one) while the
    // responses travel: every segment is dropped, nothing is placed.
    b.a.dev
        .set_addresses(&[Ipv4Addr::new(10, 0, 0, 9).into()])
        .unwrap();
    let dropped = b.a.dev.stats().rx_dropped;
    b.a.receive_train(train);
    assert_eq!(b.a.dev.stats().rx_dropped, dropped + SEGMENTS);
    assert_eq!(b.placed(), vec![0; LEN as usize]);
    // Back: the READ is asked again and completes.
    b.a.dev
        .set_addresses(&[ADDR_A.into(), Ipv4Addr::new(10, 0, 0, 9).into()])
        .unwrap();
    assert_eq!(b.read_status(true), CqeStatus::Success);
    assert_eq!(b.placed(), pattern(7, LEN as usize));
}

#[test]
fn a_train_cut_into_datagrams_is_the_packets_a_wire_would_carry() {
    let record = |trains: bool| {
        let mut b = bench(trains);
        let seen = Arc::new(Seen::default());
        b.a.set_capture(Some(Box::new(Tap(seen.clone()))));
        b.post_read();
        assert_eq!(b.read_status(false), CqeStatus::Success);
        assert_eq!(b.placed(), pattern(7, LEN as usize));
        read_responses(&seen, Direction::Receive)
    };
    let packets = record(false);
    let cut = record(true);
    assert_eq!(packets.len() as u64, SEGMENTS);
    assert_eq!(cut, packets, "byte for byte, ICRC included");
}

#[test]
fn taps_see_each_segment_of_a_train_as_a_checked_packet() {
    let mut b = bench(true);
    let (at_a, at_b) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
    b.a.set_capture(Some(Box::new(Tap(at_a.clone()))));
    b.b.set_capture(Some(Box::new(Tap(at_b.clone()))));
    b.post_read();
    assert_eq!(b.read_status(true), CqeStatus::Success);
    let received = read_responses(&at_a, Direction::Receive);
    let sent = read_responses(&at_b, Direction::Transmit);
    assert_eq!(received.len() as u64, SEGMENTS);
    assert_eq!(sent, received);
    let source = pattern(7, LEN as usize);
    let mut payload = Vec::new();
    for d in &received {
        // `parse` checks the ICRC.
        payload.extend_from_slice(wire::parse(d).unwrap().payload);
    }
    assert_eq!(payload, source);
}

#[test]
fn a_key_that_dies_while_its_train_is_in_flight_places_nothing() {
    let mut b = bench(true);
    b.post_read();
    let trains = b.take_for(ADDR_A);
    // B's consumer deregisters the buffer while the responses travel.
    b.b.dev.deregister(b.src.key).unwrap();
    for load in &trains {
        match load {
            Load::Train(t) => b.a.receive_train(t),
            Load::Datagram(d) => b.a.receive(d),
        }
    }
    assert_eq!(b.a.dev.stats().train_segments_lost, SEGMENTS);
    assert_eq!(b.placed(), vec![0; LEN as usize], "no byte placed");
    // A asks again; B finds the key dead and refuses without tearing the
    // connection down.
    assert_eq!(b.read_status(true), CqeStatus::RemoteAccess);
    assert_eq!(b.placed(), vec![0; LEN as usize]);
    assert_eq!(b.b.dev.stats().stale_read_refusals, 1);
    assert_eq!(b.b.state(&b.qb), QpState::Connected);
}

#[test]
fn a_faulty_fabric_carries_packets_not_trains() {
    let mut b = bench(true);
    b.faults.set_faults(Faults {
        duplicate: 0.5,
        reorder_window_us: 5,
        seed: 3,
        ..Faults::default()
    });
    b.post_read();
    assert_eq!(b.read_status(true), CqeStatus::Success);
    assert_eq!(b.placed(), pattern(7, LEN as usize));
    assert!(b.faults.stats().duplicated > 0);
    assert_eq!(b.trains_taken, 0, "every response went as its own datagram");
    // The same bench without faults does send trains.
    let mut clean = bench(true);
    clean.post_read();
    assert_eq!(clean.read_status(true), CqeStatus::Success);
    assert_eq!(clean.trains_taken, 1);
}

#[test]
fn a_train_outliving_its_responder_places_nothing() {
    let mut b = bench(true);
    b.post_read();
    let trains = b.take_for(ADDR_A);
    let Bench {
        a,
        b: responder,
        dst,
        ..
    } = b;
    // The responder goes away (its consumer may now free what its keys
    // named) while the train still holds its memory.
    drop(responder);
    for load in &trains {
        if let Load::Train(t) = load {
            a.receive_train(t);
        }
    }
    assert_eq!(a.dev.stats().train_segments_lost, SEGMENTS);
    assert_eq!(a.mem.get(dst.logical, LEN as usize), vec![0; LEN as usize]);
}

/// The datagrams a device's tap saw going `direction` with operation `op`.
fn packets_of(seen: &Seen, direction: Direction, op: wire::Operation) -> Vec<Vec<u8>> {
    seen.0
        .lock()
        .unwrap()
        .iter()
        .filter(|(d, bytes)| {
            *d == direction && wire::parse(bytes).is_ok_and(|p| p.info.operation == op)
        })
        .map(|(_, bytes)| bytes.clone())
        .collect()
}

#[test]
fn a_write_travels_as_one_train_and_lands_whole() {
    let mut b = bench(true);
    b.post_write();
    let trains = b.take_for(ADDR_B);
    let [Load::Train(train)] = trains.as_slice() else {
        panic!("expected one train, got {trains:?}");
    };
    assert_eq!(u64::from(train.segments()), SEGMENTS);
    b.b.receive_train(train);
    assert_eq!(b.send_status(true), CqeStatus::Success);
    assert_eq!(
        b.b.mem.get(b.src.logical, LEN as usize),
        pattern(9, LEN as usize)
    );
}

#[test]
fn a_send_train_lands_in_a_receive_with_its_solicited_flag() {
    let mut b = bench(true);
    b.post_send();
    assert_eq!(b.send_status(true), CqeStatus::Success);
    assert_eq!(b.trains_taken, 1);
    b.qb.rcq.drain();
    let [cqe] = b.qb.rcq.seen.as_slice() else {
        panic!("expected one receive completion, got {:?}", b.qb.rcq.seen);
    };
    assert_eq!((cqe.wr_id, cqe.byte_len), (77, LEN));
    assert_eq!(cqe.cqe_status(), CqeStatus::Success);
    assert_ne!(cqe.flags & hwq::cqe::CQE_FLAG_SOLICITED, 0);
    assert_eq!(
        b.b.mem.get(b.src.logical, LEN as usize),
        pattern(11, LEN as usize)
    );
}

/// A SEND train into a receive whose second piece names a key B does not
/// have: the segment that spans both pieces places no byte, not even in
/// the valid first piece (every destination piece of a segment is checked
/// before any byte of it is copied); the receive and the SEND fail.
#[test]
fn a_send_train_segment_with_a_bad_destination_piece_places_no_byte() {
    let mut b = bench(true);
    let old = pattern(5, LEN as usize);
    b.b.mem.fill(b.src.logical, &old);
    b.a.mem.fill(b.dst.logical, &pattern(11, LEN as usize));
    // 4000 is inside segment 3 (bytes 3072..4096).
    let bad = Sge {
        key: 0x00ab_cd00,
        ..b.src.sge(4000, LEN - 4000)
    };
    b.b.post_recv(&mut b.qb, 78, &[b.src.sge(0, 4000), bad]);
    let w = wqe(SendOpcode::Send, 4, &b.pieces());
    b.a.post_send(&mut b.qa, w);
    assert_ne!(b.send_status(true), CqeStatus::Success);
    assert!(b.trains_taken >= 1, "the SEND went as a train");
    b.qb.rcq.drain();
    let [cqe] = b.qb.rcq.seen.as_slice() else {
        panic!("expected one receive completion, got {:?}", b.qb.rcq.seen);
    };
    assert_eq!(cqe.wr_id, 78);
    assert_ne!(cqe.cqe_status(), CqeStatus::Success);
    let after = b.b.mem.get(b.src.logical, LEN as usize);
    let spanning = (3 * PMTU) as usize..4000;
    assert!(
        after[spanning.clone()] == old[spanning],
        "bytes of the segment spanning the bad piece were placed in the good one"
    );
}

#[test]
fn cut_write_and_send_trains_are_the_packets_a_wire_would_carry() {
    for (op, post) in [
        (wire::Operation::Write, Bench::post_write as fn(&mut Bench)),
        (wire::Operation::Send, Bench::post_send as fn(&mut Bench)),
    ] {
        let record = |trains: bool| {
            let mut b = bench(trains);
            let seen = Arc::new(Seen::default());
            b.b.set_capture(Some(Box::new(Tap(seen.clone()))));
            post(&mut b);
            assert_eq!(b.send_status(false), CqeStatus::Success);
            packets_of(&seen, Direction::Receive, op)
        };
        let packets = record(false);
        assert_eq!(packets.len() as u64, SEGMENTS, "{op:?}");
        assert_eq!(
            record(true),
            packets,
            "{op:?}: byte for byte, ICRC included"
        );
    }
}

#[test]
fn a_source_that_dies_while_its_write_travels_fails_the_write_at_the_requester() {
    let mut b = bench(true);
    b.post_write();
    let trains = b.take_for(ADDR_B);
    // A's consumer deregisters the source while the WRITE travels (it
    // may not; the device must not read freed memory all the same).
    b.a.dev.deregister(b.dst.key).unwrap();
    for load in &trains {
        if let Load::Train(t) = load {
            b.b.receive_train(t);
        }
    }
    // The first segment never arrives; the rest are then out of sequence,
    // as after a loss on a wire.
    let stats = b.b.dev.stats();
    assert_eq!(stats.train_segments_lost, 1);
    assert_eq!(stats.out_of_sequence, SEGMENTS - 1);
    assert_eq!(
        b.b.mem.get(b.src.logical, LEN as usize),
        pattern(7, LEN as usize)
    );
    // A sends again and finds its source gone: the WRITE fails there.
    assert_eq!(b.send_status(true), CqeStatus::LocalProtection);
    assert_eq!(
        b.b.mem.get(b.src.logical, LEN as usize),
        pattern(7, LEN as usize)
    );
}

#[test]
fn a_delaying_link_carries_trains_late() {
    let mut b = bench(true);
    b.faults.set_faults(Faults {
        delay_us: 7,
        ..Faults::default()
    });
    b.post_read();
    // The request leaves; held for its delay, it is not due before.
    let sent_at = b.clock.now();
    while b.fabric.in_flight() == 0 {
        assert!(b.a.poll() || b.fabric.in_flight() > 0, "A sends the READ");
    }
    assert_eq!(b.fabric.next_due(), Some(sent_at + 7));
    assert_eq!(b.read_status(true), CqeStatus::Success);
    assert_eq!(b.placed(), pattern(7, LEN as usize));
    assert_eq!(b.trains_taken, 1, "the responses went as one train");
    // The request and the train's segments passed the fault link.
    assert_eq!(b.faults.stats().drawn, 1 + SEGMENTS);
}

/// A fabric port that delays nothing itself, as a UDP socket: a fault
/// link around it holds what it delays until due.
struct Prompt(FabricEndpoint);

impl Link for Prompt {
    fn transmit(&self, packet: Outgoing<'_>) {
        self.0.transmit(packet);
    }
    fn carries_trains(&self) -> bool {
        self.0.carries_trains()
    }
}

#[test]
fn a_fault_link_holds_a_delayed_train_for_a_link_that_cannot() {
    let links = Arc::new(Mutex::new(Vec::new()));
    let made = links.clone();
    let mut b = bench_on(move |fabric, faults, clock| {
        let port = Prompt(FabricEndpoint::with_trains(fabric.clone(), clock.clone()));
        let link = Arc::new(FaultLink::new(port, faults.clone(), clock));
        made.lock().unwrap().push(link.clone());
        Box::new(link)
    });
    let links: Vec<_> = links.lock().unwrap().clone();
    b.faults.set_faults(Faults {
        delay_us: 7,
        ..Faults::default()
    });
    b.post_read();
    let mut held_train = false;
    for _ in 0..MAX_STEPS {
        b.qa.scq.drain();
        if !b.qa.scq.seen.is_empty() {
            break;
        }
        let now = b.clock.now();
        for link in &links {
            link.release_due();
        }
        let mut worked = false;
        for addr in [ADDR_A, ADDR_B] {
            let mut batch = Vec::new();
            b.fabric.exchange_due_for(addr, now, &mut batch, 64);
            for load in &batch {
                worked = true;
                match load {
                    Load::Datagram(d) => b.node(addr).receive(d),
                    Load::Train(t) => {
                        b.trains_taken += 1;
                        b.node(addr).receive_train(t);
                    }
                }
            }
        }
        worked |= b.a.poll();
        worked |= b.b.poll();
        // B's link holds the train (nothing of it in the fabric yet).
        held_train |= links[1].next_due_us().is_some() && b.fabric.in_flight() == 0;
        if !worked {
            let next = links
                .iter()
                .filter_map(|l| l.next_due_us())
                .chain(b.fabric.next_due())
                .chain([&b.a, &b.b].iter().filter_map(|n| n.dev.next_timer_us()))
                .min()
                .expect("something left to happen");
            b.clock.set(next.max(now + 1));
        }
    }
    assert_eq!(
        b.qa.scq.seen.first().map(hwq::Cqe::cqe_status),
        Some(CqeStatus::Success)
    );
    assert_eq!(b.placed(), pattern(7, LEN as usize));
    assert!(held_train, "the fault link held the responses");
    assert_eq!(b.trains_taken, 1, "and handed them on as one train");
    assert_eq!(b.faults.stats().drawn, 1 + SEGMENTS);
}

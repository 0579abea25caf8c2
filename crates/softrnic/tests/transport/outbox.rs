//! The outbox: no packet reaches the runtime while the table slot of the
//! QP that sends it is locked. A probing runtime, given a packet, asks
//! another thread to read the sending QP's state (which takes the QP's
//! slot) and waits for the answer: a slot still held by the sender never
//! answers in time. SENDs, WRITEs, a READ's responses and the ACKs,
//! through a link taking whole datagrams (pumped by the runtime) and a
//! runtime taking UDP payloads into its own buffer (a UDP socket's batch,
//! where the transmit turn builds segments in place).

use crate::common;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};
use std::time::Duration;

use common::*;
use hwq::CqeStatus;
use hwq::wqe::{Access, SendOpcode};
use links::Link;
use links::Outgoing;
use softrnic::arrival::Arrival;
use softrnic::transmit::{Carriage, MAX_DATAGRAM, Transmit};

/// What a probing runtime was given.
enum Frame {
    Datagram(Vec<u8>),
    Udp { dst: SocketAddr, payload: Vec<u8> },
}

/// Packets probed at most (each costs a thread).
const MAX_PROBES: u64 = 400;

#[derive(Default)]
struct Probe {
    node: OnceLock<Weak<Node>>,
    qpn: AtomicU64,
    /// The runtime takes UDP payloads into its own buffer (else its link
    /// takes whole datagrams).
    lends: bool,
    frames: Mutex<VecDeque<Frame>>,
    /// Packets the runtime took itself, and how many of them as UDP
    /// payloads.
    taken: AtomicU64,
    payloads: AtomicU64,
    probed: AtomicU64,
    /// Packets given while the sending QP's slot was held.
    under_lock: AtomicU64,
}

impl Probe {
    /// Whether another thread can take the sending QP's slot now.
    fn check(&self) {
        if self.probed.load(Ordering::SeqCst) >= MAX_PROBES {
            return;
        }
        let Some(node) = self.node.get().and_then(Weak::upgrade) else {
            return;
        };
        let qpn = self.qpn.load(Ordering::SeqCst) as u32;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(node.dev.qp_state(qpn));
        });
        self.probed.fetch_add(1, Ordering::SeqCst);
        if rx.recv_timeout(Duration::from_secs(2)).is_err() {
            self.under_lock.fetch_add(1, Ordering::SeqCst);
        }
    }
}

struct ProbeLink(Arc<Probe>);

impl Link for ProbeLink {
    fn transmit(&self, packet: Outgoing<'_>) {
        assert!(!self.0.lends, "a runtime taking payloads pumps no link");
        self.0.check();
        let datagram = packet.datagram().expect("no trains on this link");
        let frame = Frame::Datagram(datagram.to_vec());
        self.0.frames.lock().unwrap().push_back(frame);
    }
}

/// The device's runtime after an arrival or a poll: its link takes whole
/// datagrams ([`Node::pump`]), or, for a runtime with a UDP socket, it
/// takes each packet to an IPv6 destination as a UDP payload built into
/// its own buffer, probing while it holds the packet (and the turn).
fn take(node: &Node, probe: &Probe) {
    if !probe.lends {
        node.pump();
        return;
    }
    let carriage = Carriage {
        ipv6_udp_payloads: true,
        trains: false,
    };
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut turn = node
        .dev
        .transmit_turn()
        .expect("one thread: the turn is free");
    while let Some(taken) = turn.poll_transmit(&mut buf, carriage) {
        probe.check();
        probe.taken.fetch_add(1, Ordering::SeqCst);
        let frame = match taken {
            Transmit::UdpPayload { dest, len } => {
                probe.payloads.fetch_add(1, Ordering::SeqCst);
                Frame::Udp {
                    dst: dest,
                    payload: buf[..len].to_vec(),
                }
            }
            Transmit::Datagram(len) => Frame::Datagram(buf[..len].to_vec()),
            Transmit::Train(_) => panic!("no trains were asked for"),
        };
        probe.frames.lock().unwrap().push_back(frame);
    }
}

fn node(addr: IpAddr, clock: &Arc<SimClock>, lends: bool) -> (Arc<Node>, Arc<Probe>) {
    let probe = Arc::new(Probe {
        lends,
        ..Probe::default()
    });
    let link = Box::new(ProbeLink(probe.clone()));
    let node = Arc::new(Node::custom(
        addr,
        1024,
        clock,
        1 << 20,
        link,
        Box::new(NoWake),
    ));
    node.dev.set_default_rc_config(fast_rc());
    probe.node.set(Arc::downgrade(&node)).ok().unwrap();
    (node, probe)
}

/// Hands what `from` sent to `to` (as `to`'s runtime: what it sends in
/// answer is taken after each); whether there was anything.
fn deliver(from: &Probe, from_addr: IpAddr, to: &Node, to_probe: &Probe) -> bool {
    let frames: Vec<Frame> = from.frames.lock().unwrap().drain(..).collect();
    let any = !frames.is_empty();
    let now = to.clock.now();
    for frame in frames {
        match frame {
            Frame::Datagram(d) => to.dev.receive(now, Arrival::Datagram(&d)),
            Frame::Udp { dst, payload } => {
                // A UDP socket sends it from port 4791 of the sender's
                // address and hands the receiver the payload.
                assert_eq!(dst, SocketAddr::new(to.addr, 4791));
                let src = SocketAddr::new(from_addr, 4791);
                let arrival = Arrival::UdpPayload {
                    src,
                    dst,
                    payload: &payload,
                };
                to.dev.receive(now, arrival);
            }
        }
        take(to, to_probe);
    }
    any
}

/// SENDs, WRITEs and a READ between two devices, IPv6 ones when the
/// runtime takes UDP payloads (`lends`).
fn sends_nothing_under_the_qp_lock(lends: bool) {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let (addr_a, addr_b): (IpAddr, IpAddr) = if lends {
        (ADDR6_A.into(), ADDR6_B.into())
    } else {
        (ADDR_A.into(), ADDR_B.into())
    };
    let (a, probe_a) = node(addr_a, &clock, lends);
    let (b, probe_b) = node(addr_b, &clock, lends);
    let mut qa = a.qp(16);
    let mut qb = b.qp(16);
    probe_a.qpn.store(u64::from(qa.qpn.raw()), Ordering::SeqCst);
    probe_b.qpn.store(u64::from(qb.qpn.raw()), Ordering::SeqCst);
    let path = |remote: IpAddr, remote_qpn, send_psn, recv_psn| softrnic::qp::Path {
        remote: SocketAddr::new(remote, 4791),
        remote_qpn,
        pmtu: 1024,
        send_psn,
        recv_psn,
        outbound_reads: 4,
        inbound_reads: 4,
    };
    a.dev
        .connect_qp(qa.qpn.raw(), path(b.addr, qb.qpn.raw(), 10, 20))
        .unwrap();
    b.dev
        .connect_qp(qb.qpn.raw(), path(a.addr, qa.qpn.raw(), 20, 10))
        .unwrap();

    let remote = Access::LOCAL_WRITE
        .union(Access::REMOTE_READ)
        .union(Access::REMOTE_WRITE);
    let (send_len, write_len, read_len) = (3000u32, 5000u32, 6000u32);
    let src = a.register(16 << 10, Access::LOCAL_WRITE);
    let sink = a.register(8 << 10, Access::LOCAL_WRITE);
    let rbuf = b.register(8 << 10, Access::LOCAL_WRITE);
    let target = b.register(16 << 10, remote);
    let (send_data, write_data, read_data) = (
        pattern(1, send_len as usize),
        pattern(2, write_len as usize),
        pattern(3, read_len as usize),
    );
    a.mem.fill(src.logical, &send_data);
    a.mem.fill(src.logical + 8192, &write_data);
    b.mem.fill(target.logical + 8192, &read_data);
    b.post_recv(&mut qb, 7, &[rbuf.sge(0, 8 << 10)]);
    a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, send_len)]));
    let write = rdma(
        SendOpcode::Write,
        2,
        &[src.sge(8192, write_len)],
        &target,
        0,
    );
    a.post_send(&mut qa, write);
    let read = rdma(SendOpcode::Read, 3, &[sink.sge(0, read_len)], &target, 8192);
    a.post_send(&mut qa, read);

    for _ in 0..10_000 {
        let mut worked = deliver(&probe_a, a.addr, &b, &probe_b);
        worked |= deliver(&probe_b, b.addr, &a, &probe_a);
        for (node, probe) in [(&a, &probe_a), (&b, &probe_b)] {
            worked |= node.dev.poll(clock.now());
            take(node, probe);
        }
        qa.scq.drain();
        qb.rcq.drain();
        if qa.scq.seen.len() == 3 && qb.rcq.seen.len() == 1 {
            break;
        }
        if !worked {
            clock.set(clock.now() + 100);
        }
    }
    let statuses: Vec<_> = statuses(&qa.scq.seen);
    assert_eq!(
        statuses,
        [
            (1, CqeStatus::Success),
            (2, CqeStatus::Success),
            (3, CqeStatus::Success)
        ]
    );
    assert_eq!(qb.rcq.seen.len(), 1);
    assert_eq!(b.mem.get(rbuf.logical, send_len as usize), send_data);
    assert_eq!(b.mem.get(target.logical, write_len as usize), write_data);
    assert_eq!(a.mem.get(sink.logical, read_len as usize), read_data);
    // SEND 3 + WRITE 5 + READ request 1 from A; 6 responses and the ACKs
    // from B.
    assert!(probe_a.probed.load(Ordering::SeqCst) >= 9);
    assert!(probe_b.probed.load(Ordering::SeqCst) >= 7);
    assert_eq!(probe_a.under_lock.load(Ordering::SeqCst), 0);
    assert_eq!(probe_b.under_lock.load(Ordering::SeqCst), 0);
    assert_eq!(a.dev.stats().retransmitted, 0);
    assert_eq!(b.dev.stats().tx_source_gone, 0);
    if lends {
        payloads_where_built_from_memory(&probe_a, &probe_b);
    }
}

/// Every packet whose payload is in registered memory was built as a UDP
/// payload in the runtime's buffer: A's SEND (3) and WRITE (5), B's READ
/// responses (6). What was built whole when recorded (the READ request,
/// the ACKs) is a whole datagram.
fn payloads_where_built_from_memory(probe_a: &Probe, probe_b: &Probe) {
    let taken = |p: &Probe| {
        (
            p.payloads.load(Ordering::SeqCst),
            p.taken.load(Ordering::SeqCst),
        )
    };
    let (payloads_a, taken_a) = taken(probe_a);
    let (payloads_b, taken_b) = taken(probe_b);
    assert_eq!(payloads_a, 3 + 5, "A took {taken_a}");
    assert_eq!(payloads_b, 6, "B took {taken_b}");
    assert!(taken_a > payloads_a && taken_b > payloads_b);
}

#[test]
fn no_datagram_leaves_under_its_qp_lock() {
    sends_nothing_under_the_qp_lock(false);
}

#[test]
fn no_udp_payload_is_built_into_the_runtimes_buffer_under_its_qp_lock() {
    sends_nothing_under_the_qp_lock(true);
}

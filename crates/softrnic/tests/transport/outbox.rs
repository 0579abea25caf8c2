//! The outbox: no packet reaches the link while the table slot of the QP
//! that sends it is locked. A probing link, given a packet, asks another
//! thread to read the sending QP's state (which takes the QP's slot) and
//! waits for the answer: a slot still held by the sender never answers
//! in time. SENDs, WRITEs, a READ's responses and the ACKs, through a
//! link taking datagrams and one lending its send buffer (a UDP socket's
//! batch, where the drain builds segments in place).

use crate::common;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};
use std::time::Duration;

use common::*;
use hwq::CqeStatus;
use hwq::wqe::{Access, SendOpcode};
use softrnic::link::Link;
use softrnic::wire::{IpUdpFields, Ipv4UdpFields};

/// What a probing link was given.
enum Frame {
    Datagram(Vec<u8>),
    Udp { dst: SocketAddrV4, payload: Vec<u8> },
}

/// Packets probed at most (each costs a thread).
const MAX_PROBES: u64 = 400;

#[derive(Default)]
struct Probe {
    node: OnceLock<Weak<Node>>,
    qpn: AtomicU64,
    /// Lend a send buffer for UDP payloads.
    lends: bool,
    frames: Mutex<VecDeque<Frame>>,
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
    fn transmit(&self, datagram: &[u8]) {
        self.0.check();
        let frame = Frame::Datagram(datagram.to_vec());
        self.0.frames.lock().unwrap().push_back(frame);
    }

    fn transmit_udp_payload_with(
        &self,
        dst: SocketAddr,
        len: usize,
        build: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> bool {
        if !self.0.lends {
            return false;
        }
        self.0.check();
        let mut payload = vec![0; len];
        if let Some(n) = build(&mut payload) {
            payload.truncate(n);
            let SocketAddr::V4(dst) = dst else {
                panic!("IPv4 nodes: {dst}");
            };
            let frame = Frame::Udp { dst, payload };
            self.0.frames.lock().unwrap().push_back(frame);
        }
        true
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

/// Hands what `from` sent to `to`; whether there was anything.
fn deliver(from: &Probe, from_addr: IpAddr, to: &Node) -> bool {
    let frames: Vec<Frame> = from.frames.lock().unwrap().drain(..).collect();
    let any = !frames.is_empty();
    for frame in frames {
        match frame {
            Frame::Datagram(d) => to.receive(&d),
            Frame::Udp { dst, payload } => {
                // A link lending for IPv4 sends the header the engine
                // chose (the ICRC covers it): DF, source port 4791, the
                // identification of the packet's PSN.
                let IpAddr::V4(from) = from_addr else {
                    panic!("IPv4 nodes");
                };
                let psn = u32::from_be_bytes([0, payload[9], payload[10], payload[11]]);
                let ip =
                    IpUdpFields::from(Ipv4UdpFields::new(from, *dst.ip(), 4791).for_packet(psn));
                let (head, n) = ip.header_bytes(payload.len()).unwrap();
                let mut datagram = head[..n].to_vec();
                datagram.extend_from_slice(&payload);
                to.receive(&datagram);
            }
        }
    }
    any
}

fn sends_nothing_under_the_qp_lock(lends: bool) {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let (a, probe_a) = node(ADDR_A.into(), &clock, lends);
    let (b, probe_b) = node(ADDR_B.into(), &clock, lends);
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
        let mut worked = deliver(&probe_a, a.addr, &b);
        worked |= deliver(&probe_b, b.addr, &a);
        worked |= a.poll();
        worked |= b.poll();
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
}

#[test]
fn no_datagram_leaves_under_its_qp_lock() {
    sends_nothing_under_the_qp_lock(false);
}

#[test]
fn no_udp_payload_is_built_into_the_link_under_its_qp_lock() {
    sends_nothing_under_the_qp_lock(true);
}

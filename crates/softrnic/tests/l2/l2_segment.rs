//! Two software RNICs on one emulated Ethernet segment, each behind its
//! own `EthernetPort`, with a minimal host stack above each port that
//! answers ARP and Neighbor Solicitations for its addresses (as TCP/IP
//! above the NIC does: the port passes them up). The RNICs find each
//! other (ARP, ND), connect through connection management and move data
//! in IPv4 and in IPv6; one RNIC also connects to itself (the port's
//! loopback). The segment's capture decodes in tshark.

use crate::common;
use hwq::{Connections, Device};

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::net::accept_params;
use crate::common::net::{Ev, Recorder};
use common::*;
use hwq::device::{ConnectParams, EventSink};
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus};
use softrnic::arrival::Arrival;
use softrnic::device::SoftRnic;
use softrnic::env::LinkMtu;
use softrnic::l2::{EthernetPort, FrameSink, MacAddr, Verdict};
use softrnic::wire::arp::{ARP_REPLY, ARP_REQUEST, parse_arp};
use softrnic::wire::ethernet::{
    ETHERTYPE_ARP, ETHERTYPE_IPV6, EthernetHeader, parse_ethernet, write_frame,
};
use softrnic::wire::ndp::{NEIGHBOR_ADVERTISEMENT, NdpKind, icmpv6_checksum, parse_ndp};
use zerocopy::IntoBytes;

const STEPS: u64 = 200_000;
const MAC_A: MacAddr = MacAddr([0x02, 0x52, 0x53, 0, 0, 0xA]);
const MAC_B: MacAddr = MacAddr([0x02, 0x52, 0x53, 0, 0, 0xB]);

/// Frames a port (or the host stack above it) put on the segment.
#[derive(Debug, Default)]
struct Wire {
    frames: Mutex<VecDeque<Vec<u8>>>,
    loopback_calls: AtomicUsize,
}

#[derive(Debug, Clone)]
struct WireSink(Arc<Wire>);

impl FrameSink for WireSink {
    fn send_frame(&self, frame: &[u8], _rdma: Option<usize>) -> bool {
        self.0.frames.lock().unwrap().push_back(frame.to_vec());
        true
    }

    fn loopback_ready(&self) {
        self.0.loopback_calls.fetch_add(1, Ordering::SeqCst);
    }
}

/// One machine: an RNIC, its port, the addresses its host stack answers
/// for.
struct Station {
    node: Node,
    port: Arc<EthernetPort<WireSink>>,
    wire: Arc<Wire>,
    mac: MacAddr,
    addrs: Vec<(IpAddr, u8)>,
    events: Arc<Recorder>,
    /// Frames the port passed up (the host stack saw them).
    passed_up: Mutex<Vec<Vec<u8>>>,
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

impl Station {
    fn new(clock: &Arc<SimClock>, mac: MacAddr, addrs: &[(IpAddr, u8)]) -> Self {
        let wire = Arc::new(Wire::default());
        let port = Arc::new(EthernetPort::new(mac, WireSink(wire.clone())).unwrap());
        port.set_link(true, 1500);
        port.set_addresses(addrs);
        let pmtu = port.path_mtu().unwrap();
        assert_eq!(pmtu, 1024);
        let ips: Vec<IpAddr> = addrs.iter().map(|(a, _)| *a).collect();
        // The runtime's routes: the port's MTU to every neighbour on its
        // one segment.
        let routes = Box::new(LinkMtu::new(port.path_mtu()));
        let node = Node::on_port(ips[0], pmtu, clock, 4 << 20, port.clone(), routes);
        node.dev.set_addresses(&ips).unwrap();
        node.dev.set_default_rc_config(fast_rc());
        let events = recorder(&node.dev);
        Self {
            node,
            port,
            wire,
            mac,
            addrs: addrs.to_vec(),
            events,
            passed_up: Mutex::new(Vec::new()),
        }
    }

    fn owns(&self, ip: IpAddr) -> bool {
        self.addrs.iter().any(|(a, _)| *a == ip)
    }

    fn events(&self) -> Vec<Ev> {
        self.events.cm.lock().unwrap().clone()
    }

    /// The host stack above the port: answers an ARP request or a
    /// Neighbor Solicitation for one of its addresses (through the same
    /// NIC).
    fn host_stack(&self, frame: &[u8]) {
        let Some((eth, payload)) = parse_ethernet(frame) else {
            return;
        };
        if eth.ethertype.get() == ETHERTYPE_ARP {
            if let Some(req) = parse_arp(payload)
                && req.oper.get() == ARP_REQUEST
                && self.owns(req.target_ip().into())
            {
                let mut reply = *req;
                reply.oper.set(ARP_REPLY);
                (reply.sha, reply.tha) = (self.mac, req.sha);
                (reply.spa, reply.tpa) = (req.tpa, req.spa);
                self.send(req.sha, ETHERTYPE_ARP, reply.as_bytes());
            }
        } else if eth.ethertype.get() == ETHERTYPE_IPV6
            && let Some(ns) = parse_ndp(payload)
            && ns.kind == NdpKind::Solicitation
            && self.owns(ns.target.into())
        {
            let (to, to_mac) = match ns.mac {
                Some(mac) if !ns.src.is_unspecified() => (ns.src, mac),
                _ => (
                    "ff02::1".parse().unwrap(),
                    MacAddr([0x33, 0x33, 0, 0, 0, 1]),
                ),
            };
            let na = neighbor_advertisement(ns.target, to, ns.target, self.mac);
            self.send(to_mac, ETHERTYPE_IPV6, &na);
        }
    }

    fn send(&self, dst: MacAddr, ethertype: u16, payload: &[u8]) {
        let mut f = vec![0u8; 14 + payload.len().max(46)];
        let n = write_frame(
            &EthernetHeader::new(dst, self.mac, ethertype),
            payload,
            &mut f,
        )
        .unwrap();
        f.truncate(n);
        self.wire.frames.lock().unwrap().push_back(f);
    }
}

/// A solicited Neighbor Advertisement (S and O flags) for `target` at
/// `mac`, from `src` to `dst`: the IPv6 datagram.
fn neighbor_advertisement(src: Ipv6Addr, dst: Ipv6Addr, target: Ipv6Addr, mac: MacAddr) -> Vec<u8> {
    let mut icmp = vec![NEIGHBOR_ADVERTISEMENT, 0, 0, 0, 0x60, 0, 0, 0];
    icmp.extend_from_slice(&target.octets());
    icmp.extend_from_slice(&[2, 1]);
    icmp.extend_from_slice(&mac.0);
    let sum = icmpv6_checksum(src, dst, &icmp);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    let mut d = vec![0x60, 0, 0, 0, 0, icmp.len() as u8, 58, 255];
    d.extend_from_slice(&src.octets());
    d.extend_from_slice(&dst.octets());
    d.extend_from_slice(&icmp);
    d
}

/// Two stations on a segment (a hub: each frame reaches the other one)
/// and everything that crossed it.
struct Segment {
    clock: Arc<SimClock>,
    a: Station,
    b: Station,
    capture: Vec<Vec<u8>>,
}

impl Segment {
    fn new() -> Self {
        let clock = Arc::new(SimClock::default());
        clock.set(1_000_000);
        let a = Station::new(
            &clock,
            MAC_A,
            &[
                (Ipv4Addr::new(198, 18, 0, 1).into(), 15),
                ("fe80::a".parse().unwrap(), 64),
                ("fd00:5253::1".parse().unwrap(), 64),
            ],
        );
        let b = Station::new(
            &clock,
            MAC_B,
            &[
                ("fd00:5253::2".parse().unwrap(), 64),
                (Ipv4Addr::new(198, 18, 0, 2).into(), 15),
                ("fe80::b".parse().unwrap(), 64),
            ],
        );
        Self {
            clock,
            a,
            b,
            capture: Vec::new(),
        }
    }

    /// One round: each station's frames reach the other's port (RoCEv2
    /// to its RNIC, the rest to its host stack), loopback queues are
    /// drained, both RNICs polled; if nothing happened the clock moves to
    /// the next timer. `false` when nothing is left to happen.
    fn step(&mut self) -> bool {
        let now = self.clock.now();
        let mut worked = false;
        for (from, to) in [(&self.a, &self.b), (&self.b, &self.a)] {
            let frames: Vec<Vec<u8>> = from.wire.frames.lock().unwrap().drain(..).collect();
            for f in frames {
                worked = true;
                match to.port.on_frame(&f, now) {
                    Verdict::Rnic(datagram) => to.node.arrive(Arrival::Checked(datagram)),
                    Verdict::PassUp => {
                        to.host_stack(&f);
                        to.passed_up.lock().unwrap().push(f.clone());
                    }
                }
                self.capture.push(f);
            }
        }
        for s in [&self.a, &self.b] {
            s.port.tick(now);
            worked |= s.port.loopback_into(&s.node.dev, s.node.clock.now()) > 0;
            worked |= s.node.poll();
        }
        if worked {
            return true;
        }
        let next = [
            self.a.node.dev.next_timer_us(),
            self.b.node.dev.next_timer_us(),
        ]
        .into_iter()
        .flatten()
        .min();
        next.inspect(|&t| self.clock.set(t.max(now + 1))).is_some()
    }

    fn run_until(&mut self, done: impl FnMut(&mut Self) -> bool) {
        let met = common::run_until(self, STEPS, Self::step, done);
        assert!(met, "idle, condition not met");
    }
}

/// Connects a QP of A to the listener at `remote` (on B, or on A itself
/// when `to_self`), accepted; returns both QPs and A's local address.
fn connect(seg: &mut Segment, to_self: bool, remote: SocketAddr) -> (Qp, Qp, SocketAddr) {
    let (from, to) = (&seg.a, pick(seg, to_self));
    to.node.dev.cm_listen(remote).unwrap();
    let (qa, qb) = (from.node.qp(16), to.node.qp(16));
    let requests = |s: &Segment| {
        pick(s, to_self)
            .events()
            .into_iter()
            .filter_map(|e| match e {
                Ev::ConnectRequest { conn_id, info, .. } => Some((conn_id, info)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let before = requests(seg).len();
    let params = ConnectParams {
        local: "[::]:0".parse().unwrap(),
        remote,
        inbound_reads: 2,
        outbound_reads: 2,
        private_data: b"l2",
    };
    let (ca, local) = from.node.dev.cm_connect(qa.qpn, &params).unwrap();
    seg.run_until(|s| requests(s).len() > before);
    let (cb, info) = requests(seg).pop().unwrap();
    assert_eq!((info.local, info.remote), (remote, local));
    pick(seg, to_self)
        .node
        .dev
        .cm_accept(cb, &accept_params(qb.qpn, 2, 2, b"ok"))
        .unwrap();
    seg.run_until(|s| {
        s.a.events()
            .iter()
            .any(|e| matches!(e, Ev::Replied { conn_id, .. } if *conn_id == ca))
    });
    seg.a.node.dev.cm_establish(ca).unwrap();
    (qa, qb, local)
}

/// A SEND of 3000 bytes from A's `qa` to `qb`, then a READ of 5000 bytes
/// (five packets at the path MTU) back by `qb`'s side; checks the bytes.
fn move_data(seg: &mut Segment, to_self: bool, qa: &mut Qp, qb: &mut Qp) {
    let all = Access::LOCAL_WRITE.union(Access::REMOTE_READ);
    let (from, to) = (&seg.a, pick(seg, to_self));
    let (src, dst) = (from.node.register(8192, all), to.node.register(8192, all));
    let message = pattern(1, 3000);
    from.node.mem.fill(src.logical, &message);
    to.node.post_recv(qb, 1, &[dst.sge(0, 8192)]);
    from.node
        .post_send(qa, wqe(SendOpcode::Send, 2, &[src.sge(0, 3000)]));
    seg.run_until(|_| {
        qa.scq.drain();
        qb.rcq.drain();
        !qa.scq.seen.is_empty() && !qb.rcq.seen.is_empty()
    });
    assert_eq!(qa.scq.seen[0].cqe_status(), CqeStatus::Success);
    let r = qb.rcq.seen[0];
    assert_eq!(
        (r.op(), r.cqe_status(), r.byte_len),
        (Some(CqeOpcode::Receive), CqeStatus::Success, 3000)
    );
    let to = pick(seg, to_self);
    assert_eq!(to.node.mem.get(dst.logical, 3000), message);
    let back = pattern(2, 5000);
    seg.a.node.mem.fill(src.logical, &back);
    to.node
        .post_send(qb, rdma(SendOpcode::Read, 3, &[dst.sge(0, 5000)], &src, 0));
    seg.run_until(|_| {
        qb.scq.drain();
        !qb.scq.seen.is_empty()
    });
    assert_eq!(qb.scq.seen[0].cqe_status(), CqeStatus::Success);
    assert_eq!(pick(seg, to_self).node.mem.get(dst.logical, 5000), back);
}

/// [`connect`] then [`move_data`]; A's local address.
fn connect_and_move_data(seg: &mut Segment, to_self: bool, remote: SocketAddr) -> SocketAddr {
    let (mut qa, mut qb, local) = connect(seg, to_self, remote);
    move_data(seg, to_self, &mut qa, &mut qb);
    local
}

/// The acceptor: B, or A itself.
fn pick(seg: &Segment, to_self: bool) -> &Station {
    if to_self { &seg.a } else { &seg.b }
}

/// The protocols of each frame of `frames` as tshark decodes them (and
/// its whole output).
fn tshark(name: &str, frames: &[Vec<u8>]) -> (Vec<String>, String) {
    let path = std::env::temp_dir().join(format!(
        "softrnic-l2-segment-{}-{name}.pcap",
        std::process::id()
    ));
    let mut out = Vec::new();
    for v in [0xa1b2_c3d4_u32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for f in frames {
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(&path, out).unwrap();
    let run = std::process::Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-V"])
        .args(["--disable-heuristic", "rpcrdma_infiniband"])
        .output()
        .expect(
            "tshark is not installed: install it (e.g. `apt-get install tshark`; CI installs it)",
        );
    let _ = std::fs::remove_file(&path);
    assert!(run.status.success());
    let text = String::from_utf8(run.stdout).unwrap();
    let protocols = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[Protocols in frame: "))
        .map(|p| p.trim_end_matches(']').to_owned())
        .collect();
    (protocols, text)
}

fn run(remote: SocketAddr, local_ip: IpAddr, resolution: &str) {
    let mut seg = Segment::new();
    let local = connect_and_move_data(&mut seg, false, remote);
    assert_eq!(local.ip(), local_ip);
    // The first frame on the segment asked for B; B's host stack answered;
    // A held the REQ meanwhile and sent it on the answer (no CM
    // retransmission).
    let (protocols, text) = tshark(resolution, &seg.capture);
    assert_eq!(
        protocols[0],
        format!("eth:ethertype:{resolution}"),
        "{text}"
    );
    let answer = if resolution == "arp" {
        "arp"
    } else {
        "ipv6:icmpv6"
    };
    assert_eq!(protocols[1], format!("eth:ethertype:{answer}"));
    let roce = if remote.is_ipv4() {
        "eth:ethertype:ip:udp:infiniband"
    } else {
        "eth:ethertype:ipv6:udp:infiniband"
    };
    assert!(
        protocols[2..].iter().all(|p| p.starts_with(roce)),
        "{protocols:?}"
    );
    assert!(!text.contains("Malformed"), "{text}");
    let (sa, sb) = (seg.a.port.stats(), seg.b.port.stats());
    assert_eq!(sa.held_sent, 1, "{sa:?}");
    assert_eq!(sa.dropped_no_neighbour + sb.dropped_no_neighbour, 0);
    assert_eq!(seg.a.node.dev.cm_stats().retransmitted, 0);
    // B learnt A from A's request (for one of B's addresses), so its
    // answers needed no resolution of their own.
    assert_eq!((sb.arp_sent, sb.ns_sent), (0, 0), "{sb:?}");
    assert_eq!(sa.arp_sent + sa.ns_sent, 1, "{sa:?}");
    assert_eq!(sa.steered + sb.steered, protocols.len() as u64 - 2);
    let up = |s: &Station| s.passed_up.lock().unwrap().len();
    assert_eq!(up(&seg.a) + up(&seg.b), 2);
    for s in [&seg.a, &seg.b] {
        let st = s.node.dev.stats();
        assert_eq!((st.rx_malformed, st.rx_bad_icrc, st.rx_dropped), (0, 0, 0));
    }
}

#[test]
fn two_rnics_find_each_other_with_arp_and_connect_over_ipv4() {
    run(
        "198.18.0.2:445".parse().unwrap(),
        Ipv4Addr::new(198, 18, 0, 1).into(),
        "arp",
    );
}

#[test]
fn two_rnics_find_each_other_with_neighbor_discovery_and_connect_over_ipv6() {
    run(
        "[fd00:5253::2]:445".parse().unwrap(),
        "fd00:5253::1".parse().unwrap(),
        "ipv6:icmpv6",
    );
}

#[test]
fn an_rnic_connects_to_itself_through_the_ports_loopback() {
    let mut seg = Segment::new();
    let remote: SocketAddr = "198.18.0.1:446".parse().unwrap();
    let local = connect_and_move_data(&mut seg, true, remote);
    assert_eq!(local.ip(), remote.ip());
    assert!(seg.capture.is_empty(), "nothing went on the wire");
    let s = seg.a.port.stats();
    assert!(s.loopback > 10, "{s:?}");
    assert_eq!(s.loopback_dropped, 0);
    assert_eq!(
        seg.a.wire.loopback_calls.load(Ordering::SeqCst) as u64,
        s.loopback
    );
}

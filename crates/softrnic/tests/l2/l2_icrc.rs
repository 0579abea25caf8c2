//! The Windows driver's path (the RNIC behind `softrnic::l2`'s Ethernet
//! port, whole frames both ways) and the ICRC over the real IPv4 header:
//! a received RoCEv2 frame is checked against the identification and flags
//! it actually carries (not an assumed 0), and what the RNIC sends carries
//! an ICRC right for the header on the wire.
//!
//! The frames are built and checked here independently of the engine's
//! ICRC code: CRC-32 (crc32fast) over eight 0xFF bytes, then the IPv4
//! header with TOS, TTL and header checksum set to ones, the UDP header
//! with its checksum set to ones, the BTH with byte 4 (FECN, BECN, resv6a:
//! rxe's "resv8a", `bth->qpn |= ~BTH_QPN_MASK`) set to ones, and the rest
//! unchanged; sent least-significant byte first (IBTA Annex A17; Linux
//! `drivers/infiniband/sw/rxe/rxe_icrc.c`: seed 0xdebb20e3 = the CRC of
//! the eight 0xFF bytes, `~crc` stored as a little-endian word).

use crate::common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use common::*;
use hwq::CqeStatus;
use hwq::wqe::{Access, SendOpcode};
use softrnic::l2::{EthernetPort, FrameSink, MacAddr, Verdict};
use softrnic::qp::Path;
use softrnic::wire::arp::{ARP_REPLY, ArpPacket};
use softrnic::wire::ethernet::{
    ETHERTYPE_ARP, ETHERTYPE_IPV4, EthernetHeader, parse_ethernet, write_frame,
};
use zerocopy::IntoBytes;

const OUR_MAC: MacAddr = MacAddr([0x02, 0x52, 0x53, 0, 0, 0x1]);
const PEER_MAC: MacAddr = MacAddr([0x02, 0x52, 0x53, 0, 0, 0x2]);
const OUR_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 77, 1);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 77, 2);
/// The peer's QP number and the PSNs both ways.
const PEER_QPN: u32 = 0x11;
const PEER_FIRST_PSN: u32 = 0x00_0100;
const OUR_FIRST_PSN: u32 = 0x00_2200;
/// An identification as rxe's `__ip_select_ident` gives one.
const IDENT: u16 = 0xebc9;
const PAYLOAD: usize = 100;

#[derive(Debug, Default)]
struct Wire(Mutex<Vec<Vec<u8>>>);

#[derive(Debug, Clone)]
struct Sink(Arc<Wire>);

impl FrameSink for Sink {
    fn send_frame(&self, frame: &[u8], _rdma: Option<usize>) -> bool {
        self.0.0.lock().unwrap().push(frame.to_vec());
        true
    }

    fn loopback_ready(&self) {}
}

fn frame(dst: MacAddr, src: MacAddr, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 14 + payload.len().max(46)];
    let n = write_frame(&EthernetHeader::new(dst, src, ethertype), payload, &mut out).unwrap();
    out.truncate(n);
    out
}

/// The Internet checksum of an IPv4 header (its checksum field zero).
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// The RoCEv2 ICRC of an IPv4 datagram (IP header through pad), computed
/// from the Annex A17 rule alone.
fn independent_icrc(covered: &[u8]) -> [u8; 4] {
    let mut masked = covered.to_vec();
    masked[1] = 0xFF; // TOS (DSCP, ECN)
    masked[8] = 0xFF; // TTL
    masked[10..12].fill(0xFF); // header checksum
    masked[20 + 6..20 + 8].fill(0xFF); // UDP checksum
    masked[28 + 4] = 0xFF; // BTH byte 4: FECN, BECN, resv6a
    let mut crc = crc32fast::Hasher::new();
    crc.update(&[0xFF; 8]);
    crc.update(&masked);
    crc.finalize().to_le_bytes()
}

/// An IPv4 RoCEv2 RC SEND Only from the peer to QP `qpn` at `psn`, with
/// identification `ident` and DF, its ICRC from [`independent_icrc`], as
/// an Ethernet frame to us.
fn send_only_frame(qpn: u32, psn: u32, ident: u16, payload: &[u8]) -> Vec<u8> {
    assert_eq!(payload.len() % 4, 0, "no pad");
    let udp_len = 8 + 12 + payload.len() + 4;
    let total = 20 + udp_len;
    let mut d = Vec::with_capacity(total);
    d.extend_from_slice(&[0x45, 0x00]);
    d.extend_from_slice(&(total as u16).to_be_bytes());
    d.extend_from_slice(&ident.to_be_bytes());
    d.extend_from_slice(&0x4000u16.to_be_bytes()); // DF, offset 0
    d.extend_from_slice(&[64, 17, 0, 0]);
    d.extend_from_slice(&PEER_IP.octets());
    d.extend_from_slice(&OUR_IP.octets());
    let checksum = ipv4_checksum(&d);
    d[10..12].copy_from_slice(&checksum.to_be_bytes());
    d.extend_from_slice(&0xC123u16.to_be_bytes());
    d.extend_from_slice(&4791u16.to_be_bytes());
    d.extend_from_slice(&(udp_len as u16).to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    // BTH: SEND Only (0x04), no SE/M, pad 0, TVer 0; P_Key 0xFFFF; resv8a
    // 0; dest QP; AckReq; PSN.
    d.extend_from_slice(&[0x04, 0x00, 0xFF, 0xFF, 0x00]);
    d.extend_from_slice(&qpn.to_be_bytes()[1..]);
    d.push(0x80);
    d.extend_from_slice(&psn.to_be_bytes()[1..]);
    d.extend_from_slice(payload);
    let icrc = independent_icrc(&d);
    d.extend_from_slice(&icrc);
    frame(OUR_MAC, PEER_MAC, ETHERTYPE_IPV4, &d)
}

/// The frame with its IPv4 identification changed after the ICRC was
/// computed (the header checksum put right, so only the ICRC is wrong).
fn with_identification(frame: &[u8], ident: u16) -> Vec<u8> {
    let mut f = frame.to_vec();
    let ip = &mut f[14..34];
    ip[4..6].copy_from_slice(&ident.to_be_bytes());
    ip[10..12].fill(0);
    let checksum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    f
}

struct Station {
    node: Node,
    port: Arc<EthernetPort<Sink>>,
    wire: Arc<Wire>,
    qp: Qp,
}

/// One RNIC behind its Ethernet port at `OUR_IP`, its QP connected to the
/// peer's, a receive posted; the peer's MAC address known to the port (an
/// ARP reply).
fn station() -> (Station, Buf) {
    let clock = Arc::new(SimClock::default());
    clock.set(1_000);
    let wire = Arc::new(Wire::default());
    let port = Arc::new(EthernetPort::new(OUR_MAC, Sink(wire.clone())).unwrap());
    port.set_link(true, 1500);
    port.set_addresses(&[(IpAddr::V4(OUR_IP), 24)]);
    let node = Node::on_port(
        OUR_IP,
        1024,
        &clock,
        1 << 20,
        port.clone(),
        Box::new(softrnic::env::NoRoutes),
    );
    node.dev.set_default_rc_config(fast_rc());
    let mut qp = node.qp(8);
    let path = Path {
        remote: SocketAddr::new(PEER_IP.into(), 4791),
        remote_qpn: PEER_QPN,
        pmtu: 1024,
        send_psn: OUR_FIRST_PSN,
        recv_psn: PEER_FIRST_PSN,
        outbound_reads: 0,
        inbound_reads: 0,
    };
    node.dev.connect_qp(qp.qpn.raw(), path).unwrap();
    let mut reply = ArpPacket::request(PEER_MAC, PEER_IP, OUR_IP);
    reply.oper.set(ARP_REPLY);
    reply.tha = OUR_MAC;
    let arp = frame(OUR_MAC, PEER_MAC, ETHERTYPE_ARP, reply.as_bytes());
    assert!(matches!(port.on_frame(&arp, clock.now()), Verdict::PassUp));
    assert_eq!(port.neighbour(PEER_IP.into()), Some(PEER_MAC));
    let buf = node.register(4096, Access::LOCAL_WRITE);
    node.post_recv(&mut qp, 7, &[buf.sge(0, 4096)]);
    (
        Station {
            node,
            port,
            wire,
            qp,
        },
        buf,
    )
}

impl Station {
    /// Hands `frame` to the port, which hands it to the RNIC if it is its
    /// (one call, as the driver's receive path makes), counting its RDMA
    /// octets first; then lets the RNIC run.
    fn deliver(&mut self, frame: &[u8]) {
        let before = self.port.stats();
        let udp_payload = usize::from(u16::from_be_bytes([frame[16], frame[17]])) - 28;
        assert!(
            self.port
                .receive_frame(frame, self.node.clock.now(), &self.node.dev),
            "a RoCEv2 frame for us was passed up"
        );
        let after = self.port.stats();
        assert_eq!(after.steered, before.steered + 1);
        assert_eq!(
            after.steered_bytes,
            before.steered_bytes + udp_payload as u64
        );
        for _ in 0..10 {
            self.node.poll();
        }
    }

    /// The RoCEv2 frames the port sent.
    fn sent_rocev2(&self) -> Vec<Vec<u8>> {
        let frames = self.wire.0.lock().unwrap();
        frames
            .iter()
            .filter(|f| parse_ethernet(f).is_some_and(|(e, _)| e.ethertype.get() == ETHERTYPE_IPV4))
            .cloned()
            .collect()
    }
}

/// A SEND whose IPv4 identification is nonzero is accepted (its ICRC is
/// checked over that identification); the same frame with another
/// identification, ICRC unchanged, is dropped and counted.
#[test]
fn a_received_frame_s_icrc_covers_its_real_identification() {
    let (mut s, buf) = station();
    let payload = pattern(3, PAYLOAD);
    let good = send_only_frame(s.qp.qpn.raw(), PEER_FIRST_PSN, IDENT, &payload);

    // The same packet with a changed identification first: dropped.
    let tampered = with_identification(&good, IDENT ^ 0x0101);
    s.deliver(&tampered);
    let stats = s.node.dev.stats();
    assert_eq!(stats.rx_bad_icrc, 1, "{stats:?}");
    s.qp.rcq.drain();
    assert!(s.qp.rcq.seen.is_empty(), "a bad ICRC delivered nothing");

    s.deliver(&good);
    s.qp.rcq.drain();
    let stats = s.node.dev.stats();
    assert_eq!(stats.rx_bad_icrc, 1, "the real one passed: {stats:?}");
    let cqe = s.qp.rcq.seen.first().expect("the SEND arrived");
    assert_eq!(
        (cqe.wr_id, cqe.cqe_status(), cqe.byte_len),
        (7, CqeStatus::Success, PAYLOAD as u32)
    );
    assert_eq!(s.node.mem.get(buf.logical, PAYLOAD), payload);
}

/// What the RNIC puts on the wire through the port (its ACK of the SEND,
/// then a SEND of its own) carries an ICRC right for the IPv4 header in
/// the frame, identification and flags included, by the independent rule.
#[test]
fn a_sent_frame_s_icrc_covers_the_header_on_the_wire() {
    let (mut s, _) = station();
    let good = send_only_frame(s.qp.qpn.raw(), PEER_FIRST_PSN, IDENT, &pattern(4, PAYLOAD));
    s.deliver(&good);
    let src = s.node.register(4096, Access::LOCAL_WRITE);
    s.node.mem.fill(src.logical, &pattern(5, 300));
    s.node
        .post_send(&mut s.qp, wqe(SendOpcode::Send, 9, &[src.sge(0, 300)]));
    for _ in 0..10 {
        s.node.poll();
    }
    let sent = s.sent_rocev2();
    assert!(sent.len() >= 2, "an ACK and a SEND left: {}", sent.len());
    for f in &sent {
        let ip = &f[14..];
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let datagram = &ip[..total];
        let (covered, icrc) = datagram.split_at(total - 4);
        assert_eq!(
            icrc,
            independent_icrc(covered),
            "ICRC of a frame with identification {:#06x}, flags {:#06x}",
            u16::from_be_bytes([ip[4], ip[5]]),
            u16::from_be_bytes([ip[6], ip[7]])
        );
        assert_eq!(ipv4_checksum(&ip[..20]), 0, "header checksum right");
    }
    // The SEND of our own went from the PSN the path set.
    let psns: Vec<u32> = sent
        .iter()
        .map(|f| u32::from_be_bytes([0, f[14 + 28 + 9], f[14 + 28 + 10], f[14 + 28 + 11]]))
        .collect();
    assert!(psns.contains(&OUR_FIRST_PSN), "{psns:x?}");
}

//! Transport facts seen on the wire through the NDK path: the UDP source
//! port (per connection on the in-memory fabric, which carries whole
//! datagrams; the socket's 4791 over UDP, where that is what really
//! leaves), and the path MTU two adapters with different `pmtu=` agree on.
//! Addresses 127.0.16.x, fabrics `xport*`.

use std::collections::BTreeSet;

use crate::rnic_util::*;
use ndkpi::*;
use testkit::adapter::*;

const ROCEV2_PORT: u16 = 4791;

fn pcap_path(name: &str) -> String {
    format!("{}/rnic_transport_{name}.pcap", env!("CARGO_TARGET_TMPDIR"))
}

/// One captured RoCEv2 frame: UDP ports, BTH destination QP, UDP payload
/// length.
#[derive(Debug, Clone, Copy)]
struct Frame {
    src_ip: [u8; 4],
    src_port: u16,
    dst_port: u16,
    dest_qp: u32,
    udp_payload: usize,
}

/// Reads a pcap of Ethernet/IPv4/UDP frames.
fn frames(path: &str) -> Vec<Frame> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(bytes.len() >= 24, "no pcap header");
    let le = match &bytes[..4] {
        [0xD4, 0xC3, 0xB2, 0xA1] | [0x4D, 0x3C, 0xB2, 0xA1] => true,
        [0xA1, 0xB2, 0xC3, 0xD4] | [0xA1, 0xB2, 0x3C, 0x4D] => false,
        m => panic!("not a pcap: {m:?}"),
    };
    let u32_at = |b: &[u8]| {
        let a = [b[0], b[1], b[2], b[3]];
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let be16 = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let len = u32_at(&bytes[at + 8..]) as usize;
        let frame = &bytes[at + 16..at + 16 + len];
        at += 16 + len;
        // Ethernet 14, IPv4 20, UDP 8, BTH 12.
        assert!(frame.len() >= 14 + 20 + 8 + 12, "short frame");
        let ip = &frame[14..];
        let udp = &ip[20..];
        out.push(Frame {
            src_ip: [ip[12], ip[13], ip[14], ip[15]],
            src_port: be16(&udp[0..]),
            dst_port: be16(&udp[2..]),
            dest_qp: u32::from_be_bytes([0, udp[8 + 5], udp[8 + 6], udp[8 + 7]]),
            udp_payload: usize::from(be16(&udp[4..])) - 8,
        });
    }
    out
}

/// Connects A to B, moves `len` bytes each way by SEND and A READs `len`
/// bytes of B's memory; closes (which flushes the capture).
fn session(cfg: Config, test: u8, len: usize) {
    let c = Conn::open(cfg, test, 8, 2);
    let mut a_src = pattern(len, 1);
    let mut b_src = pattern(len, 2);
    let mut a_dst = vec![0u8; len];
    let mut b_dst = vec![0u8; len];
    let mut a_read = vec![0u8; len];
    let ras = Region::of(c.a.pd, &mut a_src, 0);
    let rbs = Region::of(c.b.pd, &mut b_src, REMOTE_ALL);
    let rad = Region::of(c.a.pd, &mut a_dst, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let rbd = Region::of(c.b.pd, &mut b_dst, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let rar = Region::of(c.a.pd, &mut a_read, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    c.b.receive(1, &[rbd.sge(0, len)]);
    c.a.receive(2, &[rad.sge(0, len)]);
    assert_eq!(send(c.a.qp, 3, &[ras.sge(0, len)], 0), STATUS_SUCCESS);
    assert_eq!(send(c.b.qp, 4, &[rbs.sge(0, len)], 0), STATUS_SUCCESS);
    for r in wait_results_plain(c.a.cq, 2)
        .iter()
        .chain(wait_results_plain(c.b.cq, 2).iter())
    {
        assert_eq!(r.Status, STATUS_SUCCESS, "SEND/receive {r:?}");
    }
    assert_eq!(
        read(c.a.qp, 5, &[rar.sge(0, len)], rbs.va, rbs.remote, 0),
        STATUS_SUCCESS
    );
    assert_eq!(wait_results_plain(c.a.cq, 1)[0].Status, STATUS_SUCCESS);
    for r in [ras, rbs, rad, rbd, rar] {
        r.release();
    }
    c.close();
    assert!(b_dst == pattern(len, 1), "A -> B bytes");
    assert!(a_dst == pattern(len, 2), "B -> A bytes");
    assert!(a_read == pattern(len, 2), "READ bytes");
}

/// The RC packets (not the CM's QP1 MADs) of a capture, by sender.
fn rc_source_ports(frames: &[Frame], from: [u8; 4]) -> BTreeSet<u16> {
    frames
        .iter()
        .filter(|f| f.dest_qp != 1 && f.src_ip == from)
        .map(|f| f.src_port)
        .collect()
}

fn cfg_mem(_test: u8, node: u8) -> String {
    if node == 1 {
        format!("mem:xport1/127.0.16.1,pcap={}", pcap_path("mem"))
    } else {
        "mem:xport1/127.0.16.2".to_owned()
    }
}

/// On the in-memory fabric each side's QP sends from one port of its own
/// in 0xC000..=0xFFFF (ECMP entropy), always to 4791; the CM's MADs keep
/// 4791.
#[test]
fn mem_fabric_uses_a_source_port_per_connection() {
    session(cfg_mem, 1, 8192);
    let frames = frames(&pcap_path("mem"));
    assert!(frames.iter().all(|f| f.dst_port == ROCEV2_PORT));
    assert!(
        frames
            .iter()
            .filter(|f| f.dest_qp == 1)
            .all(|f| f.src_port == ROCEV2_PORT),
        "CM MADs from 4791"
    );
    let a = rc_source_ports(&frames, [127, 0, 16, 1]);
    let b = rc_source_ports(&frames, [127, 0, 16, 2]);
    assert_eq!((a.len(), b.len()), (1, 1), "one port per QP: {a:?} {b:?}");
    for p in a.iter().chain(b.iter()) {
        assert!(*p >= 0xC000, "port {p:#x} outside the entropy range");
    }
}

fn cfg_udp(_test: u8, node: u8) -> String {
    if node == 1 {
        format!("udp:127.0.16.11,pcap={}", pcap_path("udp"))
    } else {
        "udp:127.0.16.12".to_owned()
    }
}

/// Over UDP sockets every datagram really leaves from the bound 4791, and
/// the capture says so.
#[test]
fn udp_transport_sends_from_its_bound_port() {
    session(cfg_udp, 2, 8192);
    let frames = frames(&pcap_path("udp"));
    assert!(!frames.is_empty());
    assert!(
        frames
            .iter()
            .all(|f| f.src_port == ROCEV2_PORT && f.dst_port == ROCEV2_PORT)
    );
}

/// Largest RC UDP payload (BTH through ICRC) for a path MTU: BTH 12 +
/// RETH 16 + ImmDt 4 + payload + ICRC 4.
fn max_rc_udp_payload(pmtu: usize) -> usize {
    12 + 16 + 4 + pmtu + 4
}

fn mtu_check(cfg: Config, test: u8, file: &str) {
    session(cfg, test, 64 * 1024);
    let frames = frames(file);
    let largest = frames
        .iter()
        .filter(|f| f.dest_qp != 1)
        .map(|f| f.udp_payload)
        .max()
        .unwrap();
    assert!(
        largest > 1024 && largest <= max_rc_udp_payload(1024),
        "largest RC datagram payload {largest}: the 1024-byte MTU is used both ways"
    );
}

fn cfg_mtu_big_initiator(_test: u8, node: u8) -> String {
    if node == 1 {
        format!(
            "mem:xport3/127.0.16.21,pmtu=4096,pcap={}",
            pcap_path("mtu_a")
        )
    } else {
        "mem:xport3/127.0.16.22,pmtu=1024".to_owned()
    }
}

/// The connecting side has pmtu=4096, the accepting side 1024: they
/// agree on 1024 and 64 KiB moves both ways.
#[test]
fn mismatched_pmtu_initiator_larger_uses_the_smaller() {
    mtu_check(cfg_mtu_big_initiator, 3, &pcap_path("mtu_a"));
}

fn cfg_mtu_big_acceptor(_test: u8, node: u8) -> String {
    if node == 1 {
        format!(
            "mem:xport4/127.0.16.31,pmtu=1024,pcap={}",
            pcap_path("mtu_b")
        )
    } else {
        "mem:xport4/127.0.16.32,pmtu=4096".to_owned()
    }
}

/// The accepting side has the larger MTU: it takes the request's.
#[test]
fn mismatched_pmtu_acceptor_larger_uses_the_smaller() {
    mtu_check(cfg_mtu_big_acceptor, 4, &pcap_path("mtu_b"));
}

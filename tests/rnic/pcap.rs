//! A packet capture of real traffic between two `mem:` adapters decodes
//! cleanly in Wireshark: every frame is eth/ip/udp/infiniband (the CM MADs
//! too), or eth/ipv6/udp/infiniband between IPv6 adapters, nothing is
//! malformed, and the expected BTH opcodes are there.
//! Needs `tshark` (CI installs it via apt); without it the test fails.
//!
//! The tests of this file run one at a time (a lock), so each also checks
//! that closing everything gives back every pool byte.

use std::sync::{Mutex, PoisonError};

use crate::rnic_util::*;
use ndkpi::*;
use testkit::adapter::*;

/// Serialises the tests: each checks the process-wide pool afterwards.
static SERIAL: Mutex<()> = Mutex::new(());

const PCAP: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/rnic_pcap.pcap");
const PCAP_CM: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/rnic_pcap_cm.pcap");
const PCAP_V6: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/rnic_pcap_v6.pcap");

/// Capture on A (the connecting side, node 1).
fn cfg(_test: u8, node: u8) -> String {
    if node == 1 {
        format!("mem:e2epcap/127.0.6.1,pcap={PCAP}")
    } else {
        "mem:e2epcap/127.0.6.2".to_owned()
    }
}

/// IPv6 nodes, capture on A.
fn cfg_v6(_test: u8, node: u8) -> String {
    if node == 1 {
        format!("mem:e2epcap6/[fd00::6:1],pcap={PCAP_V6}")
    } else {
        "mem:e2epcap6/[fd00::6:2]".to_owned()
    }
}

fn cfg_cm(_test: u8, node: u8) -> String {
    if node == 1 {
        format!("mem:e2epcapcm/127.0.6.11,pcap={PCAP_CM}")
    } else {
        "mem:e2epcapcm/127.0.6.12".to_owned()
    }
}

fn count_opcode(file: &str, op: u8) -> usize {
    tshark(file, &["-Y", &format!("infiniband.bth.opcode == {op}")]).len()
}

/// Connects A to B, does a SEND, a WRITE and a READ, disconnects and
/// closes everything (the capture is flushed when the device drops), and
/// checks the pool is empty.
fn session(cfg: Config, file: &str) {
    let _ = std::fs::remove_file(file);
    let c = Conn::open(cfg, 1, 8, 2);
    let mut sbuf = pattern(300, 1);
    let mut rbuf = vec![0u8; 300];
    let mut target = vec![0u8; 512];
    let rs = Region::of(c.a.pd, &mut sbuf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let rr = Region::of(c.b.pd, &mut rbuf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let rt = Region::of(c.b.pd, &mut target, REMOTE_ALL);

    c.b.receive(1, &[rr.sge(0, 300)]);
    assert_eq!(send(c.a.qp, 2, &[rs.sge(0, 300)], 0), STATUS_SUCCESS);
    assert_eq!(wait_results(c.a.cq, 1)[0].Status, STATUS_SUCCESS);
    assert_eq!(wait_results(c.b.cq, 1)[0].Status, STATUS_SUCCESS);
    assert_eq!(
        write(c.a.qp, 3, &[rs.sge(0, 200)], rt.va, rt.remote, 0),
        STATUS_SUCCESS
    );
    expect(
        &wait_results(c.a.cq, 1)[0],
        STATUS_SUCCESS,
        NdkOperationTypeWrite,
        c.a.qp_ctx,
        3,
    );
    assert_eq!(
        read(c.a.qp, 4, &[rs.sge(0, 256)], rt.va, rt.remote, 0),
        STATUS_SUCCESS
    );
    expect(
        &wait_results(c.a.cq, 1)[0],
        STATUS_SUCCESS,
        NdkOperationTypeRead,
        c.a.qp_ctx,
        4,
    );

    rt.release();
    rr.release();
    rs.release();
    c.close();
    assert_eq!(rbuf[..], pattern(300, 1)[..]);
    // Each adapter's device accounts its pool on its own address's
    // platform; both devices stopped when their adapters closed.
    for node in [1, 2] {
        let ip = ip_of(&cfg(0, node));
        let left = rsndk::platform::HostPlatform::for_address(ip).outstanding();
        assert!(left.is_empty(), "pool not released on {ip:?}: {left:?}");
    }
}

#[test]
fn capture_decodes_as_rocev2_in_wireshark() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    session(cfg, PCAP);
    decodes_as_rocev2(PCAP, "ip");
}

/// RoCEv2 over IPv6 (Ethernet, IPv6, UDP 4791, InfiniBand) decodes as
/// cleanly, between the adapters' IPv6 addresses.
#[test]
fn ipv6_capture_decodes_as_rocev2_in_wireshark() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    session(cfg_v6, PCAP_V6);
    decodes_as_rocev2(PCAP_V6, "ipv6");
    let pairs = tshark(
        PCAP_V6,
        &[
            "-T",
            "fields",
            "-e",
            "ipv6.src",
            "-e",
            "ipv6.dst",
            "-e",
            "udp.dstport",
        ],
    );
    for line in &pairs {
        assert!(
            line == "fd00::6:1\tfd00::6:2\t4791" || line == "fd00::6:2\tfd00::6:1\t4791",
            "not between the two IPv6 adapters: {line}"
        );
    }
    // Both directions are there.
    assert!(pairs.iter().any(|l| l.starts_with("fd00::6:2")));
    assert!(pairs.iter().any(|l| l.starts_with("fd00::6:1")));
}

/// Every frame of `file` decodes as Ethernet / `ip` (Wireshark's "ip" or
/// "ipv6") / UDP / InfiniBand with nothing malformed, and the operations
/// of a [`session`] and its CM exchange are there.
fn decodes_as_rocev2(file: &str, ip: &str) {
    let frames = tshark(
        file,
        &[
            "-T",
            "fields",
            "-e",
            "frame.protocols",
            "-e",
            "_ws.malformed",
        ],
    );
    assert!(frames.len() >= 8, "too few frames: {frames:?}");
    for (i, line) in frames.iter().enumerate() {
        let mut fields = line.split('\t');
        let protocols = fields.next().unwrap_or_default();
        let malformed = fields.next().unwrap_or_default();
        // Payload bytes after the IB headers show as Wireshark's "data".
        let rocev2 = format!("eth:ethertype:{ip}:udp:infiniband");
        assert!(
            protocols == rocev2 || protocols == format!("{rocev2}:data"),
            "frame {} does not decode as RoCEv2: {line}",
            i + 1
        );
        assert!(malformed.is_empty(), "frame {} malformed: {line}", i + 1);
    }
    // SEND only (4), RDMA WRITE only (10), READ request (12) and response
    // only (16), ACK (17), and the CM MADs on UD (SEND only, 100).
    for (op, what) in [
        (4, "SEND only"),
        (10, "RDMA WRITE only"),
        (12, "RDMA READ request"),
        (16, "RDMA READ response only"),
        (17, "ACKNOWLEDGE"),
        (100, "UD SEND only (CM MAD)"),
    ] {
        assert!(
            count_opcode(file, op) >= 1,
            "no {what} (opcode {op}) in the capture"
        );
    }
    // One READ was posted: every READ request frame (a retransmission on a
    // slow machine is legitimate) carries the same PSN.
    let psns = tshark(
        file,
        &[
            "-Y",
            "infiniband.bth.opcode == 12",
            "-T",
            "fields",
            "-e",
            "infiniband.bth.psn",
        ],
    );
    assert!(
        psns.windows(2).all(|w| w[0] == w[1]),
        "one READ request: PSNs {psns:?}"
    );
    // The CM MADs A received decode as such: REP (0x0013), DREP (0x0016).
    let mads = cm_attributes(file);
    for (id, what) in [("0x0013", "REP"), ("0x0016", "DREP")] {
        assert!(mads.iter().any(|m| m == id), "no {what} MAD in {mads:?}");
    }
}

/// The CM attribute IDs of the capture's MADs, in order.
fn cm_attributes(file: &str) -> Vec<String> {
    tshark(
        file,
        &[
            "-Y",
            "infiniband.mad",
            "-T",
            "fields",
            "-e",
            "infiniband.mad.attributeid",
        ],
    )
}

/// The capture of the connecting node holds the CM MADs it sent too.
#[test]
fn capture_holds_the_cm_mads_sent_and_received() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    session(cfg_cm, PCAP_CM);
    let mads = cm_attributes(PCAP_CM);
    // A sends REQ, RTU, DREQ and receives REP, DREP, in that order.
    assert_eq!(
        mads,
        ["0x0010", "0x0013", "0x0014", "0x0015", "0x0016"],
        "CM exchange seen from A"
    );
}

//! The bottled `rsndk.sys` against rxe's `rping` in guest 0: the kernel
//! bottle's emulated segment is joined to a tap on the lab's bridge, so
//! the Windows image's own ARP/ND, Ethernet framing, ICRC and CM meet
//! rxe. rsndk as client and as server, IPv4 and IPv6, 300 validated pings
//! of 64 B to 64 KiB a run; the bridge captured and decoded, rxe's
//! counters and the driver's `OID_NDK_STATISTICS` read before and after,
//! no bugcheck.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use testkit::adapter::bottle::tap::TapV;
use testkit::rping::{RpingAdapter, RpingOptions, RpingServer, rping_client};

use crate::peer::{
    BridgeCapture, Family, PLAN, RUN_TIMEOUT, RXE_FAILURES, counter_delta, expect_server_ok,
    guest_client, guest_server, rxe_counters, serial,
};
use crate::{check, shared_lab};

/// A bottled V on a new tap of the lab's bridge, given `host_part`'s
/// addresses in both families (a test of its own each: a new V has a new
/// MAC, which the guest's neighbour cache must not confuse with an old
/// one's).
fn bottled_v(host_part: u8) -> TapV {
    let lab = shared_lab();
    let fd = check(lab.create_tap(&format!("rsbottle{host_part}")));
    TapV::join(
        fd,
        &[
            (Family::V4.lab_addr(host_part), 24),
            (Family::V6.lab_addr(host_part), 64),
        ],
    )
}

/// What one run moved.
pub struct RunReport {
    pings: u64,
    bytes: u64,
    seconds: f64,
}

/// The bottled driver's rping client against the guest's `rping -s`,
/// every step of `plan`.
pub fn bottled_client(
    v: &TapV,
    family: Family,
    local: IpAddr,
    port: u16,
    plan: &[(u32, u32)],
) -> RunReport {
    let adapter = v.open_ndk();
    let ndk = RpingAdapter::bottled(adapter);
    let peer = family.guest();
    let (mut pings, mut bytes, start) = (0, 0, Instant::now());
    for &(size, count) in plan {
        let server = guest_server(peer, port, size, count);
        let mut opts = RpingOptions::new(size, count);
        opts.timeout = RUN_TIMEOUT;
        let report = rping_client(&ndk, Some(local), SocketAddr::new(peer, port), &opts)
            .unwrap_or_else(|e| panic!("bottled rping client, {count} x {size} B: {e}"));
        assert!(report.validated && report.rounds == u64::from(count));
        expect_server_ok(server, &format!("{count} x {size} B"));
        pings += report.rounds;
        bytes += report.bytes;
    }
    v.close_ndk(adapter);
    RunReport {
        pings,
        bytes,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The guest's `rping -c` against the bottled driver's server.
fn bottled_server(v: &TapV, local: IpAddr, port: u16) -> RunReport {
    let adapter = v.open_ndk();
    let ndk = RpingAdapter::bottled(adapter);
    let (mut pings, mut bytes, start) = (0, 0, Instant::now());
    for (size, count) in PLAN {
        let mut opts = RpingOptions::new(size, 0);
        opts.timeout = RUN_TIMEOUT;
        let server = RpingServer::listen(&ndk, SocketAddr::new(local, port), &opts)
            .unwrap_or_else(|e| panic!("bottled rping server: {e}"));
        let report = std::thread::scope(|scope| {
            let served = scope.spawn(move || server.serve());
            guest_client(local, port, size, count);
            served.join().expect("the server thread")
        })
        .unwrap_or_else(|e| panic!("bottled rping server, {count} x {size} B: {e}"));
        assert_eq!(report.rounds, u64::from(count), "pings served");
        pings += report.rounds;
        bytes += report.bytes;
    }
    v.close_ndk(adapter);
    RunReport {
        pings,
        bytes,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Runs `run` on a new bottled V between counter readings and a bridge
/// capture, prints the figures and checks that nothing failed.
pub fn measured(
    name: &str,
    host_part: u8,
    run: impl FnOnce(&TapV) -> RunReport,
) -> BTreeMap<String, u64> {
    let _serial = serial();
    let v = bottled_v(host_part);
    let capture = BridgeCapture::start(name);
    let (rxe_before, ndk_before) = (rxe_counters(), v.ndk_counters());
    let report = run(&v);
    let (rxe_after, ndk_after) = (rxe_counters(), v.ndk_counters());
    let decoded = capture.finish();
    let rxe = counter_delta(&rxe_before, &rxe_after);
    let tap = v.leave();
    eprintln!(
        "{name}: {} pings, {} bytes by RDMA READ+WRITE in {:.1} s, all validated\n  \
         rsndk.sys: RDMA frames in {} out {}, octets in {} out {}, connection errors {}, \
         CQ errors {}; tap {tap:?}\n  rxe: {rxe:?}\n  {decoded}",
        report.pings,
        report.bytes,
        report.seconds,
        ndk_after.RDMAInFrames - ndk_before.RDMAInFrames,
        ndk_after.RDMAOutFrames - ndk_before.RDMAOutFrames,
        ndk_after.RDMAInOctets - ndk_before.RDMAInOctets,
        ndk_after.RDMAOutOctets - ndk_before.RDMAOutOctets,
        ndk_after.ConnectionError - ndk_before.ConnectionError,
        ndk_after.CQError - ndk_before.CQError,
    );
    for failure in RXE_FAILURES {
        assert_eq!(rxe.get(failure), None, "rxe counted {failure}: {rxe:?}");
    }
    assert_eq!(ndk_after.ConnectionError, ndk_before.ConnectionError);
    assert_eq!(ndk_after.CQError, ndk_before.CQError);
    let bugchecks = kbottle::verifier::bugchecks();
    assert!(bugchecks.is_empty(), "bugchecks: {bugchecks:?}");
    rxe
}

#[test]
fn bottled_rping_client_against_rxe_ipv4() {
    measured("bottle-client-v4", 3, |v| {
        bottled_client(v, Family::V4, Family::V4.lab_addr(3), 7211, &PLAN)
    });
}

#[test]
fn bottled_rping_client_against_rxe_ipv6() {
    measured("bottle-client-v6", 4, |v| {
        bottled_client(v, Family::V6, Family::V6.lab_addr(4), 7212, &PLAN)
    });
}

#[test]
fn bottled_rping_server_for_rxe_ipv4() {
    measured("bottle-server-v4", 5, |v| {
        bottled_server(v, Family::V4.lab_addr(5), 7213)
    });
}

#[test]
fn bottled_rping_server_for_rxe_ipv6() {
    measured("bottle-server-v6", 6, |v| {
        bottled_server(v, Family::V6.lab_addr(6), 7214)
    });
}

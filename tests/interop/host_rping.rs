//! librsndk over UDP on the lab's bridge against rxe's `rping` in guest 0:
//! rsndk as client and as server, IPv4 and IPv6, 64 B to 64 KiB, 300
//! validated pings a run; the bridge captured and decoded by tshark, rxe's
//! counters and rsndk's read before and after.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Instant;

use softrnic::engine::EngineStats;
use testkit::rping::{HostAdapter, RpingOptions, RpingServer, rping_client};

use crate::peer::{
    BridgeCapture, Family, PLAN, RUN_TIMEOUT, RXE_FAILURES, counter_delta, expect_server_ok,
    guest_client, guest_server, rsndk_summary, rxe_counters, serial,
};
use crate::{check, shared_lab};

/// The host side's address on the lab's bridge (10.77.0.1, fd77::1).
const HOST_PART: u8 = 1;

/// What one run moved and saw, printed by the test.
pub struct RunReport {
    pings: u64,
    bytes: u64,
    seconds: f64,
    pub rsndk: EngineStats,
}

/// rsndk's client against the guest's `rping -s`, every step of `plan`.
pub fn rsndk_client(family: Family, port: u16, plan: &'static [(u32, u32)]) -> RunReport {
    let lab = shared_lab();
    let local = family.lab_addr(HOST_PART);
    let peer = family.guest();
    check(lab.netns().run(move || {
        let adapter = HostAdapter::open(&Family::udp_config(local));
        let ndk = adapter.rping();
        let (mut pings, mut bytes, start) = (0, 0, Instant::now());
        for &(size, count) in plan {
            let server = guest_server(peer, port, size, count);
            let mut opts = RpingOptions::new(size, count);
            opts.timeout = RUN_TIMEOUT;
            let report = rping_client(&ndk, Some(local), SocketAddr::new(peer, port), &opts)
                .unwrap_or_else(|e| panic!("rsndk's rping client, {count} x {size} B: {e}"));
            assert!(report.validated && report.rounds == u64::from(count));
            expect_server_ok(server, &format!("{count} x {size} B"));
            pings += report.rounds;
            bytes += report.bytes;
        }
        RunReport {
            pings,
            bytes,
            seconds: start.elapsed().as_secs_f64(),
            rsndk: adapter.stats(),
        }
    }))
}

/// The guest's `rping -c` against rsndk's server, every step of `plan`.
/// With `stop_after_count` the server ends after the plan's pings
/// instead of waiting for the client's DREQ, which a lossy link may
/// drop for good (see `RpingOptions::count`).
pub fn rsndk_server(
    family: Family,
    port: u16,
    plan: &'static [(u32, u32)],
    stop_after_count: bool,
) -> RunReport {
    let lab = shared_lab();
    let local = family.lab_addr(HOST_PART);
    check(lab.netns().run(move || {
        let adapter = HostAdapter::open(&Family::udp_config(local));
        let ndk = adapter.rping();
        let (mut pings, mut bytes, start) = (0, 0, Instant::now());
        for &(size, count) in plan {
            let mut opts = RpingOptions::new(size, if stop_after_count { count } else { 0 });
            opts.timeout = RUN_TIMEOUT;
            let server = RpingServer::listen(&ndk, SocketAddr::new(local, port), &opts)
                .unwrap_or_else(|e| panic!("rsndk's rping server: {e}"));
            let report = std::thread::scope(|scope| {
                let served = scope.spawn(|| server.serve());
                guest_client(local, port, size, count);
                served.join().expect("the server thread")
            })
            .unwrap_or_else(|e| panic!("rsndk's rping server, {count} x {size} B: {e}"));
            assert_eq!(report.rounds, u64::from(count), "pings served");
            assert!(
                stop_after_count || report.peer_disconnected,
                "the client's disconnect ends it"
            );
            pings += report.rounds;
            bytes += report.bytes;
        }
        RunReport {
            pings,
            bytes,
            seconds: start.elapsed().as_secs_f64(),
            rsndk: adapter.stats(),
        }
    }))
}

/// Runs `run` between rxe counter readings and a bridge capture, prints
/// the figures and checks that neither side failed or dropped anything;
/// returns the run's report and what rxe counted.
pub fn measured(name: &str, run: impl FnOnce() -> RunReport) -> (RunReport, BTreeMap<String, u64>) {
    let _serial = serial();
    let capture = BridgeCapture::start(name);
    let before = rxe_counters();
    let report = run();
    let after = rxe_counters();
    let decoded = capture.finish();
    let rxe = counter_delta(&before, &after);
    eprintln!(
        "{name}: {} pings, {} bytes by RDMA READ+WRITE in {:.1} s, all validated\n  \
         {}\n  rxe: {rxe:?}\n  {decoded}",
        report.pings,
        report.bytes,
        report.seconds,
        rsndk_summary(&report.rsndk)
    );
    for failure in RXE_FAILURES {
        assert_eq!(rxe.get(failure), None, "rxe counted {failure}: {rxe:?}");
    }
    assert_eq!(report.rsndk.rx_bad_icrc, 0, "rsndk refused rxe's ICRCs");
    assert_eq!(
        report.rsndk.rx_malformed, 0,
        "rsndk found rxe's packets malformed"
    );
    assert!(rxe.get("rcvd_pkts").copied().unwrap_or(0) > report.pings);
    (report, rxe)
}

#[test]
fn host_rping_client_against_rxe_ipv4() {
    measured("host-client-v4", || rsndk_client(Family::V4, 7201, &PLAN));
}

#[test]
fn host_rping_client_against_rxe_ipv6() {
    measured("host-client-v6", || rsndk_client(Family::V6, 7202, &PLAN));
}

#[test]
fn host_rping_server_for_rxe_ipv4() {
    measured("host-server-v4", || {
        rsndk_server(Family::V4, 7203, &PLAN, false)
    });
}

#[test]
fn host_rping_server_for_rxe_ipv6() {
    measured("host-server-v6", || {
        rsndk_server(Family::V6, 7204, &PLAN, false)
    });
}

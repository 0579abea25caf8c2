//! Issue #25's smaller items, through the binary: help texts that name
//! only their subcommand's flags, the tables' labels (what c_p50 and
//! d1_p50 are, decimal GB/s against binary sizes), `info`'s names beside
//! raw values, `--port 0` refused.

mod common;

use common::ndkperf;
use predicates::prelude::*;

fn help(sub: &str) -> String {
    let out = ndkperf(&[sub, "--help"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn help_names_each_subcommands_own_flags() {
    let bw = help("bw");
    for flag in [
        "--depth",
        "--duration",
        "--interval",
        "--rounds",
        "--qps",
        "--threads",
        "--gbits",
        "--histogram",
        "--output",
        "--format",
        "--server-timeout",
        "--tcp-baseline",
    ] {
        assert!(bw.contains(flag), "bw --help lacks {flag}");
    }
    let lat = help("lat");
    assert!(!lat.contains("--depth"), "lat has no depth:\n{lat}");
    assert!(lat.contains("--duration") && lat.contains("--qps"));
    // Sweep and smbd have no two-process --server/--client of their own.
    for sub in ["sweep", "smbd"] {
        let text = help(sub);
        assert!(!text.contains("--server/--client"), "{sub}:\n{text}");
        assert!(!text.contains("--client "), "{sub}:\n{text}");
    }
    // What --verify checks, said truthfully: WRITEs are checked per slot.
    assert!(bw.contains("last\n") || bw.contains("last WRITE"), "{bw}");
}

#[test]
fn port_zero_is_refused_in_words() {
    ndkperf(&["bw", "--server", "127.0.0.1", "--port", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "port 0 is not a port a client can reach",
        ));
}

#[test]
fn tables_say_what_their_columns_are() {
    ndkperf(&["bw", "--size", "1K", "--iters", "20"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("c_p50[usec]")
                .and(predicate::str::contains(
                    "post-to-completion time with 16 in flight",
                ))
                .and(predicate::str::contains("GB/s = 10^9 bytes per second"))
                .and(predicate::str::contains("binary: 2^10, 2^20, 2^30")),
        );
    ndkperf(&[
        "sweep",
        "--min-size",
        "64",
        "--max-size",
        "128",
        "--iters",
        "10",
    ])
    .assert()
    .success()
    .stdout(
        predicate::str::contains("d1_p50[usec]")
            .and(predicate::str::contains("latency runs at depth 1")),
    );
}

#[test]
fn info_names_the_technology_and_the_flags() {
    ndkperf(&["info"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("4 (RoCEv2)").and(predicate::str::contains(
                "NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED",
            )),
        );
    let out = ndkperf(&["info", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["rdma_technology"], "4");
    assert_eq!(v["rdma_technology_name"], "RoCEv2");
    assert!(
        v["adapter_flags_name"]
            .as_str()
            .unwrap()
            .contains("CQ_RESIZE_SUPPORTED")
    );
}

//! Every subcommand's happy path with small sizes, through the binary.

mod common;

use common::{check_result, json_results, ndkperf};
use predicates::prelude::*;

#[test]
fn bw_over_memory_fabric_all_ops_verified() {
    for op in ["send", "read", "write"] {
        let r = json_results(&[
            "bw", "--op", op, "--size", "4K", "--iters", "64", "--depth", "8", "--verify",
        ]);
        assert_eq!(r.len(), 1);
        check_result(&r[0], op, 4096, 64);
        assert_eq!(r[0]["verified"], true, "{}", r[0]);
        assert_eq!(r[0]["test"], "bw");
        assert_eq!(r[0]["transport"], "mem");
    }
}

#[test]
fn lat_over_memory_fabric_all_ops_verified() {
    for op in ["send", "read", "write"] {
        let r = json_results(&[
            "lat", "--op", op, "--size", "64", "--iters", "40", "--verify",
        ]);
        check_result(&r[0], op, 64, 40);
        assert_eq!(r[0]["verified"], true, "{}", r[0]);
        let kind = if op == "send" {
            "one-way"
        } else {
            "completion"
        };
        assert_eq!(r[0]["lat_kind"], kind);
    }
}

#[test]
fn bw_table_has_perftest_columns() {
    ndkperf(&["bw", "--size", "1K", "--iters", "20", "--sge", "2"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("#bytes")
                .and(predicate::str::contains("#iterations"))
                .and(predicate::str::contains("BW average[GB/s]"))
                .and(predicate::str::contains("MsgRate[Mpps]"))
                .and(predicate::str::contains("1024")),
        );
    ndkperf(&["lat", "--size", "8", "--iters", "10"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("t_min[usec]")
                .and(predicate::str::contains("t_p50[usec]"))
                .and(predicate::str::contains("t_p99[usec]"))
                .and(predicate::str::contains("t_max[usec]")),
        );
}

#[test]
fn odd_sizes_sges_and_loss_still_verify() {
    let r = json_results(&[
        "bw", "--op", "write", "--size", "5000", "--iters", "30", "--sge", "3", "--verify",
        "--loss", "0.02", "--pmtu", "1024",
    ]);
    check_result(&r[0], "write", 5000, 30);
    assert_eq!(r[0]["verified"], true);
    assert_eq!(r[0]["sge"], 3);
}

#[test]
fn bw_and_lat_over_udp_loopback_with_pcap() {
    let dir = std::env::temp_dir().join(format!("ndkperf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("bw.pcap");
    let r = json_results(&[
        "bw",
        "--transport",
        "udp",
        "--op",
        "read",
        "--size",
        "16K",
        "--iters",
        "40",
        "--server-addr",
        "127.0.3.1",
        "--client-addr",
        "127.0.3.2",
        "--verify",
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    check_result(&r[0], "read", 16384, 40);
    assert_eq!(r[0]["transport"], "udp");
    assert_eq!(r[0]["verified"], true);
    let captured = std::fs::metadata(&pcap).unwrap().len();
    assert!(
        captured > 16384 * 40,
        "the capture holds the traffic ({captured} bytes)"
    );
    let r = json_results(&[
        "lat",
        "--transport",
        "udp",
        "--size",
        "64",
        "--iters",
        "30",
        "--server-addr",
        "127.0.3.3",
        "--client-addr",
        "127.0.3.4",
    ]);
    check_result(&r[0], "send", 64, 30);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sweep_writes_rows_and_an_svg_plot() {
    let dir = std::env::temp_dir().join(format!("ndkperf-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("sweep.svg");
    let rows = json_results(&[
        "sweep",
        "--min-size",
        "64",
        "--max-size",
        "4K",
        "--iters",
        "16",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let sizes: Vec<u64> = rows.iter().map(|r| r["size"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [64, 128, 256, 512, 1024, 2048, 4096]);
    for r in &rows {
        check_result(r, "send", r["size"].as_u64().unwrap(), 16);
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg"));
    let doc = roxmltree::Document::parse(&text).expect("the plot is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert!(text.contains("bandwidth") && text.contains("latency"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sweep_refuses_a_plot_that_is_not_svg() {
    ndkperf(&["sweep", "--plot", "/tmp/x.png"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("SVG"));
}

#[test]
fn tcp_baseline_bw_and_lat() {
    let r = json_results(&["tcp", "--size", "64K", "--iters", "50", "--verify"]);
    check_result(&r[0], "tcp", 65536, 50);
    assert_eq!(r[0]["verified"], true);
    let r = json_results(&[
        "tcp", "--mode", "lat", "--size", "64", "--iters", "100", "--verify",
    ]);
    check_result(&r[0], "tcp", 64, 100);
    assert_eq!(r[0]["lat_kind"], "one-way");
}

#[test]
fn udp_floor_lat() {
    let r = json_results(&["udp", "--iters", "100"]);
    check_result(&r[0], "udp", 84, 100);
    assert_eq!(r[0]["lat_kind"], "one-way");
    let r = json_results(&["udp", "--size", "4K", "--iters", "20"]);
    check_result(&r[0], "udp", 4096, 20);
}

#[test]
fn memcpy_and_info() {
    let r = json_results(&["memcpy", "--size", "64K", "--iters", "20"]);
    check_result(&r[0], "memcpy", 65536, 20);
    let out = ndkperf(&["info", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["version"], "1.2");
    assert_eq!(v["rdma_technology"], "4");
}

#[test]
fn smbd_rdma_io_over_memory_fabric() {
    let r = json_results(&["smbd", "--ops", "24", "--io-size", "64K", "--depth", "4"]);
    check_result(&r[0], "smbd-mixed", 65536, 24);
    let e = &r[0]["extra"];
    assert_eq!(r[0]["verified"], true, "{}", r[0]);
    assert_eq!(e["rdma"], true);
    assert_eq!(e["reads"], 12);
    assert_eq!(e["writes"], 12);
    assert_eq!(e["fast_registers"], 24);
    assert_eq!(
        e["remote_invalidations"], 24,
        "every response invalidated its token"
    );
    assert_eq!(e["server_send_and_invalidate"], 24);
    assert_eq!(e["server_rdma_reads"], 12);
    assert_eq!(e["server_rdma_writes"], 12);
    assert_eq!(e["max_send_size"], 1364);
    assert!(e["keepalives_answered"].as_u64().unwrap() >= 1, "{e}");
}

#[test]
fn smbd_one_mebibyte_reads() {
    // The server pushes 1 MiB with RDMA WRITE into one 256-page FRMR.
    let r = json_results(&[
        "smbd",
        "--ops",
        "6",
        "--io-size",
        "1M",
        "--mix",
        "read",
        "--depth",
        "2",
    ]);
    check_result(&r[0], "smbd-read", 1 << 20, 6);
    assert_eq!(r[0]["extra"]["fast_registers"], 6);
    assert_eq!(r[0]["extra"]["server_rdma_writes"], 6);
    assert_eq!(r[0]["verified"], true);
}

#[test]
fn smbd_multi_descriptor_io_invalidates_the_rest_locally() {
    // 4-page MRs: a 64K I/O needs four registrations and descriptors.
    let r = json_results(&[
        "smbd",
        "--ops",
        "8",
        "--io-size",
        "64K",
        "--fr-pages",
        "4",
        "--mix",
        "mixed",
        "--depth",
        "2",
    ]);
    check_result(&r[0], "smbd-mixed", 65536, 8);
    let e = &r[0]["extra"];
    assert_eq!(e["fast_registers"], 32, "four registrations per I/O");
    assert_eq!(
        e["local_invalidates"], 24,
        "the client invalidates all but the first"
    );
    assert_eq!(e["server_rdma_reads"], 16);
    assert_eq!(e["server_rdma_writes"], 16);
    assert_eq!(r[0]["verified"], true);
}

#[test]
fn smbd_inline_io_is_fragmented() {
    let r = json_results(&["smbd", "--ops", "20", "--io-size", "3K", "--mix", "mixed"]);
    check_result(&r[0], "smbd-mixed", 3072, 20);
    let e = &r[0]["extra"];
    assert_eq!(e["rdma"], false);
    assert_eq!(
        e["client_fragmented_sent"], 10,
        "each 3K WRITE spans 3 segments"
    );
    assert_eq!(e["server_fragmented_sent"], 10, "each 3K READ response too");
    assert_eq!(r[0]["verified"], true);
}

#[test]
fn smbd_over_udp_with_small_credits() {
    let r = json_results(&[
        "smbd",
        "--transport",
        "udp",
        "--ops",
        "16",
        "--io-size",
        "64K",
        "--credits",
        "8",
        "--server-addr",
        "127.0.3.5",
        "--client-addr",
        "127.0.3.6",
    ]);
    check_result(&r[0], "smbd-mixed", 65536, 16);
    assert_eq!(r[0]["transport"], "udp");
    assert_eq!(r[0]["verified"], true);
}

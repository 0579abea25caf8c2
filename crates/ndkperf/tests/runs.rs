//! Issue #25's spellings on `bw` and `lat` over the memory fabric and UDP
//! loopback: `--duration`, `--rounds`, `--qps`, `--threads`, `--gbits`,
//! `--output FILE --format csv|json`, `--histogram`; CPU per side and
//! CPU-seconds per GB in every table and JSON result (rsndk and the TCP
//! and UDP baselines); the verification line.

mod common;

use common::{json_results, ndkperf};
use serde_json::Value;

/// `bw`/`lat` arguments over `transport`, UDP on two addresses of
/// 127.0.25.0/24 of this test's own (`n` picks them), plus `args`.
fn args<'a>(test: &'a str, transport: &'a str, n: u8, args: &[&'a str]) -> Vec<String> {
    let mut v: Vec<String> = [test, "--transport", transport]
        .iter()
        .map(ToString::to_string)
        .collect();
    if transport == "udp" {
        v.extend([
            "--server-addr".into(),
            format!("127.0.25.{}", n * 4),
            "--client-addr".into(),
            format!("127.0.25.{}", n * 4 + 1),
        ]);
    }
    v.extend(args.iter().map(ToString::to_string));
    v
}

fn json(a: &[String]) -> Vec<Value> {
    json_results(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

fn table(a: &[String]) -> String {
    let out = ndkperf(&a.iter().map(String::as_str).collect::<Vec<_>>())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).expect("utf-8")
}

/// Every CPU key, with plausible values for a run that moved data.
fn check_cpu(r: &Value) {
    for key in [
        "cpu_client_pct",
        "cpu_client_engine_pct",
        "cpu_server_pct",
        "cpu_server_engine_pct",
        "cpu_seconds",
        "cpu_seconds_per_gb",
    ] {
        let v = r[key].as_f64().unwrap_or_else(|| panic!("no {key} in {r}"));
        assert!(v >= 0.0, "{key} {v} in {r}");
    }
    for key in ["cpu_client_pct", "cpu_server_pct", "cpu_seconds_per_gb"] {
        assert!(r[key].as_f64().unwrap() > 0.0, "{key} is 0 in {r}");
    }
    let per_gb = r["cpu_seconds"].as_f64().unwrap() / (r["bytes"].as_f64().unwrap() / 1e9);
    assert!(
        (per_gb - r["cpu_seconds_per_gb"].as_f64().unwrap()).abs() <= 1e-6 * per_gb,
        "{r}"
    );
}

const SIDES: [(&str, &str); 4] = [("bw", "mem"), ("bw", "udp"), ("lat", "mem"), ("lat", "udp")];

#[test]
fn cpu_of_each_side_in_every_result_and_table() {
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let a = args(
            test,
            transport,
            i as u8,
            &["--size", "4K", "--iters", "300"],
        );
        let r = json(&a);
        check_cpu(&r[0]);
        if transport == "udp" || test == "bw" {
            // An engine thread ran for the server (a lat ping-pong over
            // memory may be all busy polling).
            assert!(r[0]["cpu_server_engine_pct"].as_f64().unwrap() >= 0.0);
        }
        let t = table(&a);
        assert!(
            t.contains("CPU cli%") && t.contains("CPU srv%") && t.contains("CPU-s/GB"),
            "{t}"
        );
    }
    for mode in ["bw", "lat"] {
        let r = json_results(&["tcp", "--mode", mode, "--size", "4K", "--iters", "300"]);
        check_cpu(&r[0]);
        assert_eq!(
            r[0]["cpu_client_engine_pct"], 0.0,
            "TCP has no engine threads"
        );
    }
    let r = json_results(&["udp", "--iters", "300"]);
    check_cpu(&r[0]);
    let r = json_results(&["smbd", "--ops", "40", "--io-size", "64K"]);
    check_cpu(&r[0]);
    // An engine ran for each side of an SMB Direct run over memory.
    assert!(
        r[0]["cpu_client_engine_pct"].as_f64().unwrap() > 0.0,
        "{}",
        r[0]
    );
    // Long enough (tens of ms) for the scheduler's per-thread count to move.
    let r = json_results(&["memcpy", "--size", "64K", "--iters", "100000"]);
    assert!(r[0]["cpu_client_pct"].as_f64().unwrap() > 0.0, "{}", r[0]);
}

#[test]
fn duration_runs_for_its_time_with_interval_lines() {
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let a = args(
            test,
            transport,
            4 + i as u8,
            &["--size", "1K", "--duration", "1.2", "--interval", "300ms"],
        );
        let t = table(&a);
        let lines = t.lines().filter(|l| l.starts_with(" [")).count();
        assert!(
            lines >= 3,
            "{test} {transport}: {lines} interval lines:\n{t}"
        );
        assert!(t.contains("GB/s") && t.contains("ops in"), "{t}");
        // Each interval line shows its own latency.
        let latency = if test == "lat" { "p99" } else { "c_p50" };
        assert!(
            t.lines()
                .filter(|l| l.starts_with(" ["))
                .all(|l| l.contains(latency) && l.ends_with(" us")),
            "{test} {transport}: no {latency} on every interval line:\n{t}"
        );
        let r = json(&a);
        let s = r[0]["seconds"].as_f64().unwrap();
        assert!((1.1..4.0).contains(&s), "{test} {transport}: {s} s");
        assert_eq!(r[0]["iterations_requested"], 0, "{}", r[0]);
        assert_eq!(r[0]["interrupted"], false);
        let iv = r[0]["extra"]["intervals"].as_array().expect("intervals");
        assert!(iv.len() >= 3, "{iv:?}");
        let ops: u64 = iv.iter().map(|v| v["ops"].as_u64().unwrap()).sum();
        assert_eq!(ops, r[0]["iterations"].as_u64().unwrap(), "{}", r[0]);
        check_interval_latency(test, &r[0], iv);
    }
}

/// Every interval's latency (`lat`: p50 and p99, `bw`: completion p50)
/// lies within the whole run's min and max, with the run's scale
/// (one-way for a SEND ping-pong).
fn check_interval_latency(test: &str, run: &Value, intervals: &[Value]) {
    let (min, max) = (
        run["lat_min_us"].as_f64().unwrap(),
        run["lat_max_us"].as_f64().unwrap(),
    );
    let keys: &[&str] = if test == "lat" {
        &["p50_us", "p99_us"]
    } else {
        &["completion_p50_us"]
    };
    for v in intervals.iter().filter(|v| v["ops"].as_u64() > Some(0)) {
        for key in keys {
            let us = v[key]
                .as_f64()
                .unwrap_or_else(|| panic!("no {key} in interval {v}"));
            assert!(
                us > 0.0 && (min..=max).contains(&us),
                "{test}: interval {key} {us} outside the run's {min}..{max}: {v}"
            );
        }
        if test == "lat" {
            assert!(v["p50_us"].as_f64() <= v["p99_us"].as_f64(), "{v}");
        }
    }
}

#[test]
fn tcp_duration_lines_and_rounds() {
    for (mode, latency) in [("bw", "c_p50"), ("lat", "p99")] {
        let a: Vec<String> = ["tcp", "--mode", mode, "--size", "1K"]
            .iter()
            .chain(&["--duration", "1", "--interval", "250ms"])
            .map(ToString::to_string)
            .collect();
        let t = table(&a);
        let lines: Vec<&str> = t.lines().filter(|l| l.starts_with(" [")).collect();
        assert!(lines.len() >= 3, "{mode}: {t}");
        assert!(lines.iter().all(|l| l.contains(latency)), "{mode}: {t}");
        let r = json(&a);
        assert_eq!(r[0]["iterations_requested"], 0, "{}", r[0]);
        assert_eq!(r[0]["interrupted"], false);
        let s = r[0]["seconds"].as_f64().unwrap();
        assert!((0.9..4.0).contains(&s), "{mode}: {s} s");
        let iv = r[0]["extra"]["intervals"].as_array().expect("intervals");
        let ops: u64 = iv.iter().map(|v| v["ops"].as_u64().unwrap()).sum();
        assert_eq!(ops, r[0]["iterations"].as_u64().unwrap(), "{}", r[0]);
        check_interval_latency(mode, &r[0], iv);

        let r = json_results(&["tcp", "--mode", mode, "--iters", "200", "--rounds", "3"]);
        assert_eq!(r.len(), 4, "three rounds and a summary: {r:?}");
        let mut p50: Vec<f64> = r[..3]
            .iter()
            .enumerate()
            .map(|(n, x)| {
                assert_eq!(x["extra"]["round"], n + 1);
                assert_eq!(x["iterations"], 200);
                x["lat_p50_us"].as_f64().unwrap()
            })
            .collect();
        p50.sort_by(f64::total_cmp);
        let s = &r[3];
        assert_eq!(s["summary"], "rounds");
        assert_eq!(s["lat_p50_us"]["median"], Value::from(p50[1]));
        assert_eq!(s["lat_p50_us"]["min"], Value::from(p50[0]));
        assert_eq!(s["lat_p50_us"]["max"], Value::from(p50[2]));
    }
    let t = table(&["tcp".into(), "--rounds".into(), "2".into()]);
    assert!(
        t.contains("2 rounds: median, min, max of the tcp rows"),
        "{t}"
    );
}

#[test]
fn sweep_rounds_report_each_sizes_median_with_min_and_max() {
    let r = json_results(&[
        "sweep",
        "--min-size",
        "64",
        "--max-size",
        "256",
        "--iters",
        "40",
        "--rounds",
        "3",
    ]);
    assert_eq!(r.len(), 3, "a row per size: {r:?}");
    for row in &r {
        common::check_result(row, "send", row["size"].as_u64().unwrap(), 40);
        let spread = &row["extra"]["rounds"];
        assert_eq!(spread["rounds"], 3, "{row}");
        for key in ["gbytes_per_sec", "msgs_per_sec", "lat_p50_us", "lat_p99_us"] {
            let (median, min, max) = (
                spread[key]["median"].as_f64().unwrap(),
                spread[key]["min"].as_f64().unwrap(),
                spread[key]["max"].as_f64().unwrap(),
            );
            assert!(min <= median && median <= max, "{key}: {row}");
            let shown = row[key].as_f64().unwrap();
            assert!((shown - median).abs() <= 1e-9 * median, "{key}: {row}");
        }
        let (bytes, seconds) = (
            row["bytes"].as_f64().unwrap(),
            row["seconds"].as_f64().unwrap(),
        );
        let gbps = row["gbytes_per_sec"].as_f64().unwrap();
        assert!((bytes / seconds / 1e9 - gbps).abs() <= 1e-9 * gbps, "{row}");
    }
}

#[test]
fn rounds_report_each_round_and_median_min_max() {
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let a = args(
            test,
            transport,
            8 + i as u8,
            &["--size", "2K", "--iters", "100", "--rounds", "3"],
        );
        let r = json(&a);
        assert_eq!(r.len(), 4, "three rounds and a summary: {r:?}");
        for (n, row) in r[..3].iter().enumerate() {
            assert_eq!(row["extra"]["round"], n + 1);
            assert_eq!(row["iterations"], 100);
        }
        let s = &r[3];
        assert_eq!(s["summary"], "rounds");
        assert_eq!(s["rounds"], 3);
        let mut bw: Vec<f64> = r[..3]
            .iter()
            .map(|x| x["gbytes_per_sec"].as_f64().unwrap())
            .collect();
        bw.sort_by(f64::total_cmp);
        assert_eq!(s["gbytes_per_sec"]["median"], Value::from(bw[1]));
        assert_eq!(s["gbytes_per_sec"]["min"], Value::from(bw[0]));
        assert_eq!(s["gbytes_per_sec"]["max"], Value::from(bw[2]));
        assert!(s["cpu_seconds_per_gb"]["median"].as_f64().unwrap() > 0.0);
        let t = table(&a);
        assert!(t.contains("3 rounds: median, min, max"), "{t}");
    }
}

#[test]
fn qps_and_threads_add_connections() {
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let a = args(
            test,
            transport,
            12 + i as u8,
            &["--size", "4K", "--iters", "80", "--qps", "3", "--verify"],
        );
        let r = json(&a);
        assert_eq!(r[0]["extra"]["connections"], 3, "{}", r[0]);
        assert_eq!(r[0]["iterations"], 240);
        assert_eq!(r[0]["bytes"], 240 * 4096);
        assert_eq!(r[0]["verified"], true);
        check_cpu(&r[0]);
        let a = args(
            test,
            transport,
            16 + i as u8,
            &[
                "--size",
                "4K",
                "--iters",
                "80",
                "--threads",
                "2",
                "--qps",
                "2",
            ],
        );
        let r = json(&a);
        assert_eq!(r[0]["extra"]["connections"], 4, "{}", r[0]);
        assert_eq!(r[0]["iterations"], 320);
        check_cpu(&r[0]);
    }
}

#[test]
fn gbits_histogram_and_latency_spread() {
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let cmd = args(
            test,
            transport,
            20 + i as u8,
            &["--size", "4K", "--iters", "200", "--gbits", "--histogram"],
        );
        let text = table(&cmd);
        assert!(
            text.contains("BW average[Gb/s]") || text.contains("t_p99.9[usec]"),
            "{text}"
        );
        assert!(text.contains("Gb/s = 10^9 bits per second"), "{text}");
        assert!(text.contains("latency histogram"), "{text}");
        let r = json(&cmd);
        let (gb, gbit) = (
            r[0]["gbytes_per_sec"].as_f64().unwrap(),
            r[0]["gbits_per_sec"].as_f64().unwrap(),
        );
        assert!((gbit - 8.0 * gb).abs() < 1e-9 * gbit, "{}", r[0]);
        assert!(r[0]["lat_stdev_us"].as_f64().unwrap() > 0.0);
        assert!(r[0]["lat_p999_us"].as_f64().unwrap() >= r[0]["lat_p99_us"].as_f64().unwrap());
        let hist = r[0]["extra"]["histogram"].as_array().expect("histogram");
        let n: u64 = hist.iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(n, 200);
    }
    let text = table(&[
        "bw".into(),
        "--size".into(),
        "4K".into(),
        "--iters".into(),
        "50".into(),
        "--gbits".into(),
    ]);
    assert!(text.contains("BW average[Gb/s]"), "{text}");
    let r = json_results(&["tcp", "--iters", "50", "--gbits"]);
    assert!(r[0]["gbits_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn output_files_carry_results_and_run_metadata() {
    let dir = std::env::temp_dir().join(format!("ndkperf-output-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let json_path = dir.join(format!("{test}-{transport}.json"));
        let csv_path = dir.join(format!("{test}-{transport}.csv"));
        let jp = json_path.to_str().unwrap();
        let cp = csv_path.to_str().unwrap();
        table(&args(
            test,
            transport,
            24 + i as u8,
            &[
                "--iters", "50", "--rounds", "2", "--output", jp, "--format", "json",
            ],
        ));
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        let meta = &doc["metadata"];
        assert_eq!(meta["transport"], transport);
        assert_eq!(meta["version"], env!("CARGO_PKG_VERSION"));
        assert!(
            meta["options"].as_str().unwrap().contains("--rounds 2"),
            "{meta}"
        );
        assert!(!meta["host"].as_str().unwrap().is_empty());
        // Built from this git checkout: the commit is known.
        let commit = meta["commit"].as_str().unwrap();
        assert!(
            commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()),
            "{meta}"
        );
        assert_eq!(doc["results"].as_array().unwrap().len(), 2);
        assert_eq!(doc["summary"]["rounds"], 2);
        table(&args(
            test,
            transport,
            28 + i as u8,
            &["--iters", "50", "--output", cp, "--format", "csv"],
        ));
        let text = std::fs::read_to_string(&csv_path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let header: Vec<&str> = lines[0].split(',').collect();
        for col in [
            "version",
            "commit",
            "transport",
            "host",
            "options",
            "gbytes_per_sec",
            "cpu_seconds_per_gb",
        ] {
            assert!(header.contains(&col), "{col} missing: {}", lines[0]);
        }
        let at = header.iter().position(|c| *c == "transport").unwrap();
        assert_eq!(lines[1].split(',').nth(at), Some(transport), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_table_says_what_was_verified() {
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let t = table(&args(
            test,
            transport,
            32 + i as u8,
            &["--op", "write", "--size", "4K", "--iters", "64", "--verify"],
        ));
        let line = t
            .lines()
            .find(|l| l.contains("verification:"))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(
            line.contains("passed") && line.contains("64 operations"),
            "{line}"
        );
        assert!(line.contains("retransmitted"), "{line}");
        let t = table(&args(
            test,
            transport,
            32 + i as u8,
            &["--size", "4K", "--iters", "64"],
        ));
        assert!(t.contains("verification: off"), "{t}");
    }
}

#[test]
fn tcp_baseline_rows_come_in_the_same_run() {
    for (i, (test, transport)) in SIDES.into_iter().enumerate() {
        let cmd = args(
            test,
            transport,
            36 + i as u8,
            &[
                "--size",
                "16K",
                "--iters",
                "200",
                "--tcp-baseline",
                "--rounds",
                "2",
            ],
        );
        let rows = json(&cmd);
        // Round 1, its TCP row, round 2, its TCP row, the summary.
        assert_eq!(rows.len(), 5, "{rows:?}");
        for pair in rows[..4].chunks(2) {
            assert_eq!(pair[0]["transport"], transport);
            assert_eq!(pair[1]["transport"], "tcp");
            assert_eq!(pair[1]["extra"]["baseline"], true);
            assert_eq!(pair[1]["iterations"], pair[0]["iterations"]);
            assert_eq!(pair[1]["test"], test);
            check_cpu(&pair[0]);
            check_cpu(&pair[1]);
        }
        assert_eq!(rows[4]["rounds"], 2, "the summary is rsndk's rounds only");
        let text = table(&cmd);
        assert!(
            text.contains("the same pattern over TCP loopback"),
            "{text}"
        );
    }
}

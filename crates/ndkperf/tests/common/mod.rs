//! Helpers of the ndkperf integration tests: run the binary, read its
//! JSON lines.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;

/// The ndkperf binary with `args`, bounded in time.
pub fn ndkperf(args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("ndkperf").expect("the ndkperf binary");
    c.args(args).timeout(std::time::Duration::from_secs(120));
    c
}

/// Runs ndkperf with `args` (plus `--json`), expects success, returns the
/// JSON objects it printed.
pub fn json_results(args: &[&str]) -> Vec<Value> {
    let mut all = args.to_vec();
    all.push("--json");
    let out = ndkperf(&all).assert().success().get_output().stdout.clone();
    let text = String::from_utf8(out).expect("utf-8 output");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// The fields every result carries.
pub const REQUIRED: [&str; 11] = [
    "op",
    "size",
    "iterations",
    "bytes",
    "seconds",
    "gbytes_per_sec",
    "msgs_per_sec",
    "lat_p50_us",
    "lat_p99_us",
    "errors",
    "verified",
];

/// Checks the required fields and the arithmetic between them.
pub fn check_result(r: &Value, op: &str, size: u64, iterations: u64) {
    for key in REQUIRED {
        assert!(r.get(key).is_some(), "missing {key} in {r}");
    }
    assert_eq!(r["op"], op, "{r}");
    assert_eq!(r["size"], size, "{r}");
    assert_eq!(r["iterations"], iterations, "{r}");
    assert_eq!(r["bytes"], size * iterations, "{r}");
    assert_eq!(r["errors"], 0, "{r}");
    assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["gbytes_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["msgs_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["lat_p50_us"].as_f64().unwrap() > 0.0, "{r}");
    assert!(
        r["lat_p99_us"].as_f64().unwrap() >= r["lat_p50_us"].as_f64().unwrap(),
        "{r}"
    );
}

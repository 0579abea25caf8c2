//! Ctrl-C (SIGINT) during a run: the part measured is printed, labelled
//! interrupted, and the process exits with 130.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

/// Starts `ndkperf ARGS`, waits for `ready` on its output, sends SIGINT,
/// returns (exit code, all output).
fn interrupt(args: &[&str], ready: &str) -> (i32, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ndkperf"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn ndkperf");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "ended early: {seen}");
        seen.push_str(&line);
        if line.contains(ready) {
            break;
        }
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    out.read_to_string(&mut seen).unwrap();
    let code = child
        .wait()
        .unwrap()
        .code()
        .expect("an exit code, not a signal");
    (code, seen)
}

#[test]
fn sigint_during_a_30s_bw_run_prints_the_partial_result() {
    let (code, out) = interrupt(
        &[
            "bw",
            "--size",
            "4K",
            "--duration",
            "30",
            "--interval",
            "200ms",
        ],
        " [",
    );
    assert_eq!(code, 130, "{out}");
    assert!(out.contains("BW average[GB/s]"), "no table: {out}");
    let line = out
        .lines()
        .find(|l| l.contains("INTERRUPTED"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("of 30 s"), "{line}");
    assert!(out.contains("verification:"), "{out}");
}

#[test]
fn sigint_during_a_long_lat_run_over_udp_says_n_of_m() {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ndkperf"))
        .args([
            "lat",
            "--transport",
            "udp",
            "--server-addr",
            "127.0.26.1",
            "--client-addr",
            "127.0.26.2",
            "--iters",
            "100000000",
            "--json",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn ndkperf");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let code = child.wait().unwrap().code().expect("an exit code");
    assert_eq!(code, 130, "{out}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(rows[0]["interrupted"], true, "{out}");
    assert_eq!(rows[0]["iterations_requested"], 100_000_000u64);
    let done = rows[0]["iterations"].as_u64().unwrap();
    assert!(done < 100_000_000, "{out}");
    let note = rows[1]["note"].as_str().unwrap();
    assert!(
        note.contains(&format!("after {done} of 100000000 operations")),
        "{note}"
    );
}

/// A child process killed (and waited for) on drop.
struct KilledOnDrop(std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Ctrl-C while a client keeps retrying a refused connection ends it
/// at once, with 130, rather than after --timeout.
#[test]
fn sigint_while_connecting_exits_130_promptly() {
    // An adapter at 127.0.26.5 that listens on another port: the
    // client's requests are refused, and it retries until --timeout.
    let mut server = KilledOnDrop(
        Command::new(assert_cmd::cargo::cargo_bin("ndkperf"))
            .args(["bw", "--server", "127.0.26.5", "--port", "6101"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the server"),
    );
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("listening"), "{line}");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ndkperf"))
        .args([
            "bw",
            "--client",
            "127.0.26.5",
            "--client-addr",
            "127.0.26.6",
            "--port",
            "6100",
            "--timeout",
            "60s",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ndkperf");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let sent = std::time::Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let code = child.wait().unwrap().code().expect("an exit code");
    assert_eq!(code, 130, "{err}");
    assert!(sent.elapsed() < std::time::Duration::from_secs(10), "{err}");
    assert!(
        err.contains("interrupted (Ctrl-C) while connecting"),
        "{err}"
    );
}

#[test]
fn sigint_during_a_30s_tcp_run_prints_the_partial_result() {
    for mode in ["bw", "lat"] {
        let (code, out) = interrupt(
            &[
                "tcp",
                "--mode",
                mode,
                "--size",
                "4K",
                "--duration",
                "30",
                "--interval",
                "200ms",
            ],
            " [",
        );
        assert_eq!(code, 130, "{mode}: {out}");
        assert!(out.contains("ndkperf TCP"), "{mode}: no table: {out}");
        let line = out
            .lines()
            .find(|l| l.contains("INTERRUPTED"))
            .unwrap_or_else(|| panic!("{mode}: {out}"));
        assert!(line.contains("of 30 s"), "{line}");
    }
}

#[test]
fn sigint_during_a_sweep_prints_the_sizes_done() {
    let (code, out) = interrupt(
        &[
            "sweep",
            "--min-size",
            "64",
            "--max-size",
            "1M",
            "--iters",
            "20000",
            "--json",
        ],
        "\"size\":64,",
    );
    assert_eq!(code, 130, "{out}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let (note, sizes) = rows.split_last().unwrap();
    assert_eq!(note["interrupted"], true, "{out}");
    assert!(!sizes.is_empty() && sizes.len() < 15, "{out}");
    for (i, r) in sizes.iter().enumerate() {
        assert_eq!(r["size"], 64u64 << i, "{out}");
        assert_eq!(
            r["interrupted"], false,
            "a size cut short is left out: {out}"
        );
    }
    let text = note["note"].as_str().unwrap();
    assert!(
        text.contains(&format!("after {} of 15 sizes", sizes.len())),
        "{text}"
    );
}

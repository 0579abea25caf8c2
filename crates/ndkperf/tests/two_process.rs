//! `--server` / `--client`: the two sides in two processes over UDP on
//! loopback; a server that keeps serving.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{check_result, json_results};

/// A `--server` process and its output; killed on drop.
struct Server {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Server {
    /// Starts `ndkperf TEST --server ADDR --port PORT EXTRA...` and waits
    /// for its "listening" line.
    fn start(test: &str, addr: &str, port: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("ndkperf"))
            .args([test, "--server", addr, "--port", port])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the server");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert!(
            line.contains(&format!("listening on {addr}:{port}")),
            "{line}"
        );
        Self { child, out }
    }

    /// The server's next line that contains `needle` (the lines before
    /// it are returned too), or a failure after `within`.
    fn wait_for(&mut self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        let mut seen = String::new();
        while Instant::now() < deadline {
            let mut line = String::new();
            let read = self.out.read_line(&mut line).unwrap_or(0);
            assert!(
                read > 0,
                "the server ended before saying {needle:?}: {seen}"
            );
            seen.push_str(&line);
            if line.contains(needle) {
                return seen;
            }
        }
        panic!("the server did not say {needle:?} within {within:?}: {seen}");
    }

    fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("server status").is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(test: &str, op: &str, server: &str, client: &str, port: &str) {
    let r = json_results(&[
        test,
        "--op",
        op,
        "--size",
        "8K",
        "--iters",
        "50",
        "--verify",
        "--client",
        server,
        "--client-addr",
        client,
        "--port",
        port,
    ]);
    check_result(&r[0], op, 8192, 50);
    assert_eq!(r[0]["verified"], true);
    assert_eq!(r[0]["transport"], "udp");
    // The server's CPU comes back with its answer.
    assert!(r[0]["cpu_server_pct"].as_f64().unwrap() > 0.0, "{}", r[0]);
}

fn run_pair(op: &str, test: &str, server: &str, client_addr: &str, port: &str) {
    let mut srv = Server::start(test, server, port, &[]);
    client(test, op, server, client_addr, port);
    let said = srv.wait_for("served", Duration::from_secs(30));
    assert!(
        said.contains("from") && said.contains("all correct"),
        "{said}"
    );
    // It keeps listening for the next client.
    assert!(srv.is_running());
}

#[test]
fn bw_write_in_two_processes() {
    run_pair("write", "bw", "127.0.3.11", "127.0.3.12", "5445");
}

#[test]
fn lat_send_in_two_processes() {
    run_pair("send", "lat", "127.0.3.13", "127.0.3.14", "5446");
}

#[test]
fn bw_read_in_two_processes() {
    run_pair("read", "bw", "127.0.3.15", "127.0.3.16", "5447");
}

/// A client killed in the middle of a run (no disconnect, no DONE) does
/// not keep the server from serving the next ones, of either test.
#[test]
fn a_server_survives_a_killed_client_and_serves_the_next() {
    let (server, port) = ("127.0.27.1", "5450");
    let mut srv = Server::start("bw", server, port, &[]);
    let mut doomed = Command::new(assert_cmd::cargo::cargo_bin("ndkperf"))
        .args([
            "bw",
            "--op",
            "send",
            "--size",
            "4K",
            "--duration",
            "30",
            "--interval",
            "200ms",
            "--client",
            server,
            "--client-addr",
            "127.0.27.2",
            "--port",
            port,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the first client");
    let mut out = BufReader::new(doomed.stdout.take().unwrap());
    let mut line = String::new();
    // Its first interval line: the run is under way.
    while !line.starts_with(" [") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the first client ended"
        );
    }
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    // The next clients, from the same address and another, are served.
    client("bw", "write", server, "127.0.27.2", port);
    client("bw", "send", server, "127.0.27.3", port);
    let said = srv.wait_for("all correct", Duration::from_secs(30));
    assert!(said.contains("served"), "{said}");
    assert!(srv.is_running(), "the server exited");
}

/// An idle server waits until --server-timeout, then stops on its own.
#[test]
fn server_timeout_bounds_an_idle_server() {
    let mut srv = Server::start("lat", "127.0.27.5", "5451", &["--server-timeout", "1s"]);
    let said = srv.wait_for("no new client for 1s", Duration::from_secs(20));
    assert!(said.contains("0 served"), "{said}");
    let status = srv.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

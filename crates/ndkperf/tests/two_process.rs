//! `--server` / `--client`: the two sides in two processes over UDP on
//! loopback.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use common::{check_result, json_results};

fn run_pair(op: &str, test: &str, server: &str, client: &str, port: &str) {
    let mut srv = Command::new(assert_cmd::cargo::cargo_bin("ndkperf"))
        .args([test, "--server", server, "--port", port])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the server");
    let mut out = BufReader::new(srv.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(
        line.contains(&format!("listening on {server}:{port}")),
        "{line}"
    );
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
    let status = srv.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "server failed: {rest}");
    assert!(rest.contains("served") && rest.contains("from"), "{rest}");
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

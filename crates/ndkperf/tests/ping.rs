//! `ndkperf ping`: rping's protocol, client against server, in two
//! processes over UDP (IPv4 on loopback, IPv6 in a network namespace of
//! the test's own), in one process over the in-memory fabric (IPv4 and
//! IPv6), against the test kit's independent rping (`testkit::rping`)
//! both ways, and its refusals.
//!
//! Expected `-v` lines are rping's bytes worked out by hand from
//! `rping_test_client` (rdma-core `librdmacm/examples/rping.c`): ping N
//! is `rdma-ping-N: ` then characters from 'A' + N (mod 58, 'A'..'z')
//! on, the last byte of the buffer a NUL.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use common::ndkperf;
use predicates::prelude::*;
use serde_json::Value;
use testkit::rping::{HostAdapter, PingText, RpingOptions, RpingServer, rping_client, shown};

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("ndkperf")
}

/// A `ndkperf ping --server` process, started and listening; its
/// output is read as it comes (a `-v` server of large pings writes more
/// than a pipe holds).
struct Server {
    child: Child,
    out: Option<std::thread::JoinHandle<String>>,
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(bin())
            .args(["ping", "--server", "--timeout", "60s"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the server");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        if !line.contains("listening on") {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            let _ = child.wait();
            panic!("server did not start: {line}{err}");
        }
        let out = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = out.read_to_string(&mut rest);
            rest
        });
        Self {
            child,
            out: Some(out),
        }
    }

    /// Waits for the server to end; its stdout (after the listening line).
    fn finish(mut self) -> String {
        let status = self.child.wait().unwrap();
        let rest = self.out.take().unwrap().join().unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(status.success(), "server failed: {err}\n{rest}");
        rest
    }
}

impl Drop for Server {
    /// A server whose client never came (the test failed) does not
    /// outlive the test.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The JSON report line of a run's stdout.
fn report(stdout: &str) -> Value {
    let line = stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON report in: {stdout}"));
    serde_json::from_str(line).unwrap()
}

/// rping's `-v` texts of `count` pings of `size` bytes.
fn texts(size: u32, count: u32) -> Vec<String> {
    let mut g = PingText::new();
    (0..count)
        .map(|p| {
            let mut b = vec![0; size as usize];
            g.fill(p as i32, &mut b);
            shown(&b)
        })
        .collect()
}

/// Lines of `out` that start with `prefix`, without it.
fn lines_after(out: &str, prefix: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(str::to_owned)
        .collect()
}

/// Client against server in two processes at `size`, checked.
fn two_processes(server: &str, client: &str, port: &str, size: u32, count: u32) {
    let srv = Server::start(&[
        "-a",
        server,
        "-p",
        port,
        "-S",
        &size.to_string(),
        "-v",
        "--json",
    ]);
    let out = ndkperf(&[
        "ping",
        "-c",
        "-a",
        server,
        "-I",
        client,
        "-p",
        port,
        "-S",
        &size.to_string(),
        "-C",
        &count.to_string(),
        "-V",
        "-v",
        "--json",
    ])
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let out = String::from_utf8(out).unwrap();
    let served = srv.finish();
    let want = texts(size, count);
    assert_eq!(lines_after(&out, "ping data: "), want, "client's -v lines");
    assert_eq!(
        lines_after(&served, "server ping data: "),
        want,
        "server's -v lines"
    );
    let c = report(&out);
    let s = report(&served);
    assert_eq!(c["role"], "client");
    assert_eq!(c["rounds"], count);
    assert_eq!(c["validated"], true);
    assert_eq!(c["bytes"], 2 * u64::from(size) * u64::from(count));
    assert_eq!(s["role"], "server");
    assert_eq!(s["rounds"], count);
    assert_eq!(s["bytes"], c["bytes"]);
}

#[test]
fn client_and_server_processes_over_udp_ipv4() {
    for (size, port) in [
        (64, "7301"),
        (1000, "7302"),
        (16_384, "7303"),
        (65_535, "7304"),
    ] {
        two_processes("127.0.22.1", "127.0.22.2", port, size, 20);
    }
}

/// IPv6 over UDP needs two IPv6 addresses of this machine: a network
/// namespace of the test's own (`unshare`, gone with its processes) gets
/// fd00::1 and fd00::2 on its loopback interface.
#[test]
fn client_and_server_processes_over_udp_ipv6_in_a_namespace() {
    let script = format!(
        "set -e; ip link set lo up; \
         ip -6 addr add fd00::1/128 dev lo nodad; ip -6 addr add fd00::2/128 dev lo nodad; \
         {bin} ping -s -a fd00::1 -S 4096 --timeout 60s --json > srv.out & \
         sleep 0.5; \
         {bin} ping -c -a fd00::1 -I fd00::2 -S 4096 -C 20 -V --json; \
         wait; cat srv.out",
        bin = bin().display()
    );
    let dir = std::env::temp_dir().join(format!("ndkperf-ping6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("unshare")
        .args(["-rn", "sh", "-c", &script])
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| panic!("this test needs unshare (util-linux) and ip (iproute2): {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "IPv6 ping in a namespace failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: Vec<Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 2, "{stdout}");
    for r in &reports {
        assert_eq!(r["rounds"], 20, "{r}");
        assert_eq!(r["bytes"], 2 * 4096 * 20, "{r}");
    }
    assert_eq!(reports[0]["peer"], "[fd00::1]:7174");
}

#[test]
fn both_sides_in_one_process_over_the_memory_fabric() {
    for (addr, local) in [("127.0.22.11", "127.0.22.12"), ("fd00::22:1", "fd00::22:2")] {
        for size in ["23", "64", "4096", "65535"] {
            let out = ndkperf(&[
                "ping", "-a", addr, "-I", local, "-S", size, "-C", "30", "-V", "--json",
            ])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
            let r = report(&String::from_utf8(out).unwrap());
            assert_eq!(r["transport"], "mem");
            assert_eq!(r["rounds"], 30, "{r}");
            assert_eq!(r["validated"], true, "{r}");
        }
    }
}

/// `-v` prints rping's lines: here the first pings of 23 bytes, worked
/// out by hand (13 header characters, 9 of the run, the NUL).
#[test]
fn verbose_lines_are_rpings() {
    let out = ndkperf(&["ping", "-S", "23", "-C", "3", "-v", "-V"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(
        lines_after(&out, "ping data: "),
        [
            "rdma-ping-0: ABCDEFGHI",
            "rdma-ping-1: BCDEFGHIJ",
            "rdma-ping-2: CDEFGHIJK"
        ]
    );
    assert_eq!(lines_after(&out, "server ping data: ").len(), 3);
}

/// The test kit's rping client against an `ndkperf ping` server process.
#[test]
fn testkit_client_against_ndkperf_server() {
    let size = 1000;
    let srv = Server::start(&[
        "-a",
        "127.0.22.21",
        "-p",
        "7311",
        "-S",
        "1000",
        "-v",
        "--json",
    ]);
    let adapter = HostAdapter::open("udp:127.0.22.22");
    let at: SocketAddr = "127.0.22.21:7311".parse().unwrap();
    let pinged = rping_client(&adapter.rping(), None, at, &RpingOptions::new(size, 25))
        .unwrap_or_else(|e| panic!("testkit client: {e}"));
    let served = srv.finish();
    assert_eq!(pinged.rounds, 25);
    assert_eq!(
        lines_after(&served, "server ping data: "),
        texts(size, 25),
        "ndkperf's server saw the test kit's texts"
    );
    assert_eq!(report(&served)["rounds"], 25);
}

/// An `ndkperf ping` client process against the test kit's rping server.
#[test]
fn ndkperf_client_against_testkit_server() {
    let size = 4096;
    let adapter = HostAdapter::open("udp:127.0.22.31");
    let at: SocketAddr = "127.0.22.31:7312".parse().unwrap();
    let listening = RpingServer::listen(&adapter.rping(), at, &RpingOptions::new(size, 0)).unwrap();
    let served = std::thread::spawn(move || listening.serve());
    let out = ndkperf(&[
        "ping",
        "-c",
        "-a",
        "127.0.22.31",
        "-I",
        "127.0.22.32",
        "-p",
        "7312",
        "-S",
        "4096",
        "-C",
        "25",
        "-V",
        "-v",
    ])
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let served = served
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("testkit server: {e}"));
    let want = texts(size, 25);
    assert_eq!(
        lines_after(&String::from_utf8(out).unwrap(), "ping data: "),
        want
    );
    let server_lines: Vec<String> = want
        .iter()
        .map(|t| format!("server ping data: {t}"))
        .collect();
    assert_eq!(
        served.lines, server_lines,
        "the test kit's server saw ndkperf's texts"
    );
    assert_eq!(served.rounds, 25);
}

/// An IPv4 address no interface of this machine has (documentation
/// ranges, RFC 5737; checked, as a test machine may use one of them).
fn foreign_v4() -> &'static str {
    [
        "198.51.100.77",
        "203.0.113.77",
        "198.51.100.78",
        "192.0.2.177",
    ]
    .into_iter()
    .find(|ip| std::net::UdpSocket::bind((*ip, 0)).is_err())
    .expect("an address that is not this machine's")
}

#[test]
fn addresses_that_are_not_this_machines_are_refused() {
    let foreign = foreign_v4();
    ndkperf(&["ping", "-s", "-a", foreign])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "--addr {foreign} is not an address of this machine"
        )));
    ndkperf(&["ping", "-c", "-a", "127.0.22.41", "-I", foreign])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "--local {foreign} is not an address of this machine"
        )));
    ndkperf(&[
        "ping",
        "--transport",
        "udp",
        "-a",
        "127.0.22.42",
        "-I",
        foreign,
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("not an address of this machine"));
}

#[test]
fn other_refusals() {
    for (args, says) in [
        (&["ping", "-S", "22"][..], "valid range is 23 to 65535"),
        (&["ping", "-S", "64K"][..], "valid range is 23 to 65535"),
        (&["ping", "-c"][..], "--client needs --addr"),
        (
            &["ping", "-s", "--transport", "mem"][..],
            "drop --server/--client",
        ),
        (&["ping", "-s", "-c"][..], "cannot be used with"),
        (&["ping", "-c", "-a", "::1"][..], "--addr ::1 needs --local"),
        (
            &["ping", "-a", "fd00::1"][..],
            "an IPv6 --addr needs --local",
        ),
    ] {
        ndkperf(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
}

/// A server whose buffer is smaller than the client's ping says so; the
/// client hears of the disconnect before its count.
#[test]
fn a_server_smaller_than_the_ping_says_so() {
    let mut srv = Command::new(bin())
        .args([
            "ping",
            "-s",
            "-a",
            "127.0.22.51",
            "-p",
            "7321",
            "--timeout",
            "60s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(srv.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    ndkperf(&[
        "ping",
        "-c",
        "-a",
        "127.0.22.51",
        "-I",
        "127.0.22.52",
        "-p",
        "7321",
        "-S",
        "1000",
        "-C",
        "5",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("disconnected after 0 of 5 pings"));
    let out = srv.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("start it with -S 1000 or more"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The client's capture shows rping's wire: a CM REQ to service ID
/// `0x106_0000 | 7174` (RDMA_PS_TCP) with responder resources and
/// initiator depth 1, then per ping SEND (16 bytes), RDMA READ request
/// and response, SEND, SEND, RDMA WRITE, SEND (ACKs and CM MADs aside).
#[test]
fn the_capture_shows_rpings_wire() {
    let dir = std::env::temp_dir().join(format!("ndkperf-ping-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("ping.pcap");
    let path = pcap.to_str().unwrap();
    ndkperf(&[
        "ping",
        "-a",
        "127.0.22.71",
        "-I",
        "127.0.22.72",
        "-C",
        "3",
        "-V",
        "--pcap",
        path,
    ])
    .assert()
    .success();
    let rows = testkit::adapter::tshark(
        path,
        &[
            "-T",
            "fields",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "udp.length",
            "-e",
            "infiniband.cm.req.serviceid",
            "-e",
            "infiniband.cm.req.responderres",
            "-e",
            "infiniband.cm.req.initdepth",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let fields: Vec<Vec<&str>> = rows.iter().map(|r| r.split('\t').collect()).collect();
    let req = fields
        .iter()
        .find(|f| f.get(2).is_some_and(|s| !s.is_empty()))
        .expect("a CM REQ");
    assert_eq!(
        req[2], "0x0000000001061c06",
        "service ID: RDMA_PS_TCP, port 7174"
    );
    assert_eq!(
        (req[3], req[4]),
        ("0x01", "0x01"),
        "responder resources, initiator depth"
    );
    // RC opcodes: 4 SEND only, 12 READ request, 16 READ response only, 10
    // WRITE only; 17 (ACK) and 100 (UD SEND only: CM MADs) aside.
    let rc: Vec<(&str, &str)> = fields
        .iter()
        .filter(|f| !matches!(f[0], "17" | "100"))
        .map(|f| (f[0], f[1]))
        .collect();
    let one_ping = ["4", "12", "16", "4", "4", "10", "4"];
    let opcodes: Vec<&str> = rc.iter().map(|r| r.0).collect();
    assert_eq!(opcodes, one_ping.repeat(3), "{rows:?}");
    // A SEND carries the 16-byte message: UDP 8 + BTH 12 + 16 + ICRC 4.
    assert!(
        rc.iter().filter(|r| r.0 == "4").all(|r| r.1 == "40"),
        "{rows:?}"
    );
}

//! The user's check: the `ndkperf ping` binary, as a user runs it, against
//! rxe's `rping` in guest 0, both ways. (`host_rping` drives the same
//! protocol through `testkit::rping`; this proves the tool.)

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use crate::peer::{Family, expect_server_ok, guest_client, guest_server, serial};
use crate::{check, shared_lab};

/// The host side's address on the lab's bridge.
const HOST_PART: u8 = 1;

/// The `ndkperf` binary of this build, built if it is not yet (a test of
/// the root package has no `CARGO_BIN_EXE_` of another package's binary).
fn ndkperf() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_ndkperf(false))
}

/// The `ndkperf` binary built with `--release`, as users run it (for
/// CPU figures that compare with an optimized kernel client).
pub fn release_ndkperf() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_ndkperf(true))
}

fn build_ndkperf(release: bool) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .args(["build", "-q", "-p", "ndkperf", "--bin", "ndkperf"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if release {
        command.arg("--release");
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cargo} to build ndkperf: {e}"));
    assert!(
        status.success(),
        "`cargo build -p ndkperf` (release: {release}) failed: {status}"
    );
    // This test binary is target/<profile>/deps/interop-HASH.
    let exe = std::env::current_exe().expect("the test's own path");
    let target = exe
        .parent()
        .and_then(|deps| deps.parent())
        .and_then(|profile| profile.parent())
        .expect("target/<profile>/deps/");
    let bin = target
        .join(if release { "release" } else { "debug" })
        .join("ndkperf");
    assert!(
        bin.is_file(),
        "no ndkperf at {} after building it",
        bin.display()
    );
    bin
}

/// Runs `ndkperf ARGS` inside the lab's namespace.
pub fn run_ndkperf(args: &[String]) -> Output {
    run_binary(ndkperf(), args)
}

/// Runs `bin ARGS` inside the lab's namespace.
pub fn run_binary(bin: &PathBuf, args: &[String]) -> Output {
    let mut command = Command::new(bin);
    command.args(args);
    check(shared_lab().netns().run(move || command.output()))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()))
}

/// Panics with the tool's output unless it exited 0.
fn expect_ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn ndkperf_ping_client_against_rxe_rping_server() {
    let _serial = serial();
    for (family, port) in [(Family::V4, 7231), (Family::V6, 7232)] {
        let (local, peer): (IpAddr, IpAddr) = (family.lab_addr(HOST_PART), family.guest());
        let (size, count) = (4096, 50);
        let server = guest_server(peer, port, size, count);
        let out = run_ndkperf(&[
            "ping".into(),
            "-c".into(),
            "-a".into(),
            peer.to_string(),
            "-I".into(),
            local.to_string(),
            "-p".into(),
            port.to_string(),
            "-C".into(),
            count.to_string(),
            "-S".into(),
            size.to_string(),
            "-V".into(),
            "-v".into(),
        ]);
        let stdout = expect_ok(&out, &format!("ndkperf ping -c -a {peer}"));
        assert_eq!(
            stdout.matches("ping data: rdma-ping-").count(),
            count as usize,
            "{stdout}"
        );
        expect_server_ok(server, &format!("rping -s for ndkperf over {family:?}"));
        eprintln!(
            "ndkperf ping -c against rxe over {family:?}: {}",
            stdout.lines().last().unwrap_or_default()
        );
    }
}

#[test]
fn rxe_rping_client_against_ndkperf_ping_server() {
    let _serial = serial();
    for (family, port) in [(Family::V4, 7233), (Family::V6, 7234)] {
        let local = family.lab_addr(HOST_PART);
        let (size, count) = (65_535, 20);
        let args: Vec<String> = [
            "ping",
            "-s",
            "-a",
            &local.to_string(),
            "-p",
            &port.to_string(),
            "-S",
            &size.to_string(),
            "--timeout",
            "120",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        let server = std::thread::spawn(move || run_ndkperf(&args));
        wait_for_adapter(local);
        guest_client(local, port, size, count);
        let out = server.join().expect("the ndkperf thread");
        let stdout = expect_ok(&out, &format!("ndkperf ping -s -a {local}"));
        eprintln!(
            "ndkperf ping -s for rxe's rping -c over {family:?}: {}",
            stdout.lines().last().unwrap_or_default()
        );
    }
}

/// Waits until an adapter owns `addr`'s port 4791 in the lab's namespace
/// (binding it there fails), then a little more: the tool listens right
/// after opening its adapter.
fn wait_for_adapter(addr: IpAddr) {
    let taken = || {
        check(shared_lab().netns().run(move || {
            std::net::UdpSocket::bind((addr, 4791))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::AddrInUse)
        }))
    };
    for _ in 0..600 {
        if taken() {
            std::thread::sleep(Duration::from_millis(300));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("ndkperf ping -s never opened an adapter at {addr} (30 s)");
}

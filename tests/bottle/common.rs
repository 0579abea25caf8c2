//! What every part of the bottle suite shares: the one booted machine of
//! this test process, adapters at fresh loopback addresses, and tests
//! that run themselves in a child process (unload, bugchecks and the
//! low-resources sweep change process-global kernel state).

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};

/// How long an adapter may take to open its socket and enable NDK.
pub const READY: Duration = Duration::from_secs(10);

/// Set in the environment of a child run by [`in_child`].
const CHILD_ENV: &str = "RSNDK_BOTTLE_CHILD";

/// The image under test.
pub fn image() -> PathBuf {
    static IMAGE: OnceLock<PathBuf> = OnceLock::new();
    IMAGE.get_or_init(kbottle::image::rsndk_sys).clone()
}

/// The machine of this process, booted on first use and never unloaded
/// (tests that unload boot their own, in a child).
pub fn machine() -> &'static Machine {
    kbottle::shared::machine()
}

/// A loopback address no other bottled adapter of this process uses.
pub fn fresh_address() -> Ipv4Addr {
    kbottle::shared::fresh_address()
}

/// The keywords of an adapter at `ip`, as the INF would store them.
pub fn keywords(ip: Ipv4Addr) -> Vec<(&'static str, Keyword)> {
    vec![
        ("*NetworkDirect", Keyword::Int(1)),
        ("RsNdkIPv4Address", Keyword::Str(ip.to_string())),
    ]
}

/// A new adapter of `machine` at `ip`, NDK ready.
pub fn adapter_on(machine: &Machine, ip: Ipv4Addr) -> AdapterId {
    let id = machine
        .add_adapter(&keywords(ip))
        .unwrap_or_else(|s| panic!("MiniportInitializeEx at {ip}: {:#010x}", s as u32));
    assert!(
        machine.wait_ndk_ready(id, READY),
        "adapter at {ip} never became NDK-ready"
    );
    id
}

/// A new adapter of this process's machine at a fresh address.
pub fn adapter() -> (AdapterId, Ipv4Addr) {
    let ip = fresh_address();
    (adapter_on(machine(), ip), ip)
}

/// Whether this process is a child run by [`in_child`].
pub fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// Runs the single test `path` (e.g. `lifecycle::full_lifecycle`) of this
/// binary in a child process and returns what it did. The test itself
/// calls `in_child` when [`is_child`] is false and does its work when it
/// is true.
pub fn in_child(path: &str) -> Output {
    let exe = std::env::current_exe().expect("test binary path");
    Command::new(exe)
        .args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env(
            kbottle::shared::CHILD_NETWORK_ENV,
            kbottle::shared::child_network().to_string(),
        )
        .env("RSNDK_SYS", image())
        .output()
        .expect("running the child test")
}

/// Runs `path` in a child and fails, with its output, unless it passed.
pub fn child_passes(path: &str) {
    let out = in_child(path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child {path} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}

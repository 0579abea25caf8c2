//! What every part of the bottle suite shares: the one booted machine of
//! this test process, adapters (the driver's virtual miniport V over an
//! emulated NIC on an emulated Ethernet segment) with a fresh address on
//! their interface, and tests that run themselves in a child process
//! (unload, bugchecks and the low-resources sweep change process-global
//! kernel state).

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::segment::SegmentId;

pub use testkit::adapter::bottle::{READY, give_address, ndk_enabled, wait_served};

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

/// An IPv4 address on the emulated segments no other bottled adapter of
/// this process (or of its parent, in a child) uses; every one is on-link
/// with every other (198.18.0.0/16).
pub fn fresh_address() -> Ipv4Addr {
    kbottle::shared::fresh_address()
}

/// The keywords of V, as its INF stores them (the address comes from the
/// IP stack, not from a keyword).
pub fn keywords() -> Vec<(&'static str, Keyword)> {
    vec![("*NetworkDirect", Keyword::Int(1))]
}

/// A new V of `machine` with `keywords` on `segment`, NDK enabled, at
/// `ip`, which the driver serves when this returns.
pub fn adapter_with(
    machine: &Machine,
    segment: SegmentId,
    keywords: &[(&str, Keyword)],
    ip: IpAddr,
) -> AdapterId {
    let id = machine
        .add_adapter_on(segment, keywords)
        .unwrap_or_else(|s| panic!("adapter for {ip}: {:#010x}", s as u32));
    assert!(ndk_enabled(machine, id), "V for {ip} has NDK disabled");
    give_address(machine, id, ip);
    id
}

/// A new V of `machine` on its default segment at `ip`, served.
pub fn adapter_on(machine: &Machine, ip: Ipv4Addr) -> AdapterId {
    adapter_with(machine, machine.default_segment(), &keywords(), ip.into())
}

/// A new V of this process's machine at a fresh address, served.
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

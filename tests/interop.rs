//! Interoperability with Linux: rsndk against soft-RoCE (`rdma_rxe`) and
//! librdmacm's `rping` in a QEMU guest on a bridge in a network namespace
//! (`crates/lab`). Needs root, qemu-system-x86, iproute2, tcpdump, tshark
//! and apt access to Debian's packages; without them the tests fail with
//! what is missing.
//!
//! Tests share one lab per test binary ([`shared_lab`]: two guests, booted
//! by the first test that asks). It is never dropped: when the process
//! exits, its QEMUs die with the namespace's keeper thread
//! (`PR_SET_PDEATHSIG`) and the kernel removes the anonymous namespace;
//! the next lab sweeps its run directory.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

#[path = "interop/bottle_rping.rs"]
mod bottle_rping;
#[path = "interop/host_rping.rs"]
mod host_rping;
#[path = "interop/lab_selftest.rs"]
mod lab_selftest;
#[path = "interop/ndkperf_ping.rs"]
mod ndkperf_ping;
#[path = "interop/netem.rs"]
mod netem;
#[path = "interop/peer.rs"]
mod peer;
#[path = "interop/smb_compare.rs"]
mod smb_compare;
#[path = "interop/smb_lab.rs"]
mod smb_lab;
#[path = "interop/smbd_bottle.rs"]
mod smbd_bottle;
#[path = "interop/smbd_ksmbd.rs"]
mod smbd_ksmbd;

use std::sync::OnceLock;

/// The process-wide lab: guest 0 (10.77.0.2, fd77::2) and guest 1
/// (10.77.0.10, fd77::10), `rxe0` ACTIVE on both. Panics with the lab's
/// error if it cannot start.
pub fn shared_lab() -> &'static lab::Lab {
    static LAB: OnceLock<lab::Lab> = OnceLock::new();
    LAB.get_or_init(|| {
        let config = lab::LabConfig {
            guests: 2,
            ..lab::LabConfig::default()
        };
        let lab = lab::Lab::start(&config).unwrap_or_else(|error| panic!("{error}"));
        eprintln!(
            "interop lab {}: accelerator {:?}, image {} ({} in {:.1} s), boot {}",
            lab.name(),
            lab.accel(),
            lab.image().dir.display(),
            if lab.image().built { "built" } else { "cached" },
            lab.image().elapsed.as_secs_f64(),
            lab.guests()
                .iter()
                .map(|guest| format!("{} {:.1} s", guest.name(), guest.boot_time().as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        lab
    })
}

/// `result`'s value, or a panic with the lab's error message.
pub fn check<T>(result: lab::Result<T>) -> T {
    result.unwrap_or_else(|error| panic!("{error}"))
}

//! The one machine a test process shares, and the loopback addresses its
//! adapters take. Kept in this library, not in a test module, because a
//! test binary may compile its helper modules more than once (each
//! `#[path]`-included test file brings its own copy), while the kernel
//! state behind a [`Machine`] exists once per process.

use std::net::Ipv4Addr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::Machine;

/// The machine of this process: `image::rsndk_sys()` booted on first use
/// and never unloaded (a test that unloads boots its own machine, in a
/// child process).
pub fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(|| {
        let image = crate::image::rsndk_sys();
        Machine::boot(&image).unwrap_or_else(|e| panic!("booting {}: {e:?}", image.display()))
    })
}

/// First octet triple of the bottle's address block, 127.0.40.0/21: the
/// host suites use 127.0.8.0-127.0.15.255.
const BLOCK_START: u8 = 40;
/// Number of /24s in the block.
const BLOCK_NETS: u32 = 8;

static NEXT_ADDRESS: AtomicU32 = AtomicU32::new(0);

/// A loopback address no other bottled adapter of this process uses:
/// 127.0.40.1 to 127.0.47.254.
///
/// # Panics
/// When the block is exhausted (over 2,000 adapters in one process).
pub fn fresh_address() -> Ipv4Addr {
    let n = NEXT_ADDRESS.fetch_add(1, Ordering::SeqCst);
    assert!(n < BLOCK_NETS * 254, "bottle address block exhausted");
    Ipv4Addr::new(127, 0, BLOCK_START + (n / 254) as u8, 1 + (n % 254) as u8)
}

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

/// Third octet of the first /24 of a test process's address block,
/// 127.0.40.0/21 (the host suites use 127.0.8.0-127.0.15.255).
const BLOCK_START: u8 = 40;
/// Number of /24s in that block.
const BLOCK_NETS: u32 = 8;
/// Names the one /24 (its third octet) a child test process takes its
/// addresses from, so that it binds none its parent still holds: see
/// [`child_network`].
pub const CHILD_NETWORK_ENV: &str = "RSNDK_BOTTLE_NETWORK";
/// Third octets the children of a test process take in turn:
/// 127.0.64.0 to 127.0.127.255.
const CHILD_NETWORKS: std::ops::Range<u8> = 64..128;

static NEXT_ADDRESS: AtomicU32 = AtomicU32::new(0);
static NEXT_CHILD: AtomicU32 = AtomicU32::new(0);

/// A loopback address no other bottled adapter of this process (or of its
/// parent or sibling test processes) uses: 127.0.40.1 to 127.0.47.254, or
/// in a child the /24 its parent gave it in [`CHILD_NETWORK_ENV`].
///
/// # Panics
/// When the block is exhausted (over 2,000 adapters in one process, 254 in
/// a child).
pub fn fresh_address() -> Ipv4Addr {
    let n = NEXT_ADDRESS.fetch_add(1, Ordering::SeqCst);
    let child = std::env::var(CHILD_NETWORK_ENV)
        .ok()
        .and_then(|v| v.parse::<u8>().ok());
    let (start, nets) = child.map_or((BLOCK_START, BLOCK_NETS), |net| (net, 1));
    assert!(n < nets * 254, "bottle address block exhausted");
    Ipv4Addr::new(127, 0, start + (n / 254) as u8, 1 + (n % 254) as u8)
}

/// The /24 (third octet) the next child test process of this one takes
/// its addresses from; pass it in [`CHILD_NETWORK_ENV`].
///
/// # Panics
/// When 64 children have been started.
pub fn child_network() -> u8 {
    let k = NEXT_CHILD.fetch_add(1, Ordering::SeqCst);
    let width = u32::from(CHILD_NETWORKS.end - CHILD_NETWORKS.start);
    assert!(k < width, "bottle child networks exhausted");
    CHILD_NETWORKS.start + k as u8
}

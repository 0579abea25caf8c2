//! The one machine a test process shares, and the addresses its adapters
//! take on the emulated segments. Kept in this library, not in a test
//! module, because the kernel state behind a [`Machine`] exists once per
//! process: every test module and harness of a test binary (the bottle's
//! own files, `testkit::adapter`'s bottle backend) reaches this one copy.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::machine::Machine;

/// The machine of this process: `image::rsndk_sys()` booted on first use
/// and never unloaded (a test that unloads boots its own machine, in a
/// child process).
pub fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(|| {
        let image = crate::loader::image::rsndk_sys();
        Machine::boot(&image).unwrap_or_else(|e| panic!("booting {}: {e:?}", image.display()))
    })
}

/// Third octet of the first /24 of a test process's address block (in
/// 198.18.0.0/15, the benchmarking range nothing routes; in 127.0.0.0/8
/// for [`fresh_loopback_address`]).
const BLOCK_START: u8 = 40;
/// Number of /24s in that block.
const BLOCK_NETS: u32 = 8;
/// Names the one /24 (its third octet) a child test process takes its
/// addresses from, so that it uses none its parent still holds: see
/// [`child_network`].
pub const CHILD_NETWORK_ENV: &str = "RSNDK_BOTTLE_NETWORK";
/// Third octets the children of a test process take in turn: 64 to 127.
const CHILD_NETWORKS: std::ops::Range<u8> = 64..128;

static NEXT_ADDRESS: AtomicU32 = AtomicU32::new(0);
static NEXT_ADDRESS_V6: AtomicU32 = AtomicU32::new(0);
static NEXT_LOOPBACK: AtomicU32 = AtomicU32::new(0);
static NEXT_CHILD: AtomicU32 = AtomicU32::new(0);

/// The `n`-th (network, host) of this process's block: networks
/// 40 to 47 and hosts 1 to 254, or in a child the one network its parent
/// gave it in [`CHILD_NETWORK_ENV`].
///
/// # Panics
/// When the block is exhausted (over 2,000 addresses in one process, 254
/// in a child).
fn nth(n: u32) -> (u8, u8) {
    let child = std::env::var(CHILD_NETWORK_ENV)
        .ok()
        .and_then(|v| v.parse::<u8>().ok());
    let (start, nets) = child.map_or((BLOCK_START, BLOCK_NETS), |net| (net, 1));
    assert!(n < nets * 254, "bottle address block exhausted");
    (start + (n / 254) as u8, 1 + (n % 254) as u8)
}

/// An IPv4 address on the emulated segments no other bottled adapter of
/// this process (or of its parent or sibling test processes) uses:
/// 198.18.40.1 to 198.18.47.254, or in a child 198.18.N.1-254 for the N
/// its parent gave it in [`CHILD_NETWORK_ENV`]. All are in 198.18.0.0/16,
/// so a /16 prefix makes any two on-link.
///
/// # Panics
/// When the block is exhausted.
pub fn fresh_address() -> Ipv4Addr {
    let (net, host) = nth(NEXT_ADDRESS.fetch_add(1, Ordering::SeqCst));
    Ipv4Addr::new(198, 18, net, host)
}

/// An IPv6 address on the emulated segments (a unique local address),
/// unique as [`fresh_address`]'s: `fd00:5253:0:N::H` for the same
/// networks N and hosts H. Every one is in `fd00:5253::/48`; those of one
/// process (or child) share a /64 per network.
///
/// # Panics
/// When the block is exhausted.
pub fn fresh_address_v6() -> Ipv6Addr {
    let (net, host) = nth(NEXT_ADDRESS_V6.fetch_add(1, Ordering::SeqCst));
    Ipv6Addr::new(0xFD00, 0x5253, 0, u16::from(net), 0, 0, 0, u16::from(host))
}

/// A loopback address as [`fresh_address`]'s block lays them out
/// (127.0.40.1 to 127.0.47.254, a child's 127.0.N.x), for what binds
/// real host sockets.
///
/// # Panics
/// When the block is exhausted.
pub fn fresh_loopback_address() -> Ipv4Addr {
    let (net, host) = nth(NEXT_LOOPBACK.fetch_add(1, Ordering::SeqCst));
    Ipv4Addr::new(127, 0, net, host)
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

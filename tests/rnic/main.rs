//! The software RNIC driven end to end through the C entry points and the
//! NDK dispatch tables, two adapters at a time: the scenarios on each
//! transport (`two_nodes`), transport behaviour seen in captures
//! (`transport`, `pcap`, decoded by tshark), a peer that sends what it
//! should not (`hostile_peer`), the UDP transport's wire and path
//! (`udp_wire`: ICRCs checked independently over the real headers, path
//! MTU, send failures) and the randomised long run (`soak`, ignored by
//! default).
//!
//! Addresses are per module (and per test within it): the host keys
//! devices by address, and every module's tests share this process.

#[path = "../rnic_util/mod.rs"]
mod rnic_util;

mod hostile_peer;
mod pcap;
mod soak;
mod transport;
mod two_nodes;
mod udp_wire;

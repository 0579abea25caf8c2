//! ndkperf's workloads as a library: the NDK consumer wrappers
//! ([`ndk`]), the connection plumbing ([`link`]), the workloads and
//! the SMB 3 client of `smbd --server` ([`smbd::client`]). The
//! `ndkperf` binary is its command line; the interop tests drive the
//! same client over a bottled `rsndk.sys` adapter
//! ([`ndk::Adapter::from_raw`]).

// Rates and latencies are computed in f64 from counts and nanoseconds,
// far below 2^52 where the conversion would round.
#![allow(clippy::cast_precision_loss)]

pub mod bench;
pub mod cpu;
pub mod error;
pub mod info;
pub mod interrupt;
pub mod link;
pub mod meter;
pub mod ndk;
pub mod output;
pub mod perf;
pub mod ping;
pub mod plot;
pub mod progress;
pub mod report;
pub mod setup;
pub mod smbd;
pub mod stats;
pub mod tcp;
pub mod udp;
pub mod verify;

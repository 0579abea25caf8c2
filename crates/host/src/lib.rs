//! The Linux host of rsndk: the user-space `Platform` and the C entry points
//! (`RsNdkOpenAdapter`, `RsNdkCloseAdapter`, declared in
//! `include/rsndk_host.h`) through which a consumer opens software RNIC
//! adapters and then drives them through the NDK dispatch tables, as a
//! kernel consumer does on Windows.
//!
//! Its modules, one job each, grouped by what they do (no module import
//! cycle among them: `.ci/module_cycles.py`):
//!
//! - Running a device: [`clock`] (`HostClock`, the time every device and
//!   poller reads); [`waker`] (`ThreadWaker`, the engine's wake-up, with the
//!   busy-poll state that makes the engine stand aside); [`busy`] (the
//!   busy-polling policy, `BusyPoll`, and `SharedWaker`, the `Wake` a
//!   device is given: wake-ups to the engine, consumers' polls to the
//!   policy); [`pass`] (`DevicePass`: a device's pass as this runtime runs
//!   it, arrivals in, the device's work, what it sends out); [`engine`]
//!   (`DeviceThreads`: the one thread per device and its loop; `start_udp`
//!   starts it for a device on a UDP socket).
//! - Carrying its datagrams: [`udp`] (UDP 4791 sockets: `UdpPort`, its
//!   pump and `UdpPass`, `UdpLink`, `UdpRoutes`); [`hub`] (`FabricHub`,
//!   the in-memory fabric of the process, each device's fabric endpoint
//!   on it, and the start of a device's engine on it); [`pcap`] (capture).
//! - The Windows side it stands in for: [`checker`] and [`platform`] (the
//!   checked `Platform`), [`mdl`] (MDLs for consumers).
//! - Opening adapters: [`config`] (the configuration string), [`adapters`]
//!   (the open adapters and their devices, built from the modules above),
//!   [`entry`] (the C entry points).

pub mod adapters;
pub mod busy;
pub mod checker;
pub mod clock;
pub mod config;
pub mod engine;
pub mod entry;
pub mod hub;
pub mod mdl;
pub mod pass;
pub mod pcap;
pub mod platform;
#[cfg(test)]
mod test_loopback;
pub mod udp;
pub mod waker;

pub use config::{AdapterConfig, ConfigError, FaultConfig, Transport};
pub use entry::{RsNdkCloseAdapter, RsNdkOpenAdapter, RsNdkOpenAdapterEx, parse_config};
pub use mdl::{RsNdkAllocateMdl, RsNdkFreeMdl};

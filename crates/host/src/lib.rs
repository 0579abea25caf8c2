//! The Linux host of rsndk: the user-space `Platform` and the C entry points
//! (`RsNdkOpenAdapter`, `RsNdkCloseAdapter`, declared in
//! `include/rsndk_host.h`) through which a consumer opens software RNIC
//! adapters and then drives them through the NDK dispatch tables, as a
//! kernel consumer does on Windows.

pub mod adapters;
pub mod busy;
pub mod checker;
pub mod clock;
pub mod config;
pub mod engine;
pub mod entry;
pub mod hub;
pub mod mdl;
pub mod pcap;
pub mod platform;
pub mod udp;
pub mod waker;

pub use config::{AdapterConfig, ConfigError, FaultConfig, Transport};
pub use entry::{RsNdkCloseAdapter, RsNdkOpenAdapter, RsNdkOpenAdapterEx, parse_config};
pub use mdl::{RsNdkAllocateMdl, RsNdkFreeMdl};

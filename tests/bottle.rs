//! The real `rsndk.sys`, linked for `x86_64-pc-windows-msvc`, run in the
//! kernel bottle (`crates/kbottle`) as the NDIS MUX intermediate driver it
//! is: its virtual miniport V bound over emulated NICs on emulated
//! Ethernet segments, V's addresses given to its interface in the bottle's
//! TCP/IP. Its NDIS lifecycle, the consumer-level suite on its NDK
//! adapters (IPv4 and IPv6), RoCEv2 between bottled drivers as Ethernet
//! frames (with a segment capture decoded by tshark), the low-resources
//! sweep, PE conformance, one test per defect the bottle found, and
//! bottled adapters on taps in a network namespace of the test's own,
//! meeting a real Linux stack and bridge.
//!
//! `cargo test --test bottle` builds the image first (see
//! `kbottle::image`); `RSNDK_SYS=path` runs a given image instead.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

// Every `backend_tests!` body included here runs on the bottle backend.
use testkit::bottle_variants as backend_variants;
// Their scripted-device-only tests do not.
use testkit::drop_items as host_only;

#[path = "bottle/common.rs"]
mod common;
#[path = "bottle/conn.rs"]
mod conn;
#[path = "bottle/defects.rs"]
mod defects;
#[path = "bottle/dma_mapping.rs"]
mod dma_mapping;
#[path = "bottle/kernel_locks.rs"]
mod kernel_locks;
#[path = "bottle/lifecycle.rs"]
mod lifecycle;
#[path = "bottle/low_resources.rs"]
mod low_resources;
#[path = "bottle/ndk.rs"]
mod ndk;
#[path = "bottle/ndk_teardown.rs"]
mod ndk_teardown;
#[path = "bottle/network.rs"]
mod network;
#[path = "bottle/oid_tables.rs"]
mod oid_tables;
#[path = "bottle/pe_conformance.rs"]
mod pe_conformance;
#[path = "bottle/rping.rs"]
mod rping;
#[path = "bottle/segment.rs"]
mod segment;
#[path = "bottle/shell_conformance.rs"]
mod shell_conformance;
#[path = "bottle/suite.rs"]
mod suite;
#[path = "bottle/tap.rs"]
mod tap;

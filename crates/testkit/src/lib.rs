//! rsndk's test kit: what tests drive the product with, kept out of the
//! product's libraries. A dev-dependency only.
//!
//! - [`scripted`]: `ScriptedDevice`, an `hwq::Device` that does exactly
//!   what a test tells it (the provider's suite runs on it besides the
//!   software RNIC backends).
//! - [`adapter`]: the adapter-level harness every consumer-level test and
//!   the `post_send` bench use (`use testkit::adapter::*;`): `Env`, the
//!   adapter under test on any backend, and one wrapper per NDK dispatch
//!   entry. The provider's suite, the root's `rnic`, `abi` and `bottle`
//!   tests and `benches/post_send.rs` take it from here, not by
//!   including each other's files.
//! - [`backend`]: the backends a consumer-level test body runs on and
//!   [`backend_tests!`], which writes one test per backend from one body.
//! - [`recorder`]: recorders of the provider's callbacks.
//! - [`dma`]: MDLs, page-aligned buffers and logical addresses, host
//!   memory as the device under test sees it.
//! - [`netns`] (Linux): a network namespace of a test's own, with taps,
//!   commands, ping and UDP sockets inside it, for bottled adapters on a
//!   real Linux Ethernet (`adapter::bottle::tap`).
//! - [`rping`]: librdmacm's rping, client and server, over any raw
//!   `NDK_ADAPTER` (librsndk's or a bottled driver's), for checking
//!   rsndk against Linux rping and `ndkperf ping`.

pub mod adapter;
pub mod backend;
pub mod dma;
#[cfg(target_os = "linux")]
pub mod netns;
pub mod recorder;
pub mod rping;
pub mod scripted;

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
//! - [`suite`]: the provider's consumer-level suite, its test bodies as
//!   one macro per area, which the provider's `suite` binary runs on the
//!   host backends and the root's `bottle` binary on the bottled driver.
//! - [`backend`]: the backends a consumer-level test body runs on and
//!   [`backend_tests!`], which writes one test per backend from one body.
//! - [`recorder`]: recorders of the provider's callbacks.
//! - [`dma`]: MDLs, page-aligned buffers and logical addresses, host
//!   memory as the device under test sees it.

pub mod adapter;
pub mod backend;
pub mod dma;
pub mod recorder;
pub mod scripted;
pub mod suite;

// This crate's test build expands the suite's bodies only to lint them
// (`suite::checked`): no variants, and the scripted-only items dropped.
#[cfg(test)]
macro_rules! no_variants {
    ($($variants:tt)*) => {};
}
#[cfg(test)]
use drop_items as host_only;
#[cfg(test)]
use no_variants as backend_variants;

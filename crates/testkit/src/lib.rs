//! rsndk's test kit: what tests drive the product with, kept out of the
//! product's libraries. A dev-dependency only.
//!
//! - [`scripted`]: `ScriptedDevice`, an `hwq::Device` that does exactly
//!   what a test tells it (the provider's suite runs on it besides the
//!   software RNIC backends).

pub mod scripted;

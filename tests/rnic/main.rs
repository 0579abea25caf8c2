//! The software RNIC driven end to end through the C entry points and the
//! NDK dispatch tables, two adapters at a time.

#[path = "../../crates/provider/tests/util/mod.rs"]
mod provider_util;
#[path = "../rnic_util/mod.rs"]
mod rnic_util;

mod two_nodes;

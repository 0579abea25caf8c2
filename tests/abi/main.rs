//! The driver package's entry points and the provider's rules at its
//! edges: the C entry points (`host_open`) and C consumers compiled
//! against the headers (`c_abi`), the checked host platform catching each
//! rule it enforces (`checked_platform`), every pool allocation of a
//! connection made to fail in turn (`low_resources`), and dispatch entries
//! called with arbitrary arguments (`fuzz_dispatch`).
//!
//! Addresses are per module (and per test within it): the host keys
//! devices by address, and every module's tests share this process.

#[path = "../rnic_util/mod.rs"]
mod rnic_util;

mod c_abi;
mod checked_platform;
mod fuzz_dispatch;
mod host_open;
mod low_resources;

//! rsndk: an NDK provider driver whose hardware is a software RoCEv2 RNIC.
//!
//! This package is the driver. On Windows with `--features wdk` it is the
//! kernel driver `rsndk.sys`; on every other configuration it is an ordinary
//! library whose cdylib (`librsndk.so`) exports the host entry points of
//! `include/rsndk_host.h`.

#![cfg_attr(feature = "wdk", no_std)]

#[cfg(not(windows))]
pub use host::*;

#[cfg(all(feature = "wdk", target_os = "windows"))]
mod driver;

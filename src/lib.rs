//! rsndk: an NDK provider driver whose hardware is a software RoCEv2 RNIC.
//!
//! This package is the driver. For Windows targets it is the kernel driver
//! `rsndk.sys`: `no_std`, with the NDIS intermediate-driver shell of
//! `src/driver/` over hand-declared NDIS, kernel and IP Helper imports
//! (crate `ndis`).
//! That shell needs no WDK to compile, so Linux CI type-checks it with
//! `cargo check --target x86_64-pc-windows-msvc`; only the final link
//! (`--features wdk`, on a Windows host with the WDK) needs windows-drivers-rs.
//! On every other target it is an ordinary library whose cdylib
//! (`librsndk.so`) exports the host entry points of `include/rsndk_host.h`.

// The kernel has no std. Unit tests of this crate (a Windows host only)
// link the test harness, which brings std and its panic handler.
#![cfg_attr(all(windows, not(test)), no_std)]

#[cfg(not(windows))]
pub use host::*;

#[cfg(windows)]
extern crate alloc;

// The kernel image links wdk-sys for what a driver without the C runtime
// needs (`_fltused`, the EH handler stubs); `--features wdk` only.
#[cfg(all(windows, feature = "wdk"))]
extern crate wdk_sys as _;

#[cfg(windows)]
mod driver;

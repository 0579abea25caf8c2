//! `rsndknotify.dll`: the notify object of rsndk's MUX intermediate driver.
//!
//! A MUX IM driver needs one (the WDK's "Installation Requirements for
//! Network MUX Intermediate Drivers"): NDIS cannot create the virtual
//! miniport's devnode, so the protocol's notify object installs V over
//! each NIC the protocol binds to, writes the `UpperBindings` value the
//! driver's bind reads, keeps the protocol off its own V and moves the
//! other protocols from the NIC to V. [`notify`] holds those decisions as
//! plain Rust over the small traits of [`netcfg`], tested on any host
//! against an in-memory model (`tests/model.rs`).
//!
//! On Windows the crate is also the in-process COM server netcfg loads
//! (`com`, `cfg(windows)`): `no_std` with no C runtime, linked by rust-lld
//! like `rsndk.sys`, exporting `DllGetClassObject`, `DllCanUnloadNow`,
//! `DllRegisterServer` and `DllUnregisterServer` and nothing else. Its
//! COM declarations ([`sys`]) are hand-written and checked against
//! mingw-w64's `netcfgx.idl`/`netcfgn.idl` (`tests/com_layout.rs`); the
//! linked DLL's PE headers are checked in `tests/pe.rs`, and
//! `tests/wine.rs` runs it under Wine through its class factory against a
//! fake netcfg (`harness/`).
//!
//! Build: `cargo build -p rsndknotify --target x86_64-pc-windows-msvc
//! --release` writes `target/x86_64-pc-windows-msvc/release/rsndknotify.dll`
//! (and its `.pdb`). The INF names the class as [`CLSID_RSNDK_NOTIFY`].

// Windows: the DLL has no std (no MSVC C runtime to link on a Linux
// host). Tests on Windows would bring std; they run on Linux.
#![cfg_attr(all(windows, not(test)), no_std)]
// Unsafe code lives in the COM layer only.
#![deny(unsafe_code)]

extern crate alloc;

pub mod guid;
pub mod netcfg;
pub mod notify;
pub mod record;
pub mod sys;

#[cfg(windows)]
#[allow(unsafe_code)]
mod com;

pub use guid::Guid;
pub use netcfg::{AdapterMedia, AdapterRegistry, BindingPath, Component, Failure, NetCfg};
pub use notify::{Notify, SUPPORTED_NOTIFICATIONS, Verdict};
pub use record::Record;

/// The notify object's class: `{400c38e6-72d6-4acc-beae-154c2d0f41e9}`,
/// the `Ndi\ClsID` of `rsndkp.inx` (and of docs/windows.md).
pub const CLSID_RSNDK_NOTIFY: Guid = Guid::from_u128(0x400c38e6_72d6_4acc_beae_154c2d0f41e9);

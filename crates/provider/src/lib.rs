//! The NDK provider of rsndk: every NDK object and dispatch table of
//! `ndkpi.h` over the `hwq` device contract and a [`Platform`].
//!
//! Versions: NDKPI 1.0-1.2 (served at 1.2) and 2.0-2.1 (served at 2.1);
//! see [`negotiate`]. A 2.x adapter's connectors add `NdkCompleteConnectEx`
//! and `NdkAcceptEx`, whose extended disconnect callback gets a
//! [`connector::DisconnectReason`], and its `NDK_RESULT_EX` records carry a
//! `ProviderErrorCode`; a 1.x adapter behaves as the 1.2 interface.
//!
//! `no_std` + `alloc`: the same code runs in the Windows kernel driver and in
//! Linux tests. Every allocation is fallible and accounted ([`pool`]); the
//! posting and polling paths neither allocate nor block.
//!
//! One edge for raw pointers: the entry points of every dispatch table live
//! in [`dispatch`] (one module per object kind), where consumer pointers
//! become checked references through [`abi`]; [`lock`]'s spin lock is the
//! only other module allowed `unsafe_code`. The crate denies it elsewhere.
//!
//! Module map, following NDK's object model: [`adapter`] (open,
//! version), [`info`] (adapter info), [`pd`], [`cq`], [`mr`], [`mw`],
//! [`srq`], [`qp`] (create, post_send, post_recv, fast_register, bind,
//! flags), [`connector`], [`listener`], [`endpoint`] (shared endpoints),
//! [`lam`] and [`mdl`]; infrastructure: [`platform`], [`pool`], [`lock`],
//! [`object`] (lifetimes and close rules), [`callout`], [`device`] (the
//! per-device context and event routing), [`table`], [`snapshot`] (the
//! live connections and endpoints, read-only), [`status`],
//! [`sockaddr`], [`sge`].

#![no_std]
#![deny(unsafe_code)]

extern crate alloc;

#[allow(unsafe_code)]
pub mod abi;
pub mod adapter;
pub mod callout;
pub mod connector;
pub mod cq;
pub mod device;
#[allow(unsafe_code)]
pub mod dispatch;
pub mod endpoint;
pub mod info;
pub mod lam;
pub mod listener;
#[allow(unsafe_code)]
pub mod lock;
pub mod mdl;
pub mod mr;
pub mod mw;
pub mod object;
pub mod pd;
pub mod platform;
pub mod pool;
pub mod qp;
pub mod sge;
pub mod snapshot;
pub mod sockaddr;
pub mod srq;
pub mod status;
pub mod table;
#[cfg(test)]
mod testing;

pub use adapter::{PROVIDER_VERSION, highest_minor, negotiate, open_adapter};
pub use device::DeviceContext;
pub use dispatch::adapter::close_adapter;
pub use platform::{Irql, LockClass, Platform, PoolTag, PoolType};

//! The NDK provider of rsndk: every NDK object and dispatch table of
//! `ndkpi.h` (version 1.2) over the `hwq` device contract and a
//! [`Platform`].
//!
//! `no_std` + `alloc`: the same code runs in the Windows kernel driver and in
//! Linux tests. Every allocation is fallible and accounted ([`pool`]); the
//! posting and polling paths neither allocate nor block. Consumer pointers
//! become checked references in one place ([`abi`]); everything behind it is
//! safe Rust.
//!
//! Module map, following NDK's object model: [`adapter`] (open/close,
//! version), [`info`] (adapter info), [`pd`], [`cq`], [`mr`], [`mw`],
//! [`srq`], [`qp`] (create, post_send, post_recv, fast_register, bind,
//! flags), [`connector`], [`listener`], [`endpoint`] (shared endpoints),
//! [`lam`] and [`mdl`]; infrastructure: [`platform`], [`pool`], [`lock`],
//! [`object`] (lifetimes and close rules), [`callout`], [`device`] (the
//! per-device context and event routing), [`table`], [`status`],
//! [`sockaddr`], [`sge`].

#![no_std]

extern crate alloc;

pub mod abi;
pub mod adapter;
pub mod callout;
pub mod connector;
pub mod cq;
pub mod device;
pub mod endpoint;
pub mod info;
pub mod lam;
pub mod listener;
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
pub mod sockaddr;
pub mod srq;
pub mod status;
pub mod table;
#[cfg(test)]
mod testing;

pub use adapter::{PROVIDER_VERSION, close_adapter, negotiate, open_adapter};
pub use device::DeviceContext;
pub use platform::{Irql, LockClass, Platform, PoolTag, PoolType};

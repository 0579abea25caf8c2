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
//! ## One `NdkSend`, from the dispatch table to the device
//!
//! 1. The consumer calls `NdkSend` through the QP's dispatch table
//!    ([`dispatch::qp`]): the entry point checks the QP handle and turns
//!    the consumer's `NDK_SGE` array into a checked slice ([`abi`]).
//! 2. [`qp`]'s post path (`qp/post_send.rs`) validates the request (SGE
//!    count and lengths, flags, inline size) and, under the send queue's
//!    spin lock, encodes one `hwq::SendRequest` into its slot of the send
//!    ring shared with the device and publishes it (release store of the
//!    producer index).
//! 3. Unless the post carries `NDK_OP_FLAG_DEFER` (and fewer than a batch
//!    of deferred posts wait), the QP rings
//!    `hwq::Doorbells::sq_doorbell` on the device ([`DeviceContext`]'s
//!    unraised doorbell handle, reached through the context the QP holds:
//!    legal at any IRQL up to DISPATCH_LEVEL);
//!    nothing else runs inline.
//! 4. The device takes it from there: softrnic's crate doc ("One SEND, end
//!    to end") follows the WQE through its requester, the link and the
//!    peer's responder to the CQEs both devices write into their CQ rings.
//! 5. The consumer reaps the completion with `NdkGetCqResults`
//!    ([`dispatch::cq`] -> [`cq`]), which reads and releases the CQE in the
//!    CQ ring (the device released the WQE's send-ring slot when the SEND
//!    completed) and maps the device's status to the NTSTATUS of the
//!    `NDK_RESULT`; a CQ armed with `NdkArmCq` is notified through
//!    [`device`]'s event routing.
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

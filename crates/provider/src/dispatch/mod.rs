//! The dispatch tables: every entry point a consumer calls, one module per
//! NDK object kind (each holding its kind's table, whose create entries
//! make the kind's children), and the only place consumer pointers are
//! taken.
//!
//! Each entry resolves its arguments through [`crate::abi`] (object
//! pointers into checked references, arrays into slices, out-parameters
//! into checked writes) and then calls the object's module, which is safe
//! Rust. Each kind's module also states, once, that its object type has the
//! layout the consumer's pointers rely on ([`crate::abi::NdkObject`]).
//!
//! One `NdkSend`, for example: [`qp::DISPATCH`]`.NdkSend` resolves the QP
//! and its SGE array, and [`crate::qp::post_send`] validates the request,
//! writes the WQE into the send ring and rings the doorbell; the device
//! takes it from there (see `hwq` and `softrnic`).

pub mod adapter;
pub mod connector;
pub mod cq;
pub mod endpoint;
pub mod listener;
pub mod mr;
pub mod mw;
pub mod pd;
pub mod qp;
pub mod srq;

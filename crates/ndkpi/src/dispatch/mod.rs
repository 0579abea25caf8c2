//! Function-pointer types, dispatch tables and object structs of
//! `ndkpi.h`, one file per header section, each in header order.
//!
//! Every `NDK_FN_*` type is an `Option` of an `unsafe extern "win64"` fn:
//! `None` is the C null pointer and the layout is that of one pointer. The
//! header gives no calling convention, so it is x64 Windows' single one,
//! and this crate names it `"win64"` on every x86-64 target: on Windows it
//! is what `"system"` means, and on Linux it keeps the dispatch tables of
//! `librsndk.so` binary-identical to the kernel's, so one consumer suite
//! drives both the host provider and the real `rsndk.sys` loaded in the
//! kernel bottle (whose tables are win64 code). C consumers on Linux
//! declare the entries `__attribute__((ms_abi))`.
//! Parameter names are the header's. C `CONST PSOCKADDR` / `CONST PVOID`
//! parameters are const *pointers* (to mutable data), hence `*mut` here.
//!
//! Every object is `{ Header, Dispatch }`: an [`NDK_OBJECT_HEADER`] followed
//! by a pointer to the provider's (usually `static`) dispatch table, 48
//! bytes on x64.
//!
//! The tables are those of NDKPI 2.1 (the current `ndkpi.h` of the
//! Windows 10 21H1 / Windows 11 WDKs). 2.x changed only the connector: its
//! table gained [`NdkCompleteConnectEx`] and [`NdkAcceptEx`] (104 bytes
//! instead of 88), which take [`NDK_FN_DISCONNECT_EVENT_CALLBACK_EX`]; the
//! rest of 2.x is [`NDK_RESULT_EX`]'s `ProviderErrorCode`. The header also
//! declares [`NDK_FN_QUERY_ADAPTER_INFO_EX`] and [`NDK_FN_DISCONNECT_EX`]
//! without using them in any table; they are mirrored as plain types.
//!
//! [`NdkCompleteConnectEx`]: NDK_CONNECTOR_DISPATCH::NdkCompleteConnectEx
//! [`NdkAcceptEx`]: NDK_CONNECTOR_DISPATCH::NdkAcceptEx
//! [`NDK_RESULT_EX`]: crate::NDK_RESULT_EX
//! [`NDK_OBJECT_HEADER`]: crate::NDK_OBJECT_HEADER

mod adapter;
mod common;
mod connector;
mod cq;
mod endpoint;
mod listener;
mod mr;
mod mw;
mod pd;
mod qp;
mod srq;

pub use adapter::*;
pub use common::*;
pub use connector::*;
pub use cq::*;
pub use endpoint::*;
pub use listener::*;
pub use mr::*;
pub use mw::*;
pub use pd::*;
pub use qp::*;
pub use srq::*;

//! The part of the Windows NDIS headers (`ndis.h`, `ntddndis.h`,
//! `ndisndk.h`) that the rsndk miniport needs, and the few kernel
//! (`wdm.h`) and IP Helper (`netioapi.h`) services of its shell, declared
//! by hand for x64: `wdk-sys` generates no NDIS or IP Helper bindings, and
//! declaring the kernel services here lets the whole driver shell
//! type-check on any host without the WDK.
//!
//! Names are the C names. Structures are `#[repr(C)]` with every field in
//! header order; C enums are `i32` aliases with one constant per value
//! used; each `NDIS_SIZEOF_..._REVISION_n` macro is a `u16` constant
//! computed from the declaration the way `RTL_SIZEOF_THROUGH_FIELD` does.
//! Handler types come as a non-null function pointer plus the nullable
//! `*_HANDLER` form stored in tables (see [`miniport`]). Types shared with
//! NDK (`NDK_ADAPTER`, `NDK_ADAPTER_INFO`, `NDK_VERSION`, `NDIS_STATUS`,
//! `GUID`, the socket addresses) come from [`ndkpi`].
//!
//! Every size, field offset and constant is written once in the table of
//! [`layout`], which asserts them at compile time; `cargo run -p ndis
//! --example ndis_layout` prints them. The contract version registered is NDIS
//! 6.50 ([`version`] says why).
//!
//! Module map: [`types`] (base types, `SOCKADDR_INET`, opaque kernel
//! types), [`object`] (`NDIS_OBJECT_HEADER`, object types), [`status`],
//! [`version`], [`miniport`] (handlers, driver characteristics, handler
//! parameters), [`nbl`] (`NET_BUFFER_LIST`, `NET_BUFFER`, pool
//! parameters), [`oid`] (`NDIS_OID_REQUEST`, general OIDs), [`attributes`]
//! (adapter attributes), [`indicate`] (status indications, PnP events),
//! [`protocol`] (the protocol edge: handlers, characteristics, bind and
//! open parameters), [`ndk`] (`ndisndk.h` and the NDK OIDs), [`config`] (registry keywords),
//! [`functions`] (the `ndis.sys` imports), [`kernel`] (the `ntoskrnl.exe`
//! services of the driver shell: spin locks, DPCs, timers, pool, IRPs,
//! MDLs, bug checks), [`netioapi`] (the `NETIO.SYS` IP Helper routines
//! that follow an interface's unicast addresses).
#![cfg_attr(not(test), no_std)]
// Only `functions`, `kernel` and `netioapi` (the `unsafe extern` blocks) allow
// it, and `NET_BUFFER::data_length` (one read of an integer union); nothing
// in this crate dereferences a pointer.
#![deny(unsafe_code)]
#![warn(missing_docs)]
// C names are kept verbatim: NDIS_OID_REQUEST, InformationBuffer,
// NdisRequestQueryInformation, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(n).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
#![allow(clippy::upper_case_acronyms, clippy::struct_field_names)]

/// `RTL_SIZEOF_THROUGH_FIELD(Type, Field)` as the `u16` that
/// `NDIS_OBJECT_HEADER.Size` holds: the field's offset plus its size.
macro_rules! sizeof_through_field {
    ($t:ty, $field:ident) => {
        (::core::mem::offset_of!($t, $field) + $crate::field_size(|s: &$t| &s.$field)) as u16
    };
}
pub(crate) use sizeof_through_field;

/// The size of the field a projection closure selects; the closure is
/// never called, it only names the field's type.
const fn field_size<T, F, C: FnOnce(&T) -> &F>(projection: C) -> usize {
    core::mem::forget(projection);
    size_of::<F>()
}

pub mod attributes;
pub mod config;
pub mod functions;
pub mod indicate;
pub mod kernel;
pub mod layout;
pub mod miniport;
pub mod nbl;
pub mod ndk;
pub mod netioapi;
pub mod object;
pub mod oid;
pub mod protocol;
pub mod status;
pub mod types;
pub mod version;

pub use attributes::*;
pub use config::*;
pub use functions::*;
pub use indicate::*;
pub use kernel::*;
pub use layout::{LAYOUT, facts};
pub use miniport::*;
pub use nbl::*;
pub use ndk::*;
pub use netioapi::*;
pub use object::*;
pub use oid::*;
pub use protocol::*;
pub use status::*;
pub use types::*;
pub use version::*;

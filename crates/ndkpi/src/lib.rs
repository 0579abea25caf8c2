//! An exact `#[repr(C)]` mirror of the Windows NDK provider interface
//! headers `ndkpi.h` and `ndkinfo.h` (NDKPI 2.1), for x64, together with
//! the Windows base types their signatures use.
//!
//! Names are the C names, so code reads like the headers: structs and
//! their fields (`NDK_QP_DISPATCH::NdkRead`), function-pointer typedefs
//! (`NDK_FN_READ`), C enums as `i32` aliases plus one constant per
//! enumerator (`NdkObjectTypeQp`), and `#define` values as constants
//! (`NDK_OP_FLAG_DEFER`). Typed Rust views are added where they help:
//! [`OpFlags`], [`MrFlags`], [`AdapterFlags`] and [`CqNotify`].
//!
//! Everything is re-exported at the crate root. Layout is checked at
//! compile time against the header's x64 values (see [`layout`]); run
//! `cargo run -p ndkpi --example layout` to print every fact.
//!
//! `include/ndkpi.h` is the same interface in C for consumers on Linux;
//! [`c_header`] generates its assertions from [`layout`]'s facts.
//!
//! Module map: [`types`] (base types), [`sockaddr`], [`mdl`], [`status`],
//! [`object`] (version, object type, header), [`result`], [`lam`],
//! [`sge`], [`flags`], [`info`] (`ndkinfo.h`), [`dispatch`] (entry types,
//! tables and objects, one file per header section).
//!
//! The crate mirrors the 2.1 header, which is the 1.2 one plus two
//! connector entries, an extended disconnect callback and one completion
//! field (listed in [`dispatch`]'s docs); [`NDK_CONNECTOR_DISPATCH_1_SIZE`]
//! is the part of the connector table a 1.x consumer reads.
#![cfg_attr(not(test), no_std)]
// The only unsafe code reads the `NDK_SGE` address union (see `sge`),
// which allows it locally.
#![deny(unsafe_code)]
#![warn(missing_docs)]
// C names are kept verbatim: NDK_QP, NdkRead, NdkObjectTypeQp, sin_port.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
// C names again: GUID, MDL are all-caps; SOCKADDR_IN's fields share the
// `sin_` prefix.
#![allow(clippy::upper_case_acronyms, clippy::struct_field_names)]

// The NDK ABI mirrored here is the x64 one: layouts, and the `"win64"`
// calling convention of every entry (see `dispatch`).
#[cfg(not(target_arch = "x86_64"))]
compile_error!("ndkpi mirrors the x64 NDK ABI; other architectures are not supported");

pub mod c_header;
pub mod dispatch;
pub mod flags;
pub mod info;
pub mod lam;
pub mod layout;
pub mod mdl;
pub mod object;
pub mod result;
pub mod sge;
pub mod sockaddr;
pub mod status;
pub mod types;

pub use dispatch::*;
pub use flags::*;
pub use info::*;
pub use lam::*;
pub use layout::{FactKind, LAYOUT, LayoutFact, facts};
pub use mdl::*;
pub use object::*;
pub use result::*;
pub use sge::*;
pub use sockaddr::*;
pub use status::*;
pub use types::*;

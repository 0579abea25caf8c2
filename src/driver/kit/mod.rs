//! The driver's NDIS and kernel kit, after windows-drivers-rs's `wdk`
//! layer: NBL chains and their ownership ([`nbl`]), OID requests
//! ([`oid`]), NDIS handles and calls ([`ndis`]), a DPC, timer and work
//! item owner ([`deferred`]), spin locks, IRQL, time and the bug check
//! ([`kernel`]), pool, MDL mappings and the driver's globals ([`memory`]),
//! rundown protection ([`rundown`]) and V's pause gate ([`pause_gate`]),
//! as types with safe methods. The entry points the kernel and NDIS call
//! (`super::entry`) turn raw pointers into these types.
//!
//! The raw NDIS and kernel calls, with the reasoning that makes each one
//! sound (a `SAFETY:` comment per block), are in the modules marked
//! `allow(unsafe_code)` below, in `super::entry` and in the provider's
//! lock glue (`super::platform`), and nowhere else in the shell: the rest
//! of `src/driver/` is `deny(unsafe_code)` (`src/driver/mod.rs`), and CI
//! counts the shell's files that mention the keyword (`.ci/run`).

#[allow(unsafe_code)]
pub mod deferred;
#[allow(unsafe_code)]
pub mod kernel;
#[allow(unsafe_code)]
pub mod memory;
#[allow(unsafe_code)]
pub mod nbl;
#[allow(unsafe_code)]
pub mod ndis;
#[allow(unsafe_code)]
pub mod oid;
pub mod pause_gate;
pub mod rundown;

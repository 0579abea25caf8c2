//! The Windows kernel shell of rsndk: an NDIS 6.50 MUX intermediate
//! driver, 1:1 over a NIC (docs/windows.md section 1b). Its protocol edge
//! (`rsndkp`) binds to the NIC (P); over each binding it brings up one
//! virtual Ethernet miniport (V) with P's MAC address, which is the IP
//! interface of that link and an NDK provider whose RNIC is the software
//! RoCEv2 engine of `softrnic`. Frames pass through V <-> P both ways; the
//! RNIC sends and receives RoCEv2 as Ethernet frames through its L2 port
//! on the binding.
//!
//! Compiled for every Windows target, with or without the `wdk` feature:
//! it uses only the hand declarations of crate `ndis` (NDIS, ntoskrnl,
//! NETIO's IP Helper), so `cargo check --target x86_64-pc-windows-msvc` type-checks all
//! of it on Linux. The `wdk` feature adds only the final link (wdk-sys's
//! link glue, wdk-build's linker arguments) and `wdk_check`, which
//! compares the hand declarations with wdk-sys's bindgen output.
//!
//! Two floors and an edge. [`kit`] is the safe NDIS and kernel layer: NBL
//! chains and their ownership, OID requests, NDIS handles and calls, the
//! DPC, timer and work item owner, spin locks, rundown, the pause gate,
//! pool and MDL mappings. [`entry`] is where the kernel and NDIS call in
//! (`DriverEntry`, the miniport, protocol and NDK handlers, unload): it
//! turns NDIS's pointers into kit types once and calls the safe handlers.
//! Every raw call and its reasoning is in those two (and in [`platform`],
//! the provider's lock glue); everything else here is
//! `deny(unsafe_code)` and works with the kit's types.
//!
//! Between the two: [`miniport`] (V's handlers), [`adapter`] (V's state and
//! attributes), [`protocol`] (the protocol edge's handlers, bind/unbind,
//! forwarded OIDs), [`binding`] (the open on P), [`mux`] (a binding paired
//! with its V), [`passthrough`] (the data path V <-> P), [`oid`] and
//! [`supported_oids`], [`ndk`]
//! (NDK open/close, counters), [`ndk_tables`] (the connection and endpoint
//! OIDs), [`config`] (registry keywords), [`device`] (the RNIC, its engine
//! and L2 port), [`engine`] (the RNIC's DPC, timer and PASSIVE_LEVEL
//! continuation), [`l2`] (the RNIC's Ethernet port on the binding),
//! [`addresses`] (V's IP addresses from the IP stack), [`platform`] (the
//! provider's `Platform`) and [`globals`] (the one instance of it),
//! [`dma`] and [`dma_map`] (device access to memory), [`panic`](mod@panic) (bugchecking
//! panic handler), [`irql`], [`clock`], [`log`].

#![deny(unsafe_code)]

pub mod adapter;
pub mod addresses;
pub mod binding;
pub mod clock;
pub mod config;
pub mod device;
pub mod dma;
pub mod dma_map;
pub mod engine;
#[allow(unsafe_code)]
pub mod entry;
pub mod globals;
pub mod irql;
pub mod kit;
pub mod l2;
pub mod log;
pub mod miniport;
pub mod mux;
pub mod ndk;
pub mod ndk_tables;
pub mod oid;
pub mod panic;
pub mod passthrough;
#[allow(unsafe_code)]
pub mod platform;
pub mod protocol;
pub mod supported_oids;
#[cfg(feature = "wdk")]
mod wdk_check;

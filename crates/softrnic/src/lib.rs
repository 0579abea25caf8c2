//! Software RNIC: a RoCEv2 Reliable Connection engine behind the hwq contract.
//!
//! [`wire`] is the packet layer: byte-exact RoCEv2 datagrams (IPv4 or IPv6,
//! UDP, BTH, extended transport headers, pad, ICRC) and the InfiniBand CM
//! messages that ride as MADs on QP1. A device holds a set of IPv4 and IPv6
//! addresses ([`addresses`], starting from [`device::DeviceConfig::addr`]);
//! each connection speaks the family of its own pair. [`l2`] carries its
//! datagrams as Ethernet frames on a NIC shared with the host's IP stack.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod addresses;
pub mod bitset;
pub mod cm;
pub mod cq;
pub mod device;
mod device_impl;
pub mod engine;
mod engine_state;
pub mod env;
pub mod fabric;
pub mod l2;
pub mod link;
pub mod memory;
pub mod pass;
pub mod qp;
mod signals;
pub mod srq;
mod stats;
pub mod table;
pub mod train;
pub mod wire;

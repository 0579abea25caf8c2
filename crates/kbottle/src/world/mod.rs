//! The world below the NICs, no Windows module: the emulated Ethernet
//! segment they sit on ([`segment`], a learning switch with pcap capture)
//! and an optional Linux tap behind it ([`tap`], a real Ethernet).
//!
//! Rule: imports nothing of the crate; NDIS's NICs
//! ([`crate::ndis::nic`]) and the machine plug into it.

pub mod segment;
pub mod tap;

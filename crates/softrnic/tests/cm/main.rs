//! Connection management's tests: handshakes, faults, IPv6, the device's addresses, and data over CM-made connections.

#[path = "../common/mod.rs"]
mod common;

mod addresses;
mod cm_e2e;
mod cm_faults;
mod cm_handshake;
mod cm_ipv6;
mod cm_negotiation;
mod transport_cm;

//! The world around the driver: the emulated Ethernet segment the NICs
//! sit on ([`segment`]) and an optional Linux tap behind it ([`tap`]).

pub mod segment;
pub mod tap;

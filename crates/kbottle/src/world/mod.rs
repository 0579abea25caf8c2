//! The world around the driver: the emulated Ethernet segment the NICs
//! sit on ([`segment`]), an optional Linux tap behind it ([`tap`]), and
//! TCP/IP above each virtual miniport ([`tcpip`]).

pub mod segment;
pub mod tap;
pub mod tcpip;

//! The Ethernet port's tests: frames, neighbours, loopback, and two devices on one emulated segment.

#[path = "../common/mod.rs"]
mod common;

mod l2_icrc;
mod l2_port;
mod l2_segment;

//! Links: what a runtime that carries a device's packets in software
//! puts between the device and its wire. The device (`softrnic`) owns no
//! link and calls none: a runtime hands arrivals to
//! [`softrnic::device::SoftRnic::receive`] and takes what the device
//! sends through its transmit turn ([`softrnic::transmit`]). This crate is
//! that runtime side for the host and the tests (quinn's socket layer
//! over quinn-proto, in the same spirit); the kernel's Ethernet port
//! takes packets itself (`softrnic::l2::EthernetPort::pump`) and uses
//! none of it.
//!
//! * [`Link`] is what carries packets: the host's UDP port, the in-memory
//!   fabric's [`fabric::FabricEndpoint`] (one endpoint type for tests and
//!   the host's hub alike), tests' own links.
//! * [`LinkPump`] takes what a device sends onto a link; [`LinkPass`] and
//!   [`run_pass`] run whole passes ([`PassPlan`] in, [`Pass`] out):
//!   arrivals handed in, the device's work, the pump.
//!
//! ## Wrappers
//!
//! As smoltcp's `phy::Tracer` and `phy::FaultInjector` wrap a device in
//! another, a link may be wrapped in another link, by the runtime:
//!
//! * [`CaptureLink`] shows what passes through it, either way, to a
//!   [`Capture`] (a pcap writer), once one fills its slot
//!   ([`CaptureLink::set_capture`]). A runtime that hands arrivals to the
//!   device itself shows them first ([`CaptureLink::show_arrival`]).
//!
//! * [`FaultLink`] injects seeded faults into what is transmitted through
//!   it: loss, duplication, reordering and delay, drawn per datagram by a
//!   [`FaultInjector`] that several links may share (the devices of one
//!   simulated network). It carries no trains while it draws per-datagram
//!   faults. What it delays it holds until due ([`Clock`]), or hands at
//!   once to a link that delays delivery itself
//!   ([`Link::transmit_later`]: a [`fabric::FabricEndpoint`]). A
//!   runtime (or test) wraps its link in one, inside its capture wrapper,
//!   which so sees what leaves the device before any fault.
//!
//! A wrapper forwards what it does not change, so wrappers nest, and a
//! `Box` or `Arc` of a link is a link.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod capture;
mod clock;
pub mod fabric;
mod faults;
mod link;
mod pump;

pub use capture::{Capture, CaptureLink, Direction};
pub use clock::Clock;
pub use faults::{FaultInjector, FaultLink, FaultStats, Faults};
pub use link::{Link, Load, Outgoing, Received, transmit_copy};
pub use pump::{LinkPass, LinkPump, Pass, PassPlan, ReceiveBatch, run_pass};

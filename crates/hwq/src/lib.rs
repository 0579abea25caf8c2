//! The hardware queue contract between the rsndk provider (the driver) and its
//! device (the software RNIC, or any real NIC that speaks the same contract).
//!
//! The provider and the device depend on this crate and never on each other,
//! exactly as a driver and its hardware share only a register and memory
//! layout. The contract is deliberately shaped like a real RNIC:
//!
//! * **Work queues** ([`ring`]) are single-producer/single-consumer rings of
//!   fixed-size slots in memory both sides can reach. The driver writes a
//!   [`wqe::SendWqe`] or [`wqe::RecvWqe`] into the next free slot and
//!   publishes its producer index with release ordering; the device reads
//!   slots up to that index with acquire ordering and releases a slot only
//!   once the work request has *completed*, so queue depth bounds the work in
//!   flight.
//! * **Completion queues** are rings of [`cqe::Cqe`] the device produces and
//!   the driver consumes.
//! * **Doorbells and commands** ([`device::Device`]): the driver tells the
//!   device that new slots were published (a cheap, non-blocking call), and
//!   issues slower control commands (create a QP, write a memory key).
//! * **Events** ([`device::DeviceEvents`]): the device tells the driver that a
//!   completion queue received entries, the equivalent of an interrupt.
//! * **DMA** ([`dma::DmaAccess`]): the device reaches host memory only through
//!   logical addresses and this safe interface, never through raw pointers.
//!
//! `unsafe` in this crate is confined to [`mem`] (a fallible, reference-counted
//! allocation, because a kernel must survive allocation failure) and [`ring`]
//! (the shared slot memory).

#![no_std]
#![deny(missing_docs)]

extern crate alloc;

pub mod cqe;
pub mod device;
pub mod dma;
pub mod id;
pub mod key;
pub mod mem;
pub mod ring;
mod sync;
pub mod wqe;

pub use cqe::{Cqe, CqeOpcode, CqeStatus};
pub use device::{Device, DeviceError, DeviceEvents};
pub use dma::{DmaAccess, DmaFault};
pub use id::{ConnId, Cqn, ListenId, Pdn, Qpn, Srqn};
pub use key::MemoryKey;
pub use mem::{AllocError, TryArc};
pub use ring::{Consumer, Producer, RingFull};
pub use wqe::{RecvWqe, SendWqe, Sge};

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
//!   flight. A send slot is written and read as a typed
//!   [`wqe::SendRequest`] (one type per operation: what a SEND, WRITE,
//!   READ, fast-register, bind or local invalidate carries), so the driver
//!   and the device share one definition of the slot's fields
//!   ([`wqe::request`]); the device decodes a slot it did not write as
//!   untrusted memory, a malformed one becoming an error completion.
//! * **Completion queues** are rings of [`cqe::Cqe`] the device produces and
//!   the driver consumes.
//! * **Doorbells** ([`device::Doorbells`]): the driver tells the device that
//!   new slots were published, as a register write does: lock-free, callable
//!   unraised at any IRQL up to `DISPATCH_LEVEL`, rung on every post.
//! * **Commands**, split by concern: [`device::Verbs`] (protection domains,
//!   memory keys, completion and shared receive queues, queue pairs) and
//!   [`device::Connections`] (listeners and the connection handshake).
//!   [`device::Device`] is the device as a whole: its limits, its event
//!   sink, busy polling, and all three traits; the driver holds a
//!   `dyn Device`. Objects are named by typed ids ([`id`]: [`Qpn`],
//!   [`Cqn`], [`Srqn`], [`Pdn`], [`ConnId`], [`ListenId`]), plain `u32`s
//!   only on the wire, in ring slots and in handles.
//! * **The IRQL rule** ([`device`#irql]): commands run at `DISPATCH_LEVEL`,
//!   raised by the caller, because a device's spin locks are shared with its
//!   own DPC (a `PASSIVE_LEVEL` holder preempted by that DPC deadlocks its
//!   processor); doorbells and `caps` run at any level up to
//!   `DISPATCH_LEVEL`; events arrive at `DISPATCH_LEVEL`. The provider
//!   raises in one place (its device context, through its `Platform`), and
//!   the test kit's scripted device fails any command reached below
//!   `DISPATCH_LEVEL` on the checked host platform.
//! * **Events** ([`device::DeviceEvents`]): the device tells the driver that a
//!   completion queue received entries, the equivalent of an interrupt.
//! * **DMA** ([`dma::DmaAccess`]): the device reaches host memory only through
//!   logical addresses and this safe interface, never through raw pointers.
//!
//! * **Locks** ([`lock`]): the device's spin locks are taken through the
//!   platform's [`lock::SpinLockOps`] (kernel spin locks in the driver), so
//!   one lock-order check covers the device's and the provider's locks.
//!
//! `unsafe` in this crate is confined to [`mem`] (a fallible, reference-counted
//! allocation, because a kernel must survive allocation failure), [`lock`]
//! (the data a held lock guards), [`ring`]
//! (the shared slot memory), [`device::events`] (the event sink, a pointer to
//! the driver's handler) and [`device::shared`] (the device handle, its
//! owner's type erased).

#![no_std]
#![deny(missing_docs)]

extern crate alloc;

pub mod cqe;
pub mod device;
pub mod dma;
pub mod id;
pub mod key;
pub mod lock;
pub mod mem;
pub mod ring;
mod sync;
pub mod wqe;

pub use cqe::{Cqe, CqeOpcode, CqeStatus};
pub use device::{Connections, Device, DeviceError, DeviceEvents, Doorbells, SharedDevice, Verbs};
pub use dma::{DmaAccess, DmaFault};
pub use id::{ConnId, Cqn, ListenId, Pdn, Qpn, Srqn};
pub use key::MemoryKey;
pub use mem::{AllocError, TryArc};
pub use ring::{Consumer, Producer, RingFull};
pub use wqe::{RecvWqe, SendOp, SendRequest, SendWqe, Sge, WqeError};

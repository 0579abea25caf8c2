//! The device's command interface (what the driver asks of the device) and
//! its event interface (what the device tells the driver), split by concern:
//!
//! * [`Doorbells`] ([`doorbells`]): the fast path, "new work was published
//!   on this ring".
//! * [`Verbs`] ([`verbs`]): the objects (protection domains, memory keys,
//!   completion queues, shared receive queues, queue pairs), by command.
//! * [`Connections`] ([`connections`]): listeners and the connection
//!   handshake, by command; outcomes arrive as [`CmEvent`]s.
//! * [`Device`]: the device as a whole (its limits, its event sink, busy
//!   polling) and all three of the above; the driver holds a `dyn Device`.
//! * [`DeviceEvents`] and [`EventSink`] ([`events`]): what the device tells
//!   the driver.
//! * [`SharedDevice`] ([`shared`]): the device as the driver holds it,
//!   whether its owner is an `Arc`, a `TryArc` or a `Box`.
//!
//! # IRQL
//!
//! Each entry's documentation states the IRQL it is called at. The rule
//! behind it is the one for any spin lock shared with a DPC (the reason
//! `KeAcquireSpinLock` raises): a device guards its tables with spin locks
//! that its own execution context, a DPC, takes too. A caller at
//! `PASSIVE_LEVEL` holding such a lock can be preempted on its processor by
//! that DPC, which then spins on the lock its own processor holds: the
//! processor never comes back (bug check 0x133). So:
//!
//! * **`DISPATCH_LEVEL`, raised by the caller**: every [`Verbs`] and
//!   [`Connections`] command, and [`Device::attach`], [`Device::detach`]
//!   and [`Device::busy_poll`]. The device may take its spin locks; it must
//!   not block, wait or touch pageable memory. `attach` and `detach` are
//!   called by a thread that is at `PASSIVE_LEVEL` before it raises and is
//!   not inside an event, because they may spin until an event delivery on
//!   another processor ends.
//! * **Any level up to `DISPATCH_LEVEL`, unraised**: the [`Doorbells`] and
//!   [`Device::caps`]. The device takes no lock in them.
//! * Events are delivered at `DISPATCH_LEVEL`.
//!
//! The provider keeps the rule in one place: its device context hands out
//! the device only raised (through its `Platform`), and the doorbells
//! unraised.

pub mod connections;
pub mod doorbells;
pub mod events;
pub mod shared;
pub mod verbs;

pub use connections::{AcceptParams, CmEvent, ConnectParams, ConnectionInfo, Connections};
pub use doorbells::Doorbells;
pub use events::{DeviceEvents, EventSink};
pub use shared::SharedDevice;
pub use verbs::{QpSetup, ReceiveSource, Registration, Verbs};

/// Why a device command failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// No free table entry or memory for the object.
    NoResources,
    /// A parameter is outside what the device supports.
    InvalidParameter,
    /// The object number does not name a live object.
    NoSuchObject,
    /// The object is in a state that does not allow the command.
    InvalidState,
    /// The address is not one of this device's addresses.
    InvalidAddress,
    /// The address (and port) is already in use.
    AddressInUse,
    /// No ephemeral port is free.
    NoPortAvailable,
    /// The device has failed or been removed.
    DeviceFailed,
}

/// Fixed limits of a device, reported once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    /// IEEE OUI of the vendor.
    pub vendor_id: u32,
    /// Vendor's device id.
    pub device_id: u32,
    /// Deepest send or receive queue.
    pub max_qp_depth: u32,
    /// Deepest shared receive queue (0: no SRQ support).
    pub max_srq_depth: u32,
    /// Deepest completion queue.
    pub max_cq_depth: u32,
    /// Largest single registration in bytes.
    pub max_registration: u64,
    /// Largest fast-register page list.
    pub max_fast_register_pages: u32,
    /// Largest total transfer of one work request in bytes.
    pub max_transfer: u32,
    /// RDMA READs a QP may serve at once for its peer (IRD cap).
    pub max_inbound_reads: u32,
    /// RDMA READs a QP may have outstanding (ORD cap).
    pub max_outbound_reads: u32,
    /// Private data bytes a connect request carries.
    pub max_connect_data: u32,
    /// Private data bytes an accept or reject carries.
    pub max_accept_data: u32,
    /// Bytes of payload per packet on the wire (path MTU).
    pub path_mtu: u32,
    /// The device can connect to its own addresses.
    pub loopback: bool,
}

/// An RDMA device as the driver sees it: its limits, its event sink and
/// busy polling, and the commands and doorbells of the three concerns.
pub trait Device: Doorbells + Verbs + Connections {
    /// The device's fixed limits. IRQL: at or below `DISPATCH_LEVEL`.
    fn caps(&self) -> DeviceCaps;

    /// Starts delivering events to `sink`. A device has at most one sink.
    /// IRQL: `DISPATCH_LEVEL`, raised by a `PASSIVE_LEVEL` caller outside
    /// any event.
    fn attach(&self, sink: EventSink) -> Result<(), DeviceError>;

    /// Stops delivering events; when it returns no event call is running or
    /// will run (it may spin until a delivery on another processor ends).
    /// IRQL: `DISPATCH_LEVEL`, raised by a `PASSIVE_LEVEL` caller outside
    /// any event.
    fn detach(&self);

    /// Busy polling: the driver found a CQ empty and offers the caller's
    /// processor for one short, bounded pass of device work (taking
    /// arrived packets, running rung queues), as Linux sockets do with
    /// `SO_BUSY_POLL`, so that a consumer spinning on a CQ needs no
    /// hand-off to another thread. Called with no driver lock held,
    /// possibly from several processors at once and from inside an event
    /// callback; must not block and must not call the [`EventSink`]
    /// (events wait for the device's own context). Returns whether it did
    /// work (a CQE may have been written). A device that works on its own
    /// (real hardware) does nothing. IRQL: `DISPATCH_LEVEL` (the pass takes
    /// the device's locks).
    fn busy_poll(&self) -> bool {
        false
    }
}

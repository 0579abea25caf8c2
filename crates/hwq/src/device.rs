//! The device's command interface (what the driver asks of the device) and
//! its event interface (what the device tells the driver).
//!
//! Commands are the slow path: creating queues, writing memory keys, running
//! connection management. Doorbells ([`Device::sq_doorbell`] and friends) are
//! the fast path: they only tell the device where to look and never block.
//! Every method may be called at `DISPATCH_LEVEL` and must neither block nor
//! allocate unless its documentation says otherwise.

use core::fmt;
use core::net::SocketAddr;
use core::ptr::NonNull;

use crate::cqe::Cqe;
use crate::id::{ConnId, Cqn, ListenId, Pdn, Qpn, Srqn};
use crate::key::MemoryKey;
use crate::ring::{Consumer, Producer};
use crate::wqe::{Access, RecvWqe, SendWqe};

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

/// Where a QP takes its receive buffers from.
#[derive(Debug)]
pub enum ReceiveSource {
    /// Its own receive queue.
    Queue(Consumer<RecvWqe>),
    /// A shared receive queue.
    Shared(Srqn),
}

/// Everything the device needs to create a queue pair.
#[derive(Debug)]
pub struct QpSetup {
    /// Protection domain.
    pub pd: Pdn,
    /// Completion queue for send-queue work.
    pub send_cqn: Cqn,
    /// Completion queue for receives.
    pub recv_cqn: Cqn,
    /// The send queue's consuming end.
    pub sq: Consumer<SendWqe>,
    /// Receive buffers.
    pub rq: ReceiveSource,
    /// Echoed in every CQE of this QP (`NDK_RESULT.QPContext`).
    pub context: u64,
}

/// A registration of host memory for a memory key.
#[derive(Clone, Copy, Debug)]
pub struct Registration<'a> {
    /// Protection domain.
    pub pd: Pdn,
    /// Access rights (local read is implied).
    pub access: Access,
    /// The first virtual address of the region (the MDL's address, used as
    /// an index: the device never dereferences it).
    pub va: u64,
    /// Bytes.
    pub length: u64,
    /// Offset of `va` in the first page.
    pub first_byte_offset: u32,
    /// Logical address of each page, page-aligned, in order.
    pub pages: &'a [u64],
}

/// Parameters of an outgoing or accepted connection.
#[derive(Clone, Copy, Debug)]
pub struct ConnectParams<'a> {
    /// Local address and port (port 0: the device chooses one).
    pub local: SocketAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
    /// RDMA READs this side serves for the peer at once (IRD).
    pub inbound_reads: u32,
    /// RDMA READs this side may have outstanding (ORD).
    pub outbound_reads: u32,
    /// The consumer's private data.
    pub private_data: &'a [u8],
}

/// Parameters of accepting an inbound connection.
#[derive(Clone, Copy, Debug)]
pub struct AcceptParams<'a> {
    /// The QP the connection is bound to.
    pub qpn: Qpn,
    /// RDMA READs this side serves for the peer at once (IRD).
    pub inbound_reads: u32,
    /// RDMA READs this side may have outstanding (ORD).
    pub outbound_reads: u32,
    /// The consumer's private data.
    pub private_data: &'a [u8],
}

/// Facts about a connection once the peer has answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// Local address and port.
    pub local: SocketAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
    /// Effective inbound read limit.
    pub inbound_reads: u32,
    /// Effective outbound read limit.
    pub outbound_reads: u32,
}

/// Connection-management events.
#[derive(Clone, Copy, Debug)]
pub enum CmEvent<'a> {
    /// A connect request arrived for listener `listen_id`; the device
    /// created connection `conn_id` for it.
    ConnectRequest {
        /// The listener.
        listen_id: ListenId,
        /// The new inbound connection.
        conn_id: ConnId,
        /// Addresses and the initiator's read limits.
        info: ConnectionInfo,
        /// The initiator's private data.
        private_data: &'a [u8],
    },
    /// The peer accepted our connect request (its reply arrived).
    Replied {
        /// The connection.
        conn_id: ConnId,
        /// Addresses and effective read limits.
        info: ConnectionInfo,
        /// The acceptor's private data.
        private_data: &'a [u8],
    },
    /// The peer rejected our request, or nobody listens there.
    Rejected {
        /// The connection.
        conn_id: ConnId,
        /// True when a consumer rejected (as opposed to no listener).
        by_consumer: bool,
        /// The rejecter's private data.
        private_data: &'a [u8],
    },
    /// The initiator completed the handshake of an accepted connection.
    Established {
        /// The connection.
        conn_id: ConnId,
    },
    /// The peer disconnected, or the connection failed.
    Disconnected {
        /// The connection.
        conn_id: ConnId,
    },
    /// Our disconnect finished (the peer answered or gave up).
    DisconnectDone {
        /// The connection.
        conn_id: ConnId,
    },
    /// The peer abandoned a connection attempt, or a handshake timed out.
    Failed {
        /// The connection.
        conn_id: ConnId,
        /// True when the handshake timed out (as opposed to aborted).
        timed_out: bool,
    },
}

/// What the device tells the driver. Called from the device's execution
/// context (the equivalent of an interrupt / DPC) at `DISPATCH_LEVEL`; an
/// implementation must not block.
pub trait DeviceEvents: Send + Sync {
    /// An armed completion queue `cqn` met its arm condition (see
    /// [`Device::arm_cq`]), or it overflowed (`overflow`), after which it
    /// accepts nothing more.
    fn cq_event(&self, cqn: Cqn, overflow: bool);

    /// A shared receive queue's posted receives fell below its limit.
    fn srq_limit(&self, srqn: Srqn);

    /// QP `qpn` entered the error state (its work is being flushed).
    fn qp_error(&self, qpn: Qpn);

    /// A connection-management event.
    fn cm_event(&self, event: CmEvent<'_>);
}

/// The driver's [`DeviceEvents`] handed to the device, like an interrupt
/// vector: it stays valid until [`Device::detach`] returns.
pub struct EventSink {
    target: NonNull<()>,
    call: fn(NonNull<()>, SinkCall<'_>),
}

/// One dispatched event (the sink's internal calling convention).
#[derive(Clone, Copy)]
enum SinkCall<'a> {
    Cq(Cqn, bool),
    SrqLimit(Srqn),
    QpError(Qpn),
    Cm(CmEvent<'a>),
}

// SAFETY: the target is a `DeviceEvents`, which is `Send + Sync`; the sink
// only ever produces shared references to it.
unsafe impl Send for EventSink {}
// SAFETY: as above.
unsafe impl Sync for EventSink {}

impl EventSink {
    /// Wraps a driver's event handler.
    ///
    /// # Safety
    /// `target` must remain valid (not moved, not dropped) until the sink has
    /// been passed to a device and that device's [`Device::detach`] has
    /// returned, or, if it is never attached, until the sink is dropped.
    pub unsafe fn new<E: DeviceEvents>(target: &E) -> Self {
        fn call<E: DeviceEvents>(target: NonNull<()>, what: SinkCall<'_>) {
            // SAFETY: `target` was made from an `&E` in `new`, whose caller
            // guarantees it outlives the sink's use.
            let events = unsafe { target.cast::<E>().as_ref() };
            match what {
                SinkCall::Cq(cqn, overflow) => events.cq_event(cqn, overflow),
                SinkCall::SrqLimit(srqn) => events.srq_limit(srqn),
                SinkCall::QpError(qpn) => events.qp_error(qpn),
                SinkCall::Cm(event) => events.cm_event(event),
            }
        }
        Self {
            target: NonNull::from(target).cast(),
            call: call::<E>,
        }
    }

    /// Delivers [`DeviceEvents::cq_event`].
    pub fn cq_event(&self, cqn: Cqn, overflow: bool) {
        (self.call)(self.target, SinkCall::Cq(cqn, overflow));
    }

    /// Delivers [`DeviceEvents::srq_limit`].
    pub fn srq_limit(&self, srqn: Srqn) {
        (self.call)(self.target, SinkCall::SrqLimit(srqn));
    }

    /// Delivers [`DeviceEvents::qp_error`].
    pub fn qp_error(&self, qpn: Qpn) {
        (self.call)(self.target, SinkCall::QpError(qpn));
    }

    /// Delivers [`DeviceEvents::cm_event`].
    pub fn cm_event(&self, event: CmEvent<'_>) {
        (self.call)(self.target, SinkCall::Cm(event));
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSink")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// An RDMA device as the driver sees it.
pub trait Device: Send + Sync {
    /// The device's fixed limits.
    fn caps(&self) -> DeviceCaps;

    /// Starts delivering events to `sink`. A device has at most one sink.
    /// May block (`PASSIVE_LEVEL`).
    fn attach(&self, sink: EventSink) -> Result<(), DeviceError>;

    /// Stops delivering events; when it returns no event call is running or
    /// will run. May block (`PASSIVE_LEVEL`).
    fn detach(&self);

    // ---- protection domains and memory keys ----

    /// Creates a protection domain; returns its number and its privileged
    /// key (local access to logical addresses, never remote access).
    fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError>;

    /// Destroys a protection domain.
    fn destroy_pd(&self, pd: Pdn);

    /// Reserves a key-table entry for a memory region or window of `pd`.
    fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError>;

    /// Releases a key-table entry (any registration is dropped).
    fn free_key(&self, key: MemoryKey);

    /// Registers memory for an entry; the device copies the page list.
    /// Returns the key (a new variant of the entry's key). May allocate.
    fn register(
        &self,
        key: MemoryKey,
        registration: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError>;

    /// Drops an entry's registration; its keys stop working.
    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError>;

    /// Prepares an entry for fast registration of up to `max_pages` pages.
    /// May allocate.
    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), DeviceError>;

    // ---- queues ----

    /// Creates a completion queue writing into `ring`.
    fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError>;

    /// Replaces a completion queue's ring (resize). Entries not yet consumed
    /// from the old ring stay there for the driver to drain first.
    fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError>;

    /// Destroys a completion queue; no CQE or event for it follows.
    fn destroy_cq(&self, cqn: Cqn);

    /// Arms a completion queue for one event, as a hardware CQ doorbell
    /// does: the event fires when the next CQE is written
    /// (`solicited_only`: the next solicited or error CQE), or at once if
    /// such a CQE was written since the last event and is still unconsumed.
    /// Arming again before the event strengthens the arm to "any CQE" if
    /// either arm was. Overflow always fires an event, armed or not.
    fn arm_cq(&self, cqn: Cqn, solicited_only: bool);

    /// Interrupt moderation: hold a CQ's event until `count` CQEs
    /// accumulated or `usec` microseconds passed since the first one
    /// (0 for either disables that trigger).
    fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError>;

    /// Creates a shared receive queue of `pd` that raises
    /// [`DeviceEvents::srq_limit`] when fewer than `limit` receives remain
    /// posted (0: never).
    fn create_srq(&self, pd: Pdn, ring: Consumer<RecvWqe>, limit: u32)
    -> Result<Srqn, DeviceError>;

    /// Changes a shared receive queue's limit (0: disarm).
    fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError>;

    /// Destroys a shared receive queue.
    fn destroy_srq(&self, srqn: Srqn);

    /// Creates a queue pair in the initial state (receives may be posted).
    fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError>;

    /// Moves a QP to the error state: outstanding and future work completes
    /// as flushed.
    fn flush_qp(&self, qpn: Qpn);

    /// Destroys a QP. When it returns the device no longer reads its rings
    /// or writes CQEs for it.
    fn destroy_qp(&self, qpn: Qpn);

    /// Doorbell: new send WQEs were published on QP `qpn`. The driver
    /// rings one queue's doorbell from one processor at a time (in publish
    /// order, under the queue's lock), as a register write would be.
    fn sq_doorbell(&self, qpn: Qpn);

    /// Busy polling: the driver found a CQ empty and offers the caller's
    /// processor for one short, bounded pass of device work (taking
    /// arrived packets, running rung queues), as Linux sockets do with
    /// `SO_BUSY_POLL`, so that a consumer spinning on a CQ needs no
    /// hand-off to another thread. Called with no driver lock held, at
    /// `DISPATCH_LEVEL` or below, possibly from several processors at once
    /// and from inside an event callback; must not block and must not call
    /// the [`EventSink`] (events wait for the device's own context).
    /// Returns whether it did work (a CQE may have been written). A device
    /// that works on its own (real hardware) does nothing.
    fn busy_poll(&self) -> bool {
        false
    }

    /// Doorbell: new receive WQEs were published on QP `qpn`.
    fn rq_doorbell(&self, qpn: Qpn);

    /// Doorbell: new receive WQEs were published on SRQ `srqn`.
    fn srq_doorbell(&self, srqn: Srqn);

    // ---- connection management ----

    /// Starts listening on `addr` (port 0: the device picks one); returns the
    /// listener id and the address actually bound.
    fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError>;

    /// Pauses (refuse as if absent) or resumes a listener.
    fn cm_pause_listener(&self, listen_id: ListenId, paused: bool);

    /// Stops a listener; no further connect requests arrive for it.
    fn cm_stop_listener(&self, listen_id: ListenId);

    /// Sends a connect request for QP `qpn`; returns the connection id and
    /// the local address used. The answer arrives as an event.
    fn cm_connect(
        &self,
        qpn: Qpn,
        params: &ConnectParams<'_>,
    ) -> Result<(ConnId, SocketAddr), DeviceError>;

    /// Accepts inbound connection `conn_id` onto the QP of `params`
    /// (sends the reply).
    fn cm_accept(&self, conn_id: ConnId, params: &AcceptParams<'_>) -> Result<(), DeviceError>;

    /// Rejects a connection: inbound before accept, or outbound after the
    /// reply arrived.
    fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError>;

    /// Completes an outbound connection after the reply (sends the
    /// ready-to-use message); the QP starts sending.
    fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError>;

    /// Starts a graceful disconnect; [`CmEvent::DisconnectDone`] follows.
    fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError>;

    /// Forgets a connection id (after it is no longer needed). An inbound
    /// connection that was never accepted is rejected.
    fn cm_release(&self, conn_id: ConnId);
}

/// Implements [`Device`] for a shared pointer type by forwarding every
/// call to the device it points to.
macro_rules! forward_device {
    ($(#[$doc:meta])* impl<$d:ident $(: ?$sized:ident)?> for $ty:ty) => {
        $(#[$doc])*
        impl<$d: Device $(+ ?$sized)?> Device for $ty {
            fn caps(&self) -> DeviceCaps {
                (**self).caps()
            }
            fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
                (**self).attach(sink)
            }
            fn detach(&self) {
                (**self).detach();
            }
            fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
                (**self).create_pd()
            }
            fn destroy_pd(&self, pd: Pdn) {
                (**self).destroy_pd(pd);
            }
            fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
                (**self).alloc_key(pd, window)
            }
            fn free_key(&self, key: MemoryKey) {
                (**self).free_key(key);
            }
            fn register(
                &self,
                key: MemoryKey,
                registration: &Registration<'_>,
            ) -> Result<MemoryKey, DeviceError> {
                (**self).register(key, registration)
            }
            fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
                (**self).deregister(key)
            }
            fn init_fast_register(
                &self,
                key: MemoryKey,
                max_pages: u32,
                remote_access: bool,
            ) -> Result<(), DeviceError> {
                (**self).init_fast_register(key, max_pages, remote_access)
            }
            fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
                (**self).create_cq(ring)
            }
            fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
                (**self).resize_cq(cqn, ring)
            }
            fn destroy_cq(&self, cqn: Cqn) {
                (**self).destroy_cq(cqn);
            }
            fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
                (**self).arm_cq(cqn, solicited_only);
            }
            fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
                (**self).moderate_cq(cqn, count, usec)
            }
            fn create_srq(&self, pd: Pdn, ring: Consumer<RecvWqe>, limit: u32) -> Result<Srqn, DeviceError> {
                (**self).create_srq(pd, ring, limit)
            }
            fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
                (**self).set_srq_limit(srqn, limit)
            }
            fn destroy_srq(&self, srqn: Srqn) {
                (**self).destroy_srq(srqn);
            }
            fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
                (**self).create_qp(setup)
            }
            fn flush_qp(&self, qpn: Qpn) {
                (**self).flush_qp(qpn);
            }
            fn destroy_qp(&self, qpn: Qpn) {
                (**self).destroy_qp(qpn);
            }
            fn sq_doorbell(&self, qpn: Qpn) {
                (**self).sq_doorbell(qpn);
            }
            fn busy_poll(&self) -> bool {
                (**self).busy_poll()
            }
            fn rq_doorbell(&self, qpn: Qpn) {
                (**self).rq_doorbell(qpn);
            }
            fn srq_doorbell(&self, srqn: Srqn) {
                (**self).srq_doorbell(srqn);
            }
            fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError> {
                (**self).cm_listen(addr)
            }
            fn cm_pause_listener(&self, listen_id: ListenId, paused: bool) {
                (**self).cm_pause_listener(listen_id, paused);
            }
            fn cm_stop_listener(&self, listen_id: ListenId) {
                (**self).cm_stop_listener(listen_id);
            }
            fn cm_connect(
                &self,
                qpn: Qpn,
                params: &ConnectParams<'_>,
            ) -> Result<(ConnId, SocketAddr), DeviceError> {
                (**self).cm_connect(qpn, params)
            }
            fn cm_accept(&self, conn_id: ConnId, params: &AcceptParams<'_>) -> Result<(), DeviceError> {
                (**self).cm_accept(conn_id, params)
            }
            fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError> {
                (**self).cm_reject(conn_id, private_data)
            }
            fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError> {
                (**self).cm_establish(conn_id)
            }
            fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError> {
                (**self).cm_disconnect(conn_id)
            }
            fn cm_release(&self, conn_id: ConnId) {
                (**self).cm_release(conn_id);
            }
        }
    };
}

forward_device!(
    /// A shared device is a device: the host keeps an `Arc` to drive the
    /// engine and hands the provider a clone.
    impl<D: ?Sized> for alloc::sync::Arc<D>
);

forward_device!(
    /// The same for the fallible `TryArc` the kernel driver shares its
    /// device with (an `Arc` aborts when allocation fails).
    impl<D> for crate::mem::TryArc<D>
);

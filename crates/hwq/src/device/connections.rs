//! Connection management: listeners and the IB CM handshake that binds a
//! queue pair to its peer's, driven by command; its outcomes arrive as
//! [`CmEvent`]s.
//!
//! IRQL: every command is called at `DISPATCH_LEVEL` (the caller raises;
//! see [the module's IRQL rule](super#irql)). A device may take its spin
//! locks and send messages here; it must not block or wait.

use core::net::SocketAddr;

use crate::id::{ConnId, ListenId, Qpn};

use super::DeviceError;

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

/// The connection-management commands. IRQL: `DISPATCH_LEVEL` for every
/// entry.
pub trait Connections: Send + Sync {
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

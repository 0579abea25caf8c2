//! Connectors: the active side (`NdkConnect`,
//! `NdkConnectWithSharedEndpoint`, `NdkCompleteConnect`), the passive side
//! (connectors delivered by a listener's connect event: `NdkAccept`,
//! `NdkReject`), connection data and addresses, and disconnect.
//!
//! State machine (one connection per connector, never reused):
//!
//! ```text
//! active:  Idle --Connect--> Connecting --Replied--> Replied --CompleteConnect--> Connected
//!                                  |--Rejected/Failed--> Failed      |--Reject--> Done
//! passive: Requested --Accept--> Accepting --Established--> Connected
//!              |--Reject--> Done       |--Failed--> Failed
//! Connected --Disconnect--> Disconnecting --DisconnectDone--> Done
//! Connected --peer Disconnected--> PeerDisconnected (disconnect event, once)
//! ```
//!
//! Connect, Accept and Disconnect wait for the peer and return
//! `STATUS_PENDING`; their completion runs when the device's CM event
//! arrives. A pending request keeps the connector's close pending; closing
//! cancels it (`STATUS_CANCELLED`), releases the device connection (which
//! rejects an unaccepted inbound request) and, for a connected QP, flushes
//! it. The QP is the connector's antecedent: it stays open until the
//! connector finishes.
//!
//! Addresses are `SOCKADDR_IN` or `SOCKADDR_IN6` (`AF_INET6` = 23). A
//! connection has one family: a specific local address (or a shared
//! endpoint's) of the other family than the peer's is
//! `STATUS_INVALID_ADDRESS`, whatever the device; the unspecified local
//! address ("any", either family) is the device's to bind. Which
//! addresses the device owns is the device's to say (also
//! `STATUS_INVALID_ADDRESS`).
//!
//! Versions: a connector of an adapter opened at NDKPI 2.x carries the 2.1
//! table ([`crate::dispatch::connector::DISPATCH`]), whose
//! `NdkCompleteConnectEx` and `NdkAcceptEx` take the extended disconnect
//! callback; it receives a [`DisconnectReason`]. A 1.x adapter's connectors
//! carry [`crate::dispatch::connector::DISPATCH_1`]: the same eleven 1.x
//! entries and null where 2.1 put its two, so a 1.x consumer sees exactly
//! the 1.2 table.

use core::ffi::c_void;
use core::net::SocketAddr;

use hwq::device::{AcceptParams, CmEvent, ConnectParams, ConnectionInfo, DeviceError};
use hwq::{ConnId, TryArc};
use ndkpi::{
    NDK_CONNECTOR, NDK_FN_REQUEST_COMPLETION, NTSTATUS, STATUS_CANCELLED,
    STATUS_CONNECTION_ABORTED, STATUS_CONNECTION_INVALID, STATUS_CONNECTION_REFUSED,
    STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_ADDRESS, STATUS_INVALID_DEVICE_STATE,
    STATUS_INVALID_PARAMETER, STATUS_IO_TIMEOUT, STATUS_PENDING, STATUS_SUCCESS,
};

use crate::abi::{self, NdkCell, NdkObject};
use crate::adapter::Adapter;
use crate::callout::{self, Context, DisconnectEvent, RequestCompletion};
use crate::endpoint::SharedEndpoint;
use crate::listener::Listener;
use crate::lock::SpinLock;
use crate::object::{Busy, Dep, Life, Object};
use crate::platform::{LockClass, Platform};
use crate::pool::{self, Charge, PoolVec, tags};
use crate::qp::{ConnState, Qp};
use crate::status;

static STATE_LOCK: LockClass = LockClass::new("connector.state");

/// Why a connection ended, as the extended disconnect callback
/// (`NDK_FN_DISCONNECT_EVENT_CALLBACK_EX`) reports it. The codes are this
/// provider's own (NDK leaves them to the provider); NDK reserves 0 for "no
/// reason given", which this provider never reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DisconnectReason {
    /// The peer ended the connection: its disconnect request arrived (or
    /// its connection manager gave the connection up), and our QP was
    /// healthy.
    PeerDisconnected = 1,
    /// The connection had already failed on our side when the peer's end
    /// was reported: the device had put its QP in the error state
    /// (transport retries exhausted, a remote access or operation error).
    TransportError = 2,
}

/// Where a connector is in its one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Created, nothing done yet (active side).
    Idle,
    /// Connect request sent; waiting for the peer.
    Connecting,
    /// The peer accepted; waiting for CompleteConnect or Reject.
    Replied,
    /// Inbound request delivered; waiting for Accept or Reject.
    Requested,
    /// Accepted; waiting for the initiator to complete.
    Accepting,
    /// Connected.
    Connected,
    /// The peer disconnected (the disconnect event was delivered).
    PeerDisconnected,
    /// Our disconnect is in progress.
    Disconnecting,
    /// Refused, aborted or timed out while connecting or accepting.
    Failed,
    /// The peer abandoned the handshake while we held a request or a reply
    /// (Accept, CompleteConnect and Reject then report it).
    Aborted,
    /// Rejected, disconnected or closed.
    Done,
}

/// An asynchronous request waiting for a CM event; holds the connector
/// open until its completion has run.
struct Pending {
    completion: RequestCompletion,
    _busy: Busy<Connector>,
}

impl core::fmt::Debug for Pending {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pending").finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct State {
    phase: Phase,
    conn_id: Option<ConnId>,
    qp: Option<Dep<Qp>>,
    endpoint: Option<Dep<SharedEndpoint>>,
    local: Option<SocketAddr>,
    remote: Option<SocketAddr>,
    /// Read limits reported by NdkGetConnectionData.
    inbound_reads: u32,
    outbound_reads: u32,
    /// The peer's private data (connect request or reply).
    peer_data: Option<PoolVec<u8>>,
    pending: Option<Pending>,
    disconnect_event: DisconnectEvent,
    disconnect_context: Context,
    disconnect_notified: bool,
}

/// What `NdkGetConnectionData` reports: the connection's read limits and
/// the peer's private data.
#[derive(Debug)]
pub(crate) struct ConnectionData<'a> {
    /// The connection's inbound RDMA READ limit (IRD).
    pub inbound_reads: u32,
    /// The connection's outbound RDMA READ limit (ORD).
    pub outbound_reads: u32,
    /// The peer's private data.
    pub private_data: &'a [u8],
}

/// A connector.
#[repr(C)]
pub struct Connector {
    ndk: NdkCell<NDK_CONNECTOR>,
    life: Life,
    adapter: Dep<Adapter>,
    /// The listener that delivered an inbound connector.
    listener: Option<Dep<Listener>>,
    state: SpinLock<State>,
    _charge: Charge,
}

impl Object for Connector {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.adapter.get().platform()
    }

    /// Cancels what is pending, drops the device connection (an inbound
    /// request nobody accepted is thereby rejected) and flushes a
    /// connected QP.
    fn on_close(&self) {
        let (pending, conn_id, connected) = {
            let mut s = self.state.lock();
            let connected = matches!(
                s.phase,
                Phase::Connected | Phase::PeerDisconnected | Phase::Disconnecting
            );
            s.phase = Phase::Done;
            (s.pending.take(), s.conn_id, connected)
        };
        let ctx = self.adapter.get().ctx();
        if let Some(id) = conn_id {
            if connected {
                // Best effort: the peer learns we are gone.
                let _ = ctx.device().cm_disconnect(id);
            }
            ctx.device().cm_release(id);
            drop(ctx.conns.remove(id));
        }
        if connected {
            if let Some(qp) = self.qp() {
                qp.set_conn_state(ConnState::Disconnected);
                qp.flush();
            }
        }
        if let Some(p) = pending {
            p.completion.complete(self.platform(), STATUS_CANCELLED);
        }
    }

    fn teardown(&self) {}

    fn release_antecedents(&self) {
        let (qp, endpoint, data) = {
            let mut s = self.state.lock();
            (s.qp.take(), s.endpoint.take(), s.peer_data.take())
        };
        drop((qp, endpoint, data));
        if let Some(l) = &self.listener {
            l.release();
        }
        self.adapter.release();
    }
}

impl core::fmt::Debug for Connector {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Connector")
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

fn copy_data(platform: &'static dyn Platform, data: &[u8]) -> Result<PoolVec<u8>, NTSTATUS> {
    PoolVec::from_slice(platform, tags::CONNECTOR, data).map_err(status::alloc_error)
}

/// Maps a device error of a connect.
fn connect_error(e: DeviceError) -> NTSTATUS {
    match e {
        // On a connect, "in use" is the 4-tuple.
        DeviceError::AddressInUse => status::CONNECT_ADDRESS_IN_USE,
        other => status::device_error(other),
    }
}

impl Connector {
    /// `NdkCreateConnector`: a connector for one outbound connection.
    pub(crate) fn create(adapter: &Adapter) -> Result<TryArc<Self>, NTSTATUS> {
        Self::new(adapter, None, Self::blank(Phase::Idle))
    }

    fn new(
        adapter: &Adapter,
        listener: Option<Dep<Listener>>,
        state: State,
    ) -> Result<TryArc<Self>, NTSTATUS> {
        let platform = adapter.platform();
        pool::try_arc(platform, tags::CONNECTOR, |charge| Self {
            ndk: NdkCell::new(Connector::ndk(adapter.version())),
            life: Life::new(platform),
            adapter: Dep::new(&abi::arc(adapter)),
            listener,
            state: SpinLock::new(platform, &STATE_LOCK, state),
            _charge: charge,
        })
        .map_err(status::alloc_error)
    }

    fn blank(phase: Phase) -> State {
        State {
            phase,
            conn_id: None,
            qp: None,
            endpoint: None,
            local: None,
            remote: None,
            inbound_reads: 0,
            outbound_reads: 0,
            peer_data: None,
            pending: None,
            disconnect_event: DisconnectEvent::NONE,
            disconnect_context: Context::new(core::ptr::null_mut()),
            disconnect_notified: false,
        }
    }

    /// A connector for an inbound request (from a listener's event),
    /// registered for the connection's events.
    pub(crate) fn inbound(
        listener: &TryArc<Listener>,
        conn_id: ConnId,
        info: &ConnectionInfo,
        private_data: &[u8],
    ) -> Result<TryArc<Self>, NTSTATUS> {
        let adapter = listener.adapter();
        let caps = adapter.ctx().caps();
        let mut state = Self::blank(Phase::Requested);
        state.conn_id = Some(conn_id);
        state.local = Some(info.local);
        state.remote = Some(info.remote);
        // The initiator's ORD bounds what we may serve, its IRD what we may
        // issue.
        state.inbound_reads = info.outbound_reads.min(caps.max_inbound_reads);
        state.outbound_reads = info.inbound_reads.min(caps.max_outbound_reads);
        state.peer_data = Some(copy_data(adapter.platform(), private_data)?);
        let connector = Self::new(adapter, Some(Dep::new(listener)), state)?;
        adapter
            .ctx()
            .conns
            .insert(conn_id, connector.clone())
            .map_err(status::alloc_error)?;
        Ok(connector)
    }

    fn qp(&self) -> Option<TryArc<Qp>> {
        self.state.lock().qp.as_ref().map(|d| d.get().clone())
    }

    fn pending(&self, completion: NDK_FN_REQUEST_COMPLETION, context: *mut c_void) -> Pending {
        Pending {
            completion: RequestCompletion::new(completion, context),
            _busy: Busy::hold(&abi::arc(self)),
        }
    }

    /// Checks the QP argument of Connect/Accept and claims it. The QP may
    /// belong to any adapter instance of the connector's device.
    fn claim_qp(&self, qp: &Qp) -> Result<Dep<Qp>, NTSTATUS> {
        if !qp.pd().adapter().same_device(self.adapter.get()) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        if qp.conn_state() != ConnState::Idle || !qp.claim() {
            return Err(STATUS_INVALID_DEVICE_STATE);
        }
        Ok(Dep::new(&abi::arc(qp)))
    }

    /// `NdkConnect` / `NdkConnectWithSharedEndpoint`.
    pub(crate) fn connect(
        &self,
        qp: &Qp,
        endpoint: Option<&SharedEndpoint>,
        local: SocketAddr,
        remote: SocketAddr,
        inbound_reads: u32,
        outbound_reads: u32,
        private_data: &[u8],
        completion: NDK_FN_REQUEST_COMPLETION,
        context: *mut c_void,
    ) -> NTSTATUS {
        let ctx = self.adapter.get().ctx();
        let caps = ctx.caps();
        if private_data.len() > caps.max_connect_data as usize {
            return STATUS_INVALID_PARAMETER;
        }
        if !same_family(local, remote) {
            return STATUS_INVALID_ADDRESS;
        }
        if self.state.lock().phase != Phase::Idle {
            return STATUS_INVALID_DEVICE_STATE;
        }
        let qp_dep = match self.claim_qp(qp) {
            Ok(d) => d,
            Err(status) => return status,
        };
        let endpoint_dep = endpoint.map(|e| Dep::new(&abi::arc(e)));
        {
            let mut s = self.state.lock();
            s.phase = Phase::Connecting;
            s.qp = Some(qp_dep);
            s.endpoint = endpoint_dep;
            s.remote = Some(remote);
            s.pending = Some(self.pending(completion, context));
        }
        let params = ConnectParams {
            local,
            remote,
            inbound_reads: inbound_reads.min(caps.max_inbound_reads),
            outbound_reads: outbound_reads.min(caps.max_outbound_reads),
            private_data,
        };
        let me = abi::arc(self);
        let mut bound_local = None;
        // Under the table lock, so the reply cannot miss the connector.
        let result = ctx.conns.insert_with(
            || {
                let (id, at) = ctx
                    .device()
                    .cm_connect(qp.qpn(), &params)
                    .map_err(connect_error)?;
                bound_local = Some(at);
                Ok((id, me))
            },
            || STATUS_INSUFFICIENT_RESOURCES,
        );
        match result {
            Ok(id) => {
                let mut s = self.state.lock();
                s.conn_id = Some(id);
                s.local = bound_local;
                STATUS_PENDING
            }
            Err(status) => {
                // Undo: nothing was sent, no callback will come.
                let (pending, qp_dep, endpoint_dep) = {
                    let mut s = self.state.lock();
                    s.phase = Phase::Idle;
                    s.remote = None;
                    (s.pending.take(), s.qp.take(), s.endpoint.take())
                };
                qp.unclaim();
                drop((pending, qp_dep, endpoint_dep));
                status
            }
        }
    }

    /// `NdkCompleteConnect(Ex)`: completes synchronously.
    pub(crate) fn complete_connect(
        &self,
        disconnect_event: DisconnectEvent,
        disconnect_context: *mut c_void,
    ) -> NTSTATUS {
        let conn_id = {
            let s = self.state.lock();
            match (s.phase, s.conn_id) {
                (Phase::Replied, Some(id)) => id,
                (Phase::Aborted, _) => return STATUS_CONNECTION_ABORTED,
                _ => return STATUS_CONNECTION_INVALID,
            }
        };
        // Record the disconnect callback before the connection exists so a
        // quick peer disconnect finds it.
        {
            let mut s = self.state.lock();
            s.disconnect_event = disconnect_event;
            s.disconnect_context = Context::new(disconnect_context);
            s.phase = Phase::Connected;
        }
        if let Some(qp) = self.qp() {
            qp.set_conn_state(ConnState::Connected);
        }
        let ctx = self.adapter.get().ctx();
        let established = ctx.device().cm_establish(conn_id);
        if let Err(e) = established {
            self.state.lock().phase = Phase::Aborted;
            if let Some(qp) = self.qp() {
                qp.set_conn_state(ConnState::Disconnected);
            }
            return match e {
                DeviceError::InvalidState => STATUS_CONNECTION_ABORTED,
                other => status::device_error(other),
            };
        }
        STATUS_SUCCESS
    }

    /// `NdkAccept(Ex)`.
    pub(crate) fn accept(
        &self,
        qp: &Qp,
        inbound_reads: u32,
        outbound_reads: u32,
        private_data: &[u8],
        disconnect_event: DisconnectEvent,
        disconnect_context: *mut c_void,
        completion: NDK_FN_REQUEST_COMPLETION,
        context: *mut c_void,
    ) -> NTSTATUS {
        let ctx = self.adapter.get().ctx();
        let caps = ctx.caps();
        if private_data.len() > caps.max_accept_data as usize {
            return STATUS_INVALID_PARAMETER;
        }
        let conn_id = {
            let s = self.state.lock();
            match (s.phase, s.conn_id) {
                (Phase::Requested, Some(id)) => id,
                (Phase::Aborted, _) => return STATUS_CONNECTION_ABORTED,
                _ => return STATUS_CONNECTION_INVALID,
            }
        };
        let qp_dep = match self.claim_qp(qp) {
            Ok(d) => d,
            Err(status) => return status,
        };
        let (ird, ord) = {
            let mut s = self.state.lock();
            s.inbound_reads = s.inbound_reads.min(inbound_reads);
            s.outbound_reads = s.outbound_reads.min(outbound_reads);
            s.phase = Phase::Accepting;
            s.qp = Some(qp_dep);
            s.disconnect_event = disconnect_event;
            s.disconnect_context = Context::new(disconnect_context);
            s.pending = Some(self.pending(completion, context));
            (s.inbound_reads, s.outbound_reads)
        };
        let params = AcceptParams {
            qpn: qp.qpn(),
            inbound_reads: ird,
            outbound_reads: ord,
            private_data,
        };
        let accepted = ctx.device().cm_accept(conn_id, &params);
        match accepted {
            Ok(()) => STATUS_PENDING,
            Err(e) => {
                let (pending, qp_dep) = {
                    let mut s = self.state.lock();
                    s.phase = Phase::Requested;
                    (s.pending.take(), s.qp.take())
                };
                qp.unclaim();
                drop((pending, qp_dep));
                match e {
                    DeviceError::InvalidState => STATUS_CONNECTION_ABORTED,
                    other => status::device_error(other),
                }
            }
        }
    }

    /// `NdkReject`.
    pub(crate) fn reject(&self, private_data: &[u8]) -> NTSTATUS {
        let caps = self.adapter.get().ctx().caps();
        if private_data.len() > caps.max_accept_data as usize {
            return STATUS_INVALID_PARAMETER;
        }
        let conn_id = {
            let mut s = self.state.lock();
            match (s.phase, s.conn_id) {
                (Phase::Requested | Phase::Replied, Some(id)) => {
                    s.phase = Phase::Done;
                    id
                }
                (Phase::Aborted, _) => return STATUS_CONNECTION_ABORTED,
                _ => return STATUS_INVALID_DEVICE_STATE,
            }
        };
        match self
            .adapter
            .get()
            .ctx()
            .device()
            .cm_reject(conn_id, private_data)
        {
            Ok(()) => STATUS_SUCCESS,
            Err(DeviceError::InvalidState) => STATUS_CONNECTION_ABORTED,
            Err(e) => status::device_error(e),
        }
    }

    /// `NdkDisconnect`.
    pub(crate) fn disconnect(
        &self,
        completion: NDK_FN_REQUEST_COMPLETION,
        context: *mut c_void,
    ) -> NTSTATUS {
        let conn_id = {
            let mut s = self.state.lock();
            match (s.phase, s.conn_id) {
                (Phase::Connected | Phase::PeerDisconnected, Some(id)) => {
                    s.phase = Phase::Disconnecting;
                    s.pending = Some(self.pending(completion, context));
                    id
                }
                _ => return STATUS_CONNECTION_INVALID,
            }
        };
        if self
            .adapter
            .get()
            .ctx()
            .device()
            .cm_disconnect(conn_id)
            .is_ok()
        {
            return STATUS_PENDING;
        }
        // The connection is already gone (the peer left first): done now.
        let pending = {
            let mut s = self.state.lock();
            s.phase = Phase::Done;
            s.pending.take()
        };
        self.after_disconnect();
        drop(pending);
        STATUS_SUCCESS
    }

    /// After a graceful close the QP is flushed and never used again.
    fn after_disconnect(&self) {
        if let Some(qp) = self.qp() {
            qp.set_conn_state(ConnState::Disconnected);
            qp.flush();
        }
    }

    /// `NdkGetConnectionData`: the effective read limits and the peer's
    /// private data, from the moment they are known (an inbound request
    /// delivered, or the peer's reply to our connect) for the rest of the
    /// connector's life. NDK documents the call for the time between those
    /// events and Accept / CompleteConnect, but kernel consumers read the
    /// limits again once connected (to size their RDMA READ credits, say),
    /// so the same answer stays available after Accept,
    /// CompleteConnect and disconnect: what the connection runs with (on
    /// the passive side, the limits Accept settled), and the same private
    /// data. Before that (nothing requested yet), or when the connection
    /// never came to be (the connect failed, the peer abandoned the
    /// handshake): `STATUS_INVALID_DEVICE_STATE`.
    ///
    pub(crate) fn connection_data<R>(
        &self,
        read: impl FnOnce(&ConnectionData<'_>) -> R,
    ) -> Result<R, NTSTATUS> {
        let s = self.state.lock();
        if matches!(
            s.phase,
            Phase::Idle | Phase::Connecting | Phase::Failed | Phase::Aborted
        ) {
            return Err(STATUS_INVALID_DEVICE_STATE);
        }
        let Some(private_data) = s.peer_data.as_deref() else {
            return Err(STATUS_INVALID_DEVICE_STATE);
        };
        Ok(read(&ConnectionData {
            inbound_reads: s.inbound_reads,
            outbound_reads: s.outbound_reads,
            private_data,
        }))
    }

    /// The adapter it was created on (or its listener's).
    pub fn adapter(&self) -> &TryArc<Adapter> {
        self.adapter.get()
    }

    pub(crate) fn addresses(&self) -> (Option<SocketAddr>, Option<SocketAddr>) {
        let s = self.state.lock();
        (s.local, s.remote)
    }

    /// Its local and remote addresses while connected: from the
    /// connection's establishment until either side starts to end it.
    pub(crate) fn connected_addresses(&self) -> Option<(SocketAddr, SocketAddr)> {
        let s = self.state.lock();
        match (s.phase, s.local, s.remote) {
            (Phase::Connected, Some(local), Some(remote)) => Some((local, remote)),
            _ => None,
        }
    }
}

/// A CM event for this connector's connection.
pub(crate) fn on_cm_event(connector: &TryArc<Connector>, event: &CmEvent<'_>) {
    let platform = connector.adapter.get().platform();
    match *event {
        CmEvent::Replied {
            info, private_data, ..
        } => {
            let data = copy_data(platform, private_data);
            let mut s = connector.state.lock();
            if s.phase != Phase::Connecting {
                return;
            }
            let pending = s.pending.take();
            let status = match data {
                Ok(d) => {
                    s.phase = Phase::Replied;
                    s.local = Some(info.local);
                    s.remote = Some(info.remote);
                    s.inbound_reads = info.inbound_reads;
                    s.outbound_reads = info.outbound_reads;
                    s.peer_data = Some(d);
                    STATUS_SUCCESS
                }
                Err(status) => {
                    s.phase = Phase::Failed;
                    status
                }
            };
            drop(s);
            finish_pending(connector, pending, status);
        }
        CmEvent::Rejected { .. } => fail_attempt(connector, STATUS_CONNECTION_REFUSED),
        CmEvent::Failed { timed_out, .. } => fail_attempt(
            connector,
            if timed_out {
                STATUS_IO_TIMEOUT
            } else {
                STATUS_CONNECTION_ABORTED
            },
        ),
        CmEvent::Established { .. } => {
            let pending = {
                let mut s = connector.state.lock();
                if s.phase != Phase::Accepting {
                    return;
                }
                s.phase = Phase::Connected;
                s.pending.take()
            };
            if let Some(qp) = connector.qp() {
                qp.set_conn_state(ConnState::Connected);
            }
            finish_pending(connector, pending, STATUS_SUCCESS);
        }
        CmEvent::Disconnected { .. } => on_peer_disconnect(connector),
        CmEvent::DisconnectDone { .. } => {
            let pending = {
                let mut s = connector.state.lock();
                if s.phase != Phase::Disconnecting {
                    return;
                }
                s.phase = Phase::Done;
                s.pending.take()
            };
            connector.after_disconnect();
            finish_pending(connector, pending, STATUS_SUCCESS);
        }
        CmEvent::ConnectRequest { .. } => {}
    }
}

fn finish_pending(connector: &Connector, pending: Option<Pending>, status: NTSTATUS) {
    if let Some(p) = pending {
        p.completion
            .complete(connector.adapter.get().platform(), status);
        // `p._busy` drops here, after the callback returned.
    }
}

/// The attempt in progress (connect or accept) failed.
fn fail_attempt(connector: &TryArc<Connector>, status: NTSTATUS) {
    let (pending, qp) = {
        let mut s = connector.state.lock();
        match s.phase {
            Phase::Connecting | Phase::Accepting => {}
            // An inbound request the initiator abandoned: Accept and Reject
            // now report it.
            Phase::Requested | Phase::Replied => {
                s.phase = Phase::Aborted;
                return;
            }
            _ => return,
        }
        s.phase = Phase::Failed;
        (s.pending.take(), s.qp.take())
    };
    if let Some(qp) = &qp {
        // Never connected: the QP may be used with another connector.
        qp.get().unclaim();
    }
    drop(qp);
    finish_pending(connector, pending, status);
}

/// The peer disconnected (or the connection failed): the disconnect event,
/// once, with its [`DisconnectReason`] for an extended callback.
/// Outstanding work is not flushed for it (NDK).
fn on_peer_disconnect(connector: &TryArc<Connector>) {
    let (callback, context) = {
        let mut s = connector.state.lock();
        if s.phase != Phase::Connected || s.disconnect_notified {
            return;
        }
        s.phase = Phase::PeerDisconnected;
        s.disconnect_notified = true;
        (s.disconnect_event, s.disconnect_context)
    };
    let mut reason = DisconnectReason::PeerDisconnected;
    if let Some(qp) = connector.qp() {
        if qp.is_errored() {
            reason = DisconnectReason::TransportError;
        }
        qp.set_conn_state(ConnState::Disconnected);
    }
    let Some(_busy) = Busy::enter(connector) else {
        return;
    };
    callout::disconnect_event(
        connector.adapter.get().platform(),
        callback,
        context,
        reason as u32,
    );
}

/// Whether a connection from `local` to `remote` has one address family:
/// both IPv4 or both IPv6, or an unspecified local address (which the
/// device binds to its own address).
fn same_family(local: SocketAddr, remote: SocketAddr) -> bool {
    local.is_ipv4() == remote.is_ipv4() || local.ip().is_unspecified()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_has_one_family() {
        let v4 = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(same_family(v4("10.0.0.1:0"), v4("10.0.0.2:445")));
        assert!(same_family(v4("[fd00::1]:0"), v4("[fd00::2]:445")));
        // "Any" of either family leaves the choice to the device.
        assert!(same_family(v4("[::]:0"), v4("10.0.0.2:445")));
        assert!(same_family(v4("0.0.0.0:0"), v4("[fd00::2]:445")));
        assert!(!same_family(v4("10.0.0.1:0"), v4("[fd00::2]:445")));
        assert!(!same_family(v4("[fd00::1]:0"), v4("10.0.0.2:445")));
        assert!(!same_family(v4("[::ffff:10.0.0.1]:0"), v4("10.0.0.2:445")));
    }
}

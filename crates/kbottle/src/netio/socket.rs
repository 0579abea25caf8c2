//! The datagram socket object: what the driver holds (`WSK_SOCKET`, whose
//! `Dispatch` is the datagram table), what NETIO keeps for it, the table
//! of live sockets, and the accounting the machine's report reads.
//!
//! A socket's `WSK_SOCKET` header is never freed (eight bytes per socket),
//! so a driver that calls a closed socket is caught by the live-socket
//! lookup instead of reading freed memory.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use ndis::{IRP, PFN_WSK_RECEIVE_FROM_EVENT, WSK_BUF, WSK_CLIENT_DATAGRAM_DISPATCH, WSK_SOCKET};
use ndkpi::{PVOID, SOCKADDR};

use super::checks::bad_object;
use super::datagram::DATAGRAM_DISPATCH;
use super::receive::Batch;
use super::registration;
use super::udp::Udp;

/// A `WskReceiveFrom` waiting for a datagram.
#[derive(Debug)]
pub(super) struct PendingReceive {
    pub irp: *mut IRP,
    pub buffer: WSK_BUF,
    pub remote: *mut SOCKADDR,
    pub control_length: *mut u32,
    pub control_flags: *mut u32,
}

// SAFETY: the pointers are the driver's arguments of a pending
// `WskReceiveFrom`, valid until its IRP is completed; they are only used
// by whoever takes the request out of its socket's queue (under the
// socket's lock), once.
unsafe impl Send for PendingReceive {}

/// One received datagram NETIO keeps (refused by the receive event, or
/// waiting for a `WskReceiveFrom`).
#[derive(Debug)]
pub(super) struct Datagram {
    pub from: SocketAddrV4,
    pub bytes: Vec<u8>,
}

/// What a socket's calls and its receive thread share.
#[derive(Debug, Default)]
pub(super) struct State {
    /// `WskReceiveFromEvent` is enabled.
    pub events: bool,
    /// `WskCloseSocket` was called.
    pub closing: bool,
    /// The close request the receive thread completes.
    pub close_irp: Option<CloseRequest>,
    /// A receive thread runs (from bind to the end of close).
    pub receiving: bool,
    /// `WskReceiveFrom` requests, oldest first.
    pub receives: VecDeque<PendingReceive>,
    /// Datagrams the event refused (`STATUS_DATA_NOT_ACCEPTED`), oldest first.
    pub held: VecDeque<Datagram>,
    /// Indication lists the client kept (`STATUS_PENDING`), until
    /// `WskRelease`; boxed, as the client holds pointers into them.
    #[allow(clippy::vec_box, reason = "the client holds pointers into each batch")]
    pub retained: Vec<Box<Batch>>,
}

/// A pending `WskCloseSocket`.
#[derive(Debug)]
pub(super) struct CloseRequest(pub *mut IRP);

// SAFETY: the IRP of a pending close, owned by NETIO until the receive
// thread completes it (once).
unsafe impl Send for CloseRequest {}

/// A datagram socket.
#[derive(Debug)]
pub(super) struct Socket {
    /// The registration (block address) that created it.
    pub registration: usize,
    /// The client's socket context.
    pub context: PVOID,
    /// The client's datagram dispatch (may be null: no events).
    pub client: *const WSK_CLIENT_DATAGRAM_DISPATCH,
    /// The Linux socket, from bind until the close.
    pub udp: Mutex<Option<Arc<Udp>>>,
    pub state: Mutex<State>,
    /// Signalled when `state` changes (for the receive thread).
    pub changed: Condvar,
    /// The socket's calls running now.
    calls: AtomicU32,
}

// SAFETY: `context` and `client` are the driver's values, only passed back to it or read (the
// client table is immutable and outlives the socket by the WSK contract).
unsafe impl Send for Socket {}
// SAFETY: shared access only reads `registration`, `context` and `client`
// (set at creation, never written; the client table is immutable by the
// WSK contract); `udp` and `state` are mutexes, `calls` an atomic.
unsafe impl Sync for Socket {}

impl Socket {
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn udp(&self) -> Option<Arc<Udp>> {
        self.udp
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The client's `WskReceiveFromEvent`, if it has one.
    pub fn receive_event(&self) -> Option<PFN_WSK_RECEIVE_FROM_EVENT> {
        if self.client.is_null() {
            return None;
        }
        // SAFETY: the client's datagram dispatch table, valid while the
        // socket is open (WSK contract), checked non-null.
        unsafe { self.client.read_unaligned() }.WskReceiveFromEvent
    }

    /// The local address, once bound.
    pub fn local(&self) -> Option<SocketAddrV4> {
        self.udp().map(|u| u.local())
    }
}

static SOCKETS: Mutex<BTreeMap<usize, Arc<Socket>>> = Mutex::new(BTreeMap::new());
static OPEN: AtomicUsize = AtomicUsize::new(0);

fn sockets() -> MutexGuard<'static, BTreeMap<usize, Arc<Socket>>> {
    SOCKETS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sockets created and not yet fully closed (their close completed and
/// NETIO runs no more driver code for them), for the machine's report.
pub fn open_sockets() -> usize {
    OPEN.load(Ordering::Acquire)
}

/// Traffic counters of every socket since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams sent (`WskSendTo` that reached the Linux socket).
    pub sent: u64,
    /// Datagrams received from the Linux sockets.
    pub received: u64,
    /// Datagrams handed to `WskReceiveFromEvent`.
    pub indicated: u64,
    /// Indication lists the client kept (`STATUS_PENDING`).
    pub retained: u64,
    /// Indication lists refused (`STATUS_DATA_NOT_ACCEPTED`).
    pub refused: u64,
    /// Datagrams completed to `WskReceiveFrom` requests.
    pub received_by_request: u64,
    /// Indication lists a client still kept when its socket closed (a
    /// missing `WskRelease`; NETIO keeps their memory).
    pub orphaned_lists: u64,
}

pub(super) static SENT: AtomicU64 = AtomicU64::new(0);
pub(super) static RECEIVED: AtomicU64 = AtomicU64::new(0);
pub(super) static INDICATED: AtomicU64 = AtomicU64::new(0);
pub(super) static RETAINED: AtomicU64 = AtomicU64::new(0);
pub(super) static REFUSED: AtomicU64 = AtomicU64::new(0);
pub(super) static BY_REQUEST: AtomicU64 = AtomicU64::new(0);

/// The traffic counters now.
pub fn counters() -> Counters {
    Counters {
        sent: SENT.load(Ordering::Relaxed),
        received: RECEIVED.load(Ordering::Relaxed),
        indicated: INDICATED.load(Ordering::Relaxed),
        retained: RETAINED.load(Ordering::Relaxed),
        refused: REFUSED.load(Ordering::Relaxed),
        received_by_request: BY_REQUEST.load(Ordering::Relaxed),
        orphaned_lists: super::receive::orphaned_lists() as u64,
    }
}

/// Creates a socket of registration `registration` and returns what the
/// driver holds.
pub(super) fn create(
    registration: usize,
    context: PVOID,
    client: *const WSK_CLIENT_DATAGRAM_DISPATCH,
) -> *mut WSK_SOCKET {
    let header = Box::into_raw(Box::new(WSK_SOCKET {
        Dispatch: (&raw const DATAGRAM_DISPATCH).cast(),
    }));
    let socket = Arc::new(Socket {
        registration,
        context,
        client,
        udp: Mutex::new(None),
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
        calls: AtomicU32::new(0),
    });
    OPEN.fetch_add(1, Ordering::AcqRel);
    registration::socket_opened(registration);
    sockets().insert(header as usize, socket);
    header
}

/// A call on a socket, running: holds the socket and counts the call
/// (so a close racing it is seen).
#[derive(Debug)]
pub(super) struct Call {
    pub socket: Arc<Socket>,
}

impl Drop for Call {
    fn drop(&mut self) {
        self.socket.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Begins a call of `api` on `socket`, which must be open.
pub(super) fn enter(api: &str, routine: usize, socket: *mut WSK_SOCKET) -> Call {
    let found = sockets().get(&(socket as usize)).cloned();
    let Some(socket) = found else {
        bad_object(api, routine, socket as usize, "not an open WSK socket");
    };
    socket.calls.fetch_add(1, Ordering::AcqRel);
    Call { socket }
}

/// Begins `WskCloseSocket` on `socket`: it must be open with no other
/// call of its own running; from now on it is no longer open to calls.
pub(super) fn enter_close(api: &str, routine: usize, socket: *mut WSK_SOCKET) -> Arc<Socket> {
    let removed = sockets().remove(&(socket as usize));
    let Some(found) = removed else {
        bad_object(api, routine, socket as usize, "not an open WSK socket");
    };
    let running = found.calls.load(Ordering::Acquire);
    if running != 0 {
        bad_object(
            api,
            routine,
            socket as usize,
            &format!("closed while {running} other call(s) on the socket are running"),
        );
    }
    found
}

/// The last act of a close: the socket no longer counts as open.
pub(super) fn closed(socket: &Socket) {
    OPEN.fetch_sub(1, Ordering::AcqRel);
    registration::socket_closed(socket.registration);
}

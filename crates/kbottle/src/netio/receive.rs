//! A bound socket's receive thread: a processor of its own
//! (`rx <address>`) that takes datagrams from the Linux socket and hands
//! them to the client, and that finishes the socket's close.
//!
//! - Pending `WskReceiveFrom` requests take precedence; then, if the
//!   receive event is enabled, the datagrams go to `WskReceiveFromEvent`
//!   as one `WSK_DATAGRAM_INDICATION` list, at `DISPATCH_LEVEL`
//!   (`WSK_FLAG_AT_DISPATCH_LEVEL`). Each datagram's `WSK_BUF` is an
//!   [`OwnedMdl`] over the thread's 64 KiB slot, with the payload starting
//!   [`HEADROOM`] bytes in (where a NIC's headers would be): a client that
//!   reads `ByteCount` or ignores `Offset` reads the wrong bytes.
//! - `STATUS_PENDING`: the client keeps the list until `WskRelease`; the
//!   thread takes fresh slots. `STATUS_DATA_NOT_ACCEPTED`: the event is
//!   disabled and the datagrams are kept for `WskReceiveFrom` or for the
//!   event once re-enabled. Anything else: the list is free again.
//! - With neither a request nor the event, the thread does not read: the
//!   Linux socket buffers the datagrams, as the transport would.
//! - It polls with a short timeout, so a close is noticed promptly; the
//!   close completes pending requests with `STATUS_CANCELLED`, closes the
//!   Linux socket, completes the close IRP (all at `DISPATCH_LEVEL`), and
//!   only then counts the socket closed.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ndis::{IRP, WSK_BUF, WSK_DATAGRAM_INDICATION, WSK_FLAG_AT_DISPATCH_LEVEL};
use ndkpi::{
    AF_INET, IN_ADDR, MDL, NTSTATUS, SOCKADDR, SOCKADDR_IN, STATUS_CANCELLED, STATUS_PENDING,
    STATUS_SUCCESS,
};

use super::buffer;
use super::capture;
use super::socket::{
    self, BY_REQUEST, Datagram, INDICATED, PendingReceive, RECEIVED, REFUSED, RETAINED, Socket,
};
use super::udp::{Arrival, MAX_BATCH, Udp};
use crate::mm::OwnedMdl;
use crate::{cpu, io};

/// Bytes before each payload in its slot.
pub const HEADROOM: usize = capture::HEADERS;
/// Bytes of one receive slot: the largest UDP payload after the headroom.
const SLOT_BYTES: usize = HEADROOM + 65_536;
/// How long one wait for datagrams or for work lasts.
const POLL: Duration = Duration::from_millis(20);
/// `STATUS_DATA_NOT_ACCEPTED`: the event refused the datagrams.
pub const STATUS_DATA_NOT_ACCEPTED: NTSTATUS = 0xC000_021B_u32 as i32;
/// `MSG_TRUNC` (`ws2def.h`): the datagram did not fit the buffer.
pub const MSG_TRUNC: u32 = 0x0100;

/// Split mode: see [`set_split_indications`].
static SPLIT: AtomicBool = AtomicBool::new(false);

/// Makes every indicated datagram arrive in a chain of two MDLs, cut
/// halfway through its payload, as a NIC whose receive buffers are
/// smaller than the datagram would indicate it (off by default).
pub fn set_split_indications(on: bool) {
    SPLIT.store(on, Ordering::Relaxed);
}

/// Indication lists retained by clients when their socket closed: kept
/// (never freed) so a client that still reads them does not read freed
/// memory, and counted.
#[allow(
    clippy::vec_box,
    reason = "the client may still hold pointers into each batch"
)]
static ORPHANED: Mutex<Vec<Box<Batch>>> = Mutex::new(Vec::new());

/// Indication lists still retained when their socket closed.
pub fn orphaned_lists() -> usize {
    ORPHANED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len()
}

/// One receive slot: its bytes and the MDL describing them.
#[derive(Debug)]
struct Slot {
    memory: Box<[u8]>,
    mdl: OwnedMdl,
    /// In split mode, the two-MDL chain of the datagram indicated last.
    split: Option<(OwnedMdl, OwnedMdl)>,
}

impl Slot {
    fn new() -> Self {
        let mut memory = vec![0u8; SLOT_BYTES].into_boxed_slice();
        let mdl = OwnedMdl::describe(memory.as_mut_ptr(), SLOT_BYTES);
        Self {
            memory,
            mdl,
            split: None,
        }
    }

    /// The MDL chain to indicate a datagram of `len` bytes with: the whole
    /// slot, or (split mode) two MDLs, the first ending halfway through
    /// the payload.
    fn chain(&mut self, len: usize) -> *mut MDL {
        if !SPLIT.load(Ordering::Relaxed) {
            self.split = None;
            return self.mdl.as_ptr();
        }
        let cut = HEADROOM + len / 2;
        let base = self.memory.as_mut_ptr();
        let mut head = OwnedMdl::describe(base, cut);
        let tail = OwnedMdl::describe(base.wrapping_add(cut), len - len / 2);
        head.set_next(tail.as_ptr());
        let first = head.as_ptr();
        self.split = Some((head, tail));
        first
    }

    fn payload(&self, len: usize) -> &[u8] {
        &self.memory[HEADROOM..HEADROOM + len]
    }
}

const NO_INDICATION: WSK_DATAGRAM_INDICATION = WSK_DATAGRAM_INDICATION {
    Next: std::ptr::null_mut(),
    Buffer: WSK_BUF {
        Mdl: std::ptr::null_mut(),
        Offset: 0,
        Length: 0,
    },
    ControlInfo: std::ptr::null_mut(),
    ControlInfoLength: 0,
    RemoteAddress: std::ptr::null_mut(),
};

/// The slots of one indication list and the list itself; boxed, so the
/// addresses the client sees stay put while it holds them.
#[derive(Debug)]
pub struct Batch {
    indications: [WSK_DATAGRAM_INDICATION; MAX_BATCH],
    remotes: [SOCKADDR_IN; MAX_BATCH],
    slots: Vec<Slot>,
}

// SAFETY: the raw pointers inside point into the batch itself (its
// indications, addresses and slots), which moves between threads only as
// a whole, boxed, and is used by one thread at a time (the receive thread,
// or the socket's retained list under its lock).
unsafe impl Send for Batch {}

impl Batch {
    fn new() -> Box<Self> {
        Box::new(Self {
            indications: [NO_INDICATION; MAX_BATCH],
            remotes: [SOCKADDR_IN::default(); MAX_BATCH],
            slots: (0..MAX_BATCH).map(|_| Slot::new()).collect(),
        })
    }

    /// The head of this batch's list (what `WskRelease` gets back).
    pub fn head(&self) -> *const WSK_DATAGRAM_INDICATION {
        self.indications.as_ptr()
    }

    /// Links slots `range` (holding `arrivals`) into one list; its head.
    fn link(&mut self, first: usize, arrivals: &[Arrival]) -> *mut WSK_DATAGRAM_INDICATION {
        let base = self.indications.as_mut_ptr();
        let remotes = self.remotes.as_mut_ptr();
        let end = first + arrivals.len();
        for (i, a) in (first..end).zip(arrivals) {
            self.remotes[i] = sockaddr_in(a.from);
            self.indications[i] = WSK_DATAGRAM_INDICATION {
                Next: if i + 1 < end {
                    base.wrapping_add(i + 1)
                } else {
                    std::ptr::null_mut()
                },
                Buffer: WSK_BUF {
                    Mdl: self.slots[i].chain(a.len),
                    Offset: HEADROOM as u32,
                    Length: a.len,
                },
                ControlInfo: std::ptr::null_mut(),
                ControlInfoLength: 0,
                RemoteAddress: remotes.wrapping_add(i).cast::<SOCKADDR>(),
            };
        }
        base.wrapping_add(first)
    }
}

/// A `SOCKADDR_IN` for an IPv4 socket address.
pub fn sockaddr_in(addr: SocketAddrV4) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: addr.port().to_be(),
        sin_addr: IN_ADDR::new(addr.ip().octets()),
        sin_zero: [0; 8],
    }
}

/// Completes `irp` as the lower driver, with `status` and `information`.
pub fn complete(irp: *mut IRP, status: NTSTATUS, information: usize) -> NTSTATUS {
    // SAFETY: an IRP the driver handed to NETIO for one call, completed
    // exactly once, here.
    unsafe { io::complete_as_lower_driver(irp, status, information) };
    status
}

/// `SL_PENDING_RETURNED` (`wdm.h`).
const SL_PENDING_RETURNED: u8 = 0x01;

/// `IoMarkIrpPending` in the stack location NETIO takes (the caller's
/// next one): done before NETIO returns `STATUS_PENDING` and before anyone
/// else can complete the IRP, so its completion reports `PendingReturned`.
pub fn mark_pending(irp: *mut IRP) {
    // SAFETY: an IRP the driver handed to NETIO, with a free next stack
    // location (WSK's requirement), not yet completed.
    let next = unsafe { (*irp).next_stack_location() };
    // SAFETY: that location lies inside the IRP.
    unsafe { (*next).Control |= SL_PENDING_RETURNED };
}

/// Completes a `WskReceiveFrom` request with one datagram.
pub fn complete_request(request: &PendingReceive, from: SocketAddrV4, payload: &[u8]) -> NTSTATUS {
    // SAFETY: the request's buffer, valid and writable until its IRP is
    // completed (WSK contract).
    let copied = unsafe { buffer::scatter(&request.buffer, payload) };
    let copied = match copied {
        Ok(n) => n,
        Err(status) => return complete(request.irp, status, 0),
    };
    if !request.remote.is_null() {
        // SAFETY: the request's remote address buffer, a SOCKADDR of the
        // socket's family (AF_INET), valid until completion.
        unsafe {
            request
                .remote
                .cast::<SOCKADDR_IN>()
                .write_unaligned(sockaddr_in(from));
        };
    }
    if !request.control_length.is_null() {
        // SAFETY: the request's control length, valid until completion.
        unsafe { request.control_length.write_unaligned(0) };
    }
    if !request.control_flags.is_null() {
        let flags = if copied < payload.len() { MSG_TRUNC } else { 0 };
        // SAFETY: the request's control flags, valid until completion.
        unsafe { request.control_flags.write_unaligned(flags) };
    }
    BY_REQUEST.fetch_add(1, Ordering::Relaxed);
    complete(request.irp, STATUS_SUCCESS, copied)
}

/// Starts the receive thread of a socket just bound to `udp`.
pub fn start(socket: Arc<Socket>, udp: Arc<Udp>) -> std::io::Result<()> {
    let name = format!("rx {}", udp.local());
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            crate::verifier::firewall("netio receive thread", move || run(&name, &socket, udp));
        })
        .map(drop)
}

/// What the receive thread does next.
enum Work {
    Close,
    /// A request and a kept datagram meet.
    HeldToRequest(PendingReceive, Datagram),
    /// The event is enabled again: kept datagrams first.
    HeldToEvent(Vec<Datagram>),
    /// Read the Linux socket.
    Receive,
}

fn next_work(socket: &Socket) -> Work {
    let event = socket.receive_event().is_some();
    let mut st = socket.state();
    loop {
        if st.closing {
            return Work::Close;
        }
        if !st.receives.is_empty()
            && let Some(d) = st.held.pop_front()
            && let Some(r) = st.receives.pop_front()
        {
            return Work::HeldToRequest(r, d);
        }
        let events = st.events && event;
        if events && !st.held.is_empty() {
            let n = st.held.len().min(MAX_BATCH);
            return Work::HeldToEvent(st.held.drain(..n).collect());
        }
        if events || !st.receives.is_empty() {
            return Work::Receive;
        }
        st = socket
            .changed
            .wait_timeout(st, POLL)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

fn run(name: &str, socket: &Arc<Socket>, udp: Arc<Udp>) {
    cpu::enter(name);
    let local = udp.local();
    let mut batch = Batch::new();
    loop {
        match next_work(socket) {
            Work::Close => break,
            Work::HeldToRequest(request, d) => {
                cpu::run_at_dispatch(|| complete_request(&request, d.from, &d.bytes));
            }
            Work::HeldToEvent(held) => {
                let arrivals: Vec<Arrival> = held
                    .iter()
                    .zip(&mut batch.slots)
                    .map(|(d, slot)| {
                        slot.memory[HEADROOM..HEADROOM + d.bytes.len()].copy_from_slice(&d.bytes);
                        Arrival {
                            len: d.bytes.len(),
                            from: d.from,
                        }
                    })
                    .collect();
                indicate(socket, &mut batch, 0, &arrivals);
            }
            Work::Receive => {
                let arrivals = {
                    let mut bufs: Vec<&mut [u8]> = batch
                        .slots
                        .iter_mut()
                        .map(|s| &mut s.memory[HEADROOM..])
                        .collect();
                    udp.receive(&mut bufs, POLL)
                };
                if !arrivals.is_empty() {
                    RECEIVED.fetch_add(arrivals.len() as u64, Ordering::Relaxed);
                    for (a, slot) in arrivals.iter().zip(&batch.slots) {
                        capture::record(a.from, local, slot.payload(a.len));
                    }
                    deliver(socket, &mut batch, &arrivals);
                }
            }
        }
    }
    finish(socket, udp);
}

/// Hands fresh arrivals (slots `0..arrivals.len()`) to pending requests,
/// then to the event or the kept queue.
fn deliver(socket: &Socket, batch: &mut Box<Batch>, arrivals: &[Arrival]) {
    let (requests, events) = {
        let mut st = socket.state();
        let n = st.receives.len().min(arrivals.len());
        let requests: Vec<PendingReceive> = st.receives.drain(..n).collect();
        (requests, st.events)
    };
    let taken = requests.len();
    if taken > 0 {
        cpu::run_at_dispatch(|| {
            for ((request, a), slot) in requests.into_iter().zip(arrivals).zip(&batch.slots) {
                complete_request(&request, a.from, slot.payload(a.len));
            }
        });
    }
    let rest = &arrivals[taken..];
    if rest.is_empty() {
        return;
    }
    if events && socket.receive_event().is_some() {
        indicate(socket, batch, taken, rest);
    } else {
        keep(socket, batch, taken, rest);
    }
}

/// Keeps datagrams (slots from `first`) for later.
fn keep(socket: &Socket, batch: &Batch, first: usize, arrivals: &[Arrival]) {
    let mut st = socket.state();
    for (a, slot) in arrivals.iter().zip(&batch.slots[first..]) {
        st.held.push_back(Datagram {
            from: a.from,
            bytes: slot.payload(a.len).to_vec(),
        });
    }
    socket.changed.notify_all();
}

/// Indicates datagrams (slots from `first`) to the client's
/// `WskReceiveFromEvent` at `DISPATCH_LEVEL`.
fn indicate(socket: &Socket, batch: &mut Box<Batch>, first: usize, arrivals: &[Arrival]) {
    let Some(event) = socket.receive_event() else {
        keep(socket, batch, first, arrivals);
        return;
    };
    let head = batch.link(first, arrivals);
    let context = socket.context;
    // SAFETY: the client's receive event with its socket context and a
    // list NETIO owns, valid until the event returns (or, if it returns
    // STATUS_PENDING, until WskRelease).
    let status =
        cpu::run_at_dispatch(|| unsafe { event(context, WSK_FLAG_AT_DISPATCH_LEVEL, head) });
    INDICATED.fetch_add(arrivals.len() as u64, Ordering::Relaxed);
    if status == STATUS_PENDING {
        RETAINED.fetch_add(1, Ordering::Relaxed);
        let kept = std::mem::replace(batch, Batch::new());
        socket.state().retained.push(kept);
    } else if status == STATUS_DATA_NOT_ACCEPTED {
        REFUSED.fetch_add(1, Ordering::Relaxed);
        let mut st = socket.state();
        st.events = false;
        // Refused datagrams go before any kept since.
        for (a, slot) in arrivals.iter().zip(&batch.slots[first..]).rev() {
            st.held.push_front(Datagram {
                from: a.from,
                bytes: slot.payload(a.len).to_vec(),
            });
        }
    }
}

/// Finishes the close: cancels pending requests, closes the Linux socket,
/// completes the close IRP, and counts the socket closed.
fn finish(socket: &Socket, udp: Arc<Udp>) {
    let (close, requests, retained) = {
        let mut st = socket.state();
        st.receiving = false;
        (
            st.close_irp.take(),
            std::mem::take(&mut st.receives),
            std::mem::take(&mut st.retained),
        )
    };
    if !retained.is_empty() {
        ORPHANED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(retained);
    }
    // The Linux socket closes here (the last holder), before the close
    // completes: the driver may bind the address again at once.
    *socket.udp.lock().unwrap_or_else(PoisonError::into_inner) = None;
    drop(udp);
    cpu::run_at_dispatch(|| {
        for r in requests {
            complete(r.irp, STATUS_CANCELLED, 0);
        }
        if let Some(c) = close {
            complete(c.0, STATUS_SUCCESS, 0);
        }
    });
    socket::closed(socket);
}

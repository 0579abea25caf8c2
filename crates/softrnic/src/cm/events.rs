//! The CM event queue: a preallocated ring of (event, connection) records.
//! A record carries no private data; the connection slot holds the peer's
//! (at most one data-carrying event per connection), and delivery copies it
//! out with the rest of the event before releasing the lock.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use hwq::device::{CmEvent, ConnectionInfo, EventSink};

use super::conn::Conn;
use super::{CmState, Io};
use crate::stats::Counters;
use crate::wire::cm::REP_PRIVATE_LEN;

/// What happened to a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    ConnectRequest,
    Replied,
    Rejected { by_consumer: bool },
    Established,
    Disconnected,
    DisconnectDone,
    Failed { timed_out: bool },
}

#[derive(Clone, Copy, Debug)]
struct Record {
    kind: Kind,
    conn_id: u32,
}

/// Fixed-capacity FIFO of records.
#[derive(Debug)]
pub(crate) struct EventRing {
    buf: Vec<Record>,
    head: usize,
    len: usize,
}

impl EventRing {
    pub fn new(capacity: u32) -> Option<Self> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(capacity as usize).ok()?;
        buf.resize(
            capacity as usize,
            Record {
                kind: Kind::Established,
                conn_id: 0,
            },
        );
        Some(Self {
            buf,
            head: 0,
            len: 0,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, r: Record) -> bool {
        let cap = self.buf.len();
        if self.len == cap {
            return false;
        }
        if let Some(slot) = self.buf.get_mut((self.head + self.len) % cap) {
            *slot = r;
        }
        self.len += 1;
        true
    }

    fn pop(&mut self) -> Option<Record> {
        if self.len == 0 {
            return None;
        }
        let r = *self.buf.get(self.head)?;
        self.head = (self.head + 1) % self.buf.len();
        self.len -= 1;
        Some(r)
    }
}

impl Io {
    /// Queues `kind` for connection `conn_id`. The peer's end of a
    /// connection (Disconnected or Failed) is reported once.
    pub(crate) fn report(&mut self, conn: &mut Conn, conn_id: u32, kind: Kind) {
        if matches!(kind, Kind::Disconnected | Kind::Failed { .. }) {
            if conn.peer_end_reported {
                return;
            }
            conn.peer_end_reported = true;
        }
        if self.events.push(Record { kind, conn_id }) {
            self.wake = true;
        } else {
            self.stats.events_lost += 1;
        }
    }
}

/// An event copied out of the locked state.
struct Ready {
    kind: Kind,
    conn_id: u32,
    listen_id: u32,
    info: ConnectionInfo,
    data: [u8; REP_PRIVATE_LEN],
    len: usize,
}

impl Ready {
    fn event(&self) -> CmEvent<'_> {
        let conn_id = hwq::ConnId::from_raw(self.conn_id);
        let private_data = self.data.get(..self.len).unwrap_or_default();
        match self.kind {
            Kind::ConnectRequest => CmEvent::ConnectRequest {
                listen_id: hwq::ListenId::from_raw(self.listen_id),
                conn_id,
                info: self.info,
                private_data,
            },
            Kind::Replied => CmEvent::Replied {
                conn_id,
                info: self.info,
                private_data,
            },
            Kind::Rejected { by_consumer } => CmEvent::Rejected {
                conn_id,
                by_consumer,
                private_data,
            },
            Kind::Established => CmEvent::Established { conn_id },
            Kind::Disconnected => CmEvent::Disconnected { conn_id },
            Kind::DisconnectDone => CmEvent::DisconnectDone { conn_id },
            Kind::Failed { timed_out } => CmEvent::Failed { conn_id, timed_out },
        }
    }
}

/// Takes the next event whose connection is still the consumer's.
fn next(cm: &CmState) -> Option<Ready> {
    let mut inner = cm.inner.lock();
    let inner = &mut *inner;
    loop {
        let Some(r) = inner.io.events.pop() else {
            cm.events_pending.store(false, Ordering::Release);
            return None;
        };
        // Released connections get no more events.
        let Some((_, conn)) = inner.conns.owned(r.conn_id) else {
            continue;
        };
        let info = match r.kind {
            Kind::ConnectRequest => ConnectionInfo {
                local: conn.local,
                remote: conn.remote,
                // The initiator's limits, as it asked.
                inbound_reads: u32::from(conn.peer_ird),
                outbound_reads: u32::from(conn.peer_ord),
            },
            _ => ConnectionInfo {
                local: conn.local,
                remote: conn.remote,
                inbound_reads: u32::from(conn.ird),
                outbound_reads: u32::from(conn.ord),
            },
        };
        let mut ready = Ready {
            kind: r.kind,
            conn_id: r.conn_id,
            listen_id: conn.listen_id,
            info,
            data: [0; REP_PRIVATE_LEN],
            len: 0,
        };
        if matches!(
            r.kind,
            Kind::ConnectRequest | Kind::Replied | Kind::Rejected { .. }
        ) {
            let data = conn.peer_data();
            ready.len = data.len();
            if let Some(dst) = ready.data.get_mut(..data.len()) {
                dst.copy_from_slice(data);
            }
        }
        return Some(ready);
    }
}

impl CmState {
    /// Delivers queued CM events to `sink` (or drops them without one), one
    /// at a time with the CM lock released, counting the connection
    /// outcomes they report into `stats`; returns whether there were any.
    pub(crate) fn deliver(&self, sink: Option<(&EventSink, &Counters)>) -> bool {
        if !self.events_pending.load(Ordering::Acquire) {
            return false;
        }
        let mut any = false;
        while let Some(ready) = next(self) {
            any = true;
            if let Some((sink, stats)) = sink {
                count(ready.kind, stats);
                sink.cm_event(ready.event());
            }
        }
        any
    }
}

/// Counts a reported event's connection outcome: an inbound connection
/// established, or an attempt that failed.
fn count(kind: Kind, stats: &Counters) {
    match kind {
        Kind::Established => stats.accepts.inc(),
        Kind::Rejected { .. } | Kind::Failed { .. } => stats.connect_failures.inc(),
        Kind::ConnectRequest | Kind::Replied | Kind::Disconnected | Kind::DisconnectDone => {}
    }
}

//! The connection counters of `OID_NDK_STATISTICS` ("RDMA Activity" in
//! Performance Monitor) that only the device's commands and events show:
//! connections established each way, attempts that failed, established
//! connections that failed, completion-queue errors. The device wrapper
//! ([`super::counted_device`]) counts them as commands return and as
//! events pass to the provider; byte and frame counts come from the
//! transport and the active-connection count from the provider's tables
//! ([`super::ndk::counters`]).

use core::sync::atomic::{AtomicU64, Ordering};

use hwq::device::CmEvent;

/// Cumulative counts since the device was created.
#[derive(Debug, Default)]
pub struct NdkCounters {
    /// Outbound connections established (`NdkCompleteConnect` made the
    /// device send its ready-to-use).
    connect: AtomicU64,
    /// Inbound connections established (the initiator completed the
    /// handshake of a connection we accepted).
    accept: AtomicU64,
    /// Connection attempts that failed: refused by the peer (or nobody
    /// listening), abandoned or timed out in the handshake, on either
    /// side, or refused by the device before anything was sent.
    connect_failure: AtomicU64,
    /// Established connections that failed: a QP the device put in the
    /// error state (retries exhausted, a remote access or operation
    /// error). Graceful disconnects do not count.
    connection_error: AtomicU64,
    /// Completion queues that overflowed (after which they accept nothing).
    cq_error: AtomicU64,
}

/// A copy of the counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterValues {
    /// See [`NdkCounters`].
    pub connect: u64,
    /// See [`NdkCounters`].
    pub accept: u64,
    /// See [`NdkCounters`].
    pub connect_failure: u64,
    /// See [`NdkCounters`].
    pub connection_error: u64,
    /// See [`NdkCounters`].
    pub cq_error: u64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl NdkCounters {
    /// The active side's handshake completed.
    pub fn connected(&self) {
        bump(&self.connect);
    }

    /// An attempt failed before anything reached the wire.
    pub fn connect_refused(&self) {
        bump(&self.connect_failure);
    }

    /// Counts what a device event says about connections and CQs.
    pub fn cm_event(&self, event: &CmEvent<'_>) {
        match event {
            CmEvent::Established { .. } => bump(&self.accept),
            CmEvent::Rejected { .. } | CmEvent::Failed { .. } => bump(&self.connect_failure),
            CmEvent::ConnectRequest { .. }
            | CmEvent::Replied { .. }
            | CmEvent::Disconnected { .. }
            | CmEvent::DisconnectDone { .. } => {}
        }
    }

    /// A QP entered the error state.
    pub fn qp_error(&self) {
        bump(&self.connection_error);
    }

    /// A CQ event; an overflow is a CQ error.
    pub fn cq_event(&self, overflow: bool) {
        if overflow {
            bump(&self.cq_error);
        }
    }

    /// The counts now.
    pub fn values(&self) -> CounterValues {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterValues {
            connect: get(&self.connect),
            accept: get(&self.accept),
            connect_failure: get(&self.connect_failure),
            connection_error: get(&self.connection_error),
            cq_error: get(&self.cq_error),
        }
    }
}

//! The device's counters: what the engine, the requester, the responder
//! and the completer count, and the connection outcomes and events the
//! device reports to its event sink (the NDK statistics a driver
//! publishes), read as a snapshot ([`EngineStats`],
//! [`SoftRnic::stats`](crate::device::SoftRnic::stats)).

use core::sync::atomic::{AtomicU64, Ordering};

/// A statistics counter.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn inc_if(&self, yes: bool) {
        if yes {
            self.inc();
        }
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// The engine's live counters.
        #[derive(Debug, Default)]
        pub(crate) struct Counters {
            $(pub(crate) $name: Counter,)*
        }

        /// A snapshot of the engine's counters ([`SoftRnic::stats`](crate::device::SoftRnic::stats)).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct EngineStats {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl Counters {
            pub(crate) fn snapshot(&self) -> EngineStats {
                EngineStats { $($name: self.$name.get(),)* }
            }
        }
    };
}

counters! {
    /// Packets handed to `receive` (a train counts each of its segments).
    rx_packets,
    /// Dropped by the parser (any reason but the ICRC).
    rx_malformed,
    /// Dropped for a bad ICRC.
    rx_bad_icrc,
    /// Valid packets nobody takes: another address, no such QP, QP not
    /// connected, wrong source, foreign P_Key, UD to a non-GSI QP.
    rx_dropped,
    /// Packets handed to connection management (QP1).
    cm_packets,
    /// Datagrams transmitted.
    tx_packets,
    /// Request packets sent again (PSN below the highest sent).
    retransmitted,
    /// Retransmit timer expiries that resent (or gave up).
    timeouts,
    /// Responder: PSN sequence error NAKs sent.
    seq_naks_sent,
    /// Requester: PSN sequence error NAKs received.
    seq_naks_received,
    /// Requester: go-back-N restarts caused by a sequence NAK.
    seq_nak_retries,
    /// Responder: RNR NAKs sent.
    rnr_naks_sent,
    /// Requester: RNR NAKs received.
    rnr_naks_received,
    /// Responder: invalid request / remote access / remote operational NAKs sent.
    fatal_naks_sent,
    /// Requester: such NAKs received.
    fatal_naks_received,
    /// Responder: requests with a PSN already executed.
    duplicates,
    /// Responder: requests ahead of the expected PSN (dropped).
    out_of_sequence,
    /// Responder: READs answered again from a saved resource.
    read_replays,
    /// Responder: READ response packets sent (a train counts its segments).
    read_responses_sent,
    /// Train segments not placed because the sender's key died while they
    /// were in flight (lost: the transport sends them again).
    train_segments_lost,
    /// Requester: retries because a READ response was missing.
    read_gap_retries,
    /// Requester: responses older than the oldest unacknowledged PSN.
    stale_responses,
    /// Requester: ACKs for PSNs never sent.
    ghost_acks,
    /// Requester: READ responses of the wrong length or position.
    bad_responses,
    /// Responder: requests refused by a key, range, PD or access check.
    remote_access_refused,
    /// Responder: replays of an executed READ refused because its key was
    /// invalidated after execution (a non-fatal NAK).
    stale_read_refusals,
    /// Responder: duplicate READ requests the running response stream
    /// still covers (not restarted).
    read_replays_skipped,
    /// Responder: ACKs of a lone SEND held for the answer.
    acks_held,
    /// Responder: ACKs (held or coalesced) sent behind the QP's own
    /// requests instead of alone.
    acks_joined,
    /// Recorded packets not sent: their source key stopped granting the
    /// read before the runtime took them (a requester's fails its work
    /// request with `LocalProtection`; a READ response is sent again when
    /// the requester asks again).
    tx_source_gone,
    /// Packets the runtime could not send and never will (larger than the
    /// path carries, refused by the host:
    /// [`SoftRnic::send_failed`](crate::device::SoftRnic::send_failed));
    /// each moved the QP that sent it to error.
    tx_failed,
    /// Packets that go whatever the outbox's room (fatal and stale-READ
    /// NAKs, READ responses ahead of an invalidation, connection
    /// management's MADs) dropped because the outbox was full, as a full
    /// wire may drop them.
    tx_outbox_full,
    /// QPs parked because their outbox had no room for their next packet
    /// (the runtime took none for a while; each resumed where it stopped:
    /// nothing was lost or resent).
    tx_stalls,
    /// Transmit turns that emptied an outbox and found parked QPs
    /// ([`crate::transmit`]).
    tx_resumes,
    /// Outbound connections established: `cm_establish` succeeded (the
    /// ready-to-use went out).
    connects,
    /// Inbound connections established: `Established` events reported
    /// (the initiator completed the handshake of a connection we
    /// accepted).
    accepts,
    /// Connection attempts that failed: `cm_connect` refused before
    /// anything was sent, and `Rejected` or `Failed` events reported
    /// (refused by the peer or nobody listening, abandoned or timed out
    /// in the handshake, on either side).
    connect_failures,
    /// QP error events reported: established connections that failed (a
    /// QP the device put in the error state: retries exhausted, a remote
    /// access or operation error). Graceful disconnects do not count.
    qp_errors,
    /// CQ overflow events reported (after which the CQ accepts nothing).
    cq_overflows,
}

//! Reliable-Connection queue pairs: state shared by the requester (sends
//! the SQ's work), the responder (executes the peer's requests) and the
//! completer (matches ACKs and read responses to SQ work), as Linux rxe
//! splits the engine.
//!
//! * `requester` — takes SQ WQEs in order, executes local operations,
//!   segments messages into packets, go-back-N retransmission.
//! * `completer` — ACKs, NAKs and READ responses: placement of READ data
//!   (selective: only holes are asked for again), in-order completion of
//!   SQ work, retry and RNR timers.
//! * `responder` — the peer's requests: PSN and opcode-sequence checks,
//!   receive consumption, key checks, placement, READ responses (with replay
//!   from saved resources), ACK coalescing.
//! * `checks` — the responder's checks of a request, one function each
//!   (PSN, opcode sequence, length, DMA length, remote key), each bumping
//!   its own counter.
//! * `timers` — the connection's ACK, RNR and retransmit timers in one
//!   table; `on_timers` runs the due ones.
//! * `flush` — moving a QP to error.
//!
//! * `context` — `Context`, all the state machines see of their device:
//!   memory and keys, counters, CQs and SRQs (and the events they raise),
//!   the send doorbells, the outbox, the transmitter, and the time.
//!   Nothing here names the device.
//!
//! All of it runs under the QP's table lock, called by the engine
//! ([`crate::engine`]), which builds the `Context`; nothing here
//! allocates after `Connection::new`. Nothing here puts a packet on the
//! link: what the state machines send is recorded in the context's
//! outbox ([`crate::outbox`]), which the engine drains after it let the
//! QP go.

mod checks;
mod completer;
mod context;
mod flush;
mod read_window;
mod reliability;
mod requester;
mod responder;
mod timers;

use alloc::vec::Vec;
use core::net::SocketAddr;

use hwq::{Consumer, CqeStatus, RecvWqe, SendWqe};

use crate::wire::{IpUdpFields, Pmtu, ROCEV2_PORT, RnrTimer};

pub(crate) use completer::{
    on_read_train, on_response, on_retransmit_timer, on_rnr_timer, on_send_failure, on_source_gone,
};
pub(crate) use context::Context;
pub use flush::flush;
pub use reliability::{MAX_ACK_TIMEOUT_US, MIN_ACK_TIMEOUT_US, Negotiated, ib_timeout_us};
pub(crate) use responder::{flush_held_ack, on_ack_timer, on_request};
use timers::{Timer, Timers};

/// The QP must enter the error state (any error CQE is already written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fatal;

/// Runs the send side of QP `qpn` (queued READ responses, then the
/// requester) for at most `budget` packets; returns whether more is ready.
pub(crate) fn run_send_side(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair, budget: u32) -> bool {
    match qp.state {
        QpState::Init => return false,
        QpState::Error => {
            // Work posted after the error completes as flushed.
            let (s, r) = (qp.send_cqn, qp.recv_cqn);
            flush(
                qp,
                qpn,
                |c| _ = cx.complete(s, c, true),
                |c| _ = cx.complete(r, c, true),
            );
            return false;
        }
        QpState::Connected => {}
    }
    // The engine holds this outbox for this QP until it drains it.
    let recorded_before = cx.out.pending();
    let result =
        responder::emit_reads(cx, qpn, qp, (budget / 2).max(1)).and_then(|more_responses| {
            let used = if more_responses {
                (budget / 2).max(1)
            } else {
                0
            };
            let more_requests =
                requester::run_requester(cx, qp, budget.saturating_sub(used).max(1))?;
            completer::complete_ready(cx, qpn, qp)?;
            if cx.out.pending() != recorded_before {
                responder::flush_held_ack(cx, qp);
            }
            Ok(more_responses || more_requests)
        });
    if let Ok(more) = result {
        more
    } else {
        cx.enter_error(qpn, qp);
        false
    }
}

/// Runs QP `qpn`'s timers that are due at `cx.now`: the ACK coalescing
/// timer, the RNR timer, the retransmit timer, in that order (each only
/// while the QP stays connected).
pub(crate) fn on_timers(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair) {
    let Some(conn) = qp.conn.as_ref() else { return };
    let due = Timer::ALL.map(|t| conn.timers.is_due(t, cx.now));
    for (timer, due) in Timer::ALL.into_iter().zip(due) {
        if !due || qp.state != QpState::Connected {
            continue;
        }
        match timer {
            Timer::Ack => on_ack_timer(cx, qp),
            Timer::Rnr => on_rnr_timer(cx, qpn, qp),
            Timer::Retransmit => on_retransmit_timer(cx, qpn, qp),
        }
    }
}

/// A QP's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created: receives may be posted, nothing is sent.
    Init,
    /// Connected: the requester and responder run.
    Connected,
    /// Failed or flushed: all work completes as flushed.
    Error,
}

/// Where a QP's receives come from.
#[derive(Debug)]
pub enum Receives {
    /// Its own receive queue.
    Own(Consumer<RecvWqe>),
    /// A shared receive queue.
    Shared(u32),
}

/// Addressing of a connected QP, fixed by connection management.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    /// The peer's RoCEv2 endpoint (its address, UDP port 4791), of the
    /// family of the QP's own address.
    pub remote: SocketAddr,
    /// The peer's QP number.
    pub remote_qpn: u32,
    /// Payload bytes per packet.
    pub pmtu: u32,
    /// First PSN we send.
    pub send_psn: u32,
    /// First PSN we expect.
    pub recv_psn: u32,
    /// RDMA READs we may have outstanding (ORD).
    pub outbound_reads: u32,
    /// RDMA READs we serve at once (IRD; the responder keeps room for
    /// the next power of two, as many as a Linux rxe peer may send).
    pub inbound_reads: u32,
}

/// Reliability parameters of the RC transport (what `modify_qp` calls
/// timeout, retry_cnt, rnr_retry and min_rnr_timer, plus the engine's own
/// windows and ACK coalescing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcConfig {
    /// Time without progress before the requester retransmits from the
    /// oldest unacknowledged PSN (microseconds, > 0). A QP connected by
    /// connection management gets the negotiated one (see `follow_cm`).
    pub ack_timeout_us: u64,
    /// Retransmissions after timeouts or lost READ responses before the
    /// oldest WQE completes with `RetryExceeded` (0..=7; 7 is *not*
    /// infinite, as the IBA specifies, though Linux's rxe retries forever
    /// on 7: rxe_comp.c). Negotiated likewise.
    pub retry_count: u8,
    /// Retries after RNR NAKs before `RnrRetryExceeded` (7: infinite).
    /// Negotiated likewise.
    pub rnr_retry: u8,
    /// Whether a QP connected by connection management takes the
    /// retransmit timeout and retry counts it negotiated
    /// ([`Negotiated`]) in place of the three above, as Linux's IB CM sets
    /// a QP's (true by default). False keeps this configuration's, as a
    /// Linux consumer's `rdma_set_ack_timeout` does (tests use it for
    /// millisecond timers).
    pub follow_cm: bool,
    /// The RNR timer this QP's responder asks the peer to wait.
    pub min_rnr_timer: RnrTimer,
    /// Most PSNs the requester keeps unacknowledged.
    pub max_unacked_psns: u32,
    /// The requester sets AckReq at least every this many packets (and on
    /// the last packet of every message).
    pub ack_req_every: u32,
    /// The responder ACKs after this many unacknowledged packets even
    /// without AckReq...
    pub ack_coalesce: u32,
    /// ...or this many microseconds after the first of them.
    pub ack_delay_us: u64,
    /// The ACK a lone SEND asks for may wait this many microseconds (0:
    /// never) for the requester of the same QP to send, on a QP that has
    /// been sending: the consumer of a SEND often answers at once, and the
    /// ACK then leaves in the same transmit batch. A hold that times out
    /// stops holding until the requester sends again.
    pub ack_defer_us: u64,
}

impl RcConfig {
    /// The retransmit timeout after `expiries` consecutive timeouts without
    /// progress: `ack_timeout_us`, doubled per expiry (as TCP backs off its
    /// RTO) up to [`BACKOFF_CEILING_US`] or the base itself if that is
    /// larger, at most 128 times. A single loss is recovered after the
    /// base timeout, while a peer that is merely slow to be scheduled (a
    /// loaded host, a debugger, valgrind) gets seconds before the request
    /// fails with `RetryExceeded`, and each expiry's go-back-N resends the
    /// window less often. (Linux's rxe re-arms the same timeout on every
    /// expiry; the backoff is ours alone and invisible to the peer.)
    pub fn retransmit_timeout_us(&self, expiries: u8) -> u64 {
        let ceiling = self.ack_timeout_us.max(BACKOFF_CEILING_US);
        self.ack_timeout_us
            .saturating_mul(1 << expiries.min(7))
            .min(ceiling)
    }
}

impl Default for RcConfig {
    fn default() -> Self {
        Self {
            ack_timeout_us: 8_000,
            retry_count: 7,
            rnr_retry: 7,
            follow_cm: true,
            // 640 µs: short timers cause RNR storms (research note §3.2).
            min_rnr_timer: RnrTimer::at_least(640),
            max_unacked_psns: 256,
            ack_req_every: 32,
            ack_coalesce: 16,
            ack_delay_us: 100,
            ack_defer_us: 0,
        }
    }
}

/// Where the retransmit timeout's doubling stops (µs): 8 ms doubled seven
/// times, the ceiling of the fixed 8 ms start rsndk had before the
/// timeout was negotiated.
pub const BACKOFF_CEILING_US: u64 = 1_024_000;

/// What a started SQ WQE is, for the completer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum MetaKind {
    /// Not started.
    #[default]
    None,
    /// A SEND or RDMA WRITE on the wire.
    SendWrite,
    /// An RDMA READ on the wire.
    Read,
    /// Finished without the wire (local operation, or a wire operation
    /// refused before its first packet): completes with this status when it
    /// becomes the oldest.
    Done(CqeStatus),
}

/// Per-SQ-slot facts the completer needs: the PSNs a WQE occupies.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WqeMeta {
    pub first_psn: u32,
    /// PSNs occupied (0 for `Done`).
    pub npsn: u32,
    /// Message bytes.
    pub len: u32,
    pub kind: MetaKind,
}

/// Requester and completer state.
#[derive(Debug)]
pub(crate) struct Requester {
    /// Indexed by SQ index & `mask`.
    pub metas: Vec<WqeMeta>,
    pub mask: u32,
    /// First SQ index never started.
    pub start_index: u32,
    /// SQ index of the WQE the next packet belongs to (≤ `start_index`).
    pub send_index: u32,
    /// PSN of the next packet to send.
    pub next_psn: u32,
    /// PSN the next started WQE gets.
    pub alloc_psn: u32,
    /// One past the highest PSN ever sent.
    pub sent_hi: u32,
    /// Oldest PSN not yet acknowledged (or, in a READ, not yet received).
    pub una: u32,
    /// SQ index of the WQE holding `una` (`start_index` if none).
    pub una_index: u32,
    /// READs started and not completed (ORD use).
    pub reads_outstanding: u32,
    /// A WQE failed before the wire: start nothing after it.
    pub halted: bool,
    pub retry_left: u8,
    pub rnr_left: u8,
    /// `una` at which a fast retry (lost READ response, PSN sequence NAK)
    /// already started, so a burst of them (or the rest of a READ stream
    /// still arriving after the hole) starts only one.
    pub retry_at: Option<u32>,
    /// Responses of the READ at `una_index` placed past `una`.
    pub read_window: read_window::ReadWindow,
    /// Responses placed past `una` since it last moved.
    pub ooo_responses: u32,
    /// Every PSN before this was acknowledged by the responder (READ data
    /// may still be missing).
    pub acked_hi: u32,
    /// Packets sent since the last AckReq.
    pub since_ack_req: u32,
    /// Congestion window (PSNs): halved by every retry, grown by one per
    /// acknowledgement that makes progress, at most `max_unacked_psns`.
    /// Go-back-N resends everything after a loss, so a smaller window under
    /// loss wastes far fewer packets.
    pub cwnd: u32,
}

/// A message the responder is in the middle of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InMessage {
    None,
    /// A SEND: bytes placed so far into the held receive.
    Send {
        offset: u64,
    },
    /// A WRITE: its RETH and bytes placed so far.
    Write {
        va: u64,
        rkey: u32,
        len: u32,
        offset: u32,
    },
}

/// A saved RDMA READ (an IRD resource): enough to emit and replay its
/// responses.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadResource {
    pub first_psn: u32,
    pub npsn: u32,
    pub va: u64,
    pub rkey: u32,
    pub len: u32,
    /// Responses remain to be emitted.
    pub active: bool,
    /// PSN of the request that (re)started emission: its response is
    /// First or Only.
    pub start_psn: u32,
    /// Next response PSN to emit.
    pub next_psn: u32,
    /// One past the last PSN of the running stream (the READ's end, or
    /// the end of a hole a duplicate request asked for).
    pub end_psn: u32,
    /// Responses a hole replay interrupted, emitted after it
    /// (`cont_next == cont_end`: none).
    pub cont_next: u32,
    pub cont_end: u32,
    /// Holds a request (not just default-initialised).
    pub valid: bool,
    /// Emission was (re)started by a duplicate request: the READ was
    /// executed once already, so a key that fails now was invalidated
    /// after that execution and the refusal must not be fatal.
    pub replay: bool,
}

/// A response the responder owes, sent after queued READ responses so a
/// requester never sees an ACK ahead of READ data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owed {
    None,
    /// ACK at `ack_psn`: everything up to the last SEND or WRITE packet
    /// executed.
    Ack,
    /// PSN sequence error NAK at `epsn`.
    SeqNak,
    /// RNR NAK at `epsn` (no receive posted).
    Rnr,
}

/// Responder state.
#[derive(Debug)]
pub(crate) struct Responder {
    /// Expected PSN.
    pub epsn: u32,
    /// The PSN an ACK names: the last SEND or WRITE packet executed (one
    /// before the first PSN while there is none). Never a READ's: its
    /// responses acknowledge it, and an ACK naming a READ tells Linux rxe
    /// that the READ completed, without its data (rxe_comp.c completes a
    /// pending READ whose last PSN an ACK carries), as rxe's own responder
    /// never does (its `ack_psn`).
    pub ack_psn: u32,
    /// Message sequence number (24 bits).
    pub msn: u32,
    /// A PSN sequence error (or RNR) NAK was sent: drop out-of-order
    /// packets silently until the expected one arrives.
    pub nak_sent: bool,
    pub msg: InMessage,
    /// The receive the current SEND lands in (taken at its first packet).
    pub recv: Option<RecvWqe>,
    /// Taken from the SRQ (the flush must complete it), as opposed to still
    /// at the head of the own RQ.
    pub recv_from_srq: bool,
    /// Solicited bit seen on the message.
    pub unacked: u32,
    /// The requester of this QP sends, and no held ACK timed out since:
    /// the ACK of a lone SEND is worth holding for an answer.
    pub answers: bool,
    pub owed: Owed,
    pub reads: Vec<ReadResource>,
    /// Ring position of the newest resource.
    pub read_newest: usize,
    /// Ring position emission continues from.
    pub emit_head: usize,
    pub active_reads: u32,
}

/// Everything a connected QP needs, allocated once by `connect_qp`.
#[derive(Debug)]
pub(crate) struct Connection {
    pub path: Path,
    pub pmtu: Pmtu,
    pub rc: RcConfig,
    /// IP/UDP facts of every packet we send.
    pub ip: IpUdpFields,
    /// A fast registration's page list, as read from host memory.
    pub page_bytes: Vec<u8>,
    /// Page-list scratch for fast registration.
    pub pages: Vec<u64>,
    pub req: Requester,
    pub resp: Responder,
    /// The ACK, RNR and retransmit timers.
    pub timers: Timers,
    /// Its outbox had no room for this QP's next packet: it stopped there,
    /// and the engine parks it until a transmit turn makes room
    /// ([`QueuePair::take_tx_stall`]).
    pub tx_stalled: bool,
}

/// The UDP source port of QP `local_qpn` connected to `remote_qpn`: a
/// fixed port per connection in 0xC000..=0xFFFF, so a connection's packets
/// stay on one ECMP path (in order) while connections spread (RoCEv2 leaves
/// the source port to the sender; rxe derives it from the QPN likewise).
pub(crate) fn entropy_port(local_qpn: u32, remote_qpn: u32) -> u16 {
    let key = (u64::from(local_qpn) << 32) | u64::from(remote_qpn);
    let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 50;
    0xC000 | (h as u16 & 0x3FFF)
}

/// Smallest congestion window (PSNs).
pub(crate) const MIN_CWND: u32 = 8;

/// Longest fast-register page list (read through `page_bytes`, 8 bytes a
/// page).
pub(crate) const MAX_FR_PAGES: usize = 512;

impl Connection {
    /// Allocates a connection for an SQ of `sq_depth` slots from `local`
    /// (of the path's family). `None` when memory ran out or the families
    /// differ.
    pub(crate) fn new(
        local: core::net::IpAddr,
        path: Path,
        pmtu: Pmtu,
        rc: RcConfig,
        sq_depth: u32,
    ) -> Option<Self> {
        let slots = sq_depth.max(1).next_power_of_two();
        let mut metas = Vec::new();
        metas.try_reserve_exact(slots as usize).ok()?;
        metas.resize(slots as usize, WqeMeta::default());
        let mut page_bytes = Vec::new();
        page_bytes.try_reserve_exact(MAX_FR_PAGES * 8).ok()?;
        page_bytes.resize(MAX_FR_PAGES * 8, 0);
        let mut pages = Vec::new();
        pages.try_reserve_exact(MAX_FR_PAGES).ok()?;
        let mut reads = Vec::new();
        // Room for IRD rounded up to a power of two: Linux's rxe rounds
        // its requester's ORD up so (rxe_qp_from_attr: max_rd_atomic =
        // roundup_pow_of_two), so a peer told IRD 3 may have 4 READs
        // outstanding, which must not fail the connection. 0 stays 0.
        let ird = if path.inbound_reads == 0 {
            0
        } else {
            path.inbound_reads.next_power_of_two() as usize
        };
        reads.try_reserve_exact(ird).ok()?;
        reads.resize(ird, ReadResource::default());
        let send_psn = path.send_psn & crate::wire::PSN_MASK;
        let ip = IpUdpFields::between(SocketAddr::new(local, ROCEV2_PORT), path.remote)?;
        Some(Self {
            path,
            pmtu,
            rc,
            ip,
            page_bytes,
            pages,
            req: Requester {
                metas,
                mask: slots - 1,
                start_index: 0,
                send_index: 0,
                next_psn: send_psn,
                alloc_psn: send_psn,
                sent_hi: send_psn,
                una: send_psn,
                una_index: 0,
                reads_outstanding: 0,
                halted: false,
                retry_left: rc.retry_count,
                rnr_left: rc.rnr_retry,
                retry_at: None,
                read_window: read_window::ReadWindow::default(),
                ooo_responses: 0,
                acked_hi: send_psn,
                since_ack_req: 0,
                cwnd: rc.max_unacked_psns.max(MIN_CWND),
            },
            resp: Responder {
                epsn: path.recv_psn & crate::wire::PSN_MASK,
                ack_psn: crate::wire::psn_sub(path.recv_psn, 1),
                msn: 0,
                nak_sent: false,
                msg: InMessage::None,
                recv: None,
                recv_from_srq: false,
                unacked: 0,
                answers: false,
                owed: Owed::None,
                reads,
                read_newest: ird.saturating_sub(1),
                emit_head: 0,
                active_reads: 0,
            },
            timers: Timers::default(),
            tx_stalled: false,
        })
    }

    /// Whether the outbox takes this QP's next packet; if not, the QP
    /// notes that it stopped for want of room (the engine parks it until a
    /// transmit turn empties an outbox, [`crate::transmit`]). Asked before
    /// a packet is built, so a stop leaves every sequence number and timer
    /// as it was.
    pub(crate) fn outbox_has_room(&mut self, cx: &Context<'_>) -> bool {
        let room = cx.out.has_room();
        self.tx_stalled |= !room;
        room
    }

    /// The earliest timer of this connection.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.timers.next()
    }
}

/// A queue pair.
#[derive(Debug)]
pub struct QueuePair {
    /// Protection domain.
    pub pd: u32,
    /// CQ for send-queue completions.
    pub send_cqn: u32,
    /// CQ for receive completions.
    pub recv_cqn: u32,
    /// The send queue.
    pub sq: Consumer<SendWqe>,
    /// Receive buffers.
    pub rq: Receives,
    /// Echoed in every CQE.
    pub context: u64,
    /// Lifecycle state.
    pub state: QpState,
    /// Set once connected.
    pub path: Option<Path>,
    /// Reliability parameters set for this QP before it connected (else
    /// the device's defaults apply).
    pub(crate) rc_override: Option<RcConfig>,
    /// Transport state, once connected.
    pub(crate) conn: Option<Connection>,
}

impl QueuePair {
    /// A new QP in [`QpState::Init`].
    pub fn new(
        pd: u32,
        send_cqn: u32,
        recv_cqn: u32,
        sq: Consumer<SendWqe>,
        rq: Receives,
        context: u64,
    ) -> Self {
        Self {
            pd,
            send_cqn,
            recv_cqn,
            sq,
            rq,
            context,
            state: QpState::Init,
            path: None,
            rc_override: None,
            conn: None,
        }
    }

    /// The earliest timer of this QP, if any runs.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        if self.state != QpState::Connected {
            return None;
        }
        self.conn.as_ref().and_then(Connection::next_deadline)
    }

    /// Whether the QP stopped for want of link room since last asked
    /// (clears the note).
    pub(crate) fn take_tx_stall(&mut self) -> bool {
        self.conn
            .as_mut()
            .is_some_and(|c| core::mem::take(&mut c.tx_stalled))
    }
}

#[cfg(test)]
mod tests {
    use super::RcConfig;

    #[test]
    fn retransmit_timeout_doubles_per_expiry_up_to_128_times() {
        let rc = RcConfig {
            ack_timeout_us: 8_000,
            ..RcConfig::default()
        };
        let seq: [u64; 9] = core::array::from_fn(|i| rc.retransmit_timeout_us(i as u8));
        assert_eq!(
            seq,
            [
                8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 1_024_000, 1_024_000
            ]
        );
        assert_eq!(rc.retransmit_timeout_us(u8::MAX), 1_024_000);
    }

    #[test]
    fn a_negotiated_timeout_doubles_to_the_ceiling_or_stays_above_it() {
        let rc = RcConfig {
            ack_timeout_us: 134_217,
            ..RcConfig::default()
        };
        let seq: [u64; 5] = core::array::from_fn(|i| rc.retransmit_timeout_us(i as u8));
        assert_eq!(seq, [134_217, 268_434, 536_868, 1_024_000, 1_024_000]);
        let slow = RcConfig {
            ack_timeout_us: 2_147_483,
            ..RcConfig::default()
        };
        assert_eq!(
            slow.retransmit_timeout_us(3),
            2_147_483,
            "no doubling above it"
        );
    }
}

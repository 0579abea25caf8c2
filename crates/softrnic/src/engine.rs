//! The engine: how packets and time drive the RC transport of
//! [`SoftRnic`].
//!
//! * [`SoftRnic::receive`] — the one receive door: one [`Arrival`] (a
//!   datagram, one whose IP and UDP headers its receiver checked, a
//!   socket's UDP payload, or a train), at the time its runtime passes
//!   in: parsed once, from where its receiver left off (malformed or
//!   bad-ICRC datagrams are counted and dropped), demultiplexed by the BTH destination QP to connection
//!   management (QP1), the responder (requests) or the completer (ACKs,
//!   NAKs, READ responses). ACKs and the first READ responses are
//!   recorded before the call returns, for the runtime to take once it has
//!   handed in its batch (but see [`crate::qp::RcConfig::ack_defer_us`]).
//! * [`SoftRnic::poll`] — the deferred work, at the time its runtime
//!   passes in: requesters of QPs whose
//!   doorbell rang (a bitset drained each pass; at most [`POLL_BUDGET`]
//!   packets per QP per pass, so one QP cannot starve the others), queued
//!   READ responses, the retransmit, RNR and ACK-coalescing timers, CQ
//!   moderation ticks, then event delivery with no lock held.
//!   [`SoftRnic::next_timer_us`] tells a host thread how long it may sleep.
//! * Transmit backpressure — the runtime takes what the device sends
//!   ([`crate::transmit`]); a runtime without room takes nothing, and a QP
//!   whose outbox then has no room for its next packet stops before
//!   building it and is parked (off the ready set, so passes do not spin
//!   on it). A transmit turn that empties an outbox puts every parked QP
//!   back on the ready set (`SoftRnic::resume_parked`); each goes on
//!   exactly where it stopped. The QP's outbox is held while it parks, so
//!   no turn empties it in between.
//! * [`SoftRnic::connect_qp`] — the modify-to-RTS command.
//!
//! The engine builds the QPs' view of the device, a `qp::Context`
//! (memory, counters, CQs and SRQs, events, doorbells, the QP's outbox,
//! the transmitter, and the time the runtime passed in with the arrival or
//! pass), and hands it with the locked QP to the state machines of
//! [`crate::qp`]; QP1's packets go to [`crate::cm`], which reaches the
//! device through the `cm::Host` trait implemented here.
//!
//! ## Where packets are recorded
//!
//! Every run of a QP's state machines that may send goes through
//! `SoftRnic::with_qp`: it locks the QP's outbox ([`crate::outbox`]; QP
//! `n` has QP outbox `n % 4`), then the QP's table slot; the state
//! machines record what they send in the outbox, in order; the slot and
//! then the outbox are let go, and the packets wait for the runtime's
//! transmit turn, which builds segments from registered memory as it takes
//! them (their keys checked then, the one check after the WQE's start). No packet leaves while a QP slot is
//! held. Holding the outbox across the QP's work keeps one QP's packets in
//! the order its state machines produced them whichever thread runs it.
//! The completer, which sends nothing, runs with a sealed outbox that has
//! no room, locking none. Connection management's MADs (QP1, no slot) are
//! recorded in an outbox of their own, and the engine is woken so its
//! runtime takes them.
//!
//! Doorbells never process inline and events are never delivered while a
//! device lock is held. A consumer polling an empty CQ may run a pass
//! without event delivery on its own processor (`pass.rs`), when its
//! runtime says so. Lock order: outbox → QP slot → SRQ → CQ → keys; a
//! transmit turn takes an outbox, then the key table while it builds a
//! segment.
//!
//! ## UDP source port, IPv4 identification and the ICRC
//!
//! Every packet is built as a whole IP datagram of its connection's family
//! (from the connection's own address, one of the device's): IPv4 with DF
//! set, TTL 64, TOS 0 and the identification of its PSN
//! ([`crate::wire::ipv4_ident`]: the engine chooses it, the ICRC covers
//! it, so a link must put that header on the wire as it is), or IPv6 with
//! traffic class and flow label 0 and hop limit 64; UDP source port 4791
//! and destination port the path's (4791). With
//! [`crate::device::DeviceConfig::per_qp_source_port`] (links that carry
//! whole datagrams) a connected QP's packets leave from its own port in
//! 0xC000..=0xFFFF instead, for ECMP entropy.
//!
//! A received packet's ICRC is checked against the header it arrived
//! with, never a stand-in: [`Arrival::Datagram`] and [`Arrival::Checked`]
//! are whole datagrams; [`Arrival::UdpPayload`] is what an IPv6 UDP
//! socket delivers (the socket addresses and the payload are every field the
//! IPv6 ICRC covers: the traffic class, flow label and hop limit are
//! masked, the payload length and next header follow from a RoCEv2
//! datagram's having no extension headers) and refuses IPv4, whose
//! covered identification and flags no UDP socket sees.

use core::net::{IpAddr, SocketAddr};
use core::sync::atomic::Ordering;

use hwq::device::DeviceError;

use crate::arrival::Arrival;
use crate::device::{FIRST_QPN, SoftRnic};
use crate::engine_state::Engine;
use crate::outbox::{Outbox, Recorded};
use crate::qp::{self, Connection, Negotiated, Path, QpState, QueuePair, RcConfig};
pub use crate::stats::EngineStats;
use crate::train::{Arrived, Train};
use crate::wire::{self, GSI_QPN, IpUdpFields, Operation, Packet, ParseError, Pmtu, QPN_MASK};

/// Packets one QP may send in one [`SoftRnic::poll`] pass.
pub const POLL_BUDGET: u32 = 64;

/// Interval of CQ moderation ticks while a moderation timer runs (µs).
const CQ_TICK_US: u64 = 10;

/// A connected QP's PSNs ([`SoftRnic::qp_psns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpPsns {
    /// The next PSN its requester sends.
    pub send: u32,
    /// The next PSN its responder expects.
    pub recv: u32,
}

/// Whether a QP took a received packet.
#[derive(PartialEq)]
enum Taken {
    Yes,
    No,
    /// Created, not connected yet: maybe the RTU was lost.
    Unconnected,
}

impl SoftRnic {
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine's counters.
    pub fn stats(&self) -> EngineStats {
        self.engine.stats.snapshot()
    }

    /// Sets the reliability parameters QPs get when they connect.
    pub fn set_default_rc_config(&self, rc: RcConfig) {
        *self.engine.defaults.write() = rc;
    }

    /// Sets one QP's reliability parameters (before or after it connects).
    pub fn set_qp_rc_config(&self, qpn: u32, rc: RcConfig) -> Result<(), DeviceError> {
        self.qps
            .with(qpn, |qp| {
                qp.rc_override = Some(rc);
                if let Some(conn) = qp.conn.as_mut() {
                    conn.rc = rc;
                    conn.req.retry_left = rc.retry_count;
                    conn.req.rnr_left = rc.rnr_retry;
                }
            })
            .ok_or(DeviceError::NoSuchObject)
    }

    /// A QP's state, if it exists.
    pub fn qp_state(&self, qpn: u32) -> Option<QpState> {
        self.qps.with(qpn, |qp| qp.state)
    }

    /// The PSN QP `qpn`'s requester sends next and the one its responder
    /// expects next (what rxe's query_qp reports as sq_psn and rq_psn), if
    /// it is connected; right after connecting, its starting PSNs.
    pub fn qp_psns(&self, qpn: u32) -> Option<QpPsns> {
        self.qps.with(qpn, |qp| {
            qp.conn.as_ref().map(|c| QpPsns {
                send: c.req.next_psn,
                recv: c.resp.epsn,
            })
        })?
    }

    /// The reliability parameters QP `qpn` runs with, if it is connected
    /// (connection management's negotiation applied).
    pub fn qp_rc_config(&self, qpn: u32) -> Option<RcConfig> {
        self.qps.with(qpn, |qp| qp.conn.as_ref().map(|c| c.rc))?
    }

    /// Connects QP `qpn` (the modify-to-RTS command connection management
    /// issues): sets its path, PSNs, PMTU and read limits, allocates its
    /// packet buffer and IRD resources, and starts its requester (WQEs
    /// posted before connecting go out now). Its own address is the one
    /// of the device's addresses the remote's family picks
    /// ([`crate::addresses::AddressSet::source_for`]; `InvalidAddress` if
    /// there is none). May allocate.
    pub fn connect_qp(&self, qpn: u32, path: Path) -> Result<(), DeviceError> {
        let local = self
            .addresses
            .read()
            .source_for(path.remote.ip())
            .ok_or(DeviceError::InvalidAddress)?;
        self.connect_qp_at(qpn, local, path, None)
    }

    /// [`SoftRnic::connect_qp`] from `local`, which must be one of the
    /// device's addresses, of the remote's family (`InvalidAddress`).
    pub fn connect_qp_from(&self, qpn: u32, local: IpAddr, path: Path) -> Result<(), DeviceError> {
        if !self.has_address(local) {
            return Err(DeviceError::InvalidAddress);
        }
        self.connect_qp_at(qpn, local, path, None)
    }

    /// Connects QP `qpn` from `local` (of the remote's family) whether or
    /// not it is one of the device's addresses now: connection management
    /// connects a connection whose address was removed during its
    /// handshake all the same (it receives nothing until the address is
    /// back). `negotiated` is what connection management agreed on for
    /// the QP's reliability, applied over its configuration
    /// ([`RcConfig::negotiated`]).
    pub(crate) fn connect_qp_at(
        &self,
        qpn: u32,
        local: IpAddr,
        path: Path,
        negotiated: Option<Negotiated>,
    ) -> Result<(), DeviceError> {
        let pmtu = Pmtu::from_bytes(path.pmtu)
            .filter(|p| p.bytes() <= self.config().pmtu)
            .ok_or(DeviceError::InvalidParameter)?;
        let caps = self.config().caps();
        if path.remote_qpn > QPN_MASK
            || path.remote_qpn < FIRST_QPN
            || path.outbound_reads > caps.max_outbound_reads
            || path.inbound_reads > caps.max_inbound_reads
        {
            return Err(DeviceError::InvalidParameter);
        }
        let (depth, rc, state) = self
            .qps
            .with(qpn, |qp| (qp.sq.depth(), qp.rc_override, qp.state))
            .ok_or(DeviceError::NoSuchObject)?;
        if state != QpState::Init {
            return Err(DeviceError::InvalidState);
        }
        if local.is_ipv4() != path.remote.is_ipv4() {
            return Err(DeviceError::InvalidAddress);
        }
        let rc = rc.unwrap_or(*self.engine.defaults.read());
        let rc = negotiated.map_or(rc, |n| rc.negotiated(n));
        let mut conn =
            Connection::new(local, path, pmtu, rc, depth).ok_or(DeviceError::NoResources)?;
        if self.config().per_qp_source_port {
            conn.ip.set_src_port(qp::entropy_port(qpn, path.remote_qpn));
        }
        self.qps
            .with(qpn, move |qp| {
                if qp.state != QpState::Init {
                    return Err(DeviceError::InvalidState);
                }
                let first = qp.sq.released();
                conn.req.start_index = first;
                conn.req.send_index = first;
                conn.req.una_index = first;
                qp.conn = Some(conn);
                qp.path = Some(path);
                qp.state = QpState::Connected;
                Ok(())
            })
            .ok_or(DeviceError::NoSuchObject)??;
        self.ring_sq(qpn);
        Ok(())
    }

    /// The device's one receive door: hands one [`Arrival`] to the engine
    /// at time `now` (µs, the runtime's monotonic clock). It is parsed
    /// once, from where its receiver left off (a [`Arrival::Checked`]
    /// datagram from its BTH, its headers' ICRC part carried with it), and
    /// dispatched; a malformed or bad-ICRC datagram is counted and
    /// dropped. Never panics, whatever the bytes. A runtime that captures
    /// shows it first (the `links` crate's capture wrapper). What
    /// it sends in answer waits for the runtime's transmit turn
    /// ([`crate::transmit`]).
    pub fn receive(&self, now: u64, arrival: Arrival<'_>) {
        match arrival {
            Arrival::Datagram(datagram) => self.dispatch(now, wire::parse(datagram)),
            Arrival::Checked(datagram) => self.dispatch(now, wire::parse_checked(&datagram)),
            Arrival::UdpPayload { src, dst, payload } => {
                self.arrive_udp_payload(now, src, dst, payload);
            }
            Arrival::Train(train) => self.arrive_train(now, train),
        }
    }

    /// A UDP payload as an IPv6 socket delivers it from `src` to `dst`: the
    /// ICRC is checked over the IPv6 and UDP headers those give (see the
    /// module docs). An IPv4 payload (its identification unknown) or a
    /// mixed pair counts as malformed and is dropped.
    fn arrive_udp_payload(&self, now: u64, src: SocketAddr, dst: SocketAddr, payload: &[u8]) {
        let fields = IpUdpFields::between(src, dst).filter(|f| f.as_v6().is_some());
        let Some(fields) = fields else {
            self.engine.stats.rx_packets.inc();
            return self.engine.stats.rx_malformed.inc();
        };
        self.dispatch(now, wire::parse_udp_payload(&fields, payload));
    }

    /// A train ([`crate::train`]): each segment meets the checks its
    /// packet would, and is placed straight from the sender's memory.
    fn arrive_train(&self, now: u64, train: &Train) {
        let stats = &self.engine.stats;
        let n = u64::from(train.segments());
        stats.rx_packets.add(n);
        if !self.has_address(train.dst()) {
            return stats.rx_dropped.add(n);
        }
        let request = !train.is_read_response();
        let now = self.engine.advance_to(now);
        let (src, dst) = (train.src(), train.dst());
        if !self.deliver_to_qp(
            now,
            train.dest_qp(),
            src,
            dst,
            request,
            Arrived::Train(train),
        ) {
            stats.rx_dropped.add(n);
        }
    }

    fn dispatch(&self, now: u64, parsed: Result<Packet<'_>, ParseError>) {
        let stats = &self.engine.stats;
        stats.rx_packets.inc();
        let p = match parsed {
            Ok(p) => p,
            Err(ParseError::BadIcrc) => return stats.rx_bad_icrc.inc(),
            Err(_) => return stats.rx_malformed.inc(),
        };
        if !self.has_address(p.ip.dst()) {
            return stats.rx_dropped.inc();
        }
        let qpn = p.bth.dest_qp;
        let now = self.engine.advance_to(now);
        if qpn == GSI_QPN {
            stats.cm_packets.inc();
            crate::cm::receive(self, &p, now);
            return;
        }
        let op = p.info.operation;
        if p.bth.pkey & 0x7FFF != 0x7FFF || op == Operation::UdSend {
            return stats.rx_dropped.inc();
        }
        let (src, dst) = (p.ip.src(), p.ip.dst());
        if !self.deliver_to_qp(now, qpn, src, dst, op.is_request(), Arrived::Packet(&p)) {
            stats.rx_dropped.inc();
        }
    }

    /// Hands what arrived for QP `qpn` from `src` at `dst` (requests to the
    /// responder, responses to the completer) to the QP at time `now`;
    /// whether the QP took it.
    fn deliver_to_qp(
        &self,
        now: u64,
        qpn: u32,
        src: IpAddr,
        dst: IpAddr,
        request: bool,
        arrived: Arrived<'_>,
    ) -> bool {
        self.to_qp(now, qpn, src, dst, request, |cx, qp| match arrived {
            _ if request => qp::on_request(cx, qpn, qp, arrived),
            Arrived::Packet(p) => qp::on_response(cx, qpn, qp, p),
            Arrived::Train(train) => qp::on_read_train(cx, qpn, qp, train),
        })
    }

    /// Hands what arrived from `src` at `dst` for QP `qpn` (a `request`,
    /// or else a response) to `on`, holding the QP, if the QP is connected
    /// from `dst` to `src`; then registers its timers. Whether the QP took
    /// it.
    fn to_qp(
        &self,
        now: u64,
        qpn: u32,
        src: IpAddr,
        dst: IpAddr,
        request: bool,
        mut on: impl FnMut(&qp::Context<'_>, &mut QueuePair),
    ) -> bool {
        let mut take = || {
            let run = |cx: &qp::Context<'_>, qp: &mut QueuePair| {
                let from_peer = qp
                    .conn
                    .as_ref()
                    .is_some_and(|c| c.path.remote.ip() == src && c.ip.src() == dst);
                if qp.state == QpState::Init {
                    return Taken::Unconnected;
                }
                if qp.state != QpState::Connected || !from_peer {
                    return Taken::No;
                }
                on(cx, qp);
                self.arm_timer(qpn, qp);
                self.park_if_stalled(qpn, qp, cx.out);
                Taken::Yes
            };
            // Responses only feed the completer, which sends nothing.
            if request {
                self.with_qp(now, qpn, run)
            } else {
                self.with_qp_quiet(now, qpn, run)
            }
        };
        let mut taken = take();
        // A request before the RTU: the CM establishes the acceptor's QP
        // (with no QP lock held: the CM locks the QP's slot itself).
        if taken == Some(Taken::Unconnected)
            && request
            && crate::cm::establish_on_request(self, qpn, src)
        {
            taken = take();
        }
        taken == Some(Taken::Yes)
    }

    /// Runs `f` on QP `qpn` holding its outbox and then its table slot,
    /// with a context at `now` whose outbox is the QP's; what it recorded
    /// waits there for the runtime's transmit turn. `None` if there is no
    /// such QP.
    pub(crate) fn with_qp<R>(
        &self,
        now: u64,
        qpn: u32,
        f: impl FnOnce(&qp::Context<'_>, &mut QueuePair) -> R,
    ) -> Option<R> {
        let outbox = self.engine.outbox(qpn).lock();
        let cx = self.transport(now, &outbox);
        let r = self.qps.with(qpn, |qp| f(&cx, qp));
        if outbox.pending() > 0 {
            self.engine.note_recorded(1 << Engine::outbox_of(qpn));
        }
        r
    }

    /// [`SoftRnic::with_qp`] for work that sends nothing (the completer
    /// taking ACKs, NAKs and READ responses): its context's outbox is
    /// sealed, so no outbox is locked; a state machine that would send
    /// finds no room, stops as for a full outbox and is resumed by the
    /// next pass (its send doorbell is rung).
    fn with_qp_quiet<R>(
        &self,
        now: u64,
        qpn: u32,
        f: impl FnOnce(&qp::Context<'_>, &mut QueuePair) -> R,
    ) -> Option<R> {
        let sealed = Outbox::sealed();
        let cx = self.transport(now, &sealed);
        self.qps.with(qpn, |qp| f(&cx, qp))
    }

    /// Parks QP `qpn` if it stopped for want of room in `out` (holding the
    /// QP, after its work); whether it did. A QP that found its outbox full
    /// waits for a transmit turn to empty one ([`SoftRnic::resume_parked`]:
    /// its outbox is held here, so no turn empties it before it is
    /// parked); one that ran with a sealed outbox (taking a response) had
    /// no outbox to wait for, and goes on in the next pass.
    pub(crate) fn park_if_stalled(&self, qpn: u32, qp: &mut QueuePair, out: &Outbox) -> bool {
        if !qp.take_tx_stall() {
            return false;
        }
        if out.is_sealed() {
            self.ring_sq(qpn);
        } else {
            self.engine.stats.tx_stalls.inc();
            self.engine.tx_parked.insert(qpn);
        }
        true
    }

    /// A transmit turn emptied an outbox: every QP that stopped for outbox
    /// room goes back on the ready set and the engine is woken, so the
    /// next pass resumes each where it stopped. A call with nothing parked
    /// costs a look at the parked set.
    pub(crate) fn resume_parked(&self) {
        let mut resumed = false;
        self.engine.tx_parked.drain(|qpn| {
            resumed = true;
            self.sq_ready.insert(qpn);
        });
        if resumed {
            self.engine.stats.tx_resumes.inc();
            self.waker().wake();
        }
    }

    /// Registers a QP's earliest timer with the poller.
    fn arm_timer(&self, qpn: u32, qp: &QueuePair) {
        if let Some(deadline) = qp.next_deadline() {
            self.engine.timer_qps.insert(qpn);
            self.engine.earliest.fetch_min(deadline, Ordering::AcqRel);
        }
    }

    /// Runs the engine once at time `now` (µs, the runtime's monotonic
    /// clock): due timers, doorbells (budgeted per QP), CQ moderation,
    /// then event delivery with no lock held. Returns whether anything was
    /// done (call again at once if so).
    pub fn poll(&self, now: u64) -> bool {
        let worked = self.poll_work(now);
        self.deliver_events() || worked
    }

    /// [`SoftRnic::poll`] without the event delivery.
    pub(crate) fn poll_work(&self, now: u64) -> bool {
        let now = self.engine.advance_to(now);
        let mut worked = false;
        let engine = &self.engine;
        if now >= engine.earliest.load(Ordering::Acquire) {
            engine.earliest.store(u64::MAX, Ordering::Release);
            engine.timer_qps.drain(|qpn| {
                self.with_qp(now, qpn, |cx, qp| {
                    qp::on_timers(cx, qpn, qp);
                    self.arm_timer(qpn, qp);
                    self.park_if_stalled(qpn, qp, cx.out);
                });
            });
            worked = true;
        }
        worked |= crate::cm::poll(self, now);
        let qp_bound = FIRST_QPN + self.config().max_qps;
        self.rq_ready.drain(|n| {
            // Only a QP in error has work here (flushing sends nothing):
            // a connected QP's receive doorbell costs no outbox round.
            if n < qp_bound && self.qp_state(n) == Some(QpState::Error) {
                self.with_qp(now, n, |cx, qp| {
                    if qp.state == QpState::Error {
                        cx.flush(n, qp);
                    }
                });
            }
            // SRQ doorbells need no work: receives are taken on demand.
        });
        self.sq_ready.drain(|qpn| {
            worked = true;
            let more = self.with_qp(now, qpn, |cx, qp| {
                let more = qp::run_send_side(cx, qpn, qp, POLL_BUDGET);
                self.arm_timer(qpn, qp);
                !self.park_if_stalled(qpn, qp, cx.out) && more
            });
            if more == Some(true) {
                self.sq_ready.insert(qpn);
            }
        });
        if engine.cq_moderation.load(Ordering::Relaxed)
            && now.saturating_sub(engine.last_cq_tick.load(Ordering::Relaxed)) >= CQ_TICK_US
        {
            engine.last_cq_tick.store(now, Ordering::Relaxed);
            engine
                .cq_timers
                .store(self.tick_cqs(now), Ordering::Relaxed);
        }
        worked
    }

    /// When the engine next needs [`SoftRnic::poll`] for a timer (µs, on
    /// the clock its runtime passes in), if any timer runs.
    pub fn next_timer_us(&self) -> Option<u64> {
        let engine = &self.engine;
        let t = engine.earliest.load(Ordering::Acquire);
        let qp = (t != u64::MAX).then_some(t);
        let cq = engine
            .cq_timers
            .load(Ordering::Relaxed)
            .then(|| engine.last_cq_tick.load(Ordering::Relaxed) + CQ_TICK_US);
        [qp, cq, self.cm.next_timer_us()]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Connection management's view of the device: it sends its MADs through
/// the device's transmitter and connects QPs with the engine's
/// modify-to-RTS.
impl crate::cm::Host for SoftRnic {
    fn cm(&self) -> &crate::cm::CmState {
        &self.cm
    }

    /// Records the MAD in connection management's outbox (counted and
    /// dropped if it is full, as a full wire may drop it: its sender
    /// retries).
    fn transmit(&self, datagram: &[u8]) {
        let recorded = self.engine.cm_outbox().lock().datagram(false, |slot| {
            let out = slot.get_mut(..datagram.len())?;
            out.copy_from_slice(datagram);
            Some(datagram.len())
        });
        if recorded == Recorded::Yes {
            self.engine.note_recorded(1);
        } else {
            self.engine.stats.tx_outbox_full.inc();
        }
    }

    /// The runtime takes the MADs in its next transmit turn, which its
    /// engine runs.
    fn flush(&self) {
        self.waker().wake_engine();
    }

    fn wake(&self) {
        self.waker().wake_engine();
    }

    fn pmtu(&self, remote: IpAddr) -> u32 {
        let configured = self.config().pmtu;
        match self.routes.path_mtu(remote) {
            // Below 256 nothing fits: 256 still, whose packets fail where
            // they cannot leave (a send failure) rather than no connection.
            Some(path) => configured.min(path.max(256)),
            None => configured,
        }
    }

    fn connect_qp(
        &self,
        qpn: u32,
        local: IpAddr,
        path: Path,
        negotiated: Negotiated,
    ) -> Result<(), DeviceError> {
        self.connect_qp_at(qpn, local, path, Some(negotiated))
    }
}

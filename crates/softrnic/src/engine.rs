//! The engine: how packets and time drive the RC transport of
//! [`SoftRnic`].
//!
//! * [`SoftRnic::receive`] / [`SoftRnic::receive_udp_payload`] — one
//!   inbound datagram: parsed (malformed or bad-ICRC datagrams are counted
//!   and dropped), demultiplexed by the BTH destination QP to connection
//!   management (QP1), the responder (requests) or the completer (ACKs,
//!   NAKs, READ responses). ACKs and small READ responses leave at once
//!   (but see [`crate::qp::RcConfig::ack_defer_us`]).
//! * [`SoftRnic::poll`] — the deferred work: requesters of QPs whose
//!   doorbell rang (a bitset drained each pass; at most [`POLL_BUDGET`]
//!   packets per QP per pass, so one QP cannot starve the others), queued
//!   READ responses, the retransmit, RNR and ACK-coalescing timers, CQ
//!   moderation ticks, then event delivery with no lock held.
//!   [`SoftRnic::next_timer_us`] tells a host thread how long it may sleep.
//! * Transmit backpressure — a QP whose next packet the link has no room
//!   for ([`crate::env::Link::can_transmit`]) stops before building it and
//!   is parked (off the ready set, so passes do not spin on it) until
//!   [`SoftRnic::link_ready`], which puts every parked QP back on the ready
//!   set; each goes on exactly where it stopped. A QP parked just as room
//!   came back (the link's call ran before the QP was parked) is put back
//!   at once: parking asks the link again afterwards.
//! * [`SoftRnic::connect_qp`] — the modify-to-RTS command.
//!
//! Doorbells never process inline and events are never delivered while a
//! device lock is held. A consumer polling an empty CQ may run a pass
//! without event delivery on its own processor (`busy.rs`). Lock order:
//! QP slot → SRQ → CQ → keys; the capture tap and the link are leaves.
//!
//! ## UDP source port and the ICRC of socket transports
//!
//! Every packet is built as a whole IP datagram of its connection's family
//! (from the connection's own address, one of the device's):
//! IPv4 with identification 0, DF set, TTL 64, TOS 0, or IPv6 with
//! traffic class and flow label 0 and hop limit 64; UDP source port 4791
//! (the port a UDP-socket transport binds, so the receiver knows it) and
//! destination port the path's (4791). With [`crate::device::DeviceConfig::per_qp_source_port`]
//! (links that carry whole datagrams) a connected QP's packets leave from
//! its own port in 0xC000..=0xFFFF instead, for ECMP entropy. A UDP-socket transport carries only the UDP payload; its
//! receiver hands it to [`SoftRnic::receive_udp_payload`] with the socket
//! addresses, and the ICRC is verified over the IP/UDP headers rebuilt
//! from the same convention (IPv4: identification 0, DF; the real
//! addresses and ports). TOS, TTL, the IPv6 traffic class, flow label and
//! hop limit and the checksums are masked out of the ICRC anyway.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::net::{IpAddr, SocketAddr};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use hwq::device::DeviceError;
use spin::{Mutex, RwLock};

use crate::bitset::AtomicBitset;
use crate::device::{FIRST_QPN, SoftRnic};
use crate::env::{Capture, Direction};
use crate::qp::{self, Connection, Path, QpState, QueuePair, RcConfig};
use crate::train::Train;
use crate::wire::{self, GSI_QPN, IpUdpFields, Operation, Packet, ParseError, Pmtu, QPN_MASK};

/// Packets one QP may send in one [`SoftRnic::poll`] pass.
pub const POLL_BUDGET: u32 = 64;

/// Interval of CQ moderation ticks while a moderation timer runs (µs).
const CQ_TICK_US: u64 = 10;

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

        /// A snapshot of the engine's counters ([`SoftRnic::stats`]).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct EngineStats {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl Counters {
            fn snapshot(&self) -> EngineStats {
                EngineStats { $($name: self.$name.get(),)* }
            }
        }
    };
}

counters! {
    /// Datagrams handed to `receive` or `receive_udp_payload`.
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
    /// Busy polls that ran a pass ([`SoftRnic::busy_poll`]).
    busy_passes,
    /// Busy polls that found the device's turn taken.
    busy_turn_taken,
    /// Busy passes that found a bulk transfer and left the device to its
    /// own context for a while.
    busy_bulk_backoffs,
    /// QPs parked because the link had no room for their next packet
    /// (each resumed where it stopped: nothing was lost or resent).
    tx_stalls,
    /// [`SoftRnic::link_ready`] calls that found parked QPs.
    tx_resumes,
}

/// Whether a QP took a received packet.
#[derive(PartialEq)]
enum Taken {
    Yes,
    No,
    /// Created, not connected yet: maybe the RTU was lost.
    Unconnected,
}

/// The engine's part of the device: timers, the capture tap, defaults and
/// counters.
pub(crate) struct Engine {
    pub(crate) stats: Counters,
    /// QPs that may have a timer running.
    timer_qps: AtomicBitset,
    /// QPs stopped for want of link room, waiting for
    /// [`SoftRnic::link_ready`].
    tx_parked: AtomicBitset,
    /// No timer of any QP is due before this (µs; `u64::MAX`: none).
    earliest: AtomicU64,
    capture: RwLock<Option<Box<dyn Capture>>>,
    /// Rebuilds received UDP payloads into datagrams for the capture.
    scratch: Mutex<Vec<u8>>,
    defaults: RwLock<RcConfig>,
    /// Some CQ was given a moderation interval (sticky).
    cq_moderation: AtomicBool,
    /// The last CQ tick found a moderation timer running.
    cq_timers: AtomicBool,
    last_cq_tick: AtomicU64,
    /// Busy polling is allowed ([`SoftRnic::set_busy_poll`]).
    pub(crate) busy_poll: AtomicBool,
    /// Somebody runs the device's receive-and-poll pass (`busy.rs`).
    pub(crate) turn: AtomicBool,
    /// Busy polling is off until then (device clock, µs): a bulk transfer
    /// was found (`busy.rs`).
    pub(crate) bulk_until: AtomicU64,
    /// Packets busy passes took since `bulk_span_start` (`busy.rs`).
    pub(crate) bulk_span_packets: AtomicU32,
    pub(crate) bulk_span_start: AtomicU64,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("stats", &self.stats.snapshot())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Engine state for QP numbers below `qp_bound`.
    pub(crate) fn new(qp_bound: u32) -> Option<Self> {
        Some(Self {
            stats: Counters::default(),
            timer_qps: AtomicBitset::new(qp_bound)?,
            tx_parked: AtomicBitset::new(qp_bound)?,
            earliest: AtomicU64::new(u64::MAX),
            capture: RwLock::new(None),
            scratch: Mutex::new(Vec::new()),
            defaults: RwLock::new(RcConfig::default()),
            cq_moderation: AtomicBool::new(false),
            cq_timers: AtomicBool::new(false),
            last_cq_tick: AtomicU64::new(0),
            busy_poll: AtomicBool::new(false),
            turn: AtomicBool::new(false),
            bulk_until: AtomicU64::new(0),
            bulk_span_packets: AtomicU32::new(0),
            bulk_span_start: AtomicU64::new(0),
        })
    }
}

impl SoftRnic {
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine's counters.
    pub fn stats(&self) -> EngineStats {
        self.engine.stats.snapshot()
    }

    /// Installs (or removes) the packet tap. May allocate.
    pub fn set_capture(&self, capture: Option<Box<dyn Capture>>) {
        if capture.is_some() {
            let mut s = self.engine.scratch.lock();
            let want = usize::from(u16::MAX);
            if s.capacity() < want {
                let _ = s.try_reserve_exact(want);
            }
        }
        *self.engine.capture.write() = capture;
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
        self.connect_qp_at(qpn, local, path)
    }

    /// [`SoftRnic::connect_qp`] from `local`, which must be one of the
    /// device's addresses, of the remote's family (`InvalidAddress`).
    pub fn connect_qp_from(&self, qpn: u32, local: IpAddr, path: Path) -> Result<(), DeviceError> {
        if !self.has_address(local) {
            return Err(DeviceError::InvalidAddress);
        }
        self.connect_qp_at(qpn, local, path)
    }

    /// Connects QP `qpn` from `local` (of the remote's family) whether or
    /// not it is one of the device's addresses now: connection management
    /// connects a connection whose address was removed during its
    /// handshake all the same (it receives nothing until the address is
    /// back).
    pub(crate) fn connect_qp_at(
        &self,
        qpn: u32,
        local: IpAddr,
        path: Path,
    ) -> Result<(), DeviceError> {
        let pmtu = Pmtu::from_bytes(path.pmtu)
            .filter(|p| p.bytes() <= self.config().pmtu)
            .ok_or(DeviceError::InvalidParameter)?;
        let caps = self.caps();
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
        self.sq_doorbell(qpn);
        Ok(())
    }

    /// Hands one received IPv4 or IPv6 datagram (IP header through ICRC)
    /// to the engine. Never panics, whatever the bytes.
    pub fn receive(&self, datagram: &[u8]) {
        self.tap(Direction::Receive, datagram);
        self.dispatch(wire::parse(datagram));
    }

    /// Hands one received UDP payload (BTH through ICRC) to the engine, as
    /// a UDP socket delivers it from `src` to `dst` (both IPv4 or both
    /// IPv6; a mixed pair counts as malformed). The ICRC is checked with
    /// the pseudo IP/UDP header convention in the module docs.
    pub fn receive_udp_payload(
        &self,
        src: impl Into<SocketAddr>,
        dst: impl Into<SocketAddr>,
        payload: &[u8],
    ) {
        let Some(fields) = IpUdpFields::from_sockets(src.into(), dst.into()) else {
            self.engine.stats.rx_packets.inc();
            return self.engine.stats.rx_malformed.inc();
        };
        if let Some(cap) = self.engine.capture.read().as_ref()
            && let Some((head, n)) = fields.header_bytes(payload.len())
            && let Some(head) = head.get(..n)
        {
            let mut buf = self.engine.scratch.lock();
            buf.clear();
            buf.extend_from_slice(head);
            buf.extend_from_slice(payload);
            cap.capture(Direction::Receive, &buf);
        }
        self.dispatch(wire::parse_udp_payload(&fields, payload));
    }

    /// Hands a train ([`crate::train`]) to the engine: each segment meets
    /// the checks its packet would, and is placed straight from the
    /// sender's memory.
    pub fn receive_train(&self, train: &Train) {
        let stats = &self.engine.stats;
        let n = u64::from(train.segments());
        stats.rx_packets.add(n);
        self.tap_train(Direction::Receive, train);
        if !self.has_address(train.dst()) {
            return stats.rx_dropped.add(n);
        }
        let qpn = train.dest_qp();
        let now = self.clock.now_us();
        let request = !train.is_read_response();
        let taken = self.to_qp(qpn, train.src(), train.dst(), request, |qp| {
            if request {
                qp::on_request_train(self, qpn, qp, train, now);
            } else {
                qp::on_read_train(self, qpn, qp, train, now);
            }
        });
        if !taken {
            stats.rx_dropped.add(n);
        }
    }

    /// Shows each segment of `train` to the tap (if one is set) as the
    /// datagram it stands for. A segment whose source key died is not
    /// shown: it is lost, and nothing of it is placed either.
    pub(crate) fn tap_train(&self, direction: Direction, train: &Train) {
        if let Some(cap) = self.engine.capture.read().as_ref() {
            let mut buf = self.engine.scratch.lock();
            for i in 0..train.segments() {
                if let Some(n) = train.build(i, &mut buf)
                    && let Some(datagram) = buf.get(..n)
                {
                    cap.capture(direction, datagram);
                }
            }
        }
    }

    fn tap(&self, direction: Direction, datagram: &[u8]) {
        if let Some(cap) = self.engine.capture.read().as_ref() {
            cap.capture(direction, datagram);
        }
    }

    fn dispatch(&self, parsed: Result<Packet<'_>, ParseError>) {
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
        if qpn == GSI_QPN {
            stats.cm_packets.inc();
            crate::cm::receive(self, &p);
            return;
        }
        let op = p.info.operation;
        if p.bth.pkey & 0x7FFF != 0x7FFF || op == Operation::UdSend {
            return stats.rx_dropped.inc();
        }
        let now = self.clock.now_us();
        let taken = self.to_qp(qpn, p.ip.src(), p.ip.dst(), op.is_request(), |qp| {
            if op.is_request() {
                qp::on_request(self, qpn, qp, &p, now);
            } else {
                qp::on_response(self, qpn, qp, &p, now);
            }
        });
        if !taken {
            stats.rx_dropped.inc();
        }
    }

    /// Hands what arrived from `src` at `dst` for QP `qpn` (a `request`,
    /// or else a response) to `on`, holding the QP, if the QP is connected
    /// from `dst` to `src`; then registers its timers. Whether the QP took
    /// it.
    fn to_qp(
        &self,
        qpn: u32,
        src: IpAddr,
        dst: IpAddr,
        request: bool,
        mut on: impl FnMut(&mut QueuePair),
    ) -> bool {
        let mut take = || {
            self.qps.with(qpn, |qp| {
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
                on(qp);
                self.arm_timer(qpn, qp);
                self.park_if_stalled(qpn, qp);
                Taken::Yes
            })
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

    /// Puts one built datagram on the link (and the tap).
    pub(crate) fn transmit_packet(&self, datagram: &[u8], resend: bool) {
        let stats = &self.engine.stats;
        stats.tx_packets.inc();
        stats.retransmitted.inc_if(resend);
        self.tap(Direction::Transmit, datagram);
        self.link.transmit(datagram);
    }

    /// Puts the datagram built in `buf[..len]` on the link (and the tap);
    /// the link may swap `buf` for another buffer of the same length.
    pub(crate) fn transmit_buf(&self, buf: &mut Vec<u8>, len: usize, resend: bool) {
        let stats = &self.engine.stats;
        stats.tx_packets.inc();
        stats.retransmitted.inc_if(resend);
        if let Some(datagram) = buf.get(..len) {
            self.tap(Direction::Transmit, datagram);
        }
        self.link.transmit_owned(buf, len);
    }

    /// Builds a packet's UDP payload (`len` bytes at most) straight into
    /// the link's send buffer, if the link lends one and no tap wants the
    /// whole datagram; `false`: nothing was called, build a datagram and
    /// use [`SoftRnic::transmit_buf`]. `build` returns the length written,
    /// or `None` for nothing to send.
    pub(crate) fn transmit_udp_payload_with(
        &self,
        dest: SocketAddr,
        len: usize,
        build: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> bool {
        if self.engine.capture.read().is_some() {
            return false;
        }
        let stats = &self.engine.stats;
        let mut counted = |slot: &mut [u8]| {
            let n = build(slot);
            stats.tx_packets.inc_if(n.is_some());
            n
        };
        match dest {
            SocketAddr::V4(v4) => self.link.transmit_udp_payload_with(v4, len, &mut counted),
            SocketAddr::V6(v6) => self
                .link
                .transmit_udp_payload_v6_with(v6, len, &mut counted),
        }
    }

    /// Puts a train on the link (the link said it carries trains).
    pub(crate) fn transmit_train(&self, train: Train, resend: bool) {
        let stats = &self.engine.stats;
        stats.tx_packets.add(u64::from(train.segments()));
        if resend {
            stats.retransmitted.add(u64::from(train.segments()));
        }
        self.tap_train(Direction::Transmit, &train);
        self.link.transmit_train(train);
    }

    /// Moves a QP to error: flushes its work (after any error CQE already
    /// written) and queues the QP error event.
    pub(crate) fn enter_error(&self, qpn: u32, qp: &mut QueuePair) {
        let (s, r) = (qp.send_cqn, qp.recv_cqn);
        qp::flush(
            qp,
            qpn,
            |c| _ = self.complete(s, c, true),
            |c| _ = self.complete(r, c, true),
        );
        self.raise_qp_error(qpn);
    }

    /// Parks QP `qpn` if it stopped for want of link room (holding the QP,
    /// after its work); whether it did. Asks the link again once it is
    /// parked: room that came back in between (the link's
    /// [`SoftRnic::link_ready`] found nothing parked yet) resumes it now.
    pub(crate) fn park_if_stalled(&self, qpn: u32, qp: &mut QueuePair) -> bool {
        if !qp.take_tx_stall() {
            return false;
        }
        self.engine.stats.tx_stalls.inc();
        self.engine.tx_parked.insert(qpn);
        if self.link.can_transmit() {
            self.link_ready();
        }
        true
    }

    /// The link has room again after its [`crate::env::Link::can_transmit`]
    /// said no: every QP that stopped for it goes back on the ready set
    /// and the engine is woken, so the next pass resumes each where it
    /// stopped. Never blocks; callable from any context that may ring a
    /// doorbell (up to `DISPATCH_LEVEL`, a send completion included). A
    /// call with nothing parked costs a look at the parked set.
    pub fn link_ready(&self) {
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

    fn fire_timers(&self, qpn: u32, qp: &mut QueuePair, now: u64) {
        let due = |d: Option<u64>| d.is_some_and(|d| d <= now);
        let Some(conn) = qp.conn.as_ref() else { return };
        let (ack, rnr, retrans) = (
            due(conn.resp.ack_deadline),
            due(conn.req.rnr_deadline),
            due(conn.req.retrans_deadline),
        );
        if ack && qp.state == QpState::Connected {
            qp::on_ack_timer(self, qp);
        }
        if rnr && qp.state == QpState::Connected {
            qp::on_rnr_timer(self, qpn, qp, now);
        }
        if retrans && qp.state == QpState::Connected {
            qp::on_retransmit_timer(self, qpn, qp, now);
        }
    }

    /// Runs the engine once: due timers, doorbells (budgeted per QP), CQ
    /// moderation, then event delivery with no lock held. Returns whether
    /// anything was done (call again at once if so).
    pub fn poll(&self) -> bool {
        let worked = self.poll_work();
        self.deliver_events() || worked
    }

    /// [`SoftRnic::poll`] without the event delivery.
    pub(crate) fn poll_work(&self) -> bool {
        let now = self.clock.now_us();
        let mut worked = false;
        let engine = &self.engine;
        if now >= engine.earliest.load(Ordering::Acquire) {
            engine.earliest.store(u64::MAX, Ordering::Release);
            engine.timer_qps.drain(|qpn| {
                self.qps.with(qpn, |qp| {
                    self.fire_timers(qpn, qp, now);
                    self.arm_timer(qpn, qp);
                    self.park_if_stalled(qpn, qp);
                });
            });
            worked = true;
        }
        worked |= crate::cm::poll(self, now);
        let qp_bound = FIRST_QPN + self.config().max_qps;
        self.rq_ready.drain(|n| {
            if n < qp_bound {
                self.qps.with(n, |qp| {
                    if qp.state == QpState::Error {
                        let (s, r) = (qp.send_cqn, qp.recv_cqn);
                        qp::flush(
                            qp,
                            n,
                            |c| _ = self.complete(s, c, true),
                            |c| _ = self.complete(r, c, true),
                        );
                    }
                });
            }
            // SRQ doorbells need no work: receives are taken on demand.
        });
        self.sq_ready.drain(|qpn| {
            worked = true;
            let more = self.qps.with(qpn, |qp| {
                let more = qp::run_send_side(self, qpn, qp, now, POLL_BUDGET);
                self.arm_timer(qpn, qp);
                !self.park_if_stalled(qpn, qp) && more
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
        self.link.flush();
        worked
    }

    /// When the engine next needs [`SoftRnic::poll`] for a timer (µs, on
    /// the device's clock), if any timer runs.
    pub fn next_timer_us(&self) -> Option<u64> {
        let engine = &self.engine;
        let t = engine.earliest.load(Ordering::Acquire);
        let qp = (t != u64::MAX).then_some(t);
        let cq = engine
            .cq_timers
            .load(Ordering::Relaxed)
            .then(|| engine.last_cq_tick.load(Ordering::Relaxed) + CQ_TICK_US);
        [qp, cq, crate::cm::next_timer_us(self)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Notes that CQ moderation intervals are in use, so `poll` ticks CQs
    /// (every 10 µs at most; a timer seen running is reported by
    /// `next_timer_us`).
    pub(crate) fn note_cq_moderation(&self) {
        self.engine.cq_moderation.store(true, Ordering::Relaxed);
        self.engine.cq_timers.store(true, Ordering::Relaxed);
    }
}

//! The device's one way out: its runtime takes what the device sends,
//! one packet at a time, into a buffer of its own ([`SoftRnic::transmit_turn`],
//! [`TransmitTurn::poll_transmit`]), as quinn-proto's `poll_transmit` and
//! smoltcp's transmit tokens hand packets out. The device owns no link and
//! calls none: what its queue pairs and connection management send is
//! recorded in outboxes ([`crate::outbox`]) and waits there until taken.
//!
//! * **How a packet is framed is data the runtime passes in**
//!   ([`Carriage`]): whole IP datagrams, UDP payloads for IPv6
//!   destinations (a UDP socket writes those headers itself), and whether
//!   trains ([`crate::train`]) may be handed out. Each packet is built
//!   straight into the runtime's buffer (a `sendmmsg` slot or segment of
//!   the host's UDP batch, the kernel's Ethernet port's frame behind the
//!   header's room, a software link pump's buffer that a fabric queue
//!   takes whole).
//! * **Backpressure is not polling.** A runtime without room stops taking
//!   packets; the outboxes fill and each QP that would record stops where
//!   it is (nothing consumed, no PSN advanced) and is parked. Taking
//!   packets makes room, and the turn puts parked QPs back on the ready
//!   set and wakes the engine.
//! * **One taker at a time** ([`TransmitTurn`]): a QP's packets leave in the
//!   order recorded (PSN order) only if nobody can pass the runtime while
//!   it puts the packets it took on its wire, so the turn is held until the
//!   runtime has. A caller that finds the turn taken leaves the packets to
//!   its holder, which wakes the engine ([`crate::env::Wake::wake_engine`])
//!   when it lets go with packets still waiting. Each runtime takes the
//!   turn after each of its passes and arrivals.
//! * **What the runtime learns about its wire comes back in as input**:
//!   a packet it could never send ([`SoftRnic::send_failed`]); the path MTU
//!   to a peer is asked of its routes ([`crate::env::Routes`]).

use core::sync::atomic::Ordering;

use crate::device::{FIRST_QPN, SoftRnic};
use crate::qp;
use crate::transmit::{Carriage, SendFailure, Transmit};
use crate::wire;

#[cfg(doc)]
use crate::transmit::MAX_DATAGRAM;

/// The right to take the device's packets ([`SoftRnic::transmit_turn`]),
/// held while the runtime puts what it took on its wire; given back on
/// drop.
pub struct TransmitTurn<'a> {
    rnic: &'a SoftRnic,
    /// The outboxes still to visit, one bit each, lowest (connection
    /// management's) first; taken from the device's waiting set when the
    /// first packet is asked for.
    visit: u8,
    /// This turn took the last packet of an outbox, which emptied it:
    /// parked QPs may go on. (One that was empty already frees no room.)
    emptied: bool,
    /// `poll_transmit` was called: the waiting set was taken.
    started: bool,
    /// The first packet not sent because a requester's source key died
    /// under it, for its QP to fail the work request when the turn ends.
    gone: Option<SendFailure>,
}

impl core::fmt::Debug for TransmitTurn<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TransmitTurn")
            .field("visit", &self.visit)
            .finish_non_exhaustive()
    }
}

impl SoftRnic {
    /// The turn to take the device's packets, if nobody holds it (`None`:
    /// its holder takes what is waiting, or wakes the engine when it lets
    /// go with packets still waiting).
    pub fn transmit_turn(&self) -> Option<TransmitTurn<'_>> {
        let engine = self.engine();
        engine
            .tx_turn
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            // Lazily: a turn built and dropped on failure would give back
            // the holder's.
            .then(|| TransmitTurn {
                rnic: self,
                visit: 0,
                emptied: false,
                started: false,
                gone: None,
            })
    }

    /// Whether packets wait to be taken (recorded in an outbox since a
    /// turn last took it empty). Cheap: one load.
    pub fn has_transmits(&self) -> bool {
        self.engine().tx_waiting.load(Ordering::Acquire) != 0
    }

    /// The runtime could not send a packet it took and never will
    /// ([`SendFailure`]): the QP that sent it (found by the destination and
    /// the peer QP it named) fails as the transport says, at time
    /// `now`. A failed MAD (QP1) is only counted: its handshake times out
    /// and reports it. It runs the QP: a runtime calls it after it gave
    /// its transmit turn back, so the packets the failure sends are taken
    /// by its next turn.
    pub fn send_failed(&self, now: u64, failure: SendFailure) {
        let stats = &self.engine().stats;
        stats.tx_failed.inc();
        let now = self.engine().advance_to(now);
        let request = wire::Opcode(failure.opcode)
            .info()
            .is_some_and(|info| info.operation.is_request());
        if let Some(qpn) = self.sender_of(&failure) {
            self.with_qp(now, qpn, |cx, qp| {
                qp::on_send_failure(cx, qpn, qp, request);
            });
        }
    }

    /// A packet was not sent because its requester's source key died
    /// under it ([`TransmitTurn`] found it): the QP fails the work request
    /// it belongs to as the transport says, at the device's latest time.
    fn source_gone(&self, failure: &SendFailure) {
        if let Some(qpn) = self.sender_of(failure) {
            self.with_qp(self.engine().last_now(), qpn, |cx, qp| {
                qp::on_source_gone(cx, qpn, qp, failure.psn);
            });
        }
    }

    /// The connected QP that sent `failure`'s packet: the one connected to
    /// its destination and the peer QP it named.
    fn sender_of(&self, failure: &SendFailure) -> Option<u32> {
        let qp_bound = FIRST_QPN + self.config().max_qps;
        (FIRST_QPN..qp_bound).find(|&n| {
            self.qps
                .with(n, |qp| {
                    qp.conn.as_ref().is_some_and(|c| {
                        c.path.remote.ip() == failure.dst && c.path.remote_qpn == failure.dest_qp
                    })
                })
                .unwrap_or(false)
        })
    }
}

impl TransmitTurn<'_> {
    /// Takes the next packet the device sends, built into `buf` (at least
    /// [`MAX_DATAGRAM`] bytes) as `carriage` says, or a train; `None`:
    /// nothing waits. A QP's packets come in the order it recorded them;
    /// connection management's first.
    pub fn poll_transmit(&mut self, buf: &mut [u8], carriage: Carriage) -> Option<Transmit> {
        let rnic = self.rnic;
        let engine = rnic.engine();
        if !self.started {
            self.started = true;
            // Taken before looking: what is recorded after an outbox was
            // looked at is noted again, for the next turn.
            self.visit = engine.tx_waiting.swap(0, Ordering::SeqCst);
            engine.tx_trains.store(carriage.trains, Ordering::Relaxed);
        }
        let outboxes = engine.outboxes();
        while self.visit != 0 {
            let at = self.visit.trailing_zeros() as usize;
            if let Some(outbox) = outboxes.get(at) {
                let records = outbox.lock();
                let taken = records.next(buf, carriage, &rnic.mem, &engine.stats, &mut self.gone);
                if taken.is_some() {
                    self.emptied |= records.pending() == 0;
                    return taken;
                }
            }
            self.visit &= !(1 << at);
        }
        None
    }
}

impl Drop for TransmitTurn<'_> {
    /// Gives the turn back; then resumes the QPs parked for outbox room if
    /// an outbox was emptied. A runtime that stopped taking before every
    /// outbox was empty (it had no room) leaves the rest noted as waiting,
    /// for its next turn once it has room; one that took everything wakes
    /// the engine if packets were recorded meanwhile (a caller that found
    /// the turn taken left them to this one).
    fn drop(&mut self) {
        let rnic = self.rnic;
        let engine = rnic.engine();
        let all = self.visit == 0;
        if !all {
            // Left before every outbox it took was empty (the runtime had
            // no room): the rest waits for the next turn.
            engine.note_recorded(self.visit);
        }
        engine.tx_turn.store(false, Ordering::Release);
        if self.emptied {
            rnic.resume_parked();
        }
        if let Some(failure) = self.gone.take() {
            rnic.source_gone(&failure);
        }
        if self.started && all && engine.tx_waiting.load(Ordering::SeqCst) != 0 {
            rnic.waker().wake_engine();
        }
    }
}

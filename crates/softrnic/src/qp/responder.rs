//! The responder: executes the peer's requests in PSN order.
//!
//! Per packet (each check a function of `checks.rs`): PSN check
//! (expected → execute; ahead → one PSN sequence
//! error NAK, then silence until the expected PSN arrives; behind →
//! duplicate: SEND/WRITE are re-acknowledged without placing anything, at
//! the last SEND or WRITE executed (an ACK never names a READ's PSN: Linux
//! rxe would complete the READ by it, without its data), READs are
//! replayed from the saved IRD resource after the key is checked again),
//! opcode sequence, length, key checks, then placement, completion
//! of the receive, and an ACK (on AckReq, after `ack_coalesce` packets, or
//! when the coalescing timer expires). Every refusal of the peer's request
//! (class C: invalid request, remote access, remote operational) sends a
//! NAK and moves the QP to error without touching memory.
//!
//! One refusal is not fatal: a duplicate READ (or the replay it started)
//! whose key no longer passes. The READ was executed once with a valid
//! key; its key died afterwards (the requester's SEND with invalidate, or
//! our consumer), which a correct requester does only after the READ
//! completed, so the duplicate is stale and its answer ignored. It gets a
//! remote access NAK (a requester still waiting fails the READ with it)
//! and the QP stays up. A SEND with invalidate first lets the responses of
//! READs accepted before it, under the key it kills, leave: requests
//! execute in order (responses not yet emitted are built whole into the
//! outbox, and those recorded and still waiting there for link room are
//! built in place, while the key still grants the read).
//!
//! A duplicate READ may ask for a subset of the original (a hole the
//! requester misses): its responses are replayed, ending with a Last, and
//! then the stream it interrupted goes on (the resource's continuation).
//!
//! READ responses are emitted from the IRD resources a few packets at a
//! time (inline, then from `poll`), so a large READ does not monopolise the
//! engine; ACKs and NAKs owed meanwhile wait behind them, so the requester
//! never sees an acknowledgement ahead of READ data. Both also wait while
//! its outbox has no room (the runtime took no packets for a while): the stream
//! stops at the response it could not send and goes on from there.

use hwq::cqe::CQE_FLAG_SOLICITED;
use hwq::{Cqe, CqeOpcode, CqeStatus, MemoryKey};

use super::Context;
use super::checks::{PsnCheck, check_dma_len, check_length, check_op_seq, check_psn, check_rkey};
use super::timers::Timer;
use super::{Connection, Fatal, InMessage, Owed, QueuePair, ReadResource, Receives};
use crate::memory::Need;
use crate::memory::sg;
use crate::outbox::Recorded;
use crate::train::{
    Arrived, Framing, Kind, MAX_TRAIN_SEGMENTS, Origin, Payload, Segments, build_segment,
};
use crate::wire::{
    Aeth, Bth, ExtHeaders, Headers, NakCode, Opcode, Operation, PSN_MASK, Packet, Position,
    Syndrome, psn_add, psn_diff, segment_count,
};

/// READ response packets emitted inline when the request arrives.
const INLINE_READ_BUDGET: u32 = 16;

/// Handles the request packets that arrived for QP `qpn` (one packet, or
/// the segments of a SEND or WRITE train, [`crate::train`]), one at a
/// time in order; a refusal moves the QP to error and ends it.
pub(crate) fn on_request(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair, arrived: Arrived<'_>) {
    arrived.each(|p, payload| {
        let taken = handle(cx, qpn, qp, p, payload).is_ok();
        if !taken {
            cx.enter_error(qpn, qp);
        }
        taken
    });
}

/// Sends an ACK-opcode packet (ACK, RNR NAK or NAK) at `psn`: records it
/// in the outbox (counted and dropped if it is full: only the packets that
/// go whatever the outbox's room are recorded without asking first).
fn send_aeth(cx: &Context<'_>, conn: &mut Connection, syndrome: Syndrome, psn: u32) {
    let headers = Headers {
        ip: conn.ip.for_packet(psn),
        bth: Bth::new(Opcode::ACKNOWLEDGE, conn.path.remote_qpn, psn & PSN_MASK),
        ext: ExtHeaders {
            aeth: Some(Aeth {
                syndrome,
                msn: conn.resp.msn & PSN_MASK,
            }),
            ..ExtHeaders::NONE
        },
    };
    let recorded = cx
        .out
        .datagram(false, |slot| crate::wire::build(&headers, &[], slot).ok());
    cx.stats.tx_outbox_full.inc_if(recorded == Recorded::Full);
}

/// Sends a fatal NAK and reports that the QP must enter error.
fn fatal_nak(cx: &Context<'_>, conn: &mut Connection, code: NakCode, psn: u32) -> Fatal {
    let stats = &cx.stats;
    stats.fatal_naks_sent.inc();
    send_aeth(cx, conn, Syndrome::Nak(code), psn);
    Fatal
}

/// Sends the owed ACK/NAK unless READ responses are still queued or the
/// link has no room (it stays owed, and leaves when the QP resumes).
fn flush_owed(cx: &Context<'_>, conn: &mut Connection) {
    if conn.resp.active_reads > 0 || conn.resp.owed == Owed::None || !conn.outbox_has_room(cx) {
        return;
    }
    let epsn = conn.resp.epsn;
    let (syndrome, psn) = match conn.resp.owed {
        Owed::None => return,
        Owed::Ack => (Syndrome::ACK, conn.resp.ack_psn),
        Owed::SeqNak => (Syndrome::Nak(NakCode::PsnSequenceError), epsn),
        Owed::Rnr => (Syndrome::RnrNak(conn.rc.min_rnr_timer), epsn),
    };
    conn.resp.owed = Owed::None;
    conn.resp.unacked = 0;
    conn.timers.disarm(Timer::Ack);
    send_aeth(cx, conn, syndrome, psn);
}

fn owe(cx: &Context<'_>, conn: &mut Connection, what: Owed) {
    conn.resp.owed = what;
    flush_owed(cx, conn);
}

/// Acknowledges a request now or later. `answerable`: the request ended a
/// SEND, whose consumer often answers at once; when it is the only request
/// not yet acknowledged, its ACK may wait [`RcConfig::ack_defer_us`] for
/// that answer and leave with it (see [`flush_held_ack`]), saving the peer
/// a datagram. Any second request before then is acknowledged at once.
///
/// [`RcConfig::ack_defer_us`]: super::RcConfig::ack_defer_us
fn ack_or_coalesce(cx: &Context<'_>, conn: &mut Connection, ack_req: bool, answerable: bool) {
    let now = cx.now;
    let resp = &mut conn.resp;
    resp.unacked += 1;
    let hold = ack_req
        && answerable
        && resp.answers
        && conn.rc.ack_defer_us > 0
        && resp.unacked == 1
        && resp.owed == Owed::None
        && resp.active_reads == 0;
    if hold {
        cx.stats.acks_held.inc();
        conn.timers
            .set(Timer::Ack, Some(now.saturating_add(conn.rc.ack_defer_us)));
    } else if ack_req || resp.unacked >= conn.rc.ack_coalesce.max(1) {
        owe(cx, conn, Owed::Ack);
    } else {
        conn.timers
            .arm_if_idle(Timer::Ack, now.saturating_add(conn.rc.ack_delay_us));
    }
}

/// The requester of this QP is sending to the peer: an ACK waiting for
/// its timer (held for an answer, or coalesced) leaves now, behind the
/// requests in the same transmit batch.
pub(crate) fn flush_held_ack(cx: &Context<'_>, qp: &mut QueuePair) {
    let Some(conn) = qp.conn.as_mut() else { return };
    let resp = &mut conn.resp;
    resp.answers = true;
    if resp.unacked > 0 && resp.owed == Owed::None && conn.timers.is_armed(Timer::Ack) {
        cx.stats.acks_joined.inc();
        owe(cx, conn, Owed::Ack);
    }
}

/// The ACK coalescing timer expired.
pub(crate) fn on_ack_timer(cx: &Context<'_>, qp: &mut QueuePair) {
    let Some(conn) = qp.conn.as_mut() else { return };
    conn.timers.disarm(Timer::Ack);
    if conn.resp.unacked > 0 && conn.resp.owed == Owed::None {
        // No answer came in time: a one-way stream (whose sender waits for
        // these ACKs) gets them at once from now on.
        conn.resp.answers = false;
        owe(cx, conn, Owed::Ack);
    }
}

struct RecvTarget<'a> {
    rq: &'a mut Receives,
    cqn: u32,
    context: u64,
    qpn: u32,
}

impl RecvTarget<'_> {
    /// Completes the held receive with `status` and releases it.
    fn finish(
        &mut self,
        cx: &Context<'_>,
        conn: &mut Connection,
        cqe: Cqe,
        solicited: bool,
    ) -> bool {
        // Free the slot before the completion is visible: a consumer that
        // polls it may re-post at once and must find the room it implies.
        if !conn.resp.recv_from_srq
            && let Receives::Own(c) = self.rq
        {
            c.release(1);
        }
        let alive = cx.complete(
            self.cqn,
            Cqe {
                qp_context: self.context,
                qpn: self.qpn,
                ..cqe
            },
            solicited,
        );
        conn.resp.recv = None;
        conn.resp.recv_from_srq = false;
        conn.resp.msg = InMessage::None;
        alive
    }

    fn fail(&mut self, cx: &Context<'_>, conn: &mut Connection, status: CqeStatus, byte_len: u64) {
        if let Some(recv) = conn.resp.recv {
            let cqe = Cqe {
                wr_id: recv.wr_id,
                byte_len: byte_len.min(u64::from(u32::MAX)) as u32,
                opcode: CqeOpcode::Receive as u8,
                status: status as u8,
                ..Cqe::default()
            };
            self.finish(cx, conn, cqe, true);
        }
    }
}

fn handle(
    cx: &Context<'_>,
    qpn: u32,
    qp: &mut QueuePair,
    p: &Packet<'_>,
    payload: Payload<'_>,
) -> Result<(), Fatal> {
    let QueuePair {
        rq,
        conn,
        pd,
        recv_cqn,
        context,
        ..
    } = qp;
    let pd = *pd;
    let Some(conn) = conn.as_mut() else {
        return Ok(());
    };
    let psn = p.bth.psn;
    match check_psn(cx, &conn.resp, psn) {
        PsnCheck::Ahead => {
            if !conn.resp.nak_sent {
                conn.resp.nak_sent = true;
                cx.stats.seq_naks_sent.inc();
                owe(cx, conn, Owed::SeqNak);
            }
            return Ok(());
        }
        PsnCheck::Duplicate => return duplicate(cx, qpn, conn, pd, p),
        PsnCheck::Expected => {}
    }
    if conn.resp.owed == Owed::SeqNak {
        conn.resp.owed = Owed::None;
    }
    let op = p.info.operation;
    let pos = p.info.position;
    if !check_op_seq(conn.resp.msg, op, pos) {
        let mut target = RecvTarget {
            rq,
            cqn: *recv_cqn,
            context: *context,
            qpn,
        };
        target.fail(cx, conn, CqeStatus::RemoteInvalidRequest, 0);
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    }
    if matches!(op, Operation::Send | Operation::Write)
        && !check_length(pos, payload.len(), conn.pmtu.bytes() as usize)
    {
        let mut target = RecvTarget {
            rq,
            cqn: *recv_cqn,
            context: *context,
            qpn,
        };
        target.fail(cx, conn, CqeStatus::RemoteInvalidRequest, 0);
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    }
    match op {
        Operation::Send => {
            let mut target = RecvTarget {
                rq,
                cqn: *recv_cqn,
                context: *context,
                qpn,
            };
            on_send(cx, &mut target, conn, pd, p, payload)
        }
        Operation::Write => on_write(cx, conn, pd, p, payload),
        Operation::ReadRequest => on_read(cx, qpn, conn, pd, p),
        _ => Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn)),
    }
}

/// The SEND or WRITE packet at `psn` was executed: the next is expected,
/// and ACKs name it from now on.
fn executed(conn: &mut Connection, psn: u32) {
    conn.resp.epsn = psn_add(psn, 1);
    conn.resp.ack_psn = psn;
    conn.resp.nak_sent = false;
}

fn on_send(
    cx: &Context<'_>,
    target: &mut RecvTarget<'_>,
    conn: &mut Connection,
    pd: u32,
    p: &Packet<'_>,
    payload: Payload<'_>,
) -> Result<(), Fatal> {
    let psn = p.bth.psn;
    let pos = p.info.position;
    if pos.starts_message() {
        if conn.resp.recv.is_none() {
            let taken = match target.rq {
                Receives::Own(c) => {
                    c.refresh();
                    c.read(c.released()).map(|w| (w, false))
                }
                Receives::Shared(srqn) => cx.take_srq_receive(*srqn).map(|w| (w, true)),
            };
            let Some((recv, from_srq)) = taken else {
                cx.stats.rnr_naks_sent.inc();
                conn.resp.nak_sent = true;
                owe(cx, conn, Owed::Rnr);
                return Ok(());
            };
            conn.resp.recv = Some(recv);
            conn.resp.recv_from_srq = from_srq;
        }
        conn.resp.msg = InMessage::Send { offset: 0 };
    }
    let (Some(recv), InMessage::Send { offset }) = (conn.resp.recv, conn.resp.msg) else {
        return Err(fatal_nak(cx, conn, NakCode::RemoteOperationalError, psn));
    };
    // The receive is the driver's memory: one no driver wrote fails the
    // QP, as a receive it cannot execute.
    let Ok(sges) = recv.decode() else {
        target.fail(cx, conn, CqeStatus::LocalQpOperation, offset);
        return Err(fatal_nak(cx, conn, NakCode::RemoteOperationalError, psn));
    };
    let n = payload.len() as u64;
    if offset + n > sg::total(sges) {
        target.fail(cx, conn, CqeStatus::LocalLength, offset + n);
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    }
    let placed = crate::train::scatter_payload(cx.mem, pd, sges, offset, payload);
    match placed {
        Ok(true) => {}
        Ok(false) => {
            source_gone(cx);
            return Ok(());
        }
        Err(_) => {
            target.fail(cx, conn, CqeStatus::LocalProtection, offset);
            return Err(fatal_nak(cx, conn, NakCode::RemoteOperationalError, psn));
        }
    }
    let offset = offset + n;
    conn.resp.msg = InMessage::Send { offset };
    executed(conn, psn);
    if pos.ends_message() {
        let mut opcode = CqeOpcode::Receive;
        let mut invalidated = 0;
        if let Some(key) = p.ext.ieth {
            // Requests execute in order: READs accepted before this SEND
            // read the memory before its key dies, so their queued
            // responses leave first.
            let reading = conn
                .resp
                .reads
                .iter()
                .any(|r| r.active && MemoryKey(r.rkey).index() == MemoryKey(key).index());
            if reading {
                emit(cx, conn, pd, u32::MAX, Room::Ignore)?;
            }
            // Those already recorded and still waiting for link room are
            // built now too.
            let dies = |segs: &Segments| {
                matches!(segs.origin, Origin::Remote { rkey }
                    if MemoryKey(rkey).index() == MemoryKey(key).index())
            };
            let lost = cx.out.settle(cx.mem, dies);
            cx.stats.tx_source_gone.add(lost);
            if cx
                .mem
                .keys
                .update(|k| k.invalidate(MemoryKey(key), pd))
                .is_err()
            {
                target.fail(cx, conn, CqeStatus::RemoteInvalidRequest, offset);
                return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
            }
            opcode = CqeOpcode::ReceiveInvalidate;
            invalidated = key;
        }
        conn.resp.msn = psn_add(conn.resp.msn, 1);
        let se = p.bth.solicited;
        let cqe = Cqe {
            wr_id: recv.wr_id,
            byte_len: offset as u32,
            invalidated_key: invalidated,
            opcode: opcode as u8,
            status: CqeStatus::Success as u8,
            flags: if se { CQE_FLAG_SOLICITED } else { 0 },
            ..Cqe::default()
        };
        if !target.finish(cx, conn, cqe, se) {
            return Err(Fatal);
        }
    }
    ack_or_coalesce(cx, conn, p.bth.ack_req, pos.ends_message());
    Ok(())
}

fn on_write(
    cx: &Context<'_>,
    conn: &mut Connection,
    pd: u32,
    p: &Packet<'_>,
    payload: Payload<'_>,
) -> Result<(), Fatal> {
    let psn = p.bth.psn;
    let pos = p.info.position;
    if p.ext.imm.is_some() {
        // WRITE with immediate needs a receive completion this contract
        // cannot express: refused as unsupported.
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    }
    if pos.starts_message() {
        let Some(reth) = p.ext.reth else {
            return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
        };
        if !check_dma_len(&reth) {
            return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
        }
        let len = u64::from(reth.dma_len);
        if !check_rkey(cx, pd, reth.rkey, reth.va, len, Need::RemoteWrite) {
            return Err(fatal_nak(cx, conn, NakCode::RemoteAccessError, psn));
        }
        conn.resp.msg = InMessage::Write {
            va: reth.va,
            rkey: reth.rkey,
            len: reth.dma_len,
            offset: 0,
        };
    }
    let InMessage::Write {
        va,
        rkey,
        len,
        offset,
    } = conn.resp.msg
    else {
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    };
    let n = payload.len();
    let remaining = len.saturating_sub(offset) as usize;
    let pmtu = conn.pmtu.bytes() as usize;
    let fits = match pos {
        Position::First | Position::Middle => remaining > pmtu,
        Position::Last | Position::Only => n == remaining,
    };
    if !fits {
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    }
    let at = va.wrapping_add(u64::from(offset));
    let placed = match payload {
        Payload::Bytes(data) => {
            sg::write_remote(&cx.mem.keys.read(), &*cx.mem.dma, pd, rkey, at, data).map(|()| true)
        }
        // Takes each key table alone (`train::scatter_train`).
        Payload::Train(train, ref seg) => {
            crate::train::write_remote_train(cx.mem, pd, rkey, at, train, seg)
        }
    };
    match placed {
        Ok(true) => {}
        Ok(false) => {
            source_gone(cx);
            return Ok(());
        }
        Err(_) => {
            cx.stats.remote_access_refused.inc();
            return Err(fatal_nak(cx, conn, NakCode::RemoteAccessError, psn));
        }
    }
    executed(conn, psn);
    if pos.ends_message() {
        conn.resp.msn = psn_add(conn.resp.msn, 1);
        conn.resp.msg = InMessage::None;
    } else {
        conn.resp.msg = InMessage::Write {
            va,
            rkey,
            len,
            offset: offset + n as u32,
        };
    }
    ack_or_coalesce(cx, conn, p.bth.ack_req, false);
    Ok(())
}

fn on_read(
    cx: &Context<'_>,
    qpn: u32,
    conn: &mut Connection,
    pd: u32,
    p: &Packet<'_>,
) -> Result<(), Fatal> {
    let psn = p.bth.psn;
    let ird = conn.resp.reads.len();
    let Some(reth) = p.ext.reth else {
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    };
    if ird == 0 || !check_dma_len(&reth) {
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    }
    let len = u64::from(reth.dma_len);
    if !check_rkey(cx, pd, reth.rkey, reth.va, len, Need::RemoteRead) {
        return Err(fatal_nak(cx, conn, NakCode::RemoteAccessError, psn));
    }
    let npsn = segment_count(reth.dma_len, conn.pmtu);
    let resp = &mut conn.resp;
    let slot = (resp.read_newest + 1) % ird;
    if resp.reads.get(slot).is_none_or(|r| r.active) {
        // More READs outstanding than this QP's IRD: the peer broke ORD.
        return Err(fatal_nak(cx, conn, NakCode::InvalidRequest, psn));
    }
    if let Some(r) = resp.reads.get_mut(slot) {
        *r = ReadResource {
            first_psn: psn,
            npsn,
            va: reth.va,
            rkey: reth.rkey,
            len: reth.dma_len,
            active: true,
            start_psn: psn,
            next_psn: psn,
            end_psn: psn_add(psn, npsn),
            cont_next: 0,
            cont_end: 0,
            valid: true,
            replay: false,
        };
    }
    resp.read_newest = slot;
    if resp.active_reads == 0 {
        resp.emit_head = slot;
    }
    resp.active_reads += 1;
    resp.epsn = psn_add(psn, npsn);
    resp.nak_sent = false;
    resp.msn = psn_add(resp.msn, 1);
    // The responses acknowledge everything before the READ.
    resp.unacked = 0;
    conn.timers.disarm(Timer::Ack);
    resp.owed = Owed::None;
    if emit(cx, conn, pd, INLINE_READ_BUDGET, Room::Wait)? {
        cx.sq_doorbell(qpn);
    }
    Ok(())
}

fn duplicate(
    cx: &Context<'_>,
    qpn: u32,
    conn: &mut Connection,
    pd: u32,
    p: &Packet<'_>,
) -> Result<(), Fatal> {
    let psn = p.bth.psn;
    match p.info.operation {
        Operation::Send | Operation::Write => {
            // Already executed: acknowledge again, place nothing (C9-105),
            // at the last SEND or WRITE executed: a READ executed since is
            // acknowledged by its responses only (see `ack_psn`).
            if p.bth.ack_req {
                owe(cx, conn, Owed::Ack);
            }
            Ok(())
        }
        Operation::ReadRequest => {
            let Some(reth) = p.ext.reth else {
                return Ok(());
            };
            let pmtu = conn.pmtu.bytes();
            let resp = &mut conn.resp;
            let found = resp.reads.iter().position(|r| {
                let k = psn_diff(psn, r.first_psn);
                r.valid && k >= 0 && (k as u32) < r.npsn
            });
            let Some(index) = found else {
                return Ok(());
            };
            let Some(r) = resp.reads.get(index).copied() else {
                return Ok(());
            };
            let offset = psn_diff(psn, r.first_psn) as u64 * u64::from(pmtu);
            let rest = u64::from(r.len).saturating_sub(offset);
            let read_end = psn_add(r.first_psn, r.npsn);
            let end = psn_add(psn, segment_count(reth.dma_len, conn.pmtu));
            // The same READ from `psn` on, or a subset of it (a hole the
            // requester misses) ending on a PMTU boundary.
            let subset = u64::from(reth.dma_len) <= rest
                && (reth.dma_len > 0 || rest == 0)
                && (end == read_end || reth.dma_len % pmtu == 0);
            if reth.rkey != r.rkey || reth.va != r.va.wrapping_add(offset) || !subset {
                return Ok(());
            }
            if r.active && psn_diff(psn, r.next_psn) >= 0 && psn_diff(end, r.end_psn) <= 0 {
                // The running stream has not reached `psn` yet and will
                // answer it all (a duplicated or overtaken request packet):
                // restarting would only send the same responses twice.
                cx.stats.read_replays_skipped.inc();
                return Ok(());
            }
            let len = u64::from(reth.dma_len);
            if !check_rkey(cx, pd, reth.rkey, reth.va, len, Need::RemoteRead) {
                // This READ was executed once with a valid key, so the key
                // died after that (the requester's SEND with invalidate,
                // or our consumer). A correct requester invalidates only
                // after the READ completed: this is a stale duplicate whose
                // answer it ignores. Refuse it without tearing the
                // connection down; a requester that does still wait gets
                // the remote access error from the NAK.
                cx.stats.stale_read_refusals.inc();
                send_aeth(cx, conn, Syndrome::Nak(NakCode::RemoteAccessError), psn);
                return Ok(());
            }
            cx.stats.read_replays.inc();
            let resp = &mut conn.resp;
            // Later responses are resent only when their requests are
            // resent (go-back-N resends them in order).
            for (i, other) in resp.reads.iter_mut().enumerate() {
                if i != index {
                    other.active = false;
                    (other.cont_next, other.cont_end) = (0, 0);
                }
            }
            if let Some(r) = resp.reads.get_mut(index) {
                // What the interrupted stream still owed past the new one
                // follows it.
                let from = if psn_diff(r.next_psn, end) >= 0 {
                    r.next_psn
                } else {
                    end
                };
                if !r.active {
                    (r.cont_next, r.cont_end) = (0, 0);
                } else if psn_diff(r.end_psn, from) > 0 {
                    if r.cont_next == r.cont_end {
                        (r.cont_next, r.cont_end) = (from, r.end_psn);
                    } else {
                        if psn_diff(from, r.cont_next) < 0 {
                            r.cont_next = from;
                        }
                        if psn_diff(r.end_psn, r.cont_end) > 0 {
                            r.cont_end = r.end_psn;
                        }
                    }
                }
                r.active = true;
                r.start_psn = psn;
                r.next_psn = psn;
                r.end_psn = end;
                r.replay = true;
            }
            resp.active_reads = 1;
            resp.emit_head = index;
            if emit(cx, conn, pd, INLINE_READ_BUDGET, Room::Wait)? {
                cx.sq_doorbell(qpn);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Emits queued READ responses of a QP from `poll`; returns whether more
/// remain to be emitted now (not when the outbox has no room: see `emit`).
pub(crate) fn emit_reads(
    cx: &Context<'_>,
    _qpn: u32,
    qp: &mut QueuePair,
    budget: u32,
) -> Result<bool, Fatal> {
    let pd = qp.pd;
    match qp.conn.as_mut() {
        Some(conn) => emit(cx, conn, pd, budget, Room::Wait),
        None => Ok(false),
    }
}

/// Whether READ responses wait for outbox room.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Room {
    /// Stop before a response the outbox has no room for (the QP resumes
    /// there once a transmit turn makes room).
    Wait,
    /// Emit them all now, room or not, built whole with their payload read
    /// now: a SEND with invalidate is about to kill their key.
    Ignore,
}

/// Emits up to `budget` READ response packets in PSN order into the
/// outbox, their key checked (a run recorded for trains counts one);
/// returns whether more remain to be emitted now (`false` too when it
/// stopped for want of outbox room: the QP waits for a transmit turn, not
/// for a pass). Sends the owed ACK/NAK once none
/// remain.
fn emit(
    cx: &Context<'_>,
    conn: &mut Connection,
    pd: u32,
    mut budget: u32,
    room: Room,
) -> Result<bool, Fatal> {
    let ird = conn.resp.reads.len();
    let mut idle = 0;
    while conn.resp.active_reads > 0 {
        if budget == 0 {
            return Ok(true);
        }
        let head = conn.resp.emit_head % ird.max(1);
        let Some(r) = conn.resp.reads.get(head).copied() else {
            conn.resp.active_reads = 0;
            break;
        };
        if !r.active {
            conn.resp.emit_head = (head + 1) % ird;
            idle += 1;
            if idle > ird {
                // Inconsistent count: nothing is really active.
                conn.resp.active_reads = 0;
            }
            continue;
        }
        idle = 0;
        if room == Room::Wait && !conn.outbox_has_room(cx) {
            return Ok(false);
        }
        let q = r.next_psn;
        // The whole stream (up to a train's worth) as one run when the
        // link carries trains to the peer, else one packet.
        let count = if room == Room::Wait && cx.trains {
            (psn_diff(r.end_psn, q).max(1) as u32).min(MAX_TRAIN_SEGMENTS)
        } else {
            1
        };
        let segs = response_segments(conn, pd, &r, count);
        if room == Room::Ignore {
            if !emit_now(cx, &segs) {
                cx.stats.remote_access_refused.inc();
                stale_key(cx, conn, head, &r, q)?;
                continue;
            }
        } else {
            if !check_rkey(cx, pd, r.rkey, segs.at, segs.len, Need::RemoteRead) {
                stale_key(cx, conn, head, &r, q)?;
                continue;
            }
            if !cx.out.segments(&segs, false) {
                // Room was asked for first, so this does not happen; if it
                // did, the QP stops here as for a link without room.
                conn.tx_stalled = true;
                return Ok(false);
            }
        }
        let last = segs.closes;
        cx.stats.read_responses_sent.add(u64::from(count));
        budget -= 1;
        if let Some(r) = conn.resp.reads.get_mut(head) {
            r.next_psn = psn_add(q, count);
        }
        if last {
            stream_done(&mut conn.resp, head, false);
        }
    }
    flush_owed(cx, conn);
    Ok(false)
}

/// Records the READ response `segs` describes (one packet) built whole,
/// its payload read now, while its key still grants the read (a SEND with
/// invalidate is about to kill it); `false` if the key no longer does.
/// Dropped (and counted) if the outbox is full, as a full link may drop
/// it.
fn emit_now(cx: &Context<'_>, segs: &Segments) -> bool {
    let seg = segs.segment(0);
    let headers = segs.headers(&seg);
    let recorded = cx.out.datagram(false, |slot| {
        build_segment(cx.mem, segs, &seg, &headers, Framing::Datagram, slot)
    });
    cx.stats.tx_outbox_full.inc_if(recorded == Recorded::Full);
    recorded != Recorded::Refused
}

/// The next `count` responses (from `next_psn`) of the READ resource `r`,
/// described once ([`Segments`]) for both ways of sending them: built into
/// datagrams here, or carried as a train. The last closes the stream if it
/// reaches the stream's end (or the READ's).
fn response_segments(conn: &Connection, pd: u32, r: &ReadResource, count: u32) -> Segments {
    let pmtu = conn.pmtu.bytes();
    let q = r.next_psn;
    let k = psn_diff(q, r.first_psn).max(0) as u32;
    let offset = u64::from(k) * u64::from(pmtu);
    Segments {
        pd,
        origin: Origin::Remote { rkey: r.rkey },
        at: r.va.wrapping_add(offset),
        len: u64::from(r.len)
            .saturating_sub(offset)
            .min(u64::from(count) * u64::from(pmtu)),
        pmtu,
        ip: conn.ip,
        dest_qp: conn.path.remote_qpn,
        first_psn: q,
        count,
        kind: Kind::ReadResponse { msn: conn.resp.msn },
        opens: q == r.start_psn,
        closes: psn_add(q, count) == r.end_psn || k + count >= r.npsn,
        ack_req: false,
    }
}

/// A train segment's source key died in flight: the packet never arrived
/// (nothing was placed or advanced; the requester sends it again).
fn source_gone(cx: &Context<'_>) {
    cx.stats.train_segments_lost.inc();
}

/// The key of the READ at ring position `head` no longer grants it (it
/// changed since the request was accepted; the refusal is counted by the
/// caller), found emitting PSN `q`. An
/// original READ fails the connection; a replay of a READ executed before
/// the key died stops and is refused without killing the QP (see
/// `duplicate`), and emission goes on with the next stream.
fn stale_key(
    cx: &Context<'_>,
    conn: &mut Connection,
    head: usize,
    r: &ReadResource,
    q: u32,
) -> Result<(), Fatal> {
    if !r.replay {
        return Err(fatal_nak(cx, conn, NakCode::RemoteAccessError, q));
    }
    cx.stats.stale_read_refusals.inc();
    stream_done(&mut conn.resp, head, true);
    send_aeth(cx, conn, Syndrome::Nak(NakCode::RemoteAccessError), q);
    Ok(())
}

/// The stream of the resource at ring position `head` ended (or, with
/// `abandon`, is given up): the stream a hole replay interrupted goes on,
/// else the resource is idle and emission moves to the next one.
fn stream_done(resp: &mut super::Responder, head: usize, abandon: bool) {
    let ird = resp.reads.len().max(1);
    if let Some(r) = resp.reads.get_mut(head) {
        if !abandon && r.cont_next != r.cont_end {
            (r.start_psn, r.next_psn, r.end_psn) = (r.cont_next, r.cont_next, r.cont_end);
            (r.cont_next, r.cont_end) = (0, 0);
            return;
        }
        r.active = false;
        (r.cont_next, r.cont_end) = (0, 0);
    }
    resp.active_reads = resp.active_reads.saturating_sub(1);
    resp.emit_head = (head + 1) % ird;
}

//! The completer: matches ACKs (explicit and implied), NAKs and READ
//! responses to SQ work, places READ data, writes send-queue CQEs in SQ
//! order (the last step of a SEND's life at its sender), releases SQ
//! slots, and runs the retransmit and RNR timers.
//!
//! READ responses of the oldest incomplete READ are placed even past a
//! lost one ([`super::read_window`]); the hole is asked for again once
//! three responses went past it, the READ's last arrived, or the hole
//! filled up to another one. A NAK or response for a PSN already
//! acknowledged (a stale duplicate's answer) is ignored, never fatal.

use hwq::wqe::SendOp;
use hwq::{Cqe, CqeStatus, MemoryKey, SendRequest};

use super::Context;
use super::read_window::READ_WINDOW;
use super::timers::{Timer, Timers};
use super::{Connection, Fatal, MetaKind, QueuePair, Requester, WqeMeta};
use crate::memory::Need;
use crate::train::{Payload, Segment, Train};
use crate::wire::{Aeth, NakCode, Operation, Packet, Syndrome, psn_add, psn_before, psn_diff};

impl Requester {
    /// Moves `una_index` past WQEs that occupy no PSN.
    fn skip_local(&mut self) {
        while self.una_index != self.start_index {
            let m = self.meta(self.una_index);
            if matches!(m.kind, MetaKind::Done(_)) && m.npsn == 0 {
                self.una_index = self.una_index.wrapping_add(1);
            } else {
                break;
            }
        }
    }

    /// The responder confirmed every PSN before `target`. Advances `una`
    /// over SEND/WRITE PSNs; returns `true` if it stopped at a READ whose
    /// response data is missing (lost or overtaken).
    fn advance_to(&mut self, target: u32) -> (bool, bool) {
        if psn_before(self.acked_hi, target) {
            self.acked_hi = target;
        }
        let mut progressed = false;
        let mut read_gap = false;
        self.skip_local();
        while psn_before(self.una, target) && self.una_index != self.start_index {
            let m = self.meta(self.una_index);
            match m.kind {
                MetaKind::SendWrite => {
                    let end = psn_add(m.first_psn, m.npsn);
                    if psn_before(target, end) {
                        self.una = target;
                    } else {
                        self.una = end;
                        self.una_index = self.una_index.wrapping_add(1);
                        self.skip_local();
                    }
                    progressed = true;
                }
                MetaKind::Read => {
                    read_gap = true;
                    break;
                }
                MetaKind::Done(_) | MetaKind::None => break,
            }
        }
        (progressed, read_gap)
    }

    fn on_progress(&mut self, timers: &mut Timers, conn_rc: &super::RcConfig, now: u64) {
        self.retry_left = conn_rc.retry_count;
        self.rnr_left = conn_rc.rnr_retry;
        self.cwnd = (self.cwnd + 1).min(conn_rc.max_unacked_psns.max(super::MIN_CWND));
        let deadline = self
            .outstanding()
            .then(|| now.saturating_add(conn_rc.ack_timeout_us));
        timers.set(Timer::Retransmit, deadline);
    }

    /// Starts one fast retry (lost READ response, PSN sequence NAK) per
    /// `una` value.
    fn fast_retry(&mut self) -> bool {
        if self.retry_at == Some(self.una) {
            return false;
        }
        self.retry_at = Some(self.una);
        self.rewind();
        self.backoff();
        true
    }

    /// Fails the oldest incomplete wire WQE with `status` (it completes,
    /// in order, when it is the oldest) and stops the requester.
    fn fail_oldest(&mut self, timers: &mut Timers, status: CqeStatus) {
        let index = self.una_index;
        if index == self.start_index {
            return;
        }
        let m = self.meta(index);
        self.set_meta(
            index,
            WqeMeta {
                kind: MetaKind::Done(status),
                ..m
            },
        );
        self.halted = true;
        timers.disarm(Timer::Retransmit);
        timers.disarm(Timer::Rnr);
    }
}

/// Handles an ACK, NAK or READ response for QP `qpn`.
pub(crate) fn on_response(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair, p: &Packet<'_>) {
    let before = progress(qp);
    handle(cx, qp, p);
    finish(cx, qpn, qp, before);
}

/// Handles the READ responses of a train ([`crate::train`]) for QP `qpn`,
/// one segment at a time, as if its packets had arrived in order.
pub(crate) fn on_read_train(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair, train: &Train) {
    let before = progress(qp);
    let QueuePair { sq, conn, pd, .. } = qp;
    if let Some(conn) = conn.as_mut()
        && !place_whole_train(cx, *pd, sq, conn, train)
    {
        for i in 0..train.segments() {
            let seg = train.segment(i);
            let response = Response {
                psn: seg.psn,
                aeth: train.headers(&seg).ext.aeth,
                ends_message: seg.ends_message(),
                payload: Payload::Train(train, seg),
            };
            read_response(cx, *pd, sq, conn, &response);
            if conn.req.halted {
                break;
            }
        }
    }
    finish(cx, qpn, qp, before);
}

/// The common case of a train, handled at once: it continues the oldest
/// incomplete READ exactly where its data is missing (`una`), lies within
/// it, fills no PSN already placed, and its segment lengths are the ones
/// that READ expects. Then every segment would pass the per-response
/// checks, so the whole train is placed with one key check and one copy
/// per contiguous run, and `una` moves past it. Returns `false` (nothing
/// done) otherwise, or if a key refuses: the segments then go one by one,
/// meeting the same refusal with its usual outcome.
fn place_whole_train(
    cx: &Context<'_>,
    pd: u32,
    sq: &hwq::Consumer<hwq::SendWqe>,
    conn: &mut Connection,
    train: &Train,
) -> bool {
    let pmtu = u64::from(conn.pmtu.bytes());
    let req = &conn.req;
    let count = train.segments();
    let first = train.segment(0);
    let last_psn = psn_add(first.psn, count.saturating_sub(1));
    let meta = req.meta(req.una_index);
    let reading = req.una_index != req.start_index && meta.kind == MetaKind::Read;
    let k = psn_diff(first.psn, meta.first_psn);
    let fits = reading
        && count > 0
        && first.psn == req.una
        && nak_in_window(req, last_psn)
        && k >= 0
        && (k as u32).saturating_add(count) <= meta.npsn
        && count < READ_WINDOW
        && (0..count).all(|i| !req.read_window.has(psn_add(first.psn, i)));
    if !fits {
        return false;
    }
    let offset = k as u64 * pmtu;
    let rest = u64::from(meta.len).saturating_sub(offset);
    let reaches_end = k as u32 + count == meta.npsn;
    // Full segments, and the READ's own last one short and ending it.
    let lengths_ok = train.payload_len() == rest.min(u64::from(count) * pmtu)
        && (!reaches_end || train.segment(count - 1).ends_message());
    if !lengths_ok {
        return false;
    }
    let Some(wqe) = sq.read(req.una_index) else {
        return false;
    };
    let whole = Segment {
        len: usize::try_from(train.payload_len()).unwrap_or(usize::MAX),
        ..first
    };
    let placed = crate::train::scatter_train(
        cx.mem,
        pd,
        wqe.sge_list(),
        offset,
        Need::LocalWrite,
        train,
        &whole,
    );
    if placed != Ok(true) {
        return false;
    }
    placed_at_una(cx, conn, meta, psn_add(last_psn, 1));
    true
}

/// What the completer's progress is judged by: the doorbell rings when it
/// changed.
fn progress(qp: &QueuePair) -> Option<(u32, u32, u32)> {
    qp.conn
        .as_ref()
        .map(|c| (c.req.una, c.req.next_psn, c.req.send_index))
}

/// Completes what the responses finished and rings the send queue's
/// doorbell if the window moved.
fn finish(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair, before: Option<(u32, u32, u32)>) {
    let result = complete_ready(cx, qpn, qp);
    if result.is_err() {
        cx.enter_error(qpn, qp);
        return;
    }
    if before != progress(qp) {
        // Window opened, ORD token returned, or a resend was requested.
        cx.sq_doorbell(qpn);
    }
}

// One match over the response kinds reads better whole than split.
#[allow(clippy::too_many_lines)]
fn handle(cx: &Context<'_>, qp: &mut QueuePair, p: &Packet<'_>) {
    let now = cx.now;
    let QueuePair { sq, conn, pd, .. } = qp;
    let Some(conn) = conn.as_mut() else {
        return;
    };
    let stats = &cx.stats;
    let rc = conn.rc;
    let psn = p.bth.psn;
    let req = &mut conn.req;
    match p.info.operation {
        Operation::Acknowledge => {
            let Some(aeth) = p.ext.aeth else { return };
            match aeth.syndrome {
                Syndrome::Ack(_) => {
                    let target = psn_add(psn, 1);
                    // Stale, duplicate or ghost ACKs change nothing.
                    if psn_diff(target, req.una) <= 0 || psn_after_sent(req, target) {
                        stats.ghost_acks.inc_if(psn_after_sent(req, target));
                        return;
                    }
                    let (progressed, gap) = req.advance_to(target);
                    if progressed {
                        req.on_progress(&mut conn.timers, &rc, now);
                    }
                    if gap && req.fast_retry() {
                        stats.read_gap_retries.inc();
                    }
                }
                Syndrome::RnrNak(timer) => {
                    if !nak_in_window(req, psn) {
                        return;
                    }
                    stats.rnr_naks_received.inc();
                    let (progressed, _) = req.advance_to(psn);
                    if progressed {
                        req.on_progress(&mut conn.timers, &rc, now);
                    }
                    if req.una != psn {
                        return;
                    }
                    if rc.rnr_retry < 7 {
                        if req.rnr_left == 0 {
                            req.fail_oldest(&mut conn.timers, CqeStatus::RnrRetryExceeded);
                            return;
                        }
                        req.rnr_left -= 1;
                    }
                    let wait = now.saturating_add(u64::from(timer.micros()));
                    conn.timers.set(Timer::Rnr, Some(wait));
                    conn.timers.disarm(Timer::Retransmit);
                    req.rewind();
                }
                Syndrome::Nak(code) => {
                    if !nak_in_window(req, psn) {
                        return;
                    }
                    let (progressed, _) = req.advance_to(psn);
                    if progressed {
                        req.on_progress(&mut conn.timers, &rc, now);
                    }
                    let status = match code {
                        NakCode::PsnSequenceError => {
                            stats.seq_naks_received.inc();
                            if !conn.timers.is_armed(Timer::Rnr) && req.fast_retry() {
                                stats.seq_nak_retries.inc();
                            }
                            return;
                        }
                        NakCode::InvalidRequest | NakCode::InvalidRdRequest => {
                            CqeStatus::RemoteInvalidRequest
                        }
                        NakCode::RemoteAccessError => CqeStatus::RemoteAccess,
                        NakCode::RemoteOperationalError => CqeStatus::RemoteOperational,
                    };
                    stats.fatal_naks_received.inc();
                    req.fail_oldest(&mut conn.timers, status);
                }
            }
        }
        Operation::ReadResponse => {
            let response = Response {
                psn,
                aeth: p.ext.aeth,
                ends_message: p.info.position.ends_message(),
                payload: Payload::Bytes(p.payload),
            };
            read_response(cx, *pd, sq, conn, &response);
        }
        _ => {}
    }
}

/// One READ response, from a packet or a train segment.
struct Response<'a> {
    psn: u32,
    aeth: Option<Aeth>,
    /// Its opcode is Last or Only.
    ends_message: bool,
    payload: Payload<'a>,
}

/// Handles a READ response: stale and out-of-window ones are counted and
/// dropped, the rest placed into the oldest incomplete READ.
fn read_response(
    cx: &Context<'_>,
    pd: u32,
    sq: &hwq::Consumer<hwq::SendWqe>,
    conn: &mut Connection,
    r: &Response<'_>,
) {
    let now = cx.now;
    let stats = &cx.stats;
    let rc = conn.rc;
    let psn = r.psn;
    let req = &mut conn.req;
    if !nak_in_window(req, psn) {
        stats.stale_responses.inc();
        return;
    }
    if let Some(aeth) = r.aeth
        && !matches!(aeth.syndrome, Syndrome::Ack(_))
    {
        return;
    }
    let (progressed, _) = req.advance_to(psn);
    if progressed {
        req.on_progress(&mut conn.timers, &rc, now);
    }
    let meta = req.meta(req.una_index);
    let reading = req.una_index != req.start_index && meta.kind == MetaKind::Read;
    let ahead = psn_diff(psn, req.una);
    let in_read = reading && psn_diff(psn, psn_add(meta.first_psn, meta.npsn)) < 0;
    if !in_read || ahead as u32 >= READ_WINDOW {
        // A later WQE's response overtook this READ's, or it is too
        // far ahead to remember: ask again from the first missing
        // PSN (once).
        if reading && req.fast_retry() {
            stats.read_gap_retries.inc();
        }
        stats.stale_responses.inc();
        return;
    }
    if ahead > 0 && req.read_window.has(psn) {
        stats.stale_responses.inc();
        return;
    }
    place_read(cx, pd, sq, conn, meta, r);
    let req = &mut conn.req;
    if ahead > 0 {
        // Placed past a hole: ask for the hole once it is clearly
        // a loss (a few responses went past it, or this was the
        // READ's last), not a reordering.
        req.ooo_responses += 1;
        let end = psn_add(meta.first_psn, meta.npsn);
        let last = psn_add(psn, 1) == end;
        if (req.ooo_responses >= GAP_RESPONSES || last) && req.fast_retry() {
            stats.read_gap_retries.inc();
        }
    }
}

/// Whether `target` (one past an acknowledged PSN) lies beyond anything
/// sent: a ghost ACK.
fn psn_after_sent(req: &Requester, target: u32) -> bool {
    psn_diff(target, req.sent_hi) > 0
}

/// Whether a NAK or response PSN names a packet sent and not yet acked.
fn nak_in_window(req: &Requester, psn: u32) -> bool {
    psn_diff(psn, req.una) >= 0 && psn_before(psn, req.sent_hi)
}

/// Responses placed past a hole before the hole is asked for again.
const GAP_RESPONSES: u32 = 3;

/// Places one READ response of the READ at `una_index` (the oldest missing
/// one, or one within the window after it) into the READ's SGEs, and moves
/// `una` past everything placed.
fn place_read(
    cx: &Context<'_>,
    pd: u32,
    sq: &hwq::Consumer<hwq::SendWqe>,
    conn: &mut Connection,
    meta: WqeMeta,
    r: &Response<'_>,
) {
    let pmtu = conn.pmtu.bytes();
    let req = &mut conn.req;
    let psn = r.psn;
    let k = psn_diff(psn, meta.first_psn).max(0) as u32;
    let offset = u64::from(k) * u64::from(pmtu);
    let expect = u64::from(meta.len)
        .saturating_sub(offset)
        .min(u64::from(pmtu));
    let last = k + 1 >= meta.npsn;
    // A replay of a hole ends with a Last response in the middle of the
    // READ, so only the READ's own last PSN must end a message.
    if r.payload.len() as u64 != expect || (last && !r.ends_message) {
        // A malformed response: ignore it; the retransmit timer recovers.
        cx.stats.bad_responses.inc();
        return;
    }
    let Some(wqe) = sq.read(req.una_index) else {
        return;
    };
    let placed = crate::train::scatter_payload(cx.mem, pd, wqe.sge_list(), offset, r.payload);
    match placed {
        Ok(true) => {}
        Ok(false) => {
            // The responder's key died while the train was in flight:
            // this response never arrived (the READ is asked for again,
            // and a replay meets the dead key).
            cx.stats.train_segments_lost.inc();
            return;
        }
        Err(_) => {
            req.fail_oldest(&mut conn.timers, CqeStatus::LocalProtection);
            return;
        }
    }
    if psn != req.una {
        req.read_window.set(psn);
        return;
    }
    placed_at_una(cx, conn, meta, psn_add(psn, 1));
}

/// Responses of the READ `meta` were placed from `una` up to (not
/// including) `next`: moves `una` past them and past what was placed
/// beyond, completing the READ if that was all.
fn placed_at_una(cx: &Context<'_>, conn: &mut Connection, meta: WqeMeta, next: u32) {
    let now = cx.now;
    let rc = conn.rc;
    let req = &mut conn.req;
    let end = psn_add(meta.first_psn, meta.npsn);
    req.una = req.read_window.absorb(next, end);
    req.ooo_responses = 0;
    if req.una == end {
        req.una_index = req.una_index.wrapping_add(1);
        // ACKs that arrived while this READ's data was missing cover the
        // WQEs after it.
        let hi = req.acked_hi;
        req.advance_to(hi);
        req.on_progress(&mut conn.timers, &rc, now);
        return;
    }
    req.on_progress(&mut conn.timers, &rc, now);
    // Stopped at another hole with data already placed after it: those
    // responses came from a stream that passed the hole before our last
    // request reached the responder, so nothing in flight fills it.
    if req.read_window.hole_end(req.una, end) != end && req.fast_retry() {
        cx.stats.read_gap_retries.inc();
    }
}

/// Writes CQEs for every SQ WQE that is done, oldest first, and releases
/// their slots. Fails (the QP must enter error) after writing an error CQE.
pub(crate) fn complete_ready(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair) -> Result<(), Fatal> {
    let QueuePair {
        sq,
        conn,
        pd,
        send_cqn,
        context,
        ..
    } = qp;
    let Some(conn) = conn.as_mut() else {
        return Ok(());
    };
    let req = &mut conn.req;
    req.skip_local();
    loop {
        let index = sq.released();
        if index == req.start_index {
            return Ok(());
        }
        let meta = req.meta(index);
        let mut status = match meta.kind {
            MetaKind::Done(s) => s,
            MetaKind::SendWrite | MetaKind::Read if index != req.una_index => CqeStatus::Success,
            _ => return Ok(()),
        };
        let Some(wqe) = sq.read(index) else {
            return Err(Fatal);
        };
        // The slot decoded when its WQE started; one the driver rewrote
        // since fails (a refused slot completes with its raw `wr_id` and
        // opcode, all a completion needs).
        let request = wqe.decode().ok();
        if request.is_none() && status == CqeStatus::Success {
            status = CqeStatus::LocalQpOperation;
        }
        if meta.kind == MetaKind::Read {
            req.reads_outstanding = req.reads_outstanding.saturating_sub(1);
            if let Some(SendRequest {
                op:
                    SendOp::Read {
                        invalidate_sink: true,
                        ..
                    },
                ..
            }) = request
            {
                let key = wqe.sge_list().first().map_or(0, |s| s.key);
                if cx
                    .mem
                    .keys
                    .update(|k| k.invalidate(MemoryKey(key), *pd))
                    .is_err()
                {
                    status = CqeStatus::MemoryManagement;
                }
            }
        }
        let ok = status == CqeStatus::Success;
        let cqe = (!ok || request.is_some_and(|r| r.signaled)).then(|| Cqe {
            wr_id: wqe.wr_id,
            qp_context: *context,
            byte_len: request.map_or(0, |r| r.op.byte_len()),
            qpn,
            opcode: wqe.completion_opcode() as u8,
            status: status as u8,
            ..Cqe::default()
        });
        // Free the slot before the completion is visible: a consumer that
        // polls it may re-post at once and must find the room it implies.
        sq.release(1);
        let alive = cqe.is_none_or(|cqe| cx.complete(*send_cqn, cqe, !ok));
        if !ok || !alive {
            return Err(Fatal);
        }
    }
}

/// The retransmit timer expired: go back to the oldest unacknowledged PSN,
/// or fail the oldest WQE when the retries are used up.
pub(crate) fn on_retransmit_timer(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair) {
    let now = cx.now;
    let Some(conn) = qp.conn.as_mut() else { return };
    let rc = conn.rc;
    let req = &mut conn.req;
    conn.timers.disarm(Timer::Retransmit);
    if !req.outstanding() || conn.timers.is_armed(Timer::Rnr) {
        return;
    }
    // Packets still wait in the QP's outbox: the runtime took none since
    // (its wire had no room), so what is outstanding may never have left
    // the host and nothing timed out. Wait again instead of spending a
    // retry on sending it all once more.
    if cx.out.pending() > 0 {
        let expiries = rc.retry_count.saturating_sub(req.retry_left);
        let deadline = now.saturating_add(rc.retransmit_timeout_us(expiries));
        conn.timers.set(Timer::Retransmit, Some(deadline));
        return;
    }
    cx.stats.timeouts.inc();
    if req.retry_left == 0 {
        req.fail_oldest(&mut conn.timers, CqeStatus::RetryExceeded);
        if complete_ready(cx, qpn, qp).is_err() {
            cx.enter_error(qpn, qp);
        }
        return;
    }
    req.retry_left -= 1;
    req.retry_at = None;
    req.rewind();
    req.backoff();
    let expiries = rc.retry_count.saturating_sub(req.retry_left);
    let deadline = now.saturating_add(rc.retransmit_timeout_us(expiries));
    conn.timers.set(Timer::Retransmit, Some(deadline));
    cx.sq_doorbell(qpn);
}

/// A packet of QP `qpn` could not leave the host and never will (too big
/// for the path, refused: [`crate::device::SoftRnic::send_failed`]).
/// Sending it again would fail the same way, so the QP fails now instead
/// of retrying until its retries run out: a `request`'s oldest
/// outstanding work request completes with `LocalQpOperation` (the QP
/// could not carry it), and the QP enters error (the rest flushed, the QP
/// error event raised), as after a response the responder cannot send.
pub(crate) fn on_send_failure(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair, request: bool) {
    if qp.state != crate::qp::QpState::Connected {
        return;
    }
    if request && let Some(conn) = qp.conn.as_mut() {
        conn.req
            .fail_oldest(&mut conn.timers, CqeStatus::LocalQpOperation);
        let _ = complete_ready(cx, qpn, qp);
    }
    cx.enter_error(qpn, qp);
}

/// A packet of QP `qpn` at `psn` was not sent: a key of its gather list
/// died under the started message (the consumer deregistered or
/// invalidated its memory; the transmit turn checks a segment's keys as it
/// reads its payload, the one check after the WQE's start). The work
/// request it belongs to fails with `LocalProtection` in order, as one
/// whose start found the key dead, and the requester stops: the work
/// requests before it complete as their acknowledgements come, then this
/// one, then the QP is in error. A PSN no outstanding work request holds
/// (acknowledged meanwhile) changes nothing.
pub(crate) fn on_source_gone(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair, psn: u32) {
    if qp.state != crate::qp::QpState::Connected {
        return;
    }
    let Some(conn) = qp.conn.as_mut() else { return };
    let req = &mut conn.req;
    let mut index = req.una_index;
    while index != req.start_index {
        let meta = req.meta(index);
        let holds = psn_diff(psn, meta.first_psn) >= 0
            && psn_diff(psn, psn_add(meta.first_psn, meta.npsn)) < 0;
        if meta.kind == MetaKind::SendWrite && holds {
            req.set_meta(
                index,
                WqeMeta {
                    kind: MetaKind::Done(CqeStatus::LocalProtection),
                    ..meta
                },
            );
            req.halted = true;
            if complete_ready(cx, qpn, qp).is_err() {
                cx.enter_error(qpn, qp);
            }
            return;
        }
        index = index.wrapping_add(1);
    }
}

/// The RNR wait is over: resend from the refused PSN.
pub(crate) fn on_rnr_timer(cx: &Context<'_>, qpn: u32, qp: &mut QueuePair) {
    let now = cx.now;
    let Some(conn) = qp.conn.as_mut() else { return };
    let req = &mut conn.req;
    conn.timers.disarm(Timer::Rnr);
    req.retry_at = None;
    req.rewind();
    let deadline = now.saturating_add(conn.rc.ack_timeout_us);
    conn.timers.set(Timer::Retransmit, Some(deadline));
    cx.sq_doorbell(qpn);
}

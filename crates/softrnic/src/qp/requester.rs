//! The requester: takes SQ WQEs in order, executes local operations,
//! segments SEND/WRITE messages into PMTU packets, issues READ requests,
//! and resends from the oldest unacknowledged PSN when the completer asks
//! (go-back-N), re-reading WQEs from the ring.
//!
//! Each packet is recorded in the context's outbox ([`crate::outbox`]),
//! which the runtime takes once the QP is let go: a READ request, an
//! inline SEND or a small packet built whole, a larger SEND or WRITE
//! packet as a `Segments` description whose payload is gathered from the
//! (checked) source as it is taken; when the runtime takes trains
//! ([`crate::train`]) the description covers the rest of the message,
//! carried as one train. The first packet
//! recorded arms the retransmit timer in the connection's timer table.

use hwq::wqe::{Data, MAX_SGE, Remote, SendOp};
use hwq::{CqeStatus, MemoryKey, SendWqe, Sge};

use super::Context;
use super::timers::Timer;
use super::{Connection, Fatal, MAX_FR_PAGES, MetaKind, QueuePair, WqeMeta};
use crate::memory::Need;
use crate::memory::sg;
use crate::outbox::Recorded;
use crate::train::{Framing, Kind, MAX_TRAIN_SEGMENTS, Origin, Segments, build_segment};
use crate::wire::{
    Bth, ExtHeaders, Headers, Opcode, Reth, psn_add, psn_before, psn_diff, segment_count,
};

/// Payload bytes up to which a SEND or WRITE packet is built whole when it
/// is recorded (its payload copied into the outbox), rather than recorded
/// as `Segments` and built from the source when it leaves.
const BUILD_NOW_MAX: u64 = 512;

/// Largest message the requester accepts (bytes).
pub(crate) const MAX_MESSAGE: u64 = 1 << 30;

impl super::Requester {
    pub(crate) fn meta(&self, index: u32) -> WqeMeta {
        self.metas
            .get((index & self.mask) as usize)
            .copied()
            .unwrap_or_default()
    }

    pub(crate) fn set_meta(&mut self, index: u32, meta: WqeMeta) {
        if let Some(m) = self.metas.get_mut((index & self.mask) as usize) {
            *m = meta;
        }
    }

    /// Restarts transmission at the oldest unacknowledged PSN.
    pub(crate) fn rewind(&mut self) {
        self.send_index = self.una_index;
        self.next_psn = self.una;
    }

    /// PSNs that may be unacknowledged now.
    pub(crate) fn window(&self, rc: &super::RcConfig) -> i32 {
        self.cwnd.min(rc.max_unacked_psns).max(1) as i32
    }

    /// A retry: halve the congestion window.
    pub(crate) fn backoff(&mut self) {
        self.cwnd = (self.cwnd / 2).max(super::MIN_CWND);
    }

    /// Whether any PSN is sent and not yet acknowledged.
    pub(crate) fn outstanding(&self) -> bool {
        psn_before(self.una, self.sent_hi)
    }
}

/// Outcome of trying to start the WQE at `start_index`.
enum Start {
    /// Started (or finished locally): go on.
    Started,
    /// Must wait (window, ORD, fence, a key still in use, nothing posted).
    Blocked,
}

/// Runs the requester of a connected QP for at most `budget` packets.
/// Returns whether it stopped for the budget (more work is ready). It also
/// stops, before building the packet, when its outbox has no room
/// ([`Connection::outbox_has_room`]).
pub(crate) fn run_requester(
    cx: &Context<'_>,
    qp: &mut QueuePair,
    mut budget: u32,
) -> Result<bool, Fatal> {
    let QueuePair { sq, conn, pd, .. } = qp;
    let pd = *pd;
    let Some(conn) = conn.as_mut() else {
        return Ok(false);
    };
    if conn.timers.is_armed(Timer::Rnr) {
        return Ok(false);
    }
    sq.refresh();
    let window = conn.req.window(&conn.rc);
    loop {
        if budget == 0 {
            return Ok(true);
        }
        let req = &mut conn.req;
        // Acknowledgements may overtake a resend: skip what is acked.
        if psn_before(req.next_psn, req.una) {
            req.send_index = req.una_index;
            req.next_psn = req.una;
        }
        if req.send_index != req.start_index {
            let index = req.send_index;
            let meta = req.meta(index);
            match meta.kind {
                MetaKind::SendWrite | MetaKind::Read => {
                    if psn_diff(req.next_psn, req.una) >= window {
                        return Ok(false);
                    }
                    if !conn.outbox_has_room(cx) {
                        return Ok(false);
                    }
                    let Some(wqe) = sq.read(index) else {
                        return Err(Fatal);
                    };
                    if let Err(status) = send_packet(cx, pd, conn, &wqe, meta) {
                        // The source vanished under a started message (the
                        // driver deregistered it), or the driver rewrote
                        // the slot: the WQE fails in order.
                        let req = &mut conn.req;
                        req.set_meta(
                            index,
                            WqeMeta {
                                kind: MetaKind::Done(status),
                                ..meta
                            },
                        );
                        req.halted = true;
                        req.send_index = req.send_index.wrapping_add(1);
                    }
                    budget -= 1;
                }
                MetaKind::Done(_) | MetaKind::None => req.send_index = index.wrapping_add(1),
            }
            continue;
        }
        if req.halted {
            return Ok(false);
        }
        let index = req.start_index;
        let Some(wqe) = sq.read(index) else {
            return Ok(false);
        };
        match start(cx, pd, sq, conn, &wqe, index, window) {
            Start::Started => {}
            Start::Blocked => return Ok(false),
        }
    }
}

/// Whether a WQE started and not yet completed names key index `key` in
/// its local scatter/gather list (a local operation on that key must wait,
/// or a retransmission would find the key changed).
fn key_in_use(sq: &hwq::Consumer<SendWqe>, conn: &Connection, key: MemoryKey) -> bool {
    let req = &conn.req;
    let mut i = sq.released();
    while i != req.start_index {
        if matches!(req.meta(i).kind, MetaKind::SendWrite | MetaKind::Read)
            && sq.read_with(i, |w| {
                w.decode().is_ok_and(|r| r.op.gather().is_some())
                    && w.sge_list()
                        .iter()
                        .any(|s| MemoryKey(s.key).index() == key.index())
            }) == Some(true)
        {
            return true;
        }
        i = i.wrapping_add(1);
    }
    false
}

fn finish_local(conn: &mut Connection, index: u32, status: CqeStatus) {
    let req = &mut conn.req;
    req.set_meta(
        index,
        WqeMeta {
            first_psn: req.alloc_psn,
            npsn: 0,
            len: 0,
            kind: MetaKind::Done(status),
        },
    );
    if status != CqeStatus::Success {
        req.halted = true;
    }
    req.start_index = index.wrapping_add(1);
    req.send_index = req.start_index;
}

fn start(
    cx: &Context<'_>,
    pd: u32,
    sq: &hwq::Consumer<SendWqe>,
    conn: &mut Connection,
    wqe: &SendWqe,
    index: u32,
    window: i32,
) -> Start {
    // The slot is the driver's memory: one no encoder wrote fails here,
    // in order, as a WQE the QP cannot execute.
    let Ok(request) = wqe.decode() else {
        finish_local(conn, index, CqeStatus::LocalQpOperation);
        return Start::Started;
    };
    let (read, data) = match request.op {
        SendOp::Send { data, .. } | SendOp::Write { data, .. } => (false, data),
        SendOp::Read { sink, .. } => (true, Data::Gather(sink)),
        SendOp::FastRegister(_) | SendOp::Bind(_) | SendOp::LocalInvalidate { .. } => {
            if request
                .op
                .local_key()
                .is_some_and(|key| key_in_use(sq, conn, key))
            {
                return Start::Blocked;
            }
            let status = execute_local(cx, pd, conn, &request.op);
            finish_local(conn, index, status);
            return Start::Started;
        }
    };
    let ord = conn.path.outbound_reads;
    let req = &mut conn.req;
    if request.read_fence && req.reads_outstanding > 0 {
        return Start::Blocked;
    }
    if read && ord > 0 && req.reads_outstanding >= ord {
        return Start::Blocked;
    }
    if psn_diff(req.next_psn, req.una) >= window {
        return Start::Blocked;
    }
    let inline = matches!(data, Data::Inline { .. });
    let len = match data {
        Data::Inline { len } => u64::from(len),
        Data::Gather(_) => sg::total(wqe.sge_list()),
    };
    let status = if read && ord == 0 {
        Some(CqeStatus::LocalQpOperation)
    } else if len > MAX_MESSAGE {
        Some(CqeStatus::LocalLength)
    } else if !inline {
        let need = if read {
            Need::LocalWrite
        } else {
            Need::LocalRead
        };
        let ok = sg::check_all(&cx.mem.keys.read(), pd, wqe.sge_list(), need);
        (!ok).then_some(CqeStatus::LocalProtection)
    } else {
        None
    };
    if let Some(status) = status {
        finish_local(conn, index, status);
        return Start::Started;
    }
    let req = &mut conn.req;
    let npsn = segment_count(len as u32, conn.pmtu);
    // A resend loop always ends at the allocation point.
    req.next_psn = req.alloc_psn;
    let meta = WqeMeta {
        first_psn: req.alloc_psn,
        npsn,
        len: len as u32,
        kind: if read {
            MetaKind::Read
        } else {
            MetaKind::SendWrite
        },
    };
    req.set_meta(index, meta);
    req.alloc_psn = psn_add(req.alloc_psn, npsn);
    req.start_index = index.wrapping_add(1);
    req.send_index = index;
    if read {
        req.reads_outstanding += 1;
    }
    Start::Started
}

/// Executes a fast-register, bind or local invalidate.
fn execute_local(cx: &Context<'_>, pd: u32, conn: &mut Connection, op: &SendOp) -> CqeStatus {
    let result = match op {
        SendOp::FastRegister(fr) => {
            let n = fr.page_count as usize;
            let bytes = n * 8;
            if n == 0 || n > MAX_FR_PAGES || bytes > conn.page_bytes.len() {
                return CqeStatus::MemoryManagement;
            }
            let Some(scratch) = conn.page_bytes.get_mut(..bytes) else {
                return CqeStatus::MemoryManagement;
            };
            if cx.mem.dma.read(fr.page_list, scratch).is_err() {
                return CqeStatus::LocalProtection;
            }
            conn.pages.clear();
            conn.pages.extend(
                scratch
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
            );
            cx.mem.keys.update(|k| {
                k.fast_register(fr.key, pd, fr.access, fr.va, fr.length, fr.fbo, &conn.pages)
            })
        }
        SendOp::Bind(b) => cx
            .mem
            .keys
            .update(|k| k.bind(b.window, b.region, pd, b.access, b.va, b.length)),
        SendOp::LocalInvalidate { key } => cx.mem.keys.update(|k| k.invalidate(*key, pd)),
        SendOp::Send { .. } | SendOp::Write { .. } | SendOp::Read { .. } => {
            return CqeStatus::LocalQpOperation;
        }
    };
    match result {
        Ok(()) => CqeStatus::Success,
        Err(_) => CqeStatus::MemoryManagement,
    }
}

/// The requester's bookkeeping of the PSNs up to `next` recorded in the
/// outbox (one packet, a READ request covering its response PSNs, or a
/// run of packets), written once for every way of sending: the next PSN,
/// the WQE done with if they `close` its message, the AckReq spacing (only
/// a lone packet goes without AckReq), the highest PSN sent, and the
/// retransmit timer.
fn sent(conn: &mut Connection, now: u64, next: u32, close: bool, ack_req: bool) {
    let req = &mut conn.req;
    req.next_psn = next;
    if close {
        req.send_index = req.send_index.wrapping_add(1);
    }
    req.since_ack_req = if ack_req { 0 } else { req.since_ack_req + 1 };
    if psn_before(req.sent_hi, req.next_psn) {
        req.sent_hi = req.next_psn;
    }
    let deadline = now.saturating_add(conn.rc.ack_timeout_us);
    conn.timers.arm_if_idle(Timer::Retransmit, deadline);
}

/// Records the packet at `next_psn` of the WQE at `send_index` in the
/// outbox (or, when the runtime takes trains, the rest of a
/// SEND or WRITE as one run: as many packets as the window allows, up to
/// [`MAX_TRAIN_SEGMENTS`], the last asking for an acknowledgement). A
/// full outbox records nothing and changes nothing (the caller asked for
/// room first). An error is the status the WQE fails with: its source (or
/// inline payload) no longer covers the message, or the slot no longer
/// decodes to the operation it started as.
fn send_packet(
    cx: &Context<'_>,
    pd: u32,
    conn: &mut Connection,
    wqe: &SendWqe,
    meta: WqeMeta,
) -> Result<(), CqeStatus> {
    // Read again from the driver's memory, so decoded again.
    let op = wqe.decode().map_err(|_| CqeStatus::LocalQpOperation)?.op;
    if meta.kind == MetaKind::Read {
        let SendOp::Read { remote, .. } = op else {
            return Err(CqeStatus::LocalQpOperation);
        };
        return send_read_request(cx, conn, remote, meta);
    }
    let (data, kind) = message_kind(op, meta.len).ok_or(CqeStatus::LocalQpOperation)?;
    let now = cx.now;
    let req = &mut conn.req;
    let psn = req.next_psn;
    let k = psn_diff(psn, meta.first_psn).max(0) as u32;
    let window = req.window(&conn.rc);
    let resend = psn_before(psn, req.sent_hi);
    let inline = matches!(data, Data::Inline { .. });
    // An inline payload is in the WQE, not behind a gather list nor in
    // memory a train could point at: it always leaves as datagrams, built
    // now.
    let sges = if inline { &[] } else { wqe.sge_list() };
    let train = !inline && cx.trains;
    let (count, ack_req) = if train {
        let room = (window - psn_diff(psn, req.una)).max(1) as u32;
        let count = meta
            .npsn
            .saturating_sub(k)
            .max(1)
            .min(room)
            .min(MAX_TRAIN_SEGMENTS);
        (count, true)
    } else {
        let last = k + 1 >= meta.npsn;
        let ack_req = last
            || req.since_ack_req + 1 >= conn.rc.ack_req_every.max(1)
            || psn_diff(psn_add(psn, 1), req.una) >= window;
        (1, ack_req)
    };
    let segs = message_segments(conn, pd, sges, kind, meta, count, ack_req);
    let recorded = if inline || (count == 1 && segs.len <= BUILD_NOW_MAX) {
        // Built whole now: an inline payload is in the WQE, and a small
        // one costs less to copy than to describe and check twice.
        let seg = segs.segment(0);
        let headers = segs.headers(&seg);
        let chunk = if inline {
            let payload = wqe.inline_data();
            Some(
                payload
                    .get(seg.at as usize..seg.at as usize + seg.len)
                    .ok_or(CqeStatus::LocalProtection)?,
            )
        } else {
            None
        };
        let recorded = cx.out.datagram(resend, |slot| match chunk {
            Some(chunk) => crate::wire::build(&headers, &[chunk], slot).ok(),
            None => build_segment(cx.mem, &segs, &seg, &headers, Framing::Datagram, slot),
        });
        match recorded {
            Recorded::Yes => true,
            Recorded::Refused => return Err(CqeStatus::LocalProtection),
            Recorded::Full => false,
        }
    } else {
        // Its keys are checked once more, when the runtime takes it
        // (`Outbox::next`): a key dead by then fails the WQE there
        // (`completer::on_source_gone`).
        cx.out.segments(&segs, resend)
    };
    if recorded {
        sent(conn, now, psn_add(psn, count), segs.closes, ack_req);
    }
    Ok(())
}

/// Records the READ request at `next_psn` of the WQE at `send_index`
/// (`meta`), reading `remote`.
fn send_read_request(
    cx: &Context<'_>,
    conn: &mut Connection,
    remote: Remote,
    meta: WqeMeta,
) -> Result<(), CqeStatus> {
    let now = cx.now;
    let pmtu = conn.pmtu.bytes();
    let req = &mut conn.req;
    let psn = req.next_psn;
    let k = psn_diff(psn, meta.first_psn).max(0) as u32;
    let offset = u64::from(k) * u64::from(pmtu);
    let resend = psn_before(psn, req.sent_hi);
    let mut headers = Headers {
        ip: conn.ip.for_packet(psn),
        bth: Bth::new(Opcode::RDMA_READ_REQUEST, conn.path.remote_qpn, psn),
        ext: ExtHeaders::NONE,
    };
    // A READ is one request packet covering all its response PSNs;
    // asked again after a lost response, it covers the hole from
    // there to the first response already placed (or to the end).
    let end = psn_add(meta.first_psn, meta.npsn);
    let hole_end = if req.send_index == req.una_index && psn == req.una {
        req.read_window.hole_end(psn, end)
    } else {
        end
    };
    let hole = u64::from(psn_diff(hole_end, psn).max(0) as u32) * u64::from(pmtu);
    let rest = u64::from(meta.len).saturating_sub(offset);
    headers.ext.reth = Some(Reth {
        va: remote.addr.wrapping_add(offset),
        rkey: remote.key.0,
        dma_len: rest.min(hole) as u32,
    });
    headers.bth.ack_req = true;
    match cx
        .out
        .datagram(resend, |slot| crate::wire::build(&headers, &[], slot).ok())
    {
        Recorded::Yes => sent(conn, now, end, true, true),
        Recorded::Refused => return Err(CqeStatus::LocalProtection),
        Recorded::Full => {}
    }
    Ok(())
}

/// What the packets of SEND or WRITE `op` (of `len` bytes) are, and the
/// data they carry (`None`: not a SEND or WRITE).
fn message_kind(op: SendOp, len: u32) -> Option<(Data, Kind)> {
    Some(match op {
        SendOp::Send {
            data,
            solicited,
            invalidate,
        } => (
            data,
            Kind::Send {
                invalidate: invalidate.map(|k| k.0),
                solicited,
            },
        ),
        SendOp::Write { data, remote } => (
            data,
            Kind::Write {
                reth: Reth {
                    va: remote.addr,
                    rkey: remote.key.0,
                    dma_len: len,
                },
            },
        ),
        _ => return None,
    })
}

/// The next `count` packets (from `next_psn`) of the SEND or WRITE `kind`
/// gathering `sges` (none: inline) (`meta`), described once ([`Segments`]) for both ways of sending them:
/// built into a datagram here, or carried as a train. `ack_req`: the last
/// of them asks for an acknowledgement.
fn message_segments(
    conn: &Connection,
    pd: u32,
    sges: &[Sge],
    kind: Kind,
    meta: WqeMeta,
    count: u32,
    ack_req: bool,
) -> Segments {
    let pmtu = conn.pmtu.bytes();
    let psn = conn.req.next_psn;
    let k = psn_diff(psn, meta.first_psn).max(0) as u32;
    let offset = u64::from(k) * u64::from(pmtu);
    let len = u64::from(meta.len)
        .saturating_sub(offset)
        .min(u64::from(count) * u64::from(pmtu));
    let mut gather = [Sge::default(); MAX_SGE];
    for (to, from) in gather.iter_mut().zip(sges) {
        *to = *from;
    }
    Segments {
        pd,
        origin: Origin::Gather {
            count: sges.len() as u8,
            sges: gather,
        },
        at: offset,
        len,
        pmtu,
        ip: conn.ip,
        dest_qp: conn.path.remote_qpn,
        first_psn: psn,
        count,
        kind,
        opens: k == 0,
        closes: k + count >= meta.npsn,
        ack_req,
    }
}

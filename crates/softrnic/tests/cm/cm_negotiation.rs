//! What a handshake sets in each side's QP, read back from the device and
//! checked against the REQ and REP a capture recorded, as Linux's IB CM
//! (cm.c) sets them:
//!
//! * Starting PSN: each message's is the PSN its sender's receive queue
//!   expects, and the other side sends from it (REQ → acceptor's send
//!   queue, REP → initiator's send queue);
//! * retransmit timeout: the acceptor's from the REQ's Local ACK Timeout,
//!   the initiator's from the REP's Target ACK Delay (`cm_ack_timeout`);
//! * retry counts: the REQ's Retry Count for both QPs, the RNR Retry Count
//!   of the other side's message for each.
//!
//! A "foreign" peer (the values rxe sends) is made by rewriting the REQ or
//! REP in flight, its ICRC recomputed.

use crate::common;
use hwq::{Connections, Device};

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::common::net::{Ev, Recorder, accept_params};
use common::*;
use hwq::device::{ConnectParams, EventSink};
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus};
use links::{Capture, Direction, Faults};
use softrnic::cm::ack_timeout::{LOCAL_CA_ACK_DELAY, acceptor, initiator, offered};
use softrnic::device::SoftRnic;
use softrnic::engine::QpPsns;
use softrnic::qp::{Negotiated, QpState, RcConfig, ib_timeout_us};
use softrnic::wire::icrc::ipv4_datagram_icrc;
use softrnic::wire::{CmMessage, RepMsg, ReqMsg, icrc_to_wire, parse, parse_cm};
use zerocopy::FromBytes;

const STEPS: u64 = 200_000;

/// Every datagram a device sent, in order.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<Vec<u8>>>>);

impl Capture for Sent {
    fn capture(&self, direction: Direction, datagram: &[u8]) {
        if matches!(direction, Direction::Transmit) {
            self.0.lock().unwrap().push(datagram.to_vec());
        }
    }
}

impl Sent {
    /// The first CM message of kind `pick` sent.
    fn cm<T: Copy>(&self, pick: impl Fn(CmMessage<'_>) -> Option<T>) -> T {
        let sent = self.0.lock().unwrap();
        sent.iter()
            .find_map(|d| {
                let p = parse(d).ok()?;
                (p.bth.dest_qp == 1).then_some(())?;
                let (_, m) = parse_cm(p.payload).ok()?;
                pick(m)
            })
            .expect("the capture holds the message")
    }

    /// PSNs of the RC packets (not to QP1) sent, in order.
    fn rc_psns(&self) -> Vec<u32> {
        let sent = self.0.lock().unwrap();
        sent.iter()
            .filter_map(|d| parse(d).ok())
            .filter(|p| p.bth.dest_qp != 1)
            .map(|p| p.bth.psn)
            .collect()
    }
}

/// The fields of a REQ the tests check.
#[derive(Clone, Copy, Debug)]
struct Req {
    psn: u32,
    local_ack_timeout: u8,
    retry_count: u8,
    rnr_retry: u8,
}

/// The fields of a REP the tests check.
#[derive(Clone, Copy, Debug)]
struct Rep {
    psn: u32,
    target_ack_delay: u8,
    rnr_retry: u8,
}

fn req(m: CmMessage<'_>) -> Option<Req> {
    match m {
        CmMessage::Req(r) => Some(Req {
            psn: r.starting_psn(),
            local_ack_timeout: r.primary_path().local_ack_timeout(),
            retry_count: r.retry_count(),
            rnr_retry: r.rnr_retry_count(),
        }),
        _ => None,
    }
}

fn rep(m: CmMessage<'_>) -> Option<Rep> {
    match m {
        CmMessage::Rep(r) => Some(Rep {
            psn: r.starting_psn(),
            target_ack_delay: r.target_ack_delay(),
            rnr_retry: r.rnr_retry_count(),
        }),
        _ => None,
    }
}

fn recorder(dev: &SoftRnic) -> Arc<Recorder> {
    let r = Arc::new(Recorder::default());
    // Never dropped: the device may deliver to it until the process ends.
    std::mem::forget(r.clone());
    // SAFETY: the recorder lives for the rest of the process (see above)
    // and its `Arc` allocation does not move.
    dev.attach(unsafe { EventSink::new(&*r) }).unwrap();
    r
}

fn events(r: &Recorder) -> Vec<Ev> {
    r.cm.lock().unwrap().clone()
}

/// Rewrites a CM MAD in flight; returns whether it did.
type Rewrite = fn(&mut [u8]) -> bool;

/// One step of `w` as [`World::step`], each delivered datagram first
/// offered to `rewrite`.
fn step(w: &mut World, rewrite: Rewrite) -> bool {
    w.steps += 1;
    let now = w.clock.now();
    let mut worked = false;
    while let Some((dst, mut bytes)) = w.fabric.take_due(now) {
        worked = true;
        rewrite_mad(&mut bytes, rewrite);
        if w.a.reaches(dst) {
            w.a.receive(&bytes);
        } else if w.b.reaches(dst) {
            w.b.receive(&bytes);
        }
    }
    worked |= w.a.poll();
    worked |= w.b.poll();
    worked || advance_to_next_event(&w.clock, &w.fabric, [&w.a, &w.b])
}

/// IPv4 20 + UDP 8 + BTH 12 + DETH 8: where a MAD starts.
const MAD_AT: usize = 48;
/// The CM message after the 24-byte MAD header.
const CM_AT: usize = MAD_AT + 24;

/// Offers an IPv4 datagram to QP1 to `rewrite` and, if it changed it,
/// puts the ICRC right again (a peer that sent those values would have).
fn rewrite_mad(datagram: &mut [u8], rewrite: Rewrite) {
    let to_qp1 = parse(datagram).is_ok_and(|p| p.bth.dest_qp == 1);
    if !to_qp1 || !rewrite(datagram) {
        return;
    }
    let covered = datagram.len() - 4;
    let icrc = ipv4_datagram_icrc(&datagram[..covered]).unwrap();
    datagram[covered..].copy_from_slice(&icrc_to_wire(icrc));
}

/// The CM message bytes of a datagram to QP1 whose MAD has attribute
/// `attr`.
fn message(datagram: &mut [u8], attr: u16) -> Option<&mut [u8]> {
    let at = u16::from_be_bytes([datagram[MAD_AT + 16], datagram[MAD_AT + 17]]);
    (at == attr).then(|| datagram.get_mut(CM_AT..))?
}

/// The values Linux 6.1's rxe puts in a REQ (Local ACK Timeout
/// `cm_ack_timeout(15, 16)` = 17) with a Retry Count of 5 and RNR Retry
/// Count 3.
fn as_rxe_req(d: &mut [u8]) -> bool {
    let Some(bytes) = message(d, softrnic::wire::cm::ATTR_REQ) else {
        return false;
    };
    ReqMsg::mut_from_prefix(bytes).is_ok_and(|(m, _)| {
        m.primary_path_mut().set_local_ack_timeout(17);
        m.set_retry_count(5);
        m.set_rnr_retry_count(3);
        true
    })
}

/// The values rxe puts in a REP (Target ACK Delay 15, its CA ACK delay)
/// with an RNR Retry Count of 4.
fn as_rxe_rep(d: &mut [u8]) -> bool {
    let Some(bytes) = message(d, softrnic::wire::cm::ATTR_REP) else {
        return false;
    };
    RepMsg::mut_from_prefix(bytes).is_ok_and(|(m, _)| {
        m.set_target_ack_delay(15);
        m.set_rnr_retry_count(4);
        true
    })
}

fn as_is(_: &mut [u8]) -> bool {
    false
}

struct Handshake {
    w: World,
    qa: Qp,
    qb: Qp,
    /// What A (initiator) and B (acceptor) sent.
    sent_a: Sent,
    sent_b: Sent,
}

/// A connects to B through connection management with both devices on
/// the default reliability configuration (following the negotiation),
/// the MADs offered to `rewrite` on their way.
fn handshake(rewrite: Rewrite) -> Handshake {
    let mut w = World::new(Faults::default(), 1024, 1 << 20);
    for node in [&w.a, &w.b] {
        node.dev.set_default_rc_config(RcConfig::default());
    }
    let (sent_a, sent_b) = (Sent::default(), Sent::default());
    w.a.set_capture(Some(Box::new(sent_a.clone())));
    w.b.set_capture(Some(Box::new(sent_b.clone())));
    let (ra, rb) = (recorder(&w.a.dev), recorder(&w.b.dev));
    let service = SocketAddr::new(w.b.addr, 445);
    w.b.dev.cm_listen(service).unwrap();
    let (qa, qb) = (w.a.qp(16), w.b.qp(16));
    let params = ConnectParams {
        local: SocketAddr::new(w.a.addr, 0),
        remote: service,
        inbound_reads: 1,
        outbound_reads: 1,
        private_data: b"",
    };
    let (ca, _) = w.a.dev.cm_connect(qa.qpn, &params).unwrap();
    let request = |_: &mut World| {
        events(&rb)
            .iter()
            .find_map(|e| match e {
                Ev::ConnectRequest { conn_id, .. } => Some(*conn_id),
                _ => None,
            })
            .is_some()
    };
    run_until(&mut w, STEPS, |w| step(w, rewrite), request);
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = events(&rb).pop() else {
        panic!("no connect request")
    };
    w.b.dev
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    run_until(
        &mut w,
        STEPS,
        |w| step(w, rewrite),
        |_| events(&ra).iter().any(|e| matches!(e, Ev::Replied { .. })),
    );
    w.a.dev.cm_establish(ca).unwrap();
    run_until(
        &mut w,
        STEPS,
        |w| step(w, rewrite),
        |_| events(&rb).contains(&Ev::Established { conn_id: cb }),
    );
    assert_eq!(
        (w.a.state(&qa), w.b.state(&qb)),
        (QpState::Connected, QpState::Connected)
    );
    Handshake {
        w,
        qa,
        qb,
        sent_a,
        sent_b,
    }
}

/// The rule of Linux's IB CM, both sides, and the first SEND each way
/// leaves from the PSN the other side announced and completes.
#[test]
fn each_side_sends_from_the_starting_psn_of_the_message_it_received() {
    let Handshake {
        mut w,
        mut qa,
        mut qb,
        sent_a,
        sent_b,
    } = handshake(as_is);
    let (req, rep) = (sent_a.cm(req), sent_b.cm(rep));
    assert_ne!(
        req.psn, rep.psn,
        "two random PSNs: the test tells them apart"
    );
    let psns = |dev: &SoftRnic, qp: &Qp| dev.qp_psns(qp.qpn.raw()).unwrap();
    assert_eq!(
        psns(&w.a.dev, &qa),
        QpPsns {
            send: rep.psn,
            recv: req.psn
        },
        "initiator: sends from the REP's, expects its REQ's"
    );
    assert_eq!(
        psns(&w.b.dev, &qb),
        QpPsns {
            send: req.psn,
            recv: rep.psn
        },
        "acceptor: sends from the REQ's, expects its REP's"
    );
    // Data both ways: the first packet of each side carries the PSN the
    // other announced, and each is accepted (no NAK, no retransmission).
    let all = Access::LOCAL_WRITE;
    let (ba, bb) = (w.a.register(4096, all), w.b.register(4096, all));
    w.a.mem.fill(ba.logical, &pattern(1, 100));
    w.b.mem.fill(bb.logical, &pattern(2, 100));
    w.a.post_recv(&mut qa, 10, &[ba.sge(2048, 2048)]);
    w.b.post_recv(&mut qb, 20, &[bb.sge(2048, 2048)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[ba.sge(0, 100)]));
    w.b.post_send(&mut qb, wqe(SendOpcode::Send, 2, &[bb.sge(0, 100)]));
    w.run_until(STEPS, |_| {
        for q in [&mut qa, &mut qb] {
            q.scq.drain();
            q.rcq.drain();
        }
        [&qa, &qb]
            .iter()
            .all(|q| !q.scq.seen.is_empty() && !q.rcq.seen.is_empty())
    });
    for (q, wr) in [(&qa, 1), (&qb, 2)] {
        assert_eq!(
            (q.scq.seen[0].wr_id, q.scq.seen[0].cqe_status()),
            (wr, CqeStatus::Success)
        );
        let r = q.rcq.seen[0];
        assert_eq!(
            (r.op(), r.cqe_status(), r.byte_len),
            (Some(CqeOpcode::Receive), CqeStatus::Success, 100)
        );
    }
    assert_eq!(w.b.mem.get(bb.logical + 2048, 100), pattern(1, 100));
    assert_eq!(w.a.mem.get(ba.logical + 2048, 100), pattern(2, 100));
    // Each side's first RC packet is its SEND (the other's ACK follows).
    assert_eq!(sent_a.rc_psns().first(), Some(&rep.psn));
    assert_eq!(sent_b.rc_psns().first(), Some(&req.psn));
    for dev in [&w.a.dev, &w.b.dev] {
        let s = dev.stats();
        assert_eq!((s.timeouts, s.seq_naks_received), (0, 0), "{s:?}");
    }
}

/// Two rsndk ends: the REQ offers `cm_ack_timeout(our ACK delay, packet
/// lifetime)`, the REP announces our ACK delay, and both QPs run with
/// the exponent the messages give them.
#[test]
fn both_sides_take_the_timeout_and_retries_the_messages_carry() {
    let h = handshake(as_is);
    let (req, rep) = (h.sent_a.cm(req), h.sent_b.cm(rep));
    assert_eq!(req.local_ack_timeout, offered());
    assert_eq!(rep.target_ack_delay, LOCAL_CA_ACK_DELAY);
    assert_eq!((req.retry_count, req.rnr_retry, rep.rnr_retry), (7, 7, 7));
    let rc = |dev: &SoftRnic, qp: &Qp| dev.qp_rc_config(qp.qpn.raw()).unwrap();
    let (a, b) = (rc(&h.w.a.dev, &h.qa), rc(&h.w.b.dev, &h.qb));
    assert_eq!(
        a.ack_timeout_us,
        ib_timeout_us(initiator(rep.target_ack_delay))
    );
    assert_eq!(
        b.ack_timeout_us,
        ib_timeout_us(acceptor(req.local_ack_timeout))
    );
    assert_eq!(a.ack_timeout_us, 134_217, "4.096 µs × 2^15");
    assert_eq!(b.ack_timeout_us, 134_217);
}

/// Against the values rxe sends: as acceptor, our QP takes the REQ's
/// Local ACK Timeout 17 (537 ms), its Retry Count and RNR Retry Count; as
/// initiator, `cm_ack_timeout(15, 14)` = 16 (268 ms) and the REP's RNR
/// Retry Count.
#[test]
fn a_peer_s_values_set_our_qps() {
    let h = handshake(as_rxe_req);
    let b = h.w.b.dev.qp_rc_config(h.qb.qpn.raw()).unwrap();
    assert_eq!(
        (b.ack_timeout_us, b.retry_count, b.rnr_retry),
        (536_870, 5, 3),
        "acceptor: the REQ's timeout, retry count and RNR retry count"
    );
    let a = h.w.a.dev.qp_rc_config(h.qa.qpn.raw()).unwrap();
    assert_eq!(
        (a.ack_timeout_us, a.retry_count, a.rnr_retry),
        (134_217, 7, 7),
        "initiator: untouched by what its REQ became on the way"
    );

    let h = handshake(as_rxe_rep);
    let a = h.w.a.dev.qp_rc_config(h.qa.qpn.raw()).unwrap();
    assert_eq!(
        (a.ack_timeout_us, a.retry_count, a.rnr_retry),
        (268_435, 7, 4),
        "initiator: cm_ack_timeout(Target ACK Delay 15, lifetime 14) = 16, \
         its own retry count, the REP's RNR retry count"
    );
    let b = h.w.b.dev.qp_rc_config(h.qb.qpn.raw()).unwrap();
    assert_eq!((b.ack_timeout_us, b.rnr_retry), (134_217, 7));
}

/// The negotiated timeout drives the retransmit timer: with every packet
/// lost, the first retransmission waits the QP's timeout, not the fixed
/// 8 ms of the default configuration.
#[test]
fn the_retransmit_timer_runs_on_the_negotiated_timeout() {
    let Handshake { mut w, mut qa, .. } = handshake(as_rxe_rep);
    let timeout = w.a.dev.qp_rc_config(qa.qpn.raw()).unwrap().ack_timeout_us;
    assert_eq!(
        timeout,
        Negotiated {
            timeout: 16,
            retry_count: 7,
            rnr_retry: 4
        }
        .ack_timeout_us()
    );
    w.faults.set_faults(Faults {
        loss: 1.0,
        ..Faults::default()
    });
    let buf = w.a.register(64, Access::LOCAL_WRITE);
    let sent_at = w.clock.now();
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[buf.sge(0, 64)]));
    w.run_until(STEPS, |w| w.a.dev.stats().timeouts > 0);
    let waited = w.clock.now() - sent_at;
    assert!(
        (timeout..timeout + 1_000).contains(&waited),
        "first timeout after {waited} µs, negotiated {timeout} µs"
    );
}

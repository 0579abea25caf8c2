//! Holding the ACK of a lone SEND for the answer (`RcConfig::ack_defer_us`):
//! the ACK leaves with the answer; a QP that does not send (or stopped
//! answering, after one hold timed out) acknowledges at once. Times are
//! simulated.

use crate::common;

use common::*;
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus};
use links::Faults;
use softrnic::qp::RcConfig;

const HOLD_US: u64 = 50;
const WIRE_DELAY_US: u64 = 5;

fn setup() -> (World, Qp, Qp, Buf, Buf) {
    let w = World::new(
        Faults {
            delay_us: WIRE_DELAY_US,
            ..Faults::default()
        },
        4096,
        1 << 20,
    );
    let qa = w.a.qp(16);
    let qb = w.b.qp(16);
    let rc = RcConfig {
        ack_defer_us: HOLD_US,
        ..fast_rc()
    };
    w.a.dev.set_qp_rc_config(qa.qpn.raw(), rc).unwrap();
    w.b.dev.set_qp_rc_config(qb.qpn.raw(), rc).unwrap();
    w.connect(&qa, &qb, 4096, 100, 200, 1);
    let ba = w.a.register(4096, Access::LOCAL_WRITE);
    let bb = w.b.register(4096, Access::LOCAL_WRITE);
    (w, qa, qb, ba, bb)
}

/// B sends once on its QP, so it holds the ACK of A's next lone SEND; the
/// CQEs of that exchange are consumed.
fn prime(w: &mut World, qa: &mut Qp, qb: &mut Qp, ba: Buf, bb: Buf) {
    w.a.post_recv(qa, 100, &[ba.sge(128, 64)]);
    w.b.post_send(qb, wqe(SendOpcode::Send, 101, &[bb.sge(0, 64)]));
    w.run_until(10_000, |_| {
        qa.rcq.drain();
        qb.scq.drain();
        !qa.rcq.seen.is_empty() && !qb.scq.seen.is_empty()
    });
    qa.rcq.seen.clear();
    qb.scq.seen.clear();
}

#[test]
fn the_ack_of_a_send_leaves_with_the_answer() {
    let (mut w, mut qa, mut qb, ba, bb) = setup();
    prime(&mut w, &mut qa, &mut qb, ba, bb);
    w.b.post_recv(&mut qb, 1, &[bb.sge(0, 64)]);
    w.a.post_recv(&mut qa, 2, &[ba.sge(64, 64)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 3, &[ba.sge(0, 64)]));
    w.run_until(10_000, |_| qb.rcq.drain() > 0);
    // B's consumer answers a little later, well within the hold.
    w.clock.set(w.clock.now() + 2 * WIRE_DELAY_US);
    w.b.post_send(&mut qb, wqe(SendOpcode::Send, 4, &[bb.sge(0, 64)]));
    let mut send_done_with_answer = None;
    w.run_until(10_000, |_| {
        if qa.scq.drain() > 0 {
            send_done_with_answer = Some(qa.rcq.drain() > 0 || !qa.rcq.seen.is_empty());
        }
        send_done_with_answer.is_some()
    });
    // Without the hold, the ACK would have completed A's SEND one wire
    // delay after the request, before B answered.
    assert_eq!(send_done_with_answer, Some(true));
    let c = qa.scq.seen[0];
    assert_eq!((c.wr_id, c.cqe_status()), (3, CqeStatus::Success));
    let r = qa.rcq.seen[0];
    assert_eq!((r.wr_id, r.op()), (2, Some(CqeOpcode::Receive)));
}

#[test]
fn a_peer_that_stops_answering_gets_acks_at_once_after_one_hold() {
    let (mut w, mut qa, mut qb, ba, bb) = setup();
    prime(&mut w, &mut qa, &mut qb, ba, bb);
    for i in 0..2 {
        w.b.post_recv(&mut qb, 10 + i, &[bb.sge(0, 64)]);
    }
    let t0 = w.clock.now();
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 3, &[ba.sge(0, 64)]));
    w.run_until(10_000, |_| qa.scq.drain() > 0);
    let t1 = w.clock.now();
    assert!(t1 - t0 >= HOLD_US, "the ACK was held ({} us)", t1 - t0);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 4, &[ba.sge(0, 64)]));
    w.run_until(10_000, |_| qa.scq.drain() > 0);
    let t2 = w.clock.now();
    assert!(
        t2 - t1 < HOLD_US,
        "after a hold timed out, ACKs leave at once ({} us)",
        t2 - t1
    );
    assert!(
        qa.scq
            .seen
            .iter()
            .all(|c| c.cqe_status() == CqeStatus::Success)
    );
    assert_eq!(qa.scq.seen.len(), 2);
    qb.rcq.drain();
    assert_eq!(qb.rcq.seen.len(), 2);
}

#[test]
fn a_qp_that_never_sent_acknowledges_at_once() {
    let (mut w, mut qa, mut qb, ba, bb) = setup();
    w.b.post_recv(&mut qb, 1, &[bb.sge(0, 64)]);
    let t0 = w.clock.now();
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 2, &[ba.sge(0, 64)]));
    w.run_until(10_000, |_| qa.scq.drain() > 0);
    let t1 = w.clock.now();
    assert!(
        t1 - t0 < HOLD_US,
        "no hold on a receive-only QP ({} us)",
        t1 - t0
    );
}

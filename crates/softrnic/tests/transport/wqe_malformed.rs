//! Send and receive slots no driver writes: the device reads the driver's
//! ring memory as untrusted, so such a slot completes in error
//! (`LocalQpOperation`), in order, and the QP fails as for any failed WQE;
//! nothing panics.

use crate::common;

use common::*;
use hwq::Doorbells;
use hwq::wqe::{Access, MAX_INLINE, MAX_SGE, SendOpcode, WqeFlags};
use hwq::{CqeOpcode, CqeStatus, RecvWqe, SendWqe};
use links::Faults;
use softrnic::qp::QpState;

/// Posts a good SEND, `bad`, and another good SEND, and checks that `bad`
/// failed as a WQE the QP cannot execute, in order.
fn fails_in_order(what: &str, corrupt: impl Fn(&mut SendWqe)) {
    let mut w = World::new(
        Faults {
            delay_us: 5,
            ..Faults::default()
        },
        4096,
        8 << 20,
    );
    let mut qa = w.a.qp(32);
    let mut qb = w.b.qp(32);
    w.connect(&qa, &qb, 1024, 100, 200, 4);
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    let dst = w.b.register(4096, Access::LOCAL_WRITE);
    for i in 0..3 {
        w.b.post_recv(&mut qb, i, &[dst.sge(0, 4096)]);
    }
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 64)]));
    let mut bad = wqe(SendOpcode::Send, 2, &[src.sge(0, 64)]);
    corrupt(&mut bad);
    w.a.post_send(&mut qa, bad);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 3, &[src.sge(0, 64)]));
    w.run_until(100_000, |_| {
        qa.scq.drain();
        qa.scq.seen.len() >= 3
    });
    let seen: Vec<_> = statuses(&qa.scq.seen);
    assert_eq!(
        seen,
        [
            (1, CqeStatus::Success),
            (2, CqeStatus::LocalQpOperation),
            (3, CqeStatus::Flushed)
        ],
        "{what}"
    );
    assert_eq!(qa.scq.seen[1].byte_len, 0, "{what}: nothing moved");
    assert_eq!(w.a.state(&qa), QpState::Error, "{what}");
}

#[test]
fn an_unknown_opcode_fails_the_wqe() {
    fails_in_order("opcode 0", |w| w.opcode = 0);
    fails_in_order("opcode 0xff", |w| w.opcode = 0xff);
}

#[test]
fn an_unknown_or_misplaced_flag_fails_the_wqe() {
    fails_in_order("flag 0x80", |w| w.flags |= 0x80);
    fails_in_order("READ_LOCAL_INVALIDATE on a SEND", |w| {
        w.flags |= WqeFlags::READ_LOCAL_INVALIDATE.bits();
    });
}

#[test]
fn a_reserved_or_unused_field_fails_the_wqe() {
    fails_in_order("reserved0", |w| w.reserved0 = 1);
    fails_in_order("reserved1", |w| w.reserved1 = 1);
    fails_in_order("fbo on a SEND", |w| w.fbo = 1);
    fails_in_order("aux64 on a SEND", |w| w.aux64 = 1);
    fails_in_order("a key on a plain SEND", |w| w.key = 5);
}

#[test]
fn counts_past_the_slot_fail_the_wqe() {
    fails_in_order("sge_count", |w| w.sge_count = MAX_SGE as u8 + 1);
    fails_in_order("inline_len", |w| {
        w.flags |= WqeFlags::INLINE.bits();
        w.sge_count = 0;
        w.inline_len = MAX_INLINE as u16 + 1;
        w.total_len = u32::from(w.inline_len);
    });
}

#[test]
fn a_refused_slot_completes_with_its_context_and_opcode() {
    // A malformed local operation: its completion still names it.
    let mut w = World::new(Faults::default(), 4096, 8 << 20);
    let mut qa = w.a.qp(32);
    let qb = w.b.qp(32);
    w.connect(&qa, &qb, 1024, 100, 200, 4);
    let mut bad = wqe(SendOpcode::LocalInvalidate, 9, &[]);
    bad.length = 1;
    bad.flags = 0; // unsignaled: errors complete anyway
    w.a.post_send(&mut qa, bad);
    w.run_until(100_000, |_| {
        qa.scq.drain();
        !qa.scq.seen.is_empty()
    });
    let c = qa.scq.seen[0];
    assert_eq!(
        (c.wr_id, c.cqe_status(), c.op()),
        (
            9,
            CqeStatus::LocalQpOperation,
            Some(CqeOpcode::LocalInvalidate)
        )
    );
}

#[test]
fn a_receive_no_driver_wrote_fails_when_a_send_lands_in_it() {
    let mut w = World::new(Faults::default(), 4096, 8 << 20);
    let mut qa = w.a.qp(32);
    let mut qb = w.b.qp(32);
    w.connect(&qa, &qb, 1024, 100, 200, 4);
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    let dst = w.b.register(4096, Access::LOCAL_WRITE);
    // More scatter entries than a slot holds: refused, never clamped.
    let mut bad = RecvWqe {
        wr_id: 7,
        sge_count: MAX_SGE as u8 + 1,
        ..RecvWqe::default()
    };
    bad.sges[0] = dst.sge(0, 4096);
    qb.rq.push(bad).expect("RQ room");
    qb.rq.publish();
    w.b.dev.rq_doorbell(qb.qpn);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 64)]));
    w.run_until(100_000, |_| {
        qb.rcq.drain();
        !qb.rcq.seen.is_empty()
    });
    let r = qb.rcq.seen[0];
    assert_eq!(
        (r.wr_id, r.cqe_status(), r.op()),
        (7, CqeStatus::LocalQpOperation, Some(CqeOpcode::Receive))
    );
    assert_eq!(w.b.state(&qb), QpState::Error);
}

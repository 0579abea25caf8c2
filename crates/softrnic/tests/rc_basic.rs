//! RC transport between two devices on a clean in-memory fabric: every
//! operation, byte-exact data and exact CQEs.

mod common;

use common::*;
use hwq::wqe::{Access, SendOpcode, WqeFlags};
use hwq::{Cqe, CqeOpcode, CqeStatus};
use softrnic::fabric::Faults;
use softrnic::qp::QpState;

const ALL: Access = Access::LOCAL_WRITE.union(Access::REMOTE_READ).union(Access::REMOTE_WRITE);

fn clean() -> Faults {
    Faults { delay_us: 5, ..Faults::default() }
}

fn setup(pmtu: u32, psn_a: u32, psn_b: u32) -> (World, Qp, Qp) {
    let w = World::new(clean(), 4096, 16 << 20);
    let qa = w.a.qp(64);
    let qb = w.b.qp(64);
    w.connect(&qa, &qb, pmtu, psn_a, psn_b, 8);
    (w, qa, qb)
}

fn wait_cqes(w: &mut World, qa: &mut Qp, qb: &mut Qp, sends: usize, recvs: usize) {
    w.run_until(200_000, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        qa.scq.seen.len() >= sends && qb.rcq.seen.len() >= recvs
    });
}

fn expect(c: &Cqe, wr_id: u64, op: CqeOpcode, status: CqeStatus, len: u32) {
    assert_eq!(
        (c.wr_id, c.op(), c.cqe_status(), c.byte_len),
        (wr_id, Some(op), status, len),
        "{c:?}"
    );
}

#[test]
fn send_receive_sizes_and_psn_wrap() {
    let sizes = [0usize, 1, 3, 255, 256, 257, 1023, 1024, 1025, 3 * 1024 + 3, 65_536, 1 << 20];
    for (pmtu, psn) in [(1024, 0), (256, 0xFF_FFF0), (4096, 0xFF_FFFE)] {
        let (mut w, mut qa, mut qb) = setup(pmtu, psn, psn ^ 0x5A5A);
        let src = w.a.register(2 << 20, Access::LOCAL_WRITE);
        let dst = w.b.register(2 << 20, Access::LOCAL_WRITE);
        for (i, &n) in sizes.iter().enumerate() {
            let data = pattern(i as u64, n);
            w.a.mem.fill(src.logical, &data);
            w.b.post_recv(&mut qb, 100 + i as u64, &[dst.sge(0, (2 << 20) as u32)]);
            // Three SGEs when the message is long enough.
            let sges = if n >= 3 {
                vec![src.sge(0, 1), src.sge(1, (n / 2 - 1) as u32), src.sge(n as u64 / 2, (n - n / 2) as u32)]
            } else {
                vec![src.sge(0, n as u32)]
            };
            w.a.post_send(&mut qa, wqe(SendOpcode::Send, i as u64, &sges));
            wait_cqes(&mut w, &mut qa, &mut qb, i + 1, i + 1);
            expect(&qa.scq.seen[i], i as u64, CqeOpcode::Send, CqeStatus::Success, n as u32);
            let r = qb.rcq.seen[i];
            expect(&r, 100 + i as u64, CqeOpcode::Receive, CqeStatus::Success, n as u32);
            assert_eq!((r.qpn, r.qp_context, r.flags), (qb.qpn, 0xC0DE_0000 + u64::from(w.b.pd), 0));
            assert_eq!(qa.scq.seen[i].qpn, qa.qpn);
            assert!(w.b.mem.get(dst.logical, n) == data, "pmtu {pmtu} size {n}");
        }
        assert_eq!(w.a.state(&qa), QpState::Connected);
        assert_eq!(w.b.state(&qb), QpState::Connected);
    }
}

#[test]
fn inline_send_with_solicited_event() {
    let (mut w, mut qa, mut qb) = setup(1024, 7, 9);
    let dst = w.b.register(4096, Access::LOCAL_WRITE);
    w.b.post_recv(&mut qb, 1, &[dst.sge(0, 4096)]);
    let mut s = wqe(SendOpcode::Send, 5, &[]);
    s.flags |= (WqeFlags::INLINE | WqeFlags::SOLICITED).bits();
    s.inline_area_mut()[..11].copy_from_slice(b"hello world");
    s.inline_len = 11;
    s.total_len = 11;
    w.a.post_send(&mut qa, s);
    wait_cqes(&mut w, &mut qa, &mut qb, 1, 1);
    expect(&qa.scq.seen[0], 5, CqeOpcode::Send, CqeStatus::Success, 11);
    expect(&qb.rcq.seen[0], 1, CqeOpcode::Receive, CqeStatus::Success, 11);
    assert_eq!(qb.rcq.seen[0].flags, hwq::cqe::CQE_FLAG_SOLICITED);
    assert_eq!(w.b.mem.get(dst.logical, 11), b"hello world");
}

#[test]
fn write_and_read_sizes() {
    let sizes = [0usize, 1, 1023, 1024, 1025, 4099, 100_000, 1 << 20];
    let (mut w, mut qa, mut qb) = setup(1024, 0xFF_FFF8, 0xFF_FFFF);
    let local = w.a.register(3 << 20, Access::LOCAL_WRITE);
    let remote = w.b.register(2 << 20, ALL);
    let mut done = 0;
    for (i, &n) in sizes.iter().enumerate() {
        let data = pattern(1000 + i as u64, n);
        w.a.mem.fill(local.logical, &data);
        w.a.post_send(&mut qa, rdma(SendOpcode::Write, i as u64, &[local.sge(0, n as u32)], &remote, 3));
        done += 1;
        wait_cqes(&mut w, &mut qa, &mut qb, done, 0);
        expect(&qa.scq.seen[done - 1], i as u64, CqeOpcode::Write, CqeStatus::Success, n as u32);
        assert!(w.b.mem.get(remote.logical + 3, n) == data, "write of {n}");
        // Read it back into a different place, in two SGEs.
        let back = pattern(2000 + i as u64, n);
        w.b.mem.fill(remote.logical + 3, &back);
        let half = (n / 2) as u32;
        let second = (1 << 20) + u64::from(half) + 64;
        let sges = [local.sge(1 << 20, half), local.sge(second, n as u32 - half)];
        w.a.post_send(&mut qa, rdma(SendOpcode::Read, 50 + i as u64, &sges, &remote, 3));
        done += 1;
        wait_cqes(&mut w, &mut qa, &mut qb, done, 0);
        expect(&qa.scq.seen[done - 1], 50 + i as u64, CqeOpcode::Read, CqeStatus::Success, n as u32);
        let mut got = w.a.mem.get(local.logical + (1 << 20), half as usize);
        got.extend(w.a.mem.get(local.logical + second, n - half as usize));
        assert!(got == back, "read of {n}");
    }
    assert!(qb.rcq.seen.is_empty(), "WRITE and READ consume no receive");
}

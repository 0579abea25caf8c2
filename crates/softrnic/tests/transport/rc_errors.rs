//! Error paths and memory operations: access violations, RNR, retry
//! exhaustion, length errors, local protection, flushing, fast
//! registration, windows, invalidation, ORD and fences.

use crate::common;
use hwq::Verbs;

use common::*;
use hwq::wqe::{Access, Bind, FastRegister, SendOpcode, WqeFlags};
use hwq::{CqeOpcode, CqeStatus, MemoryKey, SendOp, SendRequest, SendWqe};
use links::Faults;
use softrnic::qp::{QpState, RcConfig};

const REMOTE: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

fn setup() -> (World, Qp, Qp) {
    let w = World::new(
        Faults {
            delay_us: 5,
            ..Faults::default()
        },
        4096,
        8 << 20,
    );
    let qa = w.a.qp(32);
    let qb = w.b.qp(32);
    w.connect(&qa, &qb, 1024, 100, 200, 4);
    (w, qa, qb)
}

/// A signaled slot holding `op`.
fn signaled(wr_id: u64, op: SendOp) -> SendWqe {
    SendWqe::from(SendRequest {
        wr_id,
        signaled: true,
        read_fence: false,
        op,
    })
}

fn run_until_sends(w: &mut World, q: &mut Qp, n: usize) {
    w.run_until(100_000, |_| {
        q.scq.drain();
        q.scq.seen.len() >= n
    });
}

#[derive(Clone, Copy, Debug)]
enum Violation {
    WrongKey,
    StaleKey,
    OutOfRange,
    WrongPd,
    NoRemoteAccess,
}

/// A WRITE or READ that breaks `v` at the responder: memory unchanged,
/// RemoteAccess at the requester, both QPs in error, later work flushed.
fn violation(v: Violation, op: SendOpcode) {
    let (mut w, mut qa, mut qb) = setup();
    let local = w.a.register(8192, Access::LOCAL_WRITE);
    w.a.mem.fill(local.logical, &pattern(1, 8192));
    let (other_pd, _) = w.b.dev.create_pd().unwrap();
    let target = match v {
        Violation::WrongPd => w.b.register_in(other_pd, 8192, REMOTE),
        Violation::NoRemoteAccess => w.b.register(8192, Access::LOCAL_WRITE),
        _ => w.b.register(8192, REMOTE),
    };
    w.b.post_recv(&mut qb, 77, &[target.sge(0, 16)]);
    let before = w.b.mem.snapshot();
    let a_before = w.a.mem.get(local.logical, 8192);
    let mut req = rdma(op, 1, &[local.sge(0, 4096)], &target, 0);
    match v {
        Violation::WrongKey => req.key = MemoryKey::new(target.key.index() + 7, 1).0,
        Violation::StaleKey => {
            w.b.dev.deregister(target.key).unwrap();
        }
        Violation::OutOfRange => req.remote_addr = target.va + 8192 - 100,
        _ => {}
    }
    w.a.post_send(&mut qa, req);
    run_until_sends(&mut w, &mut qa, 1);
    assert_eq!(
        statuses(&qa.scq.seen),
        [(1, CqeStatus::RemoteAccess)],
        "{v:?} {op:?}"
    );
    assert!(
        w.b.mem.snapshot() == before,
        "{v:?}: responder memory touched"
    );
    if op == SendOpcode::Read {
        assert!(
            w.a.mem.get(local.logical, 8192) == a_before,
            "{v:?}: read sink touched"
        );
    }
    w.settle(10_000);
    assert_eq!(
        (w.a.state(&qa), w.b.state(&qb)),
        (QpState::Error, QpState::Error),
        "{v:?}"
    );
    qb.rcq.drain();
    assert_eq!(
        statuses(&qb.rcq.seen),
        [(77, CqeStatus::Flushed)],
        "posted receive flushed"
    );
    // Later work flushes on both sides.
    w.a.post_send(&mut qa, rdma(op, 2, &[local.sge(0, 16)], &target, 0));
    w.b.post_recv(&mut qb, 78, &[target.sge(0, 16)]);
    w.settle(10_000);
    qa.scq.drain();
    qb.rcq.drain();
    assert_eq!(statuses(&qa.scq.seen[1..]), [(2, CqeStatus::Flushed)]);
    assert_eq!(
        qa.scq.seen[1].op(),
        Some(if op == SendOpcode::Read {
            CqeOpcode::Read
        } else {
            CqeOpcode::Write
        })
    );
    assert_eq!(statuses(&qb.rcq.seen[1..]), [(78, CqeStatus::Flushed)]);
}

#[test]
fn access_violations_touch_nothing_and_fail_both_qps() {
    for v in [
        Violation::WrongKey,
        Violation::StaleKey,
        Violation::OutOfRange,
        Violation::WrongPd,
        Violation::NoRemoteAccess,
    ] {
        violation(v, SendOpcode::Write);
        violation(v, SendOpcode::Read);
    }
}

#[test]
fn rnr_then_receive_posted_completes() {
    let (mut w, mut qa, mut qb) = setup();
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    let dst = w.b.register(4096, Access::LOCAL_WRITE);
    w.a.mem.fill(src.logical, &pattern(3, 3000));
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 9, &[src.sge(0, 3000)]));
    w.run_until(10_000, |w| w.b.dev.stats().rnr_naks_sent >= 3);
    assert!(qa.scq.seen.is_empty());
    w.b.post_recv(&mut qb, 5, &[dst.sge(0, 4096)]);
    w.run_until(10_000, |_| {
        qb.rcq.drain();
        qa.scq.drain();
        !qa.scq.seen.is_empty() && !qb.rcq.seen.is_empty()
    });
    assert_eq!(statuses(&qa.scq.seen), [(9, CqeStatus::Success)]);
    assert_eq!((qb.rcq.seen[0].wr_id, qb.rcq.seen[0].byte_len), (5, 3000));
    assert!(w.b.mem.get(dst.logical, 3000) == pattern(3, 3000));
    assert!(w.a.dev.stats().rnr_naks_received >= 3);
}

#[test]
fn rnr_retry_exhaustion() {
    let (mut w, mut qa, qb) = setup();
    w.a.dev
        .set_qp_rc_config(
            qa.qpn.raw(),
            RcConfig {
                rnr_retry: 3,
                ..fast_rc()
            },
        )
        .unwrap();
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 10)]));
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 2, &[src.sge(0, 10)]));
    run_until_sends(&mut w, &mut qa, 2);
    assert_eq!(
        statuses(&qa.scq.seen),
        [(1, CqeStatus::RnrRetryExceeded), (2, CqeStatus::Flushed)]
    );
    assert_eq!(
        w.a.dev.stats().rnr_naks_received,
        4,
        "first try plus three retries"
    );
    assert_eq!(w.a.state(&qa), QpState::Error);
    assert_eq!(
        w.b.state(&qb),
        QpState::Connected,
        "an RNR NAK is no error at the responder"
    );
}

#[test]
fn retry_exhaustion_on_total_loss() {
    let (mut w, mut qa, _qb) = setup();
    w.faults.set_faults(Faults {
        loss: 1.0,
        ..Faults::default()
    });
    w.a.dev
        .set_qp_rc_config(
            qa.qpn.raw(),
            RcConfig {
                retry_count: 2,
                ..fast_rc()
            },
        )
        .unwrap();
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 2048)]));
    w.a.post_send(&mut qa, wqe(SendOpcode::Write, 2, &[src.sge(0, 8)]));
    run_until_sends(&mut w, &mut qa, 2);
    assert_eq!(
        statuses(&qa.scq.seen),
        [(1, CqeStatus::RetryExceeded), (2, CqeStatus::Flushed)]
    );
    let s = w.a.dev.stats();
    assert_eq!(s.timeouts, 3, "two retries, then the third expiry fails");
    assert_eq!(
        s.retransmitted,
        2 * 3,
        "both packets of the first message resent twice... and the WRITE"
    );
    assert_eq!(w.a.state(&qa), QpState::Error);
}

#[test]
fn receive_too_small_is_a_local_length_error() {
    let (mut w, mut qa, mut qb) = setup();
    let src = w.a.register(8192, Access::LOCAL_WRITE);
    let dst = w.b.register(8192, Access::LOCAL_WRITE);
    w.b.post_recv(&mut qb, 10, &[dst.sge(0, 1000), dst.sge(4096, 1000)]);
    w.b.post_recv(&mut qb, 11, &[dst.sge(0, 8192)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 2001)]));
    run_until_sends(&mut w, &mut qa, 1);
    w.settle(10_000);
    qb.rcq.drain();
    assert_eq!(
        statuses(&qa.scq.seen),
        [(1, CqeStatus::RemoteInvalidRequest)]
    );
    assert_eq!(
        statuses(&qb.rcq.seen),
        [(10, CqeStatus::LocalLength), (11, CqeStatus::Flushed)]
    );
    assert_eq!(
        (w.a.state(&qa), w.b.state(&qb)),
        (QpState::Error, QpState::Error)
    );
}

#[test]
fn local_protection_fails_in_order_and_flushes_the_rest() {
    let (mut w, mut qa, mut qb) = setup();
    let src = w.a.register(8192, Access::LOCAL_WRITE);
    let dst = w.b.register(8192, Access::LOCAL_WRITE);
    for i in 0..2 {
        w.b.post_recv(&mut qb, i, &[dst.sge(0, 8192)]);
    }
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 5000)]));
    let mut bad = wqe(SendOpcode::Send, 2, &[src.sge(8000, 500)]);
    bad.flags = 0; // unsignaled: errors complete anyway
    w.a.post_send(&mut qa, bad);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 3, &[src.sge(0, 5)]));
    run_until_sends(&mut w, &mut qa, 3);
    assert_eq!(
        statuses(&qa.scq.seen),
        [
            (1, CqeStatus::Success),
            (2, CqeStatus::LocalProtection),
            (3, CqeStatus::Flushed)
        ]
    );
    assert_eq!(w.a.state(&qa), QpState::Error);
    // A doorbell on the errored QP flushes new work.
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 4, &[src.sge(0, 5)]));
    w.settle(1000);
    qa.scq.drain();
    assert_eq!(statuses(&qa.scq.seen[3..]), [(4, CqeStatus::Flushed)]);
}

/// Writes a page list for `pages` into A-side memory; returns its address.
fn page_list(node: &Node, pages: &[u64]) -> u64 {
    let at = node.mem.alloc(pages.len() as u64 * 8);
    let bytes: Vec<u8> = pages.iter().flat_map(|p| p.to_le_bytes()).collect();
    node.mem.fill(at, &bytes);
    at
}

fn fast_register(
    node: &Node,
    key: MemoryKey,
    logical: u64,
    len: u64,
    access: Access,
    wr_id: u64,
) -> SendWqe {
    let pages: Vec<u64> = (0..len.div_ceil(PAGE))
        .map(|i| logical + i * PAGE)
        .collect();
    let list = page_list(node, &pages);
    signaled(
        wr_id,
        SendOp::FastRegister(FastRegister {
            key,
            access,
            va: 0x7777_0000_0000,
            length: len,
            fbo: 0,
            page_count: pages.len() as u32,
            page_list: list,
        }),
    )
}

#[test]
fn fast_register_remote_access_then_send_with_invalidate() {
    let (mut w, mut qa, mut qb) = setup();
    // B fast-registers 3 pages for remote read/write.
    let entry = w.b.dev.alloc_key(w.b.pd, false).unwrap();
    w.b.dev.init_fast_register(entry, 4, true).unwrap();
    let backing = w.b.mem.alloc(3 * PAGE);
    let frkey = entry.next_variant();
    w.b.post_send(
        &mut qb,
        fast_register(&w.b, frkey, backing, 3 * PAGE, REMOTE, 50),
    );
    run_until_sends(&mut w, &mut qb, 1);
    assert_eq!(qb.scq.seen[0].op(), Some(CqeOpcode::FastRegister));
    assert_eq!(statuses(&qb.scq.seen), [(50, CqeStatus::Success)]);
    // A writes and reads through the new key.
    let local = w.a.register(3 * PAGE, Access::LOCAL_WRITE);
    let data = pattern(8, 5000);
    w.a.mem.fill(local.logical, &data);
    let remote = Buf {
        logical: backing,
        va: 0x7777_0000_0000,
        len: 3 * PAGE,
        key: frkey,
    };
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 1, &[local.sge(0, 5000)], &remote, 100),
    );
    let mut read = rdma(SendOpcode::Read, 2, &[local.sge(6000, 5000)], &remote, 100);
    read.flags |= WqeFlags::READ_FENCE.bits();
    w.a.post_send(&mut qa, read);
    run_until_sends(&mut w, &mut qa, 2);
    assert_eq!(
        statuses(&qa.scq.seen),
        [(1, CqeStatus::Success), (2, CqeStatus::Success)]
    );
    assert!(w.b.mem.get(backing + 100, 5000) == data);
    assert!(w.a.mem.get(local.logical + 6000, 5000) == data);
    // SEND with invalidate kills the key before the receive completes.
    let rbuf = w.b.register(4096, Access::LOCAL_WRITE);
    w.b.post_recv(&mut qb, 60, &[rbuf.sge(0, 4096)]);
    let mut inv = wqe(SendOpcode::SendInvalidate, 3, &[local.sge(0, 2000)]);
    inv.key = frkey.0;
    w.a.post_send(&mut qa, inv);
    run_until_sends(&mut w, &mut qa, 3);
    w.run_until(1000, |_| qb.rcq.drain() > 0 || !qb.rcq.seen.is_empty());
    let r = qb.rcq.seen[0];
    assert_eq!(
        (
            r.wr_id,
            r.op(),
            r.cqe_status(),
            r.byte_len,
            r.invalidated_key
        ),
        (
            60,
            Some(CqeOpcode::ReceiveInvalidate),
            CqeStatus::Success,
            2000,
            frkey.0
        )
    );
    // The invalidated key is refused: stale key.
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 4, &[local.sge(0, 8)], &remote, 0),
    );
    run_until_sends(&mut w, &mut qa, 4);
    assert_eq!(qa.scq.seen[3].cqe_status(), CqeStatus::RemoteAccess);
}

#[test]
fn invalid_send_with_invalidate_token_fails_both() {
    let (mut w, mut qa, mut qb) = setup();
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    let dst = w.b.register(4096, Access::LOCAL_WRITE);
    w.b.post_recv(&mut qb, 1, &[dst.sge(0, 4096)]);
    let mut inv = wqe(SendOpcode::SendInvalidate, 1, &[src.sge(0, 10)]);
    inv.key = dst.key.0; // a regular MR cannot be invalidated
    w.a.post_send(&mut qa, inv);
    run_until_sends(&mut w, &mut qa, 1);
    w.settle(1000);
    qb.rcq.drain();
    assert_eq!(
        statuses(&qa.scq.seen),
        [(1, CqeStatus::RemoteInvalidRequest)]
    );
    assert_eq!(
        statuses(&qb.rcq.seen),
        [(1, CqeStatus::RemoteInvalidRequest)]
    );
    assert_eq!(
        (w.a.state(&qa), w.b.state(&qb)),
        (QpState::Error, QpState::Error)
    );
}

#[test]
fn bind_window_then_local_invalidate() {
    let (mut w, mut qa, mut qb) = setup();
    let mr = w.b.register(4 * PAGE, Access::LOCAL_WRITE);
    let window = w.b.dev.alloc_key(w.b.pd, true).unwrap().next_variant();
    let bind = signaled(
        70,
        SendOp::Bind(Bind {
            window,
            region: mr.key,
            access: Access::REMOTE_WRITE | Access::REMOTE_READ,
            va: mr.va + PAGE,
            length: 2 * PAGE,
        }),
    );
    w.b.post_send(&mut qb, bind);
    run_until_sends(&mut w, &mut qb, 1);
    assert_eq!(
        (qb.scq.seen[0].op(), qb.scq.seen[0].cqe_status()),
        (Some(CqeOpcode::Bind), CqeStatus::Success)
    );
    let local = w.a.register(PAGE, Access::LOCAL_WRITE);
    w.a.mem.fill(local.logical, &pattern(4, 100));
    let win = Buf {
        logical: mr.logical + PAGE,
        va: mr.va + PAGE,
        len: 2 * PAGE,
        key: window,
    };
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 1, &[local.sge(0, 100)], &win, 10),
    );
    run_until_sends(&mut w, &mut qa, 1);
    assert_eq!(statuses(&qa.scq.seen), [(1, CqeStatus::Success)]);
    assert!(w.b.mem.get(mr.logical + PAGE + 10, 100) == pattern(4, 100));
    // B invalidates the window locally; A's next WRITE through it fails.
    w.b.post_send(
        &mut qb,
        signaled(71, SendOp::LocalInvalidate { key: window }),
    );
    run_until_sends(&mut w, &mut qb, 2);
    assert_eq!(
        (qb.scq.seen[1].op(), qb.scq.seen[1].cqe_status()),
        (Some(CqeOpcode::LocalInvalidate), CqeStatus::Success)
    );
    let before = w.b.mem.snapshot();
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 2, &[local.sge(0, 100)], &win, 200),
    );
    run_until_sends(&mut w, &mut qa, 2);
    assert_eq!(qa.scq.seen[1].cqe_status(), CqeStatus::RemoteAccess);
    assert!(w.b.mem.snapshot() == before);
}

#[test]
fn window_bounds_are_enforced() {
    let (mut w, mut qa, mut qb) = setup();
    let mr = w.b.register(4 * PAGE, Access::LOCAL_WRITE);
    let window = w.b.dev.alloc_key(w.b.pd, true).unwrap().next_variant();
    w.b.post_send(
        &mut qb,
        signaled(
            1,
            SendOp::Bind(Bind {
                window,
                region: mr.key,
                access: Access::REMOTE_WRITE,
                va: mr.va + PAGE,
                length: PAGE,
            }),
        ),
    );
    run_until_sends(&mut w, &mut qb, 1);
    let local = w.a.register(PAGE, Access::LOCAL_WRITE);
    let before = w.b.mem.snapshot();
    let win = Buf {
        logical: mr.logical + PAGE,
        va: mr.va + PAGE,
        len: PAGE,
        key: window,
    };
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Write, 1, &[local.sge(0, 100)], &win, PAGE - 50),
    );
    run_until_sends(&mut w, &mut qa, 1);
    assert_eq!(qa.scq.seen[0].cqe_status(), CqeStatus::RemoteAccess);
    assert!(
        w.b.mem.snapshot() == before,
        "out-of-window range touched nothing"
    );
}

#[test]
fn read_with_local_invalidate_and_key_reuse_waits() {
    let (mut w, mut qa, _qb) = setup();
    let remote = w.b.register(PAGE, REMOTE);
    w.b.mem.fill(remote.logical, &pattern(6, 300));
    let entry = w.a.dev.alloc_key(w.a.pd, false).unwrap();
    w.a.dev.init_fast_register(entry, 2, false).unwrap();
    let sink = w.a.mem.alloc(PAGE);
    let k1 = entry.next_variant();
    let mut fr = fast_register(&w.a, k1, sink, PAGE, Access::LOCAL_WRITE, 1);
    fr.remote_addr = 0x1000;
    w.a.post_send(&mut qa, fr);
    let mut read = rdma(
        SendOpcode::Read,
        2,
        &[hwq::Sge {
            addr: 0x1000,
            length: 300,
            key: k1.0,
        }],
        &remote,
        0,
    );
    read.flags |= WqeFlags::READ_LOCAL_INVALIDATE.bits();
    w.a.post_send(&mut qa, read);
    // Re-register the same entry with the next variant: waits for the READ.
    let k2 = k1.next_variant();
    let mut fr2 = fast_register(&w.a, k2, sink, PAGE, Access::LOCAL_WRITE, 3);
    fr2.remote_addr = 0x1000;
    w.a.post_send(&mut qa, fr2);
    run_until_sends(&mut w, &mut qa, 3);
    assert_eq!(
        statuses(&qa.scq.seen),
        [
            (1, CqeStatus::Success),
            (2, CqeStatus::Success),
            (3, CqeStatus::Success)
        ]
    );
    assert!(w.a.mem.get(sink, 300) == pattern(6, 300));
}

#[test]
fn ord_one_serialises_reads_and_fences_wait() {
    let w = World::new(
        Faults {
            delay_us: 5,
            ..Faults::default()
        },
        4096,
        8 << 20,
    );
    let mut qa = w.a.qp(32);
    let qb = w.b.qp(32);
    w.connect(&qa, &qb, 1024, 0, 0, 1);
    let mut w = w;
    let local = w.a.register(64 * 1024, Access::LOCAL_WRITE);
    let remote = w.b.register(64 * 1024, REMOTE);
    w.b.mem.fill(remote.logical, &pattern(9, 64 * 1024));
    for i in 0..8u64 {
        w.a.post_send(
            &mut qa,
            rdma(
                SendOpcode::Read,
                i,
                &[local.sge(i * 8192, 8192)],
                &remote,
                i * 8192,
            ),
        );
    }
    let mut fenced = rdma(SendOpcode::Write, 8, &[local.sge(0, 64)], &remote, 0);
    fenced.flags |= WqeFlags::READ_FENCE.bits();
    w.a.post_send(&mut qa, fenced);
    run_until_sends(&mut w, &mut qa, 9);
    assert!(
        qa.scq
            .seen
            .iter()
            .all(|c| c.cqe_status() == CqeStatus::Success)
    );
    assert_eq!(
        qa.scq.seen.iter().map(|c| c.wr_id).collect::<Vec<_>>(),
        (0..9).collect::<Vec<_>>()
    );
    assert!(w.a.mem.get(local.logical, 64 * 1024) == pattern(9, 64 * 1024));
}

#[test]
fn unsignaled_successes_only_release_slots() {
    let (mut w, mut qa, mut qb) = setup();
    let src = w.a.register(4096, Access::LOCAL_WRITE);
    let dst = w.b.register(4096, Access::LOCAL_WRITE);
    for i in 0..40u64 {
        while qa.sq.free() == 0 || qb.rq.free() == 0 {
            w.step();
        }
        w.b.post_recv(&mut qb, i, &[dst.sge(0, 64)]);
        let mut s = wqe(SendOpcode::Send, i, &[src.sge(0, 64)]);
        if i % 4 != 3 {
            s.flags = 0;
        }
        w.a.post_send(&mut qa, s);
    }
    run_until_sends(&mut w, &mut qa, 10);
    assert_eq!(
        qa.scq.seen.iter().map(|c| c.wr_id).collect::<Vec<_>>(),
        (0..10).map(|i| i * 4 + 3).collect::<Vec<_>>()
    );
    w.settle(1000);
    assert_eq!(qa.sq.free(), 32);
}

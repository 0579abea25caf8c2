//! Posting through the QP and SRQ dispatch tables: per-function flag
//! validation, SGE limits, inline data, connection state, full queues, the
//! DEFER doorbell rule, silent success, fast register, bind, invalidate and
//! read-local-invalidate, and what each accepted request puts in its WQE.

mod provider_util;

use hwq::CqeStatus;
use hwq::wqe::{Access, SendOpcode, WqeFlags};
use ndkpi::*;
use provider_util::*;
use rsndk::platform::HostPlatform;

/// A post with its flags as the only variable.
type Post<'a> = Box<dyn Fn(u32) -> NTSTATUS + 'a>;

/// A fast-register case: pages, FBO, length, VA, flags, expected status.
type FrCase<'a> = (&'a [NDK_LOGICAL_ADDRESS], u32, usize, u64, u32, NTSTATUS);

/// Every defined op flag, plus unknown bits.
const ALL_FLAGS: [u32; 12] = [
    NDK_OP_FLAG_SILENT_SUCCESS,
    NDK_OP_FLAG_READ_FENCE,
    NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT,
    NDK_OP_FLAG_ALLOW_REMOTE_READ,
    NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    NDK_OP_FLAG_INLINE,
    NDK_OP_FLAG_RDMA_READ_SINK,
    NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE,
    NDK_OP_FLAG_DEFER,
    0x400,
    0x8000_0000,
];

fn status_ok(s: NTSTATUS) -> bool {
    s == STATUS_SUCCESS
}

/// Drains every pending WQE as successful so the next post has room.
fn drain(env: &Env, qpn: u32) {
    while env
        .dev
        .complete_next_send(qpn, CqeStatus::Success)
        .is_some()
    {}
}

#[test]
fn initiator_posts_need_a_connection_but_receives_do_not() {
    let env = Env::new();
    let notify = Recorder::new();
    let s = env.qp_setup(&notify, 8, 2, 64);
    let buf = [0u8; 64];
    let sg = [sge(buf.as_ptr() as u64, 8, 1)];
    let pd = s.pd;
    let fr = create_mr(pd, true);
    assert_eq!(init_fast_register(fr, 4, true), STATUS_SUCCESS);
    let (mr, _mdl) = registered_mr(pd, &buf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let mw = create_mw(pd);
    let statuses = [
        send(s.qp, 1, &sg, 0),
        send_and_invalidate(s.qp, 1, &sg, 0, 5),
        write(s.qp, 1, &sg, 0x1000, 5, 0),
        read(s.qp, 1, &sg, 0x1000, 5, 0),
        fast_register(s.qp, 1, fr, &[0x10_0000], 0, 4096, 0x10_0000, 0),
        bind(
            s.qp,
            1,
            mr,
            mw,
            buf.as_ptr() as u64,
            8,
            NDK_OP_FLAG_ALLOW_REMOTE_READ,
        ),
        invalidate(s.qp, 1, fr, 0),
    ];
    for (i, st) in statuses.iter().enumerate() {
        assert_eq!(*st, STATUS_CONNECTION_INVALID, "post {i}");
    }
    assert!(env.dev.sq_pending(s.qpn).is_empty(), "nothing queued");
    assert_eq!(env.dev.sq_doorbells(s.qpn), 0);
    assert_eq!(
        receive(s.qp, 9, &sg),
        STATUS_SUCCESS,
        "receives are pre-posted before connect"
    );
    assert_eq!(env.dev.rq_pending(s.qpn).len(), 1);
    assert_eq!(env.dev.rq_doorbells(s.qpn), 1);
    for o in [
        header(mw),
        header(mr),
        header(fr),
        header(s.qp),
        header(s.cq),
        header(s.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

#[test]
fn each_function_accepts_exactly_its_flags() {
    let env = Env::new();
    let pair = env.connected_pair(64, 4, 64);
    let (qp, qpn, pd) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.pd);
    let mut pages = Pages::new(2);
    let va = pages.addr();
    let sg = [sge(va, 16, 1)];
    let (mr, _mdl) = registered_mr(pd, pages.bytes(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let mw = create_mw(pd);
    let fr = create_mr(pd, true);
    assert_eq!(init_fast_register(fr, 2, true), STATUS_SUCCESS);
    let allowed_common = NDK_OP_FLAG_SILENT_SUCCESS
        | NDK_OP_FLAG_READ_FENCE
        | NDK_OP_FLAG_DEFER
        | NDK_OP_FLAG_RDMA_READ_SINK;
    let cases: Vec<(&str, Post<'_>, u32)> = vec![
        (
            "send",
            Box::new(|f| send(qp, 1, &sg, f)),
            allowed_common | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE,
        ),
        (
            "send_inv",
            Box::new(|f| send_and_invalidate(qp, 1, &sg, f, 3)),
            allowed_common | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE,
        ),
        (
            "write",
            Box::new(|f| write(qp, 1, &sg, 0x2000, 3, f)),
            allowed_common | NDK_OP_FLAG_INLINE,
        ),
        (
            "read",
            Box::new(|f| read(qp, 1, &sg, 0x2000, 3, f)),
            allowed_common | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE,
        ),
        (
            "bind",
            Box::new(|f| bind(qp, 1, mr, mw, va, 64, f)),
            allowed_common | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
        ),
        (
            "fast_register",
            Box::new(|f| fast_register(qp, 1, fr, &[0x20_0000], 0, 4096, 0x20_0000, f)),
            allowed_common
                | NDK_OP_FLAG_ALLOW_REMOTE_READ
                | NDK_OP_FLAG_ALLOW_LOCAL_WRITE
                | NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
        ),
        (
            "invalidate",
            Box::new(|f| invalidate(qp, 1, fr, f)),
            allowed_common,
        ),
    ];
    for (name, post, allowed) in &cases {
        for flag in ALL_FLAGS {
            // Bind grants local write only together with remote write.
            let expect_ok =
                flag & !allowed == 0 && !(*name == "bind" && flag == NDK_OP_FLAG_ALLOW_LOCAL_WRITE);
            let before = env.dev.sq_pending(qpn).len();
            let st = post(flag);
            if expect_ok {
                assert_eq!(st, STATUS_SUCCESS, "{name} with {flag:#x}");
                assert_eq!(env.dev.sq_pending(qpn).len(), before + 1);
            } else {
                assert_eq!(st, STATUS_INVALID_PARAMETER, "{name} with {flag:#x}");
                assert_eq!(
                    env.dev.sq_pending(qpn).len(),
                    before,
                    "nothing queued by a failed post"
                );
            }
            drain(&env, qpn);
        }
    }
    drop(cases);
    for o in [header(mw), header(mr), header(fr)] {
        close_now(o);
    }
    pair.close();
    env.finish();
}

#[test]
fn sge_counts_and_transfer_length_are_limited() {
    let env = Env::new();
    let pair = env.connected_pair(32, 2, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg3 = [sge(0x1000, 1, 1), sge(0x2000, 1, 1), sge(0x3000, 1, 1)];
    assert_eq!(send(qp, 1, &sg3[..2], 0), STATUS_SUCCESS);
    assert_eq!(
        send(qp, 1, &sg3, 0),
        STATUS_INVALID_PARAMETER,
        "above MaxInitiatorRequestSge"
    );
    assert_eq!(write(qp, 1, &sg3, 0, 0, 0), STATUS_INVALID_PARAMETER);
    assert_eq!(
        send_and_invalidate(qp, 1, &sg3, 0, 1),
        STATUS_INVALID_PARAMETER
    );
    // Reads are limited by the adapter's MaxReadRequestSge (16), not the QP's.
    assert_eq!(read(qp, 1, &sg3, 0, 0, 0), STATUS_SUCCESS);
    let sg17: Vec<NDK_SGE> = (0..17).map(|i| sge(0x1000 * i, 1, 1)).collect();
    assert_eq!(read(qp, 1, &sg17, 0, 0, 0), STATUS_INVALID_PARAMETER);
    assert_eq!(read(qp, 1, &sg17[..16], 0, 0, 0), STATUS_SUCCESS);
    // The receive side has its own limit.
    assert_eq!(receive(qp, 1, &sg3), STATUS_INVALID_PARAMETER);
    assert_eq!(receive(qp, 1, &sg3[..2]), STATUS_SUCCESS);
    // Total bytes beyond MaxTransferLength.
    let max = env.info().MaxTransferLength;
    let big = [sge(0x1000, max, 1), sge(0x2000, 1, 1)];
    assert_eq!(send(qp, 1, &big, 0), STATUS_INVALID_PARAMETER);
    assert_eq!(receive(qp, 1, &big), STATUS_INVALID_PARAMETER);
    assert_eq!(send(qp, 1, &big[..1], 0), STATUS_SUCCESS);
    assert_eq!(env.dev.sq_pending(qpn).len(), 4);
    pair.close();
    env.finish();
}

#[test]
fn inline_data_is_copied_at_post_time() {
    let env = Env::new();
    let pair = env.connected_pair(16, 1, 64);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let mut a = *b"hello, ";
    let b = *b"inline world";
    // Three SGEs with garbage tokens: more than MaxInitiatorRequestSge (1).
    let sg = [
        sge(a.as_ptr() as u64, 7, 0xdead_beef),
        sge(b.as_ptr() as u64, 12, 0),
        sge(0, 0, 7),
    ];
    assert_eq!(send(qp, 0xabc, &sg, NDK_OP_FLAG_INLINE), STATUS_SUCCESS);
    a.copy_from_slice(b"CHANGED"); // after the post returns, the buffer is the consumer's
    let wqe = env.dev.sq_pending(qpn)[0];
    assert_eq!(wqe.inline_data(), b"hello, inline world");
    assert!(wqe.wqe_flags().contains(WqeFlags::INLINE));
    assert_eq!((wqe.sge_count, wqe.total_len, wqe.wr_id), (0, 19, 0xabc));
    // Write may be inline too.
    assert_eq!(
        write(qp, 1, &sg, 0x5000, 9, NDK_OP_FLAG_INLINE),
        STATUS_SUCCESS
    );
    // Exactly InlineDataSize is fine, one byte more is not.
    let payload = [7u8; 65];
    assert_eq!(
        send(
            qp,
            1,
            &[sge(payload.as_ptr() as u64, 64, 0)],
            NDK_OP_FLAG_INLINE
        ),
        STATUS_SUCCESS
    );
    assert_eq!(
        send(
            qp,
            1,
            &[sge(payload.as_ptr() as u64, 65, 0)],
            NDK_OP_FLAG_INLINE
        ),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        send(
            qp,
            1,
            &[
                sge(payload.as_ptr() as u64, 40, 0),
                sge(payload.as_ptr() as u64, 25, 0)
            ],
            NDK_OP_FLAG_INLINE
        ),
        STATUS_INVALID_PARAMETER
    );
    // Unreadable inline memory fails the post.
    assert_eq!(
        send(qp, 1, &[sge(0, 4, 0)], NDK_OP_FLAG_INLINE),
        STATUS_ACCESS_VIOLATION
    );
    assert_eq!(env.dev.sq_pending(qpn).len(), 3);
    pair.close();
    env.finish();
}

#[test]
fn a_full_queue_refuses_and_queues_nothing() {
    let env = Env::new();
    let pair = env.connected_pair(4, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [sge(0x1000, 4, 1)];
    for i in 0..4 {
        assert_eq!(send(qp, i, &sg, NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
    }
    assert_eq!(
        send(qp, 99, &sg, 0),
        STATUS_INSUFFICIENT_RESOURCES,
        "silent WRs count too"
    );
    assert_eq!(env.dev.sq_pending(qpn).len(), 4);
    env.dev.complete_next_send(qpn, CqeStatus::Success);
    assert_eq!(
        send(qp, 4, &sg, 0),
        STATUS_SUCCESS,
        "a completed slot is free again"
    );
    // The receive queue has its own depth.
    for i in 0..4 {
        assert_eq!(receive(qp, i, &sg), STATUS_SUCCESS);
    }
    assert_eq!(receive(qp, 5, &sg), STATUS_INSUFFICIENT_RESOURCES);
    assert_eq!(env.dev.rq_pending(qpn).len(), 4);
    pair.close();
    env.finish();
}

#[test]
fn defer_holds_the_doorbell_until_a_plain_post() {
    let env = Env::new();
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [sge(0x1000, 4, 1)];
    for _ in 0..3 {
        assert_eq!(send(qp, 1, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    }
    assert_eq!(env.dev.sq_doorbells(qpn), 0, "deferred");
    assert_eq!(env.dev.sq_pending(qpn).len(), 3, "but published at once");
    assert_eq!(write(qp, 1, &sg, 0, 0, 0), STATUS_SUCCESS);
    assert_eq!(env.dev.sq_doorbells(qpn), 1, "one ring covers the batch");
    assert_eq!(send(qp, 1, &sg, 0), STATUS_SUCCESS);
    assert_eq!(env.dev.sq_doorbells(qpn), 2);
    pair.close();
    env.finish();
}

#[test]
fn a_failing_post_rings_for_earlier_deferred_ones() {
    let env = Env::new();
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [sge(0x1000, 4, 1)];
    // A failure with nothing deferred rings nothing.
    assert_eq!(send(qp, 1, &sg, 0x400), STATUS_INVALID_PARAMETER);
    assert_eq!(env.dev.sq_doorbells(qpn), 0);
    // The NDK worked case: FR#1 deferred succeeds, FR#2 fails inline.
    let fr = create_mr(pair.active_qp.pd, true);
    assert_eq!(init_fast_register(fr, 1, false), STATUS_SUCCESS);
    assert_eq!(
        fast_register(qp, 1, fr, &[0x4000], 0, 4096, 0x4000, NDK_OP_FLAG_DEFER),
        STATUS_SUCCESS
    );
    assert_eq!(env.dev.sq_doorbells(qpn), 0);
    let st = fast_register(
        qp,
        2,
        fr,
        &[0x4000, 0x5000],
        0,
        8192,
        0x4000,
        NDK_OP_FLAG_DEFER,
    );
    assert_eq!(st, STATUS_INVALID_PARAMETER, "more pages than initialised");
    assert_eq!(env.dev.sq_doorbells(qpn), 1, "FR#1 handed to the device");
    assert_eq!(env.dev.sq_pending(qpn).len(), 1, "FR#2 never queued");
    // Each kind of inline failure rings: bad SGE count, queue full, bad MR.
    assert_eq!(send(qp, 1, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    assert_eq!(send(qp, 1, &[sg[0], sg[0]], 0), STATUS_INVALID_PARAMETER);
    assert_eq!(env.dev.sq_doorbells(qpn), 2);
    assert_eq!(send(qp, 1, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    assert_eq!(
        invalidate(qp, 1, pair.active_qp.pd, 0),
        STATUS_INVALID_PARAMETER,
        "a PD is not invalidatable"
    );
    assert_eq!(env.dev.sq_doorbells(qpn), 3);
    close_now(fr);
    pair.close();
    env.finish();
}

#[test]
fn sixteen_deferred_posts_ring_anyway() {
    let env = Env::new();
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [sge(0x1000, 4, 1)];
    for i in 1..=15 {
        assert_eq!(send(qp, i, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    }
    assert_eq!(env.dev.sq_doorbells(qpn), 0);
    assert_eq!(send(qp, 16, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    assert_eq!(env.dev.sq_doorbells(qpn), 1);
    for i in 1..=16 {
        assert_eq!(send(qp, i, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    }
    assert_eq!(env.dev.sq_doorbells(qpn), 2);
    pair.close();
    env.finish();
}

#[test]
fn flush_and_close_ring_for_deferred_posts() {
    let env = Env::new();
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [sge(0x1000, 4, 1)];
    assert_eq!(send(qp, 1, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    flush(qp);
    assert_eq!(env.dev.sq_doorbells(qpn), 1, "flush rings");
    let p2 = env.connected_pair(64, 1, 0);
    let qpn2 = p2.active_qp.qpn;
    assert_eq!(
        send(p2.active_qp.qp, 1, &sg, NDK_OP_FLAG_DEFER),
        STATUS_SUCCESS
    );
    close_now(p2.active);
    let rec = Recorder::new();
    // The connector is closed: the QP's own close rings before it flushes.
    assert_eq!(close(p2.active_qp.qp, &rec), STATUS_SUCCESS);
    assert!(env.dev.qp_state(qpn2).is_none(), "destroyed");
    close_now(p2.passive);
    close_now(p2.listener);
    close_now(p2.passive_qp.qp);
    for s in [p2.active_qp, p2.passive_qp] {
        close_now(s.cq);
        close_now(s.pd);
    }
    pair.close();
    env.finish();
}

#[test]
fn qp_close_rings_its_deferred_doorbell() {
    let env = Env::new();
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    assert_eq!(
        send(qp, 1, &[sge(0x1000, 4, 1)], NDK_OP_FLAG_DEFER),
        STATUS_SUCCESS
    );
    let rec = Recorder::new();
    // The connector keeps the QP open (pending) but its close has already
    // rung and flushed.
    assert_eq!(close(qp, &rec), STATUS_PENDING);
    assert_eq!(env.dev.sq_doorbells(qpn), 1);
    assert!(
        env.dev
            .commands()
            .contains(&rsndk::scripted::Command::FlushQp(qpn))
    );
    close_now(pair.active);
    assert_eq!(rec.count(), 1);
    close_now(pair.passive);
    close_now(pair.listener);
    close_now(pair.passive_qp.qp);
    for s in [pair.active_qp, pair.passive_qp] {
        close_now(s.cq);
        close_now(s.pd);
    }
    env.finish();
}

#[test]
fn wqe_fields_of_data_requests() {
    let env = Env::new();
    let pair = env.connected_pair(16, 4, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [sge(0x1111, 10, 0x101), sge(0x2222, 20, 0x202)];
    assert_eq!(
        send(qp, 0x10, &sg, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT),
        STATUS_SUCCESS
    );
    assert_eq!(
        send_and_invalidate(qp, 0x20, &sg, NDK_OP_FLAG_READ_FENCE, 0xfeed),
        STATUS_SUCCESS
    );
    assert_eq!(
        write(qp, 0x30, &sg, 0xaaaa_0000, 0x77, NDK_OP_FLAG_SILENT_SUCCESS),
        STATUS_SUCCESS
    );
    assert_eq!(
        read(
            qp,
            0x40,
            &sg,
            0xbbbb_0000,
            0x88,
            NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE
        ),
        STATUS_SUCCESS
    );
    let w = env.dev.sq_pending(qpn);
    assert_eq!(w[0].op(), Some(SendOpcode::Send));
    assert_eq!(w[0].wqe_flags(), WqeFlags::SIGNALED | WqeFlags::SOLICITED);
    assert_eq!(w[0].wr_id, 0x10);
    assert_eq!(w[0].sge_list().len(), 2);
    assert_eq!(
        (
            w[0].sge_list()[1].addr,
            w[0].sge_list()[1].length,
            w[0].sge_list()[1].key
        ),
        (0x2222, 20, 0x202)
    );
    assert_eq!(w[0].total_len, 30);
    assert_eq!(
        (w[1].op(), w[1].key),
        (Some(SendOpcode::SendInvalidate), 0xfeed)
    );
    assert_eq!(w[1].wqe_flags(), WqeFlags::SIGNALED | WqeFlags::READ_FENCE);
    assert_eq!(
        (w[2].op(), w[2].remote_addr, w[2].key),
        (Some(SendOpcode::Write), 0xaaaa_0000, 0x77)
    );
    assert_eq!(
        w[2].wqe_flags(),
        WqeFlags::empty(),
        "silent success: not signaled"
    );
    assert_eq!(
        (w[3].op(), w[3].remote_addr, w[3].key),
        (Some(SendOpcode::Read), 0xbbbb_0000, 0x88)
    );
    assert_eq!(
        w[3].wqe_flags(),
        WqeFlags::SIGNALED | WqeFlags::READ_LOCAL_INVALIDATE
    );
    // Read local invalidate needs an SGE whose token it invalidates.
    assert_eq!(
        read(qp, 1, &[], 0, 0, NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
        STATUS_INVALID_PARAMETER
    );
    // A receive WQE carries the SGEs and the context.
    assert_eq!(receive(qp, 0x50, &sg), STATUS_SUCCESS);
    let r = env.dev.rq_pending(qpn)[0];
    assert_eq!(
        (r.wr_id, r.sge_list()),
        (
            0x50,
            &[
                hwq::Sge {
                    addr: 0x1111,
                    length: 10,
                    key: 0x101
                },
                hwq::Sge {
                    addr: 0x2222,
                    length: 20,
                    key: 0x202
                }
            ][..]
        )
    );
    pair.close();
    env.finish();
}

#[test]
fn silent_success_produces_no_completion_but_failures_do() {
    let env = Env::new();
    let pair = env.connected_pair(16, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [sge(0x1000, 4, 1)];
    assert_eq!(send(qp, 1, &sg, NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
    assert_eq!(send(qp, 2, &sg, 0), STATUS_SUCCESS);
    env.dev.complete_next_send(qpn, CqeStatus::Success);
    env.dev.complete_next_send(qpn, CqeStatus::Success);
    let r = results(cq, 8);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].RequestContext as usize, 2);
    assert_eq!(send(qp, 3, &sg, NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
    env.dev.complete_next_send(qpn, CqeStatus::RemoteAccess);
    let r = results(cq, 8);
    assert_eq!(
        (r.len(), r[0].Status, r[0].RequestContext as usize),
        (1, STATUS_REMOTE_RESOURCES, 3)
    );
    pair.close();
    env.finish();
}

#[test]
fn fast_register_checks_and_token_at_return() {
    let env = Env::new();
    let pair = env.connected_pair(32, 1, 0);
    let (qp, qpn, pd) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.pd);
    let regular = create_mr(pd, false);
    let fr = create_mr(pd, true);
    let pages: [NDK_LOGICAL_ADDRESS; 2] = [0x7000_0000, 0x7100_0000];
    // Not initialised yet.
    assert_eq!(
        fast_register(qp, 1, fr, &pages, 0, 4096, 0x1000, 0),
        STATUS_INVALID_PARAMETER
    );
    // Not a fast-register MR.
    assert_eq!(
        init_fast_register(regular, 2, true),
        STATUS_INVALID_DEVICE_REQUEST
    );
    assert_eq!(
        fast_register(qp, 1, regular, &pages, 0, 4096, 0x1000, 0),
        STATUS_INVALID_PARAMETER
    );
    // Page count beyond the adapter's support.
    let max = env.info().FRMRPageCount;
    assert_eq!(
        init_fast_register(fr, max + 1, true),
        STATUS_IMPLEMENTATION_LIMIT
    );
    assert_eq!(init_fast_register(fr, 0, true), STATUS_INVALID_PARAMETER);
    assert_eq!(init_fast_register(fr, 2, false), STATUS_SUCCESS);
    let checks: [FrCase<'_>; 9] = [
        (
            &[0x7000_0000, 0x7100_0000, 0x7200_0000],
            0,
            4096,
            0x1000,
            0,
            STATUS_INVALID_PARAMETER,
        ), // > init count
        (&pages, 4096, 10, 0x1000, 0, STATUS_INVALID_PARAMETER), // FBO >= PAGE_SIZE
        (&pages, 0x10, 8192, 0x1010, 0, STATUS_INVALID_PARAMETER), // Length > pages*PAGE - FBO
        (&pages, 0x10, 100, 0x1020, 0, STATUS_INVALID_PARAMETER), // VA % PAGE != FBO
        (&[0x7000_0010], 0, 100, 0x1000, 0, STATUS_INVALID_PARAMETER), // unaligned page
        (&pages, 0, 0, 0x1000, 0, STATUS_INVALID_PARAMETER),     // empty
        (
            &pages,
            0,
            4096,
            0x1000,
            NDK_OP_FLAG_ALLOW_REMOTE_READ,
            STATUS_ACCESS_VIOLATION,
        ), // no RemoteAccess
        (
            &pages,
            0,
            4096,
            0x1000,
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
            STATUS_ACCESS_VIOLATION,
        ),
        (
            &pages,
            0x10,
            8192 - 0x10,
            0x5010,
            NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
            STATUS_SUCCESS,
        ), // exact fit
    ];
    let before = mr_tokens(fr).0;
    for (i, (p, fbo, len, va, flags, want)) in checks.iter().enumerate() {
        assert_eq!(
            fast_register(qp, 0x99, fr, p, *fbo, *len, *va, *flags),
            *want,
            "case {i}"
        );
    }
    let (local, remote) = mr_tokens(fr);
    assert_eq!(local, remote);
    assert_ne!(
        local, before,
        "a new token, readable as soon as the post returned"
    );
    let w = env.dev.sq_pending(qpn);
    assert_eq!(w.len(), 1, "only the good one was queued");
    let w = w[0];
    assert_eq!(w.op(), Some(SendOpcode::FastRegister));
    assert_eq!(
        (w.key, w.aux32, w.remote_addr, w.length, w.fbo),
        (local, 2, 0x5010, 8192 - 0x10, 0x10)
    );
    assert_eq!(Access::from_bits_truncate(w.access), Access::LOCAL_WRITE);
    // The WQE points at the MR's own copy of the page list.
    let mut copy = [0u64; 2];
    assert!(
        provider::Platform::dma(HostPlatform::global())
            .read(w.aux64, bytemuck(&mut copy))
            .is_ok()
    );
    assert_eq!(copy, [0x7000_0000, 0x7100_0000]);
    // An NdkRegisterMr region cannot be invalidated by work request.
    assert_eq!(invalidate(qp, 4, regular, 0), STATUS_INVALID_PARAMETER);
    for o in [header(fr), header(regular)] {
        close_now(o);
    }
    pair.close();
    env.finish();
}

#[test]
fn fast_register_rotates_tokens_and_grants_remote_rights() {
    let env = Env::new();
    let pair = env.connected_pair(32, 1, 0);
    let (qp, qpn, pd) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.pd);
    let pages: [NDK_LOGICAL_ADDRESS; 1] = [0x7000_0000];
    // An MR initialised with RemoteAccess accepts remote rights; every
    // registration rotates the token.
    let fr2 = create_mr(pd, true);
    assert_eq!(init_fast_register(fr2, 1, true), STATUS_SUCCESS);
    let t0 = mr_tokens(fr2).0;
    assert_eq!(
        fast_register(
            qp,
            1,
            fr2,
            &pages,
            0,
            4096,
            0,
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE
                | NDK_OP_FLAG_ALLOW_REMOTE_READ
                | NDK_OP_FLAG_RDMA_READ_SINK
        ),
        STATUS_SUCCESS
    );
    let t1 = mr_tokens(fr2).0;
    assert_eq!(invalidate(qp, 2, fr2, 0), STATUS_SUCCESS);
    assert_eq!(
        fast_register(qp, 3, fr2, &pages, 0, 4096, 0, 0),
        STATUS_SUCCESS
    );
    let t2 = mr_tokens(fr2).0;
    assert!(t0 != t1 && t1 != t2 && t0 != t2);
    let w = env.dev.sq_pending(qpn);
    assert_eq!(
        Access::from_bits_truncate(w[0].access),
        Access::REMOTE_WRITE | Access::LOCAL_WRITE | Access::REMOTE_READ | Access::READ_SINK
    );
    assert_eq!(
        (w[1].op(), w[1].key),
        (Some(SendOpcode::LocalInvalidate), t1)
    );
    assert_eq!(
        (w[2].key, Access::from_bits_truncate(w[2].access)),
        (t2, Access::empty())
    );
    close_now(fr2);
    pair.close();
    env.finish();
}

fn bytemuck(words: &mut [u64]) -> &mut [u8] {
    let len = std::mem::size_of_val(words);
    // SAFETY: u64s viewed as their bytes; same allocation and length.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}

#[test]
fn bind_checks_and_window_token_at_return() {
    let env = Env::new();
    let pair = env.connected_pair(32, 1, 0);
    let (qp, qpn, pd) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.pd);
    let mut pages = Pages::new(2);
    let va = pages.addr();
    let (ro, _m1) = registered_mr(pd, pages.bytes(), NDK_MR_FLAG_ALLOW_REMOTE_READ);
    let (rw, _m2) = registered_mr(pd, pages.bytes(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let fr = create_mr(pd, true);
    assert_eq!(init_fast_register(fr, 1, true), STATUS_SUCCESS);
    let mw = create_mw(pd);
    let t0 = mw_token(mw);
    let rr = NDK_OP_FLAG_ALLOW_REMOTE_READ;
    assert_eq!(
        bind(qp, 1, ro, mw, va - 1, 16, rr),
        STATUS_INVALID_PARAMETER,
        "starts before the MR"
    );
    assert_eq!(
        bind(qp, 1, ro, mw, va + 8192 - 8, 16, rr),
        STATUS_INVALID_PARAMETER,
        "ends after the MR"
    );
    assert_eq!(
        bind(qp, 1, fr, mw, va, 16, rr),
        STATUS_INVALID_PARAMETER,
        "not a registered MR"
    );
    assert_eq!(
        bind(qp, 1, ro, mw, va, 16, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
        STATUS_ACCESS_VIOLATION,
        "MR lacks local write"
    );
    assert_eq!(mw_token(mw), t0, "failed binds change nothing");
    assert!(env.dev.sq_pending(qpn).is_empty());
    assert_eq!(
        bind(
            qp,
            0x42,
            rw,
            mw,
            va + 100,
            200,
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE
        ),
        STATUS_SUCCESS
    );
    let t1 = mw_token(mw);
    assert_ne!(t1, t0, "new window token readable when Bind returns");
    let w = env.dev.sq_pending(qpn)[0];
    assert_eq!(w.op(), Some(SendOpcode::Bind));
    assert_eq!(
        (w.key, w.aux32, w.remote_addr, w.length, w.wr_id),
        (t1, mr_tokens(rw).0, va + 100, 200, 0x42)
    );
    assert_eq!(Access::from_bits_truncate(w.access), Access::REMOTE_WRITE);
    assert_eq!(
        bind(qp, 1, rw, mw, va, 8192, rr | NDK_OP_FLAG_SILENT_SUCCESS),
        STATUS_SUCCESS,
        "whole region"
    );
    assert_ne!(mw_token(mw), t1);
    // A window of another PD is refused.
    let other_pd = env.create_pd();
    let foreign = create_mw(other_pd);
    assert_eq!(
        bind(qp, 1, rw, foreign, va, 16, rr),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(invalidate(qp, 9, mw, 0), STATUS_SUCCESS);
    assert_eq!(env.dev.sq_pending(qpn).last().unwrap().key, mw_token(mw));
    for o in [
        header(foreign),
        header(other_pd),
        header(mw),
        header(fr),
        header(rw),
        header(ro),
    ] {
        close_now(o);
    }
    pair.close();
    env.finish();
}

#[test]
fn register_mr_checks_and_tokens() {
    let env = Env::new();
    let pd = env.create_pd();
    let pages = Pages::new(3);
    let va = pages.addr() + 0x10;
    let mr = create_mr(pd, false);
    let (before, _) = mr_tokens(mr);
    let mut mdl = Mdl::new(va, 8000);
    assert_eq!(
        register_mr(mr, &mut mdl, 8000, 0x40),
        STATUS_INVALID_PARAMETER,
        "unknown flag"
    );
    assert_eq!(
        register_mr(mr, &mut mdl, 8000, 0x4),
        STATUS_INVALID_PARAMETER,
        "remote write bit without local write"
    );
    assert_eq!(
        register_mr(mr, &mut mdl, 8001, 0),
        STATUS_INVALID_PARAMETER,
        "longer than the MDL"
    );
    assert_eq!(register_mr(mr, &mut mdl, 0, 0), STATUS_INVALID_PARAMETER);
    let flags =
        NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_RDMA_READ_SINK;
    assert_eq!(register_mr(mr, &mut mdl, 8000, flags), STATUS_SUCCESS);
    let (local, remote) = mr_tokens(mr);
    assert_eq!(local, remote);
    assert_ne!(local, before);
    let cmd = env.dev.commands().into_iter().rev().find_map(|c| match c {
        rsndk::scripted::Command::Register {
            key,
            access,
            va,
            length,
            fbo,
            pages,
        } => Some((key, access, va, length, fbo, pages)),
        _ => None,
    });
    let base = pages.addr();
    assert_eq!(
        cmd,
        Some((
            hwq::MemoryKey(local),
            (Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::READ_SINK)
                .bits(),
            va,
            8000,
            0x10,
            vec![base, base + 4096],
        ))
    );
    assert_eq!(
        register_mr(mr, &mut mdl, 8000, 0),
        STATUS_INVALID_DEVICE_STATE,
        "already registered"
    );
    assert_eq!(deregister_mr(mr), STATUS_SUCCESS);
    assert_eq!(deregister_mr(mr), STATUS_INVALID_DEVICE_STATE);
    let fr = create_mr(pd, true);
    assert_eq!(
        register_mr(fr, &mut mdl, 100, 0),
        STATUS_INVALID_DEVICE_REQUEST,
        "fast-register MRs are not registered"
    );
    close_now(fr);
    close_now(mr);
    close_now(pd);
    env.finish();
}

#[test]
fn srq_receives_and_limits() {
    let env = Env::new();
    let notify = Recorder::new();
    let pd = env.create_pd();
    let cq = env.create_cq(16, &notify);
    let srq = try_create_srq(pd, 2, 2, 0, None).unwrap();
    let qp = create_qp_with_srq(pd, cq, srq, 0x77, 4, 1).unwrap();
    let sg = [sge(0x1000, 8, 1), sge(0x2000, 8, 1), sge(0x3000, 8, 1)];
    assert_eq!(
        receive(qp, 1, &sg[..1]),
        STATUS_INVALID_PARAMETER,
        "an SRQ QP has no RQ of its own"
    );
    assert_eq!(
        srq_receive(srq, 1, &sg),
        STATUS_INVALID_PARAMETER,
        "above the SRQ's SGE limit"
    );
    assert_eq!(srq_receive(srq, 1, &sg[..2]), STATUS_SUCCESS);
    assert_eq!(srq_receive(srq, 2, &sg[..1]), STATUS_SUCCESS);
    assert_eq!(
        srq_receive(srq, 3, &sg[..1]),
        STATUS_INSUFFICIENT_RESOURCES,
        "full"
    );
    let srqn = env.dev.srqns()[0];
    assert_eq!(
        env.dev
            .srq_pending(srqn)
            .iter()
            .map(|w| w.wr_id)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(env.dev.srq_doorbells(srqn), 2);
    // Lower the depth to 1 and raise it back; above the created size is
    // not supported.
    assert_eq!(modify_srq(srq, 1, 0), STATUS_SUCCESS);
    let qpn = env.qpn_of(0x77);
    env.dev.complete_next_recv(qpn, CqeStatus::Success, 8, 0);
    assert_eq!(
        srq_receive(srq, 4, &sg[..1]),
        STATUS_INSUFFICIENT_RESOURCES,
        "depth 1, one outstanding"
    );
    assert_eq!(modify_srq(srq, 2, 0), STATUS_SUCCESS);
    assert_eq!(srq_receive(srq, 4, &sg[..1]), STATUS_SUCCESS);
    assert_eq!(modify_srq(srq, 3, 0), STATUS_NOT_SUPPORTED);
    let r = results(cq, 4);
    assert_eq!(
        (
            r.len(),
            r[0].RequestContext as usize,
            r[0].QPContext as usize
        ),
        (1, 1, 0x77)
    );
    close_now(qp);
    close_now(srq);
    close_now(cq);
    close_now(pd);
    env.finish();
}

#[test]
fn posting_works_at_dispatch_level() {
    let env = Env::new();
    let pair = env.connected_pair(16, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [sge(0x1000, 4, 1)];
    let st = env
        .platform
        .at_dispatch(|| (send(qp, 1, &sg, 0), receive(qp, 2, &sg)));
    assert_eq!(st, (STATUS_SUCCESS, STATUS_SUCCESS));
    assert_eq!(HostPlatform::irql(), provider::Irql::Passive);
    env.dev.complete_next_send(qpn, CqeStatus::Success);
    let r = env.platform.at_dispatch(|| results(pair.active_qp.cq, 4));
    assert_eq!(r.len(), 1);
    assert!(status_ok(r[0].Status));
    pair.close();
    env.finish();
}

#[test]
fn concurrent_posting_completion_and_polling() {
    // One thread posts on each of two QPs (at DISPATCH_LEVEL), one plays
    // the hardware completing them, one polls the CQs: every request comes
    // back exactly once, in order per QP. Like any consumer, the posters
    // keep no more requests in flight than their CQ (64 entries) holds.
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    const N: usize = 2000;
    const CQ_DEPTH: usize = 64;
    let env = Env::new();
    let p1 = env.connected_pair(32, 1, 0);
    let qps = [p1.active_qp, p1.passive_qp];
    let polled = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for (k, q) in qps.iter().enumerate() {
            let (qp, platform, polled, done) = (q.qp as usize, env.platform, &polled[k], &done);
            s.spawn(move || {
                let sg = [sge(0x1000, 8, 1)];
                let mut i = 0;
                while i < N && !done.load(SeqCst) {
                    if i - polled.load(SeqCst) >= CQ_DEPTH {
                        std::thread::yield_now();
                        continue;
                    }
                    let st = platform.at_dispatch(|| send(qp as *mut NDK_QP, i, &sg, 0));
                    match st {
                        STATUS_SUCCESS => i += 1,
                        STATUS_INSUFFICIENT_RESOURCES => std::thread::yield_now(),
                        other => panic!("post failed: {other:#x}"),
                    }
                }
            });
        }
        let (dev, done) = (env.dev.clone(), &done);
        let qpns = [qps[0].qpn, qps[1].qpn];
        s.spawn(move || {
            while !done.load(SeqCst) {
                let mut any = false;
                for qpn in qpns {
                    any |= dev.complete_next_send(qpn, CqeStatus::Success).is_some();
                }
                if !any {
                    std::thread::yield_now();
                }
            }
        });
        let mut next = [0usize; 2];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while next != [N, N] {
            if std::time::Instant::now() > deadline {
                done.store(true, SeqCst);
                panic!("completions lost: {next:?} of {N}");
            }
            for (k, q) in qps.iter().enumerate() {
                for r in results(q.cq, 32) {
                    assert_eq!(r.Status, STATUS_SUCCESS);
                    assert_eq!(r.QPContext as usize, q.context);
                    assert_eq!(r.RequestContext as usize, next[k], "in order, exactly once");
                    next[k] += 1;
                }
                polled[k].store(next[k], SeqCst);
            }
            std::thread::yield_now();
        }
        done.store(true, SeqCst);
    });
    p1.close();
    env.finish();
}

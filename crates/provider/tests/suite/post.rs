//! Posting through the QP and SRQ dispatch tables: per-function flag
//! validation, SGE limits, inline data, connection state, full queues, the
//! DEFER doorbell rule, silent success, fast register, bind, invalidate and
//! read-local-invalidate, and what each accepted request puts in its WQE.
//! Every test runs on the scripted device and on the software RNIC over the
//! in-memory fabric and UDP; there, what the scripted device shows by its
//! queues and doorbells (what was queued, when the doorbell rang) is
//! checked by what completes and when. The DEFER rule there: deferred
//! work completes once a plain post, a failing post, the sixteenth deferred
//! post, NdkFlush or the QP's close hands it over, and until then it waits:
//! the RNIC may pick up published WQEs whenever it serves the QP, but it
//! serves a QP with nothing in flight only when its doorbell rings, so
//! after a grace period nothing deferred has completed and the peer has
//! received none of it (`nothing_handed_over`). Likewise
//! `wqe_fields_of_data_requests` checks the WQE encoding on the scripted
//! device and its effects on the RNIC (data, contexts, silent success, the
//! solicited event, remote and read-local invalidation); the READ_FENCE
//! ordering is observed on the RNIC by `audit`'s
//! `read_fence_holds_a_write_until_the_read_before_it_landed`. `wqe_fields_of_data_requests_ipv6` runs
//! that body on an IPv6 adapter (`Env::on_v6`).

use host::platform::HostPlatform;
use hwq::wqe::{Access, Data, Gather, Remote, SendOp, SendOpcode, SendRequest, WqeFlags};
use hwq::{CqeStatus, MemoryKey};
use ndkpi::*;
use testkit::adapter::*;

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
        .dev()
        .complete_next_send(qpn, CqeStatus::Success)
        .is_some()
    {}
}

fn bytemuck(words: &mut [u64]) -> &mut [u8] {
    let len = std::mem::size_of_val(words);
    // SAFETY: u64s viewed as their bytes; same allocation and length.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}

/// On the RNIC, that the device was handed nothing of `pair`'s active
/// side since its last completion: after a grace period in which a rung
/// doorbell is served, the active side has no completion and the peer no
/// receive. Valid only while the active QP has nothing in flight (nor an
/// acknowledgement whose arrival has the device serve it again: settle
/// after the last completion of a request the peer acknowledges). The
/// scripted device counts the doorbells instead.
fn nothing_handed_over(env: &Env, pair: &Pair, what: &str) {
    if env.is_scripted() {
        return;
    }
    env.settle();
    let done = results(pair.active_qp.cq, 64);
    assert!(
        done.is_empty(),
        "{what}: completed before handed over: {done:?}"
    );
    let received = results(pair.passive_qp.cq, 64);
    assert!(
        received.is_empty(),
        "{what}: the peer received it before it was handed over: {received:?}"
    );
}

backend_tests! {

fn initiator_posts_need_a_connection_but_receives_do_not(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 8, 2, 64);
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
    if env.is_scripted() {
        assert!(env.dev().sq_pending(s.qpn).is_empty(), "nothing queued");
        assert_eq!(env.dev().sq_doorbells(s.qpn), 0);
    }
    assert_eq!(
        receive(s.qp, 9, &sg),
        STATUS_SUCCESS,
        "receives are pre-posted before connect"
    );
    if env.is_scripted() {
        assert_eq!(env.dev().rq_pending(s.qpn).len(), 1);
        assert_eq!(env.dev().rq_doorbells(s.qpn), 1);
    }
    for o in [header(mw), header(mr), header(fr), header(s.qp)] {
        close_now(o);
    }
    // Closing the QP cancels what it holds: the receive, and nothing of
    // the refused posts (on every backend).
    let r = env.results(s.cq, 1);
    assert_eq!(
        (r[0].RequestContext as usize, r[0].Status),
        (9, STATUS_CANCELLED),
        "the receive, cancelled"
    );
    env.settle();
    assert!(results(s.cq, 8).is_empty(), "a refused post was queued");
    close_now(s.cq);
    close_now(s.pd);
    env.finish();
}

fn a_full_queue_refuses_and_queues_nothing(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(4, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [pair.active_qp.sg(0, 4)];
    for i in 0..4 {
        assert_eq!(send(qp, i, &sg, NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
    }
    assert_eq!(
        send(qp, 99, &sg, 0),
        STATUS_INSUFFICIENT_RESOURCES,
        "silent WRs count too"
    );
    if env.is_scripted() {
        assert_eq!(env.dev().sq_pending(qpn).len(), 4);
        env.dev().complete_next_send(qpn, CqeStatus::Success);
        assert_eq!(
            send(qp, 4, &sg, 0),
            STATUS_SUCCESS,
            "a completed slot is free again"
        );
    } else {
        // The peer's first receive lets the first SEND complete.
        pair.passive_qp.post_receives(100, 1, 64);
        wait_until("a completed slot is free again", || {
            let st = send(qp, 4, &sg, 0);
            assert!(st == STATUS_SUCCESS || st == STATUS_INSUFFICIENT_RESOURCES);
            st == STATUS_SUCCESS
        });
        // The refused SEND was queued nowhere: with receives for the rest,
        // the first completion (0-3 are silent) is 4's, the peer receives
        // five SENDs, and nothing more comes.
        pair.passive_qp.post_receives(101, 4, 64);
        let done = env.results(cq, 1);
        assert_eq!(
            (done[0].RequestContext as usize, done[0].Status),
            (4, STATUS_SUCCESS),
            "the first completion"
        );
        let received = env.results(pair.passive_qp.cq, 5);
        assert!(received.iter().all(|r| r.Status == STATUS_SUCCESS), "{received:?}");
        env.settle();
        assert!(results(cq, 8).is_empty(), "a completion for the refused SEND");
        assert!(
            results(pair.passive_qp.cq, 8).is_empty(),
            "the peer received the refused SEND"
        );
    }
    // The receive queue has its own depth.
    for i in 0..4 {
        assert_eq!(receive(qp, i, &sg), STATUS_SUCCESS);
    }
    assert_eq!(receive(qp, 5, &sg), STATUS_INSUFFICIENT_RESOURCES);
    if env.is_scripted() {
        assert_eq!(env.dev().rq_pending(qpn).len(), 4);
    }
    pair.close();
    env.finish();
}

fn defer_holds_the_doorbell_until_a_plain_post(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [pair.active_qp.sg(0, 4)];
    let target = pair.remote();
    pair.passive_qp.post_receives(100, 4, 64);
    for i in 1..=3 {
        assert_eq!(send(qp, i, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    }
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 0, "deferred");
        assert_eq!(env.dev().sq_pending(qpn).len(), 3, "but published at once");
    }
    nothing_handed_over(&env, &pair, "three deferred SENDs");
    assert_eq!(
        write(qp, 4, &sg, target.va, target.token, 0),
        STATUS_SUCCESS
    );
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 1, "one ring covers the batch");
    }
    assert_eq!(send(qp, 5, &sg, 0), STATUS_SUCCESS);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 2);
    } else {
        // The plain posts handed the deferred ones over: all complete, in
        // order.
        let r = env.results(cq, 5);
        let got: Vec<(usize, NTSTATUS)> = r
            .iter()
            .map(|x| (x.RequestContext as usize, x.Status))
            .collect();
        assert_eq!(got, (1..=5).map(|i| (i, STATUS_SUCCESS)).collect::<Vec<_>>());
    }
    pair.close();
    env.finish();
}

fn a_failing_post_rings_for_earlier_deferred_ones(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [pair.active_qp.sg(0, 4)];
    pair.passive_qp.post_receives(100, 2, 64);
    // On the RNIC, what was handed to the device completes, and a
    // deferred request waits (`nothing_handed_over`).
    let handed = |ctx: usize| {
        if !env.is_scripted() {
            let r = env.results(cq, 1);
            assert_eq!((r[0].RequestContext as usize, r[0].Status), (ctx, STATUS_SUCCESS));
        }
    };
    // A failure with nothing deferred rings nothing.
    assert_eq!(send(qp, 1, &sg, 0x400), STATUS_INVALID_PARAMETER);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 0);
    }
    // The NDK worked case: FR#1 deferred succeeds, FR#2 fails inline.
    let fr = create_mr(pair.active_qp.pd, true);
    assert_eq!(init_fast_register(fr, 1, false), STATUS_SUCCESS);
    assert_eq!(
        fast_register(qp, 1, fr, &[0x4000], 0, 4096, 0x4000, NDK_OP_FLAG_DEFER),
        STATUS_SUCCESS
    );
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 0);
    }
    nothing_handed_over(&env, &pair, "deferred FR#1");
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
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 1, "FR#1 handed to the device");
        assert_eq!(env.dev().sq_pending(qpn).len(), 1, "FR#2 never queued");
    }
    handed(1);
    // Each kind of inline failure rings: bad SGE count, queue full, bad MR.
    assert_eq!(send(qp, 3, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    nothing_handed_over(&env, &pair, "deferred SEND 3");
    assert_eq!(send(qp, 1, &[sg[0], sg[0]], 0), STATUS_INVALID_PARAMETER);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 2);
    }
    handed(3);
    if !env.is_scripted() {
        // The peer's receive of SEND 3; its acknowledgement has the RNIC
        // serve the QP again: let that pass before deferring the next.
        assert_eq!(env.results(pair.passive_qp.cq, 1).len(), 1, "SEND 3 received");
        env.settle();
    }
    assert_eq!(send(qp, 4, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    nothing_handed_over(&env, &pair, "deferred SEND 4");
    assert_eq!(
        invalidate(qp, 1, pair.active_qp.pd, 0),
        STATUS_INVALID_PARAMETER,
        "a PD is not invalidatable"
    );
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 3);
    }
    handed(4);
    close_now(fr);
    pair.close();
    env.finish();
}

fn sixteen_deferred_posts_ring_anyway(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [pair.active_qp.sg(0, 4)];
    pair.passive_qp.post_receives(100, 32, 64);
    for i in 1..=15 {
        assert_eq!(send(qp, i, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    }
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 0);
    }
    nothing_handed_over(&env, &pair, "fifteen deferred SENDs");
    assert_eq!(send(qp, 16, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 1);
    } else {
        // The sixteenth rang at the latest: all of them complete with no
        // plain post.
        assert_eq!(env.results(cq, 16).len(), 16);
        // The peer received them; the last acknowledgement has the RNIC
        // serve the QP again: let that pass before deferring more.
        assert_eq!(env.results(pair.passive_qp.cq, 16).len(), 16);
        env.settle();
    }
    // The count starts again after a ring.
    for i in 1..=15 {
        assert_eq!(send(qp, i, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    }
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 1);
    }
    nothing_handed_over(&env, &pair, "fifteen more deferred SENDs");
    assert_eq!(send(qp, 16, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 2);
    } else {
        let r = env.results(cq, 16);
        assert!(r.iter().all(|x| x.Status == STATUS_SUCCESS), "{r:?}");
    }
    pair.close();
    env.finish();
}

fn flush_and_close_ring_for_deferred_posts(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [pair.active_qp.sg(0, 4)];
    assert_eq!(send(qp, 1, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    flush(qp);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 1, "flush rings");
    } else {
        // Handed to the device, which cancels it (the peer posted no
        // receive, so it cannot have completed).
        let r = env.results(pair.active_qp.cq, 1);
        assert_eq!((r[0].RequestContext as usize, r[0].Status), (1, STATUS_CANCELLED));
    }
    let p2 = env.connected_pair(64, 1, 0);
    let qpn2 = p2.active_qp.qpn;
    assert_eq!(
        send(p2.active_qp.qp, 1, &[p2.active_qp.sg(0, 4)], NDK_OP_FLAG_DEFER),
        STATUS_SUCCESS
    );
    close_now(p2.active);
    let rec = Recorder::new();
    // The connector is closed: the QP's own close rings before it flushes.
    assert_eq!(close(p2.active_qp.qp, rec), STATUS_SUCCESS);
    if env.is_scripted() {
        assert!(env.dev().qp_state(qpn2).is_none(), "destroyed");
    } else {
        let r = env.results(p2.active_qp.cq, 1);
        assert_eq!((r[0].RequestContext as usize, r[0].Status), (1, STATUS_CANCELLED));
    }
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

fn qp_close_rings_its_deferred_doorbell(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(64, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    assert_eq!(
        send(qp, 1, &[pair.active_qp.sg(0, 4)], NDK_OP_FLAG_DEFER),
        STATUS_SUCCESS
    );
    let rec = Recorder::new();
    // The connector keeps the QP open (pending) but its close has already
    // rung and flushed.
    assert_eq!(close(qp, rec), STATUS_PENDING);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(qpn), 1);
        assert!(
            env.dev()
                .commands()
                .contains(&testkit::scripted::Command::FlushQp(qpn))
        );
    } else {
        // Handed over and cancelled (the peer posted no receive).
        let r = env.results(pair.active_qp.cq, 1);
        assert_eq!((r[0].RequestContext as usize, r[0].Status), (1, STATUS_CANCELLED));
    }
    close_now(pair.active);
    env.pump(|| rec.count() >= 1);
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

fn register_mr_checks_and_tokens(b: Backend) {
    let env = Env::on(b);
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
    if env.is_scripted() {
        let cmd = env.dev().commands().into_iter().rev().find_map(|c| match c {
            testkit::scripted::Command::Register {
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
    }
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

fn posting_works_at_dispatch_level(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(16, 1, 0);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let sg = [pair.active_qp.sg(0, 4)];
    pair.passive_qp.post_receives(100, 1, 64);
    let st = env.at_dispatch(|| (send(qp, 1, &sg, 0), receive(qp, 2, &sg)));
    assert_eq!(st, (STATUS_SUCCESS, STATUS_SUCCESS));
    assert_eq!(env.irql(), provider::Irql::Passive);
    if env.is_scripted() {
        env.dev().complete_next_send(qpn, CqeStatus::Success);
    }
    let mut r = env.at_dispatch(|| results(pair.active_qp.cq, 4));
    if !env.is_scripted() {
        wait_until("the SEND's completion", || {
            r.extend(env.at_dispatch(|| results(pair.active_qp.cq, 4)));
            !r.is_empty()
        });
    }
    assert_eq!(r.len(), 1);
    assert!(status_ok(r[0].Status));
    pair.close();
    env.finish();
}


fn sge_counts_and_transfer_length_are_limited(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(32, 2, 0);
    let (qp, qpn, s) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp);
    // Real memory, so the RNIC executes what is accepted.
    let sg3 = [s.sg(0, 1), s.sg(100, 1), s.sg(200, 1)];
    let target = pair.remote();
    pair.passive_qp.post_receives(100, 2, 64);
    assert_eq!(send(qp, 1, &sg3[..2], 0), STATUS_SUCCESS);
    assert_eq!(
        send(qp, 1, &sg3, 0),
        STATUS_INVALID_PARAMETER,
        "above MaxInitiatorRequestSge"
    );
    assert_eq!(
        write(qp, 1, &sg3, target.va, target.token, 0),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        send_and_invalidate(qp, 1, &sg3, 0, 1),
        STATUS_INVALID_PARAMETER
    );
    // Reads are limited by the adapter's MaxReadRequestSge (16), not the QP's.
    assert_eq!(read(qp, 1, &sg3, target.va, target.token, 0), STATUS_SUCCESS);
    let sg17: Vec<NDK_SGE> = (0..17).map(|i| s.sg(1000 + 10 * i, 1)).collect();
    assert_eq!(
        read(qp, 1, &sg17, target.va, target.token, 0),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        read(qp, 1, &sg17[..16], target.va, target.token, 0),
        STATUS_SUCCESS
    );
    // The receive side has its own limit.
    assert_eq!(receive(qp, 1, &sg3), STATUS_INVALID_PARAMETER);
    assert_eq!(receive(qp, 1, &sg3[..2]), STATUS_SUCCESS);
    // Total bytes beyond MaxTransferLength.
    let max = env.info().MaxTransferLength;
    // The lengths reach past a small registered MR: its bounds, not the
    // privileged token (which covers all of host memory), make the RNIC
    // refuse the oversized one without touching memory.
    let small_buf = vec![0u8; 4096];
    let (small, _small_mdl) = registered_mr(s.pd, &small_buf, 0);
    let small_token = mr_tokens(small).0;
    let big = [
        sge(small_buf.as_ptr() as u64, max, small_token),
        sge(small_buf.as_ptr() as u64, 1, small_token),
    ];
    assert_eq!(send(qp, 1, &big, 0), STATUS_INVALID_PARAMETER);
    assert_eq!(receive(qp, 1, &big), STATUS_INVALID_PARAMETER);
    // Exactly MaxTransferLength is accepted (on the RNIC it then fails on
    // the MR's bounds, last in the queue).
    assert_eq!(send(qp, 1, &big[..1], 0), STATUS_SUCCESS);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_pending(qpn).len(), 4);
    } else {
        // Every accepted request completes: three successes, then the
        // oversized SEND fails on its local memory.
        let r = env.results(s.cq, 4);
        let st: Vec<NTSTATUS> = r.iter().map(|x| x.Status).collect();
        assert_eq!(&st[..3], &[STATUS_SUCCESS; 3], "{r:?}");
        assert_eq!(st[3], STATUS_ACCESS_VIOLATION, "{r:?}");
    }
    close_now(small);
    pair.close();
    env.finish();
}

fn inline_data_is_copied_at_post_time(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(16, 1, 64);
    let (qp, qpn) = (pair.active_qp.qp, pair.active_qp.qpn);
    let target = pair.remote();
    pair.passive_qp.post_receives(100, 2, 64);
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
    if env.is_scripted() {
        let wqe = env.dev().sq_pending(qpn)[0];
        assert_eq!(wqe.inline_data(), b"hello, inline world");
        assert!(wqe.wqe_flags().contains(WqeFlags::INLINE));
        assert_eq!((wqe.sge_count, wqe.total_len, wqe.wr_id), (0, 19, 0xabc));
    }
    // Write may be inline too.
    assert_eq!(
        write(qp, 2, &sg, target.va + 8, target.token, NDK_OP_FLAG_INLINE),
        STATUS_SUCCESS
    );
    a.copy_from_slice(b"AGAIN!!");
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
    if env.is_scripted() {
        assert_eq!(env.dev().sq_pending(qpn).len(), 3);
    } else {
        // What arrived is what the buffers held when the posts returned.
        let r = env.results(pair.active_qp.cq, 3);
        assert!(r.iter().all(|x| x.Status == STATUS_SUCCESS), "{r:?}");
        let got = env.results(pair.passive_qp.cq, 2);
        assert!(got.iter().all(|x| x.Status == STATUS_SUCCESS), "{got:?}");
        let s = pair.passive_qp.scratch;
        assert_eq!(s.bytes(Scratch::LEN / 2, 19), b"hello, inline world");
        assert_eq!(s.bytes(Scratch::LEN / 2 + 64, 64), vec![7u8; 64]);
        // SAFETY: the registered target buffer; the WRITE completed.
        let written = unsafe { std::slice::from_raw_parts((target.va + 8) as *const u8, 19) };
        assert_eq!(written, b"CHANGEDinline world");
    }
    pair.close();
    env.finish();
}

fn silent_success_produces_no_completion_but_failures_do(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(16, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [pair.active_qp.sg(0, 4)];
    pair.passive_qp.post_receives(100, 2, 64);
    assert_eq!(send(qp, 1, &sg, NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
    assert_eq!(send(qp, 2, &sg, 0), STATUS_SUCCESS);
    env.complete_sends(&pair.active_qp, 2);
    let r = env.results(cq, 1);
    env.settle();
    assert!(results(cq, 8).is_empty(), "one completion only");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].RequestContext as usize, 2);
    // A silent WRITE the peer refuses (no such token) still completes.
    let target = pair.remote();
    assert_eq!(
        write(qp, 3, &sg, target.va, target.token ^ 0x100, NDK_OP_FLAG_SILENT_SUCCESS),
        STATUS_SUCCESS
    );
    if env.is_scripted() {
        env.dev().complete_next_send(qpn, CqeStatus::RemoteAccess);
    }
    let r = env.results(cq, 1);
    assert_eq!(
        (r.len(), r[0].Status, r[0].RequestContext as usize),
        (1, STATUS_REMOTE_RESOURCES, 3)
    );
    pair.close();
    env.finish();
}

fn fast_register_checks_and_token_at_return(b: Backend) {
    let env = Env::on(b);
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
    assert_eq!(
        local, before,
        "the token fixed at initialisation, readable when the post returned"
    );
    if env.is_scripted() {
        let w = env.dev().sq_pending(qpn);
        assert_eq!(w.len(), 1, "only the good one was queued");
        let Ok(SendRequest {
            op: SendOp::FastRegister(fr),
            ..
        }) = w[0].decode()
        else {
            panic!("a fast-register WQE: {:?}", w[0].decode());
        };
        assert_eq!(
            (fr.key.0, fr.page_count, fr.va, fr.length, fr.fbo),
            (local, 2, 0x5010, 8192 - 0x10, 0x10)
        );
        assert_eq!(fr.access, Access::LOCAL_WRITE);
        // The WQE points at the MR's own copy of the page list.
        let mut copy = [0u64; 2];
        assert!(
            provider::Platform::dma(HostPlatform::global())
                .read(fr.page_list, bytemuck(&mut copy))
                .is_ok()
        );
        assert_eq!(copy, [0x7000_0000, 0x7100_0000]);
    } else {
        // Only the good one was queued: it alone completes.
        let r = env.device_completions(pair.active_qp.cq, 1);
        assert_eq!(
            (r[0].RequestContext as usize, r[0].Type),
            (0x99, NdkOperationTypeFastRegister)
        );
        env.settle();
        assert!(results(pair.active_qp.cq, 4).is_empty());
    }
    // An NdkRegisterMr region cannot be invalidated by work request.
    assert_eq!(invalidate(qp, 4, regular, 0), STATUS_INVALID_PARAMETER);
    for o in [header(fr), header(regular)] {
        close_now(o);
    }
    pair.close();
    env.finish();
}

fn fast_register_keeps_the_token_and_grants_remote_rights(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(32, 1, 0);
    let (qp, qpn, pd) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.pd);
    let pages: [NDK_LOGICAL_ADDRESS; 1] = [0x7000_0000];
    // An MR initialised with RemoteAccess accepts remote rights; every
    // registration keeps the token it had from initialisation.
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
    assert!(t0 == t1 && t1 == t2, "one token: {t0:#x} {t1:#x} {t2:#x}");
    if env.is_scripted() {
        let w = env.dev().sq_pending(qpn);
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
    } else {
        let r = env.device_completions(pair.active_qp.cq, 3);
        let ctx: Vec<usize> = r.iter().map(|x| x.RequestContext as usize).collect();
        assert_eq!(ctx, vec![1, 2, 3]);
    }
    close_now(fr2);
    pair.close();
    env.finish();
}

fn bind_checks_and_window_token_at_return(b: Backend) {
    let env = Env::on(b);
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
    if env.is_scripted() {
        assert!(env.dev().sq_pending(qpn).is_empty());
    }
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
    if env.is_scripted() {
        let w = env.dev().sq_pending(qpn)[0];
        let Ok(SendRequest {
            wr_id,
            op: SendOp::Bind(b),
            ..
        }) = w.decode()
        else {
            panic!("a bind WQE: {:?}", w.decode());
        };
        assert_eq!(
            (b.window.0, b.region.0, b.va, b.length, wr_id),
            (t1, mr_tokens(rw).0, va + 100, 200, 0x42)
        );
        assert_eq!(b.access, Access::REMOTE_WRITE);
    } else {
        // The peer writes through the window.
        let r = env.device_completions(pair.active_qp.cq, 1);
        assert_eq!(r[0].RequestContext as usize, 0x42);
        let p = pair.passive_qp;
        p.scratch.fill(0, b"window!!");
        assert_eq!(
            write(p.qp, 0x77, &[p.sg(0, 8)], va + 100, t1, 0),
            STATUS_SUCCESS
        );
        assert_eq!(env.results(p.cq, 1)[0].Status, STATUS_SUCCESS);
        assert_eq!(&pages.bytes()[100..108], b"window!!");
    }
    // A bound window is invalidated before it is bound again (the RNIC,
    // like an IB type-2 window, fails a bind of a bound window).
    assert_eq!(invalidate(qp, 8, mw, 0), STATUS_SUCCESS);
    let t_inv = mw_token(mw);
    assert_eq!(
        bind(qp, 1, rw, mw, va, 8192, rr | NDK_OP_FLAG_SILENT_SUCCESS),
        STATUS_SUCCESS,
        "whole region"
    );
    assert!(mw_token(mw) != t1 && mw_token(mw) != t_inv);
    // A window of another PD is refused.
    let other_pd = env.create_pd();
    let foreign = create_mw(other_pd);
    assert_eq!(
        bind(qp, 1, rw, foreign, va, 16, rr),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(invalidate(qp, 9, mw, 0), STATUS_SUCCESS);
    if env.is_scripted() {
        assert_eq!(env.dev().sq_pending(qpn).last().unwrap().key, mw_token(mw));
    } else {
        // The silent bind has no completion; the invalidates have.
        let r = env.device_completions(pair.active_qp.cq, 2);
        let ctx: Vec<usize> = r.iter().map(|x| x.RequestContext as usize).collect();
        assert_eq!(ctx, vec![8, 9]);
    }
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

fn srq_receives_and_limits(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let pd = env.create_pd();
    let cq = env.create_cq(16, notify);
    let srq = try_create_srq(pd, 2, 2, 0, None).unwrap();
    let qp = create_qp_with_srq(pd, cq, srq, 0x77, 4, 1).unwrap();
    let scratch = Scratch::new(pd);
    let sg = [scratch.sge(0, 8), scratch.sge(100, 8), scratch.sge(200, 8)];
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
    if env.is_scripted() {
        let srqn = env.dev().srqns()[0];
        assert_eq!(
            env.dev()
                .srq_pending(srqn)
                .iter()
                .map(|w| w.wr_id)
                .collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(env.dev().srq_doorbells(srqn), 2);
    }
    // Lower the depth to 1 and raise it back; above the created size is
    // not supported.
    assert_eq!(modify_srq(srq, 1, 0), STATUS_SUCCESS);
    // One receive completes: the scripted device is told; on the RNIC a
    // QP connected to the SRQ's QP sends 8 bytes.
    let sender = if env.is_scripted() {
        let qpn = env.qpn_of(0x77);
        env.dev().complete_next_recv(qpn, CqeStatus::Success, 8, 0);
        None
    } else {
        let s = env.qp_setup(notify, 4, 1, 0);
        let link = env.link(s.qp, qp);
        assert_eq!(send(s.qp, 9, &[s.sg(0, 8)], 0), STATUS_SUCCESS);
        assert_eq!(env.results(s.cq, 1)[0].Status, STATUS_SUCCESS);
        Some((s, link))
    };
    assert_eq!(
        srq_receive(srq, 4, &sg[..1]),
        STATUS_INSUFFICIENT_RESOURCES,
        "depth 1, one outstanding"
    );
    assert_eq!(modify_srq(srq, 2, 0), STATUS_SUCCESS);
    assert_eq!(srq_receive(srq, 4, &sg[..1]), STATUS_SUCCESS);
    assert_eq!(modify_srq(srq, 3, 0), STATUS_NOT_SUPPORTED);
    let r = env.results(cq, 1);
    if let Some((s, link)) = sender {
        link.close();
        close_now(s.qp);
        close_now(s.cq);
        close_now(s.pd);
    }
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

fn concurrent_posting_completion_and_polling(b: Backend) {
    // One thread posts on each of two QPs (at DISPATCH_LEVEL), one polls
    // the CQs, and the device completes: a thread playing the hardware on
    // the scripted device; on the RNIC the two QPs send to each other and
    // the poller reposts each receive that completes. Every request comes
    // back exactly once, in order per QP. Like any consumer, the posters
    // keep no more requests in flight than their CQ (64 entries) holds
    // beside the 32 receives.
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    /// Stops the posters however the poller leaves (a failed assertion
    /// included), so the scope can end.
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, SeqCst);
        }
    }
    const N: usize = 2000;
    const WINDOW: usize = 32;
    const RECV: usize = 1 << 40;
    let env = Env::on(b);
    let p1 = env.connected_pair(32, 1, 0);
    let qps = [p1.active_qp, p1.passive_qp];
    let rnic = !env.is_scripted();
    if rnic {
        for q in qps {
            q.post_receives(RECV, 32, 8);
        }
    }
    let polled = [AtomicUsize::new(0), AtomicUsize::new(0)];
    // Receives ever posted at each QP: a SEND waits for one at its peer
    // (no RNR, however slowly the poller gives receives back).
    let credits = if rnic {
        [AtomicUsize::new(32), AtomicUsize::new(32)]
    } else {
        [AtomicUsize::new(usize::MAX / 2), AtomicUsize::new(usize::MAX / 2)]
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for (k, q) in qps.iter().enumerate() {
            let (qp, platform, polled, done) = (q.qp as usize, env.dispatcher(), &polled[k], &done);
            let peer_credits = &credits[1 - k];
            let (va, token) = (q.scratch.logical, q.scratch.token);
            s.spawn(move || {
                let sg = [sge(va, 8, token)];
                let mut i = 0;
                while i < N && !done.load(SeqCst) {
                    if i - polled.load(SeqCst) >= WINDOW || i >= peer_credits.load(SeqCst) {
                        std::thread::yield_now();
                        continue;
                    }
                    let st = platform.run(|| send(qp as *mut NDK_QP, i, &sg, 0));
                    match st {
                        STATUS_SUCCESS => i += 1,
                        STATUS_INSUFFICIENT_RESOURCES => std::thread::yield_now(),
                        other => panic!("post failed: {other:#x}"),
                    }
                }
            });
        }
        if !rnic {
            let (dev, done) = (env.dev().clone(), &done);
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
        }
        let _stop = Stop(&done);
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
                    let ctx = r.RequestContext as usize;
                    if ctx >= RECV {
                        // A receive: give it back.
                        let at = (ctx - RECV) * 8;
                        // A polled receive completion has freed its slot
                        // (devices release the slot before the CQE is
                        // visible), so the re-post must succeed at once.
                        let sg = [q.sg(Scratch::LEN / 2 + at, 8)];
                        assert_eq!(receive(q.qp, ctx, &sg), STATUS_SUCCESS);
                        credits[k].fetch_add(1, SeqCst);
                        continue;
                    }
                    assert_eq!(ctx, next[k], "in order, exactly once");
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

// Every accepted post is executed on the RNIC, so each must be valid
// there: real memory, a peer receive per SEND, a fresh peer token per
// SEND-and-invalidate, and each MR or window put back in the state the
// next case needs.
fn each_function_accepts_exactly_its_flags(b: Backend) {
    use std::cell::Cell;
    let env = Env::on(b);
    let pair = env.connected_pair(64, 4, 64);
    let (qp, qpn, pd, cq) = (
        pair.active_qp.qp,
        pair.active_qp.qpn,
        pair.active_qp.pd,
        pair.active_qp.cq,
    );
    let (peer, pcq) = (pair.passive_qp, pair.passive_qp.cq);
    let rnic = !env.is_scripted();
    let target = pair.remote();
    let mut pages = Pages::new(2);
    let va = pages.addr();
    let (mr, _mdl) = registered_mr(pd, pages.bytes(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let sg = [sge(va, 16, mr_tokens(mr).0)];
    let mw = create_mw(pd);
    let fr = create_mr(pd, true);
    assert_eq!(init_fast_register(fr, 2, true), STATUS_SUCCESS);
    // Waits for `n` successful completions of `cq` (RNIC only).
    let done = |cq: *mut NDK_CQ, n: usize, what: &str| {
        if rnic && n > 0 {
            let r = env.results_ex(cq, n);
            assert!(r.iter().all(|x| x.Status == STATUS_SUCCESS), "{what}: {r:?}");
        }
    };
    // The READ sink: a fast-registered MR, its token invalidated by
    // RDMA_READ_LOCAL_INVALIDATE and registered again after.
    let sink = create_mr(pd, true);
    assert_eq!(init_fast_register(sink, 2, false), STATUS_SUCCESS);
    let sink_token = Cell::new(0u32);
    let register_sink = || {
        let st = fast_register(
            qp,
            0x5,
            sink,
            &[logical_of(va) as NDK_LOGICAL_ADDRESS, logical_of(va + 4096) as NDK_LOGICAL_ADDRESS],
            0,
            8192,
            va,
            NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
        );
        assert_eq!(st, STATUS_SUCCESS);
        sink_token.set(mr_tokens(sink).0);
        done(cq, 1, "sink registration");
    };
    register_sink();
    // The peer's window, invalidated by each SEND-and-invalidate and bound
    // again after.
    let pbuf: &'static mut [u8] = Box::leak(vec![0u8; 4096].into_boxed_slice());
    let (pmr, _pmdl) = registered_mr(peer.pd, pbuf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let pmw = create_mw(peer.pd);
    let peer_token = Cell::new(0u32);
    let bind_peer = || {
        let st = bind(peer.qp, 0xB, pmr, pmw, pbuf.as_ptr() as u64, 64, NDK_OP_FLAG_ALLOW_REMOTE_READ);
        assert_eq!(st, STATUS_SUCCESS);
        peer_token.set(mw_token(pmw));
        done(pcq, 1, "peer bind");
    };
    bind_peer();
    if rnic {
        peer.post_receives(0x100, 64, 64);
    } else {
        drain(&env, qpn);
    }
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
            Box::new(|f| send_and_invalidate(qp, 1, &sg, f, peer_token.get())),
            allowed_common | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE,
        ),
        (
            "write",
            Box::new(|f| write(qp, 1, &sg, target.va, target.token, f)),
            allowed_common | NDK_OP_FLAG_INLINE,
        ),
        (
            "read",
            Box::new(|f| {
                let sink_sg = [sge(va + 4096, 16, sink_token.get())];
                read(qp, 1, &sink_sg, target.va, target.token, f)
            }),
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
            if rnic && expect_ok && *name == "invalidate" {
                // Something to invalidate.
                let st = fast_register(qp, 0x6, fr, &[0x20_0000], 0, 4096, 0x20_0000, 0);
                assert_eq!(st, STATUS_SUCCESS);
                done(cq, 1, "fast register before invalidate");
            }
            let before = if rnic { 0 } else { env.dev().sq_pending(qpn).len() };
            let st = post(flag);
            if expect_ok {
                assert_eq!(st, STATUS_SUCCESS, "{name} with {flag:#x}");
                if !rnic {
                    assert_eq!(env.dev().sq_pending(qpn).len(), before + 1);
                }
            } else {
                assert_eq!(st, STATUS_INVALID_PARAMETER, "{name} with {flag:#x}");
                if !rnic {
                    assert_eq!(
                        env.dev().sq_pending(qpn).len(),
                        before,
                        "nothing queued by a failed post"
                    );
                }
            }
            if !rnic {
                drain(&env, qpn);
                continue;
            }
            if !expect_ok {
                continue;
            }
            // The RNIC executed it: wait for it, then restore the state.
            let what = format!("{name} with {flag:#x}");
            let mut want = usize::from(flag & NDK_OP_FLAG_SILENT_SUCCESS == 0);
            if flag & NDK_OP_FLAG_DEFER != 0 {
                // A plain post hands the deferred one over.
                assert_eq!(write(qp, 0xD, &sg, target.va, target.token, 0), STATUS_SUCCESS);
                want += 1;
            }
            done(cq, want, &what);
            match *name {
                "send" | "send_inv" => done(pcq, 1, &what),
                _ => {}
            }
            match *name {
                "send_inv" => bind_peer(),
                "read" if flag == NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE => register_sink(),
                "bind" => {
                    assert_eq!(invalidate(qp, 0xF, mw, 0), STATUS_SUCCESS);
                    done(cq, 1, "invalidate after bind");
                }
                "fast_register" => {
                    assert_eq!(invalidate(qp, 0xF, fr, 0), STATUS_SUCCESS);
                    done(cq, 1, "invalidate after fast register");
                }
                _ => {}
            }
        }
    }
    if rnic {
        env.settle();
        assert!(results(cq, 8).is_empty(), "failed posts left nothing behind");
    }
    drop(cases);
    for o in [header(pmw), header(pmr), header(sink), header(mw), header(mr), header(fr)] {
        close_now(o);
    }
    pair.close();
    env.finish();
}

fn wqe_fields_of_data_requests(b: Backend) {
    wqe_fields_of_data_requests_on(Env::on(b));
}

fn wqe_fields_of_data_requests_ipv6(b: Backend) {
    wqe_fields_of_data_requests_on(Env::on_v6(b));
}
}

#[allow(clippy::too_many_lines)]
fn wqe_fields_of_data_requests_on(env: Env) {
    let pair = env.connected_pair(16, 4, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let rnic = !env.is_scripted();
    let peer = pair.passive_qp;
    let target = pair.remote();
    // Real values, so the RNIC can run every request: the SGEs lie in a
    // fast-registered MR (the READ invalidates its token), the SEND-and-
    // invalidate names a window of the peer's, RDMA goes to its region.
    let mut pages = Pages::new(2);
    let va = pages.addr();
    pages.bytes()[..4096].fill(0x5A);
    let sink = create_mr(pair.active_qp.pd, true);
    assert_eq!(init_fast_register(sink, 2, false), STATUS_SUCCESS);
    let st = fast_register(
        qp,
        0x5,
        sink,
        &[
            logical_of(va) as NDK_LOGICAL_ADDRESS,
            logical_of(va + 4096) as NDK_LOGICAL_ADDRESS,
        ],
        0,
        8192,
        va,
        NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
    );
    assert_eq!(st, STATUS_SUCCESS);
    let sk = mr_tokens(sink).0;
    env.complete_sends(&pair.active_qp, 1);
    env.device_completions(cq, 1);
    let pbuf: &'static mut [u8] = Box::leak(vec![0u8; 64].into_boxed_slice());
    let (pmr, _pmdl) = registered_mr(peer.pd, pbuf, 0);
    let pmw = create_mw(peer.pd);
    let quiet = NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_SILENT_SUCCESS;
    assert_eq!(
        bind(peer.qp, 0x31, pmr, pmw, pbuf.as_ptr() as u64, 8, quiet),
        STATUS_SUCCESS
    );
    let pt = mw_token(pmw);
    peer.post_receives(0x100, 2, 64);
    arm(peer.cq, NDK_CQ_NOTIFY_SOLICITED);
    let (w_at, r_at) = (target.va + 100, target.va + 1000);
    let sg = [sge(va, 10, sk), sge(va + 0x222, 20, sk)];
    assert_eq!(
        send(qp, 0x10, &sg, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT),
        STATUS_SUCCESS
    );
    assert_eq!(
        send_and_invalidate(qp, 0x20, &sg, NDK_OP_FLAG_READ_FENCE, pt),
        STATUS_SUCCESS
    );
    assert_eq!(
        write(
            qp,
            0x30,
            &sg,
            w_at,
            target.token,
            NDK_OP_FLAG_SILENT_SUCCESS
        ),
        STATUS_SUCCESS
    );
    assert_eq!(
        read(
            qp,
            0x40,
            &sg,
            r_at,
            target.token,
            NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE
        ),
        STATUS_SUCCESS
    );
    if rnic {
        // What the fields ask for happens.
        let r = env.results_ex(cq, 3);
        let got: Vec<(usize, NTSTATUS)> = r
            .iter()
            .map(|x| (x.RequestContext as usize, x.Status))
            .collect();
        assert_eq!(
            got,
            vec![(0x10, 0), (0x20, 0), (0x40, 0)],
            "the silent WRITE has no completion"
        );
        let p = env.results_ex(peer.cq, 2);
        assert_eq!(
            (p[0].Type, p[0].BytesTransferred),
            (NdkOperationTypeReceive, 30)
        );
        // The notification is asynchronous to the CQE (a CQE taken by a
        // busy poll is visible before the device's context delivers it).
        env.pump(|| pair.notify.count() >= 1);
        assert_eq!(pair.notify.count(), 1, "the solicited SEND notified once");
        assert_eq!(
            (p[1].Type, p[1].TypeSpecificCompletionOutput),
            (NdkOperationTypeReceiveAndInvalidate, pt as usize),
            "the peer's token invalidated"
        );
        // SAFETY: the peer's registered region; the WRITE completed
        // before the READ behind it.
        let written = unsafe { std::slice::from_raw_parts(w_at as *const u8, 30) };
        assert_eq!(written, &[0x5Au8; 30][..], "the silent WRITE landed");
        // The READ invalidated the sink's token: using it now fails.
        assert_eq!(send(qp, 0x60, &sg[..1], 0), STATUS_SUCCESS);
        let r = env.results_ex(cq, 1);
        assert_eq!(
            (r[0].RequestContext as usize, r[0].Status),
            (0x60, STATUS_ACCESS_VIOLATION)
        );
    } else {
        let w = env.dev().sq_pending(qpn);
        let req: Vec<SendRequest> = w
            .iter()
            .map(|w| w.decode().expect("a WQE the device decodes"))
            .collect();
        let send = SendOp::Send {
            data: Data::Gather(Gather {
                count: 2,
                total_len: 30,
            }),
            solicited: true,
            invalidate: None,
        };
        assert_eq!(
            (req[0].wr_id, req[0].signaled, req[0].read_fence, req[0].op),
            (0x10, true, false, send)
        );
        assert_eq!(
            (
                w[0].sge_list()[1].addr,
                w[0].sge_list()[1].length,
                w[0].sge_list()[1].key
            ),
            (va + 0x222, 20, sk)
        );
        assert!(
            matches!(req[1], SendRequest {
                signaled: true,
                read_fence: true,
                op: SendOp::Send { invalidate: Some(k), solicited: false, .. },
                ..
            } if k.0 == pt),
            "{:?}",
            req[1]
        );
        let target = Remote {
            addr: w_at,
            key: MemoryKey(target.token),
        };
        assert!(
            matches!(req[2], SendRequest {
                signaled: false,
                read_fence: false,
                op: SendOp::Write { remote, .. },
                ..
            } if remote == target),
            "silent success: not signaled; {:?}",
            req[2]
        );
        assert!(
            matches!(req[3], SendRequest {
                signaled: true,
                read_fence: false,
                op: SendOp::Read { remote, invalidate_sink: true, .. },
                ..
            } if remote == Remote { addr: r_at, ..target }),
            "{:?}",
            req[3]
        );
    }
    // Read local invalidate needs an SGE whose token it invalidates.
    assert_eq!(
        read(qp, 1, &[], 0, 0, NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
        STATUS_INVALID_PARAMETER
    );
    // A receive WQE carries the SGEs and the context.
    assert_eq!(receive(qp, 0x50, &sg), STATUS_SUCCESS);
    if env.is_scripted() {
        let r = env.dev().rq_pending(qpn)[0];
        assert_eq!(
            (r.wr_id, r.sge_list()),
            (
                0x50,
                &[
                    hwq::Sge {
                        addr: va,
                        length: 10,
                        key: sk
                    },
                    hwq::Sge {
                        addr: va + 0x222,
                        length: 20,
                        key: sk
                    }
                ][..]
            )
        );
    }
    for o in [header(pmw), header(pmr), header(sink)] {
        close_now(o);
    }
    pair.close();
    env.finish();
}

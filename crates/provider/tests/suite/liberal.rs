//! Where the provider is liberal because real kernel consumers need it:
//! objects of several `NDK_ADAPTER` instances of one device combine (and
//! closing the instances in any order frees exactly what it should, when
//! it should); `NdkGetConnectionData` keeps answering once connected; a
//! fast-register MR keeps the token it got at initialisation through every
//! registration, while an invalidated registration refuses access until
//! the next one. Every test runs on the scripted device and on the
//! software RNIC over the in-memory fabric and UDP; the `_ipv6` tests run
//! the same bodies on an IPv6 adapter (`Env::on_v6`).

use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hwq::CqeStatus;
use ndkpi::*;
use testkit::adapter::*;

/// The objects of an adapter other than `env.adapter` (the harness's
/// helpers create on `env.adapter`).
fn create_pd_on(adapter: *mut NDK_ADAPTER) -> *mut NDK_PD {
    let mut pd = ptr::null_mut();
    let f = adapter_table(adapter).NdkCreatePd.unwrap();
    // SAFETY: our adapter and a valid out-pointer.
    let st = unsafe { f(adapter, Some(create_cb), ptr::null_mut(), &raw mut pd) };
    assert_eq!(st, STATUS_SUCCESS);
    pd
}

fn create_cq_on(adapter: *mut NDK_ADAPTER, notify: &Recorder) -> *mut NDK_CQ {
    let mut cq = ptr::null_mut();
    let f = adapter_table(adapter).NdkCreateCq.unwrap();
    // SAFETY: our adapter and a valid out-pointer.
    let st = unsafe {
        f(
            adapter,
            64,
            Some(cq_cb),
            notify.ctx(),
            ptr::null_mut(),
            Some(create_cb),
            ptr::null_mut(),
            &raw mut cq,
        )
    };
    assert_eq!(st, STATUS_SUCCESS);
    cq
}

fn create_connector_on(adapter: *mut NDK_ADAPTER) -> *mut NDK_CONNECTOR {
    let mut c = ptr::null_mut();
    let f = adapter_table(adapter).NdkCreateConnector.unwrap();
    // SAFETY: our adapter and a valid out-pointer.
    let st = unsafe { f(adapter, Some(create_cb), ptr::null_mut(), &raw mut c) };
    assert_eq!(st, STATUS_SUCCESS);
    c
}

fn create_listener_on(adapter: *mut NDK_ADAPTER, events: &Recorder) -> *mut NDK_LISTENER {
    let mut l = ptr::null_mut();
    let f = adapter_table(adapter).NdkCreateListener.unwrap();
    // SAFETY: our adapter and a valid out-pointer.
    let st = unsafe {
        f(
            adapter,
            Some(connect_cb),
            events.ctx(),
            Some(create_cb),
            ptr::null_mut(),
            &raw mut l,
        )
    };
    assert_eq!(st, STATUS_SUCCESS);
    l
}

fn connection_data(c: *mut NDK_CONNECTOR, buf: &mut [u8]) -> (NTSTATUS, u32, u32, u32) {
    let f = connector_table(c).NdkGetConnectionData.unwrap();
    let (mut ird, mut ord, mut len) = (0u32, 0u32, buf.len() as u32);
    // SAFETY: our connector; `buf` holds `len` bytes.
    let st = unsafe {
        f(
            c,
            &raw mut ird,
            &raw mut ord,
            buf.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    (st, ird, ord, len)
}

/// Logical page addresses of `pages` (one per page), from `NdkBuildLAM`;
/// the LAM is released before returning (the addresses stay valid while
/// the memory does).
fn page_addresses(env: &Env, pages: &Pages, count: usize) -> Vec<NDK_LOGICAL_ADDRESS> {
    let mut mdl = Mdl::new(pages.addr(), (count * 4096) as u32);
    let mut buf = vec![0u64; 2 + count];
    let (mut size, mut fbo) = ((buf.len() * 8) as u32, 0u32);
    let f = adapter_table(env.adapter).NdkBuildLAM.unwrap();
    // SAFETY: our adapter, a valid MDL, a LAM buffer of `size` bytes,
    // NULL completion (synchronous).
    let st = unsafe {
        f(
            env.adapter,
            mdl.ptr(),
            count * 4096,
            None,
            ptr::null_mut(),
            buf.as_mut_ptr().cast(),
            &raw mut size,
            &raw mut fbo,
        )
    };
    assert_eq!((st, fbo), (STATUS_SUCCESS, 0));
    let addresses = buf[2..2 + count].iter().map(|&a| a as i64).collect();
    let g = adapter_table(env.adapter).NdkReleaseLAM.unwrap();
    // SAFETY: the LAM just built on this adapter.
    unsafe { g(env.adapter, buf.as_mut_ptr().cast()) };
    addresses
}

backend_tests! {

fn objects_of_two_instances_of_one_device_combine(b: Backend) {
    objects_of_two_instances_of_one_device_combine_on(Env::on(b));
}

fn objects_of_two_instances_of_one_device_combine_ipv6(b: Backend) {
    objects_of_two_instances_of_one_device_combine_on(Env::on_v6(b));
}

fn closing_the_qps_instance_first_waits_for_the_other_instances_connector(b: Backend) {
    let env = Env::on(b);
    let other = env.open_another(1, 2).expect("a second instance");
    let notify = Recorder::new();
    // QPs of instance B, connected through connectors of instance A.
    let (pd_b, cq_b) = (create_pd_on(other), create_cq_on(other, notify));
    let qp1 = create_qp(pd_b, cq_b, cq_b, 0xC1, 4, 4, 1, 1, 0).unwrap();
    let qp2 = create_qp(pd_b, cq_b, cq_b, 0xC2, 4, 4, 1, 1, 0).unwrap();
    let link = env.link(qp1, qp2);
    // The consumer closes B's objects first: the QPs' closes pend while
    // A's connectors hold them, and B's close waits for all of it.
    let (qp_done, cq_done, pd_done) = (Recorder::new(), Recorder::new(), Recorder::new());
    assert_eq!(close(qp1, qp_done), STATUS_PENDING, "held by A's connector");
    assert_eq!(close(qp2, qp_done), STATUS_PENDING, "held by A's connector");
    assert_eq!(close(cq_b, cq_done), STATUS_PENDING);
    assert_eq!(close(pd_b, pd_done), STATUS_PENDING);
    env.settle();
    assert_eq!(qp_done.count() + cq_done.count() + pd_done.count(), 0, "nothing finished early");
    // The connection still works: the QPs are alive while A holds them.
    assert_eq!(receive(qp2, 0x2, &[Scratch::new(pd_b).sge(0, 8)]), STATUS_SUCCESS);
    // A's connectors close: the QPs finish, then the CQ and PD; then B
    // closes with nothing left.
    link.close();
    wait_until("the pended closes", || qp_done.count() == 2 && cq_done.count() == 1 && pd_done.count() == 1);
    assert!(qp_done.last_seq() < cq_done.last_seq(), "QPs before their CQ");
    assert!(qp_done.last_seq() < pd_done.last_seq(), "QPs before their PD");
    assert_eq!(env.close_adapter(other), STATUS_SUCCESS);
    env.finish();
}

fn a_shared_endpoint_of_one_instance_serves_a_connector_of_another(b: Backend) {
    a_shared_endpoint_of_one_instance_serves_a_connector_of_another_on(Env::on(b));
}

fn a_shared_endpoint_of_one_instance_serves_a_connector_of_another_ipv6(b: Backend) {
    a_shared_endpoint_of_one_instance_serves_a_connector_of_another_on(Env::on_v6(b));
}

fn objects_of_different_devices_do_not_combine(b: Backend) {
    let (env, env2) = (Env::on(b), Env::on(b));
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 1, 0);
    let cq2 = env2.create_cq(16, notify);
    assert_eq!(
        create_qp(s.pd, cq2, cq2, 0xD1, 4, 4, 1, 1, 0).err(),
        Some(STATUS_INVALID_PARAMETER),
        "a CQ of another device"
    );
    let c2 = env2.create_connector();
    let done = Recorder::new();
    assert_eq!(
        connect(c2, s.qp, &env2.addr(0), &env2.addr(fresh_port()), &[], done),
        STATUS_INVALID_PARAMETER,
        "a QP of another device"
    );
    assert_eq!(done.count(), 0);
    close_now(c2);
    close_now(cq2);
    for o in [header(s.qp), header(s.cq), header(s.pd)] {
        close_now(o);
    }
    env2.finish();
    env.finish();
}

fn connection_data_keeps_answering_once_connected(b: Backend) {
    connection_data_keeps_answering_once_connected_on(Env::on(b));
}

fn connection_data_keeps_answering_once_connected_ipv6(b: Backend) {
    connection_data_keeps_answering_once_connected_on(Env::on_v6(b));
}

fn a_fast_register_mr_keeps_its_initial_token(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(16, 1, 0);
    let (a, p) = (pair.active_qp, pair.passive_qp);
    let target = Pages::new(1);
    let va = target.addr();
    let pages = page_addresses(&env, &target, 1);
    let mr = create_mr(p.pd, true);
    let created = mr_tokens(mr);
    assert_eq!(init_fast_register(mr, 1, true), STATUS_SUCCESS);
    let token = mr_tokens(mr).1;
    assert_eq!(mr_tokens(mr), created, "initialisation keeps the MR's key");
    let remote = NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
    for round in 0..3usize {
        let ctx = 0x100 * (round + 1);
        assert_eq!(fast_register(p.qp, ctx, mr, &pages, 0, 4096, va, remote), STATUS_SUCCESS);
        assert_eq!(mr_tokens(mr), (token, token), "round {round}: the same token");
        if env.is_scripted() {
            let w = env.dev().sq_pending(p.qpn);
            assert_eq!(w.last().map(|w| w.key), Some(token), "the WQE registers that token");
            env.complete_sends(&p, 1);
        }
        let r = env.results_ex(p.cq, 1);
        assert_eq!((r[0].Type, r[0].Status), (NdkOperationTypeFastRegister, STATUS_SUCCESS));
        // The peer writes and reads back through the token.
        let msg = format!("round {round} through {token:#x}");
        a.scratch.fill(0, msg.as_bytes());
        let at = va + 64 * round as u64;
        assert_eq!(write(a.qp, ctx + 1, &[a.sg(0, msg.len())], at, token, 0), STATUS_SUCCESS);
        assert_eq!(read(a.qp, ctx + 2, &[a.sg(1024, msg.len())], at, token, 0), STATUS_SUCCESS);
        env.complete_sends(&a, 2);
        let r = env.results_ex(a.cq, 2);
        assert_eq!(
            r.iter().map(|x| (x.RequestContext as usize, x.Status)).collect::<Vec<_>>(),
            vec![(ctx + 1, STATUS_SUCCESS), (ctx + 2, STATUS_SUCCESS)],
            "round {round}"
        );
        if !env.is_scripted() {
            assert_eq!(a.scratch.bytes(1024, msg.len()), msg.as_bytes());
        }
        // The registration ends: by the owner (rounds 0 and 2) or by the
        // peer's send with invalidate (round 1).
        if round == 1 {
            p.post_receives(ctx + 3, 1, 16);
            assert_eq!(send_and_invalidate(a.qp, ctx + 4, &[a.sg(0, 4)], 0, token), STATUS_SUCCESS);
            if env.is_scripted() {
                env.complete_sends(&a, 1);
                env.dev().complete_next_recv_invalidate(p.qpn, 4, token);
            }
            let r = env.results_ex(p.cq, 1);
            assert_eq!(
                (r[0].Type, r[0].TypeSpecificCompletionOutput as u32),
                (NdkOperationTypeReceiveAndInvalidate, token)
            );
            assert_eq!(env.results_ex(a.cq, 1)[0].Status, STATUS_SUCCESS);
        } else {
            assert_eq!(invalidate(p.qp, ctx + 5, mr, 0), STATUS_SUCCESS);
            if env.is_scripted() {
                let w = env.dev().sq_pending(p.qpn);
                assert_eq!(w.last().map(|w| w.key), Some(token), "invalidates that token");
                env.complete_sends(&p, 1);
            }
            let r = env.results_ex(p.cq, 1);
            assert_eq!((r[0].Type, r[0].Status), (NdkOperationTypeInvalidate, STATUS_SUCCESS));
        }
        assert_eq!(mr_tokens(mr), (token, token), "round {round}: unchanged by the invalidation");
    }
    // Invalidated: the token refuses the peer until the next registration.
    if !env.is_scripted() {
        let before = target_bytes(&target);
        a.scratch.fill(0, b"stale");
        assert_eq!(write(a.qp, 0x999, &[a.sg(0, 5)], va, token, 0), STATUS_SUCCESS);
        let r = env.results_ex(a.cq, 1);
        assert_eq!((r[0].RequestContext as usize, r[0].Status), (0x999, STATUS_REMOTE_RESOURCES));
        assert_eq!(target_bytes(&target), before, "nothing written");
    }
    close_now(mr);
    pair.close();
    env.finish();
}

}

#[allow(clippy::too_many_lines)]
fn objects_of_two_instances_of_one_device_combine_on(env: Env) {
    let (a, other) = (
        env.adapter,
        env.open_another(2, 1).expect("a second instance"),
    );
    let notify = Recorder::new();
    // QP X: PD of instance A, receive CQ of B, initiator CQ of A.
    let (pd_a, cq_a, cq_b) = (
        create_pd_on(a),
        create_cq_on(a, notify),
        create_cq_on(other, notify),
    );
    let qp_x = create_qp(pd_a, cq_b, cq_a, 0xA1, 8, 8, 1, 1, 0).expect("CQs of two instances");
    // QP Y: PD and CQs of B.
    let (pd_b, cq_y) = (create_pd_on(other), create_cq_on(other, notify));
    let qp_y = create_qp(pd_b, cq_y, cq_y, 0xB1, 8, 8, 1, 1, 0).expect("QP of B");
    // Connector of B with A's QP X; listener of A, whose connector accepts
    // with B's QP Y.
    let events = Recorder::new();
    let listener = create_listener_on(a, events);
    let port = fresh_port();
    assert_eq!(listen(listener, &env.addr(port)), STATUS_SUCCESS);
    let active = create_connector_on(other);
    let done = Recorder::new();
    assert_eq!(
        connect(active, qp_x, &env.addr(0), &env.addr(port), b"mix", done),
        STATUS_PENDING
    );
    env.pump(|| events.count() >= 1);
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    let (accepted, pdisc, adisc) = (Recorder::new(), Recorder::new(), Recorder::new());
    assert_eq!(
        accept(passive, qp_y, b"ok", pdisc, accepted),
        STATUS_PENDING
    );
    env.pump(|| done.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_SUCCESS]);
    assert_eq!(complete_connect(active, adisc), STATUS_SUCCESS);
    env.pump(|| accepted.count() >= 1);
    assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS]);
    // Data both ways: X's receives land on B's CQ, its sends on A's.
    let (sx, sy) = (Scratch::new(pd_a), Scratch::new(pd_b));
    sx.fill(0, b"from X");
    sy.fill(0, b"from Y");
    assert_eq!(receive(qp_x, 0x10, &[sx.sge(512, 16)]), STATUS_SUCCESS);
    assert_eq!(receive(qp_y, 0x20, &[sy.sge(512, 16)]), STATUS_SUCCESS);
    assert_eq!(send(qp_x, 0x11, &[sx.sge(0, 6)], 0), STATUS_SUCCESS);
    assert_eq!(send(qp_y, 0x21, &[sy.sge(0, 6)], 0), STATUS_SUCCESS);
    if env.is_scripted() {
        let dev = env.dev();
        let (qpn_x, qpn_y) = (env.qpn_of(0xA1), env.qpn_of(0xB1));
        for (from, to) in [(qpn_x, qpn_y), (qpn_y, qpn_x)] {
            dev.complete_next_send(from, CqeStatus::Success);
            dev.complete_next_recv(to, CqeStatus::Success, 6, 0);
        }
    }
    let ctx = |r: &[NDK_RESULT_EX]| {
        r.iter()
            .map(|x| (x.RequestContext as usize, x.Status))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ctx(&env.results_ex(cq_b, 1)),
        vec![(0x10, STATUS_SUCCESS)],
        "X's receive, on B's CQ"
    );
    assert_eq!(
        ctx(&env.results_ex(cq_a, 1)),
        vec![(0x11, STATUS_SUCCESS)],
        "X's send, on A's CQ"
    );
    let mut r = env.results_ex(cq_y, 2);
    r.sort_by_key(|x| x.RequestContext as usize);
    assert_eq!(
        ctx(&r),
        vec![(0x20, STATUS_SUCCESS), (0x21, STATUS_SUCCESS)]
    );
    if !env.is_scripted() {
        assert_eq!(sx.bytes(512, 6), b"from Y");
        assert_eq!(sy.bytes(512, 6), b"from X");
    }
    close_now(active);
    close_now(passive);
    close_now(listener);
    // Instance B closes while its CQ still serves A's QP X and its PD
    // holds QP Y: the close waits for them (the thread closes them
    // afterwards), neither freeing them early nor leaving them behind.
    let children_closing = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&children_closing);
    let (x, y, cb, cy, pb) = (
        qp_x as usize,
        qp_y as usize,
        cq_b as usize,
        cq_y as usize,
        pd_b as usize,
    );
    let closer = std::thread::spawn(move || {
        // Only widens the window in which a close that did not wait would
        // return; the check is about order.
        std::thread::sleep(std::time::Duration::from_millis(50));
        flag.store(true, Ordering::Release);
        close_now(x as *mut NDK_QP);
        close_now(y as *mut NDK_QP);
        close_now(cb as *mut NDK_CQ);
        close_now(cy as *mut NDK_CQ);
        close_now(pb as *mut NDK_PD);
    });
    assert_eq!(env.close_adapter(other), STATUS_SUCCESS);
    assert!(
        children_closing.load(Ordering::Acquire),
        "B's close returned before its CQ and PD were closed"
    );
    closer.join().unwrap();
    // A is intact and its last objects close normally.
    let pd = env.create_pd();
    close_now(pd);
    close_now(cq_a);
    close_now(pd_a);
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn a_shared_endpoint_of_one_instance_serves_a_connector_of_another_on(env: Env) {
    let other = env.open_another(2, 1).expect("a second instance");
    // The endpoint belongs to instance B, the connector and QP to A.
    let mut endpoint = ptr::null_mut();
    let any_port = env.addr(0);
    let create = adapter_table(other).NdkCreateSharedEndpoint.unwrap();
    // SAFETY: our adapter, a valid address and out-pointer.
    let st = unsafe {
        create(
            other,
            any_port.ptr(),
            any_port.len(),
            Some(create_cb),
            ptr::null_mut(),
            &raw mut endpoint,
        )
    };
    assert_eq!(st, STATUS_SUCCESS);
    // 16 bytes for SOCKADDR_IN, 28 for SOCKADDR_IN6 (the port is at 2 in
    // both).
    let n = any_port.len();
    let mut buf = [0u8; 28];
    let mut len = n;
    let local_address = endpoint_table(endpoint).NdkGetLocalAddress.unwrap();
    // SAFETY: our endpoint, a 28-byte buffer described as `n` bytes.
    let st = unsafe { local_address(endpoint, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!((st, len), (STATUS_SUCCESS, n));
    let port = port_of(&buf);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 1, 0);
    let events = Recorder::new();
    let listener = env.create_listener(events);
    let to = env.addr(fresh_port());
    assert_eq!(listen(listener, &to), STATUS_SUCCESS);
    let conn = env.create_connector();
    let done = Recorder::new();
    let connect_from = connector_table(conn).NdkConnectWithSharedEndpoint.unwrap();
    // SAFETY: our connector, QP and endpoint; a valid address.
    let st = unsafe {
        connect_from(
            conn,
            s.qp,
            endpoint,
            to.ptr(),
            to.len(),
            1,
            1,
            ptr::null_mut(),
            0,
            Some(request_cb),
            done.ctx(),
        )
    };
    assert_eq!(st, STATUS_PENDING, "an endpoint of another instance");
    env.pump(|| events.count() >= 1);
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    let mut peer = [0u8; 28];
    let mut len = n;
    let peer_address = connector_table(passive).NdkGetPeerAddress.unwrap();
    // SAFETY: our connector, a 28-byte buffer described as `n` bytes.
    let st = unsafe { peer_address(passive, peer.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!(
        (st, len, port_of(&peer)),
        (STATUS_SUCCESS, n, port),
        "from the endpoint's address"
    );
    for o in [
        header(passive),
        header(conn),
        header(listener),
        header(endpoint),
    ] {
        close_now(o);
    }
    assert_eq!(env.close_adapter(other), STATUS_SUCCESS);
    for o in [header(s.qp), header(s.cq), header(s.pd)] {
        close_now(o);
    }
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn connection_data_keeps_answering_once_connected_on(env: Env) {
    let pair = env.connected_pair(4, 1, 0);
    // What each side read before Accept / CompleteConnect.
    let want_active = (STATUS_SUCCESS, 8, 8);
    let (mut buf, mut buf2) = ([0u8; 256], [0u8; 256]);
    let (st, ird, ord, len_a) = connection_data(pair.active, &mut buf);
    assert_eq!((st, ird, ord), want_active, "after CompleteConnect");
    assert_eq!(&buf[..7], b"welcome", "the acceptor's private data");
    let (st, ird, ord, len_p) = connection_data(pair.passive, &mut buf2);
    assert_eq!((st, ird, ord), (STATUS_SUCCESS, 8, 8), "after Accept");
    assert_eq!(&buf2[..5], b"hello", "the initiator's private data");
    // Still the same once the connection carried data and ended.
    let done = Recorder::new();
    assert_eq!(disconnect(pair.active, done), STATUS_PENDING);
    env.pump(|| done.count() >= 1 && pair.passive_disc.count() >= 1);
    for (c, want, len) in [(pair.active, &buf, len_a), (pair.passive, &buf2, len_p)] {
        let mut again = [0u8; 256];
        let (st, ird, ord, l) = connection_data(c, &mut again);
        assert_eq!(
            (st, ird, ord, l),
            (STATUS_SUCCESS, 8, 8, len),
            "after the disconnect"
        );
        assert_eq!(&again, want);
        // The size query of NDK (NULL buffer, zero length) still works.
        let f = connector_table(c).NdkGetConnectionData.unwrap();
        let mut zero = 0u32;
        // SAFETY: our connector; NULL data with zero length.
        let st = unsafe {
            f(
                c,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &raw mut zero,
            )
        };
        assert_eq!((st, zero), (STATUS_SUCCESS, len));
    }
    pair.close();
    env.finish();
}

/// The current bytes of a one-page target.
fn target_bytes(pages: &Pages) -> Vec<u8> {
    // SAFETY: a live page of ours; no request writes it while we read.
    unsafe { std::slice::from_raw_parts(pages.addr() as *const u8, 4096) }.to_vec()
}

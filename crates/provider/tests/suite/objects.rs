//! Creates and closes: limits on create, synchronous completion, close of
//! objects with open dependents (STATUS_PENDING, then exactly one close
//! completion after the last dependent's), allocation failure, leaks.
//! Every test runs on the scripted device and on the software RNIC over the
//! in-memory fabric and UDP, except (scripted-only):
//! - `no_srq_support_means_not_supported`: needs a device without SRQs.
//! - `allocation_failure_at_every_step_is_clean`: injects pool failures,
//!   which on the RNIC's process-wide platform would hit parallel tests.

use std::ptr;

use ndkpi::*;
use testkit::adapter::*;

crate::host_only! {
    #[test]
    fn no_srq_support_means_not_supported() {
        let env = Env::with_device(testkit::scripted::ScriptedDevice::new(
            hwq::device::DeviceCaps {
                max_srq_depth: 0,
                ..testkit::scripted::DEFAULT_CAPS
            },
        ));
        assert_eq!(env.info().MaxSrqDepth, 0);
        let pd = env.create_pd();
        assert_eq!(
            try_create_srq(pd, 4, 1, 0, None).err(),
            Some(STATUS_NOT_SUPPORTED)
        );
        close_now(pd);
        env.finish();
    }
}

/// Closes `antecedent` first (PENDING), then each dependent; the
/// antecedent's completion must run exactly once, after the last
/// dependent's completion.
fn check_pending_close<A, D>(antecedent: *mut A, dependents: &[*mut D]) {
    let ante = Recorder::new();
    assert_eq!(close(antecedent, ante), STATUS_PENDING);
    assert_eq!(ante.count(), 0);
    let mut last_dep_seq = 0;
    for (i, d) in dependents.iter().enumerate() {
        let rec = Recorder::new();
        let status = close(*d, rec);
        if status == STATUS_PENDING {
            // On the RNIC a callback of the dependent may still have been
            // returning on a device thread: its close completes after.
            if device_is_async() {
                wait_until("the dependent's close", || rec.count() >= 1);
            }
            assert_eq!(rec.count(), 1, "a pending close completes once");
        } else {
            assert_eq!(status, STATUS_SUCCESS);
        }
        last_dep_seq = last_dep_seq.max(rec.last_seq().unwrap_or(0));
        if i + 1 < dependents.len() {
            assert_eq!(
                ante.count(),
                0,
                "antecedent completed while a dependent is open"
            );
        }
    }
    assert_eq!(ante.count(), 1, "exactly one close completion");
    assert!(ante.calls()[0].seq > last_dep_seq || last_dep_seq == 0);
}

crate::host_only! {
    #[test]
    fn allocation_failure_at_every_step_is_clean() {
        // Fail each pool charge of a full setup in turn: every create either
        // succeeds or returns INSUFFICIENT_RESOURCES, and nothing leaks.
        for n in 1..40 {
            let env = Env::new();
            env.platform.fail_charge_after(n);
            let notify = Recorder::new();
            let mut objects: Vec<*mut NDK_OBJECT_HEADER> = Vec::new();
            let mut failed = false;
            match env.try_create_pd() {
                Ok(pd) => {
                    objects.push(header(pd));
                    match env.try_create_cq(8, notify) {
                        Ok(cq) => {
                            objects.push(header(cq));
                            match create_qp(pd, cq, cq, 0, 8, 8, 2, 2, 0) {
                                Ok(qp) => objects.push(header(qp)),
                                Err(s) => {
                                    assert_eq!(s, STATUS_INSUFFICIENT_RESOURCES);
                                    failed = true;
                                }
                            }
                        }
                        Err(s) => {
                            assert_eq!(s, STATUS_INSUFFICIENT_RESOURCES);
                            failed = true;
                        }
                    }
                }
                Err(s) => {
                    assert_eq!(s, STATUS_INSUFFICIENT_RESOURCES);
                    failed = true;
                }
            }
            assert_eq!(failed, env.platform.injected_failures() == 1, "charge {n}");
            for o in objects.into_iter().rev() {
                close_now(o);
            }
            env.platform.fail_charge_after(0);
            env.finish();
        }
    }
}

backend_tests! {

fn creates_complete_synchronously_without_callbacks(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 8, 2, 0);
    assert!(!s.pd.is_null() && !s.cq.is_null() && !s.qp.is_null());
    assert_eq!(notify.count(), 0);
    close_now(s.qp);
    close_now(s.cq);
    close_now(s.pd);
    env.finish();
}

fn cq_depth_limits(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let max = env.info().MaxCqDepth;
    assert_eq!(
        env.try_create_cq(0, notify).err(),
        Some(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(
        env.try_create_cq(max + 1, notify).err(),
        Some(STATUS_INVALID_PARAMETER)
    );
    let cq = env
        .try_create_cq(max, notify)
        .expect("max depth is allowed");
    close_now(cq);
    // The notification callback is required.
    let f = adapter_table(env.adapter).NdkCreateCq.unwrap();
    let mut out = ptr::null_mut();
    // SAFETY: our adapter, a valid out-pointer.
    let status = unsafe {
        f(
            env.adapter,
            4,
            None,
            ptr::null_mut(),
            ptr::null_mut(),
            None,
            ptr::null_mut(),
            &raw mut out,
        )
    };
    assert_eq!(status, STATUS_INVALID_PARAMETER);
    env.finish();
}

fn qp_limits_follow_adapter_info(b: Backend) {
    let env = Env::on(b);
    let info = env.info();
    let notify = Recorder::new();
    let pd = env.create_pd();
    let cq = env.create_cq(16, notify);
    let d = info.MaxInitiatorQueueDepth;
    let bad = [
        (d + 1, 4, 1, 1, 0),
        (4, d + 1, 1, 1, 0),
        (0, 4, 1, 1, 0),
        (4, 0, 1, 1, 0),
        (4, 4, info.MaxReceiveRequestSge + 1, 1, 0),
        (4, 4, 1, info.MaxInitiatorRequestSge + 1, 0),
        (4, 4, 1, 1, info.MaxInlineDataSize + 1),
    ];
    for (rd, id, rs, is, inl) in bad {
        assert_eq!(
            create_qp(pd, cq, cq, 0, rd, id, rs, is, inl).err(),
            Some(STATUS_INVALID_PARAMETER),
            "{rd} {id} {rs} {is} {inl}"
        );
    }
    let qp = create_qp(
        pd,
        cq,
        cq,
        0,
        d,
        d,
        info.MaxReceiveRequestSge,
        info.MaxInitiatorRequestSge,
        info.MaxInlineDataSize,
    )
    .expect("every maximum at once is allowed");
    close_now(qp);
    close_now(cq);
    close_now(pd);
    env.finish();
}

fn srq_limits(b: Backend) {
    let env = Env::on(b);
    let info = env.info();
    let pd = env.create_pd();
    assert_eq!(
        try_create_srq(pd, 0, 1, 0, None).err(),
        Some(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(
        try_create_srq(pd, info.MaxSrqDepth + 1, 1, 0, None).err(),
        Some(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(
        try_create_srq(pd, 4, info.MaxReceiveRequestSge + 1, 0, None).err(),
        Some(STATUS_INVALID_PARAMETER)
    );
    let srq = try_create_srq(pd, 4, info.MaxReceiveRequestSge, 0, None).unwrap();
    assert_eq!(
        modify_srq(srq, info.MaxSrqDepth + 1, 0),
        STATUS_INVALID_PARAMETER
    );
    close_now(srq);
    close_now(pd);
    env.finish();
}

fn cq_close_pends_until_its_qps_close(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let pd = env.create_pd();
    let cq = env.create_cq(16, notify);
    let rcq = env.create_cq(16, notify);
    let q1 = create_qp(pd, cq, cq, 1, 4, 4, 1, 1, 0).unwrap();
    let q2 = create_qp(pd, rcq, rcq, 2, 4, 4, 1, 1, 0).unwrap();
    check_pending_close(cq, &[q1]);
    // rcq is referenced by q2 only.
    check_pending_close(rcq, &[q2]);
    close_now(pd);
    env.finish();
}

fn pd_close_pends_until_mr_mw_qp_srq_close(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let pd = env.create_pd();
    let cq = env.create_cq(16, notify);
    let mr = create_mr(pd, false);
    let mw = create_mw(pd);
    let srq = try_create_srq(pd, 4, 1, 0, None).unwrap();
    let qp = create_qp_with_srq(pd, cq, srq, 0, 4, 1).unwrap();
    let ante = Recorder::new();
    assert_eq!(close(pd, ante), STATUS_PENDING);
    // SRQ with a QP: pending too.
    let srq_rec = Recorder::new();
    assert_eq!(close(srq, srq_rec), STATUS_PENDING);
    close_now(mr);
    close_now(mw);
    assert_eq!(ante.count(), 0);
    // The QP's close releases the SRQ, then the PD.
    close_now(qp);
    assert_eq!(srq_rec.count(), 1);
    assert_eq!(ante.count(), 1);
    assert!(
        ante.calls()[0].seq > srq_rec.calls()[0].seq,
        "successor completes first"
    );
    close_now(cq);
    env.finish();
}

fn mr_close_pends_while_a_window_is_bound(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(8, 2, 0);
    let pd = pair.active_qp.pd;
    let buf = vec![0u8; 8192];
    let (mr, _mdl) = registered_mr(pd, &buf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let mw = create_mw(pd);
    assert_eq!(
        bind(
            pair.active_qp.qp,
            7,
            mr,
            mw,
            buf.as_ptr() as u64,
            4096,
            NDK_OP_FLAG_ALLOW_REMOTE_READ
        ),
        STATUS_SUCCESS
    );
    env.device_completions(pair.active_qp.cq, 1);
    check_pending_close(mr, &[mw]);
    // An unbound window does not hold the MR.
    let (mr2, _mdl2) = registered_mr(pd, &buf, 0);
    let mw2 = create_mw(pd);
    close_now(mr2);
    close_now(mw2);
    pair.close();
    env.finish();
}

fn invalidating_a_window_releases_its_mr(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(8, 2, 0);
    let pd = pair.active_qp.pd;
    let buf = vec![0u8; 4096];
    let (mr, _mdl) = registered_mr(pd, &buf, 0);
    let mw = create_mw(pd);
    assert_eq!(
        bind(
            pair.active_qp.qp,
            1,
            mr,
            mw,
            buf.as_ptr() as u64,
            100,
            NDK_OP_FLAG_ALLOW_REMOTE_READ
        ),
        STATUS_SUCCESS
    );
    assert_eq!(invalidate(pair.active_qp.qp, 2, mw, 0), STATUS_SUCCESS);
    env.device_completions(pair.active_qp.cq, 2);
    close_now(mr);
    close_now(mw);
    pair.close();
    env.finish();
}

fn listener_close_pends_until_its_connectors_close(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(4, 1, 0);
    let ante = Recorder::new();
    assert_eq!(close(pair.listener, ante), STATUS_PENDING);
    assert_eq!(ante.count(), 0);
    close_now(pair.active);
    assert_eq!(
        ante.count(),
        0,
        "the active connector is not the listener's"
    );
    let rec = Recorder::new();
    let status = close(pair.passive, rec);
    assert!(status == STATUS_SUCCESS || status == STATUS_PENDING);
    if status == STATUS_PENDING {
        // The peer's disconnect event may still be returning (RNIC).
        env.pump(|| rec.count() >= 1 && ante.count() >= 1);
        assert_eq!(rec.count(), 1);
    }
    assert_eq!(ante.count(), 1);
    for s in [pair.active_qp, pair.passive_qp] {
        close_now(s.qp);
        close_now(s.cq);
        close_now(s.pd);
    }
    env.finish();
}

fn qp_close_pends_until_its_connector_closes(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(4, 1, 0);
    let qp_rec = Recorder::new();
    assert_eq!(close(pair.active_qp.qp, qp_rec), STATUS_PENDING);
    close_now(pair.active);
    env.pump(|| qp_rec.count() >= 1);
    assert_eq!(qp_rec.count(), 1);
    close_now(pair.passive);
    close_now(pair.listener);
    close_now(pair.passive_qp.qp);
    for s in [pair.active_qp, pair.passive_qp] {
        close_now(s.cq);
        close_now(s.pd);
    }
    env.finish();
}

fn shared_endpoint_close_pends_until_its_connectors_close(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 1, 0);
    let ep = env.try_create_endpoint(&env.addr(0)).unwrap();
    let c = env.create_connector();
    let done = Recorder::new();
    let f = connector_table(c).NdkConnectWithSharedEndpoint.unwrap();
    let dst = env.addr(fresh_port());
    // SAFETY: our connector, QP and endpoint; valid address.
    let status = unsafe {
        f(
            c,
            s.qp,
            ep,
            dst.ptr(),
            dst.len(),
            1,
            1,
            ptr::null_mut(),
            0,
            Some(request_cb),
            done.ctx(),
        )
    };
    assert_eq!(status, STATUS_PENDING);
    env.pump(|| done.count() >= 1); // nobody listens there: refused
    assert_eq!(done.statuses(), vec![STATUS_CONNECTION_REFUSED]);
    check_pending_close(ep, &[c]);
    close_now(s.qp);
    close_now(s.cq);
    close_now(s.pd);
    env.finish();
}

fn close_without_a_completion_still_finishes(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 1, 0);
    let mr = create_mr(s.pd, false);
    // The Microsoft sample closes MRs with no callback, relying on the PD.
    let f = mr_table(mr).NdkCloseMr.unwrap();
    // SAFETY: our MR, closed once, NULL completion.
    let st = unsafe { f(header(mr), None, ptr::null_mut()) };
    assert_eq!(st, STATUS_SUCCESS);
    let g = pd_table(s.pd).NdkClosePd.unwrap();
    // SAFETY: our PD, closed once; its QP is still open.
    let st = unsafe { g(header(s.pd), None, ptr::null_mut()) };
    assert_eq!(st, STATUS_PENDING);
    close_now(s.qp);
    close_now(s.cq);
    env.finish();
}

fn a_close_completion_precedes_its_antecedents(b: Backend) {
    // CQ <- QP <- connector: close CQ and QP first (both pend), then the
    // connector. The QP's completion must run before the CQ's.
    let env = Env::on(b);
    let pair = env.connected_pair(4, 1, 0);
    let (cq_rec, qp_rec) = (Recorder::new(), Recorder::new());
    assert_eq!(close(pair.active_qp.cq, cq_rec), STATUS_PENDING);
    assert_eq!(close(pair.active_qp.qp, qp_rec), STATUS_PENDING);
    assert_eq!((cq_rec.count(), qp_rec.count()), (0, 0));
    close_now(pair.active);
    env.pump(|| cq_rec.count() >= 1);
    assert_eq!((cq_rec.count(), qp_rec.count()), (1, 1));
    assert!(
        qp_rec.calls()[0].seq < cq_rec.calls()[0].seq,
        "the successor's close completion comes first"
    );
    close_now(pair.passive);
    close_now(pair.listener);
    close_now(pair.active_qp.pd);
    close_now(pair.passive_qp.qp);
    close_now(pair.passive_qp.cq);
    close_now(pair.passive_qp.pd);
    env.finish();
}

}

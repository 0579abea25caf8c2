//! Completion queues through the CQ dispatch table: result mapping,
//! extended results, arming (ANY / SOLICITED / ERRORS, one-shot,
//! strengthening, immediate when pending), serialised notifications,
//! overflow, flush, resize and interrupt moderation.

mod provider_util;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hwq::cqe::CQE_FLAG_SOLICITED;
use hwq::{Cqe, CqeOpcode, CqeStatus};
use ndkpi::*;
use provider_util::*;

#[test]
fn every_completion_status_maps_and_contexts_pass_through() {
    let env = Env::new();
    let pair = env.connected_pair(32, 2, 0);
    let (qp, qpn, cq, ctx) = (
        pair.active_qp.qp,
        pair.active_qp.qpn,
        pair.active_qp.cq,
        pair.active_qp.context,
    );
    let table = [
        (CqeStatus::Success, STATUS_SUCCESS),
        (CqeStatus::Flushed, STATUS_CANCELLED),
        (CqeStatus::LocalLength, STATUS_BUFFER_OVERFLOW),
        (CqeStatus::LocalProtection, STATUS_ACCESS_VIOLATION),
        (CqeStatus::LocalQpOperation, STATUS_INTERNAL_ERROR),
        (CqeStatus::RemoteAccess, STATUS_REMOTE_RESOURCES),
        (CqeStatus::RemoteInvalidRequest, STATUS_REMOTE_RESOURCES),
        (CqeStatus::RemoteOperational, STATUS_REMOTE_RESOURCES),
        (CqeStatus::RetryExceeded, STATUS_IO_TIMEOUT),
        (CqeStatus::RnrRetryExceeded, STATUS_IO_TIMEOUT),
        (CqeStatus::MemoryManagement, STATUS_ACCESS_VIOLATION),
    ];
    let sg = [sge(0x1000, 100, 1), sge(0x2000, 23, 1)];
    for (i, (cqe_status, _)) in table.iter().enumerate() {
        let request = usize::MAX - i; // any pointer-sized value comes back unchanged
        assert_eq!(read(qp, request, &sg, 0x9000, 3, 0), STATUS_SUCCESS);
        env.dev.complete_next_send(qpn, *cqe_status);
    }
    let r = results(cq, 32);
    assert_eq!(r.len(), table.len());
    for (i, (res, (_, want))) in r.iter().zip(table.iter()).enumerate() {
        assert_eq!(res.Status, *want, "{:?}", table[i].0);
        assert_eq!(res.RequestContext as usize, usize::MAX - i);
        assert_eq!(res.QPContext as usize, ctx);
        assert_eq!(res.BytesTransferred, 123, "the request's total length");
    }
    assert!(results(cq, 4).is_empty(), "results are removed");
    // Receives report the bytes that arrived.
    assert_eq!(receive(qp, 0x5eed, &sg), STATUS_SUCCESS);
    env.dev.complete_next_recv(qpn, CqeStatus::Success, 77, 0);
    let r = results(cq, 4);
    assert_eq!(
        (
            r[0].BytesTransferred,
            r[0].RequestContext as usize,
            r[0].Status
        ),
        (77, 0x5eed, STATUS_SUCCESS)
    );
    pair.close();
    env.finish();
}

#[test]
fn extended_results_carry_type_and_invalidated_token() {
    let env = Env::new();
    let pair = env.connected_pair(32, 1, 0);
    let (qp, qpn, cq, pd) = (
        pair.active_qp.qp,
        pair.active_qp.qpn,
        pair.active_qp.cq,
        pair.active_qp.pd,
    );
    let sg = [sge(0x1000, 8, 1)];
    let fr = create_mr(pd, true);
    assert_eq!(init_fast_register(fr, 1, false), STATUS_SUCCESS);
    let buf = [0u8; 64];
    let (mr, _mdl) = registered_mr(pd, &buf, 0);
    let mw = create_mw(pd);
    assert_eq!(send(qp, 1, &sg, 0), STATUS_SUCCESS);
    assert_eq!(send_and_invalidate(qp, 2, &sg, 0, 0x1234), STATUS_SUCCESS);
    assert_eq!(
        fast_register(qp, 3, fr, &[0x8000], 0, 100, 0x8000, 0),
        STATUS_SUCCESS
    );
    assert_eq!(
        bind(
            qp,
            4,
            mr,
            mw,
            buf.as_ptr() as u64,
            8,
            NDK_OP_FLAG_ALLOW_REMOTE_READ
        ),
        STATUS_SUCCESS
    );
    assert_eq!(invalidate(qp, 5, mw, 0), STATUS_SUCCESS);
    assert_eq!(read(qp, 6, &sg, 0, 0, 0), STATUS_SUCCESS);
    assert_eq!(write(qp, 7, &sg, 0, 0, 0), STATUS_SUCCESS);
    while env
        .dev
        .complete_next_send(qpn, CqeStatus::Success)
        .is_some()
    {}
    assert_eq!(receive(qp, 8, &sg), STATUS_SUCCESS);
    assert_eq!(receive(qp, 9, &sg), STATUS_SUCCESS);
    env.dev.complete_next_recv(qpn, CqeStatus::Success, 5, 0);
    env.dev.complete_next_recv_invalidate(qpn, 6, 0xabcd_ef01);
    let r = results_ex(cq, 16);
    let types: Vec<(usize, i32)> = r
        .iter()
        .map(|x| (x.RequestContext as usize, x.Type))
        .collect();
    assert_eq!(
        types,
        vec![
            (1, NdkOperationTypeSend),
            (2, NdkOperationTypeSend), // send-and-invalidate completes as a send
            (3, NdkOperationTypeFastRegister),
            (4, NdkOperationTypeBind),
            (5, NdkOperationTypeInvalidate),
            (6, NdkOperationTypeRead),
            (7, NdkOperationTypeWrite),
            (8, NdkOperationTypeReceive),
            (9, NdkOperationTypeReceiveAndInvalidate),
        ]
    );
    assert_eq!(r[8].TypeSpecificCompletionOutput, 0xabcd_ef01);
    assert_eq!(r[8].BytesTransferred, 6);
    // Plain results report a receive-and-invalidate as a receive.
    assert_eq!(receive(qp, 10, &sg), STATUS_SUCCESS);
    env.dev.complete_next_recv_invalidate(qpn, 3, 0x55);
    let r = results(cq, 4);
    assert_eq!(
        (
            r.len(),
            r[0].Status,
            r[0].BytesTransferred,
            r[0].RequestContext as usize
        ),
        (1, STATUS_SUCCESS, 3, 10)
    );
    for o in [header(mw), header(mr), header(fr)] {
        close_now(o);
    }
    pair.close();
    env.finish();
}

/// A CQ alone, completions injected directly by the scripted device.
struct Lone {
    env: Env,
    notify: Box<Recorder>,
    cq: *mut NDK_CQ,
    cqn: u32,
}

impl Lone {
    fn new(depth: u32) -> Self {
        let env = Env::new();
        let notify = Recorder::new();
        let cq = env.create_cq(depth, &notify);
        let cqn = *env.dev.cqns().last().unwrap();
        Self {
            env,
            notify,
            cq,
            cqn,
        }
    }

    fn push(&self, wr_id: u64, status: CqeStatus, solicited: bool) {
        let cqe = Cqe {
            wr_id,
            opcode: CqeOpcode::Receive as u8,
            status: status as u8,
            flags: if solicited { CQE_FLAG_SOLICITED } else { 0 },
            ..Cqe::default()
        };
        // The device counts error CQEs as solicited, as hardware does.
        self.env
            .dev
            .push_cqe(self.cqn, cqe, solicited || status != CqeStatus::Success);
    }

    fn finish(self) {
        close_now(self.cq);
        self.env.finish();
    }
}

#[test]
fn arm_any_notifies_once_per_arm() {
    let l = Lone::new(16);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 0, "never notified unarmed");
    assert_eq!(results(l.cq, 4).len(), 1);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    assert_eq!(l.notify.count(), 0);
    l.push(2, CqeStatus::Success, false);
    assert_eq!(l.notify.statuses(), vec![STATUS_SUCCESS]);
    l.push(3, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 1, "one notification per arm");
    results(l.cq, 4);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(4, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 2);
    l.finish();
}

#[test]
fn arm_solicited_waits_for_solicited_or_failed_completions() {
    let l = Lone::new(16);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(
        l.notify.count(),
        0,
        "an unsolicited success does not satisfy it"
    );
    l.push(2, CqeStatus::Success, true);
    assert_eq!(l.notify.statuses(), vec![STATUS_SUCCESS]);
    results(l.cq, 8);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(3, CqeStatus::RemoteAccess, false);
    assert_eq!(
        l.notify.count(),
        2,
        "a failed request satisfies a SOLICITED arm"
    );
    l.finish();
}

#[test]
fn arm_errors_ignores_completions_but_reports_overflow() {
    let l = Lone::new(2);
    arm(l.cq, NDK_CQ_NOTIFY_ERRORS);
    assert!(
        !l.env
            .dev
            .commands()
            .iter()
            .any(|c| matches!(c, rsndk::scripted::Command::ArmCq { .. })),
        "no device arm"
    );
    l.push(1, CqeStatus::Success, true);
    l.push(2, CqeStatus::LocalProtection, false);
    assert_eq!(
        l.notify.count(),
        0,
        "ERRORS means CQ errors, not failed requests"
    );
    l.push(3, CqeStatus::Success, false); // the third does not fit
    assert_eq!(l.notify.statuses(), vec![STATUS_BUFFER_OVERFLOW]);
    // Nothing was overwritten: the two entries are still there, in order.
    let r = results(l.cq, 8);
    assert_eq!(
        r.iter()
            .map(|x| x.RequestContext as usize)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
    // Dead: re-arming reports nothing more.
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(4, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 1);
    l.finish();
}

#[test]
fn overflow_while_unarmed_is_reported_at_the_next_arm() {
    let l = Lone::new(4);
    l.env.dev.overflow_cq(l.cqn);
    assert_eq!(l.notify.count(), 0);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    assert_eq!(l.notify.statuses(), vec![STATUS_BUFFER_OVERFLOW]);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    assert_eq!(l.notify.count(), 1, "reported once");
    l.finish();
}

#[test]
fn armed_any_or_solicited_also_report_overflow() {
    for kind in [NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_SOLICITED] {
        let l = Lone::new(4);
        arm(l.cq, kind);
        l.env.dev.overflow_cq(l.cqn);
        assert_eq!(l.notify.statuses(), vec![STATUS_BUFFER_OVERFLOW]);
        l.finish();
    }
}

#[test]
fn the_stronger_arm_wins() {
    // SOLICITED then ANY: a plain completion notifies.
    let l = Lone::new(16);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 1);
    l.finish();
    // ANY then SOLICITED: still ANY.
    let l = Lone::new(16);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 1);
    l.finish();
    // ERRORS then SOLICITED: SOLICITED.
    let l = Lone::new(16);
    arm(l.cq, NDK_CQ_NOTIFY_ERRORS);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 0);
    l.push(2, CqeStatus::Success, true);
    assert_eq!(l.notify.count(), 1);
    l.finish();
}

#[test]
fn arming_with_new_unpolled_completions_fires_at_once() {
    let l = Lone::new(16);
    l.push(1, CqeStatus::Success, false);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.env.dev.deliver_events(); // the device's interrupt follows the arm
    assert_eq!(l.notify.statuses(), vec![STATUS_SUCCESS]);
    // Drained before arming: nothing pending, no notification.
    results(l.cq, 8);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.env.dev.deliver_events();
    assert_eq!(l.notify.count(), 1);
    l.finish();
}

#[test]
fn an_unknown_arm_type_arms_nothing() {
    let l = Lone::new(16);
    arm(l.cq, 7);
    l.push(1, CqeStatus::Success, true);
    assert_eq!(l.notify.count(), 0);
    l.finish();
}

#[test]
fn notifications_of_one_cq_never_overlap() {
    let l = Lone::new(16);
    let depth = Arc::new(AtomicUsize::new(0));
    let max_depth = Arc::new(AtomicUsize::new(0));
    let cq_addr = l.cq as usize;
    let dev = l.env.dev.clone();
    let cqn = l.cqn;
    let (d, m) = (depth.clone(), max_depth.clone());
    let rounds = Arc::new(AtomicUsize::new(0));
    let r2 = rounds.clone();
    l.notify.set_hook(move |_| {
        let now = d.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now, Ordering::SeqCst);
        if r2.fetch_add(1, Ordering::SeqCst) < 3 {
            // Re-arm and complete more work from inside the callback: the
            // next notification must wait for this one to return.
            let cq = cq_addr as *mut NDK_CQ;
            results(cq, 16);
            arm(cq, NDK_CQ_NOTIFY_ANY);
            dev.push_cqe(
                cqn,
                Cqe {
                    wr_id: 9,
                    ..Cqe::default()
                },
                false,
            );
        }
        d.fetch_sub(1, Ordering::SeqCst);
    });
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 4, "each re-arm produced one notification");
    assert_eq!(max_depth.load(Ordering::SeqCst), 1, "never nested");
    l.finish();
}

#[test]
fn closing_a_cq_inside_its_notification_pends_until_it_returns() {
    let l = Lone::new(16);
    let cq_addr = l.cq as usize;
    let close_rec: &'static Recorder = Box::leak(Recorder::new());
    let during = Arc::new(std::sync::Mutex::new(None));
    let during2 = during.clone();
    l.notify.set_hook(move |_| {
        let status = close(cq_addr as *mut NDK_CQ, close_rec);
        *during2.lock().unwrap() = Some((status, close_rec.count()));
    });
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(
        *during.lock().unwrap(),
        Some((STATUS_PENDING, 0)),
        "pending while the callback runs"
    );
    assert_eq!(close_rec.count(), 1, "completed after it returned");
    assert!(close_rec.calls()[0].seq > l.notify.calls()[0].seq);
    l.env.finish();
}

#[test]
fn flush_cancels_every_posted_request_through_the_cq() {
    let env = Env::new();
    let pair = env.connected_pair(16, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [sge(0x1000, 4, 1)];
    for i in 1..=3 {
        assert_eq!(receive(qp, 100 + i, &sg), STATUS_SUCCESS);
    }
    assert_eq!(send(qp, 1, &sg, 0), STATUS_SUCCESS);
    assert_eq!(
        write(qp, 2, &sg, 0, 0, NDK_OP_FLAG_SILENT_SUCCESS),
        STATUS_SUCCESS
    );
    arm(cq, NDK_CQ_NOTIFY_SOLICITED);
    flush(qp);
    env.dev.deliver_events();
    let notified = pair.notify.count();
    assert_eq!(
        notified, 1,
        "an armed notification fires for the cancelled requests"
    );
    let r = results(cq, 16);
    assert_eq!(
        r.len(),
        5,
        "silent requests are cancelled with a completion too"
    );
    assert!(r.iter().all(|x| x.Status == STATUS_CANCELLED));
    let mut ids: Vec<usize> = r.iter().map(|x| x.RequestContext as usize).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 101, 102, 103]);
    assert!(env.dev.sq_pending(qpn).is_empty());
    pair.close();
    env.finish();
}

#[test]
fn closing_a_qp_cancels_its_work() {
    let env = Env::new();
    let notify = Recorder::new();
    let s = env.qp_setup(&notify, 8, 1, 0);
    let sg = [sge(0x1000, 4, 1)];
    assert_eq!(receive(s.qp, 7, &sg), STATUS_SUCCESS);
    assert_eq!(receive(s.qp, 8, &sg), STATUS_SUCCESS);
    close_now(s.qp);
    let r = results(s.cq, 8);
    assert_eq!(
        r.iter()
            .map(|x| (x.RequestContext as usize, x.Status))
            .collect::<Vec<_>>(),
        vec![(7, STATUS_CANCELLED), (8, STATUS_CANCELLED)]
    );
    close_now(s.cq);
    close_now(s.pd);
    env.finish();
}

#[test]
fn resize_keeps_order_and_checks_depth() {
    let l = Lone::new(4);
    let max = l.env.info().MaxCqDepth;
    assert_eq!(resize_cq(l.cq, 0), STATUS_INVALID_PARAMETER);
    assert_eq!(resize_cq(l.cq, max + 1), STATUS_INVALID_PARAMETER);
    for i in 1..=3 {
        l.push(i, CqeStatus::Success, false);
    }
    assert_eq!(resize_cq(l.cq, 16), STATUS_SUCCESS);
    // Entries written after the resize go to the new ring; more than the
    // old depth fit now.
    for i in 4..=12 {
        l.push(i, CqeStatus::Success, false);
    }
    assert_eq!(l.notify.count(), 0, "no overflow");
    let r = results(l.cq, 2);
    assert_eq!(
        r.iter()
            .map(|x| x.RequestContext as usize)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
    let r = results(l.cq, 32);
    assert_eq!(
        r.iter()
            .map(|x| x.RequestContext as usize)
            .collect::<Vec<_>>(),
        (3..=12).collect::<Vec<_>>()
    );
    assert!(
        l.env
            .dev
            .commands()
            .contains(&rsndk::scripted::Command::ResizeCq {
                cqn: l.cqn,
                depth: 16
            })
    );
    l.finish();
}

#[test]
fn interrupt_moderation_rules() {
    let l = Lone::new(64);
    let m = |interval, count| {
        let st = moderate(l.cq, interval, count);
        (st, l.env.dev.cq_moderation(l.cqn).unwrap())
    };
    // Both "only the other one" values at once: a contradiction.
    assert_eq!(
        moderate(l.cq, u32::MAX, u32::MAX),
        STATUS_INVALID_PARAMETER_MIX
    );
    assert_eq!(
        moderate(l.cq, u32::MAX, 65),
        STATUS_INVALID_PARAMETER_MIX,
        "count above the depth"
    );
    assert_eq!(m(100, 8), (STATUS_SUCCESS, (8, 100)));
    assert_eq!(m(u32::MAX, 8), (STATUS_SUCCESS, (8, 0)), "count only");
    assert_eq!(
        m(100, u32::MAX),
        (STATUS_SUCCESS, (0, 100)),
        "interval only"
    );
    assert_eq!(
        m(100, 65),
        (STATUS_SUCCESS, (0, 100)),
        "count beyond depth: interval only"
    );
    assert_eq!(m(0, 8), (STATUS_SUCCESS, (0, 0)), "interval 0: off");
    assert_eq!(m(100, 1), (STATUS_SUCCESS, (0, 0)), "count 1: off");
    assert_eq!(m(100, 0), (STATUS_SUCCESS, (0, 0)), "count 0: off");
    l.finish();
}

#[test]
fn srq_notification_fires_once_below_the_threshold() {
    let env = Env::new();
    let notify = Recorder::new();
    let srq_events = Recorder::new();
    let pd = env.create_pd();
    let cq = env.create_cq(16, &notify);
    let srq = try_create_srq(pd, 8, 1, 2, Some(&srq_events)).unwrap();
    let qp = create_qp_with_srq(pd, cq, srq, 0x99, 4, 1).unwrap();
    let qpn = env.qpn_of(0x99);
    let sg = [sge(0x1000, 8, 1)];
    for i in 0..3 {
        assert_eq!(srq_receive(srq, i, &sg), STATUS_SUCCESS);
    }
    env.dev.complete_next_recv(qpn, CqeStatus::Success, 1, 0); // 2 left: not below 2
    assert_eq!(srq_events.count(), 0);
    env.dev.complete_next_recv(qpn, CqeStatus::Success, 1, 0); // 1 left
    assert_eq!(srq_events.statuses(), vec![STATUS_SUCCESS]);
    env.dev.complete_next_recv(qpn, CqeStatus::Success, 1, 0);
    assert_eq!(srq_events.count(), 1, "one-shot");
    // Re-arming while already below fires at once.
    assert_eq!(modify_srq(srq, 0, 3), STATUS_SUCCESS);
    env.dev.deliver_events();
    assert_eq!(srq_events.count(), 2);
    results(cq, 8);
    close_now(qp);
    close_now(srq);
    close_now(cq);
    close_now(pd);
    env.finish();
}

//! Completion queues through the CQ dispatch table: result mapping,
//! extended results, arming (ANY / SOLICITED / ERRORS, one-shot,
//! strengthening, immediate when pending), serialised notifications,
//! overflow, flush, resize and interrupt moderation. Every test runs on
//! the scripted device and on the software RNIC over the in-memory fabric
//! and UDP (where completions are real receives, fed over a loopback
//! connection, and overflow is one receive more than the CQ holds), except
//! (scripted-only):
//! - `every_completion_status_maps_and_contexts_pass_through`: injects each
//!   of the device's eleven completion statuses in turn; the RNIC reaches
//!   several only through faults it cannot be made to produce on demand
//!   (retry and RNR exhaustion take seconds, a QP operation error has no
//!   consumer-level cause). The statuses it does produce are checked on it
//!   by the other tests (CANCELLED, BUFFER_OVERFLOW, REMOTE_RESOURCES,
//!   ACCESS_VIOLATION).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hwq::cqe::CQE_FLAG_SOLICITED;
use hwq::{Cqe, CqeOpcode, CqeStatus};
use ndkpi::*;
use testkit::adapter::*;

crate::host_only! {
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
            env.dev().complete_next_send(qpn, *cqe_status);
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
        env.dev().complete_next_recv(qpn, CqeStatus::Success, 77, 0);
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
}

/// A CQ alone. On the scripted device, completions are injected directly;
/// on the RNIC they are receives of QP `b` (whose receive CQ is this one)
/// completed by SENDs from QP `a` over a loopback connection (the feed).
struct Lone {
    env: Env,
    notify: &'static Recorder,
    cq: *mut NDK_CQ,
    cqn: u32,
    depth: u32,
    feed: std::cell::RefCell<Option<Feed>>,
}

/// The RNIC's source of completions for a [`Lone`] CQ: QP `a` (on `aux`)
/// sends to QP `b` (receives into the lone CQ, initiator CQ `aux`).
struct Feed {
    qps: FeedQps,
    pd: *mut NDK_PD,
    aux: *mut NDK_CQ,
    _aux_notify: &'static Recorder,
    link: Link,
}

/// What posting through a feed needs (plain data, for callbacks).
#[derive(Clone, Copy)]
struct FeedQps {
    a: usize,
    b: usize,
    scratch: Scratch,
}

impl FeedQps {
    /// Posts a receive of `len` bytes at `b` and an 8-byte SEND from `a`:
    /// a receive completion with `wr_id` at `b` (an error if `len` < 8).
    fn post(self, wr_id: u64, len: usize, solicited: bool) {
        let (a, b) = (self.a as *mut NDK_QP, self.b as *mut NDK_QP);
        assert_eq!(
            receive(b, wr_id as usize, &[self.scratch.sge(0, len)]),
            STATUS_SUCCESS
        );
        let flags = if solicited {
            NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT
        } else {
            0
        };
        assert_eq!(
            send(a, 0, &[self.scratch.sge(4096, 8)], flags),
            STATUS_SUCCESS
        );
    }
}

impl Feed {
    fn new(env: &Env, cq: *mut NDK_CQ) -> Self {
        let pd = env.create_pd();
        let aux_notify = Recorder::new();
        let aux = env.create_cq(256, aux_notify);
        let a = create_qp(pd, aux, aux, 0xA, 64, 64, 1, 1, 0).expect("qp a");
        let b = create_qp(pd, cq, aux, 0xB, 64, 64, 1, 1, 0).expect("qp b");
        let link = env.link(a, b);
        Self {
            qps: FeedQps {
                a: a as usize,
                b: b as usize,
                scratch: Scratch::new(pd),
            },
            pd,
            aux,
            _aux_notify: aux_notify,
            link,
        }
    }

    fn close(self) {
        self.link.close();
        close_now(self.qps.a as *mut NDK_QP);
        close_now(self.qps.b as *mut NDK_QP);
        close_now(self.aux);
        close_now(self.pd);
    }
}

impl Lone {
    fn new(b: Backend, depth: u32) -> Self {
        let env = Env::on(b);
        let notify = Recorder::new();
        let cq = env.create_cq(depth, notify);
        let cqn = if env.is_scripted() {
            *env.dev().cqns().last().unwrap()
        } else {
            0
        };
        let feed = (!env.is_scripted()).then(|| Feed::new(&env, cq));
        Self {
            env,
            notify,
            cq,
            cqn,
            depth,
            feed: std::cell::RefCell::new(feed),
        }
    }

    fn feed(&self) -> FeedQps {
        self.feed.borrow().as_ref().expect("a feed").qps
    }

    fn aux(&self) -> *mut NDK_CQ {
        self.feed.borrow().as_ref().expect("a feed").aux
    }

    /// One completion in the CQ: successful or failed, solicited or not.
    fn push(&self, wr_id: u64, status: CqeStatus, solicited: bool) {
        if self.env.is_scripted() {
            let cqe = Cqe {
                wr_id,
                opcode: CqeOpcode::Receive as u8,
                status: status as u8,
                flags: if solicited { CQE_FLAG_SOLICITED } else { 0 },
                ..Cqe::default()
            };
            // The device counts error CQEs as solicited, as hardware does.
            self.env
                .dev()
                .push_cqe(self.cqn, cqe, solicited || status != CqeStatus::Success);
            return;
        }
        let ok = status == CqeStatus::Success;
        // A receive buffer too short for the SEND fails the receive.
        self.feed().post(wr_id, if ok { 8 } else { 4 }, solicited);
        // The sender's completion follows the receiver's (RC: the ACK or
        // NAK comes after the receive completed); then the CQ event.
        // (Its status is not this test's business: a receive into a full
        // CQ may fail it.)
        self.env.results(self.aux(), 1);
        self.env.settle();
        if !ok {
            // The failure moved both QPs to error: a fresh connection.
            let old = self.feed.borrow_mut().take().unwrap();
            old.close();
            *self.feed.borrow_mut() = Some(Feed::new(&self.env, self.cq));
        }
    }

    /// Makes the CQ overflow: injected on the scripted device; on the RNIC,
    /// one more completion than its depth while nobody polls.
    fn overflow(&self) {
        if self.env.is_scripted() {
            self.env.dev().overflow_cq(self.cqn);
            return;
        }
        for i in 0..=u64::from(self.depth) {
            self.feed().post(1000 + i, 8, false);
        }
        // Every SEND completes at its sender, in error or not.
        self.env.results(self.aux(), self.depth as usize + 1);
        self.env.settle();
    }

    /// The notifications once there are at least `expected` (the RNIC
    /// delivers events from its own thread, maybe after `push` returned),
    /// after a grace period in which no more should arrive.
    fn notifications(&self, expected: usize) -> Vec<NTSTATUS> {
        self.env.pump(|| self.notify.count() >= expected);
        self.env.settle();
        self.notify.statuses()
    }

    fn finish(self) {
        if let Some(f) = self.feed.borrow_mut().take() {
            f.close();
        }
        close_now(self.cq);
        self.env.finish();
    }
}

backend_tests! {

fn arm_any_notifies_once_per_arm(b: Backend) {
    let l = Lone::new(b, 16);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 0, "never notified unarmed");
    assert_eq!(results(l.cq, 4).len(), 1);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    assert_eq!(l.notify.count(), 0);
    l.push(2, CqeStatus::Success, false);
    assert_eq!(l.notifications(1), vec![STATUS_SUCCESS]);
    l.push(3, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 1, "one notification per arm");
    results(l.cq, 4);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(4, CqeStatus::Success, false);
    assert_eq!(l.notifications(2).len(), 2);
    l.finish();
}

fn arm_solicited_waits_for_solicited_or_failed_completions(b: Backend) {
    let l = Lone::new(b, 16);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(
        l.notify.count(),
        0,
        "an unsolicited success does not satisfy it"
    );
    l.push(2, CqeStatus::Success, true);
    assert_eq!(l.notifications(1), vec![STATUS_SUCCESS]);
    results(l.cq, 8);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(3, CqeStatus::RemoteAccess, false);
    assert_eq!(
        l.notifications(2).len(),
        2,
        "a failed request satisfies a SOLICITED arm"
    );
    l.finish();
}

fn arm_errors_ignores_completions_but_reports_overflow(b: Backend) {
    let l = Lone::new(b, 2);
    arm(l.cq, NDK_CQ_NOTIFY_ERRORS);
    if l.env.is_scripted() {
        assert!(
            !l.env
                .dev()
                .commands()
                .iter()
                .any(|c| matches!(c, testkit::scripted::Command::ArmCq { .. })),
            "no device arm"
        );
    }
    l.push(1, CqeStatus::Success, true);
    l.push(2, CqeStatus::LocalProtection, false);
    assert_eq!(
        l.notify.count(),
        0,
        "ERRORS means CQ errors, not failed requests"
    );
    l.push(3, CqeStatus::Success, false); // the third does not fit
    l.env.pump(|| l.notify.count() >= 1);
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

fn overflow_while_unarmed_is_reported_at_the_next_arm(b: Backend) {
    let l = Lone::new(b, 4);
    l.overflow();
    assert_eq!(l.notify.count(), 0);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    assert_eq!(l.notify.statuses(), vec![STATUS_BUFFER_OVERFLOW]);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    assert_eq!(l.notify.count(), 1, "reported once");
    l.finish();
}

fn armed_any_or_solicited_also_report_overflow(b: Backend) {
    // On the RNIC the overflow is made of completions, which an ANY arm
    // reports first: only SOLICITED isolates the overflow there.
    let kinds: &[u32] = if b == Backend::Scripted {
        &[NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_SOLICITED]
    } else {
        &[NDK_CQ_NOTIFY_SOLICITED]
    };
    for &kind in kinds {
        let l = Lone::new(b, 4);
        arm(l.cq, kind);
        l.overflow();
        l.env.pump(|| l.notify.count() >= 1);
        assert_eq!(l.notify.statuses(), vec![STATUS_BUFFER_OVERFLOW]);
        l.finish();
    }
}

fn the_stronger_arm_wins(b: Backend) {
    // SOLICITED then ANY: a plain completion notifies.
    let l = Lone::new(b, 16);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notifications(1).len(), 1);
    l.finish();
    // ANY then SOLICITED: still ANY.
    let l = Lone::new(b, 16);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notifications(1).len(), 1);
    l.finish();
    // ERRORS then SOLICITED: SOLICITED.
    let l = Lone::new(b, 16);
    arm(l.cq, NDK_CQ_NOTIFY_ERRORS);
    arm(l.cq, NDK_CQ_NOTIFY_SOLICITED);
    l.push(1, CqeStatus::Success, false);
    assert_eq!(l.notify.count(), 0);
    l.push(2, CqeStatus::Success, true);
    assert_eq!(l.notifications(1).len(), 1);
    l.finish();
}

fn arming_with_new_unpolled_completions_fires_at_once(b: Backend) {
    let l = Lone::new(b, 16);
    l.push(1, CqeStatus::Success, false);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.env.pump(|| l.notify.count() >= 1); // the device's interrupt follows the arm
    assert_eq!(l.notify.statuses(), vec![STATUS_SUCCESS]);
    // Drained before arming: nothing pending, no notification.
    results(l.cq, 8);
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.env.settle();
    assert_eq!(l.notify.count(), 1);
    l.finish();
}

fn an_unknown_arm_type_arms_nothing(b: Backend) {
    let l = Lone::new(b, 16);
    arm(l.cq, 7);
    l.push(1, CqeStatus::Success, true);
    assert_eq!(l.notify.count(), 0);
    l.finish();
}

fn notifications_of_one_cq_never_overlap(b: Backend) {
    let l = Lone::new(b, 16);
    let depth = Arc::new(AtomicUsize::new(0));
    let max_depth = Arc::new(AtomicUsize::new(0));
    let cq_addr = l.cq as usize;
    let dev = l.env.is_scripted().then(|| l.env.dev().clone());
    let feed = (!l.env.is_scripted()).then(|| l.feed());
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
            if let Some(dev) = &dev {
                dev.push_cqe(
                    cqn,
                    Cqe {
                        wr_id: 9,
                        ..Cqe::default()
                    },
                    false,
                );
            }
            if let Some(f) = feed {
                f.post(9, 8, false);
            }
        }
        d.fetch_sub(1, Ordering::SeqCst);
    });
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(1, CqeStatus::Success, false);
    l.env.pump(|| l.notify.count() >= 4);
    l.env.settle();
    assert_eq!(l.notify.count(), 4, "each re-arm produced one notification");
    assert_eq!(max_depth.load(Ordering::SeqCst), 1, "never nested");
    l.finish();
}

fn closing_a_cq_inside_its_notification_pends_until_it_returns(b: Backend) {
    let l = Lone::new(b, 16);
    let cq_addr = l.cq as usize;
    let close_rec = Recorder::new();
    let during = Arc::new(std::sync::Mutex::new(None));
    let during2 = during.clone();
    l.notify.set_hook(move |_| {
        let status = close(cq_addr as *mut NDK_CQ, close_rec);
        *during2.lock().unwrap() = Some((status, close_rec.count()));
    });
    arm(l.cq, NDK_CQ_NOTIFY_ANY);
    l.push(1, CqeStatus::Success, false);
    l.env.pump(|| during.lock().unwrap().is_some());
    assert_eq!(
        *during.lock().unwrap(),
        Some((STATUS_PENDING, 0)),
        "pending while the callback runs"
    );
    // On the RNIC the feed's QP holds the CQ too: its close completes
    // after both the callback's return and the QP's close.
    if let Some(f) = l.feed.borrow_mut().take() {
        f.close();
    }
    // The callback may still be returning on the device's thread (the
    // hook ran inside it): the close completes when it has.
    l.env.pump(|| close_rec.count() >= 1);
    assert_eq!(close_rec.count(), 1, "completed after it returned");
    assert!(close_rec.calls()[0].seq > l.notify.calls()[0].seq);
    l.env.finish();
}

fn flush_cancels_every_posted_request_through_the_cq(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(16, 1, 0);
    let (qp, qpn, cq) = (pair.active_qp.qp, pair.active_qp.qpn, pair.active_qp.cq);
    let sg = [pair.active_qp.sg(0, 4)];
    for i in 1..=3 {
        assert_eq!(receive(qp, 100 + i, &sg), STATUS_SUCCESS);
    }
    // The peer posted no receive: on the RNIC the SEND waits (RNR) and
    // the WRITE behind it with it, until the flush.
    assert_eq!(send(qp, 1, &sg, 0), STATUS_SUCCESS);
    assert_eq!(
        write(qp, 2, &sg, 0, 0, NDK_OP_FLAG_SILENT_SUCCESS),
        STATUS_SUCCESS
    );
    arm(cq, NDK_CQ_NOTIFY_SOLICITED);
    env.settle();
    assert_eq!(pair.notify.count(), 0, "nothing completed before the flush");
    flush(qp);
    env.pump(|| pair.notify.count() >= 1);
    let notified = pair.notify.count();
    assert_eq!(
        notified, 1,
        "an armed notification fires for the cancelled requests"
    );
    let r = env.results(cq, 5);
    assert_eq!(
        r.len(),
        5,
        "silent requests are cancelled with a completion too"
    );
    assert!(r.iter().all(|x| x.Status == STATUS_CANCELLED));
    let mut ids: Vec<usize> = r.iter().map(|x| x.RequestContext as usize).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 101, 102, 103]);
    if env.is_scripted() {
        assert!(env.dev().sq_pending(qpn).is_empty());
    }
    pair.close();
    env.finish();
}

fn closing_a_qp_cancels_its_work(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 8, 1, 0);
    let sg = [s.sg(0, 4)];
    assert_eq!(receive(s.qp, 7, &sg), STATUS_SUCCESS);
    assert_eq!(receive(s.qp, 8, &sg), STATUS_SUCCESS);
    close_now(s.qp);
    let r = env.results(s.cq, 2);
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

fn resize_keeps_order_and_checks_depth(b: Backend) {
    let l = Lone::new(b, 4);
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
    if l.env.is_scripted() {
        assert!(
            l.env
                .dev()
                .commands()
                .contains(&testkit::scripted::Command::ResizeCq {
                    cqn: l.cqn,
                    depth: 16
                })
        );
    }
    l.finish();
}

fn interrupt_moderation_rules(b: Backend) {
    let l = Lone::new(b, 64);
    // What the device was told is visible on the scripted device; on the
    // RNIC, in when it notifies (below).
    let m = |interval, count, want: (u32, u32), what: &str| {
        assert_eq!(moderate(l.cq, interval, count), STATUS_SUCCESS, "{what}");
        if l.env.is_scripted() {
            assert_eq!(l.env.dev().cq_moderation(l.cqn).unwrap(), want, "{what}");
        }
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
    m(100, 8, (8, 100), "both");
    m(u32::MAX, 8, (8, 0), "count only");
    m(100, u32::MAX, (0, 100), "interval only");
    m(100, 65, (0, 100), "count beyond depth: interval only");
    m(0, 8, (0, 0), "interval 0: off");
    m(100, 1, (0, 0), "count 1: off");
    m(100, 0, (0, 0), "count 0: off");
    if !l.env.is_scripted() {
        // A count of 8 and no interval: an armed CQ's first seven
        // completions notify nothing, the eighth does.
        m(u32::MAX, 8, (8, 0), "count only, on the RNIC");
        arm(l.cq, NDK_CQ_NOTIFY_ANY);
        for i in 1..=7 {
            l.push(i, CqeStatus::Success, false);
        }
        assert_eq!(l.notify.count(), 0, "seven completions held by a count of 8");
        l.push(8, CqeStatus::Success, false);
        assert_eq!(l.notifications(1), vec![STATUS_SUCCESS], "the eighth notifies");
        assert_eq!(l.env.results(l.cq, 8).len(), 8);
        // Off: the next completion notifies at once.
        m(0, 8, (0, 0), "interval 0: off, on the RNIC");
        arm(l.cq, NDK_CQ_NOTIFY_ANY);
        l.push(9, CqeStatus::Success, false);
        assert_eq!(l.notifications(2).len(), 2, "unmoderated: at once");
        assert_eq!(l.env.results(l.cq, 1).len(), 1);
    }
    l.finish();
}

fn srq_notification_fires_once_below_the_threshold(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let srq_events = Recorder::new();
    let pd = env.create_pd();
    let cq = env.create_cq(16, notify);
    let srq = try_create_srq(pd, 8, 1, 2, Some(srq_events)).unwrap();
    let qp = create_qp_with_srq(pd, cq, srq, 0x99, 4, 1).unwrap();
    // On the RNIC, a QP connected to the SRQ's QP sends to it.
    let sender = (!env.is_scripted()).then(|| {
        let s = env.qp_setup(notify, 8, 1, 0);
        let link = env.link(s.qp, qp);
        (s, link)
    });
    let complete_one = || match &sender {
        None => {
            let qpn = env.qpn_of(0x99);
            env.dev().complete_next_recv(qpn, CqeStatus::Success, 1, 0);
        }
        Some((s, _)) => {
            assert_eq!(send(s.qp, 0, &[s.sg(0, 1)], 0), STATUS_SUCCESS);
            assert_eq!(env.results(s.cq, 1)[0].Status, STATUS_SUCCESS);
            env.settle();
        }
    };
    let scratch = Scratch::new(pd);
    let sg = [scratch.sge(0, 8)];
    for i in 0..3 {
        assert_eq!(srq_receive(srq, i, &sg), STATUS_SUCCESS);
    }
    complete_one(); // 2 left: not below 2
    assert_eq!(srq_events.count(), 0);
    complete_one(); // 1 left
    env.pump(|| srq_events.count() >= 1);
    assert_eq!(srq_events.statuses(), vec![STATUS_SUCCESS]);
    complete_one();
    assert_eq!(srq_events.count(), 1, "one-shot");
    // Re-arming while already below fires at once.
    assert_eq!(modify_srq(srq, 0, 3), STATUS_SUCCESS);
    env.pump(|| srq_events.count() >= 2);
    assert_eq!(srq_events.count(), 2);
    results(cq, 8);
    if let Some((s, link)) = sender {
        link.close();
        close_now(s.qp);
        close_now(s.cq);
        close_now(s.pd);
    }
    close_now(qp);
    close_now(srq);
    close_now(cq);
    close_now(pd);
    env.finish();
}


// On the RNIC every request really runs: SENDs meet receives, the
// invalidated tokens are live windows, RDMA goes to the peer's region.
fn extended_results_carry_type_and_invalidated_token(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(32, 1, 0);
    let (qp, qpn, cq, pd) = (
        pair.active_qp.qp,
        pair.active_qp.qpn,
        pair.active_qp.cq,
        pair.active_qp.pd,
    );
    let rnic = !env.is_scripted();
    let (me, peer) = (pair.active_qp, pair.passive_qp);
    let target = pair.remote();
    let sg = [me.sg(0, 8)];
    let fr = create_mr(pd, true);
    assert_eq!(init_fast_register(fr, 1, false), STATUS_SUCCESS);
    let buf = [0u8; 64];
    let (mr, _mdl) = registered_mr(pd, &buf, 0);
    let mw = create_mw(pd);
    // Windows to invalidate remotely: one of the peer's, one of ours
    // (bound silently, so they leave no completion in our CQ).
    let pbuf: &'static mut [u8] = Box::leak(vec![0u8; 64].into_boxed_slice());
    let (pmr, _pmdl) = registered_mr(peer.pd, pbuf, 0);
    let pmw = create_mw(peer.pd);
    let rr = NDK_OP_FLAG_ALLOW_REMOTE_READ;
    let quiet = rr | NDK_OP_FLAG_SILENT_SUCCESS;
    assert_eq!(
        bind(peer.qp, 0x30, pmr, pmw, pbuf.as_ptr() as u64, 8, quiet),
        STATUS_SUCCESS
    );
    let mw2 = create_mw(pd);
    assert_eq!(
        bind(qp, 0x20, mr, mw2, buf.as_ptr() as u64, 8, quiet),
        STATUS_SUCCESS
    );
    let ours = mw_token(mw2);
    if rnic {
        peer.post_receives(0x100, 2, 64);
    } else {
        env.complete_sends(&me, 1);
    }
    assert_eq!(send(qp, 1, &sg, 0), STATUS_SUCCESS);
    assert_eq!(
        send_and_invalidate(qp, 2, &sg, 0, mw_token(pmw)),
        STATUS_SUCCESS
    );
    assert_eq!(
        fast_register(qp, 3, fr, &[0x8000], 0, 100, 0x8000, 0),
        STATUS_SUCCESS
    );
    assert_eq!(
        bind(qp, 4, mr, mw, buf.as_ptr() as u64, 8, rr),
        STATUS_SUCCESS
    );
    assert_eq!(invalidate(qp, 5, mw, 0), STATUS_SUCCESS);
    assert_eq!(read(qp, 6, &sg, target.va, target.token, 0), STATUS_SUCCESS);
    assert_eq!(write(qp, 7, &sg, target.va, target.token, 0), STATUS_SUCCESS);
    if rnic {
        env.results(peer.cq, 2);
    } else {
        while env
            .dev()
            .complete_next_send(qpn, CqeStatus::Success)
            .is_some()
        {}
    }
    let sent = env.results_ex(cq, 7);
    assert_eq!(receive(qp, 8, &[me.sg(100, 8)]), STATUS_SUCCESS);
    assert_eq!(receive(qp, 9, &[me.sg(200, 8)]), STATUS_SUCCESS);
    let (p, psg) = (peer.qp, [peer.sg(0, 8)]);
    if rnic {
        assert_eq!(send(p, 0x40, &[peer.sg(0, 5)], 0), STATUS_SUCCESS);
        assert_eq!(
            send_and_invalidate(p, 0x41, &[peer.sg(0, 6)], 0, ours),
            STATUS_SUCCESS
        );
    } else {
        env.dev().complete_next_recv(qpn, CqeStatus::Success, 5, 0);
        env.dev().complete_next_recv_invalidate(qpn, 6, ours);
    }
    let mut r = sent;
    r.extend(env.results_ex(cq, 2));
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
    assert!(r.iter().all(|x| x.Status == STATUS_SUCCESS), "{r:?}");
    assert_eq!(r[8].TypeSpecificCompletionOutput, ours as usize);
    assert_eq!((r[7].BytesTransferred, r[8].BytesTransferred), (5, 6));
    // Plain results report a receive-and-invalidate as a receive.
    assert_eq!(receive(qp, 10, &[me.sg(300, 8)]), STATUS_SUCCESS);
    assert_eq!(
        bind(qp, 0x21, mr, mw2, buf.as_ptr() as u64, 8, quiet),
        STATUS_SUCCESS
    );
    let again = mw_token(mw2);
    if rnic {
        assert_eq!(
            send_and_invalidate(p, 0x42, &psg[..1], 0, again),
            STATUS_SUCCESS
        );
    } else {
        env.dev().complete_next_recv_invalidate(qpn, 8, again);
    }
    let r = env.results(cq, 1);
    assert_eq!(
        (
            r.len(),
            r[0].Status,
            r[0].BytesTransferred,
            r[0].RequestContext as usize
        ),
        (1, STATUS_SUCCESS, 8, 10)
    );
    if rnic {
        env.results(peer.cq, 3);
    }
    for o in [header(mw2), header(pmw), header(pmr), header(mw), header(mr), header(fr)] {
        close_now(o);
    }
    pair.close();
    env.finish();
}
}

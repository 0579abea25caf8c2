//! Audit of issue #3: tests for the posting-path and consumer-contract
//! items the rest of the suite covered weakly or not at all. Each drives
//! the provider only through the NDK dispatch tables.
//!
//! On every backend (`backend_tests!`: scripted device, software RNIC on
//! the in-memory fabric and on UDP; the harness picks the addresses):
//! - a full send queue refuses every initiator post, queues nothing and
//!   rotates no token;
//! - posts after a disconnect are `STATUS_CONNECTION_INVALID` and change
//!   nothing;
//! - a full-queue refusal hands earlier deferred posts to the device;
//! - `NDK_OP_FLAG_READ_FENCE` holds a WRITE until the READ before it has
//!   landed (its data is what the WRITE carries), and a privileged-token
//!   READ sink receives the data;
//! - fast register and bind grant exactly the remote rights asked for;
//! - closing (not disconnecting) a connected connector fires the peer's
//!   disconnect event;
//! - several opens of one device are distinct adapters sharing the device;
//! - an MDL's page frames, not its virtual addresses, decide the LAM and
//!   where a peer's WRITE lands;
//! - work posted after NdkFlush or a QP error still completes (cancelled).
//!
//! Scripted device only (they need the device's queues, its pool counters
//! or its deterministic event delivery):
//! - the completion flags every initiator post puts in its WQE, and a
//!   silent request that fails still completes;
//! - every post, `NdkFlush`, arming and polling at `DISPATCH_LEVEL`,
//!   without a pool charge;
//! - concurrent posts on one QP from several processors lose nothing;
//! - bad handles and lists are refused by every post;
//! - the adapter close returns only after a running callback returned.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};

use hwq::CqeStatus;
use hwq::wqe::{Access, SendOpcode, WqeFlags};
use ndkpi::*;
use testkit::adapter::*;

/// A pattern byte for `i` (distinct neighbours, so a shifted copy shows).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// The bytes at `va` (memory the test owns and no request is writing).
fn bytes_at(va: u64, len: usize) -> Vec<u8> {
    // SAFETY: `va` is a live buffer of the test of at least `len` bytes,
    // read after the requests touching it completed.
    unsafe { std::slice::from_raw_parts(va as usize as *const u8, len) }.to_vec()
}

/// Overwrites the bytes at `va` (memory the test owns, no request on it).
fn fill_at(va: u64, data: &[u8]) {
    // SAFETY: as `bytes_at`; nothing else accesses the range meanwhile.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), va as usize as *mut u8, data.len()) };
}

/// Contexts and statuses of results, in order.
fn outcome(r: &[NDK_RESULT_EX]) -> Vec<(usize, NTSTATUS)> {
    r.iter()
        .map(|x| (x.RequestContext as usize, x.Status))
        .collect()
}

/// One initiator post of each kind, by name; `flags` added to what the
/// kind needs.
struct Posts {
    qp: *mut NDK_QP,
    sg: [NDK_SGE; 1],
    target: Remote,
    mr: *mut NDK_MR,
    mw: *mut NDK_MW,
    fr: *mut NDK_MR,
    va: u64,
}

impl Posts {
    /// Posts of every kind on `pair`'s active QP over one page of `pages`
    /// (registered, with a fast-register MR and a window); the returned MDL
    /// must outlive them.
    fn on(pair: &Pair, pages: &mut Pages) -> (Self, Mdl) {
        Self::on_qp(pair.active_qp, pair.remote(), pages)
    }

    /// As [`Posts::on`], on QP `s`, with WRITE and READ aimed at `target`.
    fn on_qp(s: Setup, target: Remote, pages: &mut Pages) -> (Self, Mdl) {
        let va = pages.addr();
        let (mr, mdl) = registered_mr(s.pd, pages.bytes(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        let fr = create_mr(s.pd, true);
        assert_eq!(init_fast_register(fr, 1, true), STATUS_SUCCESS);
        let posts = Self {
            qp: s.qp,
            sg: [s.sg(0, 8)],
            target,
            mr,
            mw: create_mw(s.pd),
            fr,
            va,
        };
        (posts, mdl)
    }

    /// The fast-register MR's tokens and the window's (a refused fast
    /// register or bind must rotate none of them).
    fn tokens(&self) -> ((u32, u32), u32) {
        (mr_tokens(self.fr), mw_token(self.mw))
    }

    /// Closes the window, the fast-register MR and the MR.
    fn close(&self) {
        for o in [header(self.mw), header(self.fr), header(self.mr)] {
            close_now(o);
        }
    }

    const KINDS: [&'static str; 8] = [
        "send",
        "send_and_invalidate",
        "write",
        "read",
        "fast_register",
        "bind",
        "invalidate_fr",
        "invalidate_mw",
    ];

    fn post(&self, kind: &str, ctx: usize, flags: u32) -> NTSTATUS {
        let (qp, sg, t) = (self.qp, &self.sg, self.target);
        match kind {
            "send" => send(qp, ctx, sg, flags),
            "send_and_invalidate" => send_and_invalidate(qp, ctx, sg, flags, 0x77),
            "write" => write(qp, ctx, sg, t.va, t.token, flags),
            "read" => read(qp, ctx, sg, t.va, t.token, flags),
            "fast_register" => fast_register(
                qp,
                ctx,
                self.fr,
                &[logical_of(self.va) as NDK_LOGICAL_ADDRESS],
                0,
                4096,
                self.va,
                flags,
            ),
            "bind" => bind(
                qp,
                ctx,
                self.mr,
                self.mw,
                self.va,
                64,
                flags | NDK_OP_FLAG_ALLOW_REMOTE_READ,
            ),
            "invalidate_fr" => invalidate(qp, ctx, self.fr, flags),
            "invalidate_mw" => invalidate(qp, ctx, self.mw, flags),
            _ => unreachable!("{kind}"),
        }
    }

    fn opcode(kind: &str) -> SendOpcode {
        match kind {
            "send" => SendOpcode::Send,
            "send_and_invalidate" => SendOpcode::SendInvalidate,
            "write" => SendOpcode::Write,
            "read" => SendOpcode::Read,
            "fast_register" => SendOpcode::FastRegister,
            "bind" => SendOpcode::Bind,
            _ => SendOpcode::LocalInvalidate,
        }
    }
}

backend_tests! {

fn full_send_queue_refuses_every_initiator_post_and_changes_nothing(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(4, 2, 0);
    let s = pair.active_qp;
    let (qp, cq) = (s.qp, s.cq);
    let mut pages = Pages::new(1);
    let (posts, _mdl) = Posts::on(&pair, &mut pages);
    let sg = [s.sg(0, 8)];
    // The peer posted no receive: on the RNIC the SENDs wait (RNR) and
    // keep their slots until the flush.
    for i in 1..=4 {
        assert_eq!(send(qp, i, &sg, 0), STATUS_SUCCESS);
    }
    let tokens = posts.tokens();
    let ir = STATUS_INSUFFICIENT_RESOURCES;
    for (kind, ctx) in Posts::KINDS.into_iter().zip(10..) {
        assert_eq!(posts.post(kind, ctx, 0), ir, "{kind} on a full send queue");
    }
    let silent_deferred = NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_DEFER;
    assert_eq!(
        posts.post("send", 18, silent_deferred),
        ir,
        "silent, deferred send on a full send queue"
    );
    assert_eq!(posts.tokens(), tokens, "a refused fast register or bind rotates nothing");
    if env.is_scripted() {
        let ids: Vec<u64> = env.dev().sq_pending(s.qpn).iter().map(|w| w.wr_id).collect();
        assert_eq!(ids, vec![1, 2, 3, 4], "only the accepted posts are queued");
    }
    // The flush cancels exactly the four accepted posts.
    flush(qp);
    let r = env.results_ex(cq, 4);
    assert_eq!(outcome(&r), (1..=4).map(|i| (i, STATUS_CANCELLED)).collect::<Vec<_>>());
    env.settle();
    assert!(results(cq, 8).is_empty(), "no completion for a refused post");
    posts.close();
    pair.close();
    env.finish();
}

fn posts_after_a_disconnect_are_connection_invalid_and_change_nothing(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(8, 1, 0);
    let done = Recorder::new();
    assert_eq!(disconnect(pair.active, done), STATUS_PENDING);
    env.pump(|| done.count() >= 1 && pair.passive_disc.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_SUCCESS]);
    assert_eq!(pair.passive_disc.count(), 1);
    // The side that disconnected and the side that was told.
    for s in [pair.active_qp, pair.passive_qp] {
        let mut pages = Pages::new(1);
        // Refused before anything is looked up: any target will do.
        let nowhere = Remote { va: 0x1000, token: 7 };
        let (posts, _mdl) = Posts::on_qp(s, nowhere, &mut pages);
        let tokens = posts.tokens();
        for (kind, ctx) in Posts::KINDS.into_iter().zip(1..) {
            assert_eq!(
                posts.post(kind, ctx, 0),
                STATUS_CONNECTION_INVALID,
                "{kind} on {:#x}",
                s.context
            );
        }
        assert_eq!(
            posts.post("send", 9, NDK_OP_FLAG_DEFER),
            STATUS_CONNECTION_INVALID,
            "deferred send on {:#x}",
            s.context
        );
        assert_eq!(posts.tokens(), tokens);
        if env.is_scripted() {
            assert!(env.dev().sq_pending(s.qpn).is_empty(), "nothing queued");
        }
        env.settle();
        assert!(results(s.cq, 8).is_empty(), "no completion for a refused post");
        posts.close();
    }
    pair.close();
    env.finish();
}

fn a_full_queue_refusal_hands_deferred_posts_to_the_device(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(4, 1, 0);
    let s = pair.active_qp;
    let sg = [s.sg(0, 8)];
    // No peer receives: on the RNIC the SENDs keep their slots, and a
    // SEND handed over is refused by the peer with an RNR NAK, which the
    // host's RNIC counts (the adapter's device is this test's alone).
    let rnr_naks = || {
        host::adapters::device_of(env.adapter).map(|rnic| rnic.stats().rnr_naks_received)
    };
    for i in 1..=4 {
        assert_eq!(send(s.qp, i, &sg, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    }
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(s.qpn), 0, "all four deferred");
    }
    if rnr_naks().is_some() {
        env.settle();
        assert_eq!(rnr_naks(), Some(0), "all four deferred: none sent");
    }
    // The refusal is an inline failure: NDK's rule rings for the four.
    assert_eq!(
        send(s.qp, 5, &sg, NDK_OP_FLAG_DEFER),
        STATUS_INSUFFICIENT_RESOURCES
    );
    if env.is_scripted() {
        assert_eq!(env.dev().sq_doorbells(s.qpn), 1, "the refusal rang");
        assert_eq!(env.dev().sq_pending(s.qpn).len(), 4);
    }
    if rnr_naks().is_some() {
        wait_until("the refusal handing the four over", || {
            rnr_naks().is_some_and(|n| n > 0)
        });
    }
    flush(s.qp);
    let r = env.results_ex(s.cq, 4);
    assert_eq!(outcome(&r), (1..=4).map(|i| (i, STATUS_CANCELLED)).collect::<Vec<_>>());
    pair.close();
    env.finish();
}

fn read_fence_holds_a_write_until_the_read_before_it_landed(b: Backend) {
    const N: usize = 16 * 1024;
    let env = Env::on(b);
    let pair = env.connected_pair(16, 1, 0);
    let s = pair.active_qp;
    let target = pair.remote();
    let data = pattern(N, 0x5A);
    fill_at(target.va, &data);
    s.scratch.fill(0, &vec![0u8; N]);
    // READ the peer's bytes into a privileged-token sink (the adapter says
    // READ sinks need no special rights), then WRITE that same buffer back
    // to another place of the peer's: fenced, it must carry what the READ
    // brought, not what the buffer held when it was posted.
    let at = target.va + (Remote::LEN / 2) as u64;
    assert_eq!(
        read(s.qp, 1, &[s.sg(0, N)], target.va, target.token, 0),
        STATUS_SUCCESS
    );
    assert_eq!(
        write(s.qp, 2, &[s.sg(0, N)], at, target.token, NDK_OP_FLAG_READ_FENCE),
        STATUS_SUCCESS
    );
    if env.is_scripted() {
        let w = env.dev().sq_pending(s.qpn);
        assert_eq!(w[0].op(), Some(SendOpcode::Read));
        assert!(!w[0].wqe_flags().contains(WqeFlags::READ_FENCE));
        assert_eq!(w[1].op(), Some(SendOpcode::Write));
        assert!(w[1].wqe_flags().contains(WqeFlags::READ_FENCE), "the fence reaches the device");
        env.complete_sends(&s, 2);
    }
    let r = env.results_ex(s.cq, 2);
    assert_eq!(outcome(&r), vec![(1, STATUS_SUCCESS), (2, STATUS_SUCCESS)]);
    assert_eq!(r[0].BytesTransferred as usize, N);
    if !env.is_scripted() {
        assert!(s.scratch.bytes(0, N) == data, "the privileged-token sink got the READ's data");
        assert!(bytes_at(at, N) == data, "the fenced WRITE carried the READ's data");
    }
    pair.close();
    env.finish();
}

fn fast_register_and_bind_grant_exactly_the_requested_rights(b: Backend) {
    let env = Env::on(b);
    // One connection per refused access: the refusal breaks it.
    // (kind, flags, READ allowed, WRITE allowed)
    let cases: [(&str, u32, bool, bool); 4] = [
        ("fast register, read only", NDK_OP_FLAG_ALLOW_REMOTE_READ, true, false),
        ("fast register, local only", NDK_OP_FLAG_ALLOW_LOCAL_WRITE, false, false),
        ("fast register, write only", NDK_OP_FLAG_ALLOW_REMOTE_WRITE, false, true),
        ("window, read only", NDK_OP_FLAG_ALLOW_REMOTE_READ, true, false),
    ];
    for (what, flags, can_read, can_write) in cases {
        let pair = env.connected_pair(8, 1, 0);
        let (a, p) = (pair.active_qp, pair.passive_qp);
        let mut pages = Pages::new(1);
        let va = pages.addr();
        let original = pattern(4096, 0xC3);
        pages.bytes().copy_from_slice(&original);
        let window = what.starts_with("window");
        let (mr, mdl, mw) = if window {
            let (mr, mdl) = registered_mr(p.pd, pages.bytes(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
            let mw = create_mw(p.pd);
            assert_eq!(bind(p.qp, 0xB, mr, mw, va, 4096, flags), STATUS_SUCCESS, "{what}");
            (mr, Some(mdl), Some(mw))
        } else {
            let mr = create_mr(p.pd, true);
            assert_eq!(init_fast_register(mr, 1, true), STATUS_SUCCESS);
            let st = fast_register(p.qp, 0xF, mr, &[logical_of(va) as NDK_LOGICAL_ADDRESS], 0, 4096, va, flags);
            assert_eq!(st, STATUS_SUCCESS, "{what}");
            (mr, None, None)
        };
        let token = mw.map_or_else(|| mr_tokens(mr).1, mw_token);
        if env.is_scripted() {
            let w = env.dev().sq_pending(p.qpn)[0];
            let mut want = Access::empty();
            if can_read {
                want |= Access::REMOTE_READ;
            }
            if can_write {
                want |= Access::REMOTE_WRITE;
            }
            let remote = Access::from_bits_truncate(w.access) & (Access::REMOTE_READ | Access::REMOTE_WRITE);
            assert_eq!(remote, want, "{what}: the rights in the WQE");
            assert_eq!(w.key, token, "{what}: the token the consumer reads");
        } else {
            // The grant completes, then the peer tries to read and write.
            env.device_completions(p.cq, 1);
            a.scratch.fill(0, &[0u8; 64]);
            assert_eq!(read(a.qp, 1, &[a.sg(0, 64)], va, token, 0), STATUS_SUCCESS);
            let r = env.results_ex(a.cq, 1);
            if can_read {
                assert_eq!(outcome(&r), vec![(1, STATUS_SUCCESS)], "{what}: READ");
                assert!(a.scratch.bytes(0, 64) == original[..64], "{what}: READ data");
            } else {
                assert_eq!(outcome(&r), vec![(1, STATUS_REMOTE_RESOURCES)], "{what}: READ refused");
            }
            if can_read {
                // A refused READ broke the connection; after a granted one
                // the WRITE is tried on the same connection.
                a.scratch.fill(0, &[0xEE; 64]);
                assert_eq!(write(a.qp, 2, &[a.sg(0, 64)], va, token, 0), STATUS_SUCCESS);
                let r = env.results_ex(a.cq, 1);
                let want = if can_write { STATUS_SUCCESS } else { STATUS_REMOTE_RESOURCES };
                assert_eq!(outcome(&r), vec![(2, want)], "{what}: WRITE");
            }
            env.settle();
            let now = pages.bytes().to_vec();
            assert!(now == original, "{what}: refused accesses touch nothing");
        }
        if let Some(mw) = mw {
            close_now(mw);
        }
        close_now(mr);
        drop(mdl);
        pair.close();
    }
    // A write-only fast registration: the WRITE lands.
    let pair = env.connected_pair(8, 1, 0);
    let (a, p) = (pair.active_qp, pair.passive_qp);
    let mut pages = Pages::new(1);
    let va = pages.addr();
    let fr = create_mr(p.pd, true);
    assert_eq!(init_fast_register(fr, 1, true), STATUS_SUCCESS);
    let st = fast_register(
        p.qp,
        0xF,
        fr,
        &[logical_of(va) as NDK_LOGICAL_ADDRESS],
        0,
        4096,
        va,
        NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    );
    assert_eq!(st, STATUS_SUCCESS);
    if !env.is_scripted() {
        env.device_completions(p.cq, 1);
        let data = pattern(64, 0x11);
        a.scratch.fill(0, &data);
        let token = mr_tokens(fr).1;
        assert_eq!(write(a.qp, 3, &[a.sg(0, 64)], va + 100, token, 0), STATUS_SUCCESS);
        assert_eq!(outcome(&env.results_ex(a.cq, 1)), vec![(3, STATUS_SUCCESS)]);
        assert!(pages.bytes()[100..164] == data[..], "the granted WRITE landed");
    }
    close_now(fr);
    pair.close();
    env.finish();
}

fn closing_a_connected_connector_tells_the_peer(b: Backend) {
    let env = Env::on(b);
    // Either side may be the one that closes.
    for active_closes in [true, false] {
        let pair = env.connected_pair(8, 1, 0);
        let (closer, closer_disc, closer_qp, peer, peer_disc, peer_qp) = if active_closes {
            (pair.active, &pair.active_disc, pair.active_qp, pair.passive, &pair.passive_disc, pair.passive_qp)
        } else {
            (pair.passive, &pair.passive_disc, pair.passive_qp, pair.active, &pair.active_disc, pair.active_qp)
        };
        // A receive the closing side's QP still holds.
        assert_eq!(receive(closer_qp.qp, 0x71, &[closer_qp.sg(0, 8)]), STATUS_SUCCESS);
        close_now(closer); // no NdkDisconnect first
        env.pump(|| peer_disc.count() >= 1);
        env.settle();
        assert_eq!(peer_disc.count(), 1, "the peer's disconnect event, once");
        assert_eq!(closer_disc.count(), 0, "no event for our own close");
        // The closed side's QP was flushed and accepts no more initiator work.
        let r = env.results_ex(closer_qp.cq, 1);
        assert_eq!(outcome(&r), vec![(0x71, STATUS_CANCELLED)]);
        assert_eq!(send(closer_qp.qp, 1, &[closer_qp.sg(0, 8)], 0), STATUS_CONNECTION_INVALID);
        assert_eq!(send(peer_qp.qp, 1, &[peer_qp.sg(0, 8)], 0), STATUS_CONNECTION_INVALID);
        close_now(peer);
        close_now(pair.listener);
        for s in [pair.active_qp, pair.passive_qp] {
            close_now(s.qp);
            close_now(s.cq);
            close_now(s.pd);
        }
    }
    env.finish();
}

fn mdl_page_frames_not_virtual_addresses_decide_where_data_lands(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(8, 1, 0);
    let (a, p) = (pair.active_qp, pair.passive_qp);
    let mut pages = Pages::new(2);
    let va = pages.addr();
    // An MDL whose two page frames are swapped: virtual page 0 lives in
    // the frame of host page 1 and the other way round.
    let mut mdl = Mdl::new(va, 8192);
    mdl.set_pfn(0, 0, (va + 4096) >> 12);
    mdl.set_pfn(0, 1, va >> 12);
    // NdkBuildLAM reports the frames' logical addresses, in MDL order.
    let mut lam = vec![0u64; NDK_LOGICAL_ADDRESS_MAPPING::size_for(2) / 8];
    let (mut size, mut fbo) = ((lam.len() * 8) as u32, 0u32);
    let f = adapter_table(env.adapter).NdkBuildLAM.unwrap();
    // SAFETY: our adapter, a valid MDL, a LAM buffer of `size` bytes,
    // NULL completion (synchronous).
    let st = unsafe {
        f(
            env.adapter,
            mdl.ptr(),
            8192,
            None,
            std::ptr::null_mut(),
            lam.as_mut_ptr().cast(),
            &raw mut size,
            &raw mut fbo,
        )
    };
    assert_eq!(st, STATUS_SUCCESS, "NdkBuildLAM");
    assert_eq!((fbo, lam[1] as u32), (0, 2));
    assert_eq!(
        &lam[2..4],
        &[logical_of(va + 4096), logical_of(va)],
        "logical addresses follow the PFNs"
    );
    let release = adapter_table(env.adapter).NdkReleaseLAM.unwrap();
    // SAFETY: a LAM built on this adapter, released once.
    unsafe { release(env.adapter, lam.as_mut_ptr().cast()) };
    // A registration over the same MDL: the device is given the frames.
    let mr = create_mr(p.pd, false);
    let flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
    assert_eq!(register_mr(mr, &mut mdl, 8192, flags), STATUS_SUCCESS);
    let token = mr_tokens(mr).1;
    if env.is_scripted() {
        let got = env.dev().commands().into_iter().rev().find_map(|c| match c {
            testkit::scripted::Command::Register { va: v, pages, .. } => Some((v, pages)),
            _ => None,
        });
        assert_eq!(got, Some((va, vec![va + 4096, va])));
    } else {
        // The peer writes at the region's first virtual address: the bytes
        // land in the frame the MDL names, host page 1.
        let data = pattern(16, 0x42);
        a.scratch.fill(0, &data);
        assert_eq!(write(a.qp, 1, &[a.sg(0, 16)], va, token, 0), STATUS_SUCCESS);
        assert_eq!(outcome(&env.results_ex(a.cq, 1)), vec![(1, STATUS_SUCCESS)]);
        let now = pages.bytes();
        assert!(now[4096..4112] == data[..], "written through the PFN");
        assert!(now[..16].iter().all(|&x| x == 0), "not through the virtual address");
    }
    close_now(mr);
    pair.close();
    env.finish();
}

fn several_opens_are_distinct_adapters_on_one_device(b: Backend) {
    let env = Env::on(b);
    let other = env.open_another(1, 0).expect("a second open");
    assert_ne!(other, env.adapter, "each open gets its own NDK_ADAPTER");
    assert_eq!(read_header(other).ObjectType, NdkObjectTypeAdapter);
    // The second adapter's objects.
    let mut pd2 = std::ptr::null_mut();
    let f = adapter_table(other).NdkCreatePd.unwrap();
    // SAFETY: our adapter and a valid out-pointer.
    let st = unsafe { f(other, Some(create_cb), std::ptr::null_mut(), &raw mut pd2) };
    assert_eq!(st, STATUS_SUCCESS);
    let notify2 = Recorder::new();
    let mut cq2 = std::ptr::null_mut();
    let f = adapter_table(other).NdkCreateCq.unwrap();
    // SAFETY: our adapter and a valid out-pointer.
    let st = unsafe {
        f(
            other,
            16,
            Some(cq_cb),
            notify2.ctx(),
            std::ptr::null_mut(),
            Some(create_cb),
            std::ptr::null_mut(),
            &raw mut cq2,
        )
    };
    assert_eq!(st, STATUS_SUCCESS);
    let qp2 = create_qp(pd2, cq2, cq2, 0xA2, 8, 8, 1, 1, 0).expect("a QP of the second adapter");
    let events = Recorder::new();
    let mut listener = std::ptr::null_mut();
    let f = adapter_table(other).NdkCreateListener.unwrap();
    // SAFETY: our adapter and a valid out-pointer.
    let st = unsafe {
        f(
            other,
            Some(connect_cb),
            events.ctx(),
            Some(create_cb),
            std::ptr::null_mut(),
            &raw mut listener,
        )
    };
    assert_eq!(st, STATUS_SUCCESS);
    // The first adapter connects to the second's listener at the shared
    // device's address: one device behind both.
    let port = fresh_port();
    assert_eq!(listen(listener, &env.addr(port)), STATUS_SUCCESS);
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 8, 1, 0);
    let active = env.create_connector();
    let connected = Recorder::new();
    assert_eq!(
        connect(active, s.qp, &env.addr(0), &env.addr(port), b"hi", connected),
        STATUS_PENDING
    );
    env.pump(|| events.count() >= 1);
    assert_eq!(events.count(), 1, "the second adapter's listener got the request");
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    let (accepted, pdisc, adisc) = (Recorder::new(), Recorder::new(), Recorder::new());
    assert_eq!(accept(passive, qp2, b"ok", pdisc, accepted), STATUS_PENDING);
    env.pump(|| connected.count() >= 1);
    assert_eq!(connected.statuses(), vec![STATUS_SUCCESS]);
    assert_eq!(complete_connect(active, adisc), STATUS_SUCCESS);
    env.pump(|| accepted.count() >= 1);
    assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS]);
    // Data crosses from one adapter's QP to the other's.
    let scratch2 = Scratch::new(pd2);
    assert_eq!(receive(qp2, 0x2, &[scratch2.sge(0, 64)]), STATUS_SUCCESS);
    s.scratch.fill(0, b"across adapters");
    assert_eq!(send(s.qp, 0x1, &[s.sg(0, 15)], 0), STATUS_SUCCESS);
    if env.is_scripted() {
        let dev = env.dev();
        dev.complete_next_send(s.qpn, CqeStatus::Success);
        let qpn2 = env.qpn_of(0xA2);
        dev.complete_next_recv(qpn2, CqeStatus::Success, 15, 0);
    }
    let r = env.results_ex(cq2, 1);
    assert_eq!((r[0].RequestContext as usize, r[0].Status, r[0].BytesTransferred), (0x2, STATUS_SUCCESS, 15));
    assert_eq!(r[0].QPContext as usize, 0xA2);
    if !env.is_scripted() {
        assert_eq!(scratch2.bytes(0, 15), b"across adapters");
    }
    assert_eq!(env.results_ex(s.cq, 1)[0].Status, STATUS_SUCCESS);
    close_now(active);
    close_now(passive);
    close_now(listener);
    close_now(qp2);
    close_now(cq2);
    close_now(pd2);
    // Closing the second adapter leaves the first working.
    assert_eq!(env.close_adapter(other), STATUS_SUCCESS);
    let pd = env.create_pd();
    close_now(pd);
    close_now(s.qp);
    close_now(s.cq);
    close_now(s.pd);
    env.finish();
}

}

// ---------------------------------------------------------------- scripted only

crate::host_only! {
    #[test]
    fn every_initiator_post_encodes_silent_fence_and_solicit() {
        let env = Env::new();
        let pair = env.connected_pair(64, 1, 0);
        let s = pair.active_qp;
        let mut pages = Pages::new(1);
        let (posts, _mdl) = Posts::on(&pair, &mut pages);
        let silent = NDK_OP_FLAG_SILENT_SUCCESS;
        let fence = NDK_OP_FLAG_READ_FENCE;
        let solicit = NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT;
        let mut ctx = 0x100;
        for kind in Posts::KINDS {
            let mut combos = vec![0, silent, fence, silent | fence];
            if kind.starts_with("send") {
                combos.extend([solicit, solicit | silent | fence]);
            }
            for flags in combos {
                ctx += 1;
                assert_eq!(
                    posts.post(kind, ctx, flags),
                    STATUS_SUCCESS,
                    "{kind} {flags:#x}"
                );
                let wqe = *env.dev().sq_pending(s.qpn).last().unwrap();
                assert_eq!(
                    (wqe.op(), wqe.wr_id as usize),
                    (Some(Posts::opcode(kind)), ctx)
                );
                let got = wqe.wqe_flags();
                assert_eq!(
                    got.contains(WqeFlags::SIGNALED),
                    flags & silent == 0,
                    "{kind} {flags:#x}"
                );
                assert_eq!(
                    got.contains(WqeFlags::READ_FENCE),
                    flags & fence != 0,
                    "{kind} {flags:#x}"
                );
                assert_eq!(
                    got.contains(WqeFlags::SOLICITED),
                    flags & solicit != 0,
                    "{kind} {flags:#x}"
                );
                // Completed successfully: a result exactly when signaled, with
                // the request's context and the QP's.
                env.dev().complete_next_send(s.qpn, CqeStatus::Success);
                let res = results(s.cq, 4);
                if flags & silent == 0 {
                    assert_eq!(res.len(), 1, "{kind} {flags:#x}");
                    assert_eq!(
                        (res[0].RequestContext as usize, res[0].QPContext as usize),
                        (ctx, s.context)
                    );
                    assert_eq!(res[0].Status, STATUS_SUCCESS);
                } else {
                    assert!(res.is_empty(), "{kind} {flags:#x}: silent success");
                }
            }
        }
        // A silent request that fails still completes, with its context and
        // the failure, whatever its kind.
        for kind in Posts::KINDS {
            ctx += 1;
            assert_eq!(posts.post(kind, ctx, silent), STATUS_SUCCESS, "{kind}");
            env.dev()
                .complete_next_send(s.qpn, CqeStatus::MemoryManagement);
            let res = results_ex(s.cq, 4);
            assert_eq!(res.len(), 1, "{kind}: a failed silent request completes");
            assert_eq!(
                (res[0].RequestContext as usize, res[0].Status),
                (ctx, STATUS_ACCESS_VIOLATION),
                "{kind}"
            );
        }
        posts.close();
        pair.close();
        env.finish();
    }
}

crate::host_only! {
    #[test]
    fn every_post_runs_at_dispatch_level_without_a_pool_charge() {
        let env = Env::new();
        let pair = env.connected_pair(64, 1, 64);
        let s = pair.active_qp;
        let mut pages = Pages::new(1);
        let (p, _mdl) = Posts::on(&pair, &mut pages);
        let srq = try_create_srq(s.pd, 8, 1, 0, None).unwrap();
        let charges = env.platform.charges();
        let flag_sets = [
            0,
            NDK_OP_FLAG_DEFER,
            NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE,
        ];
        let st: Vec<(String, NTSTATUS)> = env.at_dispatch(|| {
            let mut st = Vec::new();
            let mut ctx = 0;
            for flags in flag_sets {
                for kind in Posts::KINDS {
                    ctx += 1;
                    st.push((format!("{kind} {flags:#x}"), p.post(kind, ctx, flags)));
                }
            }
            st.push(("receive".into(), receive(s.qp, 0x500, &p.sg)));
            st.push(("srq receive".into(), srq_receive(srq, 0x501, &p.sg)));
            st.push((
                "inline send".into(),
                send(s.qp, 0x502, &p.sg, NDK_OP_FLAG_INLINE),
            ));
            st
        });
        // (The pushes into `st` above are the test's own; the provider's
        // charges are counted by the platform.)
        for (what, status) in &st {
            assert_eq!(*status, STATUS_SUCCESS, "{what} at DISPATCH_LEVEL");
        }
        let queued = flag_sets.len() * Posts::KINDS.len() + 1;
        assert_eq!(env.dev().sq_pending(s.qpn).len(), queued);
        // Completion processing, polling, arming and flushing at DISPATCH too.
        let (done, flushed) = env.at_dispatch(|| {
            for _ in 0..10 {
                env.dev().complete_next_send(s.qpn, CqeStatus::Success);
            }
            let done = results(s.cq, 64);
            arm(s.cq, NDK_CQ_NOTIFY_ANY);
            flush(s.qp);
            (done, results_ex(s.cq, 64))
        });
        assert_eq!(
            env.platform.charges(),
            charges,
            "posting, completing, polling, arming and flushing charge no pool"
        );
        // The first ten requests (flags 0, then two DEFER ones) were signaled.
        assert_eq!(done.len(), 10);
        assert!(done.iter().all(|r| r.Status == STATUS_SUCCESS));
        // The flush cancelled the other fifteen sends (silent ones too) and
        // the receive.
        assert_eq!(flushed.len(), queued - 10 + 1, "{flushed:?}");
        assert!(flushed.iter().all(|r| r.Status == STATUS_CANCELLED));
        assert!(flushed.iter().any(|r| r.RequestContext as usize == 0x500));
        // The device's interrupt for the flushed entries.
        env.dev().deliver_events();
        assert_eq!(pair.notify.count(), 1, "the armed CQ was notified once");
        p.close();
        close_now(srq);
        pair.close();
        // No checked-platform rule broken (paged pool, waits or lock misuse at
        // DISPATCH_LEVEL): `finish` asserts it.
        env.finish();
    }
}

crate::host_only! {
    #[test]
    fn concurrent_posts_on_one_qp_lose_nothing() {
        const THREADS: u64 = 4;
        const EACH: u64 = 200;
        const RECEIVES: usize = 32;
        let env = Env::new();
        let pair = env.connected_pair(1024, 1, 0);
        let s = pair.active_qp;
        let qp = s.qp as usize;
        let (va, token) = (s.scratch.logical, s.scratch.token);
        let platform = env.platform;
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                scope.spawn(move || {
                    let sg = [sge(va, 8, token)];
                    for i in 0..EACH {
                        let ctx = ((t << 32) | i) as usize;
                        let flags = if i % 3 == 0 { NDK_OP_FLAG_DEFER } else { 0 };
                        let st = platform.at_dispatch(|| send(qp as *mut NDK_QP, ctx, &sg, flags));
                        assert_eq!(st, STATUS_SUCCESS);
                    }
                    // End the thread's chain without DEFER.
                    let ctx = ((t << 32) | EACH) as usize;
                    assert_eq!(
                        platform.at_dispatch(|| send(qp as *mut NDK_QP, ctx, &sg, 0)),
                        STATUS_SUCCESS
                    );
                });
            }
            // Receives on the same QP meanwhile (the RQ has its own lock).
            scope.spawn(move || {
                let sg = [sge(va + 4096, 8, token)];
                for i in 0..RECEIVES {
                    let st = platform.at_dispatch(|| receive(qp as *mut NDK_QP, 0x9000 + i, &sg));
                    assert_eq!(st, STATUS_SUCCESS);
                }
            });
        });
        let w = env.dev().sq_pending(s.qpn);
        assert_eq!(
            w.len() as u64,
            THREADS * (EACH + 1),
            "every accepted post is queued"
        );
        for t in 0..THREADS {
            let mine: Vec<u64> = w
                .iter()
                .filter(|x| x.wr_id >> 32 == t)
                .map(|x| x.wr_id & 0xffff_ffff)
                .collect();
            assert_eq!(
                mine,
                (0..=EACH).collect::<Vec<_>>(),
                "thread {t}: each once, in its order"
            );
        }
        assert!(
            w.iter()
                .all(|x| x.op() == Some(SendOpcode::Send) && x.total_len == 8)
        );
        assert_eq!(env.dev().rq_pending(s.qpn).len(), RECEIVES);
        // Everything completes exactly once (polled in CQ-sized batches).
        let mut seen = std::collections::HashSet::new();
        loop {
            let mut n = 0;
            while n < 32
                && env
                    .dev()
                    .complete_next_send(s.qpn, CqeStatus::Success)
                    .is_some()
            {
                n += 1;
            }
            for r in results(s.cq, 64) {
                assert_eq!(r.Status, STATUS_SUCCESS);
                assert!(seen.insert(r.RequestContext as usize), "completed twice");
            }
            if n == 0 {
                break;
            }
        }
        assert_eq!(seen.len() as u64, THREADS * (EACH + 1));
        pair.close();
        env.finish();
    }
}

crate::host_only! {
    #[test]
    #[allow(clippy::too_many_lines)] // one list of every refusal
    fn bad_handles_and_lists_are_refused_by_every_post() {
        let env = Env::new();
        let pair = env.connected_pair(16, 1, 0);
        let s = pair.active_qp;
        let srq = try_create_srq(s.pd, 4, 1, 0, None).unwrap();
        let fr = create_mr(s.pd, true);
        assert_eq!(init_fast_register(fr, 1, true), STATUS_SUCCESS);
        let buf = [0u8; 64];
        let (mr, _mdl) = registered_mr(s.pd, &buf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        let mw = create_mw(s.pd);
        let t = qp_table(s.qp);
        let sg = [s.sg(0, 8)];
        let null = std::ptr::null_mut::<std::ffi::c_void>();
        // A CQ where a QP belongs, and no object at all.
        for (what, qp) in [
            ("null", std::ptr::null_mut::<NDK_QP>()),
            ("a CQ", s.cq.cast::<NDK_QP>()),
        ] {
            let st = [
                // SAFETY: the provider checks the object's header before using
                // it; the list is valid.
                unsafe { t.NdkSend.unwrap()(qp, null, sg.as_ptr(), 1, 0) },
                // SAFETY: the provider checks `qp`'s header (null or a CQ is
                // refused) before using it; `sg` is a valid one-entry list.
                unsafe { t.NdkSendAndInvalidate.unwrap()(qp, null, sg.as_ptr(), 1, 0, 1) },
                // SAFETY: the provider checks `qp`'s header (null or a CQ is
                // refused) before using it; `sg` is a valid one-entry list.
                unsafe { t.NdkWrite.unwrap()(qp, null, sg.as_ptr(), 1, 0, 1, 0) },
                // SAFETY: the provider checks `qp`'s header (null or a CQ is
                // refused) before using it; `sg` is a valid one-entry list.
                unsafe { t.NdkRead.unwrap()(qp, null, sg.as_ptr(), 1, 0, 1, 0) },
                // SAFETY: the provider checks `qp`'s header (null or a CQ is
                // refused) before using it; `sg` is a valid one-entry list.
                unsafe { t.NdkReceive.unwrap()(qp, null, sg.as_ptr(), 1) },
                // SAFETY: the provider checks `qp`'s header (null or a CQ is
                // refused) before using it; `fr` is our MR; no pages.
                unsafe { t.NdkFastRegister.unwrap()(qp, null, fr, 0, std::ptr::null(), 0, 0, null, 0) },
                // SAFETY: the provider checks `qp`'s header (null or a CQ is
                // refused) before using it; `mr` and `mw` are our live objects.
                unsafe { t.NdkBind.unwrap()(qp, null, mr, mw, null, 0, 0) },
                // SAFETY: the provider checks `qp`'s header (null or a CQ is
                // refused) before using it; `fr`'s header is our live MR's.
                unsafe { t.NdkInvalidate.unwrap()(qp, null, header(fr), 0) },
            ];
            for (i, st) in st.iter().enumerate() {
                assert_eq!(*st, STATUS_INVALID_HANDLE, "post {i} on {what}");
            }
            // SAFETY: the provider checks `qp`'s header (null or a CQ is
            // refused) before using it.
            unsafe { t.NdkFlush.unwrap()(qp) };
            let srq_t = srq_table(srq);
            // SAFETY: the provider checks the header of `qp.cast()` (null, or a
            // CQ where an SRQ belongs, is refused); `sg` is a valid list.
            let st = unsafe { srq_t.NdkSrqReceive.unwrap()(qp.cast(), null, sg.as_ptr(), 1) };
            assert_eq!(st, STATUS_INVALID_HANDLE, "srq receive on {what}");
        }
        // Objects of the wrong kind, or none, as the request's target.
        let pages = [0x10_0000 as NDK_LOGICAL_ADDRESS];
        let wrong_mr = [
            std::ptr::null_mut(),
            mw.cast::<NDK_MR>(),
            s.cq.cast::<NDK_MR>(),
        ];
        for m in wrong_mr {
            assert_eq!(
                fast_register(s.qp, 1, m, &pages, 0, 4096, 0x10_0000, 0),
                STATUS_INVALID_PARAMETER
            );
            assert_eq!(
                bind(s.qp, 1, m, mw, buf.as_ptr() as u64, 8, 0),
                STATUS_INVALID_PARAMETER
            );
        }
        for w in [
            std::ptr::null_mut(),
            mr.cast::<NDK_MW>(),
            s.cq.cast::<NDK_MW>(),
        ] {
            assert_eq!(
                bind(s.qp, 1, mr, w, buf.as_ptr() as u64, 8, 0),
                STATUS_INVALID_PARAMETER
            );
        }
        for o in [
            std::ptr::null_mut(),
            header(s.cq),
            header(s.qp),
            header(s.pd),
        ] {
            assert_eq!(invalidate(s.qp, 1, o, 0), STATUS_INVALID_PARAMETER);
        }
        // A null list with a count, and a null page list with a count.
        let st = [
            // SAFETY: our QP; the provider refuses a null array with a
            // non-zero count without reading it.
            unsafe { t.NdkSend.unwrap()(s.qp, null, std::ptr::null(), 1, 0) },
            // SAFETY: our connected QP; the provider refuses a null array
            // with a non-zero count without reading it.
            unsafe { t.NdkSendAndInvalidate.unwrap()(s.qp, null, std::ptr::null(), 1, 0, 1) },
            // SAFETY: our connected QP; the provider refuses a null array
            // with a non-zero count without reading it.
            unsafe { t.NdkWrite.unwrap()(s.qp, null, std::ptr::null(), 1, 0, 1, 0) },
            // SAFETY: our connected QP; the provider refuses a null array
            // with a non-zero count without reading it.
            unsafe { t.NdkRead.unwrap()(s.qp, null, std::ptr::null(), 1, 0, 1, 0) },
            // SAFETY: our connected QP; the provider refuses a null array
            // with a non-zero count without reading it.
            unsafe { t.NdkReceive.unwrap()(s.qp, null, std::ptr::null(), 1) },
            // SAFETY: our SRQ; the provider refuses a null array with a
            // non-zero count without reading it.
            unsafe { srq_table(srq).NdkSrqReceive.unwrap()(srq, null, std::ptr::null(), 1) },
            // SAFETY: our QP and MR; a null page array with a count.
            unsafe {
                t.NdkFastRegister.unwrap()(
                    s.qp,
                    null,
                    fr,
                    1,
                    std::ptr::null(),
                    0,
                    4096,
                    0x10_0000 as PVOID,
                    0,
                )
            },
        ];
        for (i, st) in st.iter().enumerate() {
            assert_eq!(*st, STATUS_INVALID_PARAMETER, "null list {i}");
        }
        // One SGE longer than MaxTransferLength, on each receive path.
        let long = [sge(
            s.scratch.logical,
            env.info().MaxTransferLength + 1,
            s.scratch.token,
        )];
        assert_eq!(srq_receive(srq, 1, &long), STATUS_INVALID_PARAMETER);
        assert_eq!(receive(s.qp, 1, &long), STATUS_INVALID_PARAMETER);
        // A null list with no entries is an empty request.
        // SAFETY: our QP; nothing to read.
        let st = unsafe { t.NdkSend.unwrap()(s.qp, 0x5 as PVOID, std::ptr::null(), 0, 0) };
        assert_eq!(st, STATUS_SUCCESS);
        let w = env.dev().sq_pending(s.qpn);
        assert_eq!(w.len(), 1, "only the empty SEND was queued");
        assert_eq!((w[0].wr_id, w[0].sge_count, w[0].total_len), (5, 0, 0));
        assert!(env.dev().rq_pending(s.qpn).is_empty());
        assert!(
            env.dev()
                .srq_pending(*env.dev().srqns().last().unwrap())
                .is_empty()
        );
        for o in [header(mw), header(mr), header(fr), header(srq)] {
            close_now(o);
        }
        pair.close();
        env.finish();
    }
}

crate::host_only! {
    #[test]
    fn adapter_close_returns_only_after_a_running_callback_returned() {
        let env = Env::new();
        let notify = Recorder::new();
        let cq = env.create_cq(8, notify);
        let cqn = *env.dev().cqns().last().unwrap();
        let entered = Arc::new(AtomicBool::new(false));
        let returned = Arc::new(AtomicBool::new(false));
        let (release, wait) = mpsc::channel::<()>();
        let wait = Mutex::new(wait);
        {
            let (entered, returned) = (entered.clone(), returned.clone());
            notify.set_hook(move |_| {
                entered.store(true, SeqCst);
                wait.lock().unwrap().recv().unwrap();
                returned.store(true, SeqCst);
            });
        }
        arm(cq, NDK_CQ_NOTIFY_ANY);
        let cq_closed = Recorder::new();
        let adapter = env.adapter as usize;
        let close_order = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|scope| {
            // The device's completion interrupt, on its own processor: the
            // consumer's notification runs there, and blocks.
            let dev = env.dev().clone();
            let interrupt = scope.spawn(move || {
                dev.push_cqe(cqn, hwq::Cqe::default(), false);
            });
            wait_until("the notification to start", || entered.load(SeqCst));
            // The consumer closes the CQ (it pends: its callback runs), then
            // the adapter.
            assert_eq!(close(cq, cq_closed), STATUS_PENDING);
            let (returned2, order) = (returned.clone(), close_order.clone());
            let closed = &cq_closed;
            let closer = scope.spawn(move || {
                // SAFETY: our adapter, closed once; its last child is closing.
                let st = unsafe { provider::close_adapter(adapter as *mut NDK_ADAPTER) };
                assert_eq!(st, STATUS_SUCCESS);
                assert!(
                    returned2.load(SeqCst),
                    "adapter close returned while a callback ran"
                );
                assert_eq!(
                    closed.count(),
                    1,
                    "adapter close returned before the CQ's close completion"
                );
                order.store(1, SeqCst);
            });
            // Give the close every chance to return early (a negative check:
            // it must still be waiting).
            std::thread::sleep(SETTLE);
            assert!(
                !closer.is_finished(),
                "adapter close did not wait for the callback"
            );
            release.send(()).unwrap();
            interrupt.join().unwrap();
            closer.join().unwrap();
        });
        assert_eq!(close_order.load(SeqCst), 1);
        assert_eq!(notify.count(), 1);
        env.finish_closed();
    }
}

backend_tests! {

fn posts_after_a_flush_or_a_qp_error_still_complete(b: Backend) {
    let env = Env::on(b);
    // After a QP error (a WRITE with a token the peer does not know), and
    // after NdkFlush on a healthy connection: new work still completes
    // (as CANCELLED, the device having flushed the QP), so a consumer
    // tearing down never waits forever.
    for after_error in [true, false] {
        let pair = env.connected_pair(8, 1, 0);
        let s = pair.active_qp;
        if after_error {
            let target = pair.remote();
            let sg = [s.sg(0, 8)];
            assert_eq!(write(s.qp, 1, &sg, target.va, target.token ^ 0x100, 0), STATUS_SUCCESS);
            if env.is_scripted() {
                env.dev().complete_next_send(s.qpn, CqeStatus::RemoteAccess);
            }
            assert_eq!(outcome(&env.results_ex(s.cq, 1)), vec![(1, STATUS_REMOTE_RESOURCES)]);
        } else {
            flush(s.qp);
            env.settle();
            assert!(results(s.cq, 4).is_empty(), "nothing was posted");
        }
        assert_eq!(send(s.qp, 2, &[s.sg(0, 8)], 0), STATUS_SUCCESS);
        assert_eq!(receive(s.qp, 3, &[s.sg(64, 8)]), STATUS_SUCCESS);
        if env.is_scripted() {
            // The scripted device flushes when told.
            env.dev().fail_qp(s.qpn);
        }
        let mut r = outcome(&env.results_ex(s.cq, 2));
        r.sort_unstable();
        assert_eq!(r, vec![(2, STATUS_CANCELLED), (3, STATUS_CANCELLED)], "after_error {after_error}");
        pair.close();
    }
    env.finish();
}

}

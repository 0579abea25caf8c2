//! The race between a replayed RDMA READ and the invalidation of the key
//! it reads (seen in `ndkperf smbd` WRITE runs): the server READs the
//! client's fast-registered buffer, then SEND-with-invalidates that key; a
//! duplicate READ request (a go-back-N resend or a network duplicate) that
//! reaches the client around the invalidation must not tear the
//! connection down. A refusal that does matter (the key vanished under a
//! READ the requester still waits for) must reach the requester as a
//! remote access error, not end in a retry timeout.
//!
//! The tests drive the fabric by hand so the duplicate lands exactly where
//! the race needs it.

use crate::common;
use hwq::Verbs;

use common::*;
use hwq::wqe::{Access, FastRegister, SendOpcode};
use hwq::{CqeOpcode, CqeStatus, MemoryKey, SendOp, SendRequest, SendWqe};
use links::Faults;
use softrnic::qp::QpState;

const REMOTE_READ: Access = Access::LOCAL_WRITE.union(Access::REMOTE_READ);
const PMTU: u32 = 1024;
/// 64 response packets: more than the responder emits in one pass.
const LEN: u32 = 64 * 1024;
/// Offset of the BTH opcode in a datagram (IPv4 20 + UDP 8).
const OPCODE_AT: usize = 28;
const READ_REQUEST: u8 = 0x0C;
const SEND_ONLY_WITH_INVALIDATE: u8 = 0x17;
const MAX_STEPS: u64 = 200_000;

/// What the hand-driven fabric does with one due datagram.
enum Fate {
    Deliver,
    /// Deliver these datagrams to B first, then this one.
    DeliverAfter(Vec<Vec<u8>>),
}

/// One step of [`World::step`] with a hook on every due datagram.
fn step_with(w: &mut World, hook: &mut dyn FnMut(&[u8]) -> Fate) -> bool {
    w.steps += 1;
    let now = w.clock.now();
    let mut worked = false;
    while let Some((dst, bytes)) = w.fabric.take_due(now) {
        worked = true;
        let node = if dst == ADDR_A { &w.a } else { &w.b };
        if let Fate::DeliverAfter(first) = hook(&bytes) {
            for d in &first {
                w.b.receive(d);
            }
        }
        node.receive(&bytes);
    }
    worked |= w.a.poll();
    worked |= w.b.poll();
    worked || advance_to_next_event(&w.clock, &w.fabric, [&w.a, &w.b])
}

fn run_with(
    w: &mut World,
    hook: &mut dyn FnMut(&[u8]) -> Fate,
    mut done: impl FnMut(&mut World) -> bool,
) {
    for _ in 0..MAX_STEPS {
        if done(w) {
            return;
        }
        if !step_with(w, hook) {
            assert!(done(w), "nothing left to happen and not done");
            return;
        }
    }
    panic!("not done within {MAX_STEPS} steps");
}

fn opcode(d: &[u8]) -> u8 {
    d.get(OPCODE_AT).copied().unwrap_or(0xFF)
}

/// Records every READ request datagram, delivers everything.
fn recorder(store: &mut Vec<Vec<u8>>) -> impl FnMut(&[u8]) -> Fate + '_ {
    move |d| {
        if opcode(d) == READ_REQUEST {
            store.push(d.to_vec());
        }
        Fate::Deliver
    }
}

/// A signaled fast-register of `LEN` bytes at `va`, `pages` pages listed at
/// `list`, granting [`REMOTE_READ`].
fn fast_register(wr_id: u64, key: MemoryKey, pages: u64, list: u64, va: u64) -> SendWqe {
    SendWqe::from(SendRequest {
        wr_id,
        signaled: true,
        read_fence: false,
        op: SendOp::FastRegister(FastRegister {
            key,
            access: REMOTE_READ,
            va,
            length: u64::from(LEN),
            fbo: 0,
            page_count: pages as u32,
            page_list: list,
        }),
    })
}

fn page_list(node: &Node, pages: &[u64]) -> u64 {
    let at = node.mem.alloc(pages.len() as u64 * 8);
    let bytes: Vec<u8> = pages.iter().flat_map(|p| p.to_le_bytes()).collect();
    node.mem.fill(at, &bytes);
    at
}

struct Bench {
    w: World,
    /// The server (requester of the READ).
    qa: Qp,
    /// The client (owner of the fast-registered buffer).
    qb: Qp,
    remote: Buf,
    sink: Buf,
    data: Vec<u8>,
}

/// Connects A and B; B fast-registers `LEN` bytes of pattern data for
/// remote read (the SMB Direct client's buffer descriptor).
fn bench() -> Bench {
    let w = World::new(
        Faults {
            delay_us: 5,
            ..Faults::default()
        },
        4096,
        8 << 20,
    );
    let qa = w.a.qp(32);
    let mut qb = w.b.qp(32);
    w.connect(&qa, &qb, PMTU, 0x00FF_FF00, 0x10, 4);
    let entry = w.b.dev.alloc_key(w.b.pd, false).unwrap();
    let pages = u64::from(LEN) / PAGE;
    w.b.dev
        .init_fast_register(entry, pages as u32, true)
        .unwrap();
    let backing = w.b.mem.alloc(u64::from(LEN));
    let data = pattern(41, LEN as usize);
    w.b.mem.fill(backing, &data);
    let key: MemoryKey = entry.next_variant();
    let list: Vec<u64> = (0..pages).map(|i| backing + i * PAGE).collect();
    let va = 0x6600_0000_0000;
    let fr = fast_register(900, key, pages, page_list(&w.b, &list), va);
    w.b.post_send(&mut qb, fr);
    let sink = w.a.register(u64::from(LEN), Access::LOCAL_WRITE);
    let mut b = Bench {
        w,
        qa,
        qb,
        remote: Buf {
            logical: backing,
            va,
            len: u64::from(LEN),
            key,
        },
        sink,
        data,
    };
    let qb = &mut b.qb;
    b.w.run_until(MAX_STEPS, |_| {
        qb.scq.drain();
        !qb.scq.seen.is_empty()
    });
    assert_eq!(statuses(&b.qb.scq.seen), [(900, CqeStatus::Success)]);
    b
}

impl Bench {
    /// A READs the whole buffer; returns the READ request datagrams seen.
    fn read_all(&mut self, wr_id: u64) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        let read = rdma(
            SendOpcode::Read,
            wr_id,
            &[self.sink.sge(0, LEN)],
            &self.remote,
            0,
        );
        self.w.a.post_send(&mut self.qa, read);
        let qa = &mut self.qa;
        let n = qa.scq.seen.len() + 1;
        run_with(&mut self.w, &mut recorder(&mut seen), |_| {
            qa.scq.drain();
            qa.scq.seen.len() >= n
        });
        assert_eq!(
            statuses(&self.qa.scq.seen[n - 1..]),
            [(wr_id, CqeStatus::Success)]
        );
        assert!(self.w.a.mem.get(self.sink.logical, LEN as usize) == self.data);
        assert!(!seen.is_empty());
        seen
    }

    /// A SEND-with-invalidates B's key (the SMB2 WRITE response), with
    /// `hook` on the fabric; waits for both completions.
    fn send_invalidate(&mut self, wr_id: u64, hook: &mut dyn FnMut(&[u8]) -> Fate) {
        let rbuf = self.w.b.register(4096, Access::LOCAL_WRITE);
        self.w
            .b
            .post_recv(&mut self.qb, wr_id, &[rbuf.sge(0, 4096)]);
        let mut inv = wqe(SendOpcode::SendInvalidate, wr_id, &[self.sink.sge(0, 100)]);
        inv.key = self.remote.key.0;
        self.w.a.post_send(&mut self.qa, inv);
        let (qa, qb) = (&mut self.qa, &mut self.qb);
        let (na, nb) = (qa.scq.seen.len() + 1, qb.rcq.seen.len() + 1);
        run_with(&mut self.w, hook, |_| {
            qa.scq.drain();
            qb.rcq.drain();
            qa.scq.seen.len() >= na && qb.rcq.seen.len() >= nb
        });
        assert_eq!(
            statuses(&self.qa.scq.seen[na - 1..]),
            [(wr_id, CqeStatus::Success)]
        );
        let r = self.qb.rcq.seen[nb - 1];
        assert_eq!(
            (r.wr_id, r.op(), r.cqe_status(), r.invalidated_key),
            (
                wr_id,
                Some(CqeOpcode::ReceiveInvalidate),
                CqeStatus::Success,
                self.remote.key.0
            )
        );
    }

    /// The connection still carries traffic both ways.
    fn still_works(&mut self, wr_id: u64) {
        let src = self.w.a.register(8192, Access::LOCAL_WRITE);
        let dst = self.w.b.register(8192, Access::LOCAL_WRITE);
        let msg = pattern(wr_id, 5000);
        self.w.a.mem.fill(src.logical, &msg);
        self.w.b.post_recv(&mut self.qb, wr_id, &[dst.sge(0, 8192)]);
        self.w.a.post_send(
            &mut self.qa,
            wqe(SendOpcode::Send, wr_id, &[src.sge(0, 5000)]),
        );
        let (qa, qb) = (&mut self.qa, &mut self.qb);
        let (na, nb) = (qa.scq.seen.len() + 1, qb.rcq.seen.len() + 1);
        self.w.run_until(MAX_STEPS, |_| {
            qa.scq.drain();
            qb.rcq.drain();
            qa.scq.seen.len() >= na && qb.rcq.seen.len() >= nb
        });
        assert_eq!(
            statuses(&self.qa.scq.seen[na - 1..]),
            [(wr_id, CqeStatus::Success)]
        );
        assert_eq!(
            statuses(&self.qb.rcq.seen[nb - 1..]),
            [(wr_id, CqeStatus::Success)]
        );
        assert!(self.w.b.mem.get(dst.logical, 5000) == msg);
        assert_eq!(
            (self.w.a.state(&self.qa), self.w.b.state(&self.qb)),
            (QpState::Connected, QpState::Connected)
        );
    }
}

/// A stale duplicate of the READ request reaches the client after the
/// server's SEND with invalidate: the client must not kill the QP, and
/// the server ignores whatever answer it gets for a completed READ.
#[test]
fn stale_duplicate_read_after_remote_invalidate_is_harmless() {
    let mut b = bench();
    let requests = b.read_all(1);
    b.send_invalidate(2, &mut |_| Fate::Deliver);
    for d in &requests {
        b.w.b.receive(d);
    }
    b.w.settle(MAX_STEPS);
    assert_eq!(
        (b.w.a.state(&b.qa), b.w.b.state(&b.qb)),
        (QpState::Connected, QpState::Connected)
    );
    b.still_works(3);
    // Nothing was read under the dead key; the refusal was sent and the
    // server ignored it (its PSN was long acknowledged).
    let (sa, sb) = (b.w.a.dev.stats(), b.w.b.dev.stats());
    assert_eq!(sb.read_responses_sent, 64);
    assert_eq!(sb.stale_read_refusals, requests.len() as u64);
    assert_eq!(sb.fatal_naks_sent, 0);
    assert_eq!(sa.fatal_naks_received, 0);
}

/// The duplicate READ request arrives just before the SEND with
/// invalidate, so the client is still replaying responses when the key is
/// invalidated: the replay finishes (the READ came first) or stops
/// quietly; the connection survives.
#[test]
fn replay_in_progress_when_the_key_is_invalidated() {
    let mut b = bench();
    let requests = b.read_all(1);
    let mut pending = Some(requests);
    b.send_invalidate(2, &mut |d| {
        if opcode(d) == SEND_ONLY_WITH_INVALIDATE
            && let Some(first) = pending.take()
        {
            return Fate::DeliverAfter(first);
        }
        Fate::Deliver
    });
    assert!(pending.is_none(), "the SEND with invalidate was never seen");
    // The replay was emitted whole before the key died.
    assert_eq!(b.w.b.dev.stats().read_responses_sent, 128);
    b.w.settle(MAX_STEPS);
    assert_eq!(
        (b.w.a.state(&b.qa), b.w.b.state(&b.qb)),
        (QpState::Connected, QpState::Connected)
    );
    b.still_works(3);
}

/// Many rounds of READ + SEND-with-invalidate + re-register under
/// seeded loss, reordering and duplication (the smbd WRITE pattern).
#[test]
fn smbd_write_pattern_under_faults_keeps_the_connection() {
    for seed in 1..=6 {
        let mut b = bench();
        b.w.faults.set_faults(Faults {
            loss: 0.02,
            reorder: 0.02,
            duplicate: 0.02,
            delay_us: 5,
            reorder_window_us: 200,
            seed,
        });
        for round in 0..6u64 {
            let id = 10 + round * 10;
            b.read_all(id);
            b.send_invalidate(id + 1, &mut |_| Fate::Deliver);
            // The client registers the buffer again under the next key.
            let key = b.remote.key.next_variant();
            let pages = u64::from(LEN) / PAGE;
            let list: Vec<u64> = (0..pages).map(|i| b.remote.logical + i * PAGE).collect();
            let fr = fast_register(id + 2, key, pages, page_list(&b.w.b, &list), b.remote.va);
            b.w.b.post_send(&mut b.qb, fr);
            let qb = &mut b.qb;
            let n = qb.scq.seen.len() + 1;
            b.w.run_until(MAX_STEPS, |_| {
                qb.scq.drain();
                qb.scq.seen.len() >= n
            });
            assert_eq!(
                statuses(&b.qb.scq.seen[n - 1..]),
                [(id + 2, CqeStatus::Success)],
                "seed {seed} round {round}"
            );
            b.remote.key = key;
        }
        b.w.faults.set_faults(Faults {
            delay_us: 5,
            ..Faults::default()
        });
        b.still_works(1000);
    }
}

/// The client's consumer deregisters the buffer while the responses of a
/// READ the server still waits for are being sent: the server's READ
/// completes with a remote access error (not a retry timeout) and both
/// QPs go to error.
#[test]
fn key_lost_under_a_live_read_fails_it_with_remote_access() {
    let mut b = bench();
    let remote = b.w.b.register(u64::from(LEN), REMOTE_READ);
    let read = rdma(SendOpcode::Read, 7, &[b.sink.sge(0, LEN)], &remote, 0);
    b.w.a.post_send(&mut b.qa, read);
    // Deliver the READ request by hand, then pull the key before the
    // responder has emitted all 64 responses.
    let mut pulled = false;
    for _ in 0..MAX_STEPS {
        b.w.a.poll();
        let now = b.w.clock.now();
        b.w.clock.set(now + 10);
        if let Some((dst, d)) = b.w.fabric.take_due(now + 10) {
            assert_eq!((dst, opcode(&d)), (ADDR_B.into(), READ_REQUEST));
            b.w.b.receive(&d);
            b.w.b.dev.deregister(remote.key).unwrap();
            pulled = true;
            break;
        }
    }
    assert!(pulled);
    let qa = &mut b.qa;
    b.w.run_until(MAX_STEPS, |_| {
        qa.scq.drain();
        !qa.scq.seen.is_empty()
    });
    assert_eq!(statuses(&b.qa.scq.seen), [(7, CqeStatus::RemoteAccess)]);
    assert!(b.w.b.dev.stats().read_responses_sent < 64);
    b.w.settle(MAX_STEPS);
    assert_eq!(
        (b.w.a.state(&b.qa), b.w.b.state(&b.qb)),
        (QpState::Error, QpState::Error)
    );
    assert_eq!(b.w.a.dev.stats().timeouts, 0);
}

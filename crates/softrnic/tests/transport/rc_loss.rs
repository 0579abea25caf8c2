//! The loss test (an acceptance criterion): on the in-memory fabric with 5%
//! loss, 5% reordering and 5% duplication, 10,000 mixed SEND/WRITE/READ
//! messages of 1 byte to 1 MiB (mostly small, a few large) each complete
//! exactly once, in order, with byte-exact data, within a fixed number of
//! steps, deterministically for a fixed seed.

use crate::common;

use common::*;
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus};
use links::Faults;
use softrnic::qp::QpState;

const MESSAGES: usize = 10_000;
const DEPTH: u32 = 128;
const SLOT: u64 = 64 << 10;
const LARGE: usize = 1 << 20;
const MAX_STEPS: u64 = 3_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Send,
    Write,
    Read,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn plan() -> Vec<(Kind, usize)> {
    let mut rng = Rng(0x5EED_0001);
    (0..MESSAGES)
        .map(|i| {
            let kind = match rng.below(100) {
                0..40 => Kind::Send,
                40..75 => Kind::Write,
                _ => Kind::Read,
            };
            let size = match i {
                2_000 => return (Kind::Send, LARGE),
                4_000 | 8_000 => return (Kind::Write, LARGE),
                6_000 => return (Kind::Read, LARGE),
                _ => match rng.below(1000) {
                    0..700 => 1 + rng.below(256),
                    700..995 => 257 + rng.below(4096 - 256),
                    _ => 4097 + rng.below(SLOT - 4096),
                },
            };
            (kind, size as usize)
        })
        .collect()
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn ten_thousand_messages_under_loss_reorder_and_duplication() {
    let faults = Faults {
        loss: 0.05,
        reorder: 0.05,
        duplicate: 0.05,
        delay_us: 10,
        reorder_window_us: 40,
        seed: 0x00C0_FFEE,
    };
    let mut w = World::new(faults, 1024, 48 << 20);
    let mut qa = w.a.qp(DEPTH);
    let mut qb = w.b.qp(DEPTH);
    w.connect(&qa, &qb, 1024, 0xFF_FF00, 0x00_1234, 8);
    let remote_access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
    let a_slots = w.a.register(SLOT * u64::from(DEPTH), Access::LOCAL_WRITE);
    let a_large = w.a.register(LARGE as u64, Access::LOCAL_WRITE);
    let b_slots = w.b.register(SLOT * u64::from(DEPTH), remote_access);
    let b_recv = w.b.register(SLOT * u64::from(DEPTH), Access::LOCAL_WRITE);
    let b_large = w.b.register(LARGE as u64, remote_access);
    let b_large_recv = w.b.register(LARGE as u64, Access::LOCAL_WRITE);

    let plan = plan();
    let mut posted = 0usize;
    let mut completed = 0usize;
    let mut sends_posted = 0usize;
    // Receives in posting order: (message index, buffer logical address).
    let mut recv_expect = std::collections::VecDeque::new();
    let mut received = 0usize;
    let mut total_bytes = 0usize;
    while completed < MESSAGES {
        while posted < MESSAGES && posted - completed < DEPTH as usize {
            let i = posted;
            let (kind, size) = plan[i];
            total_bytes += size;
            let slot = (i as u64 % u64::from(DEPTH)) * SLOT;
            let large = size == LARGE;
            let data = pattern(i as u64, size);
            let (a_buf, a_off) = if large { (a_large, 0) } else { (a_slots, slot) };
            let (b_buf, b_off) = if large { (b_large, 0) } else { (b_slots, slot) };
            let wqe = match kind {
                Kind::Send => {
                    w.a.mem.fill(a_buf.logical + a_off, &data);
                    let (rb, ro) = if large {
                        (b_large_recv, 0)
                    } else {
                        (b_recv, (sends_posted as u64 % u64::from(DEPTH)) * SLOT)
                    };
                    w.b.post_recv(
                        &mut qb,
                        i as u64,
                        &[rb.sge(ro, rb.len.min(SLOT.max(size as u64)) as u32)],
                    );
                    recv_expect.push_back((i, rb.logical + ro));
                    sends_posted += 1;
                    wqe(SendOpcode::Send, i as u64, &[a_buf.sge(a_off, size as u32)])
                }
                Kind::Write => {
                    w.a.mem.fill(a_buf.logical + a_off, &data);
                    rdma(
                        SendOpcode::Write,
                        i as u64,
                        &[a_buf.sge(a_off, size as u32)],
                        &b_buf,
                        b_off,
                    )
                }
                Kind::Read => {
                    w.b.mem.fill(b_buf.logical + b_off, &data);
                    rdma(
                        SendOpcode::Read,
                        i as u64,
                        &[a_buf.sge(a_off, size as u32)],
                        &b_buf,
                        b_off,
                    )
                }
            };
            w.a.post_send(&mut qa, wqe);
            posted += 1;
        }
        assert!(
            w.steps < MAX_STEPS,
            "stuck: {completed} of {MESSAGES} completed after {} steps",
            w.steps
        );
        assert!(
            w.step(),
            "nothing left to happen with {completed} of {MESSAGES} completed"
        );
        qb.rcq.drain();
        for c in qb.rcq.seen.drain(..) {
            let (i, at) = recv_expect
                .pop_front()
                .expect("a receive completion nobody expected");
            let (_, size) = plan[i];
            assert_eq!(
                (c.wr_id, c.op(), c.cqe_status(), c.byte_len),
                (
                    i as u64,
                    Some(CqeOpcode::Receive),
                    CqeStatus::Success,
                    size as u32
                )
            );
            assert!(
                w.b.mem.get(at, size) == pattern(i as u64, size),
                "SEND {i} ({size} B) corrupted"
            );
            received += 1;
        }
        qa.scq.drain();
        for c in qa.scq.seen.drain(..) {
            let i = completed;
            let (kind, size) = plan[i];
            let op = match kind {
                Kind::Send => CqeOpcode::Send,
                Kind::Write => CqeOpcode::Write,
                Kind::Read => CqeOpcode::Read,
            };
            assert_eq!(
                (c.wr_id, c.op(), c.cqe_status(), c.byte_len),
                (i as u64, Some(op), CqeStatus::Success, size as u32),
                "message {i}"
            );
            let slot = (i as u64 % u64::from(DEPTH)) * SLOT;
            let large = size == LARGE;
            match kind {
                Kind::Write => {
                    let at = if large {
                        b_large.logical
                    } else {
                        b_slots.logical + slot
                    };
                    assert!(
                        w.b.mem.get(at, size) == pattern(i as u64, size),
                        "WRITE {i} ({size} B) corrupted"
                    );
                }
                Kind::Read => {
                    let at = if large {
                        a_large.logical
                    } else {
                        a_slots.logical + slot
                    };
                    assert!(
                        w.a.mem.get(at, size) == pattern(i as u64, size),
                        "READ {i} ({size} B) corrupted"
                    );
                }
                Kind::Send => {}
            }
            completed += 1;
        }
    }
    // Nothing more completes: every request exactly once.
    w.settle(100_000);
    assert_eq!(
        (
            qa.scq.drain(),
            qb.rcq.drain(),
            qa.rcq.drain(),
            qb.scq.drain()
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(received, sends_posted);
    assert!(recv_expect.is_empty());
    assert_eq!(
        (w.a.state(&qa), w.b.state(&qb)),
        (QpState::Connected, QpState::Connected)
    );
    let f = w.faults.stats();
    let (sa, sb) = (w.a.dev.stats(), w.b.dev.stats());
    println!(
        "messages {MESSAGES} ({sends_posted} SEND), {total_bytes} bytes, steps {}, simulated {} us",
        w.steps,
        w.clock.now()
    );
    println!("faults {f:?}, fabric {:?}", w.fabric.stats());
    println!("requester {sa:?}");
    println!("responder {sb:?}");
    assert!(f.lost > 0 && f.duplicated > 0 && f.reordered > 0);
    assert!(sa.retransmitted > 0);
}

/// What a device's capture saw, by direction.
#[derive(Default)]
struct Counted {
    sent: std::sync::atomic::AtomicU64,
    received: std::sync::atomic::AtomicU64,
}

struct CountTap(std::sync::Arc<Counted>);

impl links::Capture for CountTap {
    fn capture(&self, direction: links::Direction, _datagram: &[u8]) {
        let n = match direction {
            links::Direction::Transmit => &self.0.sent,
            links::Direction::Receive => &self.0.received,
        };
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The capture sits inside the device, the faults on the link the
/// runtime gave it: the capture shows every packet the device sent (lost
/// ones included) and exactly the ones it received.
#[test]
fn a_capture_sees_what_leaves_the_device_before_the_link_faults() {
    let mut w = World::new(
        Faults {
            loss: 0.2,
            duplicate: 0.1,
            reorder: 0.1,
            delay_us: 5,
            reorder_window_us: 20,
            seed: 11,
        },
        1024,
        4 << 20,
    );
    let taps: Vec<_> = [&w.a, &w.b]
        .iter()
        .map(|n| {
            let seen = std::sync::Arc::new(Counted::default());
            n.set_capture(Some(Box::new(CountTap(seen.clone()))));
            seen
        })
        .collect();
    let mut qa = w.a.qp(64);
    let mut qb = w.b.qp(64);
    w.connect(&qa, &qb, 1024, 0, 0, 8);
    let src = w.a.register(64 << 10, Access::LOCAL_WRITE);
    let dst = w.b.register(64 << 10, Access::LOCAL_WRITE);
    for i in 0..20u64 {
        w.b.post_recv(&mut qb, i, &[dst.sge(0, 64 << 10)]);
        w.a.post_send(&mut qa, wqe(SendOpcode::Send, i, &[src.sge(0, 5000)]));
    }
    w.run_until(MAX_STEPS, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        qa.scq.seen.len() >= 20 && qb.rcq.seen.len() >= 20
    });
    w.settle(MAX_STEPS);
    assert!(
        qa.scq
            .seen
            .iter()
            .all(|c| c.cqe_status() == CqeStatus::Success)
    );
    let faults = w.faults.stats();
    assert!(faults.lost > 0 && faults.duplicated > 0, "{faults:?}");
    let (sa, sb) = (w.a.dev.stats(), w.b.dev.stats());
    assert!(sa.retransmitted > 0, "losses were repaired: {sa:?}");
    let sent = |i: usize| taps[i].sent.load(std::sync::atomic::Ordering::Relaxed);
    let received = |i: usize| taps[i].received.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!((sent(0), sent(1)), (sa.tx_packets, sb.tx_packets));
    assert_eq!((received(0), received(1)), (sa.rx_packets, sb.rx_packets));
    // What the faults let through is what the devices received.
    assert_eq!(faults.drawn, sa.tx_packets + sb.tx_packets);
    assert_eq!(
        sa.rx_packets + sb.rx_packets,
        faults.drawn - faults.lost + faults.duplicated
    );
}

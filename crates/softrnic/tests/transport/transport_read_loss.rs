//! Large RDMA READs under loss: the requester places responses that arrive
//! past a lost one and asks again only for the hole (a READ request whose
//! RETH starts at the hole's offset and ends where placed data resumes);
//! the responder replays the hole and then goes on with the stream it
//! interrupted. Bounds are on packets, not time: go-back-N resent about
//! half of every READ per loss (2x the responses needed at 1% loss, 5x
//! with 2% reordering on top).

use crate::common;

use common::*;
use hwq::CqeStatus;
use hwq::wqe::{Access, SendOpcode};
use links::Faults;
use softrnic::qp::QpState;

const REMOTE: Access = Access::LOCAL_WRITE.union(Access::REMOTE_READ);
const STEPS: u64 = 2_000_000;
/// Offset of the BTH opcode / PSN in a datagram (IPv4 20 + UDP 8).
const OPCODE_AT: usize = 28;
const PSN_AT: usize = 28 + 9;
const READ_REQUEST: u8 = 0x0C;

/// A reads `count` × `len` bytes from B under `faults`; returns
/// (response packets B sent, responses needed, A's timeouts).
fn reads(faults: Faults, pmtu: u32, len: u32, count: u64) -> (u64, u64, u64) {
    let mut w = World::new(faults, 4096, 32 << 20);
    let mut qa = w.a.qp(64);
    let qb = w.b.qp(64);
    w.connect(&qa, &qb, pmtu, 0x00FF_FFF0, 0x42, 8);
    let remote = w.b.register(u64::from(len), REMOTE);
    let data = pattern(3, len as usize);
    w.b.mem.fill(remote.logical, &data);
    let sink = w.a.register(u64::from(len) * 2, Access::LOCAL_WRITE);
    for i in 0..count {
        // Alternate halves so a stale placement would show.
        let at = (i % 2) * u64::from(len);
        w.a.mem.fill(sink.logical + at, &vec![0; len as usize]);
        w.a.post_send(
            &mut qa,
            rdma(SendOpcode::Read, i, &[sink.sge(at, len)], &remote, 0),
        );
        w.run_until(STEPS, |_| {
            qa.scq.drain();
            qa.scq.seen.len() as u64 > i
        });
        assert_eq!(
            statuses(&qa.scq.seen[i as usize..]),
            [(i, CqeStatus::Success)]
        );
        assert!(
            w.a.mem.get(sink.logical + at, len as usize) == data,
            "READ {i} data"
        );
    }
    assert_eq!(w.a.state(&qa), QpState::Connected);
    let needed = count * u64::from(len.div_ceil(pmtu));
    (
        w.b.dev.stats().read_responses_sent,
        needed,
        w.a.dev.stats().timeouts,
    )
}

/// Without loss every response is sent exactly once.
#[test]
fn clean_reads_send_each_response_once() {
    let (sent, needed, timeouts) = reads(
        Faults {
            delay_us: 5,
            ..Faults::default()
        },
        4096,
        1 << 20,
        4,
    );
    assert_eq!((sent, timeouts), (needed, 0));
}

/// 1 MiB READs under 1% loss: every READ completes with the right data,
/// and little more than the lost responses is sent again.
#[test]
fn lossy_large_reads_resend_little() {
    for seed in 1..=4 {
        let (sent, needed, _) = reads(
            Faults {
                loss: 0.01,
                delay_us: 5,
                seed,
                ..Faults::default()
            },
            4096,
            1 << 20,
            8,
        );
        assert!(
            sent * 100 < needed * 105,
            "seed {seed}: {sent} responses sent for {needed} needed"
        );
    }
}

/// Same with reordering and duplication as well.
#[test]
fn reordered_duplicated_large_reads_complete() {
    for seed in 1..=4 {
        let (sent, needed, _) = reads(
            Faults {
                loss: 0.01,
                reorder: 0.02,
                duplicate: 0.02,
                delay_us: 5,
                reorder_window_us: 100,
                seed,
            },
            1024,
            256 << 10,
            8,
        );
        assert!(
            sent * 100 < needed * 125,
            "seed {seed}: {sent} responses sent for {needed} needed"
        );
    }
}

/// One response lost in the middle of a READ: the requester asks again
/// for exactly that response (PSN and RETH at its offset, one PMTU long),
/// once, and nothing else is sent twice.
#[test]
fn a_lost_response_resumes_at_its_offset() {
    lose_one_response(64 * 1024, 5);
}

/// The same with no link delay and a READ long enough that the request
/// for the hole reaches the responder while it is still sending the
/// READ: it answers the hole, then goes on where it was (no timeout,
/// nothing else sent twice).
#[test]
fn a_hole_request_mid_stream_continues_the_stream() {
    lose_one_response(512 * 1024, 0);
}

fn lose_one_response(len: u64, delay_us: u64) {
    let w = World::new(
        Faults {
            delay_us,
            ..Faults::default()
        },
        4096,
        8 << 20,
    );
    let mut qa = w.a.qp(16);
    let qb = w.b.qp(16);
    let first_psn = 0x0010_0000;
    w.connect(&qa, &qb, 1024, first_psn, 7, 4);
    let remote = w.b.register(len, REMOTE);
    let data = pattern(9, len as usize);
    w.b.mem.fill(remote.logical, &data);
    let sink = w.a.register(len, Access::LOCAL_WRITE);
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Read, 1, &[sink.sge(0, len as u32)], &remote, 0),
    );
    let lost_psn = first_psn + 20;
    let mut requests: Vec<(u32, u64, u32)> = Vec::new();
    let mut dropped = false;
    for _ in 0..STEPS {
        qa.scq.drain();
        if !qa.scq.seen.is_empty() {
            break;
        }
        let now = w.clock.now();
        let mut worked = false;
        while let Some((dst, d)) = w.fabric.take_due(now) {
            worked = true;
            let psn = u32::from_be_bytes([0, d[PSN_AT], d[PSN_AT + 1], d[PSN_AT + 2]]);
            if d[OPCODE_AT] == READ_REQUEST {
                // RETH follows the 12-byte BTH: VA, R_Key, DMA length.
                let reth = &d[40..56];
                let va = u64::from_be_bytes(reth[0..8].try_into().unwrap());
                let dma_len = u32::from_be_bytes(reth[12..16].try_into().unwrap());
                requests.push((psn, va - remote.va, dma_len));
            } else if dst == ADDR_A && psn == lost_psn && !dropped {
                dropped = true;
                continue;
            }
            if dst == ADDR_A {
                w.a.receive(&d);
            } else {
                w.b.receive(&d);
            }
        }
        worked |= w.a.poll();
        worked |= w.b.poll();
        if !worked {
            assert!(
                advance_to_next_event(&w.clock, &w.fabric, [&w.a, &w.b]),
                "stalled"
            );
        }
    }
    assert_eq!(statuses(&qa.scq.seen), [(1, CqeStatus::Success)]);
    assert!(w.a.mem.get(sink.logical, len as usize) == data);
    assert_eq!(
        requests,
        [(first_psn, 0, len as u32), (lost_psn, 20 * 1024, 1024)]
    );
    assert_eq!(w.a.dev.stats().timeouts, 0);
    assert_eq!(w.b.dev.stats().read_responses_sent, len / 1024 + 1);
}

/// Eight 1 MiB READs kept in flight (as an SMB Direct server pipelines
/// them) under 1% loss: a hole found when the oldest missing response
/// arrives is asked for at once, so the retransmit timer is the rare
/// exception (a READ's very last response lost), not the rule.
#[test]
fn pipelined_large_reads_under_loss_rarely_time_out() {
    for seed in 1..=3 {
        let mut w = World::new(
            Faults {
                loss: 0.01,
                delay_us: 5,
                seed,
                ..Faults::default()
            },
            4096,
            64 << 20,
        );
        let mut qa = w.a.qp(64);
        let qb = w.b.qp(64);
        w.connect(&qa, &qb, 4096, 0x00FF_FFF0, 0x42, 16);
        let len = 1u32 << 20;
        let remote = w.b.register(u64::from(len), REMOTE);
        let data = pattern(3, len as usize);
        w.b.mem.fill(remote.logical, &data);
        let sink = w.a.register(u64::from(len) * 8, Access::LOCAL_WRITE);
        let total = 32u64;
        let mut posted = 0u64;
        w.run_until(STEPS * 10, |w| {
            qa.scq.drain();
            while posted < total && posted < qa.scq.seen.len() as u64 + 8 {
                let at = (posted % 8) * u64::from(len);
                w.a.post_send(
                    &mut qa,
                    rdma(SendOpcode::Read, posted, &[sink.sge(at, len)], &remote, 0),
                );
                posted += 1;
            }
            qa.scq.seen.len() as u64 == total
        });
        assert!(
            qa.scq
                .seen
                .iter()
                .all(|c| c.cqe_status() == CqeStatus::Success)
        );
        for slot in 0..8u64 {
            let at = sink.logical + slot * u64::from(len);
            assert!(w.a.mem.get(at, len as usize) == data, "slot {slot}");
        }
        let (a, b) = (w.a.dev.stats(), w.b.dev.stats());
        let needed = total * 256;
        assert!(
            b.read_responses_sent * 100 < needed * 115,
            "seed {seed}: {} responses for {needed}",
            b.read_responses_sent
        );
        assert!(a.timeouts <= 12, "seed {seed}: {} timeouts", a.timeouts);
    }
}

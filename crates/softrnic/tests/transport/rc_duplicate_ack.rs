//! The ACK a duplicate SEND gets after a READ executed (the rping pattern
//! under loss that failed against Linux rxe): the peer's SEND p is placed
//! and its ACK lost, its READ p+1 is answered and the response lost; the
//! peer's timeout resends both (go-back-N). The duplicate SEND must be
//! acknowledged at p, the last SEND or WRITE executed (as rxe's
//! `duplicate_request` does with its `ack_psn`), never at the READ's PSN:
//! rxe's completer (6.1, `rxe_comp.c` `check_psn` → `check_ack` →
//! `COMPST_WRITE_SEND`) completes a pending READ whose last PSN an ACK
//! names, successfully and without its data. rping's server then echoed
//! the previous ping: `data mismatch! (ping 29, first difference at byte
//! 11)`. Every SEND still completes exactly once at each end, and each
//! receive only for a new message.

use crate::common;

use common::*;
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus};
use links::Faults;
use softrnic::qp::QpState;

/// Offsets in a datagram (IPv4 20 + UDP 8): BTH opcode and PSN, and the
/// AETH's syndrome after the 12-byte BTH.
const OPCODE_AT: usize = 28;
const PSN_AT: usize = 28 + 9;
const SYNDROME_AT: usize = 40;
const ACKNOWLEDGE: u8 = 0x11;
const READ_RESPONSE_ONLY: u8 = 0x10;
const STEPS: u64 = 200_000;
const LEN: u32 = 1000;

fn psn_of(d: &[u8]) -> u32 {
    u32::from_be_bytes([0, d[PSN_AT], d[PSN_AT + 1], d[PSN_AT + 2]])
}

/// One ping of rping as its client (B, rsndk) sees the server (A):
/// SEND `first` (B's one receive), READ `first + 1` of B's buffer. The
/// first copy of B's answer to each is dropped; returns the ACKs B sent
/// as (PSN, syndrome), after checking both ends' completions.
fn send_then_read_answers_lost(first: u32) -> Vec<(u32, u8)> {
    let mut w = World::new(
        Faults {
            delay_us: 5,
            ..Faults::default()
        },
        1024,
        1 << 20,
    );
    let mut qa = w.a.qp(16);
    let mut qb = w.b.qp(16);
    w.connect(&qa, &qb, 1024, first, 0x42, 1);
    let control = w.a.register(4096, Access::LOCAL_WRITE);
    let sink = w.a.register(u64::from(LEN), Access::LOCAL_WRITE);
    let recv = w.b.register(4096, Access::LOCAL_WRITE);
    let start = w.b.register(
        u64::from(LEN),
        Access::LOCAL_WRITE.union(Access::REMOTE_READ),
    );
    let ping = pattern(29, LEN as usize);
    w.b.mem.fill(start.logical, &ping);
    w.b.post_recv(&mut qb, 1, &[recv.sge(0, 64)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 10, &[control.sge(0, 16)]));
    w.a.post_send(
        &mut qa,
        rdma(SendOpcode::Read, 11, &[sink.sge(0, LEN)], &start, 0),
    );
    let acks = drop_first_answers(&mut w, &mut qa, &mut qb, first);
    assert!(w.a.dev.stats().timeouts >= 1, "A resent after a timeout");
    let done: Vec<_> = statuses(&qa.scq.seen);
    assert_eq!(done, [(10, CqeStatus::Success), (11, CqeStatus::Success)]);
    assert!(w.a.mem.get(sink.logical, LEN as usize) == ping, "READ data");
    // The duplicate SEND completed no second receive: B's one receive
    // completed once, and a new receive completes only for A's next SEND.
    w.b.post_recv(&mut qb, 2, &[recv.sge(64, 64)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 12, &[control.sge(16, 16)]));
    w.run_until(STEPS, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        qa.scq.seen.len() == 3 && qb.rcq.seen.len() == 2
    });
    w.settle(STEPS);
    qb.rcq.drain();
    let received: Vec<_> = qb
        .rcq
        .seen
        .iter()
        .map(|c| (c.wr_id, c.cqe_status(), c.op()))
        .collect();
    assert_eq!(
        received,
        [
            (1, CqeStatus::Success, Some(CqeOpcode::Receive)),
            (2, CqeStatus::Success, Some(CqeOpcode::Receive)),
        ]
    );
    assert_eq!(w.a.state(&qa), QpState::Connected);
    assert_eq!(w.b.state(&qb), QpState::Connected);
    acks
}

/// Runs until A's SEND and READ completed, dropping the first ACK at
/// `first` and the first READ response at `first + 1` that B sends;
/// returns the ACKs B sent meanwhile as (PSN, syndrome).
fn drop_first_answers(w: &mut World, qa: &mut Qp, qb: &mut Qp, first: u32) -> Vec<(u32, u8)> {
    let read_psn = psn_add(first, 1);
    let (mut ack_dropped, mut response_dropped) = (false, false);
    let mut acks = Vec::new();
    for _ in 0..STEPS {
        qa.scq.drain();
        qb.rcq.drain();
        if qa.scq.seen.len() == 2 {
            break;
        }
        let now = w.clock.now();
        let mut worked = false;
        while let Some((dst, d)) = w.fabric.take_due(now) {
            worked = true;
            if dst != ADDR_A {
                w.b.receive(&d);
                continue;
            }
            let (opcode, psn) = (d[OPCODE_AT], psn_of(&d));
            if opcode == ACKNOWLEDGE {
                acks.push((psn, d[SYNDROME_AT]));
                if psn == first && !ack_dropped {
                    ack_dropped = true;
                    continue;
                }
            }
            if opcode == READ_RESPONSE_ONLY && psn == read_psn && !response_dropped {
                response_dropped = true;
                continue;
            }
            w.a.receive(&d);
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
    assert!(ack_dropped && response_dropped, "the scenario ran");
    acks
}

fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & 0x00FF_FFFF
}

/// The duplicate SEND is acknowledged at its own PSN, not at the READ's
/// that followed it.
#[test]
fn a_duplicate_send_after_a_read_is_acked_below_the_read() {
    let first = 0x00B4_2694;
    let acks = send_then_read_answers_lost(first);
    assert!(
        acks.len() >= 2,
        "the first ACK and the duplicate's: {acks:x?}"
    );
    for (psn, syndrome) in &acks {
        assert!(
            *psn == first && syndrome >> 5 == 0,
            "B acknowledged PSN {psn:#x} (syndrome {syndrome:#x}); the READ is at {:#x} and rxe \
             completes a pending READ an ACK names without its data; every ACK must name the \
             SEND at {first:#x}: {acks:x?}",
            psn_add(first, 1)
        );
    }
}

/// The same across the 24-bit PSN wrap.
#[test]
fn a_duplicate_send_after_a_read_is_acked_below_the_read_across_the_wrap() {
    let first = 0x00FF_FFFF;
    let acks = send_then_read_answers_lost(first);
    assert!(acks.iter().all(|(psn, _)| *psn == first), "{acks:x?}");
}

//! Flushing: every outstanding work request completes with a "flushed"
//! CQE, signaled or not, and the QP stays in error.

use hwq::{Cqe, CqeOpcode, CqeStatus};

use super::{InMessage, Owed, QpState, QueuePair, Receives};

/// Moves `qp` (number `qpn`) to error and hands a flushed CQE for each
/// outstanding send (to `send_cq`) and own receive (to `recv_cq`), oldest
/// first. The callbacks write the CQE into the right CQ.
pub fn flush(
    qp: &mut QueuePair,
    qpn: u32,
    mut send_cq: impl FnMut(Cqe),
    mut recv_cq: impl FnMut(Cqe),
) {
    qp.state = QpState::Error;
    let base = Cqe {
        qp_context: qp.context,
        qpn,
        status: CqeStatus::Flushed as u8,
        ..Cqe::default()
    };
    if let Some(conn) = qp.conn.as_mut() {
        // The transport stops: no timers, no queued responses, nothing more
        // started; a receive taken from an SRQ for a half-received SEND is
        // flushed with the rest.
        conn.timers.disarm_all();
        let req = &mut conn.req;
        req.halted = true;
        req.reads_outstanding = 0;
        let resp = &mut conn.resp;
        resp.owed = Owed::None;
        resp.active_reads = 0;
        resp.reads.iter_mut().for_each(|r| r.active = false);
        resp.msg = InMessage::None;
        let held = resp.recv.take();
        if core::mem::take(&mut resp.recv_from_srq)
            && let Some(wqe) = held
        {
            recv_cq(Cqe {
                wr_id: wqe.wr_id,
                opcode: CqeOpcode::Receive as u8,
                ..base
            });
        }
    }
    qp.sq.refresh();
    let start = qp.sq.released();
    let pending = qp.sq.len();
    for i in 0..pending {
        if let Some(wqe) = qp.sq.read(start.wrapping_add(i)) {
            send_cq(Cqe {
                wr_id: wqe.wr_id,
                opcode: wqe.completion_opcode() as u8,
                ..base
            });
        }
    }
    qp.sq.release(pending);
    if let Receives::Own(rq) = &mut qp.rq {
        rq.refresh();
        let start = rq.released();
        let pending = rq.len();
        for i in 0..pending {
            if let Some(wqe) = rq.read(start.wrapping_add(i)) {
                recv_cq(Cqe {
                    wr_id: wqe.wr_id,
                    opcode: CqeOpcode::Receive as u8,
                    ..base
                });
            }
        }
        rq.release(pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use hwq::ring::ring;
    use hwq::wqe::SendOpcode;
    use hwq::{RecvWqe, SendWqe};

    #[test]
    fn flush_completes_everything_in_order() {
        let (mut sp, sc) = ring::<SendWqe>(4).unwrap();
        let (mut rp, rc) = ring::<RecvWqe>(4).unwrap();
        for id in [10, 11] {
            sp.push(SendWqe {
                wr_id: id,
                opcode: SendOpcode::Read as u8,
                ..SendWqe::default()
            })
            .unwrap();
        }
        sp.publish();
        rp.push(RecvWqe {
            wr_id: 20,
            ..RecvWqe::default()
        })
        .unwrap();
        rp.publish();
        let mut qp = QueuePair::new(1, 2, 3, sc, Receives::Own(rc), 0xC0);
        let (mut sends, mut recvs) = (Vec::new(), Vec::new());
        flush(&mut qp, 7, |c| sends.push(c), |c| recvs.push(c));
        assert_eq!(qp.state, QpState::Error);
        assert_eq!(sends.iter().map(|c| c.wr_id).collect::<Vec<_>>(), [10, 11]);
        assert!(
            sends
                .iter()
                .all(|c| c.cqe_status() == CqeStatus::Flushed && c.op() == Some(CqeOpcode::Read))
        );
        assert!(sends.iter().all(|c| c.qp_context == 0xC0 && c.qpn == 7));
        assert_eq!(recvs.len(), 1);
        assert_eq!(sp.free(), 4, "slots handed back");
        assert_eq!(rp.free(), 4);
    }
}

//! `NdkReceive` and the receive-ring push shared with `NdkSrqReceive`.
//!
//! Receives may be posted before the QP is connected (consumers pre-post
//! them). A QP created with an SRQ has no receive queue of its own.

use hwq::ring::Producer;
use hwq::{RecvWqe, Sge};
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER};

use super::Qp;
use crate::sge;

/// Writes and publishes one receive WQE, if fewer than `depth` receives
/// are outstanding.
pub(crate) fn push(
    producer: &mut Producer<RecvWqe>,
    depth: u32,
    wr_id: u64,
    sges: &[Sge],
) -> Result<(), NTSTATUS> {
    if producer.outstanding() >= depth {
        return Err(STATUS_INSUFFICIENT_RESOURCES);
    }
    let n = sges.len().min(hwq::wqe::MAX_SGE);
    producer
        .push_with(|wqe| {
            wqe.wr_id = wr_id;
            wqe.sge_count = n as u8;
            wqe.reserved = [0; 7];
            wqe.sges[..n].copy_from_slice(&sges[..n]);
        })
        .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
    producer.publish();
    Ok(())
}

impl Qp {
    /// Posts a receive on the QP's own receive queue.
    pub(crate) fn post_receive(&self, wr_id: u64, sges: &[Sge]) -> Result<(), NTSTATUS> {
        let Some(rq) = &self.rq else {
            // Receives of an SRQ-attached QP go to the SRQ.
            return Err(STATUS_INVALID_PARAMETER);
        };
        let limits = self.limits();
        if sges.len() > limits.max_receive_sge as usize {
            return Err(STATUS_INVALID_PARAMETER);
        }
        sge::total(sges, limits.max_transfer)?;
        {
            let mut q = rq.lock();
            let depth = q.producer.depth();
            push(&mut q.producer, depth, wr_id, sges)?;
        }
        self.doorbells().rq_doorbell(self.qpn);
        Ok(())
    }
}

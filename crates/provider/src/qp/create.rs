//! `NdkCreateQp` and `NdkCreateQpWithSrq`.
//!
//! Every size is checked against the adapter limits reported by
//! `NdkQueryAdapterInfo` (`STATUS_INVALID_PARAMETER` beyond them); the two
//! CQs may be the same object; the PD, CQs and SRQ must belong to the same
//! adapter (and the SRQ to the same PD). Rings are allocated here, once: the
//! post paths never allocate.

use core::sync::atomic::{AtomicBool, AtomicU8};

use hwq::TryArc;
use hwq::device::{QpSetup, ReceiveSource};
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER};

use super::{ConnState, Qp, QpLimits, RQ_LOCK, RecvQueue, SQ_LOCK, SendQueue};
use crate::abi::{self, NdkCell, NdkObject};
use crate::cq::Cq;
use crate::info;
use crate::lock::SpinLock;
use crate::object::{Dep, Life};
use crate::pd::Pd;
use crate::pool::{self, tags};
use crate::srq::Srq;
use crate::status;

/// What the consumer asked for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpRequest {
    /// The QP's context (every CQE of it carries it).
    pub context: u64,
    /// Receive queue depth (0 with an SRQ).
    pub receive_depth: u32,
    /// Send queue depth.
    pub initiator_depth: u32,
    /// SGEs per receive (0 with an SRQ).
    pub max_receive_sge: u32,
    /// SGEs per initiator request.
    pub max_initiator_sge: u32,
    /// Inline bytes per send or write.
    pub inline_size: u32,
}

/// Creates a QP of `pd` on the two CQs (and the SRQ, for
/// `NdkCreateQpWithSrq`).
pub(crate) fn create(
    pd: &Pd,
    receive_cq: &Cq,
    initiator_cq: &Cq,
    srq: Option<&Srq>,
    req: QpRequest,
) -> Result<TryArc<Qp>, NTSTATUS> {
    let adapter = pd.adapter();
    // CQs of any adapter instance of the PD's device.
    let same_device = |cq: &Cq| cq.adapter().same_device(adapter);
    if !same_device(receive_cq)
        || !same_device(initiator_cq)
        || srq.is_some_and(|s| !TryArc::ptr_eq(s.pd(), &abi::arc(pd)))
    {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let ctx = adapter.ctx();
    let caps = ctx.caps();
    let max_depth = info::max_queue_depth(caps);
    let depth_ok = |d: u32| d != 0 && d <= max_depth;
    if !depth_ok(req.initiator_depth)
        || (srq.is_none() && !depth_ok(req.receive_depth))
        || req.max_receive_sge > info::MAX_REQUEST_SGE
        || req.max_initiator_sge > info::MAX_REQUEST_SGE
        || req.inline_size > info::MAX_INLINE_DATA
    {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let platform = adapter.platform();
    let (sq_producer, sq_consumer, sq_charge) = pool::ring(platform, tags::QP, req.initiator_depth)
        .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
    let (rq, source) = if let Some(srq) = srq {
        (None, ReceiveSource::Shared(srq.srqn()))
    } else {
        let (producer, consumer, charge) = pool::ring(platform, tags::QP, req.receive_depth)
            .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        (
            Some(RecvQueue {
                producer,
                _charge: charge,
            }),
            ReceiveSource::Queue(consumer),
        )
    };
    let qpn = ctx
        .device()
        .create_qp(QpSetup {
            pd: pd.pdn(),
            send_cqn: initiator_cq.cqn(),
            recv_cqn: receive_cq.cqn(),
            sq: sq_consumer,
            rq: source,
            context: req.context,
        })
        .map_err(status::device_error)?;
    let limits = QpLimits {
        max_receive_sge: if srq.is_some() {
            0
        } else {
            req.max_receive_sge
        },
        max_initiator_sge: req.max_initiator_sge,
        inline_size: req.inline_size,
        max_transfer: caps.max_transfer,
    };
    let made = pool::try_arc(platform, tags::QP, |charge| Qp {
        ndk: NdkCell::new(Qp::ndk(adapter.version())),
        life: Life::new(platform),
        pd: Dep::new(&abi::arc(pd)),
        receive_cq: Dep::new(&abi::arc(receive_cq)),
        initiator_cq: Dep::new(&abi::arc(initiator_cq)),
        srq: srq.map(|s| Dep::new(&abi::arc(s))),
        ctx: ctx.clone(),
        qpn,
        limits,
        sq: SpinLock::new(
            platform,
            &SQ_LOCK,
            SendQueue {
                producer: sq_producer,
                deferred: 0,
                _charge: sq_charge,
            },
        ),
        rq: rq.map(|q| SpinLock::new(platform, &RQ_LOCK, q)),
        conn: AtomicU8::new(ConnState::Idle as u8),
        claimed: AtomicBool::new(false),
        errored: AtomicBool::new(false),
        _charge: charge,
    });
    let qp = match made {
        Ok(qp) => qp,
        Err(e) => {
            ctx.device().destroy_qp(qpn);
            return Err(status::alloc_error(e));
        }
    };
    if let Err(e) = ctx.qps.insert(qpn, qp.clone()) {
        ctx.device().destroy_qp(qpn);
        return Err(status::alloc_error(e));
    }
    Ok(qp)
}

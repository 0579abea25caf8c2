//! `NdkCreateQp` and `NdkCreateQpWithSrq`.
//!
//! Every size is checked against the adapter limits reported by
//! `NdkQueryAdapterInfo` (`STATUS_INVALID_PARAMETER` beyond them); the two
//! CQs may be the same object; the PD, CQs and SRQ must belong to the same
//! adapter (and the SRQ to the same PD). Rings are allocated here, once: the
//! post paths never allocate.

use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicU8};

use hwq::TryArc;
use hwq::device::{QpSetup, ReceiveSource};
use ndkpi::{
    NDK_CQ, NDK_FN_CREATE_COMPLETION, NDK_PD, NDK_QP, NDK_SRQ, NTSTATUS, NdkObjectTypeQp,
    STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use super::{ConnState, DISPATCH, Qp, QpLimits, RQ_LOCK, RecvQueue, SQ_LOCK, SendQueue};
use crate::abi::{self, NdkCell};
use crate::cq::Cq;
use crate::info;
use crate::lock::SpinLock;
use crate::object::{Dep, Life};
use crate::pd::{Pd, pd_arg};
use crate::pool::{self, tags};
use crate::srq::{Srq, srq_arg};
use crate::status;

/// What the consumer asked for.
#[derive(Clone, Copy, Debug)]
struct QpRequest {
    context: u64,
    receive_depth: u32,
    initiator_depth: u32,
    max_receive_sge: u32,
    max_initiator_sge: u32,
    inline_size: u32,
}

fn create(
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
        ndk: NdkCell::new(NDK_QP {
            Header: abi::header(adapter.version(), NdkObjectTypeQp),
            Dispatch: &raw const DISPATCH,
        }),
        life: Life::new(platform),
        pd: Dep::new(&abi::arc(pd)),
        receive_cq: Dep::new(&abi::arc(receive_cq)),
        initiator_cq: Dep::new(&abi::arc(initiator_cq)),
        srq: srq.map(|s| Dep::new(&abi::arc(s))),
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

/// # Safety
/// As [`abi::object`].
unsafe fn cq_arg<'a>(cq: *mut NDK_CQ) -> Option<&'a Cq> {
    // SAFETY: forwarded.
    unsafe { abi::object::<Cq>(cq) }
}

fn deliver(result: Result<TryArc<Qp>, NTSTATUS>, out: *mut *mut NDK_QP) -> NTSTATUS {
    match result {
        Ok(qp) => {
            // SAFETY: the caller checked `out` for null; it is the
            // consumer's out-pointer.
            unsafe { abi::write_out(out, abi::into_handle(qp)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreateQp`: completes synchronously.
pub(crate) unsafe extern "win64" fn create_qp(
    pd: *mut NDK_PD,
    receive_cq: *mut NDK_CQ,
    initiator_cq: *mut NDK_CQ,
    context: *mut c_void,
    receive_depth: u32,
    initiator_depth: u32,
    max_receive_sge: u32,
    max_initiator_sge: u32,
    inline_size: u32,
    _completion: NDK_FN_CREATE_COMPLETION,
    _request_context: *mut c_void,
    out: *mut *mut NDK_QP,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD.
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open CQs.
    let rcq = unsafe { cq_arg(receive_cq) };
    // SAFETY: as above.
    let icq = unsafe { cq_arg(initiator_cq) };
    let (Some(rcq), Some(icq)) = (rcq, icq) else {
        return STATUS_INVALID_PARAMETER;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    let req = QpRequest {
        context: context as usize as u64,
        receive_depth,
        initiator_depth,
        max_receive_sge,
        max_initiator_sge,
        inline_size,
    };
    deliver(create(pd, rcq, icq, None, req), out)
}

/// `NdkCreateQpWithSrq`: completes synchronously.
pub(crate) unsafe extern "win64" fn create_qp_with_srq(
    pd: *mut NDK_PD,
    receive_cq: *mut NDK_CQ,
    initiator_cq: *mut NDK_CQ,
    srq: *mut NDK_SRQ,
    context: *mut c_void,
    initiator_depth: u32,
    max_initiator_sge: u32,
    inline_size: u32,
    _completion: NDK_FN_CREATE_COMPLETION,
    _request_context: *mut c_void,
    out: *mut *mut NDK_QP,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD.
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer passes its open CQs and SRQ.
    let rcq = unsafe { cq_arg(receive_cq) };
    // SAFETY: as above.
    let icq = unsafe { cq_arg(initiator_cq) };
    // SAFETY: as above.
    let srq = unsafe { srq_arg(srq) };
    let (Some(rcq), Some(icq), Some(srq)) = (rcq, icq, srq) else {
        return STATUS_INVALID_PARAMETER;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    let req = QpRequest {
        context: context as usize as u64,
        receive_depth: 0,
        initiator_depth,
        max_receive_sge: 0,
        max_initiator_sge,
        inline_size,
    };
    deliver(create(pd, rcq, icq, Some(srq), req), out)
}

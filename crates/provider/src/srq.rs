//! Shared receive queues: creation, `NdkSrqReceive`, `NdkModifySrq` and the
//! low-water notification.
//!
//! The ring is allocated at creation with the requested depth; the depth
//! can later be lowered and raised again up to that size (a larger depth
//! would need a new ring under the device's feet: `STATUS_NOT_SUPPORTED`).
//! A non-zero notify threshold arms one notification for when the number
//! of posted receives drops below it (the device raises it at once if
//! already below); notifications of one SRQ never overlap.

use core::ffi::c_void;

use hwq::ring::Producer;
use hwq::{RecvWqe, Sge, Srqn, TryArc};
use ndkpi::{
    GROUP_AFFINITY, NDK_FN_CLOSE_COMPLETION, NDK_FN_CREATE_COMPLETION, NDK_FN_REQUEST_COMPLETION,
    NDK_FN_SRQ_NOTIFICATION_CALLBACK, NDK_OBJECT_HEADER, NDK_PD, NDK_SGE, NDK_SRQ,
    NDK_SRQ_DISPATCH, NTSTATUS, NdkObjectTypeSrq, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_SUCCESS,
};

use crate::abi::{self, NdkCell, NdkObject};
use crate::adapter;
use crate::callout::{self, Context};
use crate::info;
use crate::lock::SpinLock;
use crate::object::{Busy, Dep, Life, Object};
use crate::pd::{Pd, pd_arg};
use crate::platform::{LockClass, Platform};
use crate::pool::{self, Charge, tags};
use crate::qp::post_recv;
use crate::sge;
use crate::status;

static QUEUE_LOCK: LockClass = LockClass::new("srq.queue");
static NOTIFY_LOCK: LockClass = LockClass::new("srq.notify");

#[derive(Debug)]
struct Queue {
    producer: Producer<RecvWqe>,
    /// Current depth (posted receives allowed), <= the ring's size.
    depth: u32,
    _charge: Charge,
}

#[derive(Debug, Default)]
struct Notify {
    armed: bool,
    running: bool,
    pending: bool,
}

/// A shared receive queue.
#[repr(C)]
pub struct Srq {
    ndk: NdkCell<NDK_SRQ>,
    life: Life,
    pd: Dep<Pd>,
    srqn: Srqn,
    max_sge: u32,
    queue: SpinLock<Queue>,
    notify: SpinLock<Notify>,
    callback: NDK_FN_SRQ_NOTIFICATION_CALLBACK,
    context: Context,
    _charge: Charge,
}

// SAFETY: `#[repr(C)]` with the NDK object first; built only by `create`,
// inside a `TryArc`.
unsafe impl NdkObject for Srq {
    type Ndk = NDK_SRQ;
    const TYPE: i32 = NdkObjectTypeSrq;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
}

impl Object for Srq {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.pd.get().adapter().platform()
    }

    fn teardown(&self) {
        let ctx = self.pd.get().adapter().ctx();
        ctx.device().destroy_srq(self.srqn);
        drop(ctx.srqs.remove(self.srqn));
    }

    fn release_antecedents(&self) {
        self.pd.release();
    }
}

impl core::fmt::Debug for Srq {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Srq")
            .field("srqn", &self.srqn)
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl Srq {
    fn create(
        pd: &Pd,
        depth: u32,
        max_sge: u32,
        threshold: u32,
        callback: NDK_FN_SRQ_NOTIFICATION_CALLBACK,
        context: *mut c_void,
    ) -> Result<TryArc<Self>, NTSTATUS> {
        let adapter = pd.adapter();
        let ctx = adapter.ctx();
        let max_depth = ctx.caps().max_srq_depth.min(hwq::ring::MAX_RING_DEPTH);
        if max_depth == 0 {
            return Err(STATUS_NOT_SUPPORTED);
        }
        if depth == 0 || depth > max_depth || max_sge > info::MAX_REQUEST_SGE {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let platform = adapter.platform();
        let (producer, consumer, ring_charge) =
            pool::ring(platform, tags::SRQ, depth).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let armed = threshold != 0 && callback.is_some();
        let limit = if armed { threshold } else { 0 };
        let srqn = ctx
            .device()
            .create_srq(pd.pdn(), consumer, limit)
            .map_err(status::device_error)?;
        let made = pool::try_arc(platform, tags::SRQ, |charge| Self {
            ndk: NdkCell::new(NDK_SRQ {
                Header: abi::header(adapter.version(), NdkObjectTypeSrq),
                Dispatch: &raw const DISPATCH,
            }),
            life: Life::new(platform),
            pd: Dep::new(&abi::arc(pd)),
            srqn,
            max_sge,
            queue: SpinLock::new(
                platform,
                &QUEUE_LOCK,
                Queue {
                    producer,
                    depth,
                    _charge: ring_charge,
                },
            ),
            notify: SpinLock::new(
                platform,
                &NOTIFY_LOCK,
                Notify {
                    armed,
                    ..Notify::default()
                },
            ),
            callback,
            context: Context(context),
            _charge: charge,
        });
        let srq = match made {
            Ok(srq) => srq,
            Err(e) => {
                ctx.device().destroy_srq(srqn);
                return Err(status::alloc_error(e));
            }
        };
        if let Err(e) = ctx.srqs.insert(srqn, srq.clone()) {
            ctx.device().destroy_srq(srqn);
            return Err(status::alloc_error(e));
        }
        Ok(srq)
    }

    /// The device's SRQ number.
    pub fn srqn(&self) -> Srqn {
        self.srqn
    }

    /// The PD.
    pub fn pd(&self) -> &TryArc<Pd> {
        self.pd.get()
    }

    /// `NdkSrqReceive`.
    fn receive(&self, wr_id: u64, sges: &[Sge]) -> Result<(), NTSTATUS> {
        let caps = self.pd.get().adapter().ctx().caps();
        if sges.len() > self.max_sge as usize {
            return Err(STATUS_INVALID_PARAMETER);
        }
        sge::total(sges, caps.max_transfer)?;
        {
            let mut q = self.queue.lock();
            let depth = q.depth;
            post_recv::push(&mut q.producer, depth, wr_id, sges)?;
        }
        self.pd
            .get()
            .adapter()
            .ctx()
            .device()
            .srq_doorbell(self.srqn);
        Ok(())
    }

    /// `NdkModifySrq`.
    fn modify(&self, depth: u32, threshold: u32) -> Result<(), NTSTATUS> {
        let device = self.pd.get().adapter().ctx().device();
        if depth != 0 {
            let max_depth = self.pd.get().adapter().ctx().caps().max_srq_depth;
            if depth > max_depth {
                return Err(STATUS_INVALID_PARAMETER);
            }
            let mut q = self.queue.lock();
            if depth > q.producer.depth() {
                return Err(STATUS_NOT_SUPPORTED);
            }
            q.depth = depth;
        }
        if threshold != 0 && self.callback.is_some() {
            // Arm the provider before the device so an immediate event
            // finds the arm.
            self.notify.lock().armed = true;
            device
                .set_srq_limit(self.srqn, threshold)
                .map_err(status::device_error)?;
        }
        Ok(())
    }
}

/// The device says the SRQ fell below its limit.
pub(crate) fn on_limit(srq: &TryArc<Srq>) {
    let fire = core::mem::take(&mut srq.notify.lock().armed);
    if !fire {
        return;
    }
    // One notification per threshold setting.
    let _ = srq
        .pd
        .get()
        .adapter()
        .ctx()
        .device()
        .set_srq_limit(srq.srqn, 0);
    let Some(_busy) = Busy::enter(srq) else {
        return;
    };
    {
        let mut n = srq.notify.lock();
        if n.running {
            n.pending = true;
            return;
        }
        n.running = true;
    }
    let platform = srq.pd.get().adapter().platform();
    loop {
        callout::srq_notification(platform, srq.callback, srq.context, STATUS_SUCCESS);
        let mut n = srq.notify.lock();
        if n.pending && !srq.life.is_closing() {
            n.pending = false;
            continue;
        }
        n.running = false;
        break;
    }
}

/// Resolves an SRQ argument.
///
/// # Safety
/// As [`abi::object`].
pub(crate) unsafe fn srq_arg<'a>(srq: *mut NDK_SRQ) -> Option<&'a Srq> {
    // SAFETY: forwarded.
    unsafe { abi::object::<Srq>(srq) }
}

/// `NdkCreateSrq`: completes synchronously.
pub(crate) unsafe extern "win64" fn create_srq(
    pd: *mut NDK_PD,
    depth: u32,
    max_sge: u32,
    threshold: u32,
    notification: NDK_FN_SRQ_NOTIFICATION_CALLBACK,
    notification_context: *mut c_void,
    _affinity: *mut GROUP_AFFINITY,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_SRQ,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open PD.
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Srq::create(
        pd,
        depth,
        max_sge,
        threshold,
        notification,
        notification_context,
    ) {
        Ok(srq) => {
            // SAFETY: non-null out-pointer of the consumer.
            unsafe { abi::write_out(out, abi::into_handle(srq)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

unsafe extern "win64" fn close_srq(
    srq: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once.
    unsafe { abi::close::<Srq>(srq, completion, context) }
}

unsafe extern "win64" fn modify_srq(
    srq: *mut NDK_SRQ,
    depth: u32,
    threshold: u32,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open SRQ.
    let Some(srq) = (unsafe { srq_arg(srq) }) else {
        return STATUS_INVALID_HANDLE;
    };
    match srq.modify(depth, threshold) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

unsafe extern "win64" fn srq_receive(
    srq: *mut NDK_SRQ,
    context: *mut c_void,
    sgl: *const NDK_SGE,
    count: u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open SRQ.
    let Some(srq) = (unsafe { srq_arg(srq) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: the consumer's SGE array of `count` entries.
    let sges = match unsafe { sge::list(sgl, count) } {
        Ok(s) => s,
        Err(status) => return status,
    };
    match srq.receive(context as usize as u64, sges) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

/// The SRQ dispatch table.
pub static DISPATCH: NDK_SRQ_DISPATCH = NDK_SRQ_DISPATCH {
    NdkCloseSrq: Some(close_srq),
    NdkQueryExtension: Some(adapter::query_extension),
    NdkModifySrq: Some(modify_srq),
    NdkSrqReceive: Some(srq_receive),
};

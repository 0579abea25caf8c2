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
    NDK_FN_SRQ_NOTIFICATION_CALLBACK, NDK_SRQ, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_SUCCESS,
};

use crate::abi::{self, NdkCell, NdkObject};
use crate::callout::{self, Context};
use crate::info;
use crate::lock::SpinLock;
use crate::object::{Busy, Dep, Life, Object};
use crate::pd::Pd;
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
    pub(crate) fn create(
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
            ndk: NdkCell::new(Srq::ndk(adapter.version())),
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
            context: Context::new(context),
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
    pub(crate) fn receive(&self, wr_id: u64, sges: &[Sge]) -> Result<(), NTSTATUS> {
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
            .doorbells()
            .srq_doorbell(self.srqn);
        Ok(())
    }

    /// `NdkModifySrq`.
    pub(crate) fn modify(&self, depth: u32, threshold: u32) -> Result<(), NTSTATUS> {
        let ctx = self.pd.get().adapter().ctx();
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
            ctx.device()
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

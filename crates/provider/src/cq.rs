//! Completion queues: creation, polling (`NdkGetCqResults[Ex]`), arming and
//! notification, resize, interrupt moderation.
//!
//! The device writes CQEs into a ring the CQ owns the consuming end of;
//! polling reads, converts and releases them without allocating. Arming
//! follows NDK: one notification per arm, the stronger of two arms wins
//! (ANY > SOLICITED > ERRORS), ANY/SOLICITED arm the device, ERRORS arms only
//! the provider (the device raises overflow regardless). Notification
//! callbacks of one CQ never overlap: an event that arrives while one runs
//! is delivered when it returns. An overflow kills the CQ: the consumer is
//! told once with `STATUS_BUFFER_OVERFLOW` (now if armed, else at its next
//! arm), nothing is overwritten, and entries already written stay pollable.

use core::ffi::c_void;

use hwq::{Consumer, Cqe, CqeOpcode, Cqn, TryArc};
use ndkpi::{
    NDK_CQ, NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_ERRORS, NDK_CQ_NOTIFY_SOLICITED,
    NDK_FN_CQ_NOTIFICATION_CALLBACK, NDK_RESULT, NDK_RESULT_EX, NTSTATUS, STATUS_BUFFER_OVERFLOW,
    STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_PARAMETER, STATUS_INVALID_PARAMETER_MIX,
    STATUS_SUCCESS,
};

use crate::abi::{self, NdkCell, NdkObject, OutArray};
use crate::adapter::Adapter;
use crate::callout::{self, Context};
use crate::lock::SpinLock;
use crate::object::{Busy, Dep, Life, Object};
use crate::platform::{LockClass, Platform};
use crate::pool::{self, Charge, tags};
use crate::status;

static RINGS_LOCK: LockClass = LockClass::new("cq.rings");
static NOTIFY_LOCK: LockClass = LockClass::new("cq.notify");

/// What an arm waits for (ordered by strength).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Arm {
    /// CQ errors only (overflow).
    Errors,
    /// Solicited or failed completions (and errors).
    Solicited,
    /// Any completion.
    Any,
}

impl Arm {
    /// Decodes `NDK_CQ_NOTIFY_*`.
    pub fn from_ndk(kind: u32) -> Option<Self> {
        match kind {
            NDK_CQ_NOTIFY_ERRORS => Some(Self::Errors),
            NDK_CQ_NOTIFY_ANY => Some(Self::Any),
            NDK_CQ_NOTIFY_SOLICITED => Some(Self::Solicited),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Rings {
    current: Consumer<Cqe>,
    depth: u32,
    current_charge: Charge,
    /// The ring before the last resize, drained first.
    old: Option<(Consumer<Cqe>, Charge)>,
}

#[derive(Debug, Default)]
struct Notify {
    arm: Option<Arm>,
    overflowed: bool,
    overflow_reported: bool,
    running: bool,
    pending: Option<NTSTATUS>,
}

/// A completion queue.
#[repr(C)]
pub struct Cq {
    ndk: NdkCell<NDK_CQ>,
    life: Life,
    adapter: Dep<Adapter>,
    cqn: Cqn,
    rings: SpinLock<Rings>,
    notify: SpinLock<Notify>,
    callback: NDK_FN_CQ_NOTIFICATION_CALLBACK,
    context: Context,
    _charge: Charge,
}

impl Object for Cq {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.adapter.get().platform()
    }

    fn teardown(&self) {
        let ctx = self.adapter.get().ctx();
        ctx.device().destroy_cq(self.cqn);
        drop(ctx.cqs.remove(self.cqn));
    }

    fn release_antecedents(&self) {
        self.adapter.release();
    }
}

impl core::fmt::Debug for Cq {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Cq")
            .field("cqn", &self.cqn)
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl Cq {
    /// The device's number for this CQ.
    pub fn cqn(&self) -> Cqn {
        self.cqn
    }

    /// The adapter.
    pub fn adapter(&self) -> &TryArc<Adapter> {
        self.adapter.get()
    }

    pub(crate) fn create(
        adapter: &Adapter,
        depth: u32,
        callback: NDK_FN_CQ_NOTIFICATION_CALLBACK,
        context: *mut c_void,
    ) -> Result<TryArc<Self>, NTSTATUS> {
        let ctx = adapter.ctx();
        let max = ctx.caps().max_cq_depth.min(hwq::ring::MAX_RING_DEPTH);
        if depth == 0 || depth > max || callback.is_none() {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let platform = adapter.platform();
        let (producer, consumer, ring_charge) = pool::ring(platform, tags::CQ, depth)
            .map_err(|_| ndkpi::STATUS_INSUFFICIENT_RESOURCES)?;
        let cqn = ctx
            .device()
            .create_cq(producer)
            .map_err(status::device_error)?;
        let made = pool::try_arc(platform, tags::CQ, |charge| Self {
            ndk: NdkCell::new(Cq::ndk(adapter.version())),
            life: Life::new(platform),
            adapter: Dep::new(&abi::arc(adapter)),
            cqn,
            rings: SpinLock::new(
                platform,
                &RINGS_LOCK,
                Rings {
                    current: consumer,
                    depth,
                    current_charge: ring_charge,
                    old: None,
                },
            ),
            notify: SpinLock::new(platform, &NOTIFY_LOCK, Notify::default()),
            callback,
            context: Context::new(context),
            _charge: charge,
        });
        let cq = match made {
            Ok(cq) => cq,
            Err(e) => {
                ctx.device().destroy_cq(cqn);
                return Err(status::alloc_error(e));
            }
        };
        if let Err(e) = ctx.cqs.insert(cqn, cq.clone()) {
            ctx.device().destroy_cq(cqn);
            return Err(status::alloc_error(e));
        }
        Ok(cq)
    }

    /// Removes up to `max` completions, oldest first, handing each to
    /// `emit(index, cqe)`; returns how many.
    ///
    /// An empty CQ first lends the caller's processor to the device
    /// ([`hwq::device::Device::busy_poll`], with no lock held) and looks
    /// again if that did work: a consumer spinning on its CQ then drives
    /// a software device itself instead of waiting for its thread.
    fn poll(&self, max: usize, mut emit: impl FnMut(usize, &Cqe)) -> usize {
        let n = self.take(max, &mut emit);
        if n > 0 || max == 0 {
            return n;
        }
        let device_worked = self.adapter.get().ctx().device().busy_poll();
        if device_worked {
            self.take(max, &mut emit)
        } else {
            0
        }
    }

    /// Removes up to `max` completions (no busy polling).
    fn take(&self, max: usize, emit: &mut impl FnMut(usize, &Cqe)) -> usize {
        let mut rings = self.rings.lock();
        let mut n = 0;
        if let Some((old, _)) = rings.old.as_mut() {
            n += drain(old, max, emit, 0);
            old.refresh();
            if old.is_empty() {
                rings.old = None;
            }
        }
        if n < max {
            n += drain(&mut rings.current, max - n, emit, n);
        }
        n
    }

    /// `NdkArmCq`.
    pub(crate) fn arm(this: &TryArc<Self>, arm: Arm) {
        let overflow = {
            let mut n = this.notify.lock();
            if n.overflowed {
                // A dead CQ reports its overflow once, at the first arm
                // after it happened if nobody was armed then.
                !core::mem::replace(&mut n.overflow_reported, true)
            } else {
                n.arm = n.arm.max(Some(arm));
                false
            }
        };
        if overflow {
            notify(this, STATUS_BUFFER_OVERFLOW);
            return;
        }
        match arm {
            Arm::Any => this.device_arm(false),
            Arm::Solicited => this.device_arm(true),
            // Overflow raises an event whether or not the device is armed.
            Arm::Errors => {}
        }
    }

    fn device_arm(&self, solicited_only: bool) {
        self.adapter
            .get()
            .ctx()
            .device()
            .arm_cq(self.cqn, solicited_only);
    }

    /// `NdkResizeCq`.
    pub(crate) fn resize(&self, depth: u32) -> Result<(), NTSTATUS> {
        let ctx = self.adapter.get().ctx();
        let max = ctx.caps().max_cq_depth.min(hwq::ring::MAX_RING_DEPTH);
        if depth == 0 || depth > max {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let platform = self.adapter.get().platform();
        let (producer, consumer, charge) = pool::ring(platform, tags::CQ, depth)
            .map_err(|_| ndkpi::STATUS_INSUFFICIENT_RESOURCES)?;
        let mut rings = self.rings.lock();
        if let Some((old, _)) = rings.old.as_mut() {
            old.refresh();
            if !old.is_empty() {
                // Entries of two earlier rings would have to be drained in
                // order; ask the consumer to poll first.
                return Err(STATUS_INVALID_DEVICE_STATE);
            }
        }
        // Under the rings lock, so no poll sees the switch half done. The
        // device call neither blocks nor calls back.
        ctx.device()
            .resize_cq(self.cqn, producer)
            .map_err(status::device_error)?;
        let previous = core::mem::replace(&mut rings.current, consumer);
        let previous_charge = core::mem::replace(&mut rings.current_charge, charge);
        rings.old = Some((previous, previous_charge));
        rings.depth = depth;
        Ok(())
    }

    /// `NdkControlCqInterruptModeration`.
    pub(crate) fn moderate(&self, interval: u32, count: u32) -> Result<(), NTSTATUS> {
        let depth = self.rings.lock().depth;
        let count_only = interval == u32::MAX;
        let interval_only = count == u32::MAX || count > depth;
        if count_only && interval_only {
            return Err(STATUS_INVALID_PARAMETER_MIX);
        }
        let (count, usec) = if interval == 0 || count <= 1 {
            (0, 0)
        } else {
            (
                if interval_only { 0 } else { count },
                if count_only { 0 } else { interval },
            )
        };
        self.adapter
            .get()
            .ctx()
            .device()
            .moderate_cq(self.cqn, count, usec)
            .map_err(status::device_error)
    }
}

fn drain(
    ring: &mut Consumer<Cqe>,
    max: usize,
    emit: &mut impl FnMut(usize, &Cqe),
    base: usize,
) -> usize {
    ring.refresh();
    let mut n = 0;
    while n < max {
        let index = ring.released();
        let Some(()) = ring.read_with(index, |cqe| emit(base + n, cqe)) else {
            break;
        };
        ring.release(1);
        n += 1;
    }
    n
}

impl Cq {
    /// `NdkGetCqResults`: up to `max` completions into `out`; how many.
    pub(crate) fn get_results(&self, out: &mut OutArray<'_, NDK_RESULT>, max: u32) -> u32 {
        self.poll(max as usize, |i, cqe| {
            out.write(i, result_of(cqe));
        }) as u32
    }

    /// `NdkGetCqResultsEx`: as [`Cq::get_results`], in `NDK_RESULT_EX`
    /// records (provider error codes for NDKPI 2.x adapters).
    pub(crate) fn get_results_ex(&self, out: &mut OutArray<'_, NDK_RESULT_EX>, max: u32) -> u32 {
        let error_codes = self.adapter.get().is_v2();
        self.poll(max as usize, |i, cqe| {
            out.write(i, result_ex_of(cqe, error_codes));
        }) as u32
    }
}

/// A device event for this CQ (its arm fired, or it overflowed).
pub(crate) fn on_device_event(cq: &TryArc<Cq>, overflow: bool) {
    let status = {
        let mut n = cq.notify.lock();
        if overflow {
            n.overflowed = true;
            if n.arm.take().is_some() {
                n.overflow_reported = true;
                Some(STATUS_BUFFER_OVERFLOW)
            } else {
                None
            }
        } else {
            match n.arm {
                Some(Arm::Any | Arm::Solicited) => {
                    n.arm = None;
                    Some(STATUS_SUCCESS)
                }
                // An ERRORS arm ignores completions; unarmed: spurious.
                Some(Arm::Errors) | None => None,
            }
        }
    };
    if let Some(status) = status {
        notify(cq, status);
    }
}

/// Calls the notification callback, one at a time per CQ.
fn notify(cq: &TryArc<Cq>, status: NTSTATUS) {
    let Some(_busy) = Busy::enter(cq) else {
        return;
    };
    {
        let mut n = cq.notify.lock();
        if n.running {
            // The running callback delivers it when it returns; an error
            // status outranks a plain notification.
            if n.pending.is_none_or(|p| p == STATUS_SUCCESS) {
                n.pending = Some(status);
            }
            return;
        }
        n.running = true;
    }
    let platform = cq.adapter.get().platform();
    let mut status = status;
    loop {
        callout::cq_notification(platform, cq.callback, cq.context, status);
        let mut n = cq.notify.lock();
        match n.pending.take() {
            Some(next) if !cq.life.is_closing() => status = next,
            _ => {
                n.running = false;
                break;
            }
        }
    }
}

fn result_of(cqe: &Cqe) -> NDK_RESULT {
    NDK_RESULT {
        Status: status::completion_status(cqe.cqe_status()),
        BytesTransferred: cqe.byte_len,
        QPContext: cqe.qp_context as usize as *mut c_void,
        RequestContext: cqe.wr_id as usize as *mut c_void,
    }
}

/// The extended record of a completion; `error_codes` (NDKPI 2.x
/// adapters) fills `ProviderErrorCode` (see
/// [`status::provider_error_code`]), which a 1.x consumer's record has as
/// padding and therefore gets as 0.
fn result_ex_of(cqe: &Cqe, error_codes: bool) -> NDK_RESULT_EX {
    let op = cqe.op();
    let cqe_status = cqe.cqe_status();
    NDK_RESULT_EX {
        Status: status::completion_status(cqe_status),
        BytesTransferred: cqe.byte_len,
        QPContext: cqe.qp_context as usize as *mut c_void,
        RequestContext: cqe.wr_id as usize as *mut c_void,
        Type: status::operation_type(op),
        ProviderErrorCode: if error_codes {
            status::provider_error_code(cqe_status)
        } else {
            0
        },
        TypeSpecificCompletionOutput: if op == Some(CqeOpcode::ReceiveInvalidate) {
            cqe.invalidated_key as usize
        } else {
            0
        },
    }
}

//! Events: what the device tells the driver ([`DeviceEvents`]), through
//! the [`EventSink`] the driver attached, like an interrupt vector.
//!
//! IRQL: events are delivered at `DISPATCH_LEVEL`, from the device's own
//! context (the equivalent of a DPC), never from inside a command.

use core::fmt;
use core::ptr::NonNull;

use crate::id::{Cqn, Qpn, Srqn};

use super::CmEvent;
#[cfg(doc)]
use super::Device;

/// What the device tells the driver. Called from the device's execution
/// context (the equivalent of an interrupt / DPC) at `DISPATCH_LEVEL`; an
/// implementation must not block.
pub trait DeviceEvents: Send + Sync {
    /// An armed completion queue `cqn` met its arm condition (see
    /// [`Verbs::arm_cq`](super::Verbs::arm_cq)), or it overflowed (`overflow`), after which it
    /// accepts nothing more.
    fn cq_event(&self, cqn: Cqn, overflow: bool);

    /// A shared receive queue's posted receives fell below its limit.
    fn srq_limit(&self, srqn: Srqn);

    /// QP `qpn` entered the error state (its work is being flushed).
    fn qp_error(&self, qpn: Qpn);

    /// A connection-management event.
    fn cm_event(&self, event: CmEvent<'_>);
}

/// The driver's [`DeviceEvents`] handed to the device, like an interrupt
/// vector: it stays valid until [`Device::detach`] returns. A copy is the
/// same handle, valid as long as the original (a device copies it out of
/// its slot to call it without holding the slot's lock, and its detach
/// waits for such calls to end).
#[derive(Clone, Copy)]
pub struct EventSink {
    target: NonNull<()>,
    call: fn(NonNull<()>, SinkCall<'_>),
}

/// One dispatched event (the sink's internal calling convention).
#[derive(Clone, Copy)]
enum SinkCall<'a> {
    Cq(Cqn, bool),
    SrqLimit(Srqn),
    QpError(Qpn),
    Cm(CmEvent<'a>),
}

// SAFETY: the target is a `DeviceEvents`, which is `Send + Sync`; the sink
// only ever produces shared references to it.
unsafe impl Send for EventSink {}
// SAFETY: the target is a `DeviceEvents`, which is `Sync`, and the sink
// only ever produces shared references to it, so sharing the sink between
// threads shares only `&DeviceEvents`.
unsafe impl Sync for EventSink {}

impl EventSink {
    /// Wraps a driver's event handler.
    ///
    /// # Safety
    /// `target` must remain valid (not moved, not dropped) until the sink has
    /// been passed to a device and that device's [`Device::detach`] has
    /// returned, or, if it is never attached, until the sink is dropped.
    pub unsafe fn new<E: DeviceEvents>(target: &E) -> Self {
        fn call<E: DeviceEvents>(target: NonNull<()>, what: SinkCall<'_>) {
            // SAFETY: `target` was made from an `&E` in `new`, whose caller
            // guarantees it outlives the sink's use.
            let events = unsafe { target.cast::<E>().as_ref() };
            match what {
                SinkCall::Cq(cqn, overflow) => events.cq_event(cqn, overflow),
                SinkCall::SrqLimit(srqn) => events.srq_limit(srqn),
                SinkCall::QpError(qpn) => events.qp_error(qpn),
                SinkCall::Cm(event) => events.cm_event(event),
            }
        }
        Self {
            target: NonNull::from(target).cast(),
            call: call::<E>,
        }
    }

    /// Delivers [`DeviceEvents::cq_event`].
    pub fn cq_event(&self, cqn: Cqn, overflow: bool) {
        (self.call)(self.target, SinkCall::Cq(cqn, overflow));
    }

    /// Delivers [`DeviceEvents::srq_limit`].
    pub fn srq_limit(&self, srqn: Srqn) {
        (self.call)(self.target, SinkCall::SrqLimit(srqn));
    }

    /// Delivers [`DeviceEvents::qp_error`].
    pub fn qp_error(&self, qpn: Qpn) {
        (self.call)(self.target, SinkCall::QpError(qpn));
    }

    /// Delivers [`DeviceEvents::cm_event`].
    pub fn cm_event(&self, event: CmEvent<'_>) {
        (self.call)(self.target, SinkCall::Cm(event));
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSink")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

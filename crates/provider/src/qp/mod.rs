//! Queue pairs: the object, its send and receive queues, flush, and the QP
//! dispatch table. Creation is in [`create`]; each work request kind has its
//! own module.
//!
//! # Posting
//!
//! Every post validates its arguments completely before touching the ring,
//! so a post that fails leaves nothing queued. Posts of one queue are
//! serialised by the consumer, but `NdkFlush` and close may race with them,
//! so the SQ producer sits under the QP's SQ spin lock and the RQ producer
//! under its own (SQ and RQ posts of one QP may run concurrently). Posting
//! never allocates or blocks and is safe at `DISPATCH_LEVEL`.
//!
//! # The DEFER rule
//!
//! WQEs are always published to the ring at once; only the doorbell is
//! deferred. The SQ doorbell rings
//! * on every post without `NDK_OP_FLAG_DEFER` (for it and every deferred
//!   WQE before it),
//! * on every post that fails inline, if deferred WQEs are waiting (NDK's
//!   hard rule: a failing post hands earlier deferred requests to the
//!   hardware),
//! * on `NdkFlush` and on QP close,
//! * whenever [`DEFER_BATCH`] deferred WQEs have accumulated.
//!
//! (The device may also sweep published but unrung queues on its own.)

pub mod bind;
pub mod create;
pub mod fast_register;
pub mod flags;
pub mod post_recv;
pub mod post_send;

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use hwq::ring::Producer;
use hwq::{Qpn, RecvWqe, SendWqe, TryArc};
use ndkpi::{NDK_QP, NTSTATUS, STATUS_CONNECTION_INVALID, STATUS_INSUFFICIENT_RESOURCES};

use crate::abi::NdkCell;
use crate::cq::Cq;
use crate::device::{DeviceContext, Raised};
use crate::lock::SpinLock;
use crate::object::{Dep, Life, Object};
use crate::pd::Pd;
use crate::platform::{LockClass, Platform};
use crate::pool::Charge;
use crate::srq::Srq;

/// Deferred WQEs after which the doorbell rings anyway.
pub const DEFER_BATCH: u32 = 16;

static SQ_LOCK: LockClass = LockClass::new("qp.sq");
static RQ_LOCK: LockClass = LockClass::new("qp.rq");

/// Where the QP is in its connection's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ConnState {
    /// Not connected yet (receives may be posted).
    Idle = 0,
    /// Connected: initiator requests may be posted.
    Connected = 1,
    /// Disconnected; a QP is never reconnected.
    Disconnected = 2,
}

/// The send queue's producer side.
#[derive(Debug)]
pub(crate) struct SendQueue {
    pub(crate) producer: Producer<SendWqe>,
    /// Published WQEs whose doorbell has not been rung.
    pub(crate) deferred: u32,
    _charge: Charge,
}

/// The receive queue's producer side.
#[derive(Debug)]
pub(crate) struct RecvQueue {
    pub(crate) producer: Producer<RecvWqe>,
    _charge: Charge,
}

/// Per-QP limits fixed at creation.
#[derive(Clone, Copy, Debug)]
pub struct QpLimits {
    /// SGEs per receive.
    pub max_receive_sge: u32,
    /// SGEs per non-read initiator request (non-inline).
    pub max_initiator_sge: u32,
    /// Bytes of inline data per send/write.
    pub inline_size: u32,
    /// Most bytes any one request may move.
    pub max_transfer: u32,
}

/// A queue pair.
#[repr(C)]
pub struct Qp {
    ndk: NdkCell<NDK_QP>,
    life: Life,
    pd: Dep<Pd>,
    receive_cq: Dep<Cq>,
    initiator_cq: Dep<Cq>,
    srq: Option<Dep<Srq>>,
    /// The device context, held here so that a post reaches the doorbell
    /// in two loads rather than walking PD, adapter and context.
    ctx: TryArc<DeviceContext>,
    qpn: Qpn,
    limits: QpLimits,
    sq: SpinLock<SendQueue>,
    rq: Option<SpinLock<RecvQueue>>,
    conn: AtomicU8,
    /// Claimed by a connector (Connect or Accept); at most once.
    claimed: AtomicBool,
    /// The device reported the QP in error.
    errored: AtomicBool,
    _charge: Charge,
}

impl Object for Qp {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.pd.get().adapter().platform()
    }

    /// NDK requires close to cancel outstanding work itself: everything
    /// posted completes with `STATUS_CANCELLED` through the CQs (which stay
    /// open at least until this QP finishes).
    fn on_close(&self) {
        self.flush();
    }

    fn teardown(&self) {
        let ctx = &self.ctx;
        ctx.device().destroy_qp(self.qpn);
        drop(ctx.qps.remove(self.qpn));
    }

    fn release_antecedents(&self) {
        if let Some(srq) = &self.srq {
            srq.release();
        }
        self.initiator_cq.release();
        self.receive_cq.release();
        self.pd.release();
    }
}

impl core::fmt::Debug for Qp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Qp")
            .field("qpn", &self.qpn)
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl Qp {
    /// The device's QP number.
    pub fn qpn(&self) -> Qpn {
        self.qpn
    }

    /// The PD.
    pub fn pd(&self) -> &TryArc<Pd> {
        self.pd.get()
    }

    /// The QP's limits.
    pub fn limits(&self) -> &QpLimits {
        &self.limits
    }

    /// The device, raised for a command ([`crate::device::DeviceContext::device`]).
    fn device(&self) -> Raised<'_> {
        self.ctx.device()
    }

    /// The device's doorbells, unraised ([`crate::device::DeviceContext::doorbells`]).
    fn doorbells(&self) -> &dyn hwq::Doorbells {
        self.ctx.doorbells()
    }

    /// The connection state.
    pub fn conn_state(&self) -> ConnState {
        match self.conn.load(Ordering::Acquire) {
            0 => ConnState::Idle,
            1 => ConnState::Connected,
            _ => ConnState::Disconnected,
        }
    }

    pub(crate) fn set_conn_state(&self, state: ConnState) {
        self.conn.store(state as u8, Ordering::Release);
    }

    /// Claims the QP for a connector; false if one already has it.
    pub(crate) fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
    }

    /// Gives up a claim after a connect or accept failed inline.
    pub(crate) fn unclaim(&self) {
        self.claimed.store(false, Ordering::Release);
    }

    /// Whether the device reported this QP in error.
    pub fn is_errored(&self) -> bool {
        self.errored.load(Ordering::Acquire)
    }

    /// `NdkFlush`: rings for deferred WQEs, then has the device complete
    /// every outstanding send and receive with `STATUS_CANCELLED`.
    pub(crate) fn flush(&self) {
        {
            let mut sq = self.sq.lock();
            self.ring_deferred(&mut sq);
        }
        self.device().flush_qp(self.qpn);
    }

    /// Rings the SQ doorbell if deferred WQEs are waiting.
    pub(crate) fn ring_deferred(&self, sq: &mut SendQueue) {
        if sq.deferred != 0 {
            sq.deferred = 0;
            self.doorbells().sq_doorbell(self.qpn);
        }
    }

    /// Runs one send-queue post under the SQ lock, with the DEFER rule.
    /// `fill` builds the WQE after the connection and free-slot checks,
    /// ending with a [`hwq::SendRequest::encode`] of its header (the slot
    /// holds its previous WQE until then); it may still refuse (then
    /// nothing is queued).
    pub(crate) fn post_send(
        &self,
        defer: bool,
        fill: impl FnOnce(&mut SendWqe) -> Result<(), NTSTATUS>,
    ) -> Result<(), NTSTATUS> {
        // Looked up before locking: the lock's atomic test-and-set holds
        // back every later load until it completes, so these loads would
        // otherwise sit on the post's critical path.
        let doorbells = self.doorbells();
        let mut sq = self.sq.lock();
        let result = self.post_locked(&mut sq, fill);
        let ring = match result {
            Ok(()) if defer => {
                sq.deferred += 1;
                sq.deferred >= DEFER_BATCH
            }
            Ok(()) => true,
            Err(_) => sq.deferred != 0,
        };
        if ring {
            // Under the lock, so doorbells of one SQ are never concurrent
            // and reach the device in publish order.
            sq.deferred = 0;
            doorbells.sq_doorbell(self.qpn);
        }
        result
    }

    fn post_locked(
        &self,
        sq: &mut SendQueue,
        fill: impl FnOnce(&mut SendWqe) -> Result<(), NTSTATUS>,
    ) -> Result<(), NTSTATUS> {
        if self.conn_state() != ConnState::Connected {
            return Err(STATUS_CONNECTION_INVALID);
        }
        // The WQE is written straight into its ring slot (`fill` encodes
        // the whole header with `SendRequest::encode`); a fill that fails
        // (e.g. unreadable inline data) leaves the slot unpushed.
        sq.producer
            .try_push_with(STATUS_INSUFFICIENT_RESOURCES, fill)?;
        sq.producer.publish();
        Ok(())
    }

    /// Fails a post before it reached the queue: NDK's rule still hands
    /// deferred WQEs to the device. Kept out of line: posts call it only on
    /// their error paths.
    #[cold]
    #[inline(never)]
    pub(crate) fn fail_post(&self, status: NTSTATUS) -> NTSTATUS {
        let mut sq = self.sq.lock();
        self.ring_deferred(&mut sq);
        status
    }
}

/// The device reports a QP in error (its work is being flushed).
pub(crate) fn on_error(qp: &TryArc<Qp>) {
    qp.errored.store(true, Ordering::Release);
}

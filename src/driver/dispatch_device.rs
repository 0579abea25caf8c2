//! The device as the provider sees it: the software RNIC with every
//! command run at `DISPATCH_LEVEL`.
//!
//! Why: the provider calls the device at its caller's IRQL, and NDK
//! consumers may call at `PASSIVE_LEVEL`. The software RNIC guards its
//! tables with spin locks (a QP slot, a CQ slot, the CM state, the event
//! sink) that its engine DPC takes too, and some commands queue that DPC
//! while holding one (`flush_qp` completes work under the QP's lock and an
//! armed CQ wakes the engine). At `PASSIVE_LEVEL` a DPC queued on the
//! same processor, or any DPC that lands there (the timer's, a receive's),
//! preempts the lock holder and spins on the lock it holds: the processor
//! never comes back (bug check 0x133). At `DISPATCH_LEVEL` the holder
//! cannot be preempted by a DPC: what it queues runs when it lowers, with
//! the lock released. This is the rule for any spin lock shared with a
//! DPC (`KeAcquireSpinLock` raises for the same reason).
//!
//! Nothing here may block at `DISPATCH_LEVEL`. The trait allows `attach`
//! and `detach` to block; the software RNIC's only take its event sink's
//! spin lock (the engine DPC holds it for reading while it delivers
//! events), so they must be raised like the rest, and spinning for a
//! reader on another processor is what a spin lock does at
//! `DISPATCH_LEVEL`. Every other entry is documented not to block;
//! `register` and `init_fast_register` may allocate, which the global
//! allocator does from non-paged pool, legal at `DISPATCH_LEVEL`.
//!
//! The wrapper also keeps the connection counters of `OID_NDK_STATISTICS`
//! ([`NdkCounters`]): commands as they return, and device events as they
//! pass on their way to the provider (its event sink is relayed).

use core::cell::UnsafeCell;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicBool, Ordering};

use hwq::device::{
    AcceptParams, CmEvent, ConnectParams, DeviceCaps, DeviceEvents, EventSink, QpSetup,
    Registration,
};
use hwq::{
    ConnId, Consumer, Cqe, Cqn, Device, DeviceError, ListenId, MemoryKey, Pdn, Producer, Qpn,
    RecvWqe, Srqn, TryArc,
};
use softrnic::device::SoftRnic;

use super::counters::NdkCounters;
use super::irql;

/// Runs `f` at `DISPATCH_LEVEL` and returns to the caller's level (which
/// runs the DPCs `f` queued on this processor, after `f` let go of its
/// locks). Callers run at or below `DISPATCH_LEVEL`.
fn at_dispatch<R>(f: impl FnOnce() -> R) -> R {
    let old = irql::raise_to_dispatch();
    let result = f();
    irql::lower(old);
    result
}

/// The software RNIC, each command forwarded at `DISPATCH_LEVEL`.
#[derive(Debug)]
pub struct AtDispatch {
    rnic: TryArc<SoftRnic>,
    relay: Relay,
}

/// The provider's event sink behind ours: counts, then passes each event
/// on.
struct Relay {
    counters: TryArc<NdkCounters>,
    /// The provider's sink while attached. Written only by `attach` while
    /// `attached` is held and the device has no sink (so no event reads
    /// it); read only by events, which the device delivers between its
    /// `attach` and the return of its `detach`.
    sink: UnsafeCell<Option<EventSink>>,
    attached: AtomicBool,
}

// SAFETY: `sink` is written only while no event can read it (see the
// field); everything else is atomic or immutable.
unsafe impl Sync for Relay {}

impl core::fmt::Debug for Relay {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Relay")
            .field("counters", &self.counters)
            .field("attached", &self.attached)
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// The provider's sink: events run only while it is set.
    fn sink(&self) -> Option<&EventSink> {
        // SAFETY: called from events only, which run after `attach` wrote
        // the sink (the device published our sink after that write, under
        // its own lock) and before `detach` returns; nothing writes it
        // meanwhile.
        unsafe { (*self.sink.get()).as_ref() }
    }
}

impl DeviceEvents for Relay {
    fn cq_event(&self, cqn: Cqn, overflow: bool) {
        self.counters.cq_event(overflow);
        if let Some(sink) = self.sink() {
            sink.cq_event(cqn, overflow);
        }
    }

    fn srq_limit(&self, srqn: Srqn) {
        if let Some(sink) = self.sink() {
            sink.srq_limit(srqn);
        }
    }

    fn qp_error(&self, qpn: Qpn) {
        self.counters.qp_error();
        if let Some(sink) = self.sink() {
            sink.qp_error(qpn);
        }
    }

    fn cm_event(&self, event: CmEvent<'_>) {
        self.counters.cm_event(&event);
        if let Some(sink) = self.sink() {
            sink.cm_event(event);
        }
    }
}

impl AtDispatch {
    /// The RNIC as the provider's device, counting into `counters`.
    pub fn new(rnic: TryArc<SoftRnic>, counters: TryArc<NdkCounters>) -> Self {
        Self {
            rnic,
            relay: Relay {
                counters,
                sink: UnsafeCell::new(None),
                attached: AtomicBool::new(false),
            },
        }
    }

    /// The device; commands go through its `Device` implementation (not
    /// the inherent methods of the same names, which may differ).
    fn rnic(&self) -> &SoftRnic {
        &self.rnic
    }
}

impl Device for AtDispatch {
    fn caps(&self) -> DeviceCaps {
        at_dispatch(|| Device::caps(self.rnic()))
    }
    /// Attaches the relay, which passes events on to `sink`. `self` stays
    /// where it is until the device's `detach` returned: the provider
    /// keeps its device boxed and detaches it before dropping it.
    fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
        let relay = &self.relay;
        if relay.attached.swap(true, Ordering::AcqRel) {
            return Err(DeviceError::InvalidState);
        }
        // SAFETY: `attached` was clear, so the device has no sink of ours:
        // no event reads this cell while it is written.
        unsafe { *relay.sink.get() = Some(sink) };
        // SAFETY: the relay lives inside `self`, which stays in place and
        // alive until the device's `detach` has returned (above).
        let ours = unsafe { EventSink::new(relay) };
        let result = at_dispatch(|| Device::attach(self.rnic(), ours));
        if result.is_err() {
            relay.attached.store(false, Ordering::Release);
        }
        result
    }
    fn detach(&self) {
        at_dispatch(|| Device::detach(self.rnic()));
        self.relay.attached.store(false, Ordering::Release);
    }
    fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
        at_dispatch(|| Device::create_pd(self.rnic()))
    }
    fn destroy_pd(&self, pd: Pdn) {
        at_dispatch(|| Device::destroy_pd(self.rnic(), pd));
    }
    fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
        at_dispatch(|| Device::alloc_key(self.rnic(), pd, window))
    }
    fn free_key(&self, key: MemoryKey) {
        at_dispatch(|| Device::free_key(self.rnic(), key));
    }
    fn register(
        &self,
        key: MemoryKey,
        registration: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError> {
        at_dispatch(|| Device::register(self.rnic(), key, registration))
    }
    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
        at_dispatch(|| Device::deregister(self.rnic(), key))
    }
    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), DeviceError> {
        at_dispatch(|| Device::init_fast_register(self.rnic(), key, max_pages, remote_access))
    }
    fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
        at_dispatch(|| Device::create_cq(self.rnic(), ring))
    }
    fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        at_dispatch(|| Device::resize_cq(self.rnic(), cqn, ring))
    }
    fn destroy_cq(&self, cqn: Cqn) {
        at_dispatch(|| Device::destroy_cq(self.rnic(), cqn));
    }
    fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
        at_dispatch(|| Device::arm_cq(self.rnic(), cqn, solicited_only));
    }
    fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
        at_dispatch(|| Device::moderate_cq(self.rnic(), cqn, count, usec))
    }
    fn create_srq(
        &self,
        pd: Pdn,
        ring: Consumer<RecvWqe>,
        limit: u32,
    ) -> Result<Srqn, DeviceError> {
        at_dispatch(|| Device::create_srq(self.rnic(), pd, ring, limit))
    }
    fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
        at_dispatch(|| Device::set_srq_limit(self.rnic(), srqn, limit))
    }
    fn destroy_srq(&self, srqn: Srqn) {
        at_dispatch(|| Device::destroy_srq(self.rnic(), srqn));
    }
    fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
        at_dispatch(|| Device::create_qp(self.rnic(), setup))
    }
    fn flush_qp(&self, qpn: Qpn) {
        at_dispatch(|| Device::flush_qp(self.rnic(), qpn));
    }
    fn destroy_qp(&self, qpn: Qpn) {
        at_dispatch(|| Device::destroy_qp(self.rnic(), qpn));
    }
    fn sq_doorbell(&self, qpn: Qpn) {
        at_dispatch(|| Device::sq_doorbell(self.rnic(), qpn));
    }
    fn busy_poll(&self) -> bool {
        at_dispatch(|| Device::busy_poll(self.rnic()))
    }
    fn rq_doorbell(&self, qpn: Qpn) {
        at_dispatch(|| Device::rq_doorbell(self.rnic(), qpn));
    }
    fn srq_doorbell(&self, srqn: Srqn) {
        at_dispatch(|| Device::srq_doorbell(self.rnic(), srqn));
    }
    fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError> {
        at_dispatch(|| Device::cm_listen(self.rnic(), addr))
    }
    fn cm_pause_listener(&self, listen_id: ListenId, paused: bool) {
        at_dispatch(|| Device::cm_pause_listener(self.rnic(), listen_id, paused));
    }
    fn cm_stop_listener(&self, listen_id: ListenId) {
        at_dispatch(|| Device::cm_stop_listener(self.rnic(), listen_id));
    }
    fn cm_connect(
        &self,
        qpn: Qpn,
        params: &ConnectParams<'_>,
    ) -> Result<(ConnId, SocketAddr), DeviceError> {
        let result = at_dispatch(|| Device::cm_connect(self.rnic(), qpn, params));
        if result.is_err() {
            self.relay.counters.connect_refused();
        }
        result
    }
    fn cm_accept(&self, conn_id: ConnId, params: &AcceptParams<'_>) -> Result<(), DeviceError> {
        at_dispatch(|| Device::cm_accept(self.rnic(), conn_id, params))
    }
    fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError> {
        at_dispatch(|| Device::cm_reject(self.rnic(), conn_id, private_data))
    }
    fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        let result = at_dispatch(|| Device::cm_establish(self.rnic(), conn_id));
        if result.is_ok() {
            self.relay.counters.connected();
        }
        result
    }
    fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        at_dispatch(|| Device::cm_disconnect(self.rnic(), conn_id))
    }
    fn cm_release(&self, conn_id: ConnId) {
        at_dispatch(|| Device::cm_release(self.rnic(), conn_id));
    }
}

//! The device as the provider sees it: the software RNIC, with the
//! connection counters of `OID_NDK_STATISTICS` ([`NdkCounters`]) kept on
//! the way: commands as they return, and device events as they pass on
//! their way to the provider (its event sink is relayed).
//!
//! IRQL is not this wrapper's business: the `hwq` contract says at which
//! level each entry is called (commands at `DISPATCH_LEVEL`, raised by the
//! caller, because the RNIC's spin locks are shared with its engine DPC;
//! doorbells at any level, lock-free), and the provider's device context
//! is the one place that raises, through the kernel platform's
//! `KfRaiseIrql`.

use core::cell::UnsafeCell;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicBool, Ordering};

use hwq::device::{
    AcceptParams, CmEvent, ConnectParams, DeviceCaps, DeviceEvents, EventSink, QpSetup,
    Registration,
};
use hwq::{
    ConnId, Connections, Consumer, Cqe, Cqn, Device, DeviceError, Doorbells, ListenId, MemoryKey,
    Pdn, Producer, Qpn, RecvWqe, Srqn, TryArc, Verbs,
};
use softrnic::device::SoftRnic;

use super::counters::NdkCounters;

/// The software RNIC, counting connection outcomes for the statistics OID.
#[derive(Debug)]
pub struct CountedRnic {
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

impl CountedRnic {
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

    /// The device; commands go through its contract implementation (not
    /// the inherent methods of the same names, which may differ).
    fn rnic(&self) -> &SoftRnic {
        &self.rnic
    }
}

impl Device for CountedRnic {
    fn caps(&self) -> DeviceCaps {
        Device::caps(self.rnic())
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
        // alive until the device's `detach` has returned (this method's
        // documentation, which the provider's device context keeps).
        let ours = unsafe { EventSink::new(relay) };
        let result = Device::attach(self.rnic(), ours);
        if result.is_err() {
            relay.attached.store(false, Ordering::Release);
        }
        result
    }

    fn detach(&self) {
        Device::detach(self.rnic());
        self.relay.attached.store(false, Ordering::Release);
    }

    fn busy_poll(&self) -> bool {
        Device::busy_poll(self.rnic())
    }
}

impl Doorbells for CountedRnic {
    fn sq_doorbell(&self, qpn: Qpn) {
        Doorbells::sq_doorbell(self.rnic(), qpn);
    }

    fn rq_doorbell(&self, qpn: Qpn) {
        Doorbells::rq_doorbell(self.rnic(), qpn);
    }

    fn srq_doorbell(&self, srqn: Srqn) {
        Doorbells::srq_doorbell(self.rnic(), srqn);
    }
}

impl Verbs for CountedRnic {
    fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
        Verbs::create_pd(self.rnic())
    }

    fn destroy_pd(&self, pd: Pdn) {
        Verbs::destroy_pd(self.rnic(), pd);
    }

    fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
        Verbs::alloc_key(self.rnic(), pd, window)
    }

    fn free_key(&self, key: MemoryKey) {
        Verbs::free_key(self.rnic(), key);
    }

    fn register(
        &self,
        key: MemoryKey,
        registration: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError> {
        Verbs::register(self.rnic(), key, registration)
    }

    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
        Verbs::deregister(self.rnic(), key)
    }

    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), DeviceError> {
        Verbs::init_fast_register(self.rnic(), key, max_pages, remote_access)
    }

    fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
        Verbs::create_cq(self.rnic(), ring)
    }

    fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        Verbs::resize_cq(self.rnic(), cqn, ring)
    }

    fn destroy_cq(&self, cqn: Cqn) {
        Verbs::destroy_cq(self.rnic(), cqn);
    }

    fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
        Verbs::arm_cq(self.rnic(), cqn, solicited_only);
    }

    fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
        Verbs::moderate_cq(self.rnic(), cqn, count, usec)
    }

    fn create_srq(
        &self,
        pd: Pdn,
        ring: Consumer<RecvWqe>,
        limit: u32,
    ) -> Result<Srqn, DeviceError> {
        Verbs::create_srq(self.rnic(), pd, ring, limit)
    }

    fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
        Verbs::set_srq_limit(self.rnic(), srqn, limit)
    }

    fn destroy_srq(&self, srqn: Srqn) {
        Verbs::destroy_srq(self.rnic(), srqn);
    }

    fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
        Verbs::create_qp(self.rnic(), setup)
    }

    fn flush_qp(&self, qpn: Qpn) {
        Verbs::flush_qp(self.rnic(), qpn);
    }

    fn destroy_qp(&self, qpn: Qpn) {
        Verbs::destroy_qp(self.rnic(), qpn);
    }
}

impl Connections for CountedRnic {
    fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError> {
        Connections::cm_listen(self.rnic(), addr)
    }

    fn cm_pause_listener(&self, listen_id: ListenId, paused: bool) {
        Connections::cm_pause_listener(self.rnic(), listen_id, paused);
    }

    fn cm_stop_listener(&self, listen_id: ListenId) {
        Connections::cm_stop_listener(self.rnic(), listen_id);
    }

    fn cm_connect(
        &self,
        qpn: Qpn,
        params: &ConnectParams<'_>,
    ) -> Result<(ConnId, SocketAddr), DeviceError> {
        let result = Connections::cm_connect(self.rnic(), qpn, params);
        if result.is_err() {
            self.relay.counters.connect_refused();
        }
        result
    }

    fn cm_accept(&self, conn_id: ConnId, params: &AcceptParams<'_>) -> Result<(), DeviceError> {
        Connections::cm_accept(self.rnic(), conn_id, params)
    }

    fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError> {
        Connections::cm_reject(self.rnic(), conn_id, private_data)
    }

    fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        let result = Connections::cm_establish(self.rnic(), conn_id);
        if result.is_ok() {
            self.relay.counters.connected();
        }
        result
    }

    fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        Connections::cm_disconnect(self.rnic(), conn_id)
    }

    fn cm_release(&self, conn_id: ConnId) {
        Connections::cm_release(self.rnic(), conn_id);
    }
}

//! The `hwq` contract on the software RNIC, one trait per concern: every
//! command is one of [`SoftRnic`]'s inherent methods (the
//! connection-management ones live in `device/commands.rs`).
//!
//! The contract's IRQL rule holds here: the doorbells only set a bit and
//! wake the engine (no lock), so they are legal unraised; every command
//! takes the tables' spin locks and is called at `DISPATCH_LEVEL`.

use core::net::SocketAddr;

use hwq::device::{
    AcceptParams, ConnectParams, Connections, Device, DeviceCaps, DeviceError, Doorbells,
    EventSink, QpSetup, Registration, Verbs,
};
use hwq::{ConnId, Consumer, Cqe, Cqn, ListenId, MemoryKey, Pdn, Producer, Qpn, RecvWqe, Srqn};

use crate::device::SoftRnic;

impl Device for SoftRnic {
    fn caps(&self) -> DeviceCaps {
        SoftRnic::caps(self)
    }

    fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
        SoftRnic::attach(self, sink)
    }

    fn detach(&self) {
        SoftRnic::detach(self);
    }

    fn busy_poll(&self) -> bool {
        self.waker().consumer_poll(self)
    }
}

impl Doorbells for SoftRnic {
    fn sq_doorbell(&self, qpn: Qpn) {
        SoftRnic::sq_doorbell(self, qpn);
    }

    fn rq_doorbell(&self, qpn: Qpn) {
        SoftRnic::rq_doorbell(self, qpn);
    }

    fn srq_doorbell(&self, srqn: Srqn) {
        SoftRnic::srq_doorbell(self, srqn);
    }
}

impl Verbs for SoftRnic {
    fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
        SoftRnic::create_pd(self)
    }

    fn destroy_pd(&self, pd: Pdn) {
        SoftRnic::destroy_pd(self, pd);
    }

    fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
        SoftRnic::alloc_key(self, pd, window)
    }

    fn free_key(&self, key: MemoryKey) {
        SoftRnic::free_key(self, key);
    }

    fn register(
        &self,
        key: MemoryKey,
        registration: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError> {
        SoftRnic::register(self, key, registration)
    }

    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
        SoftRnic::deregister(self, key)
    }

    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), DeviceError> {
        SoftRnic::init_fast_register(self, key, max_pages, remote_access)
    }

    fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
        SoftRnic::create_cq(self, ring)
    }

    fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        SoftRnic::resize_cq(self, cqn, ring)
    }

    fn destroy_cq(&self, cqn: Cqn) {
        SoftRnic::destroy_cq(self, cqn);
    }

    fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
        SoftRnic::arm_cq(self, cqn, solicited_only);
    }

    fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
        SoftRnic::moderate_cq(self, cqn, count, usec)
    }

    fn create_srq(
        &self,
        pd: Pdn,
        ring: Consumer<RecvWqe>,
        limit: u32,
    ) -> Result<Srqn, DeviceError> {
        // The limit counts receives consumed below it: a new, still empty
        // SRQ has consumed none, so arming it must not fire at once (the
        // one-shot event would be spent before the consumer posts).
        let srqn = SoftRnic::create_srq(self, pd, ring, 0)?;
        self.srqs.with(srqn.raw(), |s| s.limit = limit);
        Ok(srqn)
    }

    fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
        SoftRnic::set_srq_limit(self, srqn, limit)
    }

    fn destroy_srq(&self, srqn: Srqn) {
        SoftRnic::destroy_srq(self, srqn);
    }

    fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
        SoftRnic::create_qp(self, setup)
    }

    fn flush_qp(&self, qpn: Qpn) {
        SoftRnic::flush_qp(self, qpn);
    }

    fn destroy_qp(&self, qpn: Qpn) {
        SoftRnic::destroy_qp(self, qpn);
    }
}

impl Connections for SoftRnic {
    fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError> {
        SoftRnic::cm_listen(self, addr)
    }

    fn cm_pause_listener(&self, listen_id: ListenId, paused: bool) {
        SoftRnic::cm_pause_listener(self, listen_id, paused);
    }

    fn cm_stop_listener(&self, listen_id: ListenId) {
        SoftRnic::cm_stop_listener(self, listen_id);
    }

    fn cm_connect(
        &self,
        qpn: Qpn,
        params: &ConnectParams<'_>,
    ) -> Result<(ConnId, SocketAddr), DeviceError> {
        SoftRnic::cm_connect(self, qpn, params)
    }

    fn cm_accept(&self, conn_id: ConnId, params: &AcceptParams<'_>) -> Result<(), DeviceError> {
        SoftRnic::cm_accept(self, conn_id, params)
    }

    fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError> {
        SoftRnic::cm_reject(self, conn_id, private_data)
    }

    fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        SoftRnic::cm_establish(self, conn_id)
    }

    fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError> {
        SoftRnic::cm_disconnect(self, conn_id)
    }

    fn cm_release(&self, conn_id: ConnId) {
        SoftRnic::cm_release(self, conn_id);
    }
}

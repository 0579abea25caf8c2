//! The `hwq` contract on the software RNIC: every command is one of
//! [`SoftRnic`]'s inherent methods (the connection-management ones live in
//! [`crate::cm`]).

use core::net::SocketAddr;

use hwq::device::{
    ConnectParams, Device, DeviceCaps, DeviceError, EventSink, QpSetup, Registration,
};
use hwq::{Consumer, Cqe, MemoryKey, Producer, RecvWqe};

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

    fn create_pd(&self) -> Result<(u32, MemoryKey), DeviceError> {
        SoftRnic::create_pd(self)
    }

    fn destroy_pd(&self, pd: u32) {
        SoftRnic::destroy_pd(self, pd);
    }

    fn alloc_key(&self, pd: u32, window: bool) -> Result<MemoryKey, DeviceError> {
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

    fn create_cq(&self, ring: Producer<Cqe>) -> Result<u32, DeviceError> {
        SoftRnic::create_cq(self, ring)
    }

    fn resize_cq(&self, cqn: u32, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        SoftRnic::resize_cq(self, cqn, ring)
    }

    fn destroy_cq(&self, cqn: u32) {
        SoftRnic::destroy_cq(self, cqn);
    }

    fn arm_cq(&self, cqn: u32, solicited_only: bool) {
        SoftRnic::arm_cq(self, cqn, solicited_only);
    }

    fn moderate_cq(&self, cqn: u32, count: u32, usec: u32) -> Result<(), DeviceError> {
        SoftRnic::moderate_cq(self, cqn, count, usec)
    }

    fn create_srq(&self, pd: u32, ring: Consumer<RecvWqe>, limit: u32) -> Result<u32, DeviceError> {
        // The limit counts receives consumed below it: a new, still empty
        // SRQ has consumed none, so arming it must not fire at once (the
        // one-shot event would be spent before the consumer posts).
        let srqn = SoftRnic::create_srq(self, pd, ring, 0)?;
        self.srqs.with(srqn, |s| s.limit = limit);
        Ok(srqn)
    }

    fn set_srq_limit(&self, srqn: u32, limit: u32) -> Result<(), DeviceError> {
        SoftRnic::set_srq_limit(self, srqn, limit)
    }

    fn destroy_srq(&self, srqn: u32) {
        SoftRnic::destroy_srq(self, srqn);
    }

    fn create_qp(&self, setup: QpSetup) -> Result<u32, DeviceError> {
        SoftRnic::create_qp(self, setup)
    }

    fn flush_qp(&self, qpn: u32) {
        SoftRnic::flush_qp(self, qpn);
    }

    fn destroy_qp(&self, qpn: u32) {
        SoftRnic::destroy_qp(self, qpn);
    }

    fn sq_doorbell(&self, qpn: u32) {
        SoftRnic::sq_doorbell(self, qpn);
    }

    fn busy_poll(&self) -> bool {
        self.waker().consumer_poll(self)
    }

    fn rq_doorbell(&self, qpn: u32) {
        SoftRnic::rq_doorbell(self, qpn);
    }

    fn srq_doorbell(&self, srqn: u32) {
        SoftRnic::srq_doorbell(self, srqn);
    }

    fn cm_listen(&self, addr: SocketAddr) -> Result<(u32, SocketAddr), DeviceError> {
        SoftRnic::cm_listen(self, addr)
    }

    fn cm_pause_listener(&self, listen_id: u32, paused: bool) {
        SoftRnic::cm_pause_listener(self, listen_id, paused);
    }

    fn cm_stop_listener(&self, listen_id: u32) {
        SoftRnic::cm_stop_listener(self, listen_id);
    }

    fn cm_connect(
        &self,
        qpn: u32,
        params: &ConnectParams<'_>,
    ) -> Result<(u32, SocketAddr), DeviceError> {
        SoftRnic::cm_connect(self, qpn, params)
    }

    fn cm_accept(
        &self,
        conn_id: u32,
        qpn: u32,
        inbound_reads: u32,
        outbound_reads: u32,
        private_data: &[u8],
    ) -> Result<(), DeviceError> {
        SoftRnic::cm_accept(
            self,
            conn_id,
            qpn,
            inbound_reads,
            outbound_reads,
            private_data,
        )
    }

    fn cm_reject(&self, conn_id: u32, private_data: &[u8]) -> Result<(), DeviceError> {
        SoftRnic::cm_reject(self, conn_id, private_data)
    }

    fn cm_establish(&self, conn_id: u32) -> Result<(), DeviceError> {
        SoftRnic::cm_establish(self, conn_id)
    }

    fn cm_disconnect(&self, conn_id: u32) -> Result<(), DeviceError> {
        SoftRnic::cm_disconnect(self, conn_id)
    }

    fn cm_release(&self, conn_id: u32) {
        SoftRnic::cm_release(self, conn_id);
    }
}

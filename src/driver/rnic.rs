//! The software RNIC as the provider's device.
//!
//! The RNIC is shared: the provider's `DeviceContext` owns a
//! `Box<dyn Device>`, while the engine DPC and the WSK receive event call
//! it directly. The host shares it with `Arc`, whose allocation cannot
//! fail gracefully; here it lives in a fallible `TryArc` and this newtype
//! forwards the `Device` contract to it.

use core::net::SocketAddr;

use hwq::device::{ConnectParams, DeviceCaps, EventSink, QpSetup, Registration};
use hwq::{Consumer, Cqe, Device, DeviceError, MemoryKey, Producer, RecvWqe, TryArc};
use softrnic::device::SoftRnic;

/// A shared software RNIC.
#[derive(Debug, Clone)]
pub struct SharedRnic(pub TryArc<SoftRnic>);

impl Device for SharedRnic {
    fn caps(&self) -> DeviceCaps {
        self.0.caps()
    }
    fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
        self.0.attach(sink)
    }
    fn detach(&self) {
        self.0.detach();
    }
    fn create_pd(&self) -> Result<(u32, MemoryKey), DeviceError> {
        self.0.create_pd()
    }
    fn destroy_pd(&self, pd: u32) {
        self.0.destroy_pd(pd);
    }
    fn alloc_key(&self, pd: u32, window: bool) -> Result<MemoryKey, DeviceError> {
        self.0.alloc_key(pd, window)
    }
    fn free_key(&self, key: MemoryKey) {
        self.0.free_key(key);
    }
    fn register(
        &self,
        key: MemoryKey,
        registration: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError> {
        self.0.register(key, registration)
    }
    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
        self.0.deregister(key)
    }
    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), DeviceError> {
        self.0.init_fast_register(key, max_pages, remote_access)
    }
    fn create_cq(&self, ring: Producer<Cqe>) -> Result<u32, DeviceError> {
        self.0.create_cq(ring)
    }
    fn resize_cq(&self, cqn: u32, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        self.0.resize_cq(cqn, ring)
    }
    fn destroy_cq(&self, cqn: u32) {
        self.0.destroy_cq(cqn);
    }
    fn arm_cq(&self, cqn: u32, solicited_only: bool) {
        self.0.arm_cq(cqn, solicited_only);
    }
    fn moderate_cq(&self, cqn: u32, count: u32, usec: u32) -> Result<(), DeviceError> {
        self.0.moderate_cq(cqn, count, usec)
    }
    fn create_srq(&self, pd: u32, ring: Consumer<RecvWqe>, limit: u32) -> Result<u32, DeviceError> {
        self.0.create_srq(pd, ring, limit)
    }
    fn set_srq_limit(&self, srqn: u32, limit: u32) -> Result<(), DeviceError> {
        self.0.set_srq_limit(srqn, limit)
    }
    fn destroy_srq(&self, srqn: u32) {
        self.0.destroy_srq(srqn);
    }
    fn create_qp(&self, setup: QpSetup) -> Result<u32, DeviceError> {
        self.0.create_qp(setup)
    }
    fn flush_qp(&self, qpn: u32) {
        self.0.flush_qp(qpn);
    }
    fn destroy_qp(&self, qpn: u32) {
        self.0.destroy_qp(qpn);
    }
    fn sq_doorbell(&self, qpn: u32) {
        self.0.sq_doorbell(qpn);
    }
    fn rq_doorbell(&self, qpn: u32) {
        self.0.rq_doorbell(qpn);
    }
    fn srq_doorbell(&self, srqn: u32) {
        self.0.srq_doorbell(srqn);
    }
    fn cm_listen(&self, addr: SocketAddr) -> Result<(u32, SocketAddr), DeviceError> {
        self.0.cm_listen(addr)
    }
    fn cm_pause_listener(&self, listen_id: u32, paused: bool) {
        self.0.cm_pause_listener(listen_id, paused);
    }
    fn cm_stop_listener(&self, listen_id: u32) {
        self.0.cm_stop_listener(listen_id);
    }
    fn cm_connect(
        &self,
        qpn: u32,
        params: &ConnectParams<'_>,
    ) -> Result<(u32, SocketAddr), DeviceError> {
        self.0.cm_connect(qpn, params)
    }
    fn cm_accept(
        &self,
        conn_id: u32,
        qpn: u32,
        inbound_reads: u32,
        outbound_reads: u32,
        private_data: &[u8],
    ) -> Result<(), DeviceError> {
        self.0
            .cm_accept(conn_id, qpn, inbound_reads, outbound_reads, private_data)
    }
    fn cm_reject(&self, conn_id: u32, private_data: &[u8]) -> Result<(), DeviceError> {
        self.0.cm_reject(conn_id, private_data)
    }
    fn cm_establish(&self, conn_id: u32) -> Result<(), DeviceError> {
        self.0.cm_establish(conn_id)
    }
    fn cm_disconnect(&self, conn_id: u32) -> Result<(), DeviceError> {
        self.0.cm_disconnect(conn_id)
    }
    fn cm_release(&self, conn_id: u32) {
        self.0.cm_release(conn_id);
    }
}

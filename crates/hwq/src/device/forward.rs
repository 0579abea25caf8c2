//! The device traits for shared pointers to a device, by forwarding: the
//! host keeps an `Arc` to drive the engine and hands the provider a clone;
//! the kernel driver shares its device in a fallible `TryArc`.

use core::net::SocketAddr;

use crate::cqe::Cqe;
use crate::id::{ConnId, Cqn, ListenId, Pdn, Qpn, Srqn};
use crate::key::MemoryKey;
use crate::ring::{Consumer, Producer};
use crate::wqe::RecvWqe;

use super::{
    AcceptParams, ConnectParams, Connections, Device, DeviceCaps, DeviceError, Doorbells,
    EventSink, QpSetup, Registration, Verbs,
};

macro_rules! forward_device {
    (impl<$d:ident $(: ?$sized:ident)?> for $ty:ty) => {
        impl<$d: Device $(+ ?$sized)?> Device for $ty {
            fn caps(&self) -> DeviceCaps {
                (**self).caps()
            }
            fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
                (**self).attach(sink)
            }
            fn detach(&self) {
                (**self).detach();
            }
            fn busy_poll(&self) -> bool {
                (**self).busy_poll()
            }
        }

        impl<$d: Device $(+ ?$sized)?> Doorbells for $ty {
            fn sq_doorbell(&self, qpn: Qpn) {
                (**self).sq_doorbell(qpn);
            }
            fn rq_doorbell(&self, qpn: Qpn) {
                (**self).rq_doorbell(qpn);
            }
            fn srq_doorbell(&self, srqn: Srqn) {
                (**self).srq_doorbell(srqn);
            }
        }

        impl<$d: Device $(+ ?$sized)?> Verbs for $ty {
            fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
                (**self).create_pd()
            }
            fn destroy_pd(&self, pd: Pdn) {
                (**self).destroy_pd(pd);
            }
            fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
                (**self).alloc_key(pd, window)
            }
            fn free_key(&self, key: MemoryKey) {
                (**self).free_key(key);
            }
            fn register(
                &self,
                key: MemoryKey,
                registration: &Registration<'_>,
            ) -> Result<MemoryKey, DeviceError> {
                (**self).register(key, registration)
            }
            fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
                (**self).deregister(key)
            }
            fn init_fast_register(
                &self,
                key: MemoryKey,
                max_pages: u32,
                remote_access: bool,
            ) -> Result<(), DeviceError> {
                (**self).init_fast_register(key, max_pages, remote_access)
            }
            fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
                (**self).create_cq(ring)
            }
            fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
                (**self).resize_cq(cqn, ring)
            }
            fn destroy_cq(&self, cqn: Cqn) {
                (**self).destroy_cq(cqn);
            }
            fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
                (**self).arm_cq(cqn, solicited_only);
            }
            fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
                (**self).moderate_cq(cqn, count, usec)
            }
            fn create_srq(
                &self,
                pd: Pdn,
                ring: Consumer<RecvWqe>,
                limit: u32,
            ) -> Result<Srqn, DeviceError> {
                (**self).create_srq(pd, ring, limit)
            }
            fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
                (**self).set_srq_limit(srqn, limit)
            }
            fn destroy_srq(&self, srqn: Srqn) {
                (**self).destroy_srq(srqn);
            }
            fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
                (**self).create_qp(setup)
            }
            fn flush_qp(&self, qpn: Qpn) {
                (**self).flush_qp(qpn);
            }
            fn destroy_qp(&self, qpn: Qpn) {
                (**self).destroy_qp(qpn);
            }
        }

        impl<$d: Device $(+ ?$sized)?> Connections for $ty {
            fn cm_listen(&self, addr: SocketAddr) -> Result<(ListenId, SocketAddr), DeviceError> {
                (**self).cm_listen(addr)
            }
            fn cm_pause_listener(&self, listen_id: ListenId, paused: bool) {
                (**self).cm_pause_listener(listen_id, paused);
            }
            fn cm_stop_listener(&self, listen_id: ListenId) {
                (**self).cm_stop_listener(listen_id);
            }
            fn cm_connect(
                &self,
                qpn: Qpn,
                params: &ConnectParams<'_>,
            ) -> Result<(ConnId, SocketAddr), DeviceError> {
                (**self).cm_connect(qpn, params)
            }
            fn cm_accept(
                &self,
                conn_id: ConnId,
                params: &AcceptParams<'_>,
            ) -> Result<(), DeviceError> {
                (**self).cm_accept(conn_id, params)
            }
            fn cm_reject(&self, conn_id: ConnId, private_data: &[u8]) -> Result<(), DeviceError> {
                (**self).cm_reject(conn_id, private_data)
            }
            fn cm_establish(&self, conn_id: ConnId) -> Result<(), DeviceError> {
                (**self).cm_establish(conn_id)
            }
            fn cm_disconnect(&self, conn_id: ConnId) -> Result<(), DeviceError> {
                (**self).cm_disconnect(conn_id)
            }
            fn cm_release(&self, conn_id: ConnId) {
                (**self).cm_release(conn_id);
            }
        }
    };
}

forward_device!(impl<D: ?Sized> for alloc::sync::Arc<D>);
forward_device!(impl<D> for crate::mem::TryArc<D>);

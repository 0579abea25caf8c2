//! The `hwq` contract on the software RNIC, written once: [`Device`] (caps,
//! the event sink, busy polling), [`Doorbells`] and [`Verbs`] here, and
//! [`hwq::device::Connections`] in `commands.rs`. There is no inherent copy
//! of these entries; callers (the provider, the host, tests) use the traits.
//!
//! The contract's IRQL rule holds here: the doorbells only set a bit and
//! wake the engine (no lock), so they are legal unraised; every command
//! takes the tables' spin locks and is called at `DISPATCH_LEVEL`.

use hwq::device::{
    Device, DeviceCaps, DeviceError, Doorbells, EventSink, QpSetup, ReceiveSource, Registration,
    Verbs,
};
use hwq::{Consumer, Cqe, Cqn, MemoryKey, Pdn, Producer, Qpn, RecvWqe, Srqn};

use super::{FIRST_QPN, ProtectionDomain, SoftRnic, key_error};
use crate::cq::CompletionQueue;
use crate::memory::KeyKind;
use crate::qp::{self, QueuePair, Receives};
use crate::srq::SharedReceiveQueue;

impl Device for SoftRnic {
    fn caps(&self) -> DeviceCaps {
        self.config().caps()
    }

    fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
        let mut slot = self.sink.write();
        if slot.is_some() {
            return Err(DeviceError::InvalidState);
        }
        *slot = Some(sink);
        Ok(())
    }

    fn detach(&self) {
        self.detach_sink();
    }

    fn busy_poll(&self) -> bool {
        self.waker().consumer_poll()
    }
}

impl Doorbells for SoftRnic {
    fn sq_doorbell(&self, qpn: Qpn) {
        self.ring_sq(qpn.raw());
    }

    fn rq_doorbell(&self, qpn: Qpn) {
        self.ring(&self.rq_ready, qpn.raw());
    }

    fn srq_doorbell(&self, srqn: Srqn) {
        self.ring(&self.rq_ready, FIRST_QPN + self.config.max_qps + srqn.raw());
    }
}

impl Verbs for SoftRnic {
    fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
        let pd = self
            .pds
            .insert(ProtectionDomain {
                privileged: MemoryKey(0),
            })
            .ok_or(DeviceError::NoResources)?;
        // The key table is released before the PD's slot is taken (a
        // match on the guard's call would hold it through the arms): slots
        // come before the key table (a QP's engine holds its slot and
        // checks keys).
        let privileged = self.mem.keys.update(|k| k.alloc_privileged(pd));
        match privileged {
            Ok(key) => {
                self.pds.with(pd, |p| p.privileged = key);
                Ok((Pdn::from_raw(pd), key))
            }
            Err(e) => {
                self.pds.remove(pd);
                Err(key_error(e))
            }
        }
    }

    fn destroy_pd(&self, pd: Pdn) {
        if let Some(p) = self.pds.remove(pd.raw()) {
            // The privileged key was allocated with the PD; freeing cannot
            // meet bound windows.
            let _ = self.mem.keys.update(|k| k.free(p.privileged));
        }
    }

    fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
        if !self.pds.contains(pd.raw()) {
            return Err(DeviceError::NoSuchObject);
        }
        let kind = if window {
            KeyKind::Window
        } else {
            KeyKind::Region
        };
        self.mem
            .keys
            .update(|k| k.alloc(kind, pd.raw()))
            .map_err(key_error)
    }

    fn free_key(&self, key: MemoryKey) {
        if self.mem.keys.update(|k| k.free(key)).is_err() {
            // Bound windows keep a region alive; the driver frees windows
            // first (NDK closes MWs before their MR can close), so this only
            // happens for an already-freed key.
        }
    }

    fn register(&self, key: MemoryKey, reg: &Registration<'_>) -> Result<MemoryKey, DeviceError> {
        self.mem
            .keys
            .update(|k| k.register(key, reg))
            .map_err(key_error)
    }

    fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
        self.mem
            .keys
            .update(|k| k.deregister(key))
            .map_err(key_error)
    }

    fn init_fast_register(
        &self,
        key: MemoryKey,
        max_pages: u32,
        remote: bool,
    ) -> Result<(), DeviceError> {
        if max_pages > self.caps().max_fast_register_pages {
            return Err(DeviceError::InvalidParameter);
        }
        self.mem
            .keys
            .update(|k| k.init_fast_register(key, max_pages, remote))
            .map_err(key_error)
    }

    fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
        self.cqs
            .insert(CompletionQueue::new(ring))
            .map(Cqn::from_raw)
            .ok_or(DeviceError::NoResources)
    }

    fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        self.cqs
            .with(cqn.raw(), |cq| cq.replace_ring(ring))
            .ok_or(DeviceError::NoSuchObject)
    }

    fn destroy_cq(&self, cqn: Cqn) {
        self.cqs.remove(cqn.raw());
    }

    fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
        if self.cqs.with(cqn.raw(), |cq| cq.arm(solicited_only)) == Some(true) {
            self.raise(&self.events.cq, cqn.raw());
        }
        // The consumer will wait for the event instead of polling.
        self.waker.cq_armed();
    }

    fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
        if usec > 0 {
            self.engine.note_cq_moderation();
        }
        self.cqs
            .with(cqn.raw(), |cq| cq.moderate(count, usec))
            .ok_or(DeviceError::NoSuchObject)
    }

    fn create_srq(
        &self,
        pd: Pdn,
        ring: Consumer<RecvWqe>,
        limit: u32,
    ) -> Result<Srqn, DeviceError> {
        if !self.pds.contains(pd.raw()) {
            return Err(DeviceError::NoSuchObject);
        }
        let srq = SharedReceiveQueue {
            pd: pd.raw(),
            ring,
            limit: 0,
        };
        let srqn = Srqn::from_raw(self.srqs.insert(srq).ok_or(DeviceError::NoResources)?);
        // The limit counts receives consumed below it: a new, still empty
        // SRQ has consumed none, so arming it must not fire at once (the
        // one-shot event would be spent before the consumer posts).
        self.srqs.with(srqn.raw(), |s| s.limit = limit);
        Ok(srqn)
    }

    fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
        let fire = self
            .srqs
            .with(srqn.raw(), |s| s.set_limit(limit))
            .ok_or(DeviceError::NoSuchObject)?;
        if fire {
            self.raise(&self.events.srq_limit, srqn.raw());
        }
        Ok(())
    }

    fn destroy_srq(&self, srqn: Srqn) {
        self.srqs.remove(srqn.raw());
    }

    fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
        let pd = setup.pd.raw();
        if !self.pds.contains(pd)
            || !self.cqs.contains(setup.send_cqn.raw())
            || !self.cqs.contains(setup.recv_cqn.raw())
        {
            return Err(DeviceError::NoSuchObject);
        }
        let rq = match setup.rq {
            ReceiveSource::Queue(c) => Receives::Own(c),
            ReceiveSource::Shared(srqn) => {
                if self.srqs.with(srqn.raw(), |s| s.pd) != Some(pd) {
                    return Err(DeviceError::InvalidParameter);
                }
                Receives::Shared(srqn.raw())
            }
        };
        let qp = QueuePair::new(
            pd,
            setup.send_cqn.raw(),
            setup.recv_cqn.raw(),
            setup.sq,
            rq,
            setup.context,
        );
        self.qps
            .insert(qp)
            .map(Qpn::from_raw)
            .ok_or(DeviceError::NoResources)
    }

    fn flush_qp(&self, qpn: Qpn) {
        let qpn = qpn.raw();
        // A command has no time of its own: flushing arms no timer, and
        // its context carries the time of the device's latest pass.
        self.with_qp(self.engine.last_now(), qpn, |cx, qp| {
            // An ACK held back for a reply goes now, or the peer would
            // retransmit to a QP that no longer answers.
            if qp.state == qp::QpState::Connected {
                qp::flush_held_ack(cx, qp);
                // An ACK its outbox had no room for stays unsent: the QP
                // sends nothing once flushed, so it is not parked.
                qp.take_tx_stall();
            }
            cx.flush(qpn, qp);
        });
        // The held ACK leaves in the runtime's next transmit turn.
        if self.has_transmits() {
            self.waker().wake_engine();
        }
    }

    fn destroy_qp(&self, qpn: Qpn) {
        self.qps.remove(qpn.raw());
    }
}

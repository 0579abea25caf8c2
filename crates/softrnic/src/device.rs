//! The software RNIC as one object: its tables, its surroundings, and the
//! commands and doorbells of the `hwq` contract.
//!
//! Commands and doorbells never deliver events themselves (the driver may
//! call them holding its own locks); they record what is due in lock-free
//! bitsets and ask for a poll, and [`SoftRnic::poll`] delivers, like an
//! interrupt that arrives after the register write that caused it.

use alloc::boxed::Box;

use core::net::IpAddr;

use hwq::device::{DeviceCaps, DeviceError, EventSink, QpSetup, ReceiveSource, Registration};
use hwq::{Consumer, Cqe, Cqn, DmaAccess, MemoryKey, Pdn, Producer, Qpn, RecvWqe, Srqn, TryArc};
use spin::RwLock;

use crate::addresses::{AddressSet, addr_bits};
use crate::bitset::AtomicBitset;
use crate::cm::CmState;
use crate::cq::CompletionQueue;
use crate::engine_state::Engine;
use crate::env::{Clock, Wake};
use crate::link::{Link, Transmitter};
use crate::memory::{DeviceMemory, KeyError, KeyKind, KeyTable};
use crate::qp::{self, QueuePair, Receives};
use crate::signals::{self, PendingEvents};
use crate::srq::SharedReceiveQueue;
use crate::table::Table;

mod commands;

/// Sizes of a device's tables and its network identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceConfig {
    /// The device's first address (IPv4 or IPv6): the one-address set it
    /// starts with (empty if unspecified), which
    /// [`SoftRnic::set_addresses`] replaces. How addresses are used:
    /// [`crate::cm`]'s "Addresses".
    pub addr: IpAddr,
    /// Path MTU (256, 512, 1024, 2048 or 4096).
    pub pmtu: u32,
    /// Queue pairs.
    pub max_qps: u32,
    /// Completion queues.
    pub max_cqs: u32,
    /// Shared receive queues.
    pub max_srqs: u32,
    /// Protection domains.
    pub max_pds: u32,
    /// Memory keys (regions and windows).
    pub max_keys: u32,
    /// Give each connected QP its own UDP source port (ECMP entropy, in
    /// 0xC000..=0xFFFF) instead of 4791. Only for links that carry the
    /// whole datagram (the in-memory fabric): a UDP socket sends from the
    /// port it is bound to, and the ICRC covers the source port.
    pub per_qp_source_port: bool,
}

impl DeviceConfig {
    /// Default table sizes for a device at `addr` with path MTU `pmtu`.
    pub fn new(addr: impl Into<IpAddr>, pmtu: u32) -> Self {
        Self {
            addr: addr.into(),
            pmtu,
            max_qps: 1024,
            max_cqs: 1024,
            max_srqs: 256,
            max_pds: 256,
            max_keys: 16384,
            per_qp_source_port: false,
        }
    }

    /// The limits, as the `hwq` contract reports them, of a device built
    /// with this configuration.
    pub fn caps(&self) -> DeviceCaps {
        DeviceCaps {
            vendor_id: 0,
            device_id: 0x5253, // "RS"
            max_qp_depth: 16384,
            max_srq_depth: 16384,
            max_cq_depth: 65536,
            max_registration: 1 << 32,
            max_fast_register_pages: 256,
            max_transfer: 1 << 30,
            max_inbound_reads: 16,
            max_outbound_reads: 16,
            max_connect_data: 56,
            // An accept carries 196 bytes (REP) but a reject only 148
            // (REJ), and NDK has one limit for both.
            max_accept_data: 148,
            path_mtu: self.pmtu,
            loopback: true,
        }
    }
}

/// The first QP number handed out: 0 and 1 are the special QPs (1 carries
/// connection management).
pub const FIRST_QPN: u32 = 2;

#[derive(Debug)]
struct ProtectionDomain {
    privileged: MemoryKey,
}

fn key_error(e: KeyError) -> DeviceError {
    match e {
        KeyError::NoResources => DeviceError::NoResources,
        KeyError::UnknownKey => DeviceError::NoSuchObject,
        KeyError::Busy | KeyError::NotValid | KeyError::WrongKind => DeviceError::InvalidState,
        KeyError::WrongPd | KeyError::Access | KeyError::Bounds | KeyError::Invalid => {
            DeviceError::InvalidParameter
        }
    }
}

/// The software RNIC.
pub struct SoftRnic {
    config: DeviceConfig,
    /// The addresses it sends from and answers at (`addresses.rs`).
    pub(crate) addresses: RwLock<AddressSet>,
    /// Key table and DMA, shared with trains in flight.
    pub(crate) mem: TryArc<DeviceMemory>,
    pub(crate) link: Box<dyn Link>,
    pub(crate) clock: Box<dyn Clock>,
    waker: Box<dyn Wake>,
    sink: RwLock<Option<EventSink>>,
    pds: Table<ProtectionDomain>,
    pub(crate) cqs: Table<CompletionQueue>,
    pub(crate) srqs: Table<SharedReceiveQueue>,
    pub(crate) qps: Table<QueuePair>,
    /// QPs whose send-queue doorbell rang.
    pub(crate) sq_ready: AtomicBitset,
    /// QPs (and, offset by `max_qps`, SRQs) whose receive doorbell rang.
    pub(crate) rq_ready: AtomicBitset,
    events: PendingEvents,
    /// Connection management (`cm/`).
    pub(crate) cm: CmState,
    /// The RC engine's timers, tap, defaults and counters (`engine.rs`).
    pub(crate) engine: Engine,
}

impl core::fmt::Debug for SoftRnic {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SoftRnic")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Drop for SoftRnic {
    /// Trains from this device may still be in flight and
    /// hold its memory: they must find every key dead, since the memory
    /// its keys named is its consumers' to free once the device is gone.
    fn drop(&mut self) {
        self.mem.keys.write().revoke_all();
    }
}

impl SoftRnic {
    /// Builds a device. All tables are allocated here; `None` if memory ran out.
    pub fn new(
        config: DeviceConfig,
        dma: Box<dyn DmaAccess>,
        link: Box<dyn Link>,
        clock: Box<dyn Clock>,
        waker: Box<dyn Wake>,
    ) -> Option<Self> {
        let qp_bound = FIRST_QPN + config.max_qps;
        let cm_seed = clock.now_us() ^ (addr_bits(config.addr) << 32);
        Some(Self {
            config,
            addresses: RwLock::new(AddressSet::initial(config.addr)),
            // Fallible: in the kernel a failed allocation must be a
            // failed device creation, never an abort (a bugcheck).
            mem: TryArc::try_new_or_drop(DeviceMemory {
                keys: RwLock::new(KeyTable::new(config.max_keys + config.max_pds).ok()?),
                dma,
            })
            .ok()?,
            link,
            clock,
            waker,
            sink: RwLock::new(None),
            pds: Table::new(1, config.max_pds)?,
            cqs: Table::new(1, config.max_cqs)?,
            srqs: Table::new(1, config.max_srqs)?,
            qps: Table::new(FIRST_QPN, config.max_qps)?,
            sq_ready: AtomicBitset::new(qp_bound)?,
            rq_ready: AtomicBitset::new(qp_bound + 1 + config.max_srqs)?,
            events: PendingEvents::new(config.max_cqs, config.max_srqs, qp_bound)?,
            cm: CmState::new(config.max_qps, cm_seed)?,
            engine: Engine::new(qp_bound)?,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &DeviceConfig {
        &self.config
    }

    /// The device's limits as the `hwq` contract reports them.
    pub fn caps(&self) -> DeviceCaps {
        self.config.caps()
    }

    // ---- addresses ----

    /// Replaces the device's addresses (IPv4 and IPv6 together; up to
    /// [`crate::addresses::MAX_ADDRESSES`]). Connections are left alone: one whose address
    /// went stops receiving (its peer's retransmissions run out, or the
    /// address comes back and it carries on). On error (an unusable or
    /// one too many address) the set is unchanged.
    pub fn set_addresses(&self, addrs: &[IpAddr]) -> Result<(), DeviceError> {
        let set = AddressSet::new(addrs)?;
        *self.addresses.write() = set;
        Ok(())
    }

    /// The device's addresses now.
    pub fn addresses(&self) -> AddressSet {
        *self.addresses.read()
    }

    /// Whether `ip` is one of the device's addresses now.
    pub fn has_address(&self, ip: IpAddr) -> bool {
        self.addresses.read().contains(ip)
    }

    // ---- events ----

    /// Installs the driver's event sink.
    pub fn attach(&self, sink: EventSink) -> Result<(), DeviceError> {
        let mut slot = self.sink.write();
        if slot.is_some() {
            return Err(DeviceError::InvalidState);
        }
        *slot = Some(sink);
        Ok(())
    }

    /// Removes the sink; waits for an event delivery in progress to end.
    pub fn detach(&self) {
        *self.sink.write() = None;
    }

    /// Delivers every pending event; returns whether there were any.
    pub fn deliver_events(&self) -> bool {
        let sink = self.sink.read();
        let mut any = false;
        let Some(sink) = sink.as_ref() else {
            // Nobody listens: drop them, as a masked interrupt would be.
            for set in self.events.all() {
                set.drain(|_| any = true);
            }
            return self.cm.deliver(None) || any;
        };
        self.events.cq_overflow.drain(|cqn| {
            any = true;
            sink.cq_event(Cqn::from_raw(cqn), true);
        });
        self.events.cq.drain(|cqn| {
            any = true;
            sink.cq_event(Cqn::from_raw(cqn), false);
        });
        self.events.srq_limit.drain(|srqn| {
            any = true;
            sink.srq_limit(Srqn::from_raw(srqn));
        });
        self.events.qp_error.drain(|qpn| {
            any = true;
            sink.qp_error(Qpn::from_raw(qpn));
        });
        self.cm.deliver(Some(sink)) || any
    }

    /// How the device asks for its engine to run.
    pub(crate) fn waker(&self) -> &dyn Wake {
        &*self.waker
    }

    /// Records an event for delivery, which only the device's own context
    /// does.
    fn raise(&self, set: &AtomicBitset, n: u32) {
        signals::raise(set, n, &*self.waker);
    }

    /// Records a doorbell; a busy poller may serve it.
    fn ring(&self, set: &AtomicBitset, n: u32) {
        signals::ring(set, n, &*self.waker);
    }

    /// The transport's view of the device at time `now`
    /// ([`qp::Context`]), for handing to the QPs' state machines.
    pub(crate) fn transport(&self, now: u64) -> qp::Context<'_> {
        qp::Context {
            mem: &self.mem,
            stats: &self.engine.stats,
            cqs: &self.cqs,
            srqs: &self.srqs,
            events: &self.events,
            sq_ready: &self.sq_ready,
            waker: &*self.waker,
            tx: self.transmitter(),
            now,
        }
    }

    /// How the device sends: its link, tap and counters.
    pub(crate) fn transmitter(&self) -> Transmitter<'_> {
        Transmitter {
            link: &*self.link,
            tap: &self.engine.tap,
            stats: &self.engine.stats,
        }
    }

    // ---- protection domains and keys ----

    /// Creates a PD and its privileged key.
    pub fn create_pd(&self) -> Result<(Pdn, MemoryKey), DeviceError> {
        let pd = self
            .pds
            .insert(ProtectionDomain {
                privileged: MemoryKey(0),
            })
            .ok_or(DeviceError::NoResources)?;
        match self.mem.keys.write().alloc_privileged(pd) {
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

    /// Destroys a PD (and its privileged key).
    pub fn destroy_pd(&self, pd: Pdn) {
        if let Some(p) = self.pds.remove(pd.raw()) {
            // The privileged key was allocated with the PD; freeing cannot
            // meet bound windows.
            let _ = self.mem.keys.write().free(p.privileged);
        }
    }

    /// Reserves a key entry.
    pub fn alloc_key(&self, pd: Pdn, window: bool) -> Result<MemoryKey, DeviceError> {
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
            .write()
            .alloc(kind, pd.raw())
            .map_err(key_error)
    }

    /// Releases a key entry.
    pub fn free_key(&self, key: MemoryKey) {
        let mut keys = self.mem.keys.write();
        if keys.free(key).is_err() {
            // Bound windows keep a region alive; the driver frees windows
            // first (NDK closes MWs before their MR can close), so this only
            // happens for an already-freed key.
        }
    }

    /// Registers memory.
    pub fn register(
        &self,
        key: MemoryKey,
        reg: &Registration<'_>,
    ) -> Result<MemoryKey, DeviceError> {
        self.mem.keys.write().register(key, reg).map_err(key_error)
    }

    /// Drops a registration.
    pub fn deregister(&self, key: MemoryKey) -> Result<(), DeviceError> {
        self.mem.keys.write().deregister(key).map_err(key_error)
    }

    /// Prepares fast registration.
    pub fn init_fast_register(
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
            .write()
            .init_fast_register(key, max_pages, remote)
            .map_err(key_error)
    }

    // ---- completion queues ----

    /// Creates a CQ.
    pub fn create_cq(&self, ring: Producer<Cqe>) -> Result<Cqn, DeviceError> {
        self.cqs
            .insert(CompletionQueue::new(ring))
            .map(Cqn::from_raw)
            .ok_or(DeviceError::NoResources)
    }

    /// Replaces a CQ's ring.
    pub fn resize_cq(&self, cqn: Cqn, ring: Producer<Cqe>) -> Result<(), DeviceError> {
        self.cqs
            .with(cqn.raw(), |cq| cq.replace_ring(ring))
            .ok_or(DeviceError::NoSuchObject)
    }

    /// Destroys a CQ.
    pub fn destroy_cq(&self, cqn: Cqn) {
        self.cqs.remove(cqn.raw());
    }

    /// Arms a CQ.
    pub fn arm_cq(&self, cqn: Cqn, solicited_only: bool) {
        if self.cqs.with(cqn.raw(), |cq| cq.arm(solicited_only)) == Some(true) {
            self.raise(&self.events.cq, cqn.raw());
        }
        // The consumer will wait for the event instead of polling.
        self.waker.cq_armed();
    }

    /// Sets a CQ's interrupt moderation.
    pub fn moderate_cq(&self, cqn: Cqn, count: u32, usec: u32) -> Result<(), DeviceError> {
        if usec > 0 {
            self.engine.note_cq_moderation();
        }
        self.cqs
            .with(cqn.raw(), |cq| cq.moderate(count, usec))
            .ok_or(DeviceError::NoSuchObject)
    }

    /// Fires moderated CQ events whose interval elapsed; returns whether a
    /// moderation timer still runs.
    pub(crate) fn tick_cqs(&self, now_us: u64) -> bool {
        let mut pending = false;
        for cqn in 1..=self.config.max_cqs {
            if let Some((fire, still)) = self
                .cqs
                .with(cqn, |cq| (cq.tick(now_us), cq.timer_pending()))
            {
                if fire {
                    self.raise(&self.events.cq, cqn);
                }
                pending |= still;
            }
        }
        pending
    }

    // ---- shared receive queues ----

    /// Creates an SRQ.
    pub fn create_srq(
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
        self.set_srq_limit(srqn, limit)?;
        Ok(srqn)
    }

    /// Arms or disarms an SRQ's limit.
    pub fn set_srq_limit(&self, srqn: Srqn, limit: u32) -> Result<(), DeviceError> {
        let fire = self
            .srqs
            .with(srqn.raw(), |s| s.set_limit(limit))
            .ok_or(DeviceError::NoSuchObject)?;
        if fire {
            self.raise(&self.events.srq_limit, srqn.raw());
        }
        Ok(())
    }

    /// Destroys an SRQ.
    pub fn destroy_srq(&self, srqn: Srqn) {
        self.srqs.remove(srqn.raw());
    }

    // ---- queue pairs ----

    /// Creates a QP.
    pub fn create_qp(&self, setup: QpSetup) -> Result<Qpn, DeviceError> {
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

    /// Moves a QP to error, completing all its work as flushed.
    pub fn flush_qp(&self, qpn: Qpn) {
        let qpn = qpn.raw();
        let cx = self.transport(self.clock.now_us());
        self.qps.with(qpn, |qp| {
            // An ACK held back for a reply goes now, or the peer would
            // retransmit to a QP that no longer answers.
            if qp.state == qp::QpState::Connected {
                qp::flush_held_ack(&cx, qp);
                cx.tx.flush();
                // An ACK the link had no room for stays unsent: the QP
                // sends nothing once flushed, so it is not parked.
                qp.take_tx_stall();
            }
            cx.flush(qpn, qp);
        });
    }

    /// Destroys a QP.
    pub fn destroy_qp(&self, qpn: Qpn) {
        self.qps.remove(qpn.raw());
    }

    /// Send doorbell.
    pub fn sq_doorbell(&self, qpn: Qpn) {
        self.ring_sq(qpn.raw());
    }

    /// Rings QP `qpn`'s send doorbell from inside the device (a QP that
    /// has more to send once an ACK, a credit or link room arrives).
    pub(crate) fn ring_sq(&self, qpn: u32) {
        self.ring(&self.sq_ready, qpn);
    }

    /// Receive doorbell.
    pub fn rq_doorbell(&self, qpn: Qpn) {
        self.ring(&self.rq_ready, qpn.raw());
    }

    /// SRQ doorbell.
    pub fn srq_doorbell(&self, srqn: Srqn) {
        self.ring(&self.rq_ready, FIRST_QPN + self.config.max_qps + srqn.raw());
    }
}

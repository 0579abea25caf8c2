//! The software RNIC as one object: its tables and its surroundings. It
//! implements the `hwq` contract directly, each entry once: `contract.rs`
//! (device, doorbells, verbs) and `commands.rs` (connection management).
//!
//! Commands and doorbells never deliver events themselves (the driver may
//! call them holding its own locks); they record what is due in lock-free
//! bitsets and ask for a poll, and [`SoftRnic::poll`] delivers, like an
//! interrupt that arrives after the register write that caused it.

use alloc::boxed::Box;

use core::net::IpAddr;
use core::sync::atomic::{AtomicU32, Ordering};

use hwq::device::{DeviceCaps, DeviceError, EventSink};
use hwq::lock::LockClass;
use hwq::{Cqn, DmaAccess, MemoryKey, Qpn, Srqn, TryArc};

use crate::addresses::{AddressSet, addr_bits};
use crate::bitset::AtomicBitset;
use crate::cm::CmState;
use crate::cq::CompletionQueue;
use crate::engine_state::Engine;
use crate::env::{Routes, Wake};
use crate::memory::{DeviceMemory, KeyError, KeyLock, KeyTable};
use crate::outbox::Outbox;
use crate::qp::{self, QueuePair};
use crate::signals::{self, PendingEvents};
use crate::srq::SharedReceiveQueue;
use crate::sync::RwLock;
use crate::table::Table;

mod commands;
mod contract;

/// Every device's address set.
static ADDRESSES_LOCK: LockClass = LockClass::new("softrnic addresses");
/// Every device's event sink slot.
static SINK_LOCK: LockClass = LockClass::new("softrnic event sink");

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
    /// Pages one fast registration maps at most (`FRMRPageCount`).
    pub max_fast_register_pages: u32,
    /// Mixed into the seed of connection management's identifiers (comm
    /// IDs, PSNs, transaction IDs, ephemeral ports) with the start time and
    /// the address. A runtime whose clock starts at zero in each process
    /// must give each process its own: a peer that still remembers a dead
    /// process's connection takes the next process's first REQ, carrying
    /// the same comm ID, for a duplicate (Linux's IB CM draws its comm IDs
    /// at random for this reason).
    pub cm_entropy: u64,
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
            // 1 MiB of page-aligned buffer.
            max_fast_register_pages: 256,
            cm_entropy: 0,
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
            max_fast_register_pages: self.max_fast_register_pages,
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
    /// Its runtime's routes (path MTUs to peers).
    pub(crate) routes: Box<dyn Routes>,
    waker: Box<dyn Wake>,
    /// The driver's event sink. Deliveries copy it out and call it with
    /// the lock released ([`SoftRnic::deliver_events`]).
    sink: RwLock<Option<EventSink>>,
    /// Deliveries calling a sink they copied out; detach waits for none.
    delivering: AtomicU32,
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
    /// The RC engine's timers, defaults and counters (`engine.rs`).
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
        self.mem.keys.update(KeyTable::revoke_all);
    }
}

impl SoftRnic {
    /// Builds a device whose time starts at `now` (µs on its runtime's
    /// monotonic clock, the time its run entry points will be given;
    /// it also seeds connection management's identifiers). All tables are
    /// allocated here; `None` if memory ran out.
    pub fn new(
        config: DeviceConfig,
        dma: Box<dyn DmaAccess>,
        routes: Box<dyn Routes>,
        now: u64,
        waker: Box<dyn Wake>,
    ) -> Option<Self> {
        let qp_bound = FIRST_QPN + config.max_qps;
        let cm_seed = now ^ (addr_bits(config.addr) << 32) ^ config.cm_entropy;
        Some(Self {
            config,
            addresses: RwLock::new(&ADDRESSES_LOCK, AddressSet::initial(config.addr)),
            // Fallible: in the kernel a failed allocation must be a
            // failed device creation, never an abort (a bugcheck).
            mem: TryArc::try_new_or_drop(DeviceMemory {
                keys: KeyLock::new(KeyTable::new(config.max_keys + config.max_pds).ok()?),
                dma,
            })
            .ok()?,
            routes,
            waker,
            sink: RwLock::new(&SINK_LOCK, None),
            delivering: AtomicU32::new(0),
            pds: Table::new(1, config.max_pds)?,
            cqs: Table::new(1, config.max_cqs)?,
            srqs: Table::new(1, config.max_srqs)?,
            qps: Table::new(FIRST_QPN, config.max_qps)?,
            sq_ready: AtomicBitset::new(qp_bound)?,
            rq_ready: AtomicBitset::new(qp_bound + 1 + config.max_srqs)?,
            events: PendingEvents::new(config.max_cqs, config.max_srqs, qp_bound)?,
            cm: CmState::new(config.max_qps, cm_seed)?,
            engine: Engine::new(qp_bound, now)?,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &DeviceConfig {
        &self.config
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

    /// Delivers every pending event; returns whether there were any.
    ///
    /// The sink is called with no lock held: it is copied out of its slot
    /// (counted in `delivering`, which detach waits out), so a consumer
    /// callback may re-enter the device, even this delivery, and the
    /// consumer's own locks never nest inside the device's. Events keep
    /// their order: each set drains in order, as before.
    pub fn deliver_events(&self) -> bool {
        let sink = {
            let slot = self.sink.read();
            if slot.is_some() {
                // Counted before the slot's lock is released, so a detach
                // (which takes it exclusively) sees every copy made.
                self.delivering.fetch_add(1, Ordering::Acquire);
            }
            *slot
        };
        let mut any = false;
        let Some(sink) = sink else {
            // Nobody listens: drop them, as a masked interrupt would be.
            for set in self.events.all() {
                set.drain(|_| any = true);
            }
            return self.cm.deliver(None) || any;
        };
        let _delivering = Delivering(&self.delivering);
        let sink = &sink;
        let stats = &self.engine.stats;
        self.events.cq_overflow.drain(|cqn| {
            any = true;
            stats.cq_overflows.inc();
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
            stats.qp_errors.inc();
            sink.qp_error(Qpn::from_raw(qpn));
        });
        self.cm.deliver(Some((sink, stats))) || any
    }

    /// Stops calling the event sink: when it returns no delivery is
    /// calling it or will (deliveries that copied it before it left are
    /// waited out). Not from inside a delivery (the contract's
    /// `Device::detach` is called outside any event).
    pub(crate) fn detach_sink(&self) {
        *self.sink.write() = None;
        while self.delivering.load(Ordering::Acquire) != 0 {
            core::hint::spin_loop();
        }
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
    /// ([`qp::Context`]), recording what it sends in `out`, for handing to
    /// the QPs' state machines.
    pub(crate) fn transport<'a>(&'a self, now: u64, out: &'a Outbox) -> qp::Context<'a> {
        qp::Context {
            out,
            mem: &self.mem,
            stats: &self.engine.stats,
            cqs: &self.cqs,
            srqs: &self.srqs,
            events: &self.events,
            sq_ready: &self.sq_ready,
            waker: &*self.waker,
            trains: self.engine.tx_trains.load(Ordering::Relaxed),
            now,
        }
    }

    // ---- completion queues ----

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

    // ---- queue pairs ----

    /// Rings QP `qpn`'s send doorbell from inside the device (a QP that
    /// has more to send once an ACK, a credit or link room arrives).
    pub(crate) fn ring_sq(&self, qpn: u32) {
        self.ring(&self.sq_ready, qpn);
    }
}

/// One delivery calling a copied sink; dropping it ends the count.
struct Delivering<'a>(&'a AtomicU32);

impl Drop for Delivering<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

//! The software RNIC's Ethernet attachment in the MUX: its frames go down
//! the binding to the NIC (P) from the port's own NBLs, and the frames P
//! receives for it are taken out of the stream before they reach V.
//!
//! `softrnic`'s [`EthernetPort`] does the Ethernet work (neighbour
//! resolution with ARP and IPv6 neighbour discovery, framing, receive
//! classification, own-address loopback); this module is its kernel
//! shell:
//!
//! * Send: the RNIC owns no link; what it sends waits in its outboxes
//!   until the port takes it ([`L2Port::transmit`], through
//!   `EthernetPort::pump`), after every engine pass (the [`Pump`]) and at
//!   the end of every receive indication
//!   ([`L2Port::transmit_after_receive`]). The RNIC builds each datagram
//!   into the port's frame, which frames it in place and hands it to
//!   [`NblSink::send_frame`]; that copies it into a preallocated frame
//!   ([`pool`]) and adds it to the pending batch. The pump's flush
//!   (`FrameSink::flush`) sends the batch down with one
//!   `Binding::send_own`, as does a batch that reaches `SEND_BATCH`
//!   frames. No frame free, a frame too long or a binding that does not
//!   run drops it (RoCE's RC transport retransmits; an ARP request is
//!   asked again). The completion gives the frame back
//!   ([`L2Port::send_complete`]). A datagram longer than the link's MTU
//!   the pump gives back to the RNIC (`SoftRnic::send_failed`), which
//!   fails the QP that sent it.
//! * Backpressure: the pump asks before each packet whether a frame is
//!   free ([`NblSink::has_room`]) and stops taking the RNIC's packets
//!   while none is, as a NIC driver stops its queue on a full ring: the
//!   RNIC's outboxes fill and its QPs stop where they are. The give-back
//!   that makes room again kicks the engine, whose next pass pumps (the
//!   RNIC still has packets waiting): the stopped QPs go on where they
//!   stopped, and a burst larger than the pool is held, not dropped.
//! * Path MTU: the RNIC asks the port's routes ([`PortRoutes`]) once per
//!   connection; they answer what the link's current MTU carries.
//! * Receive: [`L2Port::take_received`] shows each received frame to the
//!   port, in place or copied into a bounce buffer ([`receive`]), at
//!   DISPATCH_LEVEL, in one call into softrnic
//!   (`EthernetPort::receive_frame`): the port checks its headers once,
//!   counts a RoCEv2 datagram for one of V's addresses (the RDMA octets
//!   of `OID_NDK_STATISTICS`) and hands it to the RNIC's one receive door
//!   (`SoftRnic::receive`), and the frame is consumed; everything else
//!   (ARP and neighbour discovery included, after the port has learnt
//!   from them) goes up V unchanged.
//! * Crossings: a batch of the RNIC's datagrams crosses into the driver
//!   once, at [`NblSink`] (one `EthernetPort::pump` call per batch), and
//!   leaves in one call to NDIS; a received frame crosses into softrnic
//!   once (`EthernetPort::receive_frame`).
//! * Loopback: a datagram to one of V's own addresses never reaches the
//!   wire (the NIC does not hairpin frames); the port queues it and calls
//!   [`NblSink::loopback_ready`], which kicks the engine, whose pass hands
//!   the queue to the RNIC outside its locks (the [`Pump`]).
//! * Lifetime: created at V's initialisation on an open binding
//!   ([`L2Port::create`]), attached to the RNIC and its engine
//!   ([`L2Port::attach`]), detached before they stop ([`L2Port::detach`]),
//!   and shut down at V's halt once the binding's sends have drained
//!   ([`L2Port::shutdown`]); the memory goes with the last reference.

mod pool;
mod receive;

use alloc::boxed::Box;
use core::net::IpAddr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use hwq::TryArc;
use ndis::DISPATCH_LEVEL;
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};
use softrnic::device::SoftRnic;
use softrnic::env::Routes;
use softrnic::l2::{EthernetPort, FrameSink};

use self::pool::{GivenBack, SendPool};
use self::receive::Bounce;
use super::binding::Binding;
use super::clock;
use super::engine::{self, Engine, EngineCore, Pump};
use super::irql;
use super::kit::deferred::Deferred;
use super::kit::kernel::{ClaimFlag, SpinLock, wait_briefly};
use super::kit::memory::{Attached, try_box};
use super::kit::nbl::{Nbl, NblChain};
use super::log::log_info;

/// Send counters of a port (`OID_NDK_STATISTICS`' RDMA frames and
/// octets out): RoCEv2 frames only, bytes counted as UDP payload (BTH
/// through ICRC); ARP and neighbour discovery frames are not counted. The
/// receive side is the `EthernetPort`'s own (`steered`, `steered_bytes`,
/// [`L2Port::rdma_in`]).
#[derive(Debug, Default)]
pub struct L2Stats {
    /// RoCEv2 frames handed to the NIC.
    pub sent: AtomicU64,
    /// UDP payload bytes of those frames.
    pub sent_bytes: AtomicU64,
    /// Frames the port could not send: no free frame, too long, or the
    /// binding not running.
    pub send_drops: AtomicU64,
    /// Times the pump found no free frame for the RNIC's next packet and
    /// stopped taking them (`send_drops` counts what was lost instead).
    pub send_waits: AtomicU64,
    /// Times the pool had room again after running out (the engine was
    /// kicked to pump again).
    pub send_resumes: AtomicU64,
    /// Received frames the port could not look at (no RNIC attached, or
    /// NDIS could not map a split frame); passed up.
    pub receive_drops: AtomicU64,
}

/// What the port's sink works with, shared between the port and the sink
/// the `EthernetPort` owns.
struct Frames {
    pool: SendPool,
    binding: TryArc<Binding>,
    /// The engine to kick for loopback and for room again, while attached
    /// (its users counted: the detach rundown).
    engine: Attached<Deferred<EngineCore<L2Port>>>,
    /// No more sends (set by `shutdown`).
    closed: AtomicBool,
    /// Sink calls sending now (the shutdown rundown).
    senders: AtomicU32,
    /// Frames filled and not yet sent: the pump's flush (after a pass, a
    /// receive indication) sends them in one call.
    pending: SpinLock<Batch>,
    /// A caller is sending batches (one at a time: `send_pending`).
    sending: ClaimFlag,
    /// Frames in `pending`, as last set under its lock: a flush that finds
    /// none takes no lock (a caller always sees its own frames here; the
    /// frames of others are theirs to flush).
    waiting: AtomicU32,
    stats: L2Stats,
}

/// Frames waiting to go down together, with their RoCEv2 counts.
#[derive(Debug, Default)]
struct Batch {
    chain: NblChain,
    rdma_frames: u64,
    rdma_bytes: u64,
}

/// Frames a batch holds before it goes down without waiting for the
/// flush: an eighth of the pool, so a long drain keeps the NIC fed.
const SEND_BATCH: u32 = (pool::FRAMES / 8) as u32;

/// The [`FrameSink`] of the port: frames go down the binding in the
/// port's own NBLs.
#[derive(Debug)]
pub struct NblSink(TryArc<Frames>);

impl core::fmt::Debug for Frames {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Frames")
            .field("pool", &self.pool)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Frames {
    /// Takes one frame for the next batch (`<= DISPATCH_LEVEL`, as every
    /// caller of the port runs), with `rdma` bytes of RoCEv2 payload to
    /// count when it is sent (the port's, see `FrameSink::send_frame`);
    /// whether it was taken. A full batch goes down at once.
    fn send(&self, frame: &[u8], rdma: Option<usize>) -> bool {
        self.senders.fetch_add(1, Ordering::SeqCst);
        let taken = !self.closed.load(Ordering::SeqCst) && self.queue(frame, rdma);
        self.senders.fetch_sub(1, Ordering::SeqCst);
        if !taken {
            self.stats.send_drops.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// Fills a free frame with `frame` and adds it to the pending batch.
    fn queue(&self, frame: &[u8], rdma: Option<usize>) -> bool {
        let Some(claimed) = self.pool.claim() else {
            return false;
        };
        let nbl = match claimed.fill(frame) {
            Ok(nbl) => nbl,
            Err(claimed) => {
                if claimed.release() {
                    self.note_room_again();
                }
                return false;
            }
        };
        let full = self.pending.locked(|batch| {
            batch.chain.push(nbl);
            if let Some(len) = rdma {
                batch.rdma_frames += 1;
                batch.rdma_bytes += len as u64;
            }
            self.waiting.store(batch.chain.len(), Ordering::Relaxed);
            batch.chain.len() >= SEND_BATCH
        });
        if full {
            self.send_pending();
        }
        true
    }

    /// Sends the pending batch down the binding in one call
    /// (`<= DISPATCH_LEVEL`); while the binding does not run, its frames
    /// are given back and counted as dropped. One caller sends at a time,
    /// so batches leave in the order their frames were taken (a QP's
    /// packets in PSN order: two batches sent side by side could pass
    /// each other, which the peer would take as loss). A caller that finds
    /// another sending leaves its frames to it: the sender takes the
    /// pending batch again until it finds it empty after letting go.
    fn send_pending(&self) {
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        loop {
            if !self.sending.try_claim() {
                return;
            }
            while let Some(batch) = self.take_pending() {
                self.send_batch(batch);
            }
            self.sending.release();
            // A frame added after the last take, whose sender found this
            // one still sending, is sent by whichever caller claims next:
            // this check and that frame's push are ordered by the pending
            // lock, so either the check sees the frame or the push came
            // after the release above, and that sender's claim succeeds.
            if self.pending.locked(|batch| batch.chain.is_empty()) {
                return;
            }
        }
    }

    /// The pending batch, unless it is empty.
    fn take_pending(&self) -> Option<Batch> {
        let batch = self.pending.locked(|batch| {
            self.waiting.store(0, Ordering::Relaxed);
            core::mem::take(batch)
        });
        (!batch.chain.is_empty()).then_some(batch)
    }

    /// Sends `batch` (the caller holds `sending`).
    fn send_batch(&self, batch: Batch) {
        let dispatch = irql::current() >= DISPATCH_LEVEL;
        // Counted before the frames leave: whoever sees their effect (the
        // peer's completion) sees the count too.
        let Batch {
            chain,
            rdma_frames,
            rdma_bytes,
        } = batch;
        self.count_sent(rdma_frames, rdma_bytes, true);
        if let Err(mut chain) = self.binding.send_own(chain, dispatch) {
            self.count_sent(rdma_frames, rdma_bytes, false);
            let stats = &self.stats;
            stats
                .send_drops
                .fetch_add(u64::from(chain.len()), Ordering::Relaxed);
            let mut room_again = false;
            while let Some(nbl) = chain.pop() {
                room_again |= self.pool.completed(nbl) == GivenBack::RoomAgain;
            }
            if room_again {
                self.note_room_again();
            }
        }
    }

    /// Counts a batch's RoCEv2 frames as sent (`add`) or takes the count
    /// back.
    fn count_sent(&self, frames: u64, bytes: u64, add: bool) {
        let stats = &self.stats;
        if add {
            stats.sent.fetch_add(frames, Ordering::Relaxed);
            stats.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
        } else {
            stats.sent.fetch_sub(frames, Ordering::Relaxed);
            stats.sent_bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// Whether a frame is free for the RNIC's next packet (the sink's
    /// `FrameSink::has_room`, which the port's pump asks before every
    /// packet: two atomic loads).
    fn has_room(&self) -> bool {
        let room = self.pool.has_room();
        if !room {
            self.stats.send_waits.fetch_add(1, Ordering::Relaxed);
            // The completions that make room again come only for frames
            // that went down.
            self.send_pending();
        }
        room
    }

    /// The pool has room again after it had none (`<= DISPATCH_LEVEL`, a
    /// send completion or a frame given back unsent): the engine's next
    /// pass takes the RNIC's waiting packets ([`L2Port::transmit`]).
    fn note_room_again(&self) {
        self.stats.send_resumes.fetch_add(1, Ordering::Relaxed);
        self.kick();
    }

    /// Kicks the attached engine (`<= DISPATCH_LEVEL`).
    fn kick(&self) {
        if let Some(engine) = self.engine.enter() {
            engine::kick(&engine);
        }
    }
}

impl FrameSink for NblSink {
    fn send_frame(&self, frame: &[u8], rdma: Option<usize>) -> bool {
        self.0.send(frame, rdma)
    }

    fn loopback_ready(&self) {
        self.0.kick();
    }

    fn has_room(&self) -> bool {
        self.0.has_room()
    }

    fn flush(&self) {
        self.0.send_pending();
    }
}

/// The RNIC's routes ([`softrnic::env::Routes`]): every peer is on the
/// binding's segment, so the path MTU to each is what the link's current
/// MTU carries (`EthernetPort::path_mtu`, which follows
/// [`L2Port::set_link`]).
#[derive(Debug)]
pub struct PortRoutes(TryArc<EthernetPort<NblSink>>);

impl Routes for PortRoutes {
    fn path_mtu(&self, _dst: IpAddr) -> Option<u32> {
        self.0.path_mtu()
    }
}

/// The RNIC's Ethernet port over one binding.
pub struct L2Port {
    /// Shared with the RNIC's routes.
    port: TryArc<EthernetPort<NblSink>>,
    frames: TryArc<Frames>,
    bounce: Bounce,
    /// The RNIC received datagrams go to, while attached (its users
    /// counted: the detach rundown).
    rnic: Attached<SoftRnic>,
    /// The attached RNIC's path MTU (0 before `attach`).
    rnic_pmtu: AtomicU32,
}

impl core::fmt::Debug for L2Port {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("L2Port")
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl L2Port {
    /// The port of V over `binding` (`PASSIVE_LEVEL`, V's initialisation,
    /// the binding open): its NBL pool and frames on the binding, its MAC
    /// the NIC's, its link state and MTU the binding's. The binding stays
    /// open while the port sends (V halts before the binding closes).
    pub fn create(binding: &TryArc<Binding>) -> Result<TryArc<Self>, NTSTATUS> {
        let handle = binding.handle().ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let pool = SendPool::new(handle, binding.mtu())?;
        let frames = TryArc::try_new_or_drop(Frames {
            pool,
            binding: binding.clone(),
            engine: Attached::new(),
            closed: AtomicBool::new(false),
            senders: AtomicU32::new(0),
            pending: SpinLock::new(Batch::default()),
            sending: ClaimFlag::new(),
            waiting: AtomicU32::new(0),
            stats: L2Stats::default(),
        })
        .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let port = EthernetPort::new(binding.mac(), NblSink(frames.clone()))
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let port = TryArc::try_new_or_drop(port).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let this = Self {
            port,
            frames,
            bounce: Bounce::new()?,
            rnic: Attached::new(),
            rnic_pmtu: AtomicU32::new(0),
        };
        this.port.set_link(binding.link.is_up(), binding.mtu());
        TryArc::try_new_or_drop(this).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)
    }

    /// The RNIC's routes (what the device is built with,
    /// [`PortRoutes`]).
    pub fn routes(&self) -> Result<Box<dyn Routes>, NTSTATUS> {
        try_box(PortRoutes(self.port.clone()))
            .map(|routes| -> Box<dyn Routes> { routes })
            .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)
    }

    /// Connects the port to its RNIC and engine (`PASSIVE_LEVEL`, after the
    /// device exists and before `engine.start`): received RoCEv2 datagrams
    /// go to `rnic`, and the engine's passes hand it the loopback queue.
    /// The port holds both until [`L2Port::detach`], the engine the port
    /// until its `stop`.
    pub fn attach(this: &TryArc<Self>, rnic: &TryArc<SoftRnic>, engine: &Engine<Self>) {
        engine.set_pump(this);
        this.frames.engine.attach(engine.shared());
        this.rnic_pmtu.store(rnic.config().pmtu, Ordering::Relaxed);
        this.rnic.attach(rnic);
    }

    /// Disconnects the port from its RNIC and engine (`PASSIVE_LEVEL`):
    /// when it returns, no receive uses the RNIC and no send kicks the
    /// engine. Idempotent.
    pub fn detach(&self) {
        self.rnic.detach();
        self.frames.engine.detach();
    }

    /// Send counters.
    pub fn stats(&self) -> &L2Stats {
        &self.frames.stats
    }

    /// RoCEv2 frames and their UDP payload bytes handed to the RNIC (the
    /// port's counts, made before the RNIC had each).
    pub fn rdma_in(&self) -> (u64, u64) {
        let stats = self.port.stats();
        (stats.steered, stats.steered_bytes)
    }

    /// Looks at one received list (`<= DISPATCH_LEVEL`; P owns it for the
    /// call, its `Next` ignored): `true` if it carried a RoCEv2 datagram
    /// for one of V's addresses, now copied into the RNIC (the caller
    /// returns the list to P instead of indicating it up); `false`: pass
    /// it up.
    pub fn take_received(&self, nbl: &Nbl) -> bool {
        let old = irql::raise_to_dispatch();
        let taken = self.rnic.enter().is_some_and(|rnic| self.steer(&rnic, nbl));
        irql::lower(old);
        taken
    }

    /// Sends what the frames taken since the last flush made the RNIC and
    /// the port send (ACKs, READ responses, held frames of a neighbour
    /// just learnt) in one batch (`<= DISPATCH_LEVEL`): the end of a
    /// receive indication, whose arrivals no pass follows. The RNIC's
    /// packets are taken at `DISPATCH_LEVEL`, as in the engine's pass.
    pub fn transmit_after_receive(&self) {
        let old = irql::raise_to_dispatch();
        if let Some(rnic) = self.rnic.enter() {
            self.transmit(&rnic, clock::now_us());
        } else {
            self.frames.send_pending();
        }
        irql::lower(old);
    }

    /// Takes `rnic`'s waiting packets onto the port at `now` while a frame
    /// is free, and sends them down in one batch with the port's own
    /// frames (`DISPATCH_LEVEL`: the engine's pass, the end of a receive
    /// indication). Packets left behind wait for room (a give-back that
    /// makes room kicks the engine) or for the pump of another processor,
    /// which holds the RNIC's transmit turn: if that one let go before
    /// they were recorded, the engine is kicked for them, so none is
    /// stranded.
    pub fn transmit(&self, rnic: &SoftRnic, now: u64) {
        if rnic.has_transmits() {
            self.port.pump(rnic, now);
        }
        // Frames of the port's own (a held datagram sent when its
        // neighbour answered), and the pump's if it found the turn taken.
        self.frames.send_pending();
        // `has_room` after `false` guarantees a give-back that kicks the
        // engine once there is room.
        if rnic.has_transmits() && self.frames.pool.has_room() {
            self.frames.kick();
        }
    }

    /// Hands the frame of `nbl` to the port, which gives a RoCEv2
    /// datagram to `rnic` (`DISPATCH_LEVEL`): one call into softrnic per
    /// frame, its headers parsed once (classification, RDMA octets and the
    /// RNIC all take that parse).
    fn steer(&self, rnic: &SoftRnic, nbl: &Nbl) -> bool {
        let now = clock::now_us();
        let taken = self
            .bounce
            .with_frame(nbl, |frame| self.port.receive_frame(frame, now, rnic));
        taken.unwrap_or_else(|| {
            let stats = &self.frames.stats;
            stats.receive_drops.fetch_add(1, Ordering::Relaxed);
            false
        })
    }

    /// Whether `nbl`, a completed send, is one of the port's lists
    /// (`<= DISPATCH_LEVEL`).
    pub fn owns(&self, nbl: &Nbl) -> bool {
        self.frames.pool.owns(nbl)
    }

    /// One of the port's lists came back from P (`<= DISPATCH_LEVEL`,
    /// `Next` cleared): its frame is free again, and if that gives a pool
    /// that ran out room again, the RNIC is told (through the engine).
    pub fn send_complete(&self, nbl: Nbl) {
        match self.frames.pool.completed(nbl) {
            GivenBack::Free => {}
            GivenBack::RoomAgain => self.frames.note_room_again(),
            GivenBack::NotInFlight => {
                super::log::log_error!("rsndk: L2 port: completion of a list not in flight");
            }
        }
    }

    /// P's link state, MTU and speed (`<= DISPATCH_LEVEL`): the port sends
    /// nothing while the link is down, and nothing longer than the MTU.
    ///
    /// The RNIC's configured path MTU is fixed when it is created; its
    /// routes ([`PortRoutes`]) follow the link's MTU, so a connection made
    /// from here on offers no more than the link carries. A link MTU that
    /// does not carry the configured one is reported: a connection made
    /// before keeps its path MTU, and its longer datagrams are dropped
    /// (counted by the port) and given back to the RNIC
    /// (`SoftRnic::send_failed`), which fails its QP.
    pub fn set_link(&self, up: bool, mtu: u32, speed_bps: u64) {
        self.port.set_link(up, mtu);
        log_info!(
            "rsndk: L2 port: link {}, MTU {mtu}, {speed_bps} bit/s",
            if up { "up" } else { "down" }
        );
        let rnic_pmtu = self.rnic_pmtu.load(Ordering::Relaxed);
        let carried = self.port.path_mtu().unwrap_or(0);
        if rnic_pmtu > carried {
            super::log::log_error!(
                "rsndk: L2 port: link MTU {mtu} carries RoCE path MTU {carried}, below the RNIC's {rnic_pmtu}"
            );
        }
    }

    /// V's unicast addresses with their on-link prefix lengths, for the
    /// port's classification and neighbour resolution (`PASSIVE_LEVEL`,
    /// the address watcher).
    pub fn set_addresses(&self, addrs: &[(IpAddr, u8)]) {
        let taken = self.port.set_addresses(addrs);
        if taken != addrs.len() {
            super::log::log_error!("rsndk: L2 port: took {taken} of {} addresses", addrs.len());
        }
    }

    /// Stops sending and waits until every frame is back (`PASSIVE_LEVEL`,
    /// V's halt, after the binding stopped taking sends and its own
    /// sends drained): from here on every frame is idle, so the lists,
    /// MDLs and pool can go with the port.
    pub fn shutdown(&self) {
        self.frames.closed.store(true, Ordering::SeqCst);
        // A batch still pending goes (or, the binding stopped, comes back)
        // here: a sender that was filling one when `closed` was set adds
        // its frame after this looked, so it is asked again.
        loop {
            self.frames.send_pending();
            if self.frames.senders.load(Ordering::SeqCst) == 0 && self.frames.pool.in_flight() == 0
            {
                break;
            }
            wait_briefly();
        }
        let stats = &self.frames.stats;
        log_info!(
            "rsndk: L2 port closed: sent {}, send drops {}, waits for a frame {}, resumes {}, \
             receive drops {}; {:?}",
            stats.sent.load(Ordering::Relaxed),
            stats.send_drops.load(Ordering::Relaxed),
            stats.send_waits.load(Ordering::Relaxed),
            stats.send_resumes.load(Ordering::Relaxed),
            stats.receive_drops.load(Ordering::Relaxed),
            self.port.stats(),
        );
    }
}

impl Pump for L2Port {
    /// Moves the port's clock (neighbour ageing, held datagrams; the engine
    /// runs at least every idle period) and hands the loopback queue to
    /// the RNIC.
    fn pump(&self, rnic: &SoftRnic, now: u64) -> bool {
        self.port.tick(now);
        self.port.loopback_into(rnic, now) != 0
    }

    /// Takes the RNIC's packets onto the port ([`L2Port::transmit`]).
    fn transmit(&self, rnic: &SoftRnic, now: u64) {
        L2Port::transmit(self, rnic, now);
    }
}

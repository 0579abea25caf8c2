//! The softrnic test kit every test binary includes: the one simulated
//! time ([`SimClock`], which the benches advance and pass to the devices'
//! run entry points, and the in-memory fabric reads for its delays), the one host-memory DMA fake ([`HostMem`] through
//! [`Dma`]), the one bounded stepping loop ([`run_until`]), and on them a
//! deterministic two-device bench ([`World`]: an in-memory fabric, both
//! devices polled) and connection management's network of devices
//! ([`net`]).
//!
//! The test is each device's runtime: the device owns no link, so after
//! every arrival it hands in and every poll it runs, the test takes what
//! the device sends onto the device's link ([`Node::pump`], a
//! [`links::LinkPass`] over the link).

#![allow(
    dead_code,
    clippy::missing_panics_doc,
    clippy::must_use_candidate,
    clippy::large_types_passed_by_value
)]

use hwq::{Doorbells, Verbs};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hwq::device::{QpSetup, ReceiveSource, Registration};
use hwq::ring::ring;
use hwq::wqe::{Access, SendOpcode, WqeFlags};
use hwq::{
    Consumer, Cqe, CqeStatus, Cqn, DmaAccess, DmaFault, MemoryKey, Pdn, Producer, Qpn, RecvWqe,
    SendWqe, Sge,
};
use links::Outgoing;
use links::{
    Capture, CaptureLink, Clock, FaultInjector, FaultLink, Faults, Link, LinkPass,
    fabric::{Fabric, FabricEndpoint},
};
use softrnic::arrival::Arrival;
use softrnic::device::{DeviceConfig, SoftRnic};
use softrnic::env::{NoRoutes, Routes, Wake};
use softrnic::l2::{EthernetPort, FrameSink};
use softrnic::qp::{Path, QpState, RcConfig};

pub mod net;

pub const PAGE: u64 = 4096;
/// Virtual addresses are logical addresses plus this, so translation is
/// exercised (the device never confuses the two).
pub const VA_OFFSET: u64 = 0x5500_0000_0000;

/// Host memory: a byte vector at logical address `BASE`, logging accesses.
#[derive(Debug)]
pub struct HostMem {
    bytes: Mutex<Vec<u8>>,
    next: AtomicU64,
    /// (write?, addr, len) of every DMA, when logging.
    pub log: Mutex<Option<Vec<(bool, u64, usize)>>>,
}

pub const BASE: u64 = 0x10_0000;

impl HostMem {
    pub fn new(size: usize) -> Arc<Self> {
        Arc::new(Self {
            bytes: Mutex::new(vec![0; size]),
            next: AtomicU64::new(BASE),
            log: Mutex::new(None),
        })
    }

    /// Reserves `len` bytes, page aligned; returns the logical address.
    pub fn alloc(&self, len: u64) -> u64 {
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        let a = self.next.fetch_add(len, Ordering::Relaxed);
        assert!(
            a + len - BASE <= self.bytes.lock().unwrap().len() as u64,
            "test memory exhausted"
        );
        a
    }

    pub fn fill(&self, addr: u64, data: &[u8]) {
        let o = (addr - BASE) as usize;
        self.bytes.lock().unwrap()[o..o + data.len()].copy_from_slice(data);
    }

    pub fn get(&self, addr: u64, len: usize) -> Vec<u8> {
        let o = (addr - BASE) as usize;
        self.bytes.lock().unwrap()[o..o + len].to_vec()
    }

    pub fn snapshot(&self) -> Vec<u8> {
        self.bytes.lock().unwrap().clone()
    }

    fn range(&self, addr: u64, len: usize) -> Result<usize, DmaFault> {
        let size = self.bytes.lock().unwrap().len() as u64;
        let o = addr.checked_sub(BASE).ok_or(DmaFault { addr, len })?;
        if o.checked_add(len as u64).is_none_or(|e| e > size) {
            return Err(DmaFault { addr, len });
        }
        Ok(o as usize)
    }
}

/// DMA into a [`HostMem`] (the devices' `DmaAccess`).
pub struct Dma(pub Arc<HostMem>);

impl DmaAccess for Dma {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let o = self.0.range(addr, buf.len())?;
        if let Some(log) = self.0.log.lock().unwrap().as_mut() {
            log.push((false, addr, buf.len()));
        }
        buf.copy_from_slice(&self.0.bytes.lock().unwrap()[o..o + buf.len()]);
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        let o = self.0.range(addr, data.len())?;
        if let Some(log) = self.0.log.lock().unwrap().as_mut() {
            log.push((true, addr, data.len()));
        }
        self.0.bytes.lock().unwrap()[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// The simulated time (µs): the test moves it, [`Node`] passes it to its
/// device's run entry points, and the fabric's links read it (as their
/// [`Clock`]) to delay datagrams.
#[derive(Debug, Default)]
pub struct SimClock(pub AtomicU64);

impl SimClock {
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    pub fn set(&self, t: u64) {
        self.0.store(t, Ordering::SeqCst);
    }
}

impl Clock for SimClock {
    fn now_us(&self) -> u64 {
        self.now()
    }
}

/// Steps `sim` with `step` until `done` holds (asked before each step) or
/// a step finds nothing more can happen (then `done` has the last word);
/// panics after `max_steps` steps. The one loop every bench runs.
pub fn run_until<S>(
    sim: &mut S,
    max_steps: u64,
    mut step: impl FnMut(&mut S) -> bool,
    mut done: impl FnMut(&mut S) -> bool,
) -> bool {
    for _ in 0..max_steps {
        if done(sim) {
            return true;
        }
        if !step(sim) {
            return done(sim);
        }
    }
    panic!("condition not met within {max_steps} steps");
}

pub struct NoWake;
impl Wake for NoWake {
    fn wake(&self) {}
    fn consumer_poll(&self) -> bool {
        false
    }
}

/// A completion queue as the test consumes it.
#[derive(Debug)]
pub struct Cq {
    pub cqn: Cqn,
    ring: Consumer<Cqe>,
    pub seen: Vec<Cqe>,
}

impl Cq {
    /// Moves new CQEs into `seen`; returns how many.
    pub fn drain(&mut self) -> usize {
        self.ring.refresh();
        let mut n = 0;
        while let Some(c) = self.ring.read(self.ring.released()) {
            self.seen.push(c);
            self.ring.release(1);
            n += 1;
        }
        n
    }
}

/// Each of `cqes` as (`wr_id`, status), in order.
pub fn statuses(cqes: &[Cqe]) -> Vec<(u64, CqeStatus)> {
    cqes.iter().map(|c| (c.wr_id, c.cqe_status())).collect()
}

/// The link a [`Node`]'s runtime carries its device's packets over: the
/// test's link in the runtime's capture wrapper.
pub type NodeLink = Arc<CaptureLink<Box<dyn Link>>>;

/// One device with its memory and PD.
pub struct Node {
    pub dev: SoftRnic,
    /// The capture wrapper this test runtime put around the device's
    /// link ([`Node::set_capture`]).
    pub capture: NodeLink,
    /// The runtime's passes over that link: takes what the device sends
    /// onto it ([`Node::pump`]), or runs a whole pass.
    pub pass: LinkPass<NodeLink>,
    pub mem: Arc<HostMem>,
    pub addr: IpAddr,
    pub pd: Pdn,
    pub pd_key: MemoryKey,
    /// Further addresses the world delivers to this node (every address
    /// it was ever given: a removed one still reaches the device, which
    /// drops what arrives for it).
    pub routes: Mutex<Vec<IpAddr>>,
    /// The time it runs at (shared with its world).
    pub clock: Arc<SimClock>,
    /// A runtime that takes its device's packets itself (an Ethernet
    /// station's port, [`Node::on_port`]) rather than over the link.
    own_pump: Option<OwnPump>,
}

/// A runtime's own way of taking its device's packets at a time.
type OwnPump = Box<dyn Fn(&SoftRnic, u64) -> usize + Send + Sync>;

/// The link of a node whose runtime takes the device's packets itself:
/// it carries nothing.
struct Unwired;

impl Link for Unwired {
    fn transmit(&self, _packet: Outgoing<'_>) {
        panic!("this node's packets leave through its runtime's own pump");
    }
}

/// A QP as the test drives it.
#[derive(Debug)]
pub struct Qp {
    pub qpn: Qpn,
    pub sq: Producer<SendWqe>,
    pub rq: Producer<RecvWqe>,
    pub scq: Cq,
    pub rcq: Cq,
}

/// A registered buffer.
#[derive(Clone, Copy, Debug)]
pub struct Buf {
    pub logical: u64,
    pub va: u64,
    pub len: u64,
    pub key: MemoryKey,
}

impl Buf {
    pub fn sge(&self, offset: u64, len: u32) -> Sge {
        Sge {
            addr: self.va + offset,
            length: len,
            key: self.key.0,
        }
    }
}

impl Node {
    /// A device on `fabric`, its port wrapped in a [`FaultLink`] drawing
    /// from `faults`.
    pub fn new(
        addr: impl Into<IpAddr>,
        pmtu: u32,
        fabric: &Arc<Fabric>,
        faults: &Arc<FaultInjector>,
        clock: &Arc<SimClock>,
        mem_size: usize,
    ) -> Self {
        let clock_dyn: Arc<dyn Clock> = clock.clone();
        let port = FabricEndpoint::new(fabric.clone(), clock_dyn.clone());
        let link = Box::new(FaultLink::new(port, faults.clone(), clock_dyn));
        Self::custom(addr, pmtu, clock, mem_size, link, Box::new(NoWake))
    }

    /// A device with its own link and waker.
    pub fn custom(
        addr: impl Into<IpAddr>,
        pmtu: u32,
        clock: &Arc<SimClock>,
        mem_size: usize,
        link: Box<dyn Link>,
        waker: Box<dyn Wake>,
    ) -> Self {
        Self::sharing(addr, pmtu, clock, HostMem::new(mem_size), link, waker)
    }

    /// A device with its own link, routes (path MTUs to its peers) and
    /// waker.
    pub fn routed(
        addr: impl Into<IpAddr>,
        pmtu: u32,
        clock: &Arc<SimClock>,
        mem_size: usize,
        link: Box<dyn Link>,
        routes: Box<dyn Routes>,
        waker: Box<dyn Wake>,
    ) -> Self {
        let mem = HostMem::new(mem_size);
        Self::build(addr, pmtu, clock, mem, link, routes, waker)
    }

    /// A device whose packets leave through `port` (an Ethernet station):
    /// its runtime takes them with the port's pump, and hands it what
    /// arrives itself.
    pub fn on_port<S: FrameSink + 'static>(
        addr: impl Into<IpAddr>,
        pmtu: u32,
        clock: &Arc<SimClock>,
        mem_size: usize,
        port: Arc<EthernetPort<S>>,
        routes: Box<dyn Routes>,
    ) -> Self {
        let mem = HostMem::new(mem_size);
        let mut node = Self::build(
            addr,
            pmtu,
            clock,
            mem,
            Box::new(Unwired),
            routes,
            Box::new(NoWake),
        );
        node.own_pump = Some(Box::new(move |dev, now| port.pump(dev, now)));
        node
    }

    /// A device reaching memory `mem` (which other devices may share).
    pub fn sharing(
        addr: impl Into<IpAddr>,
        pmtu: u32,
        clock: &Arc<SimClock>,
        mem: Arc<HostMem>,
        link: Box<dyn Link>,
        waker: Box<dyn Wake>,
    ) -> Self {
        Self::build(addr, pmtu, clock, mem, link, Box::new(NoRoutes), waker)
    }

    fn build(
        addr: impl Into<IpAddr>,
        pmtu: u32,
        clock: &Arc<SimClock>,
        mem: Arc<HostMem>,
        link: Box<dyn Link>,
        routes: Box<dyn Routes>,
        waker: Box<dyn Wake>,
    ) -> Self {
        let addr = addr.into();
        // The test is the device's runtime: it wraps its link in its
        // capture, outside any fault injection, and pumps the device's
        // packets onto it.
        let capture = Arc::new(CaptureLink::new(link));
        let pass = LinkPass::new(capture.clone()).expect("link pass");
        let dev = SoftRnic::new(
            DeviceConfig::new(addr, pmtu),
            Box::new(Dma(mem.clone())),
            routes,
            clock.now(),
            waker,
        )
        .expect("device");
        let (pd, pd_key) = dev.create_pd().unwrap();
        let node = Self {
            dev,
            capture,
            pass,
            mem,
            addr,
            pd,
            pd_key,
            routes: Mutex::new(Vec::new()),
            clock: clock.clone(),
            own_pump: None,
        };
        // A runtime's first turn, before any traffic: the device learns
        // how its packets are carried (trains or not) before it records
        // any.
        assert_eq!(node.pump(), 0, "a new device sends nothing");
        node
    }

    /// Takes what the device sends onto its link now, as the runtime does
    /// after each arrival and poll ([`LinkPass::pump`]); how many packets
    /// moved.
    pub fn pump(&self) -> usize {
        let now = self.clock.now();
        match &self.own_pump {
            Some(pump) => pump(&self.dev, now),
            None => self.pass.pump(&self.dev, now),
        }
    }

    /// Hands an arrival to the device now (its one receive door), shown
    /// to the capture first, as a pushing runtime does; then takes what
    /// the device sent in answer.
    pub fn arrive(&self, arrival: Arrival<'_>) {
        self.capture.show_arrival(&arrival);
        self.dev.receive(self.clock.now(), arrival);
        self.pump();
    }

    /// Installs (or removes) the packet tap on the device's link.
    pub fn set_capture(&self, capture: Option<Box<dyn Capture>>) {
        self.capture.set_capture(capture);
    }

    /// Hands a received datagram to the device now.
    pub fn receive(&self, datagram: &[u8]) {
        self.arrive(Arrival::Datagram(datagram));
    }

    /// Hands a received UDP payload from `src` at `dst` to the device now.
    pub fn receive_udp_payload(
        &self,
        src: impl Into<SocketAddr>,
        dst: impl Into<SocketAddr>,
        payload: &[u8],
    ) {
        let (src, dst) = (src.into(), dst.into());
        self.arrive(Arrival::UdpPayload { src, dst, payload });
    }

    /// Hands a received train to the device now.
    pub fn receive_train(&self, train: &softrnic::train::Train) {
        self.arrive(Arrival::Train(train));
    }

    /// Polls the device now ([`SoftRnic::poll`]) and takes what it sent;
    /// whether it did anything or sent anything.
    pub fn poll(&self) -> bool {
        let worked = self.dev.poll(self.clock.now());
        self.pump() > 0 || worked
    }

    /// Gives the device `addrs` (replacing its addresses) and has the
    /// world deliver to them from now on.
    pub fn set_addresses(&self, addrs: &[IpAddr]) {
        self.dev.set_addresses(addrs).unwrap();
        let mut routes = self.routes.lock().unwrap();
        for a in addrs {
            if !routes.contains(a) {
                routes.push(*a);
            }
        }
    }

    /// Whether the world delivers datagrams for `ip` to this node.
    pub fn reaches(&self, ip: IpAddr) -> bool {
        self.addr == ip || self.routes.lock().unwrap().contains(&ip)
    }

    /// Allocates and registers `len` bytes with `access` in `pd`.
    pub fn register_in(&self, pd: Pdn, len: u64, access: Access) -> Buf {
        let logical = self.mem.alloc(len);
        let pages: Vec<u64> = (0..len.max(1).div_ceil(PAGE))
            .map(|i| logical + i * PAGE)
            .collect();
        let key = self.dev.alloc_key(pd, false).unwrap();
        let va = logical + VA_OFFSET;
        let reg = Registration {
            pd,
            access,
            va,
            length: len.max(1),
            first_byte_offset: 0,
            pages: &pages,
        };
        let key = self.dev.register(key, &reg).unwrap();
        Buf {
            logical,
            va,
            len,
            key,
        }
    }

    pub fn register(&self, len: u64, access: Access) -> Buf {
        self.register_in(self.pd, len, access)
    }

    pub fn cq(&self, depth: u32) -> Cq {
        let (p, c) = ring::<Cqe>(depth).unwrap();
        let cqn = self.dev.create_cq(p).unwrap();
        Cq {
            cqn,
            ring: c,
            seen: Vec::new(),
        }
    }

    pub fn qp(&self, depth: u32) -> Qp {
        self.qp_in(self.pd, depth)
    }

    pub fn qp_in(&self, pd: Pdn, depth: u32) -> Qp {
        let scq = self.cq(depth * 4);
        let rcq = self.cq(depth * 4);
        let (sp, sc) = ring::<SendWqe>(depth).unwrap();
        let (rp, rc) = ring::<RecvWqe>(depth).unwrap();
        let qpn = self
            .dev
            .create_qp(QpSetup {
                pd,
                send_cqn: scq.cqn,
                recv_cqn: rcq.cqn,
                sq: sc,
                rq: ReceiveSource::Queue(rc),
                context: 0xC0DE_0000 + u64::from(pd.raw()),
            })
            .unwrap();
        Qp {
            qpn,
            sq: sp,
            rq: rp,
            scq,
            rcq,
        }
    }

    pub fn post_send(&self, qp: &mut Qp, wqe: SendWqe) {
        qp.sq.push(wqe).expect("SQ full");
        qp.sq.publish();
        self.dev.sq_doorbell(qp.qpn);
    }

    pub fn post_recv(&self, qp: &mut Qp, wr_id: u64, sges: &[Sge]) {
        let mut w = RecvWqe {
            wr_id,
            sge_count: sges.len() as u8,
            ..RecvWqe::default()
        };
        w.sges[..sges.len()].copy_from_slice(sges);
        qp.rq.push(w).expect("RQ full");
        qp.rq.publish();
        self.dev.rq_doorbell(qp.qpn);
    }

    pub fn state(&self, qp: &Qp) -> QpState {
        self.dev.qp_state(qp.qpn.raw()).unwrap()
    }
}

/// A send WQE for `op` gathering `sges`.
pub fn wqe(op: SendOpcode, wr_id: u64, sges: &[Sge]) -> SendWqe {
    let mut w = SendWqe {
        opcode: op as u8,
        flags: WqeFlags::SIGNALED.bits(),
        sge_count: sges.len() as u8,
        wr_id,
        total_len: sges.iter().map(|s| s.length).sum(),
        ..SendWqe::default()
    };
    w.sges[..sges.len()].copy_from_slice(sges);
    w
}

/// An RDMA WRITE or READ WQE.
pub fn rdma(op: SendOpcode, wr_id: u64, sges: &[Sge], remote: &Buf, offset: u64) -> SendWqe {
    SendWqe {
        key: remote.key.0,
        remote_addr: remote.va + offset,
        ..wqe(op, wr_id, sges)
    }
}

/// Deterministic payload bytes for message `id`.
pub fn pattern(id: u64, len: usize) -> Vec<u8> {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Moves the clock to the next thing due (a datagram on `fabric`, a timer
/// of one of `nodes`; at least 1 µs on); `false` if nothing is due at all.
pub fn advance_to_next_event(clock: &SimClock, fabric: &Fabric, nodes: [&Node; 2]) -> bool {
    let now = clock.now();
    let next = [
        fabric.next_due(),
        nodes[0].dev.next_timer_us(),
        nodes[1].dev.next_timer_us(),
    ]
    .into_iter()
    .flatten()
    .min();
    next.inspect(|&t| clock.set(t.max(now + 1))).is_some()
}

/// Two devices on one fabric, their ports drawing faults from one
/// generator.
pub struct World {
    pub clock: Arc<SimClock>,
    pub fabric: Arc<Fabric>,
    pub faults: Arc<FaultInjector>,
    pub a: Node,
    pub b: Node,
    pub steps: u64,
}

pub const ADDR_A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const ADDR_B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// IPv6 worlds' addresses ([`World::new_v6`]).
pub const ADDR6_A: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
pub const ADDR6_B: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2);

/// Test-friendly timers: 1 ms retransmit, 10 µs RNR timer, kept over
/// connection management's negotiated timeout.
pub fn fast_rc() -> RcConfig {
    RcConfig {
        ack_timeout_us: 1_000,
        follow_cm: false,
        min_rnr_timer: softrnic::wire::RnrTimer::new(1).unwrap(),
        ack_delay_us: 20,
        ..RcConfig::default()
    }
}

impl World {
    pub fn new(faults: Faults, pmtu: u32, mem_size: usize) -> Self {
        Self::with_addrs(faults, pmtu, mem_size, ADDR_A.into(), ADDR_B.into())
    }

    /// A world whose two devices are IPv6 nodes ([`ADDR6_A`], [`ADDR6_B`]).
    pub fn new_v6(faults: Faults, pmtu: u32, mem_size: usize) -> Self {
        Self::with_addrs(faults, pmtu, mem_size, ADDR6_A.into(), ADDR6_B.into())
    }

    /// A world of devices at `a` and `b`.
    pub fn with_addrs(faults: Faults, pmtu: u32, mem_size: usize, a: IpAddr, b: IpAddr) -> Self {
        let clock = Arc::new(SimClock::default());
        clock.set(1_000);
        let fabric = Fabric::new();
        let faults = FaultInjector::new(faults);
        let a = Node::new(a, pmtu, &fabric, &faults, &clock, mem_size);
        let b = Node::new(b, pmtu, &fabric, &faults, &clock, mem_size);
        Self::of(clock, fabric, faults, a, b)
    }

    /// A world of nodes `a` and `b`, built on `clock`, `fabric` and
    /// `faults` however a test needs them, both given the test-friendly
    /// timers ([`fast_rc`]).
    pub fn of(
        clock: Arc<SimClock>,
        fabric: Arc<Fabric>,
        faults: Arc<FaultInjector>,
        a: Node,
        b: Node,
    ) -> Self {
        a.dev.set_default_rc_config(fast_rc());
        b.dev.set_default_rc_config(fast_rc());
        Self {
            clock,
            fabric,
            faults,
            a,
            b,
            steps: 0,
        }
    }

    /// Connects `qa` on A with `qb` on B.
    pub fn connect(&self, qa: &Qp, qb: &Qp, pmtu: u32, psn_a: u32, psn_b: u32, reads: u32) {
        let pa = Path {
            remote: SocketAddr::new(self.b.addr, 4791),
            remote_qpn: qb.qpn.raw(),
            pmtu,
            send_psn: psn_a,
            recv_psn: psn_b,
            outbound_reads: reads,
            inbound_reads: reads,
        };
        let pb = Path {
            remote: SocketAddr::new(self.a.addr, 4791),
            remote_qpn: qa.qpn.raw(),
            send_psn: psn_b,
            recv_psn: psn_a,
            ..pa
        };
        self.a.dev.connect_qp(qa.qpn.raw(), pa).unwrap();
        self.b.dev.connect_qp(qb.qpn.raw(), pb).unwrap();
    }

    /// One step: deliver every due packet, poll both devices; if nothing
    /// happened, advance the clock to the next event. Returns false when
    /// nothing is left to happen at all.
    pub fn step(&mut self) -> bool {
        self.steps += 1;
        let now = self.clock.now();
        let mut worked = false;
        while let Some((dst, bytes)) = self.fabric.take_due(now) {
            worked = true;
            if self.a.reaches(dst) {
                self.a.receive(&bytes);
            } else if self.b.reaches(dst) {
                self.b.receive(&bytes);
            }
        }
        worked |= self.a.poll();
        worked |= self.b.poll();
        worked || advance_to_next_event(&self.clock, &self.fabric, [&self.a, &self.b])
    }

    /// Steps until `done` holds (checked after each step) or nothing more
    /// can happen; panics after `max_steps`.
    pub fn run_until(&mut self, max_steps: u64, done: impl FnMut(&mut Self) -> bool) -> bool {
        run_until(self, max_steps, Self::step, done)
    }

    /// Steps until nothing more happens (bounded).
    pub fn settle(&mut self, max_steps: u64) {
        self.run_until(max_steps, |_| false);
    }
}

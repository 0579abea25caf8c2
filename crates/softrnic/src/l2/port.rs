//! The port itself: sending datagrams as frames, steering received
//! frames, and the neighbour traffic in between (the policy is the
//! module's, [`crate::l2`]).
//!
//! Lock order: the pump frame (held only under the device's transmit
//! turn), own addresses, then the neighbour cache, then a held frame; a
//! scratch frame and the loopback queue are leaves. The sink is called
//! holding only the frame's own buffer (the pump frame, a scratch or a
//! held frame).

use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use hwq::lock::LockClass;

use crate::sync::{Mutex, RwLock};
/// The port's own addresses.
static OWN_LOCK: LockClass = LockClass::new("softrnic port own addresses");
/// The neighbour cache.
static NEIGHBOURS_LOCK: LockClass = LockClass::new("softrnic port neighbour cache");
/// A frame held for address resolution.
static HELD_LOCK: LockClass = LockClass::new("softrnic port held frame");
/// A scratch frame.
static SCRATCH_LOCK: LockClass = LockClass::new("softrnic port scratch frame");
/// Datagrams too big for the link.
static TOO_BIG_LOCK: LockClass = LockClass::new("softrnic port too-big datagrams");
use zerocopy::IntoBytes;

use super::classify::{Frame, classify};
use super::loopback::Loopback;
use super::neighbours::{Learnt, NeighbourCache, Resolved};
use super::own::OwnAddresses;
use super::stats::{Counters, PortStats, inc};
use super::{FrameSink, MAX_DATAGRAM_LEN, MAX_FRAME_LEN, Verdict, path_mtu_for};
use crate::arrival::Arrival;
use crate::device::SoftRnic;
use crate::transmit::{Carriage, MAX_DATAGRAM, SendFailure, Transmit};
use crate::wire::arp::ArpPacket;
use crate::wire::ethernet::{
    ETHERNET_HEADER_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, EthernetHeader, MacAddr,
    frame_in_place, write_frame,
};
use crate::wire::ip_udp::{datagram_destination, datagram_source};
use crate::wire::ipv4_udp::{IPV4_HEADER_LEN, UDP_HEADER_LEN};
use crate::wire::ipv6_udp::IPV6_HEADER_LEN;
use crate::wire::ndp::{
    NdpKind, Neighbor, SOLICITATION_DATAGRAM_LEN, solicited_node, write_neighbor_solicitation,
};

/// A port's MAC address and sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortConfig {
    /// The NIC's MAC address (the source of every frame).
    pub mac: MacAddr,
    /// Neighbours the cache holds.
    pub neighbours: usize,
    /// Datagrams held for neighbours being asked for, in all.
    pub held: usize,
    /// Datagrams the loopback queue holds.
    pub loopback: usize,
    /// Frame buffers for concurrent senders (at least one; a sender
    /// finding all taken waits for one).
    pub scratch: usize,
}

impl PortConfig {
    /// The default sizes for a port with MAC address `mac`: 64 neighbours,
    /// 4 held datagrams, 64 loopback datagrams, 4 frame buffers.
    pub fn new(mac: impl Into<MacAddr>) -> Self {
        Self {
            mac: mac.into(),
            neighbours: 64,
            held: 4,
            loopback: 64,
            scratch: 4,
        }
    }
}

/// Where [`EthernetPort`]'s routing sent a datagram.
enum Route {
    /// Queued, held or dropped: nothing more to do.
    Done,
    /// To a neighbour: to be framed for it and handed to the sink.
    Neighbour(NextHop),
}

/// The neighbour a datagram goes to, and how to frame it for it.
#[derive(Clone, Copy)]
struct NextHop {
    mac: MacAddr,
    ethertype: u16,
    /// The RoCEv2 payload length ([`FrameSink::send_frame`]).
    rdma: Option<usize>,
    /// A stale neighbour to ask for again afterwards (target, and the
    /// datagram's source).
    solicit: Option<(IpAddr, Option<IpAddr>)>,
}

/// A frame waiting for its neighbour's MAC address (its destination
/// field is filled in when that comes).
#[derive(Debug)]
struct HeldFrame {
    bytes: Vec<u8>,
    len: usize,
}

/// The RNIC's Ethernet port (see [`crate::l2`]).
pub struct EthernetPort<S: FrameSink> {
    mac: MacAddr,
    sink: S,
    own: RwLock<OwnAddresses>,
    link_up: AtomicBool,
    mtu: AtomicU32,
    /// The latest time the runtime gave (µs).
    now_us: AtomicU64,
    neighbours: RwLock<NeighbourCache>,
    held: Vec<Mutex<HeldFrame>>,
    scratch: Vec<Mutex<Vec<u8>>>,
    next_scratch: AtomicUsize,
    /// Where [`EthernetPort::pump`] has the device build each packet.
    /// Locked only by the holder of the device's transmit turn, so never
    /// waited for (and so a plain spin lock, outside the lock order).
    pump_frame: spin::Mutex<Vec<u8>>,
    loopback: Loopback,
    stats: Counters,
    /// Datagrams too big for the link, until the device takes them
    /// ([`EthernetPort::take_send_failures`], or the pump's give-back).
    too_big: TooBig,
}

/// Datagrams kept for the device as never sent: a few, without
/// allocating (more before the device looks are counted only; their QPs
/// have failed already or fail on their next packet).
#[derive(Debug)]
struct TooBig {
    kept: Mutex<[Option<SendFailure>; TOO_BIG_KEPT]>,
    any: AtomicBool,
}

/// Failures [`TooBig`] keeps between two looks of the device.
const TOO_BIG_KEPT: usize = 8;

impl TooBig {
    fn record(&self, datagram: &[u8]) {
        let Some(failure) = SendFailure::of_datagram(datagram) else {
            return;
        };
        let mut kept = self.kept.lock();
        if kept.contains(&Some(failure)) {
            return;
        }
        if let Some(slot) = kept.iter_mut().find(|f| f.is_none()) {
            *slot = Some(failure);
            self.any.store(true, Ordering::Release);
        }
    }

    fn take(&self, each: &mut dyn FnMut(SendFailure)) {
        if !self.any.swap(false, Ordering::AcqRel) {
            return;
        }
        let taken = core::mem::take(&mut *self.kept.lock());
        for failure in taken.into_iter().flatten() {
            each(failure);
        }
    }
}

impl<S: FrameSink> core::fmt::Debug for EthernetPort<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EthernetPort")
            .field("mac", &self.mac)
            .field("link_up", &self.link_up)
            .field("mtu", &self.mtu)
            .field("stats", &self.stats.snapshot())
            .finish_non_exhaustive()
    }
}

/// A zeroed buffer of `len` bytes; `None` if memory ran out.
fn zeroed(len: usize) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).ok()?;
    v.resize(len, 0);
    Some(v)
}

/// `n` items made by `make`; `None` if memory ran out.
fn preallocate<T>(n: usize, mut make: impl FnMut() -> Option<T>) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    for _ in 0..n {
        v.push(make()?);
    }
    Some(v)
}

/// The UDP payload length (BTH through ICRC) of a device datagram of
/// `len` bytes sent with `ethertype`: the device builds IPv4 headers
/// without options, so its headers are 28 or 48 bytes.
fn rocev2_payload_len(ethertype: u16, len: usize) -> Option<usize> {
    match ethertype {
        ETHERTYPE_IPV4 => len.checked_sub(IPV4_HEADER_LEN + UDP_HEADER_LEN),
        ETHERTYPE_IPV6 => len.checked_sub(IPV6_HEADER_LEN + UDP_HEADER_LEN),
        _ => None,
    }
}

/// The EtherType of a datagram to `dst`.
fn ethertype_of(dst: IpAddr) -> u16 {
    if dst.is_ipv4() {
        ETHERTYPE_IPV4
    } else {
        ETHERTYPE_IPV6
    }
}

impl<S: FrameSink> EthernetPort<S> {
    /// A port with MAC address `mac` sending through `sink`, with the
    /// default sizes ([`PortConfig::new`]). It starts with no address and
    /// the link down (MTU 1500) until [`EthernetPort::set_addresses`] and
    /// [`EthernetPort::set_link`] say otherwise. All memory is allocated
    /// here; `None` if it ran out.
    pub fn new(mac: impl Into<MacAddr>, sink: S) -> Option<Self> {
        Self::with_config(PortConfig::new(mac), sink)
    }

    /// A port of `config` sending through `sink` (as [`EthernetPort::new`]).
    pub fn with_config(config: PortConfig, sink: S) -> Option<Self> {
        Some(Self {
            mac: config.mac,
            sink,
            own: RwLock::new(&OWN_LOCK, OwnAddresses::EMPTY),
            link_up: AtomicBool::new(false),
            mtu: AtomicU32::new(1500),
            now_us: AtomicU64::new(0),
            neighbours: RwLock::new(
                &NEIGHBOURS_LOCK,
                NeighbourCache::new(config.neighbours, config.held)?,
            ),
            held: preallocate(config.held, || {
                Some(Mutex::new(
                    &HELD_LOCK,
                    HeldFrame {
                        bytes: zeroed(MAX_FRAME_LEN)?,
                        len: 0,
                    },
                ))
            })?,
            scratch: preallocate(config.scratch.max(1), || {
                zeroed(MAX_FRAME_LEN).map(|frame| Mutex::new(&SCRATCH_LOCK, frame))
            })?,
            next_scratch: AtomicUsize::new(0),
            pump_frame: spin::Mutex::new(zeroed(ETHERNET_HEADER_LEN + MAX_DATAGRAM)?),
            loopback: Loopback::new(config.loopback, MAX_DATAGRAM_LEN)?,
            stats: Counters::default(),
            too_big: TooBig {
                kept: Mutex::new(&TOO_BIG_LOCK, [None; TOO_BIG_KEPT]),
                any: AtomicBool::new(false),
            },
        })
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The port's MAC address.
    pub fn mac(&self) -> MacAddr {
        self.mac
    }

    /// Counters so far.
    pub fn stats(&self) -> PortStats {
        self.stats.snapshot()
    }

    /// Replaces the port's addresses with their on-link prefix lengths
    /// (IPv4 and IPv6). Entries that are not unicast addresses or whose
    /// prefix is longer than their family's are skipped, as is all beyond
    /// the first [`crate::addresses::MAX_ADDRESSES`]; returns how many
    /// were taken.
    pub fn set_addresses(&self, addrs: &[(IpAddr, u8)]) -> usize {
        let own = OwnAddresses::new(addrs);
        let taken = own.as_slice().len();
        *self.own.write() = own;
        taken
    }

    /// Whether `ip` is one of the port's addresses.
    pub fn has_address(&self, ip: IpAddr) -> bool {
        self.own.read().contains(ip)
    }

    /// The link's state and MTU (the largest IP datagram it carries;
    /// datagrams above it, or above [`MAX_DATAGRAM_LEN`], are dropped).
    /// While the link is down nothing is sent (loopback still works).
    pub fn set_link(&self, up: bool, mtu: u32) {
        self.mtu.store(mtu, Ordering::Relaxed);
        self.link_up.store(up, Ordering::Release);
    }

    /// Whether the link is up.
    pub fn link_up(&self) -> bool {
        self.link_up.load(Ordering::Acquire)
    }

    /// The RoCE path MTU the link MTU allows ([`super::path_mtu_for`]),
    /// for the RNIC's configuration.
    pub fn path_mtu(&self) -> Option<u32> {
        path_mtu_for(self.mtu.load(Ordering::Relaxed))
    }

    /// The MAC address known for `ip` now (reachable or stale), if any.
    pub fn neighbour(&self, ip: IpAddr) -> Option<MacAddr> {
        self.neighbours.read().known(ip, self.now())
    }

    /// Moves the port's clock to `now_us` (it never goes back) and drops
    /// held datagrams whose neighbour did not answer in time.
    pub fn tick(&self, now_us: u64) {
        self.note_time(now_us);
        let mut cache = self.neighbours.write();
        let dropped = cache.drop_stale_holds(now_us) + cache.take_evicted_holds();
        drop(cache);
        self.stats
            .held_dropped
            .fetch_add(dropped, Ordering::Relaxed);
    }

    /// Hands each datagram queued for loopback at the time of the call to
    /// `deliver` (the runtime passes them to the RNIC's `receive`), with
    /// no lock of the port held; returns how many.
    pub fn poll_loopback(&self, deliver: impl FnMut(&[u8])) -> usize {
        self.loopback.drain(deliver)
    }

    /// Datagrams waiting in the loopback queue.
    pub fn loopback_waiting(&self) -> usize {
        self.loopback.len()
    }

    fn note_time(&self, now_us: u64) {
        self.now_us.fetch_max(now_us, Ordering::Relaxed);
    }

    fn now(&self) -> u64 {
        self.now_us.load(Ordering::Relaxed)
    }

    // ---- sending ----

    /// Takes `rnic`'s packets at `now_us` while the sink has room, each
    /// built by the device straight into the port's pump frame behind the
    /// Ethernet header's room and framed there, then flushes the sink and
    /// gives the datagrams too big for the link back to the device
    /// ([`SoftRnic::send_failed`]). This is the kernel runtime's side of
    /// the device's transmit turn ([`crate::transmit`]): a packet crosses
    /// to the sink without a copy of its own. Returns how many packets it
    /// took. A call while another pump of the device runs takes nothing:
    /// that one takes what is waiting, or wakes the device's engine when
    /// it stops.
    pub fn pump(&self, rnic: &SoftRnic, now_us: u64) -> usize {
        self.note_time(now_us);
        let mut taken = 0;
        // The frame is locked only under the device's transmit turn and let
        // go before it (declared after it): whoever has the turn has it.
        if let Some(mut turn) = rnic.transmit_turn()
            && let Some(mut frame) = self.pump_frame.try_lock()
        {
            // Whole datagrams: no trains leave a device through a NIC.
            let carriage = Carriage::default();
            while self.sink.has_room() {
                let Some(room) = frame.get_mut(ETHERNET_HEADER_LEN..) else {
                    break;
                };
                match turn.poll_transmit(room, carriage) {
                    Some(Transmit::Datagram(len)) => {
                        taken += 1;
                        self.send_in_place(&mut frame, len);
                    }
                    // Not asked for (this carriage takes neither).
                    Some(Transmit::UdpPayload { .. } | Transmit::Train(_)) => {}
                    None => break,
                }
            }
            self.sink.flush();
        }
        self.take_send_failures(&mut |failure| rnic.send_failed(now_us, failure));
        taken
    }

    /// Sends one IP datagram built elsewhere (a peer's, a test's) as the
    /// pump sends the device's: looped back to one of the port's own
    /// addresses, else framed for its neighbour (asked for, and the
    /// datagram held or dropped, while unknown). Must not block. A
    /// datagram too big for the link is kept for
    /// [`EthernetPort::take_send_failures`].
    pub fn transmit(&self, datagram: &[u8]) {
        if let Route::Neighbour(to) = self.route(datagram) {
            self.send_framed(to.mac, to.ethertype, datagram, to.rdma);
            self.solicit_after(to);
        }
    }

    /// Hands each datagram dropped as too big for the link since the last
    /// look to `each`, once (the pump gives them to the device itself).
    pub fn take_send_failures(&self, each: &mut dyn FnMut(SendFailure)) {
        self.too_big.take(each);
    }

    /// Sends the datagram the device built in `frame` behind the header's
    /// room (`len` bytes), framing it in place when its neighbour is known.
    fn send_in_place(&self, frame: &mut [u8], len: usize) {
        let datagram_end = ETHERNET_HEADER_LEN + len;
        let Some(datagram) = frame.get(ETHERNET_HEADER_LEN..datagram_end) else {
            return;
        };
        let Route::Neighbour(to) = self.route(datagram) else {
            return;
        };
        let header = EthernetHeader::new(to.mac, self.mac, to.ethertype);
        if let Some(n) = frame_in_place(&header, frame, len) {
            self.hand_to_sink(frame.get(..n).unwrap_or_default(), to.rdma);
        }
        self.solicit_after(to);
    }

    /// Where one datagram goes: the loopback queue, a neighbour's MAC
    /// address (framed by the caller), a held slot or nowhere (counted).
    fn route(&self, datagram: &[u8]) -> Route {
        let stats = &self.stats;
        let Some(dst) = datagram_destination(datagram) else {
            inc(&stats.dropped_malformed);
            return Route::Done;
        };
        if self.own.read().contains(dst) {
            if self.loopback.push(datagram) {
                inc(&stats.loopback);
                self.sink.loopback_ready();
            } else {
                inc(&stats.loopback_dropped);
            }
            return Route::Done;
        }
        if !self.link_up() {
            inc(&stats.dropped_link_down);
            return Route::Done;
        }
        if datagram.len() > self.mtu.load(Ordering::Relaxed) as usize
            || datagram.len() > MAX_DATAGRAM_LEN
        {
            // It can never leave: the device fails the QP that sent it.
            self.too_big.record(datagram);
            inc(&stats.dropped_too_big);
            return Route::Done;
        }
        let now = self.now();
        let ethertype = ethertype_of(dst);
        let rdma = rocev2_payload_len(ethertype, datagram.len());
        let to = |mac, solicit| {
            Route::Neighbour(NextHop {
                mac,
                ethertype,
                rdma,
                solicit,
            })
        };
        if let Some(mac) = self.neighbours.read().reachable(dst, now) {
            return to(mac, None);
        }
        let resolved = self.resolve(dst, ethertype, datagram, now);
        let source = datagram_source(datagram);
        match resolved {
            Resolved::Known { mac, solicit } => to(mac, solicit.then_some((dst, source))),
            Resolved::Unknown { solicit, hold } => {
                if hold.is_some() {
                    inc(&stats.held);
                } else {
                    inc(&stats.dropped_no_neighbour);
                }
                if solicit {
                    self.solicit(dst, source);
                }
                Route::Done
            }
        }
    }

    /// Asks for a stale neighbour again, after its datagram went.
    fn solicit_after(&self, to: NextHop) {
        if let Some((target, source)) = to.solicit {
            self.solicit(target, source);
        }
    }

    /// Asks the cache about `dst`, which is not reachable, and stores the
    /// frame for `datagram` in the held slot it grants (while the cache is
    /// locked, so whoever learns the neighbour finds it whole).
    fn resolve(&self, dst: IpAddr, ethertype: u16, datagram: &[u8], now: u64) -> Resolved {
        let mut cache = self.neighbours.write();
        let mut dropped = cache.drop_stale_holds(now);
        let mut resolved = cache.resolve(dst, now);
        if let Resolved::Unknown {
            solicit,
            hold: Some(slot),
        } = resolved
        {
            let header = EthernetHeader::new(MacAddr::ZERO, self.mac, ethertype);
            let stored = self.held.get(slot).is_some_and(|held| {
                let mut held = held.lock();
                let len = write_frame(&header, datagram, &mut held.bytes);
                held.len = len.unwrap_or(0);
                len.is_some()
            });
            if !stored {
                cache.unhold(dst, slot);
                resolved = Resolved::Unknown {
                    solicit,
                    hold: None,
                };
            }
        }
        dropped += cache.take_evicted_holds();
        drop(cache);
        self.stats
            .held_dropped
            .fetch_add(dropped, Ordering::Relaxed);
        resolved
    }

    /// Frames `payload` for `dst` in a scratch buffer and hands it to the
    /// sink, with the RoCEv2 payload length `rdma` of a device datagram
    /// ([`FrameSink::send_frame`]); whether the sink took it.
    fn send_framed(
        &self,
        dst: MacAddr,
        ethertype: u16,
        payload: &[u8],
        rdma: Option<usize>,
    ) -> bool {
        let header = EthernetHeader::new(dst, self.mac, ethertype);
        self.with_scratch(|buf| match write_frame(&header, payload, buf) {
            Some(n) => self.hand_to_sink(buf.get(..n).unwrap_or_default(), rdma),
            None => false,
        })
    }

    /// Runs `f` on the next scratch frame in turn (waiting for it if
    /// another sender has it).
    fn with_scratch<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        // No try-lock to look for a free frame: device locks are the
        // platform's spin locks, which offer acquire and release only.
        let n = self.scratch.len();
        let start = self.next_scratch.fetch_add(1, Ordering::Relaxed) % n.max(1);
        match self.scratch.get(start) {
            Some(slot) => f(&mut slot.lock()),
            // `with_config` made at least one.
            None => f(&mut []),
        }
    }

    /// Gives a finished frame to the sink, counting the outcome.
    fn hand_to_sink(&self, frame: &[u8], rdma: Option<usize>) -> bool {
        let taken = !frame.is_empty() && self.sink.send_frame(frame, rdma);
        if taken {
            inc(&self.stats.frames_sent);
        } else {
            inc(&self.stats.sink_refused);
        }
        taken
    }

    /// Asks who has `target` (ARP request or Neighbor Solicitation), from
    /// the source the policy picks given the datagram's `source`.
    fn solicit(&self, target: IpAddr, source: Option<IpAddr>) {
        match target {
            IpAddr::V4(target) => self.send_arp_request(target, source),
            IpAddr::V6(target) => self.send_neighbor_solicitation(target, source),
        }
    }

    fn send_arp_request(&self, target: Ipv4Addr, source: Option<IpAddr>) {
        let Some(from) = self.own.read().arp_source(target, source) else {
            return inc(&self.stats.solicit_no_source);
        };
        let arp = ArpPacket::request(self.mac, from, target);
        if self.send_framed(MacAddr::BROADCAST, ETHERTYPE_ARP, arp.as_bytes(), None) {
            inc(&self.stats.arp_sent);
        }
    }

    fn send_neighbor_solicitation(&self, target: Ipv6Addr, source: Option<IpAddr>) {
        let Some(from) = self.own.read().solicitation_source(source) else {
            return inc(&self.stats.solicit_no_source);
        };
        let mut datagram = [0u8; SOLICITATION_DATAGRAM_LEN];
        if write_neighbor_solicitation(from, self.mac, target, &mut datagram).is_none() {
            return;
        }
        let group = MacAddr::ipv6_multicast(solicited_node(target));
        if self.send_framed(group, ETHERTYPE_IPV6, &datagram, None) {
            inc(&self.stats.ns_sent);
        }
    }

    /// Sends the frame held in `slot` (detached from its entry) to `mac`
    /// (unless the link went down meanwhile), then frees the slot.
    fn send_held(&self, slot: usize, mac: MacAddr) {
        if !self.link_up() {
            inc(&self.stats.dropped_link_down);
        } else if let Some(held) = self.held.get(slot) {
            let mut held = held.lock();
            let len = held.len;
            if let Some(dst) = held.bytes.get_mut(..6) {
                dst.copy_from_slice(mac.as_bytes());
            }
            let frame = held.bytes.get(..len).unwrap_or_default();
            // Only the device's datagrams are held (never ARP or NS).
            let ethertype = frame
                .get(12..14)
                .map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
            let rdma = len
                .checked_sub(ETHERNET_HEADER_LEN)
                .and_then(|n| rocev2_payload_len(ethertype, n));
            if self.hand_to_sink(frame, rdma) {
                inc(&self.stats.held_sent);
            }
        }
        self.neighbours.write().free_slot(slot);
    }

    // ---- receiving ----

    /// Looks at one received Ethernet frame (FCS stripped) at `now_us`:
    /// the RNIC's ([`Verdict::Rnic`], its datagram's headers checked) or
    /// the host's ([`Verdict::PassUp`]). ARP and Neighbor Discovery
    /// frames are learnt from on the way up. Never panics, whatever the
    /// bytes.
    pub fn on_frame<'f>(&self, frame: &'f [u8], now_us: u64) -> Verdict<'f> {
        self.note_time(now_us);
        let now = self.now();
        let own = self.own.read();
        let learn = match classify(frame, |ip| own.contains(ip)) {
            Frame::Rocev2 { datagram, mac } => {
                drop(own);
                inc(&self.stats.steered);
                let bytes = datagram.udp_payload().len() as u64;
                self.stats.steered_bytes.fetch_add(bytes, Ordering::Relaxed);
                self.confirm(datagram.fields().src(), mac, now);
                return Verdict::Rnic(datagram);
            }
            Frame::Arp(arp) => {
                let sender: IpAddr = arp.sender_ip().into();
                let learnable = !sender.is_unspecified() && !own.contains(sender);
                learnable.then(|| (sender, arp.sha, own.contains(arp.target_ip().into())))
            }
            Frame::Ndp(n) => ndp_learning(&n, &own),
            Frame::Other => None,
        };
        drop(own);
        inc(&self.stats.passed_up);
        if let Some((ip, mac, create)) = learn
            && mac.is_unicast()
        {
            self.learn(ip, mac, create, now);
        }
        Verdict::PassUp
    }

    /// The port's receive for a runtime that hands the RNIC its frames
    /// straight on (the kernel shell's, once per frame): looks at `frame`
    /// at `now_us` as [`EthernetPort::on_frame`] does and, if it is the
    /// RNIC's, hands its checked datagram to `rnic`'s one receive door
    /// ([`SoftRnic::receive`]) at the same time; whether it did (`false`:
    /// pass the frame up). Its RDMA octets are counted first
    /// ([`PortStats::steered_bytes`]).
    pub fn receive_frame(&self, frame: &[u8], now_us: u64, rnic: &SoftRnic) -> bool {
        match self.on_frame(frame, now_us).into_arrival() {
            Some(arrival) => {
                rnic.receive(now_us, arrival);
                true
            }
            None => false,
        }
    }

    /// Hands each datagram queued for loopback at the time of the call to
    /// `rnic`'s receive at `now_us` ([`EthernetPort::poll_loopback`] for a
    /// runtime that hands them straight on); returns how many.
    pub fn loopback_into(&self, rnic: &SoftRnic, now_us: u64) -> usize {
        self.poll_loopback(|datagram| rnic.receive(now_us, Arrival::Datagram(datagram)))
    }

    /// Learns that `ip` has `mac` (adding it if `create`), and sends the
    /// datagram held for it, if any.
    fn learn(&self, ip: IpAddr, mac: MacAddr, create: bool, now: u64) {
        let mut cache = self.neighbours.write();
        let learnt = cache.learn(ip, mac, now, create);
        let evicted = cache.take_evicted_holds();
        drop(cache);
        self.stats
            .held_dropped
            .fetch_add(evicted, Ordering::Relaxed);
        if let Learnt::Yes { held } = learnt {
            inc(&self.stats.neighbours_learnt);
            if let Some(slot) = held {
                self.send_held(slot, mac);
            }
        }
    }

    /// A RoCEv2 frame from `src` with `mac` arrived: confirms the
    /// neighbour if it is known with that MAC address.
    fn confirm(&self, src: IpAddr, mac: MacAddr, now: u64) {
        if self.neighbours.read().wants_confirmation(src, mac, now) {
            self.neighbours.write().confirm(src, mac, now);
        }
    }
}

/// What a Neighbor Solicitation or Advertisement teaches (address, MAC
/// address, whether to add it), by the module's policy.
fn ndp_learning(n: &Neighbor, own: &OwnAddresses) -> Option<(IpAddr, MacAddr, bool)> {
    let mac = n.mac?;
    let (ip, create) = match n.kind {
        NdpKind::Solicitation => (n.src, own.contains(n.target.into())),
        NdpKind::Advertisement => (n.target, own.contains(n.dst.into())),
    };
    let ip = IpAddr::V6(ip);
    (!ip.is_unspecified() && !own.contains(ip)).then_some((ip, mac, create))
}

const _: () = assert!(MAX_FRAME_LEN == ETHERNET_HEADER_LEN + MAX_DATAGRAM_LEN);

//! The device's network attachment ([`Link`]), the link wrappers, and how
//! the transport puts packets on a link: every datagram or train the device
//! sends goes through one `Transmitter`, which counts it before the link
//! takes it.
//!
//! Whether packets to a destination leave as a train or as datagrams is
//! the link's choice, made in one place: the transport asks the
//! transmitter for a `Token` for the destination and sizes what it sends
//! (a `Segments` description of a run, or one packet) to what the token
//! says. Only a train token can put a train on the link.
//!
//! The host (or the kernel shell) implements [`Link`]; tests implement it
//! deterministically (an in-memory fabric). What a link carries arrives at
//! the peer through its runtime: pushed into
//! [`crate::device::SoftRnic::receive`] (the device's one receive door,
//! taking an [`Arrival`]), or taken by a pass from [`Link::receive`].
//!
//! ## Wrappers
//!
//! As smoltcp's `phy::Tracer` and `phy::FaultInjector` wrap a device in
//! another, a link may be wrapped in another link:
//!
//! * [`CaptureLink`] shows what passes through it, either way, to a
//!   [`crate::env::Capture`] (a pcap writer), once one fills its slot
//!   ([`CaptureLink::set_capture`]). The device holds none: a runtime
//!   that captures wraps the link it gives the device in one, and shows
//!   what it pushes into the device's receive itself
//!   ([`CaptureLink::show_arrival`]).
//!
//! * [`FaultLink`] injects seeded faults into what is transmitted through
//!   it: loss, duplication, reordering and delay, drawn per datagram by a
//!   [`FaultInjector`] that several links may share (the devices of one
//!   simulated network). It carries no trains while it draws per-datagram
//!   faults. What it delays it holds until due, or hands at once to a link
//!   that delays delivery itself ([`Link::transmit_owned_later`]: a
//!   [`crate::fabric::FabricEndpoint`], tests' and the host's hub's). A
//!   runtime (or test) wraps the link it gives a device in one, inside
//!   its capture wrapper, which so sees what leaves the device before any
//!   fault.
//!
//! A wrapper forwards what it does not change, so wrappers nest, and a
//! `Box` or `Arc` of a link is a link.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::net::SocketAddr;
use hwq::TryArc;

use crate::arrival::Arrival;
use crate::memory::DeviceMemory;
use crate::stats::Counters;
use crate::train::{Segments, Train};

mod capture;
#[cfg(any(feature = "sim", doc))]
mod faults;

pub use capture::CaptureLink;
#[cfg(any(feature = "sim", doc))]
pub use faults::{FaultInjector, FaultLink, FaultStats, Faults};

/// The device's network attachment.
pub trait Link: Send + Sync {
    /// Queues one IPv4/UDP or IPv6/UDP datagram (a whole RoCEv2 packet,
    /// from the IP header to the ICRC; the version nibble tells which) for
    /// transmission. Must not block; a link that cannot take the packet
    /// now drops it (the RC transport retransmits); one it can never send
    /// (larger than the path carries, refused) it reports
    /// ([`Link::take_send_failures`]).
    fn transmit(&self, datagram: &[u8]);

    /// Like [`Link::transmit`] for the datagram in `buf[..len]`, but the
    /// link may take the buffer instead of copying it, leaving in its place
    /// another of at least the same length and unspecified contents (an
    /// in-memory fabric moves full-size packets this way without a copy).
    fn transmit_owned(&self, buf: &mut alloc::vec::Vec<u8>, len: usize) {
        if let Some(datagram) = buf.get(..len) {
            self.transmit(datagram);
        }
    }

    /// For a link that delays delivery itself (a simulated network's
    /// delivery queue): takes the datagram in `buf[..len]` as
    /// [`Link::transmit_owned`] does, for delivery `hold_us` later than
    /// [`Link::transmit_owned`]'s. `false` (the default): the link holds
    /// nothing back and took nothing; a [`FaultLink`] then holds the
    /// datagram itself.
    fn transmit_owned_later(&self, hold_us: u64, buf: &mut Vec<u8>, len: usize) -> bool {
        let _ = (hold_us, buf, len);
        false
    }

    /// [`Link::transmit_owned_later`] for a train (the sender asked
    /// [`Link::carries_trains`] first): returns it if it did not take it
    /// (the default).
    fn transmit_train_later(&self, hold_us: u64, train: Train) -> Option<Train> {
        let _ = hold_us;
        Some(train)
    }

    /// Pushes queued datagrams out (a batching link sends them here).
    fn flush(&self) {}

    /// Whether the link takes another packet now. A link with a bounded
    /// transmit queue (a NIC's transmit ring) says `false` while it is
    /// full, rather than drop what it is given: the device then builds
    /// nothing more for a QP that would send, which stops where it is
    /// (nothing consumed, no PSN advanced, no timer started) until the
    /// link calls [`crate::device::SoftRnic::link_ready`], when it resumes
    /// from there. A link that says `false` must make that call once it
    /// says `true` again. Asked before every packet: must be cheap, must
    /// not block. The default always has room.
    ///
    /// Connection management's packets go whatever this says (the link
    /// may drop them; their senders retry). The device's outbox
    /// ([`crate::device::SoftRnic`]'s engine records what QPs send and
    /// drains it after) asks this before each packet it hands over, and
    /// keeps the rest, in order, until the link has room.
    fn can_transmit(&self) -> bool {
        true
    }

    /// For a link that carries UDP payloads (BTH through ICRC) and writes
    /// the IP and UDP headers itself: lends `len` bytes of its own send
    /// buffer for the next payload to the endpoint `dest` (IPv4 or IPv6),
    /// which `build` writes (returning its length, or `None` for nothing
    /// to send), so the packet is built where it leaves from. For IPv4 the
    /// ICRC covers the identification and flags: a link that lends for an
    /// IPv4 endpoint must send the header the engine chose (DF, the
    /// identification [`crate::wire::ipv4_ident`] of the payload's PSN,
    /// source port 4791), which a UDP socket cannot. `false` (the
    /// default): the link has no such buffer for `dest` (nothing was
    /// called; the caller builds a datagram and transmits it).
    fn transmit_udp_payload_with(
        &self,
        dest: SocketAddr,
        len: usize,
        build: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> bool {
        let _ = (dest, len, build);
        false
    }

    /// Whether the link carries trains to `dst`
    /// ([`crate::train`]): only a link between devices that share one DMA
    /// address space, while it injects no per-packet faults (a
    /// [`FaultLink`] says no while it draws them). The default carries
    /// none. Asked before each packet or train of a SEND, WRITE or
    /// READ response stream: must be cheap, must not block.
    fn carries_trains(&self, dst: core::net::IpAddr) -> bool {
        let _ = dst;
        false
    }

    /// Queues a train; called only after
    /// [`Link::carries_trains`] said yes. Must not block. A link that cannot
    /// take it drops it (the RC transport asks again).
    fn transmit_train(&self, train: Train) {
        drop(train);
    }

    /// The largest RoCE path MTU (256, 512, 1024, 2048 or 4096 bytes of
    /// payload) whose packets the link carries to `dst` whole, with their
    /// headers ([`crate::l2::path_mtu_for`] of the route's or the
    /// NIC's MTU); `None`: the link knows no limit (the device's
    /// configured path MTU applies). Connection management offers no more
    /// than this in a REQ and accepts no more in one. May take a system
    /// call: asked once per connection, never per packet.
    fn path_mtu_to(&self, dst: core::net::IpAddr) -> Option<u32> {
        let _ = dst;
        None
    }

    /// Hands each datagram the link took but could not send and never
    /// will (larger than the path carries, refused by the host: not a full
    /// queue or a lost packet, which the RC transport retransmits) to
    /// `each`, once; the device fails the QP that sent it. The default
    /// has none. Asked after every pass's flush: must be cheap when there
    /// are none. `each` may transmit (the device sends what failing the QP
    /// sends): the link must hold none of its own locks while it calls it.
    fn take_send_failures(&self, each: &mut dyn FnMut(SendFailure)) {
        let _ = each;
    }

    /// Hands datagrams that have arrived (a bounded batch, never waiting)
    /// to `deliver`. For links that are polled; a link that pushes its
    /// arrivals into [`crate::device::SoftRnic::receive`] itself (an
    /// interrupt or receive callback) keeps this default, which takes
    /// nothing. Called by one thread at a time per device.
    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        let _ = deliver;
        Received::default()
    }
}

/// A link behind a pointer is the link it points to (every call forwarded,
/// defaults included), so a device may own a `Box<dyn Link>` and a
/// harness share an `Arc` of a wrapper it also drives (a kernel runtime a
/// [`TryArc`] of the Ethernet port it also receives through).
macro_rules! forward_link {
    ($ptr:ident $(, $unsized:tt)?) => {
        impl<L: Link $(+ $unsized Sized)?> Link for $ptr<L> {
            fn transmit(&self, datagram: &[u8]) {
                (**self).transmit(datagram);
            }
            fn transmit_owned(&self, buf: &mut Vec<u8>, len: usize) {
                (**self).transmit_owned(buf, len);
            }
            fn transmit_owned_later(&self, hold_us: u64, buf: &mut Vec<u8>, len: usize) -> bool {
                (**self).transmit_owned_later(hold_us, buf, len)
            }
            fn transmit_train_later(&self, hold_us: u64, train: Train) -> Option<Train> {
                (**self).transmit_train_later(hold_us, train)
            }
            fn flush(&self) {
                (**self).flush();
            }
            fn can_transmit(&self) -> bool {
                (**self).can_transmit()
            }
            fn transmit_udp_payload_with(
                &self,
                dest: SocketAddr,
                len: usize,
                build: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
            ) -> bool {
                (**self).transmit_udp_payload_with(dest, len, build)
            }
            fn carries_trains(&self, dst: core::net::IpAddr) -> bool {
                (**self).carries_trains(dst)
            }
            fn transmit_train(&self, train: Train) {
                (**self).transmit_train(train);
            }
            fn path_mtu_to(&self, dst: core::net::IpAddr) -> Option<u32> {
                (**self).path_mtu_to(dst)
            }
            fn take_send_failures(&self, each: &mut dyn FnMut(SendFailure)) {
                (**self).take_send_failures(each);
            }
            fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
                (**self).receive(deliver)
            }
        }
    };
}

forward_link!(Box, ?);
forward_link!(Arc, ?);
forward_link!(TryArc);

/// A packet a link could not send ([`Link::take_send_failures`]): whom
/// it was for, from its IP header (or socket address) and BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendFailure {
    /// The IP address it was sent to.
    pub dst: core::net::IpAddr,
    /// Its BTH destination QP (the peer's QP number).
    pub dest_qp: u32,
    /// Its PSN.
    pub psn: u32,
    /// Its BTH opcode byte (a request's, or a response's: ACK, READ
    /// response).
    pub opcode: u8,
}

impl SendFailure {
    /// The failure of the UDP payload (BTH onwards) `payload` sent to
    /// `dst`; `None` if it is too short to hold a BTH.
    pub fn of_udp_payload(dst: core::net::IpAddr, payload: &[u8]) -> Option<Self> {
        let bth: &[u8; crate::wire::BTH_LEN] =
            payload.get(..crate::wire::BTH_LEN)?.try_into().ok()?;
        Some(Self {
            dst,
            dest_qp: u32::from_be_bytes([0, bth[5], bth[6], bth[7]]),
            psn: u32::from_be_bytes([0, bth[9], bth[10], bth[11]]),
            opcode: bth[0],
        })
    }

    /// The failure of the IPv4 or IPv6 datagram `datagram`; `None` if its
    /// headers are not there.
    pub fn of_datagram(datagram: &[u8]) -> Option<Self> {
        let (dest, payload) = crate::wire::ip_udp::split_datagram(datagram)?;
        Self::of_udp_payload(dest.ip(), payload)
    }
}

/// A datagram or a train, as a link holds it for later delivery.
#[derive(Debug)]
// A train carries its gather list inline (up to 16 entries), so it needs
// no allocation per send; an entry is moved a few times in its queue's
// heap, which costs less than a boxed train's allocation and free.
#[allow(clippy::large_enum_variant)]
pub enum Load {
    /// One IPv4 or IPv6 datagram.
    Datagram(Vec<u8>),
    /// Packets whose payload is still at the sender ([`crate::train`]).
    Train(Train),
}

impl Load {
    /// How many packets it stands for.
    pub fn packets(&self) -> u64 {
        match self {
            Self::Datagram(_) => 1,
            Self::Train(t) => u64::from(t.segments()),
        }
    }

    /// The datagram, if it is one.
    pub fn datagram(&self) -> Option<&[u8]> {
        match self {
            Self::Datagram(bytes) => Some(bytes),
            Self::Train(_) => None,
        }
    }
}

/// What one [`Link::receive`] took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Datagrams handed over.
    pub count: usize,
    /// The batch was full: more may be waiting.
    pub more: bool,
    /// When the next datagram held back by the link (a simulated delay)
    /// becomes due, on the link's clock.
    pub next_due_us: Option<u64>,
}

/// How the transport sends: the device's link and the counters of what
/// was sent.
#[derive(Clone, Copy)]
pub(crate) struct Transmitter<'a> {
    pub(crate) link: &'a dyn Link,
    pub(crate) stats: &'a Counters,
}

impl Transmitter<'_> {
    /// Whether the link takes another packet now ([`Link::can_transmit`]).
    pub(crate) fn can_transmit(&self) -> bool {
        self.link.can_transmit()
    }

    /// How the link takes the next packets to `dst`: as a train, if it
    /// carries trains there ([`Link::carries_trains`]), else as datagrams.
    pub(crate) fn token(&self, dst: core::net::IpAddr) -> Token<'_> {
        if self.link.carries_trains(dst) {
            Token::Train(TrainToken { tx: *self })
        } else {
            Token::Datagrams
        }
    }

    /// Pushes queued datagrams out ([`Link::flush`]).
    pub(crate) fn flush(&self) {
        self.link.flush();
    }

    /// Puts one built datagram on the link.
    pub(crate) fn packet(&self, datagram: &[u8], resend: bool) {
        self.stats.tx_packets.inc();
        self.stats.retransmitted.inc_if(resend);
        self.link.transmit(datagram);
    }

    /// Puts the datagram built in `buf[..len]` on the link; the link may
    /// swap `buf` for another buffer of the same length.
    pub(crate) fn buf(&self, buf: &mut Vec<u8>, len: usize, resend: bool) {
        self.stats.tx_packets.inc();
        self.stats.retransmitted.inc_if(resend);
        self.link.transmit_owned(buf, len);
    }

    /// Builds a packet's UDP payload (`len` bytes at most) straight into
    /// the link's send buffer, if the link lends one (a capturing or
    /// fault-injecting wrapper lends none while it works: it wants the
    /// whole datagram); `false`: nothing was called, build a datagram and
    /// use [`Transmitter::buf`]. `build` returns the length written, or
    /// `None` for nothing to send.
    pub(crate) fn udp_payload_with(
        &self,
        dest: SocketAddr,
        len: usize,
        build: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> bool {
        let stats = self.stats;
        let mut counted = |slot: &mut [u8]| {
            let n = build(slot);
            stats.tx_packets.inc_if(n.is_some());
            n
        };
        self.link.transmit_udp_payload_with(dest, len, &mut counted)
    }
}

/// How the link takes the next packets to one destination
/// ([`Transmitter::token`]). The sender describes what it sends to fit:
/// a run of up to [`crate::train::MAX_TRAIN_SEGMENTS`] packets for a
/// train, one packet at a time for datagrams.
pub(crate) enum Token<'a> {
    /// The link carries trains there: send the run with
    /// [`TrainToken::send`].
    Train(TrainToken<'a>),
    /// Build each packet into a datagram and send it with
    /// [`Transmitter::buf`] (or [`Transmitter::udp_payload_with`]).
    Datagrams,
}

/// Leave to put one train on the link, which said it carries trains to
/// its destination; the only way a train reaches [`Link::transmit_train`].
pub(crate) struct TrainToken<'a> {
    tx: Transmitter<'a>,
}

impl TrainToken<'_> {
    /// Puts the packets `segs` describes on the link as one train, its
    /// payload left in `source` (the sender's memory); counts each
    /// segment as a packet sent.
    pub(crate) fn send(self, source: TryArc<DeviceMemory>, segs: &Segments, resend: bool) {
        let train = Train::new(source, segs);
        let tx = self.tx;
        let n = u64::from(train.segments());
        tx.stats.tx_packets.add(n);
        if resend {
            tx.stats.retransmitted.add(n);
        }
        tx.link.transmit_train(train);
    }
}

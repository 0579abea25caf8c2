//! Links: what a runtime that carries packets in software puts between a
//! device and its wire, and the runtime side of a device's transmit turn
//! for such a runtime. The device itself owns no link and calls none
//! ([`crate::transmit`]): a runtime hands arrivals to
//! [`crate::device::SoftRnic::receive`] and takes what the device sends.
//! A runtime whose wire is a [`Link`] (the in-memory fabric's
//! [`crate::fabric::FabricEndpoint`], the host's UDP port, tests' links)
//! takes it with a [`LinkPump`] and runs whole passes with [`LinkPass`];
//! one with its own buffers (the kernel's NBLs) takes packets itself.
//!
//! ## Wrappers
//!
//! As smoltcp's `phy::Tracer` and `phy::FaultInjector` wrap a device in
//! another, a link may be wrapped in another link, by the runtime:
//!
//! * [`CaptureLink`] shows what passes through it, either way, to a
//!   [`crate::env::Capture`] (a pcap writer), once one fills its slot
//!   ([`CaptureLink::set_capture`]). A runtime that hands arrivals to the
//!   device itself shows them first ([`CaptureLink::show_arrival`]).
//!
//! * [`FaultLink`] injects seeded faults into what is transmitted through
//!   it: loss, duplication, reordering and delay, drawn per datagram by a
//!   [`FaultInjector`] that several links may share (the devices of one
//!   simulated network). It carries no trains while it draws per-datagram
//!   faults. What it delays it holds until due, or hands at once to a link
//!   that delays delivery itself ([`Link::transmit_owned_later`]: a
//!   [`crate::fabric::FabricEndpoint`], tests' and the host's hub's). A
//!   runtime (or test) wraps its link in one, inside its capture wrapper,
//!   which so sees what leaves the device before any fault.
//!
//! A wrapper forwards what it does not change, so wrappers nest, and a
//! `Box` or `Arc` of a link is a link.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use hwq::TryArc;

use crate::arrival::Arrival;
use crate::device::SoftRnic;
use crate::env::{Pass, PassPlan};
use crate::train::Train;
use crate::transmit::{Carriage, MAX_DATAGRAM, SendFailure, Transmit};

mod capture;
#[cfg(any(feature = "sim", doc))]
mod faults;

pub use capture::CaptureLink;
#[cfg(any(feature = "sim", doc))]
pub use faults::{FaultInjector, FaultLink, FaultStats, Faults};

/// What a runtime carries packets over in software (and the wrappers
/// around it). The device never calls one: [`LinkPump`] and [`LinkPass`]
/// do, for the runtime.
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
    /// transmit queue says `false` while it is full, rather than drop what
    /// it is given: its pump then takes nothing more from the device,
    /// whose QPs stop where they are once their outboxes fill, and resume
    /// when a later pump (the runtime's next pass) takes packets again.
    /// Asked before every packet: must be cheap, must not block. The
    /// default always has room.
    fn can_transmit(&self) -> bool {
        true
    }

    /// Whether the link carries trains ([`crate::train`]): only a link
    /// between devices that share one DMA address space, while it injects
    /// no per-packet faults (a [`FaultLink`] says no while it draws them).
    /// The default carries none. Asked once per pump.
    fn carries_trains(&self) -> bool {
        false
    }

    /// Queues a train; called only after
    /// [`Link::carries_trains`] said yes. Must not block. A link that cannot
    /// take it drops it (the RC transport asks again).
    fn transmit_train(&self, train: Train) {
        drop(train);
    }

    /// Hands each datagram the link took but could not send and never
    /// will (larger than the path carries, refused by the host: not a full
    /// queue or a lost packet, which the RC transport retransmits) to
    /// `each`, once; the pump gives it back to the device
    /// ([`SoftRnic::send_failed`]), which fails the QP that sent it. The
    /// default has none. Asked after every pump's flush: must be cheap
    /// when there are none. The link must hold none of its own locks while
    /// it calls `each`.
    fn take_send_failures(&self, each: &mut dyn FnMut(SendFailure)) {
        let _ = each;
    }

    /// Hands datagrams that have arrived (a bounded batch, never waiting)
    /// to `deliver`. For links that are polled ([`LinkPass`] does); a
    /// runtime whose arrivals come pushed (an interrupt or receive
    /// callback) hands them to [`SoftRnic::receive`] itself, and its link
    /// keeps this default, which takes nothing. Called by one thread at a
    /// time per device.
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
            fn carries_trains(&self) -> bool {
                (**self).carries_trains()
            }
            fn transmit_train(&self, train: Train) {
                (**self).transmit_train(train);
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

/// Takes what a device sends and puts it on a [`Link`]: the runtime side
/// of the device's transmit turn ([`crate::transmit`]) for a runtime whose
/// wire is a link. Holds one datagram buffer, allocated once.
#[derive(Debug)]
pub struct LinkPump {
    /// Where each packet is built; a link taking it whole swaps in another
    /// ([`Link::transmit_owned`]). Locked only by the holder of the
    /// device's transmit turn, so never waited for.
    buf: spin::Mutex<Vec<u8>>,
}

impl LinkPump {
    /// A pump; `None` if memory ran out.
    pub fn new() -> Option<Self> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(MAX_DATAGRAM).ok()?;
        buf.resize(MAX_DATAGRAM, 0);
        Some(Self {
            buf: spin::Mutex::new(buf),
        })
    }

    /// Takes `rnic`'s packets while `link` has room, puts each on it in the
    /// order taken, flushes it, then gives the link's send failures back to
    /// the device at `now`. Returns how many packets (a train counts the
    /// packets it stands for) it moved. A call while another pump of the
    /// device runs moves nothing: that one takes what is waiting, or wakes
    /// the device's engine when it stops.
    pub fn pump(&self, rnic: &SoftRnic, link: &dyn Link, now: u64) -> usize {
        let mut moved = 0;
        // The buffer is locked only under the device's transmit turn, and
        // let go before it (declared after it): whoever gets the turn gets
        // the buffer.
        if let Some(mut turn) = rnic.transmit_turn()
            && let Some(mut buf) = self.buf.try_lock()
        {
            let carriage = Carriage {
                ipv6_udp_payloads: false,
                trains: link.carries_trains(),
            };
            while link.can_transmit() {
                if buf.len() < MAX_DATAGRAM {
                    // A link that took the buffer left a shorter one.
                    buf.resize(MAX_DATAGRAM, 0);
                }
                match turn.poll_transmit(&mut buf, carriage) {
                    Some(Transmit::Datagram(len)) => {
                        moved += 1;
                        link.transmit_owned(&mut buf, len);
                    }
                    Some(Transmit::Train(train)) => {
                        moved += train.segments() as usize;
                        link.transmit_train(train);
                    }
                    // Not asked for (no UDP payloads in this carriage).
                    Some(Transmit::UdpPayload { .. }) => {}
                    None => break,
                }
            }
            link.flush();
        }
        link.take_send_failures(&mut |failure| rnic.send_failed(now, failure));
        moved
    }
}

/// A whole pass of a runtime whose wire is a [`Link`]: what the link
/// received handed to the device, the device's work, and what it sends
/// taken onto the link ([`crate::pass`]). The runtime holds one per
/// device, with the device's link.
#[derive(Debug)]
pub struct LinkPass<L> {
    link: L,
    pump: LinkPump,
}

impl<L: Link> LinkPass<L> {
    /// Passes over `link`; `None` if memory ran out.
    pub fn new(link: L) -> Option<Self> {
        Some(Self {
            link,
            pump: LinkPump::new()?,
        })
    }

    /// The link.
    pub fn link(&self) -> &L {
        &self.link
    }

    /// Runs one pass of `rnic` at `now` as `plan` says, unless another pass
    /// of it runs (`None`: the caller does not wait for it). When `plan`
    /// says send first and send doorbells rang, the pass runs the work and
    /// takes what it sent, leaving arrivals to the next pass.
    pub fn try_pass(&self, rnic: &SoftRnic, now: u64, plan: PassPlan) -> Option<Pass> {
        run_pass(
            rnic,
            now,
            plan,
            &mut |deliver| self.link.receive(deliver),
            &mut || {
                self.pump(rnic, now);
            },
        )
    }

    /// Takes what `rnic` sends onto the link ([`LinkPump::pump`]).
    pub fn pump(&self, rnic: &SoftRnic, now: u64) -> usize {
        self.pump.pump(rnic, &self.link, now)
    }
}

/// A runtime's receive of one batch of arrivals, each handed to the
/// callback it is given ([`Link::receive`]'s shape).
pub type ReceiveBatch<'a> = dyn FnMut(&mut dyn FnMut(Arrival<'_>)) -> Received + 'a;

/// One pass of `rnic` at `now` as `plan` says, for a runtime that takes
/// arrivals from its wire in batches (`receive`, as [`Link::receive`]) and
/// puts what the device sends on it (`pump`): the batches handed to the
/// device, its work, then the pump; `None` (nothing done) if another pass
/// of it runs. When `plan` says send first and send doorbells rang, the
/// arrivals are left to the next pass.
pub fn run_pass(
    rnic: &SoftRnic,
    now: u64,
    plan: PassPlan,
    receive: &mut ReceiveBatch<'_>,
    pump: &mut dyn FnMut(),
) -> Option<Pass> {
    let turn = rnic.pass_turn()?;
    let mut pass = Pass::default();
    if !(plan.send_first && rnic.has_send_work()) {
        for _ in 0..plan.rx_batches {
            let got = receive(&mut |arrival| rnic.receive(now, arrival));
            pass.received += got.count;
            pass.next_due_us = got.next_due_us;
            if !got.more {
                break;
            }
        }
    }
    pass.worked = turn.work(now, plan.deliver_events);
    drop(turn);
    pump();
    Some(pass)
}

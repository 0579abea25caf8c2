//! The [`Link`] trait: what a runtime carries a device's packets over in
//! software, and what a link holds for later delivery ([`Load`]).

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use softrnic::arrival::Arrival;
use softrnic::train::Train;
use softrnic::transmit::SendFailure;

/// A packet a runtime hands a [`Link`].
#[derive(Debug)]
// A train carries its gather list inline (no allocation per send).
#[allow(clippy::large_enum_variant)]
pub enum Outgoing<'a> {
    /// A whole IPv4/UDP or IPv6/UDP datagram (a RoCEv2 packet from the IP
    /// header to the ICRC; the version nibble tells which) in
    /// `buf[..len]`. The link may take the buffer instead of copying it,
    /// leaving in its place another of at least the same length and
    /// unspecified contents (an in-memory fabric moves full-size packets
    /// this way without a copy).
    Datagram {
        /// The buffer holding it.
        buf: &'a mut Vec<u8>,
        /// Its length.
        len: usize,
    },
    /// A train ([`softrnic::train`]): only to a link that carries them
    /// ([`Link::carries_trains`]).
    Train(Train),
}

impl Outgoing<'_> {
    /// The datagram's bytes, if it is one.
    pub fn datagram(&self) -> Option<&[u8]> {
        match self {
            Self::Datagram { buf, len } => buf.get(..*len),
            Self::Train(_) => None,
        }
    }
}

/// Transmits a copy of `datagram` on `link` (for a datagram built
/// elsewhere: a test's, a hostile peer's).
pub fn transmit_copy<L: Link + ?Sized>(link: &L, datagram: &[u8]) {
    let mut buf = datagram.to_vec();
    let len = buf.len();
    link.transmit(Outgoing::Datagram { buf: &mut buf, len });
}

/// What a runtime carries packets over in software (and the wrappers
/// around it). The device never calls one: [`crate::LinkPump`] and
/// [`crate::LinkPass`] do, for the runtime.
pub trait Link: Send + Sync {
    /// Queues one packet for transmission. Must not block; a link that
    /// cannot take it now drops it (the RC transport retransmits); one it
    /// can never send (larger than the path carries, refused) it reports
    /// ([`Link::take_send_failures`]).
    fn transmit(&self, packet: Outgoing<'_>);

    /// For a link that delays delivery itself (a simulated network's
    /// delivery queue): takes `packet` as [`Link::transmit`] does, for
    /// delivery `hold_us` later than [`Link::transmit`]'s. Gives it back
    /// untouched if it holds nothing back (the default); a
    /// [`crate::FaultLink`] then holds it itself.
    fn transmit_later<'a>(&self, hold_us: u64, packet: Outgoing<'a>) -> Option<Outgoing<'a>> {
        let _ = hold_us;
        Some(packet)
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

    /// Whether the link carries trains ([`softrnic::train`]): only a link
    /// between devices that share one DMA address space, while it injects
    /// no per-packet faults (a [`crate::FaultLink`] says no while it draws them).
    /// The default carries none. Asked once per pump.
    fn carries_trains(&self) -> bool {
        false
    }

    /// Hands each datagram the link took but could not send and never
    /// will (larger than the path carries, refused by the host: not a full
    /// queue or a lost packet, which the RC transport retransmits) to
    /// `each`, once; the pump gives it back to the device
    /// ([`softrnic::device::SoftRnic::send_failed`]), which fails the QP that sent it. The
    /// default has none. Asked after every pump's flush: must be cheap
    /// when there are none. The link must hold none of its own locks while
    /// it calls `each`.
    fn take_send_failures(&self, each: &mut dyn FnMut(SendFailure)) {
        let _ = each;
    }

    /// Hands datagrams that have arrived (a bounded batch, never waiting)
    /// to `deliver`. For links that are polled ([`crate::LinkPass`] does); a
    /// runtime whose arrivals come pushed (an interrupt or receive
    /// callback) hands them to [`softrnic::device::SoftRnic::receive`] itself, and its link
    /// keeps this default, which takes nothing. Called by one thread at a
    /// time per device.
    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        let _ = deliver;
        Received::default()
    }
}

/// A link behind a pointer is the link it points to (every call forwarded,
/// defaults included), so a runtime may hold a `Box<dyn Link>` and share
/// an `Arc` of a wrapper it also drives.
macro_rules! forward_link {
    ($ptr:ident $(, $unsized:tt)?) => {
        impl<L: Link $(+ $unsized Sized)?> Link for $ptr<L> {
            fn transmit(&self, packet: Outgoing<'_>) {
                (**self).transmit(packet);
            }
            fn transmit_later<'a>(&self, hold_us: u64, packet: Outgoing<'a>) -> Option<Outgoing<'a>> {
                (**self).transmit_later(hold_us, packet)
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

/// A datagram or a train, as a link holds it for later delivery.
#[derive(Debug)]
// A train carries its gather list inline (up to 16 entries), so it needs
// no allocation per send; an entry is moved a few times in its queue's
// heap, which costs less than a boxed train's allocation and free.
#[allow(clippy::large_enum_variant)]
pub enum Load {
    /// One IPv4 or IPv6 datagram.
    Datagram(Vec<u8>),
    /// Packets whose payload is still at the sender ([`softrnic::train`]).
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

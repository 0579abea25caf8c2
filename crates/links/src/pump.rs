//! Moving packets between a device and a [`Link`]: the runtime side of
//! the device's transmit turn ([`LinkPump`]), and whole passes
//! ([`LinkPass`], [`run_pass`]) with what they are asked to do
//! ([`PassPlan`]) and what they did ([`Pass`]).

use alloc::vec::Vec;

use softrnic::arrival::Arrival;
use softrnic::device::SoftRnic;
use softrnic::transmit::{Carriage, MAX_DATAGRAM, Transmit};

use crate::link::{Link, Outgoing, Received};

/// What one pass does ([`LinkPass`], or a runtime's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassPlan {
    /// Deliver events to the event sink (only the device's own context).
    pub deliver_events: bool,
    /// Receive batches the runtime takes at most before the work, so that
    /// a flood cannot hold the pass for long (the device receives nothing
    /// itself: the runtime's pass hands arrivals in first).
    pub rx_batches: usize,
    /// When send doorbells were rung, run the work and end the pass there,
    /// leaving arrivals to the next pass (for a consumer that has just
    /// posted: the answer to what it sends cannot be there yet, and the
    /// receive would cost a system call).
    pub send_first: bool,
}

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Datagrams taken from the link (a train counts the packets it
    /// stands for).
    pub received: usize,
    /// The work did something (call again at once).
    pub worked: bool,
    /// When the link's next held-back datagram is due (µs, the link's
    /// clock).
    pub next_due_us: Option<u64>,
}

/// Takes what a device sends and puts it on a [`Link`]: the runtime side
/// of the device's transmit turn ([`softrnic::transmit`]) for a runtime whose
/// wire is a link. Holds one datagram buffer, allocated once.
#[derive(Debug)]
pub struct LinkPump {
    /// Where each packet is built; a link taking it whole swaps in another
    /// ([`Outgoing::Datagram`]). Locked only by the holder of the
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
                        link.transmit(Outgoing::Datagram { buf: &mut buf, len });
                    }
                    Some(Transmit::Train(train)) => {
                        moved += train.segments() as usize;
                        link.transmit(Outgoing::Train(train));
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
/// taken onto the link ([`softrnic::pass`]). The runtime holds one per
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

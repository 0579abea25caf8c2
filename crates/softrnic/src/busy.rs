//! Who runs the device, and when: its own context (the host's engine
//! thread, the kernel's DPC) or, while a consumer spins on a CQ, the
//! consumer itself (busy polling).
//!
//! A pass takes what the link has received and then runs
//! [`SoftRnic::poll`]'s work. Only one pass runs at a time per device (the
//! *turn*, a try-lock): a second caller returns at once instead of
//! contending for the QP locks the first one holds, which on a small
//! machine costs more than the work (the device was built for one thread
//! per device). A busy pass never delivers events: the consumer called
//! `NdkGetCqResults`, and a notification callback into it from there
//! could deadlock it on its own lock; events raised during the pass wake
//! the device's own context ([`crate::env::Wake::wake_engine`]).
//!
//! Why busy polling: without it a ping-pong's one-way trip crosses three
//! threads (consumer → its engine → the peer's engine → the peer
//! consumer), each hand-off a scheduler wake-up or a spin on a shared
//! core. With it the consumer sends its own posts and takes its own
//! arrivals, as a TCP application does its own `send` and `recv`.

use core::sync::atomic::Ordering;

use crate::device::SoftRnic;
use crate::link::Arrival;

/// Receive batches a pass takes at most before running the poll work, so
/// a flood cannot hold a pass (and the CQ poll that lent it) for long.
const RX_BATCHES: usize = 8;

/// Busy passes that take this many packets within [`BULK_SPAN_US`] have
/// found a bulk transfer (a ping-pong takes one per round trip).
const BULK_PACKETS: u32 = 32;

/// The span over which busy passes count packets (µs).
const BULK_SPAN_US: u64 = 100;

/// How long a device that found a bulk transfer leaves all work to its own
/// context (µs). Busy polling wins where a hand-off costs more than the
/// work (a ping-pong); in a bulk transfer the device's own context, fed in
/// batches, keeps a second core busy while the consumer's thread would do
/// both halves on one (measured: 1 MiB READs over UDP at 1.1-2.4 GB/s
/// busy polled against 2.5-3.0 GB/s left to the engine).
const BULK_BACKOFF_US: u64 = 10_000;

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Datagrams taken from the link.
    pub received: usize,
    /// The poll work did something (call again at once).
    pub worked: bool,
    /// When the link's next held-back datagram is due (µs, device clock).
    pub next_due_us: Option<u64>,
}

/// Holds the device's turn; gives it back on drop.
struct Turn<'a>(&'a SoftRnic);

impl<'a> Turn<'a> {
    fn try_take(rnic: &'a SoftRnic) -> Option<Self> {
        rnic.engine()
            .turn
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            // Lazily: a `Turn` built and dropped on failure would give
            // back the holder's turn.
            .then(|| Self(rnic))
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.engine().turn.store(false, Ordering::Release);
    }
}

impl SoftRnic {
    /// Allows (or forbids) busy polling. Off by default: a host turns it
    /// on when consumers may spin on CQs from threads of their own.
    pub fn set_busy_poll(&self, allowed: bool) {
        self.engine().busy_poll.store(allowed, Ordering::Relaxed);
    }

    /// Runs one pass on the caller's processor for a consumer that found a
    /// CQ empty, unless busy polling is off or another pass is running.
    /// Delivers no event. Returns whether anything was done.
    pub fn busy_poll(&self) -> bool {
        let engine = self.engine();
        if !engine.busy_poll.load(Ordering::Relaxed) {
            return false;
        }
        let now = self.clock.now_us();
        if now < engine.bulk_until.load(Ordering::Relaxed) {
            return false;
        }
        self.waker().note_busy_poll();
        let stats = &engine.stats;
        let Some(turn) = Turn::try_take(self) else {
            stats.busy_turn_taken.inc();
            return false;
        };
        let pass = self.pass(&turn, false);
        stats.busy_passes.inc();
        let bulk = self.bulk_found(&turn, now, pass.received);
        drop(turn);
        if bulk {
            // A bulk transfer: hand it back to the device's own context.
            stats.busy_bulk_backoffs.inc();
            engine
                .bulk_until
                .store(now + BULK_BACKOFF_US, Ordering::Relaxed);
            self.waker().end_busy_poll();
        }
        pass.received > 0 || pass.worked
    }

    /// Counts packets taken by busy passes over spans of [`BULK_SPAN_US`];
    /// whether this span reached [`BULK_PACKETS`]. Only the holder of the
    /// turn counts, so plain loads and stores do.
    fn bulk_found(&self, _turn: &Turn<'_>, now: u64, received: usize) -> bool {
        let engine = self.engine();
        let received = u32::try_from(received).unwrap_or(u32::MAX);
        let mut packets = engine.bulk_span_packets.load(Ordering::Relaxed);
        if now.saturating_sub(engine.bulk_span_start.load(Ordering::Relaxed)) > BULK_SPAN_US {
            engine.bulk_span_start.store(now, Ordering::Relaxed);
            packets = 0;
        }
        packets = packets.saturating_add(received);
        let found = packets >= BULK_PACKETS;
        engine
            .bulk_span_packets
            .store(if found { 0 } else { packets }, Ordering::Relaxed);
        found
    }

    /// Runs one pass with event delivery, for the device's own context;
    /// `None` if another pass (a busy poller) holds the turn.
    pub fn engine_pass(&self) -> Option<Pass> {
        let turn = Turn::try_take(self)?;
        Some(self.pass(&turn, true))
    }

    /// One pass; the caller holds the turn.
    fn pass(&self, _turn: &Turn<'_>, deliver_events: bool) -> Pass {
        let mut pass = Pass::default();
        for _ in 0..RX_BATCHES {
            let got = self.link.receive(&mut |arrival| match arrival {
                Arrival::Datagram(d) => self.receive(d),
                Arrival::Train(t) => self.receive_train(t),
                Arrival::UdpPayload { src, dst, payload } => {
                    self.receive_udp_payload(src, dst, payload);
                }
            });
            pass.received += got.count;
            pass.next_due_us = got.next_due_us;
            if !got.more {
                break;
            }
        }
        pass.worked = self.poll_work();
        if deliver_events {
            pass.worked |= self.deliver_events();
        }
        pass
    }
}

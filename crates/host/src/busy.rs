//! Busy polling: when a consumer that found a CQ empty runs the device's
//! pass on its own thread, as Linux sockets do with `SO_BUSY_POLL`.
//!
//! Without it a ping-pong's one-way trip crosses three threads (consumer,
//! its engine, the peer's engine, the peer consumer), each hand-off a
//! scheduler wake-up or a spin on a shared core. With it the consumer sends
//! its own posts and takes its own arrivals, as a TCP application does its
//! own `send` and `recv`. The device only asks
//! ([`Wake::consumer_poll`]); the pass is the runtime's
//! ([`crate::pass`]), this module decides when a consumer runs one, and
//! the engine thread ([`crate::engine`]) stands aside while consumers
//! poll.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use links::{Clock, Pass, PassPlan};
use softrnic::env::Wake;

use crate::clock::HostClock;
use crate::waker::ThreadWaker;

/// One pass of a device, run on whichever thread lends itself: what a
/// busy-polling consumer runs (the runtime's [`crate::pass::DevicePass`];
/// this module's tests pass a fake device).
pub trait HostPass: Send + Sync {
    /// Runs one pass at `now` as `plan` says, unless another pass of the
    /// device runs (`None`: the caller does not wait for it).
    fn try_pass(&self, now: u64, plan: PassPlan) -> Option<Pass>;
}

/// A consumer's pass: never delivers events (from inside the consumer's
/// CQ poll a notification callback could deadlock it on its own lock);
/// after posting it sends first and leaves the receive system call to its
/// next poll (the answer cannot be there yet).
const CONSUMER_PASS: PassPlan = PassPlan {
    deliver_events: false,
    rx_batches: 8,
    send_first: true,
};

/// Busy passes that take this many packets within [`BULK_SPAN_US`] have
/// found a bulk transfer (a ping-pong takes one or two per round trip).
const BULK_PACKETS: u32 = 32;

/// The span over which busy passes count packets (µs).
const BULK_SPAN_US: u64 = 100;

/// How long a device that found a bulk transfer leaves all work to its
/// engine thread (µs). Busy polling wins where a hand-off costs more than
/// the work (a ping-pong); in a bulk transfer the engine, fed in batches,
/// keeps a second core busy while the consumer's thread would do both
/// halves on one (measured: 1 MiB READs over UDP at 1.1-2.4 GB/s busy
/// polled against 2.5-3.0 GB/s left to the engine).
const BULK_BACKOFF_US: u64 = 10_000;

/// Counters of a device's busy polling.
#[derive(Debug, Default)]
pub struct BusyStats {
    /// Consumer polls that ran a pass.
    pub passes: AtomicU64,
    /// Consumer polls that found another pass running.
    pub turn_taken: AtomicU64,
    /// Bulk transfers found (each left the device to its engine for a
    /// while).
    pub bulk_backoffs: AtomicU64,
}

/// The busy-polling policy of one device.
#[derive(Debug, Default)]
pub struct BusyPoll {
    allowed: AtomicBool,
    /// Busy polling is off until then ([`crate::clock::HostClock`] µs):
    /// a bulk transfer was found.
    bulk_until: AtomicU64,
    /// Packets consumer passes took since `span_start`. Concurrent polls
    /// may lose a count to each other: a heuristic, not an account.
    span_packets: AtomicU32,
    span_start: AtomicU64,
    /// Counters.
    pub stats: BusyStats,
}

impl BusyPoll {
    /// A policy that lets consumers poll if `allowed` (a host turns it on
    /// when consumers may spin on CQs from threads of their own).
    pub fn new(allowed: bool) -> Self {
        Self {
            allowed: AtomicBool::new(allowed),
            ..Self::default()
        }
    }

    /// A consumer polled an empty CQ at `now` (µs): runs one pass of
    /// `device` on its thread unless busy polling is off, backed off for a
    /// bulk transfer, or another pass is running; tells `engine` to stand
    /// aside meanwhile. Returns whether anything was done.
    pub fn consumer_poll(&self, now: u64, device: &dyn HostPass, engine: &ThreadWaker) -> bool {
        if !self.allowed.load(Ordering::Relaxed) || now < self.bulk_until.load(Ordering::Relaxed) {
            return false;
        }
        engine.note_busy_poll(now);
        let Some(pass) = device.try_pass(now, CONSUMER_PASS) else {
            self.stats.turn_taken.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        self.stats.passes.fetch_add(1, Ordering::Relaxed);
        if self.bulk_found(now, pass.received) {
            // A bulk transfer: hand it back to the engine thread.
            self.stats.bulk_backoffs.fetch_add(1, Ordering::Relaxed);
            self.bulk_until
                .store(now + BULK_BACKOFF_US, Ordering::Relaxed);
            engine.end_busy_poll();
        }
        pass.received > 0 || pass.worked
    }

    /// Counts packets taken by consumer passes over spans of
    /// [`BULK_SPAN_US`]; whether this span reached [`BULK_PACKETS`].
    fn bulk_found(&self, now: u64, received: usize) -> bool {
        let received = u32::try_from(received).unwrap_or(u32::MAX);
        let mut packets = self.span_packets.load(Ordering::Relaxed);
        if now.saturating_sub(self.span_start.load(Ordering::Relaxed)) > BULK_SPAN_US {
            self.span_start.store(now, Ordering::Relaxed);
            packets = 0;
        }
        packets = packets.saturating_add(received);
        let found = packets >= BULK_PACKETS;
        self.span_packets
            .store(if found { 0 } else { packets }, Ordering::Relaxed);
        found
    }
}

/// What a device asks of this runtime: wake-ups go to the engine's
/// [`ThreadWaker`], consumers' polls to the device's [`BusyPoll`] policy,
/// which runs the device's pass once it is given
/// ([`SharedWaker::set_pass`]).
#[derive(Clone)]
pub struct SharedWaker {
    engine: Arc<ThreadWaker>,
    busy: Arc<BusyPoll>,
    /// The device's pass: made after the device (which owns this waker),
    /// so set afterwards; it holds the device weakly.
    pass: Arc<OnceLock<Arc<dyn HostPass>>>,
}

impl std::fmt::Debug for SharedWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedWaker")
            .field("engine", &self.engine)
            .field("busy", &self.busy)
            .field("has_pass", &self.pass.get().is_some())
            .finish()
    }
}

impl SharedWaker {
    /// The hooks of a device whose engine parks on `engine` and whose
    /// consumers poll as `busy` allows, once given the device's pass.
    pub fn new(engine: Arc<ThreadWaker>, busy: Arc<BusyPoll>) -> Self {
        Self {
            engine,
            busy,
            pass: Arc::new(OnceLock::new()),
        }
    }

    /// Gives this waker (and its clones) the device's pass, which its
    /// consumers' busy polls run; the first one given stays.
    pub fn set_pass(&self, pass: Arc<dyn HostPass>) {
        let _ = self.pass.set(pass);
    }
}

impl Wake for SharedWaker {
    fn wake(&self) {
        self.engine.wake();
    }

    fn wake_engine(&self) {
        self.engine.wake_engine();
    }

    /// Without a pass (the device is still being made) nothing runs.
    fn consumer_poll(&self) -> bool {
        let Some(pass) = self.pass.get() else {
            return false;
        };
        self.busy
            .consumer_poll(HostClock.now_us(), &**pass, &self.engine)
    }

    fn cq_armed(&self) {
        self.engine.end_busy_poll();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A device whose passes report what the test queued, recording the
    /// plans they were run with.
    #[derive(Default)]
    struct FakeDevice {
        /// Packets the next pass takes.
        arrivals: Mutex<usize>,
        plans: Mutex<Vec<PassPlan>>,
        busy: AtomicBool,
    }

    impl FakeDevice {
        fn arrive(&self, n: usize) {
            *self.arrivals.lock().unwrap() += n;
        }
        fn queued(&self) -> usize {
            *self.arrivals.lock().unwrap()
        }
        fn passes(&self) -> usize {
            self.plans.lock().unwrap().len()
        }
    }

    impl HostPass for FakeDevice {
        fn try_pass(&self, _now: u64, plan: PassPlan) -> Option<Pass> {
            if self.busy.load(Ordering::SeqCst) {
                return None;
            }
            self.plans.lock().unwrap().push(plan);
            let received = std::mem::take(&mut *self.arrivals.lock().unwrap());
            Some(Pass {
                received,
                ..Pass::default()
            })
        }
    }

    #[test]
    fn busy_polling_is_off_until_allowed() {
        let (dev, engine) = (FakeDevice::default(), ThreadWaker::default());
        dev.arrive(1);
        let off = BusyPoll::new(false);
        assert!(!off.consumer_poll(1_000, &dev, &engine), "nothing ran");
        assert_eq!((dev.passes(), dev.queued()), (0, 1));
        assert!(
            engine.busy_remaining_at(1_000).is_none(),
            "the engine was not asked to stand aside"
        );
        let on = BusyPoll::new(true);
        assert!(on.consumer_poll(1_000, &dev, &engine));
        assert_eq!((dev.passes(), dev.queued()), (1, 0));
        assert!(
            engine.busy_remaining_at(1_000).is_some(),
            "the engine stands aside"
        );
        assert_eq!(on.stats.passes.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_consumer_pass_never_delivers_events() {
        let (dev, engine) = (FakeDevice::default(), ThreadWaker::default());
        let busy = BusyPoll::new(true);
        let _ = busy.consumer_poll(1_000, &dev, &engine);
        let plans = dev.plans.lock().unwrap();
        assert_eq!(plans.len(), 1);
        assert!(!plans[0].deliver_events);
        assert!(plans[0].send_first && plans[0].rx_batches > 0);
    }

    #[test]
    fn a_poll_that_finds_the_turn_taken_does_nothing() {
        let (dev, engine) = (FakeDevice::default(), ThreadWaker::default());
        let busy = BusyPoll::new(true);
        dev.busy.store(true, Ordering::SeqCst);
        dev.arrive(1);
        assert!(!busy.consumer_poll(1_000, &dev, &engine));
        assert_eq!(busy.stats.turn_taken.load(Ordering::Relaxed), 1);
        assert_eq!(busy.stats.passes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_bulk_transfer_is_left_to_the_engine() {
        let (dev, engine) = (FakeDevice::default(), ThreadWaker::default());
        let busy = BusyPoll::new(true);
        let mut now = 1_000;
        // A trickle (a ping-pong's pace) keeps the consumer polling.
        for _ in 0..4 {
            dev.arrive(1);
            assert!(busy.consumer_poll(now, &dev, &engine));
            now += 10;
        }
        assert_eq!(busy.stats.bulk_backoffs.load(Ordering::Relaxed), 0);
        // A burst within the span is a bulk transfer: the engine takes
        // over at once.
        dev.arrive(40);
        assert!(busy.consumer_poll(now, &dev, &engine));
        assert_eq!(busy.stats.bulk_backoffs.load(Ordering::Relaxed), 1);
        assert!(
            engine.busy_remaining_at(now).is_none(),
            "the engine no longer stands aside"
        );
        assert!(engine.take(), "the engine was called back");
        dev.arrive(1);
        let passes = dev.passes();
        assert!(
            !busy.consumer_poll(now + 1, &dev, &engine),
            "busy polling stands down for a while"
        );
        assert_eq!(dev.passes(), passes);
        assert_eq!(dev.queued(), 1, "the arrival is left to the engine");
        assert!(engine.busy_remaining_at(now + 1).is_none());
        assert!(
            busy.consumer_poll(now + BULK_BACKOFF_US, &dev, &engine),
            "and resumes afterwards"
        );
        assert_eq!(dev.queued(), 0);
    }
}

//! The engine's state, which the device holds and [`crate::engine`] and
//! [`crate::pass`] drive: counters, the QP timer set, the QPs parked for
//! outbox room, the outboxes and the transmit turn, the default
//! reliability parameters, CQ moderation ticks and the pass's turn. Declared here, below the device,
//! so the device holds it without importing the engine that works on it.

use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use hwq::lock::LockClass;

use crate::sync::{Mutex, RwLock};

/// A QP outbox.
static OUTBOX_LOCK: LockClass = LockClass::new("softrnic outbox");
/// Connection management's outbox.
static CM_OUTBOX_LOCK: LockClass = LockClass::new("softrnic CM outbox");
/// The RC defaults.
static DEFAULTS_LOCK: LockClass = LockClass::new("softrnic RC defaults");

use crate::bitset::AtomicBitset;
use crate::outbox::Outbox;
use crate::qp::RcConfig;
use crate::stats::Counters;

/// QP outboxes of one device ([`Engine::outbox`]): QP `n` records in outbox
/// `n % QP_OUTBOXES`, so as many QPs as this may run on different
/// processors at once.
const QP_OUTBOXES: usize = 4;

/// The engine's part of the device: timers, outboxes, defaults and
/// counters.
pub(crate) struct Engine {
    pub(crate) stats: Counters,
    /// QPs that may have a timer running.
    pub(crate) timer_qps: AtomicBitset,
    /// QPs stopped for want of outbox room, waiting for a transmit turn
    /// to empty an outbox ([`crate::transmit`]).
    pub(crate) tx_parked: AtomicBitset,
    /// Where connection management (the first) and the QPs' state
    /// machines record what they send ([`crate::outbox`]).
    outboxes: [Mutex<Outbox>; 1 + QP_OUTBOXES],
    /// The outboxes packets may wait in, one bit each (connection
    /// management's is bit 0): set after recording, taken by a transmit
    /// turn that starts looking, which visits only those
    /// ([`crate::transmit_turn`]).
    pub(crate) tx_waiting: AtomicU8,
    /// Somebody takes the device's packets ([`crate::transmit::TransmitTurn`]).
    pub(crate) tx_turn: AtomicBool,
    /// The last transmit turn's carriage took trains: runs are recorded
    /// to leave as trains.
    pub(crate) tx_trains: AtomicBool,
    /// No timer of any QP is due before this (µs; `u64::MAX`: none).
    pub(crate) earliest: AtomicU64,
    /// The reliability parameters QPs get when they connect.
    pub(crate) defaults: RwLock<RcConfig>,
    /// Some CQ was given a moderation interval (sticky).
    pub(crate) cq_moderation: AtomicBool,
    /// The last CQ tick found a moderation timer running.
    pub(crate) cq_timers: AtomicBool,
    /// When CQs were last ticked (µs).
    pub(crate) last_cq_tick: AtomicU64,
    /// Somebody runs the device's receive-and-poll pass
    /// ([`crate::pass`]).
    pub(crate) turn: AtomicBool,
    /// The latest time a run entry point was given (µs, the runtime's
    /// clock; never goes back): the time of the device's most recent
    /// pass or arrival, which is all the time its commands see.
    last_now: AtomicU64,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("stats", &self.stats.snapshot())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Engine state for QP numbers below `qp_bound`, its time starting at
    /// `now` (µs).
    pub(crate) fn new(qp_bound: u32, now: u64) -> Option<Self> {
        Some(Self {
            stats: Counters::default(),
            timer_qps: AtomicBitset::new(qp_bound)?,
            tx_parked: AtomicBitset::new(qp_bound)?,
            outboxes: [
                Mutex::new(&CM_OUTBOX_LOCK, Outbox::new()?),
                Mutex::new(&OUTBOX_LOCK, Outbox::new()?),
                Mutex::new(&OUTBOX_LOCK, Outbox::new()?),
                Mutex::new(&OUTBOX_LOCK, Outbox::new()?),
                Mutex::new(&OUTBOX_LOCK, Outbox::new()?),
            ],
            tx_waiting: AtomicU8::new(0),
            tx_turn: AtomicBool::new(false),
            tx_trains: AtomicBool::new(false),
            earliest: AtomicU64::new(u64::MAX),
            defaults: RwLock::new(&DEFAULTS_LOCK, RcConfig::default()),
            cq_moderation: AtomicBool::new(false),
            cq_timers: AtomicBool::new(false),
            last_cq_tick: AtomicU64::new(0),
            turn: AtomicBool::new(false),
            last_now: AtomicU64::new(now),
        })
    }

    /// The outbox QP `qpn` records in. The engine holds it from before it
    /// locks the QP's slot until the QP's work is done: lock order outbox
    /// → QP slot.
    pub(crate) fn outbox(&self, qpn: u32) -> &Mutex<Outbox> {
        &self.outboxes[Self::outbox_of(qpn)]
    }

    /// The index of QP `qpn`'s outbox.
    pub(crate) fn outbox_of(qpn: u32) -> usize {
        1 + qpn as usize % QP_OUTBOXES
    }

    /// Connection management's outbox (its MADs; no QP slot covers them).
    pub(crate) fn cm_outbox(&self) -> &Mutex<Outbox> {
        &self.outboxes[0]
    }

    /// Notes that packets wait in the outboxes of `mask` (bit `i`:
    /// outbox `i`), for the next transmit turn.
    pub(crate) fn note_recorded(&self, mask: u8) {
        self.tx_waiting.fetch_or(mask, Ordering::SeqCst);
    }

    /// All the outboxes, connection management's first.
    pub(crate) fn outboxes(&self) -> &[Mutex<Outbox>] {
        &self.outboxes
    }

    /// Moves the device's time to `now` (a runtime's clock read by
    /// another thread may lag the one a pass was given: time never goes
    /// back) and returns the time to run at.
    pub(crate) fn advance_to(&self, now: u64) -> u64 {
        self.last_now.fetch_max(now, Ordering::AcqRel).max(now)
    }

    /// The time of the device's most recent pass or arrival (µs).
    pub(crate) fn last_now(&self) -> u64 {
        self.last_now.load(Ordering::Acquire)
    }

    /// Notes that CQ moderation intervals are in use, so the engine's poll
    /// ticks CQs (every few µs at most; a timer seen running is reported
    /// as the engine's next timer).
    pub(crate) fn note_cq_moderation(&self) {
        self.cq_moderation.store(true, Ordering::Relaxed);
        self.cq_timers.store(true, Ordering::Relaxed);
    }
}

//! Completion queues as the device sees them: writing CQEs, arming, event
//! moderation and overflow.

use hwq::{Cqe, Producer};

/// What a CQ is armed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arm {
    None,
    /// Solicited or error CQEs.
    Solicited,
    /// Any CQE.
    Any,
}

/// Result of writing a CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Written; `event` says the armed condition fired.
    Written {
        /// Deliver a CQ event now.
        event: bool,
    },
    /// The ring was full: the CQ is now dead; deliver an overflow event.
    Overflowed,
    /// The CQ died earlier; nothing was written.
    Dead,
}

/// A completion queue's device-side state.
#[derive(Debug)]
pub struct CompletionQueue {
    ring: Producer<Cqe>,
    arm: Arm,
    /// A CQE was written since the last event.
    since_event: bool,
    /// A solicited or error CQE was written since the last event.
    solicited_since_event: bool,
    overflowed: bool,
    /// Moderation: fire after this many CQEs (0/1: at once)...
    moderation_count: u32,
    /// ...or this many microseconds after the first held one (0: no timer).
    moderation_usec: u32,
    /// CQEs that met the arm while moderation held the event.
    held: u32,
    held_since_us: u64,
}

impl CompletionQueue {
    /// A CQ writing into `ring`.
    pub fn new(ring: Producer<Cqe>) -> Self {
        Self {
            ring,
            arm: Arm::None,
            since_event: false,
            solicited_since_event: false,
            overflowed: false,
            moderation_count: 0,
            moderation_usec: 0,
            held: 0,
            held_since_us: 0,
        }
    }

    /// Whether the CQ overflowed (it accepts nothing more).
    pub fn is_dead(&self) -> bool {
        self.overflowed
    }

    fn moderated(&self) -> bool {
        self.moderation_count > 1 || self.moderation_usec > 0
    }

    fn satisfied(&self) -> bool {
        match self.arm {
            Arm::None => false,
            Arm::Any => self.since_event,
            Arm::Solicited => self.solicited_since_event,
        }
    }

    fn fire(&mut self) -> bool {
        self.arm = Arm::None;
        self.since_event = false;
        self.solicited_since_event = false;
        self.held = 0;
        true
    }

    /// Writes a CQE. `solicited` marks solicited receives and every error.
    pub fn push(&mut self, cqe: Cqe, solicited: bool, now_us: u64) -> Pushed {
        if self.overflowed {
            return Pushed::Dead;
        }
        if self.ring.push(cqe).is_err() {
            self.overflowed = true;
            self.arm = Arm::None;
            return Pushed::Overflowed;
        }
        self.ring.publish();
        self.since_event = true;
        self.solicited_since_event |= solicited;
        if !self.satisfied() {
            return Pushed::Written { event: false };
        }
        if self.moderated() {
            if self.held == 0 {
                self.held_since_us = now_us;
            }
            self.held += 1;
            let by_count = self.moderation_count > 1 && self.held >= self.moderation_count;
            let by_time = self.moderation_usec > 0
                && now_us.saturating_sub(self.held_since_us) >= u64::from(self.moderation_usec);
            if !(by_count || by_time) {
                return Pushed::Written { event: false };
            }
        }
        Pushed::Written { event: self.fire() }
    }

    /// Arms for one event; returns true when it fires at once because
    /// matching CQEs arrived since the last event and are still unconsumed.
    pub fn arm(&mut self, solicited_only: bool) -> bool {
        if self.overflowed {
            return false;
        }
        self.arm = match (self.arm, solicited_only) {
            (Arm::Any, _) | (_, false) => Arm::Any,
            _ => Arm::Solicited,
        };
        if self.satisfied() && self.ring.outstanding() > 0 {
            return self.fire();
        }
        if self.ring.outstanding() == 0 {
            // Everything written was consumed: only new CQEs count.
            self.since_event = false;
            self.solicited_since_event = false;
        }
        false
    }

    /// Sets interrupt moderation.
    pub fn moderate(&mut self, count: u32, usec: u32) {
        self.moderation_count = count;
        self.moderation_usec = usec;
    }

    /// Fires a moderated event whose time is up; returns whether to deliver.
    pub fn tick(&mut self, now_us: u64) -> bool {
        if self.held == 0 || self.moderation_usec == 0 || self.arm == Arm::None {
            return false;
        }
        if now_us.saturating_sub(self.held_since_us) >= u64::from(self.moderation_usec) {
            return self.fire();
        }
        false
    }

    /// Whether a moderation timer is running.
    pub fn timer_pending(&self) -> bool {
        self.held > 0 && self.moderation_usec > 0
    }

    /// Replaces the ring (resize).
    pub fn replace_ring(&mut self, ring: Producer<Cqe>) {
        self.ring = ring;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwq::ring::ring;

    fn cqe(id: u64) -> Cqe {
        Cqe {
            wr_id: id,
            ..Cqe::default()
        }
    }

    #[test]
    fn one_event_per_arm_and_solicited_filter() {
        let (p, mut c) = ring::<Cqe>(8).unwrap();
        let mut cq = CompletionQueue::new(p);
        assert_eq!(
            cq.push(cqe(1), false, 0),
            Pushed::Written { event: false },
            "not armed"
        );
        c.refresh();
        c.release(1);
        assert!(!cq.arm(true), "nothing unconsumed");
        assert_eq!(
            cq.push(cqe(2), false, 0),
            Pushed::Written { event: false },
            "not solicited"
        );
        assert_eq!(cq.push(cqe(3), true, 0), Pushed::Written { event: true });
        assert_eq!(
            cq.push(cqe(4), true, 0),
            Pushed::Written { event: false },
            "one-shot"
        );
    }

    #[test]
    fn arming_with_unconsumed_new_entries_fires_at_once() {
        let (p, _c) = ring::<Cqe>(8).unwrap();
        let mut cq = CompletionQueue::new(p);
        cq.push(cqe(1), false, 0);
        assert!(!cq.arm(true), "solicited arm ignores a plain CQE");
        assert!(cq.arm(false), "strengthened to any: fires");
        assert!(!cq.arm(false), "already reported: waits for a new CQE");
    }

    #[test]
    fn overflow_kills_the_queue() {
        let (p, _c) = ring::<Cqe>(2).unwrap();
        let mut cq = CompletionQueue::new(p);
        cq.push(cqe(1), false, 0);
        cq.push(cqe(2), false, 0);
        assert_eq!(cq.push(cqe(3), false, 0), Pushed::Overflowed);
        assert_eq!(cq.push(cqe(4), false, 0), Pushed::Dead);
        assert!(cq.is_dead());
    }

    #[test]
    fn moderation_holds_until_count_or_time() {
        let (p, _c) = ring::<Cqe>(16).unwrap();
        let mut cq = CompletionQueue::new(p);
        cq.moderate(3, 100);
        cq.arm(false);
        assert_eq!(cq.push(cqe(1), false, 10), Pushed::Written { event: false });
        assert_eq!(cq.push(cqe(2), false, 20), Pushed::Written { event: false });
        assert_eq!(
            cq.push(cqe(3), false, 30),
            Pushed::Written { event: true },
            "count reached"
        );
        cq.arm(false);
        cq.push(cqe(4), false, 200);
        assert!(!cq.tick(250));
        assert!(cq.tick(300), "interval elapsed");
    }
}

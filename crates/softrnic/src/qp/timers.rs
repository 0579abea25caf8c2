//! A connection's timers in one table: the responder's ACK timer, the
//! requester's RNR wait and its retransmit timer. Each is a deadline on
//! the device's clock (µs) or disarmed; the engine asks the table for the
//! earliest ([`Timers::next`]) and, when a pass finds it due, runs the due
//! ones in the table's order ([`super::on_timers`]).

/// One of a connection's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The responder's ACK, held for an answer or coalesced.
    Ack,
    /// The requester waits out an RNR NAK before resending.
    Rnr,
    /// The requester resends from the oldest unacknowledged PSN.
    Retransmit,
}

impl Timer {
    /// Every timer, in the order due ones run.
    pub(crate) const ALL: [Timer; 3] = [Timer::Ack, Timer::Rnr, Timer::Retransmit];
}

/// The deadlines of a connection's timers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timers([Option<u64>; 3]);

impl Timers {
    /// The deadline of `timer`, if armed.
    pub(crate) fn get(&self, timer: Timer) -> Option<u64> {
        self.0[timer as usize]
    }

    /// Whether `timer` is armed.
    pub(crate) fn is_armed(&self, timer: Timer) -> bool {
        self.get(timer).is_some()
    }

    /// Arms `timer` for `deadline` (or disarms it with `None`).
    pub(crate) fn set(&mut self, timer: Timer, deadline: Option<u64>) {
        self.0[timer as usize] = deadline;
    }

    /// Arms `timer` for `deadline` unless it is armed already.
    pub(crate) fn arm_if_idle(&mut self, timer: Timer, deadline: u64) {
        let slot = &mut self.0[timer as usize];
        if slot.is_none() {
            *slot = Some(deadline);
        }
    }

    /// Disarms `timer`.
    pub(crate) fn disarm(&mut self, timer: Timer) {
        self.set(timer, None);
    }

    /// Disarms every timer.
    pub(crate) fn disarm_all(&mut self) {
        *self = Self::default();
    }

    /// Whether `timer` is armed and due at `now`.
    pub(crate) fn is_due(&self, timer: Timer, now: u64) -> bool {
        self.get(timer).is_some_and(|d| d <= now)
    }

    /// The earliest deadline, if any timer is armed.
    pub(crate) fn next(&self) -> Option<u64> {
        self.0.iter().flatten().copied().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_armed_deadline_is_next_and_due_ones_are_found() {
        let mut t = Timers::default();
        assert_eq!(t.next(), None);
        t.set(Timer::Retransmit, Some(50));
        t.arm_if_idle(Timer::Ack, 30);
        t.arm_if_idle(Timer::Ack, 10);
        assert_eq!(t.get(Timer::Ack), Some(30));
        assert_eq!(t.next(), Some(30));
        assert!(t.is_due(Timer::Ack, 30) && !t.is_due(Timer::Retransmit, 30));
        assert!(!t.is_armed(Timer::Rnr));
        t.disarm(Timer::Ack);
        assert_eq!(t.next(), Some(50));
        t.disarm_all();
        assert_eq!(t.next(), None);
    }
}

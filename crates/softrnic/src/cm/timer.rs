//! Retransmission, handshake timeouts and time-wait.

use core::sync::atomic::Ordering;

use super::conn::State;
use super::events::Kind;
use super::{CmState, Host, Inner, TIME_WAIT_US, msg};
use crate::wire::{MessageRef, RejReason};

/// Runs the CM timers due at `now_us`; returns whether any was.
pub(crate) fn poll(device: &dyn Host, now_us: u64) -> bool {
    if now_us < device.cm().next_deadline.load(Ordering::Acquire) {
        return false;
    }
    device.cm().with(device, |inner| {
        let mut earliest = u64::MAX;
        let mut index = 0;
        while let Some(conn) = inner.conns.at(index) {
            if let Some(wait) = conn.unstamped_us.take() {
                conn.deadline_us = now_us + wait;
            } else if conn.state != State::Free && conn.deadline_us <= now_us {
                expire(device, inner, index, now_us);
            }
            if let Some(conn) = inner.conns.at(index) {
                if conn.state != State::Free {
                    earliest = earliest.min(conn.deadline_us);
                }
            }
            index += 1;
        }
        inner.io.earliest = earliest;
    });
    true
}

impl CmState {
    /// When the next CM timer is due, if any is armed.
    pub(crate) fn next_timer_us(&self) -> Option<u64> {
        let d = self.next_deadline.load(Ordering::Acquire);
        (d != u64::MAX).then_some(d)
    }
}

/// Starts time-wait for connection slot `index` (from the next pass:
/// only a command starts it).
pub(crate) fn time_wait(inner: &mut Inner, index: usize) {
    if let Some(conn) = inner.conns.at(index) {
        conn.state = State::TimeWait;
        conn.start_from_next_pass(TIME_WAIT_US);
        inner.io.arm(conn.deadline_us);
    }
}

fn expire(device: &dyn Host, inner: &mut Inner, index: usize, now_us: u64) {
    let id = inner.conns.id_of(index);
    let Some(conn) = inner.conns.at(index) else {
        return;
    };
    let io = &mut inner.io;
    let retransmits = matches!(
        conn.state,
        State::ReqSent | State::RepSent | State::DreqSent
    );
    if retransmits && conn.retries < conn.max_retries {
        conn.retries += 1;
        conn.set_deadline(now_us + conn.period_us);
        io.stats.retransmitted += 1;
        io.resend(device, conn);
        return;
    }
    conn.disarm();
    match conn.state {
        State::ReqSent | State::RepSent => {
            // Tell the peer we gave up, and answer its late messages so.
            let rejected = if conn.active {
                MessageRef::REQ
            } else {
                MessageRef::REP
            };
            let remote = conn.remote_comm_id;
            if let Some(mad) = msg::rej(
                conn.tid,
                io.comm_id(id),
                remote,
                rejected,
                RejReason::TIMEOUT,
                &[],
            ) {
                io.send_conn(device, conn, &mad);
            }
            conn.state = State::Closed;
            io.report(conn, id, Kind::Failed { timed_out: true });
        }
        State::DreqSent => {
            // No answer: the disconnect is complete anyway.
            conn.state = State::Closed;
            io.report(conn, id, Kind::DisconnectDone);
        }
        State::TimeWait => {
            let port = conn.active.then(|| conn.local.port());
            if let Some(port) = port {
                inner.listeners.release_port(port);
            }
            inner.conns.free(index);
        }
        _ => {}
    }
}

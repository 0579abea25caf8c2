//! V's pause state and its outstanding NBLs (sends TCP/IP handed V that
//! are still at P, receives V indicated that TCP/IP has not returned).
//!
//! NDIS completes a miniport's pause only when all of them are back, so
//! `MiniportPause` pends while any is out and the last one back completes
//! it (`NdisMPauseComplete`). The pause holds a reference of its own while
//! `MiniportPause` runs, so nothing else can see the count reach zero
//! before it has decided between `NDIS_STATUS_SUCCESS` and
//! `NDIS_STATUS_PENDING`; whoever takes the count to zero afterwards while
//! pausing moves the state to paused with one compare-exchange, so the
//! pause completes exactly once. Users add first and look at the state
//! second (`SeqCst`), the pause sets the state first: one of them sees
//! the other.

use core::sync::atomic::{AtomicU32, Ordering};

/// Sends and indications are taken.
const RUNNING: u32 = 0;
/// `MiniportPause` ran; the last NBL back completes it.
const PAUSING: u32 = 1;
/// Paused (the state a miniport starts in; `MiniportRestart` runs it).
const PAUSED: u32 = 2;

/// A pause state with its count of NBLs out.
#[derive(Debug)]
pub struct PauseGate {
    state: AtomicU32,
    outstanding: AtomicU32,
}

impl PauseGate {
    /// Paused, nothing out.
    pub const fn paused() -> Self {
        Self {
            state: AtomicU32::new(PAUSED),
            outstanding: AtomicU32::new(0),
        }
    }

    /// Counts `count` NBLs going out (`<= DISPATCH_LEVEL`). `Err(paused)`
    /// when not running: nothing is counted, and `paused` says this call
    /// completed a pending pause (the caller calls `NdisMPauseComplete`).
    pub fn enter(&self, count: u32) -> Result<(), bool> {
        self.outstanding.fetch_add(count, Ordering::SeqCst);
        if self.state.load(Ordering::SeqCst) == RUNNING {
            return Ok(());
        }
        Err(self.leave(count))
    }

    /// `count` NBLs came back (`<= DISPATCH_LEVEL`); `true` when this
    /// completed a pending pause (the caller calls `NdisMPauseComplete`).
    #[must_use]
    pub fn leave(&self, count: u32) -> bool {
        let old = self.outstanding.fetch_sub(count, Ordering::SeqCst);
        old == count
            && self
                .state
                .compare_exchange(PAUSING, PAUSED, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// `MiniportPause`: `true` when paused now (`NDIS_STATUS_SUCCESS`),
    /// `false` when NBLs are out (`NDIS_STATUS_PENDING`; the last one back
    /// completes the pause).
    pub fn pause(&self) -> bool {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        self.state.store(PAUSING, Ordering::SeqCst);
        self.leave(1)
    }

    /// `MiniportRestart`.
    pub fn restart(&self) {
        self.state.store(RUNNING, Ordering::SeqCst);
    }

    /// NBLs out now.
    pub fn outstanding(&self) -> u32 {
        self.outstanding.load(Ordering::SeqCst)
    }
}

//! Operations and their latencies as they complete, shared by a run's
//! client threads and the thread that prints `--duration`'s interval
//! lines.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::stats::Samples;

/// Completed operations and the latencies not yet taken by an interval.
#[derive(Debug, Default)]
pub struct Meter {
    // One lock for both, so that an interval's count and its latencies
    // cover the same operations.
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    ops: u64,
    latencies: Samples,
}

impl Meter {
    /// A meter with nothing counted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one completed operation that took `latency`.
    pub fn record(&self, latency: Duration) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.ops += 1;
        s.latencies.push(latency);
    }

    /// Operations completed so far.
    pub fn ops(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ops
    }

    /// Operations completed so far and the latencies recorded since the
    /// last call (which it empties).
    pub fn take(&self) -> (u64, Samples) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (s.ops, std::mem::take(&mut s.latencies))
    }
}

//! The host's clock: monotonic microseconds, the time every device, busy
//! poller and fabric hub of this process reads.

use std::sync::OnceLock;
use std::time::Instant;

use links::Clock;

/// Monotonic microseconds since the process's first use of the clock: the
/// time this runtime passes to its devices and its fabric hub's links.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostClock;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for HostClock {
    fn now_us(&self) -> u64 {
        u64::try_from(origin().elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

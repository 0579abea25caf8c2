//! The hang guard of blocking waits: an adapter close that waits longer
//! than a limit for objects the consumer never closed is reported, naming
//! the pool still charged.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{HostPlatform, WAITING};
use crate::checker::Rule;

/// How long an adapter close may wait for objects before the checker
/// reports them (a hang guard, like the tests' waits: a close that is
/// merely slow finishes long before).
pub(super) const CLOSE_WAIT_LIMIT: Duration = Duration::from_secs(10);

/// A pause longer than this between two waits starts a new wait.
const WAIT_GAP: Duration = Duration::from_millis(100);

impl HostPlatform {
    /// Changes how long a close may wait for objects before
    /// [`Rule::CloseWithObjectsOutstanding`] is reported.
    pub fn set_close_wait_limit(&self, limit: Duration) {
        let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        self.close_wait_limit_ms.store(ms, Ordering::SeqCst);
    }

    /// Reports a close that has waited past the limit, once per wait.
    pub(super) fn check_wait_length(&self) {
        let now = Instant::now();
        let (start, last) = WAITING.with(Cell::get).unwrap_or((now, now));
        let start = if now.duration_since(last) > WAIT_GAP {
            now
        } else {
            start
        };
        let limit = Duration::from_millis(self.close_wait_limit_ms.load(Ordering::SeqCst));
        if now.duration_since(start) > limit {
            // Restart the run: report again only after another full limit.
            WAITING.with(|w| w.set(Some((now, now))));
            let pool: Vec<String> = self
                .outstanding()
                .iter()
                .map(|u| format!("{}: {}", u.tag.as_str(), u.count))
                .collect();
            self.violations.report(
                Rule::CloseWithObjectsOutstanding,
                format!(
                    "close waited {} ms for objects never closed; pool outstanding (tag: allocations): {}",
                    limit.as_millis(),
                    pool.join(", ")
                ),
            );
        } else {
            WAITING.with(|w| w.set(Some((start, now))));
        }
    }
}

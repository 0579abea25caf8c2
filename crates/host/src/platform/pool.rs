//! Pool accounting per tag, leak checks and low-memory simulation.

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use provider::platform::PoolTag;

use super::HostPlatform;
use crate::checker::Rule;

/// Outstanding pool use under one tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolUsage {
    /// The tag.
    pub tag: PoolTag,
    /// Charges not yet released.
    pub count: i64,
    /// Bytes not yet released.
    pub bytes: i64,
}

impl HostPlatform {
    /// Pool use not yet released, per tag (tags with nothing outstanding
    /// are left out).
    pub fn outstanding(&self) -> Vec<PoolUsage> {
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|u| u.count != 0 || u.bytes != 0)
            .copied()
            .collect()
    }

    /// Bytes of pool not yet released, over every tag.
    pub fn outstanding_bytes(&self) -> i64 {
        self.outstanding().iter().map(|u| u.bytes).sum()
    }

    /// Reports a [`Rule::PoolLeak`] for every tag with pool outstanding
    /// (`what` says what closed) and returns them. Called when a device
    /// stops, when nothing may remain.
    pub fn check_no_leaks(&self, what: &str) -> Vec<PoolUsage> {
        let left = self.outstanding();
        if !left.is_empty() {
            let tags: Vec<String> = left
                .iter()
                .map(|u| {
                    format!(
                        "{}: {} allocation(s), {} bytes",
                        u.tag.as_str(),
                        u.count,
                        u.bytes
                    )
                })
                .collect();
            self.violations.report(
                Rule::PoolLeak,
                format!("{what} with pool outstanding: {}", tags.join("; ")),
            );
        }
        left
    }

    /// Charges made so far (successful or not).
    pub fn charges(&self) -> u64 {
        self.charges.load(Ordering::SeqCst)
    }

    /// The tag of the last charge refused by fault injection.
    pub fn last_refused_tag(&self) -> Option<PoolTag> {
        *self
            .last_refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Charges refused by fault injection so far.
    pub fn injected_failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }

    /// Makes the `n`th charge from now fail (`n` >= 1), once. `0` turns
    /// injection off.
    pub fn fail_charge_after(&self, n: u64) {
        let at = if n == 0 { 0 } else { self.charges() + n };
        self.fail_at.store(at, Ordering::SeqCst);
    }

    /// Adds `count` charges of `bytes` (negative: releases) under `tag`;
    /// a tag going below zero is a double release.
    pub(super) fn account(&self, tag: PoolTag, count: i64, bytes: i64) {
        let underflow = {
            let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
            let u = if let Some(u) = pool.iter_mut().find(|u| u.tag == tag) {
                u
            } else {
                pool.push(PoolUsage {
                    tag,
                    count: 0,
                    bytes: 0,
                });
                pool.last_mut().expect("just pushed")
            };
            u.count += count;
            u.bytes += bytes;
            u.count < 0 || u.bytes < 0
        };
        if underflow {
            self.violations.report(
                Rule::PoolUnderflow,
                format!("pool tag {} released more than was charged", tag.as_str()),
            );
        }
    }
}

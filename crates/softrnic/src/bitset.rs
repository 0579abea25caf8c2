//! A fixed-size set of small integers that many threads can add to and one
//! poller drains, without locks: how doorbells and pending events reach the
//! engine without a system call or an allocation.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

/// Set of numbers below a fixed bound.
///
/// A summary word says which words may hold members (bit `i % 64` for word
/// `i`), so that draining or testing a set of a thousand QPs that holds
/// one or none (every pass of the engine drains several) reads one word,
/// not sixteen or more. A summary bit may be stale-set (its word was
/// drained meanwhile), never stale-clear while its word holds a member
/// that no drain has taken: the inserter sets it after the member.
#[derive(Debug)]
pub struct AtomicBitset {
    bound: u32,
    summary: AtomicU64,
    words: Vec<AtomicU64>,
}

impl AtomicBitset {
    /// A set able to hold `0..bound`. Allocates once, here.
    pub fn new(bound: u32) -> Option<Self> {
        let n = (bound as usize).div_ceil(64);
        let mut words = Vec::new();
        words.try_reserve_exact(n).ok()?;
        words.resize_with(n, || AtomicU64::new(0));
        Some(Self {
            bound,
            summary: AtomicU64::new(0),
            words,
        })
    }

    /// Adds `n`; returns whether it was absent. Out-of-range numbers are
    /// ignored (and reported as present).
    pub fn insert(&self, n: u32) -> bool {
        if n >= self.bound {
            return false;
        }
        let i = n / 64;
        let Some(word) = self.words.get(i as usize) else {
            return false;
        };
        let bit = 1u64 << (n % 64);
        let absent = word.fetch_or(bit, Ordering::AcqRel) & bit == 0;
        if absent {
            // After the member: a drain that takes this summary bit finds
            // the member in its word.
            self.summary.fetch_or(1 << (i % 64), Ordering::AcqRel);
        }
        absent
    }

    /// Removes and visits every member.
    pub fn drain(&self, mut visit: impl FnMut(u32)) {
        if self.summary.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut summary = self.summary.swap(0, Ordering::AcqRel);
        while summary != 0 {
            let first = summary.trailing_zeros() as usize;
            summary &= summary - 1;
            // Word `first` and, in sets of more than 64 words, every 64th
            // after it.
            for (i, word) in self.words.iter().enumerate().skip(first).step_by(64) {
                if word.load(Ordering::Relaxed) == 0 {
                    continue;
                }
                let mut bits = word.swap(0, Ordering::AcqRel);
                while bits != 0 {
                    let b = bits.trailing_zeros();
                    bits &= bits - 1;
                    visit(i as u32 * 64 + b);
                }
            }
        }
    }

    /// Whether the set is empty (a racy snapshot).
    pub fn is_empty(&self) -> bool {
        self.summary.load(Ordering::Relaxed) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_drain_round_trip() {
        let s = AtomicBitset::new(130).unwrap();
        assert!(s.insert(0) && s.insert(64) && s.insert(129));
        assert!(!s.insert(64));
        assert!(!s.insert(130), "out of range is ignored");
        let mut seen = Vec::new();
        s.drain(|n| seen.push(n));
        assert_eq!(seen, [0, 64, 129]);
        assert!(s.is_empty());
    }

    #[test]
    fn a_set_of_more_than_64_words_drains_every_member() {
        let bound = 64 * 64 * 2 + 5;
        let s = AtomicBitset::new(bound).unwrap();
        // Words 0, 64 and 128 share summary bit 0; word 65 has bit 1.
        let members = [3, 64 * 64 + 7, 64 * 128 + 2, 64 * 65 + 63, bound - 1];
        for n in members {
            assert!(s.insert(n));
            assert!(!s.is_empty());
        }
        let mut seen = Vec::new();
        s.drain(|n| seen.push(n));
        seen.sort_unstable();
        let mut want = members.to_vec();
        want.sort_unstable();
        assert_eq!(seen, want);
        assert!(s.is_empty());
        let mut again = Vec::new();
        s.drain(|n| again.push(n));
        assert!(again.is_empty(), "each member is visited once");
        assert!(s.insert(3), "a drained member can come back");
    }
}

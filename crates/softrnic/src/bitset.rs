//! A fixed-size set of small integers that many threads can add to and one
//! poller drains, without locks: how doorbells and pending events reach the
//! engine without a system call or an allocation.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

/// Set of numbers below a fixed bound.
#[derive(Debug)]
pub struct AtomicBitset {
    bound: u32,
    words: Vec<AtomicU64>,
}

impl AtomicBitset {
    /// A set able to hold `0..bound`. Allocates once, here.
    pub fn new(bound: u32) -> Option<Self> {
        let n = (bound as usize).div_ceil(64);
        let mut words = Vec::new();
        words.try_reserve_exact(n).ok()?;
        words.resize_with(n, || AtomicU64::new(0));
        Some(Self { bound, words })
    }

    /// Adds `n`; returns whether it was absent. Out-of-range numbers are
    /// ignored (and reported as present).
    pub fn insert(&self, n: u32) -> bool {
        if n >= self.bound {
            return false;
        }
        let Some(word) = self.words.get((n / 64) as usize) else {
            return false;
        };
        let bit = 1u64 << (n % 64);
        word.fetch_or(bit, Ordering::AcqRel) & bit == 0
    }

    /// Removes and visits every member.
    pub fn drain(&self, mut visit: impl FnMut(u32)) {
        for (i, word) in self.words.iter().enumerate() {
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

    /// Whether the set is empty (a racy snapshot).
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| w.load(Ordering::Relaxed) == 0)
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
}

//! Which READ responses ahead of the oldest missing one were already
//! placed.
//!
//! Go-back-N would drop every response after a lost one and ask for the
//! rest of the READ again; with a large READ most of those were already
//! on their way, so one loss costs most of a READ. READ responses are
//! idempotent placements at a known offset, so the completer places them
//! as they come (within [`READ_WINDOW`] PSNs of the oldest missing one),
//! remembers them here, and asks again only for the hole: a READ request
//! whose RETH starts at the hole and ends where placed data resumes (a
//! subset of the original, which the responder replays as IBA allows).

use crate::wire::{psn_add, psn_diff};

/// PSNs past the oldest missing response whose placement is remembered.
pub(crate) const READ_WINDOW: u32 = 1024;

const WORDS: usize = (READ_WINDOW / 64) as usize;

/// One bit per PSN, indexed by PSN modulo [`READ_WINDOW`]; only PSNs in
/// `(una, una + READ_WINDOW)` are ever set, so indices never alias.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadWindow {
    bits: [u64; WORDS],
    /// Bits set: with none, the in-order path never scans.
    placed: u32,
}

fn slot(psn: u32) -> (usize, u64) {
    let i = psn % READ_WINDOW;
    ((i / 64) as usize, 1u64 << (i % 64))
}

impl ReadWindow {
    /// Whether `psn` was placed.
    pub(crate) fn has(&self, psn: u32) -> bool {
        let (w, b) = slot(psn);
        self.bits.get(w).is_some_and(|x| x & b != 0)
    }

    /// Records `psn` as placed.
    pub(crate) fn set(&mut self, psn: u32) {
        let (w, b) = slot(psn);
        if let Some(x) = self.bits.get_mut(w)
            && *x & b == 0
        {
            *x |= b;
            self.placed += 1;
        }
    }

    /// Forgets `psn` (the oldest missing PSN moved past it).
    pub(crate) fn clear(&mut self, psn: u32) {
        let (w, b) = slot(psn);
        if let Some(x) = self.bits.get_mut(w)
            && *x & b != 0
        {
            *x &= !b;
            self.placed -= 1;
        }
    }

    /// From `una`, moves past placed PSNs before `end` (clearing them);
    /// returns the first PSN not placed (or `end`).
    pub(crate) fn absorb(&mut self, mut una: u32, end: u32) -> u32 {
        while self.placed > 0 && psn_diff(end, una) > 0 && self.has(una) {
            self.clear(una);
            una = psn_add(una, 1);
        }
        una
    }

    /// The first placed PSN after `una`, before `end` and within the
    /// window: where the hole starting at `una` ends (`end` if none).
    pub(crate) fn hole_end(&self, una: u32, end: u32) -> u32 {
        if self.placed == 0 {
            return end;
        }
        let span = psn_diff(end, una).clamp(0, READ_WINDOW as i32) as u32;
        (1..span)
            .map(|d| psn_add(una, d))
            .find(|&p| self.has(p))
            .unwrap_or(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_and_absorption() {
        let mut w = ReadWindow::default();
        let una = 0x00FF_FFFE; // wraps
        for d in [2u32, 3, 7] {
            w.set(psn_add(una, d));
        }
        let end = psn_add(una, 10);
        assert_eq!(w.hole_end(una, end), psn_add(una, 2));
        assert_eq!(w.absorb(una, end), una, "una itself missing");
        w.set(una);
        w.set(psn_add(una, 1));
        assert_eq!(w.absorb(una, end), psn_add(una, 4));
        assert!(!w.has(una) && !w.has(psn_add(una, 3)));
        assert_eq!(w.placed, 1, "only una + 7 left");
        assert_eq!(w.hole_end(psn_add(una, 4), end), psn_add(una, 7));
        assert_eq!(w.hole_end(psn_add(una, 8), end), end);
    }
}

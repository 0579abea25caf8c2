//! Data patterns: what a source is filled with and what the target must
//! hold, byte for byte.

/// The pattern period: a prime, so shifted or misplaced data never
/// matches by accident at power-of-two offsets.
const PERIOD: usize = 251;

/// The expected contents of every slot of a run.
#[derive(Debug, Clone)]
pub struct Pattern {
    template: Vec<u8>,
    size: usize,
    seed: u32,
}

impl Pattern {
    /// Patterns of `size` bytes for a run with `seed`.
    pub fn new(size: usize, seed: u32) -> Self {
        // One period, then doubling copies: a 1 GiB pattern takes a few
        // memcpy passes instead of a division per byte.
        let len = size + PERIOD;
        let mut template: Vec<u8> = (0..PERIOD.min(len)).map(|i| i as u8).collect();
        while template.len() < len {
            let n = template.len().min(len - template.len());
            template.extend_from_within(..n);
        }
        Self {
            template,
            size,
            seed,
        }
    }

    /// The bytes slot `slot` holds (`size` of them).
    pub fn expected(&self, slot: u64) -> &[u8] {
        let start = ((u64::from(self.seed) + slot.wrapping_mul(31)) % PERIOD as u64) as usize;
        &self.template[start..start + self.size]
    }

    /// Fills `dst` with slot `slot`'s pattern (up to `size` bytes).
    pub fn fill(&self, slot: u64, dst: &mut [u8]) {
        let src = self.expected(slot);
        let n = dst.len().min(src.len());
        dst[..n].copy_from_slice(&src[..n]);
    }

    /// Number of bytes of `got` that differ from slot `slot`'s pattern.
    pub fn mismatches(&self, slot: u64, got: &[u8]) -> u64 {
        let want = self.expected(slot);
        if got == want {
            return 0;
        }
        let differ = got.iter().zip(want).filter(|(a, b)| a != b).count();
        (differ + want.len().abs_diff(got.len())) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_differ_and_check_exactly() {
        let p = Pattern::new(4096, 7);
        assert_ne!(p.expected(0), p.expected(1));
        let mut buf = vec![0u8; 4096];
        p.fill(3, &mut buf);
        assert_eq!(p.mismatches(3, &buf), 0);
        assert!(p.mismatches(4, &buf) > 4000);
        buf[100] ^= 1;
        assert_eq!(p.mismatches(3, &buf), 1);
        assert_eq!(p.mismatches(3, &buf[..4000]), 1 + 96);
    }
}

//! Memory keys: the 32-bit tokens NDK calls memory-region and remote tokens.
//!
//! A key is `index << 8 | variant`. The index selects an entry of the
//! device's key table; the variant byte changes every time the entry is
//! re-registered, fast-registered or bound, so a token held from an earlier
//! registration no longer matches (a stale token is refused, not honoured).

/// A memory key (local or remote token).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryKey(pub u32);

impl MemoryKey {
    /// Builds a key from a table index (24 bits) and a variant.
    pub const fn new(index: u32, variant: u8) -> Self {
        Self((index << 8) | variant as u32)
    }

    /// The key-table index.
    pub const fn index(self) -> u32 {
        self.0 >> 8
    }

    /// The variant byte.
    pub const fn variant(self) -> u8 {
        self.0 as u8
    }

    /// The same index with the next variant, as a re-registration issues.
    #[must_use]
    pub const fn next_variant(self) -> Self {
        Self::new(self.index(), self.variant().wrapping_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_variant_round_trip() {
        let k = MemoryKey::new(0x12_3456, 0xff);
        assert_eq!((k.index(), k.variant()), (0x12_3456, 0xff));
        let n = k.next_variant();
        assert_eq!((n.index(), n.variant()), (0x12_3456, 0));
        assert_ne!(k, n);
    }
}

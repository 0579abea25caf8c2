//! 24-bit packet sequence number arithmetic.
//!
//! PSNs live on a circle of 2^24 values. Two PSNs are compared by their
//! signed distance, which is meaningful while they are less than 2^23 apart
//! (the usual serial-number rule); wrapping past 0xFFFFFF is routine.

/// Mask of the 24 PSN bits.
pub const PSN_MASK: u32 = 0x00FF_FFFF;

/// Half the PSN circle: the largest forward distance [`psn_diff`] reports
/// is one less than this.
pub const PSN_HALF: u32 = 0x0080_0000;

/// `psn + n` on the 24-bit circle. Bits of `psn` above 24 are ignored.
#[inline]
pub const fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `psn - n` on the 24-bit circle.
#[inline]
pub const fn psn_sub(psn: u32, n: u32) -> u32 {
    psn.wrapping_sub(n) & PSN_MASK
}

/// Signed distance from `b` to `a` on the circle, in `-2^23 ..= 2^23 - 1`:
/// positive when `a` is after `b`.
#[inline]
pub const fn psn_diff(a: u32, b: u32) -> i32 {
    // Move the 24-bit difference into the top of a 32-bit word so its sign
    // bit is the circle's half-way mark, then shift back arithmetically.
    (a.wrapping_sub(b) << 8) as i32 >> 8
}

/// `a` comes strictly before `b`.
#[inline]
pub const fn psn_before(a: u32, b: u32) -> bool {
    psn_diff(a, b) < 0
}

/// `a` comes strictly after `b`.
#[inline]
pub const fn psn_after(a: u32, b: u32) -> bool {
    psn_diff(a, b) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_wraps() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_add(0xFF_FFF0, 0x20), 0x10);
        assert_eq!(psn_add(5, 0), 5);
        assert_eq!(psn_sub(0, 1), PSN_MASK);
        assert_eq!(psn_sub(0x10, 0x20), 0xFF_FFF0);
    }

    #[test]
    fn diff_across_wrap() {
        assert_eq!(psn_diff(0, PSN_MASK), 1);
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(0x10, 0xFF_FFF0), 0x20);
        assert_eq!(psn_diff(0xFF_FFF0, 0x10), -0x20);
        assert_eq!(psn_diff(7, 7), 0);
        assert_eq!(psn_diff(PSN_HALF - 1, 0), (PSN_HALF - 1) as i32);
        assert_eq!(psn_diff(PSN_HALF, 0), -(PSN_HALF as i32));
    }

    #[test]
    fn ordering_across_wrap() {
        assert!(psn_before(PSN_MASK, 0));
        assert!(psn_after(0, PSN_MASK));
        assert!(psn_before(0xFF_FF00, 0x100));
        assert!(!psn_before(3, 3));
        assert!(!psn_after(3, 3));
        for start in [0, 1, PSN_HALF, PSN_MASK - 3, PSN_MASK] {
            for step in [1, 2, 100, PSN_HALF - 1] {
                let next = psn_add(start, step);
                assert!(psn_after(next, start), "{start:#x}+{step}");
                assert!(psn_before(start, next));
                assert_eq!(psn_diff(next, start), step as i32);
                assert_eq!(psn_sub(next, step), start);
            }
        }
    }

    #[test]
    fn high_bits_ignored() {
        assert_eq!(psn_add(0xFF00_0001, 1), 2);
        assert_eq!(psn_diff(0xAB00_0005, 0x0000_0003), 2);
    }
}

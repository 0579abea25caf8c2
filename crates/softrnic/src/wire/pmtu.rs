//! Path MTU, segmentation and padding rules.

/// An InfiniBand path MTU: the largest payload one packet may carry.
///
/// The discriminant is the IB MTU code used in QP attributes and CM
/// messages (1 = 256 … 5 = 4096).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Pmtu {
    /// 256-byte payloads.
    Mtu256 = 1,
    /// 512-byte payloads.
    Mtu512 = 2,
    /// 1024-byte payloads (what a 1500-byte Ethernet link allows).
    Mtu1024 = 3,
    /// 2048-byte payloads.
    Mtu2048 = 4,
    /// 4096-byte payloads (needs a jumbo-frame link).
    Mtu4096 = 5,
}

/// Bytes a RoCEv2 packet adds around its payload beyond the IPv4 MTU
/// budget, as software RoCE stacks reserve it: the largest header stack
/// (IPv4 + UDP + BTH + RETH + ImmDt, or the atomic set) plus pad and ICRC,
/// rounded up. A link MTU minus this is what a path MTU must fit in.
pub const LINK_OVERHEAD: usize = 80;

impl Pmtu {
    /// Every valid path MTU, smallest first.
    pub const ALL: [Self; 5] = [
        Self::Mtu256,
        Self::Mtu512,
        Self::Mtu1024,
        Self::Mtu2048,
        Self::Mtu4096,
    ];

    /// Payload bytes per packet.
    #[inline]
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// The IB MTU code (1..=5).
    #[inline]
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The path MTU for an IB MTU code, if valid.
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Mtu256),
            2 => Some(Self::Mtu512),
            3 => Some(Self::Mtu1024),
            4 => Some(Self::Mtu2048),
            5 => Some(Self::Mtu4096),
            _ => None,
        }
    }

    /// The path MTU of exactly `bytes` payload bytes, if valid.
    pub const fn from_bytes(bytes: u32) -> Option<Self> {
        match bytes {
            256 => Some(Self::Mtu256),
            512 => Some(Self::Mtu512),
            1024 => Some(Self::Mtu1024),
            2048 => Some(Self::Mtu2048),
            4096 => Some(Self::Mtu4096),
            _ => None,
        }
    }

    /// The largest path MTU whose packets fit a link of `link_mtu` bytes
    /// (the IP MTU, e.g. 1500), or `None` when even 256 does not fit.
    pub const fn for_link_mtu(link_mtu: usize) -> Option<Self> {
        let Some(room) = link_mtu.checked_sub(LINK_OVERHEAD) else {
            return None;
        };
        let mut best = None;
        let mut i = 0;
        while i < Self::ALL.len() {
            let p = Self::ALL[i];
            if p.bytes() as usize <= room {
                best = Some(p);
            }
            i += 1;
        }
        best
    }
}

/// Packets needed to carry a `len`-byte message: ⌈len / PMTU⌉, and at least
/// one (a zero-length message still takes one packet and one PSN).
#[inline]
pub const fn segment_count(len: u32, pmtu: Pmtu) -> u32 {
    if len == 0 {
        1
    } else {
        len.div_ceil(pmtu.bytes())
    }
}

/// Pad bytes that follow a `payload_len`-byte payload so the packet stays a
/// multiple of 4 bytes: (−len) mod 4.
#[inline]
pub const fn pad_len(payload_len: usize) -> usize {
    payload_len.wrapping_neg() & 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_codes() {
        let sizes = [256, 512, 1024, 2048, 4096];
        for (p, size) in Pmtu::ALL.iter().zip(sizes) {
            assert_eq!(p.bytes(), size);
            assert_eq!(Pmtu::from_bytes(size), Some(*p));
            assert_eq!(Pmtu::from_code(p.code()), Some(*p));
        }
        assert_eq!(Pmtu::from_code(0), None);
        assert_eq!(Pmtu::from_code(6), None);
        assert_eq!(Pmtu::from_bytes(1500), None);
    }

    #[test]
    fn link_mtu() {
        assert_eq!(Pmtu::for_link_mtu(1500), Some(Pmtu::Mtu1024));
        assert_eq!(Pmtu::for_link_mtu(9000), Some(Pmtu::Mtu4096));
        assert_eq!(Pmtu::for_link_mtu(4096 + 80), Some(Pmtu::Mtu4096));
        assert_eq!(Pmtu::for_link_mtu(4096 + 79), Some(Pmtu::Mtu2048));
        assert_eq!(Pmtu::for_link_mtu(300), None);
        assert_eq!(Pmtu::for_link_mtu(10), None);
    }

    #[test]
    fn segments() {
        let p = Pmtu::Mtu1024;
        assert_eq!(segment_count(0, p), 1);
        assert_eq!(segment_count(1, p), 1);
        assert_eq!(segment_count(1024, p), 1);
        assert_eq!(segment_count(1025, p), 2);
        assert_eq!(segment_count(4096, Pmtu::Mtu256), 16);
        assert_eq!(segment_count(u32::MAX, Pmtu::Mtu256), 1 << 24);
        assert_eq!(segment_count(1 << 31, Pmtu::Mtu4096), 1 << 19);
    }

    #[test]
    fn pads() {
        assert_eq!(pad_len(0), 0);
        assert_eq!(pad_len(1), 3);
        assert_eq!(pad_len(2), 2);
        assert_eq!(pad_len(3), 1);
        assert_eq!(pad_len(4), 0);
        assert_eq!(pad_len(4097), 3);
    }
}

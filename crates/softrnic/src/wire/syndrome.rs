//! The AETH syndrome byte: ACK with credits, RNR NAK with a timer, or NAK.
//!
//! ```text
//! bit 7      reserved (0)
//! bits 6..5  00 ACK, 01 RNR NAK, 10 reserved, 11 NAK
//! bits 4..0  ACK: credit code; RNR NAK: timer code; NAK: NAK code
//! ```

use super::error::ParseError;

/// An end-to-end credit count code (5 bits). Code 31 means "credits not
/// tracked", which is what a responder without flow control sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CreditCode(u8);

impl CreditCode {
    /// "Invalid" credit count: end-to-end credits are not in use.
    pub const UNLIMITED: Self = Self(31);

    /// The code, if it fits 5 bits.
    pub const fn new(code: u8) -> Option<Self> {
        if code < 32 { Some(Self(code)) } else { None }
    }

    /// The 5-bit code.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// Receive WQEs the code stands for, or `None` for [`Self::UNLIMITED`].
    /// Codes follow 0, 1, 2, 3, 4, 6, 8, 12, 16, …, 32768: after 4, each
    /// pair of codes doubles, the odd step adding half again.
    pub const fn credits(self) -> Option<u32> {
        match self.0 {
            31 => None,
            c @ 0..=4 => Some(c as u32),
            c => {
                let base = 1u32 << (c / 2);
                Some(if c % 2 == 0 { base } else { base + base / 2 })
            }
        }
    }
}

/// An RNR NAK timer code (5 bits): how long the requester waits before
/// retrying after "receiver not ready".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RnrTimer(u8);

/// Microseconds per RNR timer code, indexed by code.
const RNR_MICROS: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

impl RnrTimer {
    /// The code, if it fits 5 bits.
    pub const fn new(code: u8) -> Option<Self> {
        if code < 32 { Some(Self(code)) } else { None }
    }

    /// The 5-bit code.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// The delay in microseconds (code 0 is the longest, 655.36 ms).
    pub const fn micros(self) -> u32 {
        RNR_MICROS[(self.0 & 31) as usize]
    }

    /// The smallest code whose delay is at least `micros` (saturating at
    /// the longest delay).
    pub const fn at_least(micros: u32) -> Self {
        let mut best = 0u8;
        let mut best_us = RNR_MICROS[0];
        let mut code = 1;
        while code < 32 {
            let us = RNR_MICROS[code];
            if us >= micros && us < best_us {
                best = code as u8;
                best_us = us;
            }
            code += 1;
        }
        Self(best)
    }
}

/// The reason carried by a NAK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NakCode {
    /// PSN sequence error: a packet was missed; resend from the NAK's PSN.
    PsnSequenceError = 0,
    /// Invalid request (bad opcode sequence, length, unsupported op).
    InvalidRequest = 1,
    /// Remote access error (R_Key or bounds).
    RemoteAccessError = 2,
    /// Remote operational error.
    RemoteOperationalError = 3,
    /// Invalid RD request (RD transport only).
    InvalidRdRequest = 4,
}

/// A decoded AETH syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement, with an end-to-end credit count.
    Ack(CreditCode),
    /// Receiver not ready: retry after the timer.
    RnrNak(RnrTimer),
    /// Negative acknowledgement.
    Nak(NakCode),
}

const TYPE_ACK: u8 = 0x00;
const TYPE_RNR: u8 = 0x20;
const TYPE_NAK: u8 = 0x60;
const TYPE_MASK: u8 = 0x60;
const VALUE_MASK: u8 = 0x1F;

impl Syndrome {
    /// A plain ACK without end-to-end credits (syndrome 0x1F).
    pub const ACK: Self = Self::Ack(CreditCode::UNLIMITED);

    /// The syndrome byte.
    pub const fn encode(self) -> u8 {
        match self {
            Self::Ack(c) => TYPE_ACK | c.0,
            Self::RnrNak(t) => TYPE_RNR | t.0,
            Self::Nak(n) => TYPE_NAK | n as u8,
        }
    }

    /// Decodes a syndrome byte; reserved encodings (bit 7 set, type 10, NAK
    /// codes above 4) are [`ParseError::BadSyndrome`].
    pub const fn decode(byte: u8) -> Result<Self, ParseError> {
        if byte & 0x80 != 0 {
            return Err(ParseError::BadSyndrome);
        }
        let value = byte & VALUE_MASK;
        match byte & TYPE_MASK {
            TYPE_ACK => Ok(Self::Ack(CreditCode(value))),
            TYPE_RNR => Ok(Self::RnrNak(RnrTimer(value))),
            TYPE_NAK => match value {
                0 => Ok(Self::Nak(NakCode::PsnSequenceError)),
                1 => Ok(Self::Nak(NakCode::InvalidRequest)),
                2 => Ok(Self::Nak(NakCode::RemoteAccessError)),
                3 => Ok(Self::Nak(NakCode::RemoteOperationalError)),
                4 => Ok(Self::Nak(NakCode::InvalidRdRequest)),
                _ => Err(ParseError::BadSyndrome),
            },
            _ => Err(ParseError::BadSyndrome),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_or_is_reserved() {
        let mut valid = 0;
        for byte in 0..=255u8 {
            match Syndrome::decode(byte) {
                Ok(s) => {
                    assert_eq!(s.encode(), byte);
                    valid += 1;
                }
                Err(e) => {
                    assert_eq!(e, ParseError::BadSyndrome);
                    let reserved = byte >= 0x80
                        || (0x40..0x60).contains(&byte)
                        || (0x65..0x80).contains(&byte);
                    assert!(reserved, "{byte:#x}");
                }
            }
        }
        // 32 ACK + 32 RNR + 5 NAK codes.
        assert_eq!(valid, 69);
    }

    #[test]
    fn known_values() {
        assert_eq!(Syndrome::ACK.encode(), 0x1F);
        assert_eq!(Syndrome::Nak(NakCode::PsnSequenceError).encode(), 0x60);
        assert_eq!(Syndrome::Nak(NakCode::InvalidRequest).encode(), 0x61);
        assert_eq!(Syndrome::Nak(NakCode::RemoteAccessError).encode(), 0x62);
        assert_eq!(
            Syndrome::Nak(NakCode::RemoteOperationalError).encode(),
            0x63
        );
        assert_eq!(Syndrome::Nak(NakCode::InvalidRdRequest).encode(), 0x64);
        assert_eq!(Syndrome::RnrNak(RnrTimer::new(14).unwrap()).encode(), 0x2E);
    }

    #[test]
    fn credit_table() {
        let expect = [
            0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
            1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
        ];
        for (code, credits) in expect.iter().enumerate() {
            assert_eq!(
                CreditCode::new(code as u8).unwrap().credits(),
                Some(*credits)
            );
        }
        assert_eq!(CreditCode::UNLIMITED.credits(), None);
        assert_eq!(CreditCode::new(32), None);
    }

    #[test]
    fn rnr_timer() {
        assert_eq!(RnrTimer::new(0).unwrap().micros(), 655_360);
        assert_eq!(RnrTimer::new(25).unwrap().micros(), 61_440);
        assert_eq!(RnrTimer::new(31).unwrap().micros(), 491_520);
        assert_eq!(RnrTimer::new(32), None);
        assert_eq!(RnrTimer::at_least(1).code(), 1);
        assert_eq!(RnrTimer::at_least(10).code(), 1);
        assert_eq!(RnrTimer::at_least(11).code(), 2);
        assert_eq!(RnrTimer::at_least(1000).code(), 14);
        assert_eq!(RnrTimer::at_least(500_000).code(), 0);
        assert_eq!(RnrTimer::at_least(700_000).code(), 0);
    }
}

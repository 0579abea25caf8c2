//! What connection management negotiates for a QP's reliability, and how
//! it becomes the QP's [`RcConfig`].
//!
//! IB's CM carries a QP's retransmit timeout as an exponent (4.096 µs ×
//! 2^n; the rules that pick it are in [`crate::cm`]), the transport retry
//! count (REQ) and the RNR retry count (REQ for the acceptor, REP for the
//! initiator), which a modify-to-RTS applies. Linux's rxe turns the
//! exponent into a timer as is (`rxe_qp_from_attr`: `4096 ns << timeout`,
//! 0 meaning no timer) and re-arms it unchanged on each expiry; rsndk
//! bounds it ([`MIN_ACK_TIMEOUT_US`], [`MAX_ACK_TIMEOUT_US`]) and still
//! backs off on consecutive expiries ([`RcConfig::retransmit_timeout_us`]).

use super::RcConfig;

/// Smallest retransmit timeout a negotiation gives a QP (µs). A smaller
/// exponent (a REQ's Local ACK Timeout of 1 is 8 µs) would retransmit the
/// whole window whenever an ACK is a scheduling delay late: the engine
/// runs as a thread woken from `poll(2)`, or as the Windows driver's DPC
/// behind a kernel timer whose resolution is about a millisecond at best.
pub const MIN_ACK_TIMEOUT_US: u64 = 1_000;

/// Largest retransmit timeout a negotiation gives a QP (µs): 4.096 µs ×
/// 2^19 ≈ 2.1 s. Real peers ask for less (rxe's REQ, from Linux's RoCE
/// packet lifetime 16 and its ACK delay 15, offers 17 ≈ 0.54 s; a
/// ConnectX with ACK delay 16 arrives at 18 ≈ 1.07 s); a larger exponent
/// (up to 31, 2.4 hours) or IB's 0 ("no timer") would leave a lost tail
/// packet unrecovered, and its work request hanging, for that long.
pub const MAX_ACK_TIMEOUT_US: u64 = ib_timeout_us(19);

/// Microseconds of an IB timeout exponent: 4.096 µs × 2^`exp` (`exp`
/// capped at 31, the field's width).
pub const fn ib_timeout_us(exp: u8) -> u64 {
    let exp = if exp > 31 { 31 } else { exp };
    (4096u64 << exp) / 1000
}

/// A QP's reliability as connection management negotiated it (what
/// Linux's `cm_init_qp_rts_attr` puts in the modify-to-RTS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The retransmit timeout exponent (4.096 µs × 2^`timeout`).
    pub timeout: u8,
    /// Transport retries (the REQ's Retry Count, 0..=7).
    pub retry_count: u8,
    /// Retries after RNR NAKs (the peer's RNR Retry Count, 0..=7, 7:
    /// forever).
    pub rnr_retry: u8,
}

impl Negotiated {
    /// The retransmit timeout the exponent gives, bounded to
    /// [`MIN_ACK_TIMEOUT_US`]..=[`MAX_ACK_TIMEOUT_US`] (exponent 0, IB's
    /// "no timer", gets the largest).
    pub const fn ack_timeout_us(&self) -> u64 {
        if self.timeout == 0 {
            return MAX_ACK_TIMEOUT_US;
        }
        let us = ib_timeout_us(self.timeout);
        if us < MIN_ACK_TIMEOUT_US {
            MIN_ACK_TIMEOUT_US
        } else if us > MAX_ACK_TIMEOUT_US {
            MAX_ACK_TIMEOUT_US
        } else {
            us
        }
    }
}

impl RcConfig {
    /// This configuration with the negotiated timeout and retry counts in
    /// place of its own, unless it keeps its own ([`RcConfig::follow_cm`]
    /// false).
    #[must_use]
    pub fn negotiated(self, n: Negotiated) -> Self {
        if !self.follow_cm {
            return self;
        }
        Self {
            ack_timeout_us: n.ack_timeout_us(),
            retry_count: n.retry_count.min(7),
            rnr_retry: n.rnr_retry.min(7),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(timeout: u8) -> Negotiated {
        Negotiated {
            timeout,
            retry_count: 7,
            rnr_retry: 7,
        }
    }

    #[test]
    fn the_exponent_is_4_096_us_times_two_to_the_n_within_bounds() {
        assert_eq!(n(14).ack_timeout_us(), 67_108);
        assert_eq!(n(15).ack_timeout_us(), 134_217);
        assert_eq!(n(17).ack_timeout_us(), 536_870);
        assert_eq!(n(1).ack_timeout_us(), MIN_ACK_TIMEOUT_US, "8 µs: floored");
        assert_eq!(n(8).ack_timeout_us(), 1_048);
        assert_eq!(n(19).ack_timeout_us(), 2_147_483);
        assert_eq!(n(20).ack_timeout_us(), MAX_ACK_TIMEOUT_US, "capped");
        assert_eq!(n(31).ack_timeout_us(), MAX_ACK_TIMEOUT_US);
        assert_eq!(
            n(0).ack_timeout_us(),
            MAX_ACK_TIMEOUT_US,
            "no timer: capped"
        );
    }

    #[test]
    fn a_config_follows_the_negotiation_unless_it_keeps_its_own() {
        let got = RcConfig::default().negotiated(Negotiated {
            timeout: 16,
            retry_count: 3,
            rnr_retry: 5,
        });
        assert_eq!(
            (got.ack_timeout_us, got.retry_count, got.rnr_retry),
            (268_435, 3, 5)
        );
        let own = RcConfig {
            follow_cm: false,
            ack_timeout_us: 1_000,
            ..RcConfig::default()
        };
        assert_eq!(own.negotiated(n(16)), own);
    }
}

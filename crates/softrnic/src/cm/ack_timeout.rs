//! The QP retransmit timeout a handshake gives each side, as Linux's IB CM
//! (`drivers/infiniband/core/cm.c`) computes it, so an rsndk QP and a
//! Linux (rxe or hardware) QP on the same connection agree.
//!
//! * The REQ's primary path Local ACK Timeout is `cm_ack_timeout(our CA
//!   ACK delay, packet lifetime)` (`cm_format_req`), about `ACK delay + 2
//!   × packet lifetime` rounded to a power of two ([`combine`]).
//! * The acceptor's QP timeout is the REQ's Local ACK Timeout:
//!   `cm_format_paths_from_req` takes the path's packet lifetime as that
//!   field less one (not below 0) and `cm_init_av_by_path` adds the one
//!   back, so a 0 becomes 1 ([`acceptor`]). Its REP's Target ACK Delay is
//!   its own CA ACK delay (`cm_format_rep`).
//! * The initiator's QP timeout is `cm_ack_timeout(REP's Target ACK
//!   Delay, packet lifetime)` (`cm_rep_handler`) ([`initiator`]).
//!
//! `cm_init_qp_rts_attr` then puts that exponent in the QP's timeout; the
//! QP turns it into microseconds within its bounds
//! ([`crate::qp::Negotiated::ack_timeout_us`]).

use super::PACKET_LIFETIME;

/// Our CA ACK delay (exponent: 4.096 µs × 2^12 ≈ 16.8 ms), announced in
/// the REP's Target ACK Delay and counted in the REQ's Local ACK Timeout:
/// the longest an ACK of ours should take. The responder ACKs at once
/// when asked and coalesces at most 100 µs otherwise, but it runs as an
/// engine thread woken by the datagram or, in the Windows driver, as a DPC
/// whose coalescing timer fires on the clock tick (15.6 ms by default);
/// 16.8 ms covers one tick and a scheduling delay. (rxe announces 15,
/// 134 ms.)
pub const LOCAL_CA_ACK_DELAY: u8 = 12;

/// Linux's `cm_ack_timeout`: the exponent of `4.096 µs × 2^ack_delay + 2 ×
/// 4.096 µs × 2^packet_life_time`. Adding one to an exponent doubles it,
/// so the larger of `ack_delay` and `packet_life_time + 1` is taken and
/// raised by one when the other is within a factor of two of it; at most
/// 31.
pub const fn combine(ack_delay: u8, packet_life_time: u8) -> u8 {
    let lifetime = packet_life_time as u16 + 1;
    let delay = ack_delay as u16;
    let exp = if lifetime >= delay {
        lifetime + (delay + 1 >= lifetime) as u16
    } else {
        delay + (lifetime + 1 >= delay) as u16
    };
    if exp > 31 { 31 } else { exp as u8 }
}

/// The Local ACK Timeout our REQ offers.
pub const fn offered() -> u8 {
    combine(LOCAL_CA_ACK_DELAY, PACKET_LIFETIME)
}

/// The acceptor's QP timeout exponent from the REQ's Local ACK Timeout.
pub const fn acceptor(local_ack_timeout: u8) -> u8 {
    let packet_life_time = local_ack_timeout.saturating_sub(1);
    packet_life_time + 1
}

/// The initiator's QP timeout exponent from the REP's Target ACK Delay.
pub const fn initiator(target_ack_delay: u8) -> u8 {
    combine(target_ack_delay, PACKET_LIFETIME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_is_linux_cm_ack_timeout() {
        // rxe's REQ: ACK delay 15, RoCE packet lifetime 16 (cma.c).
        assert_eq!(combine(15, 16), 17);
        // Within a factor of two: one more.
        assert_eq!(combine(14, 14), 16);
        assert_eq!(combine(16, 14), 17);
        assert_eq!(combine(12, 14), 15);
        // The delay dominates.
        assert_eq!(combine(20, 14), 20);
        assert_eq!(combine(0, 0), 2);
        assert_eq!(combine(31, 31), 31, "at most 31");
    }

    #[test]
    fn each_side_gets_its_exponent() {
        assert_eq!(offered(), 15, "134 ms: 2 × 67 ms lifetime + 16.8 ms");
        assert_eq!(acceptor(offered()), offered());
        assert_eq!(acceptor(17), 17);
        assert_eq!(acceptor(0), 1, "Linux turns 0 into 1");
        // rxe's REP: Target ACK Delay 15.
        assert_eq!(initiator(15), 16);
        assert_eq!(initiator(LOCAL_CA_ACK_DELAY), offered());
    }
}

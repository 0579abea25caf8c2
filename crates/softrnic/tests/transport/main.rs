//! The RC transport's tests: two devices on the in-memory fabric (or a polled link) moving SENDs, WRITEs and READs through loss, errors, backpressure and busy polling.

#[path = "../common/mod.rs"]
mod common;

mod backpressure;
mod busy_poll;
mod outbox;
mod rc_ack_hold;
mod rc_basic;
mod rc_duplicate_ack;
mod rc_errors;
mod rc_loss;
mod rc_proptest;
mod read_limits;
mod transmit_turn;
mod transport_read_invalidate;
mod transport_read_loss;
mod transport_trains;
mod wqe_malformed;

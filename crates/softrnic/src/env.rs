//! What the device needs from its surroundings besides its link
//! ([`crate::link`]): a clock, a way to ask for its engine to be run, and
//! a packet tap.
//!
//! The host (or the kernel shell) implements these; tests implement them
//! deterministically (a simulated clock, an in-memory fabric).

/// Monotonic time.
pub trait Clock: Send + Sync {
    /// Microseconds since an arbitrary fixed origin.
    fn now_us(&self) -> u64;
}

/// Asks for [`crate::device::SoftRnic::poll`] to run soon (a doorbell was rung or a
/// timer is due). Must not block; called at `DISPATCH_LEVEL`.
///
/// While a consumer busy polls the device ([`crate::device::SoftRnic::busy_poll`])
/// the poller takes doorbells and arrivals itself, so [`Wake::wake`] may
/// be absorbed; what only the device's own context may do (deliver events)
/// asks through [`Wake::wake_engine`], which always gets through.
pub trait Wake: Send + Sync {
    /// Requests a poll (a busy poller, if one is active, serves it).
    fn wake(&self);

    /// Requests a poll by the device's own context even while a consumer
    /// busy polls: events are waiting for delivery.
    fn wake_engine(&self) {
        self.wake();
    }

    /// Notes that a consumer busy polls the device now (its own context
    /// may stand aside for a while).
    fn note_busy_poll(&self) {}

    /// A consumer armed a CQ, so it is about to sleep rather than poll:
    /// the device's own context must take over at once.
    fn end_busy_poll(&self) {}
}

/// Which way a captured datagram went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Sent by this device.
    Transmit,
    /// Received by this device (before any check: bad packets are captured too).
    Receive,
}

/// A packet tap: sees every datagram the device sends and receives, as a
/// whole IPv4 or IPv6 datagram (IP header through ICRC), so the host can
/// write a pcap. Datagrams that arrived as a bare UDP payload
/// ([`crate::device::SoftRnic::receive_udp_payload`]) are shown with the
/// IP and UDP headers the ICRC convention assumes (IPv4: identification 0,
/// DF, TTL 64; IPv6: traffic class and flow label 0, hop limit 64; the
/// socket's addresses and ports).
///
/// Called from the engine's hot path, possibly holding a QP lock: must not
/// block for long and must not call back into the device.
pub trait Capture: Send + Sync {
    /// Records one datagram.
    fn capture(&self, direction: Direction, datagram: &[u8]);
}

//! What the device needs from its surroundings: a way to put packets on a
//! wire, a clock, and a way to ask for its engine to be run.
//!
//! The host (or the kernel shell) implements these; tests implement them
//! deterministically (a simulated clock, an in-memory fabric).

/// The device's network attachment.
pub trait Link: Send + Sync {
    /// Queues one IPv4/UDP datagram (a whole RoCEv2 packet, from the IPv4
    /// header to the ICRC) for transmission. Must not block; a link that
    /// cannot take the packet drops it (the RC transport retransmits).
    fn transmit(&self, datagram: &[u8]);

    /// Like [`Link::transmit`] for the datagram in `buf[..len]`, but the
    /// link may take the buffer instead of copying it, leaving in its place
    /// another of at least the same length and unspecified contents (an
    /// in-memory fabric moves full-size packets this way without a copy).
    fn transmit_owned(&self, buf: &mut alloc::vec::Vec<u8>, len: usize) {
        if let Some(datagram) = buf.get(..len) {
            self.transmit(datagram);
        }
    }

    /// Pushes queued datagrams out (a batching link sends them here).
    fn flush(&self) {}
}

/// Monotonic time.
pub trait Clock: Send + Sync {
    /// Microseconds since an arbitrary fixed origin.
    fn now_us(&self) -> u64;
}

/// Asks for [`crate::SoftRnic::poll`] to run soon (a doorbell was rung or a
/// timer is due). Must not block; called at `DISPATCH_LEVEL`.
pub trait Wake: Send + Sync {
    /// Requests a poll.
    fn wake(&self);
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
/// whole IPv4 datagram (IPv4 header through ICRC), so the host can write a
/// pcap. Datagrams that arrived as a bare UDP payload
/// ([`crate::device::SoftRnic::receive_udp_payload`]) are shown with the
/// IPv4 and UDP headers the ICRC convention assumes (identification 0, DF,
/// TTL 64, the socket's addresses and ports).
///
/// Called from the engine's hot path, possibly holding a QP lock: must not
/// block for long and must not call back into the device.
pub trait Capture: Send + Sync {
    /// Records one datagram.
    fn capture(&self, direction: Direction, datagram: &[u8]);
}

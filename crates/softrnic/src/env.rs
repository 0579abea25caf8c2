//! What the device needs from its surroundings: a way to put packets on a
//! wire, a clock, and a way to ask for its engine to be run.
//!
//! The host (or the kernel shell) implements these; tests implement them
//! deterministically (a simulated clock, an in-memory fabric).

/// The device's network attachment.
pub trait Link: Send + Sync {
    /// Queues one IPv4/UDP or IPv6/UDP datagram (a whole RoCEv2 packet,
    /// from the IP header to the ICRC; the version nibble tells which) for
    /// transmission. Must not block; a link that
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

    /// Whether the link takes another packet now. A link with a bounded
    /// transmit queue (a NIC's transmit ring) says `false` while it is
    /// full, rather than drop what it is given: the device then builds
    /// nothing more for a QP that would send, which stops where it is
    /// (nothing consumed, no PSN advanced, no timer started) until the
    /// link calls [`crate::device::SoftRnic::link_ready`], when it resumes
    /// from there. A link that says `false` must make that call once it
    /// says `true` again. Asked before every packet: must be cheap, must
    /// not block. The default always has room.
    ///
    /// A few packets go whatever this says (the link may drop them):
    /// connection management's and the NAKs that end a connection or
    /// refuse a stale READ (their senders retry), and READ responses that
    /// must leave before a SEND with invalidate kills their key.
    fn can_transmit(&self) -> bool {
        true
    }

    /// For a link that carries UDP payloads (BTH through ICRC, as a UDP
    /// socket does): lends `len` bytes of its own send buffer for the next
    /// payload to the IPv4 endpoint `dest`, which `build` writes (returning
    /// its length, or `None` for nothing to send), so the packet is built
    /// where it leaves from. `false`: the link has no such buffer (nothing
    /// was called; the caller builds a datagram and transmits it).
    fn transmit_udp_payload_with(
        &self,
        dest: core::net::SocketAddrV4,
        len: usize,
        build: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> bool {
        let _ = (dest, len, build);
        false
    }

    /// [`Link::transmit_udp_payload_with`] for a payload to the IPv6
    /// endpoint `dest`. The default lends nothing (the caller builds an
    /// IPv6 datagram and transmits it).
    fn transmit_udp_payload_v6_with(
        &self,
        dest: core::net::SocketAddrV6,
        len: usize,
        build: &mut dyn FnMut(&mut [u8]) -> Option<usize>,
    ) -> bool {
        let _ = (dest, len, build);
        false
    }

    /// Whether the link carries trains to `dst`
    /// ([`crate::train`]): only a link between devices that share one DMA
    /// address space, while it injects no per-packet faults. The default
    /// carries none.
    fn carries_trains(&self, dst: core::net::IpAddr) -> bool {
        let _ = dst;
        false
    }

    /// Queues a train; called only after
    /// [`Link::carries_trains`] said yes. Must not block. A link that cannot
    /// take it drops it (the RC transport asks again).
    fn transmit_train(&self, train: crate::train::Train) {
        drop(train);
    }

    /// Hands datagrams that have arrived (a bounded batch, never waiting)
    /// to `deliver`. For links that are polled; a link that pushes its
    /// arrivals into [`crate::device::SoftRnic::receive`] itself (an
    /// interrupt or receive callback) keeps this default, which takes
    /// nothing. Called by one thread at a time per device.
    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        let _ = deliver;
        Received::default()
    }
}

/// One datagram a polled [`Link`] took.
#[derive(Clone, Copy, Debug)]
pub enum Arrival<'a> {
    /// A whole IPv4 or IPv6 datagram (IP header through ICRC).
    Datagram(&'a [u8]),
    /// A UDP payload (BTH through ICRC) as a socket delivers it.
    UdpPayload {
        /// Where it came from.
        src: core::net::SocketAddr,
        /// Where it was sent (of `src`'s family; a mixed pair is dropped).
        dst: core::net::SocketAddr,
        /// The payload.
        payload: &'a [u8],
    },
    /// Packets whose payload is still at the sender
    /// ([`Link::transmit_train`]).
    Train(&'a crate::train::Train),
}

/// What one [`Link::receive`] took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Datagrams handed over.
    pub count: usize,
    /// The batch was full: more may be waiting.
    pub more: bool,
    /// When the next datagram held back by the link (a simulated delay)
    /// becomes due, on the device's clock.
    pub next_due_us: Option<u64>,
}

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

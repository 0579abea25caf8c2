//! What the device needs from its surroundings besides its link
//! ([`crate::link`]): a way to ask for its engine to be run, and a packet
//! tap (shown what passes by [`crate::link::CaptureLink`]); and the clock
//! of a link that delays delivery.
//!
//! The device keeps no clock: its runtime reads its own and passes the
//! time into every run entry point ([`RunPass::try_pass`],
//! [`crate::device::SoftRnic::poll`], the `receive*` arrivals), as
//! smoltcp's `Interface::poll(timestamp)` does. The host (or the kernel
//! shell) implements these traits; tests implement them deterministically
//! (a simulated time, an in-memory fabric).

/// Monotonic time, read by a link that holds datagrams back for a
/// while (a [`crate::link::FaultLink`]'s injected delays, the in-memory
/// [`crate::fabric::FabricEndpoint`]'s due times); never by the device.
pub trait Clock: Send + Sync {
    /// Microseconds since an arbitrary fixed origin.
    fn now_us(&self) -> u64;
}

/// What the device asks of the runtime that runs it (the host's engine
/// thread, the kernel's DPC). When and on which thread passes run, busy
/// polling included, is the runtime's policy; the device only says what
/// happened. Must not block; called at `DISPATCH_LEVEL`.
pub trait Wake: Send + Sync {
    /// Work is waiting that any pass may serve (a doorbell was rung or a
    /// timer is due), a consumer's as well as the device's own context's.
    fn wake(&self);

    /// Work is waiting that only the device's own context may do (events
    /// to deliver): a consumer's pass never delivers them.
    fn wake_engine(&self) {
        self.wake();
    }

    /// A consumer found a CQ empty and lends its thread
    /// (`hwq::device::Device::busy_poll`, with no lock held, possibly from
    /// several threads at once). The runtime decides whether to run a pass
    /// on it ([`RunPass::try_pass`], with
    /// [`PassPlan::deliver_events`] false: an event callback from inside
    /// the consumer's CQ poll could deadlock it) and returns whether
    /// anything was done. A runtime that runs none (the device's own
    /// context does all the work) returns false.
    fn consumer_poll(&self, device: &dyn RunPass) -> bool;

    /// A CQ was armed: its consumer is about to wait for the event instead
    /// of polling.
    fn cq_armed(&self) {}
}

/// Runs one pass of the device's work: what the link has received, then
/// the rung doorbells, the due timers and (if asked) event delivery. Only
/// one pass runs at a time per device; the runtime decides who runs them.
pub trait RunPass {
    /// Runs one pass at time `now` (µs, the runtime's monotonic clock; a
    /// time earlier than one already given counts as that one) as `plan`
    /// says, unless another one is running
    /// (`None`: the caller does not wait for it, which on a small machine
    /// costs more than the work).
    fn try_pass(&self, now: u64, plan: PassPlan) -> Option<Pass>;
}

/// What one pass does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassPlan {
    /// Deliver events to the event sink (only the device's own context).
    pub deliver_events: bool,
    /// Receive batches ([`crate::link::Link::receive`] calls) taken at most before the
    /// work, so that a flood cannot hold the pass for long.
    pub rx_batches: usize,
    /// When send doorbells were rung, run the work and end the pass there,
    /// leaving arrivals to the next pass (for a consumer that has just
    /// posted: the answer to what it sends cannot be there yet, and the
    /// receive would cost a system call).
    pub send_first: bool,
}

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Datagrams taken from the link (a train counts the packets it
    /// stands for).
    pub received: usize,
    /// The work did something (call again at once).
    pub worked: bool,
    /// When the link's next held-back datagram is due (µs, the link's
    /// clock).
    pub next_due_us: Option<u64>,
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
/// ([`crate::arrival::Arrival::UdpPayload`]) are shown with the
/// IP and UDP headers the ICRC convention assumes (IPv4: identification 0,
/// DF, TTL 64; IPv6: traffic class and flow label 0, hop limit 64; the
/// socket's addresses and ports).
///
/// Called by the [`crate::link::CaptureLink`] a runtime wrapped the
/// device's link in, from the engine's hot path, possibly holding a device lock (an outbox's, while it drains
/// to the link): must not block for long and must not call back into the
/// device.
pub trait Capture: Send + Sync {
    /// Records one datagram.
    fn capture(&self, direction: Direction, datagram: &[u8]);
}

//! What the device needs from its surroundings: a way to ask for its
//! engine to be run ([`Wake`]), and its routes' path MTUs ([`Routes`]).
//!
//! The device keeps no clock and owns no link: its runtime reads its own
//! clock and passes the time into every run entry point
//! ([`crate::pass::PassTurn::work`], [`crate::device::SoftRnic::poll`],
//! [`crate::device::SoftRnic::receive`]), as smoltcp's
//! `Interface::poll(timestamp)` does, and takes what the device sends
//! ([`crate::transmit`]). The host (or the kernel shell) implements these
//! traits; tests implement them deterministically.

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
    /// on it (its own: the device's work in a [`crate::pass::PassTurn`],
    /// without delivering events, since an event callback
    /// from inside the consumer's CQ poll could deadlock it) and returns
    /// whether anything was done. A runtime that runs none (the device's
    /// own context does all the work) returns false.
    fn consumer_poll(&self) -> bool;

    /// A CQ was armed: its consumer is about to wait for the event instead
    /// of polling.
    fn cq_armed(&self) {}
}

/// The runtime's routes, asked once per connection (never per packet;
/// it may take a system call).
pub trait Routes: Send + Sync {
    /// The largest RoCE path MTU (256, 512, 1024, 2048 or 4096 bytes of
    /// payload) whose packets the runtime's wire carries to `dst` whole,
    /// with their headers ([`crate::l2::path_mtu_for`] of the route's or
    /// the NIC's MTU); `None`: no limit known (the device's configured
    /// path MTU applies). Connection management offers no more than this
    /// in a REQ and accepts no more in one.
    fn path_mtu(&self, dst: core::net::IpAddr) -> Option<u32>;
}

/// Routes that know no limit: the device's configured path MTU applies
/// to every peer.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRoutes;

impl Routes for NoRoutes {
    fn path_mtu(&self, _dst: core::net::IpAddr) -> Option<u32> {
        None
    }
}

/// A fixed path MTU to every peer (a NIC's, whose neighbours share its
/// one segment), changed when the runtime learns another.
#[derive(Debug)]
pub struct LinkMtu(core::sync::atomic::AtomicU32);

impl LinkMtu {
    /// Routes whose path MTU is `mtu` (`None`: no limit).
    pub fn new(mtu: Option<u32>) -> Self {
        Self(core::sync::atomic::AtomicU32::new(mtu.unwrap_or(0)))
    }

    /// Changes the path MTU.
    pub fn set(&self, mtu: Option<u32>) {
        self.0
            .store(mtu.unwrap_or(0), core::sync::atomic::Ordering::Relaxed);
    }
}

impl Routes for LinkMtu {
    fn path_mtu(&self, _dst: core::net::IpAddr) -> Option<u32> {
        match self.0.load(core::sync::atomic::Ordering::Relaxed) {
            0 => None,
            mtu => Some(mtu),
        }
    }
}

impl<R: Routes + ?Sized> Routes for alloc::sync::Arc<R> {
    fn path_mtu(&self, dst: core::net::IpAddr) -> Option<u32> {
        (**self).path_mtu(dst)
    }
}

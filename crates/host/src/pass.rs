//! A device's passes as this runtime runs them. The device only offers its
//! part of a pass (`SoftRnic::pass_turn`); the runtime hands it what its
//! wire received, and takes what it sends after the work
//! ([`softrnic::transmit_turn`]). [`DevicePass`] is that pass for a device
//! on a UDP port ([`UdpPass`]) or on the in-memory fabric (a
//! [`LinkPass`]); the engine thread ([`crate::engine`]) runs it, and so do
//! busy-polling consumers ([`crate::busy`]).

use std::sync::{Arc, Weak};

use links::{CaptureLink, Link, LinkPass, Pass, PassPlan};
use softrnic::device::SoftRnic;

use crate::busy::HostPass;
use crate::udp::UdpPass;

/// The capture wrapper around a device's wire: what the runtime fills
/// with a capture (`crate::adapters::tap_of`).
pub type Tap = Arc<CaptureLink<Box<dyn Link>>>;

/// The wire a device's passes run over.
#[derive(Debug)]
enum Wire {
    Udp(UdpPass),
    Link(LinkPass<Tap>),
}

/// The passes of one device over its wire. Holds the device weakly: the
/// device's waker holds this (for its consumers' busy polls), and the
/// device owns its waker.
#[derive(Debug)]
pub struct DevicePass {
    rnic: Weak<SoftRnic>,
    wire: Wire,
}

impl DevicePass {
    /// The passes of `rnic` on a UDP port.
    pub fn udp(rnic: &Arc<SoftRnic>, udp: UdpPass) -> Self {
        Self {
            rnic: Arc::downgrade(rnic),
            wire: Wire::Udp(udp),
        }
    }

    /// The passes of `rnic` over a link (the fabric's endpoint, inside
    /// its capture wrapper).
    pub fn link(rnic: &Arc<SoftRnic>, link: LinkPass<Tap>) -> Self {
        Self {
            rnic: Arc::downgrade(rnic),
            wire: Wire::Link(link),
        }
    }

    /// The device, while it exists.
    pub fn device(&self) -> Option<Arc<SoftRnic>> {
        self.rnic.upgrade()
    }

    /// The capture wrapper around the device's wire.
    pub fn tap(&self) -> &Tap {
        match &self.wire {
            Wire::Udp(udp) => udp.tap(),
            Wire::Link(link) => link.link(),
        }
    }

    /// One pass of `rnic` (this pass's device) at `now` as `plan` says:
    /// arrivals, the device's work, then what it sends taken onto the
    /// wire; `None` if another pass runs.
    pub fn run(&self, rnic: &SoftRnic, now: u64, plan: PassPlan) -> Option<Pass> {
        match &self.wire {
            Wire::Udp(udp) => udp.try_pass(rnic, now, plan),
            Wire::Link(link) => link.try_pass(rnic, now, plan),
        }
    }

    /// Takes what `rnic` (this pass's device) sends onto the wire at `now`
    /// (outside a pass); how many packets.
    pub fn pump(&self, rnic: &SoftRnic, now: u64) -> usize {
        match &self.wire {
            Wire::Udp(udp) => udp.pump(rnic, now),
            Wire::Link(link) => link.pump(rnic, now),
        }
    }
}

impl HostPass for DevicePass {
    fn try_pass(&self, now: u64, plan: PassPlan) -> Option<Pass> {
        let rnic = self.device()?;
        self.run(&rnic, now, plan)
    }
}

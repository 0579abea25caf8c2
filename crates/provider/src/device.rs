//! One `DeviceContext` per device: the device, its fixed caps, the tables
//! that route device events to objects, and the event handler.
//!
//! The context lives in a `TryArc` whose address is stable, so it registers
//! itself with the device as the event sink. It must be detached before it
//! is freed: its owner calls [`DeviceContext::detach`] after closing every
//! adapter (dropping the last reference detaches too, but only the owner
//! can guarantee that this does not happen inside a device event).

use core::fmt;
use core::ops::Deref;
use core::sync::atomic::{AtomicBool, Ordering};

use hwq::device::{CmEvent, DeviceCaps, DeviceEvents, EventSink};
use hwq::{ConnId, Cqn, Device, Doorbells, ListenId, Qpn, SharedDevice, Srqn, TryArc};
use ndkpi::NTSTATUS;

use crate::connector::{self, Connector};
use crate::cq::{self, Cq};
use crate::endpoint::PortRegistry;
use crate::listener::{self, Listener};
use crate::platform::{Irql, Platform};
use crate::pool::{self, Charge, tags};
use crate::qp::{self, Qp};
use crate::srq::{self, Srq};
use crate::status;
use crate::table::IdTable;

/// A device and everything the provider keeps per device.
pub struct DeviceContext {
    platform: &'static dyn Platform,
    device: SharedDevice,
    caps: DeviceCaps,
    pub(crate) cqs: IdTable<Cq, Cqn>,
    pub(crate) srqs: IdTable<Srq, Srqn>,
    pub(crate) qps: IdTable<Qp, Qpn>,
    pub(crate) conns: IdTable<Connector, ConnId>,
    pub(crate) listeners: IdTable<Listener, ListenId>,
    pub(crate) ports: PortRegistry,
    attached: AtomicBool,
    _charge: Charge,
}

impl DeviceContext {
    /// Wraps `device`, not attached to its events yet: `DeviceContext::new`
    /// (at the edge, in `dispatch::adapter`) attaches it.
    pub(crate) fn unattached(
        device: SharedDevice,
        platform: &'static dyn Platform,
    ) -> Result<TryArc<Self>, NTSTATUS> {
        let caps = device.caps();
        let ctx = pool::try_arc(platform, tags::DEVICE, |charge| Self {
            platform,
            device,
            caps,
            cqs: IdTable::new(platform),
            srqs: IdTable::new(platform),
            qps: IdTable::new(platform),
            conns: IdTable::new(platform),
            listeners: IdTable::new(platform),
            ports: PortRegistry::new(platform),
            attached: AtomicBool::new(false),
            _charge: charge,
        })
        .map_err(status::alloc_error)?;
        Ok(ctx)
    }

    /// Hands the device its event sink (targeting this context).
    pub(crate) fn attach(&self, sink: EventSink) -> Result<(), NTSTATUS> {
        self.device().attach(sink).map_err(status::device_error)?;
        self.attached.store(true, Ordering::Release);
        Ok(())
    }

    /// Stops device events; when it returns no event runs or will run.
    /// `PASSIVE_LEVEL`; never from inside a device event. Idempotent.
    pub fn detach(&self) {
        if self.attached.swap(false, Ordering::AcqRel) {
            // Detaching waits out running events. (Checked only when it
            // detaches: a drop after the owner detached may run anywhere.)
            self.platform.require_passive("DeviceContext::detach");
            self.device().detach();
        }
    }

    /// The device for a command, with the calling thread raised to
    /// `DISPATCH_LEVEL` until the returned handle drops: the hwq contract
    /// calls every command at `DISPATCH_LEVEL`, because the device's spin
    /// locks are shared with its own DPC (see `hwq::device`'s IRQL rule).
    /// This is the one place the provider raises for the device. Keep the
    /// handle for the call only (`ctx.device().create_qp(..)`); nothing
    /// that needs `PASSIVE_LEVEL` may run while it lives.
    pub fn device(&self) -> Raised<'_> {
        Raised {
            device: &*self.device,
            platform: self.platform,
            old: self.platform.raise_to_dispatch(),
        }
    }

    /// The device's doorbells, unraised: the contract allows them at any
    /// IRQL up to `DISPATCH_LEVEL` (they take no lock), and the post path
    /// rings one per post.
    pub fn doorbells(&self) -> &dyn Doorbells {
        &*self.device
    }

    /// The device's caps.
    pub fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    /// The platform.
    pub fn platform(&self) -> &'static dyn Platform {
        self.platform
    }

    /// Objects still registered in the routing tables (zero once every
    /// queue, connector and listener is closed).
    pub fn routed_objects(&self) -> usize {
        self.cqs.len() + self.srqs.len() + self.qps.len() + self.conns.len() + self.listeners.len()
    }
}

/// The device, borrowed with the thread at `DISPATCH_LEVEL`
/// ([`DeviceContext::device`]); dropping it restores the caller's IRQL.
pub struct Raised<'a> {
    device: &'a dyn Device,
    platform: &'static dyn Platform,
    old: Irql,
}

impl<'a> Deref for Raised<'a> {
    type Target = dyn Device + 'a;

    fn deref(&self) -> &Self::Target {
        self.device
    }
}

impl Drop for Raised<'_> {
    fn drop(&mut self) {
        self.platform.lower_irql(self.old);
    }
}

impl fmt::Debug for Raised<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Raised")
            .field("old", &self.old)
            .finish_non_exhaustive()
    }
}

impl Drop for DeviceContext {
    fn drop(&mut self) {
        self.detach();
    }
}

impl fmt::Debug for DeviceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceContext")
            .field("caps", &self.caps)
            .field("attached", &self.attached.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Device events: look the object up (a clone keeps its memory alive for
/// the duration) and let its module handle the event. Each lookup's clone
/// is dropped at the end of the arm, outside any table lock.
impl DeviceEvents for DeviceContext {
    fn cq_event(&self, cqn: Cqn, overflow: bool) {
        self.as_dpc(|| {
            if let Some(cq) = self.cqs.get(cqn) {
                cq::on_device_event(&cq, overflow);
            }
        });
    }

    fn srq_limit(&self, srqn: Srqn) {
        self.as_dpc(|| {
            if let Some(srq) = self.srqs.get(srqn) {
                srq::on_limit(&srq);
            }
        });
    }

    fn qp_error(&self, qpn: Qpn) {
        self.as_dpc(|| {
            if let Some(qp) = self.qps.get(qpn) {
                qp::on_error(&qp);
            }
        });
    }

    fn cm_event(&self, event: CmEvent<'_>) {
        self.as_dpc(|| self.on_cm_event(event));
    }
}

impl DeviceContext {
    /// Runs a device event handler at `DISPATCH_LEVEL`, where a DPC runs
    /// it on Windows, so the platform's checker holds event paths (and the
    /// consumer callbacks they make) to the DISPATCH_LEVEL rules.
    fn as_dpc(&self, handler: impl FnOnce()) {
        let old = self.platform.raise_to_dispatch();
        handler();
        self.platform.lower_irql(old);
    }

    fn on_cm_event(&self, event: CmEvent<'_>) {
        match event {
            CmEvent::ConnectRequest {
                listen_id,
                conn_id,
                info,
                private_data,
            } => match self.listeners.get(listen_id) {
                Some(l) => listener::on_connect_request(&l, conn_id, &info, private_data),
                // Nobody listens any more: refuse.
                None => self.device().cm_release(conn_id),
            },
            CmEvent::Replied { conn_id, .. }
            | CmEvent::Rejected { conn_id, .. }
            | CmEvent::Established { conn_id }
            | CmEvent::Disconnected { conn_id }
            | CmEvent::DisconnectDone { conn_id }
            | CmEvent::Failed { conn_id, .. } => {
                if let Some(c) = self.conns.get(conn_id) {
                    connector::on_cm_event(&c, &event);
                }
            }
        }
    }
}

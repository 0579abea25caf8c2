//! Listeners: `NdkListen`, `NdkGetLocalAddress`, `NdkControlConnectEvents`
//! and the connect event that hands the consumer a new inbound connector.
//!
//! Closing a listener stops it at once (no new connect events), but the
//! close completes only after every connector it delivered has closed (they
//! share its address). While paused, the device refuses connect requests as
//! if nobody listened.

use core::ffi::c_void;
use core::net::SocketAddr;

use hwq::device::ConnectionInfo;
use hwq::{ConnId, ListenId, TryArc};
use ndkpi::{
    NDK_FN_CONNECT_EVENT_CALLBACK, NDK_LISTENER, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_PARAMETER,
};

use crate::abi::{self, NdkCell, NdkObject};
use crate::adapter::Adapter;
use crate::callout::{self, Context};
use crate::connector::Connector;
use crate::lock::SpinLock;
use crate::object::{Busy, Dep, Life, Object};
use crate::platform::{LockClass, Platform};
use crate::pool::{self, Charge, tags};
use crate::status;

static STATE_LOCK: LockClass = LockClass::new("listener.state");

#[derive(Debug, Default)]
struct ListenState {
    /// Device listener id and bound address, once listening.
    bound: Option<(ListenId, SocketAddr)>,
    paused: bool,
    stopped: bool,
}

/// A listener.
#[repr(C)]
pub struct Listener {
    ndk: NdkCell<NDK_LISTENER>,
    life: Life,
    adapter: Dep<Adapter>,
    callback: NDK_FN_CONNECT_EVENT_CALLBACK,
    context: Context,
    state: SpinLock<ListenState>,
    _charge: Charge,
}

impl Object for Listener {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.adapter.get().platform()
    }

    /// NDK: on close, stop accepting new connections immediately.
    fn on_close(&self) {
        let bound = {
            let mut s = self.state.lock();
            s.stopped = true;
            s.bound
        };
        if let Some((id, _)) = bound {
            let ctx = self.adapter.get().ctx();
            ctx.device().cm_stop_listener(id);
            drop(ctx.listeners.remove(id));
        }
    }

    fn teardown(&self) {}

    fn release_antecedents(&self) {
        self.adapter.release();
    }
}

impl core::fmt::Debug for Listener {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Listener")
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl Listener {
    pub(crate) fn create(
        adapter: &Adapter,
        callback: NDK_FN_CONNECT_EVENT_CALLBACK,
        context: *mut c_void,
    ) -> Result<TryArc<Self>, NTSTATUS> {
        if callback.is_none() {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let platform = adapter.platform();
        pool::try_arc(platform, tags::LISTENER, |charge| Self {
            ndk: NdkCell::new(Listener::ndk(adapter.version())),
            life: Life::new(platform),
            adapter: Dep::new(&abi::arc(adapter)),
            callback,
            context: Context::new(context),
            state: SpinLock::new(platform, &STATE_LOCK, ListenState::default()),
            _charge: charge,
        })
        .map_err(status::alloc_error)
    }

    /// The adapter.
    pub fn adapter(&self) -> &TryArc<Adapter> {
        self.adapter.get()
    }

    /// The address it listens on: once listening, until closed.
    pub(crate) fn bound_address(&self) -> Option<SocketAddr> {
        self.state.lock().bound.map(|(_, at)| at)
    }

    /// The address it listens on, until it stops (closing).
    pub(crate) fn listening_address(&self) -> Option<SocketAddr> {
        let s = self.state.lock();
        s.bound.filter(|_| !s.stopped).map(|(_, at)| at)
    }

    /// `NdkListen`.
    pub(crate) fn listen(&self, addr: SocketAddr) -> Result<(), NTSTATUS> {
        let ctx = self.adapter.get().ctx();
        let paused = {
            let s = self.state.lock();
            if s.bound.is_some() || s.stopped {
                return Err(STATUS_INVALID_DEVICE_STATE);
            }
            s.paused
        };
        let me = abi::arc(self);
        let mut bound = None;
        // Under the table lock, so a connect request for the new listener
        // cannot miss it.
        ctx.listeners.insert_with(
            || {
                let (id, at) = ctx.device().cm_listen(addr).map_err(status::device_error)?;
                bound = Some((id, at));
                Ok((id, me))
            },
            || STATUS_INSUFFICIENT_RESOURCES,
        )?;
        let Some((id, at)) = bound else {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        };
        self.state.lock().bound = Some((id, at));
        if paused {
            ctx.device().cm_pause_listener(id, true);
        }
        Ok(())
    }

    /// `NdkControlConnectEvents`.
    pub(crate) fn control(&self, pause: bool) {
        let bound = {
            let mut s = self.state.lock();
            s.paused = pause;
            s.bound
        };
        if let Some((id, _)) = bound {
            self.adapter
                .get()
                .ctx()
                .device()
                .cm_pause_listener(id, pause);
        }
    }
}

/// A connect request arrived: make a connector for it and hand it to the
/// consumer, or refuse it if the listener is closing, paused or out of
/// memory.
pub(crate) fn on_connect_request(
    listener: &TryArc<Listener>,
    conn_id: ConnId,
    info: &ConnectionInfo,
    private_data: &[u8],
) {
    let ctx = listener.adapter.get().ctx();
    let Some(busy) = Busy::enter(listener) else {
        ctx.device().cm_release(conn_id);
        return;
    };
    if listener.state.lock().paused {
        ctx.device().cm_release(conn_id);
        return;
    }
    let Ok(connector) = Connector::inbound(listener, conn_id, info, private_data) else {
        ctx.device().cm_release(conn_id);
        return;
    };
    // The consumer owns the new connector's reference from here on.
    callout::connect_event(
        listener.adapter.get().platform(),
        listener.callback,
        listener.context,
        connector,
    );
    drop(busy);
}

//! The miniport edge of the MUX: the virtual miniport driver (V)'s
//! handlers, which [`super::entry`] registers (NDIS 6.50, see
//! `ndis::version`, `NDIS_INTERMEDIATE_DRIVER`) and calls with checked
//! references.
//!
//! NDIS calls `MiniportSetOptions` after registration, where the NDK
//! provider characteristics are registered. V is never root-enumerated:
//! NDIS calls `MiniportInitializeEx` only after the protocol edge asked for
//! the device instance (`NdisIMInitializeDeviceInstanceEx`), with the
//! pairing in `IMDeviceInstanceContext` ([`super::adapter`]). Sends and
//! returns pass through to the binding ([`super::passthrough`]); pause
//! pends until every NBL of V's is back (the MUX sample's `miniport.c`,
//! plus that NDIS rule).

use alloc::boxed::Box;

use hwq::TryArc;
use ndis::{NDIS_DEVICE_PNP_EVENT, NDIS_MINIPORT_INIT_PARAMETERS};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_FAILURE, NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS, PVOID};

use super::adapter::Adapter;
use super::kit::ndis::{self as kit_ndis, AdapterHandle};
use super::kit::oid::OidRequest;
use super::log::{log_error, log_info};
use super::mux::Mux;
use super::oid;

/// `MiniportSetOptions` registered the NDK provider with `status`.
pub fn options_registered(status: NDIS_STATUS) {
    if status != NDIS_STATUS_SUCCESS {
        log_error!(
            "rsndk: NdisSetOptionalHandlers (NDK) failed: {:#010x}",
            status as u32
        );
    }
}

/// `MiniportInitializeEx` (`PASSIVE_LEVEL`): V over the pairing `mux`
/// (its `IMDeviceInstanceContext`); the adapter NDIS keeps as V's context
/// until `MiniportHaltEx`.
pub fn initialize(
    handle: AdapterHandle,
    mux: Option<TryArc<Mux>>,
    params: &NDIS_MINIPORT_INIT_PARAMETERS,
) -> Result<Box<Adapter>, NDIS_STATUS> {
    let Some(mux) = mux else {
        // V is only ever initialised by the protocol edge.
        log_error!("rsndk: MiniportInitializeEx without an IM device instance context");
        return Err(NDIS_STATUS_FAILURE);
    };
    let result = Adapter::initialize(handle, &mux, params);
    match &result {
        Ok(adapter) => log_info!("rsndk: adapter initialised ({:?})", adapter.config),
        Err(status) => log_error!(
            "rsndk: MiniportInitializeEx failed: {:#010x}",
            *status as u32
        ),
    }
    result
}

/// `MiniportPause`: V stops taking sends and indicating receives; pends
/// until every NBL of V's is back (the last one completes the pause).
pub fn pause(adapter: &Adapter) -> NDIS_STATUS {
    if adapter.mux().virt.gate.pause() {
        NDIS_STATUS_SUCCESS
    } else {
        NDIS_STATUS_PENDING
    }
}

/// `MiniportRestart`: V runs; P's link state (which may have changed
/// since the general attributes gave it) is indicated up.
pub fn restart(adapter: &Adapter) -> NDIS_STATUS {
    let mux = adapter.mux();
    mux.virt.gate.restart();
    mux.virt
        .started
        .store(true, core::sync::atomic::Ordering::SeqCst);
    mux.indicate_link_state();
    NDIS_STATUS_SUCCESS
}

/// `MiniportOidRequest`.
pub fn oid_request(adapter: &Adapter, request: OidRequest) -> NDIS_STATUS {
    oid::handle(adapter, request)
}

/// `MiniportCancelSend`: V queues nothing; the cancel goes down to P (the
/// sample's `MPCancelSendNetBufferLists`).
pub fn cancel_send(adapter: &Adapter, cancel_id: PVOID) {
    if let Some(binding) = adapter.mux().binding.handle() {
        kit_ndis::cancel_sends(binding, cancel_id);
    }
}

/// `MiniportDevicePnPEventNotify`: logged only (a virtual device).
pub fn device_pnp_event(code: NDIS_DEVICE_PNP_EVENT) {
    log_info!("rsndk: device PnP event {code}");
}

/// `MiniportCancelOidRequest` (`<= DISPATCH_LEVEL`): a request V
/// forwarded to P is cancelled at P, and completes when P completes it;
/// nothing else pends.
pub fn cancel_oid_request(adapter: &Adapter, request_id: PVOID) {
    adapter
        .forward
        .cancel(request_id, adapter.mux().binding.handle());
}

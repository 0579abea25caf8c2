//! The miniport edge of the MUX: the virtual miniport driver (V), its
//! characteristics and handlers.
//!
//! Registration (`NdisMRegisterMiniportDriver`, from `DriverEntry`)
//! declares NDIS 6.50 (see `ndis::version`) and `NDIS_INTERMEDIATE_DRIVER`;
//! NDIS then calls `MiniportSetOptions`, where the NDK provider
//! characteristics are registered. V is never root-enumerated: NDIS calls
//! `MiniportInitializeEx` only after the protocol edge asked for the
//! device instance (`NdisIMInitializeDeviceInstanceEx`), with the pairing
//! in `IMDeviceInstanceContext` ([`super::adapter`]). Sends and returns
//! pass through to the binding ([`super::passthrough`]); pause pends until
//! every NBL of V's is back (the MUX sample's `miniport.c`, plus that NDIS
//! rule).

use alloc::boxed::Box;
use core::ptr::{self, NonNull};

use ndis::{
    DRIVER_OBJECT, NDIS_DEVICE_PNP_EVENT, NDIS_HALT_ACTION, NDIS_HANDLE, NDIS_INTERMEDIATE_DRIVER,
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS, NDIS_MINIPORT_INIT_PARAMETERS,
    NDIS_MINIPORT_PAUSE_PARAMETERS, NDIS_MINIPORT_RESTART_PARAMETERS, NDIS_OID_REQUEST,
    NDIS_PORT_NUMBER, NDIS_SHUTDOWN_ACTION, NET_BUFFER_LIST, NET_DEVICE_PNP_EVENT,
    NdisMDeregisterMiniportDriver, NdisMRegisterMiniportDriver, UNICODE_STRING,
};
use ndkpi::{BOOLEAN, NDIS_STATUS, NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS, PVOID, ULONG};

use super::adapter::Adapter;
use super::log::{log_error, log_info};
use super::{ndk, oid, passthrough};

/// rsndk's own version, reported in the characteristics.
const DRIVER_MAJOR: u8 = 0;
const DRIVER_MINOR: u8 = 1;

/// Registers the miniport driver (`DriverEntry`, `PASSIVE_LEVEL`); the
/// driver handle on success.
///
/// # Safety
/// `driver` and `registry_path` are `DriverEntry`'s arguments.
pub unsafe fn register(
    driver: *mut DRIVER_OBJECT,
    registry_path: *mut UNICODE_STRING,
) -> Result<NDIS_HANDLE, NDIS_STATUS> {
    let mut characteristics = NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
        SetOptionsHandler: Some(set_options),
        InitializeHandlerEx: Some(initialize),
        HaltHandlerEx: Some(halt),
        UnloadHandler: Some(unload),
        PauseHandler: Some(pause),
        RestartHandler: Some(restart),
        OidRequestHandler: Some(oid_request),
        SendNetBufferListsHandler: Some(send_net_buffer_lists),
        ReturnNetBufferListsHandler: Some(return_net_buffer_lists),
        CancelSendHandler: Some(cancel_send),
        CheckForHangHandlerEx: None,
        ResetHandlerEx: Some(reset),
        DevicePnPEventNotifyHandler: Some(device_pnp_event_notify),
        ShutdownHandlerEx: Some(shutdown),
        CancelOidRequestHandler: Some(cancel_oid_request),
        Flags: NDIS_INTERMEDIATE_DRIVER,
        ..NDIS_MINIPORT_DRIVER_CHARACTERISTICS::new(DRIVER_MAJOR, DRIVER_MINOR)
    };
    super::adapter::event_log::set_driver_object(driver);
    let mut handle: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: DriverEntry's objects; revision-2 characteristics that NDIS
    // copies; a valid out-pointer.
    let status = unsafe {
        NdisMRegisterMiniportDriver(
            driver,
            registry_path,
            ptr::null_mut(),
            &raw mut characteristics,
            &raw mut handle,
        )
    };
    if status == NDIS_STATUS_SUCCESS {
        Ok(handle)
    } else {
        Err(status)
    }
}

/// The adapter behind an NDIS adapter context.
///
/// # Safety
/// `context` is the context `initialize` registered, not yet halted.
unsafe fn adapter<'a>(context: NDIS_HANDLE) -> &'a Adapter {
    // SAFETY: per contract, a live `Box<Adapter>`'s address.
    unsafe { &*context.cast::<Adapter>() }
}

/// `MiniportSetOptions`: register the NDK provider.
unsafe extern "win64" fn set_options(
    driver_handle: NDIS_HANDLE,
    _context: NDIS_HANDLE,
) -> NDIS_STATUS {
    let status = ndk::register(driver_handle);
    if status != NDIS_STATUS_SUCCESS {
        log_error!(
            "rsndk: NdisSetOptionalHandlers (NDK) failed: {:#010x}",
            status as u32
        );
    }
    status
}

/// `MiniportInitializeEx`.
unsafe extern "win64" fn initialize(
    handle: NDIS_HANDLE,
    _driver_context: NDIS_HANDLE,
    params: *mut NDIS_MINIPORT_INIT_PARAMETERS,
) -> NDIS_STATUS {
    if params.is_null() {
        return ndkpi::NDIS_STATUS_FAILURE;
    }
    // SAFETY: NDIS's parameters, valid for the call.
    let params = unsafe { &*params };
    match Adapter::initialize(handle, params) {
        Ok(adapter) => {
            log_info!("rsndk: adapter initialised ({:?})", adapter.config);
            // NDIS owns the context until MiniportHaltEx gives it back.
            let _ = Box::into_raw(adapter);
            NDIS_STATUS_SUCCESS
        }
        Err(status) => {
            log_error!(
                "rsndk: MiniportInitializeEx failed: {:#010x}",
                status as u32
            );
            status
        }
    }
}

/// `MiniportHaltEx`.
unsafe extern "win64" fn halt(context: NDIS_HANDLE, _action: NDIS_HALT_ACTION) {
    // SAFETY: the context is the box `initialize` leaked; NDIS makes no
    // other call on the adapter during or after halt.
    let mut adapter = unsafe { Box::from_raw(context.cast::<Adapter>()) };
    adapter.halt();
}

/// `MiniportDriverUnload`: deregister the protocol, then the miniport
/// (the sample's `MPUnload`), and free the driver's globals.
unsafe extern "win64" fn unload(_driver: *mut DRIVER_OBJECT) {
    super::protocol::deregister();
    if let Some(handle) = super::take_driver_handle() {
        // SAFETY: PASSIVE_LEVEL; registered in DriverEntry, every adapter
        // halted (NDIS unloads only then).
        unsafe { NdisMDeregisterMiniportDriver(handle) };
    }
    super::free_platform();
    super::adapter::event_log::set_driver_object(ptr::null_mut());
}

/// `MiniportPause`: V stops taking sends and indicating receives; pends
/// until every NBL of V's is back (the last one completes the pause).
unsafe extern "win64" fn pause(
    context: NDIS_HANDLE,
    _params: *mut NDIS_MINIPORT_PAUSE_PARAMETERS,
) -> NDIS_STATUS {
    // SAFETY: a live adapter context.
    if unsafe { adapter(context) }.mux().virt.gate.pause() {
        NDIS_STATUS_SUCCESS
    } else {
        NDIS_STATUS_PENDING
    }
}

/// `MiniportRestart`: V runs; P's link state (which may have changed
/// since the general attributes gave it) is indicated up.
unsafe extern "win64" fn restart(
    context: NDIS_HANDLE,
    _params: *mut NDIS_MINIPORT_RESTART_PARAMETERS,
) -> NDIS_STATUS {
    // SAFETY: a live adapter context.
    let mux = unsafe { adapter(context) }.mux();
    mux.virt.gate.restart();
    mux.virt
        .started
        .store(true, core::sync::atomic::Ordering::SeqCst);
    mux.indicate_link_state();
    NDIS_STATUS_SUCCESS
}

/// `MiniportOidRequest`.
unsafe extern "win64" fn oid_request(
    context: NDIS_HANDLE,
    request: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS {
    let Some(request) = NonNull::new(request) else {
        return ndkpi::NDIS_STATUS_INVALID_PARAMETER;
    };
    // SAFETY: a live adapter context.
    let adapter = unsafe { adapter(context) };
    // SAFETY: NDIS's request, ours until completed (here, or by the
    // forwarding's completion when this returns NDIS_STATUS_PENDING).
    unsafe { oid::handle(adapter, request) }
}

/// `MiniportSendNetBufferLists`: down the binding to P.
unsafe extern "win64" fn send_net_buffer_lists(
    context: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    port: NDIS_PORT_NUMBER,
    flags: ULONG,
) {
    let Some(lists) = NonNull::new(lists) else {
        return;
    };
    // SAFETY: a live adapter context.
    let adapter = unsafe { adapter(context) };
    // SAFETY: V's handle; the chain NDIS handed V.
    unsafe { passthrough::send(adapter.mux(), adapter.handle, lists, port, flags) };
}

/// `MiniportReturnNetBufferLists`: TCP/IP is done with received NBLs; they
/// go back to P.
unsafe extern "win64" fn return_net_buffer_lists(
    context: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    flags: ULONG,
) {
    let Some(lists) = NonNull::new(lists) else {
        return;
    };
    // SAFETY: a live adapter context.
    let adapter = unsafe { adapter(context) };
    // SAFETY: NBLs V indicated up and TCP/IP returns once.
    unsafe { passthrough::return_lists(adapter.mux(), lists, flags) };
}

/// `MiniportCancelSend`: V queues nothing; the cancel goes down to P (the
/// sample's `MPCancelSendNetBufferLists`).
unsafe extern "win64" fn cancel_send(context: NDIS_HANDLE, cancel_id: PVOID) {
    // SAFETY: a live adapter context.
    let adapter = unsafe { adapter(context) };
    // SAFETY: <= DISPATCH_LEVEL; the open binding (V's halt precedes the
    // close); an identifier NDIS gave.
    unsafe { ndis::NdisCancelSendNetBufferLists(adapter.mux().binding.handle(), cancel_id) };
}

/// `MiniportResetEx`: no hardware to reset (an intermediate driver's
/// virtual miniport is never reset by NDIS; P's own reset is P's).
unsafe extern "win64" fn reset(
    _context: NDIS_HANDLE,
    addressing_reset: *mut BOOLEAN,
) -> NDIS_STATUS {
    if !addressing_reset.is_null() {
        // SAFETY: NDIS's out-parameter.
        unsafe { addressing_reset.write(0) };
    }
    NDIS_STATUS_SUCCESS
}

/// `MiniportDevicePnPEventNotify`: logged only (a virtual device).
unsafe extern "win64" fn device_pnp_event_notify(
    _context: NDIS_HANDLE,
    event: *mut NET_DEVICE_PNP_EVENT,
) {
    if !event.is_null() {
        // SAFETY: NDIS's event, valid for the call.
        let code: NDIS_DEVICE_PNP_EVENT = unsafe { (*event).DevicePnPEvent };
        log_info!("rsndk: device PnP event {code}");
    }
}

/// `MiniportShutdownEx`: may run at HIGH_LEVEL during a bug check, so it
/// touches nothing (there is no hardware to quiesce).
unsafe extern "win64" fn shutdown(_context: NDIS_HANDLE, _action: NDIS_SHUTDOWN_ACTION) {}

/// `MiniportCancelOidRequest` (`<= DISPATCH_LEVEL`): a request V
/// forwarded to P is cancelled at P, and completes when P completes it;
/// nothing else pends.
unsafe extern "win64" fn cancel_oid_request(context: NDIS_HANDLE, request_id: PVOID) {
    // SAFETY: NDIS passes the adapter context V registered, V not halted
    // (NDIS halts V only after its OID requests completed).
    let adapter = unsafe { Adapter::from_context(context) };
    adapter.forward.cancel(request_id);
}

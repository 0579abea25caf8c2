//! The NDIS miniport driver: its characteristics and handlers.
//!
//! Registration (`NdisMRegisterMiniportDriver`, from `DriverEntry`)
//! declares NDIS 6.50 (see `ndis::version`); NDIS then calls
//! `MiniportSetOptions`, where the NDK provider characteristics are
//! registered, and `MiniportInitializeEx` per adapter, where the adapter
//! sets its registration, general and NDK attributes.

use alloc::boxed::Box;
use core::ptr;
use core::sync::atomic::Ordering;

use ndis::{
    DRIVER_OBJECT, NDIS_DEVICE_PNP_EVENT, NDIS_HALT_ACTION, NDIS_HANDLE,
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS, NDIS_MINIPORT_INIT_PARAMETERS,
    NDIS_MINIPORT_PAUSE_PARAMETERS, NDIS_MINIPORT_RESTART_PARAMETERS, NDIS_OID_REQUEST,
    NDIS_PORT_NUMBER, NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL, NDIS_SEND_FLAGS_DISPATCH_LEVEL,
    NDIS_SHUTDOWN_ACTION, NDIS_STATUS_PAUSED, NET_BUFFER_LIST, NET_BUFFER_LIST_NEXT_OFFSET,
    NET_BUFFER_LIST_STATUS_OFFSET, NET_DEVICE_PNP_EVENT, NdisMDeregisterMiniportDriver,
    NdisMRegisterMiniportDriver, NdisMSendNetBufferListsComplete, UNICODE_STRING,
};
use ndkpi::{BOOLEAN, NDIS_STATUS, NDIS_STATUS_SUCCESS, PVOID, ULONG};

use super::adapter::Adapter;
use super::log::{log_error, log_info};
use super::{ndk, oid};

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
        ..NDIS_MINIPORT_DRIVER_CHARACTERISTICS::new(DRIVER_MAJOR, DRIVER_MINOR)
    };
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

/// `MiniportDriverUnload`: deregister and free the driver's globals.
unsafe extern "win64" fn unload(_driver: *mut DRIVER_OBJECT) {
    if let Some(handle) = super::take_driver_handle() {
        // SAFETY: PASSIVE_LEVEL; registered in DriverEntry, every adapter
        // halted (NDIS unloads only then).
        unsafe { NdisMDeregisterMiniportDriver(handle) };
    }
    super::free_platform();
}

/// `MiniportPause`: nothing is pending (sends complete at once).
unsafe extern "win64" fn pause(
    context: NDIS_HANDLE,
    _params: *mut NDIS_MINIPORT_PAUSE_PARAMETERS,
) -> NDIS_STATUS {
    // SAFETY: a live adapter context.
    unsafe { adapter(context) }
        .paused
        .store(true, Ordering::Release);
    NDIS_STATUS_SUCCESS
}

/// `MiniportRestart`.
unsafe extern "win64" fn restart(
    context: NDIS_HANDLE,
    _params: *mut NDIS_MINIPORT_RESTART_PARAMETERS,
) -> NDIS_STATUS {
    // SAFETY: a live adapter context.
    unsafe { adapter(context) }
        .paused
        .store(false, Ordering::Release);
    NDIS_STATUS_SUCCESS
}

/// `MiniportOidRequest`.
unsafe extern "win64" fn oid_request(
    context: NDIS_HANDLE,
    request: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS {
    if request.is_null() {
        return ndkpi::NDIS_STATUS_INVALID_PARAMETER;
    }
    // SAFETY: a live adapter context.
    let adapter = unsafe { adapter(context) };
    // SAFETY: NDIS's request, ours until we return (nothing pends).
    let request = unsafe { &mut *request };
    oid::handle(adapter, request)
}

/// `MiniportSendNetBufferLists`: every list completes at once, without
/// being transmitted (RoCEv2 traffic does not use this path; see
/// [`super::adapter`]).
unsafe extern "win64" fn send_net_buffer_lists(
    context: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    _port: NDIS_PORT_NUMBER,
    flags: ULONG,
) {
    // SAFETY: a live adapter context.
    let adapter = unsafe { adapter(context) };
    let status = if adapter.paused.load(Ordering::Acquire) {
        NDIS_STATUS_PAUSED
    } else {
        NDIS_STATUS_SUCCESS
    };
    let mut at = lists.cast::<u8>();
    let mut count = 0u64;
    while !at.is_null() {
        count += 1;
        // NET_BUFFER_LISTs are pointer-aligned (16 on x64), so both fields
        // are naturally aligned.
        #[allow(clippy::cast_ptr_alignment, reason = "NBLs are 16-byte aligned")]
        let (status_field, next_field) = (
            at.wrapping_add(NET_BUFFER_LIST_STATUS_OFFSET)
                .cast::<NDIS_STATUS>(),
            at.wrapping_add(NET_BUFFER_LIST_NEXT_OFFSET)
                .cast::<*mut u8>(),
        );
        // SAFETY: a list of the chain NDIS handed us; `Status` is an
        // NDIS_STATUS at its fixed x64 offset.
        unsafe { status_field.write(status) };
        // SAFETY: `Next` is the pointer at offset 0 of the same list.
        at = unsafe { next_field.read() };
    }
    adapter.send_discards.fetch_add(count, Ordering::Relaxed);
    let complete_flags = if flags & NDIS_SEND_FLAGS_DISPATCH_LEVEL != 0 {
        NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    if !lists.is_null() {
        // SAFETY: the chain NDIS handed us, completed once, status set.
        unsafe { NdisMSendNetBufferListsComplete(adapter.handle, lists, complete_flags) };
    }
}

/// `MiniportReturnNetBufferLists`: never called (nothing is indicated).
unsafe extern "win64" fn return_net_buffer_lists(
    _context: NDIS_HANDLE,
    _lists: *mut NET_BUFFER_LIST,
    _flags: ULONG,
) {
}

/// `MiniportCancelSend`: nothing is queued to cancel.
unsafe extern "win64" fn cancel_send(_context: NDIS_HANDLE, _cancel_id: PVOID) {}

/// `MiniportResetEx`: no hardware to reset.
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

/// `MiniportCancelOidRequest`: no request ever pends.
unsafe extern "win64" fn cancel_oid_request(_context: NDIS_HANDLE, _request_id: PVOID) {}

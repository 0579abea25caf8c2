//! The protocol edge of the MUX: rsndk's NDIS protocol driver (`rsndkp`,
//! the service name of the protocol INF), registered in `DriverEntry` and
//! tied to the miniport driver with `NdisIMAssociateMiniport`, and its
//! handlers. Each handler turns NDIS's raw pointers into checked
//! references once and hands over to the file that does the work:
//!
//! * bind / unbind and V's IM device instance: [`bind`] (the MUX
//!   sample's `PtBindAdapter`, `PtBootStrapVElans`, `PtUnbindAdapter`,
//!   `PtStopVElan`);
//! * the open, pause/restart, requests and close on P:
//!   [`super::binding`];
//! * status: [`super::mux`] (`NDIS_STATUS_LINK_STATE` passes up on V and
//!   to the RNIC's L2 port);
//! * the data path: [`super::passthrough`];
//! * V's OID requests forwarded to P complete through [`oid_forward`].
//!
//! Call sequences (all at PASSIVE_LEVEL unless noted):
//!
//! ```text
//! bind:    ProtocolBindAdapterEx -> NdisOpenAdapterEx [-> OpenAdapterCompleteEx]
//!          -> UpperBindings -> NdisIMInitializeDeviceInstanceEx
//!          -> (NDIS, any thread) V's MiniportInitializeEx (IMDeviceInstanceContext)
//!          -> NetEventRestart (binding runs)
//! unbind:  (NDIS pauses the binding: NetEventPause) ProtocolUnbindAdapterEx
//!          -> NDK disabled, NDK adapters closed -> NdisIMCancelInitializeDeviceInstance
//!             or NdisIMDeInitializeDeviceInstance -> V's pause + MiniportHaltEx
//!          -> filter 0, multicast list empty, requests waited out
//!          -> NdisCloseAdapterEx [-> CloseAdapterCompleteEx]
//! data:    (<= DISPATCH) V send -> NdisSendNetBufferLists -> SendNetBufferListsComplete
//!          -> NdisMSendNetBufferListsComplete;  ReceiveNetBufferLists -> L2 port
//!          or NdisMIndicateReceiveNetBufferLists -> V's ReturnNetBufferLists
//!          -> NdisReturnNetBufferLists
//! ```

// The C enum constants keep their C names (NetEventPause).
#![allow(non_upper_case_globals)]

pub mod bind;
pub mod oid_forward;
pub mod pause_gate;
pub mod rundown;
pub mod upper_bindings;

use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};

use ndis::{
    NDIS_BIND_PARAMETERS, NDIS_HANDLE, NDIS_OID_REQUEST, NDIS_PORT_NUMBER,
    NDIS_PROTOCOL_DRIVER_CHARACTERISTICS, NDIS_STATUS_INDICATION, NET_BUFFER_LIST,
    NET_PNP_EVENT_NOTIFICATION, NdisDeregisterProtocolDriver, NdisRegisterProtocolDriver,
    NetEventIMReEnableDevice, NetEventPause, NetEventReconfigure, NetEventRestart,
    NetEventSetPower, UNICODE_STRING, ascii_to_utf16,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_SUCCESS, ULONG};

use super::binding::OwnedRequest;
use super::mux::Mux;
use super::passthrough;

/// The protocol's name: the protocol INF's service (`rsndkp`).
static PROTOCOL_NAME: [u16; 6] = ascii_to_utf16(b"rsndkp");

/// `NdisRegisterProtocolDriver`'s handle, written by NDIS straight into
/// this slot (binds may start before the call returns).
static PROTOCOL_HANDLE: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// rsndk's own version, reported in the characteristics.
const DRIVER_MAJOR: u8 = 0;
const DRIVER_MINOR: u8 = 1;

/// The protocol driver handle (null before registration).
pub fn handle() -> NDIS_HANDLE {
    PROTOCOL_HANDLE.load(Ordering::Acquire)
}

/// Registers the protocol driver (`DriverEntry`, `PASSIVE_LEVEL`).
pub fn register() -> Result<NDIS_HANDLE, NDIS_STATUS> {
    let mut characteristics = NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
        BindAdapterHandlerEx: Some(bind_adapter),
        UnbindAdapterHandlerEx: Some(unbind_adapter),
        OpenAdapterCompleteHandlerEx: Some(open_adapter_complete),
        CloseAdapterCompleteHandlerEx: Some(close_adapter_complete),
        NetPnPEventHandler: Some(net_pnp_event),
        OidRequestCompleteHandler: Some(oid_request_complete),
        StatusHandlerEx: Some(status),
        ReceiveNetBufferListsHandler: Some(receive_net_buffer_lists),
        SendNetBufferListsCompleteHandler: Some(send_net_buffer_lists_complete),
        ..NDIS_PROTOCOL_DRIVER_CHARACTERISTICS::new(
            UNICODE_STRING::from_static(&PROTOCOL_NAME),
            DRIVER_MAJOR,
            DRIVER_MINOR,
        )
    };
    // SAFETY: PASSIVE_LEVEL in DriverEntry; revision-2 characteristics
    // NDIS copies (the name is static); the handle slot is a static.
    let status = unsafe {
        NdisRegisterProtocolDriver(
            ptr::null_mut(),
            &raw mut characteristics,
            PROTOCOL_HANDLE.as_ptr(),
        )
    };
    if status == NDIS_STATUS_SUCCESS {
        Ok(handle())
    } else {
        PROTOCOL_HANDLE.store(ptr::null_mut(), Ordering::Release);
        Err(status)
    }
}

/// Deregisters the protocol driver (unload, `PASSIVE_LEVEL`); NDIS unbinds
/// every binding first.
pub fn deregister() {
    let handle = PROTOCOL_HANDLE.swap(ptr::null_mut(), Ordering::AcqRel);
    if !handle.is_null() {
        // SAFETY: PASSIVE_LEVEL; registered in DriverEntry, deregistered
        // once (the slot is emptied atomically).
        unsafe { NdisDeregisterProtocolDriver(handle) };
    }
}

/// The pairing behind a protocol binding context.
///
/// # Safety
/// `context` is one NDIS passes to a protocol handler for a binding rsndk
/// opened: a live pairing until `ProtocolUnbindAdapterEx` returns.
unsafe fn mux<'a>(context: NDIS_HANDLE) -> &'a Mux {
    // SAFETY: a pairing `bind` leaked and the unbind has not freed
    // (this function's contract), which is what `from_context` asks.
    unsafe { Mux::from_context(context) }
}

/// `ProtocolBindAdapterEx` (`PASSIVE_LEVEL`).
unsafe extern "win64" fn bind_adapter(
    _driver_context: NDIS_HANDLE,
    bind_context: NDIS_HANDLE,
    params: *mut NDIS_BIND_PARAMETERS,
) -> NDIS_STATUS {
    if params.is_null() {
        return NDIS_STATUS_INVALID_PARAMETER;
    }
    // SAFETY: NDIS's parameters, valid for the call.
    let params = unsafe { &*params };
    bind::bind(bind_context, params)
}

/// `ProtocolUnbindAdapterEx` (`PASSIVE_LEVEL`): completes synchronously.
unsafe extern "win64" fn unbind_adapter(
    _unbind_context: NDIS_HANDLE,
    context: NDIS_HANDLE,
) -> NDIS_STATUS {
    let Some(mux) = NonNull::new(context.cast::<Mux>()) else {
        return NDIS_STATUS_INVALID_PARAMETER;
    };
    // SAFETY: the pairing `bind` leaked, not yet freed; NDIS makes no other
    // protocol call on this binding once the unbind returns.
    unsafe { bind::unbind(mux) }
}

/// `ProtocolOpenAdapterCompleteEx` (`PASSIVE_LEVEL`).
unsafe extern "win64" fn open_adapter_complete(context: NDIS_HANDLE, status: NDIS_STATUS) {
    // SAFETY: the context of the open that pended; the bind waits for this.
    unsafe { mux(context) }.binding.open_complete(status);
}

/// `ProtocolCloseAdapterCompleteEx` (`PASSIVE_LEVEL`).
unsafe extern "win64" fn close_adapter_complete(context: NDIS_HANDLE) {
    // SAFETY: the context of the close that pended; the unbind waits.
    unsafe { mux(context) }.binding.close_complete();
}

/// `ProtocolNetPnPEvent` (`PASSIVE_LEVEL`): the sample's `PtPNPHandler`.
/// Global events (reconfigure, re-enable) come without a binding.
unsafe extern "win64" fn net_pnp_event(
    context: NDIS_HANDLE,
    notification: *mut NET_PNP_EVENT_NOTIFICATION,
) -> NDIS_STATUS {
    if notification.is_null() {
        return NDIS_STATUS_INVALID_PARAMETER;
    }
    // SAFETY: NDIS's notification, valid for the call.
    let event = unsafe { &(*notification).NetPnPEvent };
    match event.NetEvent {
        NetEventReconfigure => {
            bind::bootstrap_all(None);
            NDIS_STATUS_SUCCESS
        }
        NetEventIMReEnableDevice => {
            let name = event.Buffer.cast::<UNICODE_STRING>();
            if name.is_null() || (event.BufferLength as usize) < size_of::<UNICODE_STRING>() {
                return NDIS_STATUS_INVALID_PARAMETER;
            }
            // SAFETY: NDIS's instance name (an NDIS_STRING), valid for the
            // call.
            bind::bootstrap_all(Some(unsafe { &*name }));
            NDIS_STATUS_SUCCESS
        }
        NetEventPause | NetEventRestart | NetEventSetPower if context.is_null() => {
            NDIS_STATUS_INVALID_PARAMETER
        }
        NetEventPause => {
            // SAFETY: a binding event carries that binding's context.
            unsafe { mux(context) }.binding.pause();
            NDIS_STATUS_SUCCESS
        }
        NetEventRestart => {
            // SAFETY: a binding event carries that binding's context (not
            // null: checked by the arm above), live until the unbind.
            unsafe { mux(context) }.binding.restart();
            NDIS_STATUS_SUCCESS
        }
        NetEventSetPower => {
            if event.Buffer.is_null() || (event.BufferLength as usize) < size_of::<i32>() {
                return NDIS_STATUS_INVALID_PARAMETER;
            }
            // SAFETY: an NDIS_DEVICE_POWER_STATE (checked size), valid for
            // the call.
            let state = unsafe { event.Buffer.cast::<i32>().read_unaligned() };
            // SAFETY: a binding event carries that binding's context (not
            // null: checked by the arm above), live until the unbind.
            let mux = unsafe { mux(context) };
            mux.binding.set_power(state);
            if mux.binding.is_powered() {
                // Back in D0: P may have changed its link meanwhile.
                mux.indicate_link_state();
            }
            NDIS_STATUS_SUCCESS
        }
        _ => NDIS_STATUS_SUCCESS,
    }
}

/// `ProtocolOidRequestComplete` (`<= DISPATCH_LEVEL`).
unsafe extern "win64" fn oid_request_complete(
    context: NDIS_HANDLE,
    request: *mut NDIS_OID_REQUEST,
    status: NDIS_STATUS,
) {
    let Some(request) = NonNull::new(request.cast::<OwnedRequest>()) else {
        return;
    };
    // SAFETY: the context of a binding with this request outstanding.
    let mux = unsafe { mux(context) };
    // SAFETY: every request rsndk issues on a binding is an OwnedRequest
    // (its NDIS_OID_REQUEST first) passed to `Binding::issue`, pending
    // until now.
    unsafe { mux.binding.request_complete(request, status) };
}

/// `ProtocolStatusEx` (`<= DISPATCH_LEVEL`).
unsafe extern "win64" fn status(context: NDIS_HANDLE, indication: *mut NDIS_STATUS_INDICATION) {
    if indication.is_null() {
        return;
    }
    // SAFETY: NDIS's indication, valid for the call.
    let indication = unsafe { &*indication };
    // SAFETY: a live binding's context.
    unsafe { mux(context) }.status(indication);
}

/// `ProtocolReceiveNetBufferLists` (`<= DISPATCH_LEVEL`).
unsafe extern "win64" fn receive_net_buffer_lists(
    context: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    port: NDIS_PORT_NUMBER,
    _count: ULONG,
    flags: ULONG,
) {
    let Some(lists) = NonNull::new(lists) else {
        return;
    };
    // SAFETY: a live binding's context.
    let mux = unsafe { mux(context) };
    // SAFETY: the chain is P's, lent or given per `flags` for the call.
    unsafe { passthrough::receive(mux, lists, port, flags) };
}

/// `ProtocolSendNetBufferListsComplete` (`<= DISPATCH_LEVEL`).
unsafe extern "win64" fn send_net_buffer_lists_complete(
    context: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    flags: ULONG,
) {
    let Some(lists) = NonNull::new(lists) else {
        return;
    };
    // SAFETY: a live binding's context.
    let mux = unsafe { mux(context) };
    // SAFETY: the chain holds NBLs rsndk sent on it, given back once.
    unsafe { passthrough::send_complete(mux, lists, flags) };
}

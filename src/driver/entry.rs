//! Where the kernel and NDIS call into the driver: `DriverEntry`, the
//! miniport, protocol and NDK handlers registered in their
//! characteristics, and unload (the top floor: it names every handler;
//! nothing names it). Each handler turns NDIS's raw pointers into checked
//! references and kit values once (the contexts the driver
//! handed NDIS back into its objects, NBL chains into [`NblChain`]s, OID
//! requests into [`OidRequest`]s) and calls the safe handler of the
//! module that does the work. Also the link glue a `no_std` image without
//! the WDK's libraries needs.

// The C enum constants keep their C names (NetEventPause).
#![allow(non_upper_case_globals)]

use alloc::boxed::Box;
use core::ffi::{c_char, c_int, c_void};
use core::ptr::{self, NonNull};
use core::sync::atomic::Ordering;

use hwq::TryArc;
use ndis::{
    DRIVER_OBJECT, NDIS_BIND_PARAMETERS, NDIS_DEVICE_PNP_EVENT, NDIS_HALT_ACTION, NDIS_HANDLE,
    NDIS_INTERMEDIATE_DRIVER, NDIS_LINK_STATE, NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    NDIS_MINIPORT_INIT_PARAMETERS, NDIS_MINIPORT_PAUSE_PARAMETERS,
    NDIS_MINIPORT_RESTART_PARAMETERS, NDIS_NDK_PROVIDER_CHARACTERISTICS, NDIS_OID_REQUEST,
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS, NDIS_PORT_NUMBER, NDIS_PROTOCOL_DRIVER_CHARACTERISTICS,
    NDIS_SHUTDOWN_ACTION, NDIS_STATUS_INDICATION, NDIS_STATUS_LINK_STATE, NET_BUFFER_LIST,
    NET_DEVICE_PNP_EVENT, NET_PNP_EVENT_NOTIFICATION, NdisDeregisterProtocolDriver,
    NdisIMAssociateMiniport, NdisMDeregisterMiniportDriver, NdisMRegisterMiniportDriver,
    NdisRegisterProtocolDriver, NdisSetOptionalHandlers, NetEventIMReEnableDevice, NetEventPause,
    NetEventReconfigure, NetEventRestart, NetEventSetPower, UNICODE_STRING, ascii_to_utf16,
};
use ndkpi::{
    BOOLEAN, NDIS_STATUS, NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_SUCCESS, NDK_ADAPTER,
    NTSTATUS, PVOID, STATUS_INSUFFICIENT_RESOURCES, STATUS_SUCCESS, ULONG,
};

use super::kit::memory::try_box;
use super::kit::nbl::NblChain;
use super::kit::ndis::{BindContext, DRIVER_HANDLE, DRIVER_OBJECT, Handle, PROTOCOL_HANDLE};
use super::kit::oid::{CompletedRequest, OidRequest};
use crate::driver::adapter::Adapter;
use crate::driver::dma::KernelDma;
use crate::driver::globals::PLATFORM;
use crate::driver::log::{log_error, log_info};
use crate::driver::mux::{Mux, Virtual};
use crate::driver::platform::{KernelPlatform, KernelSpinLocks};
use crate::driver::protocol::PnpEvent;
use crate::driver::{miniport, ndk, passthrough, protocol};

/// rsndk's own version, reported in both characteristics.
const DRIVER_MAJOR: u8 = 0;
const DRIVER_MINOR: u8 = 1;

/// The protocol's name: the protocol INF's service (`rsndkp`).
static PROTOCOL_NAME: [u16; 6] = ascii_to_utf16(b"rsndkp");

// ---------------------------------------------------------------------
// DriverEntry and unload.

/// The driver's entry point, called once by the I/O manager at
/// PASSIVE_LEVEL when `rsndk.sys` is loaded: builds the provider's
/// platform, registers the miniport driver (`NDIS_INTERMEDIATE_DRIVER`),
/// the protocol driver, and associates the two (`NdisIMAssociateMiniport`),
/// as the MUX sample's `DriverEntry`. A failed `DriverEntry` unloads the
/// image without calling any unload routine, so it undoes its own work.
///
/// # Safety
/// Only the kernel calls this, once per load, with `driver` pointing to
/// the driver object being initialised and `registry_path` to the driver's
/// service key; both stay valid for the call. Never called from Rust.
#[unsafe(
    // SAFETY: `DriverEntry` is the symbol named by the `/ENTRY:DriverEntry`
    // linker argument that wdk-build emits for WDM drivers. No other item in
    // this image exports that name, so the export cannot clash.
    export_name = "DriverEntry"
)]
pub unsafe extern "win64" fn driver_entry(
    driver: *mut DRIVER_OBJECT,
    registry_path: *mut UNICODE_STRING,
) -> NTSTATUS {
    // The device's locks are kernel spin locks from its first lock on
    // (`false` only for a second DriverEntry of this image, when they
    // already are).
    softrnic::sync::use_lock_ops(&KernelSpinLocks);
    let Some(dma) = KernelDma::new() else {
        return STATUS_INSUFFICIENT_RESOURCES;
    };
    let Ok(platform) = try_box(KernelPlatform::new(dma)) else {
        return STATUS_INSUFFICIENT_RESOURCES;
    };
    PLATFORM.install(platform);
    // SAFETY: DriverEntry's own arguments.
    let miniport_handle = match unsafe { register_miniport(driver, registry_path) } {
        Ok(handle) => handle,
        Err(status) => {
            log_error!(
                "rsndk: NdisMRegisterMiniportDriver failed: {:#010x}",
                status as u32
            );
            free_platform();
            return status;
        }
    };
    DRIVER_HANDLE.store(Handle::from_ndis(miniport_handle));
    let protocol_handle = match register_protocol() {
        Ok(handle) => handle,
        Err(status) => {
            log_error!(
                "rsndk: NdisRegisterProtocolDriver failed: {:#010x}",
                status as u32
            );
            if let Some(handle) = DRIVER_HANDLE.take() {
                // SAFETY: PASSIVE_LEVEL; registered above, no adapter yet
                // (V only comes up through the protocol edge).
                unsafe { NdisMDeregisterMiniportDriver(handle.raw()) };
            }
            free_platform();
            return status;
        }
    };
    // SAFETY: PASSIVE_LEVEL; both handles of this DriverEntry.
    unsafe { NdisIMAssociateMiniport(miniport_handle, protocol_handle) };
    log_info!("rsndk: intermediate driver registered (miniport and protocol rsndkp)");
    STATUS_SUCCESS
}

/// Frees the provider's platform (a failed `DriverEntry`, unload),
/// reporting pool the provider still has.
fn free_platform() {
    // SAFETY: called only where no user of the platform is left: a failed
    // DriverEntry (no handler ever ran) or unload (every adapter, hence
    // every provider object using it, is gone).
    let Some(platform) = (unsafe { PLATFORM.take() }) else {
        return;
    };
    let (blocks, bytes) = platform.pool_outstanding();
    if blocks != 0 {
        log_error!("rsndk: provider pool outstanding at unload: {blocks} blocks, {bytes} bytes");
    }
    drop(platform);
}

/// Registers the miniport driver (`DriverEntry`, `PASSIVE_LEVEL`); the
/// driver handle on success.
///
/// # Safety
/// `driver` and `registry_path` are `DriverEntry`'s arguments.
unsafe fn register_miniport(
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
    DRIVER_OBJECT.store(driver, Ordering::Release);
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

/// Registers the protocol driver (`DriverEntry`, `PASSIVE_LEVEL`).
fn register_protocol() -> Result<NDIS_HANDLE, NDIS_STATUS> {
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
            PROTOCOL_HANDLE.slot(),
        )
    };
    match PROTOCOL_HANDLE.load() {
        Some(handle) if status == NDIS_STATUS_SUCCESS => Ok(handle.raw()),
        _ => {
            PROTOCOL_HANDLE.store(None);
            Err(if status == NDIS_STATUS_SUCCESS {
                ndkpi::NDIS_STATUS_FAILURE
            } else {
                status
            })
        }
    }
}

/// `MiniportDriverUnload`: deregister the protocol, then the miniport
/// (the sample's `MPUnload`), and free the driver's globals.
unsafe extern "win64" fn unload(_driver: *mut DRIVER_OBJECT) {
    if let Some(handle) = PROTOCOL_HANDLE.take() {
        // SAFETY: PASSIVE_LEVEL; registered in DriverEntry, deregistered
        // once (the slot is emptied atomically); NDIS unbinds every
        // binding first.
        unsafe { NdisDeregisterProtocolDriver(handle.raw()) };
    }
    if let Some(handle) = DRIVER_HANDLE.take() {
        // SAFETY: PASSIVE_LEVEL; registered in DriverEntry, every adapter
        // halted (NDIS unloads only then).
        unsafe { NdisMDeregisterMiniportDriver(handle.raw()) };
    }
    free_platform();
    DRIVER_OBJECT.store(ptr::null_mut(), Ordering::Release);
}

// ---------------------------------------------------------------------
// The miniport handlers (V).

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
    let mut characteristics =
        NDIS_NDK_PROVIDER_CHARACTERISTICS::new(open_ndk_adapter, close_ndk_adapter);
    // SAFETY: PASSIVE_LEVEL inside MiniportSetOptions; NDIS copies the
    // characteristics (a header-prefixed structure) during the call.
    let status =
        unsafe { NdisSetOptionalHandlers(driver_handle, characteristics.as_optional_handlers()) };
    miniport::options_registered(status);
    status
}

/// `MiniportInitializeEx`.
unsafe extern "win64" fn initialize(
    handle: NDIS_HANDLE,
    _driver_context: NDIS_HANDLE,
    params: *mut NDIS_MINIPORT_INIT_PARAMETERS,
) -> NDIS_STATUS {
    let (Some(handle), Some(params)) = (Handle::from_ndis(handle), NonNull::new(params)) else {
        return ndkpi::NDIS_STATUS_FAILURE;
    };
    // SAFETY: NDIS's parameters, valid for the call.
    let params = unsafe { params.as_ref() };
    let mux = NonNull::new(params.IMDeviceInstanceContext.cast::<Mux>()).map(|mux| {
        // SAFETY: the context `NdisIMInitializeDeviceInstanceEx` was
        // given: the address of the pairing's TryArc (`bind`), whose
        // reference NDIS holds until the unbind, which waits for V's halt.
        unsafe { TryArc::clone_from_raw(mux.as_ptr()) }
    });
    match miniport::initialize(handle, mux, params) {
        // NDIS owns the context until MiniportHaltEx gives it back.
        Ok(adapter) => {
            let _ = Box::into_raw(adapter);
            NDIS_STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `MiniportHaltEx`.
unsafe extern "win64" fn halt(context: NDIS_HANDLE, _action: NDIS_HALT_ACTION) {
    // SAFETY: the context is the box `initialize` leaked; NDIS makes no
    // other call on the adapter during or after halt.
    let mut adapter = unsafe { Box::from_raw(context.cast::<Adapter>()) };
    adapter.halt();
}

/// `MiniportPause`.
unsafe extern "win64" fn pause(
    context: NDIS_HANDLE,
    _params: *mut NDIS_MINIPORT_PAUSE_PARAMETERS,
) -> NDIS_STATUS {
    // SAFETY: a live adapter context.
    miniport::pause(unsafe { adapter(context) })
}

/// `MiniportRestart`.
unsafe extern "win64" fn restart(
    context: NDIS_HANDLE,
    _params: *mut NDIS_MINIPORT_RESTART_PARAMETERS,
) -> NDIS_STATUS {
    // SAFETY: a live adapter context.
    miniport::restart(unsafe { adapter(context) })
}

/// `MiniportOidRequest`.
unsafe extern "win64" fn oid_request(
    context: NDIS_HANDLE,
    request: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS {
    let Some(request) = NonNull::new(request) else {
        return NDIS_STATUS_INVALID_PARAMETER;
    };
    // SAFETY: a live adapter context.
    let adapter = unsafe { adapter(context) };
    // NDIS's request, ours until completed (here, or by the forwarding's
    // completion when this returns NDIS_STATUS_PENDING).
    miniport::oid_request(adapter, OidRequest::new(request))
}

/// `MiniportSendNetBufferLists`.
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
    // SAFETY: the chain NDIS handed V, V's until it completes it.
    let chain = unsafe { NblChain::from_ndis(lists) };
    passthrough::send(adapter.mux(), adapter.handle, chain, port, flags);
}

/// `MiniportReturnNetBufferLists`.
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
    // SAFETY: NBLs V indicated up and TCP/IP returns once: V's again.
    let chain = unsafe { NblChain::from_ndis(lists) };
    passthrough::return_lists(adapter.mux(), chain, flags);
}

/// `MiniportCancelSend`.
unsafe extern "win64" fn cancel_send(context: NDIS_HANDLE, cancel_id: PVOID) {
    // SAFETY: a live adapter context.
    miniport::cancel_send(unsafe { adapter(context) }, cancel_id);
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

/// `MiniportDevicePnPEventNotify`.
unsafe extern "win64" fn device_pnp_event_notify(
    _context: NDIS_HANDLE,
    event: *mut NET_DEVICE_PNP_EVENT,
) {
    if !event.is_null() {
        // SAFETY: NDIS's event, valid for the call.
        let code: NDIS_DEVICE_PNP_EVENT = unsafe { (*event).DevicePnPEvent };
        miniport::device_pnp_event(code);
    }
}

/// `MiniportShutdownEx`: may run at HIGH_LEVEL during a bug check, so it
/// touches nothing (there is no hardware to quiesce).
unsafe extern "win64" fn shutdown(_context: NDIS_HANDLE, _action: NDIS_SHUTDOWN_ACTION) {}

/// `MiniportCancelOidRequest`.
unsafe extern "win64" fn cancel_oid_request(context: NDIS_HANDLE, request_id: PVOID) {
    // SAFETY: NDIS passes the adapter context V registered, V not halted
    // (NDIS halts V only after its OID requests completed).
    miniport::cancel_oid_request(unsafe { adapter(context) }, request_id);
}

// ---------------------------------------------------------------------
// The NDK handlers.

/// `OpenNDKAdapterHandler` (`PASSIVE_LEVEL`).
unsafe extern "win64" fn open_ndk_adapter(
    context: NDIS_HANDLE,
    parameters: *mut NDIS_OPEN_NDK_ADAPTER_PARAMETERS,
    out: *mut *mut NDK_ADAPTER,
) -> NDIS_STATUS {
    // SAFETY: NDIS passes the adapter context it got from us.
    let adapter = unsafe { adapter(context) };
    if parameters.is_null() || out.is_null() {
        return NDIS_STATUS_INVALID_PARAMETER;
    }
    // SAFETY: NDIS's parameters, valid for the call.
    let version = unsafe { (*parameters).Version };
    match ndk::open(adapter, version) {
        Ok(ndk) => {
            // SAFETY: NDIS's out-pointer, valid for the call.
            unsafe { out.write(ndk) };
            NDIS_STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `CloseNDKAdapterHandler` (`PASSIVE_LEVEL`): returns once no callback
/// into its consumer can run.
unsafe extern "win64" fn close_ndk_adapter(context: NDIS_HANDLE, ndk: *mut NDK_ADAPTER) {
    // SAFETY: NDIS passes the adapter context it got from us.
    let adapter = unsafe { adapter(context) };
    // SAFETY: NDIS closes each adapter it opened through us exactly once,
    // with no other call on it running.
    let status = unsafe { provider::close_adapter(ndk) };
    ndk::closed(adapter, status);
}

// ---------------------------------------------------------------------
// The protocol handlers (the binding to P).

/// The pairing behind a protocol binding context.
///
/// # Safety
/// `context` is one NDIS passes to a protocol handler for a binding rsndk
/// opened: a live pairing until `ProtocolUnbindAdapterEx` returns.
unsafe fn mux<'a>(context: NDIS_HANDLE) -> &'a Mux {
    // SAFETY: a pairing `bind` gave NDIS (its TryArc's payload address,
    // whose reference NDIS holds) and the unbind has not taken back (this
    // function's contract).
    unsafe { &*context.cast::<Mux>() }
}

/// `ProtocolBindAdapterEx` (`PASSIVE_LEVEL`).
unsafe extern "win64" fn bind_adapter(
    _driver_context: NDIS_HANDLE,
    bind_context: NDIS_HANDLE,
    params: *mut NDIS_BIND_PARAMETERS,
) -> NDIS_STATUS {
    let Some(params) = NonNull::new(params) else {
        return NDIS_STATUS_INVALID_PARAMETER;
    };
    // SAFETY: NDIS's parameters, valid for the call.
    let params = unsafe { params.as_ref() };
    match protocol::bind::bind(BindContext::new(bind_context), params) {
        Ok(mux) => {
            // NDIS holds this reference until ProtocolUnbindAdapterEx.
            let _ = TryArc::into_raw(mux);
            NDIS_STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `ProtocolUnbindAdapterEx` (`PASSIVE_LEVEL`): completes synchronously.
unsafe extern "win64" fn unbind_adapter(
    _unbind_context: NDIS_HANDLE,
    context: NDIS_HANDLE,
) -> NDIS_STATUS {
    let Some(context) = NonNull::new(context.cast::<Mux>()) else {
        return NDIS_STATUS_INVALID_PARAMETER;
    };
    // SAFETY: the reference `bind_adapter` gave NDIS, handed back once: NDIS
    // makes no other protocol call on this binding once the unbind returns.
    let mux = unsafe { TryArc::from_raw(context.as_ptr()) };
    protocol::bind::unbind(&mux, disable_ndk);
    drop(mux);
    NDIS_STATUS_SUCCESS
}

/// Disables NDK on V and waits for its NDK adapters, if V is up (the
/// unbind's first step for V).
fn disable_ndk(virt: &Virtual) {
    let context = virt.adapter();
    if !context.is_null() {
        // SAFETY: V's adapter context, live while the instance is up and
        // not halting (the unbind asks only then); only this unbind
        // deinitialises it, after this returns.
        unsafe { adapter(context) }.disable_ndk_and_wait();
    }
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
    let pnp = match event.NetEvent {
        NetEventReconfigure => PnpEvent::Reconfigure,
        NetEventIMReEnableDevice => {
            let name = event.Buffer.cast::<UNICODE_STRING>();
            if name.is_null() || (event.BufferLength as usize) < size_of::<UNICODE_STRING>() {
                return NDIS_STATUS_INVALID_PARAMETER;
            }
            // SAFETY: NDIS's instance name (an NDIS_STRING), valid for the
            // call.
            let name = unsafe { &*name };
            if name.Buffer.is_null() {
                PnpEvent::ReEnable(None)
            } else {
                // SAFETY: NDIS's string of `Length` bytes, valid for the
                // PnP event.
                PnpEvent::ReEnable(Some(unsafe {
                    core::slice::from_raw_parts(name.Buffer, usize::from(name.Length) / 2)
                }))
            }
        }
        NetEventPause => PnpEvent::Pause,
        NetEventRestart => PnpEvent::Restart,
        NetEventSetPower => {
            if event.Buffer.is_null() || (event.BufferLength as usize) < size_of::<i32>() {
                PnpEvent::SetPower(None)
            } else {
                // SAFETY: an NDIS_DEVICE_POWER_STATE (checked size), valid
                // for the call.
                PnpEvent::SetPower(Some(unsafe { event.Buffer.cast::<i32>().read_unaligned() }))
            }
        }
        _ => PnpEvent::Other,
    };
    // SAFETY: a binding event carries that binding's context, live until
    // the unbind; global events carry none (null).
    let mux = (!context.is_null()).then(|| unsafe { mux(context) });
    protocol::net_pnp_event(mux, pnp)
}

/// `ProtocolOidRequestComplete` (`<= DISPATCH_LEVEL`).
unsafe extern "win64" fn oid_request_complete(
    context: NDIS_HANDLE,
    request: *mut NDIS_OID_REQUEST,
    status: NDIS_STATUS,
) {
    let Some(request) = NonNull::new(request) else {
        return;
    };
    // SAFETY: the context of a binding with this request outstanding.
    let mux = unsafe { mux(context) };
    // Every request rsndk issues on a binding is an OwnedRequest issued
    // through the binding's `Requests`, pending until now.
    mux.binding
        .requests
        .complete(CompletedRequest::new(request), status);
}

/// `ProtocolStatusEx` (`<= DISPATCH_LEVEL`): `NDIS_STATUS_LINK_STATE` only
/// (the sample passes only this one up).
unsafe extern "win64" fn status(context: NDIS_HANDLE, indication: *mut NDIS_STATUS_INDICATION) {
    if indication.is_null() {
        return;
    }
    // SAFETY: NDIS's indication, valid for the call.
    let indication = unsafe { &*indication };
    if indication.StatusCode != NDIS_STATUS_LINK_STATE
        || indication.StatusBuffer.is_null()
        || (indication.StatusBufferSize as usize) < size_of::<NDIS_LINK_STATE>()
    {
        return;
    }
    // SAFETY: NDIS's buffer of at least an NDIS_LINK_STATE (checked), valid
    // for the call; read unaligned, it is the indicator's memory.
    let state = unsafe {
        indication
            .StatusBuffer
            .cast::<NDIS_LINK_STATE>()
            .read_unaligned()
    };
    // SAFETY: a live binding's context.
    unsafe { mux(context) }.link_state(&state);
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
    let chain = unsafe { NblChain::from_ndis(lists) };
    passthrough::receive(mux, chain, port, flags);
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
    let chain = unsafe { NblChain::from_ndis(lists) };
    passthrough::send_complete(mux, chain, flags);
}

// ---------------------------------------------------------------------
// Link glue.
//
// What the WDK's libraries supply to a C driver and a `no_std` Rust image
// still references, so that the image links with rust-lld alone:
// - The C string and memory routines (`memcpy`, `memmove`, `memset`,
//   `memcmp`, `strlen`) and the stack probe `__chkstk` that LLVM emits
//   calls to are ntoskrnl exports: declaring them `raw-dylib` makes the
//   image import them instead of carrying compiler_builtins' slower weak
//   copies.
// - `_fltused` tells the MSVC toolchain floating point is in use; core
//   references it.
// - `__CxxFrameHandler3` is named by the unwind tables of the precompiled
//   `core`/`alloc`. With `panic = "abort"` no exception is ever raised
//   through Rust frames, so the handler is never reached; if the kernel
//   ever did call it, it bugchecks rather than guess.

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "C" {
    fn memcpy(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memmove(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memset(dest: *mut c_void, c: c_int, n: usize) -> *mut c_void;
    fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int;
    fn strlen(s: *const c_char) -> usize;
    /// Probes the stack pages of a frame larger than a page (size in RAX;
    /// LLVM emits the call in unoptimised builds). Declared only to be
    /// imported: its register convention is not C's, and Rust never calls
    /// it.
    fn __chkstk();
}
/// Keeps the declarations above referenced, so rustc writes all five into
/// the import library LLVM's calls resolve against.
#[used]
static IMPORTED_CRT: [unsafe extern "C" fn(); 6] = [
    // SAFETY: only the addresses are taken, never called through these
    // types; the real signatures are the declarations above.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memcpy)
    },
    // SAFETY: as for memcpy: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memmove)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut c_void, c_int, usize) -> *mut c_void,
            unsafe extern "C" fn(),
        >(memset)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*const c_void, *const c_void, usize) -> c_int,
            unsafe extern "C" fn(),
        >(memcmp)
    },
    // SAFETY: an address kept, never called.
    unsafe {
        core::mem::transmute::<unsafe extern "C" fn(*const c_char) -> usize, unsafe extern "C" fn()>(
            strlen,
        )
    },
    __chkstk,
];

/// The MSVC marker for floating-point use (any value; only its presence
/// counts).
#[cfg(not(feature = "wdk"))]
#[unsafe(no_mangle)]
pub static _fltused: i32 = 0;

/// The C++ frame handler the unwind data of `core` and `alloc` names.
/// Never called with `panic = "abort"`; if the kernel dispatched an
/// exception to it, continuing would run Rust code in an unknown state.
#[cfg(not(feature = "wdk"))]
#[unsafe(no_mangle)]
pub extern "win64" fn __CxxFrameHandler3() -> ! {
    panic!("__CxxFrameHandler3 reached: an exception unwound into Rust frames")
}

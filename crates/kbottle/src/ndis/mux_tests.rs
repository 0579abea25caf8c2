//! NDIS's MUX side against an intermediate driver written in Rust (no
//! image), shaped like the MUX sample: two NICs on one segment, each
//! bound (one open pended, one close pended), UpperBindings read, V
//! started with its `IMDeviceInstanceContext` and stacked over P; frames
//! from the driver's own pool cross the segment (padded, filtered,
//! indicated with and without `NDIS_RECEIVE_FLAGS_RESOURCES`, returned),
//! link down and up, a binding paused (sends fail `NDIS_STATUS_PAUSED`)
//! and restarted, a pended OID, and the unbind leaves nothing behind.

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ndis::{
    DRIVER_OBJECT, MediaConnectStateConnected, NDIS_BIND_PARAMETERS, NDIS_CONFIGURATION_OBJECT,
    NDIS_CONFIGURATION_PARAMETER, NDIS_HALT_ACTION, NDIS_HANDLE, NDIS_INTERMEDIATE_DRIVER,
    NDIS_LINK_STATE, NDIS_MEDIUM, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES, NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    NDIS_MINIPORT_INIT_PARAMETERS, NDIS_MINIPORT_PAUSE_PARAMETERS,
    NDIS_MINIPORT_RESTART_PARAMETERS, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_OID_REQUEST,
    NDIS_OID_REQUEST, NDIS_OID_REQUEST_REVISION_1, NDIS_OPEN_PARAMETERS,
    NDIS_PACKET_TYPE_BROADCAST, NDIS_PACKET_TYPE_DIRECTED, NDIS_PORT_NUMBER,
    NDIS_PROTOCOL_DRIVER_CHARACTERISTICS, NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL,
    NDIS_RECEIVE_FLAGS_RESOURCES, NDIS_RETURN_FLAGS_DISPATCH_LEVEL, NDIS_SEND_FLAGS_DISPATCH_LEVEL,
    NDIS_SHUTDOWN_ACTION, NDIS_SIZEOF_OID_REQUEST_REVISION_1, NDIS_STATUS_INDICATION,
    NDIS_STATUS_LINK_STATE, NDIS_STATUS_MEDIA_DISCONNECTED, NDIS_STATUS_PAUSED,
    NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS, NDIS_STRING, NET_BUFFER_LIST,
    NET_BUFFER_LIST_POOL_PARAMETERS, NET_DEVICE_PNP_EVENT, NET_PNP_EVENT_NOTIFICATION,
    NdisInterfaceInternal, NdisMedium802_3, NdisParameterMultiString, NdisRequestSetInformation,
    NetEventPause, OID_GEN_CURRENT_PACKET_FILTER, UNICODE_STRING,
};
use ndkpi::{PVOID, ULONG};

use super::bindflow::{self, NicOptions};
use super::state::{self, BindingState, ImState};
use super::{
    NdisAllocateNetBufferAndNetBufferList, NdisAllocateNetBufferListPool, NdisCloseAdapterEx,
    NdisCloseConfiguration, NdisDeregisterProtocolDriver, NdisFreeNetBufferList,
    NdisFreeNetBufferListPool, NdisIMAssociateMiniport, NdisIMDeInitializeDeviceInstance,
    NdisIMInitializeDeviceInstanceEx, NdisIfAddIfStackEntry, NdisIfDeleteIfStackEntry,
    NdisMDeregisterMiniportDriver, NdisMRegisterMiniportDriver, NdisMSendNetBufferListsComplete,
    NdisMSetMiniportAttributes, NdisOidRequest, NdisOpenAdapterEx, NdisOpenConfigurationEx,
    NdisReadConfiguration, NdisRegisterProtocolDriver, NdisReturnNetBufferLists,
    NdisSendNetBufferLists, nbl, nblpool, nic,
};
use crate::ids::Keyword;
use crate::kernel::cpu;
use crate::kernel::mm::OwnedMdl;
use crate::world::segment;

/// The fault a child run of a test makes the fake driver commit.
struct Fault;

impl Fault {
    const NONE: u32 = 0;
    const RETURN_TWICE: u32 = 1;
    const RETURN_LENT: u32 = 2;
    const WRONG_SOURCE: u32 = 3;
    const EARLY_PAUSE: u32 = 4;
    const OPEN_OUTSIDE_BIND: u32 = 5;
}

static FAULT: AtomicU32 = AtomicU32::new(Fault::NONE);

/// A send in flight: its list, MDL and data.
type InFlight = (usize, OwnedMdl, Box<[u8]>);

/// One lower binding of the fake driver and its V.
#[derive(Default)]
struct Side {
    binding: AtomicUsize,
    miniport: AtomicUsize,
    pool: AtomicUsize,
    mac: Mutex<[u8; 6]>,
    lower_if: AtomicU32,
    v_if: AtomicU32,
    open_done: AtomicBool,
    close_done: AtomicBool,
    oid_done: AtomicBool,
    link_up: AtomicBool,
    sends_out: AtomicUsize,
    pauses: AtomicUsize,
    received: Mutex<Vec<(Vec<u8>, bool)>>,
    completions: Mutex<Vec<i32>>,
    /// Data and MDLs of sends in flight, by list.
    in_flight: Mutex<Vec<InFlight>>,
    upper_bindings: Mutex<String>,
    bind_status: AtomicI32,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

static SIDES: [std::sync::LazyLock<Side>; 2] = [
    std::sync::LazyLock::new(Side::default),
    std::sync::LazyLock::new(Side::default),
];
static NEXT_SIDE: AtomicUsize = AtomicUsize::new(0);
static DRIVER: AtomicUsize = AtomicUsize::new(0);
static PROTOCOL: AtomicUsize = AtomicUsize::new(0);

fn side(ctx: NDIS_HANDLE) -> &'static Side {
    let i = SIDES
        .iter()
        .position(|s| ptr::eq(ptr::from_ref::<Side>(s), ctx.cast::<Side>()))
        .expect("a side's context");
    &SIDES[i]
}

fn ctx_of(i: usize) -> NDIS_HANDLE {
    ptr::from_ref::<Side>(&SIDES[i]).cast_mut().cast()
}

fn wait(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

// ---- the protocol edge ----

static UPPER_BINDINGS: [u16; 13] = ndis::ascii_to_utf16(b"UpperBindings");
static NAME: [u16; 8] = ndis::ascii_to_utf16(b"FAKEMUXP");

fn set_filter(s: &Side, filter: u32) {
    let mut value = filter;
    // SAFETY: all-zero bytes are a valid request.
    let mut request: Box<NDIS_OID_REQUEST> = Box::new(unsafe { std::mem::zeroed() });
    request.Header = NDIS_OBJECT_HEADER::new(
        NDIS_OBJECT_TYPE_OID_REQUEST,
        NDIS_OID_REQUEST_REVISION_1,
        NDIS_SIZEOF_OID_REQUEST_REVISION_1,
    );
    request.RequestType = NdisRequestSetInformation;
    request.DATA.SET_INFORMATION.Oid = OID_GEN_CURRENT_PACKET_FILTER;
    request.DATA.SET_INFORMATION.InformationBuffer = (&raw mut value).cast();
    request.DATA.SET_INFORMATION.InformationBufferLength = 4;
    s.oid_done.store(false, Ordering::SeqCst);
    let binding = s.binding.load(Ordering::SeqCst) as NDIS_HANDLE;
    // SAFETY: our open binding; the request and value live until it completes.
    let status = unsafe { NdisOidRequest(binding, &raw mut *request) };
    if status == NDIS_STATUS_PENDING {
        wait("the filter OID", || s.oid_done.load(Ordering::SeqCst));
    } else {
        assert_eq!(status, NDIS_STATUS_SUCCESS);
    }
}

unsafe extern "win64" fn bind(
    _driver_ctx: NDIS_HANDLE,
    bind_ctx: NDIS_HANDLE,
    params: *mut NDIS_BIND_PARAMETERS,
) -> i32 {
    let i = NEXT_SIDE.fetch_add(1, Ordering::SeqCst);
    let s = &*SIDES[i];
    // SAFETY: NDIS's bind parameters for the call.
    let p = unsafe { params.read() };
    assert_eq!(p.MediaConnectState, MediaConnectStateConnected);
    s.link_up.store(true, Ordering::SeqCst);
    assert_eq!((p.MtuSize, p.MacAddressLength), (1500, 6));
    lock(&s.mac).copy_from_slice(&p.CurrentMacAddress[..6]);
    s.lower_if.store(p.BoundIfIndex, Ordering::SeqCst);
    let mut media: [NDIS_MEDIUM; 1] = [NdisMedium802_3];
    let mut index = 99u32;
    let mut open = NDIS_OPEN_PARAMETERS::new(
        p.AdapterName,
        media.as_mut_ptr(),
        1,
        &raw mut index,
        ptr::null_mut(),
        0,
    );
    let mut binding: NDIS_HANDLE = ptr::null_mut();
    let protocol = PROTOCOL.load(Ordering::SeqCst) as NDIS_HANDLE;
    // SAFETY: inside ProtocolBindAdapterEx with its bind context.
    let status = unsafe {
        NdisOpenAdapterEx(
            protocol,
            ctx_of(i),
            &raw mut open,
            bind_ctx,
            &raw mut binding,
        )
    };
    s.binding.store(binding as usize, Ordering::SeqCst);
    if status == NDIS_STATUS_PENDING {
        wait("the pended open", || s.open_done.load(Ordering::SeqCst));
    } else {
        assert_eq!(status, NDIS_STATUS_SUCCESS);
    }
    assert_eq!(index, 0);
    // UpperBindings, as the sample reads it.
    let mut object = NDIS_CONFIGURATION_OBJECT::new(binding);
    let mut config: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL, our binding handle, valid out-pointer.
    let status = unsafe { NdisOpenConfigurationEx(&raw mut object, &raw mut config) };
    assert_eq!(status, 0);
    let mut keyword = UNICODE_STRING::from_static(&UPPER_BINDINGS);
    let mut status = -1;
    let mut value: *mut NDIS_CONFIGURATION_PARAMETER = ptr::null_mut();
    // SAFETY: an open configuration handle, valid out-pointers.
    unsafe {
        NdisReadConfiguration(
            &raw mut status,
            &raw mut value,
            config,
            &raw mut keyword,
            NdisParameterMultiString,
        );
    };
    assert_eq!(status, NDIS_STATUS_SUCCESS);
    // SAFETY: a successful read's value, valid until the close.
    let parameter = unsafe { value.read() };
    // SAFETY: a multi-string value: StringData is the live member.
    let mut name = unsafe { parameter.ParameterData.StringData };
    // SAFETY: the multi-string's first entry: Length covers it and its NUL.
    let text = unsafe { std::slice::from_raw_parts(name.Buffer, usize::from(name.Length) / 2 - 1) };
    *lock(&s.upper_bindings) = String::from_utf16_lossy(text);
    name.Length -= 2;
    let mut pool_params = NET_BUFFER_LIST_POOL_PARAMETERS::new(0, true, 0, 0x4B4D_5846, 0);
    // SAFETY: PASSIVE_LEVEL, our binding, revision-1 parameters.
    let pool = unsafe { NdisAllocateNetBufferListPool(binding, &raw mut pool_params) };
    assert!(!pool.is_null());
    s.pool.store(pool as usize, Ordering::SeqCst);
    set_filter(s, NDIS_PACKET_TYPE_DIRECTED | NDIS_PACKET_TYPE_BROADCAST);
    let driver = DRIVER.load(Ordering::SeqCst) as NDIS_HANDLE;
    // SAFETY: our driver handle and the instance name UpperBindings gave.
    let status = unsafe { NdisIMInitializeDeviceInstanceEx(driver, &raw mut name, ctx_of(i)) };
    // SAFETY: opened above, closed once (the name is no longer used).
    unsafe { NdisCloseConfiguration(config) };
    s.bind_status.store(status, Ordering::SeqCst);
    status
}

unsafe extern "win64" fn unbind(_unbind_ctx: NDIS_HANDLE, ctx: NDIS_HANDLE) -> i32 {
    let s = side(ctx);
    let v = s.miniport.load(Ordering::SeqCst);
    if v != 0 {
        // SAFETY: our V's miniport handle.
        let status = unsafe { NdisIMDeInitializeDeviceInstance(v as NDIS_HANDLE) };
        assert_eq!(status, 0);
    }
    assert_eq!(
        s.miniport.load(Ordering::SeqCst),
        0,
        "V halted inside the deinit"
    );
    set_filter(s, 0);
    // SAFETY: every list of the pool was freed at its send completion.
    unsafe { NdisFreeNetBufferListPool(s.pool.swap(0, Ordering::SeqCst) as NDIS_HANDLE) };
    // SAFETY: our paused binding, nothing outstanding.
    let status = unsafe { NdisCloseAdapterEx(s.binding.load(Ordering::SeqCst) as NDIS_HANDLE) };
    if status == NDIS_STATUS_PENDING {
        wait("the pended close", || s.close_done.load(Ordering::SeqCst));
    }
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn open_complete(ctx: NDIS_HANDLE, status: i32) {
    assert_eq!(status, NDIS_STATUS_SUCCESS);
    side(ctx).open_done.store(true, Ordering::SeqCst);
}

unsafe extern "win64" fn close_complete(ctx: NDIS_HANDLE) {
    side(ctx).close_done.store(true, Ordering::SeqCst);
}

unsafe extern "win64" fn pnp(ctx: NDIS_HANDLE, event: *mut NET_PNP_EVENT_NOTIFICATION) -> i32 {
    let s = side(ctx);
    // SAFETY: NDIS's notification for the call.
    let code = unsafe { (*event).NetPnPEvent.NetEvent };
    if code == NetEventPause && FAULT.load(Ordering::SeqCst) != Fault::EARLY_PAUSE {
        s.pauses.fetch_add(1, Ordering::SeqCst);
        wait("sends to complete before the pause", || {
            s.sends_out.load(Ordering::SeqCst) == 0
        });
    }
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn oid_complete(
    ctx: NDIS_HANDLE,
    _request: *mut NDIS_OID_REQUEST,
    status: i32,
) {
    assert_eq!(status, NDIS_STATUS_SUCCESS);
    assert_eq!(cpu::current(), cpu::DISPATCH_LEVEL);
    side(ctx).oid_done.store(true, Ordering::SeqCst);
}

unsafe extern "win64" fn status_ex(ctx: NDIS_HANDLE, indication: *mut NDIS_STATUS_INDICATION) {
    // SAFETY: NDIS's indication for the call.
    let i = unsafe { indication.read() };
    if i.StatusCode == NDIS_STATUS_LINK_STATE {
        // SAFETY: a link state indication's buffer.
        let link = unsafe { i.StatusBuffer.cast::<NDIS_LINK_STATE>().read() };
        side(ctx).link_up.store(
            link.MediaConnectState == MediaConnectStateConnected,
            Ordering::SeqCst,
        );
    }
}

unsafe extern "win64" fn receive(
    ctx: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    _port: NDIS_PORT_NUMBER,
    count: ULONG,
    flags: ULONG,
) {
    let s = side(ctx);
    assert_eq!(
        flags & NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL,
        NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL
    );
    let resources = flags & NDIS_RECEIVE_FLAGS_RESOURCES != 0;
    // SAFETY: NDIS's chain for the call.
    let all = unsafe { nbl::chain(lists, 100) };
    assert_eq!(all.len(), count as usize);
    for l in &all {
        // SAFETY: a list of the indicated chain.
        let frame =
            unsafe { nbl::frame_of(*l as *const NET_BUFFER_LIST) }.expect("a readable receive");
        lock(&s.received).push((frame, resources));
    }
    // A faulty driver returns what it was only lent, or returns twice.
    let returns = match FAULT.load(Ordering::SeqCst) {
        Fault::RETURN_LENT => 1,
        Fault::RETURN_TWICE if !resources => 2,
        _ => u32::from(!resources),
    };
    for _ in 0..returns {
        // SAFETY: our binding; the chain NDIS gave us (returned once
        // unless the test asked for a fault).
        unsafe {
            NdisReturnNetBufferLists(
                s.binding.load(Ordering::SeqCst) as NDIS_HANDLE,
                lists,
                NDIS_RETURN_FLAGS_DISPATCH_LEVEL,
            );
        };
    }
}

unsafe extern "win64" fn send_complete(
    ctx: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    _flags: ULONG,
) {
    let s = side(ctx);
    // SAFETY: our completed chain.
    for l in unsafe { nbl::chain(lists, 100) } {
        let list = l as *mut NET_BUFFER_LIST;
        // SAFETY: our own list, completed.
        lock(&s.completions).push(unsafe { (*list).Status });
        lock(&s.in_flight).retain(|(x, _, _)| *x != l);
        // SAFETY: our own list, ours again, freed once.
        unsafe { NdisFreeNetBufferList(list) };
        s.sends_out.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sends `frame` on side `i`'s binding from its own pool at DISPATCH_LEVEL.
fn send(i: usize, frame: &[u8]) {
    let s = &*SIDES[i];
    let mut data: Box<[u8]> = frame.into();
    let mdl = OwnedMdl::describe(data.as_mut_ptr(), data.len());
    let pool = s.pool.load(Ordering::SeqCst) as NDIS_HANDLE;
    // SAFETY: our pool, an MDL over our data.
    let list =
        unsafe { NdisAllocateNetBufferAndNetBufferList(pool, 0, 0, mdl.as_ptr(), 0, data.len()) };
    assert!(!list.is_null());
    let binding = s.binding.load(Ordering::SeqCst);
    let source = if FAULT.load(Ordering::SeqCst) == Fault::WRONG_SOURCE {
        s.pool.load(Ordering::SeqCst)
    } else {
        binding
    };
    // SAFETY: our list, not yet sent.
    unsafe { (*list).SourceHandle = source as NDIS_HANDLE };
    lock(&s.in_flight).push((list as usize, mdl, data));
    s.sends_out.fetch_add(1, Ordering::SeqCst);
    cpu::run_at_dispatch(|| {
        // SAFETY: our binding and list, at DISPATCH_LEVEL as flagged.
        unsafe {
            NdisSendNetBufferLists(
                binding as NDIS_HANDLE,
                list,
                0,
                NDIS_SEND_FLAGS_DISPATCH_LEVEL,
            );
        };
    });
}

// ---- the miniport edge (V) ----

unsafe extern "win64" fn initialize(
    handle: NDIS_HANDLE,
    _driver_ctx: NDIS_HANDLE,
    params: *mut NDIS_MINIPORT_INIT_PARAMETERS,
) -> i32 {
    // SAFETY: NDIS's parameters for the call.
    let p = unsafe { params.read() };
    let s = side(p.IMDeviceInstanceContext);
    s.miniport.store(handle as usize, Ordering::SeqCst);
    let mut registration = NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES::new(
        p.IMDeviceInstanceContext,
        0,
        0,
        NdisInterfaceInternal,
    );
    // SAFETY: our adapter handle, a whole attribute structure.
    let status = unsafe { NdisMSetMiniportAttributes(handle, (&raw mut registration).cast()) };
    assert_eq!(status, 0);
    let mut general = NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new();
    general.MtuSize = 1500;
    general.MacAddressLength = 6;
    general.CurrentMacAddress[..6].copy_from_slice(&*lock(&s.mac));
    // SAFETY: as above.
    let status = unsafe { NdisMSetMiniportAttributes(handle, (&raw mut general).cast()) };
    assert_eq!(status, 0);
    // SAFETY: PASSIVE_LEVEL; V's and P's interface indexes.
    let stacked = unsafe { NdisIfAddIfStackEntry(p.IfIndex, s.lower_if.load(Ordering::SeqCst)) };
    assert_eq!(stacked, NDIS_STATUS_SUCCESS);
    s.v_if.store(p.IfIndex, Ordering::SeqCst);
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn halt(ctx: NDIS_HANDLE, _action: NDIS_HALT_ACTION) {
    let s = side(ctx);
    // SAFETY: PASSIVE_LEVEL; the entry initialize added.
    unsafe {
        NdisIfDeleteIfStackEntry(
            s.v_if.load(Ordering::SeqCst),
            s.lower_if.load(Ordering::SeqCst),
        );
    };
    s.miniport.store(0, Ordering::SeqCst);
}

unsafe extern "win64" fn unload(_driver: *mut DRIVER_OBJECT) {
    // SAFETY: PASSIVE_LEVEL, the handles registration gave.
    unsafe { NdisDeregisterProtocolDriver(PROTOCOL.load(Ordering::SeqCst) as NDIS_HANDLE) };
    // SAFETY: as above.
    unsafe { NdisMDeregisterMiniportDriver(DRIVER.load(Ordering::SeqCst) as NDIS_HANDLE) };
}

unsafe extern "win64" fn mp_pause(_c: NDIS_HANDLE, _p: *mut NDIS_MINIPORT_PAUSE_PARAMETERS) -> i32 {
    0
}
unsafe extern "win64" fn mp_restart(
    _c: NDIS_HANDLE,
    _p: *mut NDIS_MINIPORT_RESTART_PARAMETERS,
) -> i32 {
    0
}
unsafe extern "win64" fn mp_oid(_c: NDIS_HANDLE, _r: *mut NDIS_OID_REQUEST) -> i32 {
    ndis::NDIS_STATUS_NOT_SUPPORTED
}
unsafe extern "win64" fn mp_send(
    c: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    _p: NDIS_PORT_NUMBER,
    flags: ULONG,
) {
    let s = side(c);
    // SAFETY: the stack's chain: completed at once.
    for l in unsafe { nbl::chain(lists, 1000) } {
        // SAFETY: a list of the chain.
        unsafe { (*(l as *mut NET_BUFFER_LIST)).Status = NDIS_STATUS_SUCCESS };
    }
    let complete = u32::from(flags & NDIS_SEND_FLAGS_DISPATCH_LEVEL != 0);
    // SAFETY: our adapter; the chain handed to us, completed once.
    unsafe {
        NdisMSendNetBufferListsComplete(
            s.miniport.load(Ordering::SeqCst) as NDIS_HANDLE,
            lists,
            complete,
        );
    };
}
unsafe extern "win64" fn mp_return(_c: NDIS_HANDLE, _l: *mut NET_BUFFER_LIST, _f: ULONG) {}
unsafe extern "win64" fn mp_cancel(_c: NDIS_HANDLE, _id: PVOID) {}
unsafe extern "win64" fn mp_pnp(_c: NDIS_HANDLE, _e: *mut NET_DEVICE_PNP_EVENT) {}
unsafe extern "win64" fn mp_shutdown(_c: NDIS_HANDLE, _a: NDIS_SHUTDOWN_ACTION) {}

fn register(driver_object: usize, registry_path: usize) {
    let mut chars = NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
        InitializeHandlerEx: Some(initialize),
        HaltHandlerEx: Some(halt),
        UnloadHandler: Some(unload),
        PauseHandler: Some(mp_pause),
        RestartHandler: Some(mp_restart),
        OidRequestHandler: Some(mp_oid),
        SendNetBufferListsHandler: Some(mp_send),
        ReturnNetBufferListsHandler: Some(mp_return),
        CancelSendHandler: Some(mp_cancel),
        DevicePnPEventNotifyHandler: Some(mp_pnp),
        ShutdownHandlerEx: Some(mp_shutdown),
        CancelOidRequestHandler: Some(mp_cancel),
        Flags: NDIS_INTERMEDIATE_DRIVER,
        ..NDIS_MINIPORT_DRIVER_CHARACTERISTICS::new(0, 1)
    };
    let mut driver: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL, our characteristics and out-pointer.
    let status = unsafe {
        NdisMRegisterMiniportDriver(
            driver_object as *mut DRIVER_OBJECT,
            registry_path as *mut UNICODE_STRING,
            ptr::null_mut(),
            &raw mut chars,
            &raw mut driver,
        )
    };
    assert_eq!(status, NDIS_STATUS_SUCCESS);
    DRIVER.store(driver as usize, Ordering::SeqCst);
    let name = NDIS_STRING {
        Length: 16,
        MaximumLength: 16,
        Buffer: NAME.as_ptr().cast_mut(),
    };
    let mut pchars = NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
        BindAdapterHandlerEx: Some(bind),
        UnbindAdapterHandlerEx: Some(unbind),
        OpenAdapterCompleteHandlerEx: Some(open_complete),
        CloseAdapterCompleteHandlerEx: Some(close_complete),
        NetPnPEventHandler: Some(pnp),
        OidRequestCompleteHandler: Some(oid_complete),
        StatusHandlerEx: Some(status_ex),
        ReceiveNetBufferListsHandler: Some(receive),
        SendNetBufferListsCompleteHandler: Some(send_complete),
        ..NDIS_PROTOCOL_DRIVER_CHARACTERISTICS::new(name, 1, 0)
    };
    let mut protocol: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL, our characteristics and out-pointer.
    let status =
        unsafe { NdisRegisterProtocolDriver(ptr::null_mut(), &raw mut pchars, &raw mut protocol) };
    assert_eq!(status, NDIS_STATUS_SUCCESS);
    PROTOCOL.store(protocol as usize, Ordering::SeqCst);
    // SAFETY: both handles registration just gave.
    unsafe { NdisIMAssociateMiniport(driver, protocol) };
}

fn frame(dst: [u8; 6], src: [u8; 6], payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&0x88B5u16.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn received(i: usize) -> Vec<(Vec<u8>, bool)> {
    lock(&SIDES[i].received).clone()
}

#[test]
fn a_mux_driver_binds_two_nics_moves_frames_and_unbinds_cleanly() {
    let _serial = super::tests::serial();
    super::tests::fresh_ndis(0x5000, 0x6000);
    register(0x5000, 0x6000);
    let seg = segment::create(segment::DEFAULT_MTU);
    let kw = vec![("*NetworkDirect".to_owned(), Keyword::Int(1))];
    let nic0 = bindflow::add_nic(
        seg,
        kw.clone(),
        Some(&NicOptions {
            open_pends: true,
            ..NicOptions::default()
        }),
    )
    .expect("NIC 0");
    let v0 = bindflow::bind(nic0).expect("bind 0");
    let nic1 = bindflow::add_nic(
        seg,
        kw,
        Some(&NicOptions {
            close_pends: true,
            ..NicOptions::default()
        }),
    )
    .expect("NIC 1");
    let v1 = bindflow::bind(nic1).expect("bind 1");
    assert_ne!(v0, v1);
    let (macs, upper0, stack, luid0, if0) = state::with(|n| {
        let macs = [n.nics[&nic0].mac, n.nics[&nic1].mac];
        let upper0 = n.nics[&nic0].upper_binding.clone();
        let stack = n.if_stack.clone();
        let a = n.adapter_by_id(v0).expect("V0");
        (macs, upper0, stack, a.luid, a.if_index)
    });
    assert_eq!(*lock(&SIDES[0].mac), macs[0]);
    assert_eq!(*lock(&SIDES[0].upper_bindings), upper0);
    assert_eq!(luid0, (6 << 48) | (u64::from(v0) << 24));
    assert_eq!(stack.len(), 2);
    assert!(stack.contains(&(if0, SIDES[0].lower_if.load(Ordering::SeqCst))));
    assert!(
        SIDES[0].open_done.load(Ordering::SeqCst),
        "the open pended and completed"
    );
    assert!(state::with(|n| n
        .im_devices
        .iter()
        .all(|d| matches!(d.state, ImState::Up(_)))));

    // Unicast 0 -> 1 (padded to 60), broadcast 1 -> 0, a stranger's
    // unicast filtered out at NIC 1.
    send(0, &frame(macs[1], macs[0], b"hello"));
    send(1, &frame(segment::BROADCAST, macs[1], &[7; 100]));
    send(0, &frame([2, 9, 9, 9, 9, 9], macs[0], b"nobody"));
    wait("the unicast", || !received(1).is_empty());
    wait("the broadcast", || !received(0).is_empty());
    let (got, _) = received(1)[0].clone();
    assert_eq!(got.len(), 60);
    assert_eq!(got[..19], frame(macs[1], macs[0], b"hello")[..]);
    assert!(got[19..].iter().all(|b| *b == 0));
    assert_eq!(received(0)[0].0.len(), 114);
    wait("the sends to complete", || {
        SIDES
            .iter()
            .all(|s| s.sends_out.load(Ordering::SeqCst) == 0)
    });
    if let Some(rt) = nic::runtime(nic1) {
        assert!(rt.wait_idle());
        assert_eq!(rt.counters.filtered.load(Ordering::SeqCst), 1);
    }

    // Enough frames that some go up with NDIS_RECEIVE_FLAGS_RESOURCES.
    for k in 0..12u8 {
        send(0, &frame(macs[1], macs[0], &[k; 40]));
        let want = 2 + usize::from(k);
        wait("each frame", || received(1).len() >= want);
    }
    let with_resources = received(1).iter().filter(|(_, r)| *r).count();
    assert!(
        with_resources >= 3,
        "{with_resources} indications carried RESOURCES"
    );
    assert!(received(1).iter().any(|(_, r)| !*r));

    link_down_and_up(nic1, macs);

    // Binding 0 paused: its sends complete with NDIS_STATUS_PAUSED.
    assert_eq!(bindflow::pause(nic0), NDIS_STATUS_SUCCESS);
    assert_eq!(SIDES[0].pauses.load(Ordering::SeqCst), 1);
    send(0, &frame(macs[1], macs[0], b"paused"));
    assert_eq!(
        lock(&SIDES[0].completions).last(),
        Some(&NDIS_STATUS_PAUSED)
    );
    assert_eq!(bindflow::restart(nic0), NDIS_STATUS_SUCCESS);
    unbind_all(nic0, nic1);
}

/// Link down on NIC 1: the protocol hears it, its sends fail, frames to
/// it are dropped. Up again: they flow.
fn link_down_and_up(nic1: u32, macs: [[u8; 6]; 2]) {
    nic::set_link(nic1, false);
    wait("the link down", || !SIDES[1].link_up.load(Ordering::SeqCst));
    let before = received(1).len();
    send(0, &frame(macs[1], macs[0], b"lost"));
    send(1, &frame(macs[0], macs[1], b"not sent"));
    wait("the sends to complete", || {
        SIDES
            .iter()
            .all(|s| s.sends_out.load(Ordering::SeqCst) == 0)
    });
    assert_eq!(
        lock(&SIDES[1].completions).last(),
        Some(&NDIS_STATUS_MEDIA_DISCONNECTED)
    );
    nic::set_link(nic1, true);
    wait("the link up", || SIDES[1].link_up.load(Ordering::SeqCst));
    send(0, &frame(macs[1], macs[0], b"found"));
    wait("the frame after link up", || received(1).len() > before);
    assert_eq!(&received(1).last().expect("a frame").0[14..19], b"found");
}

/// Unbind both: V halted inside the deinit, bindings closed (one close
/// pended), pools freed, the stack emptied, nothing held; then unload.
fn unbind_all(nic0: u32, nic1: u32) {
    bindflow::unbind(nic0);
    bindflow::unbind(nic1);
    assert!(SIDES[1].close_done.load(Ordering::SeqCst));
    state::with(|n| {
        assert!(n.bindings.values().all(|b| b.state == BindingState::Closed));
        assert!(n.if_stack.is_empty());
        assert!(n.faults.is_empty(), "faults: {:?}", n.faults);
        assert!(n.nics.values().all(|x| x.removed));
    });
    assert!(nblpool::live_pools().is_empty());
    assert!(nbl::held_by(nbl::Holder::Driver).is_empty());
    super::miniport::unload(0x5000);
    assert!(state::with(|n| n.protocol.is_none() && n.driver.is_none()));
    assert_eq!(super::workitem::stop(Duration::from_secs(5)), 0);
}

// ---- faults: each test runs itself in a child, whose bug check aborts it

/// Set in a child run of a fault test.
const CHILD_ENV: &str = "KBOTTLE_MUX_FAULT_CHILD";

/// In the parent: runs test `name` in a child and returns its stderr,
/// which must hold a bug check. In the child: `None` (do the test).
fn in_child(name: &str) -> Option<String> {
    if std::env::var_os(CHILD_ENV).is_some() {
        return None;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .expect("running the child");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "the child survived:\n{stderr}");
    Some(stderr)
}

/// Two bound NICs on a segment, with the fake driver told to commit
/// `fault`; their numbers and MACs.
fn two_bound(fault: u32) -> (u32, u32, [[u8; 6]; 2]) {
    super::tests::fresh_ndis(0x5000, 0x6000);
    register(0x5000, 0x6000);
    let seg = segment::create(segment::DEFAULT_MTU);
    let kw = vec![("*NetworkDirect".to_owned(), Keyword::Int(1))];
    let nic0 = bindflow::add_nic(seg, kw.clone(), Some(&NicOptions::default())).expect("NIC 0");
    bindflow::bind(nic0).expect("bind 0");
    let nic1 = bindflow::add_nic(seg, kw, Some(&NicOptions::default())).expect("NIC 1");
    bindflow::bind(nic1).expect("bind 1");
    let macs = state::with(|n| [n.nics[&nic0].mac, n.nics[&nic1].mac]);
    FAULT.store(fault, Ordering::SeqCst);
    (nic0, nic1, macs)
}

#[test]
fn a_received_list_returned_twice_is_a_leaked_nbl_bug_check() {
    let Some(stderr) =
        in_child("ndis::mux_tests::a_received_list_returned_twice_is_a_leaked_nbl_bug_check")
    else {
        let (_, _, macs) = two_bound(Fault::RETURN_TWICE);
        send(0, &frame(macs[1], macs[0], b"twice"));
        wait("the bug check", || false);
        return;
    };
    assert!(stderr.contains("BUGCHECK 0x7C (0x27"), "{stderr}");
    assert!(stderr.contains("returning a receive"), "{stderr}");
}

#[test]
fn returning_a_list_lent_with_resources_is_a_bug_check() {
    let Some(stderr) =
        in_child("ndis::mux_tests::returning_a_list_lent_with_resources_is_a_bug_check")
    else {
        let (_, _, macs) = two_bound(Fault::RETURN_LENT);
        // One indication in four carries NDIS_RECEIVE_FLAGS_RESOURCES:
        // frames one at a time until one does (and the driver returns it).
        for k in 0..200u8 {
            send(0, &frame(macs[1], macs[0], &[k; 20]));
            std::thread::sleep(Duration::from_millis(5));
        }
        wait("the bug check", || false);
        return;
    };
    assert!(stderr.contains("BUGCHECK 0x7C (0x27"), "{stderr}");
    assert!(stderr.contains("NDIS_RECEIVE_FLAGS_RESOURCES"), "{stderr}");
}

#[test]
fn a_send_whose_source_handle_is_not_the_binding_is_a_bug_check() {
    let Some(stderr) =
        in_child("ndis::mux_tests::a_send_whose_source_handle_is_not_the_binding_is_a_bug_check")
    else {
        let (_, _, macs) = two_bound(Fault::WRONG_SOURCE);
        send(0, &frame(macs[1], macs[0], b"whose?"));
        return;
    };
    assert!(stderr.contains("BUGCHECK 0x7C (0x27"), "{stderr}");
    assert!(stderr.contains("SourceHandle"), "{stderr}");
}

#[test]
fn a_pause_completed_with_sends_out_is_a_bug_check() {
    let Some(stderr) = in_child("ndis::mux_tests::a_pause_completed_with_sends_out_is_a_bug_check")
    else {
        let (nic0, _, macs) = two_bound(Fault::EARLY_PAUSE);
        // Sends completed later from the NIC's thread: hold that thread
        // by filling its queue, then pause at once.
        for _ in 0..200 {
            send(0, &frame(macs[1], macs[0], &[1; 1000]));
        }
        for _ in 0..50 {
            bindflow::pause(nic0);
            bindflow::restart(nic0);
            for _ in 0..20 {
                send(0, &frame(macs[1], macs[0], &[1; 1000]));
            }
        }
        return;
    };
    assert!(stderr.contains("BUGCHECK 0x7C (0x1f"), "{stderr}");
    assert!(stderr.contains("NetEventPause completed"), "{stderr}");
}

#[test]
fn an_open_outside_the_bind_is_a_bug_check() {
    let Some(stderr) = in_child("ndis::mux_tests::an_open_outside_the_bind_is_a_bug_check") else {
        two_bound(Fault::OPEN_OUTSIDE_BIND);
        let mut media: [NDIS_MEDIUM; 1] = [NdisMedium802_3];
        let mut index = 0u32;
        let mut open = NDIS_OPEN_PARAMETERS::new(
            ptr::null_mut(),
            media.as_mut_ptr(),
            1,
            &raw mut index,
            ptr::null_mut(),
            0,
        );
        let mut binding: NDIS_HANDLE = ptr::null_mut();
        let protocol = PROTOCOL.load(Ordering::SeqCst) as NDIS_HANDLE;
        // SAFETY: PASSIVE_LEVEL; a bind context NDIS never gave (the
        // fault under test).
        let _ = unsafe {
            NdisOpenAdapterEx(
                protocol,
                ctx_of(0),
                &raw mut open,
                0x1234 as NDIS_HANDLE,
                &raw mut binding,
            )
        };
        return;
    };
    assert!(stderr.contains("BUGCHECK 0x7C (0x16"), "{stderr}");
}

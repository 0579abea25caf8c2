//! The NDIS side against a miniport written in Rust (no image): the
//! registration with `MiniportSetOptions` inside it, attributes,
//! configuration, a work item on the worker thread, an NDK PnP event, a
//! pended restart and a pended OID completed from another thread, sends,
//! pause, the NDK open/close handlers, halt and unload. Bugcheck paths are
//! covered against the real driver by the bottle suite (in child
//! processes); these tests stay on the paths that return.

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ndis::{
    DRIVER_OBJECT, NDIS_CONFIGURATION_OBJECT, NDIS_CONFIGURATION_PARAMETER, NDIS_HALT_ACTION,
    NDIS_HANDLE, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES, NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    NDIS_MINIPORT_INIT_PARAMETERS, NDIS_MINIPORT_PAUSE_PARAMETERS,
    NDIS_MINIPORT_RESTART_PARAMETERS, NDIS_NDK_CAPABILITIES, NDIS_NDK_PROVIDER_CHARACTERISTICS,
    NDIS_OBJECT_HEADER, NDIS_OID, NDIS_OID_REQUEST, NDIS_OPEN_NDK_ADAPTER_PARAMETERS,
    NDIS_PORT_NUMBER, NDIS_SHUTDOWN_ACTION, NDIS_STATUS_BAD_VERSION, NDIS_STATUS_FAILURE,
    NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS, NET_BUFFER_LIST, NET_BUFFER_LIST_NEXT_OFFSET,
    NET_BUFFER_LIST_STATUS_OFFSET, NET_DEVICE_PNP_EVENT, NET_PNP_EVENT_NOTIFICATION,
    NdisInterfaceInternal, NdisParameterInteger, NetEventNDKEnable, UNICODE_STRING, ascii_to_utf16,
};
use ndkpi::{
    NDK_ADAPTER, NDK_ADAPTER_DISPATCH, NDK_ADAPTER_INFO, NDK_OBJECT_HEADER, NDK_VERSION,
    NDK_VERSION_1_2, NdkObjectTypeAdapter, PVOID, ULONG,
};

use super::miniport::{self, OidKind};
use super::state::{self, AdapterState};
use super::{
    NdisAllocateIoWorkItem, NdisCloseConfiguration, NdisFreeIoWorkItem,
    NdisMDeregisterMiniportDriver, NdisMNetPnPEvent, NdisMOidRequestComplete,
    NdisMRegisterMiniportDriver, NdisMRestartComplete, NdisMSendNetBufferListsComplete,
    NdisMSetMiniportAttributes, NdisOpenConfigurationEx, NdisQueueIoWorkItem,
    NdisReadConfiguration, NdisSetOptionalHandlers, workitem,
};
use crate::ids::Keyword;
use crate::kernel::cpu;

/// The NDIS table is process-global: one test at a time.
pub(super) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---- the fake miniport's state ----

static DRIVER_HANDLE: AtomicUsize = AtomicUsize::new(0);
static SET_OPTIONS_HANDLE: AtomicUsize = AtomicUsize::new(0);
static MINIPORT_HANDLE: AtomicUsize = AtomicUsize::new(0);
static WORK_ITEM: AtomicUsize = AtomicUsize::new(0);
static FRAME: AtomicUsize = AtomicUsize::new(0);
/// IRQL the work item ran at, plus one (0: not run).
static WORK_IRQL: AtomicU8 = AtomicU8::new(0);
static WORK_ON_WORKER: AtomicBool = AtomicBool::new(false);
static HALTED: AtomicBool = AtomicBool::new(false);
/// The adapter context (its address is what the fake registers).
static CONTEXT: u8 = 0;
static OIDS: [NDIS_OID; 2] = [0x0001_0101, 0xFF00_0001];
/// The pended OID's answer.
const ANSWER: u32 = 0x1234_5678;
/// An OID the fake pends and completes from another thread.
const PENDED_OID: NDIS_OID = 0xFF00_0001;

fn context() -> usize {
    ptr::from_ref(&CONTEXT) as usize
}

const FRAME_KEYWORD: [u16; 5] = ascii_to_utf16(b"Frame");

unsafe extern "win64" fn set_options(driver: NDIS_HANDLE, _context: NDIS_HANDLE) -> i32 {
    SET_OPTIONS_HANDLE.store(driver as usize, Ordering::SeqCst);
    let mut ndk = NDIS_NDK_PROVIDER_CHARACTERISTICS::new(open_ndk, close_ndk);
    // SAFETY: inside MiniportSetOptions with the handle it was given.
    unsafe { NdisSetOptionalHandlers(driver, ndk.as_optional_handlers()) }
}

fn set_attributes<T>(handle: NDIS_HANDLE, mut attributes: T) -> i32 {
    // SAFETY: a whole attribute structure that starts with its header.
    unsafe { NdisMSetMiniportAttributes(handle, ptr::from_mut(&mut attributes).cast()) }
}

fn read_frame(handle: NDIS_HANDLE) {
    let mut object = NDIS_CONFIGURATION_OBJECT::new(handle);
    let mut config: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL, our adapter handle, valid out-pointer.
    let status = unsafe { NdisOpenConfigurationEx(&raw mut object, &raw mut config) };
    assert_eq!(status, NDIS_STATUS_SUCCESS);
    let mut name = UNICODE_STRING::from_static(&FRAME_KEYWORD);
    let mut status = NDIS_STATUS_FAILURE;
    let mut value: *mut NDIS_CONFIGURATION_PARAMETER = ptr::null_mut();
    // SAFETY: an open configuration handle, valid out-pointers.
    unsafe {
        NdisReadConfiguration(
            &raw mut status,
            &raw mut value,
            config,
            &raw mut name,
            NdisParameterInteger,
        );
    };
    assert_eq!(status, NDIS_STATUS_SUCCESS);
    // SAFETY: a successful read returns a parameter valid until the close.
    let parameter = unsafe { *value };
    // SAFETY: an integer parameter's live member is IntegerData.
    let frame = unsafe { parameter.ParameterData.IntegerData };
    FRAME.store(frame as usize, Ordering::SeqCst);
    // SAFETY: opened above, closed once.
    unsafe { NdisCloseConfiguration(config) };
}

unsafe extern "win64" fn work(_context: PVOID, _item: NDIS_HANDLE) {
    WORK_IRQL.store(cpu::current() + 1, Ordering::SeqCst);
    WORK_ON_WORKER.store(cpu::current_name() == "worker", Ordering::SeqCst);
    let mut event = NET_PNP_EVENT_NOTIFICATION::new(NetEventNDKEnable);
    let handle = MINIPORT_HANDLE.load(Ordering::SeqCst) as NDIS_HANDLE;
    // SAFETY: PASSIVE_LEVEL work item, outside any OID request.
    let status = unsafe { NdisMNetPnPEvent(handle, &raw mut event) };
    assert_eq!(status, NDIS_STATUS_SUCCESS);
}

unsafe extern "win64" fn initialize(
    handle: NDIS_HANDLE,
    _driver_context: NDIS_HANDLE,
    params: *mut NDIS_MINIPORT_INIT_PARAMETERS,
) -> i32 {
    // SAFETY: NDIS's parameters for the call.
    let params = unsafe { *params };
    assert!(params.IfIndex != 0 && params.NetLuid.Value != 0);
    MINIPORT_HANDLE.store(handle as usize, Ordering::SeqCst);
    read_frame(handle);
    let registration = NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES::new(
        context() as NDIS_HANDLE,
        0,
        0,
        NdisInterfaceInternal,
    );
    assert_eq!(set_attributes(handle, registration), NDIS_STATUS_SUCCESS);
    let mut general = NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new();
    general.MtuSize = 1500;
    general.SupportedOidList = OIDS.as_ptr().cast_mut();
    general.SupportedOidListLength = size_of_val(&OIDS) as u32;
    assert_eq!(set_attributes(handle, general), NDIS_STATUS_SUCCESS);
    let mut info = NDK_ADAPTER_INFO {
        Version: NDK_VERSION_1_2,
        ..NDK_ADAPTER_INFO::default()
    };
    let mut caps = NDIS_NDK_CAPABILITIES::new(&raw mut info);
    caps.MaxQpCount = 7;
    let ndk = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES::new(true, &raw mut caps);
    assert_eq!(set_attributes(handle, ndk), NDIS_STATUS_SUCCESS);
    // SAFETY: our adapter handle, PASSIVE_LEVEL.
    let item = unsafe { NdisAllocateIoWorkItem(handle) };
    assert!(!item.is_null());
    WORK_ITEM.store(item as usize, Ordering::SeqCst);
    // SAFETY: a fresh work item and a static routine.
    unsafe { NdisQueueIoWorkItem(item, Some(work), ptr::null_mut()) };
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn halt(_context: NDIS_HANDLE, _action: NDIS_HALT_ACTION) {
    assert!(workitem::wait_idle(Duration::from_secs(5)));
    let item = WORK_ITEM.swap(0, Ordering::SeqCst) as NDIS_HANDLE;
    // SAFETY: allocated in initialize, no longer queued.
    unsafe { NdisFreeIoWorkItem(item) };
    HALTED.store(true, Ordering::SeqCst);
}

unsafe extern "win64" fn unload(_driver: *mut DRIVER_OBJECT) {
    // SAFETY: PASSIVE_LEVEL, the handle registration gave.
    unsafe { NdisMDeregisterMiniportDriver(DRIVER_HANDLE.load(Ordering::SeqCst) as NDIS_HANDLE) };
}

unsafe extern "win64" fn pause(_c: NDIS_HANDLE, _p: *mut NDIS_MINIPORT_PAUSE_PARAMETERS) -> i32 {
    NDIS_STATUS_SUCCESS
}

/// Pends and completes from another thread, as a miniport finishing in a
/// DPC would.
unsafe extern "win64" fn restart(
    _c: NDIS_HANDLE,
    _p: *mut NDIS_MINIPORT_RESTART_PARAMETERS,
) -> i32 {
    let handle = MINIPORT_HANDLE.load(Ordering::SeqCst);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        // SAFETY: the adapter whose restart pended.
        unsafe { NdisMRestartComplete(handle as NDIS_HANDLE, NDIS_STATUS_SUCCESS) };
    });
    NDIS_STATUS_PENDING
}

unsafe extern "win64" fn oid(_c: NDIS_HANDLE, request: *mut NDIS_OID_REQUEST) -> i32 {
    // SAFETY: NDIS's request for the call.
    let data = unsafe { (*request).DATA };
    // SAFETY: a query (the only kind this test sends).
    let query = unsafe { data.QUERY_INFORMATION };
    if query.Oid != PENDED_OID {
        return ndis::NDIS_STATUS_NOT_SUPPORTED;
    }
    let (handle, request) = (MINIPORT_HANDLE.load(Ordering::SeqCst), request as usize);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        let request = request as *mut NDIS_OID_REQUEST;
        // SAFETY: the pended request, ours until completed.
        let data = unsafe { &mut (*request).DATA };
        // SAFETY: a query: QUERY_INFORMATION is the live member.
        let buffer = unsafe { data.QUERY_INFORMATION.InformationBuffer };
        // SAFETY: the test's buffer holds at least 4 bytes.
        unsafe { buffer.cast::<[u8; 4]>().write(ANSWER.to_ne_bytes()) };
        data.QUERY_INFORMATION.BytesWritten = 4;
        // SAFETY: completes the pended request once.
        unsafe { NdisMOidRequestComplete(handle as NDIS_HANDLE, request, NDIS_STATUS_SUCCESS) };
    });
    NDIS_STATUS_PENDING
}

unsafe extern "win64" fn send(
    _c: NDIS_HANDLE,
    lists: *mut NET_BUFFER_LIST,
    _p: NDIS_PORT_NUMBER,
    _f: ULONG,
) {
    let mut at = lists.cast::<u8>();
    while !at.is_null() {
        let status = at
            .wrapping_add(NET_BUFFER_LIST_STATUS_OFFSET)
            .cast::<[u8; 4]>();
        let next = at
            .wrapping_add(NET_BUFFER_LIST_NEXT_OFFSET)
            .cast::<[u8; 8]>();
        // SAFETY: NDIS's list: Status at its fixed offset.
        unsafe { status.write(NDIS_STATUS_SUCCESS.to_ne_bytes()) };
        // SAFETY: `at` is a NET_BUFFER_LIST of the chain NDIS passed to this
        // send handler, not yet completed; `Next` is its pointer at offset 0.
        at = usize::from_ne_bytes(unsafe { next.read() }) as *mut u8;
    }
    let handle = MINIPORT_HANDLE.load(Ordering::SeqCst) as NDIS_HANDLE;
    // SAFETY: the chain NDIS handed us, completed once.
    unsafe { NdisMSendNetBufferListsComplete(handle, lists, 0) };
}

unsafe extern "win64" fn ret(_c: NDIS_HANDLE, _l: *mut NET_BUFFER_LIST, _f: ULONG) {}
unsafe extern "win64" fn cancel(_c: NDIS_HANDLE, _id: PVOID) {}
unsafe extern "win64" fn pnp(_c: NDIS_HANDLE, _e: *mut NET_DEVICE_PNP_EVENT) {}
unsafe extern "win64" fn shutdown(_c: NDIS_HANDLE, _a: NDIS_SHUTDOWN_ACTION) {}

static NDK_DISPATCH: NDK_ADAPTER_DISPATCH = NDK_ADAPTER_DISPATCH {
    NdkQueryExtension: None,
    NdkQueryAdapterInfo: None,
    NdkCreateCq: None,
    NdkCreatePd: None,
    NdkCreateSharedEndpoint: None,
    NdkCreateConnector: None,
    NdkCreateListener: None,
    NdkBuildLAM: None,
    NdkReleaseLAM: None,
};
static OPEN_NDK: AtomicUsize = AtomicUsize::new(0);

unsafe extern "win64" fn open_ndk(
    _context: NDIS_HANDLE,
    params: *mut NDIS_OPEN_NDK_ADAPTER_PARAMETERS,
    out: *mut *mut NDK_ADAPTER,
) -> i32 {
    // SAFETY: NDIS's parameters for the call.
    let version = unsafe { (*params).Version };
    if version.Major != 1 || version.Minor > 2 {
        return NDIS_STATUS_BAD_VERSION;
    }
    let adapter = Box::into_raw(Box::new(NDK_ADAPTER {
        Header: NDK_OBJECT_HEADER {
            Version: NDK_VERSION_1_2,
            ObjectType: NdkObjectTypeAdapter,
            ..NDK_OBJECT_HEADER::default()
        },
        Dispatch: &raw const NDK_DISPATCH,
    }));
    OPEN_NDK.fetch_add(1, Ordering::SeqCst);
    // SAFETY: NDIS's out-pointer.
    unsafe { out.write(adapter) };
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn close_ndk(_context: NDIS_HANDLE, adapter: *mut NDK_ADAPTER) {
    // SAFETY: an adapter `open_ndk` boxed, closed once.
    drop(unsafe { Box::from_raw(adapter) });
    OPEN_NDK.fetch_sub(1, Ordering::SeqCst);
}

fn characteristics() -> NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
        SetOptionsHandler: Some(set_options),
        InitializeHandlerEx: Some(initialize),
        HaltHandlerEx: Some(halt),
        UnloadHandler: Some(unload),
        PauseHandler: Some(pause),
        RestartHandler: Some(restart),
        OidRequestHandler: Some(oid),
        SendNetBufferListsHandler: Some(send),
        ReturnNetBufferListsHandler: Some(ret),
        CancelSendHandler: Some(cancel),
        DevicePnPEventNotifyHandler: Some(pnp),
        ShutdownHandlerEx: Some(shutdown),
        CancelOidRequestHandler: Some(cancel),
        ..NDIS_MINIPORT_DRIVER_CHARACTERISTICS::new(0, 1)
    }
}

/// A fresh NDIS table that accepts registration from `driver_object`.
pub(super) fn fresh_ndis(driver_object: usize, registry_path: usize) {
    state::reset();
    state::with(|n| {
        n.driver_object = driver_object;
        n.registry_path = registry_path;
    });
    workitem::start();
}

fn register(driver_object: usize, registry_path: usize) -> i32 {
    let mut chars = characteristics();
    let mut handle: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL; our characteristics and out-pointer; the
    // driver object and path are only compared.
    let status = unsafe {
        NdisMRegisterMiniportDriver(
            driver_object as *mut DRIVER_OBJECT,
            registry_path as *mut UNICODE_STRING,
            ptr::null_mut(),
            &raw mut chars,
            &raw mut handle,
        )
    };
    if status == NDIS_STATUS_SUCCESS {
        DRIVER_HANDLE.store(handle as usize, Ordering::SeqCst);
    }
    status
}

#[test]
fn a_rust_miniport_lives_through_the_whole_lifecycle() {
    let _serial = serial();
    let (driver_object, registry_path) = (0x1000, 0x2000);
    fresh_ndis(driver_object, registry_path);

    // A driver object NDIS did not give DriverEntry is refused.
    assert_eq!(register(0x3000, registry_path), NDIS_STATUS_FAILURE);
    assert_eq!(register(driver_object, registry_path), NDIS_STATUS_SUCCESS);
    let driver = DRIVER_HANDLE.load(Ordering::SeqCst);
    assert_ne!(driver, 0);
    assert_eq!(
        SET_OPTIONS_HANDLE.load(Ordering::SeqCst),
        driver,
        "SetOptions ran inside the registration"
    );
    assert!(state::with(|n| n
        .driver
        .as_ref()
        .is_some_and(|d| d.ndk.is_some())));
    // Registered twice: refused.
    assert_eq!(register(driver_object, registry_path), NDIS_STATUS_FAILURE);

    let id = miniport::initialize(vec![("frame".to_owned(), Keyword::Str("2048".to_owned()))])
        .expect("initialize (with a pended restart)");
    assert_eq!(
        FRAME.load(Ordering::SeqCst),
        2048,
        "a REG_SZ keyword read as an integer"
    );
    let (handle, ctx) = miniport::adapter(id).expect("live adapter");
    assert_eq!(handle, MINIPORT_HANDLE.load(Ordering::SeqCst));
    assert_eq!(ctx, context());
    assert!(state::wait_until(Duration::from_secs(5), |n| {
        n.adapter_by_id(id)
            .is_some_and(|a| a.pnp_events == [NetEventNDKEnable])
    }));
    assert_eq!(WORK_IRQL.load(Ordering::SeqCst), cpu::PASSIVE_LEVEL + 1);
    assert!(
        WORK_ON_WORKER.load(Ordering::SeqCst),
        "the work item ran on the worker processor"
    );
    let general = state::with(|n| n.adapter_by_id(id).and_then(|a| a.general.clone())).unwrap();
    assert_eq!(general.supported_oids, OIDS);
    let ndk = state::with(|n| n.adapter_by_id(id).and_then(|a| a.ndk)).unwrap();
    assert!(ndk.enabled && ndk.capabilities.MaxQpCount == 7 && ndk.capabilities.NdkInfo.is_null());
    assert_eq!(ndk.info.Version, NDK_VERSION_1_2);

    // A pended OID completes from another thread.
    let mut buf = [0u8; 8];
    assert_eq!(
        miniport::oid_request(id, OidKind::Query, PENDED_OID, &mut buf),
        Ok(4)
    );
    assert_eq!(u32::from_ne_bytes(buf[..4].try_into().unwrap()), ANSWER);
    assert_eq!(
        miniport::oid_request(id, OidKind::Query, 0x0001_0102, &mut buf),
        Err(ndis::NDIS_STATUS_NOT_SUPPORTED)
    );

    assert_eq!(miniport::send(id, 3, false), vec![NDIS_STATUS_SUCCESS; 3]);
    assert_eq!(miniport::send(id, 1, true), vec![NDIS_STATUS_SUCCESS]);
    assert_eq!(miniport::pause(id), NDIS_STATUS_SUCCESS);
    assert_eq!(miniport::restart(id), NDIS_STATUS_SUCCESS);

    let adapter = miniport::open_ndk(id, NDK_VERSION_1_2).expect("NDK open");
    assert_eq!(
        miniport::open_ndk(id, NDK_VERSION::new(2, 0)).err(),
        Some(NDIS_STATUS_BAD_VERSION)
    );
    assert_eq!(OPEN_NDK.load(Ordering::SeqCst), 1);
    miniport::close_ndk(id, adapter as usize);
    assert_eq!(OPEN_NDK.load(Ordering::SeqCst), 0);

    // Halt closes what NDK adapters are left, after a pause.
    let _left_open = miniport::open_ndk(id, NDK_VERSION_1_2).expect("NDK open");
    miniport::halt(id);
    assert!(HALTED.load(Ordering::SeqCst));
    assert_eq!(
        OPEN_NDK.load(Ordering::SeqCst),
        0,
        "halt closed the NDK adapter"
    );
    assert_eq!(
        state::with(|n| n.adapter_by_id(id).map(|a| a.state)),
        Some(AdapterState::Gone)
    );
    assert!(miniport::adapter(id).is_none());

    miniport::unload(driver_object);
    assert!(state::with(|n| n.driver.is_none()
        && n.work_items.is_empty()
        && n.configurations.is_empty()));
    assert_eq!(workitem::stop(Duration::from_secs(5)), 0);
}

#[test]
fn attributes_go_in_order_and_unknown_revisions_are_bad_version() {
    let _serial = serial();
    fresh_ndis(0x1000, 0x2000);
    let handle = state::Handle::new();
    let addr = handle.addr();
    state::with(|n| {
        n.adapters
            .insert(addr, state::Adapter::new(1, handle, Vec::new()));
    });
    let h = addr as NDIS_HANDLE;
    // General before registration: refused.
    assert_eq!(
        set_attributes(h, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new()),
        NDIS_STATUS_FAILURE
    );
    let mut registration = NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES::new(
        context() as NDIS_HANDLE,
        0,
        0,
        NdisInterfaceInternal,
    );
    registration.Header =
        NDIS_OBJECT_HEADER::new(registration.Header.Type, 9, registration.Header.Size);
    assert_eq!(set_attributes(h, registration), NDIS_STATUS_BAD_VERSION);
    registration.Header.Revision = 1;
    assert_eq!(set_attributes(h, registration), NDIS_STATUS_SUCCESS);
    assert_eq!(
        set_attributes(h, registration),
        NDIS_STATUS_FAILURE,
        "registration twice"
    );
    assert_eq!(
        set_attributes(h, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new()),
        NDIS_STATUS_SUCCESS
    );
    let recorded = state::with(|n| n.adapters.get(&addr).and_then(|a| a.registration));
    assert_eq!(recorded.map(|r| r.context), Some(context()));
    // Outside MiniportInitializeEx: refused.
    state::with(|n| {
        if let Some(a) = n.adapters.get_mut(&addr) {
            a.state = AdapterState::Running;
        }
    });
    assert_eq!(
        set_attributes(h, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new()),
        NDIS_STATUS_FAILURE
    );
    assert_eq!(workitem::stop(Duration::from_secs(5)), 0);
}

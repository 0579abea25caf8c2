//! NDIS calling the miniport: `MiniportInitializeEx`, `MiniportRestart`,
//! `MiniportPause`, `MiniportHaltEx`, `MiniportOidRequest`, the NDK
//! open/close handlers, `MiniportSendNetBufferLists` and
//! `MiniportDriverUnload`, each at the IRQL NDIS uses (PASSIVE_LEVEL, on
//! the calling thread) with the parameter structures NDIS builds, and with
//! the checks NDIS applies to what comes back: the handler returns at the
//! IRQL it was entered at (0xC8), a pended operation completes within the
//! watchdog's time (0x7C / 0x25), an OID answer fits its buffer
//! (0x7C / 0x1D) and `OID_NDK_SET_STATE` never pends.

use std::cell::Cell;
use std::ptr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use ndis::{
    DRIVER_OBJECT, IF_TYPE_ETHERNET_CSMACD, NDIS_HANDLE, NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    NDIS_MINIPORT_INIT_PARAMETERS, NDIS_MINIPORT_INIT_PARAMETERS_REVISION_1,
    NDIS_MINIPORT_PAUSE_PARAMETERS, NDIS_MINIPORT_PAUSE_PARAMETERS_REVISION_1,
    NDIS_MINIPORT_RESTART_PARAMETERS, NDIS_MINIPORT_RESTART_PARAMETERS_REVISION_1,
    NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT, NDIS_OBJECT_TYPE_MINIPORT_INIT_PARAMETERS,
    NDIS_OBJECT_TYPE_OID_REQUEST, NDIS_OID_REQUEST, NDIS_OID_REQUEST_REVISION_2,
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS, NDIS_PAUSE_NDIS_INTERNAL, NDIS_SEND_FLAGS_DISPATCH_LEVEL,
    NDIS_SIZEOF_MINIPORT_INIT_PARAMETER_REVISION_1,
    NDIS_SIZEOF_MINIPORT_PAUSE_PARAMETERS_REVISION_1,
    NDIS_SIZEOF_MINIPORT_RESTART_PARAMETERS_REVISION_1, NDIS_SIZEOF_OID_REQUEST_REVISION_2,
    NDIS_STATUS_FAILURE, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS,
    NET_LUID, NdisHaltDeviceDisabled, NdisRequestQueryInformation, NdisRequestSetInformation,
    OID_NDK_SET_STATE, PASSIVE_LEVEL,
};
use ndkpi::{NDIS_STATUS, NDK_ADAPTER, NDK_VERSION, PVOID};

use super::checks::{
    NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE, NDIS_BUGCHECK_INVALID_OID_COMPLETION,
    NDIS_BUGCHECK_OID_INVALID_BUFFER_LENGTH, NDIS_BUGCHECK_WATCHDOG, WATCHDOG_MINIPORT_OID,
    WATCHDOG_MINIPORT_PAUSE, ndis_bugcheck, returned_at_raised_irql,
};
use super::datapath::NblChain;
use super::state::{self, Adapter, AdapterState, Handle};
use super::upper::{self, VInfo};
use crate::ids::AdapterId;
use crate::ids::Keyword;
use crate::kernel::cpu;

/// How long a pended OID may take (the `NdisTimedOidComplete` rule of
/// NDIS verification: 12 s).
const OID_TIMEOUT: Duration = Duration::from_secs(12);
/// How long a pended pause or restart may take before the NDIS watchdog
/// fires.
const PAUSE_RESTART_TIMEOUT: Duration = Duration::from_secs(20);
/// How long sent lists may stay with the miniport (`NdisTimedDataSend`:
/// 30 s).
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Interface indexes the bottle assigns start above the host's own.
const FIRST_IF_INDEX: u32 = 0x100;

thread_local! {
    /// The miniport handle whose `MiniportOidRequest` this thread is in.
    static IN_OID: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread is inside `MiniportOidRequest` of adapter `handle`.
pub fn in_oid_request_of(handle: usize) -> bool {
    IN_OID.with(Cell::get) == handle
}

/// NDIS serialises the OID requests it sends a miniport.
static OID_SERIAL: Mutex<()> = Mutex::new(());

/// Runs driver code the way NDIS enters it from a system thread: at
/// PASSIVE_LEVEL, and checks it returns there.
fn call_passive<R>(handler: &str, addr: usize, f: impl FnOnce() -> R) -> R {
    let entered = cpu::current();
    assert_eq!(
        entered, PASSIVE_LEVEL,
        "the bottle calls {handler} from a thread at IRQL {entered}; NDIS calls it at PASSIVE_LEVEL"
    );
    let r = f();
    if cpu::current() != entered {
        returned_at_raised_irql(handler, addr, entered);
    }
    r
}

/// The registered driver's characteristics and context.
fn driver() -> Option<(NDIS_MINIPORT_DRIVER_CHARACTERISTICS, usize)> {
    state::with(|n| n.driver.as_ref().map(|d| (d.characteristics, d.context)))
}

/// The miniport handle and adapter context of the live adapter `id`.
pub fn adapter(id: u32) -> Option<(usize, usize)> {
    state::with(|n| {
        let a = n.adapter_by_id(id)?;
        (a.state != AdapterState::Gone)
            .then(|| (a.handle.addr(), a.registration.map_or(0, |r| r.context)))
    })
}

fn set_state(handle: usize, s: AdapterState) {
    state::with(|n| {
        if let Some(a) = n.adapters.get_mut(&handle) {
            a.state = s;
        }
    });
    state::changed();
}

/// What NDIS passes an intermediate driver's virtual miniport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImStart {
    /// `IMDeviceInstanceContext` (from `NdisIMInitializeDeviceInstanceEx`).
    pub context: usize,
    /// The NIC below it.
    pub nic: u32,
}

/// Creates an adapter with `keywords` and runs `MiniportInitializeEx`
/// then `MiniportRestart`; its id, or the failing status (a failed restart
/// halts the adapter, as NDIS does).
pub fn initialize(keywords: Vec<(String, Keyword)>) -> Result<u32, NDIS_STATUS> {
    initialize_adapter(keywords, None, |_| {})
}

/// [`initialize`], for an intermediate driver's virtual miniport when
/// `im` is given; `created` learns the new adapter's id before
/// `MiniportInitializeEx` runs.
pub fn initialize_adapter(
    keywords: Vec<(String, Keyword)>,
    im: Option<ImStart>,
    created: impl FnOnce(u32),
) -> Result<u32, NDIS_STATUS> {
    let Some((characteristics, driver_context)) = driver() else {
        return Err(NDIS_STATUS_FAILURE);
    };
    let Some(init) = characteristics.InitializeHandlerEx else {
        return Err(NDIS_STATUS_FAILURE);
    };
    let handle = Handle::new();
    let addr = handle.addr();
    let id = state::with(|n| {
        n.next_adapter += 1;
        let id = n.next_adapter;
        let mut adapter = Adapter::new(id, handle, keywords);
        adapter.nic = im.map(|i| i.nic);
        adapter.if_index = FIRST_IF_INDEX + id;
        adapter.luid = (u64::from(IF_TYPE_ETHERNET_CSMACD) << 48) | (u64::from(id) << 24);
        n.adapters.insert(addr, adapter);
        id
    });
    created(id);
    // SAFETY: all-zero bytes are valid for the parameters (integers and
    // nullable pointers); NDIS passes no resources to a virtual adapter.
    let mut params: NDIS_MINIPORT_INIT_PARAMETERS = unsafe { std::mem::zeroed() };
    params.Header = NDIS_OBJECT_HEADER::new(
        NDIS_OBJECT_TYPE_MINIPORT_INIT_PARAMETERS,
        NDIS_MINIPORT_INIT_PARAMETERS_REVISION_1,
        NDIS_SIZEOF_MINIPORT_INIT_PARAMETER_REVISION_1,
    );
    params.IfIndex = FIRST_IF_INDEX + id;
    // NET_LUID: IfType in bits 48-63, NetLuidIndex in bits 24-47.
    params.NetLuid = NET_LUID {
        Value: (u64::from(IF_TYPE_ETHERNET_CSMACD) << 48) | (u64::from(id) << 24),
    };
    params.IMDeviceInstanceContext = im.map_or(ptr::null_mut(), |i| i.context as NDIS_HANDLE);
    let status = call_passive("MiniportInitializeEx", init as usize, || {
        // SAFETY: the driver's MiniportInitializeEx, called as NDIS calls
        // it: PASSIVE_LEVEL, a fresh miniport handle, the driver context
        // and revision-1 parameters that live for the call.
        unsafe {
            init(
                addr as NDIS_HANDLE,
                driver_context as NDIS_HANDLE,
                &raw mut params,
            )
        }
    });
    let registered = state::with(|n| {
        n.adapters
            .get(&addr)
            .is_some_and(|a| a.registration.is_some() && a.general.is_some())
    });
    if status != NDIS_STATUS_SUCCESS || !registered {
        // A failed initialisation gets no halt: the miniport undid its own
        // work. One that "succeeded" without its registration and general
        // attributes is failed by NDIS (what it left behind shows at
        // unload).
        set_state(addr, AdapterState::Gone);
        return Err(if status == NDIS_STATUS_SUCCESS {
            NDIS_STATUS_FAILURE
        } else {
            status
        });
    }
    set_state(addr, AdapterState::Paused);
    let status = restart(id);
    if status != NDIS_STATUS_SUCCESS {
        halt(id);
        return Err(status);
    }
    bind_upper(id);
    Ok(id)
}

/// Tells the stack above that adapter `id` is running and bound to it.
fn bind_upper(id: u32) {
    let Some(stack) = upper::upper() else { return };
    let info = state::with(|n| {
        let a = n.adapter_by_id(id)?;
        let general = a.general.as_ref()?;
        let mac: [u8; 6] = general.current_mac.get(..6)?.try_into().ok()?;
        let info = VInfo {
            adapter: AdapterId(id),
            luid: a.luid,
            if_index: a.if_index,
            mac,
            mtu: general.mtu,
        };
        Some((info, a.link_indicated))
    });
    if let Some((info, link)) = info {
        stack.bound(info);
        // A link state V indicated before the stack bound (the stack
        // starts from the general attributes' media state).
        if let Some(up) = link {
            stack.link_state(AdapterId(id), up);
        }
    }
}

/// Waits for the completion of a pended pause or restart.
fn wait_pause_restart(handle: usize, what: &str, watchdog: u64) -> NDIS_STATUS {
    let mut status = None;
    let done = state::wait_until(PAUSE_RESTART_TIMEOUT, |n| {
        status = n
            .adapters
            .get(&handle)
            .and_then(|a| a.pending_pause_restart);
        status.is_some()
    });
    if !done {
        ndis_bugcheck(
            NDIS_BUGCHECK_WATCHDOG,
            watchdog as usize,
            handle,
            format!("{what} pended and did not complete within {PAUSE_RESTART_TIMEOUT:?}"),
        );
    }
    status.unwrap_or(NDIS_STATUS_FAILURE)
}

/// Runs a pause or restart handler with the adapter in `transit`; its
/// final status (after a pended completion).
fn pause_or_restart(
    handle: usize,
    what: &str,
    addr: usize,
    transit: AdapterState,
    watchdog: u64,
    call: impl FnOnce() -> NDIS_STATUS,
) -> NDIS_STATUS {
    state::with(|n| {
        if let Some(a) = n.adapters.get_mut(&handle) {
            a.state = transit;
            a.pending_pause_restart = None;
        }
    });
    let status = call_passive(what, addr, call);
    let early = state::with(|n| {
        n.adapters
            .get(&handle)
            .is_some_and(|a| a.pending_pause_restart.is_some())
    });
    if status == NDIS_STATUS_PENDING {
        wait_pause_restart(handle, what, watchdog)
    } else if early {
        ndis_bugcheck(
            NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE,
            handle,
            0,
            format!("{what} returned {status:#x} after completing itself"),
        )
    } else {
        status
    }
}

/// `MiniportRestart` of a paused adapter; the status.
///
/// # Panics
/// If the adapter is not paused (the harness misused).
pub fn restart(id: u32) -> NDIS_STATUS {
    let (handle, context) = adapter(id).expect("restart: no such live adapter");
    let current = state::with(|n| n.adapters.get(&handle).map(|a| a.state));
    assert_eq!(
        current,
        Some(AdapterState::Paused),
        "restart of an adapter that is not paused"
    );
    let Some((characteristics, _)) = driver() else {
        return NDIS_STATUS_FAILURE;
    };
    let Some(handler) = characteristics.RestartHandler else {
        return NDIS_STATUS_FAILURE;
    };
    let mut params = NDIS_MINIPORT_RESTART_PARAMETERS {
        Header: NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            NDIS_MINIPORT_RESTART_PARAMETERS_REVISION_1,
            NDIS_SIZEOF_MINIPORT_RESTART_PARAMETERS_REVISION_1,
        ),
        RestartAttributes: ptr::null_mut(),
        Flags: 0,
    };
    let status = pause_or_restart(
        handle,
        "MiniportRestart",
        handler as usize,
        AdapterState::Restarting,
        0,
        || {
            // SAFETY: the driver's MiniportRestart on its live adapter
            // context, PASSIVE_LEVEL, parameters valid for the call.
            unsafe { handler(context as NDIS_HANDLE, &raw mut params) }
        },
    );
    set_state(
        handle,
        if status == NDIS_STATUS_SUCCESS {
            AdapterState::Running
        } else {
            AdapterState::Paused
        },
    );
    if status == NDIS_STATUS_SUCCESS {
        // The protocols above may send again.
        super::datapath::restart_upper(handle);
    }
    status
}

/// `MiniportPause` of a running adapter; the status.
///
/// # Panics
/// If the adapter is not running (the harness misused).
pub fn pause(id: u32) -> NDIS_STATUS {
    let (handle, context) = adapter(id).expect("pause: no such live adapter");
    let current = state::with(|n| n.adapters.get(&handle).map(|a| a.state));
    assert_eq!(
        current,
        Some(AdapterState::Running),
        "pause of an adapter that is not running"
    );
    let Some((characteristics, _)) = driver() else {
        return NDIS_STATUS_FAILURE;
    };
    let Some(handler) = characteristics.PauseHandler else {
        return NDIS_STATUS_FAILURE;
    };
    // NDIS pauses the protocols above first and waits for their sends.
    super::datapath::pause_upper(handle);
    let mut params = NDIS_MINIPORT_PAUSE_PARAMETERS {
        Header: NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            NDIS_MINIPORT_PAUSE_PARAMETERS_REVISION_1,
            NDIS_SIZEOF_MINIPORT_PAUSE_PARAMETERS_REVISION_1,
        ),
        Flags: 0,
        PauseReason: NDIS_PAUSE_NDIS_INTERNAL,
    };
    let status = pause_or_restart(
        handle,
        "MiniportPause",
        handler as usize,
        AdapterState::Pausing,
        WATCHDOG_MINIPORT_PAUSE,
        || {
            // SAFETY: the driver's MiniportPause on its live adapter
            // context, PASSIVE_LEVEL, parameters valid for the call.
            unsafe { handler(context as NDIS_HANDLE, &raw mut params) }
        },
    );
    // MiniportPause cannot fail: the adapter is paused whatever it said.
    set_state(handle, AdapterState::Paused);
    status
}

/// Halts adapter `id` as NDIS does: the NDK adapters still open are
/// closed (NDIS has NDK consumers close before a halt), a running adapter
/// is paused, then `MiniportHaltEx`.
pub fn halt(id: u32) {
    halt_as(id, true);
}

/// Disables adapter `id` (`Disable-NetAdapter`): as [`halt`], except that
/// its NDK consumers are left to close their adapters when they will, so
/// `MiniportHaltEx` may find one still open (and must wait for it: the
/// RNIC it frees is in use). The protocols bound below an intermediate
/// driver's virtual miniport stay bound.
pub fn disable(id: u32) {
    halt_as(id, false);
}

fn halt_as(id: u32, close_consumers: bool) {
    let Some((handle, context)) = adapter(id) else {
        return;
    };
    // The protocols above unbind before the miniport goes.
    if let Some(stack) = upper::upper() {
        stack.unbound(AdapterId(id));
    }
    let open = state::with(|n| {
        n.adapters
            .get(&handle)
            .map(|a| a.open_ndk.clone())
            .unwrap_or_default()
    });
    if close_consumers {
        for ndk in open {
            close_ndk(id, ndk);
        }
    }
    if state::with(|n| n.adapters.get(&handle).map(|a| a.state)) == Some(AdapterState::Running) {
        pause(id);
    }
    set_state(handle, AdapterState::Halting);
    if let Some(halt) = driver().and_then(|(c, _)| c.HaltHandlerEx) {
        call_passive("MiniportHaltEx", halt as usize, || {
            // SAFETY: the driver's MiniportHaltEx on its live, paused
            // adapter context, PASSIVE_LEVEL; NDIS calls nothing else on it
            // afterwards.
            unsafe { halt(context as NDIS_HANDLE, NdisHaltDeviceDisabled) };
        });
    }
    set_state(handle, AdapterState::Gone);
}

/// What an OID request asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OidKind {
    /// `NdisRequestQueryInformation`.
    Query,
    /// `NdisRequestSetInformation`.
    Set,
}

/// Sends one OID request over `buffer` (answer written there for a
/// query); the bytes written (query) or read (set), or the status.
pub fn oid_request(
    id: u32,
    kind: OidKind,
    oid: u32,
    buffer: &mut [u8],
) -> Result<usize, NDIS_STATUS> {
    let outcome = oid_request_outcome(id, kind, oid, buffer);
    if outcome.status == NDIS_STATUS_SUCCESS {
        Ok(outcome.bytes_done as usize)
    } else {
        Err(outcome.status)
    }
}

/// How an OID request completed: its status and the request's byte
/// counts as the miniport left them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OidOutcome {
    /// The completion status.
    pub status: NDIS_STATUS,
    /// `BytesWritten` (query) or `BytesRead` (set).
    pub bytes_done: u32,
    /// `BytesNeeded`: what a query's answer (or a set's value) needs when
    /// the buffer was too short.
    pub bytes_needed: u32,
}

/// [`oid_request`], with the byte counts whatever the status (what a
/// caller needs to retry a `NDIS_STATUS_BUFFER_TOO_SHORT` query).
pub fn oid_request_outcome(id: u32, kind: OidKind, oid: u32, buffer: &mut [u8]) -> OidOutcome {
    let _serial = OID_SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let failed = OidOutcome {
        status: NDIS_STATUS_FAILURE,
        bytes_done: 0,
        bytes_needed: 0,
    };
    let Some((handle, context)) = adapter(id) else {
        return failed;
    };
    let Some(handler) = driver().and_then(|(c, _)| c.OidRequestHandler) else {
        return failed;
    };
    let mut request = new_request(kind, oid, buffer);
    let request_addr = ptr::from_mut(&mut *request) as usize;
    let length = buffer.len() as u32;
    // In progress from here: the miniport may complete it from another
    // thread before its handler returns NDIS_STATUS_PENDING.
    state::with(|n| {
        if let Some(a) = n.adapters.get_mut(&handle) {
            a.pending_oid = Some((request_addr, None));
        }
    });
    let outer = IN_OID.with(|c| c.replace(handle));
    let status = call_passive("MiniportOidRequest", handler as usize, || {
        // SAFETY: the driver's MiniportOidRequest on its live adapter
        // context, PASSIVE_LEVEL, with a revision-2 request that lives
        // (boxed) until it completes; its buffer is `buffer`.
        unsafe {
            handler(
                context as NDIS_HANDLE,
                request_addr as *mut NDIS_OID_REQUEST,
            )
        }
    });
    IN_OID.with(|c| c.set(outer));
    let status = if status == NDIS_STATUS_PENDING {
        if oid == OID_NDK_SET_STATE {
            ndis_bugcheck(
                NDIS_BUGCHECK_INVALID_OID_COMPLETION,
                handle,
                request_addr,
                "OID_NDK_SET_STATE returned NDIS_STATUS_PENDING (it must complete at once)"
                    .to_owned(),
            );
        }
        wait_oid(handle, oid, request_addr)
    } else if state::with(|n| {
        n.adapters
            .get(&handle)
            .and_then(|a| a.pending_oid)
            .is_some_and(|(_, s)| s.is_some())
    }) {
        ndis_bugcheck(
            NDIS_BUGCHECK_INVALID_OID_COMPLETION,
            handle,
            request_addr,
            format!(
                "OID {oid:#010x}: MiniportOidRequest returned {status:#x} after completing the \
                 request with NdisMOidRequestComplete"
            ),
        )
    } else {
        status
    };
    state::with(|n| {
        if let Some(a) = n.adapters.get_mut(&handle) {
            a.pending_oid = None;
            if status == NDIS_STATUS_SUCCESS && oid == OID_NDK_SET_STATE && kind == OidKind::Set {
                a.ndk_set_state = buffer.first().map(|b| *b != 0);
            }
        }
    });
    let (done, needed) = byte_counts(kind, &request);
    if status == NDIS_STATUS_SUCCESS && done > length {
        ndis_bugcheck(
            NDIS_BUGCHECK_OID_INVALID_BUFFER_LENGTH,
            handle,
            request_addr,
            format!("OID {oid:#010x} completed with {done} bytes for a {length}-byte buffer"),
        );
    }
    OidOutcome {
        status,
        bytes_done: done,
        bytes_needed: needed,
    }
}

/// Cancels the OID request pending on adapter `id` (one an
/// [`oid_request`] on another thread is waiting for), as NDIS does when
/// its originator gives up: `MiniportCancelOidRequest` with the request's
/// `RequestId`. Whether a request was pending.
pub fn cancel_oid_request(id: u32) -> bool {
    let Some((handle, context)) = adapter(id) else {
        return false;
    };
    let Some(handler) = driver().and_then(|(c, _)| c.CancelOidRequestHandler) else {
        return false;
    };
    // The bottle's requests carry their own address as `RequestId`
    // (`new_request`).
    let Some(request_id) = state::with(|n| {
        n.adapters
            .get(&handle)
            .and_then(|a| a.pending_oid)
            .map(|(r, _)| r)
    }) else {
        return false;
    };
    call_passive("MiniportCancelOidRequest", handler as usize, || {
        // SAFETY: the driver's MiniportCancelOidRequest on its live
        // adapter context, PASSIVE_LEVEL (<= DISPATCH_LEVEL is allowed).
        unsafe { handler(context as NDIS_HANDLE, request_id as PVOID) };
    });
    true
}

/// A revision-2 request of `kind` for `oid` over `buffer`, as NDIS builds
/// it (its `RequestId` its own address).
fn new_request(kind: OidKind, oid: u32, buffer: &mut [u8]) -> Box<NDIS_OID_REQUEST> {
    // SAFETY: all-zero bytes are a valid request (integers, nullable
    // pointers, byte arrays and a union of such).
    let mut request: Box<NDIS_OID_REQUEST> = Box::new(unsafe { std::mem::zeroed() });
    request.Header = NDIS_OBJECT_HEADER::new(
        NDIS_OBJECT_TYPE_OID_REQUEST,
        NDIS_OID_REQUEST_REVISION_2,
        NDIS_SIZEOF_OID_REQUEST_REVISION_2,
    );
    let request_addr = ptr::from_mut(&mut *request) as usize;
    request.RequestId = request_addr as *mut _;
    request.SupportedRevision = 1;
    let length = buffer.len() as u32;
    match kind {
        OidKind::Query => {
            request.RequestType = NdisRequestQueryInformation;
            request.DATA.QUERY_INFORMATION.Oid = oid;
            request.DATA.QUERY_INFORMATION.InformationBuffer = buffer.as_mut_ptr().cast();
            request.DATA.QUERY_INFORMATION.InformationBufferLength = length;
        }
        OidKind::Set => {
            request.RequestType = NdisRequestSetInformation;
            request.DATA.SET_INFORMATION.Oid = oid;
            request.DATA.SET_INFORMATION.InformationBuffer = buffer.as_mut_ptr().cast();
            request.DATA.SET_INFORMATION.InformationBufferLength = length;
        }
    }
    request
}

/// A completed request's `BytesWritten` (query) or `BytesRead` (set), and
/// its `BytesNeeded`.
fn byte_counts(kind: OidKind, request: &NDIS_OID_REQUEST) -> (u32, u32) {
    let data = request.DATA;
    match kind {
        OidKind::Query => {
            // SAFETY: a query request: QUERY_INFORMATION is the live member.
            let query = unsafe { data.QUERY_INFORMATION };
            (query.BytesWritten, query.BytesNeeded)
        }
        OidKind::Set => {
            // SAFETY: a set request: SET_INFORMATION is the live member.
            let set = unsafe { data.SET_INFORMATION };
            (set.BytesRead, set.BytesNeeded)
        }
    }
}

fn wait_oid(handle: usize, oid: u32, request: usize) -> NDIS_STATUS {
    let mut status = None;
    let done = state::wait_until(OID_TIMEOUT, |n| {
        status = n
            .adapters
            .get(&handle)
            .and_then(|a| a.pending_oid)
            .filter(|(r, _)| *r == request)
            .and_then(|(_, s)| s);
        status.is_some()
    });
    if !done {
        ndis_bugcheck(
            NDIS_BUGCHECK_WATCHDOG,
            WATCHDOG_MINIPORT_OID as usize,
            handle,
            format!("OID {oid:#010x} pended and did not complete within {OID_TIMEOUT:?}"),
        );
    }
    status.unwrap_or(NDIS_STATUS_FAILURE)
}

/// Opens an NDK adapter on adapter `id` through `OpenNDKAdapterHandler`.
///
/// # Panics
/// If the provider reports success but hands out no adapter, or one whose
/// header is not an adapter of a version compatible with `version`.
pub fn open_ndk(id: u32, version: NDK_VERSION) -> Result<*mut NDK_ADAPTER, NDIS_STATUS> {
    let Some((handle, context)) = adapter(id) else {
        return Err(NDIS_STATUS_FAILURE);
    };
    let Some(open) = state::with(|n| n.driver.as_ref().and_then(|d| d.ndk)).map(|h| h.open) else {
        return Err(NDIS_STATUS_NOT_SUPPORTED);
    };
    // The default switch and VPort (0): the adapter is not SR-IOV.
    let mut params = NDIS_OPEN_NDK_ADAPTER_PARAMETERS {
        Version: version,
        SwitchId: 0,
        VPortId: 0,
    };
    let mut ndk: *mut NDK_ADAPTER = ptr::null_mut();
    let status = call_passive("OpenNDKAdapterHandler", open as usize, || {
        // SAFETY: the driver's OpenNDKAdapterHandler on its live adapter
        // context, PASSIVE_LEVEL, parameters and out-pointer valid for the
        // call.
        unsafe { open(context as NDIS_HANDLE, &raw mut params, &raw mut ndk) }
    });
    if status != NDIS_STATUS_SUCCESS {
        return Err(status);
    }
    assert!(
        !ndk.is_null(),
        "OpenNDKAdapterHandler succeeded without an NDK_ADAPTER"
    );
    // SAFETY: the provider's new adapter object, which starts with its
    // NDK_OBJECT_HEADER.
    let header = unsafe { (*ndk).Header };
    // SAFETY: `ndk` is the non-null NDK_ADAPTER the driver's
    // OpenNDKAdapterHandler just returned; `Dispatch` follows its header.
    let dispatch = unsafe { (*ndk).Dispatch };
    assert!(
        header.ObjectType == ndkpi::NdkObjectTypeAdapter
            && header.Version.Major == version.Major
            && header.Version.Minor >= version.Minor
            && !dispatch.is_null(),
        "OpenNDKAdapterHandler returned an adapter with header {header:?} and dispatch {dispatch:?} \
         for a {version:?} open"
    );
    state::with(|n| {
        if let Some(a) = n.adapters.get_mut(&handle) {
            a.open_ndk.push(ndk as usize);
        }
    });
    Ok(ndk)
}

/// Closes an NDK adapter opened by [`open_ndk`] on adapter `id`.
///
/// # Panics
/// If `ndk` is not open on that adapter.
pub fn close_ndk(id: u32, ndk: usize) {
    let (handle, context) = adapter(id).expect("close_ndk: no such live adapter");
    let known = state::with(|n| {
        n.adapters.get_mut(&handle).is_some_and(|a| {
            let before = a.open_ndk.len();
            a.open_ndk.retain(|x| *x != ndk);
            a.open_ndk.len() != before
        })
    });
    assert!(
        known,
        "close_ndk: {ndk:#x} is not an NDK adapter open on adapter {id}"
    );
    let Some(close) = state::with(|n| n.driver.as_ref().and_then(|d| d.ndk)).map(|h| h.close)
    else {
        return;
    };
    call_passive("CloseNDKAdapterHandler", close as usize, || {
        // SAFETY: the driver's CloseNDKAdapterHandler on its live adapter
        // context, PASSIVE_LEVEL, with an adapter it opened and that is
        // closed once.
        unsafe { close(context as NDIS_HANDLE, ndk as *mut NDK_ADAPTER) };
    });
}

/// Sends `count` empty lists to running adapter `id` (at DISPATCH_LEVEL
/// if `at_dispatch`) and waits for their completion; their statuses in
/// completion order.
///
/// # Panics
/// If the adapter is not running (NDIS sends nothing to a paused miniport).
pub fn send(id: u32, count: usize, at_dispatch: bool) -> Vec<NDIS_STATUS> {
    let Some((handle, context)) = adapter(id) else {
        return Vec::new();
    };
    let current = state::with(|n| n.adapters.get(&handle).map(|a| a.state));
    assert_eq!(
        current,
        Some(AdapterState::Running),
        "send to an adapter that is not running"
    );
    let Some(handler) = driver().and_then(|(c, _)| c.SendNetBufferListsHandler) else {
        return Vec::new();
    };
    let mut chain = NblChain::new(count);
    let lists = chain.addrs();
    let before = state::with(|n| {
        n.adapters.get_mut(&handle).map_or(0, |a| {
            a.sends_outstanding.extend(&lists);
            a.send_completions.len()
        })
    });
    let head = chain.head() as usize;
    let flags = if at_dispatch {
        NDIS_SEND_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    let call = || {
        // SAFETY: the driver's MiniportSendNetBufferLists on its live
        // adapter context with a chain the bottle owns until completion
        // (`chain` lives until the wait below), at the IRQL `flags` says.
        unsafe { handler(context as NDIS_HANDLE, head as *mut _, 0, flags) };
    };
    if at_dispatch {
        cpu::run_at_dispatch(call);
    } else {
        call_passive("MiniportSendNetBufferLists", handler as usize, call);
    }
    let done = state::wait_until(SEND_TIMEOUT, |n| {
        n.adapters
            .get(&handle)
            .is_none_or(|a| lists.iter().all(|l| !a.sends_outstanding.contains(l)))
    });
    if !done {
        ndis_bugcheck(
            NDIS_BUGCHECK_WATCHDOG,
            0,
            handle,
            format!("{count} sent lists were not completed within {SEND_TIMEOUT:?}"),
        );
    }
    drop(chain);
    state::with(|n| {
        n.adapters
            .get(&handle)
            .map(|a| a.send_completions[before..].to_vec())
            .unwrap_or_default()
    })
}

/// Runs `MiniportDriverUnload` with the bottle's driver object (its
/// address).
pub fn unload(driver_object: usize) {
    if let Some(unload) = driver().and_then(|(c, _)| c.UnloadHandler) {
        call_passive("MiniportDriverUnload", unload as usize, || {
            // SAFETY: the driver's MiniportDriverUnload, PASSIVE_LEVEL,
            // every adapter halted, with the driver object DriverEntry got.
            unsafe { unload(driver_object as *mut DRIVER_OBJECT) };
        });
    }
}

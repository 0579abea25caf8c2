//! The adapter's edge: its dispatch table (`NdkQueryAdapterInfo`, the
//! create entries of its children, `NdkBuildLAM`/`NdkReleaseLAM`), the
//! close entry the driver calls, the device's event sink, and what every
//! kind's table shares (the common close and `NdkQueryExtension`).

use core::ffi::c_void;
use core::mem::offset_of;

use hwq::device::EventSink;
use hwq::{SharedDevice, TryArc};
use ndkpi::{
    GUID, MDL, NDK_ADAPTER, NDK_ADAPTER_DISPATCH, NDK_ADAPTER_INFO, NDK_EXTENSION_INTERFACE,
    NDK_FN_REQUEST_COMPLETION, NDK_LOGICAL_ADDRESS, NDK_LOGICAL_ADDRESS_MAPPING, NDK_OBJECT_HEADER,
    NDK_VERSION, NTSTATUS, NdkObjectTypeAdapter, STATUS_BUFFER_TOO_SMALL,
    STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER,
    STATUS_NOT_SUPPORTED, STATUS_SUCCESS,
};

use ndkpi::{
    GROUP_AFFINITY, NDK_CONNECTOR, NDK_CQ, NDK_FN_CONNECT_EVENT_CALLBACK,
    NDK_FN_CQ_NOTIFICATION_CALLBACK, NDK_FN_CREATE_COMPLETION, NDK_LISTENER, NDK_PD,
    NDK_SHARED_ENDPOINT, PSOCKADDR,
};

use crate::abi::{self, MdlChain, NdkObject, OutArray};
use crate::adapter::Adapter;
use crate::callout;
use crate::connector::Connector;
use crate::cq::Cq;
use crate::device::DeviceContext;
use crate::endpoint::SharedEndpoint;
use crate::listener::Listener;
use crate::object::Object;
use crate::pd::Pd;
use crate::platform::Platform;
use crate::{info, lam};

// SAFETY: `Adapter` is `#[repr(C)]` with `ndk: NdkCell<NDK_ADAPTER>` first
// (adapter.rs), and `open_adapter` builds it only inside a `TryArc`.
unsafe impl NdkObject for Adapter {
    type Ndk = NDK_ADAPTER;
    const TYPE: i32 = NdkObjectTypeAdapter;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_ADAPTER {
        NDK_ADAPTER {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

impl DeviceContext {
    /// Wraps `device` and attaches to its events.
    pub fn new(
        device: SharedDevice,
        platform: &'static dyn Platform,
    ) -> Result<TryArc<Self>, NTSTATUS> {
        let ctx = Self::unattached(device, platform)?;
        // SAFETY: the context sits at a fixed address inside its TryArc
        // until the last reference drops, and `DeviceContext::detach` (run
        // by its owner, and by its `Drop` at the latest, device.rs) detaches
        // the device, which waits out running events, before that.
        let sink = unsafe { EventSink::new(&*ctx) };
        ctx.attach(sink)?;
        Ok(ctx)
    }
}

/// Resolves the adapter argument of an adapter dispatch function.
///
/// # Safety
/// As [`abi::object`]: a non-null `adapter` must be readable for an NDK
/// object header and dispatch pointer.
pub(super) unsafe fn adapter_arg<'a>(adapter: *mut NDK_ADAPTER) -> Option<&'a Adapter> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Adapter>(adapter) }
}

/// Closes an adapter; returns once no callback into the consumer is running
/// or can still run on it or any of its descendants. `PASSIVE_LEVEL`; it
/// waits for children the consumer is still closing. Returns
/// `STATUS_INVALID_HANDLE` (doing nothing) for a pointer that is not an open
/// adapter of ours.
///
/// # Safety
/// `adapter` must be null or an adapter returned by
/// [`crate::open_adapter`] that has not been closed, and no other call on
/// it may be running.
pub unsafe fn close_adapter(adapter: *mut NDK_ADAPTER) -> NTSTATUS {
    // SAFETY: a non-null `adapter` is an open adapter of ours (this
    // function's contract), so it is readable.
    let Some(a) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    a.platform().require_passive("NdkCloseAdapter");
    // SAFETY: the consumer closes each adapter once (this function's
    // contract), so the handle's reference is still given out.
    let a = unsafe { abi::from_handle(a) };
    Adapter::close(&a);
    STATUS_SUCCESS
}

/// The common close: object-specific start of the close
/// ([`Object::on_close`]: flush, disconnect, stop listening), then drop the
/// consumer's reference. `STATUS_SUCCESS` if that finished the object
/// (no callback), `STATUS_PENDING` if successors or callbacks keep it alive
/// (the completion follows once they are gone).
///
/// # Safety
/// `header` must be null or the header of an object of ours the consumer is
/// closing for the first time, with no other call on it running.
pub(super) unsafe fn close<T: NdkObject + Object>(
    header: *mut ndkpi::NDK_OBJECT_HEADER,
    completion: ndkpi::NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> ndkpi::NTSTATUS {
    // SAFETY: a non-null `header` heads an object of ours the consumer has
    // not closed yet (this function's contract), so it is readable.
    let Some(object) = (unsafe { abi::object::<T>(header.cast()) }) else {
        return ndkpi::STATUS_INVALID_HANDLE;
    };
    object.on_close();
    // SAFETY: the consumer closes this object for the first time (this
    // function's contract), so its handle's reference is still given out.
    let arc = unsafe { abi::from_handle(object) };
    if arc
        .life()
        .begin_close(callout::close_from(completion, context))
    {
        arc.finish();
        ndkpi::STATUS_SUCCESS
    } else {
        ndkpi::STATUS_PENDING
    }
}

/// `NdkQueryExtension` for every object: no extension interface is defined
/// for NDK, so none is offered.
pub(crate) unsafe extern "win64" fn query_extension(
    _object: *mut NDK_OBJECT_HEADER,
    _id: *mut GUID,
    _version: NDK_VERSION,
    _out: *mut NDK_EXTENSION_INTERFACE,
) -> NTSTATUS {
    STATUS_NOT_SUPPORTED
}

/// `NdkQueryAdapterInfo` (PASSIVE_LEVEL).
unsafe extern "win64" fn query_adapter_info(
    adapter: *mut NDK_ADAPTER,
    out: *mut NDK_ADAPTER_INFO,
    size: *mut u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: `size` is the consumer's in/out ULONG (NDK contract), null
    // checked by `read_in`.
    let Some(have) = (unsafe { abi::read_in(size) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    let need = size_of::<NDK_ADAPTER_INFO>() as u32;
    // SAFETY: `size` is non-null (read above) and writable (NDK contract).
    unsafe { abi::write_out(size, need) };
    if out.is_null() || have < need {
        return STATUS_BUFFER_TOO_SMALL;
    }
    let value = info::adapter_info(adapter.version(), adapter.ctx().caps());
    // SAFETY: `out` is non-null (checked) and the consumer's buffer of
    // `have >= need` bytes (NDK contract); it may be unaligned.
    unsafe { out.write_unaligned(value) };
    STATUS_SUCCESS
}

/// Address of a LAM's `AdapterContext` (computing it reads nothing).
fn context_ptr(lam: *mut NDK_LOGICAL_ADDRESS_MAPPING) -> *mut *mut c_void {
    lam.wrapping_byte_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterContext))
        .cast()
}

/// Address of a LAM's `AdapterPageCount`.
fn count_ptr(lam: *mut NDK_LOGICAL_ADDRESS_MAPPING) -> *mut u32 {
    lam.wrapping_byte_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount))
        .cast()
}

/// `NdkBuildLAM`.
unsafe extern "win64" fn build_lam(
    adapter: *mut NDK_ADAPTER,
    mdl: *mut MDL,
    length: usize,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
    lam: *mut NDK_LOGICAL_ADDRESS_MAPPING,
    lam_size_io: *mut u32,
    fbo: *mut u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: `lam_size_io` is the consumer's in/out ULONG (NDK contract),
    // null checked by `read_in`.
    let Some(have) = (unsafe { abi::read_in(lam_size_io) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    if fbo.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: the consumer passes a locked, valid MDL chain (or null) that
    // stays unchanged during the call (NDK contract).
    let chain = unsafe { MdlChain::new(mdl) };
    let (span, need) = match lam::measure(adapter, chain, length as u64) {
        Ok(measured) => measured,
        Err(status) => return status,
    };
    // SAFETY: `lam_size_io` is non-null (read above) and writable (NDK
    // contract).
    unsafe { abi::write_out(lam_size_io, need) };
    if lam.is_null() || have < need {
        return STATUS_BUFFER_TOO_SMALL;
    }
    let array = lam
        .wrapping_byte_add(offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray))
        .cast::<NDK_LOGICAL_ADDRESS>();
    // SAFETY: the consumer's buffer holds `have >= need` bytes (NDK
    // contract), which is the header plus `span.pages` entries.
    let Some(mut pages) = (unsafe { OutArray::new(array, span.pages) }) else {
        return STATUS_BUFFER_TOO_SMALL;
    };
    if lam::fill(adapter, chain, length as u64, &mut pages).is_err() {
        return STATUS_INVALID_PARAMETER;
    }
    let mut written = (0..span.pages).map(|i| {
        // SAFETY: entry `i` of the consumer's array, which holds
        // `span.pages` entries (checked above) that `fill` just wrote and
        // the consumer does not touch while the call runs (NDK contract);
        // unaligned, as NDK does not promise more.
        let address = unsafe { array.wrapping_add(i).read_unaligned() };
        address as u64
    });
    // The device reaches these pages by their logical addresses (privileged
    // token, fast registrations) until the LAM is released: mapped once,
    // here.
    if !adapter.platform().dma_map(lam as usize, &mut written) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    // SAFETY: `lam` is non-null and holds at least the header (`need` bytes
    // include it, checked above); unaligned, as NDK does not promise more.
    unsafe { context_ptr(lam).write_unaligned(lam::owner_tag(adapter)) };
    // SAFETY: `AdapterPageCount` lies inside that header as well.
    unsafe { count_ptr(lam).write_unaligned(span.pages as u32) };
    // SAFETY: `fbo` is non-null (checked above) and writable (NDK contract).
    unsafe { abi::write_out(fbo, span.fbo) };
    adapter.hold();
    STATUS_SUCCESS
}

/// `NdkReleaseLAM`.
unsafe extern "win64" fn release_lam(
    adapter: *mut NDK_ADAPTER,
    lam: *mut NDK_LOGICAL_ADDRESS_MAPPING,
) {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return;
    };
    if lam.is_null() {
        return;
    }
    // SAFETY: a non-null `lam` is a LAM the consumer built with
    // `NdkBuildLAM` (NDK contract), so its header is readable.
    let owner = unsafe { context_ptr(lam).read_unaligned() };
    if owner != lam::owner_tag(adapter) {
        return;
    }
    // SAFETY: the same header is the consumer's and writable; clearing the
    // tag marks the LAM released, so a second release is ignored.
    unsafe { context_ptr(lam).write_unaligned(core::ptr::null_mut()) };
    adapter.platform().dma_unmap(lam as usize);
    adapter.unhold();
}

/// `NdkCreateCq`: completes synchronously.
unsafe extern "win64" fn create_cq(
    adapter: *mut NDK_ADAPTER,
    depth: u32,
    notification: NDK_FN_CQ_NOTIFICATION_CALLBACK,
    notification_context: *mut c_void,
    _affinity: *mut GROUP_AFFINITY,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_CQ,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Cq::create(adapter, depth, notification, notification_context) {
        Ok(cq) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(cq)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreatePd`: completes synchronously.
unsafe extern "win64" fn create_pd(
    adapter: *mut NDK_ADAPTER,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_PD,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Pd::create(adapter) {
        Ok(pd) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(pd)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreateSharedEndpoint`: completes synchronously.
unsafe extern "win64" fn create_shared_endpoint(
    adapter: *mut NDK_ADAPTER,
    addr: PSOCKADDR,
    addr_len: u32,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_SHARED_ENDPOINT,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: a non-null `addr` is the consumer's address of `addr_len`
    // readable bytes (NDK contract).
    let addr = match unsafe { abi::read_sockaddr(addr, addr_len) } {
        Ok(a) => a,
        Err(status) => return status,
    };
    match SharedEndpoint::create(adapter, addr) {
        Ok(e) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(e)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreateConnector`: completes synchronously.
unsafe extern "win64" fn create_connector(
    adapter: *mut NDK_ADAPTER,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_CONNECTOR,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Connector::create(adapter) {
        Ok(c) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(c)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `NdkCreateListener`: completes synchronously.
unsafe extern "win64" fn create_listener(
    adapter: *mut NDK_ADAPTER,
    connect_event: NDK_FN_CONNECT_EVENT_CALLBACK,
    connect_event_context: *mut c_void,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_LISTENER,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened (NDK contract).
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Listener::create(adapter, connect_event, connect_event_context) {
        Ok(l) => {
            // SAFETY: `out` is non-null (checked) and the consumer's
            // writable out-pointer (NDK contract).
            unsafe { abi::write_out(out, abi::into_handle(l)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// The adapter dispatch table.
pub static DISPATCH: NDK_ADAPTER_DISPATCH = NDK_ADAPTER_DISPATCH {
    NdkQueryExtension: Some(query_extension),
    NdkQueryAdapterInfo: Some(query_adapter_info),
    NdkCreateCq: Some(create_cq),
    NdkCreatePd: Some(create_pd),
    NdkCreateSharedEndpoint: Some(create_shared_endpoint),
    NdkCreateConnector: Some(create_connector),
    NdkCreateListener: Some(create_listener),
    NdkBuildLAM: Some(build_lam),
    NdkReleaseLAM: Some(release_lam),
};

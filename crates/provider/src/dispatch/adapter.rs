//! The adapter's edge: its dispatch table (`NdkQueryAdapterInfo`, the
//! create entries of its children, `NdkBuildLAM`/`NdkReleaseLAM`), the
//! close entry the driver calls, and the device's event sink.

use core::ffi::c_void;
use core::mem::offset_of;

use hwq::device::EventSink;
use hwq::{SharedDevice, TryArc};
use ndkpi::{
    GUID, MDL, NDK_ADAPTER, NDK_ADAPTER_DISPATCH, NDK_ADAPTER_INFO, NDK_EXTENSION_INTERFACE,
    NDK_FN_REQUEST_COMPLETION, NDK_LOGICAL_ADDRESS, NDK_LOGICAL_ADDRESS_MAPPING, NDK_OBJECT_HEADER,
    NDK_VERSION, NTSTATUS, NdkObjectTypeAdapter, STATUS_BUFFER_TOO_SMALL, STATUS_INVALID_HANDLE,
    STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_SUCCESS,
};

use crate::abi::{self, MdlChain, NdkObject, OutArray};
use crate::adapter::Adapter;
use crate::device::DeviceContext;
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
    adapter.unhold();
}

/// The adapter dispatch table.
pub static DISPATCH: NDK_ADAPTER_DISPATCH = NDK_ADAPTER_DISPATCH {
    NdkQueryExtension: Some(query_extension),
    NdkQueryAdapterInfo: Some(query_adapter_info),
    NdkCreateCq: Some(super::cq::create_cq),
    NdkCreatePd: Some(super::pd::create_pd),
    NdkCreateSharedEndpoint: Some(super::endpoint::create_shared_endpoint),
    NdkCreateConnector: Some(super::connector::create_connector),
    NdkCreateListener: Some(super::listener::create_listener),
    NdkBuildLAM: Some(build_lam),
    NdkReleaseLAM: Some(release_lam),
};

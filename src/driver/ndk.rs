//! NDK registration with NDIS: the provider characteristics registered in
//! `MiniportSetOptions`, the open/close handlers that hand out the
//! provider's `NDK_ADAPTER`, and the NDK counters of `OID_NDK_STATISTICS`.

use core::sync::atomic::Ordering;

use ndis::{
    NDIS_HANDLE, NDIS_NDK_PERFORMANCE_COUNTERS, NDIS_NDK_PROVIDER_CHARACTERISTICS,
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS, NdisSetOptionalHandlers,
};
use ndkpi::{
    NDIS_STATUS, NDIS_STATUS_ADAPTER_NOT_READY, NDIS_STATUS_INVALID_PARAMETER, NDK_ADAPTER,
};

use super::adapter::Adapter;
use super::log::log_error;

/// Counters rsndk does not keep (bits of `MissingCounterMask`): none.
/// Every counter of `NDIS_NDK_PERFORMANCE_COUNTERS` is filled by
/// [`counters`]; the reserved ones are not counters.
pub const MISSING_COUNTERS: u64 = 0;

/// Registers the NDK provider characteristics (`MiniportSetOptions`,
/// `PASSIVE_LEVEL`).
pub fn register(driver_handle: NDIS_HANDLE) -> NDIS_STATUS {
    let mut characteristics =
        NDIS_NDK_PROVIDER_CHARACTERISTICS::new(open_ndk_adapter, close_ndk_adapter);
    // SAFETY: PASSIVE_LEVEL inside MiniportSetOptions; NDIS copies the
    // characteristics (a header-prefixed structure) during the call.
    unsafe { NdisSetOptionalHandlers(driver_handle, characteristics.as_optional_handlers()) }
}

/// The counters NDIS publishes as the "RDMA Activity" performance set:
/// connection outcomes and events the RNIC counted in its statistics
/// ([`softrnic::engine::EngineStats`]: outbound connections established,
/// inbound ones established, failed attempts, QPs failed, CQ overflows), the
/// connections established now from the provider's tables, and the RoCEv2
/// frames and their bytes (the UDP payload: BTH through ICRC) the L2 port
/// sent down the binding and handed to the RNIC. All are cumulative over
/// the adapter's life except `ActiveConnection`.
pub fn counters(adapter: &Adapter) -> NDIS_NDK_PERFORMANCE_COUNTERS {
    let mut counters = NDIS_NDK_PERFORMANCE_COUNTERS::default();
    if let Some(device) = &adapter.device {
        let rnic = device.rnic.stats();
        counters.Connect = rnic.connects;
        counters.Accept = rnic.accepts;
        counters.ConnectFailure = rnic.connect_failures;
        counters.ConnectionError = rnic.qp_errors;
        counters.CQError = rnic.cq_overflows;
        counters.ActiveConnection = device.ctx.active_connections() as u64;
        let wire = device.port.stats();
        (counters.RDMAInFrames, counters.RDMAInOctets) = device.port.rdma_in();
        counters.RDMAOutFrames = wire.sent.load(Ordering::Relaxed);
        counters.RDMAOutOctets = wire.sent_bytes.load(Ordering::Relaxed);
    }
    counters
}

/// `OpenNDKAdapterHandler` (`PASSIVE_LEVEL`): a new `NDK_ADAPTER` on the
/// adapter's device, at the version the consumer asks for.
unsafe extern "win64" fn open_ndk_adapter(
    context: NDIS_HANDLE,
    parameters: *mut NDIS_OPEN_NDK_ADAPTER_PARAMETERS,
    out: *mut *mut NDK_ADAPTER,
) -> NDIS_STATUS {
    // SAFETY: NDIS passes the adapter context it got from us.
    let adapter = unsafe { &*context.cast::<Adapter>() };
    if parameters.is_null() || out.is_null() {
        return NDIS_STATUS_INVALID_PARAMETER;
    }
    // SAFETY: NDIS's parameters, valid for the call.
    let version = unsafe { (*parameters).Version };
    let Some(device) = adapter.device.as_ref().filter(|_| adapter.ndk_ready()) else {
        return NDIS_STATUS_ADAPTER_NOT_READY;
    };
    match provider::open_adapter(&device.ctx, version) {
        Ok(ndk) => {
            adapter.open_ndk_adapters.fetch_add(1, Ordering::AcqRel);
            // SAFETY: NDIS's out-pointer, valid for the call.
            unsafe { out.write(ndk) };
            ndkpi::NDIS_STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `CloseNDKAdapterHandler` (`PASSIVE_LEVEL`): closes an adapter opened
/// above; returns once no callback into its consumer can run.
unsafe extern "win64" fn close_ndk_adapter(context: NDIS_HANDLE, ndk: *mut NDK_ADAPTER) {
    // SAFETY: NDIS passes the adapter context it got from us.
    let adapter = unsafe { &*context.cast::<Adapter>() };
    // SAFETY: NDIS closes each adapter it opened through us exactly once,
    // with no other call on it running.
    let status = unsafe { provider::close_adapter(ndk) };
    if status < 0 {
        // The provider refuses only a pointer that is not an open adapter
        // of ours (one with children open is closed once they are): the
        // adapters counted are all still open, and lowering the count
        // would let an unbind free the RNIC under them.
        log_error!("rsndk: NDK adapter close failed: {:#010x}", status as u32);
        return;
    }
    adapter.open_ndk_adapters.fetch_sub(1, Ordering::AcqRel);
}

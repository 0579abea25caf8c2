//! NDK on V: opening and closing the provider's `NDK_ADAPTER`s (the
//! handlers of the NDK provider characteristics [`super::entry`]
//! registers in `MiniportSetOptions`), and the NDK counters of
//! `OID_NDK_STATISTICS`.

use core::sync::atomic::Ordering;

use ndis::NDIS_NDK_PERFORMANCE_COUNTERS;
use ndkpi::{NDIS_STATUS, NDIS_STATUS_ADAPTER_NOT_READY, NDK_ADAPTER, NDK_VERSION, NTSTATUS};

use super::adapter::Adapter;
use super::log::log_error;

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
pub fn open(adapter: &Adapter, version: NDK_VERSION) -> Result<*mut NDK_ADAPTER, NDIS_STATUS> {
    let Some(device) = adapter.device.as_ref().filter(|_| adapter.ndk_ready()) else {
        return Err(NDIS_STATUS_ADAPTER_NOT_READY);
    };
    let ndk = provider::open_adapter(&device.ctx, version)?;
    adapter.open_ndk_adapters.fetch_add(1, Ordering::AcqRel);
    Ok(ndk)
}

/// `CloseNDKAdapterHandler` (`PASSIVE_LEVEL`) closed an adapter opened
/// above with `status`.
pub fn closed(adapter: &Adapter, status: NTSTATUS) {
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

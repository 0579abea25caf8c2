//! `NdkQueryAdapterInfo`: the adapter's limits, derived from the device's
//! caps and the provider's own fixed limits, and exactly the limits the
//! create and post paths enforce.

use hwq::device::DeviceCaps;
use hwq::wqe::{MAX_INLINE, MAX_SGE};
use ndkpi::{
    NDK_ADAPTER, NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED,
    NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED,
    NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED,
    NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, NDK_ADAPTER_INFO, NDK_VERSION, NTSTATUS,
    NdkRoCEv2, STATUS_BUFFER_TOO_SMALL, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER,
    STATUS_SUCCESS,
};

use crate::abi;
use crate::adapter::adapter_arg;

/// Scatter/gather entries per work request (every kind).
pub const MAX_REQUEST_SGE: u32 = MAX_SGE as u32;
/// Bytes of inline data per send or write.
pub const MAX_INLINE_DATA: u32 = MAX_INLINE as u32;

/// Queue depth limit for SQ and RQ: the device's, within what a ring holds.
pub fn max_queue_depth(caps: &DeviceCaps) -> u32 {
    caps.max_qp_depth.min(hwq::ring::MAX_RING_DEPTH)
}

/// Largest MR registration or fast registration (and memory window).
pub fn max_registration(caps: &DeviceCaps) -> u64 {
    caps.max_registration.min(usize::MAX as u64)
}

/// The adapter flags: only features this provider implements.
pub fn adapter_flags(caps: &DeviceCaps) -> u32 {
    let mut flags = NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED
        | NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED
        | NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED
        | NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED
        | NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED;
    if caps.loopback {
        flags |= NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    }
    flags
}

/// The full adapter info.
pub fn adapter_info(version: NDK_VERSION, caps: &DeviceCaps) -> NDK_ADAPTER_INFO {
    let depth = max_queue_depth(caps);
    NDK_ADAPTER_INFO {
        Version: version,
        VendorId: caps.vendor_id,
        DeviceId: caps.device_id,
        MaxRegistrationSize: max_registration(caps) as usize,
        MaxWindowSize: max_registration(caps) as usize,
        FRMRPageCount: caps.max_fast_register_pages,
        MaxInitiatorRequestSge: MAX_REQUEST_SGE,
        MaxReceiveRequestSge: MAX_REQUEST_SGE,
        MaxReadRequestSge: MAX_REQUEST_SGE,
        MaxTransferLength: caps.max_transfer,
        MaxInlineDataSize: MAX_INLINE_DATA,
        MaxInboundReadLimit: caps.max_inbound_reads,
        MaxOutboundReadLimit: caps.max_outbound_reads,
        MaxReceiveQueueDepth: depth,
        MaxInitiatorQueueDepth: depth,
        MaxSrqDepth: caps.max_srq_depth.min(hwq::ring::MAX_RING_DEPTH),
        MaxCqDepth: caps.max_cq_depth.min(hwq::ring::MAX_RING_DEPTH),
        // Above a few packets, one RDMA operation beats a stream of sends.
        LargeRequestThreshold: caps.path_mtu.saturating_mul(4),
        MaxCallerData: caps.max_connect_data,
        MaxCalleeData: caps.max_accept_data,
        AdapterFlags: adapter_flags(caps),
        RdmaTechnology: NdkRoCEv2,
    }
}

/// `NdkQueryAdapterInfo` (PASSIVE_LEVEL).
pub(crate) unsafe extern "win64" fn query_adapter_info(
    adapter: *mut NDK_ADAPTER,
    info: *mut NDK_ADAPTER_INFO,
    size: *mut u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened.
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: `size` is the consumer's in/out ULONG (checked for null).
    let Some(have) = (unsafe { abi::read_in(size) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    let need = size_of::<NDK_ADAPTER_INFO>() as u32;
    // SAFETY: non-null (read above) and writable per the contract.
    unsafe { abi::write_out(size, need) };
    if info.is_null() || have < need {
        return STATUS_BUFFER_TOO_SMALL;
    }
    let value = adapter_info(adapter.version(), adapter.ctx().caps());
    // SAFETY: the consumer's buffer holds at least `need` bytes (checked).
    // It may be unaligned, so write unaligned.
    unsafe { info.write_unaligned(value) };
    STATUS_SUCCESS
}

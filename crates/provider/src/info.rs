//! `NdkQueryAdapterInfo`: the adapter's limits, derived from the device's
//! caps and the provider's own fixed limits, and exactly the limits the
//! create and post paths enforce.

use hwq::device::DeviceCaps;
use hwq::wqe::{MAX_INLINE, MAX_SGE};
use ndkpi::{
    NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED,
    NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED,
    NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED,
    NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, NDK_ADAPTER_INFO, NDK_VERSION, NdkRoCEv2,
};

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

//! `ndkinfo.h`: adapter limits and capabilities reported by
//! `NdkQueryAdapterInfo`, the adapter flags and the RDMA technology.
//! (`NDK_VERSION`, also from this header, is in [`crate::object`].)

use bitflags::bitflags;

use crate::object::NDK_VERSION;
use crate::types::{SIZE_T, UINT32, ULONG};

/// Wire technology of the adapter. A C enum: kept as `i32` because any
/// value can cross the ABI. The values match the `*NetworkDirectTechnology`
/// INF keyword.
pub type NDK_RDMA_TECHNOLOGY = i32;

/// Not specified.
pub const NdkUndefined: NDK_RDMA_TECHNOLOGY = 0;
/// iWARP.
pub const NdkiWarp: NDK_RDMA_TECHNOLOGY = 1;
/// InfiniBand.
pub const NdkInfiniBand: NDK_RDMA_TECHNOLOGY = 2;
/// RoCE (v1, Ethernet link layer).
pub const NdkRoCE: NDK_RDMA_TECHNOLOGY = 3;
/// RoCEv2 (UDP/IP).
pub const NdkRoCEv2: NDK_RDMA_TECHNOLOGY = 4;
/// One past the last technology.
pub const NdkMaxTechnology: NDK_RDMA_TECHNOLOGY = 5;

/// Adapter limits and capabilities (104 bytes on x64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NDK_ADAPTER_INFO {
    /// NDKPI version the adapter runs at.
    pub Version: NDK_VERSION,
    /// Vendor id.
    pub VendorId: UINT32,
    /// Vendor's device id.
    pub DeviceId: UINT32,
    /// Largest single registration, in bytes.
    pub MaxRegistrationSize: SIZE_T,
    /// Largest memory-window bind, in bytes.
    pub MaxWindowSize: SIZE_T,
    /// Fast-register size (in pages) at which the most FRMRs fit.
    pub FRMRPageCount: ULONG,
    /// Most SGEs per initiator (send-queue) request.
    pub MaxInitiatorRequestSge: ULONG,
    /// Most SGEs per receive request.
    pub MaxReceiveRequestSge: ULONG,
    /// Most SGEs per RDMA read.
    pub MaxReadRequestSge: ULONG,
    /// Most bytes one request may move.
    pub MaxTransferLength: ULONG,
    /// Most inline bytes per request.
    pub MaxInlineDataSize: ULONG,
    /// Most RDMA reads a QP may serve at once for the peer.
    pub MaxInboundReadLimit: ULONG,
    /// Most RDMA reads a QP may have outstanding.
    pub MaxOutboundReadLimit: ULONG,
    /// Deepest receive queue.
    pub MaxReceiveQueueDepth: ULONG,
    /// Deepest initiator (send) queue.
    pub MaxInitiatorQueueDepth: ULONG,
    /// Deepest SRQ; 0 if SRQs are not supported.
    pub MaxSrqDepth: ULONG,
    /// Deepest CQ.
    pub MaxCqDepth: ULONG,
    /// Size above which RDMA read/write is preferable to send/receive.
    pub LargeRequestThreshold: ULONG,
    /// Most private-data bytes with a connect.
    pub MaxCallerData: ULONG,
    /// Most private-data bytes with an accept or reject.
    pub MaxCalleeData: ULONG,
    /// `NDK_ADAPTER_FLAG_*` bits.
    pub AdapterFlags: ULONG,
    /// Wire technology (`Ndk*` technology values).
    pub RdmaTechnology: NDK_RDMA_TECHNOLOGY,
}

/// Incoming data is placed in buffer order.
pub const NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED: ULONG = 0x0000_0001;
/// RDMA read sinks need no special access rights.
pub const NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED: ULONG = 0x0000_0002;
/// `NdkControlCqInterruptModeration` is supported.
pub const NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED: ULONG = 0x0000_0004;
/// Several connections are processed in parallel.
pub const NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED: ULONG = 0x0000_0008;
/// `NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE` is honoured (NDKPI 1.2).
pub const NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED: ULONG = 0x0000_0010;
/// `NdkResizeCq` is supported.
pub const NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED: ULONG = 0x0000_0100;
/// A local address may connect to itself on the same adapter.
pub const NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED: ULONG = 0x0001_0000;

bitflags! {
    /// Typed view of the `NDK_ADAPTER_FLAG_*` values.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct AdapterFlags: ULONG {
        /// `NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED`.
        const IN_ORDER_DMA_SUPPORTED = NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED;
        /// `NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED`.
        const RDMA_READ_SINK_NOT_REQUIRED = NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED;
        /// `NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED`.
        const CQ_INTERRUPT_MODERATION_SUPPORTED =
            NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;
        /// `NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED`.
        const MULTI_ENGINE_SUPPORTED = NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED;
        /// `NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED`.
        const RDMA_READ_LOCAL_INVALIDATE_SUPPORTED =
            NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED;
        /// `NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED`.
        const CQ_RESIZE_SUPPORTED = NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
        /// `NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED`.
        const LOOPBACK_CONNECTIONS_SUPPORTED = NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapter_flags_match_raw() {
        let pairs = [
            (AdapterFlags::IN_ORDER_DMA_SUPPORTED, 0x1),
            (AdapterFlags::RDMA_READ_SINK_NOT_REQUIRED, 0x2),
            (AdapterFlags::CQ_INTERRUPT_MODERATION_SUPPORTED, 0x4),
            (AdapterFlags::MULTI_ENGINE_SUPPORTED, 0x8),
            (AdapterFlags::RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, 0x10),
            (AdapterFlags::CQ_RESIZE_SUPPORTED, 0x100),
            (AdapterFlags::LOOPBACK_CONNECTIONS_SUPPORTED, 0x1_0000),
        ];
        let mut all = 0;
        for (typed, raw) in pairs {
            assert_eq!(typed.bits(), raw);
            assert_eq!(AdapterFlags::from_bits(raw), Some(typed));
            all |= raw;
        }
        assert_eq!(AdapterFlags::all().bits(), all);
    }
}

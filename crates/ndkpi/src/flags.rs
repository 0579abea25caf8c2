//! Flag values from `ndkpi.h`: work-request flags (`NDK_OP_FLAG_*`),
//! memory-registration flags (`NDK_MR_FLAG_*`) and CQ arming types
//! (`NDK_CQ_NOTIFY_*`). Each value exists as the raw C constant and as a
//! typed Rust view built from it.
//!
//! Both `ALLOW_REMOTE_WRITE` values carry the local-write bit as well
//! (`0x30` = `0x20 | NDK_OP_FLAG_ALLOW_LOCAL_WRITE`,
//! `0x5` = `0x4 | NDK_MR_FLAG_ALLOW_LOCAL_WRITE`): granting remote write
//! implies local write. The bitflags types keep these multi-bit values, so
//! `contains(ALLOW_REMOTE_WRITE)` is true only when both bits are set.
//! Note that `from_bits` accepts the lone `0x20` / `0x4` bits, because they
//! belong to a declared flag; such a value has neither remote-write
//! `contains` nor a C name.

use bitflags::bitflags;

use crate::types::ULONG;

/// Complete the request without a CQ entry unless it fails.
pub const NDK_OP_FLAG_SILENT_SUCCESS: ULONG = 0x0000_0001;
/// Start only after earlier RDMA reads on the queue have completed.
pub const NDK_OP_FLAG_READ_FENCE: ULONG = 0x0000_0002;
/// The receive completion of this send satisfies a solicited-only arm.
pub const NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT: ULONG = 0x0000_0004;
/// Bind / fast-register: allow remote reads.
pub const NDK_OP_FLAG_ALLOW_REMOTE_READ: ULONG = 0x0000_0008;
/// Fast-register: allow local writes.
pub const NDK_OP_FLAG_ALLOW_LOCAL_WRITE: ULONG = 0x0000_0010;
/// Bind / fast-register: allow remote writes (includes local write).
pub const NDK_OP_FLAG_ALLOW_REMOTE_WRITE: ULONG = 0x0000_0030;
/// Copy the payload at post time; SGE tokens are ignored.
pub const NDK_OP_FLAG_INLINE: ULONG = 0x0000_0040;
/// Fast-register: the region may be the sink of an RDMA read.
pub const NDK_OP_FLAG_RDMA_READ_SINK: ULONG = 0x0000_0080;
/// RDMA read: invalidate the first SGE's token when the read succeeds
/// (NDKPI 1.2). The header value is `0x100`; the online `NdkRead` page
/// wrongly shows `0x200`.
pub const NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE: ULONG = 0x0000_0100;
/// The provider may delay ringing the doorbell for this request (NDKPI
/// 1.2).
pub const NDK_OP_FLAG_DEFER: ULONG = 0x0000_0200;

bitflags! {
    /// Typed view of the `NDK_OP_FLAG_*` values passed to QP posts.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct OpFlags: ULONG {
        /// `NDK_OP_FLAG_SILENT_SUCCESS`.
        const SILENT_SUCCESS = NDK_OP_FLAG_SILENT_SUCCESS;
        /// `NDK_OP_FLAG_READ_FENCE`.
        const READ_FENCE = NDK_OP_FLAG_READ_FENCE;
        /// `NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT`.
        const SEND_AND_SOLICIT_EVENT = NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT;
        /// `NDK_OP_FLAG_ALLOW_REMOTE_READ`.
        const ALLOW_REMOTE_READ = NDK_OP_FLAG_ALLOW_REMOTE_READ;
        /// `NDK_OP_FLAG_ALLOW_LOCAL_WRITE`.
        const ALLOW_LOCAL_WRITE = NDK_OP_FLAG_ALLOW_LOCAL_WRITE;
        /// `NDK_OP_FLAG_ALLOW_REMOTE_WRITE` (two bits, one of them
        /// `ALLOW_LOCAL_WRITE`).
        const ALLOW_REMOTE_WRITE = NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
        /// `NDK_OP_FLAG_INLINE`.
        const INLINE = NDK_OP_FLAG_INLINE;
        /// `NDK_OP_FLAG_RDMA_READ_SINK`.
        const RDMA_READ_SINK = NDK_OP_FLAG_RDMA_READ_SINK;
        /// `NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE`.
        const RDMA_READ_LOCAL_INVALIDATE = NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
        /// `NDK_OP_FLAG_DEFER`.
        const DEFER = NDK_OP_FLAG_DEFER;
    }
}

/// Local reads are always allowed; this value is zero.
pub const NDK_MR_FLAG_ALLOW_LOCAL_READ: ULONG = 0x0000_0000;
/// Allow local writes to the region.
pub const NDK_MR_FLAG_ALLOW_LOCAL_WRITE: ULONG = 0x0000_0001;
/// Allow remote reads of the region.
pub const NDK_MR_FLAG_ALLOW_REMOTE_READ: ULONG = 0x0000_0002;
/// Allow remote writes to the region (includes local write).
pub const NDK_MR_FLAG_ALLOW_REMOTE_WRITE: ULONG = 0x0000_0005;
/// The region may be the sink of an RDMA read.
pub const NDK_MR_FLAG_RDMA_READ_SINK: ULONG = 0x0000_0008;

bitflags! {
    /// Typed view of the `NDK_MR_FLAG_*` values passed to `NdkRegisterMr`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MrFlags: ULONG {
        /// `NDK_MR_FLAG_ALLOW_LOCAL_READ`: zero, so every set contains it.
        const ALLOW_LOCAL_READ = NDK_MR_FLAG_ALLOW_LOCAL_READ;
        /// `NDK_MR_FLAG_ALLOW_LOCAL_WRITE`.
        const ALLOW_LOCAL_WRITE = NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
        /// `NDK_MR_FLAG_ALLOW_REMOTE_READ`.
        const ALLOW_REMOTE_READ = NDK_MR_FLAG_ALLOW_REMOTE_READ;
        /// `NDK_MR_FLAG_ALLOW_REMOTE_WRITE` (two bits, one of them
        /// `ALLOW_LOCAL_WRITE`).
        const ALLOW_REMOTE_WRITE = NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
        /// `NDK_MR_FLAG_RDMA_READ_SINK`.
        const RDMA_READ_SINK = NDK_MR_FLAG_RDMA_READ_SINK;
    }
}

/// `NdkArmCq` type: notify only on CQ errors.
pub const NDK_CQ_NOTIFY_ERRORS: ULONG = 0;
/// `NdkArmCq` type: notify on the next completion of any kind.
pub const NDK_CQ_NOTIFY_ANY: ULONG = 1;
/// `NdkArmCq` type: notify on the next solicited receive (or error).
pub const NDK_CQ_NOTIFY_SOLICITED: ULONG = 2;

/// Typed view of the `NDK_CQ_NOTIFY_*` arming types. These are an
/// enumeration, not bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CqNotify {
    /// `NDK_CQ_NOTIFY_ERRORS`.
    Errors,
    /// `NDK_CQ_NOTIFY_ANY`.
    Any,
    /// `NDK_CQ_NOTIFY_SOLICITED`.
    Solicited,
}

impl CqNotify {
    /// The arming type for a raw `NdkArmCq` value, or `None` if the header
    /// defines no such value.
    pub const fn from_raw(raw: ULONG) -> Option<Self> {
        match raw {
            NDK_CQ_NOTIFY_ERRORS => Some(Self::Errors),
            NDK_CQ_NOTIFY_ANY => Some(Self::Any),
            NDK_CQ_NOTIFY_SOLICITED => Some(Self::Solicited),
            _ => None,
        }
    }

    /// The raw `NDK_CQ_NOTIFY_*` value.
    pub const fn to_raw(self) -> ULONG {
        match self {
            Self::Errors => NDK_CQ_NOTIFY_ERRORS,
            Self::Any => NDK_CQ_NOTIFY_ANY,
            Self::Solicited => NDK_CQ_NOTIFY_SOLICITED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_flags_match_raw() {
        let pairs = [
            (OpFlags::SILENT_SUCCESS, NDK_OP_FLAG_SILENT_SUCCESS),
            (OpFlags::READ_FENCE, NDK_OP_FLAG_READ_FENCE),
            (
                OpFlags::SEND_AND_SOLICIT_EVENT,
                NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT,
            ),
            (OpFlags::ALLOW_REMOTE_READ, NDK_OP_FLAG_ALLOW_REMOTE_READ),
            (OpFlags::ALLOW_LOCAL_WRITE, NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
            (OpFlags::ALLOW_REMOTE_WRITE, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            (OpFlags::INLINE, NDK_OP_FLAG_INLINE),
            (OpFlags::RDMA_READ_SINK, NDK_OP_FLAG_RDMA_READ_SINK),
            (
                OpFlags::RDMA_READ_LOCAL_INVALIDATE,
                NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE,
            ),
            (OpFlags::DEFER, NDK_OP_FLAG_DEFER),
        ];
        for (typed, raw) in pairs {
            assert_eq!(typed.bits(), raw);
            assert_eq!(OpFlags::from_bits(raw), Some(typed));
        }
        assert_eq!(OpFlags::all().bits(), 0x3FF);
        assert_eq!(OpFlags::from_bits(0x400), None);
        assert_eq!(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, 0x100);
        assert_eq!(NDK_OP_FLAG_DEFER, 0x200);
    }

    #[test]
    fn remote_write_includes_local_write() {
        assert!(OpFlags::ALLOW_REMOTE_WRITE.contains(OpFlags::ALLOW_LOCAL_WRITE));
        assert!(MrFlags::ALLOW_REMOTE_WRITE.contains(MrFlags::ALLOW_LOCAL_WRITE));
        // The lone remote bit is not a remote-write grant.
        assert!(!OpFlags::from_bits_retain(0x20).contains(OpFlags::ALLOW_REMOTE_WRITE));
        assert!(!MrFlags::from_bits_retain(0x4).contains(MrFlags::ALLOW_REMOTE_WRITE));
        assert!(
            !OpFlags::ALLOW_LOCAL_WRITE.contains(OpFlags::ALLOW_REMOTE_WRITE),
            "local write alone must not read as remote write"
        );
    }

    #[test]
    fn mr_flags_match_raw() {
        let pairs = [
            (MrFlags::ALLOW_LOCAL_READ, NDK_MR_FLAG_ALLOW_LOCAL_READ),
            (MrFlags::ALLOW_LOCAL_WRITE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
            (MrFlags::ALLOW_REMOTE_READ, NDK_MR_FLAG_ALLOW_REMOTE_READ),
            (MrFlags::ALLOW_REMOTE_WRITE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
            (MrFlags::RDMA_READ_SINK, NDK_MR_FLAG_RDMA_READ_SINK),
        ];
        for (typed, raw) in pairs {
            assert_eq!(typed.bits(), raw);
            assert_eq!(MrFlags::from_bits(raw), Some(typed));
        }
        assert!(MrFlags::empty().contains(MrFlags::ALLOW_LOCAL_READ));
        assert_eq!(MrFlags::all().bits(), 0xF);
        assert_eq!(MrFlags::from_bits(0x10), None);
    }

    #[test]
    fn cq_notify_round_trip() {
        for raw in 0..3 {
            assert_eq!(CqNotify::from_raw(raw).map(CqNotify::to_raw), Some(raw));
        }
        assert_eq!(CqNotify::from_raw(3), None);
        assert_eq!(CqNotify::from_raw(u32::MAX), None);
    }
}

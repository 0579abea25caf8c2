//! `NDK_OP_FLAG_*` per work request: which are allowed where, and what they
//! become in a WQE.
//!
//! A flag outside a function's allowed set (or an unknown bit) fails the
//! post with `STATUS_INVALID_PARAMETER`. `NDK_OP_FLAG_RDMA_READ_SINK` is
//! tolerated on every initiator request: the adapter reports
//! `RDMA_READ_SINK_NOT_REQUIRED`, and NDK says the flag must then never
//! cause a failure.

use hwq::wqe::{Access, SendOp, SendRequest};
use ndkpi::{
    NDK_OP_FLAG_ALLOW_LOCAL_WRITE, NDK_OP_FLAG_ALLOW_REMOTE_READ, NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    NDK_OP_FLAG_DEFER, NDK_OP_FLAG_INLINE, NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE,
    NDK_OP_FLAG_RDMA_READ_SINK, NDK_OP_FLAG_READ_FENCE, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT,
    NDK_OP_FLAG_SILENT_SUCCESS, NTSTATUS, STATUS_INVALID_PARAMETER,
};

const COMMON: u32 = NDK_OP_FLAG_SILENT_SUCCESS
    | NDK_OP_FLAG_READ_FENCE
    | NDK_OP_FLAG_DEFER
    | NDK_OP_FLAG_RDMA_READ_SINK;

/// `NdkSend` and `NdkSendAndInvalidate`.
pub const SEND: u32 = COMMON | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE;
/// `NdkWrite` (inline accepted: `InlineDataSize` is defined for sends and
/// writes).
pub const WRITE: u32 = COMMON | NDK_OP_FLAG_INLINE;
/// `NdkRead`.
pub const READ: u32 = COMMON | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
/// `NdkBind`.
pub const BIND: u32 = COMMON | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
/// `NdkFastRegister`.
pub const FAST_REGISTER: u32 = COMMON
    | NDK_OP_FLAG_ALLOW_REMOTE_READ
    | NDK_OP_FLAG_ALLOW_LOCAL_WRITE
    | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
/// `NdkInvalidate`.
pub const INVALIDATE: u32 = COMMON;

/// The remote-write bit of `ALLOW_REMOTE_WRITE` without its local-write bit.
const REMOTE_WRITE_BIT: u32 = NDK_OP_FLAG_ALLOW_REMOTE_WRITE & !NDK_OP_FLAG_ALLOW_LOCAL_WRITE;

/// Checks `flags` against `allowed`.
pub fn check(flags: u32, allowed: u32) -> Result<(), NTSTATUS> {
    if flags & !allowed != 0 {
        return Err(STATUS_INVALID_PARAMETER);
    }
    Ok(())
}

/// Whether the doorbell may be deferred.
pub fn defer(flags: u32) -> bool {
    flags & NDK_OP_FLAG_DEFER != 0
}

/// Whether the payload is inline.
pub fn inline(flags: u32) -> bool {
    flags & NDK_OP_FLAG_INLINE != 0
}

/// A send request with `flags`' completion and fence: signaled unless
/// silent, fenced behind earlier READs if asked.
#[inline]
pub fn request(flags: u32, wr_id: u64, op: SendOp) -> SendRequest {
    SendRequest {
        wr_id,
        signaled: flags & NDK_OP_FLAG_SILENT_SUCCESS == 0,
        read_fence: flags & NDK_OP_FLAG_READ_FENCE != 0,
        op,
    }
}

/// Whether a SEND asks the peer for a solicited event.
pub fn solicited(flags: u32) -> bool {
    flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT != 0
}

/// Whether a READ invalidates its sink's token once it succeeded.
pub fn invalidate_sink(flags: u32) -> bool {
    flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE != 0
}

/// Access rights requested by a bind or fast register. The remote-write
/// bit without local write (not a defined flag value) is refused.
pub fn access(flags: u32) -> Result<Access, NTSTATUS> {
    let mut a = Access::empty();
    if flags & REMOTE_WRITE_BIT != 0 {
        if flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE == 0 {
            return Err(STATUS_INVALID_PARAMETER);
        }
        a |= Access::REMOTE_WRITE;
    }
    if flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE != 0 {
        a |= Access::LOCAL_WRITE;
    }
    if flags & NDK_OP_FLAG_ALLOW_REMOTE_READ != 0 {
        a |= Access::REMOTE_READ;
    }
    if flags & NDK_OP_FLAG_RDMA_READ_SINK != 0 {
        a |= Access::READ_SINK;
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_sets_follow_the_ndk_pages() {
        assert!(check(NDK_OP_FLAG_INLINE, SEND).is_ok());
        assert!(check(NDK_OP_FLAG_INLINE, READ).is_err());
        assert!(check(NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT, WRITE).is_err());
        assert!(check(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, SEND).is_err());
        assert!(check(NDK_OP_FLAG_ALLOW_LOCAL_WRITE, FAST_REGISTER).is_ok());
        assert!(check(0x400, SEND).is_err(), "unknown bit");
        for allowed in [SEND, WRITE, READ, BIND, FAST_REGISTER, INVALIDATE] {
            assert!(check(NDK_OP_FLAG_RDMA_READ_SINK, allowed).is_ok());
            assert!(check(NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS, allowed).is_ok());
        }
    }

    #[test]
    fn remote_write_implies_local_write() {
        assert_eq!(
            access(NDK_OP_FLAG_ALLOW_REMOTE_WRITE).unwrap(),
            Access::REMOTE_WRITE | Access::LOCAL_WRITE
        );
        assert_eq!(access(REMOTE_WRITE_BIT), Err(STATUS_INVALID_PARAMETER));
    }

    #[test]
    fn silent_success_clears_signaled() {
        let op = SendOp::LocalInvalidate {
            key: hwq::MemoryKey(1),
        };
        assert!(request(0, 1, op).signaled);
        assert!(!request(NDK_OP_FLAG_SILENT_SUCCESS, 1, op).signaled);
        let fenced = request(NDK_OP_FLAG_READ_FENCE, 1, op);
        assert!(fenced.signaled && fenced.read_fence);
        assert!(solicited(NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) && !solicited(0));
        assert!(invalidate_sink(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) && !invalidate_sink(0));
    }
}

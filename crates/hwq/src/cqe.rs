//! Completion queue entries: what the device writes when work completes.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Completion status as hardware reports it; the driver maps it to NTSTATUS.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeStatus {
    /// Completed successfully.
    Success = 0,
    /// Flushed: the queue was flushed or moved to error before completion.
    Flushed = 1,
    /// An incoming message did not fit the posted receive buffers.
    LocalLength = 2,
    /// A local key, bound, protection domain or access right was wrong.
    LocalProtection = 3,
    /// The QP itself failed (internal inconsistency).
    LocalQpOperation = 4,
    /// The peer refused a remote key, range or access right.
    RemoteAccess = 5,
    /// The peer found the request invalid (e.g. READ beyond its limits).
    RemoteInvalidRequest = 6,
    /// The peer could not perform the operation.
    RemoteOperational = 7,
    /// The transport retried the configured number of times without an ACK.
    RetryExceeded = 8,
    /// The peer kept answering "receiver not ready".
    RnrRetryExceeded = 9,
    /// A fast-register, bind or invalidate was not allowed.
    MemoryManagement = 10,
}

impl CqeStatus {
    /// Decodes a CQE's status byte.
    pub fn from_raw(raw: u8) -> Option<Self> {
        Some(match raw {
            0 => Self::Success,
            1 => Self::Flushed,
            2 => Self::LocalLength,
            3 => Self::LocalProtection,
            4 => Self::LocalQpOperation,
            5 => Self::RemoteAccess,
            6 => Self::RemoteInvalidRequest,
            7 => Self::RemoteOperational,
            8 => Self::RetryExceeded,
            9 => Self::RnrRetryExceeded,
            10 => Self::MemoryManagement,
            _ => return None,
        })
    }
}

/// Which operation a CQE completes.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeOpcode {
    /// A SEND (or SEND with invalidate) at the requester.
    Send = 1,
    /// A receive.
    Receive = 2,
    /// A receive whose SEND carried an invalidate; see `invalidated_key`.
    ReceiveInvalidate = 3,
    /// An RDMA READ.
    Read = 4,
    /// An RDMA WRITE.
    Write = 5,
    /// A fast-register.
    FastRegister = 6,
    /// A memory window bind.
    Bind = 7,
    /// A local invalidate.
    LocalInvalidate = 8,
}

impl CqeOpcode {
    /// Decodes a CQE's opcode byte.
    pub fn from_raw(raw: u8) -> Option<Self> {
        Some(match raw {
            1 => Self::Send,
            2 => Self::Receive,
            3 => Self::ReceiveInvalidate,
            4 => Self::Read,
            5 => Self::Write,
            6 => Self::FastRegister,
            7 => Self::Bind,
            8 => Self::LocalInvalidate,
            _ => return None,
        })
    }
}

/// CQE flag: the completed receive was solicited by the sender.
pub const CQE_FLAG_SOLICITED: u8 = 0x01;

/// A completion queue slot.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct Cqe {
    /// The `wr_id` of the completed WQE.
    pub wr_id: u64,
    /// The context the driver gave the QP at creation.
    pub qp_context: u64,
    /// Bytes received (receives), or the completed WQE's `total_len`
    /// (send-queue completions), so the driver can report
    /// `BytesTransferred` without keeping a copy of every WQE.
    pub byte_len: u32,
    /// The key invalidated by a SEND with invalidate (ReceiveInvalidate only).
    pub invalidated_key: u32,
    /// The QP number.
    pub qpn: u32,
    /// [`CqeOpcode`] as a byte.
    pub opcode: u8,
    /// [`CqeStatus`] as a byte.
    pub status: u8,
    /// `CQE_FLAG_*` bits.
    pub flags: u8,
    /// Zero.
    pub reserved: u8,
}

const _: () = assert!(size_of::<Cqe>() == 32);

impl Cqe {
    /// The status (unknown bytes read as a QP failure).
    pub fn cqe_status(&self) -> CqeStatus {
        CqeStatus::from_raw(self.status).unwrap_or(CqeStatus::LocalQpOperation)
    }

    /// The opcode, if the byte is valid.
    pub fn op(&self) -> Option<CqeOpcode> {
        CqeOpcode::from_raw(self.opcode)
    }
}

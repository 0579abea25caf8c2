//! Work queue entries: what the driver writes into send and receive rings.
//!
//! Layouts are `#[repr(C)]`, little-endian host memory, fixed-size slots
//! (like a real RNIC's WQE basic blocks), described with `zerocopy` so both
//! sides can view them as bytes without `unsafe`.
//!
//! A send slot's header means different things for different opcodes; that
//! meaning lives in one place, the typed [`SendRequest`] ([`request`]): the
//! driver writes a slot with [`SendRequest::encode`] and the device reads it
//! with [`SendWqe::decode`], which refuses (never panics on) a slot no
//! encoder writes: an unknown opcode or flag, a field the opcode does not
//! use that is not zero, a count past the slot. The scatter/gather entries
//! or inline bytes are written next to the header by the driver and read
//! through [`SendWqe::sge_list`] and [`SendWqe::inline_data`]. A receive
//! slot has no per-opcode fields; [`RecvWqe::decode`] checks its count
//! and reserved bytes the same way.

pub mod request;

pub use request::{Bind, Data, FastRegister, Gather, Remote, SendOp, SendRequest, WqeError};

use bitflags::bitflags;

use crate::cqe::CqeOpcode;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// Scatter/gather entries a WQE slot holds.
pub const MAX_SGE: usize = 16;
/// Bytes of inline data a send WQE slot holds (its scatter/gather area).
pub const MAX_INLINE: usize = MAX_SGE * size_of::<Sge>();

/// One scatter/gather element: the same layout as `NDK_SGE`, so the driver
/// can copy a consumer's SGE list into a WQE verbatim.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct Sge {
    /// Virtual address inside the region of `key`, or a logical address when
    /// `key` is a protection domain's privileged key.
    pub addr: u64,
    /// Bytes.
    pub length: u32,
    /// Local memory key (`NDK_SGE.MemoryRegionToken`).
    pub key: u32,
}

/// What a send WQE asks the device to do.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOpcode {
    /// SEND: gather local data, deliver it into the peer's next receive.
    Send = 1,
    /// SEND with invalidate: as `Send`, and the peer invalidates `key`.
    SendInvalidate = 2,
    /// RDMA WRITE of local data to `remote_addr`/`key` at the peer.
    Write = 3,
    /// RDMA READ of `remote_addr`/`key` at the peer into local SGEs.
    Read = 4,
    /// Fast-register: give a fast-register MR a page list, address and key.
    FastRegister = 5,
    /// Bind a memory window to a range of a memory region.
    Bind = 6,
    /// Local invalidate of a fast-register MR or memory window key.
    LocalInvalidate = 7,
}

impl SendOpcode {
    /// Decodes a slot's opcode byte.
    pub fn from_raw(raw: u8) -> Option<Self> {
        Some(match raw {
            1 => Self::Send,
            2 => Self::SendInvalidate,
            3 => Self::Write,
            4 => Self::Read,
            5 => Self::FastRegister,
            6 => Self::Bind,
            7 => Self::LocalInvalidate,
            _ => return None,
        })
    }

    /// The operation a completion of this request reports.
    pub fn completion(self) -> CqeOpcode {
        match self {
            Self::Send | Self::SendInvalidate => CqeOpcode::Send,
            Self::Write => CqeOpcode::Write,
            Self::Read => CqeOpcode::Read,
            Self::FastRegister => CqeOpcode::FastRegister,
            Self::Bind => CqeOpcode::Bind,
            Self::LocalInvalidate => CqeOpcode::LocalInvalidate,
        }
    }
}

bitflags! {
    /// Per-WQE flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct WqeFlags: u8 {
        /// Write a CQE on success (failures always write one).
        const SIGNALED = 0x01;
        /// Do not start until every earlier RDMA READ on the queue completed.
        const READ_FENCE = 0x02;
        /// Ask the peer to raise a solicited event for the receive.
        const SOLICITED = 0x04;
        /// Payload is inline in the slot's scatter/gather area.
        const INLINE = 0x08;
        /// After a successful READ, invalidate the key of the first SGE.
        const READ_LOCAL_INVALIDATE = 0x10;
    }
}

bitflags! {
    /// Access rights of a memory key, granted by registration, fast-register
    /// or bind. Local read is always granted.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct Access: u8 {
        /// The device may write the region as a local sink (receive, READ).
        const LOCAL_WRITE = 0x01;
        /// Peers may RDMA READ the region.
        const REMOTE_READ = 0x02;
        /// Peers may RDMA WRITE the region.
        const REMOTE_WRITE = 0x04;
        /// Registered as an RDMA READ sink (accepted, not required).
        const READ_SINK = 0x08;
    }
}

/// A send-queue slot: the raw layout. Which header fields an opcode uses,
/// and what they hold, is [`SendRequest::encode`]'s business; read a slot
/// with [`SendWqe::decode`], not field by field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct SendWqe {
    /// [`SendOpcode`] as a byte.
    pub opcode: u8,
    /// [`WqeFlags`] bits.
    pub flags: u8,
    /// Valid entries in `sges` (zero for inline).
    pub sge_count: u8,
    /// [`Access`] bits (fast-register and bind).
    pub access: u8,
    /// Bytes of inline payload in the scatter/gather area.
    pub inline_len: u16,
    /// Zero.
    pub reserved0: u16,
    /// An operand (see [`SendRequest::encode`]).
    pub key: u32,
    /// An operand (see [`SendRequest::encode`]).
    pub aux32: u32,
    /// Returned in the CQE (`NDK_RESULT.RequestContext`).
    pub wr_id: u64,
    /// An operand (see [`SendRequest::encode`]).
    pub remote_addr: u64,
    /// An operand (see [`SendRequest::encode`]).
    pub length: u64,
    /// An operand (see [`SendRequest::encode`]).
    pub aux64: u64,
    /// An operand (see [`SendRequest::encode`]).
    pub fbo: u32,
    /// Total payload bytes (sum of SGE lengths, or the inline length).
    pub total_len: u32,
    /// Zero.
    pub reserved1: u64,
    /// Scatter/gather list, or inline payload bytes.
    pub sges: [Sge; MAX_SGE],
}

impl Default for SendWqe {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

impl SendWqe {
    /// The opcode, if the byte is valid (what a completion reports even
    /// for a slot [`SendWqe::decode`] refuses).
    pub fn op(&self) -> Option<SendOpcode> {
        SendOpcode::from_raw(self.opcode)
    }

    /// The operation a completion of this slot reports, read from the
    /// opcode byte alone, so that a slot [`SendWqe::decode`] refuses still
    /// completes as what it claimed to be (an unknown opcode as a SEND).
    pub fn completion_opcode(&self) -> CqeOpcode {
        self.op().map_or(CqeOpcode::Send, SendOpcode::completion)
    }

    /// The flags (unknown bits dropped).
    pub fn wqe_flags(&self) -> WqeFlags {
        WqeFlags::from_bits_truncate(self.flags)
    }

    /// The valid scatter/gather entries (empty for an inline WQE; clamped
    /// to the slot, and exact once [`SendWqe::decode`] accepted it).
    pub fn sge_list(&self) -> &[Sge] {
        let n = usize::from(self.sge_count).min(MAX_SGE);
        &self.sges[..n]
    }

    /// The inline payload bytes (clamped to the slot, and exact once
    /// [`SendWqe::decode`] accepted it).
    pub fn inline_data(&self) -> &[u8] {
        let n = usize::from(self.inline_len).min(MAX_INLINE);
        &self.sges.as_bytes()[..n]
    }

    /// The whole scatter/gather area as bytes, for writing inline payload.
    pub fn inline_area_mut(&mut self) -> &mut [u8] {
        self.sges.as_mut_bytes()
    }
}

/// A receive-queue (or shared receive queue) slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct RecvWqe {
    /// Returned in the CQE (`NDK_RESULT.RequestContext`).
    pub wr_id: u64,
    /// Valid entries in `sges`.
    pub sge_count: u8,
    /// Zero.
    pub reserved: [u8; 7],
    /// Where incoming SEND payload is scattered.
    pub sges: [Sge; MAX_SGE],
}

impl Default for RecvWqe {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

impl RecvWqe {
    /// The valid scatter/gather entries (clamped to the slot).
    pub fn sge_list(&self) -> &[Sge] {
        let n = usize::from(self.sge_count).min(MAX_SGE);
        &self.sges[..n]
    }

    /// The scatter list, as the driver wrote it, or why no driver wrote
    /// the slot: more entries than it holds, reserved bytes not zero.
    pub fn decode(&self) -> Result<&[Sge], WqeError> {
        if self.reserved != [0; 7] {
            return Err(WqeError::Reserved("reserved"));
        }
        self.sges
            .get(..usize::from(self.sge_count))
            .ok_or(WqeError::SgeCount(self.sge_count))
    }
}

const _: () = assert!(size_of::<Sge>() == 16);
const _: () = assert!(size_of::<SendWqe>() == 64 + MAX_SGE * 16);
const _: () = assert!(size_of::<RecvWqe>() == 16 + MAX_SGE * 16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_area_round_trips() {
        let mut w = SendWqe::default();
        w.inline_area_mut()[..5].copy_from_slice(b"hello");
        w.inline_len = 5;
        assert_eq!(w.inline_data(), b"hello");
        w.inline_len = u16::MAX;
        assert_eq!(
            w.inline_data().len(),
            MAX_INLINE,
            "clamped, never out of bounds"
        );
    }

    #[test]
    fn completions_report_the_opcode_byte() {
        let mut w = SendWqe {
            opcode: SendOpcode::SendInvalidate as u8,
            ..SendWqe::default()
        };
        assert_eq!(w.completion_opcode(), CqeOpcode::Send);
        w.opcode = SendOpcode::Read as u8;
        assert_eq!(w.completion_opcode(), CqeOpcode::Read);
        w.opcode = 0xee;
        assert_eq!(
            w.completion_opcode(),
            CqeOpcode::Send,
            "an unknown opcode completes as a SEND"
        );
    }

    #[test]
    fn a_receive_decodes_to_its_scatter_list_or_an_error() {
        let mut r = RecvWqe {
            sge_count: 2,
            ..RecvWqe::default()
        };
        r.sges[1].length = 7;
        assert_eq!(r.decode().map(<[Sge]>::len), Ok(2));
        r.sge_count = MAX_SGE as u8 + 1;
        assert_eq!(r.decode(), Err(WqeError::SgeCount(MAX_SGE as u8 + 1)));
        r.sge_count = 1;
        r.reserved[6] = 1;
        assert_eq!(r.decode(), Err(WqeError::Reserved("reserved")));
    }

    #[test]
    fn sge_count_is_clamped() {
        let w = RecvWqe {
            sge_count: 200,
            ..RecvWqe::default()
        };
        assert_eq!(w.sge_list().len(), MAX_SGE);
    }
}

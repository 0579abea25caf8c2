//! Typed send work requests: what each opcode carries, and the one mapping
//! between that and a [`SendWqe`] slot's header.
//!
//! The driver builds a [`SendRequest`] and [`SendRequest::encode`]s it into
//! its ring slot (inline, no allocation: the post path's cost); the device
//! [`SendWqe::decode`]s the slot back. Decoding treats the slot as untrusted
//! memory: anything [`SendRequest::encode`] would not have written is a
//! [`WqeError`] (the device completes the WQE in error), never a panic.
//!
//! Which header field holds which operand is written down once, in
//! [`SendRequest::encode`]; [`SendWqe::decode`] reads it back, and the
//! round-trip tests (`tests/wqe_request.rs`) hold the two to each other:
//! encode then decode is the identity for every request, and no header
//! byte of an encoded slot can change without the decode noticing. A field
//! an opcode does not use is zero.

use core::fmt;

use zerocopy::IntoBytes;

use super::{Access, MAX_INLINE, MAX_SGE, SendOpcode, SendWqe, WqeFlags};
use crate::key::MemoryKey;

/// A send work request: the request's context, whether it completes
/// visibly, its fence, and what it asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendRequest {
    /// Returned in the CQE (`NDK_RESULT.RequestContext`).
    pub wr_id: u64,
    /// Write a CQE on success (failures always write one).
    pub signaled: bool,
    /// Do not start until every earlier RDMA READ on the queue completed.
    pub read_fence: bool,
    /// The operation and its operands.
    pub op: SendOp,
}

/// What a send work request asks the device to do, with its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND: deliver `data` into the peer's next receive.
    Send {
        /// The payload.
        data: Data,
        /// Ask the peer to raise a solicited event for the receive.
        solicited: bool,
        /// SEND with invalidate: the peer invalidates this key.
        invalidate: Option<MemoryKey>,
    },
    /// RDMA WRITE of `data` to `remote` at the peer.
    Write {
        /// The payload.
        data: Data,
        /// Where it goes.
        remote: Remote,
    },
    /// RDMA READ of `remote` at the peer into the local gather list `sink`.
    Read {
        /// Where the data lands.
        sink: Gather,
        /// What is read.
        remote: Remote,
        /// After a successful READ, invalidate the key of the first sink SGE.
        invalidate_sink: bool,
    },
    /// Give a fast-register MR a page list, address and key.
    FastRegister(FastRegister),
    /// Bind a memory window to a range of a memory region.
    Bind(Bind),
    /// Invalidate a fast-register MR's or a memory window's key.
    LocalInvalidate {
        /// The key.
        key: MemoryKey,
    },
}

/// The payload of a SEND or WRITE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data {
    /// Gathered from the slot's scatter/gather entries.
    Gather(Gather),
    /// In the slot itself (its scatter/gather area), `len` bytes.
    Inline {
        /// Bytes, at most [`MAX_INLINE`].
        len: u16,
    },
}

/// A scatter/gather list in the slot: its first `count` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gather {
    /// Valid entries, at most [`MAX_SGE`].
    pub count: u8,
    /// Their total length in bytes, as the driver computed it (what the
    /// completion reports).
    pub total_len: u32,
}

/// A peer's memory: an address inside the region of a remote key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Virtual address at the peer.
    pub addr: u64,
    /// The peer's key (`RemoteToken`).
    pub key: MemoryKey,
}

/// A fast-register request's operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastRegister {
    /// The MR's key (kept across registrations).
    pub key: MemoryKey,
    /// The rights granted.
    pub access: Access,
    /// The region's first virtual address.
    pub va: u64,
    /// The region's length in bytes.
    pub length: u64,
    /// Offset of `va` in the first page.
    pub fbo: u32,
    /// Pages in the page list.
    pub page_count: u32,
    /// Logical address of the page list (`page_count` little-endian `u64`
    /// page addresses), read by the device with DMA.
    pub page_list: u64,
}

/// A bind request's operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bind {
    /// The window's new key.
    pub window: MemoryKey,
    /// The key of the region the window lies in.
    pub region: MemoryKey,
    /// The rights granted.
    pub access: Access,
    /// The window's first virtual address.
    pub va: u64,
    /// The window's length in bytes.
    pub length: u64,
}

/// Why a slot does not decode: it holds something no encoder writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// The opcode byte names no operation.
    Opcode(u8),
    /// Flag bits unknown, or not meaningful for the opcode.
    Flags(u8),
    /// Access bits unknown.
    Access(u8),
    /// A header field the opcode does not use is not zero.
    Reserved(&'static str),
    /// More scatter/gather entries than a slot holds.
    SgeCount(u8),
    /// More inline bytes than a slot holds, or a total that is not them.
    InlineLength(u16),
}

impl fmt::Display for WqeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Opcode(op) => write!(f, "unknown send opcode {op}"),
            Self::Flags(bits) => write!(f, "WQE flags {bits:#04x} invalid for the opcode"),
            Self::Access(bits) => write!(f, "unknown access bits {bits:#04x}"),
            Self::Reserved(field) => write!(f, "field `{field}` unused by the opcode is not zero"),
            Self::SgeCount(n) => write!(f, "{n} SGEs, more than a slot holds ({MAX_SGE})"),
            Self::InlineLength(n) => write!(f, "inline length {n} invalid"),
        }
    }
}

impl SendOp {
    /// The opcode byte's meaning.
    pub fn opcode(&self) -> SendOpcode {
        match self {
            Self::Send {
                invalidate: None, ..
            } => SendOpcode::Send,
            Self::Send {
                invalidate: Some(_),
                ..
            } => SendOpcode::SendInvalidate,
            Self::Write { .. } => SendOpcode::Write,
            Self::Read { .. } => SendOpcode::Read,
            Self::FastRegister(_) => SendOpcode::FastRegister,
            Self::Bind(_) => SendOpcode::Bind,
            Self::LocalInvalidate { .. } => SendOpcode::LocalInvalidate,
        }
    }

    /// The scatter/gather list in the slot (a SEND's or WRITE's gathered
    /// data, a READ's sink), if the request names one.
    pub fn gather(&self) -> Option<Gather> {
        match *self {
            Self::Send {
                data: Data::Gather(g),
                ..
            }
            | Self::Write {
                data: Data::Gather(g),
                ..
            }
            | Self::Read { sink: g, .. } => Some(g),
            _ => None,
        }
    }

    /// The bytes the request moves, as its completion reports them (zero
    /// for a fast-register, bind or local invalidate).
    pub fn byte_len(&self) -> u32 {
        match *self {
            Self::Send { data, .. } | Self::Write { data, .. } => match data {
                Data::Gather(g) => g.total_len,
                Data::Inline { len } => u32::from(len),
            },
            Self::Read { sink, .. } => sink.total_len,
            Self::FastRegister(_) | Self::Bind(_) | Self::LocalInvalidate { .. } => 0,
        }
    }

    /// The key a fast-register, bind or local invalidate changes (`None`
    /// for a data request).
    pub fn local_key(&self) -> Option<MemoryKey> {
        match self {
            Self::FastRegister(fr) => Some(fr.key),
            Self::Bind(b) => Some(b.window),
            Self::LocalInvalidate { key } => Some(*key),
            Self::Send { .. } | Self::Write { .. } | Self::Read { .. } => None,
        }
    }
}

impl SendRequest {
    /// Writes the request into `slot`'s header, every header field (a
    /// reused slot keeps nothing of its previous WQE). The payload is the
    /// caller's to write: the first `count` entries of `slot.sges` for a
    /// [`Gather`], the first `len` bytes of
    /// [`SendWqe::inline_area_mut`] for [`Data::Inline`].
    #[inline]
    pub fn encode(&self, slot: &mut SendWqe) {
        // The header zeroed at once (a few wide stores), then only the
        // request's own fields written: fewer stores on the post path than
        // one per field.
        slot.as_mut_bytes()[..HEADER_BYTES].fill(0);
        let mut flags = WqeFlags::empty();
        flags.set(WqeFlags::SIGNALED, self.signaled);
        flags.set(WqeFlags::READ_FENCE, self.read_fence);
        match self.op {
            SendOp::Send {
                data,
                solicited,
                invalidate,
            } => {
                flags |= slot.set_data(data);
                flags.set(WqeFlags::SOLICITED, solicited);
                if let Some(key) = invalidate {
                    slot.key = key.0;
                }
            }
            SendOp::Write { data, remote } => {
                flags |= slot.set_data(data);
                slot.set_remote(remote);
            }
            SendOp::Read {
                sink,
                remote,
                invalidate_sink,
            } => {
                slot.set_gather(sink);
                slot.set_remote(remote);
                flags.set(WqeFlags::READ_LOCAL_INVALIDATE, invalidate_sink);
            }
            SendOp::FastRegister(fr) => {
                slot.access = fr.access.bits();
                slot.key = fr.key.0;
                slot.aux32 = fr.page_count;
                slot.remote_addr = fr.va;
                slot.length = fr.length;
                slot.aux64 = fr.page_list;
                slot.fbo = fr.fbo;
            }
            SendOp::Bind(b) => {
                slot.access = b.access.bits();
                slot.key = b.window.0;
                slot.aux32 = b.region.0;
                slot.remote_addr = b.va;
                slot.length = b.length;
            }
            SendOp::LocalInvalidate { key } => slot.key = key.0,
        }
        slot.opcode = self.op.opcode() as u8;
        slot.flags = flags.bits();
        slot.wr_id = self.wr_id;
    }
}

/// Bytes of a send slot before its scatter/gather area: the header.
const HEADER_BYTES: usize = core::mem::offset_of!(SendWqe, sges);

impl SendWqe {
    /// Writes `data`'s counts into a zeroed header; returns the flag it
    /// needs.
    #[inline]
    fn set_data(&mut self, data: Data) -> WqeFlags {
        match data {
            Data::Gather(g) => {
                self.set_gather(g);
                WqeFlags::empty()
            }
            Data::Inline { len } => {
                self.inline_len = len;
                self.total_len = u32::from(len);
                WqeFlags::INLINE
            }
        }
    }

    #[inline]
    fn set_gather(&mut self, g: Gather) {
        self.sge_count = g.count;
        self.total_len = g.total_len;
    }

    #[inline]
    fn set_remote(&mut self, remote: Remote) {
        self.key = remote.key.0;
        self.remote_addr = remote.addr;
    }
}

impl From<SendRequest> for SendWqe {
    /// A fresh slot holding `request`, its scatter/gather area zero (a
    /// local operation's whole slot; a data request's payload is written
    /// next).
    fn from(request: SendRequest) -> Self {
        let mut slot = Self::default();
        request.encode(&mut slot);
        slot
    }
}

/// `Ok` if `value` is zero, else the field's name as an error.
fn zero<T: Copy + Default + PartialEq>(value: T, field: &'static str) -> Result<(), WqeError> {
    if value == T::default() {
        Ok(())
    } else {
        Err(WqeError::Reserved(field))
    }
}

/// Flags every opcode may carry.
const COMMON_FLAGS: WqeFlags = WqeFlags::SIGNALED.union(WqeFlags::READ_FENCE);

impl SendWqe {
    /// Reads the slot as the request [`SendRequest::encode`] wrote, or says
    /// why no encoder wrote it.
    pub fn decode(&self) -> Result<SendRequest, WqeError> {
        let op = SendOpcode::from_raw(self.opcode).ok_or(WqeError::Opcode(self.opcode))?;
        let flags = WqeFlags::from_bits(self.flags).ok_or(WqeError::Flags(self.flags))?;
        let allowed = COMMON_FLAGS
            | match op {
                SendOpcode::Send | SendOpcode::SendInvalidate => {
                    WqeFlags::SOLICITED | WqeFlags::INLINE
                }
                SendOpcode::Write => WqeFlags::INLINE,
                SendOpcode::Read => WqeFlags::READ_LOCAL_INVALIDATE,
                SendOpcode::FastRegister | SendOpcode::Bind | SendOpcode::LocalInvalidate => {
                    WqeFlags::empty()
                }
            };
        if !allowed.contains(flags) {
            return Err(WqeError::Flags(self.flags));
        }
        zero(self.reserved0, "reserved0")?;
        zero(self.reserved1, "reserved1")?;
        let op = match op {
            SendOpcode::Send | SendOpcode::SendInvalidate => {
                self.unused_by_data()?;
                zero(self.remote_addr, "remote_addr")?;
                let invalidate = if op == SendOpcode::SendInvalidate {
                    Some(MemoryKey(self.key))
                } else {
                    zero(self.key, "key")?;
                    None
                };
                SendOp::Send {
                    data: self.data(flags)?,
                    solicited: flags.contains(WqeFlags::SOLICITED),
                    invalidate,
                }
            }
            SendOpcode::Write => {
                self.unused_by_data()?;
                SendOp::Write {
                    data: self.data(flags)?,
                    remote: self.remote(),
                }
            }
            SendOpcode::Read => {
                self.unused_by_data()?;
                SendOp::Read {
                    sink: self.gather()?,
                    remote: self.remote(),
                    invalidate_sink: flags.contains(WqeFlags::READ_LOCAL_INVALIDATE),
                }
            }
            SendOpcode::FastRegister => {
                self.unused_by_local()?;
                SendOp::FastRegister(FastRegister {
                    key: MemoryKey(self.key),
                    access: self.access()?,
                    va: self.remote_addr,
                    length: self.length,
                    fbo: self.fbo,
                    page_count: self.aux32,
                    page_list: self.aux64,
                })
            }
            SendOpcode::Bind => {
                self.unused_by_local()?;
                zero(self.aux64, "aux64")?;
                zero(self.fbo, "fbo")?;
                SendOp::Bind(Bind {
                    window: MemoryKey(self.key),
                    region: MemoryKey(self.aux32),
                    access: self.access()?,
                    va: self.remote_addr,
                    length: self.length,
                })
            }
            SendOpcode::LocalInvalidate => {
                self.unused_by_local()?;
                zero(self.access, "access")?;
                zero(self.aux32, "aux32")?;
                zero(self.remote_addr, "remote_addr")?;
                zero(self.length, "length")?;
                zero(self.aux64, "aux64")?;
                zero(self.fbo, "fbo")?;
                SendOp::LocalInvalidate {
                    key: MemoryKey(self.key),
                }
            }
        };
        Ok(SendRequest {
            wr_id: self.wr_id,
            signaled: flags.contains(WqeFlags::SIGNALED),
            read_fence: flags.contains(WqeFlags::READ_FENCE),
            op,
        })
    }

    /// The fields no SEND, WRITE or READ uses are zero.
    fn unused_by_data(&self) -> Result<(), WqeError> {
        zero(self.access, "access")?;
        zero(self.aux32, "aux32")?;
        zero(self.length, "length")?;
        zero(self.aux64, "aux64")?;
        zero(self.fbo, "fbo")
    }

    /// The fields no local operation uses (the payload's) are zero.
    fn unused_by_local(&self) -> Result<(), WqeError> {
        zero(self.sge_count, "sge_count")?;
        zero(self.inline_len, "inline_len")?;
        zero(self.total_len, "total_len")
    }

    fn remote(&self) -> Remote {
        Remote {
            addr: self.remote_addr,
            key: MemoryKey(self.key),
        }
    }

    fn access(&self) -> Result<Access, WqeError> {
        Access::from_bits(self.access).ok_or(WqeError::Access(self.access))
    }

    fn gather(&self) -> Result<Gather, WqeError> {
        zero(self.inline_len, "inline_len")?;
        if usize::from(self.sge_count) > MAX_SGE {
            return Err(WqeError::SgeCount(self.sge_count));
        }
        Ok(Gather {
            count: self.sge_count,
            total_len: self.total_len,
        })
    }

    fn data(&self, flags: WqeFlags) -> Result<Data, WqeError> {
        if !flags.contains(WqeFlags::INLINE) {
            return self.gather().map(Data::Gather);
        }
        zero(self.sge_count, "sge_count")?;
        if usize::from(self.inline_len) > MAX_INLINE || self.total_len != u32::from(self.inline_len)
        {
            return Err(WqeError::InlineLength(self.inline_len));
        }
        Ok(Data::Inline {
            len: self.inline_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read() -> SendRequest {
        SendRequest {
            wr_id: 7,
            signaled: true,
            read_fence: false,
            op: SendOp::Read {
                sink: Gather {
                    count: 2,
                    total_len: 100,
                },
                remote: Remote {
                    addr: 0x1000,
                    key: MemoryKey(0x1234),
                },
                invalidate_sink: true,
            },
        }
    }

    #[test]
    fn encode_overwrites_a_used_slot_whole() {
        let mut slot = SendWqe::default();
        slot.as_mut_bytes_header().fill(0xff);
        read().encode(&mut slot);
        assert_eq!(slot.decode(), Ok(read()));
    }

    #[test]
    fn a_field_the_opcode_does_not_use_is_refused() {
        let mut slot = SendWqe::default();
        read().encode(&mut slot);
        slot.fbo = 1;
        assert_eq!(slot.decode(), Err(WqeError::Reserved("fbo")));
    }

    impl SendWqe {
        fn as_mut_bytes_header(&mut self) -> &mut [u8] {
            use zerocopy::IntoBytes;
            &mut self.as_mut_bytes()[..64]
        }
    }
}

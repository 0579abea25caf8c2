//! Wire formats: [MS-SMBD] negotiate and data-transfer messages, the
//! RDMA buffer descriptor, and the SMB2 header with READ/WRITE/LOGOFF
//! bodies as SMB2 lays them out ([MS-SMB2] 2.2.1, 2.2.19-2.2.22).
//! All integers are little-endian.

use crate::error::{Error, Result};

/// The one SMB Direct version.
pub const SMBD_VERSION: u16 = 0x0100;
/// Negotiate request length.
pub const NEGOTIATE_REQUEST_LEN: usize = 20;
/// Negotiate response length.
pub const NEGOTIATE_RESPONSE_LEN: usize = 32;
/// Data-transfer header of an empty message.
pub const EMPTY_HEADER_LEN: usize = 20;
/// Data-transfer header (and DataOffset) of a message with payload.
pub const DATA_HEADER_LEN: usize = 24;
/// Data-transfer flag: the peer must answer promptly (keepalive).
pub const FLAG_RESPONSE_REQUESTED: u16 = 0x0001;
/// Smallest MaxReceiveSize a peer may announce.
pub const MIN_RECEIVE_SIZE: u32 = 128;
/// Smallest MaxFragmentedSize a peer may announce.
pub const MIN_FRAGMENTED_SIZE: u32 = 131_072;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// SMB Direct Negotiate Request (2.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NegotiateRequest {
    /// Send credits wanted (SendCreditTarget).
    pub credits_requested: u16,
    /// Largest message the sender will send.
    pub preferred_send_size: u32,
    /// Largest message the sender can receive.
    pub max_receive_size: u32,
    /// Largest reassembled message the sender accepts.
    pub max_fragmented_size: u32,
}

impl NegotiateRequest {
    /// The 20 bytes.
    pub fn encode(&self) -> [u8; NEGOTIATE_REQUEST_LEN] {
        let mut b = [0u8; NEGOTIATE_REQUEST_LEN];
        put16(&mut b, 0, SMBD_VERSION);
        put16(&mut b, 2, SMBD_VERSION);
        put16(&mut b, 6, self.credits_requested);
        put32(&mut b, 8, self.preferred_send_size);
        put32(&mut b, 12, self.max_receive_size);
        put32(&mut b, 16, self.max_fragmented_size);
        b
    }

    /// Parses and validates (3.1.5.6 rules: too short, no common version,
    /// zero credits, sizes below the minimums).
    pub fn decode(b: &[u8]) -> Result<Self> {
        if b.len() < NEGOTIATE_REQUEST_LEN {
            return Err(Error::msg(format!(
                "SMB Direct negotiate request of {} bytes (at least 20)",
                b.len()
            )));
        }
        let (min, max) = (u16_at(b, 0), u16_at(b, 2));
        if !(min..=max).contains(&SMBD_VERSION) {
            return Err(Error::msg(format!(
                "SMB Direct negotiate request for versions {min:#06x}..{max:#06x}, not 0x0100"
            )));
        }
        let r = Self {
            credits_requested: u16_at(b, 6),
            preferred_send_size: u32_at(b, 8),
            max_receive_size: u32_at(b, 12),
            max_fragmented_size: u32_at(b, 16),
        };
        if r.credits_requested == 0
            || r.max_receive_size < MIN_RECEIVE_SIZE
            || r.max_fragmented_size < MIN_FRAGMENTED_SIZE
        {
            return Err(Error::msg(format!(
                "invalid SMB Direct negotiate request {r:?}"
            )));
        }
        Ok(r)
    }
}

/// SMB Direct Negotiate Response (2.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NegotiateResponse {
    /// The responder's send-credit target.
    pub credits_requested: u16,
    /// Initial send credits of the initiator (receives posted).
    pub credits_granted: u16,
    /// NTSTATUS, 0 on success.
    pub status: u32,
    /// Largest RDMA read/write the responder does.
    pub max_read_write_size: u32,
    /// The responder's largest message.
    pub preferred_send_size: u32,
    /// Largest message the responder can receive.
    pub max_receive_size: u32,
    /// Largest reassembled message the responder accepts.
    pub max_fragmented_size: u32,
}

impl NegotiateResponse {
    /// The 32 bytes.
    pub fn encode(&self) -> [u8; NEGOTIATE_RESPONSE_LEN] {
        let mut b = [0u8; NEGOTIATE_RESPONSE_LEN];
        put16(&mut b, 0, SMBD_VERSION);
        put16(&mut b, 2, SMBD_VERSION);
        put16(&mut b, 4, SMBD_VERSION);
        put16(&mut b, 8, self.credits_requested);
        put16(&mut b, 10, self.credits_granted);
        put32(&mut b, 12, self.status);
        put32(&mut b, 16, self.max_read_write_size);
        put32(&mut b, 20, self.preferred_send_size);
        put32(&mut b, 24, self.max_receive_size);
        put32(&mut b, 28, self.max_fragmented_size);
        b
    }

    /// Parses and validates (3.1.5.7 rules).
    pub fn decode(b: &[u8]) -> Result<Self> {
        if b.len() < NEGOTIATE_RESPONSE_LEN {
            return Err(Error::msg(format!(
                "SMB Direct negotiate response of {} bytes (at least 32)",
                b.len()
            )));
        }
        let r = Self {
            credits_requested: u16_at(b, 8),
            credits_granted: u16_at(b, 10),
            status: u32_at(b, 12),
            max_read_write_size: u32_at(b, 16),
            preferred_send_size: u32_at(b, 20),
            max_receive_size: u32_at(b, 24),
            max_fragmented_size: u32_at(b, 28),
        };
        if u16_at(b, 4) != SMBD_VERSION
            || r.status != 0
            || r.credits_granted == 0
            || r.credits_requested == 0
            || r.max_receive_size < MIN_RECEIVE_SIZE
            || r.max_fragmented_size < MIN_FRAGMENTED_SIZE
        {
            return Err(Error::msg(format!(
                "SMB Direct negotiate failed: response {r:?}"
            )));
        }
        Ok(r)
    }
}

/// SMB Direct Data Transfer header (2.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DataHeader {
    /// Total send credits the sender wants.
    pub credits_requested: u16,
    /// New credits given to the peer.
    pub credits_granted: u16,
    /// `FLAG_RESPONSE_REQUESTED` or 0.
    pub flags: u16,
    /// Bytes of the upper-layer message still to come.
    pub remaining_data_length: u32,
    /// Offset of the payload (24) or 0 without payload.
    pub data_offset: u32,
    /// Bytes of payload.
    pub data_length: u32,
}

impl DataHeader {
    /// Writes the header (20 bytes, or 24 with the zero padding when there
    /// is payload) into `b`; returns its length.
    pub fn encode_into(&self, b: &mut [u8]) -> usize {
        let len = if self.data_length == 0 {
            EMPTY_HEADER_LEN
        } else {
            DATA_HEADER_LEN
        };
        b[..len].fill(0);
        put16(b, 0, self.credits_requested);
        put16(b, 2, self.credits_granted);
        put16(b, 4, self.flags);
        put32(b, 8, self.remaining_data_length);
        put32(b, 12, self.data_offset);
        put32(b, 16, self.data_length);
        len
    }

    /// Parses and validates a received message of `b.len()` bytes against
    /// the local reassembly limit (3.1.5.8 rules).
    pub fn decode(b: &[u8], max_fragmented: u32) -> Result<Self> {
        if b.len() < EMPTY_HEADER_LEN {
            return Err(Error::msg(format!(
                "SMB Direct data message of {} bytes (at least 20)",
                b.len()
            )));
        }
        let h = Self {
            credits_requested: u16_at(b, 0),
            credits_granted: u16_at(b, 2),
            flags: u16_at(b, 4),
            remaining_data_length: u32_at(b, 8),
            data_offset: u32_at(b, 12),
            data_length: u32_at(b, 16),
        };
        let end = u64::from(h.data_offset) + u64::from(h.data_length);
        if h.credits_requested == 0
            || h.data_offset % 8 != 0
            || (h.data_length > 0 && end > b.len() as u64)
            || u64::from(h.data_length) + u64::from(h.remaining_data_length)
                > u64::from(max_fragmented)
        {
            return Err(Error::msg(format!(
                "invalid SMB Direct data message {h:?} ({} bytes)",
                b.len()
            )));
        }
        Ok(h)
    }
}

/// SMB_DIRECT_BUFFER_DESCRIPTOR_V1 (2.2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferDescriptor {
    /// Address of the first byte (the fast-registered virtual address).
    pub offset: u64,
    /// Remote token of the registration.
    pub token: u32,
    /// Bytes to move.
    pub length: u32,
}

/// Bytes of one descriptor.
pub const DESCRIPTOR_LEN: usize = 16;

impl BufferDescriptor {
    fn encode_into(&self, b: &mut [u8]) {
        put64(b, 0, self.offset);
        put32(b, 8, self.token);
        put32(b, 12, self.length);
    }

    fn decode(b: &[u8]) -> Self {
        Self {
            offset: u64_at(b, 0),
            token: u32_at(b, 8),
            length: u32_at(b, 12),
        }
    }
}

/// SMB2 command READ.
pub const SMB2_READ: u16 = 0x0008;
/// SMB2 command WRITE.
pub const SMB2_WRITE: u16 = 0x0009;
/// SMB2 command LOGOFF.
pub const SMB2_LOGOFF: u16 = 0x0002;
/// Channel: data inline.
pub const CHANNEL_NONE: u32 = 0;
/// Channel: RDMA, the server remotely invalidates the first token.
pub const CHANNEL_RDMA_V1_INVALIDATE: u32 = 2;
/// SMB2 header length.
pub const SMB2_HEADER_LEN: usize = 64;
const SMB2_FLAGS_SERVER_TO_REDIR: u32 = 0x1;
/// Offset of the buffer of a READ/WRITE request (64 + 48).
const REQUEST_BUFFER: usize = 0x70;
/// Offset of the data of a READ response (64 + 16).
const READ_RESPONSE_BUFFER: usize = 0x50;

/// The part of an SMB2 message this workload uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Smb2 {
    /// READ, WRITE or LOGOFF.
    pub command: u16,
    /// Request/response pairing, and the I/O's pattern id.
    pub message_id: u64,
    /// Set on responses.
    pub response: bool,
    /// Response status (NTSTATUS).
    pub status: u32,
    /// Bytes of the I/O.
    pub length: u32,
    /// File offset of the I/O.
    pub file_offset: u64,
    /// CHANNEL_NONE or CHANNEL_RDMA_V1_INVALIDATE.
    pub channel: u32,
    /// Where the data is (RDMA channel).
    pub descriptors: Vec<BufferDescriptor>,
    /// Inline data (WRITE request, READ response).
    pub data: Vec<u8>,
}

impl Smb2 {
    fn header(&self, b: &mut Vec<u8>) {
        b.resize(SMB2_HEADER_LEN, 0);
        b[0..4].copy_from_slice(&[0xFE, b'S', b'M', b'B']);
        put16(b, 4, 64);
        put16(b, 6, 1);
        put32(b, 8, self.status);
        put16(b, 12, self.command);
        put16(b, 14, 1);
        put32(
            b,
            16,
            if self.response {
                SMB2_FLAGS_SERVER_TO_REDIR
            } else {
                0
            },
        );
        put64(b, 24, self.message_id);
        put32(b, 36, 1);
        put64(b, 40, 0x1000_0000_0001);
    }

    /// The message bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(REQUEST_BUFFER + self.data.len() + 16);
        self.header(&mut b);
        let channel_info = self.descriptors.len() * DESCRIPTOR_LEN;
        match (self.command, self.response) {
            (SMB2_WRITE, false) => {
                b.resize(REQUEST_BUFFER, 0);
                put16(&mut b, 64, 49);
                put16(&mut b, 66, REQUEST_BUFFER as u16);
                let inline = if self.channel == CHANNEL_NONE {
                    self.data.len() as u32
                } else {
                    0
                };
                put32(&mut b, 68, inline);
                put64(&mut b, 72, self.file_offset);
                put32(&mut b, 96, self.channel);
                put32(&mut b, 100, if inline == 0 { self.length } else { 0 });
                if channel_info > 0 {
                    put16(&mut b, 104, REQUEST_BUFFER as u16);
                    put16(&mut b, 106, channel_info as u16);
                }
                self.append_buffer(&mut b);
            }
            (SMB2_READ, false) => {
                b.resize(REQUEST_BUFFER, 0);
                put16(&mut b, 64, 49);
                put32(&mut b, 68, self.length);
                put64(&mut b, 72, self.file_offset);
                put32(&mut b, 96, self.length);
                put32(&mut b, 100, self.channel);
                if channel_info > 0 {
                    put32(&mut b, 104, self.length);
                    put16(&mut b, 108, REQUEST_BUFFER as u16);
                    put16(&mut b, 110, channel_info as u16);
                }
                self.append_buffer(&mut b);
                if channel_info == 0 {
                    // A READ request's Buffer holds at least one byte.
                    b.push(0);
                }
            }
            (SMB2_WRITE, true) => {
                b.resize(SMB2_HEADER_LEN + 16, 0);
                put16(&mut b, 64, 17);
                put32(&mut b, 68, self.length);
            }
            (SMB2_READ, true) => {
                b.resize(READ_RESPONSE_BUFFER, 0);
                put16(&mut b, 64, 17);
                b[66] = READ_RESPONSE_BUFFER as u8;
                put32(&mut b, 68, self.data.len() as u32);
                let remaining = if self.data.is_empty() { self.length } else { 0 };
                put32(&mut b, 72, remaining);
                b.extend_from_slice(&self.data);
            }
            _ => {
                // LOGOFF request/response: StructureSize 4, reserved.
                b.resize(SMB2_HEADER_LEN + 4, 0);
                put16(&mut b, 64, 4);
            }
        }
        b
    }

    fn append_buffer(&self, b: &mut Vec<u8>) {
        for d in &self.descriptors {
            let at = b.len();
            b.resize(at + DESCRIPTOR_LEN, 0);
            d.encode_into(&mut b[at..]);
        }
        if self.channel == CHANNEL_NONE {
            b.extend_from_slice(&self.data);
        }
    }

    /// Parses what [`Smb2::encode`] writes.
    pub fn decode(b: &[u8]) -> Result<Self> {
        let bad =
            |why: &str| Error::msg(format!("malformed SMB2 message ({why}, {} bytes)", b.len()));
        if b.len() < SMB2_HEADER_LEN + 4 || b[0..4] != [0xFE, b'S', b'M', b'B'] {
            return Err(bad("no SMB2 header"));
        }
        let mut m = Self {
            command: u16_at(b, 12),
            message_id: u64_at(b, 24),
            response: u32_at(b, 16) & SMB2_FLAGS_SERVER_TO_REDIR != 0,
            status: u32_at(b, 8),
            ..Self::default()
        };
        let descriptors = |off: usize, len: usize| -> Result<Vec<BufferDescriptor>> {
            if len % DESCRIPTOR_LEN != 0 || off + len > b.len() {
                return Err(bad("channel info"));
            }
            Ok(b[off..off + len]
                .chunks_exact(DESCRIPTOR_LEN)
                .map(BufferDescriptor::decode)
                .collect())
        };
        match (m.command, m.response) {
            (SMB2_WRITE, false) => {
                if b.len() < REQUEST_BUFFER {
                    return Err(bad("short WRITE"));
                }
                let data_offset = usize::from(u16_at(b, 66));
                let inline = u32_at(b, 68) as usize;
                m.file_offset = u64_at(b, 72);
                m.channel = u32_at(b, 96);
                if m.channel == CHANNEL_NONE {
                    if data_offset + inline > b.len() {
                        return Err(bad("WRITE data"));
                    }
                    m.data = b[data_offset..data_offset + inline].to_vec();
                    m.length = inline as u32;
                } else {
                    m.length = u32_at(b, 100);
                    m.descriptors =
                        descriptors(usize::from(u16_at(b, 104)), usize::from(u16_at(b, 106)))?;
                }
            }
            (SMB2_READ, false) => {
                if b.len() < REQUEST_BUFFER {
                    return Err(bad("short READ"));
                }
                m.length = u32_at(b, 68);
                m.file_offset = u64_at(b, 72);
                m.channel = u32_at(b, 100);
                if m.channel != CHANNEL_NONE {
                    m.descriptors =
                        descriptors(usize::from(u16_at(b, 108)), usize::from(u16_at(b, 110)))?;
                }
            }
            (SMB2_WRITE, true) => m.length = u32_at(b, 68),
            (SMB2_READ, true) => {
                if b.len() < READ_RESPONSE_BUFFER {
                    return Err(bad("short READ response"));
                }
                let off = usize::from(b[66]);
                let len = u32_at(b, 68) as usize;
                if off + len > b.len() {
                    return Err(bad("READ response data"));
                }
                m.data = b[off..off + len].to_vec();
                m.length = if len > 0 { len as u32 } else { u32_at(b, 72) };
            }
            _ => {}
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiate_messages_round_trip_with_exact_sizes() {
        let q = NegotiateRequest {
            credits_requested: 255,
            preferred_send_size: 1364,
            max_receive_size: 8192,
            max_fragmented_size: 1 << 20,
        };
        let b = q.encode();
        assert_eq!(&b[..4], &[0, 1, 0, 1]);
        assert_eq!(NegotiateRequest::decode(&b).unwrap(), q);
        assert!(NegotiateRequest::decode(&b[..19]).is_err());
        let mut zero = b;
        zero[6] = 0;
        assert!(NegotiateRequest::decode(&zero).is_err());
        let r = NegotiateResponse {
            credits_requested: 255,
            credits_granted: 255,
            status: 0,
            max_read_write_size: 1 << 20,
            preferred_send_size: 1364,
            max_receive_size: 8192,
            max_fragmented_size: 1 << 20,
        };
        assert_eq!(NegotiateResponse::decode(&r.encode()).unwrap(), r);
        let failed = NegotiateResponse {
            status: 0xC000_00BB,
            ..r
        };
        assert!(NegotiateResponse::decode(&failed.encode()).is_err());
    }

    #[test]
    fn data_header_rules() {
        let h = DataHeader {
            credits_requested: 255,
            credits_granted: 3,
            flags: FLAG_RESPONSE_REQUESTED,
            remaining_data_length: 100,
            data_offset: 24,
            data_length: 8,
        };
        let mut b = [0u8; 32];
        assert_eq!(h.encode_into(&mut b), 24);
        assert_eq!(DataHeader::decode(&b, 1 << 20).unwrap(), h);
        assert!(
            DataHeader::decode(&b[..30], 1 << 20).is_err(),
            "payload past the end"
        );
        assert!(
            DataHeader::decode(&b, 50).is_err(),
            "beyond the reassembly limit"
        );
        let empty = DataHeader {
            credits_requested: 1,
            ..DataHeader::default()
        };
        assert_eq!(empty.encode_into(&mut b), 20);
        assert_eq!(DataHeader::decode(&b[..20], 1 << 20).unwrap(), empty);
    }

    #[test]
    fn smb2_read_write_round_trip() {
        let d = BufferDescriptor {
            offset: 0x7f12_3456_0000,
            token: 0xabcd,
            length: 1 << 20,
        };
        for m in [
            Smb2 {
                command: SMB2_WRITE,
                message_id: 9,
                length: 1 << 20,
                file_offset: 4096,
                channel: CHANNEL_RDMA_V1_INVALIDATE,
                descriptors: vec![d, d],
                ..Smb2::default()
            },
            Smb2 {
                command: SMB2_WRITE,
                message_id: 10,
                length: 3,
                channel: CHANNEL_NONE,
                data: vec![1, 2, 3],
                ..Smb2::default()
            },
            Smb2 {
                command: SMB2_READ,
                message_id: 11,
                length: 1 << 20,
                channel: CHANNEL_RDMA_V1_INVALIDATE,
                descriptors: vec![d],
                ..Smb2::default()
            },
            Smb2 {
                command: SMB2_READ,
                message_id: 12,
                response: true,
                length: 2,
                data: vec![7, 8],
                ..Smb2::default()
            },
            Smb2 {
                command: SMB2_WRITE,
                message_id: 13,
                response: true,
                length: 1 << 20,
                ..Smb2::default()
            },
        ] {
            let b = m.encode();
            assert_eq!(Smb2::decode(&b).unwrap(), m, "{m:?}");
        }
        let req = Smb2 {
            command: SMB2_WRITE,
            channel: CHANNEL_RDMA_V1_INVALIDATE,
            descriptors: vec![d],
            ..Smb2::default()
        }
        .encode();
        assert_eq!(req.len(), 0x70 + 16);
        assert_eq!(
            u16::from_le_bytes([req[104], req[105]]),
            0x70,
            "WriteChannelInfoOffset"
        );
    }
}

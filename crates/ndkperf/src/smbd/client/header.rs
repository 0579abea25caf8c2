//! The SMB2 packet header ([MS-SMB2] 2.2.1.1 async, 2.2.1.2 sync), the
//! command codes and the NTSTATUS values the client acts on.

use super::codec::{Reader, put_u16, put_u32, put_u64};
use crate::error::Result;

/// Every SMB2 header is 64 bytes; message bodies start here.
pub const HEADER_LEN: usize = 64;
/// Where the 16-byte signature sits in the header.
pub const SIGNATURE_AT: usize = 48;
/// Offset of the Flags field (signing sets a bit in it).
pub const FLAGS_AT: usize = 16;

/// SMB2 commands (2.2.1.2 Command).
pub mod command {
    /// NEGOTIATE.
    pub const NEGOTIATE: u16 = 0x0000;
    /// SESSION_SETUP.
    pub const SESSION_SETUP: u16 = 0x0001;
    /// LOGOFF.
    pub const LOGOFF: u16 = 0x0002;
    /// TREE_CONNECT.
    pub const TREE_CONNECT: u16 = 0x0003;
    /// TREE_DISCONNECT.
    pub const TREE_DISCONNECT: u16 = 0x0004;
    /// CREATE.
    pub const CREATE: u16 = 0x0005;
    /// CLOSE.
    pub const CLOSE: u16 = 0x0006;
    /// READ.
    pub const READ: u16 = 0x0008;
    /// WRITE.
    pub const WRITE: u16 = 0x0009;
}

/// Header flags (2.2.1.2 Flags).
pub mod flags {
    /// Set on every response.
    pub const SERVER_TO_REDIR: u32 = 0x0000_0001;
    /// The async header form (AsyncId instead of Reserved/TreeId).
    pub const ASYNC_COMMAND: u32 = 0x0000_0002;
    /// The message is signed.
    pub const SIGNED: u32 = 0x0000_0008;
}

/// NTSTATUS values the client distinguishes ([MS-ERREF] 2.3.1).
pub mod status {
    /// STATUS_SUCCESS.
    pub const SUCCESS: u32 = 0x0000_0000;
    /// STATUS_PENDING: an interim response; the final one follows.
    pub const PENDING: u32 = 0x0000_0103;
    /// STATUS_MORE_PROCESSING_REQUIRED: another SESSION_SETUP leg follows.
    pub const MORE_PROCESSING_REQUIRED: u32 = 0xC000_0016;
    /// STATUS_LOGON_FAILURE: wrong user or password.
    pub const LOGON_FAILURE: u32 = 0xC000_006D;
    /// STATUS_ACCESS_DENIED.
    pub const ACCESS_DENIED: u32 = 0xC000_0022;
    /// STATUS_BAD_NETWORK_NAME: no such share.
    pub const BAD_NETWORK_NAME: u32 = 0xC000_00CC;
    /// STATUS_OBJECT_NAME_NOT_FOUND.
    pub const OBJECT_NAME_NOT_FOUND: u32 = 0xC000_0034;
    /// STATUS_END_OF_FILE.
    pub const END_OF_FILE: u32 = 0xC000_0011;
    /// STATUS_INVALID_PARAMETER.
    pub const INVALID_PARAMETER: u32 = 0xC000_000D;
    /// STATUS_USER_SESSION_DELETED.
    pub const USER_SESSION_DELETED: u32 = 0xC000_0203;
    /// STATUS_NOT_SUPPORTED.
    pub const NOT_SUPPORTED: u32 = 0xC000_00BB;

    /// The C name of a status, for error messages.
    pub fn name(status: u32) -> &'static str {
        match status {
            SUCCESS => "STATUS_SUCCESS",
            PENDING => "STATUS_PENDING",
            MORE_PROCESSING_REQUIRED => "STATUS_MORE_PROCESSING_REQUIRED",
            LOGON_FAILURE => "STATUS_LOGON_FAILURE",
            ACCESS_DENIED => "STATUS_ACCESS_DENIED",
            BAD_NETWORK_NAME => "STATUS_BAD_NETWORK_NAME",
            OBJECT_NAME_NOT_FOUND => "STATUS_OBJECT_NAME_NOT_FOUND",
            END_OF_FILE => "STATUS_END_OF_FILE",
            INVALID_PARAMETER => "STATUS_INVALID_PARAMETER",
            USER_SESSION_DELETED => "STATUS_USER_SESSION_DELETED",
            NOT_SUPPORTED => "STATUS_NOT_SUPPORTED",
            _ => "NTSTATUS",
        }
    }
}

/// The name of a command, for error messages.
pub fn command_name(command: u16) -> &'static str {
    match command {
        command::NEGOTIATE => "NEGOTIATE",
        command::SESSION_SETUP => "SESSION_SETUP",
        command::LOGOFF => "LOGOFF",
        command::TREE_CONNECT => "TREE_CONNECT",
        command::TREE_DISCONNECT => "TREE_DISCONNECT",
        command::CREATE => "CREATE",
        command::CLOSE => "CLOSE",
        command::READ => "READ",
        command::WRITE => "WRITE",
        _ => "command",
    }
}

/// An SMB2 header. Requests are always sync; responses may be async
/// (interim STATUS_PENDING and the final answer after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Credits this message consumes (requests) or consumed (responses).
    pub credit_charge: u16,
    /// NTSTATUS of a response; ChannelSequence + Reserved (0) in requests.
    pub status: u32,
    /// One of [`command`].
    pub command: u16,
    /// CreditRequest (request) or CreditResponse (response): credits asked
    /// for or granted.
    pub credits: u16,
    /// [`flags`].
    pub flags: u32,
    /// Offset of the next compounded message (never used here: 0).
    pub next_command: u32,
    /// The request's sequence number; responses repeat it.
    pub message_id: u64,
    /// AsyncId of an async response (`ASYNC_COMMAND`), else 0.
    pub async_id: u64,
    /// TreeId (sync form).
    pub tree_id: u32,
    /// SessionId.
    pub session_id: u64,
    /// The signature (zero when unsigned).
    pub signature: [u8; 16],
}

impl Header {
    /// Appends the 64 bytes.
    pub fn encode_into(&self, b: &mut Vec<u8>) {
        b.extend_from_slice(&[0xFE, b'S', b'M', b'B']);
        put_u16(b, HEADER_LEN as u16);
        put_u16(b, self.credit_charge);
        put_u32(b, self.status);
        put_u16(b, self.command);
        put_u16(b, self.credits);
        put_u32(b, self.flags);
        put_u32(b, self.next_command);
        put_u64(b, self.message_id);
        if self.flags & flags::ASYNC_COMMAND != 0 {
            put_u64(b, self.async_id);
        } else {
            put_u32(b, 0);
            put_u32(b, self.tree_id);
        }
        put_u64(b, self.session_id);
        b.extend_from_slice(&self.signature);
    }

    /// Parses the header of a received message.
    pub fn decode(b: &[u8]) -> Result<Self> {
        let r = Reader::new(b, "SMB2 header");
        if r.array::<4>(0)? != [0xFE, b'S', b'M', b'B'] {
            return Err(r.error("no 0xFE 'SMB' protocol id (an SMB1 or transform message?)"));
        }
        if r.u16(4)? != HEADER_LEN as u16 {
            return Err(r.error("StructureSize is not 64"));
        }
        let flags = r.u32(16)?;
        let async_form = flags & flags::ASYNC_COMMAND != 0;
        Ok(Self {
            credit_charge: r.u16(6)?,
            status: r.u32(8)?,
            command: r.u16(12)?,
            credits: r.u16(14)?,
            flags,
            next_command: r.u32(20)?,
            message_id: r.u64(24)?,
            async_id: if async_form { r.u64(32)? } else { 0 },
            tree_id: if async_form { 0 } else { r.u32(36)? },
            session_id: r.u64(40)?,
            signature: r.array(SIGNATURE_AT)?,
        })
    }

    /// Whether this is a response.
    pub fn is_response(&self) -> bool {
        self.flags & flags::SERVER_TO_REDIR != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_and_async_headers_round_trip_at_their_offsets() {
        let sync = Header {
            credit_charge: 16,
            status: status::SUCCESS,
            command: command::WRITE,
            credits: 64,
            flags: flags::SIGNED,
            message_id: 0x1122_3344_5566_7788,
            tree_id: 0xAABB_CCDD,
            session_id: 0x1000_0000_0025,
            signature: [7; 16],
            ..Header::default()
        };
        let mut b = Vec::new();
        sync.encode_into(&mut b);
        assert_eq!(b.len(), HEADER_LEN);
        assert_eq!(&b[0..4], b"\xFESMB");
        assert_eq!(u16::from_le_bytes([b[6], b[7]]), 16, "CreditCharge at 6");
        assert_eq!(u16::from_le_bytes([b[12], b[13]]), 9, "Command at 12");
        assert_eq!(
            u32::from_le_bytes([b[36], b[37], b[38], b[39]]),
            0xAABB_CCDD
        );
        assert_eq!(Header::decode(&b).unwrap(), sync);
        let interim = Header {
            status: status::PENDING,
            flags: flags::SERVER_TO_REDIR | flags::ASYNC_COMMAND,
            async_id: 0x55,
            ..sync
        };
        let mut b = Vec::new();
        interim.encode_into(&mut b);
        let back = Header::decode(&b).unwrap();
        assert_eq!(back.async_id, 0x55);
        assert_eq!(back.tree_id, 0, "async headers carry no TreeId");
        assert!(back.is_response());
        assert!(Header::decode(&b[..63]).is_err());
        b[0] = 0xFF;
        assert!(Header::decode(&b).is_err(), "SMB1 id");
    }
}

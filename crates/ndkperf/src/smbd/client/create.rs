//! SMB2 CREATE ([MS-SMB2] 2.2.13, 2.2.14) and CLOSE (2.2.15, 2.2.16).

use super::codec::{Reader, len16, put_u16, put_u32, put_u64, utf16le};
use super::header::HEADER_LEN;
use crate::error::{Error, Result};

/// A file handle: persistent and volatile halves (2.2.14.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct FileId {
    /// Persistent.
    pub persistent: u64,
    /// Volatile.
    pub volatile: u64,
}

impl FileId {
    /// Appends the 16 bytes.
    pub fn encode_into(&self, b: &mut Vec<u8>) {
        put_u64(b, self.persistent);
        put_u64(b, self.volatile);
    }

    /// Reads the 16 bytes at `at`.
    pub fn decode(r: &Reader<'_>, at: usize) -> Result<Self> {
        Ok(Self {
            persistent: r.u64(at)?,
            volatile: r.u64(at + 8)?,
        })
    }
}

/// DesiredAccess: FILE_GENERIC_READ | FILE_GENERIC_WRITE ([MS-SMB2]
/// 2.2.13.1.1 bits: read/write/append data, EAs, attributes,
/// READ_CONTROL, SYNCHRONIZE).
pub const ACCESS_READ_WRITE: u32 = 0x0012_019F;
/// FileAttributes: FILE_ATTRIBUTE_NORMAL.
pub const ATTRIBUTE_NORMAL: u32 = 0x0000_0080;
/// ShareAccess: FILE_SHARE_READ | FILE_SHARE_WRITE.
pub const SHARE_READ_WRITE: u32 = 0x0000_0003;
/// CreateDisposition: FILE_OVERWRITE_IF.
pub const DISPOSITION_OVERWRITE_IF: u32 = 5;
/// CreateOptions: FILE_NON_DIRECTORY_FILE.
pub const OPTION_NON_DIRECTORY_FILE: u32 = 0x0000_0040;
/// ImpersonationLevel Impersonation.
const IMPERSONATION: u32 = 2;
/// Where the name of a CREATE request starts (64 + 56).
pub const NAME_AT: usize = HEADER_LEN + 56;

/// A CREATE request body opening `name` (relative to the share, no
/// leading backslash) with no oplock and no create contexts.
pub fn request(name: &str, desired_access: u32, disposition: u32) -> Result<Vec<u8>> {
    if name.starts_with('\\') || name.is_empty() {
        return Err(Error::msg(format!(
            "SMB2 CREATE names are share-relative without a leading backslash: {name:?}"
        )));
    }
    let name16 = utf16le(name);
    let mut b = Vec::new();
    put_u16(&mut b, 57);
    b.push(0); // SecurityFlags
    b.push(0); // RequestedOplockLevel: none
    put_u32(&mut b, IMPERSONATION);
    put_u64(&mut b, 0); // SmbCreateFlags
    put_u64(&mut b, 0); // Reserved
    put_u32(&mut b, desired_access);
    put_u32(&mut b, ATTRIBUTE_NORMAL);
    put_u32(&mut b, SHARE_READ_WRITE);
    put_u32(&mut b, disposition);
    put_u32(&mut b, OPTION_NON_DIRECTORY_FILE);
    put_u16(&mut b, NAME_AT as u16);
    put_u16(&mut b, len16(name16.len(), "a file name")?);
    put_u32(&mut b, 0); // CreateContextsOffset
    put_u32(&mut b, 0); // CreateContextsLength
    b.extend_from_slice(&name16);
    Ok(b)
}

/// A CREATE response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// CreateAction (FILE_CREATED 2, FILE_OVERWRITTEN 3, FILE_OPENED 1).
    pub create_action: u32,
    /// EndofFile.
    pub end_of_file: u64,
    /// FileAttributes.
    pub attributes: u32,
    /// The handle.
    pub file_id: FileId,
}

impl Response {
    /// Parses a whole response message.
    pub fn decode(message: &[u8]) -> Result<Self> {
        let r = Reader::new(message, "SMB2 CREATE response");
        let at = HEADER_LEN;
        if r.u16(at)? != 89 {
            return Err(r.error("StructureSize is not 89"));
        }
        Ok(Self {
            create_action: r.u32(at + 4)?,
            end_of_file: r.u64(at + 48)?,
            attributes: r.u32(at + 56)?,
            file_id: FileId::decode(&r, at + 64)?,
        })
    }
}

/// A CLOSE request body.
pub fn close_request(file: FileId) -> Vec<u8> {
    let mut b = Vec::new();
    put_u16(&mut b, 24);
    put_u16(&mut b, 0); // Flags: no POSTQUERY_ATTRIB
    put_u32(&mut b, 0);
    file.encode_into(&mut b);
    b
}

/// Checks a CLOSE response.
pub fn decode_close_response(message: &[u8]) -> Result<()> {
    let r = Reader::new(message, "SMB2 CLOSE response");
    if r.u16(HEADER_LEN)? != 60 {
        return Err(r.error("StructureSize is not 60"));
    }
    Ok(())
}

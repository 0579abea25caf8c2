//! SMB2 READ and WRITE ([MS-SMB2] 2.2.19-2.2.22), inline or over the SMB
//! Direct RDMA channel with SMB2_CHANNEL_RDMA_V1_INVALIDATE and
//! SMB_DIRECT_BUFFER_DESCRIPTOR_V1 entries ([MS-SMBD] 2.2.3.1).
//!
//! An RDMA WRITE carries Length = 0, DataOffset = 0 and the byte count in
//! RemainingBytes: ksmbd rejects anything else with
//! STATUS_INVALID_PARAMETER (fs/smb/server/smb2pdu.c, smb2_write).

use super::codec::{Reader, len16, put_u16, put_u32, put_u64};
use super::create::FileId;
use super::header::HEADER_LEN;
use crate::error::{Error, Result};
use crate::smbd::proto::BufferDescriptor;

/// Channel: data inline.
pub const CHANNEL_NONE: u32 = 0x0000_0000;
/// Channel: RDMA, the server invalidates the first token remotely with
/// Send-with-Invalidate (3.0.2+).
pub const CHANNEL_RDMA_V1_INVALIDATE: u32 = 0x0000_0002;
/// Bytes of one SMB_DIRECT_BUFFER_DESCRIPTOR_V1.
pub const DESCRIPTOR_LEN: usize = 16;
/// Where the Buffer of READ and WRITE requests starts (64 + 48).
pub const REQUEST_BUFFER_AT: usize = HEADER_LEN + 48;
/// One credit covers 64 KiB of payload (3.1.5.2).
pub const CREDIT_UNIT: u32 = 65_536;

/// Where the data goes or comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data<'a> {
    /// In the SMB2 message itself (the tests' servers; `--server` moves
    /// data over RDMA only).
    #[cfg(test)]
    Inline(&'a [u8]),
    /// In registered client memory the server reaches with RDMA; the
    /// descriptors' lengths add up to the I/O size.
    Rdma(&'a [BufferDescriptor]),
}

fn put_descriptors(b: &mut Vec<u8>, descriptors: &[BufferDescriptor]) {
    for d in descriptors {
        put_u64(b, d.offset);
        put_u32(b, d.token);
        put_u32(b, d.length);
    }
}

/// Parses a descriptor array (for the scripted server).
#[cfg(test)]
pub fn decode_descriptors(r: &Reader<'_>, at: usize, len: usize) -> Result<Vec<BufferDescriptor>> {
    if len % DESCRIPTOR_LEN != 0 {
        return Err(r.error("channel info is not a whole number of 16-byte descriptors"));
    }
    (0..len / DESCRIPTOR_LEN)
        .map(|i| {
            let a = at + i * DESCRIPTOR_LEN;
            Ok(BufferDescriptor {
                offset: r.u64(a)?,
                token: r.u32(a + 8)?,
                length: r.u32(a + 12)?,
            })
        })
        .collect()
}

fn rdma_total(descriptors: &[BufferDescriptor]) -> Result<u32> {
    if descriptors.is_empty() {
        return Err(Error::msg(
            "an RDMA READ/WRITE needs at least one buffer descriptor",
        ));
    }
    descriptors
        .iter()
        .try_fold(0u32, |sum, d| sum.checked_add(d.length))
        .ok_or_else(|| Error::msg("RDMA descriptors add up past 4 GiB"))
}

/// CreditCharge of an I/O of `bytes` (3.1.5.2: one credit per 64 KiB,
/// at least one; ksmbd checks it with the same formula).
pub fn credit_charge(bytes: u32) -> u16 {
    bytes.div_ceil(CREDIT_UNIT).max(1) as u16
}

/// A WRITE request body; returns it with the I/O size.
pub fn write_request(file: FileId, offset: u64, data: &Data<'_>) -> Result<(Vec<u8>, u32)> {
    let mut b = Vec::new();
    put_u16(&mut b, 49);
    let total = match data {
        #[cfg(test)]
        Data::Inline(bytes) => {
            let n =
                u32::try_from(bytes.len()).map_err(|_| Error::msg("a WRITE of 4 GiB or more"))?;
            put_u16(&mut b, REQUEST_BUFFER_AT as u16);
            put_u32(&mut b, n);
            put_u64(&mut b, offset);
            file.encode_into(&mut b);
            put_u32(&mut b, CHANNEL_NONE);
            put_u32(&mut b, 0); // RemainingBytes
            put_u16(&mut b, 0);
            put_u16(&mut b, 0);
            put_u32(&mut b, 0); // Flags
            b.extend_from_slice(bytes);
            n
        }
        Data::Rdma(descriptors) => {
            let n = rdma_total(descriptors)?;
            put_u16(&mut b, 0); // DataOffset 0 over RDMA
            put_u32(&mut b, 0); // Length 0 over RDMA
            put_u64(&mut b, offset);
            file.encode_into(&mut b);
            put_u32(&mut b, CHANNEL_RDMA_V1_INVALIDATE);
            put_u32(&mut b, n); // RemainingBytes: what the server pulls
            put_u16(&mut b, REQUEST_BUFFER_AT as u16);
            put_u16(
                &mut b,
                len16(descriptors.len() * DESCRIPTOR_LEN, "WRITE channel info")?,
            );
            put_u32(&mut b, 0);
            put_descriptors(&mut b, descriptors);
            n
        }
    };
    Ok((b, total))
}

/// A READ request body of `length` bytes at `offset`; over RDMA the
/// server writes them into `descriptors`.
pub fn read_request(
    file: FileId,
    offset: u64,
    length: u32,
    rdma: Option<&[BufferDescriptor]>,
) -> Result<Vec<u8>> {
    let mut b = Vec::new();
    put_u16(&mut b, 49);
    b.push(0); // Padding: the data offset the client prefers, none
    b.push(0); // Flags
    put_u32(&mut b, length);
    put_u64(&mut b, offset);
    file.encode_into(&mut b);
    put_u32(&mut b, 0); // MinimumCount
    match rdma {
        None => {
            put_u32(&mut b, CHANNEL_NONE);
            put_u32(&mut b, 0);
            put_u16(&mut b, 0);
            put_u16(&mut b, 0);
            b.push(0); // the Buffer holds at least one byte
        }
        Some(descriptors) => {
            let n = rdma_total(descriptors)?;
            if n < length {
                return Err(Error::msg(format!(
                    "READ of {length} bytes into RDMA buffers of {n}"
                )));
            }
            put_u32(&mut b, CHANNEL_RDMA_V1_INVALIDATE);
            put_u32(&mut b, 0); // RemainingBytes: no read-ahead hint
            put_u16(&mut b, REQUEST_BUFFER_AT as u16);
            put_u16(
                &mut b,
                len16(descriptors.len() * DESCRIPTOR_LEN, "READ channel info")?,
            );
            put_descriptors(&mut b, descriptors);
        }
    }
    Ok(b)
}

/// A WRITE response: bytes written.
pub fn decode_write_response(message: &[u8]) -> Result<u32> {
    let r = Reader::new(message, "SMB2 WRITE response");
    if r.u16(HEADER_LEN)? != 17 {
        return Err(r.error("StructureSize is not 17"));
    }
    r.u32(HEADER_LEN + 4)
}

/// A READ response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResponse {
    /// Inline data (empty over RDMA).
    pub data: Vec<u8>,
    /// DataRemaining: over RDMA, the bytes the server placed in our
    /// buffers.
    pub data_remaining: u32,
}

/// Parses a READ response.
pub fn decode_read_response(message: &[u8]) -> Result<ReadResponse> {
    let r = Reader::new(message, "SMB2 READ response");
    if r.u16(HEADER_LEN)? != 17 {
        return Err(r.error("StructureSize is not 17"));
    }
    let off = usize::from(r.u8(HEADER_LEN + 2)?);
    let len = r.u32(HEADER_LEN + 4)? as usize;
    Ok(ReadResponse {
        data: if len == 0 {
            Vec::new()
        } else {
            r.slice(off, len)?.to_vec()
        },
        data_remaining: r.u32(HEADER_LEN + 8)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: FileId = FileId {
        persistent: 0x11,
        volatile: 0x22,
    };

    fn with_header(body: &[u8]) -> Vec<u8> {
        let mut m = vec![0u8; HEADER_LEN];
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn rdma_write_has_zero_length_and_offset_and_descriptors_at_0x70() {
        let descriptors = [
            BufferDescriptor {
                offset: 0x7f00_0000_1000,
                token: 0xAB,
                length: 1 << 19,
            },
            BufferDescriptor {
                offset: 0x7f00_0008_1000,
                token: 0xCD,
                length: 1 << 19,
            },
        ];
        let (body, size) = write_request(FILE, 4096, &Data::Rdma(&descriptors)).unwrap();
        assert_eq!(size, 1 << 20);
        let message = with_header(&body);
        let r = Reader::new(&message, "t");
        assert_eq!(r.u16(64).unwrap(), 49);
        assert_eq!(r.u16(66).unwrap(), 0, "DataOffset");
        assert_eq!(r.u32(68).unwrap(), 0, "Length");
        assert_eq!(r.u64(72).unwrap(), 4096);
        assert_eq!(FileId::decode(&r, 80).unwrap(), FILE);
        assert_eq!(r.u32(96).unwrap(), CHANNEL_RDMA_V1_INVALIDATE);
        assert_eq!(r.u32(100).unwrap(), 1 << 20, "RemainingBytes");
        assert_eq!(r.u16(104).unwrap(), 0x70);
        assert_eq!(r.u16(106).unwrap(), 32);
        assert_eq!(
            decode_descriptors(&r, 0x70, 32).unwrap(),
            descriptors.to_vec()
        );
        assert_eq!(credit_charge(size), 16);
        assert!(write_request(FILE, 0, &Data::Rdma(&[])).is_err());
    }

    #[test]
    fn inline_write_and_rdma_read_layouts() {
        let (body, size) = write_request(FILE, 8, &Data::Inline(b"abc")).unwrap();
        assert_eq!(size, 3);
        let message = with_header(&body);
        let r = Reader::new(&message, "t");
        assert_eq!((r.u16(66).unwrap(), r.u32(68).unwrap()), (0x70, 3));
        assert_eq!(r.slice(0x70, 3).unwrap(), b"abc");
        let d = [BufferDescriptor {
            offset: 0x1000,
            token: 7,
            length: 65_536,
        }];
        let message = with_header(&read_request(FILE, 0, 65_536, Some(&d)).unwrap());
        let r = Reader::new(&message, "t");
        assert_eq!(r.u32(68).unwrap(), 65_536, "Length");
        assert_eq!(r.u32(100).unwrap(), CHANNEL_RDMA_V1_INVALIDATE);
        assert_eq!((r.u16(108).unwrap(), r.u16(110).unwrap()), (0x70, 16));
        assert_eq!(decode_descriptors(&r, 0x70, 16).unwrap(), d.to_vec());
        assert_eq!(message.len(), 0x70 + 16);
        assert!(
            read_request(FILE, 0, 65_537, Some(&d)).is_err(),
            "buffer too small"
        );
        let inline = with_header(&read_request(FILE, 0, 10, None).unwrap());
        assert_eq!(inline.len(), 0x71, "one Buffer byte");
        assert_eq!(credit_charge(0), 1);
        assert_eq!(credit_charge(65_537), 2);
    }
}

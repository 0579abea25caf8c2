//! Extended transport headers: DETH, RETH, AtomicETH, AETH, AtomicAckETH,
//! ImmDt, IETH (all big-endian), and the set of them one packet carries.

use zerocopy::network_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::bth::QPN_MASK;
use super::error::{BuildError, ParseError};
use super::opcode::HeaderSet;
use super::syndrome::Syndrome;

/// The Q_Key of QP1 (the general services interface, where CM MADs go).
pub const GSI_QKEY: u32 = 0x8001_0000;

/// Datagram ETH: Q_Key, then a reserved byte and the 24-bit source QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Deth {
    /// Q_Key the receiving UD QP checks.
    pub qkey: u32,
    /// Sending QP (24 bits).
    pub src_qp: u32,
}

/// RDMA ETH: the remote buffer of a WRITE or READ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length of the whole message (not of this packet).
    pub dma_len: u32,
}

/// Atomic ETH: target and operands of a compare-swap or fetch-add.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtomicEth {
    /// Remote virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap value (compare-swap) or addend (fetch-add).
    pub swap_add: u64,
    /// Compare value (compare-swap only).
    pub compare: u64,
}

/// ACK ETH: syndrome and the responder's 24-bit message sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Aeth {
    /// ACK, RNR NAK or NAK.
    pub syndrome: Syndrome,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct DethWire {
    qkey: U32,
    src_qp: U32,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct RethWire {
    va: U64,
    rkey: U32,
    dma_len: U32,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct AtomicEthWire {
    va: U64,
    rkey: U32,
    swap_add: U64,
    compare: U64,
}

const _: () = assert!(size_of::<DethWire>() == 8);
const _: () = assert!(size_of::<RethWire>() == 16);
const _: () = assert!(size_of::<AtomicEthWire>() == 28);

/// The extension headers of one packet. A header is present when its field
/// is `Some`; [`ExtHeaders::set`] must equal the opcode's table entry.
///
/// ImmDt is kept as the big-endian reading of its four wire bytes; it is
/// opaque to the transport, and `imm.to_be_bytes()` gives the bytes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ExtHeaders {
    /// DETH (UD only).
    pub deth: Option<Deth>,
    /// RETH.
    pub reth: Option<Reth>,
    /// AtomicETH.
    pub atomic_eth: Option<AtomicEth>,
    /// AETH.
    pub aeth: Option<Aeth>,
    /// AtomicAckETH: the original remote value.
    pub atomic_ack: Option<u64>,
    /// Immediate data.
    pub imm: Option<u32>,
    /// IETH: the R_Key to invalidate.
    pub ieth: Option<u32>,
}

impl ExtHeaders {
    /// No extension header.
    pub const NONE: Self = Self {
        deth: None,
        reth: None,
        atomic_eth: None,
        aeth: None,
        atomic_ack: None,
        imm: None,
        ieth: None,
    };

    /// Which headers are present.
    pub const fn set(&self) -> HeaderSet {
        let mut s = HeaderSet::NONE;
        if self.deth.is_some() {
            s = s.with(HeaderSet::DETH);
        }
        if self.reth.is_some() {
            s = s.with(HeaderSet::RETH);
        }
        if self.atomic_eth.is_some() {
            s = s.with(HeaderSet::ATOMIC_ETH);
        }
        if self.aeth.is_some() {
            s = s.with(HeaderSet::AETH);
        }
        if self.atomic_ack.is_some() {
            s = s.with(HeaderSet::ATOMIC_ACK_ETH);
        }
        if self.imm.is_some() {
            s = s.with(HeaderSet::IMMDT);
        }
        if self.ieth.is_some() {
            s = s.with(HeaderSet::IETH);
        }
        s
    }

    /// Checks values that must fit fewer bits than their Rust type.
    pub(crate) fn check_ranges(&self) -> Result<(), BuildError> {
        let deth_ok = self.deth.is_none_or(|d| d.src_qp <= QPN_MASK);
        let aeth_ok = self.aeth.is_none_or(|a| a.msn <= QPN_MASK);
        if deth_ok && aeth_ok {
            Ok(())
        } else {
            Err(BuildError::FieldRange)
        }
    }

    /// Writes the present headers in wire order to the start of `out`,
    /// returning the bytes written (`self.set().len()`).
    pub(crate) fn write(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        let mut w = Writer { out, at: 0 };
        if let Some(d) = self.deth {
            w.put(
                DethWire {
                    qkey: U32::new(d.qkey),
                    src_qp: U32::new(d.src_qp & QPN_MASK),
                }
                .as_bytes(),
            )?;
        }
        if let Some(r) = self.reth {
            w.put(
                RethWire {
                    va: U64::new(r.va),
                    rkey: U32::new(r.rkey),
                    dma_len: U32::new(r.dma_len),
                }
                .as_bytes(),
            )?;
        }
        if let Some(a) = self.atomic_eth {
            let wire = AtomicEthWire {
                va: U64::new(a.va),
                rkey: U32::new(a.rkey),
                swap_add: U64::new(a.swap_add),
                compare: U64::new(a.compare),
            };
            w.put(wire.as_bytes())?;
        }
        if let Some(a) = self.aeth {
            let word = u32::from(a.syndrome.encode()) << 24 | (a.msn & QPN_MASK);
            w.put(&word.to_be_bytes())?;
        }
        if let Some(v) = self.atomic_ack {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.imm {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.ieth {
            w.put(&v.to_be_bytes())?;
        }
        Ok(w.at)
    }

    /// Reads the headers `set` names from the start of `bytes`, returning
    /// them and the bytes after them.
    pub(crate) fn read(set: HeaderSet, bytes: &[u8]) -> Result<(Self, &[u8]), ParseError> {
        let mut h = Self::NONE;
        let mut rest = bytes;
        if set.contains(HeaderSet::DETH) {
            let (d, r) = DethWire::read_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
            h.deth = Some(Deth {
                qkey: d.qkey.get(),
                src_qp: d.src_qp.get() & QPN_MASK,
            });
            rest = r;
        }
        if set.contains(HeaderSet::RETH) {
            let (w, r) = RethWire::read_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
            h.reth = Some(Reth {
                va: w.va.get(),
                rkey: w.rkey.get(),
                dma_len: w.dma_len.get(),
            });
            rest = r;
        }
        if set.contains(HeaderSet::ATOMIC_ETH) {
            let (w, r) =
                AtomicEthWire::read_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
            h.atomic_eth = Some(AtomicEth {
                va: w.va.get(),
                rkey: w.rkey.get(),
                swap_add: w.swap_add.get(),
                compare: w.compare.get(),
            });
            rest = r;
        }
        if set.contains(HeaderSet::AETH) {
            let (w, r) = U32::read_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
            let word = w.get();
            h.aeth = Some(Aeth {
                syndrome: Syndrome::decode((word >> 24) as u8)?,
                msn: word & QPN_MASK,
            });
            rest = r;
        }
        if set.contains(HeaderSet::ATOMIC_ACK_ETH) {
            let (w, r) = U64::read_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
            h.atomic_ack = Some(w.get());
            rest = r;
        }
        if set.contains(HeaderSet::IMMDT) {
            let (w, r) = U32::read_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
            h.imm = Some(w.get());
            rest = r;
        }
        if set.contains(HeaderSet::IETH) {
            let (w, r) = U32::read_from_prefix(rest).map_err(|_| ParseError::Truncated)?;
            h.ieth = Some(w.get());
            rest = r;
        }
        Ok((h, rest))
    }
}

struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), BuildError> {
        let end = self.at + bytes.len();
        let dst = self
            .out
            .get_mut(self.at..end)
            .ok_or(BuildError::BufferTooSmall)?;
        dst.copy_from_slice(bytes);
        self.at = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::syndrome::NakCode;

    fn all() -> ExtHeaders {
        ExtHeaders {
            deth: Some(Deth {
                qkey: GSI_QKEY,
                src_qp: 1,
            }),
            reth: Some(Reth {
                va: 0x0102_0304_0506_0708,
                rkey: 0x1122_3344,
                dma_len: 0x55,
            }),
            atomic_eth: Some(AtomicEth {
                va: 8,
                rkey: 9,
                swap_add: 10,
                compare: 11,
            }),
            aeth: Some(Aeth {
                syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
                msn: 0xAB_CDEF,
            }),
            atomic_ack: Some(0xDEAD_BEEF_0000_0001),
            imm: Some(0xCAFE_F00D),
            ieth: Some(0x7777),
        }
    }

    #[test]
    fn all_headers_round_trip_in_order() {
        let h = all();
        let mut buf = [0u8; 80];
        let n = h.write(&mut buf).unwrap();
        assert_eq!(n, h.set().len());
        assert_eq!(n, 8 + 16 + 28 + 4 + 8 + 4 + 4);
        assert_eq!(&buf[..8], &[0x80, 0x01, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&buf[8..12], &[1, 2, 3, 4]);
        assert_eq!(&buf[52..56], &[0x62, 0xAB, 0xCD, 0xEF]);
        let (back, rest) = ExtHeaders::read(h.set(), &buf[..n + 3]).unwrap();
        assert_eq!(back, h);
        assert_eq!(rest.len(), 3);
    }

    #[test]
    fn short_input_is_truncated_and_small_output_errs() {
        let h = all();
        let mut buf = [0u8; 80];
        let n = h.write(&mut buf).unwrap();
        for len in 0..n {
            assert_eq!(
                ExtHeaders::read(h.set(), &buf[..len]),
                Err(ParseError::Truncated)
            );
            assert_eq!(
                h.write(&mut [0u8; 80][..len]),
                Err(BuildError::BufferTooSmall)
            );
        }
    }

    #[test]
    fn reserved_syndrome_rejected() {
        let buf = [0x40, 0, 0, 1];
        assert_eq!(
            ExtHeaders::read(HeaderSet::AETH, &buf),
            Err(ParseError::BadSyndrome)
        );
    }

    #[test]
    fn ranges() {
        let mut h = ExtHeaders::NONE;
        h.aeth = Some(Aeth {
            syndrome: Syndrome::ACK,
            msn: 0x100_0000,
        });
        assert_eq!(h.check_ranges(), Err(BuildError::FieldRange));
        h.aeth = None;
        h.deth = Some(Deth {
            qkey: 0,
            src_qp: 0x100_0000,
        });
        assert_eq!(h.check_ranges(), Err(BuildError::FieldRange));
        h.deth = Some(Deth {
            qkey: 0,
            src_qp: 0xFF_FFFF,
        });
        assert_eq!(h.check_ranges(), Ok(()));
    }
}

//! The Base Transport Header (12 bytes).
//!
//! ```text
//! byte 0      OpCode
//! byte 1      SE(7) M(6) PadCnt(5..4) TVer(3..0)
//! bytes 2-3   P_Key
//! byte 4      FECN(7) BECN(6) Resv6a(5..0)     -- variant, masked in the ICRC
//! bytes 5-7   DestQP (24 bits)
//! byte 8      AckReq(7) Resv7(6..0)
//! bytes 9-11  PSN (24 bits)
//! ```

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::error::ParseError;
pub use super::opcode::BTH_LEN;
use super::opcode::Opcode;

/// The default full-member partition key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;
/// Mask of a 24-bit QP number.
pub const QPN_MASK: u32 = 0x00FF_FFFF;

const SE: u8 = 0x80;
const MIG_REQ: u8 = 0x40;
const PAD_SHIFT: u8 = 4;
const TVER_MASK: u8 = 0x0F;
const FECN: u32 = 0x8000_0000;
const BECN: u32 = 0x4000_0000;
const ACK_REQ: u32 = 0x8000_0000;

/// The BTH as laid out on the wire.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct BthHeader {
    opcode: u8,
    flags: u8,
    pkey: U16,
    /// FECN, BECN, Resv6a in the top byte; DestQP below.
    fb_dest_qp: U32,
    /// AckReq, Resv7 in the top byte; PSN below.
    a_psn: U32,
}

const _: () = assert!(size_of::<BthHeader>() == BTH_LEN);

/// The BTH fields, decoded.
///
/// TVer is always 0 (the parser rejects anything else) and the reserved
/// bits are sent as 0 and ignored on receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "five independent one-bit protocol flags"
)]
pub struct Bth {
    /// Operation.
    pub opcode: Opcode,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request (path migration; sent as 0 by this RNIC).
    pub mig_req: bool,
    /// Pad bytes before the ICRC (0..=3). The builder computes it from the
    /// payload length and ignores this field.
    pub pad_count: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward explicit congestion notification.
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// A BTH for `opcode` to `dest_qp` at `psn`, default P_Key, no flags.
    pub const fn new(opcode: Opcode, dest_qp: u32, psn: u32) -> Self {
        Self {
            opcode,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp,
            ack_req: false,
            psn,
        }
    }

    /// The wire form. QPN and PSN are truncated to 24 bits and the pad count
    /// to 2; callers check ranges first.
    pub fn to_header(&self) -> BthHeader {
        let mut flags = (self.pad_count & 3) << PAD_SHIFT;
        if self.solicited {
            flags |= SE;
        }
        if self.mig_req {
            flags |= MIG_REQ;
        }
        let mut fb = self.dest_qp & QPN_MASK;
        if self.fecn {
            fb |= FECN;
        }
        if self.becn {
            fb |= BECN;
        }
        let mut a = self.psn & QPN_MASK;
        if self.ack_req {
            a |= ACK_REQ;
        }
        BthHeader {
            opcode: self.opcode.0,
            flags,
            pkey: U16::new(self.pkey),
            fb_dest_qp: U32::new(fb),
            a_psn: U32::new(a),
        }
    }
}

impl BthHeader {
    /// The raw opcode byte.
    pub const fn opcode(&self) -> Opcode {
        Opcode(self.opcode)
    }

    /// The transport header version (must be 0).
    pub const fn tver(&self) -> u8 {
        self.flags & TVER_MASK
    }

    /// Decodes the fields, rejecting a non-zero TVer.
    pub fn decode(&self) -> Result<Bth, ParseError> {
        if self.tver() != 0 {
            return Err(ParseError::BadVersion);
        }
        let fb = self.fb_dest_qp.get();
        let a = self.a_psn.get();
        Ok(Bth {
            opcode: Opcode(self.opcode),
            solicited: self.flags & SE != 0,
            mig_req: self.flags & MIG_REQ != 0,
            pad_count: (self.flags >> PAD_SHIFT) & 3,
            pkey: self.pkey.get(),
            fecn: fb & FECN != 0,
            becn: fb & BECN != 0,
            dest_qp: fb & QPN_MASK,
            ack_req: a & ACK_REQ != 0,
            psn: a & QPN_MASK,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_known_bth() {
        // From the digest's RC SEND Only vector: 04 00 ffff 00000011 80000000.
        let mut b = Bth::new(Opcode::SEND_ONLY, 0x11, 0);
        b.ack_req = true;
        assert_eq!(
            b.to_header().as_bytes(),
            &[0x04, 0x00, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0, 0, 0]
        );
    }

    #[test]
    fn every_field_round_trips() {
        let b = Bth {
            opcode: Opcode::RDMA_WRITE_LAST,
            solicited: true,
            mig_req: true,
            pad_count: 3,
            pkey: 0x8001,
            fecn: true,
            becn: true,
            dest_qp: 0xAB_CDEF,
            ack_req: true,
            psn: 0xFF_FFFF,
        };
        let h = b.to_header();
        assert_eq!(
            h.as_bytes(),
            &[
                0x08, 0xF0, 0x80, 0x01, 0xC0, 0xAB, 0xCD, 0xEF, 0x80, 0xFF, 0xFF, 0xFF
            ]
        );
        assert_eq!(h.decode().unwrap(), b);
    }

    #[test]
    fn nonzero_tver_rejected() {
        let mut bytes = Bth::new(Opcode::SEND_ONLY, 1, 1).to_header();
        bytes.flags |= 1;
        assert_eq!(bytes.decode(), Err(ParseError::BadVersion));
    }
}

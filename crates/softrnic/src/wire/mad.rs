//! Management datagrams (MADs) on QP1.
//!
//! A MAD is 256 bytes: a 24-byte common header and 232 bytes of class data.
//! On RoCEv2 it travels as the payload of a UD SEND Only packet to QP1 whose
//! DETH carries the GSI Q_Key 0x80010000 and the sending QP (1).

use zerocopy::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::bth::Bth;
use super::ext::{Deth, ExtHeaders, GSI_QKEY};
use super::ip_udp::IpUdpFields;
use super::opcode::Opcode;
use super::packet::Headers;

/// Bytes in a MAD.
pub const MAD_LEN: usize = 256;
/// Bytes in the common MAD header.
pub const MAD_HEADER_LEN: usize = 24;
/// Bytes of class data after the header.
pub const MAD_DATA_LEN: usize = MAD_LEN - MAD_HEADER_LEN;
/// The only MAD base version.
pub const MAD_BASE_VERSION: u8 = 1;
/// Management class of communication management.
pub const MGMT_CLASS_CM: u8 = 0x07;
/// Class version of CM MADs.
pub const CM_CLASS_VERSION: u8 = 2;
/// Method: Send (CM messages are all unsolicited sends).
pub const METHOD_SEND: u8 = 0x03;
/// The QP number of the general services interface.
pub const GSI_QPN: u32 = 1;

/// The common MAD header (24 bytes).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct MadHeader {
    /// Base version, 1.
    pub base_version: u8,
    /// Management class (0x07 for CM).
    pub mgmt_class: u8,
    /// Class version (2 for CM).
    pub class_version: u8,
    /// Response bit (7) and method (6..0).
    pub method: u8,
    /// Status (0 in requests).
    pub status: U16,
    /// Class-specific field (0 for CM).
    pub class_specific: U16,
    /// Transaction ID, chosen by the sender, echoed by replies.
    pub transaction_id: U64,
    /// Attribute ID: which CM message follows.
    pub attribute_id: U16,
    /// Reserved (0).
    pub reserved: U16,
    /// Attribute modifier (0 for CM).
    pub attribute_modifier: U32,
}

/// A whole MAD.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Mad {
    /// Common header.
    pub header: MadHeader,
    /// Class data.
    pub data: [u8; MAD_DATA_LEN],
}

const _: () = assert!(size_of::<MadHeader>() == MAD_HEADER_LEN);
const _: () = assert!(size_of::<Mad>() == MAD_LEN);

impl MadHeader {
    /// A CM Send header for `attribute_id` under `transaction_id`.
    pub fn cm_send(attribute_id: u16, transaction_id: u64) -> Self {
        let mut h = Self::new_zeroed();
        h.base_version = MAD_BASE_VERSION;
        h.mgmt_class = MGMT_CLASS_CM;
        h.class_version = CM_CLASS_VERSION;
        h.method = METHOD_SEND;
        h.transaction_id.set(transaction_id);
        h.attribute_id.set(attribute_id);
        h
    }
}

/// Packet headers for a MAD from QP1 to QP1: UD SEND Only with a DETH
/// carrying the GSI Q_Key and source QP 1. The payload is the 256-byte MAD.
pub fn gsi_headers(ip: impl Into<IpUdpFields>, psn: u32) -> Headers {
    let ext = ExtHeaders {
        deth: Some(Deth {
            qkey: GSI_QKEY,
            src_qp: GSI_QPN,
        }),
        ..ExtHeaders::NONE
    };
    Headers {
        ip: ip.into(),
        bth: Bth::new(Opcode::UD_SEND_ONLY, GSI_QPN, psn),
        ext,
    }
}

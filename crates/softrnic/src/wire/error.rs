//! Typed failures of the wire layer: one variant per reason a packet is
//! dropped or cannot be built, so the transport can count each kind.

use core::fmt;

/// Why a received datagram (or UDP payload) was rejected.
///
/// Every malformed input maps to exactly one of these; the parser never
/// panics. The checks run in wire order, so the first violated rule wins:
/// IPv4 header, UDP header, lengths, then the ICRC, then the transport
/// headers it protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// The buffer ends before a header, or before the length a header states.
    Truncated,
    /// IPv4 version is not 4, or the BTH transport version (TVer) is not 0.
    BadVersion,
    /// IPv4 IHL is not 5: options are neither sent nor accepted by RoCEv2 here.
    BadIhl,
    /// The IPv4 header checksum does not verify.
    BadIpChecksum,
    /// The IPv4 datagram is a fragment (MF set or a non-zero offset).
    Fragmented,
    /// The IPv4 protocol is not UDP (17).
    NotUdp,
    /// The UDP destination port is not 4791.
    NotUdp4791,
    /// IPv4 total length and UDP length disagree with each other, or an
    /// opcode that carries no payload has bytes left over after its headers.
    LengthMismatch,
    /// The invariant CRC does not match the packet.
    BadIcrc,
    /// The opcode is not one this RNIC speaks (RC, plus UD SEND for QP1).
    BadOpcode,
    /// PadCnt is impossible: larger than the bytes after the headers, non-zero
    /// on an opcode without payload, or payload + pad is not a multiple of 4.
    BadPad,
    /// The AETH syndrome is a reserved encoding.
    BadSyndrome,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Self::Truncated => "packet truncated",
            Self::BadVersion => "bad IP or transport header version",
            Self::BadIhl => "IPv4 header length is not 20 bytes",
            Self::BadIpChecksum => "bad IPv4 header checksum",
            Self::Fragmented => "IPv4 fragment",
            Self::NotUdp => "not a UDP datagram",
            Self::NotUdp4791 => "UDP destination port is not 4791",
            Self::LengthMismatch => "length fields disagree",
            Self::BadIcrc => "bad ICRC",
            Self::BadOpcode => "unsupported opcode",
            Self::BadPad => "bad pad count",
            Self::BadSyndrome => "reserved AETH syndrome",
        };
        f.write_str(text)
    }
}

impl core::error::Error for ParseError {}

/// Why a packet could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuildError {
    /// The output buffer is smaller than the packet.
    BufferTooSmall,
    /// The opcode is not one this RNIC speaks.
    BadOpcode,
    /// The extension headers supplied are not exactly the ones the opcode
    /// requires.
    HeaderMismatch,
    /// Payload was given for an opcode that carries none.
    PayloadNotAllowed,
    /// More payload was pushed than announced, or less before `finish`.
    PayloadLength,
    /// The datagram would exceed the 65535-byte IPv4 limit.
    TooLong,
    /// A field is out of range: QPN or PSN wider than 24 bits, MSN wider
    /// than 24 bits, source QP wider than 24 bits.
    FieldRange,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Self::BufferTooSmall => "output buffer too small",
            Self::BadOpcode => "unsupported opcode",
            Self::HeaderMismatch => "extension headers do not match the opcode",
            Self::PayloadNotAllowed => "opcode carries no payload",
            Self::PayloadLength => "payload length differs from the announced length",
            Self::TooLong => "datagram longer than 65535 bytes",
            Self::FieldRange => "field value out of range",
        };
        f.write_str(text)
    }
}

impl core::error::Error for BuildError {}

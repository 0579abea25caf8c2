//! Whole RoCEv2 packets: build into a caller buffer, parse into borrowed
//! views.
//!
//! Two framings are supported, with the same header model ([`Headers`]):
//!
//! * **IP datagram** — IPv4 or IPv6 header, UDP header, BTH, extension
//!   headers, payload, pad, ICRC: what a raw-IP path or a packet capture
//!   sees. [`PacketBuilder::datagram`], [`build`], [`parse`].
//! * **UDP payload** — BTH onwards, what a UDP socket sends and receives.
//!   The ICRC still covers the IP and UDP headers, so the caller supplies
//!   their facts as [`IpUdpFields`] (addresses, ports, and for IPv4 the
//!   identification and DF flag as sent); the lengths are derived from the
//!   payload length, the variant fields are masked. Only a receiver that
//!   sees every covered field can check such a payload: an IPv6 socket
//!   does (addresses, ports, lengths); for IPv4 the identification is
//!   covered and no UDP socket sees it.
//!   [`PacketBuilder::udp_payload`], [`build_udp_payload`],
//!   [`parse_udp_payload`].
//!
//! The family of a packet is its `Headers::ip`'s ([`IpUdpFields::V4`] or
//! [`IpUdpFields::V6`]); the parser takes it from the version nibble.
//!
//! Nothing here allocates. The builder writes the headers first, then takes
//! the payload either by copy ([`PacketBuilder::push_payload`]) or as a slot
//! the caller fills while feeding the ICRC ([`PacketBuilder::payload_slot`]),
//! so the CRC runs over each chunk while it is still in cache.

use super::bth::{BTH_LEN, Bth, BthHeader, QPN_MASK};
use super::error::{BuildError, ParseError};
use super::ext::ExtHeaders;
use super::icrc::{ICRC_LEN, IcrcHasher, icrc_from_wire, icrc_to_wire};
use super::ip_udp::{CheckedDatagram, IpUdpFields, parse_ip_udp};
use super::opcode::OpcodeInfo;
use super::pmtu::pad_len;
use zerocopy::{FromBytes, IntoBytes};

/// Everything in front of the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Headers {
    /// IP/UDP facts (written for a datagram, ICRC input for both framings).
    pub ip: IpUdpFields,
    /// Base transport header. `pad_count` is ignored: the builder derives it.
    pub bth: Bth,
    /// Extension headers; must be exactly the opcode's set.
    pub ext: ExtHeaders,
}

/// A parsed packet, borrowing its payload from the input buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// IP/UDP facts: as received for a datagram, as supplied for a UDP
    /// payload.
    pub ip: IpUdpFields,
    /// Base transport header.
    pub bth: Bth,
    /// The opcode's table entry.
    pub info: OpcodeInfo,
    /// Extension headers (exactly those the opcode carries).
    pub ext: ExtHeaders,
    /// Payload, without pad.
    pub payload: &'a [u8],
    /// The ICRC the packet carried (it matched).
    pub icrc: u32,
}

/// Bytes from the BTH through the ICRC for `headers` and a payload of
/// `payload_len` bytes, after checking that they describe a valid packet.
pub fn udp_payload_len(headers: &Headers, payload_len: usize) -> Result<usize, BuildError> {
    let info = validate(headers, payload_len)?;
    Ok(info.header_len() + payload_len + pad_len(payload_len) + ICRC_LEN)
}

/// Bytes of the whole IP datagram for `headers` and `payload_len`. An
/// IPv4 datagram is 65535 bytes at most, an IPv6 one's payload (the UDP
/// datagram) too.
pub fn datagram_len(headers: &Headers, payload_len: usize) -> Result<usize, BuildError> {
    let udp = udp_payload_len(headers, payload_len)?;
    let n = headers.ip.header_len() + udp;
    let limited = match headers.ip {
        IpUdpFields::V4(_) => n,
        IpUdpFields::V6(_) => n - headers.ip.ip_header_len(),
    };
    if limited > usize::from(u16::MAX) {
        Err(BuildError::TooLong)
    } else {
        Ok(n)
    }
}

fn validate(headers: &Headers, payload_len: usize) -> Result<OpcodeInfo, BuildError> {
    let info = headers.bth.opcode.info().ok_or(BuildError::BadOpcode)?;
    if headers.ext.set() != info.headers {
        return Err(BuildError::HeaderMismatch);
    }
    if payload_len > 0 && !info.payload {
        return Err(BuildError::PayloadNotAllowed);
    }
    if headers.bth.dest_qp > QPN_MASK || headers.bth.psn > QPN_MASK {
        return Err(BuildError::FieldRange);
    }
    headers.ext.check_ranges()?;
    Ok(info)
}

/// Writes one packet into a caller buffer: headers at construction, then
/// the payload, then pad and ICRC at [`PacketBuilder::finish`].
#[derive(Debug)]
pub struct PacketBuilder<'o> {
    out: &'o mut [u8],
    hasher: IcrcHasher,
    payload_start: usize,
    payload_len: usize,
    payload_done: usize,
}

/// Feeds payload bytes to a builder's ICRC; handed out with
/// [`PacketBuilder::payload_slot`].
#[derive(Debug)]
pub struct PayloadHasher<'b> {
    hasher: &'b mut IcrcHasher,
    fed: &'b mut usize,
}

impl PayloadHasher<'_> {
    /// Feeds the next payload bytes, in order.
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        *self.fed += bytes.len();
    }
}

impl<'o> PacketBuilder<'o> {
    /// Starts a full IP datagram of `headers.ip`'s family (IPv4: TTL 64,
    /// the caller's identification and DF flag, protocol 17 and a valid
    /// checksum; IPv6: hop limit 64, next header 17, the caller's traffic
    /// class and flow label; UDP header with checksum 0) in `out`, for a
    /// payload of `payload_len` bytes.
    pub fn datagram(
        headers: &Headers,
        payload_len: usize,
        out: &'o mut [u8],
    ) -> Result<Self, BuildError> {
        let udp_len = udp_payload_len(headers, payload_len)?;
        let total = datagram_len(headers, payload_len)?;
        let out_head = out.get_mut(..total).ok_or(BuildError::BufferTooSmall)?;
        let hasher = headers.ip.write_headers(udp_len, out_head)?;
        Self::transport(headers, payload_len, out, headers.ip.header_len(), hasher)
    }

    /// Starts a UDP payload (BTH onwards) in `out`; `headers.ip` supplies the
    /// IP/UDP facts the ICRC covers.
    pub fn udp_payload(
        headers: &Headers,
        payload_len: usize,
        out: &'o mut [u8],
    ) -> Result<Self, BuildError> {
        let udp_len = udp_payload_len(headers, payload_len)?;
        let hasher = headers.ip.hasher(udp_len)?;
        if out.len() < udp_len {
            return Err(BuildError::BufferTooSmall);
        }
        Self::transport(headers, payload_len, out, 0, hasher)
    }

    /// Writes BTH and extension headers at `at`; `out` is known to be large
    /// enough for the whole packet.
    fn transport(
        headers: &Headers,
        payload_len: usize,
        out: &'o mut [u8],
        at: usize,
        mut hasher: IcrcHasher,
    ) -> Result<Self, BuildError> {
        let mut bth = headers.bth;
        bth.pad_count = pad_len(payload_len) as u8;
        let bth_wire = bth.to_header();
        let bth_bytes: &[u8; BTH_LEN] = bth_wire
            .as_bytes()
            .try_into()
            .map_err(|_| BuildError::BufferTooSmall)?;
        let bth_dst = out
            .get_mut(at..at + BTH_LEN)
            .ok_or(BuildError::BufferTooSmall)?;
        bth_dst.copy_from_slice(bth_bytes);
        hasher.update_bth(bth_bytes);
        let ext_at = at + BTH_LEN;
        let ext_dst = out.get_mut(ext_at..).ok_or(BuildError::BufferTooSmall)?;
        let ext_len = headers.ext.write(ext_dst)?;
        hasher.update(ext_dst.get(..ext_len).ok_or(BuildError::BufferTooSmall)?);
        Ok(Self {
            out,
            hasher,
            payload_start: ext_at + ext_len,
            payload_len,
            payload_done: 0,
        })
    }

    /// Payload bytes still expected.
    pub fn payload_remaining(&self) -> usize {
        self.payload_len - self.payload_done
    }

    /// Copies the next payload chunk into place and feeds it to the ICRC.
    pub fn push_payload(&mut self, chunk: &[u8]) -> Result<(), BuildError> {
        if chunk.len() > self.payload_remaining() {
            return Err(BuildError::PayloadLength);
        }
        let at = self.payload_start + self.payload_done;
        let dst = self
            .out
            .get_mut(at..at + chunk.len())
            .ok_or(BuildError::BufferTooSmall)?;
        dst.copy_from_slice(chunk);
        self.hasher.update(chunk);
        self.payload_done += chunk.len();
        Ok(())
    }

    /// The unwritten rest of the payload area, and a hasher to feed each
    /// chunk written into it, in order, right after writing it. `finish`
    /// counts the fed bytes as written; feeding bytes other than those in the
    /// slot yields a wrong ICRC, which the peer will drop.
    pub fn payload_slot(&mut self) -> (&mut [u8], PayloadHasher<'_>) {
        let start = self.payload_start + self.payload_done;
        let end = self.payload_start + self.payload_len;
        let slot = self.out.get_mut(start..end).unwrap_or_default();
        (
            slot,
            PayloadHasher {
                hasher: &mut self.hasher,
                fed: &mut self.payload_done,
            },
        )
    }

    /// Writes pad and ICRC; returns the packet's length from the start of
    /// `out`.
    pub fn finish(self) -> Result<usize, BuildError> {
        if self.payload_done != self.payload_len {
            return Err(BuildError::PayloadLength);
        }
        let Self {
            out,
            mut hasher,
            payload_start,
            payload_len,
            ..
        } = self;
        let pad = pad_len(payload_len);
        let pad_at = payload_start + payload_len;
        out.get_mut(pad_at..pad_at + pad)
            .ok_or(BuildError::BufferTooSmall)?
            .fill(0);
        hasher.update_zeros(pad);
        let icrc_at = pad_at + pad;
        let end = icrc_at + ICRC_LEN;
        out.get_mut(icrc_at..end)
            .ok_or(BuildError::BufferTooSmall)?
            .copy_from_slice(&icrc_to_wire(hasher.finalize()));
        Ok(end)
    }
}

/// Builds a whole IP datagram (of `headers.ip`'s family) whose payload is
/// the concatenation of `payload`; returns its length.
pub fn build(headers: &Headers, payload: &[&[u8]], out: &mut [u8]) -> Result<usize, BuildError> {
    let len = payload.iter().map(|c| c.len()).sum();
    let mut b = PacketBuilder::datagram(headers, len, out)?;
    for chunk in payload {
        b.push_payload(chunk)?;
    }
    b.finish()
}

/// Builds the UDP payload (BTH onwards) of a packet; returns its length.
pub fn build_udp_payload(
    headers: &Headers,
    payload: &[&[u8]],
    out: &mut [u8],
) -> Result<usize, BuildError> {
    let len = payload.iter().map(|c| c.len()).sum();
    let mut b = PacketBuilder::udp_payload(headers, len, out)?;
    for chunk in payload {
        b.push_payload(chunk)?;
    }
    b.finish()
}

/// Parses and verifies an IPv4 or IPv6 RoCEv2 datagram (starting at the
/// IP header, whose version nibble says which; trailing link-layer padding
/// beyond the IP length is ignored).
///
/// Checks, in order: IPv4 version, IHL, total length, header checksum,
/// fragmentation, protocol (IPv6: version, payload length, next header:
/// UDP right after the IPv6 header); UDP destination port 4791, UDP
/// length; then the ICRC, BTH version, opcode, extension headers, pad. The
/// UDP checksum is not checked, nor is the content of the pad bytes (the
/// ICRC covers them). Per-QP rules (PMTU-sized First/Middle payloads,
/// opcode sequence, PSN) are the transport's.
pub fn parse(datagram: &[u8]) -> Result<Packet<'_>, ParseError> {
    let view = parse_ip_udp(datagram)?;
    parse_transport(view.fields, view.hasher, view.udp_payload)
}

/// [`parse`] of a datagram whose IP and UDP headers were checked already
/// ([`CheckedDatagram::parse`]): goes on from the BTH, the ICRC having
/// consumed the headers.
pub fn parse_checked<'a>(datagram: &CheckedDatagram<'a>) -> Result<Packet<'a>, ParseError> {
    let view = datagram.view();
    parse_transport(view.fields, view.hasher.clone(), view.udp_payload)
}

/// Parses and verifies a UDP payload (BTH through ICRC) received from
/// `ip`'s source address and port at its destination, with (IPv4)
/// `ip.ident` and `ip.dont_fragment` as the sender used them in its ICRC.
/// `ip` is an [`IpUdpFields`] or either family's own fields. The
/// destination port is not checked here (the socket chose it).
pub fn parse_udp_payload<'a, F>(ip: &F, udp_payload: &'a [u8]) -> Result<Packet<'a>, ParseError>
where
    F: Into<IpUdpFields> + Copy,
{
    let ip: IpUdpFields = (*ip).into();
    let hasher = ip
        .hasher(udp_payload.len())
        .map_err(|_| ParseError::LengthMismatch)?;
    parse_transport(ip, hasher, udp_payload)
}

fn parse_transport(
    ip: IpUdpFields,
    mut hasher: IcrcHasher,
    udp_payload: &[u8],
) -> Result<Packet<'_>, ParseError> {
    let (covered, icrc_bytes) = udp_payload
        .split_last_chunk::<ICRC_LEN>()
        .ok_or(ParseError::Truncated)?;
    let (bth_bytes, after_bth) = covered
        .split_first_chunk::<BTH_LEN>()
        .ok_or(ParseError::Truncated)?;
    hasher.update_bth(bth_bytes);
    hasher.update(after_bth);
    let icrc = icrc_from_wire(*icrc_bytes);
    if hasher.finalize() != icrc {
        return Err(ParseError::BadIcrc);
    }
    let bth = BthHeader::read_from_bytes(bth_bytes)
        .map_err(|_| ParseError::Truncated)?
        .decode()?;
    let info = bth.opcode.info().ok_or(ParseError::BadOpcode)?;
    let (ext, rest) = ExtHeaders::read(info.headers, after_bth)?;
    let pad = usize::from(bth.pad_count);
    let payload = if info.payload {
        if rest.len() % 4 != 0 {
            return Err(ParseError::BadPad);
        }
        rest.get(..rest.len().checked_sub(pad).ok_or(ParseError::BadPad)?)
            .ok_or(ParseError::BadPad)?
    } else {
        if pad != 0 {
            return Err(ParseError::BadPad);
        }
        if !rest.is_empty() {
            return Err(ParseError::LengthMismatch);
        }
        rest
    };
    Ok(Packet {
        ip,
        bth,
        info,
        ext,
        payload,
        icrc,
    })
}

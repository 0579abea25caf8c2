//! What leaves the device, as its runtime takes it
//! ([`crate::transmit_turn`]): the carriage the runtime passes in, what
//! each take hands out, and what comes back when the runtime could not
//! send a packet.

use core::net::{IpAddr, SocketAddr};

use crate::train::Train;
use crate::wire;

/// Bytes a buffer given to [`crate::transmit_turn::TransmitTurn::poll_transmit`] needs for any
/// packet: IPv6 (40; IPv4 is 20) + UDP + BTH + RETH + ImmDt + 4096 bytes
/// of payload + pad + ICRC (4183), rounded up.
pub const MAX_DATAGRAM: usize = 4096 + 128;

const _: () = assert!(
    crate::wire::ip_udp::MAX_IP_UDP_HEADER_LEN + 12 + 16 + 4 + 4096 + 3 + 4 <= MAX_DATAGRAM
);

/// How the runtime's wire takes packets: plain data, passed with each
/// [`crate::transmit_turn::TransmitTurn::poll_transmit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Carriage {
    /// Packets to IPv6 destinations as UDP payloads (BTH through ICRC,
    /// [`Transmit::UdpPayload`]), for a UDP socket that writes the IPv6
    /// and UDP headers itself (the IPv6 ICRC covers nothing a socket
    /// chooses). IPv4 packets are whole datagrams regardless: their ICRC
    /// covers the identification the device chose.
    pub ipv6_udp_payloads: bool,
    /// A run of packets whose payload is in registered memory may leave
    /// as one [`Train`]: only between devices sharing one DMA address
    /// space, and never through per-packet fault injection.
    pub trains: bool,
}

/// One packet (or train) the runtime took ([`crate::transmit_turn::TransmitTurn::poll_transmit`]).
#[derive(Debug)]
// A train carries its gather list inline, so it needs no allocation per
// send.
#[allow(clippy::large_enum_variant)]
pub enum Transmit {
    /// A whole IPv4 or IPv6 datagram (IP header through ICRC; the version
    /// nibble tells which) in the buffer's first so many bytes. An IPv4
    /// header must go on the wire as it is: its ICRC covers the
    /// identification and flags the device chose.
    Datagram(usize),
    /// The UDP payload (BTH through ICRC) in the buffer's first `len`
    /// bytes, for `dest` from UDP port 4791 of the connection's address
    /// (IPv6 only, [`Carriage::ipv6_udp_payloads`]).
    UdpPayload {
        /// Where it goes.
        dest: SocketAddr,
        /// Its length.
        len: usize,
    },
    /// Packets whose payload is still in the sender's memory
    /// ([`Carriage::trains`]); nothing was written to the buffer.
    Train(Train),
}

/// A packet the runtime took but could not send and never will (larger
/// than the path carries, refused by its host: not a full queue or a lost
/// packet, which the RC transport retransmits), given back with
/// [`crate::device::SoftRnic::send_failed`]: whom it was for, from its IP header (or
/// socket address) and BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendFailure {
    /// The IP address it was sent to.
    pub dst: IpAddr,
    /// Its BTH destination QP (the peer's QP number).
    pub dest_qp: u32,
    /// Its PSN.
    pub psn: u32,
    /// Its BTH opcode byte (a request's, or a response's: ACK, READ
    /// response).
    pub opcode: u8,
}

impl SendFailure {
    /// The failure of the UDP payload (BTH onwards) `payload` sent to
    /// `dst`; `None` if it is too short to hold a BTH.
    pub fn of_udp_payload(dst: IpAddr, payload: &[u8]) -> Option<Self> {
        let bth: &[u8; wire::BTH_LEN] = payload.get(..wire::BTH_LEN)?.try_into().ok()?;
        Some(Self {
            dst,
            dest_qp: u32::from_be_bytes([0, bth[5], bth[6], bth[7]]),
            psn: u32::from_be_bytes([0, bth[9], bth[10], bth[11]]),
            opcode: bth[0],
        })
    }

    /// The failure of the IPv4 or IPv6 datagram `datagram`; `None` if its
    /// headers are not there.
    pub fn of_datagram(datagram: &[u8]) -> Option<Self> {
        let (dest, payload) = wire::ip_udp::split_datagram(datagram)?;
        Self::of_udp_payload(dest.ip(), payload)
    }
}

//! What arrives at the device: the one thing its single receive door,
//! [`crate::device::SoftRnic::receive`], takes.
//!
//! Whoever received the packet says how much it already knows, so nothing
//! is parsed twice: a whole datagram nobody looked into, one whose IP and
//! UDP headers were checked on the way in (the Ethernet port's
//! classification, [`crate::l2::Verdict::Rnic`]), a UDP payload as a
//! socket delivers it, or a train whose payload is still at the sender.

use core::net::SocketAddr;

use crate::train::Train;
use crate::wire::CheckedDatagram;

/// One arrival for the device ([`crate::device::SoftRnic::receive`]).
#[derive(Clone, Debug)]
pub enum Arrival<'a> {
    /// A whole IPv4 or IPv6 datagram (IP header through ICRC), unparsed.
    Datagram(&'a [u8]),
    /// A datagram whose IP and UDP headers were checked already
    /// ([`CheckedDatagram::parse`]): the device goes on from its BTH.
    Checked(CheckedDatagram<'a>),
    /// A UDP payload (BTH through ICRC) as a socket delivers it. Only an
    /// IPv6 pair can be checked (the IPv4 identification the ICRC covers
    /// is not in a socket's view): the device counts an IPv4 or mixed one
    /// as malformed.
    UdpPayload {
        /// Where it came from.
        src: SocketAddr,
        /// Where it was sent.
        dst: SocketAddr,
        /// The payload.
        payload: &'a [u8],
    },
    /// Packets whose payload is still at the sender ([`crate::train`]).
    Train(&'a Train),
}

impl Arrival<'_> {
    /// Bytes of its UDP payload (BTH through ICRC), when its headers say
    /// (a checked datagram, a socket's payload); what a NIC's RDMA octet
    /// counters count. `None` for an unparsed datagram or a train.
    pub fn udp_payload_len(&self) -> Option<usize> {
        match self {
            Self::Checked(d) => Some(d.udp_payload().len()),
            Self::UdpPayload { payload, .. } => Some(payload.len()),
            Self::Datagram(_) | Self::Train(_) => None,
        }
    }
}

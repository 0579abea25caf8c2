//! The RoCEv2 wire format of the software RNIC.
//!
//! A RoCEv2 packet is an IPv4/UDP or IPv6/UDP datagram to port 4791 whose
//! UDP payload is an InfiniBand transport packet: BTH (12 bytes), the extension headers
//! its opcode calls for, payload, 0–3 pad bytes, and a 4-byte invariant CRC.
//!
//! * [`packet`] — build ([`PacketBuilder`], [`build`], [`build_udp_payload`])
//!   and parse ([`parse`], [`parse_udp_payload`], [`parse_checked`]) whole
//!   packets.
//! * [`opcode`] — the opcode table ([`Opcode::info`]).
//! * [`bth`], [`ext`], [`syndrome`] — the transport headers.
//! * [`ipv4_udp`] — IPv4 and UDP headers and the IPv4 checksum;
//!   [`ipv6_udp`] — the IPv6 header; [`ip_udp`] — the facts of a datagram
//!   of either family ([`IpUdpFields`]).
//! * [`icrc`] — the invariant CRC, incremental ([`IcrcHasher`]).
//! * [`psn`], [`pmtu`] — sequence arithmetic, MTU, segmentation, padding.
//! * [`mad`], [`cm`], [`cma`] — connection management MADs on QP1.
//! * [`ethernet`], [`arp`], [`ndp`] — the link layer a RoCEv2 datagram
//!   travels in, and the neighbour resolution of IPv4 (ARP) and IPv6
//!   (Neighbor Discovery), for the Ethernet port.
//!
//! Parsing never panics: every malformed input is a [`ParseError`] the
//! transport can count and drop.

pub mod arp;
pub mod bth;
pub mod cm;
pub mod cma;
pub mod error;
pub mod ethernet;
pub mod ext;
pub(crate) mod fields;
pub mod framing;
pub mod icrc;
pub mod ip_udp;
pub mod ipv4_udp;
pub mod ipv6_udp;
pub mod mad;
pub mod ndp;
pub mod opcode;
pub mod packet;
pub mod pmtu;
pub mod psn;
pub mod syndrome;

pub use bth::{BTH_LEN, Bth, BthHeader, DEFAULT_PKEY, QPN_MASK};
pub use cm::{
    CmBody, CmError, CmMessage, CmPath, DrepMsg, DreqMsg, MessageRef, MraMsg, RejMsg, RejReason,
    RepMsg, ReqMsg, RtuMsg, gid_from_ip, gid_from_ipv4, ip_from_gid, ipv4_from_gid, parse_cm,
};
pub use cma::{CmaHeader, ip_service_id, ip_service_port};
pub use error::{BuildError, ParseError};
pub use ext::{Aeth, AtomicEth, Deth, ExtHeaders, GSI_QKEY, Reth};
pub use fields::U24;
pub use framing::{Carrying, read_response_framing, request_opcode};
pub use icrc::{ICRC_LEN, IcrcHasher, icrc_from_wire, icrc_to_wire};
pub use ip_udp::{CheckedDatagram, IpUdpFields};
pub use ipv4_udp::{Ipv4UdpFields, ROCEV2_PORT, ipv4_ident};
pub use ipv6_udp::Ipv6UdpFields;
pub use mad::{GSI_QPN, MAD_LEN, Mad, MadHeader, gsi_headers};
pub use opcode::{HeaderSet, Opcode, OpcodeInfo, Operation, Position};
pub use packet::{
    Headers, Packet, PacketBuilder, PayloadHasher, build, build_udp_payload, datagram_len, parse,
    parse_checked, parse_udp_payload, udp_payload_len,
};
pub use pmtu::{Pmtu, pad_len, segment_count};
pub use psn::{PSN_MASK, psn_add, psn_after, psn_before, psn_diff, psn_sub};
pub use syndrome::{CreditCode, NakCode, RnrTimer, Syndrome};

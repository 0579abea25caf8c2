//! The RNIC on an Ethernet segment: an [`EthernetPort`] carries the
//! device's datagrams as Ethernet frames (Ethernet II + IPv4/IPv6 + UDP
//! 4791 + BTH .. ICRC) through a NIC the host shares with its IP stack.
//!
//! * Send ([`EthernetPort::pump`]): the port takes the device's packets
//!   itself, each built by the device straight into the port's frame
//!   behind the Ethernet header's room. A datagram to one of the port's
//!   own addresses goes to the loopback queue (a NIC does not hairpin
//!   frames); any other is framed in place for its neighbour's MAC
//!   address and handed to the [`FrameSink`]. A neighbour not known yet
//!   is asked for (ARP request, or IPv6 Neighbor Solicitation) and the
//!   datagram is held or dropped (below). The pump asks the sink's room
//!   before every packet ([`FrameSink::has_room`]): a NIC whose transmit
//!   ring is full leaves the RNIC's packets in its outboxes rather than
//!   drop their frames. [`EthernetPort::transmit`] sends a datagram built
//!   elsewhere the same way.
//! * Receive ([`EthernetPort::on_frame`]): a frame carrying an
//!   unfragmented IPv4, or IPv6 with UDP right after its header, to UDP
//!   port 4791 at one of the port's addresses, whose headers check, is
//!   the RNIC's ([`Verdict::Rnic`], the checked datagram the device's
//!   receive takes as it is: headers are parsed once on the way in);
//!   everything else goes up to the host's stack
//!   ([`Verdict::PassUp`]), ARP and Neighbor Discovery included, after the
//!   port learnt from them. 802.1Q-tagged frames are passed up untouched:
//!   NICs strip VLAN tags into out-of-band data, so a tag in the frame
//!   means a VLAN this port is not on.
//! * A runtime that hands the RNIC its frames straight on (the kernel
//!   shell) calls [`EthernetPort::receive_frame`] once per frame: the
//!   verdict, the RDMA octet count ([`PortStats::steered_bytes`]) and the
//!   hand-over to [`crate::device::SoftRnic::receive`] in one call; and
//!   [`EthernetPort::pump`] once per batch the other way.
//! * Loopback: the queue is drained by the runtime
//!   ([`EthernetPort::poll_loopback`], or [`EthernetPort::loopback_into`]
//!   straight into the RNIC, outside any RNIC lock) after the sink's
//!   [`FrameSink::loopback_ready`].
//! * Time is what the runtime passes in ([`EthernetPort::on_frame`],
//!   [`EthernetPort::tick`]): the port keeps the latest.
//!
//! # Neighbour policy
//!
//! * Learning: an ARP packet or Neighbor Solicitation teaches its sender's
//!   MAC address, a Neighbor Advertisement its target's. A neighbour is
//!   added when the message is addressed to one of the port's addresses
//!   (a request for us, a reply to us); other messages (broadcast
//!   gratuitous ARP, unsolicited advertisements) only update neighbours
//!   already known. Our own addresses and group MAC addresses are never
//!   learnt.
//! * Reachability: a learnt address is used for [`REACHABLE_US`]; RoCEv2
//!   frames from it with the same MAC address confirm it again. After
//!   that it is still used for [`STALE_US`] while it is asked for again;
//!   then it is forgotten (a miss).
//! * Solicitation: at most one request per address per
//!   [`SOLICIT_INTERVAL_US`], while traffic wants it. ARP requests are
//!   broadcast from the datagram's source address (or the port's IPv4
//!   address on the target's prefix, else its first); Neighbor
//!   Solicitations go to the target's solicited-node multicast group from
//!   the datagram's source (RFC 4861 §7.2.2: the neighbour learns the
//!   address it will answer, without a solicitation of its own), else the
//!   port's link-local address, else its first IPv6 address, with the
//!   source link-layer address option.
//! * Holding: the first datagram to an unresolved neighbour is held (one
//!   per neighbour, a few in all: [`PortConfig::held`]) and sent when the
//!   answer comes, since it is usually a CM REQ whose retransmission would
//!   cost the connection ~400 ms; others are dropped (the RC transport
//!   retransmits). A held datagram unanswered for [`HOLD_US`] is dropped.
//! * The cache holds [`PortConfig::neighbours`] addresses; a new one
//!   evicts the one learnt (or first asked for) longest ago.
//!
//! Nothing here allocates after [`EthernetPort::new`] or panics on a
//! frame. The locks are the crate's spin locks: the sink is called holding
//! only the lock of the frame buffer it is shown (no address or
//! neighbour lock), the loopback consumer holding none.

mod classify;
mod loopback;
mod neighbours;
mod own;
mod port;
mod stats;

pub use neighbours::{HOLD_US, REACHABLE_US, SOLICIT_INTERVAL_US, STALE_US};
pub use port::{EthernetPort, PortConfig};
pub use stats::PortStats;

pub use crate::wire::ethernet::MacAddr;

use crate::arrival::Arrival;
use crate::wire::CheckedDatagram;

/// Where the port's frames go (the NIC) and how it asks for loopback
/// work to be done. Both are called at up to `DISPATCH_LEVEL`, possibly
/// from inside the RNIC's transmit (holding its locks): they must not
/// block or call back into the RNIC.
pub trait FrameSink: Send + Sync {
    /// Sends one whole Ethernet frame (no FCS). `rdma` is the UDP payload
    /// length (BTH through ICRC) of the RoCEv2 datagram it carries, for a
    /// NIC's RDMA octet counters; `None` for the port's neighbour traffic
    /// (ARP, Neighbor Solicitation). `false`: it was not taken (counted;
    /// the RC transport retransmits).
    fn send_frame(&self, frame: &[u8], rdma: Option<usize>) -> bool;

    /// Whether [`FrameSink::send_frame`] takes another frame now, asked by
    /// [`EthernetPort::pump`] before every packet. A sink with a bounded
    /// transmit queue says `false` while it is full, and has its runtime
    /// take the RNIC's packets again (its engine's next pass) once it has
    /// room. Cheap, never blocks. The default always has room.
    fn has_room(&self) -> bool {
        true
    }

    /// Datagrams wait in the loopback queue: arrange for
    /// [`EthernetPort::poll_loopback`] to run soon. Called for every
    /// datagram queued; the runtime coalesces.
    fn loopback_ready(&self);

    /// Sends the frames [`FrameSink::send_frame`] took and still holds (a
    /// sink that sends in batches), at the end of every
    /// [`EthernetPort::pump`]. The default holds none.
    fn flush(&self) {}
}

/// What to do with a received frame.
#[derive(Clone, Debug)]
pub enum Verdict<'f> {
    /// A RoCEv2 datagram for the RNIC, cut to its IP length (Ethernet
    /// padding removed), its IP and UDP headers checked: the runtime hands
    /// it to [`crate::device::SoftRnic::receive`] as it is
    /// ([`Verdict::into_arrival`]), and the device goes on from its BTH.
    /// Its UDP payload's length is the RDMA octet count. The frame is not
    /// passed up.
    Rnic(CheckedDatagram<'f>),
    /// Anything else: hand the frame to the host's stack.
    PassUp,
}

impl<'f> Verdict<'f> {
    /// The device's arrival, for the RNIC's datagram.
    pub fn into_arrival(self) -> Option<Arrival<'f>> {
        match self {
            Self::Rnic(datagram) => Some(Arrival::Checked(datagram)),
            Self::PassUp => None,
        }
    }
}

/// The largest RoCEv2 datagram the port carries: the largest path MTU
/// (4096) and [`ROCE_OVERHEAD`].
pub const MAX_DATAGRAM_LEN: usize = 4096 + ROCE_OVERHEAD as usize;

/// Bytes a RoCEv2 datagram adds to its payload at most: IPv6 (40) and UDP
/// (8) headers, BTH (12), the largest extension headers (28) and the
/// ICRC (4).
pub const ROCE_OVERHEAD: u32 = 40 + 8 + 12 + 28 + 4;

/// The largest frame the port builds.
pub const MAX_FRAME_LEN: usize = crate::wire::ethernet::ETHERNET_HEADER_LEN + MAX_DATAGRAM_LEN;

/// The largest RoCE path MTU (256, 512, 1024, 2048 or 4096) whose
/// datagrams fit a link MTU of `link_mtu` bytes (the largest IP datagram);
/// `None` below 256 + [`ROCE_OVERHEAD`].
pub fn path_mtu_for(link_mtu: u32) -> Option<u32> {
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|pmtu| pmtu + ROCE_OVERHEAD <= link_mtu)
}

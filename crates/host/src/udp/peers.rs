//! Send-only sockets, one connected to each peer's port 4791 (IPv6
//! adapters: an IPv4 adapter sends through its raw socket).
//!
//! A `sendmsg` that names its destination, as every send on the adapter's
//! unconnected port-4791 socket does, routes the datagram again and checks
//! that the bound source address is local; a connected socket sent on
//! without a destination keeps its route. RoCEv2's UDP source port is flow
//! entropy (the receiver finds the QP by destination port 4791 and the
//! BTH), so each peer gets a socket bound to an ephemeral port of the
//! adapter's address and connected to the peer's port: the peer's own
//! datagrams still arrive on the adapter's port-4791 socket, and nothing
//! arrives on these.
//!
//! The engine builds every packet's ICRC with source port 4791, and the
//! receiver checks it with the port the datagram came from. The CRC is
//! linear: a packet sent from port `p` is corrected by the CRC of `4791 ^ p`
//! followed by as many zero bytes as the ICRC covers after the source port,
//! which depends only on the packet's length and is kept for the last few
//! lengths (a ping-pong's SEND and ACK, a stream's full segment).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use crate::config::ROCEV2_UDP_PORT;

/// Peers that get a socket of their own; more share the adapter's socket.
const MAX_PEERS: usize = 32;
/// ICRC corrections kept per peer, by packet length.
const CORRECTIONS: usize = 4;
/// Bytes the ICRC covers after the UDP source port besides the UDP
/// payload's own: the rest of the UDP header (6), less the ICRC (4).
const COVERED_AFTER_PORT: usize = 2;

/// The connected sockets of one adapter, created on a peer's first send.
#[derive(Debug)]
pub(super) struct Peers {
    local: SocketAddr,
    list: Vec<PeerSocket>,
    /// Peer sockets are off, or one could not be made: the adapter's
    /// socket carries everything (the rest).
    closed: bool,
}

impl Peers {
    /// None: the adapter's socket carries everything.
    pub(super) fn off(local: SocketAddr) -> Self {
        Self {
            local,
            list: Vec::new(),
            closed: true,
        }
    }

    /// No sockets yet; room for [`MAX_PEERS`] of them on `local`'s address.
    pub(super) fn on(local: SocketAddr) -> Self {
        Self {
            local,
            list: Vec::with_capacity(MAX_PEERS),
            closed: false,
        }
    }

    /// The index of `peer`'s socket, opening it on the first call; `None`
    /// when the table is full or no socket could be opened (the caller
    /// sends on the adapter's socket, as before).
    pub(super) fn find_or_open(&mut self, peer: SocketAddr) -> Option<usize> {
        if let Some(i) = self.list.iter().position(|p| p.peer == peer) {
            return Some(i);
        }
        if self.closed || self.list.len() == MAX_PEERS {
            return None;
        }
        if let Ok(socket) = PeerSocket::open(self.local, peer) {
            self.list.push(socket);
            Some(self.list.len() - 1)
        } else {
            self.closed = true;
            None
        }
    }

    /// The socket at `index` (from [`Peers::find_or_open`]).
    pub(super) fn get(&mut self, index: usize) -> Option<&mut PeerSocket> {
        self.list.get_mut(index)
    }
}

/// One peer's connected socket.
#[derive(Debug)]
pub(super) struct PeerSocket {
    peer: SocketAddr,
    socket: UdpSocket,
    /// Port 4791 xor this socket's port: the bits the ICRC correction flips.
    port_flip: u16,
    /// `(UDP payload length, ICRC correction)`, most recent first slot free.
    corrections: [(usize, u32); CORRECTIONS],
    next_correction: usize,
}

impl PeerSocket {
    fn open(local: SocketAddr, peer: SocketAddr) -> io::Result<Self> {
        let socket = UdpSocket::bind(SocketAddr::new(local.ip(), 0))?;
        if local.is_ipv6() {
            // As the adapter's socket: fail rather than fragment.
            rustix::net::sockopt::set_ipv6_mtu_discover(
                &socket,
                rustix::net::sockopt::Ipv6PathMtuDiscovery::DO,
            )?;
        }
        socket.connect(peer)?;
        let _ = rustix::net::sockopt::set_socket_send_buffer_size(&socket, super::SOCKET_BUFFER);
        // Nothing is received here; a full send buffer must not block.
        socket.set_nonblocking(true)?;
        let port = socket.local_addr()?.port();
        Ok(Self {
            peer,
            socket,
            port_flip: ROCEV2_UDP_PORT ^ port,
            // Length 0 is no packet: the empty slots never match.
            corrections: [(0, 0); CORRECTIONS],
            next_correction: 0,
        })
    }

    /// Corrects the ICRC of `payload` (BTH through ICRC, built for source
    /// port 4791) for this socket's port.
    pub(super) fn correct_icrc(&mut self, payload: &mut [u8]) {
        let len = payload.len();
        let Some(at) = len.checked_sub(softrnic::wire::ICRC_LEN) else {
            return;
        };
        let known = self.corrections.iter().find(|c| c.0 == len).map(|c| c.1);
        let correction = known.unwrap_or_else(|| {
            let c = port_correction(self.port_flip, len + COVERED_AFTER_PORT);
            self.corrections[self.next_correction] = (len, c);
            self.next_correction = (self.next_correction + 1) % CORRECTIONS;
            c
        });
        if let Some(icrc) = payload
            .get_mut(at..)
            .and_then(|b| <&mut [u8; 4]>::try_from(b).ok())
        {
            *icrc = (u32::from_le_bytes(*icrc) ^ correction).to_le_bytes();
        }
    }

    /// Sends `contents` to the peer in one system call, as datagrams of
    /// `segment` bytes (the last one may be shorter) when given.
    pub(super) fn send(&mut self, contents: &[u8], segment: Option<usize>) -> io::Result<()> {
        let Some(segment) = segment else {
            rustix::net::send(&self.socket, contents, rustix::net::SendFlags::empty())?;
            return Ok(());
        };
        let segment = u16::try_from(segment).map_err(|_| io::ErrorKind::InvalidInput)?;
        send_segmented(&self.socket, contents, segment)
    }
}

impl std::os::fd::AsFd for PeerSocket {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.socket)
    }
}

/// The change of the CRC-32 of a message when the two bytes `flip` (big
/// endian) are xored into it `after` bytes before its end.
fn port_correction(flip: u16, after: usize) -> u32 {
    // CRC-32 with its initial value and final xor is affine: the CRC of
    // (m ^ e) is crc(m) ^ crc(e) ^ crc(zeros of e's length).
    let mut flipped = crc32fast::Hasher::new();
    let mut zeros = crc32fast::Hasher::new();
    flipped.update(&flip.to_be_bytes());
    zeros.update(&[0; 2]);
    let block = [0u8; 256];
    let mut left = after;
    while left > 0 {
        let take = left.min(block.len());
        flipped.update(&block[..take]);
        zeros.update(&block[..take]);
        left -= take;
    }
    flipped.finalize() ^ zeros.finalize()
}

/// A control message asking for generic segmentation offload
/// (`UDP_SEGMENT`): a `cmsghdr` followed by the segment size, padded to
/// `CMSG_SPACE(2)`.
#[repr(C)]
struct SegmentControl {
    header: libc::cmsghdr,
    size: u16,
    pad: [u8; 6],
}

/// Sends `contents` on the connected `socket` as datagrams of `segment`
/// bytes in one `sendmsg`, naming no destination (which would route it
/// again). Neither rustix nor socket2 sends this control message, and
/// quinn-udp always names the destination.
fn send_segmented(socket: &UdpSocket, contents: &[u8], segment: u16) -> io::Result<()> {
    let mut control = SegmentControl {
        header: libc::cmsghdr {
            // CMSG_LEN(2): the header and the two bytes of the size.
            cmsg_len: size_of::<libc::cmsghdr>() + size_of::<u16>(),
            cmsg_level: libc::SOL_UDP,
            cmsg_type: libc::UDP_SEGMENT,
        },
        size: segment,
        pad: [0; 6],
    };
    let mut iov = libc::iovec {
        iov_base: contents.as_ptr().cast_mut().cast(),
        iov_len: contents.len(),
    };
    let message = libc::msghdr {
        msg_name: std::ptr::null_mut(),
        msg_namelen: 0,
        msg_iov: &raw mut iov,
        msg_iovlen: 1,
        msg_control: (&raw mut control).cast(),
        msg_controllen: size_of::<SegmentControl>(),
        msg_flags: 0,
    };
    // SAFETY: `socket` owns an open descriptor for the whole call.
    // `message` names no address; its one iovec points to `contents`,
    // borrowed for the call, with its length; its control buffer is
    // `control`, a live local of `msg_controllen` bytes holding one
    // well-formed UDP_SEGMENT message (its `cmsg_len` counts the header and
    // the two size bytes). The kernel only reads through these pointers
    // (sendmsg writes nothing to the buffers) and keeps none after return.
    let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &raw const message, 0) };
    if sent < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The correction equals recomputing the CRC over the message with the
    /// port changed.
    #[test]
    fn a_port_correction_equals_the_crc_of_the_changed_message() {
        let mut message: Vec<u8> = (0..200u8).map(|i| i.wrapping_mul(37)).collect();
        message[10..12].copy_from_slice(&ROCEV2_UDP_PORT.to_be_bytes());
        let before = crc32fast::hash(&message);
        let port = 40_123u16;
        message[10..12].copy_from_slice(&port.to_be_bytes());
        let after = crc32fast::hash(&message);
        assert_eq!(before ^ port_correction(ROCEV2_UDP_PORT ^ port, 188), after);
    }
}

//! RoCEv2 over real UDP port 4791, batched: IPv4 through raw sockets,
//! IPv6 through a UDP socket.
//!
//! ## Why two paths: the ICRC covers the IP header
//!
//! The RoCEv2 ICRC is computed over the IP and UDP headers with only the
//! variant fields masked (IPv4 TOS, TTL, header checksum; IPv6 traffic
//! class, flow label, hop limit; the UDP checksum). What a port sends must
//! carry an ICRC right for the header actually on the wire, and what it
//! receives must be checked against the header it actually arrived with.
//!
//! * **IPv4** covers the identification, flags and fragment offset. A UDP
//!   socket neither lets its sender choose them (the kernel picks the
//!   identification: 0 on an unconnected socket with DF, a per-socket
//!   counter on a connected one, an incrementing run across a GSO batch)
//!   nor shows its receiver what arrived: no control message carries the
//!   identification. So IPv4 goes through raw sockets (`udp/raw4.rs`):
//!   the engine builds whole datagrams, choosing the identification
//!   (`softrnic::wire::ipv4_ident`) its ICRC covers, and an `IP_HDRINCL`
//!   socket sends them as built; a raw UDP socket with a BPF filter hands
//!   received datagrams over whole, so the engine checks each ICRC against
//!   its real header. The costs: `CAP_NET_RAW` (opening an IPv4 adapter
//!   without it fails: [`UdpPort::bind`] says `PermissionDenied`), and no
//!   segmentation or receive offload (the kernel does not segment or
//!   coalesce raw datagrams): a datagram per message, still batched, up to
//!   64 per `sendmmsg` and per `recvmmsg`. The UDP socket bound to port
//!   4791 stays, filtered to take nothing: it reserves the port (another
//!   adapter on the address gets `AddrInUse`) and keeps the kernel from
//!   answering each datagram with an ICMP port unreachable.
//! * **IPv6** covers, of the fixed header, the version, payload length,
//!   next header and addresses (no identification: IPv6 fragments only
//!   with an extension header, which RoCEv2 datagrams never carry). A UDP
//!   socket shows its receiver all of them: the source address and port
//!   (the datagram's sender), the destination address (`IPV6_PKTINFO`)
//!   and port (4791, the bound one), the payload length (the UDP length:
//!   8 + the payload's) and the next header (UDP). And its sender's kernel
//!   writes nothing covered but those, so the engine's UDP payload (the
//!   ICRC computed for source port 4791, corrected for a peer socket's
//!   port) is right for what leaves. IPv6 keeps the UDP socket, with
//!   generic segmentation offload (consecutive packets to one peer leave
//!   in one send: a 1 MiB transfer at a 4096-byte path MTU is a handful of
//!   system calls) and `recvmmsg` with receive offload. Its sockets refuse
//!   to fragment (`IPV6_MTU_DISCOVER` = do): a datagram the path cannot
//!   carry fails rather than leave in fragments.
//!
//! ## Path MTU and send failures
//!
//! The device's routes ([`UdpRoutes`]) answer the route's MTU to a peer
//! (`IP_MTU` or `IPV6_MTU` of a UDP socket connected to it), as the
//! largest RoCE path MTU whose datagrams fit; connection management offers
//! no more. A datagram that still cannot leave (`EMSGSIZE`, or any error
//! no retry gets past: `udp/failures.rs`) is kept and given back to the
//! device after the pump's flush (`SoftRnic::send_failed`), which fails
//! the QP that sent it; a full socket buffer is waited on, and a loss for
//! now (no route, an ICMP error reported back) is left to the RC
//! transport's retransmission.
//!
//! ## Sending: the pump
//!
//! The device owns no link: after each pass its runtime takes what it
//! sends ([`UdpPort::pump`], `udp/pump.rs`), each packet built straight
//! into this port's send batch (a `sendmmsg` slot for IPv4, the next
//! segment of a segmentation-offload batch for IPv6), then flushes.
//!
//! With `peer_sockets=on` an IPv6 adapter's packets leave on a socket
//! connected to their peer (`udp/peers.rs`), which spares each send a
//! route lookup; IPv4 has nothing to gain from it (a raw socket routes
//! each datagram either way) and ignores it.

mod failures;
mod peers;
mod pump;
mod raw4;
#[cfg(test)]
mod raw_peer_tests;

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use links::{Link, Outgoing, Received};
use quinn_udp::{RecvMeta, UdpSocketState};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use softrnic::arrival::Arrival;
use softrnic::env::Routes;
use softrnic::transmit::SendFailure;

use crate::config::ROCEV2_UDP_PORT;
use failures::{Failures, SendOutcome, classify};
use peers::Peers;
use raw4::Raw4;

pub use pump::UdpPass;

/// Bytes of the batch buffer each packet is built in: any the device sends
/// (a 4096-byte path MTU plus headers, with room to spare).
const MAX_SEGMENT: usize = softrnic::transmit::MAX_DATAGRAM;
/// Segments gathered into one send at most.
const MAX_BATCH: usize = 64;
/// Receive buffers filled by one `recvmmsg` in a stream.
const RX_BUFFERS: usize = 8;
/// Datagrams one receive may take and still be a ping-pong's (a SEND and
/// the ACK that rides behind it); more mean a stream, received wide.
const NARROW_DATAGRAMS: usize = 2;
/// Bytes of a UDP header.
const UDP_HEADER_LEN: usize = 8;
/// Size of one receive buffer (a GRO super-datagram).
const RX_BUFFER_LEN: usize = 64 * 1024;
/// Socket buffer size asked of the kernel.
const SOCKET_BUFFER: usize = 8 << 20;

/// What an IPv4 adapter opened without `CAP_NET_RAW` lacks, said to the
/// user (the open fails with `STATUS_ACCESS_DENIED`).
pub const NO_RAW_SOCKETS: &str = "rsndk: an IPv4 UDP adapter needs CAP_NET_RAW: it sends and receives RoCEv2 through raw sockets, because the ICRC covers the IPv4 identification and flags, which a UDP socket neither lets it choose nor shows it; run as root or give the program the capability (setcap cap_net_raw+ep PROGRAM)";

/// Counters of a port.
#[derive(Debug, Default)]
pub struct UdpStats {
    /// Datagrams handed to the kernel.
    pub sent: AtomicU64,
    /// System calls that sent them.
    pub send_calls: AtomicU64,
    /// Datagrams dropped because the socket buffer stayed full, or lost
    /// for now (no route): the RC transport retransmits them.
    pub send_drops: AtomicU64,
    /// Datagrams that could never be sent (larger than the path's MTU,
    /// refused by the host): each fails the QP that sent it.
    pub send_failures: AtomicU64,
    /// Datagrams received.
    pub received: AtomicU64,
}

#[derive(Debug)]
struct Batch {
    dest: Option<SocketAddr>,
    segment: usize,
    /// A segment shorter than `segment` ends a GSO batch.
    closed: bool,
    /// The batch holds packets the engine built (ICRC for source port
    /// 4791), which may leave on their peer's socket.
    engine_built: bool,
    /// The peer socket the batch leaves on (its ICRCs corrected for it);
    /// `None`: the adapter's socket.
    peer: Option<usize>,
    peers: Peers,
    count: usize,
    /// Zeroed once at its full size; `buf[start..used]` holds the batch,
    /// so a packet built into it costs no clearing first.
    buf: Vec<u8>,
    /// Where the batch begins: a packet built after a batch it cannot
    /// join begins the next one where it was built, not copied.
    start: usize,
    used: usize,
}

/// A bound RoCEv2 port: for IPv6 a UDP socket, for IPv4 raw sockets and
/// the UDP socket that holds port 4791 (see the module docs).
#[derive(Debug)]
pub struct UdpPort {
    socket: UdpSocket,
    /// IPv4's raw sockets, which carry every IPv4 datagram.
    raw: Option<Raw4>,
    /// Datagrams that could never be sent, for the device.
    failures: Failures,
    state: UdpSocketState,
    local: SocketAddr,
    batch: Mutex<Batch>,
    /// The batch holds something (set and cleared under its lock): a flush
    /// with nothing queued, as most passes of a busy-polling consumer end
    /// with, takes no lock.
    queued: AtomicBool,
    /// Receive buffers of whichever thread receives (the engine, or a
    /// consumer busy polling the device).
    rx: Mutex<RxBuffers>,
    max_segments: usize,
    /// Counters.
    pub stats: UdpStats,
}

/// `UDP_NO_CHECK6_RX` (include/uapi/linux/udp.h): the socket takes IPv6
/// datagrams whose UDP checksum is 0.
const UDP_NO_CHECK6_RX: libc::c_int = 102;

/// Lets an IPv6 socket take datagrams with a zero UDP checksum. RoCEv2
/// senders put 0 there (IBTA Annex A17; Linux rxe does, on IPv6 too: its
/// tunnel socket is made with `use_udp6_tx_checksums` off), a receiver
/// ignores the field (the ICRC protects the packet), and Linux otherwise
/// drops such an IPv6 datagram before any socket sees it.
fn accept_zero_checksums(socket: &UdpSocket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor borrowed for the call, and an
    // option value of the size passed, alive across it.
    let rc = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(socket),
            libc::IPPROTO_UDP,
            UDP_NO_CHECK6_RX,
            (&raw const on).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Where the UDP payload of the IPv4 or IPv6 datagram `datagram` goes,
/// where in it the payload is, and whether it names source port 4791 (an
/// engine's packet, whose ICRC covers that port); `None` without headers.
fn udp_payload_of(datagram: &[u8]) -> Option<(SocketAddr, std::ops::Range<usize>, bool)> {
    let (dest, payload) = softrnic::wire::ip_udp::split_datagram(datagram)?;
    let at = datagram.len() - payload.len();
    let src_port = datagram.get(at - UDP_HEADER_LEN..at - UDP_HEADER_LEN + 2)?;
    let engine_built = u16::from_be_bytes([src_port[0], src_port[1]]) == ROCEV2_UDP_PORT;
    Some((dest, at..datagram.len(), engine_built))
}

impl UdpPort {
    /// Binds `addr`:4791 (IPv4 or IPv6). `AddrInUse` means another adapter
    /// owns it; `PermissionDenied`, for IPv4, that the process lacks
    /// `CAP_NET_RAW` (its raw sockets own the IPv4 header the ICRC covers).
    pub fn bind(addr: impl Into<IpAddr>) -> io::Result<Self> {
        let local = SocketAddr::new(addr.into(), ROCEV2_UDP_PORT);
        // The std socket of an IPv6 address is IPv6-only on Linux unless
        // the system says otherwise; either way the adapter exchanges
        // IPv6 datagrams only (its peers are of its family).
        let socket = UdpSocket::bind(local)?;
        let raw = match local.ip() {
            IpAddr::V4(v4) => {
                let raw = Raw4::open(v4)?;
                // The raw socket takes every datagram: this one only holds
                // the port.
                socket2::SockRef::from(&socket).attach_filter(&raw4::DROP_ALL)?;
                Some(raw)
            }
            IpAddr::V6(_) => {
                // A datagram the path cannot carry fails (EMSGSIZE) rather
                // than leave in fragments.
                rustix::net::sockopt::set_ipv6_mtu_discover(
                    &socket,
                    rustix::net::sockopt::Ipv6PathMtuDiscovery::DO,
                )?;
                accept_zero_checksums(&socket)?;
                None
            }
        };
        // Bigger buffers absorb bursts of a whole window of packets; the
        // kernel caps them at its own maximum, which is fine.
        let _ = rustix::net::sockopt::set_socket_send_buffer_size(&socket, SOCKET_BUFFER);
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, SOCKET_BUFFER);
        // The engine thread receives between poll passes and parks in
        // poll(2): reads must never block.
        socket.set_nonblocking(true)?;
        let state = UdpSocketState::new((&socket).into())?;
        let max_segments = state.max_gso_segments().clamp(1, MAX_BATCH);
        let batch = Batch {
            dest: None,
            segment: 0,
            closed: false,
            engine_built: false,
            peer: None,
            peers: Peers::off(local),
            count: 0,
            buf: vec![0; MAX_SEGMENT * max_segments],
            start: 0,
            used: 0,
        };
        Ok(Self {
            socket,
            raw,
            failures: Failures::default(),
            state,
            local,
            batch: Mutex::new(batch),
            queued: AtomicBool::new(false),
            rx: Mutex::new(RxBuffers::default()),
            max_segments,
            stats: UdpStats::default(),
        })
    }

    /// This port, sending the engine's IPv6 packets (the UDP payloads its
    /// pump takes, and datagrams naming source port 4791) from a socket
    /// connected to each peer, bound to an ephemeral port
    /// (`udp/peers.rs`); a packet captured before it leaves still shows
    /// port 4791. An IPv4 port sends
    /// through its raw socket whatever this says.
    #[must_use]
    pub fn with_peer_sockets(mut self) -> Self {
        self.batch
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .peers = Peers::on(self.local);
        self
    }

    /// The bound address.
    pub fn local(&self) -> SocketAddr {
        self.local
    }

    /// Sends the batch, then empties it (a batch of nothing only the
    /// latter).
    fn send_batch(&self, batch: &mut Batch) {
        if let Some(dest) = batch.dest
            && batch.count > 0
        {
            self.send_contents(batch, dest);
        }
        batch.start = 0;
        batch.used = 0;
        batch.count = 0;
        batch.dest = None;
        batch.closed = false;
        batch.peer = None;
        self.queued.store(false, Ordering::Release);
    }

    fn send_contents(&self, batch: &mut Batch, dest: SocketAddr) {
        let contents = batch.buf.get(batch.start..batch.used).unwrap_or_default();
        let segment_size = (batch.count > 1).then_some(batch.segment);
        let transmit = quinn_udp::Transmit {
            destination: dest,
            ecn: None,
            contents,
            segment_size,
            src_ip: None,
        };
        let mut peer = batch.peer.and_then(|i| batch.peers.get(i));
        let mut attempts = 0;
        loop {
            let sent = match peer.as_mut() {
                Some(peer) => peer.send(contents, segment_size),
                None => self.state.try_send((&self.socket).into(), &transmit),
            };
            match sent {
                Ok(()) => {
                    self.stats
                        .sent
                        .fetch_add(batch.count as u64, Ordering::Relaxed);
                    self.stats.send_calls.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(e) => match classify(&e) {
                    SendOutcome::Full if attempts < 100 => {
                        attempts += 1;
                        // The socket buffer is full: wait a little for room.
                        let fd = match peer.as_ref() {
                            Some(peer) => peer.as_fd(),
                            None => self.socket.as_fd(),
                        };
                        let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
                        let timeout = Timespec {
                            tv_sec: 0,
                            tv_nsec: 1_000_000,
                        };
                        let _ = poll(&mut fds, Some(&timeout));
                    }
                    SendOutcome::Full | SendOutcome::Lost => {
                        // Unreachable peer, full buffer for too long: the
                        // RC transport retransmits, as after a wire loss.
                        self.stats
                            .send_drops
                            .fetch_add(batch.count as u64, Ordering::Relaxed);
                        break;
                    }
                    SendOutcome::Permanent => {
                        // Too big for the path (or refused): every packet
                        // of the batch fails its QP.
                        let stride = segment_size.unwrap_or(contents.len()).max(1);
                        for packet in contents.chunks(stride) {
                            self.failures.udp_payload(dest.ip(), packet, &self.stats);
                        }
                        break;
                    }
                },
            }
        }
    }

    /// Queues one UDP payload for `dest`, to leave as it is from the
    /// adapter's UDP socket (the kernel writes its IP header: not for a
    /// RoCEv2 packet over IPv4, whose ICRC covers that header), sending
    /// earlier ones first when they cannot share a segmentation-offload
    /// batch with it.
    pub fn queue(&self, dest: SocketAddr, payload: &[u8]) {
        self.queue_copy(dest, payload, false);
    }

    /// Queues a copy of `payload` for `dest` (`engine_built`: as
    /// [`UdpPort::commit`] says).
    fn queue_copy(&self, dest: SocketAddr, payload: &[u8], engine_built: bool) {
        if payload.len() > MAX_SEGMENT {
            // Larger than any packet the batch builds: it can never leave.
            self.failures.udp_payload(dest.ip(), payload, &self.stats);
            return;
        }
        let mut batch = self.lock_batch();
        let Some(slot) = self.slot(&mut batch).get_mut(..payload.len()) else {
            return;
        };
        slot.copy_from_slice(payload);
        self.commit(&mut batch, dest, payload.len(), engine_built);
    }

    /// The send batch, held while packets are built into it.
    fn lock_batch(&self) -> std::sync::MutexGuard<'_, Batch> {
        self.batch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The buffer the next packet is built in: the [`MAX_SEGMENT`] bytes
    /// after the batch, which is sent first if they are not there.
    fn slot<'b>(&self, batch: &'b mut Batch) -> &'b mut [u8] {
        if batch.used + MAX_SEGMENT > batch.buf.len() {
            self.send_batch(batch);
        }
        let at = batch.used;
        batch.buf.get_mut(at..at + MAX_SEGMENT).unwrap_or_default()
    }

    /// Queues the UDP payload built in the slot last lent
    /// ([`UdpPort::slot`]), its first `len` bytes, for `dest`, sending the
    /// batch first when the payload cannot join its segmentation-offload
    /// batch. `engine_built`: a RoCEv2 packet whose ICRC was computed for
    /// source port 4791, which may leave from its peer's socket, corrected.
    fn commit(&self, batch: &mut Batch, dest: SocketAddr, len: usize, engine_built: bool) {
        let at = batch.used;
        if len > MAX_SEGMENT || at + len > batch.buf.len() {
            return;
        }
        let fits = batch.count > 0
            && batch.dest == Some(dest)
            && batch.engine_built == engine_built
            && !batch.closed
            && len <= batch.segment
            && batch.count < self.max_segments
            && u16::try_from(at - batch.start + len).is_ok();
        if !fits {
            self.send_batch(batch);
            // The payload stays where it was built and begins the next
            // batch.
            batch.start = at;
            batch.used = at;
        }
        if batch.count == 0 {
            batch.dest = Some(dest);
            batch.segment = len;
            batch.engine_built = engine_built;
            batch.peer = if engine_built {
                batch.peers.find_or_open(dest)
            } else {
                None
            };
        }
        if let Some(peer) = batch.peer.and_then(|i| batch.peers.get(i))
            && let Some(packet) = batch.buf.get_mut(at..at + len)
        {
            peer.correct_icrc(packet);
        }
        batch.used = at + len;
        batch.count += 1;
        self.queued.store(true, Ordering::Release);
        if len < batch.segment {
            batch.closed = true;
        }
    }

    /// Queues the whole IPv4 or IPv6 datagram `datagram` as it is (for
    /// IPv4 through the raw socket, its header as built; for IPv6 its UDP
    /// payload, on the peer's socket if it names source port 4791 and peer
    /// sockets are on, else on the adapter's).
    pub fn queue_datagram(&self, datagram: &[u8]) {
        if let Some(raw) = &self.raw {
            raw.queue(datagram, &self.stats, &self.failures);
            return;
        }
        if let Some((dest, payload, engine_built)) = udp_payload_of(datagram)
            && let Some(payload) = datagram.get(payload)
        {
            self.queue_copy(dest, payload, engine_built);
        }
    }

    /// Sends everything queued.
    pub fn flush(&self) {
        if let Some(raw) = &self.raw {
            raw.flush(&self.stats, &self.failures);
        }
        // Whoever queues flushes after (the device's passes and commands
        // do), so a batch filled while this looks is not left behind.
        if !self.queued.load(Ordering::Acquire) {
            return;
        }
        self.send_batch(&mut self.lock_batch());
    }

    /// Waits up to `timeout` for datagrams and hands each to `deliver`
    /// (as [`UdpPort::try_receive`]). Returns how many arrived.
    pub fn receive(
        &self,
        buffers: &mut RxBuffers,
        timeout: Duration,
        deliver: impl FnMut(Arrival<'_>),
    ) -> io::Result<usize> {
        let mut fds = [PollFd::new(self, PollFlags::IN)];
        let ts = Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        if poll(&mut fds, Some(&ts))? == 0 {
            return Ok(0);
        }
        self.try_receive(buffers, deliver)
    }

    /// Takes what datagrams are queued (one `recvmmsg`, never waiting) and
    /// hands each to `deliver`: an IPv4 port's whole datagrams as they
    /// arrived ([`Arrival::Datagram`]), an IPv6 port's UDP payloads with
    /// their source and destination ([`Arrival::UdpPayload`]). Returns how
    /// many there were.
    pub fn try_receive(
        &self,
        buffers: &mut RxBuffers,
        mut deliver: impl FnMut(Arrival<'_>),
    ) -> io::Result<usize> {
        if let Some(raw) = &self.raw {
            let received = raw.try_receive(&mut buffers.raw, buffers.wide, &mut |datagram| {
                deliver(Arrival::Datagram(datagram));
            });
            let (count, filled) = match received {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    buffers.wide = false;
                    buffers.more = false;
                    return Ok(0);
                }
                Err(e) => return Err(e),
            };
            self.stats
                .received
                .fetch_add(count as u64, Ordering::Relaxed);
            // Every slot offered filled: a stream, received wide, and more
            // may be waiting.
            buffers.wide = filled;
            buffers.more = filled;
            return Ok(count);
        }
        let mut metas = [RecvMeta::default(); RX_BUFFERS];
        // No allocation: a busy-polling consumer calls this for every
        // empty CQ poll.
        let mut slices = buffers.bufs.each_mut().map(|b| IoSliceMut::new(b));
        // One buffer (one GRO super-datagram) unless a stream is coming:
        // with more, the kernel tries the next one after the first, which
        // a ping-pong pays on every receive.
        let width = if buffers.wide { RX_BUFFERS } else { 1 };
        buffers.more = false;
        let n = match self.state.recv(
            (&self.socket).into(),
            &mut slices[..width],
            &mut metas[..width],
        ) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                buffers.wide = false;
                return Ok(0);
            }
            Err(e) => return Err(e),
        };
        let mut count = 0;
        for (meta, buf) in metas.iter().zip(buffers.bufs.iter()).take(n) {
            // A datagram of the other family (a dual-stack socket's
            // IPv4-mapped sender) is not for this adapter.
            let src = match meta.addr {
                SocketAddr::V6(v6) if self.local.is_ipv4() => {
                    let Some(v4) = v6.ip().to_ipv4_mapped() else {
                        continue;
                    };
                    SocketAddr::new(v4.into(), v6.port())
                }
                src => src,
            };
            if src.is_ipv4() != self.local.is_ipv4() {
                continue;
            }
            let dst = match meta.dst_ip {
                Some(ip) if ip.is_ipv4() == self.local.is_ipv4() => {
                    SocketAddr::new(ip, ROCEV2_UDP_PORT)
                }
                _ => self.local,
            };
            let stride = meta.stride.max(1);
            for segment in buf[..meta.len].chunks(stride) {
                deliver(Arrival::UdpPayload {
                    src,
                    dst,
                    payload: segment,
                });
                count += 1;
            }
        }
        self.stats
            .received
            .fetch_add(count as u64, Ordering::Relaxed);
        buffers.wide = n > 1 || count > NARROW_DATAGRAMS;
        buffers.more = n == width && count > NARROW_DATAGRAMS;
        Ok(count)
    }
}

/// What a receiver waits on: the raw socket for IPv4, the UDP socket for
/// IPv6.
impl AsFd for UdpPort {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match &self.raw {
            Some(raw) => raw.as_fd(),
            None => self.socket.as_fd(),
        }
    }
}

/// Receive buffers, allocated once per receiving thread.
#[derive(Debug)]
pub struct RxBuffers {
    bufs: [Box<[u8]>; RX_BUFFERS],
    /// An IPv4 port's receive slots: one datagram each.
    raw: Box<[u8]>,
    /// The last receive took a stream's worth: the next one fills all
    /// buffers.
    wide: bool,
    /// The last receive filled every buffer it offered with a stream's
    /// worth: more may be waiting.
    more: bool,
}

impl Default for RxBuffers {
    fn default() -> Self {
        Self {
            bufs: std::array::from_fn(|_| vec![0u8; RX_BUFFER_LEN].into_boxed_slice()),
            raw: vec![0u8; raw4::RX_SLOTS * raw4::RX_SLOT_LEN].into_boxed_slice(),
            wide: false,
            more: false,
        }
    }
}

/// A [`UdpPort`] as a [`Link`]: what its pass receives through (inside
/// the device's capture wrapper), and what carries whole datagrams while
/// a capture shows them ([`UdpPass`]).
#[derive(Debug)]
pub struct UdpLink(pub std::sync::Arc<UdpPort>);

/// The routes of a device on a UDP port: the path MTU to a peer is the
/// route's from the port's address.
#[derive(Clone, Copy, Debug)]
pub struct UdpRoutes {
    local: IpAddr,
}

impl UdpPort {
    /// The routes of a device on this port.
    pub fn routes(&self) -> UdpRoutes {
        UdpRoutes {
            local: self.local.ip(),
        }
    }
}

impl Routes for UdpRoutes {
    /// The route's MTU to `dst` (a UDP socket connected to it, from the
    /// adapter's address, asked `IP_MTU` or `IPV6_MTU`), as the largest
    /// RoCE path MTU it carries; `None` if the route cannot be asked (no
    /// route: the connection's packets will not leave either).
    fn path_mtu(&self, dst: IpAddr) -> Option<u32> {
        let probe = UdpSocket::bind(SocketAddr::new(self.local, 0)).ok()?;
        probe.connect(SocketAddr::new(dst, ROCEV2_UDP_PORT)).ok()?;
        let mtu = match dst {
            IpAddr::V4(_) => rustix::net::sockopt::ip_mtu(&probe),
            IpAddr::V6(_) => rustix::net::sockopt::ipv6_mtu(&probe),
        }
        .ok()?;
        Some(softrnic::l2::path_mtu_for(mtu).unwrap_or(256))
    }
}

impl Link for UdpLink {
    /// Queues a datagram for the socket (it carries no trains).
    fn transmit(&self, packet: Outgoing<'_>) {
        if let Some(datagram) = packet.datagram() {
            self.0.queue_datagram(datagram);
        }
    }

    fn flush(&self) {
        self.0.flush();
    }

    fn receive(&self, deliver: &mut dyn FnMut(Arrival<'_>)) -> Received {
        // One receiver at a time; the device's turn already ensures it.
        let Ok(mut buffers) = self.0.rx.try_lock() else {
            return Received::default();
        };
        let count = self.0.try_receive(&mut buffers, deliver).unwrap_or(0);
        Received {
            count,
            // A full receive may have left more behind; anything less
            // means the queue was drained and a ping-pong pays no extra
            // call.
            more: buffers.more,
            next_due_us: None,
        }
    }

    fn take_send_failures(&self, each: &mut dyn FnMut(SendFailure)) {
        self.0.failures.take(each);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4};

    use crate::test_loopback::loopback;

    /// An IPv4 datagram from `src` to `dst`:4791 with identification
    /// `ident` (DF set, checksums left to the kernel).
    fn datagram(src: Ipv4Addr, dst: Ipv4Addr, ident: u16, payload: &[u8]) -> Vec<u8> {
        let mut d = vec![0u8; 28];
        d[0] = 0x45;
        let total = u16::try_from(d.len() + payload.len()).unwrap();
        d[2..4].copy_from_slice(&total.to_be_bytes());
        d[4..6].copy_from_slice(&ident.to_be_bytes());
        d[6] = 0x40;
        d[8] = 64;
        d[9] = 17;
        d[12..16].copy_from_slice(&src.octets());
        d[16..20].copy_from_slice(&dst.octets());
        d[22..24].copy_from_slice(&ROCEV2_UDP_PORT.to_be_bytes());
        d[24..26].copy_from_slice(&u16::try_from(8 + payload.len()).unwrap().to_be_bytes());
        d.extend_from_slice(payload);
        d
    }

    /// Datagrams queued on an IPv4 port leave in one `sendmmsg` through
    /// the raw socket, their headers as built (each its own
    /// identification), and arrive at the peer's port whole.
    #[test]
    fn ipv4_batches_travel_over_loopback_with_their_own_headers() {
        // Two ports on distinct loopback addresses, as two adapters would be.
        let (at, peer_at) = (loopback(1), loopback(2));
        let a = UdpPort::bind(at).unwrap();
        let b = UdpPort::bind(peer_at).unwrap();
        let link = UdpLink(std::sync::Arc::new(a));
        for i in 0..10u8 {
            links::transmit_copy(
                &link,
                &datagram(at, peer_at, 0x1234 + u16::from(i), &[i; 1000]),
            );
        }
        links::transmit_copy(&link, &datagram(at, peer_at, 0xFFFF, &[0xEE; 10]));
        link.flush();
        let mut got = Vec::new();
        let mut bufs = RxBuffers::default();
        for _ in 0..50 {
            b.receive(&mut bufs, Duration::from_millis(100), |a| {
                if let Arrival::Datagram(d) = a {
                    got.push(d.to_vec());
                }
            })
            .unwrap();
            if got.len() == 11 {
                break;
            }
        }
        assert_eq!(got.len(), 11);
        for (i, d) in got.iter().enumerate() {
            let ident = if i < 10 { 0x1234 + i as u16 } else { 0xFFFF };
            assert_eq!(
                u16::from_be_bytes([d[4], d[5]]),
                ident,
                "the identification sent"
            );
            assert_eq!(d[6] & 0x40, 0x40, "DF as sent");
            assert_eq!(&d[12..16], &at.octets());
            assert_eq!(&d[16..20], &peer_at.octets());
            let payload = if i < 10 {
                vec![i as u8; 1000]
            } else {
                vec![0xEE; 10]
            };
            assert_eq!(&d[28..], &payload[..]);
        }
        let calls = link.0.stats.send_calls.load(Ordering::Relaxed);
        assert!(calls <= 2, "one batched send expected, got {calls} calls");
    }

    /// With peer sockets on, an IPv6 engine-built packet (source port
    /// 4791 in its ICRC) leaves from the socket connected to its peer,
    /// another port, and its ICRC checks with the port it came from; a
    /// second packet to the same peer leaves from the same socket.
    #[test]
    fn an_engine_packet_leaves_from_its_peers_socket_with_a_matching_icrc() {
        use softrnic::wire::opcode::Opcode;
        use softrnic::wire::{Bth, ExtHeaders, Headers, IpUdpFields, build, parse_udp_payload};

        let a = bind_ipv6_loopback().with_peer_sockets();
        let peer = UdpSocket::bind("[::1]:0").unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let peer_at = peer.local_addr().unwrap();
        let link = UdpLink(std::sync::Arc::new(a));
        let mut ip = IpUdpFields::new(
            Ipv6Addr::LOCALHOST.into(),
            Ipv6Addr::LOCALHOST.into(),
            ROCEV2_UDP_PORT,
        )
        .unwrap();
        if let IpUdpFields::V6(f) = &mut ip {
            f.dst_port = peer_at.port();
        }
        let headers = Headers {
            ip,
            bth: Bth::new(Opcode::SEND_ONLY, 0x12, 5),
            ext: ExtHeaders::default(),
        };
        for data in [&[7u8; 64][..], &[9u8; 3000][..]] {
            let mut out = vec![0u8; 4096];
            let n = build(&headers, &[data], &mut out).unwrap();
            links::transmit_copy(&link, &out[..n]);
            link.flush();
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        for _ in 0..2 {
            let (n, from) = peer.recv_from(&mut buf).unwrap();
            got.push((from, buf[..n].to_vec()));
        }
        assert_ne!(
            got[0].0.port(),
            ROCEV2_UDP_PORT,
            "sent from the peer's socket"
        );
        assert_eq!(got[0].0, got[1].0, "one socket per peer");
        for ((src, payload), len) in got.iter().zip([64, 3000]) {
            assert_eq!(src.ip(), IpAddr::from(Ipv6Addr::LOCALHOST));
            let fields = IpUdpFields::between(*src, peer_at).unwrap();
            let packet = parse_udp_payload(&fields, payload).expect("the ICRC checks");
            assert_eq!(packet.payload.len(), len);
        }
    }

    /// A connection manager command records its message and wakes the
    /// engine (not just any pass: a parked engine must not leave the REQ
    /// for its idle park, up to 50 ms); the port's pump then puts it on
    /// the wire, built in the raw socket's batch.
    #[test]
    fn a_connection_managers_message_wakes_the_engine_and_leaves_with_its_pump() {
        use hwq::device::{ConnectParams, QpSetup, ReceiveSource};
        use hwq::ring::ring;
        use hwq::{Connections, Verbs};
        use hwq::{Cqe, RecvWqe, SendWqe};
        use links::Clock;
        use softrnic::device::{DeviceConfig, SoftRnic};
        use std::sync::Arc;

        use crate::busy::SharedWaker;
        use crate::clock::HostClock;
        use crate::platform::HostDma;
        use crate::waker::ThreadWaker;

        let (at, peer_at) = (loopback(4), loopback(5));
        let port = Arc::new(UdpPort::bind(at).unwrap());
        let peer = UdpPort::bind(peer_at).unwrap();
        let waker = Arc::new(ThreadWaker::default());
        // SAFETY: the test registers no memory and posts no work request
        // that names any, so the device never makes a DMA access.
        let dma = unsafe { HostDma::new() };
        let rnic = SoftRnic::new(
            DeviceConfig::new(at, 1024),
            Box::new(dma),
            Box::new(port.routes()),
            HostClock.now_us(),
            Box::new(SharedWaker::new(
                waker.clone(),
                Arc::new(crate::busy::BusyPoll::new(true)),
            )),
        )
        .unwrap();
        let (pd, _) = rnic.create_pd().unwrap();
        let (cq, _cq_consumer) = ring::<Cqe>(16).unwrap();
        let cqn = rnic.create_cq(cq).unwrap();
        let (_sq, sq) = ring::<SendWqe>(4).unwrap();
        let (_rq, rq) = ring::<RecvWqe>(4).unwrap();
        let qpn = rnic
            .create_qp(QpSetup {
                pd,
                send_cqn: cqn,
                recv_cqn: cqn,
                sq,
                rq: ReceiveSource::Queue(rq),
                context: 0,
            })
            .unwrap();
        let sent_before = port.stats.send_calls.load(Ordering::Relaxed);
        let _ = waker.take();
        rnic.cm_connect(
            qpn,
            &ConnectParams {
                local: SocketAddr::V4(SocketAddrV4::new(at, 0)),
                remote: SocketAddr::V4(SocketAddrV4::new(peer_at, 445)),
                inbound_reads: 1,
                outbound_reads: 1,
                private_data: &[],
            },
        )
        .unwrap();
        assert_eq!(
            port.stats.send_calls.load(Ordering::Relaxed),
            sent_before,
            "nothing leaves but through the runtime"
        );
        assert!(waker.take(), "the engine was asked to send it");
        assert_eq!(port.pump(&rnic, HostClock.now_us()), 1, "the REQ");
        assert!(port.stats.send_calls.load(Ordering::Relaxed) > sent_before);
        let mut got = 0;
        let mut bufs = RxBuffers::default();
        for _ in 0..50 {
            got += peer
                .receive(&mut bufs, Duration::from_millis(100), |_| {})
                .unwrap();
            if got > 0 {
                break;
            }
        }
        assert_eq!(got, 1, "the peer got the REQ");
    }

    /// Binds `[::1]`:4791, the one IPv6 loopback RoCEv2 port, waiting
    /// while another test process holds it (a hang guard, not a timing).
    pub(super) fn bind_ipv6_loopback() -> UdpPort {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            match UdpPort::bind(Ipv6Addr::LOCALHOST) {
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "[::1]:4791 stayed taken"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
                bound => return bound.expect("bind [::1]:4791"),
            }
        }
    }

    /// An IPv6 port sends the UDP payload of an IPv6 datagram to the
    /// datagram's destination and reports IPv6 sources and destinations.
    #[test]
    fn an_ipv6_port_carries_ipv6_datagrams() {
        let port = bind_ipv6_loopback();
        assert_eq!(
            port.local(),
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), ROCEV2_UDP_PORT)
        );
        let peer = UdpSocket::bind("[::1]:0").unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut d = vec![0u8; 48];
        d[0] = 0x60;
        d[24..40].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
        d[42..44].copy_from_slice(&peer.local_addr().unwrap().port().to_be_bytes());
        d.extend_from_slice(b"six");
        let link = UdpLink(std::sync::Arc::new(port));
        links::transmit_copy(&link, &d);
        link.flush();
        let mut buf = [0u8; 16];
        let (n, from) = peer.recv_from(&mut buf).unwrap();
        assert_eq!((&buf[..n], from), (&b"six"[..], link.0.local()));
        peer.send_to(b"back", link.0.local()).unwrap();
        let mut got = Vec::new();
        let mut bufs = RxBuffers::default();
        for _ in 0..600 {
            link.0
                .receive(&mut bufs, Duration::from_millis(100), |a| {
                    if let Arrival::UdpPayload { src, dst, payload } = a {
                        got.push((src, dst, payload.to_vec()));
                    }
                })
                .unwrap();
            if !got.is_empty() {
                break;
            }
        }
        assert_eq!(
            got,
            [(peer.local_addr().unwrap(), link.0.local(), b"back".to_vec())]
        );
    }

    #[test]
    fn an_owned_address_cannot_be_bound_twice() {
        let _a = UdpPort::bind(loopback(3)).unwrap();
        let e = UdpPort::bind(loopback(3)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }
}

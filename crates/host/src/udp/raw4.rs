//! IPv4 RoCEv2 through raw sockets: the engine's headers go on the wire as
//! built, and received datagrams come with the headers they arrived with.
//!
//! * Sending: an `IPPROTO_RAW` socket (which implies `IP_HDRINCL`) takes
//!   whole datagrams, gathered into one `sendmmsg` per batch. The kernel
//!   keeps the header as built (it fills the checksum, and would choose
//!   an identification of 0 itself: the engine never builds one,
//!   `softrnic::wire::ipv4_ident`), and refuses a datagram larger than the
//!   device's MTU with `EMSGSIZE`.
//! * Receiving: an `IPPROTO_UDP` raw socket bound to the adapter's address
//!   gets a copy of each UDP datagram to it, IP header included, before UDP
//!   delivery; a classic BPF filter keeps those to the adapter's address
//!   and port 4791 only, so the host's other UDP traffic costs one filter
//!   run. `recvmmsg` takes a batch at a time.
//!
//! The kernel still delivers each datagram to the UDP socket bound to
//! port 4791 (which keeps the port the adapter's and spares the peer an
//! ICMP port unreachable); a filter that passes nothing keeps that
//! socket's queue empty (the kernel counts those datagrams in the UDP
//! `InErrors` statistic).

use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use socket2::{Domain, Protocol, SockFilter, Socket, Type};

use super::failures::{Failures, SendOutcome, classify};
use super::{MAX_BATCH, MAX_SEGMENT, SOCKET_BUFFER, UdpStats};
use crate::config::ROCEV2_UDP_PORT;

/// Receive buffer asked of the kernel for the raw socket (it counts twice
/// this, for its overhead).
const RAW_RX_BUFFER: usize = 32 << 20;
/// Datagrams one `recvmmsg` takes at most in a stream.
pub(super) const RX_SLOTS: usize = 64;
/// Datagrams one receive takes while a ping-pong runs (a SEND and the ACK
/// riding behind it).
const NARROW_SLOTS: usize = 2;
/// Bytes of one receive slot: the largest RoCEv2 datagram (a 4096-byte
/// path MTU and every header) fits; a longer datagram (not RoCEv2's) comes
/// truncated and is dropped.
pub(super) const RX_SLOT_LEN: usize = MAX_SEGMENT;

// Classic BPF opcodes (linux/filter.h), spelt out: the filter is seven
// instructions.
/// `ld [k]`: A = the 32-bit word at k.
const BPF_LD_ABS: u16 = 0x20;
/// `ldxb 4*([k]&0xf)`: X = the IPv4 header's length.
const BPF_LDX_MSH: u16 = 0xb1;
/// `ldh [x+k]`: A = the 16-bit word at X + k.
const BPF_LDH_IND: u16 = 0x48;
/// `jeq #k, jt, jf`.
const BPF_JEQ_K: u16 = 0x15;
/// `ret #k`: keep k bytes (0: drop).
const BPF_RET_K: u16 = 0x06;

/// Keeps IPv4 datagrams to `local`:4791. The address check matters before
/// the socket is bound: a raw socket takes every UDP datagram of the host
/// until then, so without it another adapter's datagram (another process's
/// too) that arrived in that moment would wait in this one's queue.
fn raw_filter(local: Ipv4Addr) -> [SockFilter; 7] {
    [
        // The IPv4 destination address.
        SockFilter::new(BPF_LD_ABS, 0, 0, 16),
        SockFilter::new(BPF_JEQ_K, 0, 4, u32::from(local)),
        SockFilter::new(BPF_LDX_MSH, 0, 0, 0),
        SockFilter::new(BPF_LDH_IND, 0, 0, 2),
        SockFilter::new(BPF_JEQ_K, 0, 1, u32::from(ROCEV2_UDP_PORT)),
        SockFilter::new(BPF_RET_K, 0, 0, 0xFFFF),
        SockFilter::new(BPF_RET_K, 0, 0, 0),
    ]
}

/// Keeps nothing.
pub(super) const DROP_ALL: [SockFilter; 1] = [SockFilter::new(BPF_RET_K, 0, 0, 0)];

/// The raw sockets of one IPv4 adapter.
#[derive(Debug)]
pub(super) struct Raw4 {
    send: Socket,
    recv: Socket,
    batch: Mutex<Batch>,
    /// The batch holds something: a flush with nothing queued takes no
    /// lock.
    queued: AtomicBool,
}

/// Datagrams gathered for one `sendmmsg`.
#[derive(Debug)]
pub(super) struct Batch {
    /// `count` datagrams, each at `MAX_SEGMENT * i`.
    buf: Vec<u8>,
    /// Length and destination of each.
    meta: Vec<(usize, SocketAddrV4)>,
}

impl Raw4 {
    /// Opens the raw sockets of `local`. `PermissionDenied` without
    /// `CAP_NET_RAW`.
    pub(super) fn open(local: Ipv4Addr) -> io::Result<Self> {
        let bound = socket2::SockAddr::from(SocketAddrV4::new(local, 0));
        let send = Socket::new(
            Domain::IPV4,
            Type::RAW.nonblocking().cloexec(),
            Some(Protocol::from(libc::IPPROTO_RAW)),
        )?;
        send.bind(&bound)?;
        let _ = send.set_send_buffer_size(SOCKET_BUFFER);
        let recv = Socket::new(
            Domain::IPV4,
            Type::RAW.nonblocking().cloexec(),
            Some(Protocol::UDP),
        )?;
        // Before the bind: no datagram is queued unfiltered.
        recv.attach_filter(&raw_filter(local))?;
        recv.bind(&bound)?;
        // Without receive offload every packet is its own buffer, about
        // twice its size: room for a window of them. Past rmem_max when
        // the process may (CAP_NET_ADMIN), else as much as it allows.
        if rustix::net::sockopt::set_socket_recv_buffer_size_force(&recv, RAW_RX_BUFFER).is_err() {
            let _ = recv.set_recv_buffer_size(RAW_RX_BUFFER);
        }
        Ok(Self {
            send,
            recv,
            batch: Mutex::new(Batch {
                buf: vec![0; MAX_SEGMENT * MAX_BATCH],
                meta: Vec::with_capacity(MAX_BATCH),
            }),
            queued: AtomicBool::new(false),
        })
    }

    /// The send batch, held while datagrams are built into it.
    pub(super) fn lock(&self) -> MutexGuard<'_, Batch> {
        self.batch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues the IPv4 datagram `datagram` (to the destination its header
    /// names), sending the batch first if it is full. A datagram longer
    /// than a batch slot could never be sent: it fails at once.
    pub(super) fn queue(&self, datagram: &[u8], stats: &UdpStats, failures: &Failures) {
        if datagram.len() > MAX_SEGMENT {
            failures.datagram(datagram, stats);
            return;
        }
        let mut batch = self.lock();
        let Some(slot) = self
            .slot(&mut batch, stats, failures)
            .get_mut(..datagram.len())
        else {
            return;
        };
        slot.copy_from_slice(datagram);
        self.commit(&mut batch, datagram.len());
    }

    /// The slot the next datagram is built in (`MAX_SEGMENT` bytes),
    /// sending the batch first if it is full.
    pub(super) fn slot<'b>(
        &self,
        batch: &'b mut Batch,
        stats: &UdpStats,
        failures: &Failures,
    ) -> &'b mut [u8] {
        if batch.meta.len() == MAX_BATCH {
            self.send_batch(batch, stats, failures);
        }
        let at = MAX_SEGMENT * batch.meta.len();
        batch.buf.get_mut(at..at + MAX_SEGMENT).unwrap_or_default()
    }

    /// Queues the datagram built in the slot last lent ([`Raw4::slot`]),
    /// its first `len` bytes, to the destination its header names; one
    /// that names none, or no IPv4 one, is dropped.
    pub(super) fn commit(&self, batch: &mut Batch, len: usize) {
        let at = MAX_SEGMENT * batch.meta.len();
        if len > MAX_SEGMENT || batch.meta.len() == MAX_BATCH {
            return;
        }
        let dest = batch
            .buf
            .get(at..at + len)
            .and_then(softrnic::wire::ip_udp::datagram_destination);
        let Some(std::net::IpAddr::V4(dest)) = dest else {
            return;
        };
        batch.meta.push((len, SocketAddrV4::new(dest, 0)));
        self.queued.store(true, Ordering::Release);
    }

    /// Sends everything queued.
    pub(super) fn flush(&self, stats: &UdpStats, failures: &Failures) {
        if !self.queued.load(Ordering::Acquire) {
            return;
        }
        self.send_batch(&mut self.lock(), stats, failures);
    }

    fn send_batch(&self, batch: &mut Batch, stats: &UdpStats, failures: &Failures) {
        let mut next = 0;
        let mut waits = 0;
        while next < batch.meta.len() {
            let sent = send_mmsg(&self.send, &batch.buf, &batch.meta[next..], next);
            stats.send_calls.fetch_add(1, Ordering::Relaxed);
            match sent {
                Ok(n) => {
                    stats.sent.fetch_add(n as u64, Ordering::Relaxed);
                    next += n.max(1).min(batch.meta.len() - next);
                    if n == 0 {
                        // Nothing taken and no error: count the first as
                        // dropped rather than spin.
                        stats.send_drops.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(e) => match classify(&e) {
                    SendOutcome::Full if waits < 100 => {
                        waits += 1;
                        // The socket buffer is full: wait a little for room.
                        let mut fds = [PollFd::new(&self.send, PollFlags::OUT)];
                        let timeout = Timespec {
                            tv_sec: 0,
                            tv_nsec: 1_000_000,
                        };
                        let _ = poll(&mut fds, Some(&timeout));
                    }
                    SendOutcome::Full | SendOutcome::Lost => {
                        // Unreachable for now, or full for too long: the RC
                        // transport retransmits, as after a wire loss.
                        stats.send_drops.fetch_add(1, Ordering::Relaxed);
                        next += 1;
                    }
                    SendOutcome::Permanent => {
                        let at = MAX_SEGMENT * next;
                        let len = batch.meta.get(next).map_or(0, |m| m.0);
                        if let Some(datagram) = batch.buf.get(at..at + len) {
                            failures.datagram(datagram, stats);
                        }
                        next += 1;
                    }
                },
            }
        }
        batch.meta.clear();
        self.queued.store(false, Ordering::Release);
    }

    /// Takes what datagrams are queued (one `recvmmsg`, never waiting: of
    /// [`RX_SLOTS`] slots in a stream, else of two, a ping-pong's SEND and
    /// the ACK riding behind it) and hands each whole datagram (IP header
    /// through ICRC) to `deliver`. Returns how many slots were filled and
    /// whether that was all it offered (more may be waiting).
    pub(super) fn try_receive(
        &self,
        slots: &mut [u8],
        stream: bool,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> io::Result<(usize, bool)> {
        let width = if stream { RX_SLOTS } else { NARROW_SLOTS };
        let mut lens = [0usize; RX_SLOTS];
        let n = recv_mmsg(&self.recv, slots, &mut lens[..width])?;
        let mut count = 0;
        for (i, &len) in lens.iter().enumerate().take(n) {
            if len == 0 {
                continue;
            }
            if let Some(datagram) = slots.get(RX_SLOT_LEN * i..RX_SLOT_LEN * i + len) {
                deliver(datagram);
                count += 1;
            }
        }
        Ok((count, n == width))
    }
}

impl AsFd for Raw4 {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.recv.as_fd()
    }
}

/// Sends `meta.len()` datagrams (the `i`th of `meta` at slot `first + i`
/// of `buf`) in one `sendmmsg`; how many the kernel took. An error is the
/// first datagram's (none was taken).
fn send_mmsg(
    socket: &Socket,
    buf: &[u8],
    meta: &[(usize, SocketAddrV4)],
    first: usize,
) -> io::Result<usize> {
    let count = meta.len().min(MAX_BATCH);
    let mut names = [MaybeUninit::<libc::sockaddr_in>::zeroed(); MAX_BATCH];
    let mut iovs = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_BATCH];
    // SAFETY: an all-zero mmsghdr is valid (null pointers, zero lengths);
    // each one used is filled below.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for (i, &(len, dest)) in meta.iter().take(count).enumerate() {
        let at = MAX_SEGMENT * (first + i);
        let Some(datagram) = buf.get(at..at + len) else {
            return Err(io::ErrorKind::InvalidInput.into());
        };
        names[i].write(libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(dest.ip().octets()),
            },
            sin_zero: [0; 8],
        });
        iovs[i] = libc::iovec {
            iov_base: datagram.as_ptr().cast_mut().cast(),
            iov_len: datagram.len(),
        };
        msgs[i].msg_hdr.msg_name = names[i].as_mut_ptr().cast();
        msgs[i].msg_hdr.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        msgs[i].msg_hdr.msg_iov = &raw mut iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `socket` owns an open descriptor for the whole call. The
    // first `count` entries of `msgs` each name one initialised
    // sockaddr_in of `names` (with its length) and one iovec of `iovs`
    // pointing into `buf`, borrowed for the call, with its length; no
    // control data. The kernel only reads through them (sendmmsg writes
    // each entry's `msg_len`, inside `msgs`) and keeps nothing after
    // return.
    let sent = unsafe {
        libc::sendmmsg(
            socket.as_raw_fd(),
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            0,
        )
    };
    usize::try_from(sent).map_err(|_| io::Error::last_os_error())
}

/// Receives up to `lens.len()` datagrams into the `RX_SLOT_LEN`-byte
/// slots of `slots` in one `recvmmsg`, never waiting; each one's length
/// goes to `lens`. A datagram longer than its slot (not a RoCEv2 one) is
/// reported with length 0, and dropped.
fn recv_mmsg(socket: &Socket, slots: &mut [u8], lens: &mut [usize]) -> io::Result<usize> {
    let count = lens.len().min(RX_SLOTS).min(slots.len() / RX_SLOT_LEN);
    let mut iovs = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; RX_SLOTS];
    // SAFETY: an all-zero mmsghdr is valid (null pointers, zero lengths);
    // each one used is filled below.
    let mut msgs: [libc::mmsghdr; RX_SLOTS] = unsafe { std::mem::zeroed() };
    for (i, slot) in slots.chunks_exact_mut(RX_SLOT_LEN).take(count).enumerate() {
        iovs[i] = libc::iovec {
            iov_base: slot.as_mut_ptr().cast(),
            iov_len: slot.len(),
        };
        msgs[i].msg_hdr.msg_iov = &raw mut iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `socket` owns an open descriptor for the whole call. The
    // first `count` entries of `msgs` each point to one iovec of `iovs`
    // describing a distinct `RX_SLOT_LEN`-byte slot of `slots`, borrowed
    // mutably for the call; no name or control buffer. The kernel writes
    // only into those slots and each entry's `msg_len`/`msg_flags`, and
    // keeps nothing after return; a null timeout with MSG_DONTWAIT never
    // waits.
    let got = unsafe {
        libc::recvmmsg(
            socket.as_raw_fd(),
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    let n = usize::try_from(got).map_err(|_| io::Error::last_os_error())?;
    for (len, msg) in lens.iter_mut().zip(msgs.iter()).take(n) {
        let truncated = msg.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        *len = if truncated { 0 } else { msg.msg_len as usize };
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::{Duration, Instant};

    use crate::test_loopback::loopback;

    /// An unbound raw UDP socket is offered every UDP datagram of the host,
    /// as a `Raw4`'s receive socket is until its bind: the filter keeps
    /// only those to its address and port 4791.
    #[test]
    fn the_receive_filter_keeps_only_datagrams_to_its_address_and_port() {
        let (mine, other) = (loopback(40), loopback(41));
        let recv = Socket::new(Domain::IPV4, Type::RAW.nonblocking(), Some(Protocol::UDP))
            .expect("a raw socket (the test needs CAP_NET_RAW)");
        recv.attach_filter(&raw_filter(mine)).unwrap();
        let sender = UdpSocket::bind(SocketAddrV4::new(other, 0)).unwrap();
        // The two it must not keep first, so they are in its queue (if it
        // kept them) by the time the one it keeps arrives.
        let wanted = SocketAddrV4::new(mine, ROCEV2_UDP_PORT);
        for to in [
            SocketAddrV4::new(other, ROCEV2_UDP_PORT),
            SocketAddrV4::new(mine, ROCEV2_UDP_PORT + 1),
            wanted,
        ] {
            sender.send_to(b"x", to).unwrap();
        }
        let mut slots = vec![0u8; RX_SLOT_LEN * RX_SLOTS];
        let mut lens = [0usize; RX_SLOTS];
        let mut kept = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while kept.is_empty() {
            assert!(
                Instant::now() < deadline,
                "the datagram to {wanted} never came"
            );
            let n = match recv_mmsg(&recv, &mut slots, &mut lens) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => panic!("recvmmsg: {e}"),
            };
            for (i, &len) in lens.iter().enumerate().take(n) {
                let d = &slots[RX_SLOT_LEN * i..RX_SLOT_LEN * i + len];
                let udp = usize::from(d[0] & 0xF) * 4;
                let dst = Ipv4Addr::new(d[16], d[17], d[18], d[19]);
                kept.push(SocketAddrV4::new(
                    dst,
                    u16::from_be_bytes([d[udp + 2], d[udp + 3]]),
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(kept, [wanted]);
    }
}

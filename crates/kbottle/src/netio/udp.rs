//! The Linux UDP socket behind a bound WSK datagram socket, and how Linux
//! errors read as NTSTATUS.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use ndkpi::{
    NTSTATUS, STATUS_ACCESS_DENIED, STATUS_ADDRESS_ALREADY_EXISTS, STATUS_CONNECTION_REFUSED,
    STATUS_HOST_UNREACHABLE, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_BUFFER_SIZE,
    STATUS_INVALID_PARAMETER, STATUS_NETWORK_UNREACHABLE, STATUS_UNSUCCESSFUL,
};

/// `STATUS_INVALID_ADDRESS_COMPONENT` (Winsock's `WSAEADDRNOTAVAIL`): the
/// address is not one of this machine's.
pub const STATUS_INVALID_ADDRESS_COMPONENT: NTSTATUS = 0xC000_0207_u32 as i32;
/// Socket buffer sizes asked of Linux (a 1 MiB RDMA transfer is 256
/// packets in one burst).
const SOCKET_BUFFER: libc::c_int = 8 << 20;
/// Datagrams one `recvmmsg` takes at most.
pub const MAX_BATCH: usize = 16;

/// The NTSTATUS Winsock Kernel reports for a socket error.
pub fn status_of(error: &io::Error) -> NTSTATUS {
    match error.raw_os_error() {
        Some(libc::EADDRINUSE) => STATUS_ADDRESS_ALREADY_EXISTS,
        Some(libc::EADDRNOTAVAIL) => STATUS_INVALID_ADDRESS_COMPONENT,
        Some(libc::EACCES | libc::EPERM) => STATUS_ACCESS_DENIED,
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
            STATUS_INSUFFICIENT_RESOURCES
        }
        Some(libc::ENETUNREACH) => STATUS_NETWORK_UNREACHABLE,
        Some(libc::EHOSTUNREACH) => STATUS_HOST_UNREACHABLE,
        Some(libc::ECONNREFUSED) => STATUS_CONNECTION_REFUSED,
        Some(libc::EMSGSIZE) => STATUS_INVALID_BUFFER_SIZE,
        Some(libc::EINVAL) => STATUS_INVALID_PARAMETER,
        _ => STATUS_UNSUCCESSFUL,
    }
}

/// A bound Linux UDP socket.
#[derive(Debug)]
pub struct Udp {
    socket: UdpSocket,
    local: SocketAddrV4,
}

/// One datagram [`Udp::receive`] took: its length and sender.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    pub len: usize,
    pub from: SocketAddrV4,
}

fn set_buffer(socket: &UdpSocket, option: libc::c_int) {
    let size = SOCKET_BUFFER;
    // SAFETY: a valid socket descriptor and a c_int option value of the
    // size passed. A refusal only leaves the default size.
    let _ = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&raw const size).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

impl Udp {
    /// A UDP socket bound to `local`.
    pub fn bind(local: SocketAddrV4) -> Result<Self, NTSTATUS> {
        let socket = UdpSocket::bind(local).map_err(|e| status_of(&e))?;
        set_buffer(&socket, libc::SO_RCVBUF);
        set_buffer(&socket, libc::SO_SNDBUF);
        let local = match socket.local_addr() {
            Ok(SocketAddr::V4(a)) => a,
            _ => local,
        };
        Ok(Self { socket, local })
    }

    /// The bound address (port chosen by Linux when bound to port 0).
    pub fn local(&self) -> SocketAddrV4 {
        self.local
    }

    /// Sends one datagram; the bytes sent.
    pub fn send_to(&self, bytes: &[u8], to: SocketAddrV4) -> Result<usize, NTSTATUS> {
        self.socket.send_to(bytes, to).map_err(|e| status_of(&e))
    }

    /// Waits up to `timeout` for datagrams and takes up to `bufs.len()`
    /// (at most [`MAX_BATCH`]) of them, each into its buffer; a datagram
    /// longer than its buffer is cut. The arrivals, in order.
    pub fn receive(&self, bufs: &mut [&mut [u8]], timeout: Duration) -> Vec<Arrival> {
        let fd = self.socket.as_raw_fd();
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&raw mut poll, 1, ms) };
        if ready <= 0 {
            return Vec::new();
        }
        let n = bufs.len().min(MAX_BATCH);
        let mut names = [libc::sockaddr_in {
            sin_family: 0,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: 0 },
            sin_zero: [0; 8],
        }; MAX_BATCH];
        let mut iovs: Vec<libc::iovec> = bufs
            .iter_mut()
            .take(n)
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .zip(names.iter_mut())
            .map(|(iov, name)| libc::mmsghdr {
                msg_hdr: libc::msghdr {
                    msg_name: std::ptr::from_mut(name).cast(),
                    msg_namelen: size_of::<libc::sockaddr_in>() as libc::socklen_t,
                    msg_iov: std::ptr::from_mut(iov),
                    msg_iovlen: 1,
                    msg_control: std::ptr::null_mut(),
                    msg_controllen: 0,
                    msg_flags: 0,
                },
                msg_len: 0,
            })
            .collect();
        // SAFETY: `n` message headers, each naming one live iovec over a
        // caller buffer and one sockaddr_in of this frame; no timeout.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if got <= 0 {
            return Vec::new();
        }
        msgs.iter()
            .zip(names.iter())
            .take(got as usize)
            .map(|(m, name)| Arrival {
                len: m.msg_len as usize,
                from: SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(name.sin_addr.s_addr)),
                    u16::from_be(name.sin_port),
                ),
            })
            .collect()
    }
}

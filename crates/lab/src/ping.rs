//! ICMP echo from the namespace, without a ping binary: an ICMP datagram
//! socket (the kernel fills in the identifier and checksum; the lab's
//! namespace allows root to open one, see `net::build_bridge`).

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Sends one echo request to `addr` from the calling thread's namespace and
/// waits up to `timeout` for the reply; the round-trip time.
pub fn ping(addr: IpAddr, timeout: Duration) -> Result<Duration> {
    let (domain, protocol, request, reply) = match addr {
        IpAddr::V4(_) => (libc::AF_INET, libc::IPPROTO_ICMP, 8u8, 0u8),
        IpAddr::V6(_) => (libc::AF_INET6, libc::IPPROTO_ICMPV6, 128, 129),
    };
    // SAFETY: socket takes plain integers; the result is checked.
    let raw = unsafe { libc::socket(domain, libc::SOCK_DGRAM, protocol) };
    if raw < 0 {
        return Err(Error::io(
            "cannot open an ICMP datagram socket",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: `raw` is a descriptor we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let socket = std::net::UdpSocket::from(fd);
    socket
        .set_read_timeout(Some(timeout))
        .map_err(|e| Error::io("cannot set the ping timeout", e))?;
    let mut packet = vec![request, 0, 0, 0, 0, 0, 0, 1];
    packet.extend_from_slice(b"rsndk-lab ping");
    let started = Instant::now();
    socket
        .send_to(&packet, SocketAddr::new(addr, 0))
        .map_err(|e| Error::io(format!("cannot send an echo request to {addr}"), e))?;
    let mut buffer = [0u8; 1500];
    loop {
        let (length, from) = socket.recv_from(&mut buffer).map_err(|e| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                Error::Timeout {
                    what: format!("an echo reply from {addr}"),
                    after: timeout,
                }
            } else {
                Error::io(format!("no echo reply from {addr}"), e)
            }
        })?;
        if from.ip() == addr
            && length >= 8
            && buffer[0] == reply
            && buffer[8..length] == packet[8..]
        {
            return Ok(started.elapsed());
        }
    }
}

//! A network namespace of a test's own, for tests that put the kernel
//! bottle's segments on a real Linux Ethernet (taps, a bridge) without
//! touching the machine's network.
//!
//! The namespace is anonymous: a thread `unshare(2)`s into a new one and
//! its descriptor is kept in [`Netns`]; nothing names it under
//! `/run/netns`. The kernel removes it when the last reference goes (the
//! descriptor, and every tap or socket opened inside it), so it is gone
//! on every exit path of the test process, a panic, a bugcheck's exit or
//! a kill included; no cleanup can be missed.
//!
//! What runs inside: closures on a thread that joined it
//! ([`Netns::run_inside`]), programs ([`Netns::command`], [`Netns::ip`]),
//! taps opened inside it ([`Netns::open_tap`]), ICMP echo from its Linux
//! stack ([`Netns::ping`], what `ping(8)` sends, through a raw socket)
//! and UDP sockets of its stack ([`Netns::udp_socket`]).
//!
//! It needs root (CAP_SYS_ADMIN for the namespace, CAP_NET_ADMIN and
//! CAP_NET_RAW inside it), `/dev/net/tun` and `ip` (iproute2);
//! [`Netns::new`] fails saying which is missing.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// Bytes of an ICMP echo request's data (as `ping(8)` sends by default).
const ECHO_DATA: usize = 56;

/// `struct ifreq` as `TUNSETIFF` reads it: a name and the flags.
#[repr(C)]
struct IfReqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    /// The rest of the union (`struct ifreq` is 40 bytes on x86-64).
    _rest: [u8; 22],
}

/// What an echo exchange came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PingReport {
    /// Echo requests sent.
    pub sent: u16,
    /// Of those, answered by the destination in time.
    pub answered: u16,
    /// Round-trip time of each answer.
    pub rtts: Vec<Duration>,
}

/// A network namespace of the test's own (see the module doc).
#[derive(Debug)]
pub struct Netns {
    fd: OwnedFd,
}

/// What a test that builds a namespace lacks, if anything.
fn missing_requirement() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Some(format!(
            "the test needs root (it creates a network namespace and taps): euid is {euid}"
        ));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing (the tun module: `modprobe tun`)".to_owned());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!("`ip -V` failed: {}", out.status)),
        Err(e) => Some(format!(
            "`ip` (iproute2) cannot be run: {e} (apt-get install iproute2)"
        )),
    }
}

fn os_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Joins the calling thread to the namespace `fd`.
fn enter(fd: RawFd) -> io::Result<()> {
    // SAFETY: setns on a namespace descriptor; it changes only this
    // thread's network namespace.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(os_error("setns"));
    }
    Ok(())
}

impl Netns {
    /// A new namespace with its loopback up.
    ///
    /// # Panics
    /// When the test cannot build one: not root, no `/dev/net/tun`, no
    /// `ip`, or the kernel refuses (the message says which).
    pub fn new() -> Self {
        if let Some(missing) = missing_requirement() {
            panic!("cannot build the test's network namespace: {missing}");
        }
        let created = std::thread::spawn(|| -> io::Result<OwnedFd> {
            // SAFETY: unshare of the network namespace: only this thread
            // moves into a new one, which the descriptor below keeps.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(os_error("unshare(CLONE_NEWNET)"));
            }
            let path = c"/proc/thread-self/ns/net";
            // SAFETY: a NUL-terminated path; the new descriptor is ours.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(os_error("open /proc/thread-self/ns/net"));
            }
            // SAFETY: a descriptor just opened, owned by nothing else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        });
        let fd = created
            .join()
            .expect("the namespace thread")
            .unwrap_or_else(|e| panic!("cannot build the test's network namespace: {e}"));
        let ns = Self { fd };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// Runs `f` on a thread inside the namespace: sockets and taps it
    /// opens belong to the namespace and stay there when used from any
    /// other thread.
    pub fn run_inside<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let fd = self.fd.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(move || {
                enter(fd).unwrap_or_else(|e| panic!("joining the test's namespace: {e}"));
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// `program` as a command that runs inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        let fd = self.fd.as_raw_fd();
        // SAFETY: the closure runs in the forked child before exec and
        // only calls setns, which is async-signal-safe; `fd` is open in
        // the child (inherited; closed only by the exec).
        unsafe {
            command.pre_exec(move || enter(fd));
        }
        command
    }

    /// `ip ARGS` inside the namespace: its standard output.
    ///
    /// # Panics
    /// When it fails (with its standard error).
    pub fn ip(&self, args: &[&str]) -> String {
        let out = self
            .command("ip")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running ip {args:?}: {e}"));
        assert!(
            out.status.success(),
            "ip {} in the test's namespace: {}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A new tap device `name` inside the namespace (`IFF_TAP |
    /// IFF_NO_PI`, down, in no bridge): its descriptor, which owns the
    /// device (it goes when the descriptor closes).
    pub fn open_tap(&self, name: &str) -> io::Result<OwnedFd> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= 16 || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not an interface name"),
            ));
        }
        self.run_inside(|| {
            let path = c"/dev/net/tun";
            // SAFETY: a NUL-terminated path; the new descriptor is ours.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(os_error("open /dev/net/tun"));
            }
            // SAFETY: a descriptor just opened, owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let mut request = IfReqFlags {
                name: [0; 16],
                flags: (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short,
                _rest: [0; 22],
            };
            request.name[..bytes.len()].copy_from_slice(bytes);
            // SAFETY: TUNSETIFF on our tun descriptor with an ifreq-sized
            // request the call reads and writes.
            if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &raw mut request) } != 0 {
                return Err(os_error(&format!("TUNSETIFF {name}")));
            }
            Ok(fd)
        })
    }

    /// A UDP socket of the namespace's stack bound to `at`.
    pub fn udp_socket(&self, at: SocketAddr) -> io::Result<UdpSocket> {
        self.run_inside(|| UdpSocket::bind(at))
    }

    /// Sends `count` ICMP echo requests to `dst` from the namespace's
    /// stack, one after the other, each given `wait` for its answer:
    /// what `ping -c COUNT -W WAIT DST` does, through a raw socket.
    pub fn ping(&self, dst: IpAddr, count: u16, wait: Duration) -> io::Result<PingReport> {
        let socket = self.run_inside(|| raw_icmp(dst))?;
        let id = (std::process::id() as u16) ^ next_ping_id();
        let mut report = PingReport::default();
        for seq in 1..=count {
            let request = echo_request(dst, id, seq);
            send_to(&socket, &request, dst)?;
            report.sent += 1;
            let sent = Instant::now();
            if wait_echo_reply(&socket, dst, id, seq, sent + wait)? {
                report.answered += 1;
                report.rtts.push(sent.elapsed());
            }
        }
        Ok(report)
    }
}

impl Default for Netns {
    fn default() -> Self {
        Self::new()
    }
}

/// A different echo identifier for each exchange of this process.
fn next_ping_id() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0x5200);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A raw ICMP (or ICMPv6) socket of the calling thread's namespace.
fn raw_icmp(dst: IpAddr) -> io::Result<OwnedFd> {
    let (family, protocol) = match dst {
        IpAddr::V4(_) => (libc::AF_INET, libc::IPPROTO_ICMP),
        IpAddr::V6(_) => (libc::AF_INET6, libc::IPPROTO_ICMPV6),
    };
    // SAFETY: creates a new socket; no memory is passed.
    let fd = unsafe { libc::socket(family, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) };
    if fd < 0 {
        return Err(os_error("raw ICMP socket (needs CAP_NET_RAW)"));
    }
    // SAFETY: a socket just created, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The Internet checksum of `data`.
fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request to `dst` (ICMP type 8, or ICMPv6 128 whose checksum
/// the kernel fills in).
fn echo_request(dst: IpAddr, id: u16, seq: u16) -> Vec<u8> {
    let kind = if dst.is_ipv4() { 8 } else { 128 };
    let mut m = vec![kind, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend((0..ECHO_DATA).map(|i| i as u8));
    if dst.is_ipv4() {
        let sum = internet_checksum(&m);
        m[2..4].copy_from_slice(&sum.to_be_bytes());
    }
    m
}

/// A socket address for `libc::sendto`, and its length.
fn sockaddr_of(ip: IpAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match ip {
        IpAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: 0,
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: a sockaddr_in fits in a sockaddr_storage, which is
            // aligned for any socket address.
            unsafe {
                std::ptr::from_mut(&mut storage)
                    .cast::<libc::sockaddr_in>()
                    .write(sin);
            }
            size_of::<libc::sockaddr_in>()
        }
        IpAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: 0,
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.octets(),
                },
                sin6_scope_id: 0,
            };
            // SAFETY: as above, for a sockaddr_in6.
            unsafe {
                std::ptr::from_mut(&mut storage)
                    .cast::<libc::sockaddr_in6>()
                    .write(sin6);
            }
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

fn send_to(socket: &OwnedFd, message: &[u8], dst: IpAddr) -> io::Result<()> {
    let (addr, len) = sockaddr_of(dst);
    // SAFETY: our socket, `message.len()` readable bytes and a socket
    // address of `len` bytes.
    let n = unsafe {
        libc::sendto(
            socket.as_raw_fd(),
            message.as_ptr().cast(),
            message.len(),
            0,
            std::ptr::from_ref(&addr).cast(),
            len,
        )
    };
    if usize::try_from(n) != Ok(message.len()) {
        return Err(os_error(&format!("echo request to {dst}")));
    }
    Ok(())
}

/// Waits until `deadline` for the echo reply `id`/`seq` from `dst`;
/// whether it came. Other ICMP messages the raw socket sees are skipped.
fn wait_echo_reply(
    socket: &OwnedFd,
    dst: IpAddr,
    id: u16,
    seq: u16,
    deadline: Instant,
) -> io::Result<bool> {
    let mut buf = [0u8; 2048];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        let mut p = libc::pollfd {
            fd: socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        // SAFETY: one pollfd record of ours.
        if unsafe { libc::poll(&raw mut p, 1, ms) } <= 0 {
            continue;
        }
        // SAFETY: all-zero bytes are a valid sockaddr_storage.
        let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut from_len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: our socket, a buffer of `buf.len()` writable bytes and
        // room for any socket address.
        let n = unsafe {
            libc::recvfrom(
                socket.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
                std::ptr::from_mut(&mut from).cast(),
                &raw mut from_len,
            )
        };
        let Ok(n) = usize::try_from(n) else {
            continue;
        };
        let got = &buf[..n];
        // A raw IPv4 socket hands over the IP header too; ICMPv6 only
        // the message, its source in the address.
        let (source, message, reply) = match dst {
            IpAddr::V4(_) => {
                let ihl = usize::from(got.first().map_or(0, |b| b & 0xF)) * 4;
                let Some(src) = got.get(12..16) else {
                    continue;
                };
                let src: [u8; 4] = src.try_into().unwrap_or_default();
                (IpAddr::from(src), got.get(ihl..).unwrap_or_default(), 0u8)
            }
            IpAddr::V6(_) => {
                // SAFETY: the kernel wrote a sockaddr_in6 for an ICMPv6
                // socket; sockaddr_storage is aligned for it.
                let sin6 = unsafe {
                    std::ptr::from_ref(&from)
                        .cast::<libc::sockaddr_in6>()
                        .read()
                };
                (IpAddr::from(sin6.sin6_addr.s6_addr), got, 129u8)
            }
        };
        if source == dst
            && message.len() >= 8
            && message[0] == reply
            && message[4..6] == id.to_be_bytes()
            && message[6..8] == seq.to_be_bytes()
        {
            return Ok(true);
        }
    }
}

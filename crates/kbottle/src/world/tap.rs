//! A bottle segment joined to a real Ethernet: a Linux tap device
//! (`IFF_TAP | IFF_NO_PI`, one whole frame without FCS per `read` and per
//! `write`) becomes an uplink port of a [`Segment`], so the bottled
//! drivers' frames meet a real Linux stack or bridge.
//!
//! - Out: every frame the learning switch forwards to the port (group
//!   frames, unknown unicast, unicast to an address learnt behind the
//!   tap) is written into the tap by the sending thread; a frame the
//!   tap refuses (its interface down) is counted, not retried.
//! - In: a reader thread waits in `poll(2)` on the tap and on an eventfd
//!   (no timeout, no busy loop) and offers each frame it reads to the
//!   segment from the port, whose switch learns the frame's source
//!   there. A frame longer than the segment's MTU allows (`MTU + 14`,
//!   `MTU + 18` with an 802.1Q tag) or shorter than an Ethernet header is
//!   dropped and counted before the segment sees it.
//! - Dropping the [`TapPort`] detaches the port, stops the reader through
//!   the eventfd, joins it, and closes the tap's descriptor before it
//!   returns. The reader also ends by itself when the tap goes away (its
//!   device deleted, its namespace gone: `POLLERR`/`POLLHUP`, or an end
//!   of file from a descriptor that is not a tap).
//!
//! Without `IFF_VNET_HDR` and `TUNSETOFFLOAD` (none is asked for), Linux
//! hands the tap complete frames: checksums filled in, nothing
//! segmentation-offloaded. A frame written into the tap is processed by
//! Linux (a bridge's forwarding, its stack's answer) inside the writing
//! thread's `write(2)`, which the bottle counts as that thread's time.
//! Any descriptor that carries one frame per read and write serves (a
//! `SOCK_SEQPACKET` socket pair in this module's tests).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::thread::JoinHandle;

use crate::world::segment::{ETH_HEADER, PortId, Segment, SegmentId, Station};

/// Bytes one read takes at most: more than any tap frame (a 65,535-byte
/// MTU plus header and tag), so a frame is never cut short unseen.
const READ_BUFFER: usize = 1 << 17;

/// What a [`TapPort`] has done since it joined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapStats {
    /// Frames read from the tap.
    pub received: u64,
    /// Of those, offered to the segment.
    pub forwarded: u64,
    /// Of those, longer than the segment's MTU allows: dropped.
    pub oversize: u64,
    /// Of those, shorter than an Ethernet header: dropped.
    pub runts: u64,
    /// Frames the segment forwarded to the port and the tap took.
    pub sent: u64,
    /// Frames the segment forwarded to the port and the tap refused
    /// (interface down, queue full, descriptor gone).
    pub send_failures: u64,
    /// Reads that failed with an error other than "try again".
    pub read_errors: u64,
    /// The tap went away and the reader ended by itself.
    pub tap_gone: bool,
}

#[derive(Debug, Default)]
struct Counters {
    received: AtomicU64,
    forwarded: AtomicU64,
    oversize: AtomicU64,
    runts: AtomicU64,
    sent: AtomicU64,
    send_failures: AtomicU64,
    read_errors: AtomicU64,
    tap_gone: AtomicBool,
}

impl Counters {
    fn snapshot(&self) -> TapStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        TapStats {
            received: get(&self.received),
            forwarded: get(&self.forwarded),
            oversize: get(&self.oversize),
            runts: get(&self.runts),
            sent: get(&self.sent),
            send_failures: get(&self.send_failures),
            read_errors: get(&self.read_errors),
            tap_gone: self.tap_gone.load(Ordering::Relaxed),
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// The port's station: writes what the switch forwards into the tap.
#[derive(Debug)]
struct TapStation {
    /// The tap; taken (closed) when the port is dropped.
    fd: RwLock<Option<OwnedFd>>,
    counters: Arc<Counters>,
}

impl Station for TapStation {
    fn deliver(&self, frame: Arc<[u8]>) {
        let fd = self.fd.read().unwrap_or_else(PoisonError::into_inner);
        let Some(fd) = fd.as_ref() else {
            return bump(&self.counters.send_failures);
        };
        // SAFETY: a live descriptor (held by the read guard) and
        // `frame.len()` readable bytes.
        let n = unsafe { libc::write(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if usize::try_from(n) == Ok(frame.len()) {
            bump(&self.counters.sent);
        } else {
            bump(&self.counters.send_failures);
        }
    }
}

/// A segment's port on a tap: frames cross both ways while it lives.
#[derive(Debug)]
pub struct TapPort {
    segment: Arc<Segment>,
    port: PortId,
    station: Arc<TapStation>,
    /// Wakes the reader to end it.
    stop: OwnedFd,
    reader: Option<JoinHandle<()>>,
}

impl TapPort {
    /// The port on the segment.
    pub fn port(&self) -> PortId {
        self.port
    }

    /// The segment it joins.
    pub fn segment(&self) -> SegmentId {
        self.segment.id()
    }

    /// What it has done.
    pub fn stats(&self) -> TapStats {
        self.station.counters.snapshot()
    }
}

impl Drop for TapPort {
    fn drop(&mut self) {
        self.segment.detach(self.port);
        let one = 1u64.to_ne_bytes();
        // SAFETY: our eventfd and 8 readable bytes (an eventfd write
        // takes exactly a u64).
        let _ = unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        // The reader is gone: nothing reads the tap any more; closing
        // waits for a write in progress (the read guard).
        drop(
            self.station
                .fd
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL on a descriptor the caller owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL with the flags read above plus O_NONBLOCK.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: creates a new descriptor; no memory is passed.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just created, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Segment {
    /// Joins this segment to the tap `fd` (opened `IFF_TAP | IFF_NO_PI`,
    /// or any descriptor with one frame per read and write), as an
    /// uplink port: see [`crate::world::tap`]. The descriptor is made
    /// non-blocking and is the port's until it is dropped.
    pub fn join_tap(self: &Arc<Self>, fd: OwnedFd) -> io::Result<TapPort> {
        set_nonblocking(fd.as_raw_fd())?;
        let stop = eventfd()?;
        let counters = Arc::new(Counters::default());
        let tap = fd.as_raw_fd();
        let station = Arc::new(TapStation {
            fd: RwLock::new(Some(fd)),
            counters: Arc::clone(&counters),
        });
        let port = self.attach_uplink(station.clone());
        let reader = Reader {
            segment: Arc::clone(self),
            port,
            tap,
            stop: stop.as_raw_fd(),
            counters,
        };
        let thread = std::thread::Builder::new()
            .name(format!("tap-{}-{}", self.id().0, port.0))
            .spawn(move || reader.run());
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                self.detach(port);
                return Err(e);
            }
        };
        Ok(TapPort {
            segment: Arc::clone(self),
            port,
            station,
            stop,
            reader: Some(thread),
        })
    }
}

/// The reader thread's view. Its descriptors stay open while it runs:
/// [`TapPort`]'s drop joins it before closing either.
struct Reader {
    segment: Arc<Segment>,
    port: PortId,
    tap: RawFd,
    stop: RawFd,
    counters: Arc<Counters>,
}

/// What waiting on the tap came to.
enum Wake {
    Frames,
    Stop,
    Gone,
}

impl Reader {
    fn run(self) {
        let mut buf = vec![0u8; READ_BUFFER];
        loop {
            match self.wait() {
                Wake::Stop => return,
                Wake::Gone => break,
                Wake::Frames => {
                    if !self.drain(&mut buf) {
                        break;
                    }
                }
            }
        }
        self.counters.tap_gone.store(true, Ordering::Relaxed);
    }

    /// Blocks until the tap has a frame, the port is dropped, or the tap
    /// went away.
    fn wait(&self) -> Wake {
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: self.tap,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.stop,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two pollfd records of ours, both descriptors open.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                bump(&self.counters.read_errors);
                return Wake::Gone;
            }
            if fds[1].revents != 0 {
                return Wake::Stop;
            }
            let ready = fds[0].revents;
            if ready & libc::POLLIN != 0 {
                return Wake::Frames;
            }
            if ready & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                return Wake::Gone;
            }
        }
    }

    /// Reads and forwards every frame waiting; false once the tap is
    /// gone.
    fn drain(&self, buf: &mut [u8]) -> bool {
        loop {
            // SAFETY: our open tap and a buffer of `buf.len()` writable
            // bytes.
            let n = unsafe { libc::read(self.tap, buf.as_mut_ptr().cast(), buf.len()) };
            match usize::try_from(n) {
                Ok(0) => return false,
                Ok(len) => self.forward(&buf[..len]),
                Err(_) => match io::Error::last_os_error().kind() {
                    io::ErrorKind::WouldBlock => return true,
                    io::ErrorKind::Interrupted => {}
                    // A tap whose device is gone answers EBADFD; any
                    // other failure would repeat at once: end either way.
                    _ => {
                        bump(&self.counters.read_errors);
                        return false;
                    }
                },
            }
        }
    }

    fn forward(&self, frame: &[u8]) {
        let c = &self.counters;
        bump(&c.received);
        if frame.len() < ETH_HEADER {
            return bump(&c.runts);
        }
        if frame.len() > self.segment.max_frame(frame) {
            return bump(&c.oversize);
        }
        bump(&c.forwarded);
        self.segment.transmit(self.port, frame);
    }
}

#[cfg(test)]
mod tests;

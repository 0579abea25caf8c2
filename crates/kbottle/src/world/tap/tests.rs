//! The tap port over a `SOCK_SEQPACKET` socket pair, which keeps frame
//! boundaries as a tap does: one end is the port's "tap", the test holds
//! the other as the real network behind it. (The bottle suite joins real
//! taps in a network namespace: `tests/bottle/tap.rs`.)

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::world::segment::{BROADCAST, DEFAULT_MTU, SegmentId};

/// A station that keeps what it is given.
#[derive(Default)]
struct Inbox(Mutex<Vec<Vec<u8>>>);

impl Station for Inbox {
    fn deliver(&self, frame: Arc<[u8]>) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

impl Inbox {
    fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn mac(n: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, n]
}

fn frame(dst: [u8; 6], src: [u8; 6], len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.resize(len, 0x5A);
    f
}

/// A connected `SOCK_SEQPACKET` pair: (the port's end, the wire's end).
fn pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: a two-int array for the new descriptors.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0, "socketpair: {}", io::Error::last_os_error());
    // SAFETY: descriptors just created, owned by nothing else.
    let a = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    // SAFETY: as above.
    let b = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    (a, b)
}

/// Writes one frame into the wire's end.
fn put(wire: &OwnedFd, frame: &[u8]) {
    // SAFETY: an open socket and `frame.len()` readable bytes.
    let n = unsafe { libc::write(wire.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
    assert_eq!(usize::try_from(n).ok(), Some(frame.len()), "write");
}

/// Reads one frame from the wire's end within a second; `None` on end of
/// file or timeout.
fn get(wire: &OwnedFd) -> Option<Vec<u8>> {
    let mut p = libc::pollfd {
        fd: wire.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd record of ours.
    let ready = unsafe { libc::poll(&raw mut p, 1, 1000) };
    if ready != 1 {
        return None;
    }
    let mut buf = vec![0u8; 1 << 16];
    // SAFETY: an open socket and a buffer of `buf.len()` writable bytes.
    let n = unsafe { libc::read(wire.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = usize::try_from(n).ok().filter(|n| *n > 0)?;
    buf.truncate(n);
    Some(buf)
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A segment with one inbox station at `mac(1)` and a tap port.
fn joined() -> (Arc<Segment>, PortId, Arc<Inbox>, TapPort, OwnedFd) {
    let segment = Arc::new(Segment::new(SegmentId(77), DEFAULT_MTU));
    let inbox = Arc::new(Inbox::default());
    let station = segment.attach(mac(1), inbox.clone());
    let (end, wire) = pair();
    let tap = segment.join_tap(end).expect("join the tap");
    (segment, station, inbox, tap, wire)
}

#[test]
fn frames_cross_both_ways_and_the_switch_learns_the_wire_side() {
    let (segment, station, inbox, tap, wire) = joined();
    // From the wire: a broadcast and a unicast to the station.
    let hello = frame(BROADCAST, mac(9), 60);
    put(&wire, &hello);
    let direct = frame(mac(1), mac(9), 1514);
    put(&wire, &direct);
    wait_until("two frames at the station", || {
        inbox.0.lock().unwrap().len() == 2
    });
    assert_eq!(inbox.take(), vec![hello, direct]);
    // To the wire: unicast to the learnt address, and a group frame.
    let reply = frame(mac(9), mac(1), 100);
    assert_eq!(segment.transmit(station, &reply), 1);
    assert_eq!(get(&wire), Some(reply));
    let multicast = frame([0x33, 0x33, 0xFF, 0, 0, 3], mac(1), 86);
    assert_eq!(segment.transmit(station, &multicast), 1);
    assert_eq!(get(&wire), Some(multicast));
    // Unicast to the station's own MAC never goes out to the wire.
    let other = Arc::new(Inbox::default());
    let second = segment.attach(mac(2), other.clone());
    assert_eq!(segment.transmit(second, &frame(mac(1), mac(2), 60)), 1);
    assert_eq!(segment.port_mac(tap.port()), None, "an uplink owns no MAC");
    let s = tap.stats();
    assert_eq!(
        (s.received, s.forwarded, s.sent, s.send_failures),
        (2, 2, 2, 0)
    );
    assert!(!s.tap_gone);
}

#[test]
fn oversize_and_runt_frames_from_the_wire_are_dropped_and_counted() {
    let (segment, _station, inbox, tap, wire) = joined();
    let max = DEFAULT_MTU as usize + ETH_HEADER;
    put(&wire, &frame(mac(1), mac(9), max + 1));
    let mut tagged = frame(mac(1), mac(9), max + 4);
    tagged[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
    put(&wire, &tagged);
    put(&wire, &frame(mac(1), mac(9), 9014));
    put(&wire, &[0xFF; 10]);
    put(&wire, &frame(mac(1), mac(9), max));
    wait_until("five frames read", || tap.stats().received == 5);
    wait_until("two frames at the station", || {
        inbox.0.lock().unwrap().len() == 2
    });
    let got = inbox.take();
    assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), [max + 4, max]);
    let s = tap.stats();
    assert_eq!((s.forwarded, s.oversize, s.runts), (2, 2, 1), "{s:?}");
    assert_eq!(segment.stats().oversize, 0, "dropped before the segment");
}

#[test]
fn dropping_the_port_ends_the_reader_closes_the_tap_and_detaches() {
    let (segment, station, inbox, tap, wire) = joined();
    let port = tap.port();
    drop(tap);
    // The port's end is closed: the wire reads end of file at once.
    let mut buf = [0u8; 64];
    // SAFETY: an open socket and a 64-byte buffer.
    let n = unsafe { libc::read(wire.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(n, 0, "the tap's descriptor is closed");
    // Nothing reaches the port's old number any more.
    assert_eq!(segment.transmit(station, &frame(BROADCAST, mac(1), 60)), 0);
    assert_eq!(segment.transmit(port, &frame(mac(1), mac(9), 60)), 0);
    assert!(inbox.take().is_empty());
}

#[test]
fn the_reader_ends_by_itself_when_the_wire_goes_and_frames_to_it_are_counted() {
    let (segment, station, _inbox, tap, wire) = joined();
    drop(wire);
    wait_until("the reader to see the wire gone", || tap.stats().tap_gone);
    assert_eq!(segment.transmit(station, &frame(BROADCAST, mac(1), 60)), 1);
    let s = tap.stats();
    assert_eq!((s.sent, s.send_failures), (0, 1), "{s:?}");
    // The port still drops cleanly.
    drop(tap);
}

/// CPU ticks (user + system) the thread named `name` of this process
/// has used.
fn thread_ticks(name: &str) -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        // Fields after the command's closing parenthesis: state is the
        // 3rd field of the line, utime the 14th, stime the 15th.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        return Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?);
    }
    None
}

#[test]
fn the_reader_sleeps_while_the_wire_is_quiet() {
    let segment = Arc::new(Segment::new(SegmentId(78), DEFAULT_MTU));
    let (end, wire) = pair();
    let tap = segment.join_tap(end).expect("join the tap");
    let name = format!("tap-78-{}", tap.port().0);
    wait_until("the reader thread", || thread_ticks(&name).is_some());
    let before = thread_ticks(&name).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let used = thread_ticks(&name).unwrap() - before;
    // A spinning reader would use about 30 ticks (100 a second).
    assert!(used <= 2, "the reader used {used} ticks in 300 ms");
    drop(wire);
    drop(tap);
}

//! The engine: the one thread that runs a device, and its start on a UDP
//! socket.
//!
//! Each device has exactly one thread: it runs the device's passes
//! ([`DevicePass`]: the inbound packets from its socket or its fabric
//! queue, the device's work, then what it sends taken onto the wire), and
//! parks on its [`ThreadWaker`] when a pass finds no work. One thread per
//! device means the device's spin locks are never contended by a second
//! transport thread that the scheduler may have preempted while holding
//! one (the first profile showed a third of the CPU spinning on QP locks). No fixed sleep sits on the critical path: an
//! idle engine sleeps until its next timer, or `IDLE_PARK` at most. While a
//! consumer busy polls (see [`crate::waker`]) the engine stands aside.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use links::{Clock, PassPlan};
use softrnic::device::SoftRnic;
use softrnic::env::Wake;
use softrnic::qp::{Negotiated, RcConfig};

use crate::clock::HostClock;
use crate::pass::DevicePass;
use crate::udp::UdpPort;
use crate::waker::ThreadWaker;

/// Longest an idle engine sleeps before looking at its timers again (a
/// safety net only: every event that creates work wakes it).
const IDLE_PARK: Duration = Duration::from_millis(50);

/// How long an engine keeps looking for work (yielding the core between
/// looks) after its last work before it parks: a wake-up through the
/// scheduler costs several microseconds, a look far less.
pub(crate) const SPIN: Duration = Duration::from_micros(50);

/// An engine that has been working without a park for this long is in a
/// stream (a bulk transfer): it looks for work for [`STREAM_SPIN`] instead
/// of [`SPIN`] before it parks.
const STREAM_AFTER: Duration = Duration::from_micros(200);

/// [`SPIN`] for an engine in a stream. Between a stream's bursts (a batch
/// of READ responses placed, the next READs not posted yet) a parked
/// engine's wake-up through its socket costs more than the gap, and its
/// processor may go idle meanwhile (ndkperf's README has the figures).
/// Sparse traffic keeps the short window: its engine parks soon.
const STREAM_SPIN: Duration = Duration::from_millis(2);

/// The engine's pass: it delivers events; receive batches before the work
/// bound how long a flood holds back timers (up to 512 datagrams over UDP).
const ENGINE_PASS: PassPlan = PassPlan {
    deliver_events: true,
    rx_batches: 8,
    send_first: false,
};

/// How long an engine that stands aside for a busy poller sleeps before it
/// looks again: the bound on how late work left to a poller that then
/// stopped without arming a CQ (or a timer it would have fired) is taken
/// over. Wake-ups after the window reach the engine at once.
const BUSY_PARK: Duration = Duration::from_millis(1);

/// How long a responder may hold the ACK of a lone SEND for the answer its
/// consumer is about to send, so both leave in one datagram batch (one
/// system call instead of two on each side of a ping-pong). Short against
/// the 8 ms retransmit timeout; a longer answer gets its ACK from the timer.
const ACK_DEFER_US: u64 = 20;

/// Threads serving one device; stopped and joined on drop.
#[derive(Debug)]
pub struct DeviceThreads {
    stop: Arc<AtomicBool>,
    engine_waker: Arc<ThreadWaker>,
    threads: Vec<JoinHandle<()>>,
}

impl DeviceThreads {
    pub(crate) fn new(engine_waker: Arc<ThreadWaker>) -> Self {
        Self {
            stop: Arc::new(AtomicBool::new(false)),
            engine_waker,
            threads: Vec::new(),
        }
    }
}

impl Drop for DeviceThreads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.engine_waker.wake_engine();
        for t in self.threads.drain(..) {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// How long an engine with nothing to do may sleep: until the earliest of
/// its timers and `other` (e.g. a delayed datagram's due time).
fn idle_sleep(rnic: &SoftRnic, other: Option<u64>) -> Duration {
    let now = HostClock.now_us();
    let due = [rnic.next_timer_us(), other].into_iter().flatten().min();
    due.map_or(IDLE_PARK, |t| {
        Duration::from_micros(t.saturating_sub(now)).min(IDLE_PARK)
    })
}

/// Reliability defaults of a device run by this runtime; `ack_timeout`
/// (the configuration's) fixes the QPs' retransmit timeout in place of
/// the negotiated one.
pub(crate) fn set_rc_defaults(rnic: &SoftRnic, ack_timeout: Option<u8>) {
    let mut config = RcConfig {
        ack_defer_us: ACK_DEFER_US,
        ..RcConfig::default()
    };
    if let Some(timeout) = ack_timeout {
        config.follow_cm = false;
        config.ack_timeout_us = Negotiated {
            timeout,
            retry_count: config.retry_count,
            rnr_retry: config.rnr_retry,
        }
        .ack_timeout_us();
    }
    rnic.set_default_rc_config(config);
}

/// Starts the engine thread of `pass`'s device: it runs the device's
/// passes (receive, then work and events, then transmit); with nothing
/// done it parks until woken, until `wait_fd` (the device's socket) is
/// readable, or until the next timer. While a consumer busy polls it parks
/// on its wake-up only.
pub(crate) fn spawn_engine<F>(
    threads: &mut DeviceThreads,
    name: String,
    pass: Arc<DevicePass>,
    wait_fd: Option<Arc<F>>,
    spin: Duration,
) -> std::io::Result<()>
where
    F: AsFd + Send + Sync + 'static,
{
    let stop = threads.stop.clone();
    let waker = threads.engine_waker.clone();
    if wait_fd.is_some() {
        waker.use_eventfd()?;
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = thread::Builder::new().name(name).spawn(move || {
        waker.bind_current();
        let _ = ready_tx.send(());
        let mut last_work = Instant::now();
        // Since when the engine has been awake (working or looking).
        let mut awake_since = last_work;
        while !stop.load(Ordering::Acquire) {
            let Some(rnic) = pass.device() else { break };
            if waker.busy_remaining_at(HostClock.now_us()).is_some() && !waker.take() {
                // A consumer drives the device (its passes also fire the
                // timers): stay out of its way, unless events need
                // delivering or it arms a CQ. Not waking at the end of
                // each window keeps the engine from preempting the
                // poller every 50 us.
                drop(rnic);
                waker.park(BUSY_PARK, None::<&F>);
                last_work = Instant::now();
                awake_since = last_work;
                continue;
            }
            let Some(done) = pass.run(&rnic, HostClock.now_us(), ENGINE_PASS) else {
                // A busy poller holds the turn: come back for whatever
                // woke us once it is done.
                waker.repend();
                drop(rnic);
                thread::yield_now();
                continue;
            };
            if done.received > 0 || done.worked || waker.take() {
                last_work = Instant::now();
                continue;
            }
            let in_stream = last_work.saturating_duration_since(awake_since) >= STREAM_AFTER;
            let window = if in_stream {
                spin.max(STREAM_SPIN)
            } else {
                spin
            };
            if last_work.elapsed() < window && !waker.busy_polled_lately() {
                // Work tends to come back within a round trip: look again
                // after letting any other runnable thread have the core.
                // Not while consumers busy poll: they will be back, and
                // an engine spinning beside them takes the cores they
                // need (measured: 5.5 engine passes per round trip, 1 in
                // 120 with work, and a slower ping-pong).
                drop(rnic);
                thread::yield_now();
                continue;
            }
            let sleep = idle_sleep(&rnic, done.next_due_us);
            drop(rnic);
            if sleep.is_zero() || !waker.may_park_long() {
                continue;
            }
            waker.park(sleep, wait_fd.as_deref());
            waker.unpark_long();
            awake_since = Instant::now();
            last_work = Instant::now()
                .checked_sub(spin)
                .unwrap_or_else(Instant::now);
        }
    })?;
    // The waker must know the engine thread before the first doorbell.
    let _ = ready_rx.recv();
    threads.threads.push(handle);
    Ok(())
}

/// A device on a UDP socket: one engine thread that runs `pass` (over
/// `port`), receiving and sending. `ack_timeout`: the configuration's
/// fixed retransmit timeout exponent.
pub fn start_udp(
    rnic: &Arc<SoftRnic>,
    pass: Arc<DevicePass>,
    port: Arc<UdpPort>,
    waker: Arc<ThreadWaker>,
    ack_timeout: Option<u8>,
) -> std::io::Result<DeviceThreads> {
    let mut threads = DeviceThreads::new(waker);
    set_rc_defaults(rnic, ack_timeout);
    let name = format!("rsndk-engine-{}", port.local().ip());
    spawn_engine(&mut threads, name, pass, Some(port), SPIN)?;
    Ok(threads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    use crate::test_loopback::loopback;
    use crate::udp::RxBuffers;

    /// Bound on a wake-up that must happen (a liveness check, not a
    /// timing: a lost wake-up would otherwise park for the full timeout).
    const LONG: Duration = Duration::from_secs(600);

    /// An engine's waker parked in `poll(2)` on its eventfd and `socket`.
    fn parked_engine(
        socket: Arc<UdpPort>,
    ) -> (Arc<ThreadWaker>, mpsc::Receiver<()>, JoinHandle<()>) {
        let waker = Arc::new(ThreadWaker::default());
        waker.use_eventfd().unwrap();
        let (tx, rx) = mpsc::channel();
        let w = waker.clone();
        let handle = thread::spawn(move || {
            w.park(LONG, Some(&*socket));
            tx.send(()).unwrap();
        });
        (waker, rx, handle)
    }

    #[test]
    fn a_datagram_wakes_an_engine_parked_on_its_socket() {
        let port = Arc::new(UdpPort::bind(loopback(10)).unwrap());
        let sender = UdpPort::bind(loopback(11)).unwrap();
        let (_waker, rx, handle) = parked_engine(port.clone());
        sender.queue(port.local(), &[1, 2, 3]);
        sender.flush();
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the datagram ended the park");
        handle.join().unwrap();
        let mut got = 0;
        let mut bufs = RxBuffers::default();
        port.try_receive(&mut bufs, |a| {
            if let softrnic::arrival::Arrival::Datagram(d) = a {
                got += d.len();
            }
        })
        .unwrap();
        // An IPv4 port takes whole datagrams: 20 + 8 header bytes.
        assert_eq!(got, 28 + 3);
    }
}

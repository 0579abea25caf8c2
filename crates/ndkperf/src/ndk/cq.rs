//! Completion queues: poll, arm, and block until something completes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ndkpi::{
    NDK_CQ, NDK_CQ_DISPATCH, NDK_CQ_NOTIFY_ANY, NDK_OBJECT_HEADER, NDK_RESULT_EX, NTSTATUS, PVOID,
    STATUS_SUCCESS,
};

use super::signal::Event;
use super::{close_object, dispatch_table};
use crate::error::{Error, Result, describe_status};

dispatch_table!(table, NDK_CQ, NDK_CQ_DISPATCH);

/// Polls in a row before the first yield. One: a back-to-back poll loop
/// holds the core for microseconds that the engine producing the
/// completion may need (with more threads than cores, a ping-pong measured
/// about 2 us slower one-way when the waiting thread shared a core with
/// its own engine and polled 64 times first).
const SPIN_POLLS: u32 = 1;

/// How long to keep polling (yielding the core between polls) before
/// arming and sleeping. Polling drives the device (busy polling), so a
/// wait that gives up early hands the next round trip to the engines and
/// a scheduler wake-up: at 50 us a UDP ping-pong slept in 468-1,239 of
/// 20,000 round trips on this VM (the hypervisor takes the cores away for
/// longer) and its p50 was 5.6-7.5 us; at 1 ms it sleeps 1-4 times and
/// measures 5.5-6.8 us with a p99 of 24-41 us instead of 100+. Bandwidth
/// and `smbd` measured the same either way. (perftest's latency tools
/// poll without ever sleeping.)
const SPIN_YIELDING: Duration = Duration::from_millis(1);

/// Polls between two looks at the clock in the yielding spin.
const CLOCK_EVERY: u32 = 16;

/// A completion queue whose notifications fire an [`Event`].
#[derive(Debug)]
pub struct Cq {
    raw: *mut NDK_CQ,
    event: Arc<Event>,
    context: PVOID,
    polls: u64,
    sleeps: u64,
}

// SAFETY: the CQ may be used from any thread; `Cq` is not `Sync`, so the
// NDK rule that polls and arms of one CQ are serialised holds.
unsafe impl Send for Cq {}

impl Cq {
    pub(super) fn from_raw(raw: *mut NDK_CQ, event: Arc<Event>, context: PVOID) -> Self {
        Self {
            raw,
            event,
            context,
            polls: 0,
            sleeps: 0,
        }
    }

    /// `NDK_FN_CQ_NOTIFICATION_CALLBACK`: fires the CQ's event.
    pub(super) unsafe extern "win64" fn notification(context: PVOID, status: NTSTATUS) {
        // SAFETY: the context is the CQ's `Event` reference, released only
        // after the CQ's close completed (no callback after that).
        let event = unsafe { Event::from_context(context) };
        event.fire((status != STATUS_SUCCESS).then_some(status), None);
    }

    /// The raw object.
    pub fn raw(&self) -> *mut NDK_CQ {
        self.raw
    }

    /// Times the CQ was found empty and the caller slept on a notification.
    pub fn sleeps(&self) -> u64 {
        self.sleeps
    }

    /// `NdkGetCqResultsEx`: takes up to `out.len()` completions.
    pub fn poll(&mut self, out: &mut [NDK_RESULT_EX]) -> usize {
        let Some(f) = table(self.raw).NdkGetCqResultsEx else {
            return 0;
        };
        self.polls += 1;
        let n = u32::try_from(out.len()).unwrap_or(u32::MAX);
        // SAFETY: our CQ (polls are serialised by `&mut self`) and room
        // for `n` results.
        let got = unsafe { f(self.raw, out.as_mut_ptr(), n) };
        got as usize
    }

    /// `NdkArmCq`.
    pub fn arm(&mut self, kind: u32) {
        if let Some(f) = table(self.raw).NdkArmCq {
            // SAFETY: our CQ; arms are serialised with polls by `&mut self`.
            unsafe { f(self.raw, kind) };
        }
    }

    /// The error the provider reported through a notification (overrun,
    /// fatal error), if any.
    pub fn error(&self) -> Option<NTSTATUS> {
        self.event.error()
    }

    /// Takes completions, sleeping on a notification while the CQ is
    /// empty. Returns 0 only when `timeout` passed without a completion.
    pub fn wait(&mut self, out: &mut [NDK_RESULT_EX], timeout: Duration) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            for _ in 0..SPIN_POLLS {
                let n = self.poll(out);
                if n > 0 {
                    return Ok(n);
                }
                std::hint::spin_loop();
            }
            // Then poll a little longer, giving the core to any runnable
            // thread between polls (on a small machine the engines that
            // produce our completions may need it): a sleep and wake-up
            // through the scheduler costs more than most round trips.
            // The clock is read every few polls only (a wait that ends
            // sooner reads none): in a ping-pong each read is a good part
            // of an empty poll's cost.
            let mut spin_end = None;
            for polls in 1u32.. {
                std::thread::yield_now();
                let n = self.poll(out);
                if n > 0 {
                    return Ok(n);
                }
                if polls % CLOCK_EVERY == 0 {
                    let now = Instant::now();
                    if now >= *spin_end.get_or_insert(now + SPIN_YIELDING) {
                        break;
                    }
                }
            }
            if let Some(status) = self.error() {
                return Err(Error::msg(format!(
                    "the CQ failed: {}",
                    describe_status(status)
                )));
            }
            let seen = self.event.count();
            self.arm(NDK_CQ_NOTIFY_ANY);
            // Completions that raced with the arm.
            let n = self.poll(out);
            if n > 0 {
                return Ok(n);
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Ok(0);
            };
            self.sleeps += 1;
            self.event.wait_past(seen, left);
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        let closed = close_object(
            table(self.raw).NdkCloseCq,
            self.raw.cast::<NDK_OBJECT_HEADER>(),
            "NdkCloseCq",
        );
        if closed {
            // SAFETY: the close completed, so no notification can come.
            unsafe { Event::release(self.context) };
        }
    }
}

//! Waiting for NDK completion callbacks.
//!
//! An asynchronous NDK call returns `STATUS_SUCCESS` (done, no callback),
//! `STATUS_PENDING` (exactly one completion callback later) or a failure
//! (no callback). The callback's context is a strong reference to a
//! [`Signal`], handed over with `Arc::into_raw`: the callback takes it
//! back, so a caller that stops waiting (a timeout) never leaves the
//! provider with a dangling context.

use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ndkpi::{NDK_OBJECT_HEADER, NTSTATUS, PVOID, STATUS_PENDING};

use crate::error::{Error, Result};

/// One completion: its status and, for creates, the new object.
#[derive(Debug, Default)]
pub struct Signal {
    done: Mutex<Option<(NTSTATUS, usize)>>,
    cv: Condvar,
}

impl Signal {
    /// A fresh, unsignalled completion.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A callback context holding one strong reference. Give it to exactly
    /// one NDK call, then pass that call's status to [`Signal::settle`].
    pub fn context(self: &Arc<Self>) -> PVOID {
        Arc::into_raw(self.clone()).cast_mut().cast()
    }

    fn set(&self, status: NTSTATUS, object: usize) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        *done = Some((status, object));
        self.cv.notify_all();
    }

    /// Waits until the callback ran, at most `timeout`.
    pub fn wait(&self, timeout: Duration) -> Option<(NTSTATUS, usize)> {
        let deadline = Instant::now() + timeout;
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(v) = *done {
                return Some(v);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            done = self
                .cv
                .wait_timeout(done, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Finishes an asynchronous call that was given `context`: a pending
    /// call is waited for (at most `timeout`); otherwise no callback will
    /// come, so the context's reference is taken back here. Returns the
    /// final status and object.
    pub fn settle(
        &self,
        status: NTSTATUS,
        context: PVOID,
        timeout: Duration,
        function: &str,
    ) -> Result<(NTSTATUS, usize)> {
        if status == STATUS_PENDING {
            return self.wait(timeout).ok_or_else(|| {
                Error::msg(format!(
                    "{function} did not complete within {}",
                    crate::ndk::show_duration(timeout)
                ))
            });
        }
        // SAFETY: the call did not pend, so the provider will never call
        // back with `context`; it is the reference `context()` leaked.
        drop(unsafe { Arc::from_raw(context.cast_const().cast::<Signal>()) });
        Ok((status, 0))
    }
}

/// Takes back the reference a callback context holds.
///
/// # Safety
/// `context` came from [`Signal::context`] and is used once.
unsafe fn take(context: PVOID) -> Arc<Signal> {
    // SAFETY: the caller's contract.
    unsafe { Arc::from_raw(context.cast_const().cast::<Signal>()) }
}

/// `NDK_FN_REQUEST_COMPLETION` for [`Signal`] contexts.
///
/// # Safety
/// Only the provider calls it, once, with a context from [`Signal::context`].
pub unsafe extern "win64" fn request_done(context: PVOID, status: NTSTATUS) {
    // SAFETY: the provider hands back the context we gave it, once.
    let signal = unsafe { take(context) };
    signal.set(status, 0);
}

/// `NDK_FN_CREATE_COMPLETION` for [`Signal`] contexts.
///
/// # Safety
/// As [`request_done`].
pub unsafe extern "win64" fn create_done(
    context: PVOID,
    status: NTSTATUS,
    object: *mut NDK_OBJECT_HEADER,
) {
    // SAFETY: the provider hands back the context we gave it, once.
    let signal = unsafe { take(context) };
    signal.set(status, object as usize);
}

/// `NDK_FN_CLOSE_COMPLETION` for [`Signal`] contexts.
///
/// # Safety
/// As [`request_done`].
pub unsafe extern "win64" fn close_done(context: PVOID) {
    // SAFETY: the provider hands back the context we gave it, once.
    let signal = unsafe { take(context) };
    signal.set(0, 0);
}

/// A counter other threads wait on to change (CQ notifications, connect
/// and disconnect events), shared with the provider through a raw `Arc`.
#[derive(Debug, Default)]
pub struct Event {
    state: Mutex<EventState>,
    cv: Condvar,
}

/// What an [`Event`] has seen.
#[derive(Debug, Default, Clone)]
pub struct EventState {
    /// Times it fired.
    pub count: u64,
    /// The last non-success status reported with it (CQ errors).
    pub error: Option<NTSTATUS>,
    /// Objects delivered with it (new connectors), oldest first.
    pub objects: std::collections::VecDeque<usize>,
    /// Waiters for objects give up (see [`Event::cancel`]).
    pub cancelled: bool,
}

impl Event {
    /// A new event and the raw context that holds one reference to it;
    /// release that with [`Event::release`] once no callback can come.
    pub fn new() -> (Arc<Self>, PVOID) {
        let event = Arc::new(Self::default());
        let context = Arc::into_raw(event.clone()).cast_mut().cast::<c_void>();
        (event, context)
    }

    /// Drops the reference held by a context from [`Event::new`].
    ///
    /// # Safety
    /// `context` came from [`Event::new`], is released once, and no
    /// callback with it can run any more.
    pub unsafe fn release(context: PVOID) {
        // SAFETY: the caller's contract.
        drop(unsafe { Arc::from_raw(context.cast_const().cast::<Event>()) });
    }

    /// Borrows the event behind a context inside a callback.
    ///
    /// # Safety
    /// `context` came from [`Event::new`] and is not released yet.
    pub unsafe fn from_context<'a>(context: PVOID) -> &'a Self {
        // SAFETY: the caller's contract: the reference is alive.
        unsafe { &*context.cast_const().cast::<Event>() }
    }

    /// Records one firing.
    pub fn fire(&self, error: Option<NTSTATUS>, object: Option<usize>) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.count += 1;
        if error.is_some() {
            s.error = error;
        }
        if let Some(o) = object {
            s.objects.push_back(o);
        }
        self.cv.notify_all();
    }

    /// The firing count now.
    pub fn count(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .count
    }

    /// The error reported, if any.
    pub fn error(&self) -> Option<NTSTATUS> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .error
    }

    /// Waits until the count differs from `seen`, at most `timeout`;
    /// returns the new count (or `seen` on timeout).
    pub fn wait_past(&self, seen: u64, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while s.count == seen {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            s = self
                .cv
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        s.count
    }

    /// Makes current and future [`Event::take_object`] waits return
    /// `None` at once.
    pub fn cancel(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.cancelled = true;
        self.cv.notify_all();
    }

    /// Whether [`Event::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancelled
    }

    /// Takes the oldest delivered object, waiting at most `timeout`.
    pub fn take_object(&self, timeout: Duration) -> Option<usize> {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(o) = s.objects.pop_front() {
                return Some(o);
            }
            if s.cancelled {
                return None;
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            s = self
                .cv
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Takes every delivered object that nobody took.
    pub fn drain_objects(&self) -> Vec<usize> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.objects.drain(..).collect()
    }
}

//! Recorders of the provider's callbacks: a [`Recorder`]'s address is the
//! context a test hands the provider with one of the `*_cb` functions
//! here; each call is recorded with a process-wide sequence number (to
//! check order across objects), its status and, for create and connect
//! events, the object. Every callback checks that the provider holds none
//! of its locks on the calling thread (the checked host platform counts
//! them).

use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use host::platform::HostPlatform;
use ndkpi::{NDK_CONNECTOR, NDK_OBJECT_HEADER, NTSTATUS, PVOID, ULONG};

/// The next call's sequence number, across every recorder.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// One recorded callback: a global sequence number (to check order across
/// objects), its status (0 for callbacks without one) and an object pointer
/// (connect events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Order of the call among all recorded calls of the process.
    pub seq: u64,
    /// The call's status (its reason for the extended disconnect event).
    pub status: NTSTATUS,
    /// The object a create or connect event hands over, else 0.
    pub object: usize,
}

/// Code run inside a callback.
type Hook = Box<dyn FnMut(NTSTATUS) + Send>;

/// Every recorder made, for the life of the test binary.
static ALL_RECORDERS: Mutex<Vec<&'static Recorder>> = Mutex::new(Vec::new());

/// Records the calls of one callback context.
#[derive(Default)]
pub struct Recorder {
    calls: Mutex<Vec<Call>>,
    /// Run inside the callback (re-entrancy tests).
    hook: Mutex<Option<Hook>>,
}

impl Recorder {
    /// Lives as long as the test binary: its address is the callback
    /// context, so it must neither move nor die while the device may still
    /// call back. A test that fails midway leaves its objects open (their
    /// callbacks keep coming from the device's threads); a freed recorder
    /// would then turn that failure into a crash of the whole test binary,
    /// losing its message. Kept in a static list, so leak checkers see
    /// it reachable.
    pub fn new() -> &'static Self {
        let recorder: &'static Self = Box::leak(Box::default());
        ALL_RECORDERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(recorder);
        recorder
    }

    /// The callback context that designates this recorder.
    pub fn ctx(&self) -> PVOID {
        ptr::from_ref(self).cast_mut().cast()
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// How many calls so far.
    pub fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// The statuses of the calls so far, in order.
    pub fn statuses(&self) -> Vec<NTSTATUS> {
        self.calls().iter().map(|c| c.status).collect()
    }

    /// The sequence number of the last call, if any.
    pub fn last_seq(&self) -> Option<u64> {
        self.calls().last().map(|c| c.seq)
    }

    /// Runs `hook` inside every later call, after recording it.
    pub fn set_hook(&self, hook: impl FnMut(NTSTATUS) + Send + 'static) {
        *self.hook.lock().unwrap() = Some(Box::new(hook));
    }

    /// Records one call and runs the hook.
    fn record(&self, status: NTSTATUS, object: usize) {
        assert_eq!(
            HostPlatform::locks_held(),
            0,
            "callback under a provider lock"
        );
        let seq = SEQUENCE.fetch_add(1, Ordering::SeqCst);
        self.calls.lock().unwrap().push(Call {
            seq,
            status,
            object,
        });
        let hook = self.hook.lock().unwrap().take();
        if let Some(mut hook) = hook {
            hook(status);
            *self.hook.lock().unwrap() = Some(hook);
        }
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

/// The recorder a callback context designates.
fn recorder<'a>(ctx: PVOID) -> &'a Recorder {
    // SAFETY: every context the tests hand to the provider is a live
    // `Recorder` (boxed, kept alive for the whole test).
    unsafe { &*ctx.cast::<Recorder>() }
}

/// `NDK_FN_CLOSE_COMPLETION`: records a call with no status.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn close_cb(ctx: PVOID) {
    recorder(ctx).record(0, 0);
}

/// `NDK_FN_REQUEST_COMPLETION`: records the request's status.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn request_cb(ctx: PVOID, status: NTSTATUS) {
    recorder(ctx).record(status, 0);
}

/// `NDK_FN_CREATE_COMPLETION`: records the status and the created object.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn create_cb(
    ctx: PVOID,
    status: NTSTATUS,
    object: *mut NDK_OBJECT_HEADER,
) {
    recorder(ctx).record(status, object as usize);
}

/// `NDK_FN_CQ_NOTIFICATION`: records the notification's status.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn cq_cb(ctx: PVOID, status: NTSTATUS) {
    recorder(ctx).record(status, 0);
}

/// `NDK_FN_SRQ_NOTIFICATION`: records the notification's status.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn srq_cb(ctx: PVOID, status: NTSTATUS) {
    recorder(ctx).record(status, 0);
}

/// `NDK_FN_CONNECT_EVENT_CALLBACK`: records the incoming connector.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn connect_cb(ctx: PVOID, connector: *mut NDK_CONNECTOR) {
    recorder(ctx).record(0, connector as usize);
}

/// `NDK_FN_DISCONNECT_EVENT_CALLBACK`: records a call with no status.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn disconnect_cb(ctx: PVOID) {
    recorder(ctx).record(0, 0);
}

/// NDKPI 2.1's extended disconnect callback: records the provider's
/// disconnect reason as the call's status.
///
/// # Safety
/// `ctx` is the [`Recorder::ctx`] of a recorder.
pub unsafe extern "win64" fn disconnect_ex_cb(ctx: PVOID, reason: ULONG) {
    recorder(ctx).record(reason as NTSTATUS, 0);
}

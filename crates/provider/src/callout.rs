//! Calls into the consumer.
//!
//! Every consumer callback goes through this module so that each one is
//! bracketed by `callout_begin`/`callout_end` (a checker asserts that no
//! provider lock is held); the call itself is made at the ABI edge
//! ([`crate::abi`]). Callers pass function pointers and contexts that came
//! from the consumer for exactly this purpose (which is what the NDK
//! contract makes them valid for).

use core::ffi::c_void;
use core::fmt;

use hwq::TryArc;
use ndkpi::{
    NDK_CONNECTOR, NDK_FN_CLOSE_COMPLETION, NDK_FN_CONNECT_EVENT_CALLBACK,
    NDK_FN_CQ_NOTIFICATION_CALLBACK, NDK_FN_DISCONNECT_EVENT_CALLBACK,
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, NDK_FN_REQUEST_COMPLETION,
    NDK_FN_SRQ_NOTIFICATION_CALLBACK, NTSTATUS,
};

use crate::abi::{self, NdkObject};
use crate::platform::Platform;

/// A consumer context pointer, passed back verbatim. Kept as its address:
/// the provider never dereferences it, and NDK lets the provider pass it
/// back from any thread.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Context(usize);

impl Context {
    /// Records the consumer's pointer.
    pub fn new(context: *mut c_void) -> Self {
        Self(context.expose_provenance())
    }

    /// The pointer, as the consumer gave it.
    pub fn get(self) -> *mut c_void {
        core::ptr::with_exposed_provenance_mut(self.0)
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Context({:p})", self.get())
    }
}

/// A consumer's close completion (`NDK_FN_CLOSE_COMPLETION` and its
/// context).
#[derive(Clone, Copy, Debug)]
pub struct CloseCompletion {
    func: NDK_FN_CLOSE_COMPLETION,
    context: Context,
}

/// A request completion (`NDK_FN_REQUEST_COMPLETION` + context), for
/// requests that returned `STATUS_PENDING`.
#[derive(Clone, Copy, Debug)]
pub struct RequestCompletion {
    func: NDK_FN_REQUEST_COMPLETION,
    context: Context,
}

impl RequestCompletion {
    /// Records the consumer's completion.
    pub fn new(func: NDK_FN_REQUEST_COMPLETION, context: *mut c_void) -> Self {
        Self {
            func,
            context: Context::new(context),
        }
    }

    /// Calls it (nothing if the consumer passed none).
    pub fn complete(self, platform: &dyn Platform, status: NTSTATUS) {
        let Some(func) = self.func else { return };
        platform.callout_begin();
        abi::call_with_status(func, self.context.get(), status);
        platform.callout_end();
    }
}

/// Builds a close completion from the consumer's arguments (`None` when it
/// passed no callback: the close then completes silently).
pub fn close_from(
    func: ndkpi::NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> Option<CloseCompletion> {
    func.map(|func| CloseCompletion {
        func: Some(func),
        context: Context::new(context),
    })
}

/// Calls a close completion.
pub fn close_completion(platform: &dyn Platform, completion: CloseCompletion) {
    let Some(func) = completion.func else { return };
    platform.callout_begin();
    abi::call_with_context(func, completion.context.get());
    platform.callout_end();
}

/// Calls a CQ notification callback.
pub fn cq_notification(
    platform: &dyn Platform,
    func: NDK_FN_CQ_NOTIFICATION_CALLBACK,
    context: Context,
    status: NTSTATUS,
) {
    let Some(func) = func else { return };
    platform.callout_begin();
    abi::call_with_status(func, context.get(), status);
    platform.callout_end();
}

/// Calls an SRQ notification callback.
pub fn srq_notification(
    platform: &dyn Platform,
    func: NDK_FN_SRQ_NOTIFICATION_CALLBACK,
    context: Context,
    status: NTSTATUS,
) {
    let Some(func) = func else { return };
    platform.callout_begin();
    abi::call_with_status(func, context.get(), status);
    platform.callout_end();
}

/// Calls a listener's connect event callback with a new connector, whose
/// consumer reference is handed over with the call (dropped if the
/// consumer gave no callback).
pub fn connect_event<T: NdkObject<Ndk = NDK_CONNECTOR>>(
    platform: &dyn Platform,
    func: NDK_FN_CONNECT_EVENT_CALLBACK,
    context: Context,
    connector: TryArc<T>,
) {
    let Some(func) = func else { return };
    platform.callout_begin();
    abi::call_with_connector(func, context.get(), connector);
    platform.callout_end();
}

/// A connector's disconnect event callback: the one of `NdkAccept` /
/// `NdkCompleteConnect`, or NDKPI 2.1's extended one (of `NdkAcceptEx` /
/// `NdkCompleteConnectEx`), which also receives the disconnect reason.
#[derive(Clone, Copy, Debug)]
pub enum DisconnectEvent {
    /// `NDK_FN_DISCONNECT_EVENT_CALLBACK` (or none).
    Plain(NDK_FN_DISCONNECT_EVENT_CALLBACK),
    /// `NDK_FN_DISCONNECT_EVENT_CALLBACK_EX` (or none).
    Ex(NDK_FN_DISCONNECT_EVENT_CALLBACK_EX),
}

impl DisconnectEvent {
    /// No callback.
    pub const NONE: Self = Self::Plain(None);
}

/// Calls a connector's disconnect event callback; the extended one gets
/// `reason`.
pub fn disconnect_event(
    platform: &dyn Platform,
    func: DisconnectEvent,
    context: Context,
    reason: u32,
) {
    match func {
        DisconnectEvent::Plain(Some(func)) => {
            platform.callout_begin();
            abi::call_with_context(func, context.get());
            platform.callout_end();
        }
        DisconnectEvent::Ex(Some(func)) => {
            platform.callout_begin();
            abi::call_with_reason(func, context.get(), reason);
            platform.callout_end();
        }
        DisconnectEvent::Plain(None) | DisconnectEvent::Ex(None) => {}
    }
}

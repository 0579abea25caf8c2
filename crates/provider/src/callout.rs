//! Calls into the consumer.
//!
//! Every consumer callback goes through this module so that each one is
//! bracketed by `callout_begin`/`callout_end` (a checker asserts that no
//! provider lock is held) and so the `unsafe` of calling a consumer function
//! pointer lives in one place. Callers guarantee that the function pointers
//! and contexts came from the consumer for exactly this purpose (which is
//! what the NDK contract makes them valid for).

use core::ffi::c_void;
use core::fmt;

use ndkpi::{
    NDK_CONNECTOR, NDK_FN_CONNECT_EVENT_CALLBACK, NDK_FN_CQ_NOTIFICATION_CALLBACK,
    NDK_FN_DISCONNECT_EVENT_CALLBACK, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
    NDK_FN_REQUEST_COMPLETION, NDK_FN_SRQ_NOTIFICATION_CALLBACK, NTSTATUS,
};

use crate::object::CloseCompletion;
use crate::platform::Platform;

/// A consumer context pointer, passed back verbatim.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Context(pub *mut c_void);

// SAFETY: an opaque value we never dereference; NDK lets the provider pass
// it back from any thread.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Context({:p})", self.0)
    }
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
            context: Context(context),
        }
    }

    /// Calls it (nothing if the consumer passed none).
    pub fn complete(self, platform: &dyn Platform, status: NTSTATUS) {
        let Some(func) = self.func else { return };
        platform.callout_begin();
        // SAFETY: the consumer's completion for this request, called once.
        unsafe { func(self.context.0, status) };
        platform.callout_end();
    }
}

/// Builds a close completion from the consumer's arguments (`None` when it
/// passed no callback: the close then completes silently).
pub fn close_from(
    func: ndkpi::NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> Option<CloseCompletion> {
    func.map(|func| CloseCompletion { func, context })
}

/// Calls a close completion.
pub fn close_completion(platform: &dyn Platform, completion: CloseCompletion) {
    platform.callout_begin();
    // SAFETY: the consumer's close completion for this object, called once.
    unsafe { (completion.func)(completion.context) };
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
    // SAFETY: the notification callback given at NdkCreateCq, valid until
    // the CQ's close completes (which waits for this call to return).
    unsafe { func(context.0, status) };
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
    // SAFETY: the notification callback given at NdkCreateSrq, valid until
    // the SRQ's close completes (which waits for this call to return).
    unsafe { func(context.0, status) };
    platform.callout_end();
}

/// Calls a listener's connect event callback with a new connector.
///
/// # Safety
/// `connector` must be a connector handle whose consumer reference is
/// handed over with this call.
pub unsafe fn connect_event(
    platform: &dyn Platform,
    func: NDK_FN_CONNECT_EVENT_CALLBACK,
    context: Context,
    connector: *mut NDK_CONNECTOR,
) {
    let Some(func) = func else { return };
    platform.callout_begin();
    // SAFETY: the connect event callback given at NdkCreateListener, valid
    // until the listener's close completes (which waits for this call).
    unsafe { func(context.0, connector) };
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
            // SAFETY: the disconnect event callback given at NdkAccept or
            // NdkCompleteConnect, valid until the connector's close completes.
            unsafe { func(context.0) };
            platform.callout_end();
        }
        DisconnectEvent::Ex(Some(func)) => {
            platform.callout_begin();
            // SAFETY: the extended disconnect event callback given at
            // NdkAcceptEx or NdkCompleteConnectEx, valid until the
            // connector's close completes.
            unsafe { func(context.0, reason) };
            platform.callout_end();
        }
        DisconnectEvent::Plain(None) | DisconnectEvent::Ex(None) => {}
    }
}

//! The listener's edge: the listener dispatch table (`NdkCreateListener`
//! is the adapter's entry). Its connect event callback is called through
//! [`crate::callout`].

use core::ffi::c_void;

use ndkpi::{
    NDK_FN_CLOSE_COMPLETION, NDK_FN_REQUEST_COMPLETION, NDK_LISTENER, NDK_LISTENER_DISPATCH,
    NDK_OBJECT_HEADER, NDK_VERSION, NTSTATUS, NdkObjectTypeListener, PSOCKADDR, SOCKADDR,
    STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_HANDLE, STATUS_SUCCESS,
};

use super::adapter::{close, query_extension};
use crate::abi::{self, NdkObject};
use crate::listener::Listener;

// SAFETY: `Listener` is `#[repr(C)]` with `ndk: NdkCell<NDK_LISTENER>` first (listener.rs),
// and `Listener::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for Listener {
    type Ndk = NDK_LISTENER;
    const TYPE: i32 = NdkObjectTypeListener;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_LISTENER {
        NDK_LISTENER {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves a listener argument.
///
/// # Safety
/// As [`abi::object`]: a non-null pointer must be readable for an NDK
/// object header and dispatch pointer.
unsafe fn listener_arg<'a>(l: *mut NDK_LISTENER) -> Option<&'a Listener> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<Listener>(l) }
}

unsafe extern "win64" fn close_listener(
    l: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once, with no
    // other call on it running (NDK contract).
    unsafe { close::<Listener>(l, completion, context) }
}

unsafe extern "win64" fn listen(
    l: *mut NDK_LISTENER,
    addr: PSOCKADDR,
    addr_len: u32,
    _completion: NDK_FN_REQUEST_COMPLETION,
    _context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open listener (NDK contract).
    let Some(l) = (unsafe { listener_arg(l) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: a non-null `addr` is the consumer's address of `addr_len`
    // readable bytes (NDK contract).
    let addr = match unsafe { abi::read_sockaddr(addr, addr_len) } {
        Ok(a) => a,
        Err(status) => return status,
    };
    match l.listen(addr) {
        Ok(()) => STATUS_SUCCESS,
        Err(status) => status,
    }
}

unsafe extern "win64" fn get_local_address(
    l: *mut NDK_LISTENER,
    addr: *mut SOCKADDR,
    len: *mut u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open listener (NDK contract).
    let Some(l) = (unsafe { listener_arg(l) }) else {
        return STATUS_INVALID_HANDLE;
    };
    let Some(at) = l.bound_address() else {
        return STATUS_INVALID_DEVICE_STATE;
    };
    // SAFETY: a non-null `len` is the consumer's in/out length and a
    // non-null `addr` its buffer of `*len` writable bytes (NDK contract).
    unsafe { abi::write_sockaddr(at, addr, len) }
}

unsafe extern "win64" fn control_connect_events(l: *mut NDK_LISTENER, pause: u8) {
    // SAFETY: the consumer passes its open listener (NDK contract).
    if let Some(l) = unsafe { listener_arg(l) } {
        l.control(pause != 0);
    }
}

/// The listener dispatch table.
pub static DISPATCH: NDK_LISTENER_DISPATCH = NDK_LISTENER_DISPATCH {
    NdkCloseListener: Some(close_listener),
    NdkQueryExtension: Some(query_extension),
    NdkListen: Some(listen),
    NdkGetLocalAddress: Some(get_local_address),
    NdkControlConnectEvents: Some(control_connect_events),
};

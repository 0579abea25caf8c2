//! The shared endpoint's edge: the shared endpoint dispatch table
//! (`NdkCreateSharedEndpoint` is the adapter's entry).

use core::ffi::c_void;

use ndkpi::{
    NDK_FN_CLOSE_COMPLETION, NDK_OBJECT_HEADER, NDK_SHARED_ENDPOINT, NDK_SHARED_ENDPOINT_DISPATCH,
    NDK_VERSION, NTSTATUS, NdkObjectTypeSharedEndpoint, SOCKADDR, STATUS_INVALID_HANDLE,
};

use super::adapter::{close, query_extension};
use crate::abi::{self, NdkObject};
use crate::endpoint::SharedEndpoint;

// SAFETY: `SharedEndpoint` is `#[repr(C)]` with `ndk: NdkCell<NDK_SHARED_ENDPOINT>` first (endpoint.rs),
// and `SharedEndpoint::create` builds it only inside a `TryArc`.
unsafe impl NdkObject for SharedEndpoint {
    type Ndk = NDK_SHARED_ENDPOINT;
    const TYPE: i32 = NdkObjectTypeSharedEndpoint;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
    fn ndk(version: NDK_VERSION) -> NDK_SHARED_ENDPOINT {
        NDK_SHARED_ENDPOINT {
            Header: abi::header(version, Self::TYPE),
            Dispatch: &raw const DISPATCH,
        }
    }
}

/// Resolves a shared endpoint argument.
///
/// # Safety
/// As [`abi::object`]: a non-null pointer must be readable for an NDK
/// object header and dispatch pointer.
pub(super) unsafe fn endpoint_arg<'a>(e: *mut NDK_SHARED_ENDPOINT) -> Option<&'a SharedEndpoint> {
    // SAFETY: this function's contract is `abi::object`'s.
    unsafe { abi::object::<SharedEndpoint>(e) }
}

unsafe extern "win64" fn close_shared_endpoint(
    e: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once, with no
    // other call on it running (NDK contract).
    unsafe { close::<SharedEndpoint>(e, completion, context) }
}

unsafe extern "win64" fn get_local_address(
    e: *mut NDK_SHARED_ENDPOINT,
    addr: *mut SOCKADDR,
    len: *mut u32,
) -> NTSTATUS {
    // SAFETY: the consumer passes its open endpoint (NDK contract).
    let Some(e) = (unsafe { endpoint_arg(e) }) else {
        return STATUS_INVALID_HANDLE;
    };
    // SAFETY: a non-null `len` is the consumer's in/out length and a
    // non-null `addr` its buffer of `*len` writable bytes (NDK contract).
    unsafe { abi::write_sockaddr(e.addr(), addr, len) }
}

/// The shared endpoint dispatch table.
pub static DISPATCH: NDK_SHARED_ENDPOINT_DISPATCH = NDK_SHARED_ENDPOINT_DISPATCH {
    NdkCloseSharedEndpoint: Some(close_shared_endpoint),
    NdkQueryExtension: Some(query_extension),
    NdkGetLocalAddress: Some(get_local_address),
};

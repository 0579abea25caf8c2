//! Completion callbacks shared by all objects, and the close and
//! query-extension entries every dispatch table starts with.

use crate::object::{NDK_EXTENSION_INTERFACE, NDK_OBJECT_HEADER, NDK_VERSION};
use crate::types::{GUID, NTSTATUS, PVOID};

/// Consumer callback: an object close that returned `STATUS_PENDING` has
/// finished.
pub type NDK_FN_CLOSE_COMPLETION = Option<unsafe extern "win64" fn(Context: PVOID)>;

/// Consumer callback: an asynchronous request that returned
/// `STATUS_PENDING` has finished with `Status`.
pub type NDK_FN_REQUEST_COMPLETION =
    Option<unsafe extern "win64" fn(Context: PVOID, Status: NTSTATUS)>;

/// Consumer callback: an object creation that returned `STATUS_PENDING`
/// has finished; the new object comes with it.
pub type NDK_FN_CREATE_COMPLETION = Option<
    unsafe extern "win64" fn(Context: PVOID, Status: NTSTATUS, pNdkObject: *mut NDK_OBJECT_HEADER),
>;

/// Provider entry: close an object (any type).
pub type NDK_FN_CLOSE_OBJECT = Option<
    unsafe extern "win64" fn(
        pNdkObject: *mut NDK_OBJECT_HEADER,
        CloseCompletion: NDK_FN_CLOSE_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: look up an extension interface of an object.
pub type NDK_FN_QUERY_EXTENSION_INTERFACE = Option<
    unsafe extern "win64" fn(
        pNdkObject: *mut NDK_OBJECT_HEADER,
        ExtensionInterfaceID: *mut GUID,
        ExtensionInterfaceVersion: NDK_VERSION,
        pExtensionInterface: *mut NDK_EXTENSION_INTERFACE,
    ) -> NTSTATUS,
>;

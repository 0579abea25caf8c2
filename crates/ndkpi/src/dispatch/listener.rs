//! Listener: entry types, `NDK_LISTENER_DISPATCH` and `NDK_LISTENER`.

use super::common::{
    NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE, NDK_FN_REQUEST_COMPLETION,
};
use super::connector::NDK_CONNECTOR;
use crate::object::NDK_OBJECT_HEADER;
use crate::sockaddr::PSOCKADDR;
use crate::types::{BOOLEAN, NTSTATUS, PVOID, ULONG};

/// Consumer callback: a connection request arrived, as a new connector.
pub type NDK_FN_CONNECT_EVENT_CALLBACK =
    Option<unsafe extern "win64" fn(ConnectEventContext: PVOID, pNdkConnector: *mut NDK_CONNECTOR)>;

/// Provider entry: pause or resume connect events.
pub type NDK_FN_CONTROL_CONNECT_EVENTS =
    Option<unsafe extern "win64" fn(pNdkListener: *mut NDK_LISTENER, Pause: BOOLEAN)>;

/// Provider entry: start listening on an address.
pub type NDK_FN_LISTEN = Option<
    unsafe extern "win64" fn(
        pNdkListener: *mut NDK_LISTENER,
        pAddress: PSOCKADDR,
        AddressLength: ULONG,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: the listener's local address (in/out byte length).
pub type NDK_FN_GET_LISTENER_LOCAL_ADDRESS = Option<
    unsafe extern "win64" fn(
        pNdkListener: *mut NDK_LISTENER,
        pAddress: PSOCKADDR,
        pAddressLength: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Entry points of a listener.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_LISTENER_DISPATCH {
    /// Closes the listener.
    pub NdkCloseListener: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Starts listening.
    pub NdkListen: NDK_FN_LISTEN,
    /// Returns the local address.
    pub NdkGetLocalAddress: NDK_FN_GET_LISTENER_LOCAL_ADDRESS,
    /// Pauses or resumes connect events.
    pub NdkControlConnectEvents: NDK_FN_CONTROL_CONNECT_EVENTS,
}

/// A listener object.
#[repr(C)]
#[derive(Debug)]
pub struct NDK_LISTENER {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's listener entry points.
    pub Dispatch: *const NDK_LISTENER_DISPATCH,
}

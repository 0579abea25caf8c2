//! Connector: entry types, `NDK_CONNECTOR_DISPATCH` and `NDK_CONNECTOR`
//! (NDKPI 1.2 table; see the module docs of [`crate::dispatch`] for the
//! 2.1 additions left out).

use super::common::{
    NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE, NDK_FN_REQUEST_COMPLETION,
};
use super::endpoint::NDK_SHARED_ENDPOINT;
use super::qp::NDK_QP;
use crate::object::NDK_OBJECT_HEADER;
use crate::sockaddr::PSOCKADDR;
use crate::types::{BOOLEAN, NTSTATUS, PVOID, ULONG};

/// Provider entry: connect a QP from a source to a destination address.
pub type NDK_FN_CONNECT = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pNdkQp: *mut NDK_QP,
        pSrcAddress: PSOCKADDR,
        SrcAddressLength: ULONG,
        pDestAddress: PSOCKADDR,
        DestAddressLength: ULONG,
        InboundReadLimit: ULONG,
        OutboundReadLimit: ULONG,
        pPrivateData: PVOID,
        PrivateDataLength: ULONG,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: connect a QP from a shared endpoint's address.
pub type NDK_FN_CONNECT_WITH_SHARED_ENDPOINT = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pNdkQp: *mut NDK_QP,
        pNdkSharedEndpoint: *mut NDK_SHARED_ENDPOINT,
        pDestAddress: PSOCKADDR,
        DestAddressLength: ULONG,
        InboundReadLimit: ULONG,
        OutboundReadLimit: ULONG,
        pPrivateData: PVOID,
        PrivateDataLength: ULONG,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Consumer callback: the peer ended the connection (or it broke).
pub type NDK_FN_DISCONNECT_EVENT_CALLBACK =
    Option<unsafe extern "win64" fn(DisconnectEventContext: PVOID)>;

/// Provider entry: finish an outgoing connection after the peer accepted.
pub type NDK_FN_COMPLETE_CONNECT = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        DisconnectEvent: NDK_FN_DISCONNECT_EVENT_CALLBACK,
        DisconnectEventContext: PVOID,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: accept an incoming connection onto a QP.
pub type NDK_FN_ACCEPT = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pNdkQp: *mut NDK_QP,
        InboundReadLimit: ULONG,
        OutboundReadLimit: ULONG,
        pPrivateData: PVOID,
        PrivateDataLength: ULONG,
        DisconnectEvent: NDK_FN_DISCONNECT_EVENT_CALLBACK,
        DisconnectEventContext: PVOID,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry: refuse a connection, with optional private data.
pub type NDK_FN_REJECT = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pPrivateData: PVOID,
        PrivateDataLength: ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: the peer's read limits and private data.
pub type NDK_FN_GET_CONNECTION_DATA = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pInboundReadLimit: *mut ULONG,
        pOutboundReadLimit: *mut ULONG,
        pPrivateData: PVOID,
        pPrivateDataLength: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: the connector's local address (in/out byte length).
pub type NDK_FN_GET_LOCAL_ADDRESS = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pAddress: PSOCKADDR,
        pAddressLength: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: the connector's peer address (in/out byte length).
pub type NDK_FN_GET_PEER_ADDRESS = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pAddress: PSOCKADDR,
        pAddressLength: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: disconnect gracefully.
pub type NDK_FN_DISCONNECT = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Disconnect, optionally abortively. Declared by the 1.2 header but not
/// part of any dispatch table there.
pub type NDK_FN_DISCONNECT_EX = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        Abortive: BOOLEAN,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Entry points of a connector (NDKPI 1.2: 11 entries).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_CONNECTOR_DISPATCH {
    /// Closes the connector.
    pub NdkCloseConnector: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Connects.
    pub NdkConnect: NDK_FN_CONNECT,
    /// Connects from a shared endpoint.
    pub NdkConnectWithSharedEndpoint: NDK_FN_CONNECT_WITH_SHARED_ENDPOINT,
    /// Finishes an outgoing connection.
    pub NdkCompleteConnect: NDK_FN_COMPLETE_CONNECT,
    /// Accepts an incoming connection.
    pub NdkAccept: NDK_FN_ACCEPT,
    /// Rejects a connection.
    pub NdkReject: NDK_FN_REJECT,
    /// Returns read limits and private data.
    pub NdkGetConnectionData: NDK_FN_GET_CONNECTION_DATA,
    /// Returns the local address.
    pub NdkGetLocalAddress: NDK_FN_GET_LOCAL_ADDRESS,
    /// Returns the peer address.
    pub NdkGetPeerAddress: NDK_FN_GET_PEER_ADDRESS,
    /// Disconnects.
    pub NdkDisconnect: NDK_FN_DISCONNECT,
}

/// A connector object (one connection's setup and teardown).
#[repr(C)]
#[derive(Debug)]
pub struct NDK_CONNECTOR {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's connector entry points.
    pub Dispatch: *const NDK_CONNECTOR_DISPATCH,
}

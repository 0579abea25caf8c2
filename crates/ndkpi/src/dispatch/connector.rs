//! Connector: entry types, `NDK_CONNECTOR_DISPATCH` and `NDK_CONNECTOR`.
//!
//! The table is the NDKPI 2.1 one: the 1.x table's eleven entries, then
//! `NdkCompleteConnectEx` and `NdkAcceptEx`, which take the extended
//! disconnect callback (it carries a provider disconnect reason). A 1.x
//! consumer reads only the first [`NDK_CONNECTOR_DISPATCH_1_SIZE`] bytes.

use super::common::{
    NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE, NDK_FN_REQUEST_COMPLETION,
};
use super::endpoint::NDK_SHARED_ENDPOINT;
use super::qp::NDK_QP;
use crate::object::NDK_OBJECT_HEADER;
use crate::sockaddr::PSOCKADDR;
use crate::types::{BOOLEAN, NTSTATUS, PVOID, ULONG};

/// Bytes of `NDK_CONNECTOR_DISPATCH` up to and including `NdkDisconnect`:
/// the whole table of NDKPI 1.x, all a 1.x consumer reads (ours; the
/// header has no such constant).
pub const NDK_CONNECTOR_DISPATCH_1_SIZE: usize =
    core::mem::offset_of!(NDK_CONNECTOR_DISPATCH, NdkDisconnect) + size_of::<NDK_FN_DISCONNECT>();

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

/// Consumer callback (NDKPI 2.1): as [`NDK_FN_DISCONNECT_EVENT_CALLBACK`],
/// with a provider-specific code saying why the connection ended (0: the
/// provider gives no reason).
pub type NDK_FN_DISCONNECT_EVENT_CALLBACK_EX = Option<
    unsafe extern "win64" fn(DisconnectEventContext: PVOID, ProviderDisconnectReason: ULONG),
>;

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

/// Provider entry (NDKPI 2.1): [`NDK_FN_COMPLETE_CONNECT`] with the
/// extended disconnect callback.
pub type NDK_FN_COMPLETE_CONNECT_EX = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        DisconnectEvent: NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
        DisconnectEventContext: PVOID,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
    ) -> NTSTATUS,
>;

/// Provider entry (NDKPI 2.1): [`NDK_FN_ACCEPT`] with the extended
/// disconnect callback.
pub type NDK_FN_ACCEPT_EX = Option<
    unsafe extern "win64" fn(
        pNdkConnector: *mut NDK_CONNECTOR,
        pNdkQp: *mut NDK_QP,
        InboundReadLimit: ULONG,
        OutboundReadLimit: ULONG,
        pPrivateData: PVOID,
        PrivateDataLength: ULONG,
        DisconnectEvent: NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
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

/// Entry points of a connector (NDKPI 2.1: 13 entries; 1.x has the first
/// 11).
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
    /// Finishes an outgoing connection, extended disconnect callback
    /// (NDKPI 2.1).
    pub NdkCompleteConnectEx: NDK_FN_COMPLETE_CONNECT_EX,
    /// Accepts an incoming connection, extended disconnect callback
    /// (NDKPI 2.1).
    pub NdkAcceptEx: NDK_FN_ACCEPT_EX,
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

//! Adapter: entry types, `NDK_ADAPTER_DISPATCH` and `NDK_ADAPTER`. The
//! adapter has no close entry; NDIS closes it through the miniport's
//! close-adapter handler.

use super::common::{
    NDK_FN_CREATE_COMPLETION, NDK_FN_QUERY_EXTENSION_INTERFACE, NDK_FN_REQUEST_COMPLETION,
};
use super::connector::NDK_CONNECTOR;
use super::cq::{NDK_CQ, NDK_FN_CQ_NOTIFICATION_CALLBACK};
use super::endpoint::NDK_SHARED_ENDPOINT;
use super::listener::{NDK_FN_CONNECT_EVENT_CALLBACK, NDK_LISTENER};
use super::pd::NDK_PD;
use crate::info::NDK_ADAPTER_INFO;
use crate::lam::NDK_LOGICAL_ADDRESS_MAPPING;
use crate::mdl::MDL;
use crate::object::{NDK_OBJECT_HEADER, NDK_VERSION};
use crate::sockaddr::PSOCKADDR;
use crate::types::{GROUP_AFFINITY, NTSTATUS, PVOID, SIZE_T, ULONG};

/// Provider entry: copy the adapter info (in/out byte size). Passive level.
pub type NDK_FN_QUERY_ADAPTER_INFO = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        pInfo: *mut NDK_ADAPTER_INFO,
        pBufferSize: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Query adapter info for a given version. Declared by the 1.2 header but
/// not part of any dispatch table there.
pub type NDK_FN_QUERY_ADAPTER_INFO_EX = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        Version: NDK_VERSION,
        pInfo: *mut NDK_ADAPTER_INFO,
        pBufferSize: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: create a completion queue.
pub type NDK_FN_CREATE_CQ = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        CqDepth: ULONG,
        CqNotification: NDK_FN_CQ_NOTIFICATION_CALLBACK,
        CqNotificationContext: PVOID,
        Affinity: *mut GROUP_AFFINITY,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkCq: *mut *mut NDK_CQ,
    ) -> NTSTATUS,
>;

/// Provider entry: create a protection domain.
pub type NDK_FN_CREATE_PD = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkPd: *mut *mut NDK_PD,
    ) -> NTSTATUS,
>;

/// Provider entry: create a shared endpoint on a local address.
pub type NDK_FN_CREATE_SHARED_ENDPOINT = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        pAddress: PSOCKADDR,
        AddressLength: ULONG,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkSharedEndpoint: *mut *mut NDK_SHARED_ENDPOINT,
    ) -> NTSTATUS,
>;

/// Provider entry: create a connector.
pub type NDK_FN_CREATE_CONNECTOR = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkConnector: *mut *mut NDK_CONNECTOR,
    ) -> NTSTATUS,
>;

/// Provider entry: create a listener.
pub type NDK_FN_CREATE_LISTENER = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        ConnectEvent: NDK_FN_CONNECT_EVENT_CALLBACK,
        ConnectEventContext: PVOID,
        CreateCompletion: NDK_FN_CREATE_COMPLETION,
        RequestContext: PVOID,
        ppNdkListener: *mut *mut NDK_LISTENER,
    ) -> NTSTATUS,
>;

/// Provider entry: build a logical address mapping for an MDL span (in/out
/// byte size, first-byte offset out). The completion may be null.
pub type NDK_FN_BUILD_LAM = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        Mdl: *mut MDL,
        Length: SIZE_T,
        RequestCompletion: NDK_FN_REQUEST_COMPLETION,
        RequestContext: PVOID,
        pNdkLAM: *mut NDK_LOGICAL_ADDRESS_MAPPING,
        pLAMSize: *mut ULONG,
        pFBO: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Provider entry: release a logical address mapping.
pub type NDK_FN_RELEASE_LAM = Option<
    unsafe extern "win64" fn(
        pNdkAdapter: *mut NDK_ADAPTER,
        pNdkLAM: *mut NDK_LOGICAL_ADDRESS_MAPPING,
    ),
>;

/// Entry points of an adapter.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_ADAPTER_DISPATCH {
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Returns the adapter info.
    pub NdkQueryAdapterInfo: NDK_FN_QUERY_ADAPTER_INFO,
    /// Creates a CQ.
    pub NdkCreateCq: NDK_FN_CREATE_CQ,
    /// Creates a PD.
    pub NdkCreatePd: NDK_FN_CREATE_PD,
    /// Creates a shared endpoint.
    pub NdkCreateSharedEndpoint: NDK_FN_CREATE_SHARED_ENDPOINT,
    /// Creates a connector.
    pub NdkCreateConnector: NDK_FN_CREATE_CONNECTOR,
    /// Creates a listener.
    pub NdkCreateListener: NDK_FN_CREATE_LISTENER,
    /// Builds a LAM.
    pub NdkBuildLAM: NDK_FN_BUILD_LAM,
    /// Releases a LAM.
    pub NdkReleaseLAM: NDK_FN_RELEASE_LAM,
}

/// An adapter object (one consumer's open instance of the RNIC).
#[repr(C)]
#[derive(Debug)]
pub struct NDK_ADAPTER {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's adapter entry points.
    pub Dispatch: *const NDK_ADAPTER_DISPATCH,
}

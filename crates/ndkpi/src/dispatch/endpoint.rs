//! Shared endpoint: entry type, `NDK_SHARED_ENDPOINT_DISPATCH` and
//! `NDK_SHARED_ENDPOINT`.

use super::common::{NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE};
use crate::object::NDK_OBJECT_HEADER;
use crate::sockaddr::PSOCKADDR;
use crate::types::{NTSTATUS, ULONG};

/// Provider entry: the endpoint's local address (in/out byte length).
pub type NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS = Option<
    unsafe extern "win64" fn(
        pNdkSharedEndpoint: *mut NDK_SHARED_ENDPOINT,
        pAddress: PSOCKADDR,
        pAddressLength: *mut ULONG,
    ) -> NTSTATUS,
>;

/// Entry points of a shared endpoint.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_SHARED_ENDPOINT_DISPATCH {
    /// Closes the endpoint.
    pub NdkCloseSharedEndpoint: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Returns the local address.
    pub NdkGetLocalAddress: NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS,
}

/// A shared endpoint object (a local address several connectors use).
#[repr(C)]
#[derive(Debug)]
pub struct NDK_SHARED_ENDPOINT {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's shared-endpoint entry points.
    pub Dispatch: *const NDK_SHARED_ENDPOINT_DISPATCH,
}

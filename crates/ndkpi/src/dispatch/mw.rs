//! Memory window: entry type, `NDK_MW_DISPATCH` and `NDK_MW`.

use super::common::{NDK_FN_CLOSE_OBJECT, NDK_FN_QUERY_EXTENSION_INTERFACE};
use crate::object::NDK_OBJECT_HEADER;
use crate::types::UINT32;

/// Provider entry: the MW's remote token.
pub type NDK_FN_GET_REMOTE_TOKEN_FROM_MW =
    Option<unsafe extern "win64" fn(pNdkMw: *mut NDK_MW) -> UINT32>;

/// Entry points of a memory window.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NDK_MW_DISPATCH {
    /// Closes the MW.
    pub NdkCloseMw: NDK_FN_CLOSE_OBJECT,
    /// Looks up an extension interface.
    pub NdkQueryExtension: NDK_FN_QUERY_EXTENSION_INTERFACE,
    /// Returns the remote token.
    pub NdkGetRemoteTokenFromMw: NDK_FN_GET_REMOTE_TOKEN_FROM_MW,
}

/// A memory window object.
#[repr(C)]
#[derive(Debug)]
pub struct NDK_MW {
    /// Common header.
    pub Header: NDK_OBJECT_HEADER,
    /// The provider's MW entry points.
    pub Dispatch: *const NDK_MW_DISPATCH,
}

//! V's registry keywords (`rsndk_mp.inx`'s `Ndi\Params`, under V's
//! driver key), read once in `MiniportInitializeEx`, and the keyword
//! reader the protocol edge shares (`UpperBindings`).

use core::ptr;

use ndis::{
    NDIS_CONFIGURATION_OBJECT, NDIS_CONFIGURATION_PARAMETER, NDIS_HANDLE, NDIS_STRING,
    NETWORK_DIRECT_KEYWORD, NdisCloseConfiguration, NdisOpenConfigurationEx, NdisParameterInteger,
    NdisReadConfiguration, UNICODE_STRING, ascii_to_utf16,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_SUCCESS};

/// `*NetworkDirectRoCEFrameSize`: the RoCE path MTU.
const ROCE_FRAME_SIZE_KEYWORD: [u16; 27] = ascii_to_utf16(b"*NetworkDirectRoCEFrameSize");

/// What the keywords say, with the INF defaults for missing ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdapterConfig {
    /// `*NetworkDirect` is nonzero: NDK may be enabled.
    pub network_direct: bool,
    /// RoCE path MTU: 256, 512, 1024, 2048 or 4096.
    pub pmtu: u32,
}

impl Default for AdapterConfig {
    fn default() -> Self {
        Self {
            network_direct: true,
            pmtu: 1024,
        }
    }
}

/// Reads one keyword; `None` if absent or of another type. The value (and
/// a string's buffer) stays valid until the handle is closed.
///
/// # Safety
/// `handle` is an open configuration handle (PASSIVE_LEVEL).
pub unsafe fn read(
    handle: NDIS_HANDLE,
    keyword: &'static [u16],
    kind: i32,
) -> Option<NDIS_CONFIGURATION_PARAMETER> {
    let mut name: NDIS_STRING = UNICODE_STRING::from_static(keyword);
    let mut status: NDIS_STATUS = NDIS_STATUS_SUCCESS;
    let mut value: *mut NDIS_CONFIGURATION_PARAMETER = ptr::null_mut();
    // SAFETY: open handle (caller), valid out-pointers and keyword.
    unsafe { NdisReadConfiguration(&raw mut status, &raw mut value, handle, &raw mut name, kind) };
    if status != NDIS_STATUS_SUCCESS || value.is_null() {
        return None;
    }
    // SAFETY: NDIS returned a parameter valid until the handle closes.
    let value = unsafe { *value };
    (value.ParameterType == kind).then_some(value)
}

/// Reads the adapter's keywords (`PASSIVE_LEVEL`, from
/// `MiniportInitializeEx`). A failure to open the configuration gives the
/// defaults.
pub fn read_config(adapter: NDIS_HANDLE) -> AdapterConfig {
    let mut config = AdapterConfig::default();
    let mut object = NDIS_CONFIGURATION_OBJECT::new(adapter);
    let mut handle: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL; a revision-1 object for our adapter handle.
    let status = unsafe { NdisOpenConfigurationEx(&raw mut object, &raw mut handle) };
    if status != NDIS_STATUS_SUCCESS {
        return config;
    }
    // SAFETY: `handle` is open until the close below.
    if let Some(p) = unsafe { read(handle, &NETWORK_DIRECT_KEYWORD, NdisParameterInteger) } {
        // SAFETY: an integer parameter's live member is IntegerData.
        config.network_direct = unsafe { p.ParameterData.IntegerData } != 0;
    }
    // SAFETY: `handle` is open until the close below.
    if let Some(p) = unsafe { read(handle, &ROCE_FRAME_SIZE_KEYWORD, NdisParameterInteger) } {
        // SAFETY: an integer parameter's live member is IntegerData.
        let size = unsafe { p.ParameterData.IntegerData };
        if matches!(size, 256 | 512 | 1024 | 2048 | 4096) {
            config.pmtu = size;
        }
    }
    // SAFETY: opened above, closed once.
    unsafe { NdisCloseConfiguration(handle) };
    config
}

//! V's registry keywords (`rsndk_mp.inx`'s `Ndi\Params`, under V's
//! driver key), read once in `MiniportInitializeEx`.

use ndis::{NETWORK_DIRECT_KEYWORD, ascii_to_utf16};

use super::kit::ndis::{AdapterHandle, Configuration, ConfigurationOf};

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

/// Reads the adapter's keywords (`PASSIVE_LEVEL`, from
/// `MiniportInitializeEx`). A failure to open the configuration gives the
/// defaults.
pub fn read_config(adapter: AdapterHandle) -> AdapterConfig {
    let mut config = AdapterConfig::default();
    let Ok(keys) = Configuration::open(ConfigurationOf::Adapter(adapter)) else {
        return config;
    };
    if let Some(value) = keys.integer(&NETWORK_DIRECT_KEYWORD) {
        config.network_direct = value != 0;
    }
    if let Some(size) = keys.integer(&ROCE_FRAME_SIZE_KEYWORD)
        && matches!(size, 256 | 512 | 1024 | 2048 | 4096)
    {
        config.pmtu = size;
    }
    config
}

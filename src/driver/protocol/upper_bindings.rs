//! The `UpperBindings` value of a binding's protocol configuration
//! (`HKLM\...\Services\rsndkp\Parameters\Adapters\{P}`): the device name
//! of the virtual miniport the notify object created over P. The MUX
//! sample reads it as a `REG_MULTI_SZ` (one name per virtual miniport);
//! in 1:1 mode it is a `REG_SZ`. Both are accepted; the first name is V's.

use alloc::vec::Vec;

use ndis::{
    NDIS_STATUS_OPEN_FAILED, NdisParameterMultiString, NdisParameterString, ascii_to_utf16,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_RESOURCES};

use crate::driver::kit::ndis::{BindingHandle, Configuration, ConfigurationOf};

/// The value's name.
static UPPER_BINDINGS: [u16; 13] = ascii_to_utf16(b"UpperBindings");

/// The first name of a `REG_MULTI_SZ` or the whole `REG_SZ`: the code
/// units up to the first NUL.
pub fn first_name(value: &[u16]) -> &[u16] {
    let end = value.iter().position(|&c| c == 0).unwrap_or(value.len());
    value.get(..end).unwrap_or(&[])
}

/// Reads V's device name for the binding `binding` (`PASSIVE_LEVEL`, the
/// binding open). `Ok(None)`: the value is there but names nothing (the
/// sample then brings up no virtual miniport); an error when the
/// configuration cannot be opened (NDIS's status) or the value is missing
/// (`NDIS_STATUS_FAILURE`).
pub fn read(binding: BindingHandle) -> Result<Option<Vec<u16>>, NDIS_STATUS> {
    // NdisOpenConfigurationEx opens the binding's protocol configuration
    // section.
    let keys = Configuration::open(ConfigurationOf::Binding(binding)).map_err(|status| {
        // NDIS's own reason (NDIS_STATUS_RESOURCES when memory ran out);
        // the sample reports every such failure as NDIS_STATUS_OPEN_FAILED.
        if status < 0 {
            status
        } else {
            NDIS_STATUS_OPEN_FAILED
        }
    })?;
    let copy = |units: &[u16]| -> Result<Option<Vec<u16>>, NDIS_STATUS> {
        let name = first_name(units);
        if name.is_empty() {
            return Ok(None);
        }
        let mut owned = Vec::new();
        owned
            .try_reserve_exact(name.len())
            .map_err(|_| NDIS_STATUS_RESOURCES)?;
        owned.extend_from_slice(name);
        Ok(Some(owned))
    };
    keys.string(&UPPER_BINDINGS, NdisParameterMultiString, copy)
        .or_else(|| keys.string(&UPPER_BINDINGS, NdisParameterString, copy))
        .ok_or(ndkpi::NDIS_STATUS_FAILURE)?
}

//! The `UpperBindings` value of a binding's protocol configuration
//! (`HKLM\...\Services\rsndkp\Parameters\Adapters\{P}`): the device name
//! of the virtual miniport the notify object created over P. The MUX
//! sample reads it as a `REG_MULTI_SZ` (one name per virtual miniport);
//! in 1:1 mode it is a `REG_SZ`. Both are accepted; the first name is V's.

use alloc::vec::Vec;
use core::ptr;

use ndis::NDIS_STATUS_OPEN_FAILED;
use ndis::{
    NDIS_CONFIGURATION_OBJECT, NDIS_HANDLE, NdisCloseConfiguration, NdisOpenConfigurationEx,
    NdisParameterMultiString, NdisParameterString, ascii_to_utf16,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS};

use crate::driver::config;

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
pub fn read(binding: NDIS_HANDLE) -> Result<Option<Vec<u16>>, NDIS_STATUS> {
    let mut object = NDIS_CONFIGURATION_OBJECT::new(binding);
    let mut handle: NDIS_HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL; a revision-1 object naming an open binding
    // (NdisOpenConfigurationEx opens its protocol configuration section).
    let status = unsafe { NdisOpenConfigurationEx(&raw mut object, &raw mut handle) };
    if status != NDIS_STATUS_SUCCESS {
        // NDIS's own reason (NDIS_STATUS_RESOURCES when memory ran out);
        // the sample reports every such failure as NDIS_STATUS_OPEN_FAILED.
        return Err(if status < 0 {
            status
        } else {
            NDIS_STATUS_OPEN_FAILED
        });
    }
    let result = read_open(handle);
    // SAFETY: opened above, closed once; nothing read from it is used
    // after (`read_open` copied the name).
    unsafe { NdisCloseConfiguration(handle) };
    result
}

fn read_open(handle: NDIS_HANDLE) -> Result<Option<Vec<u16>>, NDIS_STATUS> {
    // SAFETY: `handle` is open until the caller closes it.
    let value = unsafe { config::read(handle, &UPPER_BINDINGS, NdisParameterMultiString) }
        // SAFETY: `handle` is open until the caller closes it.
        .or_else(|| unsafe { config::read(handle, &UPPER_BINDINGS, NdisParameterString) })
        .ok_or(ndkpi::NDIS_STATUS_FAILURE)?;
    // SAFETY: a string parameter's live member is StringData (both
    // accepted types are strings).
    let text = unsafe { value.ParameterData.StringData };
    if text.Buffer.is_null() {
        return Ok(None);
    }
    // SAFETY: NDIS's string of `Length` bytes, valid until the
    // configuration handle closes (after this copy).
    let units = unsafe { core::slice::from_raw_parts(text.Buffer, usize::from(text.Length) / 2) };
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
}

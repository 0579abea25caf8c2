//! The C entry points of `include/rsndk_host.h`, exported from `librsndk.so`.
//!
//! They are the Linux stand-in for what NDIS does on Windows when a kernel
//! consumer asks WSK for an NDK adapter: open one, hand out its
//! `NDK_ADAPTER`, close it again. Everything after the open goes through the
//! NDK dispatch tables exactly as on Windows.

use core::ffi::{CStr, c_char};

use ndkpi::{NDK_ADAPTER, NTSTATUS, STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};

use crate::config::{AdapterConfig, ConfigError};

/// Reads and parses the C configuration string.
///
/// # Safety
/// `config` must be null or point to a NUL-terminated string that stays
/// valid for the duration of the call.
unsafe fn read_config(config: *const c_char) -> Result<AdapterConfig, ConfigError> {
    if config.is_null() {
        return Err(ConfigError::Empty);
    }
    // SAFETY: non-null, and the caller guarantees a live NUL-terminated string.
    let text = unsafe { CStr::from_ptr(config) };
    text.to_str().map_err(|_| ConfigError::NotUtf8)?.parse()
}

/// Opens one software RNIC adapter described by `config` and stores its
/// `NDK_ADAPTER` in `*adapter`.
///
/// Returns `STATUS_INVALID_PARAMETER` (writing nothing) when `config` or
/// `adapter` is null or the configuration does not parse. The software RNIC
/// behind the adapter is not implemented yet, so a valid configuration
/// returns `STATUS_NOT_SUPPORTED` and writes nothing.
///
/// # Safety
/// `config` must be null or a NUL-terminated string; `adapter` must be null
/// or valid for a pointer-sized write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RsNdkOpenAdapter(
    config: *const c_char,
    adapter: *mut *mut NDK_ADAPTER,
) -> NTSTATUS {
    if adapter.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: forwarded from this function's own contract on `config`.
    match unsafe { read_config(config) } {
        Err(_) => STATUS_INVALID_PARAMETER,
        Ok(_) => STATUS_NOT_SUPPORTED,
    }
}

/// Closes an adapter opened by [`RsNdkOpenAdapter`]; returns when no
/// callback into the consumer is running or can still run.
///
/// Returns `STATUS_INVALID_PARAMETER` for a null adapter. No adapter can be
/// opened yet, so any other pointer is not one of ours:
/// `STATUS_NOT_SUPPORTED`.
///
/// # Safety
/// `adapter` must be null or a pointer returned by [`RsNdkOpenAdapter`]
/// that was not closed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RsNdkCloseAdapter(adapter: *mut NDK_ADAPTER) -> NTSTATUS {
    if adapter.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    STATUS_NOT_SUPPORTED
}

/// Parses a configuration string as [`RsNdkOpenAdapter`] would, for tools
/// that want the error message rather than the status.
pub fn parse_config(text: &str) -> Result<AdapterConfig, ConfigError> {
    text.parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr;

    #[test]
    fn bad_input_is_refused_and_nothing_is_written() {
        let sentinel = ptr::dangling_mut::<NDK_ADAPTER>();
        for config in [
            c"",
            c"not-an-address",
            c"127.0.0.1,pmtu=7",
            c"mem:bad name/127.0.0.1",
        ] {
            let mut out = sentinel;
            // SAFETY: valid C string and a valid out-pointer.
            let status = unsafe { RsNdkOpenAdapter(config.as_ptr(), &raw mut out) };
            assert_eq!(status, STATUS_INVALID_PARAMETER, "{config:?}");
            assert_eq!(out, sentinel, "nothing written for {config:?}");
        }
        let mut out = sentinel;
        // SAFETY: null config is part of the contract.
        let status = unsafe { RsNdkOpenAdapter(ptr::null(), &raw mut out) };
        assert_eq!((status, out), (STATUS_INVALID_PARAMETER, sentinel));
        // SAFETY: null out-pointer is part of the contract.
        let status = unsafe { RsNdkOpenAdapter(c"127.0.0.1".as_ptr(), ptr::null_mut()) };
        assert_eq!(status, STATUS_INVALID_PARAMETER);
        // SAFETY: non-UTF-8 but NUL-terminated bytes.
        let status = unsafe { RsNdkOpenAdapter(c"\xff\xfe".as_ptr(), &raw mut out) };
        assert_eq!((status, out), (STATUS_INVALID_PARAMETER, sentinel));
    }

    #[test]
    fn valid_config_does_not_fake_success() {
        let sentinel = ptr::dangling_mut::<NDK_ADAPTER>();
        let mut out = sentinel;
        // SAFETY: valid C string and out-pointer.
        let status = unsafe { RsNdkOpenAdapter(c"127.0.0.2".as_ptr(), &raw mut out) };
        assert_eq!((status, out), (STATUS_NOT_SUPPORTED, sentinel));
        // SAFETY: null is part of the contract.
        assert_eq!(
            unsafe { RsNdkCloseAdapter(ptr::null_mut()) },
            STATUS_INVALID_PARAMETER
        );
    }
}

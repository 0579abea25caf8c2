//! The C entry points of `include/rsndk_host.h`, exported from `librsndk.so`.
//!
//! They are the Linux stand-in for what NDIS does on Windows when a kernel
//! consumer asks WSK for an NDK adapter: open one, hand out its
//! `NDK_ADAPTER`, close it again. Everything after the open goes through the
//! NDK dispatch tables exactly as on Windows.

use core::ffi::{CStr, c_char};

use ndkpi::{
    NDK_ADAPTER, NDK_VERSION, NDK_VERSION_1_2, NTSTATUS, STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};

use crate::adapters;
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

/// Opens one software RNIC adapter described by `config` at NDK version
/// 1.2 and stores its `NDK_ADAPTER` in `*adapter`. See
/// [`RsNdkOpenAdapterEx`] for the statuses.
///
/// # Safety
/// As for [`RsNdkOpenAdapterEx`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RsNdkOpenAdapter(
    config: *const c_char,
    adapter: *mut *mut NDK_ADAPTER,
) -> NTSTATUS {
    // SAFETY: forwarded from this function's own contract.
    unsafe {
        RsNdkOpenAdapterEx(
            config,
            NDK_VERSION_1_2.Major,
            NDK_VERSION_1_2.Minor,
            adapter,
        )
    }
}

/// Opens one software RNIC adapter described by `config`, for a consumer
/// asking for NDK version `major.minor`, and stores its `NDK_ADAPTER` in
/// `*adapter`. Accepted: 1.0-1.2, served at 1.2 (the 1.2 interface), and
/// 2.0-2.1, served at 2.1 (the 1.2 interface plus `NdkCompleteConnectEx`,
/// `NdkAcceptEx` with a disconnect reason, and `ProviderErrorCode` in
/// `NDK_RESULT_EX`): the consumer names the lowest minor it accepts and
/// minors of one major are supersets (`provider::negotiate`).
///
/// Writes nothing on failure. `STATUS_INVALID_PARAMETER`: `config` or
/// `adapter` is null, or the configuration does not parse, or its pcap file
/// cannot be created; `NDIS_STATUS_BAD_VERSION`: an unsupported version;
/// `STATUS_SHARING_VIOLATION`: the address belongs to another process's
/// adapter (UDP port 4791 taken), to a device of this process opened with
/// a different configuration, or to another node of the same fabric;
/// `STATUS_ACCESS_DENIED`: an IPv4 UDP adapter in a process without
/// `CAP_NET_RAW` (its raw sockets own the IPv4 header the ICRC covers; the
/// message says so on stderr); `STATUS_INSUFFICIENT_RESOURCES`: memory or
/// threads ran out.
///
/// # Safety
/// `config` must be null or a NUL-terminated string; `adapter` must be null
/// or valid for a pointer-sized write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RsNdkOpenAdapterEx(
    config: *const c_char,
    major: u16,
    minor: u16,
    adapter: *mut *mut NDK_ADAPTER,
) -> NTSTATUS {
    if adapter.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: forwarded from this function's own contract on `config`.
    let Ok(config) = (unsafe { read_config(config) }) else {
        return STATUS_INVALID_PARAMETER;
    };
    match adapters::open(
        &config,
        NDK_VERSION {
            Major: major,
            Minor: minor,
        },
    ) {
        Ok(opened) => {
            // SAFETY: non-null, and the caller guarantees it is writable.
            unsafe { adapter.write(opened) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// Closes an adapter opened by [`RsNdkOpenAdapter`]; returns when no
/// callback into the consumer is running or can still run. When the last
/// adapter of a device closes, the device stops.
///
/// `STATUS_INVALID_PARAMETER` for null or for a pointer that is not an open
/// adapter of this process.
///
/// # Safety
/// `adapter` must be null or a pointer returned by [`RsNdkOpenAdapter`]
/// that was not closed yet; no other call on it may be running.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RsNdkCloseAdapter(adapter: *mut NDK_ADAPTER) -> NTSTATUS {
    if adapter.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { adapters::close(adapter) }
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
    fn closing_a_pointer_that_is_not_an_adapter_is_refused() {
        // SAFETY: null is part of the contract.
        let status = unsafe { RsNdkCloseAdapter(ptr::null_mut()) };
        assert_eq!(status, STATUS_INVALID_PARAMETER);
        let mut not_ours = 0u64;
        let p = (&raw mut not_ours).cast::<NDK_ADAPTER>();
        // SAFETY: the registry refuses pointers it did not hand out before
        // touching them.
        assert_eq!(unsafe { RsNdkCloseAdapter(p) }, STATUS_INVALID_PARAMETER);
    }
}

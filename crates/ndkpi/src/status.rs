//! NTSTATUS and NDIS_STATUS values that NDK providers return or report in
//! completions, with their `ntstatus.h` / `ndis.h` values.
//!
//! Each code is declared once, in the `statuses!` list below; it yields the
//! constants, [`STATUS_NAMES`] and [`status_name`].

use crate::types::NTSTATUS;

/// Status type of NDIS entry points (`int`, same values as NTSTATUS).
pub type NDIS_STATUS = i32;

/// Declares each status constant and the name table built from them.
macro_rules! statuses {
    ($( $(#[$doc:meta])* $name:ident = $value:literal; )*) => {
        $(
            $(#[$doc])*
            pub const $name: NTSTATUS = $value as u32 as i32;
        )*

        /// Every status this crate names, as (C name, value), in table order.
        pub const STATUS_NAMES: &[(&str, NTSTATUS)] = &[
            $( (stringify!($name), $name), )*
        ];

        /// The C name of a status code this crate declares, for logs.
        ///
        /// NDIS aliases of NT codes (`NDIS_STATUS_SUCCESS`,
        /// `NDIS_STATUS_RESOURCES`, ...) come back under their `STATUS_` name.
        pub const fn status_name(status: NTSTATUS) -> Option<&'static str> {
            match status {
                $( $name => Some(stringify!($name)), )*
                _ => None,
            }
        }
    };
}

statuses! {
    /// The operation succeeded.
    STATUS_SUCCESS = 0x0000_0000;
    /// A wait ended because its time limit passed (success class).
    STATUS_TIMEOUT = 0x0000_0102;
    /// The operation continues; a completion callback will report its end.
    STATUS_PENDING = 0x0000_0103;
    /// Data did not fit; what fit was delivered (warning class). NDK also
    /// uses it for a CQ overrun.
    STATUS_BUFFER_OVERFLOW = 0x8000_0005;
    /// Generic failure.
    STATUS_UNSUCCESSFUL = 0xC000_0001;
    /// The function is not implemented.
    STATUS_NOT_IMPLEMENTED = 0xC000_0002;
    /// A memory access was outside the allowed range or rights.
    STATUS_ACCESS_VIOLATION = 0xC000_0005;
    /// An object pointer or handle is not valid.
    STATUS_INVALID_HANDLE = 0xC000_0008;
    /// A parameter is not valid.
    STATUS_INVALID_PARAMETER = 0xC000_000D;
    /// The request is not valid for this device.
    STATUS_INVALID_DEVICE_REQUEST = 0xC000_0010;
    /// Not enough memory.
    STATUS_NO_MEMORY = 0xC000_0017;
    /// Access denied.
    STATUS_ACCESS_DENIED = 0xC000_0022;
    /// The caller's buffer is too small; the needed size was returned.
    STATUS_BUFFER_TOO_SMALL = 0xC000_0023;
    /// Parameters conflict with each other.
    STATUS_INVALID_PARAMETER_MIX = 0xC000_0030;
    /// More data arrived than the receiver could hold.
    STATUS_DATA_OVERRUN = 0xC000_003C;
    /// Data error while reading or writing.
    STATUS_DATA_ERROR = 0xC000_003E;
    /// The address (or other resource) is already in exclusive use.
    STATUS_SHARING_VIOLATION = 0xC000_0043;
    /// Out of memory or another resource.
    STATUS_INSUFFICIENT_RESOURCES = 0xC000_009A;
    /// The device is not ready.
    STATUS_DEVICE_NOT_READY = 0xC000_00A3;
    /// An I/O operation timed out.
    STATUS_IO_TIMEOUT = 0xC000_00B5;
    /// The request is not supported.
    STATUS_NOT_SUPPORTED = 0xC000_00BB;
    /// Internal (fatal) error.
    STATUS_INTERNAL_ERROR = 0xC000_00E5;
    /// The 1st argument is not valid.
    STATUS_INVALID_PARAMETER_1 = 0xC000_00EF;
    /// The 2nd argument is not valid.
    STATUS_INVALID_PARAMETER_2 = 0xC000_00F0;
    /// The 3rd argument is not valid.
    STATUS_INVALID_PARAMETER_3 = 0xC000_00F1;
    /// The 4th argument is not valid.
    STATUS_INVALID_PARAMETER_4 = 0xC000_00F2;
    /// The 5th argument is not valid.
    STATUS_INVALID_PARAMETER_5 = 0xC000_00F3;
    /// The 6th argument is not valid.
    STATUS_INVALID_PARAMETER_6 = 0xC000_00F4;
    /// The 7th argument is not valid.
    STATUS_INVALID_PARAMETER_7 = 0xC000_00F5;
    /// The 8th argument is not valid.
    STATUS_INVALID_PARAMETER_8 = 0xC000_00F6;
    /// The 9th argument is not valid.
    STATUS_INVALID_PARAMETER_9 = 0xC000_00F7;
    /// The 10th argument is not valid.
    STATUS_INVALID_PARAMETER_10 = 0xC000_00F8;
    /// The 11th argument is not valid.
    STATUS_INVALID_PARAMETER_11 = 0xC000_00F9;
    /// The 12th argument is not valid.
    STATUS_INVALID_PARAMETER_12 = 0xC000_00FA;
    /// The operation was cancelled (NDK: flushed work requests).
    STATUS_CANCELLED = 0xC000_0120;
    /// The local side closed the connection.
    STATUS_LOCAL_DISCONNECT = 0xC000_013B;
    /// The remote side closed the connection.
    STATUS_REMOTE_DISCONNECT = 0xC000_013C;
    /// The remote side lacked resources or rejected the access.
    STATUS_REMOTE_RESOURCES = 0xC000_013D;
    /// The address is not valid here (e.g. not this adapter's).
    STATUS_INVALID_ADDRESS = 0xC000_0141;
    /// The device is in a state that does not allow the request.
    STATUS_INVALID_DEVICE_STATE = 0xC000_0184;
    /// A buffer size is not valid.
    STATUS_INVALID_BUFFER_SIZE = 0xC000_0206;
    /// No free address (port) is left.
    STATUS_TOO_MANY_ADDRESSES = 0xC000_0209;
    /// The address (connection 4-tuple) already exists.
    STATUS_ADDRESS_ALREADY_EXISTS = 0xC000_020A;
    /// The address was closed.
    STATUS_ADDRESS_CLOSED = 0xC000_020B;
    /// The connection was disconnected.
    STATUS_CONNECTION_DISCONNECTED = 0xC000_020C;
    /// The connection was reset.
    STATUS_CONNECTION_RESET = 0xC000_020D;
    /// The object was not found.
    STATUS_NOT_FOUND = 0xC000_0225;
    /// The peer refused the connection.
    STATUS_CONNECTION_REFUSED = 0xC000_0236;
    /// The connection was closed gracefully.
    STATUS_GRACEFUL_DISCONNECT = 0xC000_0237;
    /// The operation needs a connection in another state (NDK: not
    /// connected).
    STATUS_CONNECTION_INVALID = 0xC000_023A;
    /// The connection is already active.
    STATUS_CONNECTION_ACTIVE = 0xC000_023B;
    /// The network cannot be reached.
    STATUS_NETWORK_UNREACHABLE = 0xC000_023C;
    /// The host cannot be reached.
    STATUS_HOST_UNREACHABLE = 0xC000_023D;
    /// The protocol cannot be reached at the host.
    STATUS_PROTOCOL_UNREACHABLE = 0xC000_023E;
    /// The port cannot be reached at the host.
    STATUS_PORT_UNREACHABLE = 0xC000_023F;
    /// The request was aborted.
    STATUS_REQUEST_ABORTED = 0xC000_0240;
    /// The connection was aborted.
    STATUS_CONNECTION_ABORTED = 0xC000_0241;
    /// The device was removed.
    STATUS_DEVICE_REMOVED = 0xC000_02B6;
    /// An implementation limit was exceeded.
    STATUS_IMPLEMENTATION_LIMIT = 0xC000_042B;
    /// NDIS: the requested interface version is not supported.
    NDIS_STATUS_BAD_VERSION = 0xC001_0004;
    /// NDIS: the adapter is not ready (NDK: NDK is disabled).
    NDIS_STATUS_ADAPTER_NOT_READY = 0xC001_0011;
}

/// NDIS success (same value as `STATUS_SUCCESS`).
pub const NDIS_STATUS_SUCCESS: NDIS_STATUS = STATUS_SUCCESS;
/// NDIS pending (same value as `STATUS_PENDING`).
pub const NDIS_STATUS_PENDING: NDIS_STATUS = STATUS_PENDING;
/// NDIS generic failure (same value as `STATUS_UNSUCCESSFUL`).
pub const NDIS_STATUS_FAILURE: NDIS_STATUS = STATUS_UNSUCCESSFUL;
/// NDIS out of resources (same value as `STATUS_INSUFFICIENT_RESOURCES`).
pub const NDIS_STATUS_RESOURCES: NDIS_STATUS = STATUS_INSUFFICIENT_RESOURCES;
/// NDIS not supported (same value as `STATUS_NOT_SUPPORTED`).
pub const NDIS_STATUS_NOT_SUPPORTED: NDIS_STATUS = STATUS_NOT_SUPPORTED;
/// NDIS invalid parameter (same value as `STATUS_INVALID_PARAMETER`).
pub const NDIS_STATUS_INVALID_PARAMETER: NDIS_STATUS = STATUS_INVALID_PARAMETER;

/// True if `status` is a success or informational code (`NT_SUCCESS`:
/// the value is non-negative).
pub const fn nt_success(status: NTSTATUS) -> bool {
    status >= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &(name, value) in STATUS_NAMES {
            assert_eq!(status_name(value), Some(name), "{value:#x}");
        }
        assert_eq!(status_name(0x1234_5678), None);
    }

    #[test]
    fn values_are_unique() {
        for (i, &(a, va)) in STATUS_NAMES.iter().enumerate() {
            for &(b, vb) in &STATUS_NAMES[i + 1..] {
                assert_ne!(va, vb, "{a} and {b} share a value");
            }
        }
    }

    #[test]
    fn spot_values() {
        assert_eq!(STATUS_CONNECTION_INVALID as u32, 0xC000_023A);
        assert_eq!(STATUS_PENDING, 0x103);
        assert_eq!(NDIS_STATUS_RESOURCES as u32, 0xC000_009A);
        assert_eq!(
            status_name(NDIS_STATUS_RESOURCES),
            Some("STATUS_INSUFFICIENT_RESOURCES")
        );
        assert_eq!(
            status_name(NDIS_STATUS_BAD_VERSION),
            Some("NDIS_STATUS_BAD_VERSION")
        );
    }

    #[test]
    fn success_classes() {
        assert!(nt_success(STATUS_SUCCESS));
        assert!(nt_success(STATUS_PENDING));
        assert!(nt_success(STATUS_TIMEOUT));
        assert!(!nt_success(STATUS_BUFFER_OVERFLOW));
        assert!(!nt_success(STATUS_CANCELLED));
    }
}

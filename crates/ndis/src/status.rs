//! `NDIS_STATUS` codes (`ndis.h`): what miniport entry points return, and
//! the status indications a miniport raises with `NdisMIndicateStatusEx`.
//!
//! `NDIS_STATUS` and the codes `ndkpi` already names are re-exported from
//! it, so both crates agree on one definition. Codes that `ndis.h` defines
//! as an `ntstatus.h` value (`STATUS_NDIS_PAUSED`, ...) carry that value,
//! as `ntstatus.h` defines it.

pub use ndkpi::{
    NDIS_STATUS, NDIS_STATUS_ADAPTER_NOT_READY, NDIS_STATUS_BAD_VERSION, NDIS_STATUS_FAILURE,
    NDIS_STATUS_INVALID_PARAMETER, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_PENDING,
    NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS,
};

/// Declares `NDIS_STATUS` constants from their `u32` bit patterns.
macro_rules! ndis_statuses {
    ($( $(#[$doc:meta])* $name:ident = $value:literal; )*) => {
        $(
            $(#[$doc])*
            pub const $name: NDIS_STATUS = $value as u32 as i32;
        )*
    };
}

ndis_statuses! {
    /// The request was not recognised (success class).
    NDIS_STATUS_NOT_RECOGNIZED = 0x0001_0001;
    /// The data was not copied (success class).
    NDIS_STATUS_NOT_COPIED = 0x0001_0002;
    /// The data was not accepted (success class).
    NDIS_STATUS_NOT_ACCEPTED = 0x0001_0003;
    /// The caller must make a status indication (`STATUS_NDIS_INDICATION_REQUIRED`).
    NDIS_STATUS_INDICATION_REQUIRED = 0x4023_0001;
    /// The adapter cannot be reset (warning class).
    NDIS_STATUS_NOT_RESETTABLE = 0x8001_0001;
    /// Recoverable errors occurred (warning class).
    NDIS_STATUS_SOFT_ERRORS = 0x8001_0003;
    /// Unrecoverable hardware errors occurred (warning class).
    NDIS_STATUS_HARD_ERRORS = 0x8001_0004;
    /// Data did not fit (`STATUS_BUFFER_OVERFLOW`).
    NDIS_STATUS_BUFFER_OVERFLOW = 0x8000_0005;
    /// The binding or adapter is closing.
    NDIS_STATUS_CLOSING = 0xC001_0002;
    /// The characteristics structure is not valid.
    NDIS_STATUS_BAD_CHARACTERISTICS = 0xC001_0005;
    /// No adapter was found.
    NDIS_STATUS_ADAPTER_NOT_FOUND = 0xC001_0006;
    /// Opening failed.
    NDIS_STATUS_OPEN_FAILED = 0xC001_0007;
    /// The device failed.
    NDIS_STATUS_DEVICE_FAILED = 0xC001_0008;
    /// The multicast list is full.
    NDIS_STATUS_MULTICAST_FULL = 0xC001_0009;
    /// The multicast address is already in the list.
    NDIS_STATUS_MULTICAST_EXISTS = 0xC001_000A;
    /// The multicast address is not in the list.
    NDIS_STATUS_MULTICAST_NOT_FOUND = 0xC001_000B;
    /// The request was aborted.
    NDIS_STATUS_REQUEST_ABORTED = 0xC001_000C;
    /// A reset is in progress.
    NDIS_STATUS_RESET_IN_PROGRESS = 0xC001_000D;
    /// An information buffer length is wrong.
    NDIS_STATUS_INVALID_LENGTH = 0xC001_0014;
    /// Data in an information buffer is not valid.
    NDIS_STATUS_INVALID_DATA = 0xC001_0015;
    /// An information buffer is too short; `BytesNeeded` says how long.
    NDIS_STATUS_BUFFER_TOO_SHORT = 0xC001_0016;
    /// The OID is not supported.
    NDIS_STATUS_INVALID_OID = 0xC001_0017;
    /// The adapter was removed.
    NDIS_STATUS_ADAPTER_REMOVED = 0xC001_0018;
    /// The medium is not supported.
    NDIS_STATUS_UNSUPPORTED_MEDIA = 0xC001_0019;
    /// The request is not valid for this device (`STATUS_INVALID_DEVICE_REQUEST`).
    NDIS_STATUS_INVALID_DEVICE_REQUEST = 0xC000_0010;
    /// The state does not allow the request (`STATUS_INVALID_DEVICE_STATE`).
    NDIS_STATUS_INVALID_STATE = 0xC000_0184;
    /// A send was aborted (`STATUS_NDIS_REQUEST_ABORTED`).
    NDIS_STATUS_SEND_ABORTED = 0xC023_000C;
    /// The media is disconnected (`STATUS_NDIS_MEDIA_DISCONNECTED`).
    NDIS_STATUS_MEDIA_DISCONNECTED = 0xC023_001F;
    /// The adapter is paused (`STATUS_NDIS_PAUSED`); sends complete with it.
    NDIS_STATUS_PAUSED = 0xC023_002A;
    /// The structure revision is not supported (`STATUS_NDIS_UNSUPPORTED_REVISION`).
    NDIS_STATUS_UNSUPPORTED_REVISION = 0xC023_002C;
    /// The adapter is in a low-power state (`STATUS_NDIS_LOW_POWER_STATE`).
    NDIS_STATUS_LOW_POWER_STATE = 0xC023_002F;

    /// Indication: a reset started.
    NDIS_STATUS_RESET_START = 0x4001_0004;
    /// Indication: a reset ended.
    NDIS_STATUS_RESET_END = 0x4001_0005;
    /// Indication (legacy): media connected.
    NDIS_STATUS_MEDIA_CONNECT = 0x4001_000B;
    /// Indication (legacy): media disconnected.
    NDIS_STATUS_MEDIA_DISCONNECT = 0x4001_000C;
    /// Indication: the link speed changed.
    NDIS_STATUS_LINK_SPEED_CHANGE = 0x4001_0013;
    /// Indication (NDIS 6): link state; the buffer is an `NDIS_LINK_STATE`.
    NDIS_STATUS_LINK_STATE = 0x4001_0017;
}

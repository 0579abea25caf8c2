//! Reading the adapter's registry keywords (`ndis.h`): the configuration
//! object for `NdisOpenConfigurationEx` and the parameter that
//! `NdisReadConfiguration` returns (e.g. `*NetworkDirect`).

use core::fmt;

use ndkpi::{PVOID, UCHAR, ULONG, USHORT};

use crate::object::{NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_CONFIGURATION_OBJECT};
use crate::types::{NDIS_HANDLE, NDIS_STRING};

/// Type of a configuration value (C enum).
pub type NDIS_PARAMETER_TYPE = i32;
/// Decimal integer (`IntegerData`).
pub const NdisParameterInteger: NDIS_PARAMETER_TYPE = 0;
/// Hexadecimal integer (`IntegerData`).
pub const NdisParameterHexInteger: NDIS_PARAMETER_TYPE = 1;
/// String (`StringData`).
pub const NdisParameterString: NDIS_PARAMETER_TYPE = 2;
/// Multi-string (`StringData`).
pub const NdisParameterMultiString: NDIS_PARAMETER_TYPE = 3;
/// Binary (`BinaryData`).
pub const NdisParameterBinary: NDIS_PARAMETER_TYPE = 4;

/// Binary configuration data.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BINARY_DATA {
    /// Bytes at `Buffer`.
    pub Length: USHORT,
    /// The data.
    pub Buffer: PVOID,
}

/// `NDIS_CONFIGURATION_PARAMETER.ParameterData` (an anonymous C union).
#[repr(C)]
#[derive(Clone, Copy)]
pub union NDIS_CONFIGURATION_PARAMETER_DATA {
    /// For the integer types.
    pub IntegerData: ULONG,
    /// For the string types.
    pub StringData: NDIS_STRING,
    /// For `NdisParameterBinary`.
    pub BinaryData: BINARY_DATA,
}

impl fmt::Debug for NDIS_CONFIGURATION_PARAMETER_DATA {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `ParameterType` names the live member; reading needs unsafe.
        f.debug_struct("NDIS_CONFIGURATION_PARAMETER_DATA")
            .finish_non_exhaustive()
    }
}

/// A configuration value, owned by NDIS until the configuration handle is
/// closed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_CONFIGURATION_PARAMETER {
    /// Which member of `ParameterData` is meant.
    pub ParameterType: NDIS_PARAMETER_TYPE,
    /// The value.
    pub ParameterData: NDIS_CONFIGURATION_PARAMETER_DATA,
}

/// Configuration object revision.
pub const NDIS_CONFIGURATION_OBJECT_REVISION_1: UCHAR = 1;
/// `Flags`: open a filter instance's configuration.
pub const NDIS_CONFIG_FLAG_FILTER_INSTANCE_CONFIGURATION: ULONG = 0x0000_0001;
/// `RTL_SIZEOF_THROUGH_FIELD(NDIS_CONFIGURATION_OBJECT, Flags)`.
pub const NDIS_SIZEOF_CONFIGURATION_OBJECT_REVISION_1: u16 =
    crate::sizeof_through_field!(NDIS_CONFIGURATION_OBJECT, Flags);

/// Argument of `NdisOpenConfigurationEx`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NDIS_CONFIGURATION_OBJECT {
    /// `NDIS_OBJECT_TYPE_CONFIGURATION_OBJECT`, revision 1.
    pub Header: NDIS_OBJECT_HEADER,
    /// The miniport adapter handle whose configuration is opened.
    pub NdisHandle: NDIS_HANDLE,
    /// `NDIS_CONFIG_FLAG_*`.
    pub Flags: ULONG,
}

impl NDIS_CONFIGURATION_OBJECT {
    /// A revision-1 object for the adapter `NdisHandle`.
    pub const fn new(NdisHandle: NDIS_HANDLE) -> Self {
        Self {
            Header: NDIS_OBJECT_HEADER::new(
                NDIS_OBJECT_TYPE_CONFIGURATION_OBJECT,
                NDIS_CONFIGURATION_OBJECT_REVISION_1,
                NDIS_SIZEOF_CONFIGURATION_OBJECT_REVISION_1,
            ),
            NdisHandle,
            Flags: 0,
        }
    }
}

//! `NDIS_OBJECT_HEADER`, which starts every versioned NDIS structure, and
//! the object types (`ntddndis.h`) this driver puts in or finds in it.

use ndkpi::{UCHAR, USHORT};

/// Type, revision and size of the NDIS structure it starts. NDIS reads
/// only `Size` bytes of a structure, so `Size` must be the
/// `NDIS_SIZEOF_..._REVISION_n` of the revision claimed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NDIS_OBJECT_HEADER {
    /// One of the `NDIS_OBJECT_TYPE_*` values.
    pub Type: UCHAR,
    /// Structure revision, `1` for the first.
    pub Revision: UCHAR,
    /// Byte size of the structure at that revision.
    pub Size: USHORT,
}

impl NDIS_OBJECT_HEADER {
    /// A header with the given type, revision and size.
    pub const fn new(Type: UCHAR, Revision: UCHAR, Size: USHORT) -> Self {
        Self {
            Type,
            Revision,
            Size,
        }
    }
}

/// Revision 1 of a structure that has no revision constant of its own.
pub const NDIS_OBJECT_REVISION_1: UCHAR = 1;

/// Object type implied by the call the structure is passed to.
pub const NDIS_OBJECT_TYPE_DEFAULT: UCHAR = 0x80;
/// `NDIS_MINIPORT_INIT_PARAMETERS` (filled by NDIS).
pub const NDIS_OBJECT_TYPE_MINIPORT_INIT_PARAMETERS: UCHAR = 0x81;
/// `NDIS_MINIPORT_DRIVER_CHARACTERISTICS`.
pub const NDIS_OBJECT_TYPE_MINIPORT_DRIVER_CHARACTERISTICS: UCHAR = 0x8A;
/// `NDIS_OID_REQUEST` (same value as `NDIS_OBJECT_TYPE_REQUEST_EX`).
pub const NDIS_OBJECT_TYPE_OID_REQUEST: UCHAR = 0x96;
/// `NDIS_STATUS_INDICATION`.
pub const NDIS_OBJECT_TYPE_STATUS_INDICATION: UCHAR = 0x98;
/// `NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES`.
pub const NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES: UCHAR = 0x9E;
/// `NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES`.
pub const NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES: UCHAR = 0x9F;
/// `NDIS_CONFIGURATION_OBJECT`.
pub const NDIS_OBJECT_TYPE_CONFIGURATION_OBJECT: UCHAR = 0xA9;
/// `NDIS_NDK_PROVIDER_CHARACTERISTICS` (NDIS 6.30).
pub const NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS: UCHAR = 0xB2;
/// `NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES` (NDIS 6.30).
pub const NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES: UCHAR = 0xB3;

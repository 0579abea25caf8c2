//! The NDIS contract version this miniport registers, and the minor
//! versions `ndis.h` knows (`NDIS6xx_MINIPORT` selects one in C).
//!
//! # Choice: NDIS 6.50
//!
//! * NDK needs 6.30 (Windows Server 2012) at least: the NDK attributes,
//!   the provider characteristics and the `OID_NDK_*` requests start there.
//! * Every entry point this crate declares exists since 6.0 (6.1 for the
//!   direct OID path), so nothing we call needs more than 6.30.
//! * 6.50 (Windows 10 1507 / Server 2016) is the contract whose structures
//!   this crate mirrors in full: `NDIS_OPEN_NDK_ADAPTER_PARAMETERS` gains
//!   `SwitchId`/`VPortId`, `NDIS_OID_REQUEST` revision 2 gains `SwitchId`,
//!   `VPortId` and `Flags`, `NET_PNP_EVENT_NOTIFICATION` revision 2 gains
//!   the switch fields. Declaring 6.50 means NDIS may hand us those larger
//!   revisions, which the declarations here describe exactly.
//! * Above 6.50 nothing is needed: 6.80 only adds the optional
//!   `SynchronousOidRequestHandler` (characteristics revision 3), and the
//!   planned test systems (Server 2022/2025) run every 6.5x+ miniport.
//!
//! A driver therefore registers 6.50 with characteristics revision 2; the
//! revision-3 size and handler are declared too, for a later move to 6.80.

use ndkpi::UCHAR;

/// Major NDIS version of every NDIS 6 contract.
pub const NDIS_MINIPORT_MAJOR_VERSION_6: UCHAR = 6;
/// Minor version of NDIS 6.30 (Windows 8 / Server 2012; first with NDK).
pub const NDIS_MINIPORT_MINOR_VERSION_30: UCHAR = 30;
/// Minor version of NDIS 6.40 (Windows 8.1 / Server 2012 R2).
pub const NDIS_MINIPORT_MINOR_VERSION_40: UCHAR = 40;
/// Minor version of NDIS 6.50 (Windows 10 1507).
pub const NDIS_MINIPORT_MINOR_VERSION_50: UCHAR = 50;
/// Minor version of NDIS 6.60 (Windows 10 1607 / Server 2016).
pub const NDIS_MINIPORT_MINOR_VERSION_60: UCHAR = 60;
/// Minor version of NDIS 6.80 (Windows 10 1709; synchronous OIDs).
pub const NDIS_MINIPORT_MINOR_VERSION_80: UCHAR = 80;
/// Minor version of NDIS 6.82 (Windows 10 1809 / Server 2019).
pub const NDIS_MINIPORT_MINOR_VERSION_82: UCHAR = 82;

/// The major NDIS version rsndk registers (`NDIS_MINIPORT_MAJOR_VERSION`).
pub const NDIS_MINIPORT_MAJOR_VERSION: UCHAR = NDIS_MINIPORT_MAJOR_VERSION_6;
/// The minor NDIS version rsndk registers (`NDIS_MINIPORT_MINOR_VERSION`):
/// 6.50, see the module docs.
pub const NDIS_MINIPORT_MINOR_VERSION: UCHAR = NDIS_MINIPORT_MINOR_VERSION_50;

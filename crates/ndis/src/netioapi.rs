//! The IP Helper part of `netioapi.h` the driver uses to follow the
//! unicast addresses of its virtual interface, with the enums it borrows
//! from `nldef.h` and `SCOPE_ID`/`AF_UNSPEC` from `ws2def.h`; the socket
//! addresses are [`crate::SOCKADDR_INET`] and `ndkpi`'s `SOCKADDR_IN*`.
//! In kernel mode these routines are `NETIO.SYS` exports returning
//! `NTSTATUS` (`NETIO_STATUS`, `netioapi.h:103`).
//!
//! Header text: SDK 10.0.22000.196 `shared/netioapi.h`, `nldef.h`,
//! `ws2def.h` (public mirror github.com/marlersoft/microsoft_windows_sdk_cpp,
//! commit 16b5359).
#![allow(unsafe_code)]

use ndkpi::{ADDRESS_FAMILY, BOOLEAN, NTSTATUS, PVOID, UCHAR, ULONG};

use crate::kernel::LARGE_INTEGER;
use crate::types::{NET_IFINDEX, NET_LUID, SOCKADDR_INET};

pub use ndkpi::{AF_INET, AF_INET6};

/// Unspecified address family: both IPv4 and IPv6 (`ws2def.h:96`).
pub const AF_UNSPEC: ADDRESS_FAMILY = 0;

/// Kernel object handle (`HANDLE`); here, a notification handle.
pub type HANDLE = PVOID;

/// Rows of a variable-length MIB table as declared (`netioapi.h:78`).
pub const ANY_SIZE: usize = 1;

/// What a change notification reports (`MIB_NOTIFICATION_TYPE`, C enum,
/// `netioapi.h:117`).
pub type MIB_NOTIFICATION_TYPE = i32;
/// A parameter of the instance changed.
pub const MibParameterNotification: MIB_NOTIFICATION_TYPE = 0;
/// An instance was added.
pub const MibAddInstance: MIB_NOTIFICATION_TYPE = 1;
/// An instance was deleted.
pub const MibDeleteInstance: MIB_NOTIFICATION_TYPE = 2;
/// The initial notification asked for at registration (no row).
pub const MibInitialNotification: MIB_NOTIFICATION_TYPE = 3;

/// Where an address prefix came from (`NL_PREFIX_ORIGIN`, C enum,
/// `nldef.h:31`).
pub type NL_PREFIX_ORIGIN = i32;
/// Other.
pub const IpPrefixOriginOther: NL_PREFIX_ORIGIN = 0;
/// Configured by hand.
pub const IpPrefixOriginManual: NL_PREFIX_ORIGIN = 1;
/// Well known (loopback, link-local).
pub const IpPrefixOriginWellKnown: NL_PREFIX_ORIGIN = 2;
/// DHCP.
pub const IpPrefixOriginDhcp: NL_PREFIX_ORIGIN = 3;
/// IPv6 router advertisement.
pub const IpPrefixOriginRouterAdvertisement: NL_PREFIX_ORIGIN = 4;
/// Leave unchanged (set requests).
pub const IpPrefixOriginUnchanged: NL_PREFIX_ORIGIN = 1 << 4;

/// Where an address suffix came from (`NL_SUFFIX_ORIGIN`, C enum,
/// `nldef.h:53`; the `Nlso*` names alias the first six).
pub type NL_SUFFIX_ORIGIN = i32;
/// Other.
pub const IpSuffixOriginOther: NL_SUFFIX_ORIGIN = 0;
/// Configured by hand.
pub const IpSuffixOriginManual: NL_SUFFIX_ORIGIN = 1;
/// Well known.
pub const IpSuffixOriginWellKnown: NL_SUFFIX_ORIGIN = 2;
/// DHCP.
pub const IpSuffixOriginDhcp: NL_SUFFIX_ORIGIN = 3;
/// Derived from the link-layer address.
pub const IpSuffixOriginLinkLayerAddress: NL_SUFFIX_ORIGIN = 4;
/// Random (privacy addresses).
pub const IpSuffixOriginRandom: NL_SUFFIX_ORIGIN = 5;
/// Leave unchanged (set requests).
pub const IpSuffixOriginUnchanged: NL_SUFFIX_ORIGIN = 1 << 4;
/// `NlsoOther`, the older name of [`IpSuffixOriginOther`].
pub const NlsoOther: NL_SUFFIX_ORIGIN = 0;
/// `NlsoManual`.
pub const NlsoManual: NL_SUFFIX_ORIGIN = 1;
/// `NlsoWellKnown`.
pub const NlsoWellKnown: NL_SUFFIX_ORIGIN = 2;
/// `NlsoDhcp`.
pub const NlsoDhcp: NL_SUFFIX_ORIGIN = 3;
/// `NlsoLinkLayerAddress`.
pub const NlsoLinkLayerAddress: NL_SUFFIX_ORIGIN = 4;
/// `NlsoRandom`.
pub const NlsoRandom: NL_SUFFIX_ORIGIN = 5;

/// Duplicate address detection state (`NL_DAD_STATE`, C enum,
/// `nldef.h:77`; the `Nlds*` names alias the same values).
pub type NL_DAD_STATE = i32;
/// Invalid.
pub const IpDadStateInvalid: NL_DAD_STATE = 0;
/// DAD in progress: not yet usable.
pub const IpDadStateTentative: NL_DAD_STATE = 1;
/// Another node has the address.
pub const IpDadStateDuplicate: NL_DAD_STATE = 2;
/// Usable, not preferred for new connections.
pub const IpDadStateDeprecated: NL_DAD_STATE = 3;
/// Usable.
pub const IpDadStatePreferred: NL_DAD_STATE = 4;

/// Scope of an IPv6 address (`SCOPE_ID`, `ws2def.h:622`). In C a union of
/// the `ULONG Value` and a bit-field view (`Zone:28`, `Level:4`); modelled
/// as the value, which has the same size, with the fields as methods.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SCOPE_ID {
    /// The whole scope identifier.
    pub Value: ULONG,
}

impl SCOPE_ID {
    /// The `Zone` bit field (the low 28 bits).
    pub const fn zone(self) -> ULONG {
        self.Value & 0x0FFF_FFFF
    }

    /// The `Level` bit field (the high 4 bits, a `SCOPE_LEVEL`).
    pub const fn level(self) -> ULONG {
        self.Value >> 28
    }
}

/// One unicast IP address of an interface (`netioapi.h:751`; 80 bytes on
/// x64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MIB_UNICASTIPADDRESS_ROW {
    /// The address (IPv4 or IPv6; `si_family` tells).
    pub Address: SOCKADDR_INET,
    /// LUID of the interface holding it.
    pub InterfaceLuid: NET_LUID,
    /// Index of the interface holding it.
    pub InterfaceIndex: NET_IFINDEX,
    /// Origin of the prefix.
    pub PrefixOrigin: NL_PREFIX_ORIGIN,
    /// Origin of the suffix.
    pub SuffixOrigin: NL_SUFFIX_ORIGIN,
    /// Valid lifetime, seconds (`0xFFFFFFFF` = infinite).
    pub ValidLifetime: ULONG,
    /// Preferred lifetime, seconds.
    pub PreferredLifetime: ULONG,
    /// On-link prefix length, bits.
    pub OnLinkPrefixLength: UCHAR,
    /// `TRUE`: not used as a source address.
    pub SkipAsSource: BOOLEAN,
    /// DAD state.
    pub DadState: NL_DAD_STATE,
    /// Scope (IPv6).
    pub ScopeId: SCOPE_ID,
    /// When the address was created (system time).
    pub CreationTimeStamp: LARGE_INTEGER,
}

/// A table of unicast addresses as `GetUnicastIpAddressTable` returns it
/// (`netioapi.h:777`): `NumEntries` rows starting at `Table`, which C
/// declares with `ANY_SIZE` (1) entries; the rows past the first lie
/// beyond the declared structure, in the same allocation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MIB_UNICASTIPADDRESS_TABLE {
    /// Rows in the table.
    pub NumEntries: ULONG,
    /// The first row; the others follow.
    pub Table: [MIB_UNICASTIPADDRESS_ROW; ANY_SIZE],
}

/// `PUNICAST_IPADDRESS_CHANGE_CALLBACK` (`netioapi.h:784`): called at
/// `PASSIVE_LEVEL` for each change; `Row` is null for
/// `MibInitialNotification` and otherwise carries the key fields
/// (`Address`, `InterfaceLuid`, `InterfaceIndex`).
pub type PUNICAST_IPADDRESS_CHANGE_CALLBACK = Option<
    unsafe extern "win64" fn(
        CallerContext: PVOID,
        Row: *mut MIB_UNICASTIPADDRESS_ROW,
        NotificationType: MIB_NOTIFICATION_TYPE,
    ),
>;

#[cfg_attr(
    target_os = "windows",
    link(name = "NETIO.SYS", kind = "raw-dylib", modifiers = "+verbatim")
)]
unsafe extern "system" {
    /// Fills the rest of `*Row` for its `Address` and `InterfaceLuid` or
    /// `InterfaceIndex` (`PASSIVE_LEVEL`).
    pub fn GetUnicastIpAddressEntry(Row: *mut MIB_UNICASTIPADDRESS_ROW) -> NTSTATUS;

    /// Allocates the table of unicast addresses of `Family` (`AF_INET`,
    /// `AF_INET6` or `AF_UNSPEC`) and stores it in `*Table`
    /// (`PASSIVE_LEVEL`); free it with `FreeMibTable`.
    pub fn GetUnicastIpAddressTable(
        Family: ADDRESS_FAMILY,
        Table: *mut *mut MIB_UNICASTIPADDRESS_TABLE,
    ) -> NTSTATUS;

    /// Registers `Callback` for unicast address changes of `Family`, first
    /// with one `MibInitialNotification` if `InitialNotification`
    /// (`PASSIVE_LEVEL`); `*NotificationHandle` must be null on input.
    pub fn NotifyUnicastIpAddressChange(
        Family: ADDRESS_FAMILY,
        Callback: PUNICAST_IPADDRESS_CHANGE_CALLBACK,
        CallerContext: PVOID,
        InitialNotification: BOOLEAN,
        NotificationHandle: *mut HANDLE,
    ) -> NTSTATUS;

    /// Deregisters a change notification, waiting for running callbacks
    /// (`PASSIVE_LEVEL`; never from the callback itself).
    pub fn CancelMibChangeNotify2(NotificationHandle: HANDLE) -> NTSTATUS;

    /// Frees a table a `Get*Table` routine returned.
    pub fn FreeMibTable(Memory: PVOID);
}

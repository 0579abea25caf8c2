//! What the notify object's decisions need from netcfg and the registry,
//! as two small traits over plain data: [`NetCfg`] (the INetCfg
//! operations it calls) and [`AdapterRegistry`] (the protocol's
//! `Parameters\Adapters` key). On Windows `com::host` implements both over
//! the INetCfg pointers netcfg hands the object; the tests implement them
//! over an in-memory model of components and binding paths.

use alloc::string::String;
use alloc::vec::Vec;

use crate::guid::Guid;
use crate::record::Record;

/// The protocol edge's component id (`rsndkp.inx`, model `RSNDK_MUXP`).
pub const PROTOCOL_ID: &str = "RSNDK_MUXP";
/// The virtual miniport's hardware id (`rsndk_mp.inx`, model
/// `RSNDK_MUXMP`): what `INetCfgClassSetup::Install` installs.
pub const MINIPORT_ID: &str = "RSNDK_MUXMP";

/// `NCF_VIRTUAL` (netcfgx.h `COMPONENT_CHARACTERISTICS`).
pub const NCF_VIRTUAL: u32 = 0x0000_0001;
/// `NCF_PHYSICAL`.
pub const NCF_PHYSICAL: u32 = 0x0000_0004;
/// `NCF_NOT_USER_REMOVABLE`.
pub const NCF_NOT_USER_REMOVABLE: u32 = 0x0000_0020;
/// `NCF_HAS_UI`.
pub const NCF_HAS_UI: u32 = 0x0000_0080;
/// `NCF_FILTER` (NDIS 5 filter intermediate drivers).
pub const NCF_FILTER: u32 = 0x0000_0400;
/// `NCF_LW_FILTER` (NDIS 6 lightweight filters).
pub const NCF_LW_FILTER: u32 = 0x0004_0000;

/// `NCN_ADD` (netcfgn.h `BIND_FLAGS1`).
pub const NCN_ADD: u32 = 0x0000_0001;
/// `NCN_REMOVE`.
pub const NCN_REMOVE: u32 = 0x0000_0002;
/// `NCN_UPDATE`.
pub const NCN_UPDATE: u32 = 0x0000_0004;
/// `NCN_ENABLE`.
pub const NCN_ENABLE: u32 = 0x0000_0010;
/// `NCN_DISABLE`.
pub const NCN_DISABLE: u32 = 0x0000_0020;
/// `NCN_BINDING_PATH`.
pub const NCN_BINDING_PATH: u32 = 0x0000_0100;
/// `NCN_PROPERTYCHANGE`.
pub const NCN_PROPERTYCHANGE: u32 = 0x0000_0200;
/// `NCN_NET`: adapters.
pub const NCN_NET: u32 = 0x0001_0000;
/// `NCN_NETTRANS`: protocols.
pub const NCN_NETTRANS: u32 = 0x0002_0000;
/// `NCN_NETCLIENT`.
pub const NCN_NETCLIENT: u32 = 0x0004_0000;
/// `NCN_NETSERVICE`.
pub const NCN_NETSERVICE: u32 = 0x0008_0000;

/// `IF_TYPE_ETHERNET_CSMACD` (ipifcons.h), an Ethernet adapter's `*IfType`.
pub const IF_TYPE_ETHERNET_CSMACD: u32 = 6;
/// `NdisPhysicalMediumUnspecified`.
pub const PHYSICAL_MEDIUM_UNSPECIFIED: u32 = 0;
/// `NdisPhysicalMedium802_3`, an Ethernet adapter's `*PhysicalMediaType`.
pub const PHYSICAL_MEDIUM_802_3: u32 = 14;

/// Why a netcfg or registry operation failed: the operation and its
/// HRESULT (a Win32 error as `HRESULT_FROM_WIN32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The interface method or Win32 routine, e.g.
    /// `"INetCfgClassSetup::Install"`.
    pub operation: &'static str,
    /// What it returned.
    pub hresult: i32,
}

/// One network component as a binding path shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    /// `INetCfgComponent::GetId`: the INF model id (`RSNDK_MUXP`,
    /// `ms_tcpip`) or the adapter's hardware id.
    pub id: String,
    /// `INetCfgComponent::GetCharacteristics`: `NCF_*` flags.
    pub characteristics: u32,
    /// `INetCfgComponent::GetInstanceGuid`; for an adapter its
    /// `NetCfgInstanceId`, the GUID in its device name.
    pub instance: Guid,
}

impl Component {
    /// Whether this component has the id `id` (netcfg ids compare
    /// case-insensitively, as the sample's `_wcsicmp`).
    pub fn is(&self, id: &str) -> bool {
        self.id.eq_ignore_ascii_case(id)
    }

    /// An NDIS filter: it sits between an adapter and every protocol
    /// (rsndkp's included) and takes no address, so its bindings stay.
    pub fn is_filter(&self) -> bool {
        self.characteristics & (NCF_FILTER | NCF_LW_FILTER) != 0
    }
}

/// One binding path: its components from the owner down to the adapter
/// at the bottom (the upper component of each binding interface, then the
/// lower component of the last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingPath {
    /// `INetCfgBindingPath::GetPathToken`: names the path among the
    /// paths above its adapter.
    pub token: String,
    /// `INetCfgBindingPath::IsEnabled`.
    pub enabled: bool,
    /// Owner first, bottom adapter last.
    pub components: Vec<Component>,
}

impl BindingPath {
    /// The component right below the owner: for the protocol's own
    /// paths, the adapter it binds to.
    pub fn first_lower(&self) -> Option<&Component> {
        self.components.get(1)
    }

    /// The component at the bottom (an adapter), for a path of at least
    /// one interface.
    pub fn bottom(&self) -> Option<&Component> {
        if self.components.len() < 2 {
            return None;
        }
        self.components.last()
    }

    /// The owner (first component).
    pub fn owner(&self) -> Option<&Component> {
        self.components.first()
    }

    /// Whether a component with id `id` is on the path.
    pub fn contains(&self, id: &str) -> bool {
        self.components.iter().any(|c| c.is(id))
    }
}

/// An adapter's media keywords from its driver key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdapterMedia {
    /// `*IfType`, if the key has it.
    pub if_type: Option<u32>,
    /// `*PhysicalMediaType`, if the key has it.
    pub physical_medium: Option<u32>,
}

impl AdapterMedia {
    /// Whether the keywords say the adapter is not Ethernet: an `*IfType`
    /// other than 6, or a physical medium other than 802.3 or
    /// unspecified (Wi-Fi is `*IfType` 71, mobile broadband 243; both
    /// also bind as `ndis5`). Missing keywords rule nothing out: the
    /// sample takes every `NCF_PHYSICAL` adapter, and whether
    /// `OpenParamKey` of an adapter shows its driver key's keywords is
    /// for a Windows run to confirm.
    pub fn rules_out_ethernet(&self) -> bool {
        self.if_type.is_some_and(|t| t != IF_TYPE_ETHERNET_CSMACD)
            || self
                .physical_medium
                .is_some_and(|m| !matches!(m, PHYSICAL_MEDIUM_UNSPECIFIED | PHYSICAL_MEDIUM_802_3))
    }
}

/// The INetCfg operations the notify object calls, inside netcfg's
/// transaction (netcfg holds the write lock while it calls the object).
///
/// Implementations may call the notify object back from inside any of
/// these (netcfg notifies the paths an install creates, for instance):
/// [`crate::Notify`] holds no state borrow across a call.
pub trait NetCfg {
    /// `INetCfgClassSetup::Install` of [`MINIPORT_ID`] (class Net), then
    /// `INetCfgComponent::GetInstanceGuid` of what it installed.
    fn install_virtual_miniport(&self) -> Result<Guid, Failure>;

    /// `INetCfgClassSetup::DeInstall` of the adapter with this instance
    /// GUID. `Ok(false)` when no such adapter exists (any more).
    fn remove_adapter(&self, instance: &Guid) -> Result<bool, Failure>;

    /// `INetCfgComponentBindings::EnumBindingPaths(EBP_ABOVE)` of the
    /// adapter: every path ending at it. Empty when the adapter is gone.
    fn paths_above(&self, adapter: &Guid) -> Result<Vec<BindingPath>, Failure>;

    /// `INetCfgBindingPath::Enable` of the path above `adapter` named
    /// `token`. `Ok(false)` when there is no such path (any more).
    fn set_path_enabled(&self, adapter: &Guid, token: &str, enable: bool) -> Result<bool, Failure>;

    /// The adapter's `*IfType` and `*PhysicalMediaType`
    /// (`INetCfgComponent::OpenParamKey`, its driver key).
    fn adapter_media(&self, adapter: &Guid) -> Result<AdapterMedia, Failure>;
}

/// The protocol's per-adapter registry records,
/// `HKLM\SYSTEM\CurrentControlSet\Services\rsndkp\Parameters\Adapters\{P}`
/// ([`crate::record`] says what each holds). Written only from
/// `ApplyRegistryChanges`, as netcfg requires.
pub trait AdapterRegistry {
    /// Every record (a key whose values do not parse is skipped).
    fn load(&self) -> Result<Vec<(Guid, Record)>, Failure>;
    /// Creates or replaces the record of adapter `adapter`.
    fn save(&self, adapter: &Guid, record: &Record) -> Result<(), Failure>;
    /// Deletes the record of `adapter` (no record is no error).
    fn delete(&self, adapter: &Guid) -> Result<(), Failure>;
}

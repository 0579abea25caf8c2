//! The notify object's decisions, after Microsoft's MUX sample
//! (Windows-driver-samples `network/ndis/mux/notifyob`, in its 1:1
//! `PASSTHRU_NOTIFY` form with `DISABLE_PROTOCOLS_TO_PHYSICAL`), with the
//! changes docs/windows.md ("Installation") asks for:
//!
//! - **Opt-in per NIC.** Every binding of the protocol comes up disabled
//!   (`QueryBindingPath` answers `NETCFG_S_DISABLE_QUERY` to `NCN_ADD`), so
//!   installing touches no NIC. Enabling the binding to a physical
//!   Ethernet NIC P (`Enable-NetAdapterBinding -ComponentID RSNDK_MUXP`)
//!   installs V over it, records `UpperBindings`, and disables every other
//!   component's path to P (TCP/IP, SMB and the rest then bind to V).
//!   Disabling or removing that binding, removing P, or removing the
//!   protocol removes V and enables exactly the paths it disabled.
//! - The protocol never binds to its own V, nor to an adapter that is not
//!   physical or whose keywords say it is not Ethernet (`*IfType` other
//!   than 6, e.g. Wi-Fi's 71).
//! - Filters' paths to P stay: a filter sits below every protocol and
//!   takes no address (the sample disables everything but itself).
//! - A path to P that some component wants enabled while P is muxed is
//!   refused (`SysQueryBindingPath`) and remembered, so it comes up when
//!   V goes, like the ones disabled at the start.
//!
//! State lives in a `RefCell` that is never borrowed across a call into
//! [`NetCfg`]: netcfg may call the object back from inside those calls.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use core::cell::RefCell;

use crate::guid::Guid;
use crate::netcfg::{
    AdapterRegistry, BindingPath, Component, Failure, MINIPORT_ID, NCF_PHYSICAL, NCF_VIRTUAL,
    NCN_ADD, NCN_BINDING_PATH, NCN_DISABLE, NCN_ENABLE, NCN_NET, NCN_NETCLIENT, NCN_NETSERVICE,
    NCN_NETTRANS, NCN_REMOVE, NetCfg, PROTOCOL_ID,
};
use crate::record::Record;

/// The notifications `GetSupportedNotifications` asks for: adapters and
/// every kind of component that can bind to one, added, removed, enabled
/// or disabled, and their binding paths.
pub const SUPPORTED_NOTIFICATIONS: u32 = NCN_NET
    | NCN_NETTRANS
    | NCN_NETCLIENT
    | NCN_NETSERVICE
    | NCN_ADD
    | NCN_REMOVE
    | NCN_ENABLE
    | NCN_DISABLE
    | NCN_BINDING_PATH;

/// The answer to a query about a path: `S_OK` or `NETCFG_S_DISABLE_QUERY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let the path be added or enabled.
    Allow,
    /// Add it disabled, or keep it disabled.
    Disable,
}

/// The muxed adapters as this object sees them, and which records
/// `ApplyRegistryChanges` must write.
#[derive(Debug, Default)]
struct State {
    /// P's instance GUID to its record (loaded, plus this transaction's
    /// changes).
    muxed: BTreeMap<Guid, Record>,
    /// Adapters whose record changed since the last apply: saved if still
    /// in `muxed`, deleted if not.
    dirty: BTreeSet<Guid>,
}

/// The notify object's logic; one per netcfg session, like the COM object
/// that holds it.
#[derive(Debug, Default)]
pub struct Notify {
    state: RefCell<State>,
}

impl Notify {
    /// A notify object with no state (before `Initialize`).
    pub fn new() -> Notify {
        Notify::default()
    }

    /// `INetCfgComponentControl::Initialize`: loads the records. When the
    /// protocol is being installed no adapter can be muxed yet, so
    /// records found then are leftovers of an earlier install that was
    /// not removed cleanly: their V is removed and their paths enabled.
    pub fn initialize<H>(&self, host: &H, installing: bool) -> Result<(), Failure>
    where
        H: NetCfg + AdapterRegistry + ?Sized,
    {
        let records = host.load()?;
        {
            let mut state = self.state.borrow_mut();
            state.muxed = records.into_iter().collect();
            state.dirty.clear();
        }
        if installing {
            self.detach_all(host)
        } else {
            Ok(())
        }
    }

    /// The adapters this object considers muxed, with their records.
    pub fn muxed(&self) -> Vec<(Guid, Record)> {
        let state = self.state.borrow();
        state
            .muxed
            .iter()
            .map(|(guid, record)| (*guid, record.clone()))
            .collect()
    }

    /// `INetCfgComponentNotifyBinding::QueryBindingPath`, about one of
    /// the protocol's own paths.
    pub fn query_binding_path<H>(&self, host: &H, flags: u32, path: &BindingPath) -> Verdict
    where
        H: NetCfg + ?Sized,
    {
        if flags & NCN_ENABLE == 0 {
            return Verdict::Allow;
        }
        let Some(lower) = path.first_lower() else {
            return Verdict::Allow;
        };
        if lower.is(MINIPORT_ID) || flags & NCN_ADD != 0 || !eligible(host, lower) {
            Verdict::Disable
        } else {
            Verdict::Allow
        }
    }

    /// `INetCfgComponentNotifyBinding::NotifyBindingPath`, about one of
    /// the protocol's own paths: an enabled binding to a physical
    /// Ethernet NIC gets its V; a disabled or removed one loses it.
    pub fn notify_binding_path<H>(
        &self,
        host: &H,
        flags: u32,
        path: &BindingPath,
    ) -> Result<(), Failure>
    where
        H: NetCfg + AdapterRegistry + ?Sized,
    {
        let (Some(owner), Some(adapter), 2) =
            (path.owner(), path.first_lower(), path.components.len())
        else {
            return Ok(());
        };
        if !owner.is(PROTOCOL_ID) {
            return Ok(());
        }
        if flags & (NCN_REMOVE | NCN_DISABLE) != 0 {
            return self.detach(host, &adapter.instance);
        }
        if flags & NCN_ENABLE != 0 && !adapter.is(MINIPORT_ID) && eligible(host, adapter) {
            return self.attach(host, &adapter.instance);
        }
        Ok(())
    }

    /// `INetCfgComponentNotifyGlobal::SysQueryBindingPath`, about any
    /// component's path: no path of another component may come up to a
    /// muxed P (refused ones are remembered, to enable when V goes), and
    /// the protocol never binds to its V.
    pub fn sys_query_binding_path(&self, flags: u32, path: &BindingPath) -> Verdict {
        if flags & NCN_ENABLE == 0 {
            return Verdict::Allow;
        }
        if path.contains(PROTOCOL_ID) {
            let to_own_miniport = path.first_lower().is_some_and(|c| c.is(MINIPORT_ID));
            return if to_own_miniport {
                Verdict::Disable
            } else {
                Verdict::Allow
            };
        }
        let (Some(owner), Some(bottom)) = (path.owner(), path.bottom()) else {
            return Verdict::Allow;
        };
        if owner.is_filter() {
            return Verdict::Allow;
        }
        let mut state = self.state.borrow_mut();
        let State { muxed, dirty } = &mut *state;
        match muxed.get_mut(&bottom.instance) {
            Some(record) => {
                if record.remember(&path.token) {
                    dirty.insert(bottom.instance);
                }
                Verdict::Disable
            }
            None => Verdict::Allow,
        }
    }

    /// `INetCfgComponentNotifyGlobal::SysNotifyComponent`: a muxed P that
    /// is removed takes its V with it; a V removed by someone else
    /// un-muxes its P.
    pub fn sys_notify_component<H>(
        &self,
        host: &H,
        flags: u32,
        component: &Component,
    ) -> Result<(), Failure>
    where
        H: NetCfg + AdapterRegistry + ?Sized,
    {
        if flags & NCN_REMOVE == 0 {
            return Ok(());
        }
        let adapter = {
            let state = self.state.borrow();
            if state.muxed.contains_key(&component.instance) {
                Some(component.instance)
            } else {
                state
                    .muxed
                    .iter()
                    .find(|(_, record)| record.virtual_miniport == component.instance)
                    .map(|(p, _)| *p)
            }
        };
        match adapter {
            Some(p) => self.detach(host, &p),
            None => Ok(()),
        }
    }

    /// `INetCfgComponentSetup::Removing`: the protocol goes; so does
    /// every V.
    pub fn removing<H>(&self, host: &H) -> Result<(), Failure>
    where
        H: NetCfg + AdapterRegistry + ?Sized,
    {
        self.detach_all(host)
    }

    /// `INetCfgComponentControl::ApplyRegistryChanges`: writes the
    /// records this transaction changed. Every change is tried; the first
    /// failure is returned and its record stays to be written.
    pub fn apply_registry_changes<H>(&self, host: &H) -> Result<(), Failure>
    where
        H: AdapterRegistry + ?Sized,
    {
        let changes: Vec<(Guid, Option<Record>)> = {
            let state = self.state.borrow();
            state
                .dirty
                .iter()
                .map(|p| (*p, state.muxed.get(p).cloned()))
                .collect()
        };
        let mut first_failure = None;
        for (p, record) in changes {
            let result = match &record {
                Some(record) => host.save(&p, record),
                None => host.delete(&p),
            };
            match result {
                Ok(()) => {
                    self.state.borrow_mut().dirty.remove(&p);
                }
                Err(failure) => {
                    first_failure.get_or_insert(failure);
                }
            }
        }
        first_failure.map_or(Ok(()), Err)
    }

    /// `INetCfgComponentControl::CancelChanges`: netcfg dropped the
    /// transaction; back to what the registry holds.
    pub fn cancel_changes<H>(&self, host: &H) -> Result<(), Failure>
    where
        H: AdapterRegistry + ?Sized,
    {
        let records = host.load()?;
        let mut state = self.state.borrow_mut();
        state.muxed = records.into_iter().collect();
        state.dirty.clear();
        Ok(())
    }

    /// Installs V over P, records it, and disables the other components'
    /// paths to P. On a failure after V's install, P is detached again.
    fn attach<H>(&self, host: &H, p: &Guid) -> Result<(), Failure>
    where
        H: NetCfg + AdapterRegistry + ?Sized,
    {
        if self.state.borrow().muxed.contains_key(p) {
            return Ok(());
        }
        let v = host.install_virtual_miniport()?;
        {
            // Recorded before P's paths change: a path to P netcfg asks
            // about from here on must see P muxed.
            let mut state = self.state.borrow_mut();
            state.muxed.insert(*p, Record::new(v));
            state.dirty.insert(*p);
        }
        match self.disable_others(host, p) {
            Ok(()) => Ok(()),
            Err(failure) => {
                // Undo what was done; the first failure is the one to report.
                let _ = self.detach(host, p);
                Err(failure)
            }
        }
    }

    /// Disables every enabled path to P that neither runs through the
    /// protocol nor belongs to a filter, remembering each.
    fn disable_others<H>(&self, host: &H, p: &Guid) -> Result<(), Failure>
    where
        H: NetCfg + ?Sized,
    {
        for path in host.paths_above(p)? {
            let foreign =
                !path.contains(PROTOCOL_ID) && !path.owner().is_some_and(Component::is_filter);
            if !foreign || !path.enabled {
                continue;
            }
            if host.set_path_enabled(p, &path.token, false)? {
                let mut state = self.state.borrow_mut();
                if let Some(record) = state.muxed.get_mut(p) {
                    record.remember(&path.token);
                }
            }
        }
        Ok(())
    }

    /// Removes P's V and enables the paths disabled for it. Every step is
    /// tried; the first failure is returned.
    ///
    /// A recorded token that names no path of a P still present means the
    /// tokens changed since they were recorded (netcfg does not document
    /// them as stable): then every disabled path to P that is neither the
    /// protocol's nor a filter's is enabled, as the sample does, rather
    /// than leaving P without its protocols.
    fn detach<H>(&self, host: &H, p: &Guid) -> Result<(), Failure>
    where
        H: NetCfg + ?Sized,
    {
        let record = {
            let mut state = self.state.borrow_mut();
            let Some(record) = state.muxed.remove(p) else {
                return Ok(());
            };
            state.dirty.insert(*p);
            record
        };
        let mut first_failure = host.remove_adapter(&record.virtual_miniport).err();
        let mut lost_token = false;
        for token in &record.disabled_paths {
            match host.set_path_enabled(p, token, true) {
                Ok(found) => lost_token |= !found,
                Err(failure) => {
                    first_failure.get_or_insert(failure);
                }
            }
        }
        if lost_token && let Err(failure) = enable_foreign_paths(host, p) {
            first_failure.get_or_insert(failure);
        }
        first_failure.map_or(Ok(()), Err)
    }

    /// Detaches every muxed adapter.
    fn detach_all<H>(&self, host: &H) -> Result<(), Failure>
    where
        H: NetCfg + AdapterRegistry + ?Sized,
    {
        let adapters: Vec<Guid> = self.state.borrow().muxed.keys().copied().collect();
        let mut first_failure = None;
        for p in adapters {
            if let Err(failure) = self.detach(host, &p) {
                first_failure.get_or_insert(failure);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }
}

/// Enables every disabled path to P that neither runs through the
/// protocol nor belongs to a filter (nothing when P is gone).
fn enable_foreign_paths<H>(host: &H, p: &Guid) -> Result<(), Failure>
where
    H: NetCfg + ?Sized,
{
    for path in host.paths_above(p)? {
        let foreign =
            !path.contains(PROTOCOL_ID) && !path.owner().is_some_and(Component::is_filter);
        if foreign && !path.enabled {
            host.set_path_enabled(p, &path.token, true)?;
        }
    }
    Ok(())
}

/// An adapter the protocol may mux: physical, not virtual, not its own V,
/// and not ruled out as Ethernet by its media keywords (keywords that
/// cannot be read rule nothing out, as in the sample).
fn eligible<H>(host: &H, adapter: &Component) -> bool
where
    H: NetCfg + ?Sized,
{
    adapter.characteristics & NCF_PHYSICAL != 0
        && adapter.characteristics & NCF_VIRTUAL == 0
        && !adapter.is(MINIPORT_ID)
        && !host
            .adapter_media(&adapter.instance)
            .is_ok_and(|media| media.rules_out_ethernet())
}

//! The notify object's decisions against an in-memory model of netcfg:
//! components, binding paths and the protocol's registry records.
//!
//! The model plays netcfg's part as far as the object sees it: each
//! operation is one session (a fresh object, `Initialize`, the
//! notifications, `ApplyRegistryChanges`), paths are added with
//! `QueryBindingPath`/`SysQueryBindingPath` honoured, and the INetCfg
//! calls the object makes (installing V, enabling a path) notify it again
//! from inside the call, as netcfg may. Every test checks the model's
//! final devices, bindings and registry.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use rsndknotify::netcfg::{
    MINIPORT_ID, NCF_HAS_UI, NCF_LW_FILTER, NCF_NOT_USER_REMOVABLE, NCF_PHYSICAL, NCF_VIRTUAL,
    NCN_ADD, NCN_DISABLE, NCN_ENABLE, NCN_NET, NCN_NETSERVICE, NCN_NETTRANS, NCN_REMOVE,
    PROTOCOL_ID,
};
use rsndknotify::{
    AdapterMedia, AdapterRegistry, BindingPath, Component, Failure, Guid, NetCfg, Notify, Record,
    Verdict,
};

const TCPIP: &str = "ms_tcpip";
const TCPIP6: &str = "ms_tcpip6";
const LLTDIO: &str = "ms_lltdio";
const PACER: &str = "ms_pacer";

/// An Ethernet NIC's keywords (`*IfType` 6, `*PhysicalMediaType` 14).
const ETHERNET: AdapterMedia = AdapterMedia {
    if_type: Some(6),
    physical_medium: Some(14),
};
/// A native Wi-Fi NIC's (`*IfType` 71, `NdisPhysicalMediumNative802_11`).
const WIFI: AdapterMedia = AdapterMedia {
    if_type: Some(71),
    physical_medium: Some(9),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Adapter,
    Protocol,
    Filter,
}

#[derive(Clone, Debug)]
struct Node {
    component: Component,
    kind: Kind,
    media: AdapterMedia,
}

#[derive(Clone, Debug)]
struct Path {
    token: String,
    /// Owner, then the adapter.
    owner: Guid,
    adapter: Guid,
    enabled: bool,
}

#[derive(Default)]
struct World {
    nodes: Vec<Node>,
    paths: Vec<Path>,
    /// The registry: P to (`UpperBindings`, `DisabledPaths`), as written.
    registry: BTreeMap<Guid, (String, Vec<String>)>,
    next_guid: u128,
    /// Registry writes fail from now on (a full hive, a denied key).
    registry_broken: bool,
}

/// netcfg, its components and paths, and the notify object of the
/// current session.
struct Model {
    world: RefCell<World>,
    notify: RefCell<Option<Rc<Notify>>>,
    /// Failures the object returned to the model (netcfg would log them).
    failures: RefCell<Vec<Failure>>,
}

impl Model {
    fn new() -> Model {
        let model = Model {
            world: RefCell::new(World::default()),
            notify: RefCell::new(None),
            failures: RefCell::new(Vec::new()),
        };
        model.world.borrow_mut().next_guid = 0x1000;
        model
    }

    fn guid(&self) -> Guid {
        let mut world = self.world.borrow_mut();
        world.next_guid += 1;
        Guid::from_u128(0x5eed_0000_0000_4000_8000_0000_0000_0000 | world.next_guid)
    }

    fn node(&self, guid: &Guid) -> Option<Node> {
        self.world
            .borrow()
            .nodes
            .iter()
            .find(|n| n.component.instance == *guid)
            .cloned()
    }

    fn find(&self, id: &str) -> Vec<Guid> {
        self.world
            .borrow()
            .nodes
            .iter()
            .filter(|n| n.component.is(id))
            .map(|n| n.component.instance)
            .collect()
    }

    fn protocol_installed(&self) -> bool {
        !self.find(PROTOCOL_ID).is_empty()
    }

    fn object(&self) -> Option<Rc<Notify>> {
        self.notify.borrow().clone()
    }

    fn record(&self, result: Result<(), Failure>) {
        if let Err(failure) = result {
            self.failures.borrow_mut().push(failure);
        }
    }

    /// One netcfg session: a fresh notify object (when the protocol is
    /// installed), `body`, then `ApplyRegistryChanges`.
    fn session(&self, installing: bool, body: impl FnOnce(&Model)) {
        let notify = if self.protocol_installed() || installing {
            let notify = Rc::new(Notify::new());
            *self.notify.borrow_mut() = Some(notify.clone());
            self.record(notify.initialize(self, installing));
            Some(notify)
        } else {
            None
        };
        body(self);
        if let Some(notify) = notify {
            self.record(notify.apply_registry_changes(self));
        }
        *self.notify.borrow_mut() = None;
    }

    fn view(&self, path: &Path) -> BindingPath {
        let owner = self.node(&path.owner).expect("owner exists");
        let adapter = self.node(&path.adapter).expect("adapter exists");
        BindingPath {
            token: path.token.clone(),
            enabled: path.enabled,
            components: vec![owner.component, adapter.component],
        }
    }

    /// Adds the path `owner`->`adapter` as netcfg does: the owner's notify
    /// object (ours, for the protocol) or every other one (ours, for the
    /// rest) is asked first, then told.
    fn add_path(&self, owner: &Guid, adapter: &Guid) {
        let owner_node = self.node(owner).expect("owner exists");
        let adapter_node = self.node(adapter).expect("adapter exists");
        let token = format!(
            "{}->{}",
            owner_node.component.id, adapter_node.component.instance
        );
        let mut path = Path {
            token,
            owner: *owner,
            adapter: *adapter,
            enabled: true,
        };
        let own = owner_node.component.is(PROTOCOL_ID);
        if let Some(notify) = self.object() {
            let view = self.view(&path);
            let verdict = if own {
                notify.query_binding_path(self, NCN_ADD | NCN_ENABLE, &view)
            } else {
                notify.sys_query_binding_path(NCN_ADD | NCN_ENABLE, &view)
            };
            path.enabled = verdict == Verdict::Allow;
        }
        let enabled = path.enabled;
        self.world.borrow_mut().paths.push(path.clone());
        if own && let Some(notify) = self.object() {
            let flag = if enabled { NCN_ENABLE } else { NCN_DISABLE };
            let view = self.view(&path);
            self.record(notify.notify_binding_path(self, NCN_ADD | flag, &view));
        }
    }

    /// Adds a component and binds it as its kind binds: protocols and
    /// filters above every adapter.
    fn add_node(&self, id: &str, characteristics: u32, kind: Kind, media: AdapterMedia) -> Guid {
        let instance = self.guid();
        self.world.borrow_mut().nodes.push(Node {
            component: Component {
                id: id.to_owned(),
                characteristics,
                instance,
            },
            kind,
            media,
        });
        let world_nodes: Vec<Node> = self.world.borrow().nodes.clone();
        match kind {
            Kind::Adapter => {
                for upper in world_nodes.iter().filter(|n| n.kind != Kind::Adapter) {
                    self.add_path(&upper.component.instance, &instance);
                }
                if let Some(notify) = self.object() {
                    let node = self.node(&instance).expect("just added");
                    self.record(notify.sys_notify_component(
                        self,
                        NCN_ADD | NCN_NET,
                        &node.component,
                    ));
                }
            }
            Kind::Protocol | Kind::Filter => {
                for adapter in world_nodes.iter().filter(|n| n.kind == Kind::Adapter) {
                    self.add_path(&instance, &adapter.component.instance);
                }
            }
        }
        instance
    }

    /// Removes a component and its paths, telling the object.
    fn remove_node(&self, guid: &Guid) -> bool {
        let Some(node) = self.node(guid) else {
            return false;
        };
        let doomed: Vec<Path> = self
            .world
            .borrow()
            .paths
            .iter()
            .filter(|p| p.owner == *guid || p.adapter == *guid)
            .cloned()
            .collect();
        for path in &doomed {
            let own = self
                .node(&path.owner)
                .is_some_and(|n| n.component.is(PROTOCOL_ID));
            if own && let Some(notify) = self.object() {
                let flag = if path.enabled {
                    NCN_ENABLE
                } else {
                    NCN_DISABLE
                };
                let view = self.view(path);
                self.record(notify.notify_binding_path(self, NCN_REMOVE | flag, &view));
            }
        }
        {
            let mut world = self.world.borrow_mut();
            world
                .paths
                .retain(|p| p.owner != *guid && p.adapter != *guid);
            world.nodes.retain(|n| n.component.instance != *guid);
        }
        if let Some(notify) = self.object() {
            let class = if node.kind == Kind::Adapter {
                NCN_NET
            } else {
                NCN_NETTRANS
            };
            self.record(notify.sys_notify_component(self, NCN_REMOVE | class, &node.component));
        }
        true
    }

    // ---- what a user or netcfg.exe does, one session each ----

    fn add_nic(&self, media: AdapterMedia) -> Guid {
        let mut guid = Guid::default();
        self.session(false, |m| {
            guid = m.add_node(
                "pci\\ven_8086",
                NCF_PHYSICAL | NCF_HAS_UI,
                Kind::Adapter,
                media,
            );
        });
        guid
    }

    fn add_protocol(&self, id: &str) -> Guid {
        let mut guid = Guid::default();
        self.session(false, |m| {
            guid = m.add_node(id, 0, Kind::Protocol, AdapterMedia::default());
        });
        guid
    }

    fn add_filter(&self, id: &str) -> Guid {
        let mut guid = Guid::default();
        self.session(false, |m| {
            guid = m.add_node(id, NCF_LW_FILTER, Kind::Filter, AdapterMedia::default());
        });
        guid
    }

    /// `netcfg -l rsndkp.inf -c p -i RSNDK_MUXP`.
    fn install_protocol(&self) -> Guid {
        let mut guid = Guid::default();
        self.session(true, |m| {
            guid = m.add_node(
                PROTOCOL_ID,
                NCF_HAS_UI,
                Kind::Protocol,
                AdapterMedia::default(),
            );
        });
        guid
    }

    /// `netcfg -u RSNDK_MUXP`.
    fn uninstall_protocol(&self) {
        self.session(false, |m| {
            if let Some(notify) = m.object() {
                m.record(notify.removing(m));
            }
            for guid in m.find(PROTOCOL_ID) {
                m.remove_node(&guid);
            }
        });
    }

    fn remove_nic(&self, nic: &Guid) {
        self.session(false, |m| {
            m.remove_node(nic);
        });
    }

    /// `Enable-NetAdapterBinding`/`Disable-NetAdapterBinding` of the
    /// path `owner_id`->`adapter`. Returns whether it ends up enabled.
    fn set_binding(&self, owner_id: &str, adapter: &Guid, enable: bool) -> bool {
        let mut result = false;
        self.session(false, |m| {
            let token = m
                .world
                .borrow()
                .paths
                .iter()
                .find(|p| {
                    p.adapter == *adapter
                        && m.node(&p.owner).is_some_and(|n| n.component.is(owner_id))
                })
                .map(|p| p.token.clone())
                .expect("such a path");
            result = m.enable_path(adapter, &token, enable).expect("path exists");
        });
        result
    }

    /// Enables or disables one path, asking and telling the object as
    /// netcfg would. `None` when there is no such path.
    fn enable_path(&self, adapter: &Guid, token: &str, enable: bool) -> Option<bool> {
        let path = self
            .world
            .borrow()
            .paths
            .iter()
            .find(|p| p.adapter == *adapter && p.token == token)
            .cloned()?;
        let own = self
            .node(&path.owner)
            .is_some_and(|n| n.component.is(PROTOCOL_ID));
        let mut allowed = true;
        if enable && let Some(notify) = self.object() {
            let view = self.view(&path);
            let verdict = if own {
                notify.query_binding_path(self, NCN_ENABLE, &view)
            } else {
                notify.sys_query_binding_path(NCN_ENABLE, &view)
            };
            allowed = verdict == Verdict::Allow;
        }
        let now = if enable { allowed } else { false };
        let changed = now != path.enabled;
        for p in &mut self.world.borrow_mut().paths {
            if p.adapter == *adapter && p.token == token {
                p.enabled = now;
            }
        }
        if changed
            && own
            && let Some(notify) = self.object()
        {
            let mut view = self.view(&path);
            view.enabled = now;
            let flag = if now { NCN_ENABLE } else { NCN_DISABLE };
            self.record(notify.notify_binding_path(self, flag, &view));
        }
        Some(now)
    }

    // ---- what the tests look at ----

    fn enabled(&self, owner_id: &str, adapter: &Guid) -> Option<bool> {
        let world = self.world.borrow();
        world
            .paths
            .iter()
            .find(|p| {
                p.adapter == *adapter
                    && world
                        .nodes
                        .iter()
                        .any(|n| n.component.instance == p.owner && n.component.is(owner_id))
            })
            .map(|p| p.enabled)
    }

    fn miniports(&self) -> Vec<Guid> {
        self.find(MINIPORT_ID)
    }

    fn upper_bindings(&self, p: &Guid) -> Option<String> {
        self.world
            .borrow()
            .registry
            .get(p)
            .map(|(upper, _)| upper.clone())
    }

    fn assert_no_failure(&self) {
        let failures = self.failures.borrow();
        assert!(
            failures.is_empty(),
            "the notify object failed: {failures:?}"
        );
    }
}

impl NetCfg for Model {
    fn install_virtual_miniport(&self) -> Result<Guid, Failure> {
        Ok(self.add_node(
            MINIPORT_ID,
            NCF_VIRTUAL | NCF_NOT_USER_REMOVABLE | NCF_HAS_UI,
            Kind::Adapter,
            ETHERNET,
        ))
    }

    fn remove_adapter(&self, instance: &Guid) -> Result<bool, Failure> {
        Ok(self.remove_node(instance))
    }

    fn paths_above(&self, adapter: &Guid) -> Result<Vec<BindingPath>, Failure> {
        let paths: Vec<Path> = self
            .world
            .borrow()
            .paths
            .iter()
            .filter(|p| p.adapter == *adapter)
            .cloned()
            .collect();
        Ok(paths.iter().map(|p| self.view(p)).collect())
    }

    fn set_path_enabled(&self, adapter: &Guid, token: &str, enable: bool) -> Result<bool, Failure> {
        Ok(self.enable_path(adapter, token, enable).is_some())
    }

    fn adapter_media(&self, adapter: &Guid) -> Result<AdapterMedia, Failure> {
        self.node(adapter).map(|n| n.media).ok_or(Failure {
            operation: "model: no such adapter",
            hresult: -1,
        })
    }
}

impl AdapterRegistry for Model {
    fn load(&self) -> Result<Vec<(Guid, Record)>, Failure> {
        Ok(self
            .world
            .borrow()
            .registry
            .iter()
            .filter_map(|(p, (upper, disabled))| {
                Record::from_values(upper, disabled.clone()).map(|r| (*p, r))
            })
            .collect())
    }

    fn save(&self, adapter: &Guid, record: &Record) -> Result<(), Failure> {
        let mut world = self.world.borrow_mut();
        if world.registry_broken {
            return Err(Failure {
                operation: "model: RegSetValueExW",
                hresult: 0x8007_0005_u32 as i32,
            });
        }
        world.registry.insert(
            *adapter,
            (record.upper_bindings(), record.disabled_paths.clone()),
        );
        Ok(())
    }

    fn delete(&self, adapter: &Guid) -> Result<(), Failure> {
        self.world.borrow_mut().registry.remove(adapter);
        Ok(())
    }
}

/// A machine with one Ethernet NIC P, TCP/IP v4 and v6, LLTD and a QoS
/// filter, and rsndk's protocol installed.
fn machine() -> (Model, Guid) {
    let model = Model::new();
    for protocol in [TCPIP, TCPIP6, LLTDIO] {
        model.add_protocol(protocol);
    }
    model.add_filter(PACER);
    let p = model.add_nic(ETHERNET);
    model.install_protocol();
    (model, p)
}

/// P as rsndk leaves it alone: the protocol's binding off, everyone
/// else's on, no V, no record.
fn assert_untouched(model: &Model, p: &Guid) {
    assert_eq!(model.enabled(PROTOCOL_ID, p), Some(false), "rsndkp->P");
    for id in [TCPIP, TCPIP6, LLTDIO, PACER] {
        assert_eq!(model.enabled(id, p), Some(true), "{id}->P");
    }
    assert_eq!(model.upper_bindings(p), None, "a record of P");
}

/// P muxed: V exists, the record names it, the protocol is bound to P
/// only, the others are bound to V only (filters stay on P).
fn assert_muxed(model: &Model, p: &Guid) -> Guid {
    let record = model.upper_bindings(p).expect("a record of P");
    let v = model
        .miniports()
        .into_iter()
        .find(|v| record == format!("\\Device\\{v}"))
        .unwrap_or_else(|| {
            panic!(
                "UpperBindings {record} names no V ({:?})",
                model.miniports()
            )
        });
    assert_eq!(model.enabled(PROTOCOL_ID, p), Some(true), "rsndkp->P");
    assert_eq!(model.enabled(PROTOCOL_ID, &v), Some(false), "rsndkp->V");
    for id in [TCPIP, TCPIP6, LLTDIO] {
        assert_eq!(model.enabled(id, p), Some(false), "{id}->P");
        assert_eq!(model.enabled(id, &v), Some(true), "{id}->V");
    }
    assert_eq!(model.enabled(PACER, p), Some(true), "the filter on P");
    v
}

#[test]
fn install_touches_no_nic() {
    let (model, p) = machine();
    assert_untouched(&model, &p);
    assert!(model.miniports().is_empty());
    model.assert_no_failure();
}

#[test]
fn enabling_the_binding_creates_v_and_moves_the_protocols() {
    let (model, p) = machine();
    assert!(model.set_binding(PROTOCOL_ID, &p, true));
    let v = assert_muxed(&model, &p);
    assert_eq!(model.miniports(), [v]);
    // The format the driver's bind reads (upper_bindings.rs): \Device\{GUID}.
    let upper = model.upper_bindings(&p).expect("record");
    assert!(
        upper.starts_with("\\Device\\{") && upper.ends_with('}') && upper.len() == 46,
        "{upper}"
    );
    model.assert_no_failure();
}

#[test]
fn disabling_the_binding_removes_v_and_restores_p() {
    let (model, p) = machine();
    model.set_binding(PROTOCOL_ID, &p, true);
    assert!(!model.set_binding(PROTOCOL_ID, &p, false));
    assert!(model.miniports().is_empty());
    assert_untouched(&model, &p);
    model.assert_no_failure();
}

#[test]
fn a_binding_the_admin_had_disabled_stays_disabled() {
    let (model, p) = machine();
    assert!(!model.set_binding(LLTDIO, &p, false));
    model.set_binding(PROTOCOL_ID, &p, true);
    assert!(model.upper_bindings(&p).is_some());
    model.set_binding(PROTOCOL_ID, &p, false);
    assert_eq!(model.enabled(LLTDIO, &p), Some(false), "lltdio->P");
    assert_eq!(model.enabled(TCPIP, &p), Some(true), "tcpip->P");
    model.assert_no_failure();
}

#[test]
fn tokens_that_changed_since_recorded_still_give_p_its_protocols_back() {
    let (model, p) = machine();
    model.set_binding(PROTOCOL_ID, &p, true);
    assert_muxed(&model, &p);
    // netcfg names the same paths differently in a later session.
    for path in &mut model.world.borrow_mut().paths {
        path.token.push_str("#renamed");
    }
    model.set_binding(PROTOCOL_ID, &p, false);
    assert!(model.miniports().is_empty());
    assert_untouched(&model, &p);
    model.assert_no_failure();
}

#[test]
fn a_second_nic_gets_its_own_v() {
    let (model, p) = machine();
    let q = model.add_nic(ETHERNET);
    assert_eq!(
        model.enabled(PROTOCOL_ID, &q),
        Some(false),
        "a new NIC comes up opted out"
    );
    assert_eq!(model.enabled(TCPIP, &q), Some(true));
    model.set_binding(PROTOCOL_ID, &p, true);
    model.set_binding(PROTOCOL_ID, &q, true);
    let vp = assert_muxed(&model, &p);
    let vq = assert_muxed(&model, &q);
    assert_ne!(vp, vq);
    assert_eq!(model.miniports().len(), 2);
    // Undoing one leaves the other.
    model.set_binding(PROTOCOL_ID, &q, false);
    assert_untouched(&model, &q);
    assert_eq!(model.miniports(), [vp]);
    assert_muxed(&model, &p);
    model.assert_no_failure();
}

#[test]
fn a_nic_removed_takes_its_v() {
    let (model, p) = machine();
    let q = model.add_nic(ETHERNET);
    model.set_binding(PROTOCOL_ID, &p, true);
    model.set_binding(PROTOCOL_ID, &q, true);
    model.remove_nic(&p);
    assert_eq!(model.upper_bindings(&p), None);
    assert_eq!(model.miniports().len(), 1);
    assert_muxed(&model, &q);
    model.assert_no_failure();
}

#[test]
fn removing_the_protocol_removes_every_v_and_restores_every_nic() {
    let (model, p) = machine();
    let q = model.add_nic(ETHERNET);
    model.set_binding(PROTOCOL_ID, &p, true);
    model.set_binding(PROTOCOL_ID, &q, true);
    model.uninstall_protocol();
    assert!(model.miniports().is_empty());
    assert!(!model.protocol_installed());
    for nic in [p, q] {
        for id in [TCPIP, TCPIP6, LLTDIO, PACER] {
            assert_eq!(model.enabled(id, &nic), Some(true), "{id}->{nic}");
        }
        assert_eq!(model.upper_bindings(&nic), None);
    }
    model.assert_no_failure();
}

#[test]
fn reinstall_starts_clean_and_works_again() {
    let (model, p) = machine();
    model.set_binding(PROTOCOL_ID, &p, true);
    model.uninstall_protocol();
    model.install_protocol();
    assert_untouched(&model, &p);
    assert!(model.miniports().is_empty());
    model.set_binding(PROTOCOL_ID, &p, true);
    assert_muxed(&model, &p);
    assert_eq!(model.miniports().len(), 1);
    model.assert_no_failure();
}

#[test]
fn reinstall_undoes_a_leftover_record() {
    // A removal that left its record and V behind (the protocol removed
    // by hand, say): the next install removes that V and restores P.
    let (model, p) = machine();
    model.set_binding(PROTOCOL_ID, &p, true);
    let v = assert_muxed(&model, &p);
    model.session(false, |m| {
        for guid in m.find(PROTOCOL_ID) {
            m.world.borrow_mut().paths.retain(|path| path.owner != guid);
            m.world
                .borrow_mut()
                .nodes
                .retain(|n| n.component.instance != guid);
        }
    });
    assert!(model.miniports().contains(&v));
    model.install_protocol();
    assert!(model.miniports().is_empty());
    assert_untouched(&model, &p);
    model.assert_no_failure();
}

#[test]
fn a_nic_that_is_not_ethernet_gets_no_v() {
    let (model, p) = machine();
    let wifi = model.add_nic(WIFI);
    assert!(
        !model.set_binding(PROTOCOL_ID, &wifi, true),
        "the binding must be refused"
    );
    assert!(model.miniports().is_empty());
    assert_eq!(model.upper_bindings(&wifi), None);
    assert_eq!(model.enabled(TCPIP, &wifi), Some(true));
    // A virtual NIC (a Hyper-V host vNIC) is refused the same way.
    let mut vnic = Guid::default();
    model.session(false, |m| {
        vnic = m.add_node("vms_mp", NCF_VIRTUAL, Kind::Adapter, ETHERNET);
    });
    assert!(!model.set_binding(PROTOCOL_ID, &vnic, true));
    assert!(model.miniports().is_empty());
    assert_untouched(&model, &p);
    model.assert_no_failure();
}

#[test]
fn a_nic_without_media_keywords_is_taken_as_the_sample_would() {
    let (model, _) = machine();
    let q = model.add_nic(AdapterMedia::default());
    assert!(model.set_binding(PROTOCOL_ID, &q, true));
    assert_muxed(&model, &q);
    model.assert_no_failure();
}

#[test]
fn the_protocol_never_binds_to_its_own_v() {
    let (model, p) = machine();
    model.set_binding(PROTOCOL_ID, &p, true);
    let v = assert_muxed(&model, &p);
    assert!(
        !model.set_binding(PROTOCOL_ID, &v, true),
        "rsndkp->V must be refused"
    );
    assert_eq!(model.miniports(), [v], "no V over V");
    assert_muxed(&model, &p);
    model.assert_no_failure();
}

#[test]
fn a_protocol_installed_while_muxed_binds_to_v_and_later_to_p() {
    let (model, p) = machine();
    model.set_binding(PROTOCOL_ID, &p, true);
    let v = assert_muxed(&model, &p);
    let mut rspndr = Guid::default();
    model.session(false, |m| {
        rspndr = m.add_node("ms_rspndr", 0, Kind::Protocol, AdapterMedia::default());
    });
    assert_eq!(model.enabled("ms_rspndr", &p), Some(false));
    assert_eq!(model.enabled("ms_rspndr", &v), Some(true));
    // Enabling it on P by hand is refused too, while P is muxed.
    assert!(!model.set_binding("ms_rspndr", &p, true));
    model.set_binding(PROTOCOL_ID, &p, false);
    assert_eq!(model.enabled("ms_rspndr", &p), Some(true));
    model.assert_no_failure();
    let _ = rspndr;
}

#[test]
fn a_v_removed_by_hand_unmuxes_its_nic() {
    let (model, p) = machine();
    model.set_binding(PROTOCOL_ID, &p, true);
    let v = assert_muxed(&model, &p);
    model.session(false, |m| {
        m.remove_node(&v);
    });
    assert_eq!(model.upper_bindings(&p), None);
    for id in [TCPIP, TCPIP6, LLTDIO] {
        assert_eq!(model.enabled(id, &p), Some(true), "{id}->P");
    }
    model.assert_no_failure();
}

#[test]
fn a_registry_failure_is_reported() {
    let (model, p) = machine();
    model.world.borrow_mut().registry_broken = true;
    model.set_binding(PROTOCOL_ID, &p, true);
    let failures = model.failures.borrow().clone();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].operation, "model: RegSetValueExW");
    assert_eq!(model.upper_bindings(&p), None);
}

#[test]
fn notifications_of_other_classes_are_ignored() {
    let (model, p) = machine();
    let notify = Notify::new();
    notify.initialize(&model, false).expect("load");
    let component = model.node(&p).expect("P").component;
    notify
        .sys_notify_component(&model, NCN_ADD | NCN_NETSERVICE, &component)
        .expect("nothing to do");
    assert!(notify.muxed().is_empty());
    assert_untouched(&model, &p);
}

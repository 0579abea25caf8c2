//! A fake netcfg: COM objects for INetCfg, INetCfgClassSetup,
//! INetCfgComponent, INetCfgComponentBindings, INetCfgBindingPath,
//! INetCfgBindingInterface and the enumerators, over one small world:
//! an Ethernet NIC P, TCP/IP and rsndk's protocol, the paths
//! `rsndk_muxp->P` (disabled, as the notify object's opt-in leaves it)
//! and `ms_tcpip->P` (enabled), and V once installed. Every object counts
//! its references; objects made for one call (enumerators, binding
//! interfaces, QueryInterface results) count as live until released.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use core::ffi::c_void;
use core::ptr;

use crate::guid::Guid;
use crate::sys::*;
use crate::win::{self, HKCU, RegCreateKeyExW, RegSetValueExW, co_string, wide};

/// `NCF_PHYSICAL`, `NCF_VIRTUAL`, `NCF_HAS_UI`, `NCF_NOT_USER_REMOVABLE`.
const NCF_PHYSICAL: u32 = 0x4;
const NCF_VIRTUAL: u32 = 0x1;
const NCF_HAS_UI: u32 = 0x80;
const NCF_NOT_USER_REMOVABLE: u32 = 0x20;

/// A `Sync` wrapper for the static vtables (raw pointers in unused slots).
#[repr(transparent)]
struct Table<T>(T);
// SAFETY: the tables are immutable and the harness has one thread.
unsafe impl<T> Sync for Table<T> {}

#[derive(Clone)]
enum Item {
    /// A persistent object, AddRef'd when handed out.
    Object(*mut c_void),
    /// The binding interface of path `n`, made when handed out.
    InterfaceOf(usize),
}

enum Kind {
    NetCfg,
    ClassSetup,
    Component(usize),
    Bindings(usize),
    Path(usize),
    Interface(usize),
    Enum { items: Vec<Item>, next: Cell<usize> },
}

#[repr(C)]
struct Fake {
    vtbl: *const c_void,
    refs: Cell<u32>,
    transient: bool,
    kind: Kind,
    world: &'static Inner,
}

struct Component {
    id: &'static str,
    characteristics: u32,
    guid: Guid,
    object: *mut c_void,
    present: Cell<bool>,
}

struct Path {
    token: String,
    upper: usize,
    lower: usize,
    enabled: Cell<bool>,
    object: *mut c_void,
}

struct Inner {
    components: RefCell<Vec<Component>>,
    paths: RefCell<Vec<Path>>,
    netcfg: Cell<*mut c_void>,
    setup: Cell<*mut c_void>,
    installed: RefCell<Vec<String>>,
    removed: RefCell<Vec<Guid>>,
    transient_live: Cell<i32>,
}

const P: usize = 0;
const TCPIP: usize = 1;
const PROTOCOL: usize = 2;
const V: usize = 3;

/// The fake netcfg and its world.
pub struct World {
    inner: &'static Inner,
}

fn vtbl_of(kind: &Kind) -> *const c_void {
    match kind {
        Kind::NetCfg => ptr::from_ref(&NETCFG.0).cast(),
        Kind::ClassSetup => ptr::from_ref(&SETUP.0).cast(),
        Kind::Component(_) => ptr::from_ref(&COMPONENT.0).cast(),
        Kind::Bindings(_) => ptr::from_ref(&BINDINGS.0).cast(),
        Kind::Path(_) => ptr::from_ref(&PATH.0).cast(),
        Kind::Interface(_) => ptr::from_ref(&INTERFACE.0).cast(),
        Kind::Enum { .. } => ptr::from_ref(&ENUM.0).cast(),
    }
}

fn make(world: &'static Inner, kind: Kind, transient: bool) -> *mut c_void {
    if transient {
        world.transient_live.set(world.transient_live.get() + 1);
    }
    let fake = Box::new(Fake {
        vtbl: vtbl_of(&kind),
        refs: Cell::new(1),
        transient,
        kind,
        world,
    });
    Box::into_raw(fake).cast()
}

fn fake<'a>(this: *mut c_void) -> &'a Fake {
    // SAFETY: every pointer the fake hands out is a Fake.
    unsafe { &*this.cast::<Fake>() }
}

fn add_ref_object(object: *mut c_void) -> *mut c_void {
    let f = fake(object);
    f.refs.set(f.refs.get() + 1);
    object
}

impl World {
    pub fn new() -> World {
        let inner: &'static Inner = Box::leak(Box::new(Inner {
            components: RefCell::new(Vec::new()),
            paths: RefCell::new(Vec::new()),
            netcfg: Cell::new(ptr::null_mut()),
            setup: Cell::new(ptr::null_mut()),
            installed: RefCell::new(Vec::new()),
            removed: RefCell::new(Vec::new()),
            transient_live: Cell::new(0),
        }));
        let specs: [(&'static str, u32, u128, bool); 4] = [
            (
                "pci\\ven_1af4&dev_1041",
                NCF_PHYSICAL | NCF_HAS_UI,
                0x1111_1111_2222_3333_4444_5555_5555_5555,
                true,
            ),
            (
                "ms_tcpip",
                0,
                0x2111_1111_2222_3333_4444_5555_5555_5555,
                true,
            ),
            // netcfg reports ids in lower case: the DLL compares without case.
            (
                "rsndk_muxp",
                NCF_HAS_UI,
                0x3111_1111_2222_3333_4444_5555_5555_5555,
                true,
            ),
            (
                "rsndk_muxmp",
                NCF_VIRTUAL | NCF_NOT_USER_REMOVABLE | NCF_HAS_UI,
                0x4111_1111_2222_3333_4444_5555_5555_5555,
                false,
            ),
        ];
        for (index, (id, characteristics, guid, present)) in specs.into_iter().enumerate() {
            let object = make(inner, Kind::Component(index), false);
            inner.components.borrow_mut().push(Component {
                id,
                characteristics,
                guid: Guid::from_u128(guid),
                object,
                present: Cell::new(present),
            });
        }
        let p_guid = inner.components.borrow()[P].guid;
        for (index, (upper, enabled)) in [(PROTOCOL, false), (TCPIP, true)].into_iter().enumerate()
        {
            let id = inner.components.borrow()[upper].id;
            let object = make(inner, Kind::Path(index), false);
            inner.paths.borrow_mut().push(Path {
                token: format!("{id}->{p_guid}"),
                upper,
                lower: P,
                enabled: Cell::new(enabled),
                object,
            });
        }
        inner.netcfg.set(make(inner, Kind::NetCfg, false));
        inner.setup.set(make(inner, Kind::ClassSetup, false));
        World { inner }
    }

    pub fn netcfg(&self) -> *mut c_void {
        self.inner.netcfg.get()
    }
    pub fn protocol(&self) -> *mut c_void {
        self.inner.components.borrow()[PROTOCOL].object
    }
    pub fn nic_guid(&self) -> Guid {
        self.inner.components.borrow()[P].guid
    }
    pub fn protocol_path(&self) -> *mut c_void {
        self.inner.paths.borrow()[0].object
    }
    pub fn tcpip_path(&self) -> *mut c_void {
        self.inner.paths.borrow()[1].object
    }
    fn path_index(&self, path: *mut c_void) -> usize {
        match fake(path).kind {
            Kind::Path(n) => n,
            _ => win::fail("not a path"),
        }
    }
    pub fn set_enabled(&self, path: *mut c_void, enabled: bool) {
        self.inner.paths.borrow()[self.path_index(path)]
            .enabled
            .set(enabled);
    }
    pub fn enabled(&self, path: *mut c_void) -> bool {
        self.inner.paths.borrow()[self.path_index(path)]
            .enabled
            .get()
    }
    pub fn token(&self, path: *mut c_void) -> String {
        self.inner.paths.borrow()[self.path_index(path)]
            .token
            .clone()
    }
    pub fn miniport_guid(&self) -> Option<Guid> {
        let components = self.inner.components.borrow();
        components[V].present.get().then_some(components[V].guid)
    }
    pub fn installed_ids(&self) -> Vec<String> {
        self.inner.installed.borrow().clone()
    }
    pub fn removed(&self) -> Vec<Guid> {
        self.inner.removed.borrow().clone()
    }

    /// References not given back: persistent objects above their own one,
    /// and objects made for a call still alive.
    pub fn leaks(&self) -> Vec<String> {
        let mut leaks = Vec::new();
        let mut objects: Vec<(String, *mut c_void)> = Vec::new();
        for c in self.inner.components.borrow().iter() {
            objects.push((String::from(c.id), c.object));
        }
        for p in self.inner.paths.borrow().iter() {
            objects.push((p.token.clone(), p.object));
        }
        objects.push((String::from("INetCfg"), self.inner.netcfg.get()));
        objects.push((String::from("INetCfgClassSetup"), self.inner.setup.get()));
        for (name, object) in objects {
            let refs = fake(object).refs.get();
            if refs != 1 {
                leaks.push(format!("{name}: {} references kept", refs - 1));
            }
        }
        let live = self.inner.transient_live.get();
        if live != 0 {
            leaks.push(format!("{live} enumerators/interfaces not released"));
        }
        leaks
    }
}

// ---- IUnknown ----

fn own_iid(kind: &Kind) -> Guid {
    match kind {
        Kind::NetCfg => IID_INETCFG,
        Kind::ClassSetup => IID_INETCFGCLASSSETUP,
        Kind::Component(_) => IID_INETCFGCOMPONENT,
        Kind::Bindings(_) => IID_INETCFGCOMPONENTBINDINGS,
        Kind::Path(_) => IID_INETCFGBINDINGPATH,
        Kind::Interface(_) => IID_INETCFGBINDINGINTERFACE,
        Kind::Enum { .. } => IID_IENUMNETCFGCOMPONENT,
    }
}

unsafe extern "system" fn query_interface(
    this: *mut c_void,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    let f = fake(this);
    // SAFETY: the DLL passes valid pointers.
    let iid = unsafe { *iid };
    let result = if iid == IID_IUNKNOWN || iid == own_iid(&f.kind) {
        add_ref_object(this)
    } else if let (Kind::Component(n), true) = (&f.kind, iid == IID_INETCFGCOMPONENTBINDINGS) {
        make(f.world, Kind::Bindings(*n), true)
    } else {
        ptr::null_mut()
    };
    // SAFETY: a valid out-pointer.
    unsafe { out.write(result) };
    if result.is_null() {
        E_NOINTERFACE
    } else {
        S_OK
    }
}

unsafe extern "system" fn add_ref(this: *mut c_void) -> u32 {
    let f = fake(this);
    f.refs.set(f.refs.get() + 1);
    f.refs.get()
}

unsafe extern "system" fn release(this: *mut c_void) -> u32 {
    let f = fake(this);
    let left = f
        .refs
        .get()
        .checked_sub(1)
        .unwrap_or_else(|| win::fail("Release below zero"));
    f.refs.set(left);
    if left == 0 {
        if !f.transient {
            win::fail("a persistent fake object released to zero");
        }
        f.world.transient_live.set(f.world.transient_live.get() - 1);
        // SAFETY: made by `make` with Box::into_raw; the last reference.
        drop(unsafe { Box::from_raw(this.cast::<Fake>()) });
    }
    left
}

const UNKNOWN: IUnknownVtbl = IUnknownVtbl {
    QueryInterface: query_interface,
    AddRef: add_ref,
    Release: release,
};
const NONE: Unused = ptr::null();

// ---- INetCfg ----

static NETCFG: Table<INetCfgVtbl> = Table(INetCfgVtbl {
    base: UNKNOWN,
    Initialize: NONE,
    Uninitialize: NONE,
    Apply: NONE,
    Cancel: NONE,
    EnumComponents: netcfg_enum_components,
    FindComponent: NONE,
    QueryNetCfgClass: netcfg_query_class,
});

unsafe extern "system" fn netcfg_enum_components(
    this: *mut c_void,
    class: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    let f = fake(this);
    // SAFETY: valid pointers from the DLL.
    if unsafe { *class } != GUID_DEVCLASS_NET {
        win::fail("EnumComponents of a class other than Net");
    }
    let items = f
        .world
        .components
        .borrow()
        .iter()
        .filter(|c| c.present.get() && (c.characteristics & (NCF_PHYSICAL | NCF_VIRTUAL)) != 0)
        .map(|c| Item::Object(c.object))
        .collect();
    // SAFETY: a valid out-pointer.
    unsafe {
        out.write(make(
            f.world,
            Kind::Enum {
                items,
                next: Cell::new(0),
            },
            true,
        ))
    };
    S_OK
}

unsafe extern "system" fn netcfg_query_class(
    this: *mut c_void,
    class: *const Guid,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    let f = fake(this);
    // SAFETY: valid pointers from the DLL.
    let (class, iid) = unsafe { (*class, *iid) };
    if class != GUID_DEVCLASS_NET || iid != IID_INETCFGCLASSSETUP {
        win::fail("QueryNetCfgClass: only (Net, INetCfgClassSetup) expected");
    }
    // SAFETY: a valid out-pointer.
    unsafe { out.write(add_ref_object(f.world.setup.get())) };
    S_OK
}

// ---- INetCfgClassSetup ----

static SETUP: Table<INetCfgClassSetupVtbl> = Table(INetCfgClassSetupVtbl {
    base: UNKNOWN,
    SelectAndInstall: NONE,
    Install: setup_install,
    DeInstall: setup_deinstall,
});

fn read_wide(text: *const u16) -> String {
    let mut units = Vec::new();
    let mut at = text;
    loop {
        // SAFETY: a NUL-terminated string from the DLL.
        let unit = unsafe { *at };
        if unit == 0 {
            break;
        }
        units.push(unit);
        at = at.wrapping_add(1);
    }
    String::from_utf16_lossy(&units)
}

unsafe extern "system" fn setup_install(
    this: *mut c_void,
    id: *const u16,
    _obo: *mut c_void,
    _flags: u32,
    _build: u32,
    _answer_file: *const u16,
    _answer_sections: *const u16,
    out: *mut *mut c_void,
) -> HRESULT {
    let f = fake(this);
    let id = read_wide(id);
    f.world.installed.borrow_mut().push(id.clone());
    if !id.eq_ignore_ascii_case("RSNDK_MUXMP") {
        win::fail(&format!("Install of {id}"));
    }
    let components = f.world.components.borrow();
    components[V].present.set(true);
    // SAFETY: a valid out-pointer.
    unsafe { out.write(add_ref_object(components[V].object)) };
    S_OK
}

unsafe extern "system" fn setup_deinstall(
    this: *mut c_void,
    component: *mut c_void,
    _obo: *mut c_void,
    _refs: *mut *mut u16,
) -> HRESULT {
    let f = fake(this);
    let Kind::Component(n) = fake(component).kind else {
        win::fail("DeInstall of a non-component");
    };
    let components = f.world.components.borrow();
    components[n].present.set(false);
    f.world.removed.borrow_mut().push(components[n].guid);
    S_OK
}

// ---- INetCfgComponent ----

static COMPONENT: Table<INetCfgComponentVtbl> = Table(INetCfgComponentVtbl {
    base: UNKNOWN,
    GetDisplayName: NONE,
    SetDisplayName: NONE,
    GetHelpText: NONE,
    GetId: component_get_id,
    GetCharacteristics: component_get_characteristics,
    GetInstanceGuid: component_get_instance_guid,
    GetPnpDevNodeId: NONE,
    GetClassGuid: NONE,
    GetBindName: NONE,
    GetDeviceStatus: NONE,
    OpenParamKey: component_open_param_key,
    RaisePropertyUi: NONE,
});

fn component_index(this: *mut c_void) -> usize {
    match fake(this).kind {
        Kind::Component(n) => n,
        _ => win::fail("not a component"),
    }
}

unsafe extern "system" fn component_get_id(this: *mut c_void, out: *mut *mut u16) -> HRESULT {
    let id = fake(this).world.components.borrow()[component_index(this)].id;
    // SAFETY: a valid out-pointer; the DLL frees the string.
    unsafe { out.write(co_string(id)) };
    S_OK
}

unsafe extern "system" fn component_get_characteristics(
    this: *mut c_void,
    out: *mut u32,
) -> HRESULT {
    let value = fake(this).world.components.borrow()[component_index(this)].characteristics;
    // SAFETY: a valid out-pointer.
    unsafe { out.write(value) };
    S_OK
}

unsafe extern "system" fn component_get_instance_guid(
    this: *mut c_void,
    out: *mut Guid,
) -> HRESULT {
    let value = fake(this).world.components.borrow()[component_index(this)].guid;
    // SAFETY: a valid out-pointer.
    unsafe { out.write(value) };
    S_OK
}

/// A key under HKCU standing for the adapter's driver key, holding an
/// Ethernet adapter's keywords (the DLL closes it).
unsafe extern "system" fn component_open_param_key(this: *mut c_void, out: *mut HKEY) -> HRESULT {
    let guid = fake(this).world.components.borrow()[component_index(this)].guid;
    let path = wide(&format!("Software\\rsndknotify-harness\\{guid}"));
    let mut key: HKEY = ptr::null_mut();
    // SAFETY: valid pointers; KEY_ALL_ACCESS.
    let status = unsafe {
        RegCreateKeyExW(
            HKCU,
            path.as_ptr(),
            0,
            ptr::null_mut(),
            0,
            0xF003F,
            ptr::null(),
            &raw mut key,
            ptr::null_mut(),
        )
    };
    if status != 0 {
        win::fail("RegCreateKeyExW for OpenParamKey");
    }
    for (name, value) in [("*IfType", 6u32), ("*PhysicalMediaType", 14u32)] {
        let name = wide(name);
        // SAFETY: an open key, a REG_DWORD of 4 bytes.
        unsafe { RegSetValueExW(key, name.as_ptr(), 0, 4, ptr::from_ref(&value).cast(), 4) };
    }
    // SAFETY: a valid out-pointer.
    unsafe { out.write(key) };
    S_OK
}

// ---- INetCfgComponentBindings ----

static BINDINGS: Table<INetCfgComponentBindingsVtbl> = Table(INetCfgComponentBindingsVtbl {
    base: UNKNOWN,
    BindTo: NONE,
    UnbindFrom: NONE,
    SupportsBindingInterface: NONE,
    IsBoundTo: NONE,
    IsBindableTo: NONE,
    EnumBindingPaths: bindings_enum_paths,
    MoveBefore: NONE,
    MoveAfter: NONE,
});

unsafe extern "system" fn bindings_enum_paths(
    this: *mut c_void,
    flags: u32,
    out: *mut *mut c_void,
) -> HRESULT {
    let f = fake(this);
    let Kind::Bindings(n) = f.kind else {
        win::fail("not a bindings object");
    };
    if flags != EBP_ABOVE {
        win::fail("EnumBindingPaths other than EBP_ABOVE");
    }
    let items = f
        .world
        .paths
        .borrow()
        .iter()
        .filter(|p| p.lower == n)
        .map(|p| Item::Object(p.object))
        .collect();
    // SAFETY: a valid out-pointer.
    unsafe {
        out.write(make(
            f.world,
            Kind::Enum {
                items,
                next: Cell::new(0),
            },
            true,
        ))
    };
    S_OK
}

// ---- INetCfgBindingPath ----

static PATH: Table<INetCfgBindingPathVtbl> = Table(INetCfgBindingPathVtbl {
    base: UNKNOWN,
    IsSamePathAs: NONE,
    IsSubPathOf: NONE,
    IsEnabled: path_is_enabled,
    Enable: path_enable,
    GetPathToken: path_get_token,
    GetOwner: NONE,
    GetDepth: NONE,
    EnumBindingInterfaces: path_enum_interfaces,
});

fn path_index(this: *mut c_void) -> usize {
    match fake(this).kind {
        Kind::Path(n) => n,
        _ => win::fail("not a path"),
    }
}

unsafe extern "system" fn path_is_enabled(this: *mut c_void) -> HRESULT {
    if fake(this).world.paths.borrow()[path_index(this)]
        .enabled
        .get()
    {
        S_OK
    } else {
        S_FALSE
    }
}

unsafe extern "system" fn path_enable(this: *mut c_void, enable: BOOL) -> HRESULT {
    fake(this).world.paths.borrow()[path_index(this)]
        .enabled
        .set(enable != 0);
    S_OK
}

unsafe extern "system" fn path_get_token(this: *mut c_void, out: *mut *mut u16) -> HRESULT {
    let token = fake(this).world.paths.borrow()[path_index(this)]
        .token
        .clone();
    // SAFETY: a valid out-pointer; the DLL frees the string.
    unsafe { out.write(co_string(&token)) };
    S_OK
}

unsafe extern "system" fn path_enum_interfaces(
    this: *mut c_void,
    out: *mut *mut c_void,
) -> HRESULT {
    let f = fake(this);
    let items = alloc::vec![Item::InterfaceOf(path_index(this))];
    // SAFETY: a valid out-pointer.
    unsafe {
        out.write(make(
            f.world,
            Kind::Enum {
                items,
                next: Cell::new(0),
            },
            true,
        ))
    };
    S_OK
}

// ---- INetCfgBindingInterface ----

static INTERFACE: Table<INetCfgBindingInterfaceVtbl> = Table(INetCfgBindingInterfaceVtbl {
    base: UNKNOWN,
    GetName: NONE,
    GetUpperComponent: interface_upper,
    GetLowerComponent: interface_lower,
});

fn interface_end(this: *mut c_void, upper: bool, out: *mut *mut c_void) -> HRESULT {
    let f = fake(this);
    let Kind::Interface(n) = f.kind else {
        win::fail("not a binding interface");
    };
    let component = {
        let paths = f.world.paths.borrow();
        if upper {
            paths[n].upper
        } else {
            paths[n].lower
        }
    };
    let object = f.world.components.borrow()[component].object;
    // SAFETY: a valid out-pointer.
    unsafe { out.write(add_ref_object(object)) };
    S_OK
}

unsafe extern "system" fn interface_upper(this: *mut c_void, out: *mut *mut c_void) -> HRESULT {
    interface_end(this, true, out)
}

unsafe extern "system" fn interface_lower(this: *mut c_void, out: *mut *mut c_void) -> HRESULT {
    interface_end(this, false, out)
}

// ---- IEnumNetCfg* ----

static ENUM: Table<IEnumNetCfgVtbl> = Table(IEnumNetCfgVtbl {
    base: UNKNOWN,
    Next: enum_next,
    Skip: NONE,
    Reset: NONE,
    Clone: NONE,
});

unsafe extern "system" fn enum_next(
    this: *mut c_void,
    count: u32,
    out: *mut *mut c_void,
    fetched: *mut u32,
) -> HRESULT {
    let f = fake(this);
    let Kind::Enum { items, next } = &f.kind else {
        win::fail("not an enumerator");
    };
    if count != 1 {
        win::fail("Next asked for more than one");
    }
    let Some(item) = items.get(next.get()).cloned() else {
        // SAFETY: valid out-pointers.
        unsafe { out.write(ptr::null_mut()) };
        if !fetched.is_null() {
            // SAFETY: as above.
            unsafe { fetched.write(0) };
        }
        return S_FALSE;
    };
    next.set(next.get() + 1);
    let object = match item {
        Item::Object(object) => add_ref_object(object),
        Item::InterfaceOf(n) => make(f.world, Kind::Interface(n), true),
    };
    // SAFETY: valid out-pointers.
    unsafe { out.write(object) };
    if !fetched.is_null() {
        // SAFETY: as above.
        unsafe { fetched.write(1) };
    }
    S_OK
}

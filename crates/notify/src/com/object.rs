//! The notify object: one heap block holding a vtable pointer per
//! interface (`INetCfgComponentControl`, `INetCfgComponentSetup`,
//! `INetCfgComponentNotifyBinding`, `INetCfgComponentNotifyGlobal`), its
//! reference count, the session's `INetCfg` and the decisions
//! ([`Notify`]). Each interface pointer is the address of its vtable
//! pointer; a method finds the object by subtracting that field's offset.
//!
//! netcfg calls the object from the thread that holds its write lock, one
//! call at a time (calls may nest: netcfg notifies the object from inside
//! the INetCfg calls the object makes). The state is in `RefCell`s never
//! borrowed across such a call.

use alloc::boxed::Box;
use core::cell::RefCell;
use core::ffi::c_void;
use core::mem::offset_of;
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

use super::host::{ComHost, component_view, path_view};
use super::ptr::ComPtr;
use super::server;
use crate::guid::Guid;
use crate::netcfg::Failure;
use crate::notify::{Notify, SUPPORTED_NOTIFICATIONS, Verdict};
use crate::sys::{
    BOOL, E_NOINTERFACE, E_POINTER, E_UNEXPECTED, HRESULT, IID_INETCFGCOMPONENTCONTROL,
    IID_INETCFGCOMPONENTNOTIFYBINDING, IID_INETCFGCOMPONENTNOTIFYGLOBAL, IID_INETCFGCOMPONENTSETUP,
    IID_IUNKNOWN, INetCfgBindingPathVtbl, INetCfgComponentControlVtbl,
    INetCfgComponentNotifyBindingVtbl, INetCfgComponentNotifyGlobalVtbl, INetCfgComponentSetupVtbl,
    INetCfgComponentVtbl, INetCfgVtbl, IUnknownVtbl, NETCFG_S_DISABLE_QUERY, S_OK,
};

/// The COM object.
#[repr(C)]
pub struct NotifyObject {
    control: &'static INetCfgComponentControlVtbl,
    setup: &'static INetCfgComponentSetupVtbl,
    binding: &'static INetCfgComponentNotifyBindingVtbl,
    global: &'static INetCfgComponentNotifyGlobalVtbl,
    references: AtomicU32,
    /// The session's INetCfg, from `Initialize` on.
    host: RefCell<Option<ComHost>>,
    notify: Notify,
}

const CONTROL: usize = offset_of!(NotifyObject, control);
const SETUP: usize = offset_of!(NotifyObject, setup);
const BINDING: usize = offset_of!(NotifyObject, binding);
const GLOBAL: usize = offset_of!(NotifyObject, global);

impl NotifyObject {
    /// A new object with one reference, counted live until its last
    /// release; returns its `IUnknown` (the control interface).
    pub fn create() -> *mut c_void {
        let object = Box::new(NotifyObject {
            control: &CONTROL_VTBL,
            setup: &SETUP_VTBL,
            binding: &BINDING_VTBL,
            global: &GLOBAL_VTBL,
            references: AtomicU32::new(1),
            host: RefCell::new(None),
            notify: Notify::new(),
        });
        server::object_created();
        let object = Box::into_raw(object);
        object.cast::<u8>().wrapping_add(CONTROL).cast::<c_void>()
    }

    /// The interface pointer of the interface at `offset`.
    fn interface(&self, offset: usize) -> *mut c_void {
        ptr::from_ref(self)
            .cast::<u8>()
            .wrapping_add(offset)
            .cast_mut()
            .cast::<c_void>()
    }

    /// The object behind interface pointer `this` of the interface at
    /// `OFFSET`.
    ///
    /// # Safety
    /// `this` is an interface pointer this module handed out for the
    /// interface at `OFFSET`, on an object still referenced.
    unsafe fn from_interface<'a, const OFFSET: usize>(this: *mut c_void) -> &'a NotifyObject {
        let object = this.wrapping_byte_sub(OFFSET).cast::<NotifyObject>();
        // SAFETY: `this` is `OFFSET` bytes into a live NotifyObject
        // (contract), so `object` is its start.
        unsafe { &*object }
    }

    fn query_interface(&self, iid: &Guid) -> Option<*mut c_void> {
        let offset = if *iid == IID_IUNKNOWN || *iid == IID_INETCFGCOMPONENTCONTROL {
            CONTROL
        } else if *iid == IID_INETCFGCOMPONENTSETUP {
            SETUP
        } else if *iid == IID_INETCFGCOMPONENTNOTIFYBINDING {
            BINDING
        } else if *iid == IID_INETCFGCOMPONENTNOTIFYGLOBAL {
            GLOBAL
        } else {
            return None;
        };
        self.references.fetch_add(1, Ordering::Relaxed);
        Some(self.interface(offset))
    }

    /// A reference-counted copy of the session's host (none before
    /// `Initialize`), so no borrow is held while netcfg runs.
    fn host(&self) -> Option<ComHost> {
        self.host.borrow().clone()
    }
}

/// The HRESULT of an operation's outcome.
fn hresult(result: Result<(), Failure>) -> HRESULT {
    match result {
        Ok(()) => S_OK,
        Err(failure) => failure.hresult,
    }
}

fn verdict(verdict: Verdict) -> HRESULT {
    match verdict {
        Verdict::Allow => S_OK,
        Verdict::Disable => NETCFG_S_DISABLE_QUERY,
    }
}

// ---- IUnknown, for each interface ----

unsafe extern "system" fn query_interface<const OFFSET: usize>(
    this: *mut c_void,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    if out.is_null() {
        return E_POINTER;
    }
    // SAFETY: `out` is a writable pointer (checked non-null; COM's
    // contract for the rest).
    unsafe { out.write(ptr::null_mut()) };
    if iid.is_null() {
        return E_POINTER;
    }
    // SAFETY: `this` is our interface at OFFSET (COM calls a method
    // through the pointer it was given).
    let object = unsafe { NotifyObject::from_interface::<OFFSET>(this) };
    // SAFETY: a non-null IID pointer from the caller.
    let iid = unsafe { &*iid };
    match object.query_interface(iid) {
        Some(interface) => {
            // SAFETY: checked non-null above.
            unsafe { out.write(interface) };
            S_OK
        }
        None => E_NOINTERFACE,
    }
}

unsafe extern "system" fn add_ref<const OFFSET: usize>(this: *mut c_void) -> u32 {
    // SAFETY: `this` is our interface at OFFSET.
    let object = unsafe { NotifyObject::from_interface::<OFFSET>(this) };
    object.references.fetch_add(1, Ordering::Relaxed) + 1
}

unsafe extern "system" fn release<const OFFSET: usize>(this: *mut c_void) -> u32 {
    // SAFETY: `this` is our interface at OFFSET.
    let object = unsafe { NotifyObject::from_interface::<OFFSET>(this) };
    let left = object.references.fetch_sub(1, Ordering::Release) - 1;
    if left == 0 {
        core::sync::atomic::fence(Ordering::Acquire);
        let raw = ptr::from_ref(object).cast_mut();
        // SAFETY: the last reference is gone: the block Box::into_raw
        // made in `create` is freed once, and nothing uses it after.
        drop(unsafe { Box::from_raw(raw) });
        server::object_destroyed();
    }
    left
}

const fn unknown<const OFFSET: usize>() -> IUnknownVtbl {
    IUnknownVtbl {
        QueryInterface: query_interface::<OFFSET>,
        AddRef: add_ref::<OFFSET>,
        Release: release::<OFFSET>,
    }
}

// ---- INetCfgComponentControl ----

static CONTROL_VTBL: INetCfgComponentControlVtbl = INetCfgComponentControlVtbl {
    base: unknown::<CONTROL>(),
    Initialize: control_initialize,
    ApplyRegistryChanges: control_apply_registry_changes,
    ApplyPnpChanges: control_apply_pnp_changes,
    CancelChanges: control_cancel_changes,
};

unsafe extern "system" fn control_initialize(
    this: *mut c_void,
    _component: *mut c_void,
    netcfg: *mut c_void,
    installing: BOOL,
) -> HRESULT {
    // SAFETY: `this` is our control interface.
    let object = unsafe { NotifyObject::from_interface::<CONTROL>(this) };
    // SAFETY: netcfg's INetCfg, live for this call; we keep a reference.
    let Some(netcfg) = (unsafe { ComPtr::<INetCfgVtbl>::borrow(netcfg) }) else {
        return E_POINTER;
    };
    let host = ComHost::new(netcfg);
    *object.host.borrow_mut() = Some(host.clone());
    hresult(object.notify.initialize(&host, installing != 0))
}

unsafe extern "system" fn control_apply_registry_changes(this: *mut c_void) -> HRESULT {
    // SAFETY: `this` is our control interface.
    let object = unsafe { NotifyObject::from_interface::<CONTROL>(this) };
    let Some(host) = object.host() else {
        return E_UNEXPECTED;
    };
    hresult(object.notify.apply_registry_changes(&host))
}

/// Nothing to send: NDIS binds the protocol to P after the registry
/// changes, and the bind reads `UpperBindings` then (the sample sends a
/// reconfigure only for its optional custom events).
unsafe extern "system" fn control_apply_pnp_changes(
    _this: *mut c_void,
    _callback: *mut c_void,
) -> HRESULT {
    S_OK
}

unsafe extern "system" fn control_cancel_changes(this: *mut c_void) -> HRESULT {
    // SAFETY: `this` is our control interface.
    let object = unsafe { NotifyObject::from_interface::<CONTROL>(this) };
    let Some(host) = object.host() else {
        return S_OK;
    };
    hresult(object.notify.cancel_changes(&host))
}

// ---- INetCfgComponentSetup ----

static SETUP_VTBL: INetCfgComponentSetupVtbl = INetCfgComponentSetupVtbl {
    base: unknown::<SETUP>(),
    Install: setup_install,
    Upgrade: setup_upgrade,
    ReadAnswerFile: setup_read_answer_file,
    Removing: setup_removing,
};

/// Installing changes nothing by itself: every binding comes up disabled
/// (opt-in per NIC).
unsafe extern "system" fn setup_install(_this: *mut c_void, _flags: u32) -> HRESULT {
    S_OK
}

unsafe extern "system" fn setup_upgrade(_this: *mut c_void, _flags: u32, _build: u32) -> HRESULT {
    S_OK
}

/// No answer-file parameters.
unsafe extern "system" fn setup_read_answer_file(
    _this: *mut c_void,
    _file: *const u16,
    _sections: *const u16,
) -> HRESULT {
    S_OK
}

unsafe extern "system" fn setup_removing(this: *mut c_void) -> HRESULT {
    // SAFETY: `this` is our setup interface.
    let object = unsafe { NotifyObject::from_interface::<SETUP>(this) };
    let Some(host) = object.host() else {
        return E_UNEXPECTED;
    };
    hresult(object.notify.removing(&host))
}

// ---- INetCfgComponentNotifyBinding ----

static BINDING_VTBL: INetCfgComponentNotifyBindingVtbl = INetCfgComponentNotifyBindingVtbl {
    base: unknown::<BINDING>(),
    QueryBindingPath: binding_query,
    NotifyBindingPath: binding_notify,
};

/// The path behind a callback's argument, if it can be read.
///
/// # Safety
/// `path` is null or netcfg's live `INetCfgBindingPath`.
unsafe fn read_path(path: *mut c_void) -> Result<crate::netcfg::BindingPath, Failure> {
    // SAFETY: the caller's contract.
    let path = unsafe { ComPtr::<INetCfgBindingPathVtbl>::borrow(path) }.ok_or(Failure {
        operation: "binding path argument",
        hresult: E_POINTER,
    })?;
    path_view(&path)
}

unsafe extern "system" fn binding_query(
    this: *mut c_void,
    flags: u32,
    path: *mut c_void,
) -> HRESULT {
    // SAFETY: `this` is our binding interface.
    let object = unsafe { NotifyObject::from_interface::<BINDING>(this) };
    let Some(host) = object.host() else {
        return S_OK;
    };
    // SAFETY: netcfg's path argument.
    match unsafe { read_path(path) } {
        Ok(view) => verdict(object.notify.query_binding_path(&host, flags, &view)),
        // A path that cannot be read is not refused on a guess.
        Err(_) => S_OK,
    }
}

unsafe extern "system" fn binding_notify(
    this: *mut c_void,
    flags: u32,
    path: *mut c_void,
) -> HRESULT {
    // SAFETY: `this` is our binding interface.
    let object = unsafe { NotifyObject::from_interface::<BINDING>(this) };
    let Some(host) = object.host() else {
        return E_UNEXPECTED;
    };
    // SAFETY: netcfg's path argument.
    match unsafe { read_path(path) } {
        Ok(view) => hresult(object.notify.notify_binding_path(&host, flags, &view)),
        Err(failure) => failure.hresult,
    }
}

// ---- INetCfgComponentNotifyGlobal ----

static GLOBAL_VTBL: INetCfgComponentNotifyGlobalVtbl = INetCfgComponentNotifyGlobalVtbl {
    base: unknown::<GLOBAL>(),
    GetSupportedNotifications: global_supported,
    SysQueryBindingPath: global_query,
    SysNotifyBindingPath: global_notify_path,
    SysNotifyComponent: global_notify_component,
};

unsafe extern "system" fn global_supported(_this: *mut c_void, out: *mut u32) -> HRESULT {
    if out.is_null() {
        return E_POINTER;
    }
    // SAFETY: a non-null out-pointer from netcfg.
    unsafe { out.write(SUPPORTED_NOTIFICATIONS) };
    S_OK
}

unsafe extern "system" fn global_query(
    this: *mut c_void,
    flags: u32,
    path: *mut c_void,
) -> HRESULT {
    // SAFETY: `this` is our global interface.
    let object = unsafe { NotifyObject::from_interface::<GLOBAL>(this) };
    // SAFETY: netcfg's path argument.
    match unsafe { read_path(path) } {
        Ok(view) => verdict(object.notify.sys_query_binding_path(flags, &view)),
        Err(_) => S_OK,
    }
}

/// Paths are acted on when asked (`SysQueryBindingPath`); the outcome
/// needs nothing more.
unsafe extern "system" fn global_notify_path(
    _this: *mut c_void,
    _flags: u32,
    _path: *mut c_void,
) -> HRESULT {
    S_OK
}

unsafe extern "system" fn global_notify_component(
    this: *mut c_void,
    flags: u32,
    component: *mut c_void,
) -> HRESULT {
    // SAFETY: `this` is our global interface.
    let object = unsafe { NotifyObject::from_interface::<GLOBAL>(this) };
    let Some(host) = object.host() else {
        return E_UNEXPECTED;
    };
    // SAFETY: netcfg's live INetCfgComponent argument.
    let Some(component) = (unsafe { ComPtr::<INetCfgComponentVtbl>::borrow(component) }) else {
        return E_POINTER;
    };
    match component_view(&component) {
        Ok(view) => hresult(object.notify.sys_notify_component(&host, flags, &view)),
        Err(failure) => failure.hresult,
    }
}

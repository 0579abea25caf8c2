//! Drives the real `rsndknotify.dll` as netcfg would, under Wine: loads
//! it, gets its class factory, creates the notify object, and runs one
//! opt-in cycle against a fake netcfg (one Ethernet NIC P, TCP/IP and
//! rsndk's protocol): the binding comes up disabled, enabling it installs
//! V, disables TCP/IP on P and records `UpperBindings` in the registry; a
//! second session loads that record, and disabling the binding removes V,
//! enables TCP/IP on P again and deletes the record; a third enables it
//! again and removes the protocol (`Removing`). Every reference the
//! DLL took on the fake objects must be given back, and the DLL must be
//! unloadable at the end. Prints one line per check; exit code 0 when all
//! pass, 1 at the first failure.

#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../src/guid.rs"]
#[allow(dead_code)]
mod guid;
#[path = "../../src/sys.rs"]
#[allow(dead_code, clippy::upper_case_acronyms)]
mod sys;

mod fake;
mod win;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ffi::c_void;
use core::ptr;

use guid::Guid;
use sys::*;

use crate::fake::World;
use crate::win::{check, fail, say};

/// The CLSID the INF names (rsndkp.inx `Ndi\ClsID`).
const CLSID: Guid = Guid::from_u128(0x400c38e6_72d6_4acc_beae_154c2d0f41e9);
/// `NCN_ADD`, `NCN_ENABLE`, `NCN_DISABLE` (netcfgn.h).
const NCN_ADD: u32 = 0x1;
const NCN_ENABLE: u32 = 0x10;
const NCN_DISABLE: u32 = 0x20;
/// What `GetSupportedNotifications` must answer: NET, NETTRANS,
/// NETCLIENT, NETSERVICE, ADD, REMOVE, ENABLE, DISABLE, BINDING_PATH.
const SUPPORTED: u32 = 0x000F_0133;
/// The protocol's records (crates/notify/src/record.rs).
const ADAPTERS_KEY: &str = "SYSTEM\\CurrentControlSet\\Services\\rsndkp\\Parameters\\Adapters";

type GetClassObject =
    unsafe extern "system" fn(*const Guid, *const Guid, *mut *mut c_void) -> HRESULT;
type CanUnloadNow = unsafe extern "system" fn() -> HRESULT;

/// The object's four interfaces.
struct Session {
    control: *mut c_void,
    setup: *mut c_void,
    binding: *mut c_void,
    global: *mut c_void,
}

impl Session {
    fn release(self) {
        for interface in [self.control, self.setup, self.binding, self.global] {
            // SAFETY: each is a referenced interface of the DLL's object.
            let unknown: &IUnknownVtbl = unsafe { win::vtable(interface) };
            // SAFETY: gives back the reference QueryInterface gave us.
            unsafe { (unknown.Release)(interface) };
        }
    }
}

fn query(object: *mut c_void, iid: &Guid, name: &str) -> *mut c_void {
    // SAFETY: a live interface of the DLL's object.
    let unknown: &IUnknownVtbl = unsafe { win::vtable(object) };
    let mut out: *mut c_void = ptr::null_mut();
    // SAFETY: QueryInterface with valid pointers.
    let hr = unsafe { (unknown.QueryInterface)(object, iid, &raw mut out) };
    check(
        hr == S_OK && !out.is_null(),
        &format!("QueryInterface({name}) = {hr:#x}"),
    );
    out
}

/// Creates a notify object through the factory and takes its interfaces.
fn create(factory: *mut c_void) -> Session {
    // SAFETY: the factory DllGetClassObject returned.
    let vtbl: &IClassFactoryVtbl = unsafe { win::vtable(factory) };
    let mut control: *mut c_void = ptr::null_mut();
    // SAFETY: CreateInstance with no outer object and valid pointers.
    let hr = unsafe {
        (vtbl.CreateInstance)(
            factory,
            ptr::null_mut(),
            &IID_INETCFGCOMPONENTCONTROL,
            &raw mut control,
        )
    };
    check(
        hr == S_OK && !control.is_null(),
        &format!("CreateInstance = {hr:#x}"),
    );
    let session = Session {
        control,
        setup: query(control, &IID_INETCFGCOMPONENTSETUP, "INetCfgComponentSetup"),
        binding: query(
            control,
            &IID_INETCFGCOMPONENTNOTIFYBINDING,
            "INetCfgComponentNotifyBinding",
        ),
        global: query(
            control,
            &IID_INETCFGCOMPONENTNOTIFYGLOBAL,
            "INetCfgComponentNotifyGlobal",
        ),
    };
    let mut other: *mut c_void = ptr::null_mut();
    // SAFETY: as above.
    let unknown: &IUnknownVtbl = unsafe { win::vtable(control) };
    // SAFETY: QueryInterface for an interface the object does not have.
    let hr = unsafe { (unknown.QueryInterface)(control, &IID_INETCFG, &raw mut other) };
    check(
        hr == E_NOINTERFACE && other.is_null(),
        "QueryInterface(INetCfg) is E_NOINTERFACE",
    );
    session
}

fn initialize(session: &Session, world: &World) {
    // SAFETY: the control interface.
    let vtbl: &INetCfgComponentControlVtbl = unsafe { win::vtable(session.control) };
    // SAFETY: Initialize with the fake protocol component and INetCfg.
    let hr = unsafe { (vtbl.Initialize)(session.control, world.protocol(), world.netcfg(), 0) };
    check(hr == S_OK, &format!("Initialize = {hr:#x}"));
}

fn apply(session: &Session) {
    // SAFETY: the control interface.
    let vtbl: &INetCfgComponentControlVtbl = unsafe { win::vtable(session.control) };
    // SAFETY: a method without arguments.
    let hr = unsafe { (vtbl.ApplyRegistryChanges)(session.control) };
    check(hr == S_OK, &format!("ApplyRegistryChanges = {hr:#x}"));
}

fn query_path(session: &Session, flags: u32, path: *mut c_void) -> HRESULT {
    // SAFETY: the notify-binding interface.
    let vtbl: &INetCfgComponentNotifyBindingVtbl = unsafe { win::vtable(session.binding) };
    // SAFETY: a fake path, live for the call.
    unsafe { (vtbl.QueryBindingPath)(session.binding, flags, path) }
}

fn notify_path(session: &Session, flags: u32, path: *mut c_void) -> HRESULT {
    // SAFETY: the notify-binding interface.
    let vtbl: &INetCfgComponentNotifyBindingVtbl = unsafe { win::vtable(session.binding) };
    // SAFETY: a fake path, live for the call.
    unsafe { (vtbl.NotifyBindingPath)(session.binding, flags, path) }
}

fn sys_query_path(session: &Session, flags: u32, path: *mut c_void) -> HRESULT {
    // SAFETY: the notify-global interface.
    let vtbl: &INetCfgComponentNotifyGlobalVtbl = unsafe { win::vtable(session.global) };
    // SAFETY: a fake path, live for the call.
    unsafe { (vtbl.SysQueryBindingPath)(session.global, flags, path) }
}

/// The record of P: (`UpperBindings`, `DisabledPaths`), if there is one.
fn record(p: &Guid) -> Option<(Vec<String>, Vec<String>)> {
    let key = format!("{ADAPTERS_KEY}\\{p}");
    let upper = win::registry_strings(&key, "UpperBindings")?;
    let disabled = win::registry_strings(&key, "DisabledPaths").unwrap_or_default();
    Some((upper, disabled))
}

fn run() {
    let dll = win::load_library("rsndknotify.dll");
    let get_class_object: GetClassObject = win::entry(dll, "DllGetClassObject");
    let can_unload_now: CanUnloadNow = win::entry(dll, "DllCanUnloadNow");

    let mut factory: *mut c_void = ptr::null_mut();
    let wrong = Guid::from_u128(1);
    // SAFETY: the export's signature; valid pointers.
    let hr = unsafe { get_class_object(&wrong, &IID_ICLASSFACTORY, &raw mut factory) };
    check(
        hr == CLASS_E_CLASSNOTAVAILABLE,
        "DllGetClassObject(other CLSID) refused",
    );
    // SAFETY: as above.
    let hr = unsafe { get_class_object(&CLSID, &IID_ICLASSFACTORY, &raw mut factory) };
    check(
        hr == S_OK && !factory.is_null(),
        &format!("DllGetClassObject = {hr:#x}"),
    );

    let world = World::new();
    let p = world.nic_guid();

    // Session 1: the binding comes up disabled; enabling it installs V.
    let session = create(factory);
    let mut supported = 0u32;
    // SAFETY: the notify-global interface.
    let global: &INetCfgComponentNotifyGlobalVtbl = unsafe { win::vtable(session.global) };
    // SAFETY: a valid out-pointer.
    let hr = unsafe { (global.GetSupportedNotifications)(session.global, &raw mut supported) };
    check(
        hr == S_OK && supported == SUPPORTED,
        &format!("GetSupportedNotifications = {supported:#x}"),
    );
    initialize(&session, &world);
    let own = world.protocol_path();
    let tcpip = world.tcpip_path();
    check(
        query_path(&session, NCN_ADD | NCN_ENABLE, own) == NETCFG_S_DISABLE_QUERY,
        "QueryBindingPath(ADD|ENABLE, rsndkp->P) = NETCFG_S_DISABLE_QUERY (opt-in)",
    );
    check(
        query_path(&session, NCN_ENABLE, own) == S_OK,
        "QueryBindingPath(ENABLE, rsndkp->P) = S_OK (P is Ethernet by its *IfType)",
    );
    world.set_enabled(own, true);
    let hr = notify_path(&session, NCN_ENABLE, own);
    check(
        hr == S_OK,
        &format!("NotifyBindingPath(ENABLE, rsndkp->P) = {hr:#x}"),
    );
    let v = world.miniport_guid();
    check(
        v.is_some(),
        "INetCfgClassSetup::Install(\"RSNDK_MUXMP\") installed V",
    );
    let v = v.unwrap_or_default();
    check(
        world.installed_ids() == ["RSNDK_MUXMP"],
        &format!("Install ids: {:?}", world.installed_ids()),
    );
    check(!world.enabled(tcpip), "ms_tcpip->P disabled");
    check(world.enabled(own), "rsndkp->P still enabled");
    check(
        sys_query_path(&session, NCN_ENABLE, tcpip) == NETCFG_S_DISABLE_QUERY,
        "SysQueryBindingPath(ENABLE, ms_tcpip->P) refused while P is muxed",
    );
    check(
        record(&p).is_none(),
        "no registry write before ApplyRegistryChanges",
    );
    apply(&session);
    let expected_upper = format!("\\Device\\{v}");
    match record(&p) {
        Some((upper, disabled)) => {
            check(
                upper == [expected_upper.clone()],
                &format!("UpperBindings = {upper:?}"),
            );
            check(
                disabled == [world.token(tcpip)],
                &format!("DisabledPaths = {disabled:?}"),
            );
        }
        None => fail(&format!("no record under {ADAPTERS_KEY}\\{p}")),
    }
    session.release();
    // SAFETY: the export takes no argument.
    check(
        unsafe { can_unload_now() } == S_OK,
        "DllCanUnloadNow = S_OK between sessions",
    );

    // Session 2: loads the record; disabling the binding removes V.
    let session = create(factory);
    initialize(&session, &world);
    world.set_enabled(own, false);
    let hr = notify_path(&session, NCN_DISABLE, own);
    check(
        hr == S_OK,
        &format!("NotifyBindingPath(DISABLE, rsndkp->P) = {hr:#x}"),
    );
    check(
        world.miniport_guid().is_none(),
        "INetCfgClassSetup::DeInstall removed V",
    );
    check(
        world.removed() == [v],
        &format!("DeInstall of {:?}", world.removed()),
    );
    check(world.enabled(tcpip), "ms_tcpip->P enabled again");
    apply(&session);
    check(record(&p).is_none(), "the record of P is deleted");
    session.release();

    // Session 3: enabled again, then the protocol is removed
    // (INetCfgComponentSetup::Removing): V goes, TCP/IP comes back.
    let session = create(factory);
    initialize(&session, &world);
    world.set_enabled(own, true);
    let hr = notify_path(&session, NCN_ENABLE, own);
    check(
        hr == S_OK,
        &format!("NotifyBindingPath(ENABLE) again = {hr:#x}"),
    );
    check(
        world.miniport_guid().is_some() && !world.enabled(tcpip),
        "V again, TCP/IP off P",
    );
    // SAFETY: the setup interface.
    let setup: &INetCfgComponentSetupVtbl = unsafe { win::vtable(session.setup) };
    // SAFETY: a method without arguments.
    let hr = unsafe { (setup.Removing)(session.setup) };
    check(hr == S_OK, &format!("Removing = {hr:#x}"));
    check(world.miniport_guid().is_none(), "Removing removed V");
    check(world.enabled(tcpip), "Removing enabled ms_tcpip->P again");
    apply(&session);
    check(record(&p).is_none(), "no record of P after Removing");
    session.release();

    // SAFETY: the factory: give back DllGetClassObject's reference.
    let vtbl: &IUnknownVtbl = unsafe { win::vtable(factory) };
    // SAFETY: as above.
    unsafe { (vtbl.Release)(factory) };
    // SAFETY: the export takes no argument.
    check(
        unsafe { can_unload_now() } == S_OK,
        "DllCanUnloadNow = S_OK at the end",
    );
    check(
        world.leaks().is_empty(),
        &format!("every reference given back: {:?}", world.leaks()),
    );
    say("harness: all checks passed");
}

/// The process entry point (`/ENTRY:harness_main`).
#[unsafe(no_mangle)]
pub extern "system" fn harness_main() -> ! {
    run();
    win::exit(0)
}

//! The DLL's exports and its class factory.
//!
//! Exports: `DllGetClassObject` and `DllCanUnloadNow` (COM's in-process
//! server contract), `DllRegisterServer` and `DllUnregisterServer`: the
//! WDK's "Loading the Notify Object DLL and Class Object" asks a notify
//! object DLL for all four, and "About Notify Objects" says the network
//! class installer registers the component's COM class objects after the
//! install by calling the DLL's entry point (the MUX sample's INF has no
//! RegisterDlls either; its DLL exports the same four).

use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::imports::{GetModuleFileNameW, HKEY_LOCAL_MACHINE, KEY_WRITE};
use super::object::NotifyObject;
use super::registry::{Key, delete_tree};
use crate::CLSID_RSNDK_NOTIFY;
use crate::guid::Guid;
use crate::sys::{
    BOOL, CLASS_E_CLASSNOTAVAILABLE, CLASS_E_NOAGGREGATION, E_NOINTERFACE, E_POINTER, HRESULT,
    IClassFactoryVtbl, IID_ICLASSFACTORY, IID_IUNKNOWN, IUnknownVtbl, S_FALSE, S_OK,
};

/// Live notify objects.
static OBJECTS: AtomicUsize = AtomicUsize::new(0);
/// `IClassFactory::LockServer(TRUE)` calls not yet undone.
static LOCKS: AtomicUsize = AtomicUsize::new(0);

/// Counts a new notify object.
pub fn object_created() {
    OBJECTS.fetch_add(1, Ordering::AcqRel);
}

/// Counts a notify object gone.
pub fn object_destroyed() {
    OBJECTS.fetch_sub(1, Ordering::AcqRel);
}

/// The class factory: a static object (its reference count is moot).
#[repr(C)]
struct ClassFactory {
    vtbl: &'static IClassFactoryVtbl,
}

static FACTORY_VTBL: IClassFactoryVtbl = IClassFactoryVtbl {
    base: IUnknownVtbl {
        QueryInterface: factory_query_interface,
        AddRef: factory_add_ref,
        Release: factory_release,
    },
    CreateInstance: factory_create_instance,
    LockServer: factory_lock_server,
};

static FACTORY: ClassFactory = ClassFactory {
    vtbl: &FACTORY_VTBL,
};

fn factory_pointer() -> *mut c_void {
    ptr::from_ref(&FACTORY).cast_mut().cast::<c_void>()
}

/// Writes `value` to a caller's out-pointer already checked non-null.
///
/// # Safety
/// `out` is a writable, non-null pointer.
unsafe fn put(out: *mut *mut c_void, value: *mut c_void) {
    // SAFETY: the caller's contract.
    unsafe { out.write(value) };
}

unsafe extern "system" fn factory_query_interface(
    _this: *mut c_void,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    if out.is_null() || iid.is_null() {
        return E_POINTER;
    }
    // SAFETY: a non-null IID pointer from the caller.
    let iid = unsafe { &*iid };
    if *iid == IID_IUNKNOWN || *iid == IID_ICLASSFACTORY {
        // SAFETY: checked non-null.
        unsafe { put(out, factory_pointer()) };
        S_OK
    } else {
        // SAFETY: checked non-null.
        unsafe { put(out, ptr::null_mut()) };
        E_NOINTERFACE
    }
}

unsafe extern "system" fn factory_add_ref(_this: *mut c_void) -> u32 {
    2
}

unsafe extern "system" fn factory_release(_this: *mut c_void) -> u32 {
    1
}

unsafe extern "system" fn factory_create_instance(
    _this: *mut c_void,
    outer: *mut c_void,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    if out.is_null() {
        return E_POINTER;
    }
    // SAFETY: checked non-null.
    unsafe { put(out, ptr::null_mut()) };
    if !outer.is_null() {
        return CLASS_E_NOAGGREGATION;
    }
    let object = NotifyObject::create();
    // SAFETY: `object` is the new object's IUnknown; its vtable is ours.
    let unknown: &IUnknownVtbl = unsafe { super::ptr::vtable(object) };
    // SAFETY: QueryInterface on the live new object with the caller's
    // IID and out-pointer (both checked by query_interface).
    let hr = unsafe { (unknown.QueryInterface)(object, iid, out) };
    // SAFETY: drops the creation reference: on success the caller's
    // reference keeps the object, on failure it is freed here.
    unsafe { (unknown.Release)(object) };
    hr
}

unsafe extern "system" fn factory_lock_server(_this: *mut c_void, lock: BOOL) -> HRESULT {
    if lock != 0 {
        LOCKS.fetch_add(1, Ordering::AcqRel);
    } else {
        // Never below zero, whatever a caller does.
        let _ = LOCKS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
    S_OK
}

/// Hands out the class factory of [`CLSID_RSNDK_NOTIFY`].
///
/// # Safety
/// COM's contract: `clsid` and `iid` are null or valid GUIDs, `out` is
/// null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DllGetClassObject(
    clsid: *const Guid,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HRESULT {
    if out.is_null() {
        return E_POINTER;
    }
    // SAFETY: checked non-null.
    unsafe { put(out, ptr::null_mut()) };
    if clsid.is_null() || iid.is_null() {
        return E_POINTER;
    }
    // SAFETY: a non-null CLSID pointer from the caller.
    if unsafe { *clsid } != CLSID_RSNDK_NOTIFY {
        return CLASS_E_CLASSNOTAVAILABLE;
    }
    // SAFETY: the static factory's QueryInterface with the caller's
    // checked pointers.
    unsafe { factory_query_interface(factory_pointer(), iid, out) }
}

/// `S_OK` when no notify object is alive and the server is not locked.
#[unsafe(no_mangle)]
pub extern "system" fn DllCanUnloadNow() -> HRESULT {
    if OBJECTS.load(Ordering::Acquire) == 0 && LOCKS.load(Ordering::Acquire) == 0 {
        S_OK
    } else {
        S_FALSE
    }
}

/// The class's key under `HKEY_LOCAL_MACHINE` (= `HKCR\CLSID\{...}`).
fn class_key() -> alloc::string::String {
    alloc::format!("SOFTWARE\\Classes\\CLSID\\{CLSID_RSNDK_NOTIFY}")
}

unsafe extern "C" {
    /// The image's own base, which lld-link (like link.exe) defines.
    static __ImageBase: u8;
}

/// This DLL's full path.
fn module_path() -> Result<alloc::string::String, HRESULT> {
    let mut path = [0u16; 1024];
    let module = (&raw const __ImageBase).cast_mut().cast::<c_void>();
    // SAFETY: our own module handle (its base) and a buffer of
    // `path.len()` characters.
    let chars = unsafe { GetModuleFileNameW(module, path.as_mut_ptr(), path.len() as u32) };
    let used = path.get(..chars as usize).unwrap_or(&[]);
    if used.is_empty() || used.len() >= path.len() {
        return Err(crate::sys::E_UNEXPECTED);
    }
    Ok(alloc::string::String::from_utf16_lossy(used))
}

/// Registers the class: `HKCR\CLSID\{CLSID}\InprocServer32` = this DLL,
/// `ThreadingModel = Both` (as the sample's `notify.rgs`: netcfg's
/// interfaces are `[local]`, so the object must live in its caller's
/// apartment).
#[unsafe(no_mangle)]
pub extern "system" fn DllRegisterServer() -> HRESULT {
    let path = match module_path() {
        Ok(path) => path,
        Err(hr) => return hr,
    };
    let result = (|| {
        let class = Key::create(HKEY_LOCAL_MACHINE, &class_key(), KEY_WRITE)?;
        class.set_string(None, "rsndk notify object")?;
        let server = Key::create(class.handle(), "InprocServer32", KEY_WRITE)?;
        server.set_string(None, &path)?;
        server.set_string(Some("ThreadingModel"), "Both")
    })();
    match result {
        Ok(()) => S_OK,
        Err(failure) => failure.hresult,
    }
}

/// Removes the class's registration (none is no error).
#[unsafe(no_mangle)]
pub extern "system" fn DllUnregisterServer() -> HRESULT {
    match delete_tree(HKEY_LOCAL_MACHINE, &class_key()) {
        Ok(()) => S_OK,
        Err(failure) => failure.hresult,
    }
}

//! [`NetCfg`] and [`AdapterRegistry`] for the real thing: the `INetCfg`
//! netcfg passed to `Initialize`, and the registry.

use alloc::string::String;
use alloc::vec::Vec;
use core::ffi::c_void;
use core::ptr;

use super::imports::{
    HKEY_LOCAL_MACHINE, KEY_READ, KEY_WRITE, RRF_RT_REG_DWORD, RRF_RT_REG_MULTI_SZ, RRF_RT_REG_SZ,
};
use super::ptr::{ComPtr, check, take_co_string, wide};
use super::registry::{Key, delete_key, number, strings};
use crate::guid::Guid;
use crate::netcfg::{
    AdapterMedia, AdapterRegistry, BindingPath, Component, Failure, MINIPORT_ID, NetCfg,
};
use crate::record::{ADAPTERS_KEY, DISABLED_PATHS, Record, UPPER_BINDINGS};
use crate::sys::{
    E_POINTER, EBP_ABOVE, GUID_DEVCLASS_NET, HKEY, IEnumNetCfgVtbl, IID_INETCFGCLASSSETUP,
    IID_INETCFGCOMPONENTBINDINGS, INetCfgBindingInterfaceVtbl, INetCfgBindingPathVtbl,
    INetCfgClassSetupVtbl, INetCfgComponentBindingsVtbl, INetCfgComponentVtbl, INetCfgVtbl, S_OK,
};

/// The notify object's view of netcfg: the session's `INetCfg`.
#[derive(Clone, Debug)]
pub struct ComHost {
    netcfg: ComPtr<INetCfgVtbl>,
}

impl ComHost {
    /// Over the `INetCfg` of `Initialize`.
    pub fn new(netcfg: ComPtr<INetCfgVtbl>) -> ComHost {
        ComHost { netcfg }
    }

    /// `INetCfg::QueryNetCfgClass(GUID_DEVCLASS_NET, IID_INetCfgClassSetup)`.
    fn net_class_setup(&self) -> Result<ComPtr<INetCfgClassSetupVtbl>, Failure> {
        const OPERATION: &str = "INetCfg::QueryNetCfgClass";
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: a live INetCfg, valid GUID pointers and out-pointer.
        let hr = unsafe {
            (self.netcfg.vtbl().QueryNetCfgClass)(
                self.netcfg.as_raw(),
                &GUID_DEVCLASS_NET,
                &IID_INETCFGCLASSSETUP,
                &raw mut out,
            )
        };
        check(hr, OPERATION)?;
        // SAFETY: success: an INetCfgClassSetup with one reference for us.
        unsafe { ComPtr::adopt(out) }.ok_or(Failure {
            operation: OPERATION,
            hresult: E_POINTER,
        })
    }

    /// The adapter (class Net) with instance GUID `instance`
    /// (`EnumComponents`, as the sample's `HrFindInstance`).
    fn find_adapter(
        &self,
        instance: &Guid,
    ) -> Result<Option<ComPtr<INetCfgComponentVtbl>>, Failure> {
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: a live INetCfg, a valid GUID and out-pointer.
        let hr = unsafe {
            (self.netcfg.vtbl().EnumComponents)(
                self.netcfg.as_raw(),
                &GUID_DEVCLASS_NET,
                &raw mut out,
            )
        };
        check(hr, "INetCfg::EnumComponents")?;
        // SAFETY: success: an IEnumNetCfgComponent with one reference.
        let Some(components) = (unsafe { ComPtr::<IEnumNetCfgVtbl>::adopt(out) }) else {
            return Ok(None);
        };
        while let Some(component) =
            next::<INetCfgComponentVtbl>(&components, "IEnumNetCfgComponent::Next")?
        {
            if instance_guid(&component)? == *instance {
                return Ok(Some(component));
            }
        }
        Ok(None)
    }

    /// The paths above `adapter`, each with its view.
    fn paths(
        &self,
        adapter: &Guid,
    ) -> Result<Vec<(ComPtr<INetCfgBindingPathVtbl>, BindingPath)>, Failure> {
        let Some(component) = self.find_adapter(adapter)? else {
            return Ok(Vec::new());
        };
        let bindings: ComPtr<INetCfgComponentBindingsVtbl> = component.query(
            &IID_INETCFGCOMPONENTBINDINGS,
            "INetCfgComponent::QueryInterface(INetCfgComponentBindings)",
        )?;
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: a live INetCfgComponentBindings and a valid out-pointer.
        let hr = unsafe {
            (bindings.vtbl().EnumBindingPaths)(bindings.as_raw(), EBP_ABOVE, &raw mut out)
        };
        check(hr, "INetCfgComponentBindings::EnumBindingPaths")?;
        // SAFETY: success: an IEnumNetCfgBindingPath with one reference.
        let Some(paths) = (unsafe { ComPtr::<IEnumNetCfgVtbl>::adopt(out) }) else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        while let Some(path) =
            next::<INetCfgBindingPathVtbl>(&paths, "IEnumNetCfgBindingPath::Next")?
        {
            let view = path_view(&path)?;
            found.push((path, view));
        }
        Ok(found)
    }
}

/// The next element of an `IEnumNetCfg*` enumerator (layout `V`), or
/// `None` at the end.
fn next<V>(
    enumerator: &ComPtr<IEnumNetCfgVtbl>,
    operation: &'static str,
) -> Result<Option<ComPtr<V>>, Failure> {
    let mut item: *mut c_void = ptr::null_mut();
    let mut fetched: u32 = 0;
    // SAFETY: a live enumerator; room for one element and its count.
    let hr = unsafe {
        (enumerator.vtbl().Next)(enumerator.as_raw(), 1, &raw mut item, &raw mut fetched)
    };
    if check(hr, operation)? != S_OK || fetched != 1 {
        return Ok(None);
    }
    // SAFETY: S_OK with one element fetched: a referenced interface of
    // the enumerator's element type (V, the caller's choice for it).
    Ok(unsafe { ComPtr::adopt(item) })
}

/// `INetCfgComponent::GetInstanceGuid`.
fn instance_guid(component: &ComPtr<INetCfgComponentVtbl>) -> Result<Guid, Failure> {
    let mut guid = Guid::default();
    // SAFETY: a live component and a valid out-pointer.
    let hr = unsafe { (component.vtbl().GetInstanceGuid)(component.as_raw(), &raw mut guid) };
    check(hr, "INetCfgComponent::GetInstanceGuid")?;
    Ok(guid)
}

/// A component's id, characteristics and instance GUID.
pub fn component_view(component: &ComPtr<INetCfgComponentVtbl>) -> Result<Component, Failure> {
    let mut id: *mut u16 = ptr::null_mut();
    // SAFETY: a live component and a valid out-pointer.
    let hr = unsafe { (component.vtbl().GetId)(component.as_raw(), &raw mut id) };
    check(hr, "INetCfgComponent::GetId")?;
    // SAFETY: success: a CoTaskMem string that is ours to free.
    let id = unsafe { take_co_string(id) };
    let mut characteristics: u32 = 0;
    // SAFETY: a live component and a valid out-pointer.
    let hr = unsafe {
        (component.vtbl().GetCharacteristics)(component.as_raw(), &raw mut characteristics)
    };
    check(hr, "INetCfgComponent::GetCharacteristics")?;
    Ok(Component {
        id,
        characteristics,
        instance: instance_guid(component)?,
    })
}

/// A path's token, state and components (owner first, bottom last).
pub fn path_view(path: &ComPtr<INetCfgBindingPathVtbl>) -> Result<BindingPath, Failure> {
    let mut token: *mut u16 = ptr::null_mut();
    // SAFETY: a live path and a valid out-pointer.
    let hr = unsafe { (path.vtbl().GetPathToken)(path.as_raw(), &raw mut token) };
    check(hr, "INetCfgBindingPath::GetPathToken")?;
    // SAFETY: success: a CoTaskMem string that is ours to free.
    let token: String = unsafe { take_co_string(token) };
    // SAFETY: a live path.
    let hr = unsafe { (path.vtbl().IsEnabled)(path.as_raw()) };
    let enabled = check(hr, "INetCfgBindingPath::IsEnabled")? == S_OK;
    let mut out: *mut c_void = ptr::null_mut();
    // SAFETY: a live path and a valid out-pointer.
    let hr = unsafe { (path.vtbl().EnumBindingInterfaces)(path.as_raw(), &raw mut out) };
    check(hr, "INetCfgBindingPath::EnumBindingInterfaces")?;
    let mut components = Vec::new();
    // SAFETY: success: an IEnumNetCfgBindingInterface with one reference.
    if let Some(interfaces) = unsafe { ComPtr::<IEnumNetCfgVtbl>::adopt(out) } {
        while let Some(interface) =
            next::<INetCfgBindingInterfaceVtbl>(&interfaces, "IEnumNetCfgBindingInterface::Next")?
        {
            if components.is_empty() {
                let upper = end(&interface, true)?;
                components.push(component_view(&upper)?);
            }
            let lower = end(&interface, false)?;
            components.push(component_view(&lower)?);
        }
    }
    Ok(BindingPath {
        token,
        enabled,
        components,
    })
}

/// `GetUpperComponent` or `GetLowerComponent` of a binding interface.
fn end(
    interface: &ComPtr<INetCfgBindingInterfaceVtbl>,
    upper: bool,
) -> Result<ComPtr<INetCfgComponentVtbl>, Failure> {
    let (method, operation) = if upper {
        (
            interface.vtbl().GetUpperComponent,
            "INetCfgBindingInterface::GetUpperComponent",
        )
    } else {
        (
            interface.vtbl().GetLowerComponent,
            "INetCfgBindingInterface::GetLowerComponent",
        )
    };
    let mut out: *mut c_void = ptr::null_mut();
    // SAFETY: a live binding interface and a valid out-pointer.
    let hr = unsafe { method(interface.as_raw(), &raw mut out) };
    check(hr, operation)?;
    // SAFETY: success: an INetCfgComponent with one reference.
    unsafe { ComPtr::adopt(out) }.ok_or(Failure {
        operation,
        hresult: E_POINTER,
    })
}

impl NetCfg for ComHost {
    fn install_virtual_miniport(&self) -> Result<Guid, Failure> {
        const OPERATION: &str = "INetCfgClassSetup::Install";
        let setup = self.net_class_setup()?;
        let id = wide(MINIPORT_ID);
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: a live INetCfgClassSetup; the hardware id is
        // NUL-terminated; no OBO token, flags, answer file (as the
        // sample's CMuxVirtualMiniport::Install); a valid out-pointer.
        let hr = unsafe {
            (setup.vtbl().Install)(
                setup.as_raw(),
                id.as_ptr(),
                ptr::null_mut(),
                0,
                0,
                ptr::null(),
                ptr::null(),
                &raw mut out,
            )
        };
        check(hr, OPERATION)?;
        // SAFETY: success: the installed INetCfgComponent, one reference.
        let miniport: ComPtr<INetCfgComponentVtbl> =
            unsafe { ComPtr::adopt(out) }.ok_or(Failure {
                operation: OPERATION,
                hresult: E_POINTER,
            })?;
        match instance_guid(&miniport) {
            Ok(guid) => Ok(guid),
            Err(failure) => {
                // A V nobody can name would stay forever: take it back.
                // SAFETY: live interfaces; no OBO token, no refs wanted.
                unsafe {
                    (setup.vtbl().DeInstall)(
                        setup.as_raw(),
                        miniport.as_raw(),
                        ptr::null_mut(),
                        ptr::null_mut(),
                    )
                };
                Err(failure)
            }
        }
    }

    fn remove_adapter(&self, instance: &Guid) -> Result<bool, Failure> {
        let Some(adapter) = self.find_adapter(instance)? else {
            return Ok(false);
        };
        let setup = self.net_class_setup()?;
        // SAFETY: live interfaces; no OBO token, no refs wanted.
        let hr = unsafe {
            (setup.vtbl().DeInstall)(
                setup.as_raw(),
                adapter.as_raw(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check(hr, "INetCfgClassSetup::DeInstall")?;
        Ok(true)
    }

    fn paths_above(&self, adapter: &Guid) -> Result<Vec<BindingPath>, Failure> {
        Ok(self
            .paths(adapter)?
            .into_iter()
            .map(|(_, view)| view)
            .collect())
    }

    fn set_path_enabled(&self, adapter: &Guid, token: &str, enable: bool) -> Result<bool, Failure> {
        let Some((path, _)) = self
            .paths(adapter)?
            .into_iter()
            .find(|(_, view)| view.token == token)
        else {
            return Ok(false);
        };
        // SAFETY: a live binding path.
        let hr = unsafe { (path.vtbl().Enable)(path.as_raw(), i32::from(enable)) };
        check(hr, "INetCfgBindingPath::Enable")?;
        Ok(true)
    }

    fn adapter_media(&self, adapter: &Guid) -> Result<AdapterMedia, Failure> {
        const OPERATION: &str = "INetCfgComponent::OpenParamKey";
        let component = self.find_adapter(adapter)?.ok_or(Failure {
            operation: "INetCfg::EnumComponents (the adapter)",
            hresult: crate::sys::E_INVALIDARG,
        })?;
        let mut handle: HKEY = ptr::null_mut();
        // SAFETY: a live component and a valid out-pointer.
        let hr = unsafe { (component.vtbl().OpenParamKey)(component.as_raw(), &raw mut handle) };
        check(hr, OPERATION)?;
        if handle.is_null() {
            return Err(Failure {
                operation: OPERATION,
                hresult: E_POINTER,
            });
        }
        let key = Key::adopt(handle);
        let read = |name: &str| -> Result<Option<u32>, Failure> {
            Ok(key
                .value(None, name, RRF_RT_REG_DWORD | RRF_RT_REG_SZ)?
                .and_then(|(kind, data)| number(kind, &data)))
        };
        Ok(AdapterMedia {
            if_type: read("*IfType")?,
            physical_medium: read("*PhysicalMediaType")?,
        })
    }
}

impl AdapterRegistry for ComHost {
    fn load(&self) -> Result<Vec<(Guid, Record)>, Failure> {
        let Some(adapters) = Key::open(HKEY_LOCAL_MACHINE, ADAPTERS_KEY, KEY_READ)? else {
            return Ok(Vec::new());
        };
        let mut records = Vec::new();
        for name in adapters.subkeys()? {
            let Some(p) = Guid::parse_braced(&name) else {
                continue;
            };
            let upper = adapters
                .value(
                    Some(&name),
                    UPPER_BINDINGS,
                    RRF_RT_REG_SZ | RRF_RT_REG_MULTI_SZ,
                )?
                .and_then(|(_, data)| strings(&data).into_iter().next());
            let disabled = adapters
                .value(Some(&name), DISABLED_PATHS, RRF_RT_REG_MULTI_SZ)?
                .map(|(_, data)| strings(&data))
                .unwrap_or_default();
            if let Some(record) = upper.and_then(|upper| Record::from_values(&upper, disabled)) {
                records.push((p, record));
            }
        }
        Ok(records)
    }

    fn save(&self, adapter: &Guid, record: &Record) -> Result<(), Failure> {
        let path = alloc::format!("{ADAPTERS_KEY}\\{adapter}");
        let key = Key::create(HKEY_LOCAL_MACHINE, &path, KEY_WRITE)?;
        key.set_string(Some(UPPER_BINDINGS), &record.upper_bindings())?;
        key.set_multi_string(DISABLED_PATHS, &record.disabled_paths)
    }

    fn delete(&self, adapter: &Guid) -> Result<(), Failure> {
        delete_key(
            HKEY_LOCAL_MACHINE,
            &alloc::format!("{ADAPTERS_KEY}\\{adapter}"),
        )
    }
}

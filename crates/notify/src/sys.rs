//! Hand-written COM declarations: the IIDs and vtables of the interfaces
//! the notify object implements (`netcfgn.h`) and calls (`netcfgx.h`),
//! `IUnknown` and `IClassFactory`, and the constants they use.
//!
//! Source: mingw-w64's `mingw-w64-headers/include/netcfgx.idl` and
//! `netcfgn.idl` (commit d7f3c520, the IDL its `netcfgx.h`/`netcfgn.h` are
//! generated from), which match the Windows SDK headers' names, IIDs and
//! method order. `tests/com_layout.rs` checks every IID and every slot's
//! position against a transcription of those IDL files.
//!
//! Why not the `windows` crate (`Win32::NetworkManagement::NetManagement`
//! has these interfaces): its COM support needs std, and std on
//! `x86_64-pc-windows-msvc` links the MSVC C runtime, which a Linux host
//! does not have; like `rsndk.sys` (crate `ndis`), this DLL links with
//! rust-lld and `raw-dylib` imports alone. The declarations are types and
//! constants only, compiled on every target so that the layout test runs
//! on Linux.
//!
//! Every method takes its interface pointer as `*mut c_void`; interface
//! pointers in and out are `*mut c_void` too (the COM layer reads a
//! callee's vtable with the interface's vtable type).

#![allow(non_snake_case)]

use core::ffi::c_void;

use crate::guid::Guid;

/// A COM status: negative is failure.
pub type HRESULT = i32;
/// `BOOL`.
pub type BOOL = i32;
/// An open registry key (`HKEY`).
pub type HKEY = *mut c_void;

/// `S_OK`.
pub const S_OK: HRESULT = 0;
/// `S_FALSE` (`IsEnabled`: disabled; `Next`: fewer than asked).
pub const S_FALSE: HRESULT = 1;
/// `E_NOTIMPL`.
pub const E_NOTIMPL: HRESULT = 0x8000_4001_u32 as i32;
/// `E_NOINTERFACE`.
pub const E_NOINTERFACE: HRESULT = 0x8000_4002_u32 as i32;
/// `E_POINTER`.
pub const E_POINTER: HRESULT = 0x8000_4003_u32 as i32;
/// `E_UNEXPECTED`.
pub const E_UNEXPECTED: HRESULT = 0x8000_FFFF_u32 as i32;
/// `E_INVALIDARG`.
pub const E_INVALIDARG: HRESULT = 0x8007_0057_u32 as i32;
/// `CLASS_E_NOAGGREGATION`.
pub const CLASS_E_NOAGGREGATION: HRESULT = 0x8004_0110_u32 as i32;
/// `CLASS_E_CLASSNOTAVAILABLE`.
pub const CLASS_E_CLASSNOTAVAILABLE: HRESULT = 0x8004_0111_u32 as i32;
/// `NETCFG_S_DISABLE_QUERY`: `MAKE_HRESULT(SEVERITY_SUCCESS, FACILITY_ITF, 0xa022)`.
pub const NETCFG_S_DISABLE_QUERY: HRESULT = 0x0004_A022;

/// `HRESULT_FROM_WIN32`.
pub const fn hresult_from_win32(error: u32) -> HRESULT {
    if error == 0 || error & 0x8000_0000 != 0 {
        error as i32
    } else {
        ((error & 0xFFFF) | 0x8007_0000) as i32
    }
}

/// `EBP_ABOVE` (`ENUM_BINDING_PATHS_FLAGS`): paths that end at the
/// component.
pub const EBP_ABOVE: u32 = 0x01;

/// `GUID_DEVCLASS_NET` (devguid.h): network adapters.
pub const GUID_DEVCLASS_NET: Guid = Guid::from_u128(0x4d36e972_e325_11ce_bfc1_08002be10318);

/// `IID_IUnknown`.
pub const IID_IUNKNOWN: Guid = Guid::from_u128(0x00000000_0000_0000_c000_000000000046);
/// `IID_IClassFactory`.
pub const IID_ICLASSFACTORY: Guid = Guid::from_u128(0x00000001_0000_0000_c000_000000000046);
/// `IID_IEnumNetCfgBindingInterface`.
pub const IID_IENUMNETCFGBINDINGINTERFACE: Guid =
    Guid::from_u128(0xc0e8ae90_306e_11d1_aacf_00805fc1270e);
/// `IID_IEnumNetCfgBindingPath`.
pub const IID_IENUMNETCFGBINDINGPATH: Guid =
    Guid::from_u128(0xc0e8ae91_306e_11d1_aacf_00805fc1270e);
/// `IID_IEnumNetCfgComponent`.
pub const IID_IENUMNETCFGCOMPONENT: Guid = Guid::from_u128(0xc0e8ae92_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfg`.
pub const IID_INETCFG: Guid = Guid::from_u128(0xc0e8ae93_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfgBindingInterface`.
pub const IID_INETCFGBINDINGINTERFACE: Guid =
    Guid::from_u128(0xc0e8ae94_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfgBindingPath`.
pub const IID_INETCFGBINDINGPATH: Guid = Guid::from_u128(0xc0e8ae96_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfgClass`.
pub const IID_INETCFGCLASS: Guid = Guid::from_u128(0xc0e8ae97_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfgComponent`.
pub const IID_INETCFGCOMPONENT: Guid = Guid::from_u128(0xc0e8ae99_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfgClassSetup`.
pub const IID_INETCFGCLASSSETUP: Guid = Guid::from_u128(0xc0e8ae9d_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfgComponentBindings`.
pub const IID_INETCFGCOMPONENTBINDINGS: Guid =
    Guid::from_u128(0xc0e8ae9e_306e_11d1_aacf_00805fc1270e);
/// `IID_INetCfgComponentControl`.
pub const IID_INETCFGCOMPONENTCONTROL: Guid =
    Guid::from_u128(0x932238df_bea1_11d0_9298_00c04fc99dcf);
/// `IID_INetCfgComponentNotifyBinding`.
pub const IID_INETCFGCOMPONENTNOTIFYBINDING: Guid =
    Guid::from_u128(0x932238e1_bea1_11d0_9298_00c04fc99dcf);
/// `IID_INetCfgComponentNotifyGlobal`.
pub const IID_INETCFGCOMPONENTNOTIFYGLOBAL: Guid =
    Guid::from_u128(0x932238e2_bea1_11d0_9298_00c04fc99dcf);
/// `IID_INetCfgComponentSetup`.
pub const IID_INETCFGCOMPONENTSETUP: Guid = Guid::from_u128(0x932238e3_bea1_11d0_9298_00c04fc99dcf);

/// A slot this crate never calls nor implements (its type does not
/// matter; only its place does).
pub type Unused = *const c_void;

/// `IUnknown`'s three slots, the head of every vtable below.
#[repr(C)]
#[derive(Debug)]
pub struct IUnknownVtbl {
    /// `QueryInterface(riid, ppv)`.
    pub QueryInterface:
        unsafe extern "system" fn(*mut c_void, *const Guid, *mut *mut c_void) -> HRESULT,
    /// `AddRef()`.
    pub AddRef: unsafe extern "system" fn(*mut c_void) -> u32,
    /// `Release()`.
    pub Release: unsafe extern "system" fn(*mut c_void) -> u32,
}

/// `IClassFactory` (unknwn.idl).
#[repr(C)]
#[derive(Debug)]
pub struct IClassFactoryVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `CreateInstance(pUnkOuter, riid, ppvObject)`.
    pub CreateInstance: unsafe extern "system" fn(
        *mut c_void,
        *mut c_void,
        *const Guid,
        *mut *mut c_void,
    ) -> HRESULT,
    /// `LockServer(fLock)`.
    pub LockServer: unsafe extern "system" fn(*mut c_void, BOOL) -> HRESULT,
}

/// `IEnumNetCfg*` (all three have this shape).
#[repr(C)]
#[derive(Debug)]
pub struct IEnumNetCfgVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `Next(celt, rgelt, pceltFetched)`.
    pub Next: unsafe extern "system" fn(*mut c_void, u32, *mut *mut c_void, *mut u32) -> HRESULT,
    /// `Skip(celt)`.
    pub Skip: Unused,
    /// `Reset()`.
    pub Reset: Unused,
    /// `Clone(ppenum)`.
    pub Clone: Unused,
}

/// `INetCfg`.
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `Initialize(pvReserved)`.
    pub Initialize: Unused,
    /// `Uninitialize()`.
    pub Uninitialize: Unused,
    /// `Apply()`.
    pub Apply: Unused,
    /// `Cancel()`.
    pub Cancel: Unused,
    /// `EnumComponents(pguidClass, ppenumComponent)`.
    pub EnumComponents:
        unsafe extern "system" fn(*mut c_void, *const Guid, *mut *mut c_void) -> HRESULT,
    /// `FindComponent(pszwInfId, pComponent)`.
    pub FindComponent: Unused,
    /// `QueryNetCfgClass(pguidClass, riid, ppvObject)`.
    pub QueryNetCfgClass: unsafe extern "system" fn(
        *mut c_void,
        *const Guid,
        *const Guid,
        *mut *mut c_void,
    ) -> HRESULT,
}

/// `INetCfgBindingInterface`.
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgBindingInterfaceVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `GetName(ppszwInterfaceName)`.
    pub GetName: Unused,
    /// `GetUpperComponent(ppnccItem)`.
    pub GetUpperComponent: unsafe extern "system" fn(*mut c_void, *mut *mut c_void) -> HRESULT,
    /// `GetLowerComponent(ppnccItem)`.
    pub GetLowerComponent: unsafe extern "system" fn(*mut c_void, *mut *mut c_void) -> HRESULT,
}

/// `INetCfgBindingPath`.
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgBindingPathVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `IsSamePathAs(pPath)`.
    pub IsSamePathAs: Unused,
    /// `IsSubPathOf(pPath)`.
    pub IsSubPathOf: Unused,
    /// `IsEnabled()`: `S_OK` enabled, `S_FALSE` disabled.
    pub IsEnabled: unsafe extern "system" fn(*mut c_void) -> HRESULT,
    /// `Enable(fEnable)`.
    pub Enable: unsafe extern "system" fn(*mut c_void, BOOL) -> HRESULT,
    /// `GetPathToken(ppszwPathToken)` (CoTaskMem string).
    pub GetPathToken: unsafe extern "system" fn(*mut c_void, *mut *mut u16) -> HRESULT,
    /// `GetOwner(ppComponent)`.
    pub GetOwner: Unused,
    /// `GetDepth(pcInterfaces)`.
    pub GetDepth: Unused,
    /// `EnumBindingInterfaces(ppenumInterface)`.
    pub EnumBindingInterfaces: unsafe extern "system" fn(*mut c_void, *mut *mut c_void) -> HRESULT,
}

/// `INetCfgClass`.
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgClassVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `FindComponent(pszwInfId, ppnccItem)`.
    pub FindComponent: Unused,
    /// `EnumComponents(ppenumComponent)`.
    pub EnumComponents: Unused,
}

/// `INetCfgClassSetup`.
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgClassSetupVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `SelectAndInstall(hwndParent, pOboToken, ppnccItem)`.
    pub SelectAndInstall: Unused,
    /// `Install(pszwInfId, pOboToken, dwSetupFlags, dwUpgradeFromBuildNo,
    /// pszwAnswerFile, pszwAnswerSections, ppnccItem)`.
    pub Install: unsafe extern "system" fn(
        *mut c_void,
        *const u16,
        *mut c_void,
        u32,
        u32,
        *const u16,
        *const u16,
        *mut *mut c_void,
    ) -> HRESULT,
    /// `DeInstall(pComponent, pOboToken, pmszwRefs)`.
    pub DeInstall:
        unsafe extern "system" fn(*mut c_void, *mut c_void, *mut c_void, *mut *mut u16) -> HRESULT,
}

/// `INetCfgComponent`.
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgComponentVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `GetDisplayName(ppszwDisplayName)`.
    pub GetDisplayName: Unused,
    /// `SetDisplayName(pszwDisplayName)`.
    pub SetDisplayName: Unused,
    /// `GetHelpText(pszwHelpText)`.
    pub GetHelpText: Unused,
    /// `GetId(ppszwId)` (CoTaskMem string).
    pub GetId: unsafe extern "system" fn(*mut c_void, *mut *mut u16) -> HRESULT,
    /// `GetCharacteristics(pdwCharacteristics)`.
    pub GetCharacteristics: unsafe extern "system" fn(*mut c_void, *mut u32) -> HRESULT,
    /// `GetInstanceGuid(pGuid)`.
    pub GetInstanceGuid: unsafe extern "system" fn(*mut c_void, *mut Guid) -> HRESULT,
    /// `GetPnpDevNodeId(ppszwDevNodeId)`.
    pub GetPnpDevNodeId: Unused,
    /// `GetClassGuid(pGuid)`.
    pub GetClassGuid: Unused,
    /// `GetBindName(ppszwBindName)`.
    pub GetBindName: Unused,
    /// `GetDeviceStatus(pulStatus)`.
    pub GetDeviceStatus: Unused,
    /// `OpenParamKey(phkey)`.
    pub OpenParamKey: unsafe extern "system" fn(*mut c_void, *mut HKEY) -> HRESULT,
    /// `RaisePropertyUi(hwndParent, dwFlags, punkContext)`.
    pub RaisePropertyUi: Unused,
}

/// `INetCfgComponentBindings`.
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgComponentBindingsVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `BindTo(pnccItem)`.
    pub BindTo: Unused,
    /// `UnbindFrom(pnccItem)`.
    pub UnbindFrom: Unused,
    /// `SupportsBindingInterface(dwFlags, pszwInterfaceName)`.
    pub SupportsBindingInterface: Unused,
    /// `IsBoundTo(pnccItem)`.
    pub IsBoundTo: Unused,
    /// `IsBindableTo(pnccItem)`.
    pub IsBindableTo: Unused,
    /// `EnumBindingPaths(dwFlags, ppIEnum)`.
    pub EnumBindingPaths: unsafe extern "system" fn(*mut c_void, u32, *mut *mut c_void) -> HRESULT,
    /// `MoveBefore(pncbItemSrc, pncbItemDest)`.
    pub MoveBefore: Unused,
    /// `MoveAfter(pncbItemSrc, pncbItemDest)`.
    pub MoveAfter: Unused,
}

/// `INetCfgComponentControl` (implemented).
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgComponentControlVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `Initialize(pIComp, pINetCfg, fInstalling)`.
    pub Initialize:
        unsafe extern "system" fn(*mut c_void, *mut c_void, *mut c_void, BOOL) -> HRESULT,
    /// `ApplyRegistryChanges()`.
    pub ApplyRegistryChanges: unsafe extern "system" fn(*mut c_void) -> HRESULT,
    /// `ApplyPnpChanges(pICallback)`.
    pub ApplyPnpChanges: unsafe extern "system" fn(*mut c_void, *mut c_void) -> HRESULT,
    /// `CancelChanges()`.
    pub CancelChanges: unsafe extern "system" fn(*mut c_void) -> HRESULT,
}

/// `INetCfgComponentSetup` (implemented).
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgComponentSetupVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `Install(dwSetupFlags)`.
    pub Install: unsafe extern "system" fn(*mut c_void, u32) -> HRESULT,
    /// `Upgrade(dwSetupFlags, dwUpgradeFomBuildNo)`.
    pub Upgrade: unsafe extern "system" fn(*mut c_void, u32, u32) -> HRESULT,
    /// `ReadAnswerFile(pszwAnswerFile, pszwAnswerSections)`.
    pub ReadAnswerFile: unsafe extern "system" fn(*mut c_void, *const u16, *const u16) -> HRESULT,
    /// `Removing()`.
    pub Removing: unsafe extern "system" fn(*mut c_void) -> HRESULT,
}

/// `INetCfgComponentNotifyBinding` (implemented).
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgComponentNotifyBindingVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `QueryBindingPath(dwChangeFlag, pIPath)`.
    pub QueryBindingPath: unsafe extern "system" fn(*mut c_void, u32, *mut c_void) -> HRESULT,
    /// `NotifyBindingPath(dwChangeFlag, pIPath)`.
    pub NotifyBindingPath: unsafe extern "system" fn(*mut c_void, u32, *mut c_void) -> HRESULT,
}

/// `INetCfgComponentNotifyGlobal` (implemented).
#[repr(C)]
#[derive(Debug)]
pub struct INetCfgComponentNotifyGlobalVtbl {
    /// `IUnknown`.
    pub base: IUnknownVtbl,
    /// `GetSupportedNotifications(dwNotifications)`.
    pub GetSupportedNotifications: unsafe extern "system" fn(*mut c_void, *mut u32) -> HRESULT,
    /// `SysQueryBindingPath(dwChangeFlag, pIPath)`.
    pub SysQueryBindingPath: unsafe extern "system" fn(*mut c_void, u32, *mut c_void) -> HRESULT,
    /// `SysNotifyBindingPath(dwChangeFlag, pIPath)`.
    pub SysNotifyBindingPath: unsafe extern "system" fn(*mut c_void, u32, *mut c_void) -> HRESULT,
    /// `SysNotifyComponent(dwChangeFlag, pIComp)`.
    pub SysNotifyComponent: unsafe extern "system" fn(*mut c_void, u32, *mut c_void) -> HRESULT,
}

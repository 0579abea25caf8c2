//! The hand-written COM declarations (`rsndknotify::sys`) against the IDL
//! they transcribe: mingw-w64 `mingw-w64-headers/include/netcfgx.idl` and
//! `netcfgn.idl` (commit d7f3c520) and `unknwn.idl`. For each interface
//! the IDL's `uuid(...)` and its methods in declaration order (= vtable
//! order, after IUnknown's three) are written out below; every slot must
//! sit at `8 * (3 + index)` and the vtable must end after the last one.

use core::mem::{offset_of, size_of};

use rsndknotify::Guid;
use rsndknotify::sys::*;

/// The IDL's `uuid(...)` text for each IID constant.
const IIDS: [(&str, Guid); 16] = [
    ("00000000-0000-0000-C000-000000000046", IID_IUNKNOWN),
    ("00000001-0000-0000-C000-000000000046", IID_ICLASSFACTORY),
    (
        "c0e8ae90-306e-11d1-aacf-00805fc1270e",
        IID_IENUMNETCFGBINDINGINTERFACE,
    ),
    (
        "c0e8ae91-306e-11d1-aacf-00805fc1270e",
        IID_IENUMNETCFGBINDINGPATH,
    ),
    (
        "c0e8ae92-306e-11d1-aacf-00805fc1270e",
        IID_IENUMNETCFGCOMPONENT,
    ),
    ("c0e8ae93-306e-11d1-aacf-00805fc1270e", IID_INETCFG),
    (
        "c0e8ae94-306e-11d1-aacf-00805fc1270e",
        IID_INETCFGBINDINGINTERFACE,
    ),
    (
        "c0e8ae96-306e-11d1-aacf-00805fc1270e",
        IID_INETCFGBINDINGPATH,
    ),
    ("c0e8ae97-306e-11d1-aacf-00805fc1270e", IID_INETCFGCLASS),
    ("c0e8ae99-306e-11d1-aacf-00805fc1270e", IID_INETCFGCOMPONENT),
    (
        "c0e8ae9d-306e-11d1-aacf-00805fc1270e",
        IID_INETCFGCLASSSETUP,
    ),
    (
        "c0e8ae9e-306e-11d1-aacf-00805fc1270e",
        IID_INETCFGCOMPONENTBINDINGS,
    ),
    (
        "932238df-bea1-11d0-9298-00c04fc99dcf",
        IID_INETCFGCOMPONENTCONTROL,
    ),
    (
        "932238e1-bea1-11d0-9298-00c04fc99dcf",
        IID_INETCFGCOMPONENTNOTIFYBINDING,
    ),
    (
        "932238e2-bea1-11d0-9298-00c04fc99dcf",
        IID_INETCFGCOMPONENTNOTIFYGLOBAL,
    ),
    (
        "932238e3-bea1-11d0-9298-00c04fc99dcf",
        IID_INETCFGCOMPONENTSETUP,
    ),
];

#[test]
fn every_iid_is_the_idls() {
    for (text, iid) in IIDS {
        let parsed = Guid::parse_braced(&format!("{{{text}}}")).expect("IDL uuid text");
        assert_eq!(iid, parsed, "{text}");
        // The COM byte layout: data1..3 little-endian, data4 as written.
        assert_eq!(size_of::<Guid>(), 16);
    }
    assert_eq!(
        GUID_DEVCLASS_NET,
        Guid::parse_braced("{4d36e972-e325-11ce-bfc1-08002be10318}").expect("devguid.h"),
        "GUID_DEVCLASS_NET (also rsndk_mp.inx's ClassGuid)"
    );
}

/// Asserts that `$vtbl`'s fields after `base` are exactly `$method`s, in
/// this order, one pointer each, and nothing after them.
macro_rules! slots {
    ($vtbl:ty, [$($method:ident),+ $(,)?]) => {{
        let methods: &[(&str, usize)] = &[$((stringify!($method), offset_of!($vtbl, $method))),+];
        assert_eq!(offset_of!($vtbl, base), 0, "{}: IUnknown first", stringify!($vtbl));
        for (index, (name, offset)) in methods.iter().enumerate() {
            assert_eq!(
                *offset,
                8 * (3 + index),
                "{}::{name} must be slot {}",
                stringify!($vtbl),
                3 + index
            );
        }
        assert_eq!(
            size_of::<$vtbl>(),
            8 * (3 + methods.len()),
            "{}: {} slots",
            stringify!($vtbl),
            3 + methods.len()
        );
    }};
}

#[test]
fn iunknown_and_iclassfactory() {
    assert_eq!(offset_of!(IUnknownVtbl, QueryInterface), 0);
    assert_eq!(offset_of!(IUnknownVtbl, AddRef), 8);
    assert_eq!(offset_of!(IUnknownVtbl, Release), 16);
    assert_eq!(size_of::<IUnknownVtbl>(), 24);
    slots!(IClassFactoryVtbl, [CreateInstance, LockServer]);
}

#[test]
fn netcfgx_interfaces() {
    // IEnumNetCfgBindingInterface, IEnumNetCfgBindingPath, IEnumNetCfgComponent.
    slots!(IEnumNetCfgVtbl, [Next, Skip, Reset, Clone]);
    slots!(
        INetCfgVtbl,
        [
            Initialize,
            Uninitialize,
            Apply,
            Cancel,
            EnumComponents,
            FindComponent,
            QueryNetCfgClass
        ]
    );
    slots!(
        INetCfgBindingInterfaceVtbl,
        [GetName, GetUpperComponent, GetLowerComponent]
    );
    slots!(
        INetCfgBindingPathVtbl,
        [
            IsSamePathAs,
            IsSubPathOf,
            IsEnabled,
            Enable,
            GetPathToken,
            GetOwner,
            GetDepth,
            EnumBindingInterfaces
        ]
    );
    slots!(INetCfgClassVtbl, [FindComponent, EnumComponents]);
    slots!(
        INetCfgClassSetupVtbl,
        [SelectAndInstall, Install, DeInstall]
    );
    slots!(
        INetCfgComponentVtbl,
        [
            GetDisplayName,
            SetDisplayName,
            GetHelpText,
            GetId,
            GetCharacteristics,
            GetInstanceGuid,
            GetPnpDevNodeId,
            GetClassGuid,
            GetBindName,
            GetDeviceStatus,
            OpenParamKey,
            RaisePropertyUi
        ]
    );
    slots!(
        INetCfgComponentBindingsVtbl,
        [
            BindTo,
            UnbindFrom,
            SupportsBindingInterface,
            IsBoundTo,
            IsBindableTo,
            EnumBindingPaths,
            MoveBefore,
            MoveAfter
        ]
    );
}

#[test]
fn netcfgn_interfaces() {
    slots!(
        INetCfgComponentControlVtbl,
        [
            Initialize,
            ApplyRegistryChanges,
            ApplyPnpChanges,
            CancelChanges
        ]
    );
    slots!(
        INetCfgComponentSetupVtbl,
        [Install, Upgrade, ReadAnswerFile, Removing]
    );
    slots!(
        INetCfgComponentNotifyBindingVtbl,
        [QueryBindingPath, NotifyBindingPath]
    );
    slots!(
        INetCfgComponentNotifyGlobalVtbl,
        [
            GetSupportedNotifications,
            SysQueryBindingPath,
            SysNotifyBindingPath,
            SysNotifyComponent
        ]
    );
}

#[test]
fn status_codes() {
    // MAKE_HRESULT(SEVERITY_SUCCESS, FACILITY_ITF (4), 0xa022).
    assert_eq!(NETCFG_S_DISABLE_QUERY, (4 << 16) | 0xa022);
    assert_eq!(hresult_from_win32(0), S_OK);
    assert_eq!(hresult_from_win32(2), 0x8007_0002_u32 as i32);
    assert_eq!(hresult_from_win32(0x8007_0005), 0x8007_0005_u32 as i32);
}

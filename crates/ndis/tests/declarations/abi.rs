//! Uses the declarations the way the driver will: handlers with the exact
//! C signatures stored in the characteristics, the NDK provider
//! characteristics handed to `NdisSetOptionalHandlers` as the header-only
//! type, and attribute structures wrapped in the attributes union. Nothing
//! here calls into NDIS.
#![allow(non_snake_case)]

use core::ptr;

use ndis::{
    CLOSE_NDK_ADAPTER, MINIPORT_HALT, MINIPORT_INITIALIZE, MINIPORT_OID_REQUEST,
    NDIS_DRIVER_OPTIONAL_HANDLERS, NDIS_HALT_ACTION, NDIS_HANDLE, NDIS_MINIPORT_ADAPTER_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES, NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    NDIS_MINIPORT_INIT_PARAMETERS, NDIS_NDK_CAPABILITIES, NDIS_NDK_CONNECTION_ENTRY,
    NDIS_NDK_PROVIDER_CHARACTERISTICS, NDIS_OBJECT_HEADER, NDIS_OID_REQUEST,
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS, NDIS_STATUS, NDIS_STATUS_ADAPTER_NOT_READY,
    NDIS_STATUS_SUCCESS, NdisInterfaceInternal, OPEN_NDK_ADAPTER, SOCKADDR_INET,
};
use ndkpi::{AF_INET, IN_ADDR, NDK_ADAPTER, NDK_ADAPTER_INFO, SOCKADDR_IN};

unsafe extern "win64" fn initialize(
    _handle: NDIS_HANDLE,
    _driver_context: NDIS_HANDLE,
    _params: *mut NDIS_MINIPORT_INIT_PARAMETERS,
) -> NDIS_STATUS {
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn halt(_ctx: NDIS_HANDLE, _action: NDIS_HALT_ACTION) {}

unsafe extern "win64" fn oid_request(
    _ctx: NDIS_HANDLE,
    _req: *mut NDIS_OID_REQUEST,
) -> NDIS_STATUS {
    NDIS_STATUS_SUCCESS
}

unsafe extern "win64" fn open_ndk(
    _ctx: NDIS_HANDLE,
    _params: *mut NDIS_OPEN_NDK_ADAPTER_PARAMETERS,
    _out: *mut *mut NDK_ADAPTER,
) -> NDIS_STATUS {
    NDIS_STATUS_ADAPTER_NOT_READY
}

unsafe extern "win64" fn close_ndk(_ctx: NDIS_HANDLE, _adapter: *mut NDK_ADAPTER) {}

// The handlers have exactly the declared C signatures.
const _: MINIPORT_INITIALIZE = initialize;
const _: MINIPORT_HALT = halt;
const _: MINIPORT_OID_REQUEST = oid_request;
const _: OPEN_NDK_ADAPTER = open_ndk;
const _: CLOSE_NDK_ADAPTER = close_ndk;

// What a driver's `DriverEntry` and `MiniportSetOptions` would register.
static CHARACTERISTICS: NDIS_MINIPORT_DRIVER_CHARACTERISTICS =
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
        InitializeHandlerEx: Some(initialize),
        HaltHandlerEx: Some(halt),
        OidRequestHandler: Some(oid_request),
        ..NDIS_MINIPORT_DRIVER_CHARACTERISTICS::new(1, 0)
    };

#[test]
fn characteristics_are_revision_2_of_ndis_6_50() {
    let h = CHARACTERISTICS.Header;
    assert_eq!((h.Type, h.Revision, h.Size), (0x8A, 2, 152));
    assert_eq!(
        (
            CHARACTERISTICS.MajorNdisVersion,
            CHARACTERISTICS.MinorNdisVersion
        ),
        (6, 50)
    );
    assert!(CHARACTERISTICS.InitializeHandlerEx.is_some());
    assert!(CHARACTERISTICS.SynchronousOidRequestHandler.is_none());
}

#[test]
fn provider_characteristics_as_optional_handlers() {
    let mut chars = NDIS_NDK_PROVIDER_CHARACTERISTICS::new(open_ndk, close_ndk);
    assert_eq!(chars.Header, NDIS_OBJECT_HEADER::new(0xB2, 1, 24));
    assert_eq!(chars.Flags, 0);
    let optional: *mut NDIS_DRIVER_OPTIONAL_HANDLERS = chars.as_optional_handlers();
    assert_eq!(
        optional.cast::<u8>(),
        ptr::from_mut(&mut chars).cast::<u8>()
    );
}

#[test]
fn attributes_wrap_into_the_union() {
    let registration = NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES::new(
        ptr::null_mut(),
        0,
        0,
        NdisInterfaceInternal,
    );
    assert_eq!(registration.Header, NDIS_OBJECT_HEADER::new(0x9E, 2, 28));
    let _: NDIS_MINIPORT_ADAPTER_ATTRIBUTES = registration.into();

    let general = NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES::new();
    assert_eq!(general.Header, NDIS_OBJECT_HEADER::new(0x9F, 2, 224));
    let _: NDIS_MINIPORT_ADAPTER_ATTRIBUTES = general.into();

    let mut info = NDK_ADAPTER_INFO::default();
    let mut caps = NDIS_NDK_CAPABILITIES::new(ptr::from_mut(&mut info));
    caps.MaxQpCount = 1024;
    let ndk = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES::new(false, ptr::from_mut(&mut caps));
    assert_eq!(ndk.Header, NDIS_OBJECT_HEADER::new(0xB3, 1, 16));
    let _: NDIS_MINIPORT_ADAPTER_ATTRIBUTES = ndk.into();
}

#[test]
fn connection_entries_hold_ipv4_addresses() {
    let local = SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: 445u16.to_be(),
        sin_addr: IN_ADDR::new([192, 0, 2, 1]),
        sin_zero: [0; 8],
    };
    let entry = NDIS_NDK_CONNECTION_ENTRY {
        Local: SOCKADDR_INET::from(local),
        Remote: SOCKADDR_INET::default(),
        UserModeOwner: 0,
        OwnerPid: 0,
    };
    assert_eq!(entry.OwnerPid, 0);
}

//! `NdisMSetMiniportAttributes`: validates each attribute object's header
//! (type, revision, size) and the documented order (registration first,
//! then general, then the rest, all from `MiniportInitializeEx`), and
//! records what NDIS acts on: the adapter context, the general attributes
//! with the supported OID list, and the NDK attributes with their
//! capabilities.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::ptr;

use ndis::{
    NDIS_HANDLE, NDIS_MINIPORT_ADAPTER_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES, NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES,
    NDIS_NDK_CAPABILITIES, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT,
    NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
    NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
    NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES, NDIS_OID,
    NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_1,
    NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2,
    NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1,
    NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_1,
    NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2,
    NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1, NDIS_STATUS_BAD_VERSION, NDIS_STATUS_FAILURE,
    NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_SUCCESS,
};
use ndkpi::{NDIS_STATUS, NDK_ADAPTER_INFO};

use super::checks::{
    HeaderFault, bad_header, check_header, guarded, invalid_handle, require_passive,
};
use super::state::{self, AdapterState, GeneralAttributes, NdkAttributes, RegistrationAttributes};

const API: &str = "NdisMSetMiniportAttributes";

/// Reads `min(Header.Size, size_of::<T>())` bytes of an attribute object
/// into a zeroed `T`.
///
/// # Safety
/// `object` points to `Header.Size` readable bytes (the caller's
/// contract), and all-zero bytes are a valid `T`.
unsafe fn read_prefix<T>(object: *const u8, header: NDIS_OBJECT_HEADER) -> T {
    // SAFETY: all-zero bytes are a valid T (caller).
    let mut value: T = unsafe { std::mem::zeroed() };
    let n = usize::from(header.Size).min(size_of::<T>());
    // SAFETY: `n` readable bytes at `object` (caller), room for them in
    // `value`; distinct memory.
    unsafe { ptr::copy_nonoverlapping(object, ptr::from_mut(&mut value).cast::<u8>(), n) };
    value
}

/// Where an attribute object goes wrong.
enum Refusal {
    /// A documented status back to the driver.
    Status(NDIS_STATUS),
    /// A bad header: 0x7C / 0x21.
    Header(&'static str, NDIS_OBJECT_HEADER, HeaderFault),
}

fn header_check(
    what: &'static str,
    header: NDIS_OBJECT_HEADER,
    ty: u8,
    sizes: &[u16],
) -> Result<(), Refusal> {
    match check_header(header, ty, sizes) {
        Ok(()) => Ok(()),
        // An unknown revision is the one failure NDIS documents as a status.
        Err(HeaderFault::Revision) => Err(Refusal::Status(NDIS_STATUS_BAD_VERSION)),
        Err(fault) => Err(Refusal::Header(what, header, fault)),
    }
}

/// `NdisMSetMiniportAttributes` (PASSIVE_LEVEL, from
/// `MiniportInitializeEx`).
pub unsafe extern "win64" fn NdisMSetMiniportAttributes(
    NdisMiniportHandle: NDIS_HANDLE,
    MiniportAttributes: *mut NDIS_MINIPORT_ADAPTER_ATTRIBUTES,
) -> NDIS_STATUS {
    guarded(API, || {
        require_passive(API, NdisMSetMiniportAttributes as *const ());
        let handle = NdisMiniportHandle as usize;
        let Some(initializing) = state::with(|n| {
            n.live_adapter(handle)
                .map(|a| a.state == AdapterState::Initializing)
        }) else {
            invalid_handle(API, handle, "miniport adapter");
        };
        if !initializing || MiniportAttributes.is_null() {
            return NDIS_STATUS_FAILURE;
        }
        let object = MiniportAttributes.cast::<u8>().cast_const();
        // SAFETY: non-null; every attribute structure starts with its
        // NDIS_OBJECT_HEADER (the call's contract).
        let header = unsafe { object.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
        // SAFETY: the driver's attribute object, `Header.Size` bytes.
        match unsafe { record(handle, object, header) } {
            Ok(()) => NDIS_STATUS_SUCCESS,
            Err(Refusal::Status(status)) => status,
            Err(Refusal::Header(what, header, fault)) => {
                bad_header(API, handle, object as usize, what, header, fault)
            }
        }
    })
}

/// Validates and records one attribute object of the adapter `handle`.
///
/// # Safety
/// `object` points to an attribute object of `header.Size` readable bytes.
unsafe fn record(
    handle: usize,
    object: *const u8,
    header: NDIS_OBJECT_HEADER,
) -> Result<(), Refusal> {
    let (has_registration, has_general) = state::with(|n| {
        n.live_adapter(handle).map_or((false, false), |a| {
            (a.registration.is_some(), a.general.is_some())
        })
    });
    match header.Type {
        NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES => {
            header_check(
                "NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES",
                header,
                header.Type,
                &[
                    NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_1,
                    NDIS_SIZEOF_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES_REVISION_2,
                ],
            )?;
            if has_registration {
                return Err(Refusal::Status(NDIS_STATUS_FAILURE));
            }
            // SAFETY: a registration object of at least its full size
            // (checked); integers and a pointer, so zero-fill is valid.
            let r: NDIS_MINIPORT_ADAPTER_REGISTRATION_ATTRIBUTES =
                unsafe { read_prefix(object, header) };
            let registration = RegistrationAttributes {
                context: r.MiniportAdapterContext as usize,
                flags: r.AttributeFlags,
                check_for_hang_seconds: r.CheckForHangTimeInSeconds,
                interface_type: r.InterfaceType,
            };
            update(handle, |a| a.registration = Some(registration));
            Ok(())
        }
        NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES => {
            header_check(
                "NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES",
                header,
                header.Type,
                &[
                    NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_1,
                    NDIS_SIZEOF_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES_REVISION_2,
                ],
            )?;
            if !has_registration || has_general {
                return Err(Refusal::Status(NDIS_STATUS_FAILURE));
            }
            // SAFETY: a general-attributes object of at least its
            // revision's size (checked); integers, arrays and nullable
            // pointers, so zero-fill is valid.
            let g: NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES =
                unsafe { read_prefix(object, header) };
            let general = general_attributes(&g)?;
            update(handle, |a| a.general = Some(general));
            Ok(())
        }
        NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES => {
            header_check(
                "NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES",
                header,
                header.Type,
                &[NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1],
            )?;
            let provider = state::with(|n| n.driver.as_ref().is_some_and(|d| d.ndk.is_some()));
            if !has_registration || !has_general {
                return Err(Refusal::Status(NDIS_STATUS_FAILURE));
            }
            if !provider {
                return Err(Refusal::Status(NDIS_STATUS_NOT_SUPPORTED));
            }
            // SAFETY: an NDK attributes object of its full size (checked);
            // a BOOLEAN and a pointer, so zero-fill is valid.
            let k: NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES = unsafe { read_prefix(object, header) };
            // SAFETY: the pointer the driver put in its NDK attributes.
            let ndk = unsafe { ndk_attributes(&k) }?;
            update(handle, |a| a.ndk = Some(ndk));
            Ok(())
        }
        // Offload, hardware-assist and other attributes are accepted in
        // their place (after the general attributes) without a model.
        _ if has_registration && has_general => Ok(()),
        _ => Err(Refusal::Status(NDIS_STATUS_FAILURE)),
    }
}

fn update(handle: usize, f: impl FnOnce(&mut super::state::Adapter)) {
    state::with(|n| {
        if let Some(a) = n.live_adapter(handle) {
            f(a);
        }
    });
    state::changed();
}

fn general_attributes(
    g: &NDIS_MINIPORT_ADAPTER_GENERAL_ATTRIBUTES,
) -> Result<GeneralAttributes, Refusal> {
    let len = g.SupportedOidListLength as usize;
    if len % size_of::<NDIS_OID>() != 0
        || (len != 0 && g.SupportedOidList.is_null())
        || usize::from(g.MacAddressLength) > g.CurrentMacAddress.len()
    {
        return Err(Refusal::Status(NDIS_STATUS_FAILURE));
    }
    let mut supported_oids = vec![0 as NDIS_OID; len / size_of::<NDIS_OID>()];
    if len != 0 {
        // SAFETY: the driver's OID list of `len` bytes (its contract);
        // `supported_oids` has room for exactly that many bytes.
        unsafe {
            ptr::copy_nonoverlapping(
                g.SupportedOidList.cast::<u8>().cast_const(),
                supported_oids.as_mut_ptr().cast::<u8>(),
                len,
            );
        };
    }
    Ok(GeneralAttributes {
        media_type: g.MediaType,
        physical_medium: g.PhysicalMediumType,
        mtu: g.MtuSize,
        xmit_link_speed: g.XmitLinkSpeed,
        media_connect_state: g.MediaConnectState,
        current_mac: g.CurrentMacAddress[..usize::from(g.MacAddressLength)].to_vec(),
        supported_statistics: g.SupportedStatistics,
        supported_oids,
    })
}

/// Reads the capabilities and adapter info the NDK attributes point to.
///
/// # Safety
/// `k.NdkCapabilities` is null or points to the driver's capabilities,
/// whose `NdkInfo` is null or points to an `NDK_ADAPTER_INFO`.
unsafe fn ndk_attributes(
    k: &NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES,
) -> Result<NdkAttributes, Refusal> {
    if k.NdkCapabilities.is_null() {
        return Err(Refusal::Status(NDIS_STATUS_FAILURE));
    }
    let caps_ptr = k.NdkCapabilities.cast::<u8>().cast_const();
    // SAFETY: non-null capabilities start with their header (caller).
    let caps_header = unsafe { caps_ptr.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
    header_check(
        "NDIS_NDK_CAPABILITIES",
        caps_header,
        NDIS_OBJECT_TYPE_DEFAULT,
        &[NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1],
    )?;
    // SAFETY: capabilities of at least their revision-1 size (checked);
    // integers and a pointer, so zero-fill is valid.
    let mut capabilities: NDIS_NDK_CAPABILITIES = unsafe { read_prefix(caps_ptr, caps_header) };
    if capabilities.NdkInfo.is_null() {
        return Err(Refusal::Status(NDIS_STATUS_FAILURE));
    }
    // SAFETY: non-null NdkInfo points to the driver's adapter info (caller).
    let info: NDK_ADAPTER_INFO = unsafe { capabilities.NdkInfo.read_unaligned() };
    // The pointer is into the driver's stack frame: keep the copy only.
    capabilities.NdkInfo = ptr::null_mut();
    Ok(NdkAttributes {
        enabled: k.Enabled != 0,
        capabilities,
        info,
    })
}

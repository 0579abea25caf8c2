//! Miniport driver registration: `NdisMRegisterMiniportDriver` (which
//! checks the characteristics for the declared NDIS version and calls
//! `MiniportSetOptions` before it returns, as NDIS does),
//! `NdisMDeregisterMiniportDriver`, and `NdisSetOptionalHandlers` (the NDK
//! provider characteristics).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::ptr;

use ndis::{
    DRIVER_OBJECT, NDIS_DRIVER_OPTIONAL_HANDLERS, NDIS_HANDLE,
    NDIS_MINIPORT_DRIVER_CHARACTERISTICS, NDIS_NDK_PROVIDER_CHARACTERISTICS, NDIS_OBJECT_HEADER,
    NDIS_OBJECT_TYPE_MINIPORT_DRIVER_CHARACTERISTICS,
    NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS,
    NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_1,
    NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2,
    NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_3,
    NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1, NDIS_STATUS_BAD_CHARACTERISTICS,
    NDIS_STATUS_BAD_VERSION, NDIS_STATUS_FAILURE, NDIS_STATUS_NOT_SUPPORTED, NDIS_STATUS_RESOURCES,
    NDIS_STATUS_SUCCESS, UNICODE_STRING,
};
use ndkpi::NDIS_STATUS;

use super::checks::{
    check_header, guarded, invalid_handle, require_passive, returned_at_raised_irql,
};
use super::state::{self, Driver, Handle, NdkHandlers};
use crate::kernel::{cpu, verifier};

/// NDIS 6 minor versions a miniport may declare.
const NDIS6_MINORS: &[u8] = &[
    0, 1, 20, 30, 40, 50, 51, 60, 70, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,
];
/// First NDIS 6 minor version with NDK (6.30).
const NDK_MINOR: u8 = 30;

/// The highest characteristics revision NDIS 6.`minor` defines: 1 for
/// 6.0, 2 (direct OIDs) from 6.1, 3 (synchronous OIDs) from 6.80.
fn highest_revision(minor: u8) -> u8 {
    match minor {
        0 => 1,
        1..80 => 2,
        _ => 3,
    }
}

/// Checks characteristics read from the driver: the documented failure
/// status, if any.
pub fn check_characteristics(c: &NDIS_MINIPORT_DRIVER_CHARACTERISTICS) -> Result<(), NDIS_STATUS> {
    if c.MajorNdisVersion != 6 || !NDIS6_MINORS.contains(&c.MinorNdisVersion) {
        return Err(NDIS_STATUS_BAD_VERSION);
    }
    let sizes = [
        NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_1,
        NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_2,
        NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_3,
    ];
    let known = &sizes[..usize::from(highest_revision(c.MinorNdisVersion))];
    if check_header(
        c.Header,
        NDIS_OBJECT_TYPE_MINIPORT_DRIVER_CHARACTERISTICS,
        known,
    )
    .is_err()
    {
        return Err(NDIS_STATUS_BAD_CHARACTERISTICS);
    }
    // MiniportSetOptions, CheckForHangEx, ResetEx and the direct and
    // synchronous OID handlers are optional; the rest are not.
    let mandatory = [
        c.InitializeHandlerEx.is_some(),
        c.HaltHandlerEx.is_some(),
        c.UnloadHandler.is_some(),
        c.PauseHandler.is_some(),
        c.RestartHandler.is_some(),
        c.OidRequestHandler.is_some(),
        c.SendNetBufferListsHandler.is_some(),
        c.ReturnNetBufferListsHandler.is_some(),
        c.CancelSendHandler.is_some(),
        c.DevicePnPEventNotifyHandler.is_some(),
        c.ShutdownHandlerEx.is_some(),
        c.CancelOidRequestHandler.is_some(),
    ];
    let direct_pair =
        c.DirectOidRequestHandler.is_some() == c.CancelDirectOidRequestHandler.is_some();
    if mandatory.contains(&false) || !direct_pair {
        return Err(NDIS_STATUS_BAD_CHARACTERISTICS);
    }
    Ok(())
}

/// Reads `Header.Size` bytes of the driver's characteristics (the rest
/// stays zero: handlers the revision does not have are absent).
///
/// # Safety
/// `chars` points to at least an `NDIS_OBJECT_HEADER` and to
/// `Header.Size` readable bytes (the caller's documented contract).
unsafe fn read_characteristics(
    chars: *const NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
) -> NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
    // SAFETY: every field is an integer, a header or a nullable function
    // pointer, for all of which all-zero bytes are a valid value.
    let mut copy: NDIS_MINIPORT_DRIVER_CHARACTERISTICS = unsafe { std::mem::zeroed() };
    // SAFETY: the caller guarantees the header is readable.
    let header = unsafe { chars.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
    let n = usize::from(header.Size).min(size_of::<NDIS_MINIPORT_DRIVER_CHARACTERISTICS>());
    // SAFETY: `n` bytes are readable (caller) and `copy` has room for them;
    // the two do not overlap.
    unsafe {
        ptr::copy_nonoverlapping(chars.cast::<u8>(), ptr::from_mut(&mut copy).cast::<u8>(), n);
    };
    copy
}

/// `NdisMRegisterMiniportDriver` (PASSIVE_LEVEL, from `DriverEntry`).
pub unsafe extern "win64" fn NdisMRegisterMiniportDriver(
    DriverObject: *mut DRIVER_OBJECT,
    RegistryPath: *mut UNICODE_STRING,
    MiniportDriverContext: NDIS_HANDLE,
    MiniportDriverCharacteristics: *mut NDIS_MINIPORT_DRIVER_CHARACTERISTICS,
    NdisMiniportDriverHandle: *mut NDIS_HANDLE,
) -> NDIS_STATUS {
    const API: &str = "NdisMRegisterMiniportDriver";
    guarded(API, || {
        require_passive(API, NdisMRegisterMiniportDriver as *const ());
        if MiniportDriverCharacteristics.is_null() {
            return NDIS_STATUS_BAD_CHARACTERISTICS;
        }
        let ours = state::with(|n| {
            n.driver_object == DriverObject as usize
                && n.registry_path == RegistryPath as usize
                && n.driver.is_none()
        });
        if NdisMiniportDriverHandle.is_null() || !ours {
            return NDIS_STATUS_FAILURE;
        }
        // SAFETY: non-null; the driver passes its characteristics, which
        // hold `Header.Size` bytes (its contract).
        let characteristics = unsafe { read_characteristics(MiniportDriverCharacteristics) };
        if let Err(status) = check_characteristics(&characteristics) {
            return status;
        }
        if verifier::fault_point(API) {
            return NDIS_STATUS_RESOURCES;
        }
        let handle = Handle::new();
        let driver_handle = handle.addr();
        state::with(|n| {
            n.driver = Some(Driver {
                handle,
                characteristics,
                context: MiniportDriverContext as usize,
                ndk: None,
                in_set_options: true,
                from_driver_entry: n.in_driver_entry,
            });
        });
        let status = match characteristics.SetOptionsHandler {
            Some(set_options) => {
                let before = cpu::current();
                // SAFETY: the driver's MiniportSetOptions, called as NDIS
                // calls it: PASSIVE_LEVEL, inside this registration, with
                // the new driver handle and the driver's context.
                let status =
                    unsafe { set_options(driver_handle as NDIS_HANDLE, MiniportDriverContext) };
                if cpu::current() != before {
                    returned_at_raised_irql("MiniportSetOptions", set_options as usize, before);
                }
                status
            }
            None => NDIS_STATUS_SUCCESS,
        };
        state::with(|n| {
            if status == NDIS_STATUS_SUCCESS {
                if let Some(d) = n.driver.as_mut() {
                    d.in_set_options = false;
                }
            } else if let Some(d) = n.driver.take() {
                // A failed registration leaves nothing registered; the
                // handle address is not reused.
                n.retired.push(d.handle);
            }
        });
        if status == NDIS_STATUS_SUCCESS {
            // SAFETY: the driver's out-pointer (checked non-null).
            unsafe { NdisMiniportDriverHandle.write(driver_handle as NDIS_HANDLE) };
        }
        status
    })
}

/// `NdisMDeregisterMiniportDriver` (PASSIVE_LEVEL, from
/// `MiniportDriverUnload` or a failing `DriverEntry`).
pub unsafe extern "win64" fn NdisMDeregisterMiniportDriver(NdisMiniportDriverHandle: NDIS_HANDLE) {
    const API: &str = "NdisMDeregisterMiniportDriver";
    guarded(API, || {
        require_passive(API, NdisMDeregisterMiniportDriver as *const ());
        let handle = NdisMiniportDriverHandle as usize;
        let deregistered = state::with(|n| {
            if !n.is_driver(handle) {
                return false;
            }
            if let Some(d) = n.driver.take() {
                n.retired.push(d.handle);
            }
            true
        });
        if !deregistered {
            invalid_handle(API, handle, "miniport driver");
        }
        state::changed();
    });
}

/// `NdisSetOptionalHandlers` (PASSIVE_LEVEL; a miniport calls it from
/// `MiniportSetOptions`). Records NDK provider characteristics; accepts
/// other optional characteristics without modelling them.
pub unsafe extern "win64" fn NdisSetOptionalHandlers(
    NdisHandle: NDIS_HANDLE,
    OptionalHandlers: *mut NDIS_DRIVER_OPTIONAL_HANDLERS,
) -> NDIS_STATUS {
    const API: &str = "NdisSetOptionalHandlers";
    guarded(API, || {
        require_passive(API, NdisSetOptionalHandlers as *const ());
        let handle = NdisHandle as usize;
        let Some((in_set_options, minor)) = state::with(|n| {
            n.driver
                .as_ref()
                .filter(|d| d.handle.addr() == handle)
                .map(|d| (d.in_set_options, d.characteristics.MinorNdisVersion))
        }) else {
            invalid_handle(API, handle, "miniport driver");
        };
        if !in_set_options || OptionalHandlers.is_null() {
            return NDIS_STATUS_FAILURE;
        }
        // SAFETY: non-null; every optional-handlers structure starts with
        // an NDIS_OBJECT_HEADER (the call's contract).
        let header = unsafe {
            OptionalHandlers
                .cast::<NDIS_OBJECT_HEADER>()
                .read_unaligned()
        };
        if header.Type != NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS {
            return NDIS_STATUS_SUCCESS;
        }
        if minor < NDK_MINOR {
            return NDIS_STATUS_NOT_SUPPORTED;
        }
        if check_header(
            header,
            NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS,
            &[NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1],
        )
        .is_err()
        {
            return NDIS_STATUS_FAILURE;
        }
        // SAFETY: the header says this is an NDK provider characteristics
        // structure of at least its revision-1 size, which is all of it.
        let ndk = unsafe {
            OptionalHandlers
                .cast::<NDIS_NDK_PROVIDER_CHARACTERISTICS>()
                .read_unaligned()
        };
        let (Some(open), Some(close)) = (ndk.OpenNDKAdapterHandler, ndk.CloseNDKAdapterHandler)
        else {
            return NDIS_STATUS_FAILURE;
        };
        if ndk.Flags != 0 {
            return NDIS_STATUS_FAILURE;
        }
        if verifier::fault_point(API) {
            return NDIS_STATUS_RESOURCES;
        }
        state::with(|n| {
            if let Some(d) = n.driver.as_mut() {
                d.ndk = Some(NdkHandlers { open, close });
            }
        });
        NDIS_STATUS_SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndis::{
        NDIS_HALT_ACTION, NDIS_MINIPORT_INIT_PARAMETERS, NDIS_MINIPORT_PAUSE_PARAMETERS,
        NDIS_MINIPORT_RESTART_PARAMETERS, NDIS_OID_REQUEST, NDIS_PORT_NUMBER, NDIS_SHUTDOWN_ACTION,
        NET_BUFFER_LIST, NET_DEVICE_PNP_EVENT,
    };
    use ndkpi::{PVOID, ULONG};

    unsafe extern "win64" fn init(
        _: NDIS_HANDLE,
        _: NDIS_HANDLE,
        _: *mut NDIS_MINIPORT_INIT_PARAMETERS,
    ) -> NDIS_STATUS {
        0
    }
    unsafe extern "win64" fn halt(_: NDIS_HANDLE, _: NDIS_HALT_ACTION) {}
    unsafe extern "win64" fn unload(_: *mut DRIVER_OBJECT) {}
    unsafe extern "win64" fn pause(
        _: NDIS_HANDLE,
        _: *mut NDIS_MINIPORT_PAUSE_PARAMETERS,
    ) -> NDIS_STATUS {
        0
    }
    unsafe extern "win64" fn restart(
        _: NDIS_HANDLE,
        _: *mut NDIS_MINIPORT_RESTART_PARAMETERS,
    ) -> NDIS_STATUS {
        0
    }
    unsafe extern "win64" fn oid(_: NDIS_HANDLE, _: *mut NDIS_OID_REQUEST) -> NDIS_STATUS {
        0
    }
    unsafe extern "win64" fn send(
        _: NDIS_HANDLE,
        _: *mut NET_BUFFER_LIST,
        _: NDIS_PORT_NUMBER,
        _: ULONG,
    ) {
    }
    unsafe extern "win64" fn ret(_: NDIS_HANDLE, _: *mut NET_BUFFER_LIST, _: ULONG) {}
    unsafe extern "win64" fn cancel(_: NDIS_HANDLE, _: PVOID) {}
    unsafe extern "win64" fn pnp(_: NDIS_HANDLE, _: *mut NET_DEVICE_PNP_EVENT) {}
    unsafe extern "win64" fn shutdown(_: NDIS_HANDLE, _: NDIS_SHUTDOWN_ACTION) {}

    fn complete() -> NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
        NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
            InitializeHandlerEx: Some(init),
            HaltHandlerEx: Some(halt),
            UnloadHandler: Some(unload),
            PauseHandler: Some(pause),
            RestartHandler: Some(restart),
            OidRequestHandler: Some(oid),
            SendNetBufferListsHandler: Some(send),
            ReturnNetBufferListsHandler: Some(ret),
            CancelSendHandler: Some(cancel),
            DevicePnPEventNotifyHandler: Some(pnp),
            ShutdownHandlerEx: Some(shutdown),
            CancelOidRequestHandler: Some(cancel),
            ..NDIS_MINIPORT_DRIVER_CHARACTERISTICS::new(0, 1)
        }
    }

    #[test]
    fn complete_characteristics_pass() {
        assert_eq!(check_characteristics(&complete()), Ok(()));
    }

    #[test]
    fn a_missing_mandatory_handler_is_bad_characteristics() {
        let c = NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
            PauseHandler: None,
            ..complete()
        };
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS)
        );
        let c = NDIS_MINIPORT_DRIVER_CHARACTERISTICS {
            DirectOidRequestHandler: Some(oid),
            ..complete()
        };
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS)
        );
    }

    #[test]
    fn versions_and_revisions_are_checked_together() {
        let mut c = complete();
        c.MinorNdisVersion = 45;
        assert_eq!(check_characteristics(&c), Err(NDIS_STATUS_BAD_VERSION));
        c.MajorNdisVersion = 5;
        c.MinorNdisVersion = 50;
        assert_eq!(check_characteristics(&c), Err(NDIS_STATUS_BAD_VERSION));
        // Revision 2 needs NDIS 6.1 or later.
        let mut c = complete();
        c.MinorNdisVersion = 0;
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS)
        );
        // Revision 2 with a revision-1 size.
        let mut c = complete();
        c.Header.Size = NDIS_SIZEOF_MINIPORT_DRIVER_CHARACTERISTICS_REVISION_1;
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS)
        );
        let mut c = complete();
        c.Header.Type = 0x80;
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS)
        );
    }
}

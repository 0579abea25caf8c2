//! Protocol driver registration: `NdisRegisterProtocolDriver` (the
//! characteristics checked for the declared NDIS version, the mandatory
//! handlers present, `ProtocolSetOptions` called before it returns, as
//! NDIS does), `NdisDeregisterProtocolDriver` (NDIS unbinds what is still
//! bound first) and `NdisIMAssociateMiniport` (an intermediate driver
//! ties its miniport and protocol edges together). All PASSIVE_LEVEL.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::ptr;

use ndis::{
    NDIS_HANDLE, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_PROTOCOL_DRIVER_CHARACTERISTICS,
    NDIS_PROTOCOL_DRIVER_CHARACTERISTICS, NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_1,
    NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2, NDIS_STATUS_BAD_CHARACTERISTICS,
    NDIS_STATUS_BAD_VERSION, NDIS_STATUS_FAILURE, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS,
};
use ndkpi::NDIS_STATUS;

use super::checks::{
    check_header, guarded, invalid_handle, require_passive, returned_at_raised_irql,
};
use super::state::{self, Handle, Protocol};
use crate::kernel::{cpu, verifier};

/// NDIS 6 minor versions a protocol may declare.
const NDIS6_MINORS: &[u8] = &[
    0, 1, 20, 30, 40, 50, 51, 60, 70, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,
];

/// Checks protocol characteristics read from the driver: the documented
/// failure status, if any. Revision 2 (direct OID completion) needs NDIS
/// 6.1; the bind, unbind, open/close completion, PnP, OID completion,
/// status, receive and send completion handlers are mandatory.
pub fn check_characteristics(c: &NDIS_PROTOCOL_DRIVER_CHARACTERISTICS) -> Result<(), NDIS_STATUS> {
    if c.MajorNdisVersion != 6 || !NDIS6_MINORS.contains(&c.MinorNdisVersion) {
        return Err(NDIS_STATUS_BAD_VERSION);
    }
    let sizes = [
        NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_1,
        NDIS_SIZEOF_PROTOCOL_DRIVER_CHARACTERISTICS_REVISION_2,
    ];
    let known = if c.MinorNdisVersion == 0 {
        &sizes[..1]
    } else {
        &sizes[..]
    };
    if check_header(
        c.Header,
        NDIS_OBJECT_TYPE_PROTOCOL_DRIVER_CHARACTERISTICS,
        known,
    )
    .is_err()
    {
        return Err(NDIS_STATUS_BAD_CHARACTERISTICS);
    }
    let mandatory = [
        c.BindAdapterHandlerEx.is_some(),
        c.UnbindAdapterHandlerEx.is_some(),
        c.OpenAdapterCompleteHandlerEx.is_some(),
        c.CloseAdapterCompleteHandlerEx.is_some(),
        c.NetPnPEventHandler.is_some(),
        c.OidRequestCompleteHandler.is_some(),
        c.StatusHandlerEx.is_some(),
        c.ReceiveNetBufferListsHandler.is_some(),
        c.SendNetBufferListsCompleteHandler.is_some(),
    ];
    if mandatory.contains(&false) || c.Name.Length == 0 || c.Name.Buffer.is_null() {
        return Err(NDIS_STATUS_BAD_CHARACTERISTICS);
    }
    Ok(())
}

/// Reads `Header.Size` bytes of the driver's characteristics (the rest
/// stays zero).
///
/// # Safety
/// `chars` points to at least an `NDIS_OBJECT_HEADER` and to
/// `Header.Size` readable bytes (the caller's documented contract).
unsafe fn read_characteristics(
    chars: *const NDIS_PROTOCOL_DRIVER_CHARACTERISTICS,
) -> NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
    // SAFETY: every field is an integer, a header, a counted string of
    // integers and a pointer, or a nullable function pointer: all-zero
    // bytes are valid for each.
    let mut copy: NDIS_PROTOCOL_DRIVER_CHARACTERISTICS = unsafe { std::mem::zeroed() };
    // SAFETY: the caller guarantees the header is readable.
    let header = unsafe { chars.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
    let n = usize::from(header.Size).min(size_of::<NDIS_PROTOCOL_DRIVER_CHARACTERISTICS>());
    // SAFETY: `n` bytes are readable (caller) and `copy` has room for them;
    // the two do not overlap.
    unsafe {
        ptr::copy_nonoverlapping(chars.cast::<u8>(), ptr::from_mut(&mut copy).cast::<u8>(), n);
    };
    copy
}

/// The protocol's name from its characteristics.
///
/// # Safety
/// `Name` is a counted string whose buffer holds `Length` bytes (the
/// caller's contract).
unsafe fn name_of(c: &NDIS_PROTOCOL_DRIVER_CHARACTERISTICS) -> String {
    let units = usize::from(c.Name.Length) / 2;
    // SAFETY: `Length` bytes of UTF-16 at `Buffer` (caller; non-null,
    // checked with the characteristics).
    let text = unsafe { std::slice::from_raw_parts(c.Name.Buffer, units) };
    String::from_utf16_lossy(text)
}

/// `NdisRegisterProtocolDriver` (PASSIVE_LEVEL, from `DriverEntry`).
pub unsafe extern "win64" fn NdisRegisterProtocolDriver(
    ProtocolDriverContext: NDIS_HANDLE,
    ProtocolCharacteristics: *mut NDIS_PROTOCOL_DRIVER_CHARACTERISTICS,
    NdisProtocolHandle: *mut NDIS_HANDLE,
) -> NDIS_STATUS {
    const API: &str = "NdisRegisterProtocolDriver";
    guarded(API, || {
        require_passive(API, NdisRegisterProtocolDriver as *const ());
        if ProtocolCharacteristics.is_null() {
            return NDIS_STATUS_BAD_CHARACTERISTICS;
        }
        if NdisProtocolHandle.is_null() || state::with(|n| n.protocol.is_some()) {
            return NDIS_STATUS_FAILURE;
        }
        // SAFETY: non-null; the driver's characteristics hold Header.Size
        // bytes (its contract).
        let mut characteristics = unsafe { read_characteristics(ProtocolCharacteristics) };
        if let Err(status) = check_characteristics(&characteristics) {
            return status;
        }
        // SAFETY: the name was checked non-empty with a buffer; the
        // driver's string holds Length bytes.
        let name = unsafe { name_of(&characteristics) };
        characteristics.Name.Buffer = ptr::null_mut();
        if verifier::fault_point(API) {
            return NDIS_STATUS_RESOURCES;
        }
        let handle = Handle::new();
        let protocol_handle = handle.addr();
        state::with(|n| {
            n.protocol = Some(Protocol {
                handle,
                characteristics,
                context: ProtocolDriverContext as usize,
                name,
                associated: None,
                from_driver_entry: n.in_driver_entry,
            });
        });
        let status = match characteristics.SetOptionsHandler {
            Some(set_options) => {
                let before = cpu::current();
                // SAFETY: the driver's ProtocolSetOptions, called as NDIS
                // calls it: PASSIVE_LEVEL, inside this registration, with
                // the new protocol handle and the driver's context.
                let status =
                    unsafe { set_options(protocol_handle as NDIS_HANDLE, ProtocolDriverContext) };
                if cpu::current() != before {
                    returned_at_raised_irql("ProtocolSetOptions", set_options as usize, before);
                }
                status
            }
            None => NDIS_STATUS_SUCCESS,
        };
        if status != NDIS_STATUS_SUCCESS {
            state::with(|n| {
                if let Some(p) = n.protocol.take() {
                    n.retired.push(p.handle);
                }
            });
            return status;
        }
        // SAFETY: the driver's out-pointer (checked non-null).
        unsafe { NdisProtocolHandle.write(protocol_handle as NDIS_HANDLE) };
        state::changed();
        NDIS_STATUS_SUCCESS
    })
}

/// `NdisDeregisterProtocolDriver` (PASSIVE_LEVEL). Bindings still open
/// are unbound first, as NDIS does before it returns.
pub unsafe extern "win64" fn NdisDeregisterProtocolDriver(NdisProtocolHandle: NDIS_HANDLE) {
    const API: &str = "NdisDeregisterProtocolDriver";
    guarded(API, || {
        require_passive(API, NdisDeregisterProtocolDriver as *const ());
        let handle = NdisProtocolHandle as usize;
        if !state::with(|n| n.is_protocol(handle)) {
            invalid_handle(API, handle, "protocol driver");
        }
        let bound: Vec<u32> = state::with(|n| {
            n.nics
                .values()
                .filter(|nic| !nic.removed && nic.binding.is_some())
                .map(|nic| nic.id)
                .collect()
        });
        for nic in bound {
            super::bindflow::unbind(nic);
        }
        state::with(|n| {
            if let Some(p) = n.protocol.take() {
                n.retired.push(p.handle);
            }
        });
        state::changed();
    });
}

/// `NdisIMAssociateMiniport` (PASSIVE_LEVEL, from `DriverEntry`): both
/// handles must be the ones registration gave.
pub unsafe extern "win64" fn NdisIMAssociateMiniport(
    DriverHandle: NDIS_HANDLE,
    ProtocolHandle: NDIS_HANDLE,
) {
    const API: &str = "NdisIMAssociateMiniport";
    guarded(API, || {
        require_passive(API, NdisIMAssociateMiniport as *const ());
        let (driver, protocol) = (DriverHandle as usize, ProtocolHandle as usize);
        if !state::with(|n| n.is_driver(driver)) {
            invalid_handle(API, driver, "miniport driver");
        }
        let associated = state::with(|n| {
            let p = n
                .protocol
                .as_mut()
                .filter(|p| p.handle.addr() == protocol)?;
            p.associated = Some(driver);
            Some(())
        });
        if associated.is_none() {
            invalid_handle(API, protocol, "protocol driver");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndis::{
        NDIS_BIND_PARAMETERS, NDIS_OID_REQUEST, NDIS_STATUS_INDICATION, NDIS_STRING,
        NET_BUFFER_LIST, NET_PNP_EVENT_NOTIFICATION,
    };
    use ndkpi::ULONG;

    unsafe extern "win64" fn bind(
        _: NDIS_HANDLE,
        _: NDIS_HANDLE,
        _: *mut NDIS_BIND_PARAMETERS,
    ) -> NDIS_STATUS {
        0
    }
    unsafe extern "win64" fn unbind(_: NDIS_HANDLE, _: NDIS_HANDLE) -> NDIS_STATUS {
        0
    }
    unsafe extern "win64" fn open(_: NDIS_HANDLE, _: NDIS_STATUS) {}
    unsafe extern "win64" fn close(_: NDIS_HANDLE) {}
    unsafe extern "win64" fn pnp(
        _: NDIS_HANDLE,
        _: *mut NET_PNP_EVENT_NOTIFICATION,
    ) -> NDIS_STATUS {
        0
    }
    unsafe extern "win64" fn oid(_: NDIS_HANDLE, _: *mut NDIS_OID_REQUEST, _: NDIS_STATUS) {}
    unsafe extern "win64" fn status(_: NDIS_HANDLE, _: *mut NDIS_STATUS_INDICATION) {}
    unsafe extern "win64" fn receive(
        _: NDIS_HANDLE,
        _: *mut NET_BUFFER_LIST,
        _: u32,
        _: ULONG,
        _: ULONG,
    ) {
    }
    unsafe extern "win64" fn sent(_: NDIS_HANDLE, _: *mut NET_BUFFER_LIST, _: ULONG) {}

    static NAME: [u16; 6] = ndis::ascii_to_utf16(b"rsndkp");

    fn complete() -> NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
        let name = NDIS_STRING {
            Length: 12,
            MaximumLength: 12,
            Buffer: NAME.as_ptr().cast_mut(),
        };
        NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
            BindAdapterHandlerEx: Some(bind),
            UnbindAdapterHandlerEx: Some(unbind),
            OpenAdapterCompleteHandlerEx: Some(open),
            CloseAdapterCompleteHandlerEx: Some(close),
            NetPnPEventHandler: Some(pnp),
            OidRequestCompleteHandler: Some(oid),
            StatusHandlerEx: Some(status),
            ReceiveNetBufferListsHandler: Some(receive),
            SendNetBufferListsCompleteHandler: Some(sent),
            ..NDIS_PROTOCOL_DRIVER_CHARACTERISTICS::new(name, 1, 0)
        }
    }

    #[test]
    fn complete_protocol_characteristics_pass_and_missing_handlers_fail() {
        assert_eq!(check_characteristics(&complete()), Ok(()));
        let c = NDIS_PROTOCOL_DRIVER_CHARACTERISTICS {
            SendNetBufferListsCompleteHandler: None,
            ..complete()
        };
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS)
        );
        let mut c = complete();
        c.Name.Length = 0;
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS)
        );
        let mut c = complete();
        c.MajorNdisVersion = 5;
        assert_eq!(check_characteristics(&c), Err(NDIS_STATUS_BAD_VERSION));
        let mut c = complete();
        c.MinorNdisVersion = 0;
        assert_eq!(
            check_characteristics(&c),
            Err(NDIS_STATUS_BAD_CHARACTERISTICS),
            "revision 2 needs NDIS 6.1"
        );
    }
}

//! What a miniport tells NDIS on its own: network PnP events
//! (`NdisMNetPnPEvent`, here `NetEventNDKEnable`/`NetEventNDKDisable`) and
//! status indications (`NdisMIndicateStatusEx`).
//!
//! `NdisMNetPnPEvent` runs at PASSIVE_LEVEL and never from inside
//! `MiniportOidRequest`: NDIS waits for the OID to finish before it
//! delivers the event, so that call deadlocks until the NDIS watchdog
//! fires (0x7C / 0x25, OID). NDK events are legal only from an NDK
//! provider (NDK characteristics and NDK attributes set), and
//! `NetEventNDKEnable` only when `*NetworkDirect` allows NDK (0x7C / 0x22
//! otherwise).
//!
//! NDIS documents that `NetEventNDKDisable` has NDIS and the drivers
//! above start closing their NDK adapters and stays pending until all are
//! closed. The bottle records the event and returns at once: the NDK
//! consumers are the tests, which close when they choose, and a driver
//! must not free what an open NDK adapter uses on the strength of the
//! event having returned.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::ptr;

use ndis::{
    NDIS_HANDLE, NDIS_LINK_STATE, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT,
    NDIS_OBJECT_TYPE_STATUS_INDICATION, NDIS_SIZEOF_LINK_STATE_REVISION_1,
    NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_1,
    NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_2, NDIS_SIZEOF_STATUS_INDICATION_REVISION_1,
    NDIS_STATUS_INDICATION, NDIS_STATUS_LINK_STATE, NDIS_STATUS_SUCCESS,
    NET_PNP_EVENT_NOTIFICATION, NetEventNDKDisable, NetEventNDKEnable,
};
use ndkpi::NDIS_STATUS;

use super::checks::{
    NDIS_BUGCHECK_INVALID_NET_PNP_EVENT, NDIS_BUGCHECK_INVALID_STATUS_INDICATION,
    NDIS_BUGCHECK_WATCHDOG, WATCHDOG_MINIPORT_OID, bad_header, check_header, guarded,
    invalid_handle, ndis_bugcheck, require_dispatch_or_below, require_passive,
};
use super::miniport::in_oid_request_of;
use super::state;
use crate::ids::Keyword;

/// Whether the keywords leave NDK allowed (`*NetworkDirect` absent or
/// nonzero).
fn network_direct_allowed(keywords: &[(String, Keyword)]) -> bool {
    keywords
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("*NetworkDirect"))
        .is_none_or(|(_, value)| match value {
            Keyword::Int(v) => *v != 0,
            Keyword::Str(s) => s.trim() != "0",
        })
}

/// `NdisMNetPnPEvent` (PASSIVE_LEVEL, never inside `MiniportOidRequest`).
pub unsafe extern "win64" fn NdisMNetPnPEvent(
    MiniportAdapterHandle: NDIS_HANDLE,
    NetPnPEventNotification: *mut NET_PNP_EVENT_NOTIFICATION,
) -> NDIS_STATUS {
    const API: &str = "NdisMNetPnPEvent";
    guarded(API, || {
        require_passive(API, NdisMNetPnPEvent as *const ());
        let handle = MiniportAdapterHandle as usize;
        let Some((keywords, has_ndk_attributes)) = state::with(|n| {
            n.live_adapter(handle)
                .map(|a| (a.keywords.clone(), a.ndk.is_some()))
        }) else {
            invalid_handle(API, handle, "miniport adapter");
        };
        if in_oid_request_of(handle) {
            ndis_bugcheck(
                NDIS_BUGCHECK_WATCHDOG,
                WATCHDOG_MINIPORT_OID as usize,
                handle,
                format!(
                    "{API} called from inside MiniportOidRequest: NDIS holds the event until \
                     the OID completes, which waits for the event (deadlock)"
                ),
            );
        }
        let object = NetPnPEventNotification.cast::<u8>().cast_const();
        if object.is_null() {
            ndis_bugcheck(
                NDIS_BUGCHECK_INVALID_NET_PNP_EVENT,
                handle,
                0,
                format!("{API}: null NET_PNP_EVENT_NOTIFICATION"),
            );
        }
        // SAFETY: non-null; the notification starts with its header.
        let header = unsafe { object.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
        if let Err(fault) = check_header(
            header,
            NDIS_OBJECT_TYPE_DEFAULT,
            &[
                NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_1,
                NDIS_SIZEOF_NET_PNP_EVENT_NOTIFICATION_REVISION_2,
            ],
        ) {
            bad_header(
                API,
                handle,
                object as usize,
                "NET_PNP_EVENT_NOTIFICATION",
                header,
                fault,
            );
        }
        // SAFETY: all-zero bytes are a valid notification (integers and
        // nullable pointers).
        let mut notification: NET_PNP_EVENT_NOTIFICATION = unsafe { std::mem::zeroed() };
        let n = usize::from(header.Size).min(size_of::<NET_PNP_EVENT_NOTIFICATION>());
        // SAFETY: `Size` bytes are readable (checked against the revision's
        // size; the driver's contract) and fit in `notification`.
        unsafe { ptr::copy_nonoverlapping(object, ptr::from_mut(&mut notification).cast(), n) };
        let event = notification.NetPnPEvent.NetEvent;
        if event == NetEventNDKEnable || event == NetEventNDKDisable {
            let provider = state::with(|n| n.driver.as_ref().is_some_and(|d| d.ndk.is_some()));
            let problem = if !provider || !has_ndk_attributes {
                Some(
                    "from a miniport that registered no NDK provider characteristics or NDK attributes",
                )
            } else if notification.NetPnPEvent.BufferLength != 0 {
                Some("with event data (NDK events carry none)")
            } else if event == NetEventNDKEnable && !network_direct_allowed(&keywords) {
                Some("NetEventNDKEnable while the *NetworkDirect keyword is 0")
            } else {
                None
            };
            if let Some(problem) = problem {
                ndis_bugcheck(
                    NDIS_BUGCHECK_INVALID_NET_PNP_EVENT,
                    handle,
                    object as usize,
                    format!("{API}: NDK event {event} {problem}"),
                );
            }
        }
        state::with(|n| {
            if let Some(a) = n.live_adapter(handle) {
                a.pnp_events.push(event);
            }
        });
        state::changed();
        NDIS_STATUS_SUCCESS
    })
}

/// `NdisMIndicateStatusEx` (<= DISPATCH_LEVEL).
pub unsafe extern "win64" fn NdisMIndicateStatusEx(
    MiniportAdapterHandle: NDIS_HANDLE,
    StatusIndication: *mut NDIS_STATUS_INDICATION,
) {
    const API: &str = "NdisMIndicateStatusEx";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMIndicateStatusEx as *const ());
        let handle = MiniportAdapterHandle as usize;
        if state::with(|n| n.live_adapter(handle).is_none()) {
            invalid_handle(API, handle, "miniport adapter");
        }
        let invalid = |why: String| -> ! {
            ndis_bugcheck(
                NDIS_BUGCHECK_INVALID_STATUS_INDICATION,
                handle,
                StatusIndication as usize,
                format!("{API}: {why}"),
            )
        };
        if StatusIndication.is_null() {
            invalid("null NDIS_STATUS_INDICATION".to_owned());
        }
        // SAFETY: non-null; the indication starts with its header.
        let header = unsafe {
            StatusIndication
                .cast::<NDIS_OBJECT_HEADER>()
                .read_unaligned()
        };
        if let Err(fault) = check_header(
            header,
            NDIS_OBJECT_TYPE_STATUS_INDICATION,
            &[NDIS_SIZEOF_STATUS_INDICATION_REVISION_1],
        ) {
            bad_header(
                API,
                handle,
                StatusIndication as usize,
                "NDIS_STATUS_INDICATION",
                header,
                fault,
            );
        }
        // SAFETY: a revision-1 indication of at least its full size (checked).
        let indication = unsafe { StatusIndication.read_unaligned() };
        if indication.SourceHandle as usize != handle {
            invalid(format!(
                "SourceHandle {:#x} is not the miniport adapter handle {handle:#x}",
                indication.SourceHandle as usize
            ));
        }
        if indication.StatusCode == NDIS_STATUS_LINK_STATE {
            if indication.StatusBuffer.is_null()
                || (indication.StatusBufferSize as usize) < size_of::<NDIS_LINK_STATE>()
            {
                invalid("NDIS_STATUS_LINK_STATE without an NDIS_LINK_STATE buffer".to_owned());
            }
            // SAFETY: a buffer of at least NDIS_LINK_STATE's size (checked).
            let link = unsafe {
                indication
                    .StatusBuffer
                    .cast::<NDIS_LINK_STATE>()
                    .read_unaligned()
            };
            if check_header(
                link.Header,
                NDIS_OBJECT_TYPE_DEFAULT,
                &[NDIS_SIZEOF_LINK_STATE_REVISION_1],
            )
            .is_err()
            {
                invalid("NDIS_LINK_STATE with a bad header".to_owned());
            }
        }
        let up = (indication.StatusCode == NDIS_STATUS_LINK_STATE).then(|| {
            // SAFETY: checked above: a buffer of at least NDIS_LINK_STATE's
            // size.
            let link = unsafe {
                indication
                    .StatusBuffer
                    .cast::<NDIS_LINK_STATE>()
                    .read_unaligned()
            };
            link.MediaConnectState == ndis::MediaConnectStateConnected
        });
        let id = state::with(|n| {
            n.live_adapter(handle).map(|a| {
                a.status_indications.push(indication.StatusCode);
                if up.is_some() {
                    a.link_indicated = up;
                }
                a.id
            })
        });
        state::changed();
        if let (Some(id), Some(up), Some(stack)) = (id, up, super::upper::upper()) {
            stack.link_state(crate::ids::AdapterId(id), up);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_direct_keyword_gates_ndk() {
        let k = |v: Keyword| vec![("*networkdirect".to_owned(), v)];
        assert!(network_direct_allowed(&[]));
        assert!(network_direct_allowed(&k(Keyword::Int(1))));
        assert!(!network_direct_allowed(&k(Keyword::Int(0))));
        assert!(!network_direct_allowed(&k(Keyword::Str("0".to_owned()))));
        assert!(network_direct_allowed(&k(Keyword::Str("1".to_owned()))));
    }
}

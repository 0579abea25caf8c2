//! Completions of requests the miniport pended: `NdisMOidRequestComplete`,
//! `NdisMDirectOidRequestComplete`, `NdisMPauseComplete`,
//! `NdisMRestartComplete` and `NdisMResetComplete` (all <= DISPATCH_LEVEL).
//! A completion that matches nothing pending is NDIS's bug check 0x7C
//! (0x26 for OIDs, 0x1F for pause, restart and reset).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use ndis::{NDIS_HANDLE, NDIS_OID_REQUEST, NDIS_STATUS_PENDING};
use ndkpi::{BOOLEAN, NDIS_STATUS};

use super::checks::{
    NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE, NDIS_BUGCHECK_INVALID_OID_COMPLETION, guarded,
    invalid_handle, ndis_bugcheck, require_dispatch_or_below,
};
use super::state::{self, AdapterState};

/// `NdisMOidRequestComplete`: completes the OID request that returned
/// `NDIS_STATUS_PENDING`.
pub unsafe extern "win64" fn NdisMOidRequestComplete(
    MiniportAdapterHandle: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
    Status: NDIS_STATUS,
) {
    const API: &str = "NdisMOidRequestComplete";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMOidRequestComplete as *const ());
        let handle = MiniportAdapterHandle as usize;
        let request = OidRequest as usize;
        let Some(pending) = state::with(|n| n.live_adapter(handle).map(|a| a.pending_oid)) else {
            invalid_handle(API, handle, "miniport adapter");
        };
        let problem = match pending {
            _ if Status == NDIS_STATUS_PENDING => Some("with NDIS_STATUS_PENDING"),
            Some((r, None)) if r == request => None,
            Some((r, Some(_))) if r == request => Some("twice"),
            _ => Some("for a request that is not pending"),
        };
        if let Some(problem) = problem {
            ndis_bugcheck(
                NDIS_BUGCHECK_INVALID_OID_COMPLETION,
                handle,
                request,
                format!("{API}: OID request {request:#x} completed {problem}"),
            );
        }
        state::with(|n| {
            if let Some(a) = n.live_adapter(handle) {
                a.pending_oid = Some((request, Some(Status)));
            }
        });
        state::changed();
    });
}

/// `NdisMDirectOidRequestComplete`: the bottle issues no direct OID
/// requests, so every call completes one that is not pending.
pub unsafe extern "win64" fn NdisMDirectOidRequestComplete(
    MiniportAdapterHandle: NDIS_HANDLE,
    OidRequest: *mut NDIS_OID_REQUEST,
    _Status: NDIS_STATUS,
) {
    const API: &str = "NdisMDirectOidRequestComplete";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMDirectOidRequestComplete as *const ());
        let handle = MiniportAdapterHandle as usize;
        if state::with(|n| n.live_adapter(handle).is_none()) {
            invalid_handle(API, handle, "miniport adapter");
        }
        ndis_bugcheck(
            NDIS_BUGCHECK_INVALID_OID_COMPLETION,
            handle,
            OidRequest as usize,
            format!("{API}: no direct OID request is pending"),
        );
    });
}

/// Records the completion of a pended pause or restart (`expected` is the
/// state the adapter must be in).
fn complete_pause_restart(api: &str, handle: usize, expected: AdapterState, status: NDIS_STATUS) {
    let Some((adapter_state, already)) = state::with(|n| {
        n.live_adapter(handle)
            .map(|a| (a.state, a.pending_pause_restart.is_some()))
    }) else {
        invalid_handle(api, handle, "miniport adapter");
    };
    if adapter_state != expected || already || status == NDIS_STATUS_PENDING {
        ndis_bugcheck(
            NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE,
            handle,
            0,
            format!(
                "{api} while the adapter is {adapter_state:?} (completion already given: {already})"
            ),
        );
    }
    state::with(|n| {
        if let Some(a) = n.live_adapter(handle) {
            a.pending_pause_restart = Some(status);
        }
    });
    state::changed();
}

/// `NdisMPauseComplete`: completes a `MiniportPause` that returned
/// `NDIS_STATUS_PENDING`.
pub unsafe extern "win64" fn NdisMPauseComplete(MiniportAdapterHandle: NDIS_HANDLE) {
    const API: &str = "NdisMPauseComplete";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMPauseComplete as *const ());
        complete_pause_restart(
            API,
            MiniportAdapterHandle as usize,
            AdapterState::Pausing,
            ndis::NDIS_STATUS_SUCCESS,
        );
    });
}

/// `NdisMRestartComplete`: completes a `MiniportRestart` that returned
/// `NDIS_STATUS_PENDING`.
pub unsafe extern "win64" fn NdisMRestartComplete(
    MiniportAdapterHandle: NDIS_HANDLE,
    Status: NDIS_STATUS,
) {
    const API: &str = "NdisMRestartComplete";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMRestartComplete as *const ());
        complete_pause_restart(
            API,
            MiniportAdapterHandle as usize,
            AdapterState::Restarting,
            Status,
        );
    });
}

/// `NdisMResetComplete`: the bottle never calls `MiniportResetEx`, so no
/// reset is ever pending.
pub unsafe extern "win64" fn NdisMResetComplete(
    MiniportAdapterHandle: NDIS_HANDLE,
    _Status: NDIS_STATUS,
    _AddressingReset: BOOLEAN,
) {
    const API: &str = "NdisMResetComplete";
    guarded(API, || {
        require_dispatch_or_below(API, NdisMResetComplete as *const ());
        let handle = MiniportAdapterHandle as usize;
        if state::with(|n| n.live_adapter(handle).is_none()) {
            invalid_handle(API, handle, "miniport adapter");
        }
        ndis_bugcheck(
            NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE,
            handle,
            0,
            format!("{API}: no MiniportResetEx is pending"),
        );
    });
}

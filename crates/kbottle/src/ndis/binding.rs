//! Opening and closing a binding, and completing what the protocol
//! pended: `NdisOpenAdapterEx` and `NdisCloseAdapterEx` (PASSIVE_LEVEL),
//! `NdisCompleteBindAdapterEx`, `NdisCompleteUnbindAdapterEx` and
//! `NdisCompleteNetPnPEvent`.
//!
//! `NdisOpenAdapterEx` is legal only inside `ProtocolBindAdapterEx` with
//! its bind context (0x7C / 0x16 otherwise), once per NIC; it checks the
//! open parameters (header, the adapter name of the bind parameters:
//! `NDIS_STATUS_ADAPTER_NOT_FOUND`, an Ethernet medium in the array:
//! `NDIS_STATUS_UNSUPPORTED_MEDIA`), and succeeds at once or, on a NIC
//! set to, returns `NDIS_STATUS_PENDING` and calls
//! `ProtocolOpenAdapterCompleteEx` from another thread. The new binding is
//! paused. `NdisCloseAdapterEx` needs a paused binding with no send, no
//! receive and no OID request outstanding (0x7C / 0x27 for lists, 0x26
//! for OIDs); it closes at once or pends and calls
//! `ProtocolCloseAdapterCompleteEx` from another thread.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::time::Duration;

use ndis::{
    NDIS_HANDLE, NDIS_MEDIUM, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_OPEN_PARAMETERS,
    NDIS_OPEN_PARAMETERS, NDIS_SIZEOF_OPEN_PARAMETERS_REVISION_1, NDIS_STATUS_ADAPTER_NOT_FOUND,
    NDIS_STATUS_FAILURE, NDIS_STATUS_PENDING, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS,
    NDIS_STATUS_UNSUPPORTED_MEDIA, NET_PNP_EVENT_NOTIFICATION, NdisMedium802_3,
};
use ndkpi::NDIS_STATUS;

use super::checks::{
    NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE, NDIS_BUGCHECK_INVALID_OID_COMPLETION,
    NDIS_BUGCHECK_LEAKED_NBL, NDIS_BUGCHECK_OPEN_OUTSIDE_BIND, bad_header, check_header, guarded,
    invalid_handle, ndis_bugcheck, require_dispatch_or_below, require_passive,
};
use super::config::text_of;
use super::nbl::{self, Holder};
use super::state::{self, Binding, BindingState, Handle};
use crate::kernel::verifier;

/// How long the bottle's "other thread" waits before completing a pended
/// open or close (long enough that the protocol is already waiting).
const COMPLETION_DELAY: Duration = Duration::from_millis(2);

/// Runs `f` on a new PASSIVE_LEVEL thread (the processor `name`) after
/// [`COMPLETION_DELAY`]: how NDIS completes what it pended.
pub(crate) fn later(name: &str, f: impl FnOnce() + Send + 'static) {
    let name = name.to_owned();
    let spawned = std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            crate::kernel::cpu::enter(&name);
            std::thread::sleep(COMPLETION_DELAY);
            f();
        });
    if let Err(e) = spawned {
        verifier::bugcheck(
            super::checks::NDIS_INTERNAL_ERROR,
            [0; 4],
            format!("the bottle cannot start a completion thread: {e}"),
        );
    }
}

/// Which medium of the open parameters NDIS picks for NIC `name`: the
/// index of `NdisMedium802_3`, or the documented failure.
///
/// # Safety
/// `params` holds the driver's strings and arrays (their contract:
/// `AdapterName` a counted string, `MediumArraySize` entries at
/// `MediumArray`).
unsafe fn medium_of(params: &NDIS_OPEN_PARAMETERS, name: &str) -> Result<usize, NDIS_STATUS> {
    // SAFETY: the driver's adapter name string (caller).
    let asked = unsafe { text_of(params.AdapterName) };
    if !asked.is_some_and(|a| a.eq_ignore_ascii_case(name)) {
        return Err(NDIS_STATUS_ADAPTER_NOT_FOUND);
    }
    let media: &[NDIS_MEDIUM] = if params.MediumArray.is_null() {
        &[]
    } else {
        // SAFETY: MediumArraySize entries at MediumArray (caller).
        unsafe { std::slice::from_raw_parts(params.MediumArray, params.MediumArraySize as usize) }
    };
    let index = media
        .iter()
        .position(|m| *m == NdisMedium802_3)
        .ok_or(NDIS_STATUS_UNSUPPORTED_MEDIA)?;
    if params.SelectedMediumIndex.is_null() {
        return Err(NDIS_STATUS_FAILURE);
    }
    Ok(index)
}

/// `NdisOpenAdapterEx` (PASSIVE_LEVEL, inside `ProtocolBindAdapterEx`).
pub unsafe extern "win64" fn NdisOpenAdapterEx(
    NdisProtocolHandle: NDIS_HANDLE,
    ProtocolBindingContext: NDIS_HANDLE,
    OpenParameters: *mut NDIS_OPEN_PARAMETERS,
    BindContext: NDIS_HANDLE,
    NdisBindingHandle: *mut NDIS_HANDLE,
) -> NDIS_STATUS {
    const API: &str = "NdisOpenAdapterEx";
    guarded(API, || {
        require_passive(API, NdisOpenAdapterEx as *const ());
        let protocol = NdisProtocolHandle as usize;
        if !state::with(|n| n.is_protocol(protocol)) {
            invalid_handle(API, protocol, "protocol driver");
        }
        let bind = BindContext as usize;
        let Some((nic, name, pends, open)) = state::with(|n| {
            n.nics
                .values()
                .find(|x| !x.removed && x.bind_context.as_ref().is_some_and(|h| h.addr() == bind))
                .map(|x| (x.id, x.name.clone(), x.pends.open, x.binding.is_some()))
        }) else {
            ndis_bugcheck(
                NDIS_BUGCHECK_OPEN_OUTSIDE_BIND,
                bind,
                protocol,
                format!(
                    "{API}: {bind:#x} is not the bind context of a running ProtocolBindAdapterEx"
                ),
            );
        };
        if open {
            ndis_bugcheck(
                NDIS_BUGCHECK_OPEN_OUTSIDE_BIND,
                bind,
                protocol,
                format!("{API}: the adapter is already open in this bind context"),
            );
        }
        if OpenParameters.is_null() || NdisBindingHandle.is_null() {
            return NDIS_STATUS_FAILURE;
        }
        // SAFETY: non-null; the parameters start with their header.
        let header = unsafe { OpenParameters.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
        if let Err(fault) = check_header(
            header,
            NDIS_OBJECT_TYPE_OPEN_PARAMETERS,
            &[NDIS_SIZEOF_OPEN_PARAMETERS_REVISION_1],
        ) {
            bad_header(
                API,
                bind,
                OpenParameters as usize,
                "NDIS_OPEN_PARAMETERS",
                header,
                fault,
            );
        }
        // SAFETY: a revision-1 structure (checked).
        let params = unsafe { OpenParameters.read_unaligned() };
        // SAFETY: the driver's open parameters (their contract).
        let index = match unsafe { medium_of(&params, &name) } {
            Ok(index) => index,
            Err(status) => return status,
        };
        if verifier::fault_point(API) {
            return NDIS_STATUS_RESOURCES;
        }
        // SAFETY: the driver's out-pointer (checked non-null).
        unsafe { params.SelectedMediumIndex.write(index as u32) };
        let handle = Handle::new();
        let binding = handle.addr();
        state::with(|n| {
            n.bindings.insert(
                binding,
                Binding {
                    handle,
                    nic,
                    context: ProtocolBindingContext as usize,
                    state: if pends {
                        BindingState::Opening
                    } else {
                        BindingState::Paused
                    },
                    oids_pending: Vec::new(),
                    pnp_pending: None,
                    open_completed: None,
                    close_called: false,
                    close_completed: false,
                    send_calls: 0,
                    oid_calls: 0,
                },
            );
            if let Some(x) = n.nics.get_mut(&nic) {
                x.binding = Some(binding);
            }
        });
        // SAFETY: the driver's out-pointer (checked non-null).
        unsafe { NdisBindingHandle.write(binding as NDIS_HANDLE) };
        if !pends {
            return NDIS_STATUS_SUCCESS;
        }
        let context = ProtocolBindingContext as usize;
        later("ndis-open", move || complete_open(binding, context));
        NDIS_STATUS_PENDING
    })
}

/// Completes a pended open through `ProtocolOpenAdapterCompleteEx`.
fn complete_open(binding: usize, context: usize) {
    let handler = state::with(|n| {
        if let Some(b) = n.bindings.get_mut(&binding) {
            b.state = BindingState::Paused;
            b.open_completed = Some(NDIS_STATUS_SUCCESS);
        }
        n.protocol
            .as_ref()
            .and_then(|p| p.characteristics.OpenAdapterCompleteHandlerEx)
    });
    state::changed();
    if let Some(handler) = handler {
        super::bindflow::call_protocol("ProtocolOpenAdapterCompleteEx", handler as usize, || {
            // SAFETY: the protocol's ProtocolOpenAdapterCompleteEx with the
            // binding context its open passed, PASSIVE_LEVEL, once.
            unsafe { handler(context as NDIS_HANDLE, NDIS_STATUS_SUCCESS) };
        });
    }
}

/// `NdisCloseAdapterEx` (PASSIVE_LEVEL).
pub unsafe extern "win64" fn NdisCloseAdapterEx(NdisBindingHandle: NDIS_HANDLE) -> NDIS_STATUS {
    const API: &str = "NdisCloseAdapterEx";
    guarded(API, || {
        require_passive(API, NdisCloseAdapterEx as *const ());
        let binding = NdisBindingHandle as usize;
        let Some((nic, binding_state, closed_before, oids)) = state::with(|n| {
            n.live_binding(binding)
                .map(|b| (b.nic, b.state, b.close_called, b.oids_pending.len()))
        }) else {
            invalid_handle(API, binding, "binding");
        };
        if closed_before || binding_state == BindingState::Closing {
            invalid_handle(API, binding, "binding not being closed");
        }
        if matches!(
            binding_state,
            BindingState::Running | BindingState::Restarting | BindingState::Pausing
        ) {
            ndis_bugcheck(
                NDIS_BUGCHECK_ILLEGAL_PAUSE_RESTART_COMPLETE,
                binding,
                0,
                format!(
                    "{API}: the binding is {binding_state:?}; NDIS closes only paused bindings"
                ),
            );
        }
        // Deferred send completions of the NIC are NDIS's to deliver first.
        if let Some(rt) = super::nic::runtime(nic) {
            // A stuck NIC thread leaves its lists outstanding: reported
            // just below.
            let _ = rt.wait_idle();
        }
        let sends = nbl::held_by(Holder::SentOnBinding(binding));
        let receives = nbl::held_by(Holder::IndicatedOnBinding(binding));
        if !sends.is_empty() || !receives.is_empty() {
            ndis_bugcheck(
                NDIS_BUGCHECK_LEAKED_NBL,
                binding,
                sends.len() + receives.len(),
                format!(
                    "{API}: {} sends not completed and {} received lists not returned on the binding \
                     (received {receives:x?})",
                    sends.len(),
                    receives.len()
                ),
            );
        }
        if oids != 0 {
            ndis_bugcheck(
                NDIS_BUGCHECK_INVALID_OID_COMPLETION,
                binding,
                oids,
                format!("{API}: {oids} OID requests still pending on the binding"),
            );
        }
        let pools: Vec<_> = super::nblpool::live_pools()
            .into_iter()
            .filter(|p| p.owner == binding)
            .collect();
        if !pools.is_empty() {
            super::bindflow::fault(format!(
                "{API}: NET_BUFFER_LIST pools allocated for the binding are not freed before its \
                 close: {pools:?}"
            ));
        }
        let (pends, context) = state::with(|n| {
            let pends = n.nics.get(&nic).is_some_and(|x| x.pends.close);
            let b = n.bindings.get_mut(&binding);
            let context = b.as_ref().map_or(0, |b| b.context);
            if let Some(b) = b {
                b.close_called = true;
                b.state = if pends {
                    BindingState::Closing
                } else {
                    BindingState::Closed
                };
            }
            if !pends && let Some(x) = n.nics.get_mut(&nic) {
                x.binding = None;
            }
            (pends, context)
        });
        state::changed();
        if !pends {
            return NDIS_STATUS_SUCCESS;
        }
        later("ndis-close", move || complete_close(binding, nic, context));
        NDIS_STATUS_PENDING
    })
}

/// Completes a pended close through `ProtocolCloseAdapterCompleteEx`.
fn complete_close(binding: usize, nic: u32, context: usize) {
    let handler = state::with(|n| {
        if let Some(b) = n.bindings.get_mut(&binding) {
            b.state = BindingState::Closed;
            b.close_completed = true;
        }
        if let Some(x) = n.nics.get_mut(&nic) {
            x.binding = None;
        }
        n.protocol
            .as_ref()
            .and_then(|p| p.characteristics.CloseAdapterCompleteHandlerEx)
    });
    state::changed();
    if let Some(handler) = handler {
        super::bindflow::call_protocol("ProtocolCloseAdapterCompleteEx", handler as usize, || {
            // SAFETY: the protocol's ProtocolCloseAdapterCompleteEx with
            // the binding's context, PASSIVE_LEVEL, once.
            unsafe { handler(context as NDIS_HANDLE) };
        });
    }
}

/// `NdisCompleteBindAdapterEx`: completes a `ProtocolBindAdapterEx` that
/// returned `NDIS_STATUS_PENDING`.
pub unsafe extern "win64" fn NdisCompleteBindAdapterEx(
    BindAdapterContext: NDIS_HANDLE,
    Status: NDIS_STATUS,
) {
    const API: &str = "NdisCompleteBindAdapterEx";
    guarded(API, || {
        require_dispatch_or_below(API, NdisCompleteBindAdapterEx as *const ());
        let bind = BindAdapterContext as usize;
        let done = state::with(|n| {
            let nic = n
                .nics
                .values_mut()
                .find(|x| x.bind_context.as_ref().is_some_and(|h| h.addr() == bind))?;
            if nic.bind_completed.is_some() || Status == NDIS_STATUS_PENDING {
                return None;
            }
            nic.bind_completed = Some(Status);
            Some(())
        });
        if done.is_none() {
            invalid_handle(API, bind, "pending bind context");
        }
        state::changed();
    });
}

/// `NdisCompleteUnbindAdapterEx`: completes a `ProtocolUnbindAdapterEx`
/// that returned `NDIS_STATUS_PENDING`.
pub unsafe extern "win64" fn NdisCompleteUnbindAdapterEx(UnbindContext: NDIS_HANDLE) {
    const API: &str = "NdisCompleteUnbindAdapterEx";
    guarded(API, || {
        require_dispatch_or_below(API, NdisCompleteUnbindAdapterEx as *const ());
        let unbind = UnbindContext as usize;
        let done = state::with(|n| {
            let nic = n.nics.values_mut().find(|x| {
                x.unbind_context
                    .as_ref()
                    .is_some_and(|h| h.addr() == unbind)
            })?;
            if nic.unbind_completed {
                return None;
            }
            nic.unbind_completed = true;
            Some(())
        });
        if done.is_none() {
            invalid_handle(API, unbind, "pending unbind context");
        }
        state::changed();
    });
}

/// `NdisCompleteNetPnPEvent`: completes a `ProtocolNetPnPEvent` that
/// returned `NDIS_STATUS_PENDING`.
pub unsafe extern "win64" fn NdisCompleteNetPnPEvent(
    NdisBindingHandle: NDIS_HANDLE,
    NetPnPEventNotification: *mut NET_PNP_EVENT_NOTIFICATION,
    Status: NDIS_STATUS,
) {
    const API: &str = "NdisCompleteNetPnPEvent";
    guarded(API, || {
        require_dispatch_or_below(API, NdisCompleteNetPnPEvent as *const ());
        let binding = NdisBindingHandle as usize;
        let event = NetPnPEventNotification as usize;
        let Some(pending) = state::with(|n| n.live_binding(binding).map(|b| b.pnp_pending)) else {
            invalid_handle(API, binding, "binding");
        };
        match pending {
            Some((e, None)) if e == event && Status != NDIS_STATUS_PENDING => {}
            _ => ndis_bugcheck(
                super::checks::NDIS_BUGCHECK_INVALID_NET_PNP_EVENT,
                binding,
                event,
                format!("{API}: event {event:#x} is not a PnP event pending on the binding"),
            ),
        }
        state::with(|n| {
            if let Some(b) = n.live_binding(binding) {
                b.pnp_pending = Some((event, Some(Status)));
            }
        });
        state::changed();
    });
}

//! V's OID requests that P must see (the packet filter, the multicast
//! list, the lookahead), forwarded down the binding: the MUX sample's
//! `MPForwardOidRequest` and `PtCompleteForwardedRequest`. NDIS hands a
//! miniport one OID request at a time, so each V has one forwarding slot,
//! allocated with V. The clone carries the original's buffer; when P
//! completes it the byte counts go back into the original, what P
//! accepted is recorded (the receive path stops at filter 0, the OID
//! queries answer the current filter and lookahead), and V's request
//! completes with P's status. When P answers within `NdisOidRequest`,
//! `MiniportOidRequest` returns P's status itself; otherwise it returns
//! `NDIS_STATUS_PENDING` and P's completion calls
//! `NdisMOidRequestComplete`. (The sample calls `NdisMOidRequestComplete`
//! even for an inline answer and then returns `NDIS_STATUS_PENDING`; a
//! request is completed here only once NDIS knows it pends.) Which of the
//! two happens is decided by one compare-exchange on the slot's phase, so a
//! completion racing the return on another processor is counted once.
//!
//! The requests themselves (the clone, the phases, the completion) are
//! the kit's [`Forward`]; here is what V decides: whether to forward at
//! all, and what P's acceptance means for V and the binding.

use core::sync::atomic::Ordering;

use ndis::{OID_GEN_CURRENT_LOOKAHEAD, OID_GEN_CURRENT_PACKET_FILTER};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_ADAPTER_NOT_READY, NDIS_STATUS_FAILURE};

use crate::driver::kit::oid::{Accepted, Forward, ForwardOwner, OidRequest};
use crate::driver::mux::{DEVICE_STATE_D0, Mux};

impl ForwardOwner for Mux {
    /// Records what P accepted: the packet filter (V's, and the binding's,
    /// which the receive path reads) and the lookahead.
    fn accepted(&self, accepted: Accepted) {
        let Some(value) = accepted.value else {
            return;
        };
        match accepted.oid {
            OID_GEN_CURRENT_PACKET_FILTER => {
                self.virt.packet_filter.store(value, Ordering::Relaxed);
                self.binding.packet_filter.store(value, Ordering::Relaxed);
            }
            OID_GEN_CURRENT_LOOKAHEAD => self.virt.lookahead.store(value, Ordering::Relaxed),
            _ => {}
        }
    }
}

/// Forwards V's `request` (a set or query) to P through `slot`; returns
/// P's status when P answered at once (or a failure when nothing was
/// forwarded: V being stopped, V or P not in D0), else
/// `NDIS_STATUS_PENDING` (V's request completes with
/// `NdisMOidRequestComplete`).
pub fn forward(slot: &Forward<Mux>, mux: &Mux, request: OidRequest) -> NDIS_STATUS {
    if mux.virt.deinitializing.load(Ordering::SeqCst) {
        return NDIS_STATUS_FAILURE;
    }
    if mux.virt.power_state.load(Ordering::SeqCst) != DEVICE_STATE_D0 || !mux.binding.is_powered() {
        return NDIS_STATUS_ADAPTER_NOT_READY;
    }
    slot.forward(request, mux.binding.handle(), &mux.binding.requests)
}

//! The data path between V and P, both ways (`<= DISPATCH_LEVEL`, no
//! allocation of rsndk's, no blocking), after the MUX sample's
//! `MPSendNetBufferLists`, `PtSendNBLComplete`, `PtReceiveNBL` and
//! `MPReturnNetBufferLists`:
//!
//! * V's sends go down the binding unchanged. Each NBL's `SourceHandle`
//!   becomes the binding handle (NDIS routes the completion by it) and the
//!   sender's is kept in the NBL's context area
//!   (`NdisAllocateNetBufferListContext`, as the sample's `IM_NBL_ENTRY`:
//!   taken from the space the sender reserved when it has some) and put
//!   back on completion. V paused or the binding not running: the NBLs
//!   complete at once with `NDIS_STATUS_PAUSED`.
//! * Completions from P: the L2 port's own NBLs (recognised by their pool)
//!   go back to the port; the rest complete up on V.
//! * Receives from P: each NBL is offered to the L2 port first (RoCEv2 for
//!   one of V's addresses is taken and copied into the RNIC); the rest is
//!   indicated up on V, one NBL per indication. When P lends the NBLs
//!   (`NDIS_RECEIVE_FLAGS_RESOURCES`) V indicates with the same flag, they
//!   are P's again when the call returns and the chain is relinked as it
//!   came; otherwise an NBL indicated up stays with TCP/IP until
//!   `MiniportReturnNetBufferLists` and everything else is returned to P
//!   at once.
//!
//! Every NBL out on either side is counted (the binding's sends, V's
//! [`super::kit::pause_gate::PauseGate`]), so the binding's pause and V's
//! pause and halt can wait for all of them. The chains are the kit's
//! ([`super::kit::nbl`]): each NBL taken off one is given on exactly once.

use core::sync::atomic::Ordering::Relaxed;

use ndis::{
    NDIS_PORT_NUMBER, NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL, NDIS_RECEIVE_FLAGS_RESOURCES,
    NDIS_RETURN_FLAGS_DISPATCH_LEVEL, NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL,
    NDIS_SEND_FLAGS_CHECK_FOR_LOOPBACK, NDIS_SEND_FLAGS_DISPATCH_LEVEL, NDIS_STATUS_PAUSED,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_SUCCESS, ULONG};

use super::kit::nbl::{self, Nbl, NblChain};
use super::kit::ndis::AdapterHandle;
use super::mux::{DEVICE_STATE_D0, Direction, Mux, TrafficStats};

/// Counts the frames of a chain V refuses as discarded.
fn discard_chain(stats: &TrafficStats, lists: &mut NblChain) {
    lists.for_each(|nbl| stats.out_discard(nbl));
}

/// Counts the frames of an NBL P completed: sent, or failed.
fn count_completed(stats: &TrafficStats, nbl: &Nbl) {
    if nbl.status() == NDIS_STATUS_SUCCESS {
        stats.count(Direction::Out, nbl);
    } else {
        stats.out_error(nbl);
    }
}

/// Completes a whole chain up on V with `status`.
fn complete_up(miniport: AdapterHandle, mut lists: NblChain, status: NDIS_STATUS, flags: ULONG) {
    lists.for_each(|nbl| nbl.set_status(status));
    nbl::complete_sends(miniport, lists, flags);
}

/// V's `MiniportSendNetBufferLists`: down the binding, or completed at once
/// with `NDIS_STATUS_PAUSED` while V or the binding is paused. `miniport`
/// is V's handle; `lists` is the chain NDIS handed V.
pub fn send(
    mux: &Mux,
    miniport: AdapterHandle,
    mut lists: NblChain,
    port: NDIS_PORT_NUMBER,
    flags: ULONG,
) {
    let complete_flags = if flags & NDIS_SEND_FLAGS_DISPATCH_LEVEL != 0 {
        NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    let count = lists.len();
    let stats = &mux.virt.stats;
    if !mux.virt.nbls_out(count) {
        discard_chain(stats, &mut lists);
        complete_up(miniport, lists, NDIS_STATUS_PAUSED, complete_flags);
        return;
    }
    let binding = &mux.binding;
    let handle = binding.handle();
    let handle = match handle {
        Some(handle) if binding.is_powered() && binding.enter_sends(count) => handle,
        _ => {
            discard_chain(stats, &mut lists);
            complete_up(miniport, lists, NDIS_STATUS_PAUSED, complete_flags);
            mux.virt.nbls_returned(count);
            return;
        }
    };
    let mut down = NblChain::new();
    let mut failed = NblChain::new();
    while let Some(mut nbl) = lists.pop() {
        if nbl.take_source(handle).is_err() {
            nbl.set_status(ndkpi::NDIS_STATUS_RESOURCES);
            stats.out_error(&nbl);
            failed.push(nbl);
            continue;
        }
        down.push(nbl);
    }
    if !failed.is_empty() {
        let failed_count = failed.len();
        binding.sends_completed(failed_count);
        nbl::complete_sends(miniport, failed, complete_flags);
        mux.virt.nbls_returned(failed_count);
    }
    if !down.is_empty() {
        // NDIS must not loop these back to rsndk's own protocol edge (the
        // sample clears the flag; NDIS loops back above V instead).
        let down_flags = flags & !NDIS_SEND_FLAGS_CHECK_FOR_LOOPBACK;
        // The open binding (counted sends keep the close waiting).
        nbl::send(handle, down, port, down_flags);
    }
}

/// `ProtocolSendNetBufferListsComplete`: the L2 port's NBLs back to it,
/// the rest up on V with their `SourceHandle` restored. `lists` holds
/// NBLs rsndk sent on this binding, given back once.
pub fn send_complete(mux: &Mux, mut lists: NblChain, flags: ULONG) {
    let stats = &mux.virt.stats;
    let mut up = NblChain::new();
    let mut own = 0u32;
    {
        // The port stays while any of its sends is counted (halt waits),
        // and this call's own NBLs are uncounted only after it let go of
        // the port.
        let port = mux.virt.port();
        while let Some(mut nbl) = lists.pop() {
            if let Some(port) = &port
                && port.owns(&nbl)
            {
                // The RNIC's frames count as V's traffic too.
                count_completed(stats, &nbl);
                port.send_complete(nbl);
                own += 1;
                continue;
            }
            // A pass-through NBL: `send` gave it a context.
            nbl.give_back_source();
            count_completed(stats, &nbl);
            up.push(nbl);
        }
    }
    let complete_flags = if flags & NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL != 0 {
        NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    if !up.is_empty() {
        let count = up.len();
        // V's handle (V's halt waits for these NBLs); TCP/IP's NBLs with
        // their SourceHandle restored, once.
        if let Some(miniport) = mux.virt.miniport() {
            nbl::complete_sends(miniport, up, complete_flags);
        }
        mux.binding.sends_completed(count);
        mux.virt.nbls_returned(count);
    }
    for _ in 0..own {
        mux.binding.own_send_completed();
    }
}

/// `ProtocolReceiveNetBufferLists`: to the L2 port, up on V, or back to P.
/// `lists` is P's chain, lent (`NDIS_RECEIVE_FLAGS_RESOURCES`) or given
/// for the call.
pub fn receive(mux: &Mux, mut lists: NblChain, port_number: NDIS_PORT_NUMBER, flags: ULONG) {
    let can_pend = flags & NDIS_RECEIVE_FLAGS_RESOURCES == 0;
    let return_flags = if flags & NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL != 0 {
        NDIS_RETURN_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    let binding = &mux.binding;
    let Some(handle) = binding.handle() else {
        return;
    };
    // Receives between asking P for filter 0 and its completion (the
    // sample's check): nothing is wanted.
    if binding.packet_filter.load(Relaxed) == 0 {
        if can_pend {
            // P's chain, given to us, returned once.
            nbl::return_received(handle, lists, return_flags);
        }
        return;
    }
    let virt = &mux.virt;
    let attached = virt.rundown.enter();
    // V's handle, valid under the rundown.
    let miniport = virt.miniport().filter(|_| attached);
    let port = if attached { virt.port() } else { None };
    // P's NBLs to give back: returned at the end when given, relinked as
    // they came when lent.
    let mut back = NblChain::new();
    while let Some(nbl) = lists.pop() {
        let mut keep = Some(nbl);
        if let Some(nbl) = keep.take_if(|_| attached) {
            if port.as_ref().is_some_and(|port| port.take_received(&nbl)) {
                // The RNIC has it; P gets it back.
                virt.stats.count(Direction::In, &nbl);
                keep = Some(nbl);
            } else if let Some(miniport) = miniport
                && virt.power_state.load(Relaxed) == DEVICE_STATE_D0
                && virt.nbls_out(1)
            {
                virt.stats.count(Direction::In, &nbl);
                let up_flags = if can_pend {
                    flags
                } else {
                    flags | NDIS_RECEIVE_FLAGS_RESOURCES
                };
                // One NBL: TCP/IP has it until MiniportReturnNetBufferLists
                // when P gave it; lent, it is back at once.
                keep = nbl::indicate_one(miniport, nbl, port_number, up_flags);
                if keep.is_some() {
                    virt.nbls_returned(1);
                }
            } else {
                virt.stats.in_discard(&nbl);
                keep = Some(nbl);
            }
        }
        if let Some(nbl) = keep {
            back.push(nbl);
        }
    }
    if let Some(port) = &port {
        // What the frames taken made the RNIC send goes down in one batch.
        port.transmit_after_receive();
    }
    drop(port);
    if attached {
        virt.rundown.leave();
    }
    if can_pend {
        // P's NBLs given to us and kept by nobody, returned once.
        nbl::return_received(handle, back, return_flags);
    }
    // Lent: `back` is P's chain relinked as it came; P has it back when
    // this returns.
}

/// V's `MiniportReturnNetBufferLists`: TCP/IP is done with NBLs V
/// indicated; they are P's. `lists` holds NBLs `receive` indicated up
/// without the resources flag, returned once.
pub fn return_lists(mux: &Mux, lists: NblChain, flags: ULONG) {
    let count = lists.len();
    // The return flags carry the same dispatch bit; P's NBLs, returned
    // once; the binding is open (V's halt, which precedes the close, waits
    // for these).
    if let Some(binding) = mux.binding.handle() {
        nbl::return_received(binding, lists, flags);
    }
    mux.virt.nbls_returned(count);
}

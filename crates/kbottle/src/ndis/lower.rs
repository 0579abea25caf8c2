//! The protocol's data path on a binding: `NdisSendNetBufferLists`,
//! `NdisReturnNetBufferLists` and `NdisCancelSendNetBufferLists`
//! (`<= DISPATCH_LEVEL`), and the send completions to
//! `ProtocolSendNetBufferListsComplete`.
//!
//! Sending: each list must be one NDIS allocated (a driver pool's, or one
//! the stack above handed the driver), with `SourceHandle` set to the
//! binding handle (NDIS completes it to whoever that names), and not
//! already sent. The NIC copies each `NET_BUFFER`'s bytes (through the
//! MDLs' page numbers, as DMA would) into a frame, pads it to the
//! Ethernet minimum of 60 bytes, and puts it on its segment. Statuses:
//! `NDIS_STATUS_PAUSED` while the binding is not running (NDIS fails the
//! sends itself), `NDIS_STATUS_MEDIA_DISCONNECTED` while the link is down
//! (the NIC does not transmit, and says so rather than dropping
//! silently), `NDIS_STATUS_INVALID_PACKET` for a buffer shorter than an
//! Ethernet header, else success (a frame the segment then drops as
//! oversize still left the NIC). One send call in [`INLINE_EVERY`], and
//! every refused send, completes inside the call; the others complete
//! later from the NIC's thread at DISPATCH_LEVEL.
//!
//! Returning: every list must have been indicated on this binding without
//! `NDIS_RECEIVE_FLAGS_RESOURCES` and not yet returned, and must come back
//! as it went (its buffers, MDLs, offsets, lengths and context).
//!
//! Faults are 0x7C / 0x27 ([`super::checks::NDIS_BUGCHECK_LEAKED_NBL`]).

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use ndis::{
    DISPATCH_LEVEL, NDIS_HANDLE, NDIS_PORT_NUMBER, NDIS_RETURN_FLAGS_DISPATCH_LEVEL,
    NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL, NDIS_SEND_FLAGS_DISPATCH_LEVEL,
    NDIS_STATUS_MEDIA_DISCONNECTED, NDIS_STATUS_PAUSED, NDIS_STATUS_SUCCESS, NET_BUFFER_LIST,
};
use ndkpi::{NDIS_STATUS, PVOID, ULONG};

use super::checks::{
    NDIS_BUGCHECK_LEAKED_NBL, guarded, invalid_handle, ndis_bugcheck, require_dispatch_or_below,
};
use super::nbl::{self, Holder, LedgerError};
use super::nic;
use super::state::{self, BindingState};
use crate::kernel::{cpu, verifier};
use crate::world::segment::{self, ETH_HEADER};

/// `NDIS_STATUS_INVALID_PACKET` (`ndis.h`: `((NDIS_STATUS)0xC001000FL)`;
/// not yet in crates/ndis).
const NDIS_STATUS_INVALID_PACKET: NDIS_STATUS = 0xC001_000F_u32 as NDIS_STATUS;
/// One send call in this many completes inside the call.
pub const INLINE_EVERY: u64 = 3;
/// The shortest Ethernet frame (without FCS); shorter ones are padded.
const MIN_FRAME: usize = 60;
/// Lists of one chain the bottle follows at most.
const MAX_CHAIN: usize = 1 << 16;

/// An ownership or content fault of a list: 0x7C / 0x27.
fn list_fault(api: &str, nbl: usize, binding: usize, what: &str) -> ! {
    ndis_bugcheck(
        NDIS_BUGCHECK_LEAKED_NBL,
        nbl,
        binding,
        format!("{api}: {what}"),
    )
}

/// The IRQL rule of a `*_DISPATCH_LEVEL` flag: set exactly at
/// DISPATCH_LEVEL (0xC4 / 0xE5 when set below it).
fn check_dispatch_flag(api: &str, flag_set: bool) {
    let irql = cpu::current();
    if flag_set && irql != DISPATCH_LEVEL {
        verifier::bugcheck(
            verifier::DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0xE5, u64::from(irql), 0, 0],
            format!("{api} with its DISPATCH_LEVEL flag at IRQL {irql}"),
        );
    }
}

/// What a send needs of the binding and its NIC.
struct SendView {
    nic: u32,
    running: bool,
    link_up: bool,
    call: u64,
}

/// `NdisSendNetBufferLists`.
pub unsafe extern "win64" fn NdisSendNetBufferLists(
    NdisBindingHandle: NDIS_HANDLE,
    NetBufferLists: *mut NET_BUFFER_LIST,
    _PortNumber: NDIS_PORT_NUMBER,
    SendFlags: ULONG,
) {
    const API: &str = "NdisSendNetBufferLists";
    guarded(API, || {
        require_dispatch_or_below(API, NdisSendNetBufferLists as *const ());
        check_dispatch_flag(API, SendFlags & NDIS_SEND_FLAGS_DISPATCH_LEVEL != 0);
        let binding = NdisBindingHandle as usize;
        let Some(view) = state::with(|n| {
            let b = n.live_binding(binding)?;
            b.send_calls += 1;
            let (nic, running, call) = (b.nic, b.state == BindingState::Running, b.send_calls);
            let link_up = n.nics.get(&nic).is_some_and(|x| x.link_up);
            Some(SendView {
                nic,
                running,
                link_up,
                call,
            })
        }) else {
            invalid_handle(API, binding, "binding");
        };
        if NetBufferLists.is_null() {
            list_fault(API, 0, binding, "a null NET_BUFFER_LIST chain");
        }
        // SAFETY: the driver's chain, which it hands over whole.
        let lists = unsafe { nbl::chain(NetBufferLists, MAX_CHAIN) };
        let runtime = nic::runtime(view.nic);
        if let Some(rt) = &runtime {
            let c = &rt.counters;
            c.send_calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            c.lists_sent
                .fetch_add(lists.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        let mut outcome = Vec::with_capacity(lists.len());
        for &list in &lists {
            outcome.push((list, send_one(API, binding, list, &view)));
        }
        let inline =
            outcome.iter().any(|(_, s)| *s != NDIS_STATUS_SUCCESS) || view.call % INLINE_EVERY == 0;
        if inline {
            if let Some(rt) = &runtime {
                rt.counters
                    .inline_completions
                    .fetch_add(outcome.len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
            complete_sends(binding, &outcome);
        } else {
            let lists = outcome.len() as u64;
            nic::defer(view.nic, lists, move || complete_sends(binding, &outcome));
        }
    });
}

/// Takes one list of a send: the ledger entry, then the frames on the
/// wire; its completion status.
fn send_one(api: &str, binding: usize, list: usize, view: &SendView) -> NDIS_STATUS {
    match nbl::push_once(list, Holder::SentOnBinding(binding)) {
        Ok(()) => {}
        Err(LedgerError::Unknown(_)) => list_fault(
            api,
            list,
            binding,
            &format!(
                "{list:#x} is not a NET_BUFFER_LIST allocated from an NDIS pool (or it was freed)"
            ),
        ),
        Err(LedgerError::WrongHolder { .. }) => list_fault(
            api,
            list,
            binding,
            &format!("NET_BUFFER_LIST {list:#x} sent again before its completion"),
        ),
    }
    // SAFETY: a live list of the ledger (pushed above).
    let source = unsafe { (*(list as *const NET_BUFFER_LIST)).SourceHandle } as usize;
    if source != binding {
        list_fault(
            api,
            list,
            binding,
            &format!(
                "NET_BUFFER_LIST {list:#x} has SourceHandle {source:#x}, not the binding handle \
                 {binding:#x} (NDIS completes a list to the binding SourceHandle names)"
            ),
        );
    }
    if !view.running {
        return NDIS_STATUS_PAUSED;
    }
    if !view.link_up {
        return NDIS_STATUS_MEDIA_DISCONNECTED;
    }
    // SAFETY: a live list the driver handed over; its buffers and MDLs are
    // valid until it is completed.
    let frames = match unsafe { nbl::frames_of(list as *const NET_BUFFER_LIST) } {
        Ok(f) => f,
        Err(e) => list_fault(
            api,
            list,
            binding,
            &format!("NET_BUFFER_LIST {list:#x} cannot be transmitted: {e}"),
        ),
    };
    if frames.iter().any(|f| f.len() < ETH_HEADER) {
        return NDIS_STATUS_INVALID_PACKET;
    }
    let Some(rt) = nic::runtime(view.nic) else {
        return NDIS_STATUS_MEDIA_DISCONNECTED;
    };
    let (Some(seg), Some(port)) = (segment::get(rt.segment()), rt.port()) else {
        return NDIS_STATUS_MEDIA_DISCONNECTED;
    };
    for mut frame in frames {
        if frame.len() < MIN_FRAME {
            frame.resize(MIN_FRAME, 0);
        }
        seg.transmit(port, &frame);
        rt.counters
            .transmitted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    NDIS_STATUS_SUCCESS
}

/// Completes send lists of `binding` with their statuses through
/// `ProtocolSendNetBufferListsComplete`, as one chain, at the current
/// IRQL (`NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL` when at
/// DISPATCH_LEVEL).
pub(crate) fn complete_sends(binding: usize, lists: &[(usize, NDIS_STATUS)]) {
    const API: &str = "ProtocolSendNetBufferListsComplete";
    if lists.is_empty() {
        return;
    }
    let Some((handler, context, nic)) = state::with(|n| {
        let handler = n
            .protocol
            .as_ref()?
            .characteristics
            .SendNetBufferListsCompleteHandler?;
        let b = n.bindings.get(&binding)?;
        Some((handler, b.context, b.nic))
    }) else {
        return;
    };
    let failures = lists
        .iter()
        .filter(|(_, s)| *s != NDIS_STATUS_SUCCESS)
        .count();
    if let Some(rt) = nic::runtime(nic) {
        rt.counters
            .send_failures
            .fetch_add(failures as u64, std::sync::atomic::Ordering::Relaxed);
    }
    for (i, &(list, status)) in lists.iter().enumerate() {
        if let Err(e) = nbl::pop(list, Holder::SentOnBinding(binding)) {
            list_fault(API, list, binding, &format!("completing a send: {e}"));
        }
        let next = lists.get(i + 1).map_or(0, |(l, _)| *l);
        let nbl = list as *mut NET_BUFFER_LIST;
        // SAFETY: a list sent on this binding and completed now: NDIS
        // owns it until the protocol's handler runs, and sets its status
        // and the chain link it completes it in.
        unsafe {
            (*nbl).Status = status;
        }
        // SAFETY: as above.
        unsafe {
            (*nbl).Next = next as *mut NET_BUFFER_LIST;
        }
    }
    let flags = if cpu::current() == DISPATCH_LEVEL {
        NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    let head = lists[0].0;
    let entered = cpu::current();
    // SAFETY: the protocol's ProtocolSendNetBufferListsComplete on its
    // binding context with a chain of lists it sent on that binding, at
    // the IRQL the flags say.
    unsafe { handler(context as NDIS_HANDLE, head as *mut NET_BUFFER_LIST, flags) };
    if cpu::current() != entered {
        super::checks::returned_at_raised_irql(API, handler as usize, entered);
    }
    state::changed();
}

/// `NdisReturnNetBufferLists`.
pub unsafe extern "win64" fn NdisReturnNetBufferLists(
    NdisBindingHandle: NDIS_HANDLE,
    NetBufferLists: *mut NET_BUFFER_LIST,
    ReturnFlags: ULONG,
) {
    const API: &str = "NdisReturnNetBufferLists";
    guarded(API, || {
        require_dispatch_or_below(API, NdisReturnNetBufferLists as *const ());
        check_dispatch_flag(API, ReturnFlags & NDIS_RETURN_FLAGS_DISPATCH_LEVEL != 0);
        let binding = NdisBindingHandle as usize;
        if state::with(|n| n.live_binding(binding).is_none()) {
            invalid_handle(API, binding, "binding");
        }
        if NetBufferLists.is_null() {
            list_fault(API, 0, binding, "a null NET_BUFFER_LIST chain");
        }
        // SAFETY: the driver's chain of returned lists.
        let lists = unsafe { nbl::chain(NetBufferLists, MAX_CHAIN) };
        for list in lists {
            if nic::lent_with_resources(list) {
                list_fault(
                    API,
                    list,
                    binding,
                    &format!(
                        "NET_BUFFER_LIST {list:#x} was indicated with NDIS_RECEIVE_FLAGS_RESOURCES: \
                         it is the NIC's again when the indication returns, never returned"
                    ),
                );
            }
            let shape = match nbl::pop(list, Holder::IndicatedOnBinding(binding)) {
                Ok(shape) => shape,
                Err(e) => list_fault(API, list, binding, &format!("returning a receive: {e}")),
            };
            let now = nbl::shape_of(list);
            if now != shape {
                list_fault(
                    API,
                    list,
                    binding,
                    &format!(
                        "NET_BUFFER_LIST {list:#x} returned changed: indicated as {shape:?}, returned as {now:?}"
                    ),
                );
            }
            if let Err(e) = nbl::free(list as *mut NET_BUFFER_LIST) {
                list_fault(API, list, binding, &e.to_string());
            }
        }
        state::changed();
    });
}

/// `NdisCancelSendNetBufferLists`: the NIC completes every send promptly,
/// so there is never anything to cancel; the handle is checked.
pub unsafe extern "win64" fn NdisCancelSendNetBufferLists(
    NdisBindingHandle: NDIS_HANDLE,
    _CancelId: PVOID,
) {
    const API: &str = "NdisCancelSendNetBufferLists";
    guarded(API, || {
        require_dispatch_or_below(API, NdisCancelSendNetBufferLists as *const ());
        let binding = NdisBindingHandle as usize;
        if state::with(|n| n.live_binding(binding).is_none()) {
            invalid_handle(API, binding, "binding");
        }
    });
}

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
//! [`super::protocol::pause_gate::PauseGate`]), so the binding's pause and
//! V's pause and halt can wait for all of them.

use core::ptr::{self, NonNull};
use core::sync::atomic::Ordering::Relaxed;

use ndis::{
    NDIS_HANDLE, NDIS_PORT_NUMBER, NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL, NDIS_RECEIVE_FLAGS_RESOURCES,
    NDIS_RETURN_FLAGS_DISPATCH_LEVEL, NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL,
    NDIS_SEND_FLAGS_CHECK_FOR_LOOPBACK, NDIS_SEND_FLAGS_DISPATCH_LEVEL, NDIS_STATUS_PAUSED,
    NET_BUFFER_LIST, NdisAllocateNetBufferListContext, NdisFreeNetBufferListContext,
    NdisMIndicateReceiveNetBufferLists, NdisMSendNetBufferListsComplete, NdisReturnNetBufferLists,
    NdisSendNetBufferLists,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS, ULONG};

use super::alloc::POOL_TAG;
use super::mux::{DEVICE_STATE_D0, Direction, Mux, TrafficStats};

/// What a sent NBL carries in its context area while P has it (the
/// sample's `IM_NBL_ENTRY`), padded to `MEMORY_ALLOCATION_ALIGNMENT`.
#[repr(C, align(16))]
struct SendContext {
    /// The sender's `SourceHandle`, restored on completion.
    previous_source: NDIS_HANDLE,
}

/// Bytes of context each sent NBL takes.
const SEND_CONTEXT_SIZE: u16 = size_of::<SendContext>() as u16;

/// A chain being built: head and tail.
struct Chain {
    head: *mut NET_BUFFER_LIST,
    tail: *mut NET_BUFFER_LIST,
    count: u32,
}

impl Chain {
    const fn new() -> Self {
        Self {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
            count: 0,
        }
    }

    /// Appends `nbl`, whose `Next` is null.
    fn push(&mut self, nbl: NonNull<NET_BUFFER_LIST>) {
        match NonNull::new(self.tail) {
            // SAFETY: the tail is an NBL this chain holds (ours for the
            // call); linking it is what building a chain means.
            Some(tail) => unsafe { (*tail.as_ptr()).Next = nbl.as_ptr() },
            None => self.head = nbl.as_ptr(),
        }
        self.tail = nbl.as_ptr();
        self.count += 1;
    }

    fn head(&self) -> Option<NonNull<NET_BUFFER_LIST>> {
        NonNull::new(self.head)
    }
}

/// Takes the first NBL off a chain: returns it (its `Next` cleared) and
/// the rest.
///
/// # Safety
/// `nbl` is an NBL the caller holds for the call.
unsafe fn detach(nbl: NonNull<NET_BUFFER_LIST>) -> *mut NET_BUFFER_LIST {
    // SAFETY: an NBL the caller holds (this function's contract): nobody
    // else reads or writes it meanwhile.
    let rest = unsafe { (*nbl.as_ptr()).Next };
    // SAFETY: the same held NBL; unlinking it is the holder's to do.
    unsafe { (*nbl.as_ptr()).Next = ptr::null_mut() };
    rest
}

/// The number of NBLs of a chain.
///
/// # Safety
/// Every NBL of the chain is held by the caller for the call.
unsafe fn chain_len(mut at: *mut NET_BUFFER_LIST) -> u32 {
    let mut count = 0;
    while let Some(nbl) = NonNull::new(at) {
        count += 1;
        // SAFETY: an NBL of the caller's chain, held for the call (this
        // function's contract).
        at = unsafe { (*nbl.as_ptr()).Next };
    }
    count
}

/// Counts the frames of a chain V refuses as discarded.
///
/// # Safety
/// `lists` is a chain the caller holds for the call.
unsafe fn discard_chain(stats: &TrafficStats, lists: NonNull<NET_BUFFER_LIST>) {
    let mut at = lists.as_ptr();
    while let Some(nbl) = NonNull::new(at) {
        // SAFETY: an NBL of the caller's chain, held for the call (this
        // function's contract).
        let nbl = unsafe { nbl.as_ref() };
        stats.out_discard(nbl);
        at = nbl.Next;
    }
}

/// Counts the frames of an NBL P completed: sent, or failed.
fn count_completed(stats: &TrafficStats, nbl: &NET_BUFFER_LIST) {
    if nbl.Status == NDIS_STATUS_SUCCESS {
        stats.count(Direction::Out, nbl);
    } else {
        stats.out_error(nbl);
    }
}

/// Completes a whole chain up on V with `status`.
///
/// # Safety
/// `miniport` is V's handle; the chain holds NBLs TCP/IP sent on V that
/// V has not completed.
unsafe fn complete_up(
    miniport: NDIS_HANDLE,
    lists: NonNull<NET_BUFFER_LIST>,
    status: NDIS_STATUS,
    flags: ULONG,
) {
    let mut at = lists.as_ptr();
    while let Some(nbl) = NonNull::new(at) {
        // SAFETY: V still owns the NBL (this function's contract); its
        // status is the completer's to set.
        unsafe { (*nbl.as_ptr()).Status = status };
        // SAFETY: the same NBL, still V's.
        at = unsafe { (*nbl.as_ptr()).Next };
    }
    // SAFETY: <= DISPATCH_LEVEL (told by `flags`); V's chain, completed
    // once.
    unsafe { NdisMSendNetBufferListsComplete(miniport, lists.as_ptr(), flags) };
}

/// The start of an NBL's used context area
/// (`NET_BUFFER_LIST_CONTEXT_DATA_START`).
///
/// # Safety
/// `nbl` has a context area (after a successful
/// `NdisAllocateNetBufferListContext`) and is held by the caller.
unsafe fn context_data(nbl: NonNull<NET_BUFFER_LIST>) -> *mut SendContext {
    // SAFETY: the caller holds the NBL (this function's contract).
    let context = unsafe { (*nbl.as_ptr()).Context };
    // SAFETY: the NBL has a context block (this function's contract), so
    // `Context` points to NDIS's header; the used data starts
    // `data_start_offset` bytes into it (NET_BUFFER_LIST_CONTEXT_DATA_START).
    let offset = unsafe { (*context).data_start_offset() };
    context.cast::<u8>().wrapping_add(offset).cast()
}

/// V's `MiniportSendNetBufferLists`: down the binding, or completed at once
/// with `NDIS_STATUS_PAUSED` while V or the binding is paused.
///
/// # Safety
/// `miniport` is V's handle; `lists` is the chain NDIS handed V.
pub unsafe fn send(
    mux: &Mux,
    miniport: NDIS_HANDLE,
    lists: NonNull<NET_BUFFER_LIST>,
    port: NDIS_PORT_NUMBER,
    flags: ULONG,
) {
    let complete_flags = if flags & NDIS_SEND_FLAGS_DISPATCH_LEVEL != 0 {
        NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    // SAFETY: V holds the chain for the call.
    let count = unsafe { chain_len(lists.as_ptr()) };
    let stats = &mux.virt.stats;
    if !mux.virt.nbls_out(count) {
        // SAFETY: V holds the chain for the call.
        unsafe { discard_chain(stats, lists) };
        // SAFETY: V's chain, completed once.
        unsafe { complete_up(miniport, lists, NDIS_STATUS_PAUSED, complete_flags) };
        return;
    }
    let binding = &mux.binding;
    if !binding.is_powered() || !binding.enter_sends(count) {
        // SAFETY: V holds the chain for the call.
        unsafe { discard_chain(stats, lists) };
        // SAFETY: V's handle and the chain NDIS handed V (this function's
        // contract), not yet completed; completed once here.
        unsafe { complete_up(miniport, lists, NDIS_STATUS_PAUSED, complete_flags) };
        mux.virt.nbls_returned(count);
        return;
    }
    let handle = binding.handle();
    let mut down = Chain::new();
    let mut failed = Chain::new();
    let mut at = lists.as_ptr();
    while let Some(nbl) = NonNull::new(at) {
        // SAFETY: V holds the chain.
        at = unsafe { detach(nbl) };
        // SAFETY: <= DISPATCH_LEVEL; an NBL V holds; a size that is a
        // multiple of MEMORY_ALLOCATION_ALIGNMENT.
        let status = unsafe {
            NdisAllocateNetBufferListContext(nbl.as_ptr(), SEND_CONTEXT_SIZE, 0, POOL_TAG)
        };
        if status != NDIS_STATUS_SUCCESS {
            // SAFETY: V holds the NBL.
            unsafe { (*nbl.as_ptr()).Status = NDIS_STATUS_RESOURCES };
            // SAFETY: V holds the NBL.
            stats.out_error(unsafe { nbl.as_ref() });
            failed.push(nbl);
            continue;
        }
        // SAFETY: the context just allocated, SEND_CONTEXT_SIZE bytes,
        // 16-byte aligned (NDIS aligns context data to
        // MEMORY_ALLOCATION_ALIGNMENT).
        let context = unsafe { context_data(nbl) };
        // SAFETY: V holds the NBL.
        let previous_source = unsafe { (*nbl.as_ptr()).SourceHandle };
        // SAFETY: the context area is the NBL's and ours until completion.
        unsafe { context.write(SendContext { previous_source }) };
        // SAFETY: V holds the NBL; a protocol's send carries its binding
        // handle (NdisSendNetBufferLists).
        unsafe { (*nbl.as_ptr()).SourceHandle = handle };
        down.push(nbl);
    }
    if let Some(head) = failed.head() {
        binding.sends_completed(failed.count);
        // SAFETY: V's NBLs that were not sent, completed once.
        unsafe { NdisMSendNetBufferListsComplete(miniport, head.as_ptr(), complete_flags) };
        mux.virt.nbls_returned(failed.count);
    }
    if let Some(head) = down.head() {
        // NDIS must not loop these back to rsndk's own protocol edge (the
        // sample clears the flag; NDIS loops back above V instead).
        let down_flags = flags & !NDIS_SEND_FLAGS_CHECK_FOR_LOOPBACK;
        // SAFETY: <= DISPATCH_LEVEL (told by the flags); the open binding
        // (counted sends keep the close waiting); a chain of NBLs whose
        // SourceHandle is the binding's.
        unsafe { NdisSendNetBufferLists(handle, head.as_ptr(), port, down_flags) };
    }
}

/// `ProtocolSendNetBufferListsComplete`: the L2 port's NBLs back to it,
/// the rest up on V with their `SourceHandle` restored.
///
/// # Safety
/// `lists` holds NBLs rsndk sent on this binding, given back once.
pub unsafe fn send_complete(mux: &Mux, lists: NonNull<NET_BUFFER_LIST>, flags: ULONG) {
    // The port stays while any of its sends is counted (halt waits), and
    // this call's own NBLs are uncounted only at its end.
    let port = mux.virt.port();
    let stats = &mux.virt.stats;
    let mut up = Chain::new();
    let mut own = 0u32;
    let mut at = lists.as_ptr();
    while let Some(nbl) = NonNull::new(at) {
        // SAFETY: the chain is ours again.
        at = unsafe { detach(nbl) };
        // SAFETY: the NBL just detached, ours until handed on below.
        let nbl_ref = unsafe { nbl.as_ref() };
        if let Some(port) = port
            && port.owns(nbl_ref)
        {
            // The RNIC's frames count as V's traffic too.
            count_completed(stats, nbl_ref);
            port.send_complete(nbl);
            own += 1;
            continue;
        }
        // SAFETY: a pass-through NBL: `send` gave it a context.
        let context = unsafe { context_data(nbl) };
        // SAFETY: written by `send`, untouched since.
        let previous_source = unsafe { context.read().previous_source };
        // SAFETY: <= DISPATCH_LEVEL; frees exactly what `send` allocated.
        unsafe { NdisFreeNetBufferListContext(nbl.as_ptr(), SEND_CONTEXT_SIZE) };
        // SAFETY: the NBL is ours until completed up.
        unsafe { (*nbl.as_ptr()).SourceHandle = previous_source };
        count_completed(stats, nbl_ref);
        up.push(nbl);
    }
    let complete_flags = if flags & NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL != 0 {
        NDIS_SEND_COMPLETE_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    if let Some(head) = up.head() {
        // SAFETY: <= DISPATCH_LEVEL; V's handle (V's halt waits for these
        // NBLs); TCP/IP's NBLs with their SourceHandle restored, once.
        unsafe {
            NdisMSendNetBufferListsComplete(mux.virt.miniport(), head.as_ptr(), complete_flags);
        }
        mux.binding.sends_completed(up.count);
        mux.virt.nbls_returned(up.count);
    }
    for _ in 0..own {
        mux.binding.own_send_completed();
    }
}

/// `ProtocolReceiveNetBufferLists`: to the L2 port, up on V, or back to P.
///
/// # Safety
/// `lists` is P's chain, lent (`NDIS_RECEIVE_FLAGS_RESOURCES`) or given for
/// the call.
pub unsafe fn receive(
    mux: &Mux,
    lists: NonNull<NET_BUFFER_LIST>,
    port_number: NDIS_PORT_NUMBER,
    flags: ULONG,
) {
    let can_pend = flags & NDIS_RECEIVE_FLAGS_RESOURCES == 0;
    let return_flags = if flags & NDIS_RECEIVE_FLAGS_DISPATCH_LEVEL != 0 {
        NDIS_RETURN_FLAGS_DISPATCH_LEVEL
    } else {
        0
    };
    let binding = &mux.binding;
    let handle = binding.handle();
    // Receives between asking P for filter 0 and its completion (the
    // sample's check): nothing is wanted.
    if binding.packet_filter.load(Relaxed) == 0 {
        if can_pend {
            // SAFETY: <= DISPATCH_LEVEL (told by the flags); P's chain,
            // given to us, returned once.
            unsafe { NdisReturnNetBufferLists(handle, lists.as_ptr(), return_flags) };
        }
        return;
    }
    let virt = &mux.virt;
    let attached = virt.rundown.enter();
    let miniport = virt.miniport();
    let port = if attached { virt.port() } else { None };
    let mut back = Chain::new();
    let mut at = lists.as_ptr();
    while let Some(nbl) = NonNull::new(at) {
        // SAFETY: P's chain, ours for the call.
        at = unsafe { detach(nbl) };
        let mut keep = true;
        if attached {
            // SAFETY: the NBL just detached from P's chain, ours (lent or
            // given) for the call.
            let taken = port.is_some_and(|port| port.take_received(unsafe { nbl.as_ref() }));
            if taken {
                // The RNIC has it; P gets it back.
                // SAFETY: P's NBL, ours for the call.
                virt.stats.count(Direction::In, unsafe { nbl.as_ref() });
            } else if virt.power_state.load(Relaxed) == DEVICE_STATE_D0 && virt.nbls_out(1) {
                // SAFETY: P's NBL, ours until indicated below.
                virt.stats.count(Direction::In, unsafe { nbl.as_ref() });
                let up_flags = if can_pend {
                    flags
                } else {
                    flags | NDIS_RECEIVE_FLAGS_RESOURCES
                };
                // SAFETY: <= DISPATCH_LEVEL (told by the flags); V's
                // handle, valid under the rundown; one NBL, `Next` null.
                unsafe {
                    NdisMIndicateReceiveNetBufferLists(
                        miniport,
                        nbl.as_ptr(),
                        port_number,
                        1,
                        up_flags,
                    );
                };
                if can_pend {
                    // TCP/IP has it until MiniportReturnNetBufferLists.
                    keep = false;
                } else {
                    // Lent: back already.
                    virt.nbls_returned(1);
                }
            } else {
                // SAFETY: P's NBL, ours for the call.
                virt.stats.in_discard(unsafe { nbl.as_ref() });
            }
        }
        if keep {
            if can_pend {
                back.push(nbl);
            } else {
                // Relink P's chain as it came.
                // SAFETY: P's NBL, ours for the call.
                unsafe { (*nbl.as_ptr()).Next = at };
            }
        }
    }
    if attached {
        virt.rundown.leave();
    }
    if let Some(head) = back.head() {
        // SAFETY: <= DISPATCH_LEVEL (told by the flags); P's NBLs given to
        // us and kept by nobody, returned once.
        unsafe { NdisReturnNetBufferLists(handle, head.as_ptr(), return_flags) };
    }
}

/// V's `MiniportReturnNetBufferLists`: TCP/IP is done with NBLs V
/// indicated; they are P's.
///
/// # Safety
/// `lists` holds NBLs `receive` indicated up without the resources flag,
/// returned once.
pub unsafe fn return_lists(mux: &Mux, lists: NonNull<NET_BUFFER_LIST>, flags: ULONG) {
    // SAFETY: the chain is ours again.
    let count = unsafe { chain_len(lists.as_ptr()) };
    // SAFETY: <= DISPATCH_LEVEL (the return flags carry the same
    // dispatch bit); P's NBLs, returned once; the binding is open (V's
    // halt, which precedes the close, waits for these).
    unsafe { NdisReturnNetBufferLists(mux.binding.handle(), lists.as_ptr(), flags) };
    mux.virt.nbls_returned(count);
}

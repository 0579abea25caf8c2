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

// The C enum constants keep their C names (NdisRequestSetInformation).
#![allow(non_upper_case_globals)]

use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use ndis::{
    NDIS_HANDLE, NDIS_OID_REQUEST, NdisCancelOidRequest, NdisMOidRequestComplete,
    NdisRequestQueryInformation, NdisRequestQueryStatistics, NdisRequestSetInformation,
    OID_GEN_CURRENT_LOOKAHEAD, OID_GEN_CURRENT_PACKET_FILTER,
};
use ndkpi::{
    NDIS_STATUS, NDIS_STATUS_ADAPTER_NOT_READY, NDIS_STATUS_FAILURE, NDIS_STATUS_NOT_SUPPORTED,
    NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS, PVOID,
};

/// Phase: `MiniportOidRequest` is forwarding (has not returned).
const FORWARDING: u32 = 0;
/// Phase: it returned `NDIS_STATUS_PENDING`; P's completion completes V's
/// request.
const PENDED: u32 = 1;
/// Phase: P completed while `MiniportOidRequest` still ran; it returns the
/// status.
const DONE_INLINE: u32 = 2;

use crate::driver::binding::{OwnedRequest, new_request};
use crate::driver::mux::Mux;

/// One V's forwarding slot (the sample's `VELAN::Request`).
#[repr(C)]
pub struct ForwardSlot {
    /// The clone NDIS sees, first (see [`OwnedRequest`]); written by the
    /// forwarder while no request is forwarded, by NDIS while P has it.
    owned: UnsafeCell<OwnedRequest>,
    /// The pairing V belongs to.
    mux: *const Mux,
    /// V's NDIS handle.
    miniport: NDIS_HANDLE,
    /// V's request being forwarded, null when the slot is free.
    original: AtomicPtr<NDIS_OID_REQUEST>,
    /// [`FORWARDING`], [`PENDED`] or [`DONE_INLINE`] while forwarded.
    phase: AtomicU32,
    /// P's status of an inline completion.
    inline_status: AtomicI32,
    /// The `RequestId` of V's request while P has its clone (the clone
    /// carries it, so NDIS's cancel can be passed down), else 0.
    forwarded_id: AtomicUsize,
    /// The lookahead P last accepted.
    pub lookahead: AtomicU32,
}

impl core::fmt::Debug for ForwardSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ForwardSlot").finish_non_exhaustive()
    }
}

// SAFETY: `owned` is written only by the forwarder while `original` is
// null (NDIS's one-request-at-a-time rule) and read by P's completion
// before `original` is cleared; the
// handles are opaque tokens NDIS allows on any thread; the pairing is
// Sync and outlives V.
unsafe impl Send for ForwardSlot {}
// SAFETY: shared use: atomics, immutable handles and pairing pointer, and
// `owned`, whose writer (the forwarder, or NDIS while P has the clone) is
// one at a time by `original`'s compare-exchange.
unsafe impl Sync for ForwardSlot {}

impl ForwardSlot {
    /// A free slot for V (`miniport`) over `mux`.
    pub fn new(mux: &Mux, miniport: NDIS_HANDLE) -> Self {
        Self {
            owned: UnsafeCell::new(OwnedRequest {
                request: new_request(NdisRequestSetInformation, 0, ptr::null_mut(), 0),
                complete: forwarded_complete,
            }),
            mux: ptr::from_ref(mux),
            miniport,
            original: AtomicPtr::new(ptr::null_mut()),
            phase: AtomicU32::new(FORWARDING),
            inline_status: AtomicI32::new(NDIS_STATUS_SUCCESS),
            forwarded_id: AtomicUsize::new(0),
            lookahead: AtomicU32::new(mux.binding.lower.lookahead),
        }
    }

    /// Forwards `request` (a set or query) to P; returns P's status when P
    /// answered at once (or a failure when nothing was forwarded), else
    /// `NDIS_STATUS_PENDING` (V's request completes with
    /// `NdisMOidRequestComplete`).
    ///
    /// # Safety
    /// `request` is the request NDIS handed V's `MiniportOidRequest`, ours
    /// until completed; `self` stays at its address until no request is
    /// forwarded (V's halt comes after every OID request completed).
    pub unsafe fn forward(&self, request: NonNull<NDIS_OID_REQUEST>) -> NDIS_STATUS {
        // SAFETY: the pairing outlives V (see `new`).
        let mux = unsafe { &*self.mux };
        if mux.virt.deinitializing.load(Ordering::SeqCst) {
            return NDIS_STATUS_FAILURE;
        }
        if mux.virt.power_state.load(Ordering::SeqCst) != 1 || !mux.binding.is_powered() {
            return NDIS_STATUS_ADAPTER_NOT_READY;
        }
        // SAFETY: NDIS's request, ours (contract).
        let original = unsafe { request.as_ref() };
        let (oid, buffer, length) = match original.RequestType {
            NdisRequestQueryInformation | NdisRequestQueryStatistics => {
                // SAFETY: the live member of a query.
                let q = unsafe { original.DATA.QUERY_INFORMATION };
                (q.Oid, q.InformationBuffer, q.InformationBufferLength)
            }
            NdisRequestSetInformation => {
                // SAFETY: the live member of a set.
                let s = unsafe { original.DATA.SET_INFORMATION };
                (s.Oid, s.InformationBuffer, s.InformationBufferLength)
            }
            _ => return NDIS_STATUS_NOT_SUPPORTED,
        };
        if self
            .original
            .compare_exchange(
                ptr::null_mut(),
                request.as_ptr(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // NDIS sends one request at a time; a second one is a bug
            // of the caller's, refused rather than corrupting the first.
            return NDIS_STATUS_FAILURE;
        }
        self.phase.store(FORWARDING, Ordering::SeqCst);
        let mut clone = new_request(original.RequestType, oid, buffer, length);
        // V's cancel names V's request by this id; P's by the clone's.
        clone.RequestId = original.RequestId;
        self.forwarded_id
            .store(original.RequestId as usize, Ordering::Release);
        // `request` is the first field of the repr(C) OwnedRequest.
        let owned = self.owned.get();
        // SAFETY: the slot is ours (`original` was null and is now set), P
        // has no clone of ours outstanding.
        unsafe { owned.cast::<NDIS_OID_REQUEST>().write(clone) };
        let Some(owned) = NonNull::new(owned) else {
            return NDIS_STATUS_FAILURE;
        };
        // SAFETY: `owned` lives in the slot, untouched until completed.
        unsafe { mux.binding.issue(owned) };
        if self
            .phase
            .compare_exchange(FORWARDING, PENDED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return NDIS_STATUS_PENDING;
        }
        // Completed inline: the completion left the status and the slot to
        // this call.
        let status = self.inline_status.load(Ordering::SeqCst);
        self.original.store(ptr::null_mut(), Ordering::Release);
        status
    }
}

impl ForwardSlot {
    /// `MiniportCancelOidRequest` (`<= DISPATCH_LEVEL`): if V's request
    /// `request_id` is with P, P is asked to cancel the clone
    /// (`NdisCancelOidRequest`, the sample's `MPCancelOidRequest`); V's
    /// request then completes with the status P completes the clone with.
    /// Requests V answers itself never pend, so there is nothing else to
    /// cancel.
    pub fn cancel(&self, request_id: PVOID) {
        let id = request_id as usize;
        if id == 0 || self.forwarded_id.load(Ordering::Acquire) != id {
            return;
        }
        // SAFETY: the pairing outlives V (see `new`).
        let binding = unsafe { &*self.mux }.binding.handle();
        if binding.is_null() {
            return;
        }
        // SAFETY: <= DISPATCH_LEVEL; P's open binding handle; a cancel of
        // a request P already completed is no-op for NDIS.
        unsafe { NdisCancelOidRequest(binding, request_id) };
    }
}

/// Completion of a forwarded request (`<= DISPATCH_LEVEL`): the sample's
/// `PtCompleteForwardedRequest`.
///
/// # Safety
/// `request` is the `owned` field of a [`ForwardSlot`] with a request
/// forwarded.
unsafe fn forwarded_complete(request: NonNull<OwnedRequest>, status: NDIS_STATUS) {
    // SAFETY: `owned` is the first field of a repr(C) ForwardSlot.
    let slot = unsafe { request.cast::<ForwardSlot>().as_ref() };
    let Some(original) = NonNull::new(slot.original.load(Ordering::Acquire)) else {
        return;
    };
    // SAFETY: P is done with the clone; it is ours until the slot is free.
    let clone = unsafe { &(*slot.owned.get()).request };
    // SAFETY: V's request, ours until completed below.
    let original_ref = unsafe { &mut *original.as_ptr() };
    if original_ref.RequestType == NdisRequestSetInformation {
        // SAFETY: the clone copies the original's type: a set.
        let done = unsafe { clone.DATA.SET_INFORMATION };
        // SAFETY: V's request is a set (the branch's test): its live
        // member is SET_INFORMATION.
        let orig = unsafe { &mut original_ref.DATA.SET_INFORMATION };
        orig.BytesRead = done.BytesRead;
        orig.BytesNeeded = done.BytesNeeded;
        if status == NDIS_STATUS_SUCCESS
            && !done.InformationBuffer.is_null()
            && done.InformationBufferLength >= 4
        {
            // SAFETY: V's buffer of at least 4 bytes (checked), valid
            // until V's request completes.
            let value = unsafe { done.InformationBuffer.cast::<u32>().read_unaligned() };
            // SAFETY: the pairing outlives V, which outlives its
            // forwarded requests.
            let mux = unsafe { &*slot.mux };
            match done.Oid {
                OID_GEN_CURRENT_PACKET_FILTER => {
                    mux.virt.packet_filter.store(value, Ordering::Relaxed);
                    mux.binding.packet_filter.store(value, Ordering::Relaxed);
                }
                OID_GEN_CURRENT_LOOKAHEAD => slot.lookahead.store(value, Ordering::Relaxed),
                _ => {}
            }
        }
    } else {
        // SAFETY: the clone copies the original's type: a query.
        let done = unsafe { clone.DATA.QUERY_INFORMATION };
        // SAFETY: V's request is a query (only sets and queries are
        // forwarded): its live member is QUERY_INFORMATION.
        let orig = unsafe { &mut original_ref.DATA.QUERY_INFORMATION };
        orig.BytesWritten = done.BytesWritten;
        orig.BytesNeeded = done.BytesNeeded;
    }
    slot.forwarded_id.store(0, Ordering::Release);
    // Written before the phase moves, so `forward` finds it.
    slot.inline_status.store(status, Ordering::SeqCst);
    if slot
        .phase
        .compare_exchange(FORWARDING, DONE_INLINE, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        // `forward` has not returned: it returns the status itself.
        return;
    }
    slot.original.store(ptr::null_mut(), Ordering::Release);
    // SAFETY: <= DISPATCH_LEVEL; V's handle; V's request that its
    // MiniportOidRequest pended, completed once.
    unsafe { NdisMOidRequestComplete(slot.miniport, original.as_ptr(), status) };
}

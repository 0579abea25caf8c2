//! OID requests: the ones NDIS hands V ([`OidRequest`], with safe
//! [`Query`] and [`Set`] views of their buffers), the ones rsndk issues on
//! a binding to P ([`Requests`]: counted, each completed exactly once,
//! blocking or not), and forwarding one of V's to P ([`Forward`], the MUX
//! sample's `MPForwardOidRequest` / `PtCompleteForwardedRequest` at the
//! level of the requests themselves).

// The C enum constants keep their C names (NdisRequestSetInformation).
#![allow(non_upper_case_globals)]

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};

use ndis::{
    NDIS_DEFAULT_PORT_NUMBER, NDIS_NDK_STATISTICS_INFO, NDIS_OBJECT_HEADER,
    NDIS_OBJECT_TYPE_OID_REQUEST, NDIS_OID, NDIS_OID_REQUEST, NDIS_OID_REQUEST_DATA,
    NDIS_OID_REQUEST_QUERY_INFORMATION, NDIS_OID_REQUEST_REVISION_1,
    NDIS_OID_REQUEST_SET_INFORMATION, NDIS_REQUEST_TYPE, NDIS_SIZEOF_OID_REQUEST_REVISION_1,
    NDIS_STATISTICS_INFO, NDIS_STATUS_BUFFER_TOO_SHORT, NDIS_STATUS_CLOSING,
    NDIS_STATUS_INVALID_LENGTH, NdisCancelOidRequest, NdisMOidRequestComplete, NdisOidRequest,
    NdisRequestQueryInformation, NdisRequestQueryStatistics, NdisRequestSetInformation,
    SOCKADDR_INET,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_FAILURE, NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS, PVOID};

use core::net::SocketAddr;

use hwq::TryArc;
use provider::sockaddr::{to_sockaddr_in, to_sockaddr_in6};

use super::kernel;
use super::ndis::{AdapterHandle, BindingHandle};

/// Plain data: every byte of a value is initialised and any bytes make a
/// value, so its bytes can be copied out as they are.
///
/// # Safety
/// Only for types without padding or invariants (integers, and the NDIS
/// structures listed here, laid out by `#[repr(C)]` without gaps).
pub unsafe trait PlainData: Copy {}

// SAFETY: integers: no padding, every bit pattern valid.
unsafe impl PlainData for u8 {}
// SAFETY: as for u8.
unsafe impl PlainData for u16 {}
// SAFETY: as for u8.
unsafe impl PlainData for u32 {}
// SAFETY: as for u8.
unsafe impl PlainData for u64 {}
// SAFETY: two UCHARs and a USHORT: no padding.
unsafe impl PlainData for NDIS_OBJECT_HEADER {}
// SAFETY: a header, a ULONG of flags and 64-bit counters: the header's 4
// bytes and the flags' 4 bytes align the counters; no padding.
unsafe impl PlainData for NDIS_STATISTICS_INFO {}
// SAFETY: a header, a ULONG and 64-bit counters, laid out without gaps
// (crate ndis checks the sizes against the WDK's).
unsafe impl PlainData for NDIS_NDK_STATISTICS_INFO {}

/// The bytes of a plain-data value.
pub fn bytes_of<T: PlainData>(value: &T) -> &[u8] {
    // SAFETY: `T: PlainData`: every one of its `size_of::<T>()` bytes is
    // initialised; the slice borrows `value`.
    unsafe { core::slice::from_raw_parts(ptr::from_ref(value).cast::<u8>(), size_of::<T>()) }
}

/// The bytes of the Windows form of `addr` (`SOCKADDR_INET`), every byte
/// set (the IPv4 form's tail zero).
pub fn sockaddr_inet_bytes(addr: SocketAddr) -> [u8; size_of::<SOCKADDR_INET>()] {
    let value = match addr {
        SocketAddr::V4(v4) => SOCKADDR_INET::from(to_sockaddr_in(v4)),
        SocketAddr::V6(v6) => SOCKADDR_INET::from(to_sockaddr_in6(v6)),
    };
    // SAFETY: both `From` conversions initialise every byte (the IPv4 one
    // starts from a zeroed value, the IPv6 member is the whole union), and
    // the array has the union's size.
    unsafe { core::mem::transmute::<SOCKADDR_INET, [u8; size_of::<SOCKADDR_INET>()]>(value) }
}

/// The bytes of a slice of plain-data values.
pub fn slice_bytes<T: PlainData>(values: &[T]) -> &[u8] {
    // SAFETY: as `bytes_of`, for `values.len()` values in a row (a slice
    // has no gaps between its elements).
    unsafe { core::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }
}

/// An OID request NDIS handed V's `MiniportOidRequest`, exclusively the
/// driver's until it completes (returned, or completed through
/// [`Forward`]).
#[derive(Debug)]
pub struct OidRequest {
    request: NonNull<NDIS_OID_REQUEST>,
}

/// What an [`OidRequest`] asks.
#[derive(Debug)]
pub enum RequestKind<'a> {
    /// A query (`NdisRequestQueryInformation`/`QueryStatistics`).
    Query(Query<'a>),
    /// A set.
    Set(Set<'a>),
    /// Another type (never answered by V).
    Other,
}

impl OidRequest {
    /// The request of one `MiniportOidRequest` call.
    pub(in crate::driver) fn new(request: NonNull<NDIS_OID_REQUEST>) -> Self {
        Self { request }
    }

    /// The request's address; the value is used up (the request is
    /// handed on).
    fn into_raw(self) -> NonNull<NDIS_OID_REQUEST> {
        self.request
    }

    /// The request's view by type.
    pub fn kind(&mut self) -> RequestKind<'_> {
        // SAFETY: NDIS's request, exclusively ours until completed (the
        // value's invariant); `&mut self` makes this the only reference.
        let request = unsafe { &mut *self.request.as_ptr() };
        match request.RequestType {
            NdisRequestQueryInformation | NdisRequestQueryStatistics => {
                // SAFETY: for query requests the live member is
                // QUERY_INFORMATION.
                RequestKind::Query(Query(unsafe { &mut request.DATA.QUERY_INFORMATION }))
            }
            NdisRequestSetInformation => {
                // SAFETY: for set requests the live member is
                // SET_INFORMATION.
                RequestKind::Set(Set(unsafe { &mut request.DATA.SET_INFORMATION }))
            }
            _ => RequestKind::Other,
        }
    }
}

/// A query's fields and buffer.
#[derive(Debug)]
pub struct Query<'a>(&'a mut NDIS_OID_REQUEST_QUERY_INFORMATION);

impl Query<'_> {
    /// The OID.
    pub fn oid(&self) -> NDIS_OID {
        self.0.Oid
    }

    /// The buffer's bytes, if NDIS gave one.
    pub fn buffer(&mut self) -> Option<&mut [u8]> {
        let at = self.0.InformationBuffer.cast::<u8>();
        if at.is_null() {
            return None;
        }
        // SAFETY: NDIS's buffer of `InformationBufferLength` bytes, ours
        // until the request completes (non-paged: an OID buffer is).
        Some(unsafe {
            core::slice::from_raw_parts_mut(at, self.0.InformationBufferLength as usize)
        })
    }

    /// Records the bytes written and needed.
    pub fn set_counts(&mut self, written: u32, needed: u32) {
        self.0.BytesWritten = written;
        self.0.BytesNeeded = needed;
    }

    /// Copies `answer` into the buffer: `NDIS_STATUS_BUFFER_TOO_SHORT`
    /// (with the size needed) when it does not fit.
    pub fn answer(&mut self, answer: &[u8]) -> NDIS_STATUS {
        let Some(buffer) = self.buffer().and_then(|b| b.get_mut(..answer.len())) else {
            self.set_counts(0, answer.len() as u32);
            return NDIS_STATUS_BUFFER_TOO_SHORT;
        };
        buffer.copy_from_slice(answer);
        self.set_counts(answer.len() as u32, 0);
        NDIS_STATUS_SUCCESS
    }
}

/// A set's fields and value.
#[derive(Debug)]
pub struct Set<'a>(&'a mut NDIS_OID_REQUEST_SET_INFORMATION);

impl Set<'_> {
    /// The OID.
    pub fn oid(&self) -> NDIS_OID {
        self.0.Oid
    }

    /// The value's length.
    pub fn len(&self) -> u32 {
        self.0.InformationBufferLength
    }

    /// Records the bytes read.
    pub fn set_bytes_read(&mut self, read: u32) {
        self.0.BytesRead = read;
    }

    /// Records the bytes needed.
    pub fn set_bytes_needed(&mut self, needed: u32) {
        self.0.BytesNeeded = needed;
    }

    /// Reads a value of exactly `N` bytes (recorded as read), or
    /// `NDIS_STATUS_INVALID_LENGTH` with `N` as the bytes needed.
    pub fn value<const N: usize>(&mut self) -> Result<[u8; N], NDIS_STATUS> {
        if (self.0.InformationBufferLength as usize) < N || self.0.InformationBuffer.is_null() {
            self.0.BytesNeeded = N as u32;
            return Err(NDIS_STATUS_INVALID_LENGTH);
        }
        let mut out = [0u8; N];
        // SAFETY: NDIS's buffer holds at least N bytes (checked), ours
        // until the request completes.
        unsafe {
            ptr::copy_nonoverlapping(self.0.InformationBuffer.cast::<u8>(), out.as_mut_ptr(), N);
        };
        self.0.BytesRead = N as u32;
        Ok(out)
    }
}

/// A revision-1 query or set of `oid` over `length` bytes at `buffer`
/// (the sample's `PtRequestAdapterAsync` header and data).
fn new_request(
    request_type: NDIS_REQUEST_TYPE,
    oid: NDIS_OID,
    buffer: *mut c_void,
    length: u32,
) -> NDIS_OID_REQUEST {
    let data = if request_type == NdisRequestSetInformation {
        NDIS_OID_REQUEST_DATA {
            SET_INFORMATION: NDIS_OID_REQUEST_SET_INFORMATION {
                Oid: oid,
                InformationBuffer: buffer,
                InformationBufferLength: length,
                BytesRead: 0,
                BytesNeeded: 0,
            },
        }
    } else {
        NDIS_OID_REQUEST_DATA {
            QUERY_INFORMATION: NDIS_OID_REQUEST_QUERY_INFORMATION {
                Oid: oid,
                InformationBuffer: buffer,
                InformationBufferLength: length,
                BytesWritten: 0,
                BytesNeeded: 0,
            },
        }
    };
    NDIS_OID_REQUEST {
        Header: NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_OID_REQUEST,
            NDIS_OID_REQUEST_REVISION_1,
            NDIS_SIZEOF_OID_REQUEST_REVISION_1,
        ),
        RequestType: request_type,
        PortNumber: NDIS_DEFAULT_PORT_NUMBER,
        Timeout: 0,
        RequestId: ptr::null_mut(),
        RequestHandle: ptr::null_mut(),
        DATA: data,
        NdisReserved: [0; size_of::<[usize; ndis::NDIS_OID_REQUEST_NDIS_RESERVED_SIZE]>()],
        MiniportReserved: [0; 2 * size_of::<usize>()],
        SourceReserved: [0; 2 * size_of::<usize>()],
        SupportedRevision: 0,
        Reserved1: 0,
        Reserved2: 0,
        SwitchId: 0,
        VPortId: 0,
        Flags: 0,
    }
}

/// Called once when a request issued with [`Requests::issue`] is done,
/// with the request (still owned by the issuer) and its status.
type RequestComplete = unsafe fn(request: NonNull<OwnedRequest>, status: NDIS_STATUS);

/// An OID request rsndk issues on a binding: NDIS's request followed by
/// what to do when it completes (the sample's `MUX_NDIS_REQUEST` with its
/// `pCallback`). Every request on a binding is one of these (or starts
/// with one), which is how `ProtocolOidRequestComplete` finds `complete`.
#[repr(C)]
pub struct OwnedRequest {
    /// The request NDIS sees; first, so its address is this structure's.
    request: NDIS_OID_REQUEST,
    /// Completion routine.
    complete: RequestComplete,
}

impl core::fmt::Debug for OwnedRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OwnedRequest").finish_non_exhaustive()
    }
}

/// A request `ProtocolOidRequestComplete` names: one rsndk issued.
#[derive(Debug)]
pub struct CompletedRequest(NonNull<OwnedRequest>);

impl CompletedRequest {
    /// The request NDIS completed (`ProtocolOidRequestComplete`'s).
    pub(in crate::driver) fn new(request: NonNull<NDIS_OID_REQUEST>) -> Self {
        // Every request rsndk issues on a binding is an OwnedRequest, its
        // NDIS_OID_REQUEST first.
        Self(request.cast())
    }
}

impl CompletedRequest {
    /// The request's address; the value is used up.
    fn into_raw(self) -> NonNull<OwnedRequest> {
        self.0
    }
}

/// The binding's own blocking request (the sample's
/// `PtRequestAdapterSync`): one at a time, `PASSIVE_LEVEL`.
#[repr(C)]
struct SyncRequest {
    owned: OwnedRequest,
    done: AtomicBool,
    status: AtomicI32,
}

/// Completion of a [`SyncRequest`]: wakes the waiter.
///
/// # Safety
/// `request` is the `owned` field of a live `SyncRequest`.
unsafe fn sync_request_complete(request: NonNull<OwnedRequest>, status: NDIS_STATUS) {
    // SAFETY: per contract, `owned` is the first field of a repr(C)
    // SyncRequest, so the addresses coincide; the waiter keeps it alive
    // until `done` is seen.
    let sync = unsafe { request.cast::<SyncRequest>().as_ref() };
    sync.status.store(status, Ordering::Release);
    sync.done.store(true, Ordering::Release);
}

/// The OID requests of one binding: issued on its handle, counted until
/// each completed, refused with `NDIS_STATUS_CLOSING` once the close began
/// (the sample's `PtRequestAdapterSync`/`Async` and `PtRequestComplete`).
/// It stays at its address while any request is out (the binding's owner
/// keeps it until the close, which waits for them).
pub struct Requests {
    /// OID requests issued and not yet completed.
    outstanding: AtomicU32,
    /// The close began: requests are refused.
    closing: AtomicBool,
    /// The binding's blocking request.
    sync: UnsafeCell<SyncRequest>,
    /// `sync` is in use.
    sync_busy: AtomicBool,
}

impl core::fmt::Debug for Requests {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Requests")
            .field("outstanding", &self.outstanding.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// SAFETY: `sync` is used by one thread at a time (`sync_busy`) and by
// NDIS's completion, which that thread waits for; the rest is atomic.
unsafe impl Send for Requests {}
// SAFETY: as for Send: shared use goes through atomics and `sync`, which
// `sync_busy` gives to one thread at a time.
unsafe impl Sync for Requests {}

impl Default for Requests {
    fn default() -> Self {
        Self::new()
    }
}

impl Requests {
    /// No request out.
    pub fn new() -> Self {
        Self {
            outstanding: AtomicU32::new(0),
            closing: AtomicBool::new(false),
            sync: UnsafeCell::new(SyncRequest {
                owned: OwnedRequest {
                    request: new_request(NdisRequestSetInformation, 0, ptr::null_mut(), 0),
                    complete: sync_request_complete,
                },
                done: AtomicBool::new(false),
                status: AtomicI32::new(NDIS_STATUS_SUCCESS),
            }),
            sync_busy: AtomicBool::new(false),
        }
    }

    /// Issues `request` on `binding` (`<= DISPATCH_LEVEL`); its `complete`
    /// runs exactly once: here if `NdisOidRequest` did not pend (or the
    /// close began: `NDIS_STATUS_CLOSING`), else from
    /// `ProtocolOidRequestComplete` ([`Requests::complete`]).
    ///
    /// # Safety
    /// `request` stays valid and untouched by the caller until its
    /// `complete` ran; `binding` is this value's binding, open.
    unsafe fn issue(&self, binding: Option<BindingHandle>, request: NonNull<OwnedRequest>) {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let status = match binding {
            Some(binding) if !self.closing.load(Ordering::SeqCst) => {
                // `request` is the first field of the repr(C) OwnedRequest.
                let oid_request = request.as_ptr().cast::<NDIS_OID_REQUEST>();
                // SAFETY: the open binding (the close waits for
                // `outstanding`); the request lives until completed (this
                // function's contract).
                unsafe { NdisOidRequest(binding.raw(), oid_request) }
            }
            _ => NDIS_STATUS_CLOSING,
        };
        if status != NDIS_STATUS_PENDING {
            self.complete_owned(request, status);
        }
    }

    /// `ProtocolOidRequestComplete` for a request of this binding's.
    pub fn complete(&self, request: CompletedRequest, status: NDIS_STATUS) {
        self.complete_owned(request.into_raw(), status);
    }

    fn complete_owned(&self, request: NonNull<OwnedRequest>, status: NDIS_STATUS) {
        // SAFETY: a live OwnedRequest issued on this binding and not yet
        // completed (NDIS completes each pended request once; `issue`
        // completes the others itself); its routine is read before it
        // runs, since it may free the request.
        let complete = unsafe { (*request.as_ptr()).complete };
        // SAFETY: the request's own routine, called once.
        unsafe { complete(request, status) };
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
    }

    /// Issues a set or query on `binding` and waits for it
    /// (`PASSIVE_LEVEL`): the sample's `PtRequestAdapterSync`. `buffer`
    /// is the set's value or the query's room.
    pub fn sync(
        &self,
        binding: Option<BindingHandle>,
        request_type: NDIS_REQUEST_TYPE,
        oid: NDIS_OID,
        buffer: &mut [u8],
    ) -> NDIS_STATUS {
        while self
            .sync_busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            kernel::wait_briefly();
        }
        let sync = self.sync.get();
        let (data, length) = if buffer.is_empty() {
            (ptr::null_mut(), 0)
        } else {
            (buffer.as_mut_ptr().cast(), buffer.len() as u32)
        };
        // SAFETY: `sync_busy` makes this thread the slot's only user; no
        // request from it is outstanding (the last user waited for `done`).
        unsafe {
            sync.write(SyncRequest {
                owned: OwnedRequest {
                    request: new_request(request_type, oid, data, length),
                    complete: sync_request_complete,
                },
                done: AtomicBool::new(false),
                status: AtomicI32::new(NDIS_STATUS_PENDING),
            });
        }
        // `owned` is the first field of the slot, which outlives the
        // request (waited for below).
        let owned = NonNull::from(self.sync_slot()).cast::<OwnedRequest>();
        // SAFETY: the slot (and `buffer`, borrowed for this call) stays
        // untouched until `done` (waited below).
        unsafe { self.issue(binding, owned) };
        let slot = self.sync_slot();
        while !slot.done.load(Ordering::Acquire) {
            kernel::wait_briefly();
        }
        // `status` is atomic and was written before `done`.
        let status = slot.status.load(Ordering::Acquire);
        self.sync_busy.store(false, Ordering::Release);
        status
    }

    /// The blocking request's slot, for its atomics.
    fn sync_slot(&self) -> &SyncRequest {
        // SAFETY: the slot lives in `self`; shared access only reads its
        // atomics and hands its address to NDIS (whose writes are to the
        // request, which this reference does not read).
        unsafe { &*self.sync.get() }
    }

    /// Refuses requests from now on (the close began).
    pub fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    /// Requests out now.
    pub fn outstanding(&self) -> u32 {
        self.outstanding.load(Ordering::SeqCst)
    }
}

/// Forwarding phase: `MiniportOidRequest` is forwarding (has not
/// returned).
const FORWARDING: u32 = 0;
/// Phase: it returned `NDIS_STATUS_PENDING`; P's completion completes V's
/// request.
const PENDED: u32 = 1;
/// Phase: P completed while `MiniportOidRequest` still ran; it returns the
/// status.
const DONE_INLINE: u32 = 2;

/// What P's answer to a forwarded set says, for the forwarder's records.
#[derive(Clone, Copy, Debug)]
pub struct Accepted {
    /// The OID.
    pub oid: NDIS_OID,
    /// The first 4 bytes of the value, when the set succeeded and had
    /// them.
    pub value: Option<u32>,
}

/// Who forwards: learns what P accepted.
pub trait ForwardOwner: Send + Sync {
    /// P completed a forwarded set (`<= DISPATCH_LEVEL`), before V's
    /// request completes.
    fn accepted(&self, accepted: Accepted);
}

/// One V's forwarding slot (the sample's `VELAN::Request`): the clone of
/// V's request that goes to P, with V's request kept until P completes
/// the clone. NDIS hands a miniport one OID request at a time, so one slot
/// serves V. It stays at its address while a request is forwarded (V's
/// halt comes after every OID request completed).
#[repr(C)]
pub struct Forward<C: ForwardOwner> {
    /// The clone NDIS sees, first (see [`OwnedRequest`]); written by the
    /// forwarder while no request is forwarded, by NDIS while P has it.
    owned: UnsafeCell<OwnedRequest>,
    /// V's handle.
    adapter: AdapterHandle,
    /// V's request being forwarded, null when the slot is free.
    original: AtomicPtr<NDIS_OID_REQUEST>,
    /// [`FORWARDING`], [`PENDED`] or [`DONE_INLINE`] while forwarded.
    phase: AtomicU32,
    /// P's status of an inline completion.
    inline_status: AtomicI32,
    /// The `RequestId` of V's request while P has its clone (the clone
    /// carries it, so NDIS's cancel can be passed down), else 0.
    forwarded_id: AtomicPtr<c_void>,
    /// Told what P accepted.
    owner: TryArc<C>,
}

impl<C: ForwardOwner> core::fmt::Debug for Forward<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Forward").finish_non_exhaustive()
    }
}

// SAFETY: `owned` is written only by the forwarder while `original` is
// null (NDIS's one-request-at-a-time rule) and read by P's completion
// before `original` is cleared; the handle is an opaque token; the rest
// is atomic.
unsafe impl<C: ForwardOwner> Send for Forward<C> {}
// SAFETY: shared use: atomics, the immutable handle, and `owned`, whose
// writer (the forwarder, or NDIS while P has the clone) is one at a time
// by `original`'s compare-exchange.
unsafe impl<C: ForwardOwner> Sync for Forward<C> {}

impl<C: ForwardOwner> Forward<C> {
    /// A free slot for V (`adapter`), reporting to `owner`.
    pub fn new(adapter: AdapterHandle, owner: TryArc<C>) -> Self {
        Self {
            owned: UnsafeCell::new(OwnedRequest {
                request: new_request(NdisRequestSetInformation, 0, ptr::null_mut(), 0),
                complete: forwarded_complete::<C>,
            }),
            adapter,
            original: AtomicPtr::new(ptr::null_mut()),
            phase: AtomicU32::new(FORWARDING),
            inline_status: AtomicI32::new(NDIS_STATUS_SUCCESS),
            forwarded_id: AtomicPtr::new(ptr::null_mut()),
            owner,
        }
    }

    /// Forwards V's `request` (a set or query) down `binding` through
    /// `requests`; returns P's status when P answered at once (or a
    /// failure when nothing was forwarded), else `NDIS_STATUS_PENDING`
    /// (V's request completes with `NdisMOidRequestComplete`). The owner
    /// learns what P accepted of a set, before V's request completes.
    pub fn forward(
        &self,
        request: OidRequest,
        binding: Option<BindingHandle>,
        requests: &Requests,
    ) -> NDIS_STATUS {
        let request = request.into_raw();
        // SAFETY: NDIS's request, ours until completed (OidRequest's
        // invariant, handed on here).
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
            _ => return ndkpi::NDIS_STATUS_NOT_SUPPORTED,
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
            // NDIS sends one request at a time; a second one is a bug of
            // the caller's, refused rather than corrupting the first.
            return NDIS_STATUS_FAILURE;
        }
        self.phase.store(FORWARDING, Ordering::SeqCst);
        let mut clone = new_request(original.RequestType, oid, buffer, length);
        // V's cancel names V's request by this id; P's by the clone's.
        clone.RequestId = original.RequestId;
        self.forwarded_id
            .store(original.RequestId, Ordering::Release);
        // `request` is the first field of the repr(C) OwnedRequest.
        let owned = self.owned.get();
        // SAFETY: the slot is ours (`original` was null and is now set), P
        // has no clone of ours outstanding.
        unsafe { owned.cast::<NDIS_OID_REQUEST>().write(clone) };
        let Some(owned) = NonNull::new(owned) else {
            return NDIS_STATUS_FAILURE;
        };
        // SAFETY: `owned` lives in the slot, untouched until completed;
        // `binding` is the one `requests` belongs to.
        unsafe { requests.issue(binding, owned) };
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

    /// `MiniportCancelOidRequest` (`<= DISPATCH_LEVEL`): if V's request
    /// `request_id` is with P, P (`binding`) is asked to cancel the clone
    /// (`NdisCancelOidRequest`, the sample's `MPCancelOidRequest`); V's
    /// request then completes with the status P completes the clone with.
    pub fn cancel(&self, request_id: PVOID, binding: Option<BindingHandle>) {
        if request_id.is_null() || self.forwarded_id.load(Ordering::Acquire) != request_id {
            return;
        }
        let Some(binding) = binding else {
            return;
        };
        // SAFETY: <= DISPATCH_LEVEL; P's open binding handle (the clone is
        // out on it, and the close waits for requests); a cancel of a
        // request P already completed is a no-op for NDIS.
        unsafe { NdisCancelOidRequest(binding.raw(), request_id) };
    }
}

/// Completion of a forwarded request (`<= DISPATCH_LEVEL`): the sample's
/// `PtCompleteForwardedRequest`.
///
/// # Safety
/// `request` is the `owned` field of a [`Forward`] with a request
/// forwarded.
unsafe fn forwarded_complete<C: ForwardOwner>(request: NonNull<OwnedRequest>, status: NDIS_STATUS) {
    // SAFETY: `owned` is the first field of a repr(C) Forward<C> (this
    // routine is only stored in a Forward<C>'s request).
    let slot = unsafe { request.cast::<Forward<C>>().as_ref() };
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
        // SAFETY: V's request is a set (the branch's test): its live member
        // is SET_INFORMATION.
        let orig = unsafe { &mut original_ref.DATA.SET_INFORMATION };
        orig.BytesRead = done.BytesRead;
        orig.BytesNeeded = done.BytesNeeded;
        let value = (status == NDIS_STATUS_SUCCESS
            && !done.InformationBuffer.is_null()
            && done.InformationBufferLength >= 4)
            .then(|| {
                // SAFETY: V's buffer of at least 4 bytes (checked), valid
                // until V's request completes.
                unsafe { done.InformationBuffer.cast::<u32>().read_unaligned() }
            });
        slot.owner.accepted(Accepted {
            oid: done.Oid,
            value,
        });
    } else {
        // SAFETY: the clone copies the original's type: a query.
        let done = unsafe { clone.DATA.QUERY_INFORMATION };
        // SAFETY: V's request is a query (only sets and queries are
        // forwarded): its live member is QUERY_INFORMATION.
        let orig = unsafe { &mut original_ref.DATA.QUERY_INFORMATION };
        orig.BytesWritten = done.BytesWritten;
        orig.BytesNeeded = done.BytesNeeded;
    }
    slot.forwarded_id.store(ptr::null_mut(), Ordering::Release);
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
    unsafe { NdisMOidRequestComplete(slot.adapter.raw(), original.as_ptr(), status) };
}

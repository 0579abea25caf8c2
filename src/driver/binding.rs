//! The protocol edge's open on one NIC (P): what `ProtocolBindAdapterEx`
//! learns about P, the binding handle, the binding's own pause state, the
//! accounting of everything sent down and every OID request issued on it,
//! and the close. One job: P as seen from above; nothing here knows the
//! virtual miniport (V) built over it ([`super::mux`] pairs the two).
//!
//! The sequences are the MUX sample's (`network/ndis/mux/driver/60`,
//! `protocol.c`): `PtBindAdapter` (open, waiting for
//! `PtOpenAdapterComplete` when the open pends), `PtPNPHandler`
//! (`NetEventPause` waits until every send down has completed,
//! `NetEventRestart` runs again), `PtRequestAdapterSync`/`Async` and
//! `PtRequestComplete` (requests counted, refused with
//! `NDIS_STATUS_CLOSING` once the close began), `PtCloseAdapter` (packet
//! filter 0 and an empty multicast list, wait for requests, close, wait for
//! `PtCloseAdapterComplete`).
//!
//! Sends: every NBL handed to `NdisSendNetBufferLists` on the binding
//! (TCP/IP's through V and the L2 port's own) is counted from the moment
//! it is accepted until `ProtocolSendNetBufferListsComplete` gives it
//! back; a send is accepted only while the binding runs. The count and the
//! state are separate atomics ordered `SeqCst`: a sender adds first and
//! then looks at the state, the pauser sets the state first and then looks
//! at the count, so one of the two always sees the other.

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use ndis::{
    MediaConnectStateConnected, NDIS_BIND_PARAMETERS, NDIS_DEFAULT_PORT_NUMBER, NDIS_HANDLE,
    NDIS_LINK_STATE, NDIS_MEDIA_CONNECT_STATE, NDIS_MEDIA_DUPLEX_STATE, NDIS_MEDIUM,
    NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_OID_REQUEST, NDIS_OID, NDIS_OID_REQUEST,
    NDIS_OID_REQUEST_DATA, NDIS_OID_REQUEST_QUERY_INFORMATION, NDIS_OID_REQUEST_REVISION_1,
    NDIS_OID_REQUEST_SET_INFORMATION, NDIS_OPEN_PARAMETERS, NDIS_PHYSICAL_MEDIUM,
    NDIS_REQUEST_TYPE, NDIS_SEND_FLAGS_DISPATCH_LEVEL, NDIS_SIZEOF_OID_REQUEST_REVISION_1,
    NDIS_STATUS_CLOSING, NDIS_STRING, NET_BUFFER_LIST, NET_IF_ACCESS_TYPE, NET_IF_CONNECTION_TYPE,
    NET_IF_DIRECTION_TYPE, NET_IFINDEX, NET_IFTYPE, NdisCloseAdapterEx, NdisMedium802_3,
    NdisOidRequest, NdisOpenAdapterEx, NdisRequestSetInformation, NdisSendNetBufferLists,
    OID_802_3_MULTICAST_LIST, OID_GEN_CURRENT_PACKET_FILTER, UINT,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS};

use super::log::log_error;

/// Binding state: no sends accepted; the state after the open and after
/// `NetEventPause` (the sample's `MuxAdapterBindingPaused`).
const PAUSED: u32 = 0;
/// Binding state: `NetEventPause` is waiting for sends to complete.
const PAUSING: u32 = 1;
/// Binding state: sends accepted (`NetEventRestart`).
const RUNNING: u32 = 2;

/// What P is, from `NDIS_BIND_PARAMETERS` (revision 1 fields; later
/// revisions only append). Immutable after the bind.
#[derive(Clone, Copy, Debug)]
pub struct LowerInfo {
    /// P's current MAC address: V's too.
    pub mac: [u8; 6],
    /// P's MTU (Ethernet payload bytes).
    pub mtu: u32,
    /// Largest send link speed, bits/s.
    pub max_xmit_speed: u64,
    /// Largest receive link speed, bits/s.
    pub max_rcv_speed: u64,
    /// P's lookahead.
    pub lookahead: u32,
    /// `NDIS_PACKET_TYPE_*` P accepts.
    pub supported_filters: u32,
    /// Longest multicast list P takes.
    pub max_multicast: u32,
    /// P's physical medium.
    pub physical_medium: NDIS_PHYSICAL_MEDIUM,
    /// Interface access type.
    pub access_type: NET_IF_ACCESS_TYPE,
    /// Interface direction.
    pub direction_type: NET_IF_DIRECTION_TYPE,
    /// Interface connection type.
    pub connection_type: NET_IF_CONNECTION_TYPE,
    /// IANA interface type.
    pub if_type: NET_IFTYPE,
    /// P's interface index (the lower layer of V's `ifStack` entry).
    pub bound_if_index: NET_IFINDEX,
}

impl LowerInfo {
    /// The facts of `params`; `None` unless P is Ethernet with a 6-byte
    /// address (the sample refuses other address lengths the same way).
    pub fn from_bind_parameters(params: &NDIS_BIND_PARAMETERS) -> Option<Self> {
        if params.MediaType != NdisMedium802_3 || params.MacAddressLength != 6 {
            return None;
        }
        let mut mac = [0u8; 6];
        mac.copy_from_slice(params.CurrentMacAddress.get(..6)?);
        Some(Self {
            mac,
            mtu: params.MtuSize,
            max_xmit_speed: params.MaxXmitLinkSpeed,
            max_rcv_speed: params.MaxRcvLinkSpeed,
            lookahead: params.LookaheadSize,
            supported_filters: params.SupportedPacketFilters,
            max_multicast: params.MaxMulticastListSize,
            physical_medium: params.PhysicalMediumType,
            access_type: params.AccessType,
            direction_type: params.DirectionType,
            connection_type: params.ConnectionType,
            if_type: params.IfType,
            bound_if_index: params.BoundIfIndex,
        })
    }
}

/// P's last known link state: from the bind parameters, then from each
/// `NDIS_STATUS_LINK_STATE` (the sample's `LastIndicatedLinkState`). Each
/// field is atomic; a reader racing an update may mix old and new fields,
/// which the next indication corrects.
#[derive(Debug)]
pub struct LinkState {
    connect: AtomicI32,
    duplex: AtomicI32,
    xmit_speed: AtomicU64,
    rcv_speed: AtomicU64,
}

impl LinkState {
    fn new(params: &NDIS_BIND_PARAMETERS) -> Self {
        Self {
            connect: AtomicI32::new(params.MediaConnectState),
            duplex: AtomicI32::new(params.MediaDuplexState),
            xmit_speed: AtomicU64::new(params.XmitLinkSpeed),
            rcv_speed: AtomicU64::new(params.RcvLinkSpeed),
        }
    }

    /// Records an indicated state.
    pub fn update(&self, state: &NDIS_LINK_STATE) {
        self.connect
            .store(state.MediaConnectState, Ordering::Relaxed);
        self.duplex.store(state.MediaDuplexState, Ordering::Relaxed);
        self.xmit_speed
            .store(state.XmitLinkSpeed, Ordering::Relaxed);
        self.rcv_speed.store(state.RcvLinkSpeed, Ordering::Relaxed);
    }

    /// The state as an `NDIS_LINK_STATE`.
    pub fn get(&self) -> NDIS_LINK_STATE {
        NDIS_LINK_STATE::new(
            self.connect_state(),
            self.duplex_state(),
            self.xmit_speed(),
            self.rcv_speed(),
        )
    }

    /// Media connect state.
    pub fn connect_state(&self) -> NDIS_MEDIA_CONNECT_STATE {
        self.connect.load(Ordering::Relaxed)
    }

    /// Whether the media is connected.
    pub fn is_up(&self) -> bool {
        self.connect_state() == MediaConnectStateConnected
    }

    /// Media duplex state.
    pub fn duplex_state(&self) -> NDIS_MEDIA_DUPLEX_STATE {
        self.duplex.load(Ordering::Relaxed)
    }

    /// Current send speed, bits/s.
    pub fn xmit_speed(&self) -> u64 {
        self.xmit_speed.load(Ordering::Relaxed)
    }

    /// Current receive speed, bits/s.
    pub fn rcv_speed(&self) -> u64 {
        self.rcv_speed.load(Ordering::Relaxed)
    }
}

/// Called once when a request issued with [`Binding::issue`] is done,
/// with the request (still owned by the issuer) and its status.
pub type RequestComplete = unsafe fn(request: NonNull<OwnedRequest>, status: NDIS_STATUS);

/// An OID request rsndk issues on the binding: NDIS's request followed by
/// what to do when it completes (the sample's `MUX_NDIS_REQUEST` with its
/// `pCallback`). Every request on the binding is one of these (or starts
/// with one), which is how `ProtocolOidRequestComplete` finds `complete`.
#[repr(C)]
pub struct OwnedRequest {
    /// The request NDIS sees; first, so its address is this structure's.
    pub request: NDIS_OID_REQUEST,
    /// Completion routine.
    pub complete: RequestComplete,
}

impl core::fmt::Debug for OwnedRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OwnedRequest").finish_non_exhaustive()
    }
}

/// A revision-1 query or set of `oid` over `length` bytes at `buffer`
/// (the sample's `PtRequestAdapterAsync` header and data).
pub fn new_request(
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

/// The open on P.
pub struct Binding {
    /// NDIS's binding handle, written by `NdisOpenAdapterEx`.
    handle: AtomicPtr<c_void>,
    /// `ProtocolOpenAdapterCompleteEx` ran.
    open_done: AtomicBool,
    /// Its status.
    open_status: AtomicI32,
    /// `ProtocolCloseAdapterCompleteEx` ran.
    close_done: AtomicBool,
    /// What P is.
    pub lower: LowerInfo,
    /// P's link.
    pub link: LinkState,
    /// [`PAUSED`], [`PAUSING`] or [`RUNNING`].
    state: AtomicU32,
    /// NBLs sent down and not yet completed (every sender's).
    sends: AtomicU32,
    /// Of those, the L2 port's.
    own_sends: AtomicU32,
    /// OID requests issued and not yet completed.
    requests: AtomicU32,
    /// The close began: requests are refused.
    closing: AtomicBool,
    /// The packet filter P last accepted (the sample's
    /// `pAdapt->PacketFilter`); 0 means nothing is to be received.
    pub packet_filter: AtomicU32,
    /// P's device power state (`NetEventSetPower`).
    power_state: AtomicI32,
    /// The binding's blocking request.
    sync: UnsafeCell<SyncRequest>,
    /// `sync` is in use.
    sync_busy: AtomicBool,
}

impl core::fmt::Debug for Binding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Binding")
            .field("lower", &self.lower)
            .field("state", &self.state.load(Ordering::Relaxed))
            .field("sends", &self.sends.load(Ordering::Relaxed))
            .field("requests", &self.requests.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// SAFETY: the binding handle is an opaque token NDIS allows on any thread;
// everything mutable is atomic, and `sync` is used by one thread at a time
// (`sync_busy`) and by NDIS's completion, which the user waits for.
unsafe impl Send for Binding {}
// SAFETY: shared use goes through atomics, the immutable lower facts, and
// `sync`, which `sync_busy` gives to one thread at a time.
unsafe impl Sync for Binding {}

/// `NdisDeviceStateD0`.
const DEVICE_STATE_D0: i32 = 1;

impl Binding {
    /// A binding to the P `params` describes, not open yet; `None` if P is
    /// not an Ethernet NIC with a 6-byte address.
    pub fn new(params: &NDIS_BIND_PARAMETERS) -> Option<Self> {
        let lower = LowerInfo::from_bind_parameters(params)?;
        Some(Self {
            handle: AtomicPtr::new(ptr::null_mut()),
            open_done: AtomicBool::new(false),
            open_status: AtomicI32::new(NDIS_STATUS_PENDING),
            close_done: AtomicBool::new(false),
            lower,
            link: LinkState::new(params),
            state: AtomicU32::new(PAUSED),
            sends: AtomicU32::new(0),
            own_sends: AtomicU32::new(0),
            requests: AtomicU32::new(0),
            closing: AtomicBool::new(false),
            packet_filter: AtomicU32::new(0),
            power_state: AtomicI32::new(DEVICE_STATE_D0),
            sync: UnsafeCell::new(SyncRequest {
                owned: OwnedRequest {
                    request: new_request(NdisRequestSetInformation, 0, ptr::null_mut(), 0),
                    complete: sync_request_complete,
                },
                done: AtomicBool::new(false),
                status: AtomicI32::new(NDIS_STATUS_SUCCESS),
            }),
            sync_busy: AtomicBool::new(false),
        })
    }

    /// NDIS's binding handle (null before the open and after the close).
    pub fn handle(&self) -> NDIS_HANDLE {
        self.handle.load(Ordering::Acquire)
    }

    /// P's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        self.lower.mac
    }

    /// P's MTU.
    pub fn mtu(&self) -> u32 {
        self.lower.mtu
    }

    /// Opens P (`ProtocolBindAdapterEx`, `PASSIVE_LEVEL`): the sample's
    /// `NdisOpenAdapterEx` and, when it pends, the wait for
    /// `ProtocolOpenAdapterCompleteEx`. `context` is the protocol binding
    /// context NDIS will pass back (the binding's owner, which holds this
    /// binding at a fixed address until the close completed).
    pub fn open(
        &self,
        protocol: NDIS_HANDLE,
        context: NDIS_HANDLE,
        bind_context: NDIS_HANDLE,
        adapter_name: *mut NDIS_STRING,
    ) -> NDIS_STATUS {
        let mut medium: [NDIS_MEDIUM; 1] = [NdisMedium802_3];
        let mut selected: UINT = 0;
        // No frame type array: every frame type (the sample's choice).
        let mut params = NDIS_OPEN_PARAMETERS::new(
            adapter_name,
            medium.as_mut_ptr(),
            1,
            &raw mut selected,
            ptr::null_mut(),
            0,
        );
        // SAFETY: PASSIVE_LEVEL inside ProtocolBindAdapterEx with NDIS's
        // bind context; the parameters and the medium array live across
        // the call (NDIS reads them before returning, even when the open
        // pends); the handle slot lives in `self`, which stays put until
        // the close completed (this function's contract).
        let status = unsafe {
            NdisOpenAdapterEx(
                protocol,
                context,
                &raw mut params,
                bind_context,
                self.handle.as_ptr(),
            )
        };
        if status != NDIS_STATUS_PENDING {
            return status;
        }
        while !self.open_done.load(Ordering::Acquire) {
            super::platform_wait();
        }
        self.open_status.load(Ordering::Acquire)
    }

    /// `ProtocolOpenAdapterCompleteEx` (`PASSIVE_LEVEL`).
    pub fn open_complete(&self, status: NDIS_STATUS) {
        self.open_status.store(status, Ordering::Release);
        self.open_done.store(true, Ordering::Release);
    }

    /// `ProtocolCloseAdapterCompleteEx` (`PASSIVE_LEVEL`).
    pub fn close_complete(&self) {
        self.close_done.store(true, Ordering::Release);
    }

    /// Closes P (`PASSIVE_LEVEL`; the binding is paused and nothing sends
    /// on it any more): the sample's `PtCloseAdapter`.
    pub fn close(&self) {
        let mut filter: u32 = 0;
        let status = self.request_sync(
            NdisRequestSetInformation,
            OID_GEN_CURRENT_PACKET_FILTER,
            (&raw mut filter).cast(),
            4,
        );
        if status != NDIS_STATUS_SUCCESS {
            log_error!(
                "rsndk: clearing P's packet filter failed: {:#010x}",
                status as u32
            );
        }
        let status = self.request_sync(
            NdisRequestSetInformation,
            OID_802_3_MULTICAST_LIST,
            ptr::null_mut(),
            0,
        );
        if status != NDIS_STATUS_SUCCESS {
            log_error!(
                "rsndk: clearing P's multicast list failed: {:#010x}",
                status as u32
            );
        }
        self.closing.store(true, Ordering::SeqCst);
        while self.requests.load(Ordering::SeqCst) != 0 {
            super::platform_wait();
        }
        while self.sends.load(Ordering::SeqCst) != 0 {
            super::platform_wait();
        }
        // SAFETY: PASSIVE_LEVEL; the handle NdisOpenAdapterEx gave, closed
        // once; no request or send is outstanding on it (waited above).
        let status = unsafe { NdisCloseAdapterEx(self.handle()) };
        if status == NDIS_STATUS_PENDING {
            while !self.close_done.load(Ordering::Acquire) {
                super::platform_wait();
            }
        } else if status != NDIS_STATUS_SUCCESS {
            log_error!("rsndk: NdisCloseAdapterEx failed: {:#010x}", status as u32);
        }
        self.handle.store(ptr::null_mut(), Ordering::Release);
    }

    // -----------------------------------------------------------------
    // Pause and restart (ProtocolNetPnPEvent).

    /// `NetEventPause` (`PASSIVE_LEVEL`): stop taking sends and wait until
    /// every send down has completed.
    pub fn pause(&self) {
        self.state.store(PAUSING, Ordering::SeqCst);
        self.wait_sends();
        self.state.store(PAUSED, Ordering::SeqCst);
    }

    /// `NetEventRestart`: take sends again.
    pub fn restart(&self) {
        self.state.store(RUNNING, Ordering::SeqCst);
    }

    /// `NetEventSetPower` (`PASSIVE_LEVEL`): record P's power state; going
    /// to low power, wait for sends in flight (the sample waits for its
    /// virtual miniports' I/O).
    pub fn set_power(&self, state: i32) {
        self.power_state.store(state, Ordering::SeqCst);
        if state > DEVICE_STATE_D0 {
            self.wait_sends();
        }
    }

    /// Whether P is in D0.
    pub fn is_powered(&self) -> bool {
        self.power_state.load(Ordering::SeqCst) <= DEVICE_STATE_D0
    }

    fn wait_sends(&self) {
        while self.sends.load(Ordering::SeqCst) != 0 {
            super::platform_wait();
        }
    }

    // -----------------------------------------------------------------
    // Sends.

    /// Counts `count` NBLs about to be sent down; `false` (nothing
    /// counted) unless the binding runs (any IRQL `<= DISPATCH_LEVEL`).
    pub fn enter_sends(&self, count: u32) -> bool {
        self.sends.fetch_add(count, Ordering::SeqCst);
        if self.state.load(Ordering::SeqCst) != RUNNING {
            self.sends.fetch_sub(count, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// `count` sends counted by [`Binding::enter_sends`] completed.
    pub fn sends_completed(&self, count: u32) {
        self.sends.fetch_sub(count, Ordering::SeqCst);
    }

    /// Sends one NBL of the L2 port's pool (its `Next` null) down to P
    /// (`<= DISPATCH_LEVEL`); `false` while the binding does not run (the
    /// port keeps the NBL). Its completion reaches the port through
    /// `ProtocolSendNetBufferListsComplete` ([`super::passthrough`]).
    pub fn send_own(&self, nbl: NonNull<NET_BUFFER_LIST>, dispatch_level: bool) -> bool {
        if !self.enter_sends(1) {
            return false;
        }
        self.own_sends.fetch_add(1, Ordering::SeqCst);
        let handle = self.handle();
        // SAFETY: the port hands over an NBL of its own pool that nobody
        // else touches until it completes; `SourceHandle` must be the
        // binding handle for a protocol's send (NdisSendNetBufferLists).
        unsafe { (*nbl.as_ptr()).SourceHandle = handle };
        let flags = if dispatch_level {
            NDIS_SEND_FLAGS_DISPATCH_LEVEL
        } else {
            0
        };
        // SAFETY: <= DISPATCH_LEVEL (the caller's, told by `flags`); the
        // binding is open (running); one NBL with `Next` null.
        unsafe { NdisSendNetBufferLists(handle, nbl.as_ptr(), NDIS_DEFAULT_PORT_NUMBER, flags) };
        true
    }

    /// One of the port's NBLs completed (after the port took it back).
    pub fn own_send_completed(&self) {
        self.own_sends.fetch_sub(1, Ordering::SeqCst);
        self.sends_completed(1);
    }

    /// Waits until every NBL of the port's came back (`PASSIVE_LEVEL`; the
    /// port sends no more).
    pub fn wait_own_sends(&self) {
        while self.own_sends.load(Ordering::SeqCst) != 0 {
            super::platform_wait();
        }
    }

    // -----------------------------------------------------------------
    // OID requests.

    /// Issues `request` on P (`<= DISPATCH_LEVEL`); its `complete` runs
    /// exactly once: here if `NdisOidRequest` did not pend (or the close
    /// began: `NDIS_STATUS_CLOSING`), else from
    /// `ProtocolOidRequestComplete`.
    ///
    /// # Safety
    /// `request` stays valid and untouched by the caller until its
    /// `complete` ran.
    pub unsafe fn issue(&self, request: NonNull<OwnedRequest>) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let status = if self.closing.load(Ordering::SeqCst) {
            NDIS_STATUS_CLOSING
        } else {
            // `request` is the first field of the repr(C) OwnedRequest.
            let oid_request = request.as_ptr().cast::<NDIS_OID_REQUEST>();
            // SAFETY: the open binding (the close waits for `requests`);
            // the request lives until completed (this function's contract).
            unsafe { NdisOidRequest(self.handle(), oid_request) }
        };
        if status != NDIS_STATUS_PENDING {
            // SAFETY: not pending: completed now, once.
            unsafe { self.request_complete(request, status) };
        }
    }

    /// `ProtocolOidRequestComplete` for a request of the binding's.
    ///
    /// # Safety
    /// `request` was issued with [`Binding::issue`] and has not completed.
    pub unsafe fn request_complete(&self, request: NonNull<OwnedRequest>, status: NDIS_STATUS) {
        // SAFETY: a live OwnedRequest (this function's contract); its
        // routine is read before it runs, since it may free the request.
        let complete = unsafe { (*request.as_ptr()).complete };
        // SAFETY: the request's own routine, called once.
        unsafe { complete(request, status) };
        self.requests.fetch_sub(1, Ordering::SeqCst);
    }

    /// Issues a set or query on P and waits for it (`PASSIVE_LEVEL`): the
    /// sample's `PtRequestAdapterSync`. `buffer` stays valid for the call.
    pub fn request_sync(
        &self,
        request_type: NDIS_REQUEST_TYPE,
        oid: NDIS_OID,
        buffer: *mut c_void,
        length: u32,
    ) -> NDIS_STATUS {
        while self
            .sync_busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            super::platform_wait();
        }
        let sync = self.sync.get();
        // SAFETY: `sync_busy` makes this thread the slot's only user; no
        // request from it is outstanding (the last user waited for `done`).
        unsafe {
            sync.write(SyncRequest {
                owned: OwnedRequest {
                    request: new_request(request_type, oid, buffer, length),
                    complete: sync_request_complete,
                },
                done: AtomicBool::new(false),
                status: AtomicI32::new(NDIS_STATUS_PENDING),
            });
        }
        // SAFETY: `owned` is the first field of the slot, which outlives
        // the request (waited for below).
        let owned = unsafe { NonNull::new_unchecked(sync.cast::<OwnedRequest>()) };
        // SAFETY: the slot stays untouched until `done` (waited below).
        unsafe { self.issue(owned) };
        // SAFETY: the slot lives in `self`; `done` is atomic.
        let done = unsafe { &(*sync).done };
        while !done.load(Ordering::Acquire) {
            super::platform_wait();
        }
        // SAFETY: the slot lives in `self` and this thread still holds it
        // (`sync_busy`); `status` is atomic and was written before `done`.
        let status = unsafe { (*sync).status.load(Ordering::Acquire) };
        self.sync_busy.store(false, Ordering::Release);
        status
    }
}

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

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

use ndis::{
    MediaConnectStateConnected, NDIS_BIND_PARAMETERS, NDIS_DEFAULT_PORT_NUMBER, NDIS_LINK_STATE,
    NDIS_MEDIA_CONNECT_STATE, NDIS_MEDIA_DUPLEX_STATE, NDIS_OID, NDIS_PHYSICAL_MEDIUM,
    NDIS_REQUEST_TYPE, NDIS_SEND_FLAGS_DISPATCH_LEVEL, NDIS_STRING, NET_IF_ACCESS_TYPE,
    NET_IF_CONNECTION_TYPE, NET_IF_DIRECTION_TYPE, NET_IFINDEX, NET_IFTYPE, NdisMedium802_3,
    NdisRequestSetInformation, OID_802_3_MULTICAST_LIST, OID_GEN_CURRENT_PACKET_FILTER,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_PENDING, NDIS_STATUS_SUCCESS};

use super::kit::kernel::wait_briefly;
use super::kit::nbl::{self, NblChain};
use super::kit::ndis::{
    self as kit_ndis, AtomicHandle, BindContext, BindingHandle, ProtocolHandle, kind,
};
use super::kit::oid::Requests;
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

/// The open on P.
pub struct Binding {
    /// NDIS's binding handle, written by `NdisOpenAdapterEx`.
    handle: AtomicHandle<kind::Binding>,
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
    /// The OID requests issued on the binding.
    pub requests: Requests,
    /// The packet filter P last accepted (the sample's
    /// `pAdapt->PacketFilter`); 0 means nothing is to be received.
    pub packet_filter: AtomicU32,
    /// P's device power state (`NetEventSetPower`).
    power_state: AtomicI32,
}

impl core::fmt::Debug for Binding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Binding")
            .field("lower", &self.lower)
            .field("state", &self.state.load(Ordering::Relaxed))
            .field("sends", &self.sends.load(Ordering::Relaxed))
            .field("requests", &self.requests)
            .finish_non_exhaustive()
    }
}

/// `NdisDeviceStateD0`.
const DEVICE_STATE_D0: i32 = 1;

impl Binding {
    /// A binding to the P `params` describes, not open yet; `None` if P is
    /// not an Ethernet NIC with a 6-byte address.
    pub fn new(params: &NDIS_BIND_PARAMETERS) -> Option<Self> {
        let lower = LowerInfo::from_bind_parameters(params)?;
        Some(Self {
            handle: AtomicHandle::empty(),
            open_done: AtomicBool::new(false),
            open_status: AtomicI32::new(NDIS_STATUS_PENDING),
            close_done: AtomicBool::new(false),
            lower,
            link: LinkState::new(params),
            state: AtomicU32::new(PAUSED),
            sends: AtomicU32::new(0),
            own_sends: AtomicU32::new(0),
            requests: Requests::new(),
            packet_filter: AtomicU32::new(0),
            power_state: AtomicI32::new(DEVICE_STATE_D0),
        })
    }

    /// NDIS's binding handle (`None` before the open and after the
    /// close).
    pub fn handle(&self) -> Option<BindingHandle> {
        self.handle.load()
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
    pub fn open<T>(
        &self,
        protocol: ProtocolHandle,
        context: &T,
        bind_context: BindContext,
        adapter_name: *mut NDIS_STRING,
    ) -> NDIS_STATUS {
        let status =
            kit_ndis::open_adapter(protocol, context, bind_context, adapter_name, &self.handle);
        if status != NDIS_STATUS_PENDING {
            return status;
        }
        while !self.open_done.load(Ordering::Acquire) {
            wait_briefly();
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
        let mut filter = 0u32.to_ne_bytes();
        let status = self.request_sync(
            NdisRequestSetInformation,
            OID_GEN_CURRENT_PACKET_FILTER,
            &mut filter,
        );
        if status != NDIS_STATUS_SUCCESS {
            log_error!(
                "rsndk: clearing P's packet filter failed: {:#010x}",
                status as u32
            );
        }
        let status =
            self.request_sync(NdisRequestSetInformation, OID_802_3_MULTICAST_LIST, &mut []);
        if status != NDIS_STATUS_SUCCESS {
            log_error!(
                "rsndk: clearing P's multicast list failed: {:#010x}",
                status as u32
            );
        }
        self.requests.close();
        while self.requests.outstanding() != 0 {
            wait_briefly();
        }
        while self.sends.load(Ordering::SeqCst) != 0 {
            wait_briefly();
        }
        // The handle NdisOpenAdapterEx gave, closed once; no request or
        // send is outstanding on it (waited above).
        if let Some(handle) = self.handle() {
            let status = kit_ndis::close_adapter(handle);
            if status == NDIS_STATUS_PENDING {
                while !self.close_done.load(Ordering::Acquire) {
                    wait_briefly();
                }
            } else if status != NDIS_STATUS_SUCCESS {
                log_error!("rsndk: NdisCloseAdapterEx failed: {:#010x}", status as u32);
            }
        }
        self.handle.store(None);
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
            wait_briefly();
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

    /// Sends a batch of the L2 port's pool NBLs down to P in one
    /// `NdisSendNetBufferLists` (`<= DISPATCH_LEVEL`); gives the chain
    /// back while the binding does not run (the port keeps it). Each
    /// completion reaches the port through
    /// `ProtocolSendNetBufferListsComplete` ([`super::passthrough`]).
    pub fn send_own(&self, mut chain: NblChain, dispatch_level: bool) -> Result<(), NblChain> {
        let count = chain.len();
        let Some(handle) = self.handle() else {
            return Err(chain);
        };
        if count == 0 {
            return Ok(());
        }
        if !self.enter_sends(count) {
            return Err(chain);
        }
        self.own_sends.fetch_add(count, Ordering::SeqCst);
        // A protocol's send carries its binding handle.
        chain.for_each(|nbl| nbl.set_source(handle));
        let flags = if dispatch_level {
            NDIS_SEND_FLAGS_DISPATCH_LEVEL
        } else {
            0
        };
        nbl::send(handle, chain, NDIS_DEFAULT_PORT_NUMBER, flags);
        Ok(())
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
            wait_briefly();
        }
    }

    // -----------------------------------------------------------------
    // OID requests.

    /// Issues a set or query on P and waits for it (`PASSIVE_LEVEL`): the
    /// sample's `PtRequestAdapterSync`. `buffer` is the set's value or the
    /// query's room (empty: none).
    pub fn request_sync(
        &self,
        request_type: NDIS_REQUEST_TYPE,
        oid: NDIS_OID,
        buffer: &mut [u8],
    ) -> NDIS_STATUS {
        self.requests.sync(self.handle(), request_type, oid, buffer)
    }
}

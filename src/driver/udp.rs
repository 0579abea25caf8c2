//! RoCEv2 over Winsock Kernel: one UDP socket per adapter, bound to the
//! adapter's IPv4 address on port 4791, the same transport the Linux host
//! runs on a UDP socket (`crates/host/src/udp.rs`).
//!
//! * Send ([`WskLink::transmit`], any IRQL up to DISPATCH): the engine
//!   hands a whole IPv4 datagram; its UDP payload is copied into one of
//!   [`SEND_SLOTS`] preallocated slots (buffer, MDL and IRP each) and sent
//!   with `WskSendTo`; the completion routine frees the slot. No slot free
//!   means the packet is dropped, as a full NIC queue would (RC
//!   retransmits). Nothing is allocated per packet.
//! * Receive (`WskReceiveFromEvent`, up to DISPATCH): each datagram goes to
//!   `SoftRnic::receive_udp_payload` with the sender's and our address,
//!   straight from WSK's buffer when it is one mapped MDL, else copied into
//!   a scratch buffer. The list is handed back at once (`STATUS_SUCCESS`).
//! * Lifetime: [`UdpTransport::create`] registers the WSK client
//!   (PASSIVE), [`UdpTransport::open`] captures the provider (waiting for
//!   WSK to come up: run it from a work item, never from DriverEntry or
//!   MiniportInitializeEx) and opens, binds and arms the socket,
//!   [`UdpTransport::close`] drains calls and sends in flight, closes the
//!   socket and deregisters. A rundown count keeps `WskCloseSocket` from
//!   racing a `WskSendTo` (WSK forbids it).

use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::net::{Ipv4Addr, SocketAddrV4};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use hwq::TryArc;
use ndis::{
    IPPROTO_UDP, IRP, IoAllocateIrp, IoAllocateMdl, IoFreeIrp, IoFreeMdl, IoReuseIrp,
    MmBuildMdlForNonPagedPool, NPI_WSK_INTERFACE_ID, SO_WSK_EVENT_CALLBACK, SOCK_DGRAM, SOL_SOCKET,
    STATUS_MORE_PROCESSING_REQUIRED, WSK_BUF, WSK_CLIENT_DATAGRAM_DISPATCH, WSK_CLIENT_DISPATCH,
    WSK_CLIENT_NPI, WSK_DATAGRAM_INDICATION, WSK_EVENT_CALLBACK_CONTROL, WSK_EVENT_RECEIVE_FROM,
    WSK_FLAG_DATAGRAM_SOCKET, WSK_PROVIDER_DATAGRAM_DISPATCH, WSK_PROVIDER_NPI, WSK_REGISTRATION,
    WSK_SOCKET, WSK_VERSION_1_0, WskCaptureProviderNPI, WskDeregister, WskRegister,
    WskReleaseProviderNPI, WskSetOption,
};
use ndkpi::{
    AF_INET, GUID, IN_ADDR, MDL, MDL_MAPPED_TO_SYSTEM_VA, MDL_SOURCE_IS_NONPAGED_POOL, NTSTATUS,
    PVOID, SOCKADDR, SOCKADDR_IN, STATUS_DEVICE_NOT_READY, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_SUCCESS, STATUS_UNSUCCESSFUL,
};
use softrnic::device::SoftRnic;
use softrnic::env::Link;

use super::alloc::PageBuffer;
use super::irp;
use super::log::{log_error, log_info};

/// The RoCEv2 UDP port (IANA).
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// Datagrams in flight at most.
pub const SEND_SLOTS: usize = 64;
/// Bytes of one send slot: a 4096-byte path MTU packet and its headers.
const SLOT_BYTES: usize = 4096 + 256;
/// How long one `WskCaptureProviderNPI` waits for WSK, in ms.
const CAPTURE_WAIT_MS: u32 = 1000;
/// Receive scratch buffers (datagrams split over several MDLs).
const RX_SCRATCH: usize = 4;

static CLIENT_DISPATCH: WSK_CLIENT_DISPATCH = WSK_CLIENT_DISPATCH {
    Version: WSK_VERSION_1_0,
    Reserved: 0,
    WskClientEvent: None,
};

static DATAGRAM_DISPATCH: WSK_CLIENT_DATAGRAM_DISPATCH = WSK_CLIENT_DATAGRAM_DISPATCH {
    WskReceiveFromEvent: Some(receive_from),
};

static WSK_INTERFACE: GUID = NPI_WSK_INTERFACE_ID;

/// Counters of a transport.
#[derive(Debug, Default)]
pub struct UdpStats {
    /// Datagrams handed to WSK.
    pub sent: AtomicU64,
    /// Bytes of those datagrams' UDP payloads (BTH through ICRC).
    pub sent_bytes: AtomicU64,
    /// Datagrams dropped: no free slot, no socket, or malformed.
    pub send_drops: AtomicU64,
    /// Datagrams received and handed to the engine.
    pub received: AtomicU64,
    /// Bytes of those datagrams' UDP payloads.
    pub received_bytes: AtomicU64,
    /// Datagrams received and dropped (not IPv4, too long, no scratch).
    pub receive_drops: AtomicU64,
}

/// One preallocated send: its bytes, the MDL over them, its IRP and the
/// destination.
struct SendSlot {
    data: *mut u8,
    mdl: NonNull<MDL>,
    irp: NonNull<IRP>,
    busy: AtomicBool,
    /// Sends of this slot WSK completed with an error.
    errors: AtomicU64,
    buf: UnsafeCell<WSK_BUF>,
    remote: UnsafeCell<SOCKADDR_IN>,
}

/// The send slots over one page-aligned buffer; frees their IRPs and MDLs
/// on drop (by then none is busy: the owner's `close` waited).
struct SendSlots {
    slots: Vec<SendSlot>,
    memory: PageBuffer,
}

impl SendSlots {
    /// [`SEND_SLOTS`] slots (`<= DISPATCH_LEVEL`).
    fn new() -> Result<Self, NTSTATUS> {
        let memory =
            PageBuffer::zeroed(SEND_SLOTS * SLOT_BYTES).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(SEND_SLOTS)
            .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let mut this = Self { slots, memory };
        for i in 0..SEND_SLOTS {
            // Inside the buffer of SEND_SLOTS * SLOT_BYTES bytes.
            let data = this.memory.as_ptr().wrapping_add(i * SLOT_BYTES);
            // SAFETY: non-paged pool of SLOT_BYTES bytes; no IRP.
            let mdl =
                unsafe { IoAllocateMdl(data.cast(), SLOT_BYTES as u32, 0, 0, ptr::null_mut()) };
            let mdl = NonNull::new(mdl).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
            // SAFETY: the MDL describes non-paged pool.
            unsafe { MmBuildMdlForNonPagedPool(mdl.as_ptr()) };
            // SAFETY: one stack location (WSK's), no quota.
            let Some(irp) = NonNull::new(unsafe { IoAllocateIrp(1, 0) }) else {
                // SAFETY: allocated just above, not yet in a slot.
                unsafe { IoFreeMdl(mdl.as_ptr()) };
                return Err(STATUS_INSUFFICIENT_RESOURCES);
            };
            // Capacity is reserved: no reallocation.
            this.slots.push(SendSlot {
                data,
                mdl,
                irp,
                busy: AtomicBool::new(false),
                errors: AtomicU64::new(0),
                buf: UnsafeCell::new(WSK_BUF {
                    Mdl: mdl.as_ptr(),
                    Offset: 0,
                    Length: 0,
                }),
                remote: UnsafeCell::new(SOCKADDR_IN::default()),
            });
        }
        Ok(this)
    }
}

impl Drop for SendSlots {
    fn drop(&mut self) {
        for slot in &self.slots {
            // SAFETY: allocated in `new`, idle, freed once here.
            unsafe { IoFreeIrp(slot.irp.as_ptr()) };
            // SAFETY: as above.
            unsafe { IoFreeMdl(slot.mdl.as_ptr()) };
        }
    }
}

/// A WSK client with one datagram socket.
pub struct UdpTransport {
    local: SocketAddrV4,
    registration: UnsafeCell<WSK_REGISTRATION>,
    provider: UnsafeCell<WSK_PROVIDER_NPI>,
    captured: AtomicBool,
    /// `open` should give up waiting for WSK (the adapter is halting).
    abandon: AtomicBool,
    socket: AtomicPtr<WSK_SOCKET>,
    /// The IRP the socket's close will use, allocated before the socket
    /// is opened: a close must not fail (see `irp::Reserved`). Null when
    /// no socket is open.
    close_irp: AtomicPtr<IRP>,
    /// Calls into the socket running now (the close rundown).
    calls: AtomicU32,
    rnic: AtomicPtr<SoftRnic>,
    /// `WskRegister` succeeded (so `WskDeregister` is due).
    registered: AtomicBool,
    slots: SendSlots,
    next_slot: AtomicUsize,
    rx_memory: PageBuffer,
    rx_busy: [AtomicBool; RX_SCRATCH],
    /// Counters.
    pub stats: UdpStats,
}

impl core::fmt::Debug for UdpTransport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UdpTransport")
            .field("local", &self.local)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

// SAFETY: the registration and provider NPI are written once at PASSIVE
// level before any concurrent use (create/open) and only read afterwards;
// slots are owned through their `busy` flag; everything else is atomic.
unsafe impl Send for UdpTransport {}
// SAFETY: as above.
unsafe impl Sync for UdpTransport {}

fn sockaddr(addr: SocketAddrV4) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: addr.port().to_be(),
        sin_addr: IN_ADDR::new(addr.ip().octets()),
        sin_zero: [0; 8],
    }
}

impl UdpTransport {
    /// Allocates the send slots and registers the WSK client for a socket
    /// at `local` (`PASSIVE_LEVEL`). No socket yet: sends are dropped
    /// until [`UdpTransport::open`].
    pub fn create(local: SocketAddrV4) -> Result<TryArc<Self>, NTSTATUS> {
        let slots = SendSlots::new()?;
        let rx_memory =
            PageBuffer::zeroed(RX_SCRATCH * SLOT_BYTES).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let transport = Self {
            local,
            registration: UnsafeCell::new(WSK_REGISTRATION::zeroed()),
            provider: UnsafeCell::new(WSK_PROVIDER_NPI {
                Client: ptr::null_mut(),
                Dispatch: ptr::null(),
            }),
            captured: AtomicBool::new(false),
            abandon: AtomicBool::new(false),
            socket: AtomicPtr::new(ptr::null_mut()),
            close_irp: AtomicPtr::new(ptr::null_mut()),
            calls: AtomicU32::new(0),
            rnic: AtomicPtr::new(ptr::null_mut()),
            registered: AtomicBool::new(false),
            slots,
            next_slot: AtomicUsize::new(0),
            rx_memory,
            rx_busy: [const { AtomicBool::new(false) }; RX_SCRATCH],
            stats: UdpStats::default(),
        };
        let transport =
            TryArc::try_new_or_drop(transport).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let mut client = WSK_CLIENT_NPI {
            ClientContext: ptr::null_mut(),
            Dispatch: &raw const CLIENT_DISPATCH,
        };
        // SAFETY: PASSIVE_LEVEL; the registration block sits at its final
        // address inside the TryArc (WSK may keep pointing at it) and is
        // deregistered in `Drop` before that memory goes.
        let status = unsafe { WskRegister(&raw mut client, transport.registration.get()) };
        if status < 0 {
            return Err(status);
        }
        transport.registered.store(true, Ordering::Release);
        Ok(transport)
    }

    /// Makes a running or later [`UdpTransport::open`] stop waiting for WSK
    /// (any IRQL).
    pub fn abandon_open(&self) {
        self.abandon.store(true, Ordering::Release);
    }

    /// Send completions that reported an error.
    pub fn send_errors(&self) -> u64 {
        self.slots
            .slots
            .iter()
            .map(|s| s.errors.load(Ordering::Relaxed))
            .sum()
    }

    /// The bound address.
    pub fn local(&self) -> SocketAddrV4 {
        self.local
    }

    /// Routes received datagrams to `rnic` (which must outlive the socket:
    /// call [`UdpTransport::close`] before freeing it).
    pub fn attach(&self, rnic: &SoftRnic) {
        self.rnic
            .store(ptr::from_ref(rnic).cast_mut(), Ordering::Release);
    }

    fn provider(&self) -> Option<WSK_PROVIDER_NPI> {
        // SAFETY: written once in `open` before `captured` is set.
        self.captured
            .load(Ordering::Acquire)
            .then(|| unsafe { *self.provider.get() })
    }

    /// Captures WSK (waiting until it is up), opens the socket, binds it to
    /// the local address and enables the receive event. `PASSIVE_LEVEL`,
    /// from a work item.
    pub fn open(&self) -> Result<(), NTSTATUS> {
        // WSK may come up after us (boot): wait in bounded steps so that a
        // halt meanwhile ([`UdpTransport::abandon_open`]) is not held up.
        loop {
            // SAFETY: PASSIVE_LEVEL; registered in `create`; the NPI is
            // written into the transport before `captured` publishes it.
            let status = unsafe {
                WskCaptureProviderNPI(
                    self.registration.get(),
                    CAPTURE_WAIT_MS,
                    self.provider.get(),
                )
            };
            if status >= 0 {
                break;
            }
            if status != STATUS_DEVICE_NOT_READY || self.abandon.load(Ordering::Acquire) {
                return Err(status);
            }
        }
        self.captured.store(true, Ordering::Release);
        let npi = self.provider().ok_or(STATUS_DEVICE_NOT_READY)?;
        // SAFETY: a captured provider NPI's dispatch table stays valid
        // until it is released.
        let dispatch = unsafe { &*npi.Dispatch };
        let create = dispatch.WskSocket.ok_or(STATUS_DEVICE_NOT_READY)?;
        let close_irp = irp::Reserved::new()?;
        let context = ptr::from_ref(self).cast_mut().cast::<core::ffi::c_void>();
        let socket = irp::call(|irp| {
            // SAFETY: PASSIVE_LEVEL; our socket context (the transport)
            // outlives the socket, our dispatch is static, the IRP is ours.
            unsafe {
                create(
                    npi.Client,
                    AF_INET,
                    SOCK_DGRAM,
                    IPPROTO_UDP,
                    WSK_FLAG_DATAGRAM_SOCKET,
                    context,
                    (&raw const DATAGRAM_DISPATCH).cast(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                    irp,
                )
            }
        })? as *mut WSK_SOCKET;
        let socket = NonNull::new(socket).ok_or(STATUS_UNSUCCESSFUL)?;
        if let Err(status) = Self::bind_and_arm(socket, self.local) {
            Self::close_socket(socket, close_irp);
            return Err(status);
        }
        self.close_irp
            .store(close_irp.into_raw(), Ordering::Release);
        self.socket.store(socket.as_ptr(), Ordering::Release);
        Ok(())
    }

    fn datagram_dispatch(socket: NonNull<WSK_SOCKET>) -> &'static WSK_PROVIDER_DATAGRAM_DISPATCH {
        // SAFETY: a datagram socket's dispatch is the provider's datagram
        // table, valid for the socket's life (static in the provider).
        let dispatch = unsafe { socket.as_ref() }.Dispatch;
        // SAFETY: as above: the table outlives the socket.
        unsafe { &*dispatch.cast::<WSK_PROVIDER_DATAGRAM_DISPATCH>() }
    }

    fn bind_and_arm(socket: NonNull<WSK_SOCKET>, local: SocketAddrV4) -> Result<(), NTSTATUS> {
        let dispatch = Self::datagram_dispatch(socket);
        let bind = dispatch.WskBind.ok_or(STATUS_DEVICE_NOT_READY)?;
        let mut addr = sockaddr(local);
        irp::call(|irp| {
            // SAFETY: PASSIVE_LEVEL; the address lives through the wait.
            unsafe { bind(socket.as_ptr(), (&raw mut addr).cast::<SOCKADDR>(), 0, irp) }
        })?;
        let control = dispatch
            .Basic
            .WskControlSocket
            .ok_or(STATUS_DEVICE_NOT_READY)?;
        let mut events = WSK_EVENT_CALLBACK_CONTROL {
            NpiId: &raw const WSK_INTERFACE,
            EventMask: WSK_EVENT_RECEIVE_FROM,
        };
        // SAFETY: SO_WSK_EVENT_CALLBACK completes inline and takes no IRP;
        // the input lives for the call.
        let status = unsafe {
            control(
                socket.as_ptr(),
                WskSetOption,
                SO_WSK_EVENT_CALLBACK,
                SOL_SOCKET,
                size_of::<WSK_EVENT_CALLBACK_CONTROL>(),
                (&raw mut events).cast(),
                0,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if status < 0 { Err(status) } else { Ok(()) }
    }

    fn close_socket(socket: NonNull<WSK_SOCKET>, irp: irp::Reserved) {
        if let Some(close) = Self::datagram_dispatch(socket).Basic.WskCloseSocket {
            // SAFETY: PASSIVE_LEVEL; no other call on the socket is running
            // (the caller drained them).
            let _ = irp.call(|irp| unsafe { close(socket.as_ptr(), irp) });
        }
    }

    /// Stops the transport: no call, send or receive event runs after it
    /// returns. `PASSIVE_LEVEL`. Idempotent.
    pub fn close(&self, wait: impl Fn()) {
        let socket = self.socket.swap(ptr::null_mut(), Ordering::AcqRel);
        // Rundown: calls that loaded the socket before the swap, then sends
        // whose completions have not run.
        while self.calls.load(Ordering::Acquire) != 0
            || self
                .slots
                .slots
                .iter()
                .any(|s| s.busy.load(Ordering::Acquire))
        {
            wait();
        }
        let close_irp = NonNull::new(self.close_irp.swap(ptr::null_mut(), Ordering::AcqRel));
        if let Some(close_irp) = close_irp {
            // SAFETY: `open` stored this IRP from `Reserved::into_raw` with
            // the socket and handed it to no one; the swap above made it
            // ours alone, taken back once.
            let close_irp = unsafe { irp::Reserved::from_raw(close_irp) };
            if let Some(socket) = NonNull::new(socket) {
                Self::close_socket(socket, close_irp);
            }
        }
        if self.captured.swap(false, Ordering::AcqRel) {
            // SAFETY: captured once in `open`, released once here.
            unsafe { WskReleaseProviderNPI(self.registration.get()) };
        }
        self.rnic.store(ptr::null_mut(), Ordering::Release);
        log_info!(
            "rsndk: {} closed: sent {}, send errors {}, send drops {}, received {}, receive drops {}",
            self.local,
            self.stats.sent.load(Ordering::Relaxed),
            self.send_errors(),
            self.stats.send_drops.load(Ordering::Relaxed),
            self.stats.received.load(Ordering::Relaxed),
            self.stats.receive_drops.load(Ordering::Relaxed),
        );
    }

    /// Sends the UDP payload of `datagram` (an IPv4 datagram from the engine).
    fn send(&self, datagram: &[u8]) {
        let Some((dest, payload)) = crate::portable::split_ipv4_udp(datagram) else {
            self.stats.send_drops.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if payload.len() > SLOT_BYTES {
            self.stats.send_drops.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.calls.fetch_add(1, Ordering::AcqRel);
        let sent = NonNull::new(self.socket.load(Ordering::Acquire))
            .and_then(|socket| self.claim_slot().map(|slot| (socket, slot)))
            .is_some_and(|(socket, slot)| self.send_in(socket, slot, dest, payload));
        self.calls.fetch_sub(1, Ordering::AcqRel);
        if !sent {
            self.stats.send_drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn claim_slot(&self) -> Option<&SendSlot> {
        let start = self.next_slot.fetch_add(1, Ordering::Relaxed);
        let slots = &self.slots.slots;
        (0..slots.len()).find_map(|k| {
            let slot = slots.get((start + k) % slots.len())?;
            slot.busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
                .then_some(slot)
        })
    }

    fn send_in(
        &self,
        socket: NonNull<WSK_SOCKET>,
        slot: &SendSlot,
        dest: SocketAddrV4,
        payload: &[u8],
    ) -> bool {
        let Some(send_to) = Self::datagram_dispatch(socket).WskSendTo else {
            slot.busy.store(false, Ordering::Release);
            return false;
        };
        // SAFETY: the slot is ours (claimed); its buffer holds SLOT_BYTES
        // and `payload` is no longer (checked by the caller).
        unsafe { ptr::copy_nonoverlapping(payload.as_ptr(), slot.data, payload.len()) };
        // SAFETY: the slot's cells are only touched by its owner.
        unsafe { (*slot.buf.get()).Length = payload.len() };
        // SAFETY: as above.
        unsafe { *slot.remote.get() = sockaddr(dest) };
        let irp = slot.irp.as_ptr();
        // SAFETY: the slot's IRP is idle (its last completion ran before the
        // slot was freed); reuse resets it for another request.
        unsafe { IoReuseIrp(irp, STATUS_UNSUCCESSFUL) };
        let context = ptr::from_ref(slot).cast_mut().cast();
        // SAFETY: a reset IRP with a free next location; the slot (the
        // context) lives as long as the transport, which `close` keeps
        // alive until every busy slot completed.
        unsafe { irp::set_completion(irp, send_complete, context) };
        self.stats.sent.fetch_add(1, Ordering::Relaxed);
        self.stats
            .sent_bytes
            .fetch_add(payload.len() as u64, Ordering::Relaxed);
        // SAFETY: <= DISPATCH_LEVEL; buffer, address and IRP stay valid
        // until the completion routine frees the slot; the socket is open
        // (the rundown count keeps `close` from closing it meanwhile).
        unsafe {
            send_to(
                socket.as_ptr(),
                slot.buf.get(),
                0,
                slot.remote.get().cast::<SOCKADDR>(),
                0,
                ptr::null_mut(),
                irp,
            )
        };
        // The completion routine runs whatever the call returned.
        true
    }

    /// Counts one datagram of `len` payload bytes handed to the engine.
    fn count_received(&self, len: usize) {
        self.stats.received.fetch_add(1, Ordering::Relaxed);
        self.stats
            .received_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
    }

    /// Handles one received datagram.
    fn deliver(&self, rnic: &SoftRnic, indication: &WSK_DATAGRAM_INDICATION) {
        let Some(src) = remote_of(indication) else {
            self.stats.receive_drops.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let len = indication.Buffer.Length;
        // One MDL holding the whole payload: no copy.
        if let Some(bytes) = first_mdl_bytes(&indication.Buffer) {
            rnic.receive_udp_payload(src, self.local, bytes);
            self.count_received(bytes.len());
            return;
        }
        let Some(k) = (0..RX_SCRATCH).find(|&k| {
            self.rx_busy[k]
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        }) else {
            self.stats.receive_drops.fetch_add(1, Ordering::Relaxed);
            return;
        };
        // SAFETY: scratch buffer `k` (SLOT_BYTES bytes) is ours until the
        // flag is released below.
        let scratch = unsafe {
            core::slice::from_raw_parts_mut(
                self.rx_memory.as_ptr().wrapping_add(k * SLOT_BYTES),
                SLOT_BYTES,
            )
        };
        if len <= SLOT_BYTES && gather(&indication.Buffer, &mut scratch[..len]) {
            rnic.receive_udp_payload(src, self.local, &scratch[..len]);
            self.count_received(len);
        } else {
            self.stats.receive_drops.fetch_add(1, Ordering::Relaxed);
        }
        self.rx_busy[k].store(false, Ordering::Release);
    }
}

impl Drop for UdpTransport {
    fn drop(&mut self) {
        // `close` ran (the owner's contract), so no slot is busy and the
        // provider NPI is released; the slots free themselves.
        if self.registered.load(Ordering::Acquire) {
            // SAFETY: registered in `create`; PASSIVE_LEVEL (the last
            // reference is dropped by the adapter's halt); waits for WSK to
            // let go of the client.
            unsafe { WskDeregister(self.registration.get()) };
        }
    }
}

/// The sender of an IPv4 datagram.
fn remote_of(indication: &WSK_DATAGRAM_INDICATION) -> Option<SocketAddrV4> {
    let remote = NonNull::new(indication.RemoteAddress)?;
    // SAFETY: WSK's remote address for a datagram socket is a SOCKADDR of
    // the socket's family, valid during the event.
    let family = unsafe { remote.as_ref() }.sa_family;
    if family != AF_INET {
        return None;
    }
    // SAFETY: AF_INET: the address is a SOCKADDR_IN.
    let v4 = unsafe { remote.cast::<SOCKADDR_IN>().read_unaligned() };
    Some(SocketAddrV4::new(
        Ipv4Addr::from(v4.sin_addr.S_un),
        u16::from_be(v4.sin_port),
    ))
}

/// The system address of an MDL's first byte (`MmGetSystemAddressForMdlSafe`).
///
/// # Safety
/// `mdl` is a valid MDL of locked pages, e.g. one WSK indicates.
unsafe fn system_address(mdl: *mut MDL) -> Option<*const u8> {
    // SAFETY: valid per contract; reading the header.
    let m = unsafe { &*mdl };
    if m.MdlFlags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL) != 0 {
        return Some(m.MappedSystemVa.cast_const().cast());
    }
    // SAFETY: valid per contract, of locked pages; the mapping belongs to
    // the MDL and its owner undoes it.
    unsafe { super::dma::map_locked_pages(mdl) }.map(<*mut u8>::cast_const)
}

/// The payload when the first MDL holds all of it.
fn first_mdl_bytes(buf: &WSK_BUF) -> Option<&[u8]> {
    let mdl = NonNull::new(buf.Mdl)?;
    // SAFETY: an indicated MDL, valid during the event.
    let count = unsafe { mdl.as_ref() }.ByteCount as usize;
    let offset = buf.Offset as usize;
    if offset.checked_add(buf.Length)? > count {
        return None;
    }
    // SAFETY: as above.
    let base = unsafe { system_address(mdl.as_ptr()) }?;
    // SAFETY: `offset + Length <= ByteCount` bytes are mapped at `base`,
    // valid while the indication is (the event's duration).
    Some(unsafe { core::slice::from_raw_parts(base.wrapping_add(offset), buf.Length) })
}

/// Copies `out.len()` bytes of an MDL chain starting `buf.Offset` bytes in.
fn gather(buf: &WSK_BUF, out: &mut [u8]) -> bool {
    let mut mdl = buf.Mdl;
    let mut skip = buf.Offset as usize;
    let mut done = 0;
    while done < out.len() {
        let Some(m) = NonNull::new(mdl) else {
            return false;
        };
        // SAFETY: an indicated MDL chain, valid during the event.
        let m = unsafe { m.as_ref() };
        let (count, next) = (m.ByteCount as usize, m.Next);
        if skip < count {
            // SAFETY: as above.
            let Some(base) = (unsafe { system_address(ptr::from_ref(m).cast_mut()) }) else {
                return false;
            };
            let n = (count - skip).min(out.len() - done);
            // SAFETY: `skip + n <= count` bytes mapped at `base`; `out`
            // has `n` bytes left at `done`.
            unsafe {
                ptr::copy_nonoverlapping(
                    base.wrapping_add(skip),
                    out.as_mut_ptr().wrapping_add(done),
                    n,
                );
            };
            done += n;
            skip = 0;
        } else {
            skip -= count;
        }
        mdl = next;
    }
    true
}

/// Send completion (`<= DISPATCH_LEVEL`): count, free the slot, keep the IRP.
unsafe extern "win64" fn send_complete(
    _device: *mut ndis::DEVICE_OBJECT,
    irp: *mut IRP,
    context: PVOID,
) -> NTSTATUS {
    // SAFETY: the context is the slot, alive while it is busy.
    let slot = unsafe { &*context.cast::<SendSlot>() };
    // SAFETY: the completed IRP is ours again.
    let status = unsafe { (*irp).IoStatus.Status };
    if status < 0 {
        slot.errors.fetch_add(1, Ordering::Relaxed);
    }
    slot.busy.store(false, Ordering::Release);
    STATUS_MORE_PROCESSING_REQUIRED
}

/// `WskReceiveFromEvent` (`<= DISPATCH_LEVEL`).
unsafe extern "win64" fn receive_from(
    context: PVOID,
    _flags: u32,
    indications: *mut WSK_DATAGRAM_INDICATION,
) -> NTSTATUS {
    // SAFETY: the socket context is the transport, alive until the socket
    // is closed (which ends the events).
    let transport = unsafe { &*context.cast::<UdpTransport>() };
    let Some(rnic) = NonNull::new(transport.rnic.load(Ordering::Acquire)) else {
        return STATUS_SUCCESS;
    };
    // SAFETY: `attach`'s contract keeps the device alive while the socket
    // is open.
    let rnic = unsafe { rnic.as_ref() };
    // WSK may call at PASSIVE_LEVEL; the device takes spin locks its DPC
    // shares, so it runs at DISPATCH_LEVEL (see `dispatch_device`).
    let old = super::irql::raise_to_dispatch();
    let mut at = indications;
    while let Some(ind) = NonNull::new(at) {
        // SAFETY: WSK's indication list, valid during the event.
        let ind = unsafe { ind.as_ref() };
        transport.deliver(rnic, ind);
        at = ind.Next;
    }
    super::irql::lower(old);
    STATUS_SUCCESS
}

/// The device's [`Link`]: sends through the transport.
#[derive(Debug)]
pub struct WskLink(pub TryArc<UdpTransport>);

impl Link for WskLink {
    fn transmit(&self, datagram: &[u8]) {
        self.0.send(datagram);
    }
}

/// Logs a failed open (for the work item).
pub fn report_open_failure(local: SocketAddrV4, status: NTSTATUS) {
    log_error!(
        "rsndk: UDP transport on {local}:{ROCEV2_UDP_PORT} did not open: {:#010x}",
        status as u32
    );
}

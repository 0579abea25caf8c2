//! NETIO driven directly, as a WSK client written in Rust would: IRPs from
//! `IoAllocateIrp` with a completion routine that keeps them, buffers
//! described by [`OwnedMdl`]s, the receive event as an `extern "win64"`
//! function. Addresses are in 127.0.39.0/24 (bottled adapters use
//! 127.0.40-47.x, host ones 127.0.48.x), ports chosen by Linux. The tests
//! take one lock: the provider's availability, the capture and the socket
//! count are process-wide.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ndis::{
    DEVICE_OBJECT, DISPATCH_LEVEL, IPPROTO_UDP, IRP, KIRQL, NPI_WSK_INTERFACE_ID,
    SL_INVOKE_ON_CANCEL, SL_INVOKE_ON_ERROR, SL_INVOKE_ON_SUCCESS, SO_WSK_EVENT_CALLBACK,
    SOCK_DGRAM, SOL_SOCKET, STATUS_MORE_PROCESSING_REQUIRED, WSK_BUF, WSK_CLIENT_DATAGRAM_DISPATCH,
    WSK_CLIENT_DISPATCH, WSK_CLIENT_NPI, WSK_DATAGRAM_INDICATION, WSK_EVENT_CALLBACK_CONTROL,
    WSK_EVENT_DISABLE, WSK_EVENT_RECEIVE_FROM, WSK_FLAG_AT_DISPATCH_LEVEL,
    WSK_FLAG_CONNECTION_SOCKET, WSK_FLAG_DATAGRAM_SOCKET, WSK_INFINITE_WAIT, WSK_NO_WAIT,
    WSK_PROVIDER_DATAGRAM_DISPATCH, WSK_PROVIDER_DISPATCH, WSK_PROVIDER_NPI, WSK_REGISTRATION,
    WSK_SOCKET, WSK_VERSION_1_0, WskSetOption,
};
use ndkpi::{
    AF_INET, IN_ADDR, NTSTATUS, PVOID, SOCKADDR, SOCKADDR_IN, STATUS_ADDRESS_ALREADY_EXISTS,
    STATUS_CANCELLED, STATUS_DEVICE_NOT_READY, STATUS_NOT_SUPPORTED, STATUS_PENDING,
    STATUS_SUCCESS,
};

use super::datagram::STATUS_ADDRESS_ALREADY_ASSOCIATED;
use super::receive::{HEADROOM, STATUS_DATA_NOT_ACCEPTED};
use super::*;
use crate::cpu;
use crate::io::{IoAllocateIrp, IoFreeIrp};
use crate::mm::{self, OwnedMdl};

/// Hang guard of every wait.
const WAIT: Duration = Duration::from_secs(5);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn sockaddr(addr: SocketAddrV4) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: addr.port().to_be(),
        sin_addr: IN_ADDR::new(addr.ip().octets()),
        sin_zero: [0; 8],
    }
}

fn v4(a: &SOCKADDR_IN) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(a.sin_addr.S_un), u16::from_be(a.sin_port))
}

// ---------------------------------------------------------------- IRPs

/// What the completion routine saw.
#[derive(Debug, Default)]
struct Done {
    count: AtomicU32,
    status: AtomicI32,
    information: AtomicUsize,
}

/// Records the completion and keeps the IRP.
unsafe extern "win64" fn completed(
    _device: *mut DEVICE_OBJECT,
    irp: *mut IRP,
    context: PVOID,
) -> NTSTATUS {
    // SAFETY: the context is the `Done` of the request, alive while its
    // IRP is (the request waits for the completion before dropping).
    let done = unsafe { &*context.cast::<Done>() };
    // SAFETY: the IRP being completed, ours.
    let io = unsafe { (*irp).IoStatus };
    done.status.store(io.Status, Ordering::SeqCst);
    done.information.store(io.Information, Ordering::SeqCst);
    done.count.fetch_add(1, Ordering::SeqCst);
    STATUS_MORE_PROCESSING_REQUIRED
}

/// One IRP for one WSK call.
struct Request {
    irp: *mut IRP,
    done: Box<Done>,
}

impl Request {
    fn new() -> Self {
        // SAFETY: one stack location, no quota; PASSIVE_LEVEL.
        let irp = unsafe { IoAllocateIrp(1, 0) };
        assert!(!irp.is_null(), "IoAllocateIrp");
        let done = Box::new(Done::default());
        // SAFETY: a fresh IRP of ours.
        let next = unsafe { (*irp).next_stack_location() };
        // SAFETY: its first (next) stack location, inside the IRP.
        let location = unsafe { &mut *next };
        location.CompletionRoutine = Some(completed);
        location.Context = std::ptr::from_ref::<Done>(&done).cast_mut().cast();
        location.Control = SL_INVOKE_ON_SUCCESS | SL_INVOKE_ON_ERROR | SL_INVOKE_ON_CANCEL;
        Self { irp, done }
    }

    fn completions(&self) -> u32 {
        self.done.count.load(Ordering::SeqCst)
    }

    /// Waits for the one completion; its status and information.
    fn wait(&self) -> (NTSTATUS, usize) {
        wait_for("an IRP completion", || self.completions() >= 1);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(self.completions(), 1, "completed exactly once");
        (
            self.done.status.load(Ordering::SeqCst),
            self.done.information.load(Ordering::SeqCst),
        )
    }

    /// Checks a call's return value against its completion: a final
    /// status equals the IRP's; `STATUS_PENDING` waits for it.
    fn outcome(&self, returned: NTSTATUS) -> (NTSTATUS, usize) {
        let (status, information) = self.wait();
        if returned != STATUS_PENDING {
            assert_eq!(returned, status, "returned status vs the IRP's");
        }
        (status, information)
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        if self.completions() == 1 {
            // SAFETY: ours, completed (so no longer with NETIO), freed once.
            unsafe { IoFreeIrp(self.irp) };
        }
    }
}

// ---------------------------------------------------------------- client

static CLIENT_DISPATCH: WSK_CLIENT_DISPATCH = WSK_CLIENT_DISPATCH {
    Version: WSK_VERSION_1_0,
    Reserved: 0,
    WskClientEvent: None,
};

/// A registered WSK client with its provider NPI captured.
struct Client {
    registration: Box<WSK_REGISTRATION>,
    npi: WSK_PROVIDER_NPI,
}

impl Client {
    fn register() -> Self {
        let mut registration = Box::new(WSK_REGISTRATION::zeroed());
        let mut client = WSK_CLIENT_NPI {
            ClientContext: std::ptr::null_mut(),
            Dispatch: &raw const CLIENT_DISPATCH,
        };
        // SAFETY: PASSIVE_LEVEL; the block stays put until deregistered.
        let status = unsafe { WskRegister(&raw mut client, &raw mut *registration) };
        assert_eq!(status, STATUS_SUCCESS, "WskRegister");
        let mut npi = WSK_PROVIDER_NPI {
            Client: std::ptr::null_mut(),
            Dispatch: std::ptr::null(),
        };
        // SAFETY: a registered block and an NPI to fill.
        let status =
            unsafe { WskCaptureProviderNPI(&raw mut *registration, WSK_NO_WAIT, &raw mut npi) };
        assert_eq!(status, STATUS_SUCCESS, "WskCaptureProviderNPI");
        Self { registration, npi }
    }

    fn dispatch(&self) -> &'static WSK_PROVIDER_DISPATCH {
        // SAFETY: the provider's static table, from a captured NPI.
        unsafe { &*self.npi.Dispatch }
    }

    /// `WskSocket` with these parameters: the returned status and the IRP's.
    fn try_socket(
        &self,
        flags: u32,
        socket_type: u16,
        context: PVOID,
        events: *const WSK_CLIENT_DATAGRAM_DISPATCH,
    ) -> (NTSTATUS, NTSTATUS, usize) {
        let r = Request::new();
        let f = self.dispatch().WskSocket.unwrap();
        // SAFETY: a captured client; our IRP.
        let returned = unsafe {
            f(
                self.npi.Client,
                AF_INET,
                socket_type,
                IPPROTO_UDP,
                flags,
                context,
                events.cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                r.irp,
            )
        };
        let (status, information) = r.outcome(returned);
        (returned, status, information)
    }

    /// A datagram socket; `sink` gets its receive events if given.
    fn socket(&self, sink: Option<&Sink>) -> *mut WSK_SOCKET {
        let (context, events) = match sink {
            Some(s) => (
                std::ptr::from_ref(s).cast_mut().cast(),
                &raw const RECEIVE_EVENTS,
            ),
            None => (std::ptr::null_mut(), std::ptr::null()),
        };
        let (_, status, socket) =
            self.try_socket(WSK_FLAG_DATAGRAM_SOCKET, SOCK_DGRAM, context, events);
        assert_eq!(status, STATUS_SUCCESS, "WskSocket");
        assert_ne!(socket, 0);
        socket as *mut WSK_SOCKET
    }

    fn finish(mut self) {
        // SAFETY: captured in `register`, released once.
        unsafe { WskReleaseProviderNPI(&raw mut *self.registration) };
        // SAFETY: registered in `register`; every socket closed.
        unsafe { WskDeregister(&raw mut *self.registration) };
    }
}

fn table(socket: *mut WSK_SOCKET) -> &'static WSK_PROVIDER_DATAGRAM_DISPATCH {
    // SAFETY: an open socket of ours.
    let dispatch = unsafe { (*socket).Dispatch };
    // SAFETY: a datagram socket's dispatch is NETIO's static datagram table.
    unsafe { &*dispatch.cast::<WSK_PROVIDER_DATAGRAM_DISPATCH>() }
}

fn bind(socket: *mut WSK_SOCKET, at: SocketAddrV4) -> NTSTATUS {
    let r = Request::new();
    let mut addr = sockaddr(at);
    let f = table(socket).WskBind.unwrap();
    // SAFETY: our socket, address and IRP.
    let returned = unsafe { f(socket, (&raw mut addr).cast(), 0, r.irp) };
    r.outcome(returned).0
}

fn local(socket: *mut WSK_SOCKET) -> SocketAddrV4 {
    let r = Request::new();
    let mut addr = SOCKADDR_IN::default();
    let f = table(socket).WskGetLocalAddress.unwrap();
    // SAFETY: our socket, address buffer and IRP.
    let returned = unsafe { f(socket, (&raw mut addr).cast(), r.irp) };
    assert_eq!(r.outcome(returned).0, STATUS_SUCCESS, "WskGetLocalAddress");
    v4(&addr)
}

static WSK_INTERFACE: ndkpi::GUID = NPI_WSK_INTERFACE_ID;

fn set_events(socket: *mut WSK_SOCKET, on: bool) -> NTSTATUS {
    let mut control = WSK_EVENT_CALLBACK_CONTROL {
        NpiId: &raw const WSK_INTERFACE,
        EventMask: if on {
            WSK_EVENT_RECEIVE_FROM
        } else {
            WSK_EVENT_RECEIVE_FROM | WSK_EVENT_DISABLE
        },
    };
    let f = table(socket).Basic.WskControlSocket.unwrap();
    // SAFETY: our socket; the option takes no IRP.
    unsafe {
        f(
            socket,
            WskSetOption,
            SO_WSK_EVENT_CALLBACK,
            SOL_SOCKET,
            size_of::<WSK_EVENT_CALLBACK_CONTROL>(),
            (&raw mut control).cast(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

/// Sends `bytes` to `to` from a WSK_BUF that starts 3 bytes into a chain
/// of two MDLs split in the middle of the data.
fn send(socket: *mut WSK_SOCKET, bytes: &[u8], to: SocketAddrV4) -> (NTSTATUS, usize) {
    let mut memory = vec![0xAAu8; 3];
    memory.extend_from_slice(bytes);
    let split = 3 + bytes.len() / 2;
    let (head, tail) = memory.split_at_mut(split);
    let mut first = OwnedMdl::describe(head.as_mut_ptr(), head.len());
    let second = OwnedMdl::describe(tail.as_mut_ptr(), tail.len().max(1));
    first.set_next(second.as_ptr());
    let mut buf = WSK_BUF {
        Mdl: first.as_ptr(),
        Offset: 3,
        Length: bytes.len(),
    };
    let mut remote = sockaddr(to);
    let r = Request::new();
    let f = table(socket).WskSendTo.unwrap();
    // SAFETY: our socket; buffer, address and IRP live until the
    // completion, which `outcome` waits for.
    let returned = unsafe {
        f(
            socket,
            &raw mut buf,
            0,
            (&raw mut remote).cast(),
            0,
            std::ptr::null_mut(),
            r.irp,
        )
    };
    r.outcome(returned)
}

/// A pending or immediate `WskReceiveFrom` into `len` bytes.
struct Receive {
    request: Request,
    returned: NTSTATUS,
    memory: Box<[u8]>,
    _mdl: OwnedMdl,
    buf: Box<WSK_BUF>,
    remote: Box<SOCKADDR_IN>,
    control_length: Box<u32>,
    control_flags: Box<u32>,
}

impl Receive {
    fn post(socket: *mut WSK_SOCKET, len: usize) -> Self {
        let mut memory = vec![0u8; len].into_boxed_slice();
        let mdl = OwnedMdl::describe(memory.as_mut_ptr(), len);
        let mut this = Self {
            request: Request::new(),
            returned: 0,
            memory,
            buf: Box::new(WSK_BUF {
                Mdl: mdl.as_ptr(),
                Offset: 0,
                Length: len,
            }),
            _mdl: mdl,
            remote: Box::default(),
            control_length: Box::new(99),
            control_flags: Box::new(99),
        };
        let f = table(socket).WskReceiveFrom.unwrap();
        // SAFETY: our socket; every buffer is boxed and outlives the IRP's
        // completion (the test waits for it before dropping).
        this.returned = unsafe {
            f(
                socket,
                &raw mut *this.buf,
                0,
                (&raw mut *this.remote).cast::<SOCKADDR>(),
                &raw mut *this.control_length,
                std::ptr::null_mut(),
                &raw mut *this.control_flags,
                this.request.irp,
            )
        };
        this
    }

    /// The datagram received: (status, bytes, sender).
    fn result(&self) -> (NTSTATUS, Vec<u8>, SocketAddrV4) {
        let (status, n) = self.request.outcome(self.returned);
        (status, self.memory[..n].to_vec(), v4(&self.remote))
    }
}

fn close(socket: *mut WSK_SOCKET) -> NTSTATUS {
    let r = Request::new();
    let f = table(socket).Basic.WskCloseSocket.unwrap();
    // SAFETY: our socket, no other call of it running; our IRP.
    let returned = unsafe { f(socket, r.irp) };
    r.outcome(returned).0
}

// ---------------------------------------------------------------- events

/// What a socket's receive event saw; `reply` is what it returns.
#[derive(Debug)]
struct Sink {
    reply: AtomicI32,
    seen: Mutex<Vec<Seen>>,
    heads: Mutex<Vec<usize>>,
}

#[derive(Clone, Debug)]
struct Seen {
    from: SocketAddrV4,
    bytes: Vec<u8>,
    flags: u32,
    irql: KIRQL,
    offset: u32,
    /// MDLs of the chain that held the payload.
    mdls: usize,
}

impl Sink {
    /// Boxed: its address is the socket context.
    #[allow(
        clippy::unnecessary_box_returns,
        reason = "the address is the socket context"
    )]
    fn new(reply: NTSTATUS) -> Box<Self> {
        Box::new(Self {
            reply: AtomicI32::new(reply),
            seen: Mutex::new(Vec::new()),
            heads: Mutex::new(Vec::new()),
        })
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

static RECEIVE_EVENTS: WSK_CLIENT_DATAGRAM_DISPATCH = WSK_CLIENT_DATAGRAM_DISPATCH {
    WskReceiveFromEvent: Some(on_receive),
};

/// The bytes an indicated WSK_BUF describes and how many MDLs held them,
/// read MDL by MDL through their system addresses.
fn read_chain(buf: &WSK_BUF) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut mdls = 0;
    let mut skip = buf.Offset as usize;
    let mut mdl = buf.Mdl;
    while out.len() < buf.Length && !mdl.is_null() {
        // SAFETY: an MDL of an indicated chain, valid during the event.
        let header = unsafe { mdl.read() };
        let count = header.ByteCount as usize;
        if skip < count {
            // SAFETY: an MDL of the chain the bottle indicated (an OwnedMdl
            // over nonpaged memory), valid during the event, as `system_va`
            // requires.
            let base = unsafe { mm::system_va(mdl) }.cast_const();
            let n = (count - skip).min(buf.Length - out.len());
            // SAFETY: `n` bytes of this MDL's buffer from `skip`.
            let part = unsafe { std::slice::from_raw_parts(base.wrapping_add(skip), n) };
            out.extend_from_slice(part);
            mdls += 1;
            skip = 0;
        } else {
            skip -= count;
        }
        mdl = header.Next;
    }
    (out, mdls)
}

unsafe extern "win64" fn on_receive(
    context: PVOID,
    flags: u32,
    list: *mut WSK_DATAGRAM_INDICATION,
) -> NTSTATUS {
    // SAFETY: the socket context is the test's boxed sink, alive until
    // the socket is closed.
    let sink = unsafe { &*context.cast::<Sink>() };
    let irql = cpu::current();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: an indication of NETIO's list, valid during the event.
        let ind = unsafe { at.read() };
        let (bytes, mdls) = read_chain(&ind.Buffer);
        // SAFETY: an AF_INET sender address, valid during the event.
        let from = unsafe { ind.RemoteAddress.cast::<SOCKADDR_IN>().read_unaligned() };
        sink.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Seen {
                from: v4(&from),
                bytes,
                flags,
                irql,
                offset: ind.Buffer.Offset,
                mdls,
            });
        at = ind.Next;
    }
    sink.heads
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(list as usize);
    sink.reply.load(Ordering::SeqCst)
}

fn at(last: u8) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(127, 0, 39, last), 0)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

// ---------------------------------------------------------------- tests

#[test]
fn registration_capture_and_release() {
    let _serial = serial();
    let mut client = Client::register();
    let dispatch = client.dispatch();
    assert_eq!(dispatch.Version, WSK_VERSION_1_0);
    assert!(dispatch.WskSocket.is_some());
    // A second capture of the same registration, released too.
    let mut again = WSK_PROVIDER_NPI {
        Client: std::ptr::null_mut(),
        Dispatch: std::ptr::null(),
    };
    // SAFETY: a registered block.
    let status = unsafe {
        WskCaptureProviderNPI(&raw mut *client.registration, WSK_NO_WAIT, &raw mut again)
    };
    assert_eq!(status, STATUS_SUCCESS);
    assert_eq!(again.Client, client.npi.Client);
    // SAFETY: captured just above.
    unsafe { WskReleaseProviderNPI(&raw mut *client.registration) };
    client.finish();
}

/// Restores the provider's availability however the test ends.
struct ProviderDown;

impl Drop for ProviderDown {
    fn drop(&mut self) {
        set_provider_available(true);
    }
}

#[test]
fn capture_waits_for_the_provider() {
    let _serial = serial();
    let mut registration = Box::new(WSK_REGISTRATION::zeroed());
    let mut client = WSK_CLIENT_NPI {
        ClientContext: std::ptr::null_mut(),
        Dispatch: &raw const CLIENT_DISPATCH,
    };
    // SAFETY: PASSIVE_LEVEL, a block that stays put.
    let status = unsafe { WskRegister(&raw mut client, &raw mut *registration) };
    assert_eq!(status, STATUS_SUCCESS);
    let down = ProviderDown;
    set_provider_available(false);
    let mut npi = WSK_PROVIDER_NPI {
        Client: std::ptr::null_mut(),
        Dispatch: std::ptr::null(),
    };
    let started = Instant::now();
    // SAFETY: a registered block.
    let status = unsafe { WskCaptureProviderNPI(&raw mut *registration, 50, &raw mut npi) };
    assert_eq!(
        status, STATUS_DEVICE_NOT_READY,
        "WSK down: the wait times out"
    );
    assert!(started.elapsed() >= Duration::from_millis(50));
    // SAFETY: `registration` was registered by WskRegister above and is
    // boxed (stays put); `npi` is a writable out-pointer. PASSIVE_LEVEL.
    let status =
        unsafe { WskCaptureProviderNPI(&raw mut *registration, WSK_NO_WAIT, &raw mut npi) };
    assert_eq!(status, STATUS_DEVICE_NOT_READY, "no wait");
    let up = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(100));
        set_provider_available(true);
    });
    // SAFETY: `registration` is registered and boxed, nothing captured yet
    // (both calls above failed); `npi` is writable; PASSIVE_LEVEL may wait.
    let status =
        unsafe { WskCaptureProviderNPI(&raw mut *registration, WSK_INFINITE_WAIT, &raw mut npi) };
    assert_eq!(status, STATUS_SUCCESS, "WSK came up during the wait");
    up.join().unwrap();
    drop(down);
    // SAFETY: captured once above, released once; then deregistered.
    unsafe { WskReleaseProviderNPI(&raw mut *registration) };
    // SAFETY: registered above, nothing captured or open.
    unsafe { WskDeregister(&raw mut *registration) };
}

#[test]
fn datagrams_reach_the_receive_event_at_dispatch_level() {
    let _serial = serial();
    let open = open_sockets();
    let client = Client::register();
    let sink = Sink::new(STATUS_SUCCESS);
    let a = client.socket(None);
    let b = client.socket(Some(&sink));
    assert_eq!(open_sockets(), open + 2);
    assert_eq!(bind(a, at(1)), STATUS_SUCCESS);
    assert_eq!(bind(b, at(2)), STATUS_SUCCESS);
    let (la, lb) = (local(a), local(b));
    assert_eq!(*la.ip(), Ipv4Addr::new(127, 0, 39, 1));
    assert_ne!(la.port(), 0, "Linux chose a port");
    assert_eq!(set_events(b, true), STATUS_SUCCESS);
    let before = counters();
    let sizes = [1usize, 1400, 9000];
    for (i, &n) in sizes.iter().enumerate() {
        assert_eq!(
            send(a, &pattern(n, i as u8), lb),
            (STATUS_SUCCESS, n),
            "send {n}"
        );
    }
    wait_for("three indications", || sink.seen().len() >= 3);
    let seen = sink.seen();
    assert_eq!(seen.len(), 3);
    for (i, s) in seen.iter().enumerate() {
        assert_eq!(s.bytes, pattern(sizes[i], i as u8), "datagram {i}");
        assert_eq!(s.from, la, "sender of {i}");
        assert_eq!(s.irql, DISPATCH_LEVEL, "event IRQL");
        assert_ne!(s.flags & WSK_FLAG_AT_DISPATCH_LEVEL, 0, "event flags");
        assert_eq!(s.offset, HEADROOM as u32, "payload offset in its MDL");
    }
    let after = counters();
    assert!(after.sent >= before.sent + 3 && after.indicated >= before.indicated + 3);
    // Disabled: datagrams wait in the Linux socket.
    assert_eq!(set_events(b, false), STATUS_SUCCESS);
    assert_eq!(send(a, b"later", lb).0, STATUS_SUCCESS);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(sink.seen().len(), 3, "no indication while disabled");
    assert_eq!(set_events(b, true), STATUS_SUCCESS);
    wait_for("the datagram sent while disabled", || {
        sink.seen().len() >= 4
    });
    assert_eq!(sink.seen()[3].bytes, b"later");
    assert_eq!(close(a), STATUS_SUCCESS);
    assert_eq!(close(b), STATUS_SUCCESS);
    assert_eq!(open_sockets(), open);
    client.finish();
}

#[test]
fn a_retained_list_comes_back_through_wsk_release() {
    let _serial = serial();
    let client = Client::register();
    let sink = Sink::new(STATUS_PENDING);
    let a = client.socket(None);
    let b = client.socket(Some(&sink));
    assert_eq!(bind(a, at(3)), STATUS_SUCCESS);
    assert_eq!(bind(b, at(4)), STATUS_SUCCESS);
    assert_eq!(set_events(b, true), STATUS_SUCCESS);
    let retained = counters().retained;
    assert_eq!(send(a, b"keep me", local(b)).0, STATUS_SUCCESS);
    wait_for("the indication", || !sink.seen().is_empty());
    assert!(counters().retained > retained);
    let head = sink.heads.lock().unwrap()[0] as *mut WSK_DATAGRAM_INDICATION;
    // The kept list still holds the datagram.
    // SAFETY: a retained list, valid until WskRelease.
    let kept = unsafe { head.read() };
    assert_eq!(kept.Buffer.Length, 7);
    // Later datagrams come in fresh lists meanwhile.
    sink.reply.store(STATUS_SUCCESS, Ordering::SeqCst);
    assert_eq!(send(a, b"next", local(b)).0, STATUS_SUCCESS);
    wait_for("the next indication", || sink.seen().len() >= 2);
    assert_ne!(sink.heads.lock().unwrap()[1], head as usize);
    let f = table(b).WskRelease.unwrap();
    // SAFETY: our socket and the list it retained.
    assert_eq!(unsafe { f(b, head) }, STATUS_SUCCESS);
    assert_eq!(close(a), STATUS_SUCCESS);
    assert_eq!(close(b), STATUS_SUCCESS);
    client.finish();
}

#[test]
fn refused_datagrams_wait_for_receive_from_and_close_cancels_it() {
    let _serial = serial();
    let client = Client::register();
    let sink = Sink::new(STATUS_DATA_NOT_ACCEPTED);
    let a = client.socket(None);
    let b = client.socket(Some(&sink));
    assert_eq!(bind(a, at(5)), STATUS_SUCCESS);
    assert_eq!(bind(b, at(6)), STATUS_SUCCESS);
    let (la, lb) = (local(a), local(b));
    assert_eq!(set_events(b, true), STATUS_SUCCESS);
    assert_eq!(send(a, b"first", lb).0, STATUS_SUCCESS);
    wait_for("the refused indication", || !sink.seen().is_empty());
    // The refusal disabled the event.
    assert_eq!(send(a, b"second", lb).0, STATUS_SUCCESS);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        sink.seen().len(),
        1,
        "the event is disabled after a refusal"
    );
    // The refused datagram is kept: a receive takes it at once.
    let r1 = Receive::post(b, 64);
    assert_eq!(r1.returned, STATUS_SUCCESS, "held datagram: immediate");
    assert_eq!(r1.result(), (STATUS_SUCCESS, b"first".to_vec(), la));
    assert_eq!(*r1.control_length, 0);
    assert_eq!(*r1.control_flags, 0);
    // The next one is read for a pending request.
    let r2 = Receive::post(b, 4);
    let (status, bytes, from) = r2.result();
    assert_eq!((status, from), (STATUS_SUCCESS, la));
    assert_eq!(bytes, b"seco", "cut to the buffer");
    assert_eq!(*r2.control_flags, super::receive::MSG_TRUNC);
    // Nothing more: the request pends until the close cancels it.
    let r3 = Receive::post(b, 64);
    assert_eq!(r3.returned, STATUS_PENDING);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(r3.request.completions(), 0);
    assert_eq!(close(b), STATUS_SUCCESS);
    assert_eq!(r3.result().0, STATUS_CANCELLED);
    assert_eq!(close(a), STATUS_SUCCESS);
    client.finish();
}

#[test]
fn binding_an_address_in_use_or_twice_fails() {
    let _serial = serial();
    let client = Client::register();
    let a = client.socket(None);
    let b = client.socket(None);
    assert_eq!(bind(a, at(7)), STATUS_SUCCESS);
    assert_eq!(bind(b, local(a)), STATUS_ADDRESS_ALREADY_EXISTS);
    assert_eq!(bind(a, at(8)), STATUS_ADDRESS_ALREADY_ASSOCIATED);
    let taken = local(a);
    assert_eq!(close(a), STATUS_SUCCESS);
    // The address is free again once the close completed.
    assert_eq!(bind(b, taken), STATUS_SUCCESS);
    assert_eq!(close(b), STATUS_SUCCESS);
    client.finish();
}

#[test]
fn unsupported_sockets_fail_with_their_irp_completed() {
    let _serial = serial();
    let client = Client::register();
    let open = open_sockets();
    let (returned, status, info) = client.try_socket(
        WSK_FLAG_CONNECTION_SOCKET,
        1,
        std::ptr::null_mut(),
        std::ptr::null(),
    );
    assert_eq!(
        (returned, status, info),
        (STATUS_NOT_SUPPORTED, STATUS_NOT_SUPPORTED, 0)
    );
    let (_, status, _) = client.try_socket(
        WSK_FLAG_DATAGRAM_SOCKET,
        1,
        std::ptr::null_mut(),
        std::ptr::null(),
    );
    assert_eq!(
        status, STATUS_NOT_SUPPORTED,
        "SOCK_STREAM as a datagram socket"
    );
    assert_eq!(open_sockets(), open);
    client.finish();
}

#[test]
fn deregister_waits_for_the_last_socket() {
    let _serial = serial();
    let mut client = Client::register();
    let s = client.socket(None);
    // SAFETY: captured in `register`, released once.
    unsafe { WskReleaseProviderNPI(&raw mut *client.registration) };
    let returned = std::sync::Arc::new(AtomicBool::new(false));
    let block = std::ptr::from_mut::<WSK_REGISTRATION>(&mut *client.registration) as usize;
    let flag = returned.clone();
    let waiter = std::thread::spawn(move || {
        // SAFETY: the registered block, alive until this thread is joined.
        unsafe { WskDeregister(block as *mut WSK_REGISTRATION) };
        flag.store(true, Ordering::SeqCst);
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !returned.load(Ordering::SeqCst),
        "WskDeregister returned with a socket open"
    );
    assert_eq!(close(s), STATUS_SUCCESS);
    waiter.join().unwrap();
    assert!(returned.load(Ordering::SeqCst));
}

#[test]
fn the_capture_holds_each_datagram_sent_and_received() {
    let _serial = serial();
    let path = std::env::temp_dir().join(format!("kbottle-netio-{}.pcap", std::process::id()));
    let client = Client::register();
    let sink = Sink::new(STATUS_SUCCESS);
    let a = client.socket(None);
    let b = client.socket(Some(&sink));
    assert_eq!(bind(a, at(9)), STATUS_SUCCESS);
    assert_eq!(bind(b, at(10)), STATUS_SUCCESS);
    let (la, lb) = (local(a), local(b));
    assert_eq!(set_events(b, true), STATUS_SUCCESS);
    set_capture(Some(path.clone())).unwrap();
    let payload = pattern(300, 9);
    assert_eq!(send(a, &payload, lb).0, STATUS_SUCCESS);
    wait_for("the indication", || !sink.seen().is_empty());
    set_capture(None).unwrap();
    assert_eq!(close(a), STATUS_SUCCESS);
    assert_eq!(close(b), STATUS_SUCCESS);
    client.finish();

    let file = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(file[0..4], 0xA1B2_C3D4_u32.to_le_bytes(), "pcap magic");
    assert_eq!(file[20..24], 1u32.to_le_bytes(), "link type Ethernet");
    let frame_len = 42 + payload.len();
    assert_eq!(file.len(), 24 + 2 * (16 + frame_len), "two records");
    for k in 0..2 {
        let record = &file[24 + k * (16 + frame_len)..];
        assert_eq!(record[8..12], (frame_len as u32).to_le_bytes());
        let frame = &record[16..16 + frame_len];
        assert_eq!(frame[12..14], [0x08, 0x00], "EtherType IPv4");
        let ip = &frame[14..34];
        let mut sum: u32 = ip
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xFFFF {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        assert_eq!(sum, 0xFFFF, "IPv4 header checksum");
        assert_eq!(ip[12..16], la.ip().octets());
        assert_eq!(ip[16..20], lb.ip().octets());
        assert_eq!(frame[34..36], la.port().to_be_bytes());
        assert_eq!(frame[36..38], lb.port().to_be_bytes());
        assert_eq!(&frame[42..], &payload[..]);
    }
}

/// Turns split mode off however the test ends.
struct Split;

impl Drop for Split {
    fn drop(&mut self) {
        set_split_indications(false);
    }
}

#[test]
fn split_mode_indicates_each_datagram_in_two_mdls() {
    let _serial = serial();
    let client = Client::register();
    let sink = Sink::new(STATUS_SUCCESS);
    let a = client.socket(None);
    let b = client.socket(Some(&sink));
    assert_eq!(bind(a, at(11)), STATUS_SUCCESS);
    assert_eq!(bind(b, at(12)), STATUS_SUCCESS);
    assert_eq!(set_events(b, true), STATUS_SUCCESS);
    let split = Split;
    set_split_indications(true);
    for n in [1usize, 2, 1001] {
        assert_eq!(send(a, &pattern(n, 5), local(b)).0, STATUS_SUCCESS);
    }
    wait_for("three indications", || sink.seen().len() >= 3);
    drop(split);
    for (s, n) in sink.seen().iter().zip([1usize, 2, 1001]) {
        assert_eq!(s.bytes, pattern(n, 5), "{n} bytes");
        assert_eq!(s.mdls, if n == 1 { 1 } else { 2 }, "MDLs holding {n} bytes");
    }
    assert_eq!(close(a), STATUS_SUCCESS);
    assert_eq!(close(b), STATUS_SUCCESS);
    client.finish();
}

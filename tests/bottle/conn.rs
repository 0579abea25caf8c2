//! One NDK connection between two bottled adapters, in either address
//! family, as a kernel consumer makes it: open the adapters, a PD, CQ and
//! QP per end, listen / connect / accept / complete connect with private
//! data, registered regions, SEND / RDMA READ / RDMA WRITE with every byte
//! checked, disconnect and close. Addresses are `IpAddr` / `SocketAddr`
//! throughout, so one helper serves IPv4 and IPv6 (the bottle's other
//! files each carry an IPv4-only handshake of their own).
//!
//! Memory of a bottled adapter is described by MDLs whose page numbers are
//! physical in the bottle's model (`kbottle::mm::phys_of`).

#![allow(dead_code)] // each including file uses part of it

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ptr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use kbottle::Machine;
use kbottle::machine::AdapterId;
use ndkpi::*;

use crate::ndk::{self, close_wait, finish};
use testkit::adapter::*;

/// The NDK version the consumer asks for.
pub const VERSION: NDK_VERSION = NDK_VERSION { Major: 1, Minor: 2 };

/// Private data of the connect request and of the accept.
pub const CONNECT_DATA: &[u8] = b"segment connect";
pub const ACCEPT_DATA: &[u8] = b"segment accept";

/// CQ depth of each end: room for every work request this helper keeps
/// outstanding at once.
const CQ_DEPTH: u32 = 64;
/// Receive and initiator queue depths of each QP.
const QP_DEPTH: u32 = 16;

/// How long a handshake step or a transfer may take.
pub const STEP: Duration = Duration::from_secs(10);

/// Listening ports: each connection its own (listeners of parallel tests
/// on one machine never collide).
static PORTS: AtomicU16 = AtomicU16::new(9100);

/// A port no other connection of this process used.
pub fn fresh_port() -> u16 {
    PORTS.fetch_add(1, Ordering::SeqCst)
}

/// Polls `done` every 200 µs until it holds; false after `timeout`.
pub fn wait_for(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// [`wait_for`] that fails the test naming `what`.
#[track_caller]
pub fn wait_step(what: &str, done: impl FnMut() -> bool) {
    assert!(wait_for(STEP, done), "timed out waiting for {what}");
}

/// A test pattern, distinct per `seed` and position.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(31)
                .wrapping_add(u32::from(seed) * 7 + (i >> 8) as u32) as u8
        })
        .collect()
}

// ---------------------------------------------------------------- addresses

/// The Windows socket address of `at`.
pub fn sockaddr(at: SocketAddr) -> SockAddr {
    SockAddr::ip(at.ip(), at.port())
}

/// The unspecified address of `ip`'s family.
pub fn unspecified_like(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// Decodes a `SOCKADDR_IN` / `SOCKADDR_IN6` the provider wrote.
pub fn decode_sockaddr(buf: &[u8], len: usize) -> Option<SocketAddr> {
    let family = u16::from_le_bytes(buf.get(0..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(buf.get(2..4)?.try_into().ok()?);
    match family {
        AF_INET if len == size_of::<SOCKADDR_IN>() => {
            let o: [u8; 4] = buf.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::from(o), port))
        }
        AF_INET6 if len == size_of::<SOCKADDR_IN6>() => {
            let o: [u8; 16] = buf.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::from(o), port))
        }
        _ => None,
    }
}

/// What one of the `Ndk*GetLocalAddress` / `NdkGetPeerAddress` entries
/// reports for `object`.
#[track_caller]
fn address_of<T>(
    entry: Option<unsafe extern "win64" fn(*mut T, PSOCKADDR, *mut ULONG) -> NTSTATUS>,
    object: *mut T,
    what: &str,
) -> SocketAddr {
    let mut buf = [0u8; 28];
    let mut len = buf.len() as ULONG;
    let f = entry.unwrap();
    // SAFETY: our live object and a 28-byte buffer of that length.
    let status = unsafe { f(object, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!(status, STATUS_SUCCESS, "{what}");
    decode_sockaddr(&buf, len as usize)
        .unwrap_or_else(|| panic!("{what}: not a socket address: {len} bytes {buf:?}"))
}

/// `NdkGetLocalAddress` of a connector.
pub fn connector_local(c: *mut NDK_CONNECTOR) -> SocketAddr {
    address_of(
        connector_table(c).NdkGetLocalAddress,
        c,
        "NdkGetLocalAddress",
    )
}

/// `NdkGetPeerAddress` of a connector.
pub fn connector_peer(c: *mut NDK_CONNECTOR) -> SocketAddr {
    address_of(connector_table(c).NdkGetPeerAddress, c, "NdkGetPeerAddress")
}

/// `NdkGetLocalAddress` of a listener.
pub fn listener_local(l: *mut NDK_LISTENER) -> SocketAddr {
    address_of(
        listener_table(l).NdkGetLocalAddress,
        l,
        "listener NdkGetLocalAddress",
    )
}

// ---------------------------------------------------------------- adapter

/// One open `NDK_ADAPTER` of a bottled V.
#[derive(Debug)]
pub struct Nic<'m> {
    pub machine: &'m Machine,
    pub id: AdapterId,
    pub adapter: *mut NDK_ADAPTER,
}

impl<'m> Nic<'m> {
    /// Opens NDK on V `id` of `machine`.
    #[track_caller]
    pub fn open(machine: &'m Machine, id: AdapterId) -> Self {
        let adapter = machine
            .open_ndk(id, VERSION)
            .unwrap_or_else(|s| panic!("open NDK on {id:?}: {:#010x}", s as u32));
        assert!(!adapter.is_null(), "open NDK on {id:?}: null adapter");
        Self {
            machine,
            id,
            adapter,
        }
    }

    /// Closes the NDK adapter (every object of it closed before).
    pub fn close(self) {
        self.machine.close_ndk(self.id, self.adapter);
    }

    /// An MDL over `len` bytes at `va` as the bottled kernel sees it:
    /// page numbers are physical (`phys_of(va) >> 12`).
    pub fn mdl(va: u64, len: u32) -> Mdl {
        ndk::mdl(true, va, len)
    }

    #[track_caller]
    pub fn create_pd(&self) -> *mut NDK_PD {
        ndk::create_pd(self.adapter)
    }

    /// A CQ of `depth` whose notifications nobody reads.
    #[track_caller]
    pub fn create_cq(&self, depth: u32) -> *mut NDK_CQ {
        ndk::create_cq(self.adapter, depth, Recorder::new())
    }

    #[track_caller]
    pub fn create_connector(&self) -> *mut NDK_CONNECTOR {
        ndk::create_connector(self.adapter)
    }

    #[track_caller]
    pub fn create_listener(&self, events: &Recorder) -> *mut NDK_LISTENER {
        ndk::create_listener(self.adapter, events)
    }

    /// `NdkListen` on `at` with a new listener: the listener and the
    /// recorder of its connect events, or the failing status (the
    /// listener then closed).
    pub fn listen(&self, at: SocketAddr) -> Result<Listening, NTSTATUS> {
        let events = Recorder::new();
        let listener = self.create_listener(events);
        let rec = Recorder::new();
        let f = listener_table(listener).NdkListen.unwrap();
        let addr = sockaddr(at);
        // SAFETY: our listener and a valid address of `addr.len()` bytes.
        let status = unsafe {
            f(
                listener,
                addr.ptr(),
                addr.len(),
                Some(request_cb),
                rec.ctx(),
            )
        };
        match finish(status, rec, "listen") {
            STATUS_SUCCESS => Ok(Listening { listener, events }),
            status => {
                close_wait(listener);
                Err(status)
            }
        }
    }

    /// Waits until the RNIC behind this adapter holds `ip` (an address
    /// the stack gave V reaches the driver through its IP Helper
    /// notification, asynchronously): a listen on it succeeds. Whether
    /// that happened within `timeout`.
    pub fn wait_address(&self, ip: IpAddr, timeout: Duration) -> bool {
        wait_for(timeout, || {
            match self.listen(SocketAddr::new(ip, fresh_port())) {
                Ok(l) => {
                    l.close();
                    true
                }
                Err(_) => false,
            }
        })
    }

    /// Waits until the RNIC no longer holds `ip`: a listen on it fails
    /// with `STATUS_INVALID_ADDRESS`. Whether that happened within
    /// `timeout`; any other failure fails the test.
    pub fn wait_address_gone(&self, ip: IpAddr, timeout: Duration) -> bool {
        wait_for(timeout, || {
            match self.listen(SocketAddr::new(ip, fresh_port())) {
                Ok(l) => {
                    l.close();
                    false
                }
                Err(STATUS_INVALID_ADDRESS) => true,
                Err(s) => panic!("listen on {ip} while it goes: {s:#010x}"),
            }
        })
    }
}

/// A listening listener and the recorder of its connect events.
#[derive(Debug)]
pub struct Listening {
    pub listener: *mut NDK_LISTENER,
    pub events: &'static Recorder,
}

impl Listening {
    pub fn close(self) {
        close_wait(self.listener);
    }
}

// ---------------------------------------------------------------- regions

/// A registered region over a buffer of ours.
pub struct Region {
    pub mr: *mut NDK_MR,
    /// The MDL the MR was registered with; lives as long as the region.
    _mdl: Mdl,
    buf: Vec<u8>,
    pub local: u32,
    pub remote: u32,
}

impl Region {
    #[track_caller]
    pub fn new(pd: *mut NDK_PD, contents: Vec<u8>, flags: u32) -> Self {
        let mut buf = contents;
        let va = buf.as_mut_ptr() as u64;
        let mut mdl = Nic::mdl(va, buf.len() as u32);
        let mr = create_mr(pd, false);
        let rec = Recorder::new();
        let f = mr_table(mr).NdkRegisterMr.unwrap();
        // SAFETY: our MR and an MDL over live memory we keep registered
        // for the region's life.
        let status = unsafe { f(mr, mdl.ptr(), buf.len(), flags, Some(request_cb), rec.ctx()) };
        assert_eq!(
            finish(status, rec, "register MR"),
            STATUS_SUCCESS,
            "NdkRegisterMr"
        );
        let (local, remote) = mr_tokens(mr);
        Self {
            mr,
            _mdl: mdl,
            buf,
            local,
            remote,
        }
    }

    pub fn va(&self) -> u64 {
        self.buf.as_ptr() as u64
    }

    pub fn sge(&self, offset: usize, len: usize) -> NDK_SGE {
        assert!(offset + len <= self.buf.len());
        sge(self.va() + offset as u64, len as u32, self.local)
    }

    /// The region's bytes (read after the completion that wrote them).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    #[track_caller]
    pub fn release(self) {
        let rec = Recorder::new();
        let f = mr_table(self.mr).NdkDeregisterMr.unwrap();
        // SAFETY: our registered MR.
        let status = unsafe { f(self.mr, Some(request_cb), rec.ctx()) };
        assert_eq!(finish(status, rec, "deregister MR"), STATUS_SUCCESS);
        close_wait(self.mr);
    }
}

// ---------------------------------------------------------------- ends

/// One end of a connection: its adapter's objects.
pub struct End<'a, 'm> {
    pub nic: &'a Nic<'m>,
    pub pd: *mut NDK_PD,
    pub cq: *mut NDK_CQ,
    pub qp: *mut NDK_QP,
    pub connector: *mut NDK_CONNECTOR,
    pub disc: &'static Recorder,
}

impl<'a, 'm> End<'a, 'm> {
    #[track_caller]
    pub fn new(nic: &'a Nic<'m>, qp_ctx: usize) -> Self {
        let pd = nic.create_pd();
        let cq = nic.create_cq(CQ_DEPTH);
        let qp = create_qp(pd, cq, cq, qp_ctx, QP_DEPTH, QP_DEPTH, 2, 2, 0).expect("NdkCreateQp");
        Self {
            nic,
            pd,
            cq,
            qp,
            connector: ptr::null_mut(),
            disc: Recorder::new(),
        }
    }

    /// A region of this end's PD over `contents`.
    #[track_caller]
    pub fn region(&self, contents: Vec<u8>, flags: u32) -> Region {
        Region::new(self.pd, contents, flags)
    }

    /// Completions of this end's CQ that arrived by now (none waited for).
    pub fn poll(&self) -> Vec<NDK_RESULT_EX> {
        results_ex(self.cq, CQ_DEPTH as usize)
    }

    /// Exactly one completion (bounded wait), checked: success, of type
    /// `ty`, for request `ctx`, and `bytes` long if given.
    #[track_caller]
    pub fn expect_one(&self, ty: NDK_OPERATION_TYPE, ctx: usize, bytes: Option<u32>) {
        let mut got = Vec::new();
        wait_step(&format!("completion {ctx:#x}"), || {
            got.extend(results_ex(self.cq, 1));
            !got.is_empty()
        });
        let r = got[0];
        assert_eq!(
            (r.Status, r.Type, r.RequestContext as usize),
            (STATUS_SUCCESS, ty, ctx),
            "completion {r:?}"
        );
        if let Some(n) = bytes {
            assert_eq!(r.BytesTransferred, n, "bytes of {r:?}");
        }
    }

    #[track_caller]
    fn close(self) {
        if !self.connector.is_null() {
            close_wait(self.connector);
        }
        close_wait(self.qp);
        close_wait(self.cq);
        close_wait(self.pd);
    }
}

/// The private data a connector received (the peer's, zero-padded).
#[track_caller]
pub fn connection_data(c: *mut NDK_CONNECTOR) -> Vec<u8> {
    let f = connector_table(c).NdkGetConnectionData.unwrap();
    let (mut ird, mut ord, mut len) = (0u32, 0u32, 0u32);
    // SAFETY: our connector; a null buffer of length 0 asks for the size.
    let status = unsafe { f(c, &raw mut ird, &raw mut ord, ptr::null_mut(), &raw mut len) };
    assert_eq!(status, STATUS_SUCCESS, "NdkGetConnectionData size");
    let mut data = vec![0u8; len as usize];
    // SAFETY: our connector and a buffer of `len` bytes.
    let status = unsafe {
        f(
            c,
            &raw mut ird,
            &raw mut ord,
            data.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    assert_eq!(status, STATUS_SUCCESS, "NdkGetConnectionData");
    data.truncate(len as usize);
    data
}

// ---------------------------------------------------------------- connection

/// Connects a new QP of `from` (from `local`, or the unspecified address
/// of `at`'s family) to `at`, where nobody is expected to answer or
/// where the connect cannot start: the connect's final status (never
/// success: a connect event would need a listener of ours), everything
/// made closed.
#[track_caller]
pub fn try_connect(from: &Nic<'_>, local: Option<IpAddr>, at: SocketAddr) -> NTSTATUS {
    let mut end = End::new(from, 0xC1);
    end.connector = from.create_connector();
    let done = Recorder::new();
    let src = SocketAddr::new(local.unwrap_or_else(|| unspecified_like(at.ip())), 0);
    let status = connect(
        end.connector,
        end.qp,
        &sockaddr(src),
        &sockaddr(at),
        CONNECT_DATA,
        done,
    );
    let status = finish(status, done, "the connect completion");
    assert_ne!(
        status, STATUS_SUCCESS,
        "connected to {at}, where nobody listens"
    );
    end.close();
    status
}

/// A connection from a QP of one adapter (active) to a QP of another
/// (passive, listening).
pub struct Connection<'a, 'm> {
    pub active: End<'a, 'm>,
    pub passive: End<'a, 'm>,
    pub listening: Listening,
    /// The passive end's listening address.
    pub at: SocketAddr,
    /// The active end's address as `NdkGetLocalAddress` reports it.
    pub from: SocketAddr,
}

/// A posted RDMA WRITE or READ not waited for yet: its regions stay
/// registered until [`Pending::finish`].
pub struct Pending {
    /// The region the data lands in.
    sink: Region,
    /// The region the data comes from.
    source: Region,
    /// The CQ and request context of the completion.
    cq: *mut NDK_CQ,
    ctx: usize,
    ty: NDK_OPERATION_TYPE,
    data: Vec<u8>,
}

impl Pending {
    /// Whether the request completed by now (its completion taken; the
    /// caller then calls [`Pending::finish`]); a completion that is not
    /// success fails the test.
    pub fn done(&self, taken: &mut Vec<NDK_RESULT_EX>) -> bool {
        taken.extend(results_ex(self.cq, 1));
        if let Some(r) = taken.first() {
            assert_eq!(
                (r.Status, r.Type, r.RequestContext as usize),
                (STATUS_SUCCESS, self.ty, self.ctx),
                "completion {r:?}"
            );
            return true;
        }
        false
    }

    /// Waits up to `timeout` for the request to complete with an error:
    /// that completion's status (success fails the test), the regions
    /// released.
    #[track_caller]
    pub fn fails(self, timeout: Duration) -> NTSTATUS {
        let mut taken = Vec::new();
        assert!(
            wait_for(timeout, || {
                taken.extend(results_ex(self.cq, 1));
                !taken.is_empty()
            }),
            "the pending request neither completed nor failed"
        );
        let r = taken[0];
        assert_eq!(
            (r.Type, r.RequestContext as usize),
            (self.ty, self.ctx),
            "completion {r:?}"
        );
        assert_ne!(r.Status, STATUS_SUCCESS, "the pending request succeeded");
        self.sink.release();
        self.source.release();
        r.Status
    }

    /// Whether the sink still holds none of the data (nothing of the
    /// transfer landed yet).
    pub fn sink_untouched(&self) -> bool {
        self.sink.bytes().iter().all(|&b| b == 0)
    }

    /// Waits up to `timeout` for the completion, then checks the data
    /// byte for byte and releases the regions.
    #[track_caller]
    pub fn finish(self, timeout: Duration) {
        let mut taken = Vec::new();
        assert!(
            wait_for(timeout, || self.done(&mut taken)),
            "the pending {} never completed",
            if self.ty == NdkOperationTypeWrite {
                "RDMA WRITE"
            } else {
                "RDMA READ"
            }
        );
        assert!(
            self.sink.bytes() == self.data.as_slice(),
            "data of the pending transfer differs"
        );
        self.sink.release();
        self.source.release();
    }
}

impl<'a, 'm> Connection<'a, 'm> {
    /// Listens on `to` at `at`, connects from `from` (from the
    /// unspecified address of `at`'s family when `local` is `None`, else
    /// from `local`), accepts and completes the connection, private data
    /// checked both ways, and checks what both connectors and the
    /// listener report as their addresses. The failing status of the
    /// listen or of the connect otherwise (everything made closed).
    #[track_caller]
    pub fn try_establish(
        from: &'a Nic<'m>,
        local: Option<IpAddr>,
        to: &'a Nic<'m>,
        at: SocketAddr,
    ) -> Result<Self, NTSTATUS> {
        let listening = to.listen(at)?;
        assert_eq!(
            listener_local(listening.listener),
            at,
            "the listener's address"
        );
        let mut active = End::new(from, 0xA1);
        active.connector = from.create_connector();
        let connected = Recorder::new();
        let src = SocketAddr::new(local.unwrap_or_else(|| unspecified_like(at.ip())), 0);
        let status = connect(
            active.connector,
            active.qp,
            &sockaddr(src),
            &sockaddr(at),
            CONNECT_DATA,
            connected,
        );
        if status != STATUS_PENDING {
            active.close();
            listening.close();
            return Err(status);
        }
        // Pending: the listener hears of the request, or the connect
        // fails on its own.
        wait_step("the connect event or a failed connect", || {
            listening.events.count() >= 1 || connected.count() >= 1
        });
        if listening.events.count() == 0 {
            let status = connected.statuses()[0];
            assert_ne!(status, STATUS_SUCCESS, "connected without a connect event");
            active.close();
            listening.close();
            return Err(status);
        }
        let mut passive = End::new(to, 0xB1);
        passive.connector = listening.events.calls()[0].object as *mut NDK_CONNECTOR;
        assert!(!passive.connector.is_null());
        assert!(
            connection_data(passive.connector).starts_with(CONNECT_DATA),
            "the connect request's private data"
        );
        let accepted = Recorder::new();
        assert_eq!(
            accept(
                passive.connector,
                passive.qp,
                ACCEPT_DATA,
                passive.disc,
                accepted
            ),
            STATUS_PENDING,
            "NdkAccept"
        );
        wait_step("the connect completion", || connected.count() >= 1);
        assert_eq!(connected.statuses(), vec![STATUS_SUCCESS], "connect status");
        assert!(
            connection_data(active.connector).starts_with(ACCEPT_DATA),
            "the accept's private data"
        );
        assert_eq!(
            complete_connect(active.connector, active.disc),
            STATUS_SUCCESS,
            "NdkCompleteConnect"
        );
        wait_step("the accept completion", || accepted.count() >= 1);
        assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS], "accept status");

        // Addresses: the passive end is where it listened; the active end
        // is the address it asked for (or one of its adapter's, of the
        // peer's family, when it asked for any) and the passive end's
        // peer is exactly that.
        let from_addr = connector_local(active.connector);
        assert_eq!(
            connector_peer(active.connector),
            at,
            "the active end's peer"
        );
        assert_eq!(
            connector_local(passive.connector),
            at,
            "the passive end's address"
        );
        assert_eq!(
            connector_peer(passive.connector),
            from_addr,
            "the passive end's peer"
        );
        assert_eq!(
            from_addr.is_ipv4(),
            at.is_ipv4(),
            "a connection has one family"
        );
        assert_ne!(from_addr.port(), 0, "the active end's port");
        if let Some(ip) = local.filter(|ip| !ip.is_unspecified()) {
            assert_eq!(from_addr.ip(), ip, "the active end's address");
        }
        Ok(Self {
            active,
            passive,
            listening,
            at,
            from: from_addr,
        })
    }

    /// [`Connection::try_establish`] that fails the test on error.
    #[track_caller]
    pub fn establish(
        from: &'a Nic<'m>,
        local: Option<IpAddr>,
        to: &'a Nic<'m>,
        at: SocketAddr,
    ) -> Self {
        Self::try_establish(from, local, to, at)
            .unwrap_or_else(|s| panic!("connection to {at}: {s:#010x}"))
    }

    /// A SEND of `len` bytes each way, the data and the bytes past it
    /// checked, and the receive's length.
    #[track_caller]
    pub fn sends(&self, len: usize) {
        for (from, to, seed) in [
            (&self.active, &self.passive, 1u8),
            (&self.passive, &self.active, 2u8),
        ] {
            let data = pattern(len, seed.wrapping_add(len as u8));
            let source = from.region(data.clone(), 0);
            let sink = to.region(vec![0xEE; len + 64], NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
            assert_eq!(
                receive(to.qp, 0x10, &[sink.sge(0, len + 64)]),
                STATUS_SUCCESS,
                "NdkReceive"
            );
            assert_eq!(
                send(from.qp, 0x20, &[source.sge(0, len)], 0),
                STATUS_SUCCESS,
                "NdkSend"
            );
            from.expect_one(NdkOperationTypeSend, 0x20, None);
            to.expect_one(NdkOperationTypeReceive, 0x10, Some(len as u32));
            assert_eq!(&sink.bytes()[..len], &data[..], "SEND data of {len} bytes");
            assert!(
                sink.bytes()[len..].iter().all(|&v| v == 0xEE),
                "past the SEND of {len} bytes"
            );
            sink.release();
            source.release();
        }
    }

    /// Posts an RDMA WRITE of `len` bytes by the active end into the
    /// passive end's memory; not waited for.
    #[track_caller]
    pub fn post_write(&self, len: usize, seed: u8) -> Pending {
        let data = pattern(len, seed);
        let source = self.active.region(data.clone(), 0);
        let sink = self.passive.region(
            vec![0u8; len],
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
        );
        let sges = [source.sge(0, len)];
        assert_eq!(
            write(self.active.qp, 0x30, &sges, sink.va(), sink.remote, 0),
            STATUS_SUCCESS,
            "NdkWrite"
        );
        Pending {
            sink,
            source,
            cq: self.active.cq,
            ctx: 0x30,
            ty: NdkOperationTypeWrite,
            data,
        }
    }

    /// Posts an RDMA READ of `len` bytes by the active end from the
    /// passive end's memory; not waited for.
    #[track_caller]
    pub fn post_read(&self, len: usize, seed: u8) -> Pending {
        let data = pattern(len, seed);
        let source = self
            .passive
            .region(data.clone(), NDK_MR_FLAG_ALLOW_REMOTE_READ);
        let sink = self
            .active
            .region(vec![0u8; len], NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        let sges = [sink.sge(0, len)];
        assert_eq!(
            read(self.active.qp, 0x40, &sges, source.va(), source.remote, 0),
            STATUS_SUCCESS,
            "NdkRead"
        );
        Pending {
            sink,
            source,
            cq: self.active.cq,
            ctx: 0x40,
            ty: NdkOperationTypeRead,
            data,
        }
    }

    /// An RDMA WRITE of `len` bytes, checked byte for byte.
    #[track_caller]
    pub fn rdma_write(&self, len: usize) {
        self.post_write(len, 3u8.wrapping_add(len as u8))
            .finish(STEP);
    }

    /// An RDMA READ of `len` bytes, checked byte for byte.
    #[track_caller]
    pub fn rdma_read(&self, len: usize) {
        self.post_read(len, 4u8.wrapping_add(len as u8))
            .finish(STEP);
    }

    /// SENDs each way, an RDMA WRITE and an RDMA READ of each of `sizes`.
    #[track_caller]
    pub fn exchange(&self, sizes: &[usize]) {
        for &len in sizes {
            self.sends(len);
            self.rdma_write(len);
            self.rdma_read(len);
        }
    }

    /// Disconnects from the active end (the passive end hears of it) and
    /// closes everything.
    #[track_caller]
    pub fn close(self) {
        let done = Recorder::new();
        let status = disconnect(self.active.connector, done);
        assert_eq!(
            finish(status, done, "disconnect"),
            STATUS_SUCCESS,
            "NdkDisconnect"
        );
        wait_step("the disconnect event", || self.passive.disc.count() >= 1);
        self.active.close();
        self.passive.close();
        self.listening.close();
    }

    /// Closes everything without an orderly disconnect (a connection whose
    /// QP failed): closing a connector releases its connection.
    #[track_caller]
    pub fn abandon(self) {
        self.active.close();
        self.passive.close();
        self.listening.close();
    }
}

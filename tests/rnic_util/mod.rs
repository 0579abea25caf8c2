//! Shared harness and scenarios of the `rnic_*` integration tests: real
//! software RNIC adapters opened through the C entry points
//! (`RsNdkOpenAdapter`) and driven only through the NDK dispatch tables, as
//! a kernel consumer drives them. The scenarios are parameterised by a
//! [`Config`] function so the in-memory fabric and UDP on loopback run the
//! same code (`two_nodes::{mem, udp}` of the `rnic` binary).
//!
//! Completions are asynchronous (device threads): every wait is a bounded
//! poll loop whose limit is a hang guard, never a performance assertion.

#![allow(dead_code)]

use std::ffi::{CString, c_void};
use std::ptr;
use std::time::Duration;

use ndkpi::*;
use rsndk::{RsNdkAllocateMdl, RsNdkCloseAdapter, RsNdkFreeMdl, RsNdkOpenAdapter};

use testkit::adapter::*;

/// The configuration string of node `node` (1 or 2) of test number `test`.
/// Each test number must give addresses (and fabric names) no other test
/// of the same process uses.
pub type Config = fn(test: u8, node: u8) -> String;

/// Waits for `rec` to have recorded at least `n` calls.
pub fn wait_calls(rec: &Recorder, n: usize, what: &str) {
    wait_until(what, || rec.count() >= n);
}

/// Collects exactly `n` results from `cq` (bounded wait).
pub fn wait_results(cq: *mut NDK_CQ, n: usize) -> Vec<NDK_RESULT_EX> {
    let mut got = Vec::new();
    wait_until(&format!("{n} CQ results"), || {
        got.extend(results_ex(cq, n - got.len()));
        got.len() >= n
    });
    got
}

/// Collects exactly `n` results from `cq` with `NdkGetCqResults`.
pub fn wait_results_plain(cq: *mut NDK_CQ, n: usize) -> Vec<NDK_RESULT> {
    let mut got = Vec::new();
    wait_until(&format!("{n} CQ results"), || {
        got.extend(results(cq, n - got.len()));
        got.len() >= n
    });
    got
}

/// Waits up to a short grace period to make sure nothing more arrives.
pub fn settle() {
    std::thread::sleep(Duration::from_millis(50));
}

/// Completes a call that may pend: `SUCCESS` (no callback) or `PENDING`
/// (wait for the callback); returns the final status.
pub fn finish(status: NTSTATUS, rec: &Recorder, what: &str) -> NTSTATUS {
    if status == STATUS_PENDING {
        wait_calls(rec, 1, what);
        rec.statuses()[0]
    } else {
        assert_eq!(rec.count(), 0, "{what}: callback for a synchronous call");
        status
    }
}

/// Closes any object, waiting for a pending close.
pub fn close_wait<T>(object: *mut T) {
    let rec = Recorder::new();
    let status = close(object, rec);
    assert!(
        status == STATUS_SUCCESS || status == STATUS_PENDING,
        "close: {status:#x}"
    );
    finish(
        status,
        rec,
        &format!("close completion of {}", std::any::type_name::<T>()),
    );
}

// ---------------------------------------------------------------- nodes

/// One adapter opened through `RsNdkOpenAdapter`.
#[derive(Debug)]
pub struct Node {
    pub adapter: *mut NDK_ADAPTER,
    pub ip: std::net::IpAddr,
    pub config: String,
}

/// The address of a configuration string (IPv4, or IPv6 in brackets).
pub fn ip_of(config: &str) -> std::net::IpAddr {
    let transport = config.split(',').next().unwrap();
    if let Some((_, v6)) = transport.split_once('[') {
        return v6.trim_end_matches(']').parse().unwrap();
    }
    let addr = transport.rsplit(['/', ':']).next().unwrap();
    addr.parse::<std::net::Ipv4Addr>().unwrap().into()
}

impl Node {
    pub fn open(config: &str) -> Self {
        let c = CString::new(config).unwrap();
        let mut adapter = ptr::null_mut();
        // SAFETY: a valid C string and out-pointer.
        let status = unsafe { RsNdkOpenAdapter(c.as_ptr(), &raw mut adapter) };
        assert_eq!(status, STATUS_SUCCESS, "open {config}");
        assert!(!adapter.is_null());
        Self {
            adapter,
            ip: ip_of(config),
            config: config.to_owned(),
        }
    }

    pub fn close(self) {
        // SAFETY: our adapter, closed once, with every child closed.
        let status = unsafe { RsNdkCloseAdapter(self.adapter) };
        assert_eq!(status, STATUS_SUCCESS, "close adapter {}", self.config);
        // The checked platform of this address: no rule broken, and (once
        // the device stopped) no pool left.
        rsndk::platform::HostPlatform::for_address(self.ip).assert_no_violations();
    }

    pub fn addr(&self, port: u16) -> SockAddr {
        SockAddr::ip(self.ip, port)
    }

    /// The address of an IPv4 node (panics on an IPv6 one).
    pub fn ip4(&self) -> [u8; 4] {
        match self.ip {
            std::net::IpAddr::V4(v4) => v4.octets(),
            std::net::IpAddr::V6(v6) => panic!("{v6} is an IPv6 node"),
        }
    }

    pub fn create_pd(&self) -> *mut NDK_PD {
        let mut pd = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreatePd.unwrap();
        let rec = Recorder::new();
        // SAFETY: our adapter and a valid out-pointer.
        let status = unsafe { f(self.adapter, Some(create_cb), rec.ctx(), &raw mut pd) };
        assert_eq!(status, STATUS_SUCCESS, "create pd");
        pd
    }

    pub fn create_cq(&self, depth: u32, notify: &Recorder) -> *mut NDK_CQ {
        let mut cq = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreateCq.unwrap();
        let rec = Recorder::new();
        // SAFETY: our adapter and a valid out-pointer; `notify` outlives
        // the CQ (callers keep it until after the close).
        let status = unsafe {
            f(
                self.adapter,
                depth,
                Some(cq_cb),
                notify.ctx(),
                ptr::null_mut(),
                Some(create_cb),
                rec.ctx(),
                &raw mut cq,
            )
        };
        assert_eq!(status, STATUS_SUCCESS, "create cq");
        cq
    }

    pub fn create_connector(&self) -> *mut NDK_CONNECTOR {
        let mut c = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreateConnector.unwrap();
        let rec = Recorder::new();
        // SAFETY: our adapter and a valid out-pointer.
        let status = unsafe { f(self.adapter, Some(create_cb), rec.ctx(), &raw mut c) };
        assert_eq!(status, STATUS_SUCCESS, "create connector");
        c
    }

    pub fn create_listener(&self, events: &Recorder) -> *mut NDK_LISTENER {
        let mut l = ptr::null_mut();
        let f = adapter_table(self.adapter).NdkCreateListener.unwrap();
        let rec = Recorder::new();
        // SAFETY: our adapter and a valid out-pointer.
        let status = unsafe {
            f(
                self.adapter,
                Some(connect_cb),
                events.ctx(),
                Some(create_cb),
                rec.ctx(),
                &raw mut l,
            )
        };
        assert_eq!(status, STATUS_SUCCESS, "create listener");
        l
    }

    /// Builds a LAM for `length` bytes of `mdl` (synchronously).
    pub fn build_lam(&self, mdl: *mut MDL, length: usize) -> (Vec<u64>, u32) {
        let f = adapter_table(self.adapter).NdkBuildLAM.unwrap();
        let mut size = 0u32;
        let mut fbo = 0u32;
        // Ask for the size first.
        // SAFETY: our adapter and MDL; a null LAM with size 0 asks for it.
        let status = unsafe {
            f(
                self.adapter,
                mdl,
                length,
                None,
                ptr::null_mut(),
                ptr::null_mut(),
                &raw mut size,
                &raw mut fbo,
            )
        };
        assert_eq!(status, STATUS_BUFFER_TOO_SMALL, "LAM size query");
        assert!(size as usize >= size_of::<NDK_LOGICAL_ADDRESS_MAPPING>());
        let mut buf = vec![0u64; (size as usize).div_ceil(8)];
        // SAFETY: a buffer of `size` bytes, 8-aligned.
        let status = unsafe {
            f(
                self.adapter,
                mdl,
                length,
                None,
                ptr::null_mut(),
                buf.as_mut_ptr().cast(),
                &raw mut size,
                &raw mut fbo,
            )
        };
        assert_eq!(status, STATUS_SUCCESS, "NdkBuildLAM");
        (buf, fbo)
    }

    pub fn release_lam(&self, lam: &mut [u64]) {
        let f = adapter_table(self.adapter).NdkReleaseLAM.unwrap();
        // SAFETY: a LAM built on this adapter, released once.
        unsafe { f(self.adapter, lam.as_mut_ptr().cast()) };
    }
}

/// The page addresses of a LAM built by [`Node::build_lam`].
pub fn lam_pages(lam: &[u64]) -> Vec<NDK_LOGICAL_ADDRESS> {
    let m = lam.as_ptr().cast::<NDK_LOGICAL_ADDRESS_MAPPING>();
    // SAFETY: the provider filled a mapping header at the buffer's start.
    let count = unsafe { (*m).AdapterPageCount } as usize;
    // SAFETY: the page array follows, `count` entries long within the buffer.
    let first = unsafe { ptr::addr_of!((*m).AdapterPageArray) }.cast::<NDK_LOGICAL_ADDRESS>();
    // SAFETY: `count` initialised entries.
    unsafe { std::slice::from_raw_parts(first, count) }.to_vec()
}

// ---------------------------------------------------------------- memory

/// A registered MR over a caller's buffer, with its MDL.
#[derive(Debug)]
pub struct Region {
    pub mr: *mut NDK_MR,
    pub mdl: *mut MDL,
    pub va: u64,
    pub len: usize,
    pub local: u32,
    pub remote: u32,
}

impl Region {
    /// Registers `len` bytes at `va` (which must outlive the region).
    pub fn register(pd: *mut NDK_PD, va: *mut u8, len: usize, flags: u32) -> Self {
        let mr = create_mr(pd, false);
        let mdl = RsNdkAllocateMdl(va.cast::<c_void>(), len);
        assert!(!mdl.is_null(), "RsNdkAllocateMdl");
        let rec = Recorder::new();
        let f = mr_table(mr).NdkRegisterMr.unwrap();
        // SAFETY: our MR and a live MDL chain over live memory.
        let status = unsafe { f(mr, mdl, len, flags, Some(request_cb), rec.ctx()) };
        assert_eq!(finish(status, rec, "register"), STATUS_SUCCESS, "register");
        let (local, remote) = mr_tokens(mr);
        Self {
            mr,
            mdl,
            va: va as u64,
            len,
            local,
            remote,
        }
    }

    pub fn of(pd: *mut NDK_PD, buf: &mut [u8], flags: u32) -> Self {
        Self::register(pd, buf.as_mut_ptr(), buf.len(), flags)
    }

    pub fn sge(&self, offset: usize, len: usize) -> NDK_SGE {
        assert!(offset + len <= self.len);
        sge(self.va + offset as u64, len as u32, self.local)
    }

    pub fn release(self) {
        let rec = Recorder::new();
        let f = mr_table(self.mr).NdkDeregisterMr.unwrap();
        // SAFETY: our registered MR.
        let status = unsafe { f(self.mr, Some(request_cb), rec.ctx()) };
        assert_eq!(finish(status, rec, "deregister"), STATUS_SUCCESS);
        close_wait(self.mr);
        // SAFETY: our chain, no longer used by any registration.
        unsafe { RsNdkFreeMdl(self.mdl) };
    }
}

pub const REMOTE_ALL: u32 =
    NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;

/// A test pattern: distinct per `seed` and position.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(31)
                .wrapping_add(u32::from(seed) * 7 + (i >> 8) as u32) as u8
        })
        .collect()
}

// ---------------------------------------------------------------- connections

/// One end: its adapter, PD, CQ (both directions), QP and connector.
pub struct Side {
    pub node: Node,
    pub pd: *mut NDK_PD,
    pub cq: *mut NDK_CQ,
    pub qp: *mut NDK_QP,
    pub connector: *mut NDK_CONNECTOR,
    pub qp_ctx: usize,
    pub notify: &'static Recorder,
    pub disc: &'static Recorder,
}

impl Side {
    fn new(config: &str, qp_ctx: usize, depth: u32, sges: u32) -> Self {
        let node = Node::open(config);
        let notify = Recorder::new();
        let pd = node.create_pd();
        let cq = node.create_cq(256, notify);
        let qp = create_qp(pd, cq, cq, qp_ctx, depth, depth, sges, sges, 0).expect("create qp");
        Self {
            node,
            pd,
            cq,
            qp,
            connector: ptr::null_mut(),
            qp_ctx,
            notify,
            disc: Recorder::new(),
        }
    }

    /// Posts a receive and returns nothing; panics on a refused post.
    pub fn receive(&self, ctx: usize, sges: &[NDK_SGE]) {
        assert_eq!(receive(self.qp, ctx, sges), STATUS_SUCCESS, "NdkReceive");
    }
}

/// Two connected sides: A connected to B's listener.
pub struct Conn {
    pub a: Side,
    pub b: Side,
    pub listener: *mut NDK_LISTENER,
    pub listen_events: &'static Recorder,
}

pub const CONNECT_DATA: &[u8] = b"rsndk connect private data";
pub const ACCEPT_DATA: &[u8] = b"welcome";
pub const PORT: u16 = 5000;

fn connection_data(c: *mut NDK_CONNECTOR, buf: *mut u8, len: &mut u32) -> (NTSTATUS, u32, u32) {
    let f = connector_table(c).NdkGetConnectionData.unwrap();
    let (mut ird, mut ord) = (0u32, 0u32);
    // SAFETY: our connector; `buf` holds `*len` bytes or is null.
    let st = unsafe { f(c, &raw mut ird, &raw mut ord, buf.cast(), len) };
    (st, ird, ord)
}

impl Conn {
    /// Opens both adapters of test `test` and connects A to B, checking
    /// every step of the NDK connection sequence.
    pub fn open(cfg: Config, test: u8, depth: u32, sges: u32) -> Self {
        let a = Side::new(&cfg(test, 1), 0xA000 + usize::from(test), depth, sges);
        let b = Side::new(&cfg(test, 2), 0xB000 + usize::from(test), depth, sges);
        Self::connect(a, b)
    }

    fn connect(mut a: Side, mut b: Side) -> Self {
        let listen_events = Recorder::new();
        let listener = b.node.create_listener(listen_events);
        let lrec = Recorder::new();
        let status = {
            let f = listener_table(listener).NdkListen.unwrap();
            let addr = b.node.addr(PORT);
            // SAFETY: our listener and a valid address.
            unsafe {
                f(
                    listener,
                    addr.ptr(),
                    addr.len(),
                    Some(request_cb),
                    lrec.ctx(),
                )
            }
        };
        assert_eq!(finish(status, lrec, "listen"), STATUS_SUCCESS, "NdkListen");

        a.connector = a.node.create_connector();
        let connected = Recorder::new();
        let status = connect(
            a.connector,
            a.qp,
            &a.node.addr(0),
            &b.node.addr(PORT),
            CONNECT_DATA,
            connected,
        );
        assert_eq!(status, STATUS_PENDING, "NdkConnect");
        wait_calls(listen_events, 1, "connect event at B");
        assert_eq!(connected.count(), 0, "connect completes only after accept");
        b.connector = listen_events.calls()[0].object as *mut NDK_CONNECTOR;
        assert!(!b.connector.is_null());

        // NULL buffer, length 0: SUCCESS and the size.
        let mut len = 0u32;
        let (st, ird, ord) = connection_data(b.connector, ptr::null_mut(), &mut len);
        assert_eq!(st, STATUS_SUCCESS, "NdkGetConnectionData size query");
        assert!(
            len as usize >= CONNECT_DATA.len(),
            "connection data size {len} < {}",
            CONNECT_DATA.len()
        );
        assert!(ird >= 1 && ord >= 1, "ird {ird} ord {ord}");
        let mut data = vec![0u8; len as usize];
        let mut len2 = len;
        let (st, _, _) = connection_data(b.connector, data.as_mut_ptr(), &mut len2);
        assert_eq!(st, STATUS_SUCCESS, "NdkGetConnectionData");
        assert_eq!(len2, len);
        assert_eq!(&data[..CONNECT_DATA.len()], CONNECT_DATA, "private data");
        assert!(
            data[CONNECT_DATA.len()..].iter().all(|&x| x == 0),
            "padding after the private data is zero"
        );

        let accepted = Recorder::new();
        assert_eq!(
            accept(b.connector, b.qp, ACCEPT_DATA, b.disc, accepted),
            STATUS_PENDING,
            "NdkAccept"
        );
        wait_calls(connected, 1, "NdkConnect completion");
        assert_eq!(connected.statuses(), vec![STATUS_SUCCESS], "connect status");
        assert_eq!(
            accepted.count(),
            0,
            "accept completes after CompleteConnect"
        );
        // The active side sees the accept data.
        let mut len = 0u32;
        let (st, _, _) = connection_data(a.connector, ptr::null_mut(), &mut len);
        assert_eq!(st, STATUS_SUCCESS, "accept data size query");
        assert!(len as usize >= ACCEPT_DATA.len());
        let mut reply = vec![0u8; len as usize];
        let (st, _, _) = connection_data(a.connector, reply.as_mut_ptr(), &mut len);
        assert_eq!(st, STATUS_SUCCESS);
        assert_eq!(
            &reply[..ACCEPT_DATA.len()],
            ACCEPT_DATA,
            "accept private data"
        );
        assert!(reply[ACCEPT_DATA.len()..].iter().all(|&x| x == 0));

        assert_eq!(complete_connect(a.connector, a.disc), STATUS_SUCCESS);
        wait_calls(accepted, 1, "NdkAccept completion");
        assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS], "accept status");
        assert_eq!(listen_events.count(), 1, "exactly one connect event");
        Self {
            a,
            b,
            listener,
            listen_events,
        }
    }

    /// Disconnects (from A if still connected) and closes everything in
    /// reverse order of creation, then both adapters.
    pub fn close(self) {
        let done = Recorder::new();
        let st = disconnect(self.a.connector, done);
        if st == STATUS_PENDING {
            wait_calls(done, 1, "disconnect completion");
        }
        // The listener's close may pend while a connector it produced is
        // open; it must complete once they are closed.
        let lclose = Recorder::new();
        let lst = close(self.listener, lclose);
        assert!(
            lst == STATUS_SUCCESS || lst == STATUS_PENDING,
            "listener close {lst:#x}"
        );
        close_wait(self.b.connector);
        close_wait(self.a.connector);
        finish(lst, lclose, "listener close completion");
        for s in [self.b, self.a] {
            close_wait(s.qp);
            close_wait(s.cq);
            close_wait(s.pd);
            s.node.close();
        }
    }
}

/// Checks one completion.
#[track_caller]
pub fn expect(
    r: &NDK_RESULT_EX,
    status: NTSTATUS,
    ty: NDK_OPERATION_TYPE,
    qp_ctx: usize,
    ctx: usize,
) {
    assert_eq!(
        (
            r.Status,
            r.Type,
            r.QPContext as usize,
            r.RequestContext as usize
        ),
        (status, ty, qp_ctx, ctx),
        "result {r:?}"
    );
}

// ================================================================ scenarios

/// 1. Connection establishment with private data in both directions.
pub fn connect_accept_complete(cfg: Config, test: u8) {
    let c = Conn::open(cfg, test, 8, 2);
    // The connection carries traffic both ways.
    let mut ba = vec![0u8; 64];
    let mut bb = vec![0u8; 64];
    let ra = Region::of(c.a.pd, &mut ba, REMOTE_ALL);
    let rb = Region::of(c.b.pd, &mut bb, REMOTE_ALL);
    c.b.receive(1, &[rb.sge(0, 64)]);
    c.a.receive(2, &[ra.sge(0, 64)]);
    assert_eq!(send(c.a.qp, 3, &[ra.sge(0, 8)], 0), STATUS_SUCCESS);
    assert_eq!(send(c.b.qp, 4, &[rb.sge(8, 8)], 0), STATUS_SUCCESS);
    let ra_res = wait_results(c.a.cq, 2);
    let rb_res = wait_results(c.b.cq, 2);
    assert!(
        ra_res
            .iter()
            .chain(&rb_res)
            .all(|r| r.Status == STATUS_SUCCESS)
    );
    ra.release();
    rb.release();
    c.close();
}

/// 2. SEND/RECEIVE of 1 B, 4 KiB and 1 MiB with several SGEs.
pub fn send_receive_sizes(cfg: Config, test: u8) {
    let c = Conn::open(cfg, test, 8, 4);
    for (i, &len) in [1usize, 4096, 1 << 20].iter().enumerate() {
        let src = pattern(len, i as u8 + 1);
        let mut sbuf = src.clone();
        // Room for the message plus a guard that must stay untouched.
        let mut rbuf = vec![0xEEu8; len + 100];
        let rs = Region::of(c.a.pd, &mut sbuf, 0);
        let rr = Region::of(c.b.pd, &mut rbuf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        let send_sges: Vec<NDK_SGE> = if len == 1 {
            vec![rs.sge(0, 1)]
        } else {
            let a = len / 3 + 1;
            let b = len / 2 - 7;
            vec![rs.sge(0, a), rs.sge(a, b), rs.sge(a + b, len - a - b)]
        };
        let recv_sges: Vec<NDK_SGE> = if len == 1 {
            vec![rr.sge(0, 1), rr.sge(1, 99)]
        } else {
            let a = len / 4 + 3;
            vec![rr.sge(0, a), rr.sge(a, len - a - 1), rr.sge(len - 1, 101)]
        };
        let rctx = 0x7000 + i;
        let sctx = 0x8000 + i;
        c.b.receive(rctx, &recv_sges);
        assert_eq!(
            send(c.a.qp, sctx, &send_sges, 0),
            STATUS_SUCCESS,
            "NdkSend {len}"
        );
        let sres = wait_results_plain(c.a.cq, 1);
        assert_eq!(sres[0].Status, STATUS_SUCCESS, "send {len}");
        assert_eq!(sres[0].RequestContext as usize, sctx);
        assert_eq!(sres[0].QPContext as usize, c.a.qp_ctx);
        let rres = wait_results_plain(c.b.cq, 1);
        assert_eq!(rres[0].Status, STATUS_SUCCESS, "receive {len}");
        assert_eq!(
            rres[0].RequestContext as usize, rctx,
            "RequestContext unchanged"
        );
        assert_eq!(
            rres[0].QPContext as usize, c.b.qp_ctx,
            "QPContext unchanged"
        );
        assert_eq!(rres[0].BytesTransferred as usize, len, "BytesTransferred");
        rr.release();
        rs.release();
        assert!(rbuf[..len] == src[..], "payload of {len} B is byte-exact");
        assert!(
            rbuf[len..].iter().all(|&x| x == 0xEE),
            "nothing past the message"
        );
    }
    c.close();
}

/// 3. RDMA WRITE and READ against a peer MR; a READ beyond it fails.
pub fn write_read_and_out_of_bounds(cfg: Config, test: u8) {
    const N: usize = 64 * 1024 + 123;
    let c = Conn::open(cfg, test, 8, 4);
    let mut target = pattern(N, 9);
    let target_orig = target.clone();
    let mut local = pattern(N, 3);
    let local_orig = local.clone();
    let mut back = vec![0u8; N];
    let rt = Region::of(c.b.pd, &mut target, REMOTE_ALL);
    let rl = Region::of(c.a.pd, &mut local, 0);
    let rback = Region::of(c.a.pd, &mut back, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let remote = {
        // SAFETY: our MR.
        unsafe { mr_table(rt.mr).NdkGetRemoteTokenFromMr.unwrap()(rt.mr) }
    };
    assert_eq!(remote, rt.remote);

    // WRITE 1000..1000+W from two local SGEs.
    let w = 40_000;
    let sg = [rl.sge(0, 10_000), rl.sge(10_000, w - 10_000)];
    assert_eq!(
        write(c.a.qp, 1, &sg, rt.va + 1000, remote, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(&r[0], STATUS_SUCCESS, NdkOperationTypeWrite, c.a.qp_ctx, 1);
    // READ the whole target back into two SGEs.
    let sg = [rback.sge(0, 7), rback.sge(7, N - 7)];
    assert_eq!(read(c.a.qp, 2, &sg, rt.va, remote, 0), STATUS_SUCCESS);
    let r = wait_results(c.a.cq, 1);
    expect(&r[0], STATUS_SUCCESS, NdkOperationTypeRead, c.a.qp_ctx, 2);
    assert!(
        results_ex(c.b.cq, 4).is_empty(),
        "no completion at the target of RDMA"
    );

    // READ beyond the peer's region: remote access error, nothing touched.
    let mut sink = vec![0x5Au8; 256];
    let rsink = Region::of(c.a.pd, &mut sink, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let sg = [rsink.sge(0, 256)];
    assert_eq!(
        read(c.a.qp, 3, &sg, rt.va + N as u64 - 100, remote, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(
        &r[0],
        STATUS_REMOTE_RESOURCES,
        NdkOperationTypeRead,
        c.a.qp_ctx,
        3,
    );

    rsink.release();
    rback.release();
    rl.release();
    rt.release();
    assert!(sink.iter().all(|&x| x == 0x5A), "failed READ wrote nothing");
    let mut want = target_orig.clone();
    want[1000..1000 + w].copy_from_slice(&local_orig[..w]);
    assert!(
        target == want,
        "WRITE is byte-exact and touches only its range"
    );
    assert!(back == want, "READ is byte-exact");
    assert!(local == local_orig);
    c.close();
}

/// 4. Fast registration, remote use, send-and-invalidate, stale token.
// One scenario told start to end, as a consumer would run it.
#[allow(clippy::too_many_lines)]
pub fn fast_register_and_remote_invalidate(cfg: Config, test: u8) {
    let c = Conn::open(cfg, test, 8, 4);
    let pages = 4usize;
    let mut target = Pages::new(pages);
    let len = pages * 4096 - 0x300;
    let base = target.addr() + 0x100;
    let orig = pattern(len, 21);
    target.bytes()[0x100..0x100 + len].copy_from_slice(&orig);

    // B: a fast-register MR over `target` via a LAM.
    let mr = create_mr(c.b.pd, true);
    let rec = Recorder::new();
    let st = {
        let f = mr_table(mr).NdkInitializeFastRegisterMr.unwrap();
        // SAFETY: our MR.
        unsafe { f(mr, pages as u32, 1, Some(request_cb), rec.ctx()) }
    };
    assert_eq!(finish(st, rec, "init fast register"), STATUS_SUCCESS);
    let mdl = RsNdkAllocateMdl(base as *mut c_void, len);
    assert!(!mdl.is_null());
    let (mut lam, fbo) = c.b.node.build_lam(mdl, len);
    let page_addrs = lam_pages(&lam);
    assert_eq!(page_addrs.len(), pages);
    assert_eq!(fbo, 0x100, "first byte offset");
    let (_, before_fr) = mr_tokens(mr);
    assert_eq!(
        fast_register(c.b.qp, 0xF0, mr, &page_addrs, fbo, len, base, REMOTE_ALL_OP),
        STATUS_SUCCESS,
        "NdkFastRegister"
    );
    // The token was fixed when the MR was initialised: NdkFastRegister
    // keeps it.
    let (local, remote) = mr_tokens(mr);
    assert_eq!(local, remote);
    assert_eq!(remote, before_fr, "fast register keeps the MR's token");
    let r = wait_results(c.b.cq, 1);
    expect(
        &r[0],
        STATUS_SUCCESS,
        NdkOperationTypeFastRegister,
        c.b.qp_ctx,
        0xF0,
    );
    assert_eq!(mr_tokens(mr).1, remote, "token unchanged by the completion");

    // A: WRITE then READ through the new token.
    let mut data = pattern(5000, 77);
    let data_orig = data.clone();
    let mut back = vec![0u8; len];
    let rd = Region::of(c.a.pd, &mut data, 0);
    let rb = Region::of(c.a.pd, &mut back, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    assert_eq!(
        write(c.a.qp, 1, &[rd.sge(0, 5000)], base + 3000, remote, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(&r[0], STATUS_SUCCESS, NdkOperationTypeWrite, c.a.qp_ctx, 1);
    assert_eq!(
        read(c.a.qp, 2, &[rb.sge(0, len)], base, remote, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(&r[0], STATUS_SUCCESS, NdkOperationTypeRead, c.a.qp_ctx, 2);
    let mut want = orig.clone();
    want[3000..8000].copy_from_slice(&data_orig);
    assert!(back == want, "READ through the fast-registered MR");

    // A: send-and-invalidate with B's token.
    let mut rbuf = vec![0u8; 64];
    let rr = Region::of(c.b.pd, &mut rbuf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    c.b.receive(0xB1, &[rr.sge(0, 64)]);
    assert_eq!(
        send_and_invalidate(c.a.qp, 3, &[rd.sge(0, 16)], 0, remote),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(&r[0], STATUS_SUCCESS, NdkOperationTypeSend, c.a.qp_ctx, 3);
    let r = wait_results(c.b.cq, 1);
    expect(
        &r[0],
        STATUS_SUCCESS,
        NdkOperationTypeReceiveAndInvalidate,
        c.b.qp_ctx,
        0xB1,
    );
    assert_eq!(
        r[0].TypeSpecificCompletionOutput as u32, remote,
        "invalidated token"
    );
    assert_eq!(r[0].BytesTransferred, 16);

    // A: READ with the stale token fails, touching nothing.
    let before = target.bytes().to_vec();
    let mut sink = vec![0x33u8; 128];
    let rs = Region::of(c.a.pd, &mut sink, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    assert_eq!(
        read(c.a.qp, 4, &[rs.sge(0, 128)], base, remote, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(
        &r[0],
        STATUS_REMOTE_RESOURCES,
        NdkOperationTypeRead,
        c.a.qp_ctx,
        4,
    );

    rs.release();
    rr.release();
    rb.release();
    rd.release();
    c.b.node.release_lam(&mut lam);
    close_wait(mr);
    // SAFETY: our chain, no longer used.
    unsafe { RsNdkFreeMdl(mdl) };
    assert!(sink.iter().all(|&x| x == 0x33), "stale READ wrote nothing");
    assert!(
        target.bytes() == &before[..],
        "stale READ touched nothing at B"
    );
    c.close();
}

/// Operation flags granting remote read and write.
pub const REMOTE_ALL_OP: u32 = NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;

/// 5. Memory window: bind, remote use, invalidate, stale use fails.
pub fn memory_window(cfg: Config, test: u8) {
    const N: usize = 16 * 1024;
    let c = Conn::open(cfg, test, 8, 4);
    let mut target = pattern(N, 5);
    let orig = target.clone();
    let rt = Region::of(c.b.pd, &mut target, REMOTE_ALL);
    let mw = create_mw(c.b.pd);
    let win = 4096u64;
    let wlen = 8192usize;
    assert_eq!(
        bind(c.b.qp, 0xB0, rt.mr, mw, rt.va + win, wlen, REMOTE_ALL_OP),
        STATUS_SUCCESS,
        "NdkBind"
    );
    let r = wait_results(c.b.cq, 1);
    expect(
        &r[0],
        STATUS_SUCCESS,
        NdkOperationTypeBind,
        c.b.qp_ctx,
        0xB0,
    );
    let token = mw_token(mw);

    let mut data = pattern(1000, 99);
    let data_orig = data.clone();
    let mut back = vec![0u8; wlen];
    let rd = Region::of(c.a.pd, &mut data, 0);
    let rb = Region::of(c.a.pd, &mut back, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    assert_eq!(
        write(c.a.qp, 1, &[rd.sge(0, 1000)], rt.va + win + 10, token, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(&r[0], STATUS_SUCCESS, NdkOperationTypeWrite, c.a.qp_ctx, 1);
    assert_eq!(
        read(c.a.qp, 2, &[rb.sge(0, wlen)], rt.va + win, token, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(&r[0], STATUS_SUCCESS, NdkOperationTypeRead, c.a.qp_ctx, 2);
    let mut want = orig.clone();
    want[win as usize + 10..win as usize + 1010].copy_from_slice(&data_orig);
    assert!(
        back[..] == want[win as usize..win as usize + wlen],
        "READ through the MW"
    );

    // B invalidates the window locally.
    assert_eq!(
        invalidate(c.b.qp, 0xB2, mw, 0),
        STATUS_SUCCESS,
        "NdkInvalidate"
    );
    let r = wait_results(c.b.cq, 1);
    expect(
        &r[0],
        STATUS_SUCCESS,
        NdkOperationTypeInvalidate,
        c.b.qp_ctx,
        0xB2,
    );

    // Stale WRITE fails and touches nothing.
    assert_eq!(
        write(c.a.qp, 3, &[rd.sge(0, 1000)], rt.va + win, token, 0),
        STATUS_SUCCESS
    );
    let r = wait_results(c.a.cq, 1);
    expect(
        &r[0],
        STATUS_REMOTE_RESOURCES,
        NdkOperationTypeWrite,
        c.a.qp_ctx,
        3,
    );

    rb.release();
    rd.release();
    close_wait(mw);
    rt.release();
    assert!(target == want, "stale WRITE touched nothing");
    c.close();
}

/// 6. NdkFlush cancels posted receives and sends; armed CQ fires.
pub fn flush_cancels(cfg: Config, test: u8) {
    let c = Conn::open(cfg, test, 16, 2);
    let mut buf = vec![0u8; 4096];
    let r = Region::of(c.a.pd, &mut buf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    // B posts no receive, so A's sends wait (RNR) until flushed.
    for i in 0..6 {
        c.a.receive(0x100 + i, &[r.sge(i * 64, 64)]);
    }
    for i in 0..4 {
        assert_eq!(
            send(c.a.qp, 0x200 + i, &[r.sge(2048 + i * 64, 64)], 0),
            STATUS_SUCCESS
        );
    }
    arm(c.a.cq, NDK_CQ_NOTIFY_ANY);
    settle();
    assert!(
        results_ex(c.a.cq, 16).is_empty(),
        "nothing completes before the flush"
    );
    flush(c.a.qp);
    let res = wait_results(c.a.cq, 10);
    let mut ctxs: Vec<usize> = res
        .iter()
        .map(|x| {
            assert_eq!(x.Status, STATUS_CANCELLED, "flushed {x:?}");
            assert_eq!(x.QPContext as usize, c.a.qp_ctx);
            x.RequestContext as usize
        })
        .collect();
    ctxs.sort_unstable();
    let mut want: Vec<usize> = (0..6)
        .map(|i| 0x100 + i)
        .chain((0..4).map(|i| 0x200 + i))
        .collect();
    want.sort_unstable();
    assert_eq!(ctxs, want, "every request completes once");
    wait_calls(c.a.notify, 1, "armed CQ notification");
    settle();
    assert!(results_ex(c.a.cq, 4).is_empty());
    r.release();
    c.close();
}

/// 7. Disconnect from A: B's disconnect event fires exactly once.
pub fn disconnect_event_once(cfg: Config, test: u8) {
    let c = Conn::open(cfg, test, 8, 2);
    let done = Recorder::new();
    let st = disconnect(c.a.connector, done);
    assert_eq!(finish(st, done, "NdkDisconnect"), STATUS_SUCCESS);
    wait_calls(c.b.disc, 1, "B's disconnect event");
    settle();
    assert_eq!(c.b.disc.count(), 1, "disconnect event exactly once");
    assert_eq!(
        c.a.disc.count(),
        0,
        "no disconnect event at the side that disconnected"
    );
    // B disconnecting too is harmless (completes now or later, once).
    let bdone = Recorder::new();
    let st = disconnect(c.b.connector, bdone);
    assert!(
        st == STATUS_SUCCESS || st == STATUS_PENDING || st == STATUS_CONNECTION_INVALID,
        "B disconnect: {st:#x}"
    );
    if st == STATUS_PENDING {
        wait_calls(bdone, 1, "B's disconnect completion");
    }
    settle();
    assert_eq!(c.b.disc.count(), 1, "still exactly once");
    // Reverse order of creation.
    let Conn {
        a,
        b,
        listener,
        listen_events: _,
    } = c;
    close_wait(b.connector);
    close_wait(a.connector);
    close_wait(listener);
    for s in [b, a] {
        close_wait(s.qp);
        close_wait(s.cq);
        close_wait(s.pd);
        s.node.close();
    }
}

/// 8. CQ arming: ANY fires once per arm; SOLICITED only for a solicited SEND.
pub fn cq_arm(cfg: Config, test: u8) {
    let c = Conn::open(cfg, test, 16, 2);
    let mut sbuf = pattern(256, 1);
    let mut rbuf = vec![0u8; 4096];
    let rs = Region::of(c.a.pd, &mut sbuf, 0);
    let rr = Region::of(c.b.pd, &mut rbuf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for i in 0..8 {
        c.b.receive(0x300 + i, &[rr.sge(i * 64, 64)]);
    }
    let n = &c.b.notify;
    let send_one = |ctx: usize, flags: u32| {
        assert_eq!(send(c.a.qp, ctx, &[rs.sge(0, 32)], flags), STATUS_SUCCESS);
        let r = wait_results(c.a.cq, 1);
        assert_eq!(r[0].Status, STATUS_SUCCESS);
        let r = wait_results(c.b.cq, 1);
        assert_eq!(r[0].Status, STATUS_SUCCESS);
        settle();
    };
    // Not armed: no notification.
    send_one(1, 0);
    assert_eq!(n.count(), 0, "no notification without arming");
    // ANY: once per arm.
    arm(c.b.cq, NDK_CQ_NOTIFY_ANY);
    send_one(2, 0);
    // The event comes from the device's thread, maybe after the results.
    wait_calls(n, 1, "ANY fires on a receive");
    assert_eq!(n.count(), 1, "ANY fires on a receive");
    send_one(3, 0);
    assert_eq!(n.count(), 1, "once per arm");
    arm(c.b.cq, NDK_CQ_NOTIFY_ANY);
    send_one(4, 0);
    wait_calls(n, 2, "re-armed: fires again");
    assert_eq!(n.count(), 2, "re-armed: fires again");
    // SOLICITED: an ordinary SEND does not fire it, a solicited one does.
    arm(c.b.cq, NDK_CQ_NOTIFY_SOLICITED);
    send_one(5, 0);
    assert_eq!(n.count(), 2, "SOLICITED ignores an unsolicited SEND");
    send_one(6, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
    wait_calls(n, 3, "SOLICITED fires for a solicited SEND");
    assert_eq!(n.count(), 3, "SOLICITED fires for a solicited SEND");
    assert!(n.statuses().iter().all(|&s| s == STATUS_SUCCESS));
    rr.release();
    rs.release();
    c.close();
}

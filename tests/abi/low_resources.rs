//! Low-resource simulation: every pool allocation of a full
//! create -> connect -> transfer -> close scenario is made to fail in turn.
//!
//! The scenario runs two software RNIC adapters on an in-memory fabric
//! sharing one checked platform in record mode: on `lowres` (127.0.6.10,
//! .11) with every call at `PASSIVE_LEVEL`, and on `lowres-dpc`
//! (127.0.6.20, .21) with every call but adapter open and close at
//! `DISPATCH_LEVEL`. A clean run counts its pool charges (N); then run k
//! (k = 1..=N) fails the k-th charge. Each run must end in a documented
//! NTSTATUS at a step that allocates (`STATUS_INSUFFICIENT_RESOURCES` from
//! an open or create, a refused or failed connect), tear down everything
//! it created, and leave no pool outstanding, no checker violation, no
//! hang (every wait is bounded) and no wrong data (the transfer verifies
//! every byte when it runs).
//!
//! Only the provider's allocations are swept: they go through
//! `Platform::pool_charge`. The software RNIC's own memory stands for the
//! NIC's on-board memory and host-side structures of the simulation
//! (threads, fabric), which a real driver does not allocate from pool.

use std::ffi::{CString, c_void};
use std::net::Ipv4Addr;
use std::ptr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ndkpi::*;
use rsndk::platform::HostPlatform;
use rsndk::{RsNdkAllocateMdl, RsNdkCloseAdapter, RsNdkFreeMdl, RsNdkOpenAdapter};

const PORT: u16 = 6100;
const ENDPOINT_PORT: u16 = 6101;
/// With the scenario's own CQ, one more than the provider's first CQ table
/// holds (8).
const TABLE_GROWTH_CQS: usize = 8;
const REGION: usize = 64 * 1024;
const MSG: usize = 4096;
const RDMA: usize = 8192;
/// Hang guard of every wait (never a performance assertion).
const WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------- callbacks

/// Records the callbacks of one context: (status, object).
#[derive(Default)]
struct Rec(Mutex<Vec<(NTSTATUS, usize)>>);

impl Rec {
    /// Leaked: a late callback (a pending request cancelled by a close)
    /// must still find it, whatever step the run stopped at.
    fn new() -> &'static Self {
        Box::leak(Box::default())
    }
    fn ctx(&self) -> PVOID {
        ptr::from_ref(self).cast_mut().cast()
    }
    fn calls(&self) -> Vec<(NTSTATUS, usize)> {
        self.0.lock().unwrap().clone()
    }
    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

fn rec<'a>(ctx: PVOID) -> &'a Rec {
    // SAFETY: every context handed to the provider is a leaked `Rec`.
    unsafe { &*ctx.cast::<Rec>() }
}

unsafe extern "win64" fn status_cb(ctx: PVOID, status: NTSTATUS) {
    rec(ctx).0.lock().unwrap().push((status, 0));
}

unsafe extern "win64" fn plain_cb(ctx: PVOID) {
    rec(ctx).0.lock().unwrap().push((0, 0));
}

unsafe extern "win64" fn connect_cb(ctx: PVOID, connector: *mut NDK_CONNECTOR) {
    rec(ctx).0.lock().unwrap().push((0, connector as usize));
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "hang: timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// A call that may pend: its final status.
fn settle(status: NTSTATUS, done: &Rec, what: &str) -> NTSTATUS {
    if status == STATUS_PENDING {
        wait_until(what, || done.count() > 0);
        done.calls()[0].0
    } else {
        status
    }
}

fn ok(status: NTSTATUS) -> Result<(), NTSTATUS> {
    if status == STATUS_SUCCESS {
        Ok(())
    } else {
        Err(status)
    }
}

// ---------------------------------------------------------------- dispatch

fn table<O, T>(object: *mut O) -> &'static T {
    // SAFETY: a live provider object: the dispatch pointer follows the
    // header.
    let table = unsafe {
        object
            .wrapping_byte_add(size_of::<NDK_OBJECT_HEADER>())
            .cast::<*const T>()
            .read()
    };
    // SAFETY: the table is one of the provider's statics of type `T`.
    unsafe { &*table }
}

/// Closes any object, waiting for a pending close.
fn close<T>(object: *mut T) {
    // Every table starts with its close entry.
    let f = table::<T, NDK_FN_CLOSE_OBJECT>(object).unwrap();
    let done = Rec::new();
    // SAFETY: our object, closed once.
    let status = unsafe { f(object.cast(), Some(plain_cb), done.ctx()) };
    assert!(
        status == STATUS_SUCCESS || status == STATUS_PENDING,
        "close {}: {status:#x}",
        std::any::type_name::<T>()
    );
    if status == STATUS_PENDING {
        wait_until("close completion", || done.count() > 0);
    }
}

fn v4(ip: Ipv4Addr, port: u16) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: port.to_be(),
        sin_addr: IN_ADDR::new(ip.octets()),
        sin_zero: [0; 8],
    }
}

fn sa(a: &SOCKADDR_IN) -> PSOCKADDR {
    ptr::from_ref(a).cast_mut().cast()
}

const SA_LEN: u32 = size_of::<SOCKADDR_IN>() as u32;

// ---------------------------------------------------------------- one side

/// One adapter and what the scenario created on it (null: not created).
struct Side {
    ip: Ipv4Addr,
    fabric: &'static str,
    adapter: *mut NDK_ADAPTER,
    pd: *mut NDK_PD,
    cq: *mut NDK_CQ,
    qp: *mut NDK_QP,
    mr: *mut NDK_MR,
    mdl: *mut MDL,
    registered: bool,
    connector: *mut NDK_CONNECTOR,
    listener: *mut NDK_LISTENER,
    srq: *mut NDK_SRQ,
    mw: *mut NDK_MW,
    fast_mr: *mut NDK_MR,
    endpoint: *mut NDK_SHARED_ENDPOINT,
    /// More CQs than the provider's CQ table first holds (it grows).
    extra_cqs: Vec<*mut NDK_CQ>,
    buf: Vec<u8>,
}

impl Side {
    fn new(ip: Ipv4Addr, fabric: &'static str) -> Self {
        Self {
            ip,
            fabric,
            adapter: ptr::null_mut(),
            pd: ptr::null_mut(),
            cq: ptr::null_mut(),
            qp: ptr::null_mut(),
            mr: ptr::null_mut(),
            mdl: ptr::null_mut(),
            registered: false,
            connector: ptr::null_mut(),
            listener: ptr::null_mut(),
            srq: ptr::null_mut(),
            mw: ptr::null_mut(),
            fast_mr: ptr::null_mut(),
            endpoint: ptr::null_mut(),
            extra_cqs: Vec::new(),
            buf: vec![0; REGION],
        }
    }

    fn open(&mut self) -> Result<(), NTSTATUS> {
        let config = CString::new(format!("mem:{}/{}", self.fabric, self.ip)).unwrap();
        // SAFETY: a valid C string and out-pointer.
        ok(unsafe { RsNdkOpenAdapter(config.as_ptr(), &raw mut self.adapter) })
    }

    fn adapter_table(&self) -> &'static NDK_ADAPTER_DISPATCH {
        table(self.adapter)
    }

    fn create_objects(&mut self) -> Result<(), NTSTATUS> {
        let t = self.adapter_table();
        let ctx = Rec::new().ctx();
        // SAFETY: our adapter and out-pointer.
        ok(unsafe { t.NdkCreatePd.unwrap()(self.adapter, None, ctx, &raw mut self.pd) })?;
        let notify = Rec::new().ctx();
        // SAFETY: our adapter and out-pointer; `notify` lives with the side.
        ok(unsafe {
            t.NdkCreateCq.unwrap()(
                self.adapter,
                64,
                Some(status_cb),
                notify,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                &raw mut self.cq,
            )
        })?;
        let pdt: &NDK_PD_DISPATCH = table(self.pd);
        // SAFETY: our PD and CQ, a valid out-pointer.
        ok(unsafe {
            pdt.NdkCreateQp.unwrap()(
                self.pd,
                self.cq,
                self.cq,
                0x10 as PVOID,
                16,
                16,
                2,
                2,
                0,
                None,
                ptr::null_mut(),
                &raw mut self.qp,
            )
        })?;
        // SAFETY: our PD and out-pointer.
        ok(unsafe {
            pdt.NdkCreateMr.unwrap()(self.pd, 0, None, ptr::null_mut(), &raw mut self.mr)
        })?;
        self.mdl = RsNdkAllocateMdl(self.buf.as_mut_ptr().cast::<c_void>(), REGION);
        assert!(!self.mdl.is_null(), "RsNdkAllocateMdl");
        let done = Rec::new();
        let flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE
            | NDK_MR_FLAG_ALLOW_REMOTE_READ
            | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
        let mrt: &NDK_MR_DISPATCH = table(self.mr);
        // SAFETY: our MR and an MDL over our live buffer.
        let status = unsafe {
            mrt.NdkRegisterMr.unwrap()(
                self.mr,
                self.mdl,
                REGION,
                flags,
                Some(status_cb),
                done.ctx(),
            )
        };
        ok(settle(status, done, "register"))?;
        self.registered = true;
        Ok(())
    }

    /// The objects the transfer does not use, each with its own
    /// allocations: CQs enough to grow the CQ table, a CQ resize (a new
    /// ring), an SRQ, an MW, a fast-register MR's page list and a shared
    /// endpoint (a port reservation).
    fn create_extras(&mut self) -> Result<(), NTSTATUS> {
        let t = self.adapter_table();
        for _ in 0..TABLE_GROWTH_CQS {
            let mut cq = ptr::null_mut();
            // SAFETY: our adapter and out-pointer.
            ok(unsafe {
                t.NdkCreateCq.unwrap()(
                    self.adapter,
                    16,
                    Some(status_cb),
                    Rec::new().ctx(),
                    ptr::null_mut(),
                    None,
                    ptr::null_mut(),
                    &raw mut cq,
                )
            })?;
            self.extra_cqs.push(cq);
        }
        let cqt: &NDK_CQ_DISPATCH = table(self.cq);
        let done = Rec::new();
        // SAFETY: our CQ.
        let status = unsafe { cqt.NdkResizeCq.unwrap()(self.cq, 128, Some(status_cb), done.ctx()) };
        ok(settle(status, done, "resize cq"))?;
        let pdt: &NDK_PD_DISPATCH = table(self.pd);
        // SAFETY: our PD and out-pointer.
        ok(unsafe {
            pdt.NdkCreateSrq.unwrap()(
                self.pd,
                16,
                1,
                0,
                None,
                ptr::null_mut(),
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                &raw mut self.srq,
            )
        })?;
        // SAFETY: our PD and out-pointer.
        ok(unsafe { pdt.NdkCreateMw.unwrap()(self.pd, None, ptr::null_mut(), &raw mut self.mw) })?;
        // SAFETY: our PD and out-pointer.
        ok(unsafe {
            pdt.NdkCreateMr.unwrap()(self.pd, 1, None, ptr::null_mut(), &raw mut self.fast_mr)
        })?;
        let mrt: &NDK_MR_DISPATCH = table(self.fast_mr);
        let done = Rec::new();
        // SAFETY: our fast-register MR.
        let status = unsafe {
            mrt.NdkInitializeFastRegisterMr.unwrap()(
                self.fast_mr,
                4,
                1,
                Some(status_cb),
                done.ctx(),
            )
        };
        ok(settle(status, done, "initialize fast register"))?;
        let at = v4(self.ip, ENDPOINT_PORT);
        let t = self.adapter_table();
        // SAFETY: our adapter, a valid address and out-pointer.
        ok(unsafe {
            t.NdkCreateSharedEndpoint.unwrap()(
                self.adapter,
                sa(&at),
                SA_LEN,
                None,
                ptr::null_mut(),
                &raw mut self.endpoint,
            )
        })
    }

    fn tokens(&self) -> (u32, u32) {
        let t: &NDK_MR_DISPATCH = table(self.mr);
        // SAFETY: our registered MR.
        let local = unsafe { t.NdkGetLocalTokenFromMr.unwrap()(self.mr) };
        // SAFETY: as above.
        let remote = unsafe { t.NdkGetRemoteTokenFromMr.unwrap()(self.mr) };
        (local, remote)
    }

    fn sge(&self, offset: usize, len: usize) -> NDK_SGE {
        let va = self.buf.as_ptr().wrapping_add(offset).cast_mut().cast();
        NDK_SGE::with_virtual_address(va, len as u32, self.tokens().0)
    }

    fn results(&self, n: usize) -> Vec<NDK_RESULT> {
        let t: &NDK_CQ_DISPATCH = table(self.cq);
        let mut got = Vec::new();
        wait_until("completions", || {
            let mut out = vec![NDK_RESULT::default(); n - got.len()];
            // SAFETY: our CQ and an array of that many results.
            let k =
                unsafe { t.NdkGetCqResults.unwrap()(self.cq, out.as_mut_ptr(), out.len() as u32) };
            got.extend_from_slice(&out[..k as usize]);
            got.len() >= n
        });
        got
    }

    /// Closes everything the side created but the adapter, children first.
    fn teardown(&mut self) {
        if !self.connector.is_null() {
            close(self.connector);
        }
        if !self.listener.is_null() {
            close(self.listener);
        }
        for extra in [
            self.endpoint.cast::<c_void>(),
            self.mw.cast(),
            self.fast_mr.cast(),
            self.srq.cast(),
        ] {
            if !extra.is_null() {
                close(extra.cast::<NDK_OBJECT_HEADER>());
            }
        }
        if !self.qp.is_null() {
            close(self.qp);
        }
        if self.registered {
            let done = Rec::new();
            let t: &NDK_MR_DISPATCH = table(self.mr);
            // SAFETY: our registered MR.
            let status =
                unsafe { t.NdkDeregisterMr.unwrap()(self.mr, Some(status_cb), done.ctx()) };
            assert_eq!(settle(status, done, "deregister"), STATUS_SUCCESS);
        }
        if !self.mr.is_null() {
            close(self.mr);
        }
        if !self.mdl.is_null() {
            // SAFETY: our chain, no longer used by a registration.
            unsafe { RsNdkFreeMdl(self.mdl) };
        }
        for cq in self.extra_cqs.drain(..) {
            close(cq);
        }
        if !self.cq.is_null() {
            close(self.cq);
        }
        if !self.pd.is_null() {
            close(self.pd);
        }
    }

    /// Closes the adapter (`PASSIVE_LEVEL`), after [`Side::teardown`].
    fn close_adapter(&mut self) {
        if !self.adapter.is_null() {
            // SAFETY: our adapter, every child closed.
            let status = unsafe { RsNdkCloseAdapter(self.adapter) };
            assert_eq!(status, STATUS_SUCCESS, "close adapter {}", self.ip);
        }
    }
}

// ---------------------------------------------------------------- scenario

/// Where a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Every step succeeded and the data arrived intact.
    Completed,
    /// `step` failed with `status`.
    Failed(&'static str, NTSTATUS),
}

const CONNECT_DATA: &[u8] = b"lowres connect";
const ACCEPT_DATA: &[u8] = b"lowres accept";

fn connect(a: &mut Side, b: &mut Side) -> Result<(), (&'static str, NTSTATUS)> {
    let events = Rec::new().ctx();
    let bt = b.adapter_table();
    // SAFETY: our adapter and out-pointer; `events` lives with the side.
    ok(unsafe {
        bt.NdkCreateListener.unwrap()(
            b.adapter,
            Some(connect_cb),
            events,
            None,
            ptr::null_mut(),
            &raw mut b.listener,
        )
    })
    .map_err(|s| ("create listener", s))?;
    let here = v4(b.ip, PORT);
    let done = Rec::new();
    let lt: &NDK_LISTENER_DISPATCH = table(b.listener);
    // SAFETY: our listener and a valid address.
    let status = unsafe {
        lt.NdkListen.unwrap()(b.listener, sa(&here), SA_LEN, Some(status_cb), done.ctx())
    };
    ok(settle(status, done, "listen")).map_err(|s| ("listen", s))?;

    let at = a.adapter_table();
    // SAFETY: our adapter and out-pointer.
    ok(unsafe {
        at.NdkCreateConnector.unwrap()(a.adapter, None, ptr::null_mut(), &raw mut a.connector)
    })
    .map_err(|s| ("create connector", s))?;
    let (src, dst) = (v4(a.ip, 0), v4(b.ip, PORT));
    let connected = Rec::new();
    let ct: &NDK_CONNECTOR_DISPATCH = table(a.connector);
    // SAFETY: our connector and QP, valid addresses and private data.
    let status = unsafe {
        ct.NdkConnect.unwrap()(
            a.connector,
            a.qp,
            sa(&src),
            SA_LEN,
            sa(&dst),
            SA_LEN,
            4,
            4,
            CONNECT_DATA.as_ptr().cast_mut().cast(),
            CONNECT_DATA.len() as u32,
            Some(status_cb),
            connected.ctx(),
        )
    };
    if status != STATUS_PENDING {
        return Err(("connect", status));
    }
    // Either B sees the request, or A's connect fails (B could not take it).
    let events = rec(events);
    wait_until("connect event or connect failure", || {
        events.count() > 0 || connected.count() > 0
    });
    if events.count() == 0 {
        return Err(("connect completion", connected.calls()[0].0));
    }
    b.connector = events.calls()[0].1 as *mut NDK_CONNECTOR;
    let disc_b = Rec::new().ctx();
    let accepted = Rec::new();
    let bct: &NDK_CONNECTOR_DISPATCH = table(b.connector);
    // SAFETY: our connector and QP, valid private data.
    let status = unsafe {
        bct.NdkAccept.unwrap()(
            b.connector,
            b.qp,
            4,
            4,
            ACCEPT_DATA.as_ptr().cast_mut().cast(),
            ACCEPT_DATA.len() as u32,
            Some(plain_cb),
            disc_b,
            Some(status_cb),
            accepted.ctx(),
        )
    };
    if status != STATUS_PENDING {
        return Err(("accept", status));
    }
    wait_until("connect completion", || connected.count() > 0);
    ok(connected.calls()[0].0).map_err(|s| ("connect completion", s))?;
    let disc_a = Rec::new().ctx();
    // SAFETY: our connector.
    let status = unsafe {
        ct.NdkCompleteConnect.unwrap()(a.connector, Some(plain_cb), disc_a, None, ptr::null_mut())
    };
    ok(status).map_err(|s| ("complete connect", s))?;
    wait_until("accept completion", || accepted.count() > 0);
    ok(accepted.calls()[0].0).map_err(|s| ("accept completion", s))
}

/// A send, an RDMA write and an RDMA read, every byte checked.
fn transfer(a: &mut Side, b: &mut Side) {
    for (i, x) in a.buf.iter_mut().enumerate() {
        *x = (i * 7 + 3) as u8;
    }
    for (i, x) in b.buf.iter_mut().enumerate() {
        *x = (i * 13 + 5) as u8;
    }
    let expect_a = a.buf.clone();
    let expect_b = b.buf.clone();
    let (_, b_remote) = b.tokens();
    let b_va = b.buf.as_ptr() as u64;
    let (aq, bq) = (
        table::<_, NDK_QP_DISPATCH>(a.qp),
        table::<_, NDK_QP_DISPATCH>(b.qp),
    );
    let recv = [b.sge(0, MSG)];
    // SAFETY: our QP and SGE over registered memory.
    let st = unsafe { bq.NdkReceive.unwrap()(b.qp, 1 as PVOID, recv.as_ptr(), 1) };
    assert_eq!(st, STATUS_SUCCESS, "NdkReceive");
    let send = [a.sge(0, MSG)];
    // SAFETY: as above.
    let st = unsafe { aq.NdkSend.unwrap()(a.qp, 2 as PVOID, send.as_ptr(), 1, 0) };
    assert_eq!(st, STATUS_SUCCESS, "NdkSend");
    let write = [a.sge(MSG, RDMA)];
    let write_at = b_va + (2 * MSG) as u64;
    // SAFETY: as above; the target is inside B's registered region.
    let st =
        unsafe { aq.NdkWrite.unwrap()(a.qp, 3 as PVOID, write.as_ptr(), 1, write_at, b_remote, 0) };
    assert_eq!(st, STATUS_SUCCESS, "NdkWrite");
    let read_from = b_va + (6 * MSG) as u64;
    let read = [a.sge(4 * MSG, RDMA)];
    // SAFETY: as above.
    let st =
        unsafe { aq.NdkRead.unwrap()(a.qp, 4 as PVOID, read.as_ptr(), 1, read_from, b_remote, 0) };
    assert_eq!(st, STATUS_SUCCESS, "NdkRead");
    let mut got = a.results(3);
    got.extend(b.results(1));
    for r in &got {
        assert_eq!(r.Status, STATUS_SUCCESS, "completion {r:?}");
    }
    assert_eq!(&b.buf[..MSG], &expect_a[..MSG], "send data");
    assert_eq!(
        &b.buf[2 * MSG..2 * MSG + RDMA],
        &expect_a[MSG..MSG + RDMA],
        "write data"
    );
    assert_eq!(
        &a.buf[4 * MSG..4 * MSG + RDMA],
        &expect_b[6 * MSG..6 * MSG + RDMA],
        "read data"
    );
}

fn disconnect(a: &Side) {
    let done = Rec::new();
    let ct: &NDK_CONNECTOR_DISPATCH = table(a.connector);
    // SAFETY: our connected connector.
    let st = unsafe { ct.NdkDisconnect.unwrap()(a.connector, Some(status_cb), done.ctx()) };
    assert_eq!(settle(st, done, "disconnect"), STATUS_SUCCESS, "disconnect");
}

/// Where a scenario runs: its two addresses (each with the sweep's
/// platform), its fabric, and the IRQL of every NDK call but adapter open
/// and close (which are `PASSIVE_LEVEL` only).
struct Setup {
    a: Ipv4Addr,
    b: Ipv4Addr,
    fabric: &'static str,
    dispatch: bool,
}

const AT_PASSIVE: Setup = Setup {
    a: Ipv4Addr::new(127, 0, 6, 10),
    b: Ipv4Addr::new(127, 0, 6, 11),
    fabric: "lowres",
    dispatch: false,
};

const AT_DISPATCH: Setup = Setup {
    a: Ipv4Addr::new(127, 0, 6, 20),
    b: Ipv4Addr::new(127, 0, 6, 21),
    fabric: "lowres-dpc",
    dispatch: true,
};

impl Setup {
    /// Runs `f` at the setup's IRQL.
    fn at_level<R>(&self, p: &HostPlatform, f: impl FnOnce() -> R) -> R {
        if self.dispatch { p.at_dispatch(f) } else { f() }
    }
}

fn steps(setup: &Setup, p: &HostPlatform, a: &mut Side, b: &mut Side) -> Outcome {
    if let Err(s) = a.open() {
        return Outcome::Failed("open adapter A", s);
    }
    if let Err(s) = b.open() {
        return Outcome::Failed("open adapter B", s);
    }
    setup.at_level(p, || {
        if let Err(s) = a.create_objects() {
            return Outcome::Failed("create objects A", s);
        }
        if let Err(s) = b.create_objects() {
            return Outcome::Failed("create objects B", s);
        }
        // The connection does not need the extras: after a failure there
        // the run goes on, so the transfer shows the failure corrupted
        // nothing (a CQ whose resize failed keeps working, for one).
        let extras = a.create_extras();
        if let Err((step, s)) = connect(a, b) {
            return Outcome::Failed(step, s);
        }
        transfer(a, b);
        disconnect(a);
        match extras {
            Ok(()) => Outcome::Completed,
            Err(s) => Outcome::Failed("create extras A (transfer verified)", s),
        }
    })
}

/// One full run on `p`: the outcome and the charges it made.
fn run(setup: &Setup, p: &'static HostPlatform) -> (Outcome, u64) {
    let before = p.charges();
    let mut a = Side::new(setup.a, setup.fabric);
    let mut b = Side::new(setup.b, setup.fabric);
    let outcome = steps(setup, p, &mut a, &mut b);
    // The inbound connector closes before the listener that produced it.
    setup.at_level(p, || {
        b.teardown();
        a.teardown();
    });
    b.close_adapter();
    a.close_adapter();
    let charges = p.charges() - before;
    p.assert_clean();
    (outcome, charges)
}

/// Whether `status` is what the NDK documents for a failure at `step`.
fn documented(step: &str, status: NTSTATUS) -> bool {
    match step {
        "connect completion" => [
            STATUS_CONNECTION_REFUSED,
            STATUS_IO_TIMEOUT,
            STATUS_CONNECTION_ABORTED,
            STATUS_INSUFFICIENT_RESOURCES,
        ]
        .contains(&status),
        _ => status == STATUS_INSUFFICIENT_RESOURCES,
    }
}

/// The sweep: a clean run counts the charges, then each is refused once.
fn sweep(setup: &Setup) {
    let p = HostPlatform::recording();
    HostPlatform::use_for_device(setup.a, p);
    HostPlatform::use_for_device(setup.b, p);

    let (clean, n) = run(setup, p);
    assert_eq!(clean, Outcome::Completed);
    let (again, n2) = run(setup, p);
    assert_eq!(
        (again, n2),
        (Outcome::Completed, n),
        "allocation count is deterministic"
    );
    assert!(n > 10, "the scenario allocates ({n} charges)");

    let mut summary: Vec<(&str, NTSTATUS, Vec<String>)> = Vec::new();
    for k in 1..=n {
        let failures = p.injected_failures();
        p.fail_charge_after(k);
        let (outcome, _) = run(setup, p);
        p.fail_charge_after(0);
        assert_eq!(
            p.injected_failures(),
            failures + 1,
            "charge {k} was refused"
        );
        let tag = p
            .last_refused_tag()
            .expect("a refused charge")
            .as_str()
            .to_owned();
        let Outcome::Failed(step, status) = outcome else {
            panic!("charge {k} ({tag}): refused, yet nothing failed");
        };
        assert!(
            documented(step, status),
            "charge {k} ({tag}): {step} failed with undocumented {status:#x}"
        );
        match summary.iter_mut().find(|s| s.0 == step && s.1 == status) {
            Some(s) => s.2.push(tag),
            None => summary.push((step, status, vec![tag])),
        }
    }
    let level = if setup.dispatch {
        "DISPATCH_LEVEL"
    } else {
        "PASSIVE_LEVEL"
    };
    println!("low resources at {level}: {n} allocations swept, each failure surfaced, no leak");
    println!(
        "  provider lock nesting seen (held -> acquired): {:?}",
        rsndk::checker::lock_order_edges()
    );
    for (step, status, tags) in summary {
        println!(
            "  {:2} x {step}: {status:#010x} (tags {})",
            tags.len(),
            tags.join(" ")
        );
    }
}

#[test]
fn every_allocation_of_a_connection_can_fail() {
    sweep(&AT_PASSIVE);
}

/// The same with every NDK call but adapter open and close made at
/// `DISPATCH_LEVEL`, as NDK allows: no provider path, failing or not, may
/// block, wait or touch paged pool there.
#[test]
fn every_allocation_of_a_connection_can_fail_at_dispatch_level() {
    sweep(&AT_DISPATCH);
}

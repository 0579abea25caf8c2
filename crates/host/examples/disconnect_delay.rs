//! How long a connector close takes to reach the peer: two adapters (two
//! devices, each with its engine thread) on one transport connect, one side
//! closes its connector, and the time until the other side's disconnect
//! callback runs is measured; likewise the time an `NdkDisconnect` takes
//! to complete (the peer's answer coming back). The same again on one
//! adapter connected to itself, right after a SEND the consumer waited for
//! by polling its CQs (as the consumer-level tests do). Prints min / median
//! / max over the rounds, per transport:
//!
//! ```sh
//! cargo run --release -q -p host --example disconnect_delay [ROUNDS]
//! ```
//!
//! Between polls nobody drives the devices, so the engines run on their
//! own (parked in `poll(2)` or on a futex between events), as under a
//! kernel consumer that waits for its callbacks.

use std::ffi::{CString, c_void};
use std::ptr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use host::{RsNdkCloseAdapter, RsNdkOpenAdapter};
use ndkpi::{
    AF_INET, IN_ADDR, NDK_ADAPTER, NDK_ADAPTER_DISPATCH, NDK_CONNECTOR, NDK_CONNECTOR_DISPATCH,
    NDK_CQ, NDK_CQ_DISPATCH, NDK_FN_CLOSE_OBJECT, NDK_LISTENER, NDK_LISTENER_DISPATCH,
    NDK_OBJECT_HEADER, NDK_PD, NDK_PD_DISPATCH, NDK_QP, NDK_QP_DISPATCH, NDK_RESULT, NDK_SGE,
    NTSTATUS, SOCKADDR_IN, STATUS_PENDING, STATUS_SUCCESS,
};

/// When a callback ran (the callbacks' context points at one of these).
#[derive(Default)]
struct Stamp(Mutex<Option<(Instant, NTSTATUS)>>);

impl Stamp {
    fn new() -> &'static Self {
        Box::leak(Box::default())
    }

    fn ctx(&self) -> *mut c_void {
        ptr::from_ref(self).cast_mut().cast()
    }

    fn set(&self, status: NTSTATUS) {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        s.get_or_insert((Instant::now(), status));
    }

    /// Waits (bounded) for the callback; its time and status.
    fn wait(&self, what: &str) -> (Instant, NTSTATUS) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(v) = *self.0.lock().unwrap_or_else(PoisonError::into_inner) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

fn stamp<'a>(ctx: *mut c_void) -> &'a Stamp {
    // SAFETY: every context this program hands the provider for these
    // callbacks is a leaked `Stamp`.
    unsafe { &*ctx.cast::<Stamp>() }
}

unsafe extern "win64" fn on_request(ctx: *mut c_void, status: NTSTATUS) {
    stamp(ctx).set(status);
}

unsafe extern "win64" fn on_disconnect(ctx: *mut c_void) {
    stamp(ctx).set(0);
}

unsafe extern "win64" fn on_closed(ctx: *mut c_void) {
    stamp(ctx).set(0);
}

/// A listener's context: the connector of the last connect event.
type Slot = Mutex<usize>;

unsafe extern "win64" fn on_connect(ctx: *mut c_void, connector: *mut NDK_CONNECTOR) {
    // SAFETY: the listener's context is a leaked `Slot`.
    let slot = unsafe { &*ctx.cast::<Slot>() };
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = connector as usize;
}

unsafe extern "win64" fn on_cq(_ctx: *mut c_void, _status: NTSTATUS) {}

fn check(what: &str, got: NTSTATUS, want: NTSTATUS) {
    assert_eq!(got, want, "{what}: {got:#x}");
}

/// The dispatch table of an NDK object (a header, then the table pointer).
fn table<T>(object: *mut impl Sized) -> &'static T {
    let field = object
        .wrapping_byte_add(size_of::<NDK_OBJECT_HEADER>())
        .cast::<*const T>();
    // SAFETY: `object` is a live NDK object of the provider, whose
    // dispatch pointer follows the header.
    let t = unsafe { field.read() };
    // SAFETY: the provider's dispatch tables are statics.
    unsafe { &*t }
}

fn sockaddr(ip: [u8; 4], port: u16) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: port.to_be(),
        sin_addr: IN_ADDR::new(ip),
        sin_zero: [0; 8],
    }
}

/// One side: an adapter with a PD and a CQ.
struct Side {
    adapter: *mut NDK_ADAPTER,
    ip: [u8; 4],
    pd: *mut NDK_PD,
    cq: *mut NDK_CQ,
}

impl Side {
    fn open(config: &str) -> Self {
        let c = CString::new(config).expect("no NUL");
        let mut adapter = ptr::null_mut();
        // SAFETY: a valid C string and out-pointer.
        let st = unsafe { RsNdkOpenAdapter(c.as_ptr(), &raw mut adapter) };
        check(config, st, STATUS_SUCCESS);
        let ip = config
            .rsplit(['/', ':'])
            .next()
            .and_then(|s| s.parse::<std::net::Ipv4Addr>().ok())
            .expect("an IPv4 address")
            .octets();
        let t: &NDK_ADAPTER_DISPATCH = table(adapter);
        let mut pd = ptr::null_mut();
        let f = t.NdkCreatePd.expect("an entry");
        // SAFETY: our adapter and a valid out-pointer.
        let st = unsafe { f(adapter, None, ptr::null_mut(), &raw mut pd) };
        check("create pd", st, STATUS_SUCCESS);
        let mut cq = ptr::null_mut();
        let f = t.NdkCreateCq.expect("an entry");
        // SAFETY: our adapter and a valid out-pointer.
        let st = unsafe {
            f(
                adapter,
                64,
                Some(on_cq),
                ptr::null_mut(),
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                &raw mut cq,
            )
        };
        check("create cq", st, STATUS_SUCCESS);
        Self {
            adapter,
            ip,
            pd,
            cq,
        }
    }

    fn qp(&self) -> *mut NDK_QP {
        let mut qp = ptr::null_mut();
        let f = table::<NDK_PD_DISPATCH>(self.pd)
            .NdkCreateQp
            .expect("an entry");
        // SAFETY: our PD and CQ, a valid out-pointer.
        let st = unsafe {
            f(
                self.pd,
                self.cq,
                self.cq,
                ptr::null_mut(),
                8,
                8,
                1,
                1,
                0,
                None,
                ptr::null_mut(),
                &raw mut qp,
            )
        };
        check("create qp", st, STATUS_SUCCESS);
        qp
    }

    fn connector(&self) -> *mut NDK_CONNECTOR {
        let mut c = ptr::null_mut();
        let f = table::<NDK_ADAPTER_DISPATCH>(self.adapter)
            .NdkCreateConnector
            .expect("an entry");
        // SAFETY: our adapter and a valid out-pointer.
        let st = unsafe { f(self.adapter, None, ptr::null_mut(), &raw mut c) };
        check("create connector", st, STATUS_SUCCESS);
        c
    }

    fn privileged_token(&self) -> u32 {
        let mut token = 0;
        let f = table::<NDK_PD_DISPATCH>(self.pd)
            .NdkGetPrivilegedMemoryRegionToken
            .expect("an entry");
        // SAFETY: our PD, a valid out-pointer.
        unsafe { f(self.pd, &raw mut token) };
        token
    }

    fn close(self) {
        close(self.cq);
        close(self.pd);
        // SAFETY: our adapter, every child closed.
        let st = unsafe { RsNdkCloseAdapter(self.adapter) };
        check("close adapter", st, STATUS_SUCCESS);
    }
}

/// Closes any object through the close entry its table starts with and
/// waits for a pending close.
fn close<O>(object: *mut O) {
    let done = Stamp::new();
    let f = table::<NDK_FN_CLOSE_OBJECT>(object).expect("a close entry");
    // SAFETY: our object, closed once.
    let st = unsafe { f(object.cast(), Some(on_closed), done.ctx()) };
    if st == STATUS_PENDING {
        done.wait("a close");
    } else {
        check("close", st, STATUS_SUCCESS);
    }
}

/// One SEND from `qa` to `qb`, waited for by polling both CQs (the
/// consumer busy polls the devices meanwhile).
fn exchange(a: &Side, b: &Side, qa: *mut NDK_QP, qb: *mut NDK_QP) {
    // Device memory for the exchange (its content does not matter),
    // reached through the PDs' privileged tokens (logical address =
    // virtual address on the host).
    let buf: &'static mut [u8; 64] = Box::leak(Box::new([0; 64]));
    let va = buf.as_mut_ptr().cast();
    let sa = [NDK_SGE::with_virtual_address(va, 8, a.privileged_token())];
    let sb = [NDK_SGE::with_virtual_address(va, 8, b.privileged_token())];
    let receive = table::<NDK_QP_DISPATCH>(qb).NdkReceive.expect("an entry");
    // SAFETY: our QP and a one-entry SGE list.
    let st = unsafe { receive(qb, ptr::null_mut(), sb.as_ptr(), 1) };
    check("receive", st, STATUS_SUCCESS);
    let send = table::<NDK_QP_DISPATCH>(qa).NdkSend.expect("an entry");
    // SAFETY: our QP and a one-entry SGE list.
    let st = unsafe { send(qa, ptr::null_mut(), sa.as_ptr(), 1, 0) };
    check("send", st, STATUS_SUCCESS);
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while got < 2 {
        // One CQ twice when the adapter is connected to itself.
        for cq in [a.cq, b.cq] {
            let mut r = [NDK_RESULT::default(); 4];
            let poll = table::<NDK_CQ_DISPATCH>(cq)
                .NdkGetCqResults
                .expect("an entry");
            // SAFETY: our CQ and a 4-entry array.
            got += unsafe { poll(cq, r.as_mut_ptr(), 4) };
        }
        assert!(Instant::now() < deadline, "no completions");
    }
}

/// A listener of `b` on `to`, and the slot its connect events fill.
fn listen(b: &Side, to: &SOCKADDR_IN) -> (*mut NDK_LISTENER, &'static Slot) {
    let slot: &'static Slot = Box::leak(Box::default());
    let mut listener = ptr::null_mut();
    let f = table::<NDK_ADAPTER_DISPATCH>(b.adapter)
        .NdkCreateListener
        .expect("an entry");
    // SAFETY: our adapter, a valid out-pointer; `slot` is leaked.
    let st = unsafe {
        f(
            b.adapter,
            Some(on_connect),
            ptr::from_ref(slot).cast_mut().cast(),
            None,
            ptr::null_mut(),
            &raw mut listener,
        )
    };
    check("create listener", st, STATUS_SUCCESS);
    let listen = table::<NDK_LISTENER_DISPATCH>(listener)
        .NdkListen
        .expect("an entry");
    // SAFETY: our listener and a valid address.
    let st = unsafe {
        listen(
            listener,
            ptr::from_ref(to).cast_mut().cast(),
            size_of::<SOCKADDR_IN>() as u32,
            None,
            ptr::null_mut(),
        )
    };
    check("listen", st, STATUS_SUCCESS);
    (listener, slot)
}

/// An established connection and what measuring it needs.
struct Connection {
    active: *mut NDK_CONNECTOR,
    passive: *mut NDK_CONNECTOR,
    /// The passive side's disconnect event.
    passive_disc: &'static Stamp,
    qps: [*mut NDK_QP; 2],
    listener: *mut NDK_LISTENER,
}

impl Connection {
    /// Connects a new QP of `a` to a new QP of `b` (listening on `port`).
    fn open(a: &Side, b: &Side, port: u16) -> Self {
        let (qa, qb) = (a.qp(), b.qp());
        let to = sockaddr(b.ip, port);
        let (listener, slot) = listen(b, &to);
        let len = size_of::<SOCKADDR_IN>() as u32;
        let active = a.connector();
        let from = sockaddr(a.ip, 0);
        let connected = Stamp::new();
        let connect = table::<NDK_CONNECTOR_DISPATCH>(active)
            .NdkConnect
            .expect("an entry");
        // SAFETY: our connector and QP, valid addresses.
        let st = unsafe {
            connect(
                active,
                qa,
                ptr::from_ref(&from).cast_mut().cast(),
                len,
                ptr::from_ref(&to).cast_mut().cast(),
                len,
                8,
                8,
                ptr::null_mut(),
                0,
                Some(on_request),
                connected.ctx(),
            )
        };
        check("connect", st, STATUS_PENDING);
        let deadline = Instant::now() + Duration::from_secs(10);
        let passive = loop {
            let c = *slot.lock().unwrap_or_else(PoisonError::into_inner);
            if c != 0 {
                break c as *mut NDK_CONNECTOR;
            }
            assert!(Instant::now() < deadline, "no connect event");
            std::thread::sleep(Duration::from_micros(50));
        };
        let (accepted, passive_disc, active_disc) = (Stamp::new(), Stamp::new(), Stamp::new());
        let accept = table::<NDK_CONNECTOR_DISPATCH>(passive)
            .NdkAccept
            .expect("an entry");
        // SAFETY: our connector and QP.
        let st = unsafe {
            accept(
                passive,
                qb,
                8,
                8,
                ptr::null_mut(),
                0,
                Some(on_disconnect),
                passive_disc.ctx(),
                Some(on_request),
                accepted.ctx(),
            )
        };
        check("accept", st, STATUS_PENDING);
        check(
            "connect completes",
            connected.wait("the connect").1,
            STATUS_SUCCESS,
        );
        let complete = table::<NDK_CONNECTOR_DISPATCH>(active)
            .NdkCompleteConnect
            .expect("an entry");
        // SAFETY: our connector.
        let st = unsafe {
            complete(
                active,
                Some(on_disconnect),
                active_disc.ctx(),
                None,
                ptr::null_mut(),
            )
        };
        check("complete connect", st, STATUS_SUCCESS);
        check(
            "accept completes",
            accepted.wait("the accept").1,
            STATUS_SUCCESS,
        );
        Self {
            active,
            passive,
            passive_disc,
            qps: [qa, qb],
            listener,
        }
    }

    /// Closes what is left (the active connector unless `active_closed`).
    fn close(self, active_closed: bool) {
        if !active_closed {
            close(self.active);
        }
        close(self.passive);
        close(self.listener);
        close(self.qps[0]);
        close(self.qps[1]);
    }
}

fn summary(mut v: Vec<Duration>) -> String {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    format!(
        "min {:8.1} us  median {:8.1} us  max {:8.1} us  ({} rounds)",
        us(v[0]),
        us(v[v.len() / 2]),
        us(v[v.len() - 1]),
        v.len()
    )
}

/// Before the clock starts: a SEND both sides waited for (`traffic`), or
/// a pause for the handshake's last packets.
fn prepare(a: &Side, b: &Side, c: &Connection, traffic: bool) {
    if traffic {
        exchange(a, b, c.qps[0], c.qps[1]);
    } else {
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn measure_on(name: &str, a: &Side, b: &Side, rounds: usize, traffic: bool) {
    let (mut close_to_peer, mut disconnect_done, mut disconnect_to_peer) =
        (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let port = 5000 + u16::try_from(round).unwrap_or(0) * 2;
        // A connector close reaches the peer's disconnect callback.
        let c = Connection::open(a, b, port);
        prepare(a, b, &c, traffic);
        let t0 = Instant::now();
        close(c.active);
        let (t1, _) = c.passive_disc.wait("the peer's disconnect event");
        close_to_peer.push(t1 - t0);
        c.close(true);
        // NdkDisconnect: its completion (the peer's answer) and the
        // peer's callback.
        let c = Connection::open(a, b, port + 1);
        prepare(a, b, &c, traffic);
        let done = Stamp::new();
        let disconnect = table::<NDK_CONNECTOR_DISPATCH>(c.active)
            .NdkDisconnect
            .expect("an entry");
        let t0 = Instant::now();
        // SAFETY: our connector.
        let st = unsafe { disconnect(c.active, Some(on_request), done.ctx()) };
        check("disconnect", st, STATUS_PENDING);
        let (t1, status) = done.wait("the disconnect");
        check("disconnect completes", status, STATUS_SUCCESS);
        let (t2, _) = c.passive_disc.wait("the peer's disconnect event");
        disconnect_done.push(t1 - t0);
        disconnect_to_peer.push(t2 - t0);
        c.close(false);
    }
    println!(
        "{name}: close -> peer's disconnect event  {}",
        summary(close_to_peer)
    );
    println!(
        "{name}: NdkDisconnect -> peer's event     {}",
        summary(disconnect_to_peer)
    );
    println!(
        "{name}: NdkDisconnect -> its completion   {}",
        summary(disconnect_done)
    );
}

/// Two devices on one transport.
fn measure(name: &str, configs: [&str; 2], rounds: usize) {
    let (a, b) = (Side::open(configs[0]), Side::open(configs[1]));
    measure_on(name, &a, &b, rounds, false);
    a.close();
    b.close();
}

/// One adapter connected to itself, a SEND before each close.
fn measure_loopback(name: &str, config: &str, rounds: usize) {
    let a = Side::open(config);
    measure_on(name, &a, &a, rounds, true);
    a.close();
}

fn main() {
    let rounds = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20usize)
        .max(1);
    measure(
        "mem, two devices",
        ["mem:delay/10.9.0.1", "mem:delay/10.9.0.2"],
        rounds,
    );
    measure(
        "udp, two devices",
        ["udp:127.0.77.1", "udp:127.0.77.2"],
        rounds,
    );
    measure_loopback("mem, loopback after a SEND", "mem:delay1/10.9.1.1", rounds);
    measure_loopback("udp, loopback after a SEND", "udp:127.0.77.3", rounds);
}

//! RoCEv2 through the bottle's NETIO: bottled `rsndk.sys` adapters talk
//! over real Linux UDP sockets (WSK datagram sockets in `kbottle::netio`)
//! to each other and to `librsndk.so` adapters, and a capture of their
//! traffic decodes in Wireshark.
//!
//! Each exchange connects two QPs through the NDK connection manager
//! (listen, connect, accept, complete connect, with private data), moves a
//! SEND each way with its data checked, then an RDMA WRITE and an RDMA
//! READ of 1 MiB checked byte for byte, disconnects and closes everything.
//! Memory of a bottled adapter is described by MDLs whose page numbers are
//! physical addresses in the bottle's model (`kbottle::mm::phys_of`).

use std::ffi::CString;
use std::net::Ipv4Addr;
use std::process::Command;
use std::ptr;
use std::sync::atomic::{AtomicU8, AtomicU16, Ordering};

use kbottle::machine::AdapterId;
use ndkpi::*;

use crate::common::{self, child_passes, is_child, machine};
use crate::ndk::{Ndk, close_wait, finish, wait_results};
use crate::provider_util::*;

/// The NDK version the consumer asks for.
const VERSION: NDK_VERSION = NDK_VERSION { Major: 1, Minor: 2 };
/// RDMA transfer size.
const BIG: usize = 1 << 20;
/// SEND size: more than one 4 KiB packet, not a multiple of it.
const SEND_LEN: usize = 4096 + 1000;

// ---------------------------------------------------------------- adapters

/// What stands behind an NDK adapter.
#[derive(Debug)]
enum Kind {
    /// An adapter of this process's bottled `rsndk.sys`.
    Bottled(AdapterId),
    /// A `librsndk.so` adapter on UDP.
    Host,
}

/// One open NDK adapter and what stands behind it.
#[derive(Debug)]
struct Nic {
    ndk: Ndk,
    kind: Kind,
}

impl std::ops::Deref for Nic {
    type Target = Ndk;

    fn deref(&self) -> &Ndk {
        &self.ndk
    }
}

static HOST_ADDRESS: AtomicU8 = AtomicU8::new(1);

/// 127.0.49.`last`: the bottled adapters of this file's child tests,
/// each test its own addresses.
fn child_address(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 49, last)
}

impl Nic {
    /// A new adapter of this process's machine, opened for NDK.
    fn bottled() -> Self {
        let (id, ip) = common::adapter();
        Self::open_bottled(id, ip)
    }

    /// A new adapter of this process's machine at 127.0.49.`last`, opened
    /// for NDK: for tests that run in a child process, whose
    /// [`common::fresh_address`] block starts where the parent's does (the
    /// parent's adapters may hold those addresses meanwhile).
    fn bottled_in_child(last: u8) -> Self {
        let ip = child_address(last);
        Self::open_bottled(common::adapter_on(machine(), ip), ip)
    }

    fn open_bottled(id: AdapterId, ip: Ipv4Addr) -> Self {
        let adapter = machine()
            .open_ndk(id, VERSION)
            .unwrap_or_else(|s| panic!("open NDK on the bottled adapter at {ip}: {s:#010x}"));
        assert!(!adapter.is_null());
        Self {
            ndk: Ndk {
                adapter,
                ip,
                bottled: true,
            },
            kind: Kind::Bottled(id),
        }
    }

    /// A `librsndk.so` adapter on UDP at 127.0.48.x (the next address no
    /// other process holds).
    fn host() -> Self {
        loop {
            let n = HOST_ADDRESS.fetch_add(1, Ordering::SeqCst);
            assert!(n < 255, "host address block 127.0.48.x exhausted");
            let ip = Ipv4Addr::new(127, 0, 48, n);
            let config = CString::new(format!("udp:{ip}")).unwrap();
            let mut adapter = ptr::null_mut();
            // SAFETY: a valid C string and out-pointer.
            let status = unsafe { rsndk::RsNdkOpenAdapter(config.as_ptr(), &raw mut adapter) };
            if status == STATUS_SHARING_VIOLATION {
                continue;
            }
            assert_eq!(status, STATUS_SUCCESS, "open udp:{ip}");
            return Self {
                ndk: Ndk {
                    adapter,
                    ip,
                    bottled: false,
                },
                kind: Kind::Host,
            };
        }
    }

    /// Closes the adapter; a bottled one is halted too (its socket closes).
    fn close(self) {
        match self.kind {
            Kind::Bottled(id) => {
                machine().close_ndk(id, self.adapter);
                machine().halt(id);
            }
            Kind::Host => {
                // SAFETY: our adapter, every child closed, closed once.
                let status = unsafe { rsndk::RsNdkCloseAdapter(self.adapter) };
                assert_eq!(status, STATUS_SUCCESS, "close udp:{}", self.ip);
                rsndk::platform::HostPlatform::for_device(self.ip).assert_no_violations();
            }
        }
    }
}

// ---------------------------------------------------------------- helpers

/// One completion, checked.
#[track_caller]
fn expect_one(cq: *mut NDK_CQ, ty: NDK_OPERATION_TYPE, ctx: usize, bytes: Option<u32>) {
    let r = wait_results(cq, 1)[0];
    assert_eq!(
        (r.Status, r.Type, r.RequestContext as usize),
        (STATUS_SUCCESS, ty, ctx),
        "completion {r:?}"
    );
    if let Some(n) = bytes {
        assert_eq!(r.BytesTransferred, n, "bytes of {r:?}");
    }
}

/// A test pattern, distinct per `seed` and position.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(31)
                .wrapping_add(u32::from(seed) * 7 + (i >> 8) as u32) as u8
        })
        .collect()
}

/// A registered region over a buffer of ours.
struct Region {
    mr: *mut NDK_MR,
    /// The MDL the MR was registered with; lives as long as the region.
    _mdl: Mdl,
    buf: Vec<u8>,
    local: u32,
    remote: u32,
}

impl Region {
    fn new(nic: &Nic, pd: *mut NDK_PD, contents: Vec<u8>, flags: u32) -> Self {
        let mut buf = contents;
        let va = buf.as_mut_ptr() as u64;
        let mut mdl = nic.mdl(va, buf.len() as u32);
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

    fn va(&self) -> u64 {
        self.buf.as_ptr() as u64
    }

    fn sge(&self, offset: usize, len: usize) -> NDK_SGE {
        assert!(offset + len <= self.buf.len());
        sge(self.va() + offset as u64, len as u32, self.local)
    }

    /// The region's bytes (read after the completion that wrote them).
    fn bytes(&self) -> &[u8] {
        &self.buf
    }

    fn release(self) {
        let rec = Recorder::new();
        let f = mr_table(self.mr).NdkDeregisterMr.unwrap();
        // SAFETY: our registered MR.
        let status = unsafe { f(self.mr, Some(request_cb), rec.ctx()) };
        assert_eq!(finish(status, rec, "deregister MR"), STATUS_SUCCESS);
        close_wait(self.mr);
    }
}

/// One end of a connection: its adapter's objects.
struct End<'a> {
    nic: &'a Nic,
    pd: *mut NDK_PD,
    cq: *mut NDK_CQ,
    qp: *mut NDK_QP,
    connector: *mut NDK_CONNECTOR,
    disc: &'static Recorder,
}

impl<'a> End<'a> {
    fn new(nic: &'a Nic, qp_ctx: usize) -> Self {
        let pd = nic.create_pd();
        let cq = nic.create_cq(64, Recorder::new());
        let qp = create_qp(pd, cq, cq, qp_ctx, 16, 16, 2, 2, 0).expect("NdkCreateQp");
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
    fn region(&self, contents: Vec<u8>, flags: u32) -> Region {
        Region::new(self.nic, self.pd, contents, flags)
    }

    fn close(self) {
        close_wait(self.connector);
        close_wait(self.qp);
        close_wait(self.cq);
        close_wait(self.pd);
    }
}

static PORTS: AtomicU16 = AtomicU16::new(7100);

const CONNECT_DATA: &[u8] = b"bottled connect";
const ACCEPT_DATA: &[u8] = b"bottled accept";

/// The private data a connector received (the peer's, zero-padded).
fn connection_data(c: *mut NDK_CONNECTOR) -> Vec<u8> {
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

/// A connection from a QP of one adapter (active) to a QP of another
/// (passive, listening).
struct Connection<'a> {
    active: End<'a>,
    passive: End<'a>,
    listener: *mut NDK_LISTENER,
}

impl<'a> Connection<'a> {
    /// Listen, connect, accept, complete connect, with private data both
    /// ways, each step checked.
    fn establish(from: &'a Nic, to: &'a Nic) -> Self {
        let mut active = End::new(from, 0xA1);
        let mut passive = End::new(to, 0xB1);
        let events = Recorder::new();
        let listener = to.create_listener(events);
        let port = PORTS.fetch_add(1, Ordering::SeqCst);
        let rec = Recorder::new();
        let f = listener_table(listener).NdkListen.unwrap();
        let at = to.addr(port);
        // SAFETY: our listener and a valid address.
        let status = unsafe { f(listener, at.ptr(), at.len(), Some(request_cb), rec.ctx()) };
        assert_eq!(finish(status, rec, "listen"), STATUS_SUCCESS, "NdkListen");

        active.connector = from.create_connector();
        let connected = Recorder::new();
        let status = connect(
            active.connector,
            active.qp,
            &from.addr(0),
            &to.addr(port),
            CONNECT_DATA,
            connected,
        );
        assert_eq!(
            status, STATUS_PENDING,
            "NdkConnect {} -> {}",
            from.ip, to.ip
        );
        wait_until("the connect event", || events.count() >= 1);
        passive.connector = events.calls()[0].object as *mut NDK_CONNECTOR;
        assert!(!passive.connector.is_null());
        assert!(connection_data(passive.connector).starts_with(CONNECT_DATA));
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
        wait_until("the connect completion", || connected.count() >= 1);
        assert_eq!(connected.statuses(), vec![STATUS_SUCCESS], "connect status");
        assert!(connection_data(active.connector).starts_with(ACCEPT_DATA));
        assert_eq!(
            complete_connect(active.connector, active.disc),
            STATUS_SUCCESS
        );
        wait_until("the accept completion", || accepted.count() >= 1);
        assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS], "accept status");
        Self {
            active,
            passive,
            listener,
        }
    }

    /// A SEND of [`SEND_LEN`] bytes each way, data and the bytes past it
    /// checked.
    fn sends(&self) {
        for (from, to, seed) in [
            (&self.active, &self.passive, 1u8),
            (&self.passive, &self.active, 2u8),
        ] {
            let data = pattern(SEND_LEN, seed);
            let source = from.region(data.clone(), 0);
            let sink = to.region(vec![0xEE; SEND_LEN + 64], NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
            assert_eq!(
                receive(to.qp, 0x10, &[sink.sge(0, SEND_LEN + 64)]),
                STATUS_SUCCESS
            );
            assert_eq!(
                send(from.qp, 0x20, &[source.sge(0, SEND_LEN)], 0),
                STATUS_SUCCESS
            );
            expect_one(from.cq, NdkOperationTypeSend, 0x20, None);
            expect_one(to.cq, NdkOperationTypeReceive, 0x10, Some(SEND_LEN as u32));
            assert_eq!(&sink.bytes()[..SEND_LEN], &data[..], "SEND data {seed}");
            assert!(
                sink.bytes()[SEND_LEN..].iter().all(|&v| v == 0xEE),
                "past the SEND"
            );
            sink.release();
            source.release();
        }
    }

    /// An RDMA WRITE of [`BIG`] bytes by the active end into the passive
    /// end's memory.
    fn rdma_write(&self) {
        let data = pattern(BIG, 3);
        let source = self.active.region(data.clone(), 0);
        let target = self.passive.region(
            vec![0u8; BIG],
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
        );
        let sges = [source.sge(0, BIG)];
        assert_eq!(
            write(self.active.qp, 0x30, &sges, target.va(), target.remote, 0),
            STATUS_SUCCESS,
            "NdkWrite"
        );
        expect_one(self.active.cq, NdkOperationTypeWrite, 0x30, None);
        assert!(target.bytes() == data.as_slice(), "RDMA WRITE data differs");
        target.release();
        source.release();
    }

    /// An RDMA READ of [`BIG`] bytes by the active end from the passive
    /// end's memory.
    fn rdma_read(&self) {
        let data = pattern(BIG, 4);
        let remote = self
            .passive
            .region(data.clone(), NDK_MR_FLAG_ALLOW_REMOTE_READ);
        let sink = self
            .active
            .region(vec![0u8; BIG], NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        let sges = [sink.sge(0, BIG)];
        assert_eq!(
            read(self.active.qp, 0x40, &sges, remote.va(), remote.remote, 0),
            STATUS_SUCCESS,
            "NdkRead"
        );
        expect_one(self.active.cq, NdkOperationTypeRead, 0x40, None);
        assert!(sink.bytes() == data.as_slice(), "RDMA READ data differs");
        sink.release();
        remote.release();
    }

    /// Disconnects from the active end (the passive end hears of it) and
    /// closes everything.
    fn close(self) {
        let done = Recorder::new();
        let status = disconnect(self.active.connector, done);
        assert_eq!(
            finish(status, done, "disconnect"),
            STATUS_SUCCESS,
            "NdkDisconnect"
        );
        wait_until("the disconnect event", || self.passive.disc.count() >= 1);
        self.active.close();
        self.passive.close();
        close_wait(self.listener);
    }
}

/// Connects a new QP of `from` to a new QP of `to` and moves data: a SEND
/// each way, then a 1 MiB RDMA WRITE and a 1 MiB RDMA READ by `from` into
/// and from `to`'s memory, each checked byte for byte.
fn exchange(from: &Nic, to: &Nic) {
    let c = Connection::establish(from, to);
    c.sends();
    c.rdma_write();
    c.rdma_read();
    c.close();
}

/// No bugcheck so far in this process.
fn no_bugchecks() {
    let b = kbottle::verifier::bugchecks();
    assert!(b.is_empty(), "bugchecks: {b:?}");
}

// ---------------------------------------------------------------- tests

/// Two bottled adapters: connect, SEND both ways, RDMA WRITE and READ of
/// 1 MiB, all through the bottle's WSK sockets.
#[test]
fn two_bottled_adapters_exchange_rocev2() {
    let x = Nic::bottled();
    let y = Nic::bottled();
    let before = kbottle::netio::counters();
    exchange(&x, &y);
    let after = kbottle::netio::counters();
    // 1 MiB at most 4 KiB per packet, each way across the bottle.
    assert!(
        after.sent - before.sent >= 2 * 256,
        "{before:?} -> {after:?}"
    );
    assert!(
        after.indicated - before.indicated >= 2 * 256,
        "{before:?} -> {after:?}"
    );
    x.close();
    y.close();
    no_bugchecks();
}

/// A bottled adapter and a `librsndk.so` adapter on UDP: the bottled one
/// connects first, then the host one, each exchange complete.
#[test]
fn bottled_and_host_adapters_exchange_rocev2_both_ways() {
    let bottled = Nic::bottled();
    let host = Nic::host();
    exchange(&bottled, &host);
    exchange(&host, &bottled);
    bottled.close();
    host.close();
    no_bugchecks();
}

/// A capture of a bottled exchange (both adapters in the bottle, so each
/// datagram is recorded as sent and as received) decodes in tshark: every
/// frame is eth/ip/udp/infiniband, none malformed, and the SEND, WRITE,
/// READ, ACK and CM opcodes are there. Runs in a child process (the
/// capture is process-wide).
#[test]
fn capture_of_a_bottled_exchange_decodes_in_tshark() {
    let file = concat!(env!("CARGO_TARGET_TMPDIR"), "/bottle_network.pcap");
    if !is_child() {
        // Fail here, clearly, when tshark is missing.
        if let Err(e) = Command::new("tshark").arg("--version").output() {
            panic!(
                "tshark is not installed ({e}): install it (e.g. `apt-get install tshark`) to run \
                 the capture decoding test"
            );
        }
        child_passes("network::capture_of_a_bottled_exchange_decodes_in_tshark");
        return;
    }
    let x = Nic::bottled_in_child(1);
    let y = Nic::bottled_in_child(2);
    kbottle::netio::set_capture(Some(file.into())).expect("start the capture");
    exchange(&x, &y);
    kbottle::netio::set_capture(None).expect("flush the capture");
    x.close();
    y.close();
    no_bugchecks();

    let frames = tshark(
        file,
        &[
            "-T",
            "fields",
            "-e",
            "frame.protocols",
            "-e",
            "_ws.malformed",
        ],
    );
    // 1 MiB each way is 256 packets at least, recorded twice.
    assert!(frames.len() >= 1024, "too few frames: {}", frames.len());
    for (i, line) in frames.iter().enumerate() {
        let mut fields = line.split('\t');
        let protocols = fields.next().unwrap_or_default();
        let malformed = fields.next().unwrap_or_default();
        assert!(
            protocols == "eth:ethertype:ip:udp:infiniband"
                || protocols == "eth:ethertype:ip:udp:infiniband:data",
            "frame {} does not decode as RoCEv2: {line}",
            i + 1
        );
        assert!(malformed.is_empty(), "frame {} malformed: {line}", i + 1);
    }
    let count = |op: u8| tshark(file, &["-Y", &format!("infiniband.bth.opcode == {op}")]).len();
    // SEND first/last (0/2) for 5 KiB, RDMA WRITE first (6), READ request
    // (12), READ response first (13), ACK (17), UD SEND only (CM MAD, 100).
    for (op, what) in [
        (0, "SEND first"),
        (2, "SEND last"),
        (6, "RDMA WRITE first"),
        (12, "RDMA READ request"),
        (13, "RDMA READ response first"),
        (17, "ACKNOWLEDGE"),
        (100, "UD SEND only (CM MAD)"),
    ] {
        assert!(count(op) >= 1, "no {what} (opcode {op}) in the capture");
    }
}

/// A bottled adapter holds exactly one open WSK socket, which its halt
/// closes (in a child: the count is process-wide).
#[test]
fn an_adapter_holds_one_socket_until_its_halt() {
    if !is_child() {
        child_passes("network::an_adapter_holds_one_socket_until_its_halt");
        return;
    }
    assert_eq!(kbottle::netio::open_sockets(), 0, "before any adapter");
    let id = common::adapter_on(machine(), child_address(3));
    assert_eq!(kbottle::netio::open_sockets(), 1, "one adapter, one socket");
    machine().halt(id);
    assert_eq!(
        kbottle::netio::open_sockets(),
        0,
        "the halt closed the socket"
    );
    no_bugchecks();
}

/// With every datagram indicated in two MDLs (split halfway through its
/// payload), two bottled adapters still exchange the same bytes: the
/// driver's path for datagrams that are not in one mapped MDL. In a child
/// (the mode is process-wide).
#[test]
fn split_indications_carry_the_same_exchange() {
    if !is_child() {
        child_passes("network::split_indications_carry_the_same_exchange");
        return;
    }
    kbottle::netio::set_split_indications(true);
    let x = Nic::bottled_in_child(4);
    let y = Nic::bottled_in_child(5);
    let before = kbottle::netio::counters();
    exchange(&x, &y);
    let after = kbottle::netio::counters();
    assert!(
        after.indicated - before.indicated >= 2 * 256,
        "{before:?} -> {after:?}"
    );
    x.close();
    y.close();
    no_bugchecks();
}

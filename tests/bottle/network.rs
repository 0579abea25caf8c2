//! RoCEv2 between bottled `rsndk.sys` adapters as Ethernet frames on the
//! bottle's emulated segment: each adapter is the driver's virtual
//! miniport V over an emulated NIC, its address given to its interface in
//! the bottle's TCP/IP, its RNIC's frames sent down the binding from the
//! driver's own NBL pool and steered out of the NIC's receive indications;
//! a capture of the segment decodes in Wireshark.
//!
//! Each exchange connects two QPs through the NDK connection manager
//! (listen, connect, accept, complete connect, with private data), moves a
//! SEND each way with its data checked, then an RDMA WRITE and an RDMA
//! READ of 1 MiB checked byte for byte, disconnects and closes everything.
//! Memory of a bottled adapter is described by MDLs whose page numbers are
//! physical addresses in the bottle's model (`kbottle::mm::phys_of`).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::ptr;
use std::sync::atomic::{AtomicU16, Ordering};

use kbottle::machine::AdapterId;
use kbottle::segment::SegmentId;
use ndkpi::*;

use crate::common::{self, child_passes, is_child, machine};
use crate::conn::{connection_data, pattern};
use crate::ndk::{Ndk, close_wait, finish, wait_results};
use crate::provider_util::*;

/// The NDK version the consumer asks for.
const VERSION: NDK_VERSION = NDK_VERSION { Major: 1, Minor: 2 };
/// RDMA transfer size.
const BIG: usize = 1 << 20;
/// SEND size: more than one 4 KiB packet, not a multiple of it.
const SEND_LEN: usize = 4096 + 1000;
/// RoCEv2 frames 1 MiB takes at the default path MTU (1024).
const BIG_FRAMES: u64 = (BIG / 1024) as u64;

// ---------------------------------------------------------------- adapters

/// One open NDK adapter of a bottled V.
#[derive(Debug)]
struct Nic {
    ndk: Ndk,
    id: AdapterId,
}

impl std::ops::Deref for Nic {
    type Target = Ndk;

    fn deref(&self) -> &Ndk {
        &self.ndk
    }
}

impl Nic {
    /// A new V of this process's machine on the default segment, at a
    /// fresh address, opened for NDK.
    fn bottled() -> Self {
        let (id, ip) = common::adapter();
        Self::open(id, ip)
    }

    /// A new V of this process's machine on `segment` at a fresh address,
    /// opened for NDK.
    fn on(segment: SegmentId) -> Self {
        let ip = common::fresh_address();
        let id = common::adapter_with(machine(), segment, &common::keywords(), ip.into());
        Self::open(id, ip)
    }

    fn open(id: AdapterId, ip: Ipv4Addr) -> Self {
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
            id,
        }
    }

    /// The counters of the NIC below: (indicated, of those with
    /// `NDIS_RECEIVE_FLAGS_RESOURCES`, transmitted, send failures).
    fn counters(&self) -> NicCounters {
        let [
            indicated,
            with_resources,
            _filtered,
            _dropped,
            transmitted,
            send_failures,
        ] = machine().nic_counters(self.id).expect("a NIC below V");
        NicCounters {
            indicated,
            with_resources,
            transmitted,
            send_failures,
        }
    }

    /// Closes the NDK adapter and halts V (the driver unbinds from the NIC).
    fn close(self) {
        machine().close_ndk(self.id, self.adapter);
        machine().halt(self.id);
    }
}

/// What a NIC below a V counted.
#[derive(Clone, Copy, Debug)]
struct NicCounters {
    indicated: u64,
    with_resources: u64,
    transmitted: u64,
    send_failures: u64,
}

impl NicCounters {
    fn since(self, before: Self) -> Self {
        Self {
            indicated: self.indicated - before.indicated,
            with_resources: self.with_resources - before.with_resources,
            transmitted: self.transmitted - before.transmitted,
            send_failures: self.send_failures - before.send_failures,
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
    fn new(nic: &Ndk, pd: *mut NDK_PD, contents: Vec<u8>, flags: u32) -> Self {
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

/// Two bottled adapters on the default segment: connect, SEND both ways,
/// RDMA WRITE and READ of 1 MiB, all as frames through their NICs (each
/// NIC sends and receives at least the 1 MiB's frames, with no send
/// failure).
#[test]
fn two_bottled_adapters_exchange_rocev2() {
    let x = Nic::bottled();
    let y = Nic::bottled();
    let (x0, y0) = (x.counters(), y.counters());
    exchange(&x, &y);
    let (dx, dy) = (x.counters().since(x0), y.counters().since(y0));
    // The WRITE's data goes x -> y, the READ's y -> x; each side also
    // acknowledges and requests.
    for (what, d) in [("x", dx), ("y", dy)] {
        assert!(
            d.transmitted >= BIG_FRAMES && d.indicated >= BIG_FRAMES,
            "{what}'s NIC: {d:?}"
        );
        assert_eq!(d.send_failures, 0, "{what}'s NIC: {d:?}");
    }
    x.close();
    y.close();
    no_bugchecks();
}

/// A capture of an exchange on a segment of its own decodes in tshark:
/// every frame is RoCEv2 (eth/ip/udp/infiniband, UDP port 4791, between
/// the two adapters' MACs and addresses) or address resolution (ARP,
/// ICMPv6), none malformed, the 1 MiB transfers are there frame by frame,
/// and so are the SEND, WRITE, READ, ACK and CM opcodes.
#[test]
fn capture_of_a_bottled_exchange_decodes_in_tshark() {
    let file = concat!(env!("CARGO_TARGET_TMPDIR"), "/bottle_network.pcap");
    let segment = machine().add_segment();
    let x = Nic::on(segment);
    let y = Nic::on(segment);
    let macs: BTreeSet<String> = [x.id, y.id]
        .iter()
        .map(|id| {
            let mac = machine().adapter_mac(*id).expect("V's MAC");
            mac.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        })
        .collect();
    let ips: BTreeSet<String> = [x.ip, y.ip].iter().map(ToString::to_string).collect();
    machine()
        .start_capture(segment, file.as_ref())
        .expect("start the capture");
    exchange(&x, &y);
    machine().stop_capture(segment).expect("end the capture");
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
            "-e",
            "eth.src",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "udp.dstport",
        ],
    );
    let mut rocev2 = 0u64;
    for (i, line) in frames.iter().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let field = |k: usize| f.get(k).copied().unwrap_or_default();
        assert!(field(1).is_empty(), "frame {} malformed: {line}", i + 1);
        match field(0) {
            "eth:ethertype:ip:udp:infiniband" | "eth:ethertype:ip:udp:infiniband:data" => {
                rocev2 += 1;
                assert!(
                    macs.contains(field(2))
                        && ips.contains(field(3))
                        && ips.contains(field(4))
                        && field(3) != field(4)
                        && field(5) == "4791",
                    "frame {} is RoCEv2 but not between {macs:?} at {ips:?}: {line}",
                    i + 1
                );
            }
            "eth:ethertype:arp" => {}
            p if p.starts_with("eth:ethertype:ipv6:icmpv6") => {}
            _ => panic!("frame {} is neither RoCEv2 nor ARP/ND: {line}", i + 1),
        }
    }
    // 1 MiB each way (WRITE x -> y, READ responses y -> x).
    assert!(rocev2 >= 2 * BIG_FRAMES, "too few RoCEv2 frames: {rocev2}");
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

/// A bottled adapter allocates its own NBL pool (the RNIC's frames are
/// built in its lists), keeps the same lists through an exchange (every
/// frame it sent came back to it), and its halt frees the pool and
/// nothing else: the other adapter's stays. In a child: pools are
/// process-wide.
#[test]
fn an_adapter_holds_its_own_nbl_pool_until_its_halt() {
    if !is_child() {
        child_passes("network::an_adapter_holds_its_own_nbl_pool_until_its_halt");
        return;
    }
    let pools = kbottle::ndis::nblpool::live_pools;
    let before: Vec<usize> = pools().iter().map(|p| p.pool).collect();
    let new_pools = || {
        pools()
            .into_iter()
            .filter(|p| !before.contains(&p.pool))
            .collect::<Vec<_>>()
    };
    let x = Nic::bottled();
    let of_x = new_pools();
    assert_eq!(of_x.len(), 1, "one pool for the first adapter: {of_x:?}");
    let y = Nic::bottled();
    let both = new_pools();
    assert_eq!(both.len(), 2, "one pool per adapter: {both:?}");
    assert_ne!(both[0].owner, both[1].owner, "each on its own binding");
    exchange(&x, &y);
    // Everything sent came back: no more lists out than before.
    let idle = |p: &kbottle::ndis::nblpool::LivePool| {
        both.iter().any(|q| q.pool == p.pool && q.lists == p.lists)
    };
    wait_until("every frame back in its pool", || {
        new_pools().iter().all(idle)
    });
    x.close();
    let left = new_pools();
    assert_eq!(left.len(), 1, "the halt freed the first pool: {left:?}");
    assert_ne!(left[0].pool, of_x[0].pool, "the first adapter's pool went");
    y.close();
    assert_eq!(new_pools(), vec![], "both halts freed their pools");
    no_bugchecks();
}

/// The NICs indicate some receives with `NDIS_RECEIVE_FLAGS_RESOURCES`
/// (the lists are the NIC's again when the call returns) and the others
/// without (the driver returns them): an exchange goes through both kinds
/// on both adapters and moves the same bytes.
#[test]
fn receives_with_and_without_resources_carry_the_same_exchange() {
    let x = Nic::bottled();
    let y = Nic::bottled();
    let (x0, y0) = (x.counters(), y.counters());
    exchange(&x, &y);
    let (dx, dy) = (x.counters().since(x0), y.counters().since(y0));
    for (what, d) in [("x", dx), ("y", dy)] {
        assert!(
            d.with_resources >= 1 && d.indicated - d.with_resources >= 1,
            "{what}'s NIC indicated both kinds: {d:?}"
        );
    }
    x.close();
    y.close();
    no_bugchecks();
}

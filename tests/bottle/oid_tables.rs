//! The NDK tables and counters Windows tools and SMB read from the bottled
//! driver through OIDs: `OID_NDK_CONNECTIONS` and
//! `OID_NDK_LOCAL_ENDPOINTS` filled from the provider's live connection,
//! listener and shared-endpoint tables (checked entry by entry against
//! what the connectors themselves report, and against
//! `NDIS_STATUS_BUFFER_TOO_SHORT` with `BytesNeeded` for short buffers),
//! `OID_NDK_STATISTICS` counters moving with connections, failures and
//! traffic, and `OID_NDK_SET_STATE` unable to enable NDK while
//! `*NetworkDirect` is 0. The last test reads the same snapshot through
//! the provider's API on `librsndk.so` adapters of an in-memory fabric.

use std::ffi::CString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ptr;
use std::sync::atomic::{AtomicU16, Ordering};

use kbottle::machine::{AdapterId, Keyword};
use kbottle::ndis::miniport::{OidKind, OidOutcome, oid_request_outcome};
use kbottle::ndis::types::{
    NDIS_NDK_CONNECTION_ENTRY, NDIS_NDK_LOCAL_ENDPOINT_ENTRY, NDIS_NDK_PERFORMANCE_COUNTERS,
    NDIS_NDK_STATISTICS_INFO, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT,
    NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1, NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1,
    NDIS_STATUS_BUFFER_TOO_SHORT, NetEventNDKEnable, OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS,
    OID_NDK_SET_STATE, OID_NDK_STATISTICS,
};
use ndkpi::*;
use provider::snapshot::{Connection, EndpointKind, LocalEndpoint};

use crate::common::{self, READY, child_passes, fresh_address, is_child, machine};

/// Gives V's interface a fresh address in the stack (NDK off: the driver's
/// service of it is not observable through NDK).
fn give_address_to_stack(machine: &kbottle::Machine, a: AdapterId) {
    let ip = fresh_address();
    machine
        .add_address(a, ip.into(), testkit::adapter::bottle::PREFIX_V4)
        .unwrap_or_else(|e| panic!("add_address {ip}: {e}"));
    assert!(machine.wait_address_preferred(a, ip.into(), READY));
}
use crate::ndk::{Ndk, close_wait, finish, wait_results};
use testkit::adapter::*;

/// The NDK version the consumer asks for.
const VERSION: NDK_VERSION = NDK_VERSION { Major: 1, Minor: 2 };
/// SEND size: five packets at the default RoCE MTU of 1024.
const SEND_LEN: usize = 5000;
/// Ports of this file's listeners and shared endpoints.
static PORTS: AtomicU16 = AtomicU16::new(7600);

fn next_port() -> u16 {
    PORTS.fetch_add(1, Ordering::SeqCst)
}

// ---------------------------------------------------------------- OIDs

/// A query of `oid` into a buffer of `len` bytes: how it completed and the
/// buffer.
fn query(a: AdapterId, oid: u32, len: usize) -> (OidOutcome, Vec<u8>) {
    let mut buf = vec![0xCC; len];
    let outcome = oid_request_outcome(a.0, OidKind::Query, oid, &mut buf);
    (outcome, buf)
}

/// Reads a plain-data value at `offset` of an answer.
fn read_at<T: Copy>(answer: &[u8], offset: usize) -> T {
    assert!(answer.len() >= offset + size_of::<T>(), "answer too short");
    let at = answer[offset..].as_ptr();
    // SAFETY: `size_of::<T>()` bytes from `at` are in bounds (checked); T
    // is integers or a repr(C) structure of them, valid for any bytes.
    unsafe { at.cast::<T>().read_unaligned() }
}

/// The socket address in a `SOCKADDR_INET` (28 bytes).
fn sockaddr_inet(bytes: &[u8]) -> SocketAddr {
    let family = u16::from_ne_bytes([bytes[0], bytes[1]]);
    let port = u16::from_be_bytes([bytes[2], bytes[3]]);
    match family {
        AF_INET => {
            assert!(bytes[8..28].iter().all(|&b| b == 0), "IPv4 tail not zero");
            let ip: [u8; 4] = bytes[4..8].try_into().unwrap();
            SocketAddr::new(IpAddr::from(ip), port)
        }
        AF_INET6 => {
            let ip: [u8; 16] = bytes[8..24].try_into().unwrap();
            SocketAddr::new(IpAddr::from(ip), port)
        }
        other => panic!("SOCKADDR_INET family {other}"),
    }
}

/// Checks the 16-byte head of a variable-size NDK answer of `len` bytes
/// and returns its `Count`.
fn head(answer: &[u8], len: usize) -> usize {
    let header: NDIS_OBJECT_HEADER = read_at(answer, 0);
    assert_eq!(
        (header.Type, header.Revision, usize::from(header.Size)),
        (NDIS_OBJECT_TYPE_DEFAULT, 1, len),
        "answer header"
    );
    assert_eq!(read_at::<u32>(answer, 4), 0, "Flags (reserved)");
    assert_eq!(answer[12], 0, "not mapped onto TCP");
    read_at::<u32>(answer, 8) as usize
}

/// `OID_NDK_CONNECTIONS` of adapter `a`, each entry checked for a kernel
/// owner, as (local, remote).
fn connections(a: AdapterId) -> Vec<(SocketAddr, SocketAddr)> {
    let (outcome, answer) = query(a, OID_NDK_CONNECTIONS, 4096);
    assert_eq!(outcome.status, STATUS_SUCCESS, "OID_NDK_CONNECTIONS");
    let len = outcome.bytes_done as usize;
    let count = head(&answer, len);
    assert_eq!(len, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(count));
    (0..count)
        .map(|i| {
            let at = NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(i);
            let e = &answer[at..at + size_of::<NDIS_NDK_CONNECTION_ENTRY>()];
            assert_eq!(e[56], 0, "UserModeOwner");
            assert_eq!(read_at::<u32>(e, 60), 0, "OwnerPid");
            (sockaddr_inet(&e[0..28]), sockaddr_inet(&e[28..56]))
        })
        .collect()
}

/// `OID_NDK_LOCAL_ENDPOINTS` of adapter `a` as (local, is a listener).
fn local_endpoints(a: AdapterId) -> Vec<(SocketAddr, bool)> {
    let (outcome, answer) = query(a, OID_NDK_LOCAL_ENDPOINTS, 4096);
    assert_eq!(outcome.status, STATUS_SUCCESS, "OID_NDK_LOCAL_ENDPOINTS");
    let len = outcome.bytes_done as usize;
    let count = head(&answer, len);
    assert_eq!(len, NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(count));
    (0..count)
        .map(|i| {
            let at = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(i);
            let e = &answer[at..at + size_of::<NDIS_NDK_LOCAL_ENDPOINT_ENTRY>()];
            assert_eq!(e[28], 0, "UserModeOwner");
            assert!(e[29] <= 1, "Listener is a BOOLEAN");
            assert_eq!(read_at::<u32>(e, 32), 0, "OwnerPid");
            (sockaddr_inet(&e[0..28]), e[29] == 1)
        })
        .collect()
}

/// `OID_NDK_STATISTICS` of adapter `a`.
fn stats(a: AdapterId) -> NDIS_NDK_PERFORMANCE_COUNTERS {
    let (outcome, answer) = query(a, OID_NDK_STATISTICS, 512);
    assert_eq!(outcome.status, STATUS_SUCCESS, "OID_NDK_STATISTICS");
    read_at::<NDIS_NDK_STATISTICS_INFO>(&answer, 0).CounterSet
}

/// A query of `oid` with `len` bytes must be refused as too short, asking
/// for `needed`, having written nothing.
#[track_caller]
fn too_short(a: AdapterId, oid: u32, len: usize, needed: usize) {
    let (outcome, _) = query(a, oid, len);
    assert_eq!(
        outcome,
        OidOutcome {
            status: NDIS_STATUS_BUFFER_TOO_SHORT,
            bytes_done: 0,
            bytes_needed: needed as u32,
        },
        "OID {oid:#x} with {len} bytes"
    );
}

// ---------------------------------------------------------------- NDK side

/// One bottled adapter, opened for NDK.
struct Nic {
    id: AdapterId,
    ndk: Ndk,
}

impl Nic {
    fn new() -> Self {
        let (id, ip) = common::adapter();
        let adapter = machine()
            .open_ndk(id, VERSION)
            .unwrap_or_else(|s| panic!("open NDK at {ip}: {s:#010x}"));
        Self {
            id,
            ndk: Ndk {
                adapter,
                ip,
                bottled: true,
            },
        }
    }

    fn addr(&self, port: u16) -> SockAddr {
        self.ndk.addr(port)
    }

    fn socket(&self, port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(self.ndk.ip), port)
    }

    fn close(self) {
        machine().close_ndk(self.id, self.ndk.adapter);
        machine().halt(self.id);
    }
}

/// The address an NDK connector reports through `get` (its
/// `NdkGetLocalAddress` or `NdkGetPeerAddress`).
fn connector_address(
    c: *mut NDK_CONNECTOR,
    get: unsafe extern "win64" fn(*mut NDK_CONNECTOR, PSOCKADDR, *mut u32) -> NTSTATUS,
) -> SocketAddr {
    let mut buf = [0u8; 28];
    let mut len = buf.len() as u32;
    // SAFETY: our connector and a buffer of `len` bytes.
    let status = unsafe { get(c, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!(status, STATUS_SUCCESS, "connector address");
    sockaddr_inet(&buf)
}

fn local_of(c: *mut NDK_CONNECTOR) -> SocketAddr {
    connector_address(c, connector_table(c).NdkGetLocalAddress.unwrap())
}

fn peer_of(c: *mut NDK_CONNECTOR) -> SocketAddr {
    connector_address(c, connector_table(c).NdkGetPeerAddress.unwrap())
}

/// A listener of `nic` listening at `port`.
fn listener(nic: &Ndk, port: u16, events: &'static Recorder) -> *mut NDK_LISTENER {
    let l = nic.create_listener(events);
    let rec = Recorder::new();
    let f = listener_table(l).NdkListen.unwrap();
    let at = nic.addr(port);
    // SAFETY: our listener and a valid address.
    let status = unsafe { f(l, at.ptr(), at.len(), Some(request_cb), rec.ctx()) };
    assert_eq!(finish(status, rec, "listen"), STATUS_SUCCESS, "NdkListen");
    l
}

/// A shared endpoint of `nic` at `port`.
fn shared_endpoint(nic: &Ndk, port: u16) -> *mut NDK_SHARED_ENDPOINT {
    let mut e = ptr::null_mut();
    let rec = Recorder::new();
    let at = nic.addr(port);
    let f = adapter_table(nic.adapter).NdkCreateSharedEndpoint.unwrap();
    // SAFETY: our adapter, a valid address and out-pointer.
    let status = unsafe {
        f(
            nic.adapter,
            at.ptr(),
            at.len(),
            Some(create_cb),
            rec.ctx(),
            &raw mut e,
        )
    };
    assert_eq!(
        finish(status, rec, "create shared endpoint"),
        STATUS_SUCCESS,
        "NdkCreateSharedEndpoint"
    );
    e
}

/// One end of a connection: its adapter's objects.
struct End<'a> {
    nic: &'a Ndk,
    pd: *mut NDK_PD,
    cq: *mut NDK_CQ,
    qp: *mut NDK_QP,
    connector: *mut NDK_CONNECTOR,
    disc: &'static Recorder,
}

impl<'a> End<'a> {
    /// A PD, CQ and QP of `nic`; the connector comes from `connector`
    /// (an active end creates its own, a passive end gets the listener's).
    fn new(nic: &'a Ndk, qp_ctx: usize, connector: *mut NDK_CONNECTOR) -> Self {
        let pd = nic.create_pd();
        let cq = nic.create_cq(64, Recorder::new());
        let qp = create_qp(pd, cq, cq, qp_ctx, 16, 16, 2, 2, 0).expect("NdkCreateQp");
        Self {
            nic,
            pd,
            cq,
            qp,
            connector,
            disc: Recorder::new(),
        }
    }

    /// An end that will connect.
    fn active(nic: &'a Ndk, qp_ctx: usize) -> Self {
        Self::new(nic, qp_ctx, nic.create_connector())
    }

    fn close(self) {
        close_wait(self.connector);
        close_wait(self.qp);
        close_wait(self.cq);
        close_wait(self.pd);
    }
}

/// The two ends of a connection and the listener that accepted it.
struct Link<'a> {
    active: End<'a>,
    passive: End<'a>,
    listener: *mut NDK_LISTENER,
}

/// A connection from a new QP of `from` to a listener of `to` at `port`
/// (listen, connect, accept, complete connect).
fn establish<'a>(from: &'a Ndk, to: &'a Ndk, port: u16) -> Link<'a> {
    let active = End::active(from, 0xA1);
    let mut passive = End::new(to, 0xB1, ptr::null_mut());
    let events = Recorder::new();
    let l = listener(to, port, events);
    let connected = Recorder::new();
    let status = connect(
        active.connector,
        active.qp,
        &from.addr(0),
        &to.addr(port),
        b"oid tables",
        connected,
    );
    assert_eq!(status, STATUS_PENDING, "NdkConnect");
    wait_until("the connect event", || events.count() >= 1);
    passive.connector = events.calls()[0].object as *mut NDK_CONNECTOR;
    let accepted = Recorder::new();
    let status = accept(passive.connector, passive.qp, b"", passive.disc, accepted);
    assert_eq!(status, STATUS_PENDING, "NdkAccept");
    wait_until("the connect completion", || connected.count() >= 1);
    assert_eq!(connected.statuses(), vec![STATUS_SUCCESS], "connect status");
    assert_eq!(
        complete_connect(active.connector, active.disc),
        STATUS_SUCCESS
    );
    wait_until("the accept completion", || accepted.count() >= 1);
    assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS], "accept status");
    Link {
        active,
        passive,
        listener: l,
    }
}

impl Link<'_> {
    /// Disconnects from the active end and waits until the passive end
    /// heard of it.
    fn disconnect(&self) {
        let done = Recorder::new();
        let status = disconnect(self.active.connector, done);
        assert_eq!(finish(status, done, "disconnect"), STATUS_SUCCESS);
        wait_until("the disconnect event", || self.passive.disc.count() >= 1);
    }

    /// Closes both ends, then the listener.
    fn close(self) {
        self.active.close();
        self.passive.close();
        close_wait(self.listener);
    }
}

/// A registered region of `end`'s PD over a buffer of ours.
struct Region {
    mr: *mut NDK_MR,
    _mdl: Mdl,
    buf: Vec<u8>,
    local: u32,
}

impl Region {
    fn new(end: &End<'_>, contents: Vec<u8>, flags: u32) -> Self {
        let mut buf = contents;
        let mut mdl = end.nic.mdl(buf.as_mut_ptr() as u64, buf.len() as u32);
        let mr = create_mr(end.pd, false);
        let rec = Recorder::new();
        let f = mr_table(mr).NdkRegisterMr.unwrap();
        // SAFETY: our MR and an MDL over memory kept for the region's life.
        let status = unsafe { f(mr, mdl.ptr(), buf.len(), flags, Some(request_cb), rec.ctx()) };
        assert_eq!(finish(status, rec, "register MR"), STATUS_SUCCESS);
        let (local, _) = mr_tokens(mr);
        Self {
            mr,
            _mdl: mdl,
            buf,
            local,
        }
    }

    fn sge(&self) -> NDK_SGE {
        sge(self.buf.as_ptr() as u64, self.buf.len() as u32, self.local)
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

// ---------------------------------------------------------------- tests

/// Both tables follow a listener, a shared endpoint and a connection
/// between two bottled adapters: each side lists exactly its end of the
/// connection (the addresses its connector reports), the listener's side
/// its listener; short buffers are refused with the size needed; after
/// the disconnect no connection is listed, after the closes no endpoint.
#[test]
fn connection_and_endpoint_tables_follow_the_live_objects() {
    let (a, p) = (Nic::new(), Nic::new());
    for nic in [&a, &p] {
        assert_eq!(connections(nic.id), vec![], "no connection yet");
        assert_eq!(local_endpoints(nic.id), vec![], "no endpoint yet");
    }

    // A shared endpoint: listed, not as a listener, until it closes.
    let shared_port = next_port();
    let shared = shared_endpoint(&a.ndk, shared_port);
    assert_eq!(local_endpoints(a.id), vec![(a.socket(shared_port), false)]);
    close_wait(shared);
    assert_eq!(local_endpoints(a.id), vec![]);

    let port = next_port();
    let link = establish(&a.ndk, &p.ndk, port);
    let a_local = local_of(link.active.connector);
    assert_eq!(a_local.ip(), IpAddr::V4(a.ndk.ip));
    assert_ne!(a_local.port(), 0, "the active end's port is bound");
    assert_eq!(peer_of(link.active.connector), p.socket(port));
    assert_eq!(local_of(link.passive.connector), p.socket(port));
    assert_eq!(peer_of(link.passive.connector), a_local);

    assert_eq!(connections(a.id), vec![(a_local, p.socket(port))]);
    assert_eq!(connections(p.id), vec![(p.socket(port), a_local)]);
    assert_eq!(local_endpoints(p.id), vec![(p.socket(port), true)]);
    assert_eq!(local_endpoints(a.id), vec![], "a connector is no endpoint");

    // Too short for the answer: refused, with what it needs, nothing
    // written; exactly long enough: answered.
    let one_connection = NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(1);
    for len in [
        0,
        4,
        NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(0),
        one_connection - 1,
    ] {
        too_short(a.id, OID_NDK_CONNECTIONS, len, one_connection);
    }
    let (outcome, _) = query(a.id, OID_NDK_CONNECTIONS, one_connection);
    assert_eq!(
        (outcome.status, outcome.bytes_done as usize),
        (STATUS_SUCCESS, one_connection)
    );
    let one_endpoint = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(1);
    too_short(
        p.id,
        OID_NDK_LOCAL_ENDPOINTS,
        one_endpoint - 1,
        one_endpoint,
    );
    let (outcome, _) = query(p.id, OID_NDK_LOCAL_ENDPOINTS, one_endpoint);
    assert_eq!(
        (outcome.status, outcome.bytes_done as usize),
        (STATUS_SUCCESS, one_endpoint)
    );

    // Ended: gone from both sides at once, before any close; the
    // listener stays until it closes.
    link.disconnect();
    assert_eq!(connections(a.id), vec![]);
    assert_eq!(connections(p.id), vec![]);
    assert_eq!(local_endpoints(p.id), vec![(p.socket(port), true)]);
    link.close();
    assert_eq!(local_endpoints(p.id), vec![]);
    a.close();
    p.close();
}

/// `OID_NDK_STATISTICS` counts what happens: a refused connect is a
/// connect failure of the initiator, a connection an outbound connect on
/// one side and an accept on the other and active on both while it lasts,
/// a SEND frames and bytes out on one side and in on the other, an RDMA
/// WRITE to a bad token a connection error; `MissingCounterMask` is 0.
#[test]
fn statistics_count_connections_failures_and_traffic() {
    let (a, p) = (Nic::new(), Nic::new());
    for nic in [&a, &p] {
        let attributes = machine().ndk_attributes(nic.id).expect("NDK attributes");
        assert_eq!(attributes.capabilities.MissingCounterMask, 0);
    }
    let (a0, p0) = (stats(a.id), stats(p.id));

    // Nobody listens on this port: refused.
    let refused = End::active(&a.ndk, 0xC1);
    let done = Recorder::new();
    let status = connect(
        refused.connector,
        refused.qp,
        &a.addr(0),
        &p.addr(next_port()),
        b"",
        done,
    );
    assert_eq!(
        finish(status, done, "refused connect"),
        STATUS_CONNECTION_REFUSED
    );
    refused.close();
    let a1 = stats(a.id);
    assert_eq!(a1.ConnectFailure - a0.ConnectFailure, 1, "connect failures");

    let link = establish(&a.ndk, &p.ndk, next_port());
    let (active, passive) = (&link.active, &link.passive);
    let (a2, p2) = (stats(a.id), stats(p.id));
    assert_eq!(
        (a2.Connect - a1.Connect, a2.Accept - a1.Accept),
        (1, 0),
        "the initiator connected"
    );
    assert_eq!(
        (p2.Connect - p0.Connect, p2.Accept - p0.Accept),
        (0, 1),
        "the listener's side accepted"
    );
    assert_eq!((a2.ActiveConnection, p2.ActiveConnection), (1, 1));

    // A SEND of SEND_LEN bytes from a to p.
    let data: Vec<u8> = (0..SEND_LEN).map(|i| (i * 7) as u8).collect();
    let source = Region::new(active, data.clone(), 0);
    let sink = Region::new(passive, vec![0; SEND_LEN], NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    assert_eq!(receive(passive.qp, 0x10, &[sink.sge()]), STATUS_SUCCESS);
    assert_eq!(send(active.qp, 0x20, &[source.sge()], 0), STATUS_SUCCESS);
    assert_eq!(wait_results(active.cq, 1)[0].Status, STATUS_SUCCESS);
    assert_eq!(wait_results(passive.cq, 1)[0].Status, STATUS_SUCCESS);
    assert_eq!(sink.buf, data, "SEND data");
    let (a3, p3) = (stats(a.id), stats(p.id));
    let packets = SEND_LEN.div_ceil(1024) as u64;
    assert!(
        a3.RDMAOutFrames - a2.RDMAOutFrames >= packets,
        "frames out {} -> {}",
        a2.RDMAOutFrames,
        a3.RDMAOutFrames
    );
    assert!(a3.RDMAOutOctets - a2.RDMAOutOctets >= SEND_LEN as u64);
    assert!(p3.RDMAInFrames - p2.RDMAInFrames >= packets);
    assert!(p3.RDMAInOctets - p2.RDMAInOctets >= SEND_LEN as u64);
    // Each frame carries at least a BTH (12 bytes) and an ICRC (4).
    assert!(a3.RDMAOutOctets >= a3.RDMAOutFrames * 16);
    assert!(p3.RDMAInOctets >= p3.RDMAInFrames * 16);
    // p answered with acknowledgements.
    assert!(p3.RDMAOutFrames > p2.RDMAOutFrames && a3.RDMAInFrames > a2.RDMAInFrames);
    sink.release();
    source.release();

    // An RDMA WRITE to a token p never gave out: the responder refuses
    // it, the initiator's QP fails: a connection error.
    let source = Region::new(active, vec![1; 64], 0);
    assert_eq!(
        write(active.qp, 0x30, &[source.sge()], 0x1000, 0xBAD0_0BAD, 0),
        STATUS_SUCCESS
    );
    assert_ne!(wait_results(active.cq, 1)[0].Status, STATUS_SUCCESS);
    wait_until("the connection error counted", || {
        stats(a.id).ConnectionError > a3.ConnectionError
    });
    assert_eq!(
        stats(a.id).ConnectionError - a3.ConnectionError,
        1,
        "one QP failed"
    );
    source.release();

    link.close();
    let (a4, p4) = (stats(a.id), stats(p.id));
    assert_eq!((a4.ActiveConnection, p4.ActiveConnection), (0, 0));
    assert_eq!(
        (a4.Connect, a4.Accept, a4.ConnectFailure),
        (a2.Connect, a2.Accept, a1.ConnectFailure),
        "closing counts no new connection or failure"
    );
    a.close();
    p.close();
}

/// `*NetworkDirect` = 0: `OID_NDK_SET_STATE` TRUE succeeds (the OID must
/// not fail) but cannot enable NDK: no `NetEventNDKEnable` (the bottle
/// would bugcheck 0x7C/0x22 on one), opens still refused. In a child: a
/// bugcheck ends the process.
#[test]
fn ndk_set_state_cannot_enable_ndk_while_network_direct_is_off() {
    if !is_child() {
        child_passes("oid_tables::ndk_set_state_cannot_enable_ndk_while_network_direct_is_off");
        return;
    }
    let machine = machine();
    let a = machine
        .add_adapter(&[("*NetworkDirect", Keyword::Int(0))])
        .expect("adapter");
    give_address_to_stack(machine, a);
    assert!(machine.wait_idle(READY));
    assert_eq!(machine.oid_set(a, OID_NDK_SET_STATE, &[1]), Ok(1));
    assert!(machine.wait_idle(READY));
    assert!(
        !machine.pnp_events(a).contains(&NetEventNDKEnable),
        "NDK enabled against *NetworkDirect = 0: {:?}",
        machine.pnp_events(a)
    );
    assert_eq!(
        machine.open_ndk(a, VERSION).err(),
        Some(NDIS_STATUS_ADAPTER_NOT_READY)
    );
    assert_eq!(machine.oid_set(a, OID_NDK_SET_STATE, &[0]), Ok(1));
    assert!(machine.wait_idle(READY));
    assert!(!machine.pnp_events(a).contains(&NetEventNDKEnable));
    machine.halt(a);
    assert!(kbottle::verifier::bugchecks().is_empty());
}

/// The provider's snapshot API itself, on two `librsndk.so` adapters of
/// an in-memory fabric: one connection listed from both ends, the
/// listener, bounded output (an empty slice still learns the count), and
/// nothing once disconnected and closed.
#[test]
fn provider_snapshot_on_host_adapters() {
    let open = |ip: Ipv4Addr| {
        let config = CString::new(format!("mem:oidtables{}/{ip}", std::process::id())).unwrap();
        let mut adapter = ptr::null_mut();
        // SAFETY: a valid C string and out-pointer.
        let status = unsafe { rsndk::RsNdkOpenAdapterEx(config.as_ptr(), 1, 2, &raw mut adapter) };
        assert_eq!(status, STATUS_SUCCESS, "open {config:?}");
        Ndk {
            adapter,
            ip,
            bottled: false,
        }
    };
    let (a, p) = (
        open(Ipv4Addr::new(10, 77, 1, 1)),
        open(Ipv4Addr::new(10, 77, 1, 2)),
    );
    let ctx = |ndk: &Ndk| {
        // SAFETY: an open adapter of the provider, open for this borrow.
        let adapter = unsafe { provider::abi::object::<provider::adapter::Adapter>(ndk.adapter) };
        adapter.expect("a provider adapter").ctx().clone()
    };
    let (actx, pctx) = (ctx(&a), ctx(&p));
    assert_eq!(actx.active_connections(), 0);

    let port = next_port();
    let link = establish(&a, &p, port);
    let a_local = local_of(link.active.connector);
    let p_at = SocketAddr::new(IpAddr::V4(p.ip), port);
    let mut none: [Connection; 0] = [];
    assert_eq!(actx.connections_into(&mut none), 1, "counted without room");
    let mut one = [Connection {
        local: p_at,
        remote: p_at,
    }; 2];
    assert_eq!(actx.connections_into(&mut one), 1);
    assert_eq!(
        one[0],
        Connection {
            local: a_local,
            remote: p_at
        }
    );
    assert_eq!(pctx.connections_into(&mut one), 1);
    assert_eq!(
        one[0],
        Connection {
            local: p_at,
            remote: a_local
        }
    );
    let mut endpoints = [LocalEndpoint {
        local: a_local,
        kind: EndpointKind::SharedEndpoint,
    }; 1];
    assert_eq!(pctx.local_endpoints_into(&mut endpoints), 1);
    assert_eq!(
        endpoints[0],
        LocalEndpoint {
            local: p_at,
            kind: EndpointKind::Listener
        }
    );
    assert_eq!(actx.local_endpoints_into(&mut endpoints), 0);

    link.disconnect();
    assert_eq!(
        (actx.active_connections(), pctx.active_connections()),
        (0, 0)
    );
    link.close();
    assert_eq!(pctx.visit_local_endpoints(|_| ()), 0);
    drop((actx, pctx));
    for ndk in [a, p] {
        // SAFETY: our adapter, every child closed, closed once.
        let status = unsafe { rsndk::RsNdkCloseAdapter(ndk.adapter) };
        assert_eq!(status, STATUS_SUCCESS);
    }
}

//! A hostile peer: hand-built RoCEv2 packets aimed at an adapter (the
//! victim, V) that has real connections with a cooperating adapter (P).
//!
//! How the hostile peer learns what it forges: V and P connect through the
//! NDK (the CM exchange runs as usual) and P sends one SEND on each
//! connection. A packet tap installed on V's device (the same hook
//! `pcap=` uses) shows that SEND arriving: its BTH gives V's QP number and
//! PSN (the next expected PSN is one more), and V's ACK gives P's QP
//! number. Tokens are V's own (`NdkGetRemoteTokenFromMr`/`Mw`), as a peer
//! would receive them in private data; forged tokens are derived from them.
//!
//! On the in-memory fabric the hostile peer speaks with P's address (a
//! network does not authenticate sources) by putting datagrams on V's
//! fabric; V's answers are read from the tap. P stays idle on the attacked
//! connections. Over UDP on loopback (127.0.7.x) the hostile peer has its
//! own address and raw socket (whole datagrams, its own IPv4
//! identifications in their ICRCs): everything it sends must be dropped
//! without an answer.
//!
//! Every packet is built twice: by an encoder written here from the wire
//! layout alone, and by softrnic's builder; the two must be byte-identical,
//! so a bug shared by softrnic's builder and parser cannot hide.
//!
//! Checked for each kind of attack: the RC responder's documented answer
//! (NAK code, ACK, or silence, read from the bytes by hand), no execution
//! (canary-filled target and guard pages; no READ response carrying guard
//! bytes), the engine counters, and a legitimate connection on the same
//! adapters that keeps working during and after the attack.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::rnic_util::*;
use links::{Capture, Direction};
use ndkpi::*;
use rsndk::adapters::{device_of, fabric_of, tap_of};
use softrnic::wire::{
    Bth, ExtHeaders, Headers, Ipv4UdpFields, Opcode, ROCEV2_PORT, Reth, build, psn_add,
};
use testkit::adapter::*;

const PAGE: usize = 4096;
const CANARY: u8 = 0xC3;

// ---------------------------------------------------------------- packets

/// The fields of one forged request.
#[derive(Clone, Debug)]
struct Forge {
    src: [u8; 4],
    dst: [u8; 4],
    opcode: u8,
    qpn: u32,
    psn: u32,
    ack_req: bool,
    reth: Option<(u64, u32, u32)>,
    payload: Vec<u8>,
}

fn oracle_icrc(datagram_without_trailer: &[u8]) -> [u8; 4] {
    let mut m = datagram_without_trailer.to_vec();
    m[1] = 0xFF;
    m[8] = 0xFF;
    m[10] = 0xFF;
    m[11] = 0xFF;
    m[26] = 0xFF;
    m[27] = 0xFF;
    m[32] = 0xFF;
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xFF; 8]);
    h.update(&m);
    h.finalize().to_le_bytes()
}

fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Sets lengths, IPv4 checksum and ICRC of a datagram from its size.
fn seal(d: &mut [u8]) {
    let n = d.len();
    d[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    d[24..26].copy_from_slice(&((n - 20) as u16).to_be_bytes());
    d[10..12].fill(0);
    let c = ip_checksum(&d[..20]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    let icrc = oracle_icrc(&d[..n - 4]);
    d[n - 4..].copy_from_slice(&icrc);
}

/// The datagram, encoded from the layout alone.
fn encode(f: &Forge) -> Vec<u8> {
    let pad = (4 - f.payload.len() % 4) % 4;
    let mut d = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
    d.extend_from_slice(&f.src);
    d.extend_from_slice(&f.dst);
    d.extend_from_slice(&ROCEV2_PORT.to_be_bytes());
    d.extend_from_slice(&ROCEV2_PORT.to_be_bytes());
    d.extend_from_slice(&[0, 0, 0, 0]);
    d.push(f.opcode);
    d.push((pad as u8) << 4);
    d.extend_from_slice(&[0xFF, 0xFF, 0]);
    d.extend_from_slice(&f.qpn.to_be_bytes()[1..]);
    d.push(if f.ack_req { 0x80 } else { 0 });
    d.extend_from_slice(&f.psn.to_be_bytes()[1..]);
    if let Some((va, rkey, len)) = f.reth {
        d.extend_from_slice(&va.to_be_bytes());
        d.extend_from_slice(&rkey.to_be_bytes());
        d.extend_from_slice(&len.to_be_bytes());
    }
    d.extend_from_slice(&f.payload);
    d.extend(std::iter::repeat_n(0, pad + 4));
    seal(&mut d);
    d
}

/// The same datagram from softrnic's builder.
fn build_with_softrnic(f: &Forge) -> Vec<u8> {
    let mut bth = Bth::new(Opcode(f.opcode), f.qpn, f.psn);
    bth.ack_req = f.ack_req;
    let h = Headers {
        ip: Ipv4UdpFields::new(Ipv4Addr::from(f.src), Ipv4Addr::from(f.dst), ROCEV2_PORT).into(),
        bth,
        ext: ExtHeaders {
            reth: f.reth.map(|(va, rkey, dma_len)| Reth { va, rkey, dma_len }),
            ..ExtHeaders::NONE
        },
    };
    let mut out = vec![0u8; 9000];
    let n = build(&h, &[&f.payload], &mut out).expect("softrnic builds the forged packet");
    out.truncate(n);
    out
}

/// Builds a forged packet both ways and checks they agree.
fn forge(f: &Forge) -> Vec<u8> {
    let mine = encode(f);
    assert_eq!(
        mine,
        build_with_softrnic(f),
        "independent encoder and softrnic's builder disagree on {f:?}"
    );
    mine
}

// ---------------------------------------------------------------- tap

#[derive(Default)]
struct Tap {
    seen: Mutex<Vec<(Direction, Vec<u8>)>>,
}

struct TapRef(Arc<Tap>);

impl Capture for TapRef {
    fn capture(&self, direction: Direction, datagram: &[u8]) {
        self.0
            .seen
            .lock()
            .unwrap()
            .push((direction, datagram.to_vec()));
    }
}

/// A response as read by hand from V's transmitted bytes.
#[derive(Clone, Debug)]
struct Sent {
    opcode: u8,
    qpn: u32,
    psn: u32,
    /// AETH syndrome of an ACK or first/only/last READ response.
    syndrome: Option<u8>,
    payload_len: usize,
    bytes: Vec<u8>,
}

fn be24(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

fn decode_sent(d: &[u8]) -> Option<Sent> {
    let b = d.get(28..40)?;
    let opcode = b[0];
    let has_aeth = matches!(opcode, 0x0D | 0x0F | 0x10 | 0x11 | 0x12);
    let hdr = 40 + if has_aeth { 4 } else { 0 };
    let pad = usize::from((b[1] >> 4) & 3);
    Some(Sent {
        opcode,
        qpn: be24(&b[5..8]),
        psn: be24(&b[9..12]),
        syndrome: has_aeth.then(|| d[40]),
        payload_len: d.len().checked_sub(hdr + pad + 4)?,
        bytes: d.to_vec(),
    })
}

impl Tap {
    fn mark(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Waits until nothing more is captured for 100 ms (at most 10 s).
    fn wait_quiet(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = self.mark();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = self.mark();
            if now == seen || Instant::now() > deadline {
                return;
            }
            seen = now;
        }
    }

    fn since(&self, mark: usize, dir: Direction) -> Vec<Vec<u8>> {
        self.seen.lock().unwrap()[mark..]
            .iter()
            .filter(|(d, _)| *d == dir)
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// V's transmissions since `mark` to QP `qpn`.
    fn responses(&self, mark: usize, qpn: u32) -> Vec<Sent> {
        self.since(mark, Direction::Transmit)
            .iter()
            .filter_map(|d| decode_sent(d))
            .filter(|s| s.qpn == qpn)
            .collect()
    }
}

// ---------------------------------------------------------------- connections

/// One connection between V (passive) and P (active).
struct Link2 {
    v_qp: *mut NDK_QP,
    p_qp: *mut NDK_QP,
    v_cq: *mut NDK_CQ,
    p_cq: *mut NDK_CQ,
    v_conn: *mut NDK_CONNECTOR,
    p_conn: *mut NDK_CONNECTOR,
    listener: *mut NDK_LISTENER,
    /// The callback contexts of this connection.
    recs: Vec<&'static Recorder>,
    v_qpn: u32,
    p_qpn: u32,
    /// V's next expected PSN.
    epsn: u32,
}

static PORTS: AtomicU64 = AtomicU64::new(0);

fn connect_link(v: &Node, p: &Node, v_pd: *mut NDK_PD, p_pd: *mut NDK_PD, tap: &Tap) -> Link2 {
    let n = PORTS.fetch_add(1, Ordering::SeqCst) as usize;
    let notify = Recorder::new();
    let v_cq = v.create_cq(256, notify);
    let p_cq = p.create_cq(256, notify);
    let v_qp = create_qp(v_pd, v_cq, v_cq, 0x7000 + n, 16, 16, 2, 2, 0).expect("V qp");
    let p_qp = create_qp(p_pd, p_cq, p_cq, 0x8000 + n, 16, 16, 2, 2, 0).expect("P qp");
    let events = Recorder::new();
    let listener = v.create_listener(events);
    let port = 7000 + n as u16;
    let lrec = Recorder::new();
    assert_eq!(
        finish(listen(listener, &v.addr(port)), lrec, "listen"),
        STATUS_SUCCESS
    );
    let p_conn = p.create_connector();
    let connected = Recorder::new();
    assert_eq!(
        connect(p_conn, p_qp, &p.addr(0), &v.addr(port), b"p", connected),
        STATUS_PENDING
    );
    wait_calls(events, 1, "connect event");
    let v_conn = events.calls()[0].object as *mut NDK_CONNECTOR;
    let accepted = Recorder::new();
    let v_disc = Recorder::new();
    assert_eq!(accept(v_conn, v_qp, b"v", v_disc, accepted), STATUS_PENDING);
    wait_calls(connected, 1, "connect completion");
    assert_eq!(connected.statuses(), vec![STATUS_SUCCESS]);
    let p_disc = Recorder::new();
    assert_eq!(complete_connect(p_conn, p_disc), STATUS_SUCCESS);
    wait_calls(accepted, 1, "accept completion");
    // Learn the numbers: one SEND from P, seen arriving at V.
    let mut vb = vec![0u8; 64];
    let mut pb = vec![7u8; 64];
    let rv = Region::of(v_pd, &mut vb, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let rp = Region::of(p_pd, &mut pb, 0);
    let mark = tap.mark();
    assert_eq!(receive(v_qp, 1, &[rv.sge(0, 64)]), STATUS_SUCCESS);
    assert_eq!(send(p_qp, 2, &[rp.sge(0, 8)], 0), STATUS_SUCCESS);
    assert_eq!(wait_results(v_cq, 1)[0].Status, STATUS_SUCCESS);
    assert_eq!(wait_results(p_cq, 1)[0].Status, STATUS_SUCCESS);
    rv.release();
    rp.release();
    let arrived: Vec<Sent> = tap
        .since(mark, Direction::Receive)
        .iter()
        .filter_map(|d| decode_sent(d))
        .filter(|s| s.opcode == 0x04)
        .collect();
    let send_seen = arrived.last().expect("the SEND seen at V").clone();
    wait_until("V's ACK", || {
        tap.since(mark, Direction::Transmit)
            .iter()
            .filter_map(|d| decode_sent(d))
            .any(|s| s.opcode == 0x11)
    });
    let ack = tap
        .since(mark, Direction::Transmit)
        .iter()
        .filter_map(|d| decode_sent(d))
        .find(|s| s.opcode == 0x11)
        .unwrap();
    // A SEND that P retransmitted before V's ACK reached it (a slow run:
    // valgrind) draws a second ACK later: wait until the setup's last
    // packets are out, so none is taken for an answer to an attack.
    tap.wait_quiet();
    Link2 {
        v_qp,
        p_qp,
        v_cq,
        p_cq,
        v_conn,
        p_conn,
        listener,
        recs: vec![notify, events, lrec, connected, accepted, v_disc, p_disc],
        v_qpn: send_seen.qpn,
        p_qpn: ack.qpn,
        epsn: psn_add(send_seen.psn, 1),
    }
}

impl Link2 {
    fn close(self) {
        let done = Recorder::new();
        let st = disconnect(self.p_conn, done);
        if st == STATUS_PENDING {
            wait_calls(done, 1, "disconnect");
        }
        let lclose = Recorder::new();
        let lst = close(self.listener, lclose);
        close_wait(self.v_conn);
        close_wait(self.p_conn);
        finish(lst, lclose, "listener close");
        close_wait(self.v_qp);
        close_wait(self.p_qp);
        close_wait(self.v_cq);
        close_wait(self.p_cq);
        drop(self.recs);
    }

    /// A legitimate SEND and WRITE from P to V on this connection.
    fn round_trip(&self, v_pd: *mut NDK_PD, p_pd: *mut NDK_PD, seed: u8) {
        let mut vb = vec![0u8; 4096];
        let mut pb = pattern(4096, seed);
        let want = pb.clone();
        let rv = Region::of(v_pd, &mut vb, REMOTE_ALL);
        let rp = Region::of(p_pd, &mut pb, 0);
        assert_eq!(receive(self.v_qp, 3, &[rv.sge(0, 2048)]), STATUS_SUCCESS);
        assert_eq!(send(self.p_qp, 4, &[rp.sge(0, 2048)], 0), STATUS_SUCCESS);
        let r = wait_results(self.v_cq, 1);
        assert_eq!(r[0].Status, STATUS_SUCCESS, "legit receive");
        assert_eq!(wait_results(self.p_cq, 1)[0].Status, STATUS_SUCCESS);
        let w = [rp.sge(2048, 2048)];
        assert_eq!(
            write(self.p_qp, 5, &w, rv.va + 2048, rv.remote, 0),
            STATUS_SUCCESS
        );
        assert_eq!(
            wait_results(self.p_cq, 1)[0].Status,
            STATUS_SUCCESS,
            "legit write"
        );
        rv.release();
        rp.release();
        assert!(vb == want, "legitimate data byte-exact");
    }
}

/// A canary-filled target page between two guard pages, registered at V.
struct Target {
    pages: Pages,
    region: Region,
}

impl Target {
    fn new(pd: *mut NDK_PD) -> Self {
        let mut pages = Pages::new(3);
        pages.bytes().fill(CANARY);
        let va = pages.addr() + PAGE as u64;
        let region = Region::register(pd, va as *mut u8, PAGE, REMOTE_ALL);
        Self { pages, region }
    }

    fn va(&self) -> u64 {
        self.region.va
    }

    /// Guards untouched, and the target equal to `want` (CANARY if None).
    fn check(&mut self, want: Option<&[u8]>) {
        let b = self.pages.bytes();
        assert!(
            b[..PAGE].iter().all(|&x| x == CANARY),
            "guard before the window written"
        );
        assert!(
            b[2 * PAGE..].iter().all(|&x| x == CANARY),
            "guard after the window written"
        );
        match want {
            Some(w) => assert!(b[PAGE..2 * PAGE] == *w, "target differs"),
            None => assert!(
                b[PAGE..2 * PAGE].iter().all(|&x| x == CANARY),
                "target written"
            ),
        }
    }

    fn release(self) {
        self.region.release();
    }
}

// ---------------------------------------------------------------- the attack

/// Counts of hostile packets per kind, printed at the end (report figures).
#[derive(Default, Debug)]
struct Sentinel {
    counts: Vec<(&'static str, usize, String)>,
}

struct Hostile {
    hub: Arc<rsndk::hub::FabricHub>,
    rnic: Arc<softrnic::device::SoftRnic>,
    src: [u8; 4],
    dst: [u8; 4],
    sent: usize,
}

impl Hostile {
    fn send_raw(&mut self, d: &[u8]) {
        let before = self.rnic.stats().rx_packets;
        links::transmit_copy(&self.hub.link(Ipv4Addr::from(self.src)), d);
        self.sent += 1;
        wait_until("V takes the packet", || {
            self.rnic.stats().rx_packets > before
        });
    }

    fn forge(
        &self,
        opcode: u8,
        qpn: u32,
        psn: u32,
        reth: Option<(u64, u32, u32)>,
        payload: &[u8],
    ) -> Forge {
        Forge {
            src: self.src,
            dst: self.dst,
            opcode,
            qpn,
            psn,
            ack_req: true,
            reth,
            payload: payload.to_vec(),
        }
    }

    fn send(&mut self, f: &Forge) {
        let d = forge(f);
        self.send_raw(&d);
    }
}

/// Waits for a response to QP `qpn` since `mark` matching `want`.
fn wait_response(
    tap: &Tap,
    mark: usize,
    qpn: u32,
    what: &str,
    want: impl Fn(&Sent) -> bool,
) -> Sent {
    let mut found = None;
    wait_until(what, || {
        found = tap.responses(mark, qpn).into_iter().find(|s| want(s));
        found.is_some()
    });
    found.unwrap()
}

const NAK_PSN_SEQ: u8 = 0x60;
const NAK_INVALID_REQUEST: u8 = 0x61;
const NAK_REMOTE_ACCESS: u8 = 0x62;

fn is_ack(s: &Sent) -> bool {
    s.opcode == 0x11 && s.syndrome.is_some_and(|x| x & 0x60 == 0)
}

fn is_nak(s: &Sent, code: u8) -> bool {
    s.opcode == 0x11 && s.syndrome == Some(code)
}

#[test]
// One attack after another, told in order; v/p/a..e name the adapters and
// connections as the module docs do.
#[allow(clippy::too_many_lines, clippy::many_single_char_names)]
fn hostile_packets_are_dropped_or_nakked_and_touch_nothing() {
    let v = Node::open("mem:hostile1/127.0.7.1");
    let p = Node::open("mem:hostile1/127.0.7.2");
    let tap = Arc::new(Tap::default());
    let rnic = device_of(v.adapter).expect("V's device");
    let v_tap = tap_of(v.adapter).expect("V's link tap");
    v_tap.set_capture(Some(Box::new(TapRef(tap.clone()))));
    let hub = fabric_of(v.adapter).expect("V's fabric");
    let v_pd = v.create_pd();
    let p_pd = p.create_pd();
    let legit = connect_link(&v, &p, v_pd, p_pd, &tap);
    let mut report = Sentinel::default();
    let mut h = Hostile {
        hub,
        rnic: rnic.clone(),
        src: p.ip4(),
        dst: v.ip4(),
        sent: 0,
    };
    let stats = || rnic.stats();

    // ---- connection 1: non-fatal attacks.
    let a = connect_link(&v, &p, v_pd, p_pd, &tap);
    let mut t = Target::new(v_pd);
    let key = t.region.remote;
    let mut want = vec![CANARY; PAGE];
    let mut psn = a.epsn;

    // Wrong QPN: no such QP, silently dropped.
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    for delta in [1u32, 17, 0x1000] {
        let f = h.forge(
            0x0A,
            a.v_qpn + delta,
            psn,
            Some((t.va(), key, 8)),
            b"wrongqpn",
        );
        h.send(&f);
    }
    // Counted as the device takes them (a slow run takes longer), then a
    // grace period for an answer that must not come.
    wait_until("wrong QPN dropped", || {
        stats().rx_dropped >= before.rx_dropped + 3
    });
    std::thread::sleep(Duration::from_millis(30));
    assert!(
        tap.responses(mark, a.p_qpn).is_empty(),
        "no answer to a wrong QPN"
    );
    t.check(None);
    report
        .counts
        .push(("wrong QPN", h.sent - n0, "dropped, no answer".into()));

    // Bad ICRC on an otherwise valid WRITE: dropped, PSN not consumed.
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let f = h.forge(0x0A, a.v_qpn, psn, Some((t.va(), key, 8)), b"badicrc!");
    let mut d = forge(&f);
    let last = d.len() - 1;
    d[last] ^= 0x01;
    h.send_raw(&d);
    let mut d2 = forge(&f);
    d2[50] ^= 0x80; // payload flipped, ICRC left as it was
    h.send_raw(&d2);
    wait_until("bad ICRC counted", || {
        stats().rx_bad_icrc >= before.rx_bad_icrc + 2
    });
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        stats().rx_bad_icrc,
        before.rx_bad_icrc + 2,
        "bad ICRC counted"
    );
    assert!(
        tap.responses(mark, a.p_qpn).is_empty(),
        "no answer to a bad ICRC"
    );
    t.check(None);
    report.counts.push((
        "bad ICRC",
        h.sent - n0,
        "dropped (rx_bad_icrc), no answer, not executed".into(),
    ));

    // Truncated headers: cut inside the BTH and inside the RETH, sealed
    // (lengths and ICRC valid) and unsealed.
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let full = forge(&f);
    for cut in [28 + 6, 28 + 12, 28 + 12 + 8, 28 + 12 + 15] {
        let mut d = full[..cut].to_vec();
        h.send_raw(&d);
        d.extend_from_slice(&[0; 4]);
        seal(&mut d);
        h.send_raw(&d);
    }
    // Shorter than an IPv4 header: the fabric itself drops it.
    let short_before = h.hub.fabric().stats().malformed;
    links::transmit_copy(&h.hub.link(Ipv4Addr::from(h.src)), &full[..10]);
    h.sent += 1;
    assert_eq!(h.hub.fabric().stats().malformed, short_before + 1);
    let dropped = || {
        (stats().rx_malformed - before.rx_malformed) + (stats().rx_bad_icrc - before.rx_bad_icrc)
    };
    wait_until("truncated packets dropped", || dropped() >= 8);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(dropped(), 8, "every truncated packet dropped by the parser");
    assert!(
        tap.responses(mark, a.p_qpn).is_empty(),
        "no answer to a truncated packet"
    );
    t.check(None);
    report.counts.push((
        "truncated headers",
        h.sent - n0,
        "dropped (rx_malformed/rx_bad_icrc), no answer".into(),
    ));

    // The same WRITE, intact: executed once and ACKed (the PSN was not
    // consumed by the bad copies).
    let mark = tap.mark();
    h.send(&f);
    let ack = wait_response(&tap, mark, a.p_qpn, "ACK of the valid WRITE", is_ack);
    assert_eq!(ack.psn, psn, "ACK carries the WRITE's PSN");
    want[..8].copy_from_slice(b"badicrc!");
    t.check(Some(&want));
    psn = psn_add(psn, 1);

    // PSN behind: the WRITE again with other bytes is a duplicate: ACKed,
    // not executed again.
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let dup = h.forge(
        0x0A,
        a.v_qpn,
        psn_add(psn, 0xFF_FFFF),
        Some((t.va(), key, 8)),
        b"DUPLICAT",
    );
    h.send(&dup);
    let ack = wait_response(&tap, mark, a.p_qpn, "ACK of a duplicate", is_ack);
    assert!(
        stats().duplicates > before.duplicates,
        "counted as duplicate"
    );
    t.check(Some(&want));
    report.counts.push((
        "PSN behind (duplicate WRITE)",
        h.sent - n0,
        format!("ACK psn {:#x}, not re-executed", ack.psn),
    ));

    // PSN ahead: PSN sequence error NAK carrying the expected PSN, nothing
    // executed; later ahead packets of the same gap get no second NAK
    // (one NAK per sequence error).
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    for ahead in [5u32, 6, 7, 100] {
        let fa = h.forge(
            0x0A,
            a.v_qpn,
            psn_add(psn, ahead),
            Some((t.va() + 100, key, 8)),
            b"AHEAD!!!",
        );
        h.send(&fa);
    }
    let nak = wait_response(&tap, mark, a.p_qpn, "PSN sequence NAK", |s| {
        is_nak(s, NAK_PSN_SEQ)
    });
    assert_eq!(nak.psn, psn, "the NAK names the expected PSN");
    std::thread::sleep(Duration::from_millis(30));
    let naks = tap
        .responses(mark, a.p_qpn)
        .iter()
        .filter(|s| is_nak(s, NAK_PSN_SEQ))
        .count();
    assert_eq!(naks, 1, "one NAK per sequence error");
    assert!(stats().out_of_sequence >= before.out_of_sequence + 4);
    t.check(Some(&want));
    report.counts.push((
        "PSN ahead",
        h.sent - n0,
        "one NAK-PSN-sequence-error with ePSN, rest dropped".into(),
    ));

    // In sequence again: accepted.
    let mark = tap.mark();
    let fine = h.forge(0x0A, a.v_qpn, psn, Some((t.va() + 200, key, 4)), b"okay");
    h.send(&fine);
    wait_response(&tap, mark, a.p_qpn, "ACK after the gap", is_ack);
    want[200..204].copy_from_slice(b"okay");
    t.check(Some(&want));
    psn = psn_add(psn, 1);

    // A flood of duplicate READ requests: answered from the target only
    // (replays) or dropped; never anything beyond it; V keeps serving the
    // legitimate connection during the flood.
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let rd = h.forge(0x0C, a.v_qpn, psn, Some((t.va(), key, 256)), b"");
    h.send(&rd);
    let first = wait_response(&tap, mark, a.p_qpn, "READ response", |s| s.opcode == 0x10);
    assert_eq!(first.payload_len, 256);
    assert!(
        first.bytes[44..44 + 256] == want[..256],
        "READ response is the target's bytes"
    );
    psn = psn_add(psn, 1);
    for round in 0..5u8 {
        for _ in 0..100 {
            h.send(&rd);
        }
        legit.round_trip(v_pd, p_pd, round);
    }
    std::thread::sleep(Duration::from_millis(50));
    let responses = tap.responses(mark, a.p_qpn);
    for s in &responses {
        if s.opcode == 0x10 {
            assert_eq!(s.payload_len, 256);
            assert!(
                s.bytes[44..44 + 256] == want[..256],
                "replayed bytes are the target's"
            );
            assert_eq!(s.psn, rd.psn, "replay carries the request's PSN");
        }
    }
    let replays = stats().read_replays - before.read_replays;
    t.check(Some(&want));
    report.counts.push((
        "duplicate READ flood",
        h.sent - n0,
        format!(
            "{} replays, {} responses, legit connection served between rounds",
            replays,
            responses.len()
        ),
    ));
    // The attacked connection still works for the hostile peer itself.
    let mark = tap.mark();
    let end = h.forge(0x0A, a.v_qpn, psn, Some((t.va() + 300, key, 4)), b"last");
    h.send(&end);
    wait_response(&tap, mark, a.p_qpn, "ACK after the flood", is_ack);
    want[300..304].copy_from_slice(b"last");
    t.check(Some(&want));
    t.release();
    a.close();

    // ---- fatal attacks: each on its own connection.
    // Forged token.
    let b = connect_link(&v, &p, v_pd, p_pd, &tap);
    let mut t = Target::new(v_pd);
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    for forged in [
        t.region.remote ^ 0x0000_0100,
        t.region.remote.wrapping_add(1 << 8),
        0,
    ] {
        let f = h.forge(
            0x0A,
            b.v_qpn,
            b.epsn,
            Some((t.va(), forged, 8)),
            b"FORGED!!",
        );
        h.send(&f);
    }
    let nak = wait_response(&tap, mark, b.p_qpn, "remote access NAK", |s| {
        is_nak(s, NAK_REMOTE_ACCESS)
    });
    assert_eq!(nak.psn, b.epsn);
    assert!(stats().remote_access_refused > before.remote_access_refused);
    std::thread::sleep(Duration::from_millis(30));
    t.check(None);
    report.counts.push((
        "forged token",
        h.sent - n0,
        "NAK remote access error, nothing written".into(),
    ));
    t.release();
    b.close();

    // Stale token: a window works, is invalidated by V, then refused.
    let c = connect_link(&v, &p, v_pd, p_pd, &tap);
    let mut t = Target::new(v_pd);
    let mw = create_mw(v_pd);
    assert_eq!(
        bind(
            c.v_qp,
            0xB1,
            t.region.mr,
            mw,
            t.va() + 1024,
            1024,
            REMOTE_ALL_OP
        ),
        STATUS_SUCCESS
    );
    assert_eq!(wait_results(c.v_cq, 1)[0].Status, STATUS_SUCCESS);
    let wtoken = mw_token(mw);
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let ok = h.forge(
        0x0A,
        c.v_qpn,
        c.epsn,
        Some((t.va() + 1024, wtoken, 4)),
        b"wind",
    );
    h.send(&ok);
    wait_response(&tap, mark, c.p_qpn, "ACK through the window", is_ack);
    let mut want = vec![CANARY; PAGE];
    want[1024..1028].copy_from_slice(b"wind");
    t.check(Some(&want));
    assert_eq!(invalidate(c.v_qp, 0xB2, mw, 0), STATUS_SUCCESS);
    assert_eq!(wait_results(c.v_cq, 1)[0].Status, STATUS_SUCCESS);
    let mark = tap.mark();
    let stale = h.forge(
        0x0A,
        c.v_qpn,
        psn_add(c.epsn, 1),
        Some((t.va() + 1024, wtoken, 4)),
        b"STAL",
    );
    h.send(&stale);
    let nak = wait_response(&tap, mark, c.p_qpn, "NAK of a stale token", |s| {
        is_nak(s, NAK_REMOTE_ACCESS)
    });
    assert_eq!(nak.psn, psn_add(c.epsn, 1));
    assert!(stats().remote_access_refused > before.remote_access_refused);
    t.check(Some(&want));
    report.counts.push((
        "stale (invalidated) token",
        h.sent - n0,
        "valid use ACKed, stale use NAK remote access".into(),
    ));
    close_wait(mw);
    t.release();
    c.close();

    // WRITE past the end of the window.
    let d = connect_link(&v, &p, v_pd, p_pd, &tap);
    let mut t = Target::new(v_pd);
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let past = h.forge(
        0x0A,
        d.v_qpn,
        d.epsn,
        Some((t.va() + PAGE as u64 - 8, t.region.remote, 64)),
        &[0xEE; 64],
    );
    h.send(&past);
    let nak = wait_response(&tap, mark, d.p_qpn, "NAK of a WRITE past the end", |s| {
        is_nak(s, NAK_REMOTE_ACCESS) || is_nak(s, NAK_INVALID_REQUEST)
    });
    assert_eq!(nak.psn, d.epsn);
    assert!(stats().remote_access_refused > before.remote_access_refused);
    std::thread::sleep(Duration::from_millis(30));
    t.check(None);
    report.counts.push((
        "WRITE past window end",
        h.sent - n0,
        format!("NAK {:#x}, nothing written", nak.syndrome.unwrap()),
    ));
    t.release();
    d.close();

    // READ past the end of the window, and a READ with a wrapping address.
    let e = connect_link(&v, &p, v_pd, p_pd, &tap);
    let mut t = Target::new(v_pd);
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let past = h.forge(
        0x0C,
        e.v_qpn,
        e.epsn,
        Some((t.va() + PAGE as u64 - 8, t.region.remote, 4096)),
        b"",
    );
    h.send(&past);
    let nak = wait_response(&tap, mark, e.p_qpn, "NAK of a READ past the end", |s| {
        is_nak(s, NAK_REMOTE_ACCESS) || is_nak(s, NAK_INVALID_REQUEST)
    });
    std::thread::sleep(Duration::from_millis(30));
    let responses = tap.responses(mark, e.p_qpn);
    assert!(
        responses.iter().all(|s| !matches!(s.opcode, 0x0D..=0x10)),
        "no READ response data for an out-of-window READ: {responses:?}"
    );
    assert!(stats().remote_access_refused > before.remote_access_refused);
    t.check(None);
    report.counts.push((
        "READ past window end",
        h.sent - n0,
        format!("NAK {:#x}, no data sent", nak.syndrome.unwrap()),
    ));
    t.release();
    e.close();

    // WRITE and READ whose address range wraps around 2^64, each the first
    // request of its connection (a NAK puts the responder in error).
    for (opcode, what) in [(0x0Au8, "WRITE"), (0x0C, "READ")] {
        let f = connect_link(&v, &p, v_pd, p_pd, &tap);
        let mut t = Target::new(v_pd);
        let (mark, before, n0) = (tap.mark(), stats(), h.sent);
        let body: &[u8] = if opcode == 0x0A { &[0xEE; 64] } else { b"" };
        let wrap = h.forge(
            opcode,
            f.v_qpn,
            f.epsn,
            Some((u64::MAX - 16, t.region.remote, 64)),
            body,
        );
        h.send(&wrap);
        let nak = wait_response(&tap, mark, f.p_qpn, "NAK of a wrapping range", |s| {
            is_nak(s, NAK_REMOTE_ACCESS) || is_nak(s, NAK_INVALID_REQUEST)
        });
        assert_eq!(nak.psn, f.epsn);
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            tap.responses(mark, f.p_qpn)
                .iter()
                .all(|s| !matches!(s.opcode, 0x0D..=0x10)),
            "no READ response data for a wrapping range"
        );
        assert!(stats().remote_access_refused > before.remote_access_refused);
        t.check(None);
        report.counts.push((
            if opcode == 0x0A {
                "WRITE with wrapping VA"
            } else {
                "READ with wrapping VA"
            },
            h.sent - n0,
            format!("{what}: NAK {:#x}, nothing touched", nak.syndrome.unwrap()),
        ));
        t.release();
        f.close();
    }

    // A SEND longer than the posted receive, whose buffer ends where the
    // guard page begins: NAK invalid request, the receive completes in
    // error, nothing beyond its buffer is written.
    let g = connect_link(&v, &p, v_pd, p_pd, &tap);
    let mut t = Target::new(v_pd);
    let (mark, before, n0) = (tap.mark(), stats(), h.sent);
    let rsge = sge(t.va() + PAGE as u64 - 100, 100, t.region.local);
    assert_eq!(receive(g.v_qp, 0xE1, &[rsge]), STATUS_SUCCESS);
    let long = h.forge(0x04, g.v_qpn, g.epsn, None, &[0xEE; 200]);
    h.send(&long);
    let nak = wait_response(&tap, mark, g.p_qpn, "NAK of a SEND too long", |s| {
        is_nak(s, NAK_INVALID_REQUEST) || is_nak(s, NAK_REMOTE_ACCESS)
    });
    assert_eq!(nak.psn, g.epsn);
    let r = wait_results(g.v_cq, 1);
    assert_eq!(r[0].RequestContext as usize, 0xE1);
    assert_ne!(r[0].Status, STATUS_SUCCESS, "the receive fails");
    assert!(stats().fatal_naks_sent > before.fatal_naks_sent);
    {
        let b = t.pages.bytes();
        assert!(
            b[..2 * PAGE - 100].iter().all(|&x| x == CANARY),
            "written before the receive buffer"
        );
        assert!(
            b[2 * PAGE..].iter().all(|&x| x == CANARY),
            "written past the receive buffer"
        );
    }
    report.counts.push((
        "SEND longer than the receive",
        h.sent - n0,
        format!(
            "NAK {:#x}, receive completed {:#x}, nothing past its buffer",
            nak.syndrome.unwrap(),
            r[0].Status
        ),
    ));
    t.release();
    g.close();

    // The legitimate connection kept working throughout.
    legit.round_trip(v_pd, p_pd, 99);
    let total: usize = report.counts.iter().map(|c| c.1).sum();
    for (kind, n, outcome) in &report.counts {
        eprintln!("hostile: {kind:<36} {n:>4} packets: {outcome}");
    }
    eprintln!("hostile: total {total} packets; V stats {:?}", rnic.stats());
    v_tap.set_capture(None);
    legit.close();
    close_wait(v_pd);
    close_wait(p_pd);
    p.close();
    v.close();
}

/// Over UDP on loopback the hostile peer has its own address
/// (127.0.7.13): whatever it sends, V answers nothing and keeps serving
/// its real peer.
#[test]
#[allow(clippy::many_single_char_names)] // v and p as in the module docs
fn udp_hostile_peer_from_its_own_address_gets_no_answer() {
    let v = Node::open("udp:127.0.7.11");
    let p = Node::open("udp:127.0.7.12");
    let tap = Arc::new(Tap::default());
    let rnic = device_of(v.adapter).expect("V's device");
    let v_tap = tap_of(v.adapter).expect("V's link tap");
    v_tap.set_capture(Some(Box::new(TapRef(tap.clone()))));
    let v_pd = v.create_pd();
    let p_pd = p.create_pd();
    let legit = connect_link(&v, &p, v_pd, p_pd, &tap);
    // The hostile peer sends whole datagrams from a raw socket (an IPv4
    // port of the host's transport): the ICRC covers the IPv4
    // identification, so a valid one must be computed for the header that
    // goes on the wire, which a UDP socket's kernel would choose.
    let hostile = rsndk::udp::UdpPort::bind(Ipv4Addr::new(127, 0, 7, 13))
        .expect("hostile port (raw sockets: CAP_NET_RAW)");
    let before = rnic.stats();
    let me = [127, 0, 7, 13];
    let mut sent = 0u64;
    let mut send_ip = |bytes: &[u8]| {
        hostile.queue_datagram(bytes);
        hostile.flush();
        sent += 1;
    };
    for round in 0..20u32 {
        // A well-formed WRITE to the real QP with a valid ICRC (computed
        // for the hostile source and its own identification): dropped,
        // the QP's peer is elsewhere.
        let f = Forge {
            src: me,
            dst: v.ip4(),
            opcode: 0x0A,
            qpn: legit.v_qpn,
            psn: psn_add(legit.epsn, round),
            ack_req: true,
            reth: Some((0x1000, 0x1234, 4)),
            payload: b"evil".to_vec(),
        };
        let mut d = forge(&f);
        d[4..6].copy_from_slice(&(0x4000 + round as u16).to_be_bytes());
        seal(&mut d);
        send_ip(&d);
        // The same with a bad ICRC, truncated, and random bytes.
        let mut bad = d.clone();
        let n = bad.len();
        bad[n - 1] ^= 0xFF;
        send_ip(&bad);
        send_ip(&d[..28 + 10]);
        let mut junk = d[..28].to_vec();
        junk.extend_from_slice(&pattern(1 + round as usize * 13, round as u8));
        let udp_len = (junk.len() - 20) as u16;
        junk[24..26].copy_from_slice(&udp_len.to_be_bytes());
        send_ip(&junk);
    }
    let total = sent;
    wait_until("V takes every hostile datagram", || {
        rnic.stats().rx_packets >= before.rx_packets + total
    });
    legit.round_trip(v_pd, p_pd, 1);
    std::thread::sleep(Duration::from_millis(100));
    let mut answers = 0;
    hostile
        .try_receive(&mut rsndk::udp::RxBuffers::default(), |_| answers += 1)
        .unwrap();
    assert_eq!(answers, 0, "V answered the hostile address");
    let s = rnic.stats();
    assert!(
        s.rx_dropped >= before.rx_dropped + 20,
        "foreign-source requests dropped"
    );
    assert!(s.rx_bad_icrc >= before.rx_bad_icrc + 20, "bad ICRC dropped");
    assert!(s.rx_malformed + s.rx_bad_icrc >= before.rx_malformed + before.rx_bad_icrc + 40);
    assert!(
        tap.since(0, Direction::Transmit)
            .iter()
            .all(|d| d[16..20] != me),
        "nothing sent to the hostile address"
    );
    eprintln!("hostile udp: {total} datagrams, V stats {s:?}");
    v_tap.set_capture(None);
    legit.close();
    close_wait(v_pd);
    close_wait(p_pd);
    p.close();
    v.close();
}

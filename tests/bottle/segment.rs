//! Two bottled drivers' virtual miniports (V, each over an emulated NIC)
//! on one emulated Ethernet segment, with the bottle's TCP/IP above each
//! V: the driver learns V's addresses from the stack, resolves its peer
//! with its own ARP / IPv6 ND, carries RoCEv2 as Ethernet frames, steers
//! received UDP 4791 frames for V's addresses into the RNIC and passes
//! everything else through (issue #13 item 5).
//!
//! Each test takes a segment of its own (`add_segment`), so the tests of
//! this binary running in parallel never see each other's frames; the
//! addresses come from the process's block (`fresh_address`,
//! `fresh_address_v6`), unique across the binary and its children. Tests
//! that check what the driver leaves behind after unload run in a child
//! process on a machine of their own.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::ndis::types::{
    NDIS_STATUS_LINK_STATE, NetEventNDKDisable, NetEventNDKEnable, OID_GEN_MEDIA_CONNECT_STATUS,
};
use kbottle::segment::{PortId, Segment, SegmentId, Station};
use kbottle::tcpip::{DadState, arp, checksum, ethernet, ipv4, ipv6, udp};
use ndkpi::{STATUS_INVALID_ADDRESS, STATUS_IO_TIMEOUT};

use crate::common::{child_passes, image, is_child, machine};
use crate::conn::{self, Connection, Nic, fresh_port, try_connect, wait_for};
use testkit::adapter::tshark;

/// How long an address change may take to reach the driver (IP Helper
/// notification, then the RNIC's address set) or DAD to finish.
const ADDRESS_WAIT: Duration = Duration::from_secs(5);
/// How long a ping may wait for its answer.
const PING: Duration = Duration::from_secs(5);
/// The UDP port of RoCEv2.
const ROCEV2_PORT: u16 = 4791;
/// A UDP port nothing on V holds (discard).
const UNCLAIMED_PORT: u16 = 9;
/// Message sizes moved by SEND, RDMA WRITE and RDMA READ: one byte, one
/// path MTU exactly (the 1500-byte segment gives a 1024-byte RoCE PMTU),
/// one byte over it, several packets not a multiple of it, and 1 MiB.
const SIZES: [usize; 5] = [1, 1024, 1025, 4096 + 1000, 1 << 20];
/// `NdisMediaStateConnected` / `NdisMediaStateDisconnected`, the answers
/// to `OID_GEN_MEDIA_CONNECT_STATUS` (ntddndis.h `NDIS_MEDIA_STATE`).
const MEDIA_STATE_CONNECTED: u32 = 0;
const MEDIA_STATE_DISCONNECTED: u32 = 1;

// ---------------------------------------------------------------- the pair

/// One bottled V on the test's segment and the addresses its interface
/// holds.
#[derive(Clone, Copy, Debug)]
struct Side {
    id: AdapterId,
    mac: [u8; 6],
    v4: IpAddr,
    v6: IpAddr,
}

impl Side {
    /// Its address of `ip`'s family.
    fn addr_like(&self, ip: IpAddr) -> IpAddr {
        if ip.is_ipv4() { self.v4 } else { self.v6 }
    }
}

/// Two bottled Vs on a segment of their own.
struct Pair<'m> {
    m: &'m Machine,
    seg: SegmentId,
    a: Side,
    b: Side,
}

/// IPv4 prefix of the addresses: every `fresh_address` is in
/// 198.18.0.0/16.
const PREFIX_V4: u8 = 16;
/// IPv6 prefix: every `fresh_address_v6` is in fd00:5253::/48.
const PREFIX_V6: u8 = 48;

/// The keywords of V, as its INF stores them (no address keyword: V's
/// addresses are the stack's).
fn keywords() -> Vec<(&'static str, Keyword)> {
    vec![("*NetworkDirect", Keyword::Int(1))]
}

impl<'m> Pair<'m> {
    /// A new segment (captured to `capture` from its first frame, if
    /// given) with two NDK-ready Vs on it, each given a fresh IPv4 and
    /// IPv6 address by its stack, both preferred.
    fn new(m: &'m Machine, capture: Option<&Path>) -> Self {
        let seg = m.add_segment();
        if let Some(path) = capture {
            m.start_capture(seg, path)
                .expect("start the segment capture");
        }
        let side = || {
            let id = m
                .add_adapter_on(seg, &keywords())
                .unwrap_or_else(|s| panic!("V on the segment: {:#010x}", s as u32));
            assert!(ndk_enabled(m, id), "V came up with NDK disabled");
            let mac = m.adapter_mac(id).expect("V's MAC");
            assert_eq!(m.nic_mac(id), Some(mac), "V takes its NIC's MAC");
            let v4 = IpAddr::V4(kbottle::shared::fresh_address());
            let v6 = IpAddr::V6(kbottle::shared::fresh_address_v6());
            m.add_address(id, v4, PREFIX_V4)
                .expect("add the IPv4 address");
            m.add_address(id, v6, PREFIX_V6)
                .expect("add the IPv6 address");
            Side { id, mac, v4, v6 }
        };
        let (a, b) = (side(), side());
        for s in [a, b] {
            for ip in [s.v4, s.v6] {
                assert!(
                    m.wait_address_preferred(s.id, ip, ADDRESS_WAIT),
                    "{ip} never became preferred on {:?}",
                    s.id
                );
            }
        }
        Self { m, seg, a, b }
    }

    /// Opens NDK on both and waits until each RNIC holds both of its V's
    /// addresses.
    fn open(&self) -> (Nic<'m>, Nic<'m>) {
        let x = Nic::open(self.m, self.a.id);
        let y = Nic::open(self.m, self.b.id);
        for (nic, s) in [(&x, self.a), (&y, self.b)] {
            for ip in [s.v4, s.v6] {
                assert!(
                    nic.wait_address(ip, ADDRESS_WAIT),
                    "the driver never took V's address {ip}"
                );
            }
        }
        (x, y)
    }

    /// Halts both Vs (the NICs unbind and leave the segment).
    fn halt(self) {
        self.m.stop_capture(self.seg).expect("stop the capture");
        self.m.halt(self.a.id);
        self.m.halt(self.b.id);
        let stats = self.m.segment_stats(self.seg).expect("segment stats");
        assert_eq!(
            (stats.oversize, stats.runts),
            (0, 0),
            "frames the segment refused: {stats:?}"
        );
    }

    /// Pings both ways in both families; all must answer.
    fn ping_all(&self) {
        for (from, to) in [(self.a, self.b), (self.b, self.a)] {
            for dst in [to.v4, to.v6] {
                assert!(
                    self.m.ping(from.id, dst, PING),
                    "ping {dst} from {:?} unanswered",
                    from.id
                );
            }
        }
    }
}

/// Whether NDK is enabled on V: the latest NDK PnP event V raised, or
/// (none raised) what its NDK attributes said at initialisation.
fn ndk_enabled(m: &Machine, id: AdapterId) -> bool {
    let last = m
        .pnp_events(id)
        .into_iter()
        .rev()
        .find(|e| *e == NetEventNDKEnable || *e == NetEventNDKDisable);
    match last {
        Some(e) => e == NetEventNDKEnable,
        None => m.ndk_attributes(id).is_some_and(|n| n.enabled),
    }
}

/// No bugcheck so far in this process.
fn no_bugchecks() {
    let b = kbottle::verifier::bugchecks();
    assert!(b.is_empty(), "bugchecks: {b:?}");
}

/// Runs `body` on a machine of its own in a child process (test `path` of
/// this binary), then halts what is left, unloads the driver and checks
/// the report: no bugcheck, nothing leaked (pool, NBL pools, bindings,
/// IP Helper tables and notifications, ...).
fn on_private_machine(path: &str, body: impl FnOnce(&Machine)) {
    if !is_child() {
        child_passes(path);
        return;
    }
    let m = Machine::boot(&image()).unwrap_or_else(|e| panic!("boot {}: {e}", image().display()));
    body(&m);
    let report = m.unload();
    assert!(report.is_clean(), "the driver left: {report}");
}

/// A pcap file for `name` in the test binary's scratch directory.
fn capture_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("segment_{name}_{}.pcap", std::process::id()))
}

// ---------------------------------------------------------------- captures

/// The frames of a pcap file (LINKTYPE_ETHERNET, either byte order,
/// micro- or nanosecond stamps), in order.
fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(bytes.len() >= 24, "no pcap header in {}", path.display());
    let word = |at: usize, big: bool| {
        let b: [u8; 4] = bytes[at..at + 4].try_into().unwrap();
        if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let magics = [0xA1B2_C3D4, 0xA1B2_3C4D];
    let big = if magics.contains(&word(0, false)) {
        false
    } else {
        assert!(
            magics.contains(&word(0, true)),
            "not a pcap file: magic {:#x}",
            word(0, true)
        );
        true
    };
    assert_eq!(word(20, big), 1, "LINKTYPE_ETHERNET");
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let len = word(at + 8, big) as usize;
        at += 16;
        let frame = bytes.get(at..at + len).expect("a truncated pcap record");
        frames.push(frame.to_vec());
        at += len;
    }
    frames
}

/// What one captured frame is, as far as these tests care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// ARP: operation, sender MAC and address, target address.
    Arp {
        op: u16,
        sha: [u8; 6],
        spa: Ipv4Addr,
        tpa: Ipv4Addr,
    },
    /// IPv6 ND from `src_mac`: NS or NA, its IPv6 source and target.
    Nd {
        kind: u8,
        src_mac: [u8; 6],
        src: Ipv6Addr,
        target: Ipv6Addr,
    },
    /// UDP to port 4791 (RoCEv2) between two MACs, IPv6 or IPv4.
    Rocev2 {
        v6: bool,
        src_mac: [u8; 6],
        dst_mac: [u8; 6],
    },
    Other,
}

fn classify(frame: &[u8]) -> Seen {
    let Some(f) = ethernet::parse(frame) else {
        return Seen::Other;
    };
    match f.ethertype {
        ethernet::ETHERTYPE_ARP => arp::parse(f.payload).map_or(Seen::Other, |p| Seen::Arp {
            op: p.op,
            sha: p.sha,
            spa: p.spa,
            tpa: p.tpa,
        }),
        ethernet::ETHERTYPE_IPV4 => match ipv4::parse(f.payload) {
            Ok(d)
                if d.protocol == ipv4::PROTO_UDP
                    && udp_dst_port(d.payload) == Some(ROCEV2_PORT) =>
            {
                Seen::Rocev2 {
                    v6: false,
                    src_mac: f.src,
                    dst_mac: f.dst,
                }
            }
            _ => Seen::Other,
        },
        ethernet::ETHERTYPE_IPV6 => {
            let Some(d) = ipv6::parse(f.payload) else {
                return Seen::Other;
            };
            match d.next_header {
                ipv6::NEXT_UDP if udp_dst_port(d.payload) == Some(ROCEV2_PORT) => Seen::Rocev2 {
                    v6: true,
                    src_mac: f.src,
                    dst_mac: f.dst,
                },
                ipv6::NEXT_ICMPV6 => {
                    let Some((kind, code, rest, body)) = ipv6::parse_icmp(&d) else {
                        return Seen::Other;
                    };
                    if kind != ipv6::ND_NEIGHBOR_SOLICIT && kind != ipv6::ND_NEIGHBOR_ADVERT {
                        return Seen::Other;
                    }
                    ipv6::parse_nd(&d, kind, code, rest, body).map_or(Seen::Other, |nd| Seen::Nd {
                        kind,
                        src_mac: f.src,
                        src: d.src,
                        target: nd.target,
                    })
                }
                _ => Seen::Other,
            }
        }
        _ => Seen::Other,
    }
}

fn udp_dst_port(payload: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes(payload.get(2..4)?.try_into().ok()?))
}

// ---------------------------------------------------------------- a probe

static PROBE_MAC: AtomicU8 = AtomicU8::new(1);

/// Frames a [`Probe`] was given.
#[derive(Default)]
struct Inbox(Mutex<Vec<Arc<[u8]>>>);

impl Station for Inbox {
    fn deliver(&self, frame: Arc<[u8]>) {
        self.0.lock().unwrap().push(frame);
    }
}

/// A plain host on the segment, made of hand-built frames: what sends V
/// UDP datagrams the stack must answer (the bottle's stack has no UDP
/// sockets to send from).
struct Probe {
    segment: Arc<Segment>,
    port: PortId,
    mac: [u8; 6],
    inbox: Arc<Inbox>,
}

impl Probe {
    fn attach(seg: SegmentId) -> Self {
        let segment = kbottle::segment::get(seg).expect("the segment");
        let mac = [
            0x02,
            0x50,
            0x52,
            0x4F,
            0x42,
            PROBE_MAC.fetch_add(1, Ordering::SeqCst),
        ];
        let inbox = Arc::new(Inbox::default());
        let port = segment.attach(mac, inbox.clone());
        Self {
            segment,
            port,
            mac,
            inbox,
        }
    }

    fn send(&self, dst: [u8; 6], ethertype: u16, payload: &[u8]) {
        let mut frame = ethernet::build(dst, self.mac, ethertype, payload);
        // Padded to Ethernet's minimum frame (without FCS), as a NIC does.
        frame.resize(frame.len().max(60), 0);
        assert!(
            self.segment.transmit(self.port, &frame) >= 1,
            "the probe's frame went nowhere"
        );
    }

    /// The first frame received from now on (earlier ones dropped) that
    /// `want` maps to something, within `timeout`.
    fn expect<T>(&self, timeout: Duration, mut want: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
        let mut found = None;
        wait_for(timeout, || {
            let frames: Vec<Arc<[u8]>> = std::mem::take(&mut *self.inbox.0.lock().unwrap());
            found = frames.iter().find_map(|f| want(f));
            found.is_some()
        });
        found
    }

    fn clear(&self) {
        self.inbox.0.lock().unwrap().clear();
    }

    /// Resolves `target` (an address of V) the way any host does, with
    /// V's stack answering: ARP, or a Neighbor Solicitation to its
    /// solicited-node group. The MAC that answered.
    fn resolve(&self, me: IpAddr, target: IpAddr) -> Option<[u8; 6]> {
        self.clear();
        match (me, target) {
            (IpAddr::V4(me), IpAddr::V4(target)) => {
                let request = arp::Packet {
                    op: arp::REQUEST,
                    sha: self.mac,
                    spa: me,
                    tha: [0; 6],
                    tpa: target,
                };
                self.send(
                    ethernet::BROADCAST,
                    ethernet::ETHERTYPE_ARP,
                    &request.to_bytes(),
                );
                self.expect(PING, |f| {
                    let e = ethernet::parse(f)?;
                    let p =
                        arp::parse(e.payload).filter(|_| e.ethertype == ethernet::ETHERTYPE_ARP)?;
                    (p.op == arp::REPLY && p.spa == target && p.tpa == me && p.tha == self.mac)
                        .then_some(p.sha)
                })
            }
            (IpAddr::V6(me), IpAddr::V6(target)) => {
                let group = ipv6::solicited_node(target);
                let ns = ipv6::neighbor_solicit(me, group, target, self.mac);
                let datagram = ipv6::build(me, group, ipv6::NEXT_ICMPV6, ipv6::ND_HOP_LIMIT, &ns);
                self.send(
                    ethernet::ipv6_multicast_mac(group),
                    ethernet::ETHERTYPE_IPV6,
                    &datagram,
                );
                self.expect(PING, |f| {
                    let e =
                        ethernet::parse(f).filter(|e| e.ethertype == ethernet::ETHERTYPE_IPV6)?;
                    let d = ipv6::parse(e.payload)?;
                    let (kind, code, rest, body) = ipv6::parse_icmp(&d)?;
                    let nd = ipv6::parse_nd(&d, kind, code, rest, body)?;
                    (kind == ipv6::ND_NEIGHBOR_ADVERT && nd.target == target)
                        .then_some(nd.link_layer.unwrap_or(e.src))
                })
            }
            _ => panic!("mixed families"),
        }
    }

    /// Sends a UDP datagram from `me` to `target`:`port` at `mac`.
    fn send_udp(&self, mac: [u8; 6], me: IpAddr, target: IpAddr, port: u16, payload: &[u8]) {
        self.clear();
        match (me, target) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let datagram = udp::build(40_000, port, payload, |len| {
                    checksum::pseudo_v4(s, d, ipv4::PROTO_UDP, len)
                });
                let packet = ipv4::build(s, d, ipv4::PROTO_UDP, 0x5E6, &datagram);
                self.send(mac, ethernet::ETHERTYPE_IPV4, &packet);
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let datagram = udp::build(40_000, port, payload, |len| {
                    checksum::pseudo_v6(s, d, ipv6::NEXT_UDP, len)
                });
                let packet = ipv6::build(s, d, ipv6::NEXT_UDP, 64, &datagram);
                self.send(mac, ethernet::ETHERTYPE_IPV6, &packet);
            }
            _ => panic!("mixed families"),
        }
    }

    /// The ICMP / ICMPv6 port unreachable from `target` that quotes a UDP
    /// datagram of ours to `port`, if one comes within `timeout`.
    fn port_unreachable(&self, target: IpAddr, port: u16, timeout: Duration) -> bool {
        self.expect(timeout, |f| {
            let e = ethernet::parse(f)?;
            match target {
                IpAddr::V4(t) if e.ethertype == ethernet::ETHERTYPE_IPV4 => {
                    let d = ipv4::parse(e.payload).ok()?;
                    let (kind, code, _, body) = ipv4::parse_icmp(d.payload)?;
                    // The quoted header and the first 8 bytes after it
                    // (RFC 792): too short to parse as a datagram.
                    let quoted_dst = body.get(16..20)?;
                    let quoted_port = body
                        .get(usize::from(body.first()? & 0x0f) * 4..)
                        .and_then(udp_dst_port);
                    (d.src == t
                        && d.protocol == ipv4::PROTO_ICMP
                        && (kind, code) == (ipv4::ICMP_UNREACHABLE, ipv4::ICMP_PORT_UNREACHABLE)
                        && quoted_dst == t.octets()
                        && quoted_port == Some(port))
                    .then_some(())
                }
                IpAddr::V6(t) if e.ethertype == ethernet::ETHERTYPE_IPV6 => {
                    let d = ipv6::parse(e.payload)?;
                    let (kind, code, _, body) = ipv6::parse_icmp(&d)?;
                    let quoted = body.get(ipv6::HEADER_LEN..)?;
                    (d.src == t
                        && (kind, code) == (ipv6::ICMP_UNREACHABLE, ipv6::ICMP_PORT_UNREACHABLE)
                        && body.get(24..40) == Some(&t.octets()[..])
                        && udp_dst_port(quoted) == Some(port))
                    .then_some(())
                }
                _ => None,
            }
        })
        .is_some()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.segment.detach(self.port);
    }
}

// ---------------------------------------------------------------- 1. resolve

/// In the captured frames `seen`: the first RoCEv2 frame of the family
/// (`v6`) is A's, to B's MAC, and before it A's ARP request (IPv4) or
/// Neighbor Solicitation (IPv6) for B's address went out, then B's answer.
fn assert_resolved_before_rocev2(seen: &[Seen], a: Side, b: Side, v6: bool) {
    let first = seen
        .iter()
        .position(|s| matches!(s, Seen::Rocev2 { v6: f, .. } if *f == v6))
        .unwrap_or_else(|| panic!("no RoCEv2 frame (IPv6: {v6}) in the capture"));
    assert_eq!(
        seen[first],
        Seen::Rocev2 {
            v6,
            src_mac: a.mac,
            dst_mac: b.mac
        },
        "the first RoCEv2 frame (IPv6: {v6}) is A's connect request, unicast to B's MAC"
    );
    let before = &seen[..first];
    let (request, reply) = if v6 {
        let (IpAddr::V6(a6), IpAddr::V6(b6)) = (a.v6, b.v6) else {
            unreachable!()
        };
        (
            before.iter().position(|s| {
                *s == Seen::Nd {
                    kind: ipv6::ND_NEIGHBOR_SOLICIT,
                    src_mac: a.mac,
                    src: a6,
                    target: b6,
                }
            }),
            before.iter().position(|s| {
                matches!(s, Seen::Nd { kind, src_mac, target, .. }
                    if *kind == ipv6::ND_NEIGHBOR_ADVERT && *src_mac == b.mac && *target == b6)
            }),
        )
    } else {
        let (IpAddr::V4(a4), IpAddr::V4(b4)) = (a.v4, b.v4) else {
            unreachable!()
        };
        (
            before.iter().position(|s| {
                *s == Seen::Arp {
                    op: arp::REQUEST,
                    sha: a.mac,
                    spa: a4,
                    tpa: b4,
                }
            }),
            before.iter().position(|s| {
                *s == Seen::Arp {
                    op: arp::REPLY,
                    sha: b.mac,
                    spa: b4,
                    tpa: a4,
                }
            }),
        )
    };
    let what = if v6 {
        "Neighbor Solicitation"
    } else {
        "ARP request"
    };
    let request = request.unwrap_or_else(|| {
        panic!("no {what} from A for B's address before the first RoCEv2 frame: {before:?}")
    });
    let reply =
        reply.unwrap_or_else(|| panic!("no answer to A's {what} before the first RoCEv2 frame"));
    assert!(request < reply, "the answer came before the {what}");
}

/// The RNIC finds its peer by itself: before its first RoCEv2 frame of
/// each family the segment carries its own ARP request (IPv4) or Neighbor
/// Solicitation (IPv6) for the peer's address, from V's MAC, and the
/// peer's answer; the peer's stack (above its V: ARP and ND always pass
/// up) learnt the requester from it. Nothing else resolved anything
/// before: no ping ran, and neither stack knew the other.
#[test]
fn segment_peers_resolve_each_other_by_arp_and_nd() {
    let m = machine();
    let file = capture_file("resolve");
    let pair = Pair::new(m, Some(&file));
    for (side, peer) in [(pair.a, pair.b), (pair.b, pair.a)] {
        let known = m.neighbours(side.id);
        assert!(
            !known.iter().any(|(ip, _)| *ip == peer.v4 || *ip == peer.v6),
            "{:?}'s stack knew its peer before any traffic: {known:?}",
            side.id
        );
    }
    let (ndk_a, ndk_b) = pair.open();
    for at in [pair.b.v4, pair.b.v6] {
        let c = Connection::establish(
            &ndk_a,
            Some(pair.a.addr_like(at)),
            &ndk_b,
            SocketAddr::new(at, fresh_port()),
        );
        c.sends(100);
        c.close();
    }
    m.stop_capture(pair.seg).expect("stop the capture");

    // The responder's stack learnt the requester from the RNIC's ARP
    // request and NS (ARP: RFC 826's merge, the target being its own
    // address; NS: the source link-layer option). The requester's stack
    // learnt the responder from the ARP reply, addressed to its own
    // address; an NA it never solicited it ignores (RFC 4861 7.2.5), so
    // its IPv6 cache is not asserted.
    let b_knows = m.neighbours(pair.b.id);
    for ip in [pair.a.v4, pair.a.v6] {
        assert!(
            b_knows.contains(&(ip, pair.a.mac)),
            "B's stack never learnt {ip} at A's MAC: {b_knows:?}"
        );
    }
    let a_knows = m.neighbours(pair.a.id);
    assert!(
        a_knows.contains(&(pair.b.v4, pair.b.mac)),
        "A's stack never learnt {} from the ARP reply: {a_knows:?}",
        pair.b.v4
    );

    let seen: Vec<Seen> = read_pcap(&file).iter().map(|f| classify(f)).collect();
    for v6 in [false, true] {
        assert_resolved_before_rocev2(&seen, pair.a, pair.b, v6);
    }
    ndk_a.close();
    ndk_b.close();
    pair.halt();
    std::fs::remove_file(&file).ok();
    no_bugchecks();
}

// ---------------------------------------------------------------- 2. data

/// NDK connects by V's interface addresses in both families, from the
/// address itself and from the unspecified address (the RNIC picks V's
/// address of the peer's family); both connectors and the listener report
/// exactly those addresses. SEND, RDMA WRITE and RDMA READ move one byte,
/// one path MTU, one byte more, several packets and 1 MiB, every byte
/// checked; a 1 MiB transfer leaves as at least 1024 frames (the 1500-byte
/// segment carries a 1024-byte RoCE PMTU) and the segment never saw a
/// frame over its MTU. On a machine of its own, unloaded at the end: no
/// leak, no bugcheck.
#[test]
fn segment_ndk_moves_verified_data_in_both_families() {
    on_private_machine(
        "segment::segment_ndk_moves_verified_data_in_both_families",
        |m| {
            let pair = Pair::new(m, None);
            let (ndk_a, ndk_b) = pair.open();
            for at_ip in [pair.b.v4, pair.b.v6] {
                let mine = pair.a.addr_like(at_ip);
                let c = Connection::establish(
                    &ndk_a,
                    Some(mine),
                    &ndk_b,
                    SocketAddr::new(at_ip, fresh_port()),
                );
                assert_eq!(c.from.ip(), mine, "the active end's address");
                for &len in &SIZES {
                    c.sends(len);
                    let sent_by = |side: Side| m.nic_counters(side.id).expect("NIC counters")[4];
                    let (a0, b0) = (sent_by(pair.a), sent_by(pair.b));
                    c.rdma_write(len);
                    let a1 = sent_by(pair.a);
                    c.rdma_read(len);
                    let b2 = sent_by(pair.b);
                    let packets = len.div_ceil(1024) as u64;
                    assert!(
                        a1 - a0 >= packets,
                        "an RDMA WRITE of {len} bytes left A in {} frames",
                        a1 - a0
                    );
                    assert!(
                        b2 - b0 >= packets,
                        "an RDMA READ of {len} bytes came from B in {} frames",
                        b2 - b0
                    );
                }
                c.close();
                // From "any": V's address of the peer's family.
                let c = Connection::establish(
                    &ndk_a,
                    None,
                    &ndk_b,
                    SocketAddr::new(at_ip, fresh_port()),
                );
                assert_eq!(c.from.ip(), mine, "the address the RNIC picked");
                c.exchange(&[4096 + 1000]);
                c.close();
            }
            ndk_a.close();
            ndk_b.close();
            pair.halt();
            no_bugchecks();
        },
    );
}

// ---------------------------------------------------------------- 3. IP

/// A plain host on `pair`'s segment gets port unreachable from B's stack
/// for a UDP datagram to an unclaimed port of B's address, in both
/// families, and none for one to UDP 4791 (the RNIC takes it).
fn probe_gets_port_unreachable_except_for_rocev2(m: &Machine, pair: &Pair<'_>) {
    let stack = kbottle::tcpip::global();
    let probe = Probe::attach(pair.seg);
    let me = [
        IpAddr::V4(kbottle::shared::fresh_address()),
        IpAddr::V6(kbottle::shared::fresh_address_v6()),
    ];
    for (me, target) in me.into_iter().zip([pair.b.v4, pair.b.v6]) {
        let mac = probe.resolve(me, target);
        assert_eq!(
            mac,
            Some(pair.b.mac),
            "V's stack answered the probe for {target}"
        );
        let sent = m.port_unreachable_sent(pair.b.id);
        probe.send_udp(
            pair.b.mac,
            me,
            target,
            UNCLAIMED_PORT,
            b"an ordinary datagram",
        );
        assert!(
            probe.port_unreachable(target, UNCLAIMED_PORT, PING),
            "no port unreachable from {target} for UDP port {UNCLAIMED_PORT}"
        );
        assert_eq!(
            m.port_unreachable_sent(pair.b.id),
            sent + 1,
            "one error sent"
        );
        probe.send_udp(pair.b.mac, me, target, ROCEV2_PORT, &[0x55; 40]);
        assert!(
            !probe.port_unreachable(target, ROCEV2_PORT, Duration::from_millis(300)),
            "a datagram to {target}:{ROCEV2_PORT} reached the stack"
        );
        assert!(stack.settle(PING), "the stack never settled");
        assert_eq!(
            m.port_unreachable_sent(pair.b.id),
            sent + 1,
            "UDP {ROCEV2_PORT} to {target} reached the stack"
        );
    }
}

/// Ordinary IP keeps flowing through V while RoCEv2 runs: pings both ways
/// in both families go on during NDK transfers in both families (every
/// one answered). UDP 4791 frames never reach the stack: no port
/// unreachable from either stack, and each stack received fewer frames
/// than its NIC indicated by at least the RoCEv2 data frames sent to it
/// (an IPv6 RoCEv2 datagram carries UDP checksum 0, which the stack would
/// drop silently, so the counter alone could not show those). A plain host
/// on the segment then gets port unreachable from the stack for a UDP
/// datagram to an unclaimed port of V's address, in both families, and
/// none for one to UDP 4791 (the RNIC takes it).
#[test]
fn segment_ip_traffic_passes_through_v_beside_rocev2() {
    let m = machine();
    let pair = Pair::new(m, None);
    let (ndk_a, ndk_b) = pair.open();
    let stack = kbottle::tcpip::global();
    let received = |s: Side| m.ip_counters(s.id).frames_received;
    let indicated = |s: Side| m.nic_counters(s.id).expect("NIC counters")[0];
    assert!(stack.settle(PING), "the stack never settled");
    let before = [
        (received(pair.a), indicated(pair.a)),
        (received(pair.b), indicated(pair.b)),
    ];

    let stop = AtomicBool::new(false);
    let (rounds, failures) = std::thread::scope(|s| {
        let pinger = s.spawn(|| {
            let (mut rounds, mut failures) = (0u32, Vec::new());
            while !stop.load(Ordering::SeqCst) {
                for (from, to) in [(pair.a, pair.b), (pair.b, pair.a)] {
                    for dst in [to.v4, to.v6] {
                        if !m.ping(from.id, dst, PING) {
                            failures.push(dst);
                        }
                    }
                }
                rounds += 1;
            }
            (rounds, failures)
        });
        let started = Instant::now();
        for at_ip in [pair.b.v4, pair.b.v6] {
            let c = Connection::establish(
                &ndk_a,
                Some(pair.a.addr_like(at_ip)),
                &ndk_b,
                SocketAddr::new(at_ip, fresh_port()),
            );
            // 1 MiB each way: at least 1024 RoCEv2 data frames to each side.
            c.exchange(&[4096 + 1000, 1 << 20]);
            c.close();
        }
        // Let the pings overlap the transfers by a few rounds at least.
        while started.elapsed() < Duration::from_millis(200) {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::SeqCst);
        pinger.join().expect("the pinger")
    });
    assert!(
        failures.is_empty(),
        "pings unanswered during RoCEv2: {failures:?}"
    );
    assert!(
        rounds >= 2,
        "only {rounds} ping rounds ran beside the transfers"
    );

    assert!(stack.settle(PING), "the stack never settled");
    for (s, (rx0, ind0)) in [pair.a, pair.b].into_iter().zip(before) {
        assert_eq!(
            m.port_unreachable_sent(s.id),
            0,
            "{:?}'s stack got a UDP datagram (RoCEv2 leaked up)",
            s.id
        );
        let (rx, ind) = (received(s) - rx0, indicated(s) - ind0);
        // Each side received a 1 MiB WRITE or READ response per family.
        let rocev2 = 2 * 1024;
        assert!(
            rx + rocev2 <= ind,
            "{:?}: the stack received {rx} of the {ind} frames its NIC indicated: RoCEv2 \
             frames reached it",
            s.id
        );
    }

    probe_gets_port_unreachable_except_for_rocev2(m, &pair);
    ndk_a.close();
    ndk_b.close();
    pair.halt();
    no_bugchecks();
}

// ---------------------------------------------------------------- 4. addresses

/// B's IPv6 address removed (the driver stops serving it), re-added
/// (DAD again) and used by a new connection.
fn ipv6_address_comes_back(m: &Machine, pair: &Pair<'_>, ndk_a: &Nic<'_>, ndk_b: &Nic<'_>) {
    m.remove_address(pair.b.id, pair.b.v6)
        .expect("remove B's IPv6 address");
    assert!(
        ndk_b.wait_address_gone(pair.b.v6, ADDRESS_WAIT),
        "B's driver kept {}",
        pair.b.v6
    );
    m.add_address(pair.b.id, pair.b.v6, PREFIX_V6)
        .expect("re-add B's IPv6 address");
    assert!(m.wait_address_preferred(pair.b.id, pair.b.v6, ADDRESS_WAIT));
    assert!(
        ndk_b.wait_address(pair.b.v6, ADDRESS_WAIT),
        "B's driver never took {} back",
        pair.b.v6
    );
    let c = Connection::establish(
        ndk_a,
        Some(pair.a.v6),
        ndk_b,
        SocketAddr::new(pair.b.v6, fresh_port()),
    );
    c.exchange(&[4096 + 1000]);
    c.close();
}

/// An address removed and re-added. While B's IPv4 address is gone,
/// listening on it is `STATUS_INVALID_ADDRESS` and a connect to it times
/// out (`STATUS_IO_TIMEOUT`: B's RNIC no longer takes frames for it and
/// its stack no longer holds it, so nobody answers); with A's gone too, a
/// connect from it, or from "any" IPv4 with none left, is
/// `STATUS_INVALID_ADDRESS`. A connection that spans the gap stalls
/// (an RDMA WRITE posted in it neither completes nor lands) and then
/// completes its transfer once the addresses are back: softrnic's
/// address set documents that connections are left alone when an address
/// goes and carry on when it comes back before the peer's
/// retransmissions run out (RC retransmits with a doubling timeout for
/// seconds; the gap here is a fraction of that). After re-adding, new
/// connections work in both families. On a machine of its own, unloaded
/// at the end: no leak, no bugcheck.
#[test]
fn segment_survives_an_address_removed_and_readded() {
    on_private_machine(
        "segment::segment_survives_an_address_removed_and_readded",
        |m| {
            let pair = Pair::new(m, None);
            let (ndk_a, ndk_b) = pair.open();
            let c = Connection::establish(
                &ndk_a,
                Some(pair.a.v4),
                &ndk_b,
                SocketAddr::new(pair.b.v4, fresh_port()),
            );
            c.sends(100);

            m.remove_address(pair.b.id, pair.b.v4)
                .expect("remove B's IPv4 address");
            assert!(
                ndk_b.wait_address_gone(pair.b.v4, ADDRESS_WAIT),
                "the driver kept serving {} after the stack removed it",
                pair.b.v4
            );
            assert_eq!(
                ndk_b.listen(SocketAddr::new(pair.b.v4, fresh_port())).err(),
                Some(STATUS_INVALID_ADDRESS),
                "listen on the removed address"
            );
            assert_eq!(
                try_connect(
                    &ndk_a,
                    Some(pair.a.v4),
                    SocketAddr::new(pair.b.v4, fresh_port())
                ),
                STATUS_IO_TIMEOUT,
                "connect to the removed address"
            );
            m.remove_address(pair.a.id, pair.a.v4)
                .expect("remove A's IPv4 address");
            assert!(
                ndk_a.wait_address_gone(pair.a.v4, ADDRESS_WAIT),
                "A's driver kept {}",
                pair.a.v4
            );
            for local in [Some(pair.a.v4), None] {
                assert_eq!(
                    try_connect(&ndk_a, local, SocketAddr::new(pair.b.v4, fresh_port())),
                    STATUS_INVALID_ADDRESS,
                    "connect from {local:?} with A's IPv4 address removed"
                );
            }

            // The connection that spans the gap: stalled while it lasts.
            let pending = c.post_write(256 << 10, 7);
            let mut taken = Vec::new();
            assert!(
                !wait_for(Duration::from_millis(300), || pending.done(&mut taken)),
                "an RDMA WRITE completed while both addresses were gone"
            );
            assert!(pending.sink_untouched(), "data landed at a removed address");

            for s in [pair.a, pair.b] {
                m.add_address(s.id, s.v4, PREFIX_V4)
                    .expect("re-add the IPv4 address");
                assert!(m.wait_address_preferred(s.id, s.v4, ADDRESS_WAIT));
            }
            assert!(
                ndk_a.wait_address(pair.a.v4, ADDRESS_WAIT),
                "A's driver never took {} back",
                pair.a.v4
            );
            assert!(
                ndk_b.wait_address(pair.b.v4, ADDRESS_WAIT),
                "B's driver never took {} back",
                pair.b.v4
            );
            pending.finish(conn::STEP);
            c.sends(4096 + 1000);
            c.rdma_read(64 << 10);
            c.close();

            let c = Connection::establish(
                &ndk_a,
                Some(pair.a.v4),
                &ndk_b,
                SocketAddr::new(pair.b.v4, fresh_port()),
            );
            c.exchange(&[4096 + 1000]);
            c.close();

            ipv6_address_comes_back(m, &pair, &ndk_a, &ndk_b);
            pair.ping_all();
            ndk_a.close();
            ndk_b.close();
            pair.halt();
            no_bugchecks();
        },
    );
}

// ---------------------------------------------------------------- 5. link

/// `OID_GEN_MEDIA_CONNECT_STATUS` of V.
fn media_state(m: &Machine, id: AdapterId) -> u32 {
    let mut buf = [0u8; 4];
    let n = m
        .oid_query(id, OID_GEN_MEDIA_CONNECT_STATUS, &mut buf)
        .unwrap_or_else(|s| panic!("OID_GEN_MEDIA_CONNECT_STATUS: {:#010x}", s as u32));
    assert_eq!(n, 4, "OID_GEN_MEDIA_CONNECT_STATUS length");
    u32::from_ne_bytes(buf)
}

/// Link state indications V made after the first `since`.
fn link_indications(m: &Machine, id: AdapterId, since: usize) -> usize {
    m.status_indications(id)
        .iter()
        .skip(since)
        .filter(|&&s| s == NDIS_STATUS_LINK_STATE)
        .count()
}

/// The NIC below A loses its link for a moment. While it is down V says
/// so (an `NDIS_STATUS_LINK_STATE` indication, which the stack above V
/// acts on: its addresses go tentative; `OID_GEN_MEDIA_CONNECT_STATUS`
/// disconnected), nothing bugchecks, pings fail and an RDMA WRITE posted
/// in the open connection neither completes nor lands. After the link
/// comes back V says so again, the addresses are preferred and served
/// again, the stalled WRITE completes with its data intact (the RC
/// connection outlived a short outage), the connection carries on, and a
/// new IPv6 connection and pings work. On a machine of its own, unloaded
/// at the end: no leak, no bugcheck.
#[test]
fn segment_survives_a_nic_link_down_and_up() {
    on_private_machine("segment::segment_survives_a_nic_link_down_and_up", |m| {
        let pair = Pair::new(m, None);
        let (ndk_a, ndk_b) = pair.open();
        let c = Connection::establish(
            &ndk_a,
            Some(pair.a.v4),
            &ndk_b,
            SocketAddr::new(pair.b.v4, fresh_port()),
        );
        c.sends(100);
        assert_eq!(media_state(m, pair.a.id), MEDIA_STATE_CONNECTED);

        let since = m.status_indications(pair.a.id).len();
        assert!(m.set_nic_link(pair.a.id, false), "A has a NIC");
        assert!(
            wait_for(ADDRESS_WAIT, || link_indications(m, pair.a.id, since) >= 1),
            "V indicated no link state change for the link down: {:x?}",
            m.status_indications(pair.a.id)
        );
        assert_eq!(
            media_state(m, pair.a.id),
            MEDIA_STATE_DISCONNECTED,
            "V's media state with its NIC's link down"
        );
        assert!(
            wait_for(ADDRESS_WAIT, || m
                .address_states(pair.a.id)
                .iter()
                .filter(|(ip, _)| *ip == pair.a.v4 || *ip == pair.a.v6)
                .all(|(_, dad)| *dad == DadState::Tentative)),
            "the stack above V never heard of the link down: {:?}",
            m.address_states(pair.a.id)
        );

        let pending = c.post_write(256 << 10, 9);
        assert!(
            !m.ping(pair.b.id, pair.a.v4, Duration::from_millis(300)),
            "a ping crossed a link that is down"
        );
        let mut taken = Vec::new();
        assert!(
            !pending.done(&mut taken),
            "an RDMA WRITE completed over a link that is down"
        );
        assert!(pending.sink_untouched(), "data crossed a link that is down");
        no_bugchecks();

        let since = m.status_indications(pair.a.id).len();
        assert!(m.set_nic_link(pair.a.id, true));
        assert!(
            wait_for(ADDRESS_WAIT, || link_indications(m, pair.a.id, since) >= 1),
            "V indicated no link state change for the link up"
        );
        assert_eq!(media_state(m, pair.a.id), MEDIA_STATE_CONNECTED);
        for ip in [pair.a.v4, pair.a.v6] {
            assert!(
                m.wait_address_preferred(pair.a.id, ip, ADDRESS_WAIT),
                "{ip} after the link up"
            );
            assert!(
                ndk_a.wait_address(ip, ADDRESS_WAIT),
                "A's driver never served {ip} again"
            );
        }
        pending.finish(conn::STEP);
        c.sends(4096 + 1000);
        c.close();

        let c = Connection::establish(
            &ndk_a,
            Some(pair.a.v6),
            &ndk_b,
            SocketAddr::new(pair.b.v6, fresh_port()),
        );
        c.exchange(&[4096 + 1000, 64 << 10]);
        c.close();
        pair.ping_all();
        ndk_a.close();
        ndk_b.close();
        pair.halt();
        no_bugchecks();
    });
}

/// How long the RC transport may take to give up on a peer it cannot
/// reach (its retransmissions with a doubling timeout, then
/// `RetryExceeded`).
const RETRY_BUDGET: Duration = Duration::from_secs(40);

/// An outage longer than the RC transport's patience: the RDMA WRITE
/// posted while the NIC below A is down completes with
/// `STATUS_IO_TIMEOUT` (its retries ran out) instead of hanging, nothing
/// bugchecks, the dead connection closes, and after the link comes back
/// new connections in both families move data and pings work. On a
/// machine of its own, unloaded at the end: no leak, no bugcheck.
#[test]
fn segment_outlives_a_link_outage_longer_than_rc_retries() {
    on_private_machine(
        "segment::segment_outlives_a_link_outage_longer_than_rc_retries",
        |m| {
            let pair = Pair::new(m, None);
            let (ndk_a, ndk_b) = pair.open();
            let c = Connection::establish(
                &ndk_a,
                Some(pair.a.v4),
                &ndk_b,
                SocketAddr::new(pair.b.v4, fresh_port()),
            );
            c.sends(100);
            assert!(m.set_nic_link(pair.a.id, false));
            let pending = c.post_write(64 << 10, 11);
            assert_eq!(
                pending.fails(RETRY_BUDGET),
                STATUS_IO_TIMEOUT,
                "an RDMA WRITE over a link down for good"
            );
            no_bugchecks();
            c.abandon();
            assert!(m.set_nic_link(pair.a.id, true));
            for ip in [pair.a.v4, pair.a.v6] {
                assert!(
                    m.wait_address_preferred(pair.a.id, ip, ADDRESS_WAIT),
                    "{ip} after the link up"
                );
                assert!(
                    ndk_a.wait_address(ip, ADDRESS_WAIT),
                    "A's driver never served {ip} again"
                );
            }
            for at_ip in [pair.b.v4, pair.b.v6] {
                let c = Connection::establish(
                    &ndk_a,
                    Some(pair.a.addr_like(at_ip)),
                    &ndk_b,
                    SocketAddr::new(at_ip, fresh_port()),
                );
                c.exchange(&[4096 + 1000]);
                c.close();
            }
            pair.ping_all();
            ndk_a.close();
            ndk_b.close();
            pair.halt();
            no_bugchecks();
        },
    );
}

// ---------------------------------------------------------------- 6. tshark

/// Lines tshark prints for the frames of `file` matching `filter`.
fn frames_matching(file: &str, filter: &str) -> usize {
    tshark(file, &["-Y", filter]).len()
}

/// Every frame of `file` decodes, RoCEv2 as InfiniBand over UDP 4791 in
/// both families with the expected opcodes, and ARP, ND and echo are
/// there.
fn check_capture(file: &str) {
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
    assert!(frames.len() >= 400, "too few frames: {}", frames.len());
    for (i, line) in frames.iter().enumerate() {
        let mut fields = line.split('\t');
        let protocols = fields.next().unwrap_or_default();
        let malformed = fields.next().unwrap_or_default();
        assert!(malformed.is_empty(), "frame {} malformed: {line}", i + 1);
        assert!(
            !protocols.contains("malformed"),
            "frame {} malformed: {line}",
            i + 1
        );
    }
    assert_eq!(
        frames_matching(file, "udp.port == 4791 && !infiniband"),
        0,
        "UDP 4791 frames tshark did not dissect as InfiniBand"
    );
    for family in ["ip", "ipv6"] {
        // 64 KiB each way at 1 KiB a packet, WRITE and READ.
        let n = frames_matching(
            file,
            &format!("{family} && udp.dstport == 4791 && infiniband.bth"),
        );
        assert!(n >= 128, "only {n} RoCEv2 frames over {family}");
        // SEND first/last (0/2), RDMA WRITE first (6), READ request (12),
        // READ response first (13), ACK (17), UD SEND only (CM MAD, 100).
        for (op, what) in [
            (0, "SEND first"),
            (2, "SEND last"),
            (6, "RDMA WRITE first"),
            (12, "RDMA READ request"),
            (13, "RDMA READ response first"),
            (17, "ACKNOWLEDGE"),
            (100, "UD SEND only (CM MAD)"),
        ] {
            assert!(
                frames_matching(file, &format!("{family} && infiniband.bth.opcode == {op}")) >= 1,
                "no {what} (opcode {op}) over {family} in the capture"
            );
        }
    }
    for (filter, what) in [
        ("arp.opcode == 1", "ARP request"),
        ("arp.opcode == 2", "ARP reply"),
        ("icmpv6.type == 135", "Neighbor Solicitation"),
        ("icmpv6.type == 136", "Neighbor Advertisement"),
        ("icmp.type == 8", "ICMP echo request"),
        ("icmp.type == 0", "ICMP echo reply"),
        ("icmpv6.type == 128", "ICMPv6 echo request"),
        ("icmpv6.type == 129", "ICMPv6 echo reply"),
    ] {
        assert!(
            frames_matching(file, filter) >= 1,
            "no {what} in the capture"
        );
    }

    check_expert_errors(file);
}

/// The only expert errors of `file` are zero UDP checksums on IPv6
/// RoCEv2 frames.
fn check_expert_errors(file: &str) {
    // Expert errors: only the IPv6 zero UDP checksum, only on RoCEv2.
    let errors = tshark(
        file,
        &[
            "-Y",
            "_ws.expert.severity == \"Error\"",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "frame.protocols",
            "-e",
            "_ws.expert.message",
        ],
    );
    let mut zero_checksums = 0;
    for line in &errors {
        let mut fields = line.split('\t');
        let (number, protocols) = (
            fields.next().unwrap_or_default(),
            fields.next().unwrap_or_default(),
        );
        let messages = fields.next().unwrap_or_default();
        for message in messages.split(',') {
            if message.contains("Illegal checksum value (0)") {
                assert!(
                    protocols.starts_with("eth:ethertype:ipv6:udp:infiniband"),
                    "frame {number}: a zero UDP checksum on something else: {line}"
                );
                zero_checksums += 1;
            } else if !message.is_empty() {
                panic!("frame {number}: expert error {message:?}: {line}");
            }
        }
    }
    // Every IPv6 RoCEv2 frame carries it; IPv4 ones never do.
    let v6_rocev2 = frames_matching(file, "ipv6 && udp.dstport == 4791");
    assert!(
        zero_checksums <= v6_rocev2,
        "{zero_checksums} zero-checksum errors for {v6_rocev2} IPv6 RoCEv2 frames"
    );
}

/// A segment capture of pings and an NDK exchange in each family decodes
/// in tshark: nothing malformed; every UDP 4791 frame dissected as
/// InfiniBand (BTH) over UDP, in IPv4 and IPv6, with the SEND, WRITE,
/// READ, ACK and CM opcodes there; ARP, ICMPv6 Neighbor Solicitation and
/// Advertisement, ICMP and ICMPv6 echo present; and no expert error but
/// one: the RNIC sends IPv6 UDP checksum 0, as Linux rxe does (RFC 6935
/// allows it for tunnel protocols; the ICRC covers the payload), which
/// tshark flags as "Illegal checksum value (0)". That one is counted
/// apart and must only ever be on IPv6 RoCEv2 frames.
#[test]
fn segment_capture_decodes_in_tshark() {
    let m = machine();
    let path = capture_file("tshark");
    let pair = Pair::new(m, Some(&path));
    let (ndk_a, ndk_b) = pair.open();
    pair.ping_all();
    for at_ip in [pair.b.v4, pair.b.v6] {
        let c = Connection::establish(
            &ndk_a,
            Some(pair.a.addr_like(at_ip)),
            &ndk_b,
            SocketAddr::new(at_ip, fresh_port()),
        );
        c.exchange(&[4096 + 1000, (64 << 10) + 3]);
        c.close();
    }
    ndk_a.close();
    ndk_b.close();
    pair.halt();
    no_bugchecks();

    check_capture(path.to_str().expect("a UTF-8 path"));
    std::fs::remove_file(&path).ok();
}

//! Bottled adapters on a real Linux Ethernet: each test builds a network
//! namespace of its own (`testkit::netns`, anonymous: the kernel removes
//! it with the test process, whatever way that ends), taps inside it,
//! and joins bottle segments to them (`kbottle::tap`,
//! `testkit::adapter::bottle::tap::TapV`). The Linux side is the
//! namespace's own stack and bridge: its ARP, ND, ICMP and UDP against
//! the bottle's emulated TCP/IP and the driver's RNIC, and two bottled
//! adapters connecting through the Linux bridge with the driver's own
//! ARP/ND, RoCEv2 framing, ICRC and CM.
//!
//! They need root, `/dev/net/tun` and `ip` (iproute2; the bridge test
//! also its `bridge`), and fail saying which is missing.

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use kbottle::machine::AdapterId;
use kbottle::ndis::types::NDIS_NDK_PERFORMANCE_COUNTERS;
use testkit::adapter::bottle::tap::TapV;
use testkit::netns::Netns;

use crate::common::machine;
use crate::conn::{self, Connection};

/// How long one echo request waits for its answer.
const ECHO_WAIT: Duration = Duration::from_secs(3);
/// SEND size: five packets at the RoCE path MTU of 1024.
const SEND_LEN: usize = 5000;
/// RDMA transfer size.
const BIG: usize = 1 << 20;
/// RoCEv2 frames 1 MiB takes at the path MTU of 1024.
const BIG_FRAMES: u64 = (BIG / 1024) as u64;
/// The RoCEv2 UDP port.
const ROCEV2_PORT: u16 = 4791;

/// The namespace's side of a test's subnet: 10.77.`net`.1/24 and
/// fd77:`net`::1/64.
fn linux_side(net: u8) -> (Ipv4Addr, Ipv6Addr) {
    (
        Ipv4Addr::new(10, 77, net, 1),
        Ipv6Addr::new(0xfd77, u16::from(net), 0, 0, 0, 0, 0, 1),
    )
}

/// A bottled adapter's addresses on a test's subnet: host `host` of
/// 10.77.`net`.0/24 and fd77:`net`::/64.
fn bottled_side(net: u8, host: u8) -> [(IpAddr, u8); 2] {
    [
        (Ipv4Addr::new(10, 77, net, host).into(), 24),
        (
            Ipv6Addr::new(0xfd77, u16::from(net), 0, 0, 0, 0, 0, u16::from(host)).into(),
            64,
        ),
    ]
}

/// Gives `dev` of `ns` the Linux side of subnet `net` (IPv6 without
/// duplicate address detection, usable at once).
fn address_linux(ns: &Netns, dev: &str, net: u8) {
    let (v4, v6) = linux_side(net);
    ns.ip(&["addr", "add", &format!("{v4}/24"), "dev", dev]);
    ns.ip(&[
        "-6",
        "addr",
        "add",
        &format!("{v6}/64"),
        "dev",
        dev,
        "nodad",
    ]);
}

/// A namespace with one tap `tap0`, up, holding the Linux side of
/// subnet `net`, and a bottled V on it at host 3 of that subnet.
fn one_tap(net: u8) -> (Netns, TapV) {
    let ns = Netns::new();
    let fd = ns.open_tap("tap0").expect("a tap in the namespace");
    ns.ip(&["link", "set", "tap0", "up"]);
    address_linux(&ns, "tap0", net);
    let v = TapV::join(fd, &bottled_side(net, 3));
    (ns, v)
}

fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The driver's NDK counters of `a`.
fn ndk_counters(a: AdapterId) -> NDIS_NDK_PERFORMANCE_COUNTERS {
    testkit::adapter::bottle::tap::ndk_counters(machine(), a)
}

/// No bugcheck so far in this process.
fn no_bugchecks() {
    let b = kbottle::verifier::bugchecks();
    assert!(b.is_empty(), "bugchecks: {b:?}");
}

/// The namespace's Linux stack pings a bottled V in both families (3
/// requests each, every one answered: ARP and ND resolve V through the
/// tap, the bottle's stack answers the echo), holds V's MAC in its
/// neighbour table, and V pings Linux back (the bottle's stack resolves
/// Linux).
#[test]
fn linux_and_a_bottled_v_ping_each_other_through_a_tap() {
    let net = 1;
    let (ns, v) = one_tap(net);
    let (linux_v4, linux_v6) = linux_side(net);
    for (ip, _) in v.addresses.clone() {
        let report = ns.ping(ip, 3, ECHO_WAIT).expect("ping from the namespace");
        assert_eq!(
            (report.sent, report.answered),
            (3, 3),
            "ping -c 3 {ip} from Linux: {report:?}, tap {:?}",
            v.tap_stats()
        );
        let neighbour = ns.ip(&["neigh", "show", &ip.to_string()]);
        assert!(
            neighbour.contains(&mac_text(v.mac())),
            "Linux resolved {ip} to V's MAC {}: {neighbour}",
            mac_text(v.mac())
        );
    }
    assert!(
        machine().ip_counters(v.id).echo_requests_answered >= 6,
        "{:?}",
        machine().ip_counters(v.id)
    );
    for linux in [IpAddr::V4(linux_v4), IpAddr::V6(linux_v6)] {
        assert!(
            machine().ping(v.id, linux, ECHO_WAIT),
            "V pinged Linux at {linux}: tap {:?}",
            v.tap_stats()
        );
    }
    let stats = v.leave();
    assert!(stats.received >= 6 && stats.sent >= 6, "{stats:?}");
    assert_eq!(
        (stats.oversize, stats.runts, stats.send_failures),
        (0, 0, 0)
    );
    no_bugchecks();
}

/// A Linux UDP socket's datagram to V's address on port 4791 goes to the
/// driver's RNIC (`OID_NDK_STATISTICS`' RDMAInFrames counts it; the stack
/// answers nothing), in both families; to another port it reaches the
/// bottle's stack, whose port unreachable error Linux takes
/// (`ECONNREFUSED` on the socket).
#[test]
fn udp_from_linux_to_4791_goes_to_the_rnic_and_other_ports_are_refused() {
    let net = 2;
    let (ns, v) = one_tap(net);
    let (linux_v4, linux_v6) = linux_side(net);
    for ((ip, _), linux) in v
        .addresses
        .clone()
        .into_iter()
        .zip([IpAddr::V4(linux_v4), IpAddr::V6(linux_v6)])
    {
        let before = ndk_counters(v.id).RDMAInFrames;
        let unreachable = machine().port_unreachable_sent(v.id);
        let socket = ns
            .udp_socket(SocketAddr::new(linux, 0))
            .expect("a UDP socket in the namespace");
        // A BTH-sized datagram whose ICRC is wrong: the RNIC takes and
        // drops it.
        socket
            .send_to(&[0x64; 64], SocketAddr::new(ip, ROCEV2_PORT))
            .expect("send to 4791");
        assert!(
            conn::wait_for(Duration::from_secs(5), || {
                ndk_counters(v.id).RDMAInFrames > before
            }),
            "the RNIC never took the datagram to {ip}:4791 (tap {:?})",
            v.tap_stats()
        );
        assert_eq!(ndk_counters(v.id).RDMAInFrames, before + 1);

        let refused = ns
            .udp_socket(SocketAddr::new(linux, 0))
            .expect("a UDP socket in the namespace");
        refused
            .connect(SocketAddr::new(ip, ROCEV2_PORT + 1))
            .expect("connect");
        refused
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout");
        refused.send(b"to no one").expect("send to 4792");
        let mut buf = [0u8; 16];
        let answer = refused.recv(&mut buf);
        assert_eq!(
            answer.map_err(|e| e.kind()).err(),
            Some(ErrorKind::ConnectionRefused),
            "Linux saw V's port unreachable for {ip}:4792"
        );
        assert_eq!(
            machine().port_unreachable_sent(v.id),
            unreachable + 1,
            "only the datagram to 4792 reached the stack"
        );
    }
    v.leave();
    no_bugchecks();
}

/// A frame from Linux longer than the segment's MTU (the tap at MTU
/// 9000, the bottle's segment at 1500) is dropped at the tap port and
/// counted; the RNIC never sees it.
#[test]
fn a_frame_from_linux_over_the_segment_mtu_is_dropped_and_counted() {
    let net = 4;
    let (ns, v) = one_tap(net);
    let (linux_v4, _) = linux_side(net);
    ns.ip(&["link", "set", "tap0", "mtu", "9000"]);
    let ip = v.addresses[0].0;
    // Resolved first, so that the jumbo datagram leaves at once.
    assert_eq!(ns.ping(ip, 1, ECHO_WAIT).expect("ping").answered, 1);
    // A snapshot with every frame received also sorted (the tap's
    // counters are bumped one after the other).
    let settled = || {
        let mut stats = v.tap_stats();
        assert!(
            conn::wait_for(Duration::from_secs(5), || {
                stats = v.tap_stats();
                stats.received == stats.forwarded + stats.oversize + stats.runts
            }),
            "the tap's counters never agreed: {stats:?}"
        );
        stats
    };
    let before = (settled(), ndk_counters(v.id).RDMAInFrames);
    let socket = ns
        .udp_socket(SocketAddr::new(linux_v4.into(), 0))
        .expect("a UDP socket in the namespace");
    socket
        .send_to(&[0x64; 4000], SocketAddr::new(ip, ROCEV2_PORT))
        .expect("send 4000 bytes");
    assert!(
        conn::wait_for(Duration::from_secs(5), || {
            v.tap_stats().oversize > before.0.oversize
        }),
        "the jumbo frame was not counted: {:?}",
        v.tap_stats()
    );
    let after = settled();
    assert_eq!(after.oversize, before.0.oversize + 1);
    // Linux may send frames of its own meanwhile (once, in CI, one more
    // was forwarded): each of those is forwarded, the jumbo one alone is
    // not.
    assert_eq!(
        after.forwarded - before.0.forwarded,
        after.received - before.0.received - 1,
        "the tap dropped a frame other than the jumbo one: before {:?}, after {after:?}",
        before.0
    );
    assert_eq!(after.runts, before.0.runts, "{after:?}");
    assert_eq!(ndk_counters(v.id).RDMAInFrames, before.1);
    v.leave();
    no_bugchecks();
}

/// Two bottled adapters, each on a segment joined to its own tap, both
/// taps ports of one Linux bridge (multicast snooping off, as on a lab
/// bridge without a querier): in IPv4 and in IPv6 they connect through
/// the NDK connection manager, SEND both ways and move 1 MiB by RDMA
/// WRITE and READ, checked byte for byte, every frame through the real
/// bridge, which learns both MACs on their taps; Linux on the bridge
/// pings both.
#[test]
fn two_bottled_adapters_connect_through_a_linux_bridge() {
    let net = 3;
    let ns = Netns::new();
    ns.ip(&[
        "link",
        "add",
        "br0",
        "type",
        "bridge",
        "stp_state",
        "0",
        "mcast_snooping",
        "0",
    ]);
    let taps = ["tap0", "tap1"].map(|name| {
        let fd = ns.open_tap(name).expect("a tap in the namespace");
        ns.ip(&["link", "set", name, "master", "br0", "up"]);
        fd
    });
    ns.ip(&["link", "set", "br0", "up"]);
    address_linux(&ns, "br0", net);
    let [t0, t1] = taps;
    let x = TapV::join(t0, &bottled_side(net, 11));
    let y = TapV::join(t1, &bottled_side(net, 12));
    let nx = conn::Nic::open(machine(), x.id);
    let ny = conn::Nic::open(machine(), y.id);
    for family in 0..2 {
        let (from, to) = (x.addresses[family].0, y.addresses[family].0);
        let at = SocketAddr::new(to, conn::fresh_port());
        let c = Connection::establish(&nx, Some(from), &ny, at);
        c.sends(SEND_LEN);
        c.rdma_write(BIG);
        c.rdma_read(BIG);
        c.close();
    }
    for v in [&x, &y] {
        for (ip, _) in &v.addresses {
            let report = ns.ping(*ip, 1, ECHO_WAIT).expect("ping");
            assert_eq!(report.answered, 1, "Linux on the bridge pinged {ip}");
        }
    }
    let fdb = ns
        .command("bridge")
        .args(["fdb", "show", "br", "br0"])
        .output()
        .expect("`bridge` (iproute2) in the namespace");
    let fdb = String::from_utf8_lossy(&fdb.stdout);
    for (v, tap) in [(&x, "tap0"), (&y, "tap1")] {
        let mac = mac_text(v.mac());
        assert!(
            fdb.lines()
                .any(|l| l.starts_with(&mac) && l.contains(&format!("dev {tap} "))),
            "the bridge learnt {mac} on {tap}:\n{fdb}"
        );
    }
    nx.close();
    ny.close();
    let (sx, sy) = (x.leave(), y.leave());
    for (what, s) in [("x", sx), ("y", sy)] {
        // Each side sends one MiB of data per family (a WRITE's or a READ
        // response's) and takes the other's.
        assert!(
            s.sent >= 2 * BIG_FRAMES && s.received >= 2 * BIG_FRAMES,
            "{what}'s tap: {s:?}"
        );
        assert_eq!((s.oversize, s.runts, s.send_failures), (0, 0, 0), "{what}");
    }
    no_bugchecks();
}

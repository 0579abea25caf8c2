//! The stack on a test hub: interfaces of one [`Stack`] whose frames are
//! recorded and delivered to every other interface (as an Ethernet hub
//! would), and frames injected as a foreign host would send them.
//! Addresses are the emulated ones (198.18.0.0/15, fd00:5253::/64).

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::interface::DAD_WAIT;
use super::*;

const WAIT: Duration = Duration::from_secs(5);

/// Delivers each frame to every other interface of the stack and keeps
/// a copy; records the receive filters (and where they came among the
/// frames).
#[derive(Default)]
struct Hub {
    stack: OnceLock<Weak<Stack>>,
    members: Mutex<Vec<u32>>,
    frames: Mutex<Vec<(u32, Vec<u8>)>>,
    /// (adapter, filter, frames sent before it).
    filters: Mutex<Vec<(u32, ReceiveFilter, usize)>>,
}

impl Below for Hub {
    fn set_receive_filter(&self, adapter: u32, filter: &ReceiveFilter) {
        let before = self.frames.lock().unwrap().len();
        self.filters
            .lock()
            .unwrap()
            .push((adapter, filter.clone(), before));
    }

    fn send_frame(&self, adapter: u32, frame: &[u8]) {
        self.frames.lock().unwrap().push((adapter, frame.to_vec()));
        let Some(stack) = self.stack.get().and_then(Weak::upgrade) else {
            return;
        };
        let members = self.members.lock().unwrap().clone();
        for m in members.into_iter().filter(|m| *m != adapter) {
            stack.receive(m, frame);
        }
    }
}

struct Lab {
    hub: Arc<Hub>,
    stack: Arc<Stack>,
}

fn mac(n: u8) -> [u8; 6] {
    [0x02, 0x52, 0x53, 0x00, 0x00, n]
}

fn info(adapter: u32) -> InterfaceInfo {
    InterfaceInfo {
        adapter,
        luid: (6 << 48) | (u64::from(adapter) << 24),
        if_index: 100 + adapter,
        mac: mac(adapter as u8),
        mtu: 1500,
    }
}

impl Lab {
    fn new() -> Self {
        let hub = Arc::new(Hub::default());
        let stack = Arc::new(Stack::new("tcpip-test", Arc::clone(&hub) as Arc<dyn Below>));
        hub.stack.set(Arc::downgrade(&stack)).unwrap();
        Self { hub, stack }
    }

    /// Binds `adapter` on the hub (`on_hub`) or alone (frames recorded,
    /// delivered nowhere).
    fn bind(&self, adapter: u32, on_hub: bool) {
        if on_hub {
            self.hub.members.lock().unwrap().push(adapter);
        }
        self.stack.bind(info(adapter), true).unwrap();
    }

    fn frames_from(&self, adapter: u32) -> Vec<Vec<u8>> {
        self.hub
            .frames
            .lock()
            .unwrap()
            .iter()
            .filter(|(a, _)| *a == adapter)
            .map(|(_, f)| f.clone())
            .collect()
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn dad_of(&self, adapter: u32, ip: IpAddr) -> Option<DadState> {
        self.stack
            .rows_of(adapter)
            .iter()
            .find(|r| r.address.ip == ip)
            .map(|r| r.address.dad)
    }

    fn wait_preferred(&self, adapter: u32, ip: IpAddr) {
        Self::wait_for(&format!("{ip} preferred on {adapter}"), || {
            self.dad_of(adapter, ip) == Some(DadState::Preferred)
        });
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn binding_gives_the_eui64_link_local_after_a_dad_solicitation() {
    let lab = Lab::new();
    lab.bind(1, true);
    let ll = lab.stack.link_local_v6(1).unwrap();
    assert_eq!(ll, "fe80::52:53ff:fe00:1".parse::<Ipv6Addr>().unwrap());
    assert_eq!(lab.dad_of(1, IpAddr::V6(ll)), Some(DadState::Tentative));
    lab.wait_preferred(1, IpAddr::V6(ll));
    let frames = lab.frames_from(1);
    let ns = frames.first().expect("the DAD solicitation");
    let f = ethernet::parse(ns).unwrap();
    assert_eq!(f.dst, [0x33, 0x33, 0xff, 0x00, 0x00, 0x01]);
    let d = ipv6::parse(f.payload).unwrap();
    assert!(d.src.is_unspecified());
    assert_eq!(d.dst, ipv6::solicited_node(ll));
    let (kind, code, rest, body) = ipv6::parse_icmp(&d).unwrap();
    let nd = ipv6::parse_nd(&d, kind, code, rest, body).unwrap();
    assert_eq!(
        (nd.kind, nd.target, nd.link_layer),
        (ipv6::ND_NEIGHBOR_SOLICIT, ll, None)
    );
    assert_eq!(lab.stack.addresses(1), vec![(IpAddr::V6(ll), 64)]);
}

#[test]
fn two_interfaces_resolve_and_ping_each_other_over_ipv4_and_ipv6() {
    let lab = Lab::new();
    lab.bind(1, true);
    lab.bind(2, true);
    for (a, v4, v6) in [
        (1, "198.18.1.1", "fd00:5253::1"),
        (2, "198.18.1.2", "fd00:5253::2"),
    ] {
        lab.stack.add_address(a, ip(v4), 15).unwrap();
        lab.stack.add_address(a, ip(v6), 64).unwrap();
        assert_eq!(
            lab.dad_of(a, ip(v4)),
            Some(DadState::Preferred),
            "IPv4 at once"
        );
    }
    lab.wait_preferred(1, ip("fd00:5253::1"));
    lab.wait_preferred(2, ip("fd00:5253::2"));
    assert!(lab.stack.ping(1, ip("198.18.1.2"), WAIT));
    assert!(lab.stack.ping(2, ip("fd00:5253::1"), WAIT));
    let ll2 = IpAddr::V6(lab.stack.link_local_v6(2).unwrap());
    lab.wait_preferred(1, IpAddr::V6(lab.stack.link_local_v6(1).unwrap()));
    lab.wait_preferred(2, ll2);
    assert!(lab.stack.ping(1, ll2, WAIT), "link-local to link-local");
    let n1 = lab.stack.neighbours(1);
    assert!(n1.contains(&(ip("198.18.1.2"), mac(2))), "{n1:?}");
    assert!(n1.contains(&(ll2, mac(2))), "{n1:?}");
    let n2 = lab.stack.neighbours(2);
    assert!(n2.contains(&(ip("198.18.1.1"), mac(1))), "{n2:?}");
    assert!(n2.contains(&(ip("fd00:5253::1"), mac(1))), "{n2:?}");
    assert!(lab.stack.counters(2).echo_requests_answered >= 1);
    assert!(lab.stack.counters(1).echo_requests_answered >= 1);
}

#[test]
fn pings_fail_without_an_answer_a_route_or_a_link() {
    let lab = Lab::new();
    lab.bind(1, true);
    lab.stack.add_address(1, ip("198.18.2.1"), 24).unwrap();
    let t = Instant::now();
    assert!(
        !lab.stack
            .ping(1, ip("198.18.2.9"), Duration::from_millis(300))
    );
    assert!(t.elapsed() >= Duration::from_millis(300));
    // The ARP requests for the absent host went out.
    let arps = lab
        .frames_from(1)
        .iter()
        .filter_map(|f| ethernet::parse(f).and_then(|e| arp::parse(e.payload)))
        .filter(|p| p.op == arp::REQUEST && p.tpa == Ipv4Addr::new(198, 18, 2, 9))
        .count();
    assert_eq!(arps, 1);
    let t = Instant::now();
    assert!(!lab.stack.ping(1, ip("198.19.0.1"), WAIT), "off the /24");
    assert!(
        !lab.stack.ping(1, ip("fd00:5253::9"), WAIT),
        "no IPv6 on the prefix"
    );
    assert!(!lab.stack.ping(7, ip("198.18.2.9"), WAIT), "not bound");
    lab.stack.set_link(1, false);
    assert!(!lab.stack.ping(1, ip("198.18.2.9"), WAIT), "link down");
    assert!(t.elapsed() < Duration::from_secs(1), "all refused at once");
}

/// A UDP datagram as a foreign host at `src_mac` would send it.
fn udp_frame(dst_mac: [u8; 6], src: IpAddr, dst: IpAddr, port: u16) -> Vec<u8> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let u = udp::build(49152, port, b"not for the stack", |len| {
                checksum::pseudo_v4(s, d, ipv4::PROTO_UDP, len)
            });
            ethernet::build(
                dst_mac,
                mac(9),
                ethernet::ETHERTYPE_IPV4,
                &ipv4::build(s, d, ipv4::PROTO_UDP, 1, &u),
            )
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let u = udp::build(49152, port, b"not for the stack", |len| {
                checksum::pseudo_v6(s, d, ipv6::NEXT_UDP, len)
            });
            ethernet::build(
                dst_mac,
                mac(9),
                ethernet::ETHERTYPE_IPV6,
                &ipv6::build(s, d, ipv6::NEXT_UDP, 64, &u),
            )
        }
        _ => unreachable!(),
    }
}

#[test]
fn udp_to_the_stack_gets_port_unreachable_with_the_datagram_quoted() {
    let lab = Lab::new();
    lab.bind(1, false);
    lab.stack.add_address(1, ip("198.18.3.1"), 24).unwrap();
    lab.stack.add_address(1, ip("fd00:5253::31"), 64).unwrap();
    lab.wait_preferred(1, ip("fd00:5253::31"));
    // The sender's MAC is known from its (answered) resolution traffic
    // in real life; here the error is held until the stack resolves it,
    // so teach it first with an ARP request and an NS to the stack.
    let arp_request = arp::Packet {
        op: arp::REQUEST,
        sha: mac(9),
        spa: Ipv4Addr::new(198, 18, 3, 9),
        tha: [0; 6],
        tpa: Ipv4Addr::new(198, 18, 3, 1),
    };
    lab.stack.receive(
        1,
        &ethernet::build(
            ethernet::BROADCAST,
            mac(9),
            ethernet::ETHERTYPE_ARP,
            &arp_request.to_bytes(),
        ),
    );
    let peer6: Ipv6Addr = "fd00:5253::39".parse().unwrap();
    let target: Ipv6Addr = "fd00:5253::31".parse().unwrap();
    let group = ipv6::solicited_node(target);
    let ns = ipv6::neighbor_solicit(peer6, group, target, mac(9));
    let ns = ipv6::build(peer6, group, ipv6::NEXT_ICMPV6, ipv6::ND_HOP_LIMIT, &ns);
    lab.stack.receive(
        1,
        &ethernet::build(
            ethernet::ipv6_multicast_mac(group),
            mac(9),
            ethernet::ETHERTYPE_IPV6,
            &ns,
        ),
    );
    lab.stack.receive(
        1,
        &udp_frame(mac(1), ip("198.18.3.9"), ip("198.18.3.1"), 4791),
    );
    lab.stack.receive(
        1,
        &udp_frame(mac(1), IpAddr::V6(peer6), IpAddr::V6(target), 4791),
    );
    // Not answered: broadcast, another host's address, a multicast source.
    lab.stack.receive(
        1,
        &udp_frame(
            ethernet::BROADCAST,
            ip("198.18.3.9"),
            ip("255.255.255.255"),
            4791,
        ),
    );
    lab.stack.receive(
        1,
        &udp_frame(mac(1), ip("198.18.3.9"), ip("198.18.3.2"), 4791),
    );
    lab.stack.receive(
        1,
        &udp_frame(mac(1), ip("224.0.0.9"), ip("198.18.3.1"), 4791),
    );
    assert!(lab.stack.settle(WAIT));
    Lab::wait_for("two port unreachables", || {
        lab.stack.counters(1).port_unreachable_sent == 2
    });
    assert!(lab.stack.settle(WAIT));
    assert_eq!(lab.stack.counters(1).port_unreachable_sent, 2);
    let mut seen = (false, false);
    for f in lab.frames_from(1) {
        let e = ethernet::parse(&f).unwrap();
        if e.ethertype == ethernet::ETHERTYPE_IPV4 {
            let d = ipv4::parse(e.payload).unwrap();
            let (kind, code, _, body) = ipv4::parse_icmp(d.payload).unwrap();
            assert_eq!((kind, code, e.dst), (3, 3, mac(9)));
            let quoted = ipv4::parse(body).unwrap_err(); // header + 8 bytes: total length beyond
            assert_eq!(quoted, ipv4::Refused::Malformed);
            assert_eq!(
                &body[22..24],
                &4791u16.to_be_bytes(),
                "the quoted UDP destination port"
            );
            seen.0 = true;
        } else if e.ethertype == ethernet::ETHERTYPE_IPV6 {
            let d = ipv6::parse(e.payload).unwrap();
            let (kind, code, _, body) = ipv6::parse_icmp(&d).unwrap();
            if kind == ipv6::ICMP_UNREACHABLE {
                assert_eq!((code, d.dst, e.dst), (4, peer6, mac(9)));
                let quoted = ipv6::parse(body).unwrap();
                assert_eq!(quoted.dst, target);
                seen.1 = true;
            }
        }
    }
    assert_eq!(seen, (true, true));
}

#[test]
fn observers_see_adds_dad_link_changes_and_deletes_in_order() {
    use ChangeKind::{Added, Deleted, Parameter};
    use DadState::{Preferred, Tentative};
    let lab = Lab::new();
    let seen: Arc<Mutex<Vec<(ChangeKind, IpAddr, DadState)>>> = Arc::default();
    let log = Arc::clone(&seen);
    lab.stack.subscribe(Box::new(move |c: &AddressChange| {
        log.lock()
            .unwrap()
            .push((c.kind, c.row.address.ip, c.row.address.dad));
    }));
    lab.bind(1, true);
    let ll = IpAddr::V6(lab.stack.link_local_v6(1).unwrap());
    lab.stack.add_address(1, ip("198.18.4.1"), 24).unwrap();
    lab.stack.add_address(1, ip("fd00:5253::41"), 64).unwrap();
    lab.wait_preferred(1, ip("fd00:5253::41"));
    lab.wait_preferred(1, ll);
    lab.stack.set_link(1, false);
    lab.stack.set_link(1, true);
    lab.wait_preferred(1, ip("fd00:5253::41"));
    lab.wait_preferred(1, ll);
    lab.stack.remove_address(1, ip("198.18.4.1")).unwrap();
    assert!(lab.stack.remove_address(1, ip("198.18.4.1")).is_err());
    lab.stack.unbind(1);
    let log = seen.lock().unwrap().clone();
    let of = |a: IpAddr| -> Vec<(ChangeKind, DadState)> {
        log.iter()
            .filter(|(_, x, _)| *x == a)
            .map(|(k, _, d)| (*k, *d))
            .collect()
    };
    assert_eq!(
        of(ip("198.18.4.1")),
        vec![
            (Added, Preferred),
            (Parameter, Tentative),
            (Parameter, Preferred),
            (Deleted, Preferred)
        ]
    );
    let v6 = vec![
        (Added, Tentative),
        (Parameter, Preferred),
        (Parameter, Tentative),
        (Parameter, Preferred),
        (Deleted, Preferred),
    ];
    assert_eq!(of(ip("fd00:5253::41")), v6);
    assert_eq!(of(ll), v6);
    assert!(lab.stack.rows_of(1).is_empty());
}

#[test]
fn a_duplicate_ipv6_address_is_detected_and_never_preferred() {
    let lab = Lab::new();
    lab.bind(1, true);
    lab.bind(2, true);
    lab.stack.add_address(1, ip("fd00:5253::51"), 64).unwrap();
    lab.wait_preferred(1, ip("fd00:5253::51"));
    lab.stack.add_address(2, ip("fd00:5253::51"), 64).unwrap();
    Lab::wait_for("the duplicate", || {
        lab.dad_of(2, ip("fd00:5253::51")) == Some(DadState::Duplicate)
    });
    std::thread::sleep(DAD_WAIT * 3);
    assert_eq!(
        lab.dad_of(2, ip("fd00:5253::51")),
        Some(DadState::Duplicate)
    );
    assert_eq!(
        lab.dad_of(1, ip("fd00:5253::51")),
        Some(DadState::Preferred)
    );
}

#[test]
fn bad_addresses_and_unknown_adapters_are_errors() {
    let lab = Lab::new();
    lab.bind(1, false);
    assert!(lab.stack.add_address(1, ip("224.0.0.1"), 24).is_err());
    assert!(lab.stack.add_address(1, ip("198.18.0.1"), 40).is_err());
    assert!(lab.stack.add_address(3, ip("198.18.0.1"), 24).is_err());
    lab.stack.add_address(1, ip("198.18.0.1"), 24).unwrap();
    assert!(lab.stack.add_address(1, ip("198.18.0.1"), 24).is_err());
    assert!(lab.stack.bind(info(1), true).is_err());
    assert!(lab.stack.remove_address(3, ip("198.18.0.1")).is_err());
}

/// Writes `frames` as a pcap file (LINKTYPE_ETHERNET).
fn write_pcap(path: &std::path::Path, frames: &[Vec<u8>]) {
    let mut f = std::fs::File::create(path).unwrap();
    let mut header = Vec::new();
    header.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&[0; 8]);
    header.extend_from_slice(&65535u32.to_le_bytes());
    header.extend_from_slice(&1u32.to_le_bytes());
    f.write_all(&header).unwrap();
    for (i, frame) in frames.iter().enumerate() {
        let mut r = Vec::new();
        r.extend_from_slice(&1u32.to_le_bytes());
        r.extend_from_slice(&(i as u32).to_le_bytes());
        r.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        r.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        r.extend_from_slice(frame);
        f.write_all(&r).unwrap();
    }
}

#[test]
fn tshark_finds_nothing_malformed_in_what_the_stack_sends() {
    let lab = Lab::new();
    lab.bind(1, true);
    lab.bind(2, true);
    lab.stack.add_address(1, ip("198.18.6.1"), 24).unwrap();
    lab.stack.add_address(2, ip("198.18.6.2"), 24).unwrap();
    lab.stack.add_address(1, ip("fd00:5253::61"), 64).unwrap();
    lab.stack.add_address(2, ip("fd00:5253::62"), 64).unwrap();
    lab.wait_preferred(1, ip("fd00:5253::61"));
    lab.wait_preferred(2, ip("fd00:5253::62"));
    assert!(lab.stack.ping(1, ip("198.18.6.2"), WAIT));
    assert!(lab.stack.ping(1, ip("fd00:5253::62"), WAIT));
    lab.stack.receive(
        2,
        &udp_frame(mac(2), ip("198.18.6.1"), ip("198.18.6.2"), 4791),
    );
    lab.stack.receive(
        2,
        &udp_frame(mac(2), ip("fd00:5253::61"), ip("fd00:5253::62"), 4791),
    );
    Lab::wait_for("the port unreachables", || {
        lab.stack.counters(2).port_unreachable_sent == 2
    });
    assert!(lab.stack.settle(WAIT));
    let frames: Vec<Vec<u8>> = lab
        .hub
        .frames
        .lock()
        .unwrap()
        .iter()
        .map(|(_, f)| f.clone())
        .collect();
    let path = std::env::temp_dir().join(format!("kbottle-tcpip-{}.pcap", std::process::id()));
    write_pcap(&path, &frames);
    let out = std::process::Command::new("tshark")
        .args(["-r", path.to_str().unwrap()])
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ])
        .args([
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "_ws.col.Protocol",
            "-e",
            "_ws.col.Info",
        ])
        .args(["-e", "_ws.expert.severity", "-e", "_ws.malformed"])
        .output()
        .expect(
            "tshark is not installed: install it (e.g. `apt-get install tshark`) to run this test",
        );
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), frames.len(), "{text}");
    let protocols: Vec<&str> = lines.iter().filter_map(|l| l.split('\t').nth(1)).collect();
    for p in ["ARP", "ICMP", "ICMPv6"] {
        assert!(protocols.contains(&p), "no {p} in {text}");
    }
    for l in &lines {
        let fields: Vec<&str> = l.split('\t').collect();
        // Expert severities: 6291456 (0x00600000) is "warning", which a
        // bad checksum gets, 8388608 (0x00800000) "error".
        let severity = fields.get(3).copied().unwrap_or("");
        let malformed = fields.get(4).copied().unwrap_or("");
        assert!(malformed.is_empty(), "malformed: {l}");
        assert!(
            !severity
                .split(',')
                .any(|s| s == "6291456" || s == "8388608"),
            "an expert warning or error: {l}"
        );
    }
}

#[test]
fn pings_work_again_after_link_down_up_and_an_address_removed_and_re_added() {
    let lab = Lab::new();
    lab.bind(1, true);
    lab.bind(2, true);
    lab.stack.add_address(1, ip("198.18.7.1"), 24).unwrap();
    lab.stack.add_address(2, ip("198.18.7.2"), 24).unwrap();
    lab.stack.add_address(1, ip("fd00:5253::71"), 64).unwrap();
    lab.stack.add_address(2, ip("fd00:5253::72"), 64).unwrap();
    lab.wait_preferred(2, ip("fd00:5253::72"));
    lab.wait_preferred(1, ip("fd00:5253::71"));
    assert!(lab.stack.ping(1, ip("198.18.7.2"), WAIT));
    lab.stack.set_link(2, false);
    assert!(lab.stack.neighbours(2).is_empty(), "flushed with the link");
    assert_eq!(lab.dad_of(2, ip("198.18.7.2")), Some(DadState::Tentative));
    assert!(
        !lab.stack
            .ping(1, ip("198.18.7.2"), Duration::from_millis(300))
    );
    lab.stack.set_link(2, true);
    lab.wait_preferred(2, ip("fd00:5253::72"));
    assert!(lab.stack.ping(1, ip("198.18.7.2"), WAIT));
    assert!(lab.stack.ping(1, ip("fd00:5253::72"), WAIT));
    lab.stack.remove_address(2, ip("fd00:5253::72")).unwrap();
    assert!(
        !lab.stack
            .ping(1, ip("fd00:5253::72"), Duration::from_millis(300))
    );
    lab.stack.add_address(2, ip("fd00:5253::72"), 64).unwrap();
    lab.wait_preferred(2, ip("fd00:5253::72"));
    assert!(lab.stack.ping(1, ip("fd00:5253::72"), WAIT));
}

#[test]
fn the_receive_filter_joins_each_solicited_node_group_before_its_dad() {
    let lab = Lab::new();
    lab.bind(1, true);
    lab.stack.add_address(1, ip("198.18.8.1"), 24).unwrap();
    lab.stack.add_address(1, ip("fd00:5253::8:1"), 64).unwrap();
    lab.wait_preferred(1, ip("fd00:5253::8:1"));
    lab.stack.remove_address(1, ip("fd00:5253::8:1")).unwrap();
    assert!(lab.stack.settle(WAIT));
    let filters = lab.hub.filters.lock().unwrap().clone();
    let all_nodes = [0x33, 0x33, 0, 0, 0, 1];
    let all_hosts = [0x01, 0x00, 0x5e, 0, 0, 1];
    let ll_group = [0x33, 0x33, 0xff, 0x00, 0x00, 0x01];
    let ula_group = [0x33, 0x33, 0xff, 0x08, 0x00, 0x01];
    let lists: Vec<Vec<[u8; 6]>> = filters
        .iter()
        .map(|(_, f, _)| f.multicast.clone())
        .collect();
    assert_eq!(
        lists,
        [
            vec![all_hosts, all_nodes, ll_group],
            vec![all_hosts, all_nodes, ll_group, ula_group],
            vec![all_hosts, all_nodes, ll_group],
        ],
        "bound, the ULA added (the IPv4 one changes no group), the ULA removed"
    );
    assert!(
        filters
            .iter()
            .all(|(a, f, _)| *a == 1 && f.packet_filter == 0xB)
    );
    // Each join precedes the DAD solicitation of its address.
    let frames = lab.frames_from(1);
    let dad_of = |target: &str| {
        let target: Ipv6Addr = target.parse().unwrap();
        frames
            .iter()
            .position(|f| {
                let e = ethernet::parse(f).unwrap();
                e.ethertype == ethernet::ETHERTYPE_IPV6
                    && ipv6::parse(e.payload).is_some_and(|d| {
                        d.src.is_unspecified() && d.dst == ipv6::solicited_node(target)
                    })
            })
            .unwrap()
    };
    assert!(filters[0].2 <= dad_of("fe80::52:53ff:fe00:1"));
    assert!(filters[1].2 <= dad_of("fd00:5253::8:1"));
}

//! What the UDP transport puts on the wire, and the path it uses: two
//! adapters over RoCEv2/UDP with per-peer sockets on and off, IPv4 and
//! IPv6; every RoCEv2 packet they exchange captured (tcpdump on the
//! loopback of a namespace of the test's own) and its ICRC checked by a
//! computation written here (crc32fast over the masked pseudo-header, not
//! softrnic's), against the real IPv4 identification; connections over a
//! 1500-byte path with `pmtu=4096` configured; a datagram the path cannot
//! carry failing its work request.
//!
//! A test that needs a namespace runs its body in a child copy of this
//! test binary started under `unshare --net` (its own loopback, IPv6
//! addresses, MTU and capture, gone with the child); it fails, saying
//! what is missing, where `unshare`, `ip` or `tcpdump` is not there.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ndkpi::*;
use testkit::adapter::*;

use crate::rnic_util::*;

/// Set in the child that runs a test's body inside its namespace.
const IN_NETNS: &str = "RSNDK_UDP_WIRE_IN_NETNS";

/// Runs `body` in a new network namespace: this test's own copy of the
/// binary, under `unshare --net`, with loopback up and `setup` (`ip`
/// argument lists) done first. In the parent: starts the child and fails
/// unless it passes.
fn in_own_netns(test: &str, setup: &[&[&str]], body: impl FnOnce()) {
    if std::env::var_os(IN_NETNS).is_some() {
        ip(&["link", "set", "lo", "up"]);
        for args in setup {
            ip(args);
        }
        body();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new("unshare")
        .args(["--net", "--"])
        .arg(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(IN_NETNS, "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run unshare (util-linux) for a namespace: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} in its namespace: {}\n{stdout}\n{stderr}",
        out.status
    );
    print!("{stdout}");
}

/// Runs `ip ARGS` (iproute2), failing the test if it fails.
fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run ip (iproute2): {e}"));
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// IPv6 addresses on the namespace's loopback (no duplicate detection).
const V6_SETUP: &[&[&str]] = &[
    &["-6", "addr", "add", "fd00:77::1/128", "dev", "lo", "nodad"],
    &["-6", "addr", "add", "fd00:77::2/128", "dev", "lo", "nodad"],
    &["-6", "addr", "add", "fd00:77::3/128", "dev", "lo", "nodad"],
    &["-6", "addr", "add", "fd00:77::4/128", "dev", "lo", "nodad"],
];

/// Node `node` of test `test` on 127.0.70.x (only this module uses it).
fn v4(test: u8, node: u8) -> String {
    format!("udp:127.0.70.{}", 10 * test + node)
}

/// As [`v4`], with per-peer sockets.
fn v4_peer_sockets(test: u8, node: u8) -> String {
    format!("udp:127.0.70.{},peer_sockets=on", 10 * test + node)
}

/// Nodes 1 and 2 on fd00:77::1 and ::2 (inside a namespace).
fn v6(_test: u8, node: u8) -> String {
    format!("udp:[fd00:77::{node}]")
}

/// Nodes 1 and 2 on fd00:77::3 and ::4, with per-peer sockets.
fn v6_peer_sockets(_test: u8, node: u8) -> String {
    format!("udp:[fd00:77::{}],peer_sockets=on", node + 2)
}

#[test]
fn ipv4_with_peer_sockets_on() {
    send_receive_sizes(v4_peer_sockets, 1);
    write_read_and_out_of_bounds(v4_peer_sockets, 2);
}

#[test]
fn ipv6_with_peer_sockets_off_and_on() {
    in_own_netns(
        "udp_wire::ipv6_with_peer_sockets_off_and_on",
        V6_SETUP,
        || {
            send_receive_sizes(v6, 1);
            write_read_and_out_of_bounds(v6_peer_sockets, 2);
        },
    );
}

// ------------------------------------------------------------- the capture

/// tcpdump writing what crosses the namespace's loopback to UDP port 4791.
struct Tcpdump {
    child: Child,
    file: PathBuf,
}

impl Tcpdump {
    fn start(file: &Path) -> Self {
        let child = Command::new("tcpdump")
            .args(["-i", "lo", "-U", "-s", "0", "-w"])
            .arg(file)
            .args(["udp", "port", "4791"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run tcpdump: {e}"));
        // tcpdump says "listening on lo" once it captures.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !file.exists() {
            assert!(Instant::now() < deadline, "tcpdump never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        Self {
            child,
            file: file.to_owned(),
        }
    }

    /// Stops it (SIGINT: it writes what it holds) and returns the file.
    fn stop(mut self) -> Vec<u8> {
        std::thread::sleep(Duration::from_millis(300));
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let _ = self.child.wait();
        std::fs::read(&self.file).expect("the capture file")
    }
}

/// The Ethernet payloads (IP datagrams) of a pcap file of link type
/// Ethernet (tcpdump on `lo`), outgoing and incoming copies alike.
fn pcap_datagrams(pcap: &[u8]) -> Vec<Vec<u8>> {
    assert!(pcap.len() >= 24, "a pcap header");
    let le = match pcap[..4] {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => panic!("not a pcap file"),
    };
    let u32_at = |b: &[u8]| {
        let b = [b[0], b[1], b[2], b[3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    assert_eq!(u32_at(&pcap[20..24]), 1, "Ethernet link type");
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= pcap.len() {
        let caplen = u32_at(&pcap[at + 8..at + 12]) as usize;
        let frame = &pcap[at + 16..(at + 16 + caplen).min(pcap.len())];
        at += 16 + caplen;
        if frame.len() > 14 {
            out.push(frame[14..].to_vec());
        }
    }
    out
}

/// The ICRC of a RoCEv2 datagram, as IBTA Annex A17 defines it, computed
/// here: CRC-32 of eight 0xFF bytes, the IP header with its variant fields
/// all-ones (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow label, hop
/// limit), the UDP header with its checksum all-ones, the BTH with byte 4
/// all-ones, and the rest up to the ICRC.
fn independent_icrc(datagram: &[u8], ip_len: usize) -> u32 {
    let mut masked = datagram[..datagram.len() - 4].to_vec();
    if ip_len == 20 {
        masked[1] = 0xFF;
        masked[8] = 0xFF;
        masked[10] = 0xFF;
        masked[11] = 0xFF;
    } else {
        masked[0] |= 0x0F;
        masked[1] = 0xFF;
        masked[2] = 0xFF;
        masked[3] = 0xFF;
        masked[7] = 0xFF;
    }
    masked[ip_len + 6] = 0xFF;
    masked[ip_len + 7] = 0xFF;
    masked[ip_len + 8 + 4] = 0xFF;
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xFF; 8]);
    h.update(&masked);
    h.finalize()
}

/// The ICRC a datagram carries (least significant byte first on the wire).
fn carried_icrc(datagram: &[u8]) -> u32 {
    let t = &datagram[datagram.len() - 4..];
    u32::from_le_bytes([t[0], t[1], t[2], t[3]])
}

/// Bytes from the BTH to the payload for a BTH opcode (RC only, as the
/// transport sends), or `None` for one it does not.
fn rc_header_len(opcode: u8) -> Option<usize> {
    Some(
        12 + match opcode {
            // SEND first..only with immediate, READ response middle, WRITE
            // middle, last, last with immediate.
            0x00..=0x05 | 0x07..=0x09 | 0x0E => 0,
            // WRITE first, WRITE only, READ request: RETH.
            0x06 | 0x0A | 0x0C => 16,
            // WRITE only with immediate: RETH and ImmDt.
            0x0B => 20,
            // READ response first, last, only, ACK: AETH; SEND last or
            // only with invalidate: IETH.
            0x0D | 0x0F | 0x10 | 0x11 | 0x16 | 0x17 => 4,
            // UD SEND only (QP1's MADs): DETH.
            0x64 => 8,
            _ => return None,
        },
    )
}

/// What the check of one capture found.
#[derive(Debug, Default)]
struct Checked {
    ipv4: usize,
    ipv6: usize,
    idents: std::collections::BTreeSet<u16>,
    zero_idents: usize,
}

/// Checks every RoCEv2 packet of the captured datagrams: its ICRC is the
/// independent computation's over its real header. An IPv6 datagram the
/// sender handed the kernel as one segmentation-offload batch (captured
/// before segmentation on loopback) is checked segment by segment, each
/// with the headers the segmentation gives it: its segments are all the
/// size of the first (whose PMTU-sized payload makes its length one of
/// five) but the last.
fn check_capture(datagrams: &[Vec<u8>]) -> Checked {
    let mut c = Checked::default();
    for d in datagrams {
        match d[0] >> 4 {
            4 => {
                let total = usize::from(u16::from_be_bytes([d[2], d[3]]));
                let d = &d[..total];
                assert_eq!(d[0] & 0x0F, 5, "no IPv4 options");
                assert_eq!(d[6] & 0x40, 0x40, "DF set");
                assert_eq!(
                    carried_icrc(d),
                    independent_icrc(d, 20),
                    "IPv4 packet ident {:#06x}, {} bytes: {:02x?}",
                    u16::from_be_bytes([d[4], d[5]]),
                    d.len(),
                    &d[..40.min(d.len())]
                );
                let ident = u16::from_be_bytes([d[4], d[5]]);
                c.idents.insert(ident);
                c.zero_idents += usize::from(ident == 0);
                c.ipv4 += 1;
            }
            6 => {
                let payload = &d[48..];
                c.ipv6 += check_ipv6_batch(&d[..48], payload);
            }
            v => panic!("IP version {v} on the wire"),
        }
    }
    c
}

/// Checks the UDP payload `payload` sent with the IPv6 and UDP headers
/// `head` (possibly a segmentation batch); how many packets it held.
fn check_ipv6_batch(head: &[u8], payload: &[u8]) -> usize {
    let datagram = |segment: &[u8]| {
        let mut d = head.to_vec();
        let udp_len = u16::try_from(8 + segment.len()).unwrap().to_be_bytes();
        d[4..6].copy_from_slice(&udp_len);
        d[44..46].copy_from_slice(&udp_len);
        d.extend_from_slice(segment);
        d
    };
    let whole = datagram(payload);
    if carried_icrc(&whole) == independent_icrc(&whole, 40) {
        return 1;
    }
    let header = rc_header_len(payload[0])
        .unwrap_or_else(|| panic!("IPv6 batch of unknown opcode {:#04x}", payload[0]));
    let size = [256usize, 512, 1024, 2048, 4096, 0]
        .into_iter()
        .map(|pmtu| header + pmtu + 4)
        .find(|&size| {
            size < payload.len() && {
                let d = datagram(&payload[..size]);
                carried_icrc(&d) == independent_icrc(&d, 40)
            }
        })
        .unwrap_or_else(|| {
            panic!(
                "an IPv6 datagram of {} payload bytes whose ICRC checks neither whole nor as segments",
                payload.len()
            )
        });
    let mut n = 0;
    for segment in payload.chunks(size) {
        let d = datagram(segment);
        assert_eq!(
            carried_icrc(&d),
            independent_icrc(&d, 40),
            "IPv6 segment {n} of a {size}-byte batch"
        );
        n += 1;
    }
    n
}

#[test]
fn what_leaves_carries_an_icrc_right_for_its_real_header() {
    in_own_netns(
        "udp_wire::what_leaves_carries_an_icrc_right_for_its_real_header",
        V6_SETUP,
        || {
            let dir = std::env::temp_dir().join(format!("rsndk-udp-wire-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("lo.pcap");
            let tcpdump = Tcpdump::start(&file);
            // IPv4 with and without per-peer sockets (the kernel would
            // choose identifications for a connected UDP socket), IPv6
            // with and without (segmentation batches, corrected ports).
            write_read_and_out_of_bounds(v4, 3);
            write_read_and_out_of_bounds(v4_peer_sockets, 4);
            send_receive_sizes(v6, 5);
            send_receive_sizes(v6_peer_sockets, 6);
            let pcap = tcpdump.stop();
            let _ = std::fs::remove_dir_all(&dir);
            let checked = check_capture(&pcap_datagrams(&pcap));
            println!(
                "checked {} IPv4 and {} IPv6 RoCEv2 packets; {} distinct IPv4 identifications",
                checked.ipv4,
                checked.ipv6,
                checked.idents.len()
            );
            assert!(checked.ipv4 > 100, "IPv4 packets captured: {checked:?}");
            assert!(
                checked.ipv6 > 100,
                "IPv6 packets captured: {}",
                checked.ipv6
            );
            assert_eq!(checked.zero_idents, 0, "no IPv4 identification 0");
            assert!(
                checked.idents.len() > 50,
                "identifications change packet to packet: {}",
                checked.idents.len()
            );
        },
    );
}

// ------------------------------------------------------------ the path MTU

/// Nodes of the MTU tests, with `pmtu=4096` configured.
fn v4_jumbo(test: u8, node: u8) -> String {
    format!("udp:127.0.70.{},pmtu=4096", 10 * test + node)
}

/// IPv6 nodes fd00:77::1 and ::2 with `pmtu=4096` configured.
fn v6_jumbo(_test: u8, node: u8) -> String {
    format!("udp:[fd00:77::{node}],pmtu=4096")
}

/// Over a 1500-byte path, adapters configured for 4096 connect at 1024
/// (the largest whose datagrams fit) and carry 1 MiB both ways; at 4096
/// every full packet would be refused by the kernel (EMSGSIZE).
#[test]
fn connections_fit_the_path_mtu_not_the_configured_one() {
    let mut setup = V6_SETUP.to_vec();
    setup.push(&["link", "set", "lo", "mtu", "1500"][..]);
    in_own_netns(
        "udp_wire::connections_fit_the_path_mtu_not_the_configured_one",
        &setup,
        || {
            send_receive_sizes(v4_jumbo, 7);
            write_read_and_out_of_bounds(v6_jumbo, 8);
        },
    );
}

/// A datagram the path cannot carry fails its work request at once (with
/// the status of a QP that could not carry it), never a silent drop
/// retransmitted until the retries run out: connected over loopback at
/// 4096, then the link's MTU drops to 1500 under the connection.
#[test]
fn a_datagram_too_big_for_the_path_fails_its_work_request() {
    in_own_netns(
        "udp_wire::a_datagram_too_big_for_the_path_fails_its_work_request",
        &[],
        || {
            let c = Conn::open(v4_jumbo, 9, 8, 4);
            ip(&["link", "set", "lo", "mtu", "1500"]);
            let len = 64 * 1024;
            let mut sbuf = pattern(len, 5);
            let mut rbuf = vec![0u8; len];
            let rs = Region::of(c.a.pd, &mut sbuf, 0);
            let rr = Region::of(c.b.pd, &mut rbuf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
            c.b.receive(1, &[rr.sge(0, len)]);
            let started = Instant::now();
            assert_eq!(send(c.a.qp, 2, &[rs.sge(0, len)], 0), STATUS_SUCCESS);
            let r = wait_results(c.a.cq, 1);
            let took = started.elapsed();
            println!("the SEND failed with {:#x} after {took:?}", r[0].Status);
            assert_eq!(
                (r[0].Status, r[0].RequestContext as usize),
                (STATUS_INTERNAL_ERROR, 2),
                "the work request fails as its QP could not carry it"
            );
            assert!(
                took < Duration::from_secs(2),
                "failed at once, not after retries: {took:?}"
            );
            rr.release();
            rs.release();
            c.close();
        },
    );
}

/// Set in the child that runs without `CAP_NET_RAW`.
const WITHOUT_NET_RAW: &str = "RSNDK_UDP_WIRE_WITHOUT_NET_RAW";

/// An IPv4 UDP adapter in a process without `CAP_NET_RAW` (this test's
/// own copy, started by `setpriv` with the capability out of its bounding
/// set) is refused with `STATUS_ACCESS_DENIED` and a message saying what
/// is missing: never opened on a UDP socket whose kernel would choose the
/// IPv4 identifications its ICRCs cover.
#[test]
fn an_ipv4_adapter_without_cap_net_raw_is_refused_saying_why() {
    const NAME: &str = "udp_wire::an_ipv4_adapter_without_cap_net_raw_is_refused_saying_why";
    if std::env::var_os(WITHOUT_NET_RAW).is_some() {
        let config = std::ffi::CString::new(v4(9, 5)).unwrap();
        let mut adapter = std::ptr::null_mut();
        // SAFETY: a valid C string and out-pointer.
        let status = unsafe { rsndk::RsNdkOpenAdapter(config.as_ptr(), &raw mut adapter) };
        assert_eq!(status, STATUS_ACCESS_DENIED);
        assert!(adapter.is_null(), "nothing written");
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new("setpriv")
        .args(["--bounding-set", "-net_raw", "--"])
        .arg(exe)
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(WITHOUT_NET_RAW, "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run setpriv (util-linux): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "without CAP_NET_RAW: {}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("CAP_NET_RAW") || stdout.contains("CAP_NET_RAW"),
        "the message names what is missing:\n{stdout}\n{stderr}"
    );
}

/// The namespaces' addresses are what the tests think they are.
#[test]
fn configurations_name_their_addresses() {
    assert_eq!(ip_of(&v6(1, 2)), "fd00:77::2".parse::<IpAddr>().unwrap());
    assert_eq!(
        ip_of(&v6_peer_sockets(1, 1)),
        "fd00:77::3".parse::<IpAddr>().unwrap()
    );
}

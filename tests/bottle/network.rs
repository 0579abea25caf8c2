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
use std::net::{Ipv4Addr, SocketAddr};

use kbottle::machine::AdapterId;
use kbottle::segment::SegmentId;

use crate::common::{self, child_passes, is_child, machine};
use crate::conn::{self, Connection};
use testkit::adapter::{tshark, wait_until};

/// RDMA transfer size.
const BIG: usize = 1 << 20;
/// SEND size: more than one 4 KiB packet, not a multiple of it.
const SEND_LEN: usize = 4096 + 1000;
/// RoCEv2 frames 1 MiB takes at the default path MTU (1024).
const BIG_FRAMES: u64 = (BIG / 1024) as u64;

// ---------------------------------------------------------------- adapters

/// One open NDK adapter of a bottled V and its IPv4 address.
#[derive(Debug)]
struct Nic {
    ndk: conn::Nic<'static>,
    ip: Ipv4Addr,
    id: AdapterId,
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
        Self {
            ndk: conn::Nic::open(machine(), id),
            ip,
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

    /// The NIC's `NdisSendNetBufferLists` calls and the lists they carried.
    fn send_calls(&self) -> (u64, u64) {
        machine().nic_send_calls(self.id).expect("a NIC below V")
    }

    /// Closes the NDK adapter and halts V (the driver unbinds from the NIC).
    fn close(self) {
        self.ndk.close();
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

/// Connects a new QP of `from` to a new QP of `to` and moves data: a SEND
/// each way, then a 1 MiB RDMA WRITE and a 1 MiB RDMA READ by `from` into
/// and from `to`'s memory, each checked byte for byte.
fn exchange(from: &Nic, to: &Nic) {
    let at = SocketAddr::new(to.ip.into(), conn::fresh_port());
    let c = Connection::establish(&from.ndk, Some(from.ip.into()), &to.ndk, at);
    c.sends(SEND_LEN);
    c.rdma_write(BIG);
    c.rdma_read(BIG);
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
/// failure). The RNIC's frames go down in batches: a side that sends the
/// 1 MiB's frames makes several times fewer `NdisSendNetBufferLists`
/// calls than it sends lists, in order (it resends next to nothing).
#[test]
fn two_bottled_adapters_exchange_rocev2() {
    let x = Nic::bottled();
    let y = Nic::bottled();
    let (x0, y0) = (x.counters(), y.counters());
    let (xc0, yc0) = (x.send_calls(), y.send_calls());
    exchange(&x, &y);
    let (dx, dy) = (x.counters().since(x0), y.counters().since(y0));
    for (what, nic, (calls0, lists0)) in [("x", &x, xc0), ("y", &y, yc0)] {
        let (calls, lists) = nic.send_calls();
        let (calls, lists) = (calls - calls0, lists - lists0);
        eprintln!(
            "{what}: {lists} lists in {calls} NdisSendNetBufferLists calls ({:.1} a call)",
            f64::from(u32::try_from(lists).unwrap_or(u32::MAX))
                / f64::from(u32::try_from(calls.max(1)).unwrap_or(u32::MAX))
        );
        assert!(
            lists >= BIG_FRAMES && lists >= 4 * calls,
            "{what}'s RNIC sent {lists} lists in {calls} calls: not in batches"
        );
        // The segment loses nothing, so nearly nothing is sent twice: two
        // batches that passed each other would reorder a QP's packets,
        // which the peer takes as loss (go-back-N resends hundreds).
        assert!(
            lists <= BIG_FRAMES + BIG_FRAMES / 8,
            "{what}'s RNIC sent {lists} lists for {BIG_FRAMES} frames of data: resends"
        );
    }
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

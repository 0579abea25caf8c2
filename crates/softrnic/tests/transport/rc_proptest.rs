//! Hostile input: `receive` of arbitrary bytes, of captured valid packets
//! with a flipped byte, and of well-formed packets (valid ICRC) with random
//! opcodes, PSNs, keys, addresses and lengths never panics and never makes
//! the device touch host memory outside registered ranges.

use crate::common;

use std::sync::{Arc, Mutex};

use common::*;
use hwq::wqe::{Access, SendOpcode};
use links::{Capture, Direction, Faults};
use proptest::prelude::*;
use softrnic::wire::{
    Aeth, Bth, ExtHeaders, HeaderSet, Headers, Ipv4UdpFields, Opcode, PSN_MASK, Reth, Syndrome,
    build,
};

const REMOTE: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

#[derive(Default)]
struct Tap(Mutex<Vec<Vec<u8>>>);
struct TapRef(Arc<Tap>);
impl Capture for TapRef {
    fn capture(&self, _: Direction, datagram: &[u8]) {
        self.0.0.lock().unwrap().push(datagram.to_vec());
    }
}

struct Bench {
    w: World,
    qa: Qp,
    qb: Qp,
    /// Registered ranges (logical address, length) per side.
    a_ranges: Vec<(u64, u64)>,
    a_buf: Buf,
    b_ranges: Vec<(u64, u64)>,
    remote: Buf,
}

fn bench() -> Bench {
    let w = World::new(
        Faults {
            delay_us: 3,
            ..Faults::default()
        },
        4096,
        1 << 20,
    );
    let qa = w.a.qp(16);
    let mut qb = w.b.qp(16);
    w.connect(&qa, &qb, 256, 1000, 5000, 4);
    let local = w.a.register(16 * 1024, Access::LOCAL_WRITE);
    let remote = w.b.register(16 * 1024, REMOTE);
    let recv = w.b.register(8 * 1024, Access::LOCAL_WRITE);
    for i in 0..4 {
        w.b.post_recv(&mut qb, i, &[recv.sge(i * 2048, 2048)]);
    }
    *w.a.mem.log.lock().unwrap() = Some(Vec::new());
    *w.b.mem.log.lock().unwrap() = Some(Vec::new());
    let a_ranges = vec![(local.logical, local.len)];
    let b_ranges = vec![(remote.logical, remote.len), (recv.logical, recv.len)];
    Bench {
        w,
        qa,
        qb,
        a_ranges,
        a_buf: local,
        b_ranges,
        remote,
    }
}

fn check_ranges(node: &Node, ranges: &[(u64, u64)]) {
    for &(_, addr, len) in node.mem.log.lock().unwrap().as_ref().unwrap() {
        let inside = ranges
            .iter()
            .any(|&(a, l)| addr >= a && addr + len as u64 <= a + l);
        assert!(inside, "DMA at {addr:#x}+{len} outside registered memory");
    }
}

/// Valid packets of a small exchange (SEND, WRITE, READ, ACKs, responses).
fn captured() -> &'static [Vec<u8>] {
    static PACKETS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    PACKETS.get_or_init(|| {
        let mut b = bench();
        let tap = Arc::new(Tap::default());
        b.w.a.set_capture(Some(Box::new(TapRef(tap.clone()))));
        let local = b.w.a.register(8192, Access::LOCAL_WRITE);
        b.w.a
            .post_send(&mut b.qa, wqe(SendOpcode::Send, 1, &[local.sge(0, 600)]));
        b.w.a.post_send(
            &mut b.qa,
            rdma(SendOpcode::Write, 2, &[local.sge(0, 700)], &b.remote, 8),
        );
        b.w.a.post_send(
            &mut b.qa,
            rdma(SendOpcode::Read, 3, &[local.sge(1000, 900)], &b.remote, 16),
        );
        b.w.settle(10_000);
        b.qa.scq.drain();
        assert_eq!(b.qa.scq.seen.len(), 3);
        let packets = tap.0.lock().unwrap().clone();
        assert!(packets.len() > 8);
        packets
    })
}

const OPCODES: [u8; 25] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x64, 0x65,
];

#[derive(Clone, Debug)]
struct Spec {
    opcode: u8,
    to_a: bool,
    psn_delta: i32,
    ack_req: bool,
    key_choice: u8,
    raw_key: u32,
    va_delta: i64,
    dma_len: u32,
    syndrome: u8,
    payload: usize,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::sample::select(OPCODES.to_vec()),
        any::<bool>(),
        -4i32..6,
        any::<bool>(),
        0u8..4,
        any::<u32>(),
        -5000i64..20_000,
        prop_oneof![0u32..600, any::<u32>()],
        prop_oneof![0x00u8..0x20, 0x20u8..0x40, 0x60u8..0x65],
        0usize..300,
    )
        .prop_map(
            |(
                opcode,
                to_a,
                psn_delta,
                ack_req,
                key_choice,
                raw_key,
                va_delta,
                dma_len,
                syndrome,
                payload,
            )| Spec {
                opcode,
                to_a,
                psn_delta,
                ack_req,
                key_choice,
                raw_key,
                va_delta,
                dma_len,
                syndrome,
                payload,
            },
        )
}

/// A well-formed datagram (correct lengths, pad and ICRC) from `spec`.
fn make(b: &Bench, s: &Spec, base_psn: u32) -> Option<Vec<u8>> {
    let op = Opcode(s.opcode);
    let info = op.info()?;
    let (src, dst, qpn) = if s.to_a {
        (ADDR_B, ADDR_A, b.qa.qpn)
    } else {
        (ADDR_A, ADDR_B, b.qb.qpn)
    };
    let ip = Ipv4UdpFields {
        src,
        dst,
        src_port: 4791,
        dst_port: 4791,
        ident: 0,
        dont_fragment: true,
        tos: 0,
    };
    let mut bth = Bth::new(
        op,
        qpn.raw(),
        base_psn.wrapping_add_signed(s.psn_delta) & PSN_MASK,
    );
    bth.ack_req = s.ack_req;
    let key = match s.key_choice {
        0 => b.remote.key.0,
        1 => b.remote.key.next_variant().0,
        2 => b.w.b.pd_key.0,
        _ => s.raw_key,
    };
    let va = b.remote.va.wrapping_add_signed(s.va_delta);
    let mut ext = ExtHeaders::NONE;
    let h = info.headers;
    if h.contains(HeaderSet::RETH) {
        ext.reth = Some(Reth {
            va,
            rkey: key,
            dma_len: s.dma_len,
        });
    }
    if h.contains(HeaderSet::AETH) {
        ext.aeth = Some(Aeth {
            syndrome: Syndrome::decode(s.syndrome).ok()?,
            msn: 1,
        });
    }
    if h.contains(HeaderSet::ATOMIC_ETH) {
        ext.atomic_eth = Some(softrnic::wire::AtomicEth {
            va,
            rkey: key,
            swap_add: 1,
            compare: 2,
        });
    }
    if h.contains(HeaderSet::ATOMIC_ACK_ETH) {
        ext.atomic_ack = Some(7);
    }
    if h.contains(HeaderSet::IMMDT) {
        ext.imm = Some(9);
    }
    if h.contains(HeaderSet::IETH) {
        ext.ieth = Some(key);
    }
    if h.contains(HeaderSet::DETH) {
        ext.deth = Some(softrnic::wire::Deth { qkey: 1, src_qp: 1 });
    }
    let payload = if info.payload {
        pattern(s.payload as u64, s.payload)
    } else {
        Vec::new()
    };
    let mut out = vec![0u8; 9000];
    let n = build(
        &Headers {
            ip: ip.into(),
            bth,
            ext,
        },
        &[&payload],
        &mut out,
    )
    .ok()?;
    out.truncate(n);
    Some(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let b = bench();
        b.w.b.receive(&bytes);
        b.w.b.receive_udp_payload(
            std::net::SocketAddrV4::new(ADDR_A, 4791),
            std::net::SocketAddrV4::new(ADDR_B, 4791),
            &bytes,
        );
        b.w.b.poll();
        check_ranges(&b.w.b, &b.b_ranges);
    }

    #[test]
    fn flipped_bytes_of_valid_packets_never_panic(index in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let packets = captured();
        let mut p = packets[index.index(packets.len())].clone();
        let i = at.index(p.len());
        p[i] ^= mask;
        let mut b = bench();
        b.w.b.receive(&p);
        b.w.a.receive(&p);
        b.w.settle(10_000);
        check_ranges(&b.w.a, &b.a_ranges);
        check_ranges(&b.w.b, &b.b_ranges);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn well_formed_hostile_packets_stay_inside_registered_memory(specs in prop::collection::vec(spec(), 1..12)) {
        let mut b = bench();
        // A has requests in flight (lost), so responses meet a live completer.
        b.w.faults.set_faults(Faults { loss: 1.0, ..Faults::default() });
        let lbuf = b.a_buf;
        b.w.a.post_send(&mut b.qa, rdma(SendOpcode::Read, 1, &[lbuf.sge(0, 700)], &b.remote, 0));
        b.w.a.post_send(&mut b.qa, wqe(SendOpcode::Send, 2, &[lbuf.sge(0, 300)]));
        b.w.a.post_send(&mut b.qa, rdma(SendOpcode::Write, 3, &[lbuf.sge(0, 600)], &b.remote, 0));
        b.w.step();
        for s in &specs {
            // A's requester starts at 1000, B's responder expects 1000.
            if let Some(p) = make(&b, s, 1000) {
                if s.to_a { b.w.a.receive(&p) } else { b.w.b.receive(&p) }
                b.w.step();
            }
        }
        b.w.settle(20_000);
        check_ranges(&b.w.a, &b.a_ranges);
        check_ranges(&b.w.b, &b.b_ranges);
    }
}

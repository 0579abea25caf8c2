//! Property tests of the packet parser and of the engine behind it, from
//! angles `wire_proptest` does not take:
//!
//! * every truncation of a valid packet is refused, in both framings and
//!   both IP versions;
//! * the parser's view of a valid packet agrees with a decoder and an ICRC
//!   written here from the wire layout alone, for IPv4 and IPv6 (so a bug
//!   shared by the builder and the parser cannot hide behind a round
//!   trip);
//! * structural mutations (inserted, deleted, overwritten bytes, with the
//!   lengths, checksum and ICRC optionally re-sealed so the parser gets
//!   past its outer checks) never panic, and whatever is accepted is
//!   self-consistent;
//! * a connected device fed mutated requests never panics and never makes
//!   a DMA access outside the buffers it registered;
//! * a requester answered by a hostile responder (forged READ responses,
//!   ACKs and NAKs of any PSN, syndrome and length) writes only into its
//!   READ's sink and completes each request at most once.
//!
//! Case counts: 512 per parser property, 128 per engine property;
//! `PROPTEST_CASES` sets them all.

use crate::common;

use std::net::{Ipv4Addr, Ipv6Addr};

use common::{ADDR_A, ADDR_B, World};
use hwq::wqe::Access;
use links::Faults;
use proptest::prelude::*;
use softrnic::wire::*;

const OPCODES: [u8; 25] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x64, 0x65,
];

/// Request opcodes an RC responder takes.
const RC_REQUESTS: [u8; 18] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x16,
    0x17, 0x11,
];

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------- generators

fn syndrome() -> impl Strategy<Value = Syndrome> {
    prop_oneof![0x00u8..0x20, 0x20u8..0x40, 0x60u8..0x65].prop_map(|b| Syndrome::decode(b).unwrap())
}

fn ext(set: HeaderSet) -> impl Strategy<Value = ExtHeaders> {
    (
        (any::<u32>(), 0..=QPN_MASK, syndrome(), 0..=QPN_MASK),
        (any::<u64>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u64>(), any::<u64>()),
        (any::<u32>(), any::<u32>()),
    )
        .prop_map(
            move |((qkey, src_qp, syn, msn), (va, rkey, len), (s, c, ack), (imm, ieth))| {
                ExtHeaders {
                    deth: set
                        .contains(HeaderSet::DETH)
                        .then_some(Deth { qkey, src_qp }),
                    reth: set.contains(HeaderSet::RETH).then_some(Reth {
                        va,
                        rkey,
                        dma_len: len,
                    }),
                    atomic_eth: set.contains(HeaderSet::ATOMIC_ETH).then_some(AtomicEth {
                        va,
                        rkey,
                        swap_add: s,
                        compare: c,
                    }),
                    aeth: set
                        .contains(HeaderSet::AETH)
                        .then_some(Aeth { syndrome: syn, msn }),
                    atomic_ack: set.contains(HeaderSet::ATOMIC_ACK_ETH).then_some(ack),
                    imm: set.contains(HeaderSet::IMMDT).then_some(imm),
                    ieth: set.contains(HeaderSet::IETH).then_some(ieth),
                }
            },
        )
}

fn headers_for(op: Opcode) -> impl Strategy<Value = Headers> {
    let info = op.info().unwrap();
    (
        (
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
            any::<u16>(),
            any::<u16>(),
        ),
        (any::<bool>(), any::<[bool; 4]>(), any::<u16>()),
        (0..=QPN_MASK, 0..=QPN_MASK),
        ext(info.headers),
    )
        .prop_map(
            move |((s, d, sport, ident), (df, f, pkey), (qpn, psn), ext)| Headers {
                ip: Ipv4UdpFields {
                    src: Ipv4Addr::from(s),
                    dst: Ipv4Addr::from(d),
                    src_port: sport,
                    dst_port: ROCEV2_PORT,
                    ident,
                    dont_fragment: df,
                    tos: 0,
                }
                .into(),
                bth: Bth {
                    opcode: op,
                    solicited: f[0],
                    mig_req: f[1],
                    pad_count: 0,
                    pkey,
                    fecn: f[2],
                    becn: false,
                    dest_qp: qpn,
                    ack_req: f[3],
                    psn,
                },
                ext,
            },
        )
}

/// `headers_for` with IPv6 addresses, ports, traffic class and flow label.
fn headers_v6_for(op: Opcode) -> impl Strategy<Value = Headers> {
    (
        headers_for(op),
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
        any::<u8>(),
        0..=0xF_FFFFu32,
    )
        .prop_map(|(mut h, s, d, tc, flow)| {
            h.ip = Ipv6UdpFields {
                src: Ipv6Addr::from(s),
                dst: Ipv6Addr::from(d),
                src_port: h.ip.src_port(),
                dst_port: ROCEV2_PORT,
                traffic_class: tc,
                flow_label: flow,
            }
            .into();
            h
        })
}

/// A valid IPv6 packet: headers, payload and the built datagram.
fn packet_v6() -> impl Strategy<Value = (Headers, Vec<u8>, Vec<u8>)> {
    prop::sample::select(&OPCODES[..]).prop_flat_map(|op| {
        let op = Opcode(op);
        let max = if op.info().unwrap().payload { 300 } else { 0 };
        (
            headers_v6_for(op),
            prop::collection::vec(any::<u8>(), 0..=max),
        )
            .prop_map(|(h, payload)| {
                let mut out = vec![0u8; 1024];
                let n = build(&h, &[&payload], &mut out).expect("valid headers build");
                out.truncate(n);
                (h, payload, out)
            })
    })
}

/// A valid packet: headers, payload and the built datagram.
fn packet() -> impl Strategy<Value = (Headers, Vec<u8>, Vec<u8>)> {
    prop::sample::select(&OPCODES[..]).prop_flat_map(|op| {
        let op = Opcode(op);
        let max = if op.info().unwrap().payload { 300 } else { 0 };
        (headers_for(op), prop::collection::vec(any::<u8>(), 0..=max)).prop_map(|(h, payload)| {
            let mut out = vec![0u8; 1024];
            let n = build(&h, &[&payload], &mut out).expect("valid headers build");
            out.truncate(n);
            (h, payload, out)
        })
    })
}

// ---------------------------------------------------------------- independent oracle

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be24(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The ICRC of an IPv4 datagram computed from the layout alone: CRC-32
/// over eight 0xFF bytes and the datagram with TOS, TTL, both checksums
/// and BTH byte 4 set to all-ones, up to the trailer; sent LSB first.
fn oracle_icrc(datagram_without_trailer: &[u8]) -> [u8; 4] {
    let mut masked = datagram_without_trailer.to_vec();
    masked[1] = 0xFF; // TOS
    masked[8] = 0xFF; // TTL
    masked[10] = 0xFF; // IPv4 checksum
    masked[11] = 0xFF;
    masked[26] = 0xFF; // UDP checksum
    masked[27] = 0xFF;
    masked[32] = 0xFF; // BTH FECN/BECN/Resv6a
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xFF; 8]);
    h.update(&masked);
    h.finalize().to_le_bytes()
}

/// The ICRC of an IPv6 datagram from the layout alone: CRC-32 over eight
/// 0xFF bytes and the datagram with the traffic class and flow label (the
/// low nibble of byte 0, bytes 1-3), the hop limit (byte 7), the UDP
/// checksum and BTH byte 4 set to all-ones; sent LSB first.
fn oracle_icrc6(datagram_without_trailer: &[u8]) -> [u8; 4] {
    let mut masked = datagram_without_trailer.to_vec();
    masked[0] |= 0x0F;
    masked[1..4].fill(0xFF);
    masked[7] = 0xFF;
    masked[46] = 0xFF;
    masked[47] = 0xFF;
    masked[52] = 0xFF;
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xFF; 8]);
    h.update(&masked);
    h.finalize().to_le_bytes()
}

/// The one's-complement IPv4 header checksum of a 20-byte header whose
/// checksum field is zero.
fn oracle_ip_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Rewrites the IPv4 total length, UDP length, IPv4 checksum and ICRC of a
/// datagram of at least 28 + 12 + 4 bytes so its outer checks pass.
fn reseal(d: &mut [u8]) {
    let n = d.len();
    d[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    d[24..26].copy_from_slice(&((n - 20) as u16).to_be_bytes());
    d[10..12].fill(0);
    let c = oracle_ip_checksum(&d[..20]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    let icrc = oracle_icrc(&d[..n - 4]);
    d[n - 4..].copy_from_slice(&icrc);
}

#[derive(Clone, Debug)]
enum Mutation {
    Insert(prop::sample::Index, u8),
    Delete(prop::sample::Index),
    Overwrite(prop::sample::Index, u8),
    Truncate(prop::sample::Index),
    Append(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<prop::sample::Index>().prop_map(Mutation::Delete),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Overwrite(i, b)),
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        prop::collection::vec(any::<u8>(), 1..8).prop_map(Mutation::Append),
    ]
}

fn apply(d: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Insert(i, b) => {
            let at = i.index(d.len() + 1);
            d.insert(at, *b);
        }
        Mutation::Delete(i) if !d.is_empty() => {
            let at = i.index(d.len());
            d.remove(at);
        }
        Mutation::Overwrite(i, b) if !d.is_empty() => {
            let at = i.index(d.len());
            d[at] = *b;
        }
        Mutation::Truncate(i) => {
            let at = i.index(d.len() + 1);
            d.truncate(at);
        }
        Mutation::Append(bytes) => d.extend_from_slice(bytes),
        _ => {}
    }
}

/// What an accepted packet must satisfy whatever the input was (an IPv4
/// or, by its version nibble, an IPv6 datagram).
fn check_accepted(d: &[u8], p: &Packet<'_>) -> Result<(), TestCaseError> {
    let (head, total, icrc) = if d[0] >> 4 == 6 {
        (
            48,
            40 + usize::from(be16(&d[4..6])),
            oracle_icrc6 as fn(&[u8]) -> [u8; 4],
        )
    } else {
        (
            28,
            usize::from(be16(&d[2..4])),
            oracle_icrc as fn(&[u8]) -> [u8; 4],
        )
    };
    prop_assert!(total <= d.len());
    prop_assert_eq!(&icrc(&d[..total - 4])[..], &d[total - 4..total]);
    let pad = usize::from(p.bth.pad_count);
    prop_assert_eq!(
        head + p.info.header_len() + p.payload.len() + pad + 4,
        total
    );
    let start = head + p.info.header_len();
    prop_assert_eq!(p.payload, &d[start..start + p.payload.len()]);
    prop_assert_eq!(u32::from(d[head]), u32::from(p.bth.opcode.0));
    prop_assert_eq!(be24(&d[head + 5..head + 8]), p.bth.dest_qp);
    prop_assert_eq!(be24(&d[head + 9..head + 12]), p.bth.psn);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(512), ..ProptestConfig::default() })]

    #[test]
    fn every_truncation_is_refused((h, _payload, d) in packet()) {
        for cut in 0..d.len() {
            prop_assert!(parse(&d[..cut]).is_err(), "datagram cut at {} of {}", cut, d.len());
        }
        let udp = &d[28..];
        for cut in 0..udp.len() {
            prop_assert!(
                parse_udp_payload(&h.ip, &udp[..cut]).is_err(),
                "UDP payload cut at {} of {}", cut, udp.len()
            );
        }
    }

    #[test]
    fn parser_agrees_with_an_independent_decoder((h, payload, d) in packet()) {
        // Outer headers as laid out on the wire.
        prop_assert_eq!(d[0], 0x45);
        prop_assert_eq!(usize::from(be16(&d[2..4])), d.len());
        let ip = h.ip.as_v4().expect("an IPv4 packet");
        prop_assert_eq!(be16(&d[4..6]), ip.ident);
        prop_assert_eq!(d[6] & 0x40 != 0, ip.dont_fragment);
        prop_assert_eq!(d[9], 17);
        prop_assert_eq!(oracle_ip_checksum(&d[..20]), 0);
        prop_assert_eq!(&d[12..16], &ip.src.octets());
        prop_assert_eq!(&d[16..20], &ip.dst.octets());
        prop_assert_eq!(be16(&d[20..22]), ip.src_port);
        prop_assert_eq!(be16(&d[22..24]), ROCEV2_PORT);
        prop_assert_eq!(usize::from(be16(&d[24..26])), d.len() - 20);
        // BTH.
        let b = &d[28..40];
        prop_assert_eq!(b[0], h.bth.opcode.0);
        prop_assert_eq!(b[1] & 0x80 != 0, h.bth.solicited);
        prop_assert_eq!(usize::from((b[1] >> 4) & 3), (4 - payload.len() % 4) % 4);
        prop_assert_eq!(b[1] & 0x0F, 0, "TVer 0");
        prop_assert_eq!(be16(&b[2..4]), h.bth.pkey);
        prop_assert_eq!(be24(&b[5..8]), h.bth.dest_qp);
        prop_assert_eq!(b[8] & 0x80 != 0, h.bth.ack_req);
        prop_assert_eq!(be24(&b[9..12]), h.bth.psn);
        // The first extension header, where the opcode has one we decode.
        let e = &d[40..];
        if let Some(r) = h.ext.reth {
            prop_assert_eq!(u64::from(be32(&e[0..4])) << 32 | u64::from(be32(&e[4..8])), r.va);
            prop_assert_eq!(be32(&e[8..12]), r.rkey);
            prop_assert_eq!(be32(&e[12..16]), r.dma_len);
        }
        if let Some(a) = h.ext.aeth {
            prop_assert_eq!(e[0], a.syndrome.encode());
            prop_assert_eq!(be24(&e[1..4]), a.msn);
        }
        // ICRC.
        let n = d.len();
        prop_assert_eq!(&oracle_icrc(&d[..n - 4])[..], &d[n - 4..]);
        // The parser sees the same.
        let p = parse(&d).expect("valid packet parses");
        check_accepted(&d, &p)?;
        prop_assert_eq!(p.payload, &payload[..]);
        prop_assert_eq!(p.ext, h.ext);
    }

    #[test]
    fn every_ipv6_truncation_is_refused((h, _payload, d) in packet_v6()) {
        for cut in 0..d.len() {
            prop_assert!(parse(&d[..cut]).is_err(), "datagram cut at {} of {}", cut, d.len());
        }
        let udp = &d[48..];
        for cut in 0..udp.len() {
            prop_assert!(
                parse_udp_payload(&h.ip, &udp[..cut]).is_err(),
                "UDP payload cut at {} of {}", cut, udp.len()
            );
        }
    }

    #[test]
    fn ipv6_parser_agrees_with_an_independent_decoder((h, payload, d) in packet_v6()) {
        let ip = h.ip.as_v6().expect("an IPv6 packet");
        // The IPv6 header as laid out on the wire.
        prop_assert_eq!(d[0] >> 4, 6);
        prop_assert_eq!((d[0] & 0x0F) << 4 | d[1] >> 4, ip.traffic_class);
        prop_assert_eq!(be24(&d[1..4]) & 0xF_FFFF, ip.flow_label);
        prop_assert_eq!(usize::from(be16(&d[4..6])), d.len() - 40);
        prop_assert_eq!((d[6], d[7]), (17, 64));
        prop_assert_eq!(&d[8..24], &ip.src.octets());
        prop_assert_eq!(&d[24..40], &ip.dst.octets());
        prop_assert_eq!(be16(&d[40..42]), ip.src_port);
        prop_assert_eq!(be16(&d[42..44]), ROCEV2_PORT);
        prop_assert_eq!(usize::from(be16(&d[44..46])), d.len() - 40);
        prop_assert_eq!(be16(&d[46..48]), 0, "UDP checksum 0");
        let b = &d[48..60];
        prop_assert_eq!(b[0], h.bth.opcode.0);
        prop_assert_eq!(usize::from((b[1] >> 4) & 3), (4 - payload.len() % 4) % 4);
        prop_assert_eq!(be24(&b[5..8]), h.bth.dest_qp);
        prop_assert_eq!(be24(&b[9..12]), h.bth.psn);
        let n = d.len();
        prop_assert_eq!(&oracle_icrc6(&d[..n - 4])[..], &d[n - 4..]);
        let p = parse(&d).expect("valid packet parses");
        check_accepted(&d, &p)?;
        prop_assert_eq!(p.ip, h.ip);
        prop_assert_eq!(p.payload, &payload[..]);
        prop_assert_eq!(p.ext, h.ext);
        prop_assert_eq!(parse_udp_payload(&h.ip, &d[48..]).unwrap(), p);
    }

    #[test]
    fn mutated_ipv6_packets_never_panic_and_accepted_ones_are_consistent(
        (h, _payload, d) in packet_v6(),
        muts in prop::collection::vec(mutation(), 1..4),
        sealed in any::<bool>(),
    ) {
        let mut m = d.clone();
        for x in &muts {
            apply(&mut m, x);
        }
        if sealed && m.len() >= 48 + 12 + 4 && u16::try_from(m.len() - 40).is_ok() {
            // Version 6, UDP next, both lengths and the ICRC made right.
            m[0] = 0x60 | (m[0] & 0x0F);
            m[6] = 17;
            let n = m.len();
            m[4..6].copy_from_slice(&((n - 40) as u16).to_be_bytes());
            m[44..46].copy_from_slice(&((n - 40) as u16).to_be_bytes());
            let icrc = oracle_icrc6(&m[..n - 4]);
            m[n - 4..].copy_from_slice(&icrc);
        }
        if let Ok(p) = parse(&m) {
            check_accepted(&m, &p)?;
        }
        if m.len() > 48 {
            if let Ok(p) = parse_udp_payload(&h.ip, &m[48..]) {
                let pad = usize::from(p.bth.pad_count);
                prop_assert_eq!(p.info.header_len() + p.payload.len() + pad + 4, m.len() - 48);
            }
        }
    }

    #[test]
    fn mutated_packets_never_panic_and_accepted_ones_are_consistent(
        (h, _payload, d) in packet(),
        muts in prop::collection::vec(mutation(), 1..4),
        sealed in any::<bool>(),
    ) {
        let mut m = d.clone();
        for x in &muts {
            apply(&mut m, x);
        }
        if sealed && m.len() >= 28 + 12 + 4 && u16::try_from(m.len()).is_ok() {
            m[0] = 0x45;
            reseal(&mut m);
        }
        if let Ok(p) = parse(&m) {
            check_accepted(&m, &p)?;
        }
        if m.len() > 28 {
            if let Ok(p) = parse_udp_payload(&h.ip, &m[28..]) {
                let pad = usize::from(p.bth.pad_count);
                prop_assert_eq!(p.info.header_len() + p.payload.len() + pad + 4, m.len() - 28);
            }
        }
        let _ = parse_cm(&m);
    }
}

// ---------------------------------------------------------------- engine

const REMOTE: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

/// One request aimed at the connected QP of B: its fields may be right or
/// wrong, and its bytes may be mutated after building.
#[derive(Clone, Debug)]
struct Attack {
    opcode: u8,
    qpn_ok: bool,
    psn_delta: i32,
    key_ok: bool,
    va_offset: i64,
    dma_len: u32,
    payload: Vec<u8>,
    ieth_ok: bool,
    mutation: Option<Mutation>,
}

fn attack() -> impl Strategy<Value = Attack> {
    (
        prop::sample::select(&RC_REQUESTS[..]),
        any::<bool>(),
        prop_oneof![Just(0), -3..4i32, any::<i32>()],
        any::<bool>(),
        prop_oneof![-64i64..64, 4000i64..8300, any::<i64>()],
        prop_oneof![0u32..64, 4000u32..9000, any::<u32>()],
        prop::collection::vec(any::<u8>(), 0..1100),
        any::<bool>(),
        prop::option::weighted(0.3, mutation()),
    )
        .prop_map(
            |(
                opcode,
                qpn_ok,
                psn_delta,
                key_ok,
                va_offset,
                dma_len,
                payload,
                ieth_ok,
                mutation,
            )| {
                Attack {
                    opcode,
                    qpn_ok,
                    psn_delta,
                    key_ok,
                    va_offset,
                    dma_len,
                    payload,
                    ieth_ok,
                    mutation,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(128), ..ProptestConfig::default() })]

    /// B has one connected QP, an 8 KiB remotely writable target and two
    /// posted receive buffers. Whatever A's address sends it, B neither
    /// panics nor makes a DMA write outside those buffers, nor a read
    /// outside its registered memory.
    #[test]
    fn engine_never_touches_memory_outside_its_buffers(attacks in prop::collection::vec(attack(), 1..24)) {
        let mut w = World::new(Faults::default(), 1024, 1 << 20);
        let qa = w.a.qp(16);
        let mut qb = w.b.qp(16);
        w.connect(&qa, &qb, 1024, 100, 200, 4);
        let target = w.b.register(8192, REMOTE);
        let recv = w.b.register(8192, Access::LOCAL_WRITE);
        w.b.post_recv(&mut qb, 1, &[recv.sge(0, 4096)]);
        w.b.post_recv(&mut qb, 2, &[recv.sge(4096, 4096)]);
        *w.b.mem.log.lock().unwrap() = Some(Vec::new());
        *w.a.mem.log.lock().unwrap() = Some(Vec::new());
        let mut psn = 100u32; // A sends from 100 (`connect` gives B recv_psn = psn_a)
        for a in &attacks {
            let op = Opcode(a.opcode);
            let info = op.info().unwrap();
            let mut ext = ExtHeaders::NONE;
            let key = if a.key_ok { target.key.0 } else { target.key.0 ^ 0x100 };
            let va = target.va.wrapping_add_signed(a.va_offset);
            if info.headers.contains(HeaderSet::RETH) {
                ext.reth = Some(Reth { va, rkey: key, dma_len: a.dma_len });
            }
            if info.headers.contains(HeaderSet::ATOMIC_ETH) {
                ext.atomic_eth = Some(AtomicEth { va, rkey: key, swap_add: 1, compare: 0 });
            }
            if info.headers.contains(HeaderSet::AETH) {
                ext.aeth = Some(Aeth { syndrome: Syndrome::ACK, msn: 0 });
            }
            if info.headers.contains(HeaderSet::IMMDT) {
                ext.imm = Some(0xABCD);
            }
            if info.headers.contains(HeaderSet::IETH) {
                ext.ieth = Some(if a.ieth_ok { target.key.0 } else { 0xDEAD_BEEF });
            }
            let payload: &[u8] = if info.payload { &a.payload } else { &[] };
            let h = Headers {
                ip: Ipv4UdpFields::new(ADDR_A, ADDR_B, ROCEV2_PORT).into(),
                bth: Bth::new(
                    op,
                    if a.qpn_ok { qb.qpn.raw() } else { qb.qpn.raw() + 1 },
                    psn_add(psn, a.psn_delta as u32 & PSN_MASK),
                ),
                ext,
            };
            let mut out = vec![0u8; 2048];
            let n = build(&h, &[payload], &mut out).unwrap();
            out.truncate(n);
            if let Some(m) = &a.mutation {
                apply(&mut out, m);
            }
            if a.psn_delta == 0 && a.qpn_ok {
                psn = psn_add(psn, 1);
            }
            w.b.receive(&out);
            w.run_until(20_000, |_| false);
        }
        let target_range = target.logical..target.logical + target.len;
        let recv_range = recv.logical..recv.logical + recv.len;
        for &(write, addr, len) in w.b.mem.log.lock().unwrap().as_ref().unwrap() {
            let end = addr + len as u64;
            let inside = |r: &std::ops::Range<u64>| addr >= r.start && end <= r.end;
            if write {
                prop_assert!(inside(&target_range) || inside(&recv_range),
                    "DMA write {:#x}+{} outside B's writable buffers", addr, len);
            } else {
                prop_assert!(inside(&target_range) || inside(&recv_range),
                    "DMA read {:#x}+{} outside B's buffers", addr, len);
            }
        }
        prop_assert!(
            w.a.mem.log.lock().unwrap().as_ref().unwrap().is_empty(),
            "A has no buffer and must not be touched by B's responses"
        );
    }
}

/// The engine property is not vacuous: a well-formed WRITE built the way the
/// attacks are built lands in B's target, and a SEND in a posted receive.
#[test]
fn well_formed_requests_built_like_the_attacks_are_executed() {
    let mut w = World::new(Faults::default(), 1024, 1 << 20);
    let qa = w.a.qp(16);
    let mut qb = w.b.qp(16);
    w.connect(&qa, &qb, 1024, 100, 200, 4);
    let target = w.b.register(8192, REMOTE);
    let recv = w.b.register(4096, Access::LOCAL_WRITE);
    w.b.post_recv(&mut qb, 1, &[recv.sge(0, 4096)]);
    let ip = Ipv4UdpFields::new(ADDR_A, ADDR_B, ROCEV2_PORT).into();
    let mut out = vec![0u8; 2048];
    let write = Headers {
        ip,
        bth: Bth::new(Opcode::RDMA_WRITE_ONLY, qb.qpn.raw(), 100),
        ext: ExtHeaders {
            reth: Some(Reth {
                va: target.va + 100,
                rkey: target.key.0,
                dma_len: 5,
            }),
            ..ExtHeaders::NONE
        },
    };
    let n = build(&write, &[b"hello"], &mut out).unwrap();
    w.b.receive(&out[..n]);
    let send = Headers {
        ip,
        bth: Bth::new(Opcode::SEND_ONLY, qb.qpn.raw(), 101),
        ext: ExtHeaders::NONE,
    };
    let n = build(&send, &[b"world!"], &mut out).unwrap();
    w.b.receive(&out[..n]);
    w.settle(20_000);
    assert_eq!(w.b.mem.get(target.logical + 100, 5), b"hello");
    assert_eq!(w.b.mem.get(recv.logical, 6), b"world!");
    qb.rcq.drain();
    assert_eq!(qb.rcq.seen.len(), 1, "one receive completion");
}

// ---------------------------------------------------------------- hostile responder

/// One forged response to A's outstanding READ.
#[derive(Clone, Debug)]
struct Response {
    opcode: u8,
    psn_delta: u32,
    syndrome: u8,
    msn: u32,
    payload_len: usize,
    right_qpn: bool,
    advance_us: u64,
}

fn response() -> impl Strategy<Value = Response> {
    (
        prop::sample::select(&[0x0Du8, 0x0E, 0x0F, 0x10, 0x11, 0x12][..]),
        prop_oneof![
            0u32..4,
            Just(PSN_MASK),
            any::<u32>().prop_map(|x| x & PSN_MASK)
        ],
        prop_oneof![Just(0x1Fu8), 0x60u8..0x65, 0x20u8..0x40, 0u8..0x20],
        any::<u32>().prop_map(|x| x & PSN_MASK),
        prop_oneof![Just(1024usize), 0usize..1100, Just(952usize)],
        prop_oneof![9 => Just(true), 1 => Just(false)],
        prop_oneof![Just(0u64), 0u64..3000],
    )
        .prop_map(
            |(opcode, psn_delta, syndrome, msn, payload_len, right_qpn, advance_us)| Response {
                opcode,
                psn_delta,
                syndrome,
                msn,
                payload_len,
                right_qpn,
                advance_us,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(128), ..ProptestConfig::default() })]

    /// A has a 3000-byte READ and a SEND outstanding; every packet it sends
    /// is lost, and a hostile responder answers with forged READ
    /// responses, ACKs and NAKs of any PSN, syndrome and length. A never
    /// panics, writes only into the READ's sink, reads only its SEND
    /// source, and completes each request at most once.
    #[test]
    fn requester_never_writes_outside_its_sink(responses in prop::collection::vec(response(), 1..40)) {
        let w = World::new(Faults::default(), 1024, 1 << 20);
        let mut qa = w.a.qp(16);
        let qb = w.b.qp(16);
        w.connect(&qa, &qb, 1024, 100, 200, 4);
        let sink = w.a.register(8192, Access::LOCAL_WRITE);
        let src = w.a.register(4096, Access::empty());
        let remote = w.b.register(4096, REMOTE);
        *w.a.mem.log.lock().unwrap() = Some(Vec::new());
        w.a.post_send(&mut qa, common::rdma(hwq::wqe::SendOpcode::Read, 1, &[sink.sge(0, 3000)], &remote, 0));
        w.a.post_send(&mut qa, common::wqe(hwq::wqe::SendOpcode::Send, 2, &[src.sge(0, 100)]));
        let ip = Ipv4UdpFields::new(ADDR_B, ADDR_A, ROCEV2_PORT).into();
        let mut out = vec![0u8; 2048];
        let payload = vec![0x5Au8; 1100];
        for r in &responses {
            w.a.poll();
            while w.fabric.take_due(u64::MAX).is_some() {}
            let op = Opcode(r.opcode);
            let info = op.info().unwrap();
            let mut ext = ExtHeaders::NONE;
            if info.headers.contains(HeaderSet::AETH) {
                ext.aeth = Some(Aeth { syndrome: Syndrome::decode(r.syndrome).unwrap_or(Syndrome::ACK), msn: r.msn });
            }
            if info.headers.contains(HeaderSet::ATOMIC_ACK_ETH) {
                ext.atomic_ack = Some(7);
            }
            let h = Headers {
                ip,
                bth: Bth::new(op, if r.right_qpn { qa.qpn.raw() } else { qa.qpn.raw() ^ 1 }, psn_add(100, r.psn_delta)),
                ext,
            };
            let body: &[u8] = if info.payload { &payload[..r.payload_len] } else { &[] };
            let n = build(&h, &[body], &mut out).unwrap();
            w.a.receive(&out[..n]);
            w.clock.set(w.clock.now() + r.advance_us);
            w.a.poll();
        }
        // Let timers run out (retransmits are lost too), bounded.
        for _ in 0..200 {
            w.clock.set(w.clock.now() + 5_000);
            w.a.poll();
            while w.fabric.take_due(u64::MAX).is_some() {}
        }
        let sink_range = sink.logical..sink.logical + 3000;
        let src_range = src.logical..src.logical + 100;
        for &(write, addr, len) in w.a.mem.log.lock().unwrap().as_ref().unwrap() {
            let end = addr + len as u64;
            if write {
                prop_assert!(addr >= sink_range.start && end <= sink_range.end,
                    "DMA write {:#x}+{} outside the READ's sink", addr, len);
            } else {
                prop_assert!(addr >= src_range.start && end <= src_range.end,
                    "DMA read {:#x}+{} outside the SEND's source", addr, len);
            }
        }
        qa.scq.drain();
        let mut ids: Vec<u64> = qa.scq.seen.iter().map(|c| c.wr_id).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        prop_assert_eq!(ids.len(), before, "a request completed twice");
        prop_assert!(ids.iter().all(|id| *id == 1 || *id == 2), "unknown completion {:?}", ids);
    }
}

/// The hostile-responder property is not vacuous: the right responses,
/// built the same way, complete the READ with their bytes.
#[test]
fn well_formed_read_responses_complete_the_read() {
    let w = World::new(Faults::default(), 1024, 1 << 20);
    let mut qa = w.a.qp(16);
    let qb = w.b.qp(16);
    w.connect(&qa, &qb, 1024, 100, 200, 4);
    let sink = w.a.register(8192, Access::LOCAL_WRITE);
    let remote = w.b.register(4096, REMOTE);
    w.a.post_send(
        &mut qa,
        common::rdma(
            hwq::wqe::SendOpcode::Read,
            1,
            &[sink.sge(0, 3000)],
            &remote,
            0,
        ),
    );
    w.a.poll();
    while w.fabric.take_due(u64::MAX).is_some() {}
    let ip = Ipv4UdpFields::new(ADDR_B, ADDR_A, ROCEV2_PORT).into();
    let mut out = vec![0u8; 2048];
    for (op, psn, len) in [
        (Opcode::RDMA_READ_RESPONSE_FIRST, 100, 1024),
        (Opcode::RDMA_READ_RESPONSE_MIDDLE, 101, 1024),
        (Opcode::RDMA_READ_RESPONSE_LAST, 102, 952),
    ] {
        let info = op.info().unwrap();
        let ext = ExtHeaders {
            aeth: info.headers.contains(HeaderSet::AETH).then_some(Aeth {
                syndrome: Syndrome::ACK,
                msn: 1,
            }),
            ..ExtHeaders::NONE
        };
        let h = Headers {
            ip,
            bth: Bth::new(op, qa.qpn.raw(), psn),
            ext,
        };
        let n = build(&h, &[&vec![0x5Au8; len]], &mut out).unwrap();
        w.a.receive(&out[..n]);
        w.a.poll();
    }
    qa.scq.drain();
    assert_eq!(qa.scq.seen.len(), 1, "the READ completes");
    assert_eq!(qa.scq.seen[0].wr_id, 1);
    assert_eq!(qa.scq.seen[0].cqe_status(), hwq::CqeStatus::Success);
    assert!(w.a.mem.get(sink.logical, 3000).iter().all(|&b| b == 0x5A));
    assert!(
        w.a.mem
            .get(sink.logical + 3000, 100)
            .iter()
            .all(|&b| b == 0)
    );
}

//! Property tests: the parsers never panic on arbitrary input, never accept
//! a packet whose ICRC does not match, and round-trip every valid packet,
//! IPv4 and IPv6.

use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use softrnic::wire::icrc::{ipv4_datagram_icrc, ipv6_datagram_icrc};
use softrnic::wire::ipv4_udp::ipv4_checksum;
use softrnic::wire::*;

const OPCODES: [u8; 25] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x64, 0x65,
];

/// Byte offsets of a datagram the ICRC does not cover: TOS, TTL, IPv4
/// checksum, UDP checksum, BTH byte 4.
const VARIANT: [usize; 7] = [1, 8, 10, 11, 26, 27, 32];

/// The same for IPv6: traffic class and flow label (bytes 1-3, and the low
/// nibble of byte 0), hop limit, UDP checksum, BTH byte 4.
const VARIANT6: [usize; 7] = [1, 2, 3, 7, 46, 47, 52];

/// Whether changing byte `at` of a datagram from `was` to `now` changes
/// nothing the ICRC covers.
fn variant_change(v6: bool, at: usize, was: u8, now: u8) -> bool {
    if v6 {
        VARIANT6.contains(&at) || (at == 0 && (was ^ now) & 0xF0 == 0)
    } else {
        VARIANT.contains(&at)
    }
}

fn ip_fields() -> impl Strategy<Value = IpUdpFields> {
    prop_oneof![
        ipv4_fields().prop_map(IpUdpFields::from),
        ipv6_fields().prop_map(IpUdpFields::from),
    ]
}

fn ipv6_fields() -> impl Strategy<Value = Ipv6UdpFields> {
    (
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
        any::<u16>(),
        any::<u8>(),
        any::<u32>(),
    )
        .prop_map(|(s, d, sport, tc, flow)| Ipv6UdpFields {
            src: Ipv6Addr::from(s),
            dst: Ipv6Addr::from(d),
            src_port: sport,
            dst_port: ROCEV2_PORT,
            traffic_class: tc,
            flow_label: flow & 0xF_FFFF,
        })
}

fn ipv4_fields() -> impl Strategy<Value = Ipv4UdpFields> {
    (
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<u16>(),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(|(s, d, sport, ident, df, tos)| Ipv4UdpFields {
            src: Ipv4Addr::from(s),
            dst: Ipv4Addr::from(d),
            src_port: sport,
            dst_port: ROCEV2_PORT,
            ident,
            dont_fragment: df,
            tos,
        })
}

fn bth(op: Opcode) -> impl Strategy<Value = Bth> {
    (any::<[bool; 5]>(), any::<u16>(), 0..=PSN_MASK, 0..=PSN_MASK).prop_map(
        move |(f, pkey, qp, psn)| Bth {
            opcode: op,
            solicited: f[0],
            mig_req: f[1],
            pad_count: 0,
            pkey,
            fecn: f[2],
            becn: f[3],
            dest_qp: qp,
            ack_req: f[4],
            psn,
        },
    )
}

fn syndrome() -> impl Strategy<Value = Syndrome> {
    prop_oneof![0x00u8..0x20, 0x20u8..0x40, 0x60u8..0x65].prop_map(|b| Syndrome::decode(b).unwrap())
}

fn ext(set: HeaderSet) -> impl Strategy<Value = ExtHeaders> {
    (
        (any::<u32>(), 0..=PSN_MASK),
        (any::<u64>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (syndrome(), 0..=PSN_MASK),
        (any::<u64>(), any::<u32>(), any::<u32>()),
    )
        .prop_map(
            move |(deth, reth, atomic, aeth, (ack, imm, ieth))| ExtHeaders {
                deth: set.contains(HeaderSet::DETH).then_some(Deth {
                    qkey: deth.0,
                    src_qp: deth.1,
                }),
                reth: set.contains(HeaderSet::RETH).then_some(Reth {
                    va: reth.0,
                    rkey: reth.1,
                    dma_len: reth.2,
                }),
                atomic_eth: set.contains(HeaderSet::ATOMIC_ETH).then_some(AtomicEth {
                    va: atomic.0,
                    rkey: atomic.1,
                    swap_add: atomic.2,
                    compare: atomic.3,
                }),
                aeth: set.contains(HeaderSet::AETH).then_some(Aeth {
                    syndrome: aeth.0,
                    msn: aeth.1,
                }),
                atomic_ack: set.contains(HeaderSet::ATOMIC_ACK_ETH).then_some(ack),
                imm: set.contains(HeaderSet::IMMDT).then_some(imm),
                ieth: set.contains(HeaderSet::IETH).then_some(ieth),
            },
        )
}

/// A valid packet's headers and payload.
fn packet() -> impl Strategy<Value = (Headers, Vec<u8>)> {
    prop::sample::select(&OPCODES[..]).prop_flat_map(|op| {
        let op = Opcode(op);
        let info = op.info().unwrap();
        let max_payload = if info.payload { 600 } else { 0 };
        (
            ip_fields(),
            bth(op),
            ext(info.headers),
            prop::collection::vec(any::<u8>(), 0..=max_payload),
        )
            .prop_map(|(ip, bth, ext, payload)| (Headers { ip, bth, ext }, payload))
    })
}

fn build_vec(h: &Headers, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 2048];
    let n = build(h, &[payload], &mut out).unwrap();
    out.truncate(n);
    out
}

/// The ICRC check done independently of the parser: recompute over the
/// covered bytes and compare with the trailer.
fn icrc_matches(datagram: &[u8]) -> bool {
    if datagram[0] >> 4 == 6 {
        let total = 40 + usize::from(u16::from_be_bytes([datagram[4], datagram[5]]));
        let d = &datagram[..total];
        let (covered, trailer) = d.split_at(d.len() - 4);
        return ipv6_datagram_icrc(covered) == Some(icrc_from_wire(trailer.try_into().unwrap()));
    }
    let total = usize::from(u16::from_be_bytes([datagram[2], datagram[3]]));
    let d = &datagram[..total];
    let (covered, trailer) = d.split_at(d.len() - 4);
    ipv4_datagram_icrc(covered) == Some(icrc_from_wire(trailer.try_into().unwrap()))
}

/// Wraps arbitrary transport bytes in valid IPv6/UDP headers.
fn wrap6(transport: &[u8], seal: bool) -> Vec<u8> {
    let ip = Ipv6UdpFields::new(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 1000);
    let mut d = Vec::new();
    d.extend_from_slice(zerocopy::IntoBytes::as_bytes(
        &ip.ipv6_header(transport.len()).unwrap(),
    ));
    d.extend_from_slice(zerocopy::IntoBytes::as_bytes(
        &ip.udp_header(transport.len()).unwrap(),
    ));
    d.extend_from_slice(transport);
    if seal && d.len() >= 48 + 16 {
        let n = d.len();
        let icrc = ipv6_datagram_icrc(&d[..n - 4]).unwrap();
        d[n - 4..].copy_from_slice(&icrc_to_wire(icrc));
    }
    d
}

/// Wraps arbitrary transport bytes in valid IPv4/UDP headers so the parser
/// gets past them.
fn wrap(transport: &[u8], seal: bool) -> Vec<u8> {
    let ip = Ipv4UdpFields::new(Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8), 1000);
    let mut d = Vec::new();
    d.extend_from_slice(zerocopy::IntoBytes::as_bytes(
        &ip.ipv4_header(transport.len()).unwrap(),
    ));
    d.extend_from_slice(zerocopy::IntoBytes::as_bytes(
        &ip.udp_header(transport.len()).unwrap(),
    ));
    d.extend_from_slice(transport);
    if seal && d.len() >= 28 + 16 {
        let n = d.len();
        let icrc = ipv4_datagram_icrc(&d[..n - 4]).unwrap();
        d[n - 4..].copy_from_slice(&icrc_to_wire(icrc));
    }
    assert_eq!(ipv4_checksum(&d[..20]), 0);
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(p) = parse(&bytes) {
            prop_assert!(icrc_matches(&bytes));
            prop_assert!(p.payload.len() <= bytes.len());
        }
        let ip = Ipv4UdpFields::new(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 1);
        let _ = parse_udp_payload(&ip, &bytes);
        let ip6 = Ipv6UdpFields::new(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 1);
        let _ = parse_udp_payload(&ip6, &bytes);
        let _ = parse_cm(&bytes);
        let _ = CmaHeader::parse(&bytes);
    }

    #[test]
    fn arbitrary_transport_behind_valid_ip_never_panics(
        transport in prop::collection::vec(any::<u8>(), 0..300),
        seal in any::<bool>(),
        v6 in any::<bool>(),
    ) {
        let (d, head) = if v6 { (wrap6(&transport, seal), 48) } else { (wrap(&transport, seal), 28) };
        match parse(&d) {
            Ok(p) => {
                prop_assert!(icrc_matches(&d));
                let pad = usize::from(p.bth.pad_count);
                prop_assert_eq!(head + p.info.header_len() + p.payload.len() + pad + 4, d.len());
            }
            Err(e) => {
                if !seal {
                    // Unsealed random bytes can only fail as short or on the ICRC.
                    prop_assert!(matches!(e, ParseError::Truncated | ParseError::BadIcrc), "{:?}", e);
                }
            }
        }
    }

    #[test]
    fn valid_packets_round_trip((h, payload) in packet()) {
        let d = build_vec(&h, &payload);
        let p = parse(&d).unwrap();
        let mut expect = h.bth;
        expect.pad_count = pad_len(payload.len()) as u8;
        prop_assert_eq!(p.bth, expect);
        prop_assert_eq!(p.ext, h.ext);
        prop_assert_eq!(p.ip, h.ip);
        prop_assert_eq!(p.payload, &payload[..]);
        prop_assert_eq!(d[0] >> 4, if h.ip.as_v6().is_some() { 6 } else { 4 });
        prop_assert_eq!(parse_udp_payload(&h.ip, &d[h.ip.header_len()..]).unwrap(), p);
    }

    #[test]
    fn flipped_bytes_never_pass_unless_variant(
        (h, payload) in packet(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..4),
    ) {
        let orig = build_vec(&h, &payload);
        let mut d = orig.clone();
        for (idx, x) in &flips {
            let at = idx.index(d.len());
            d[at] ^= x;
        }
        // Two flips of one byte may cancel: judge by what actually changed.
        let touched: Vec<usize> = (0..d.len()).filter(|&i| d[i] != orig[i]).collect();
        let v6 = h.ip.as_v6().is_some();
        if parse(&d).is_ok() {
            prop_assert!(icrc_matches(&d));
            prop_assert!(
                touched.iter().all(|&at| variant_change(v6, at, orig[at], d[at])),
                "accepted flips at {:?}", touched
            );
        }
        let ip = h.ip;
        let head = ip.header_len();
        if parse_udp_payload(&ip, &d[head..]).is_ok() {
            prop_assert!(touched.iter().all(|at| *at < head || *at == head + 4), "accepted flips at {:?}", touched);
        }
    }
}

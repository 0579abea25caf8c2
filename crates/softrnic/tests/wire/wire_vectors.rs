//! Known-answer tests: the ICRC and header layouts against the vectors in
//! the research digest (softrdma-anchors §1.6 / §5.3), including a
//! ConnectX-4 Lx hardware capture and scapy's UC vector, and the IPv6
//! vectors (the digest's SEND Only, and a WRITE Only with traffic class,
//! flow label and hop limit set, computed here by an independent Python
//! implementation of §1.6 with zlib).

use std::net::{Ipv4Addr, Ipv6Addr};

use softrnic::wire::icrc::{ipv4_datagram_icrc, ipv6_datagram_icrc};
use softrnic::wire::*;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

const SEND_ONLY: &str = "45000038000040004011b961c0a80001c0a80002c00012b700249f930400ffff000000118000000068656c6c6f20526f434521213f194e14";
const WRITE_ONLY: &str = "45000044000040004011b955c0a80001c0a80002c00012b70030b8910a00ffff000000128000010000000000000010000000123400000008414243444546474832240269";
const ACK: &str = "45000030000040004011b969c0a80001c0a80002c00012b7001cb2671100ffff00000034000001001f00000147cd8040";
const SEND_PAD1: &str = "45000030000040004011b969c0a80001c0a80002c00012b7001c194f0410ffff000000118000000161626300b0c9990c";
const IPV6_SEND_ONLY: &str = "6000000000241140fd000000000000000000000000000001fd000000000000000000000000000002c00012b70024ffc60400ffff000000118000000068656c6c6f20526f4345212195ea1e5f";
/// RC RDMA WRITE Only (VA 0x1000, R_Key 0x1234, "ABCDEFGH", dQP 0x12,
/// PSN 0x100, AckReq) over IPv6 fd00::1 -> fd00::2, traffic class 0xB8,
/// flow label 0x12345, hop limit 64, UDP 0xC001 -> 4791 checksum 0. Made
/// here: Python's zlib.crc32 over eight 0xFF bytes and the datagram with
/// the low nibble of byte 0 and bytes 1-3 (traffic class, flow label),
/// byte 7 (hop limit), the UDP checksum and BTH byte 4 set to ones.
const IPV6_WRITE_ONLY: &str = "6b81234500301140fd000000000000000000000000000001fd000000000000000000000000000002c00112b7003000000a00ffff000000128000010000000000000010000000123400000008414243444546474855005b0c";
/// The capture as scapy's test suite lists it (74 bytes, Ethernet onward).
/// The digest's one-line copy drops four zero bytes (the BTH's AckReq/PSN
/// word), which would make it 70 bytes against an IPv4 total length of 60.
const CX4_CNP_FRAME: &str =
    "e41d2dab2bc27cfe90643b32080045c2 003c718c400040119161 0a001101 0a001201
    000012b700280000 8100ffff40000118 00000000 00000000000000000000000000000000 82fd002a";

/// The ICRC the procedure gives over everything but the trailer, and the
/// value the trailer carries.
fn computed_and_carried(datagram: &[u8], icrc_fn: fn(&[u8]) -> Option<u32>) -> (u32, u32) {
    let (covered, trailer) = datagram.split_at(datagram.len() - 4);
    (
        icrc_fn(covered).unwrap(),
        icrc_from_wire(trailer.try_into().unwrap()),
    )
}

fn vector_ip() -> IpUdpFields {
    Ipv4UdpFields::new(
        Ipv4Addr::new(192, 168, 0, 1),
        Ipv4Addr::new(192, 168, 0, 2),
        49152,
    )
    .into()
}

/// Our builder writes UDP checksum 0 where scapy computed one; the ICRC
/// masks that field, so everything else must match byte for byte.
fn assert_same_but_udp_checksum(built: &[u8], vector: &[u8]) {
    assert_eq!(built.len(), vector.len());
    let mut expect = vector.to_vec();
    expect[26] = 0;
    expect[27] = 0;
    assert_eq!(built, &expect[..]);
}

#[test]
fn every_digest_vector_icrc() {
    let cases: [(&str, [u8; 4]); 4] = [
        (SEND_ONLY, [0x3f, 0x19, 0x4e, 0x14]),
        (WRITE_ONLY, [0x32, 0x24, 0x02, 0x69]),
        (ACK, [0x47, 0xcd, 0x80, 0x40]),
        (SEND_PAD1, [0xb0, 0xc9, 0x99, 0x0c]),
    ];
    for (v, wire) in cases {
        let d = hex(v);
        assert_eq!(&d[d.len() - 4..], &wire);
        let (computed, carried) = computed_and_carried(&d, ipv4_datagram_icrc);
        assert_eq!(computed, carried);
        assert_eq!(icrc_to_wire(computed), wire);
    }
    let d = hex(IPV6_SEND_ONLY);
    let (computed, carried) = computed_and_carried(&d, ipv6_datagram_icrc);
    assert_eq!(computed, carried);
    assert_eq!(icrc_to_wire(computed), [0x95, 0xea, 0x1e, 0x5f]);
}

#[test]
fn connectx4_lx_cnp_capture() {
    let frame = hex(CX4_CNP_FRAME);
    assert_eq!(frame.len(), 74);
    let datagram = &frame[14..];
    let (computed, carried) = computed_and_carried(datagram, ipv4_datagram_icrc);
    assert_eq!(computed, carried);
    assert_eq!(icrc_to_wire(computed), [0x82, 0xfd, 0x00, 0x2a]);
    // The full parser accepts its IPv4/UDP headers and ICRC, then declines
    // the CNP opcode (0x81), which this RNIC neither sends nor handles.
    assert_eq!(parse(datagram), Err(ParseError::BadOpcode));
}

#[test]
fn scapy_uc_vector() {
    // UC SEND Only, MigReq, PadCnt 2, P_Key 0xffff, dQP 211, PSN 13571856,
    // 192.168.0.7 -> 192.168.0.7, TOS 1, ID 1144, DF; 18 payload bytes.
    let mut d = hex("45010040047840004011b4d5c0a80007c0a80007c00012b7002caca2");
    d.extend_from_slice(&[
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10,
    ]);
    d.extend_from_slice(b"F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P\x00\x00");
    let icrc = ipv4_datagram_icrc(&d).unwrap();
    // scapy shows 0x78f353f3: the trailer bytes read big-endian.
    assert_eq!(icrc_to_wire(icrc), [0x78, 0xf3, 0x53, 0xf3]);
    d.extend_from_slice(&icrc_to_wire(icrc));
    assert_eq!(d.len(), 64);
    assert_eq!(parse(&d), Err(ParseError::BadOpcode));
}

#[test]
fn parse_send_only_vector() {
    let d = hex(SEND_ONLY);
    let p = parse(&d).unwrap();
    assert_eq!(p.bth.opcode, Opcode::SEND_ONLY);
    assert_eq!(p.bth.dest_qp, 0x11);
    assert_eq!(p.bth.psn, 0);
    assert!(p.bth.ack_req);
    assert_eq!(p.bth.pkey, 0xFFFF);
    assert_eq!(p.payload, b"hello RoCE!!");
    assert_eq!(p.ip, vector_ip());
    assert_eq!(p.icrc, 0x144e_193f);
    // The same bytes through the UDP-socket path.
    let q = parse_udp_payload(&vector_ip(), &d[28..]).unwrap();
    assert_eq!(q, p);
}

#[test]
fn build_send_only_vector() {
    let mut bth = Bth::new(Opcode::SEND_ONLY, 0x11, 0);
    bth.ack_req = true;
    let h = Headers {
        ip: vector_ip(),
        bth,
        ext: ExtHeaders::NONE,
    };
    let mut out = [0u8; 128];
    let n = build(&h, &[b"hello ", b"RoCE!!"], &mut out).unwrap();
    assert_same_but_udp_checksum(&out[..n], &hex(SEND_ONLY));
    let n = build_udp_payload(&h, &[b"hello RoCE!!"], &mut out).unwrap();
    assert_eq!(&out[..n], &hex(SEND_ONLY)[28..]);
}

#[test]
fn build_and_parse_write_only_vector() {
    let mut bth = Bth::new(Opcode::RDMA_WRITE_ONLY, 0x12, 0x100);
    bth.ack_req = true;
    let reth = Reth {
        va: 0x1000,
        rkey: 0x1234,
        dma_len: 8,
    };
    let h = Headers {
        ip: vector_ip(),
        bth,
        ext: ExtHeaders {
            reth: Some(reth),
            ..ExtHeaders::NONE
        },
    };
    let mut out = [0u8; 128];
    let n = build(&h, &[b"ABCDEFGH"], &mut out).unwrap();
    let v = hex(WRITE_ONLY);
    assert_same_but_udp_checksum(&out[..n], &v);
    let p = parse(&v).unwrap();
    assert_eq!(p.ext.reth, Some(reth));
    assert_eq!(p.payload, b"ABCDEFGH");
    assert_eq!(p.bth.psn, 0x100);
}

#[test]
fn build_and_parse_ack_vector() {
    let h = Headers {
        ip: vector_ip(),
        bth: Bth::new(Opcode::ACKNOWLEDGE, 0x34, 0x100),
        ext: ExtHeaders {
            aeth: Some(Aeth {
                syndrome: Syndrome::ACK,
                msn: 1,
            }),
            ..ExtHeaders::NONE
        },
    };
    let mut out = [0u8; 128];
    let n = build(&h, &[], &mut out).unwrap();
    let v = hex(ACK);
    assert_same_but_udp_checksum(&out[..n], &v);
    let p = parse(&v).unwrap();
    assert_eq!(
        p.ext.aeth,
        Some(Aeth {
            syndrome: Syndrome::ACK,
            msn: 1
        })
    );
    assert!(p.payload.is_empty());
}

#[test]
fn build_and_parse_pad_vector() {
    // The digest's description omits it, but this vector has AckReq set.
    let mut bth = Bth::new(Opcode::SEND_ONLY, 0x11, 1);
    bth.ack_req = true;
    let h = Headers {
        ip: vector_ip(),
        bth,
        ext: ExtHeaders::NONE,
    };
    let mut out = [0u8; 128];
    let n = build(&h, &[b"abc"], &mut out).unwrap();
    let v = hex(SEND_PAD1);
    assert_same_but_udp_checksum(&out[..n], &v);
    let p = parse(&v).unwrap();
    assert_eq!(p.bth.pad_count, 1);
    assert_eq!(p.payload, b"abc");
}

fn v6_vector_ip() -> Ipv6UdpFields {
    Ipv6UdpFields::new(
        Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1),
        Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2),
        49152,
    )
}

/// Our builder writes UDP checksum 0 where scapy computed one (bytes 46-47
/// of an IPv6 datagram), and hop limit 64.
#[test]
fn build_and_parse_ipv6_send_only_vector() {
    let mut bth = Bth::new(Opcode::SEND_ONLY, 0x11, 0);
    bth.ack_req = true;
    let h = Headers {
        ip: v6_vector_ip().into(),
        bth,
        ext: ExtHeaders::NONE,
    };
    let mut out = [0u8; 128];
    let n = build(&h, &[b"hello ", b"RoCE!!"], &mut out).unwrap();
    let mut v = hex(IPV6_SEND_ONLY);
    assert_eq!(v[46..48], [0xff, 0xc6], "scapy's UDP checksum");
    v[46..48].fill(0);
    assert_eq!(&out[..n], &v[..]);
    let original = hex(IPV6_SEND_ONLY);
    let p = parse(&original).unwrap();
    assert_eq!(p.ip, h.ip);
    assert_eq!(p.payload, b"hello RoCE!!");
    assert_eq!((p.bth.dest_qp, p.icrc), (0x11, 0x5f1e_ea95));
    // The UDP-socket path over IPv6: the same payload, the same ICRC.
    let n = build_udp_payload(&h, &[b"hello RoCE!!"], &mut out).unwrap();
    assert_eq!(&out[..n], &v[48..]);
    assert_eq!(parse_udp_payload(&v6_vector_ip(), &v[48..]).unwrap(), p);
}

#[test]
fn build_and_parse_ipv6_write_only_vector() {
    let d = hex(IPV6_WRITE_ONLY);
    let (computed, carried) = computed_and_carried(&d, ipv6_datagram_icrc);
    assert_eq!(computed, carried);
    assert_eq!(icrc_to_wire(computed), [0x55, 0x00, 0x5b, 0x0c]);
    let ip = Ipv6UdpFields {
        src_port: 0xC001,
        traffic_class: 0xB8,
        flow_label: 0x1_2345,
        ..v6_vector_ip()
    };
    let mut bth = Bth::new(Opcode::RDMA_WRITE_ONLY, 0x12, 0x100);
    bth.ack_req = true;
    let reth = Reth {
        va: 0x1000,
        rkey: 0x1234,
        dma_len: 8,
    };
    let h = Headers {
        ip: ip.into(),
        bth,
        ext: ExtHeaders {
            reth: Some(reth),
            ..ExtHeaders::NONE
        },
    };
    let mut out = [0u8; 128];
    let n = build(&h, &[b"ABCDEFGH"], &mut out).unwrap();
    assert_eq!(&out[..n], &d[..]);
    let p = parse(&d).unwrap();
    assert_eq!(p.ip, IpUdpFields::V6(ip));
    assert_eq!((p.ext.reth, p.payload), (Some(reth), &b"ABCDEFGH"[..]));
}

/// The IPv6 pseudo-header masks: traffic class, flow label and hop limit
/// (and the UDP checksum, and BTH byte 4) may change on the way without
/// breaking the ICRC; version, payload length, next header and the
/// addresses may not.
#[test]
fn ipv6_icrc_masks_exactly_the_variant_fields() {
    let v = hex(IPV6_WRITE_ONLY);
    let mut routed = v.clone();
    routed[0] = 0x60; // traffic class 0x0B.. -> 0x00 (high nibble)
    routed[1] = 0x0F; // traffic class low nibble, flow label high nibble
    routed[2] = 0xAB;
    routed[3] = 0xCD;
    routed[7] = 1; // hop limit after routers
    routed[46..48].copy_from_slice(&[0x12, 0x34]);
    routed[52] |= 0xC0; // FECN, BECN
    let p = parse(&routed).expect("variant fields are masked");
    let f = p.ip.as_v6().unwrap();
    assert_eq!((f.traffic_class, f.flow_label), (0x00, 0xF_ABCD));
    assert!(p.bth.fecn && p.bth.becn);
    for (at, x) in [
        (5, 0x04),
        (8, 0x01),
        (23, 0x01),
        (24, 0x80),
        (39, 0x01),
        (41, 1),
    ] {
        let mut e = v.clone();
        e[at] ^= x;
        let (computed, carried) = computed_and_carried(&e, ipv6_datagram_icrc);
        assert_ne!(computed, carried, "byte {at} is covered");
    }
    // Next header and the version fail their own checks first.
    let mut e = v.clone();
    e[6] = 6;
    assert_eq!(parse(&e), Err(ParseError::NotUdp));
    e[6] = 17;
    e[0] = 0x4b;
    assert!(parse(&e).is_err());
}

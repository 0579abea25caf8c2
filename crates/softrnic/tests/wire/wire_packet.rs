//! Build → parse round trips for every opcode, segmentation across every
//! PMTU, and one test per parse and build error.

use std::net::Ipv4Addr;

use softrnic::wire::icrc::ipv4_datagram_icrc;
use softrnic::wire::ipv4_udp::ipv4_checksum;
use softrnic::wire::*;

const ALL_OPCODES: [Opcode; 25] = [
    Opcode::SEND_FIRST,
    Opcode::SEND_MIDDLE,
    Opcode::SEND_LAST,
    Opcode::SEND_LAST_WITH_IMMEDIATE,
    Opcode::SEND_ONLY,
    Opcode::SEND_ONLY_WITH_IMMEDIATE,
    Opcode::RDMA_WRITE_FIRST,
    Opcode::RDMA_WRITE_MIDDLE,
    Opcode::RDMA_WRITE_LAST,
    Opcode::RDMA_WRITE_LAST_WITH_IMMEDIATE,
    Opcode::RDMA_WRITE_ONLY,
    Opcode::RDMA_WRITE_ONLY_WITH_IMMEDIATE,
    Opcode::RDMA_READ_REQUEST,
    Opcode::RDMA_READ_RESPONSE_FIRST,
    Opcode::RDMA_READ_RESPONSE_MIDDLE,
    Opcode::RDMA_READ_RESPONSE_LAST,
    Opcode::RDMA_READ_RESPONSE_ONLY,
    Opcode::ACKNOWLEDGE,
    Opcode::ATOMIC_ACKNOWLEDGE,
    Opcode::COMPARE_SWAP,
    Opcode::FETCH_ADD,
    Opcode::SEND_LAST_WITH_INVALIDATE,
    Opcode::SEND_ONLY_WITH_INVALIDATE,
    Opcode::UD_SEND_ONLY,
    Opcode::UD_SEND_ONLY_WITH_IMMEDIATE,
];

fn ip() -> Ipv4UdpFields {
    Ipv4UdpFields {
        src: Ipv4Addr::new(10, 1, 2, 3),
        dst: Ipv4Addr::new(10, 4, 5, 6),
        src_port: 0xC123,
        dst_port: ROCEV2_PORT,
        ident: 0x4242,
        dont_fragment: true,
        tos: 0x02,
    }
}

/// Sample values for exactly the headers `op` carries.
fn ext_for(op: Opcode) -> ExtHeaders {
    let set = op.info().unwrap().headers;
    let has = |h| set.contains(h);
    ExtHeaders {
        deth: has(HeaderSet::DETH).then_some(Deth {
            qkey: 0x1111_2222,
            src_qp: 0xAB_CDEF,
        }),
        reth: has(HeaderSet::RETH).then_some(Reth {
            va: 0xFFFF_8000_1234_5678,
            rkey: 0xDEAD_BEEF,
            dma_len: 0x8000_0000,
        }),
        atomic_eth: has(HeaderSet::ATOMIC_ETH).then_some(AtomicEth {
            va: 0x7000_0000_0000_0008,
            rkey: 0x0102_0304,
            swap_add: u64::MAX,
            compare: 0x0123_4567_89AB_CDEF,
        }),
        aeth: has(HeaderSet::AETH).then_some(Aeth {
            syndrome: Syndrome::RnrNak(RnrTimer::new(12).unwrap()),
            msn: 0xFF_FFFF,
        }),
        atomic_ack: has(HeaderSet::ATOMIC_ACK_ETH).then_some(0x5555_AAAA_5555_AAAA),
        imm: has(HeaderSet::IMMDT).then_some(0x0BAD_CAFE),
        ieth: has(HeaderSet::IETH).then_some(0x0000_0100),
    }
}

fn headers_for(op: Opcode, psn: u32) -> Headers {
    let mut bth = Bth::new(op, 0x00AB_CD01, psn);
    bth.solicited = true;
    bth.ack_req = true;
    bth.pkey = 0x7FFF;
    Headers {
        ip: ip().into(),
        bth,
        ext: ext_for(op),
    }
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

/// Fixes both length fields, the IPv4 checksum and the ICRC after a test
/// has edited a datagram, so only the edit itself is wrong.
fn reseal(d: &mut [u8]) {
    let total = d.len() as u16;
    d[2..4].copy_from_slice(&total.to_be_bytes());
    d[24..26].copy_from_slice(&(total - 20).to_be_bytes());
    d[10..12].copy_from_slice(&[0, 0]);
    let c = ipv4_checksum(&d[..20]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    let n = d.len();
    let icrc = ipv4_datagram_icrc(&d[..n - 4]).unwrap();
    d[n - 4..].copy_from_slice(&icrc_to_wire(icrc));
}

fn built(h: &Headers, data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 9000];
    let n = build(h, &[data], &mut out).unwrap();
    out.truncate(n);
    out
}

fn check_round_trip(h: &Headers, data: &[u8]) {
    let datagram = built(h, data);
    let info = h.bth.opcode.info().unwrap();
    assert_eq!(datagram.len(), datagram_len(h, data.len()).unwrap());
    assert_eq!(
        datagram.len(),
        28 + info.header_len() + data.len() + pad_len(data.len()) + ICRC_LEN
    );
    let parsed = parse(&datagram).unwrap();
    let mut expect_bth = h.bth;
    expect_bth.pad_count = pad_len(data.len()) as u8;
    assert_eq!(parsed.bth, expect_bth);
    assert_eq!(parsed.ext, h.ext);
    assert_eq!(parsed.info, info);
    assert_eq!(parsed.payload, data);
    assert_eq!(parsed.ip, h.ip);

    // UDP-payload framing: same bytes after the 28-byte IPv4/UDP headers.
    let mut out = vec![0u8; 9000];
    let len = build_udp_payload(h, &[data], &mut out).unwrap();
    assert_eq!(len, udp_payload_len(h, data.len()).unwrap());
    assert_eq!(&out[..len], &datagram[28..]);
    let from_udp = parse_udp_payload(&h.ip, &out[..len]).unwrap();
    assert_eq!(from_udp, parsed);
}

#[test]
fn every_opcode_round_trips() {
    for op in ALL_OPCODES {
        let info = op.info().unwrap();
        let lens: &[usize] = if info.payload {
            &[0, 1, 2, 3, 4, 5, 255, 256, 1021, 4096]
        } else {
            &[0]
        };
        for &len in lens {
            check_round_trip(&headers_for(op, 0xFF_FFFE), &payload(len));
        }
    }
}

#[test]
fn congestion_bits_and_reserved_variant_fields_round_trip() {
    let mut h = headers_for(Opcode::SEND_ONLY, 7);
    h.bth.fecn = true;
    h.bth.becn = true;
    h.bth.mig_req = true;
    h.ip = Ipv4UdpFields {
        dont_fragment: false,
        tos: 0xC3,
        ..ip()
    }
    .into();
    check_round_trip(&h, b"x");
}

/// Splits a message into packets the way a requester does and checks the
/// parsed pieces reassemble it.
fn segment_and_reassemble(op: [Opcode; 4], pmtu: Pmtu, len: usize) {
    let msg = payload(len);
    let mtu = pmtu.bytes() as usize;
    let count = segment_count(len as u32, pmtu) as usize;
    let mut got = Vec::new();
    let mut psn = PSN_MASK - 1; // crosses the PSN wrap
    for i in 0..count {
        let chunk = &msg[(i * mtu).min(len)..((i + 1) * mtu).min(len)];
        let opcode = match (i == 0, i + 1 == count) {
            (true, true) => op[3],
            (true, false) => op[0],
            (false, false) => op[1],
            (false, true) => op[2],
        };
        let h = headers_for(opcode, psn);
        let d = built(&h, chunk);
        let p = parse(&d).unwrap();
        let position = p.info.position;
        if matches!(position, Position::First | Position::Middle) {
            assert_eq!(p.payload.len(), mtu);
            assert_eq!(p.bth.pad_count, 0);
        }
        assert_eq!(p.bth.psn, psn);
        got.extend_from_slice(p.payload);
        psn = psn_add(psn, 1);
    }
    assert_eq!(got, msg);
}

#[test]
fn segmentation_every_pmtu() {
    let send = [
        Opcode::SEND_FIRST,
        Opcode::SEND_MIDDLE,
        Opcode::SEND_LAST,
        Opcode::SEND_ONLY,
    ];
    let write = [
        Opcode::RDMA_WRITE_FIRST,
        Opcode::RDMA_WRITE_MIDDLE,
        Opcode::RDMA_WRITE_LAST,
        Opcode::RDMA_WRITE_ONLY,
    ];
    let read = [
        Opcode::RDMA_READ_RESPONSE_FIRST,
        Opcode::RDMA_READ_RESPONSE_MIDDLE,
        Opcode::RDMA_READ_RESPONSE_LAST,
        Opcode::RDMA_READ_RESPONSE_ONLY,
    ];
    for pmtu in Pmtu::ALL {
        let m = pmtu.bytes() as usize;
        for len in [0, 1, 3, m - 1, m, m + 1, 2 * m, 3 * m + 3] {
            for ops in [send, write, read] {
                segment_and_reassemble(ops, pmtu, len);
            }
        }
    }
}

#[test]
fn both_payload_feeding_modes_agree() {
    let h = headers_for(Opcode::RDMA_WRITE_ONLY, 9);
    let data = payload(1000);
    let mut a = vec![0u8; 2000];
    let mut b = PacketBuilder::datagram(&h, data.len(), &mut a).unwrap();
    b.push_payload(&data[..10]).unwrap();
    b.push_payload(&data[10..]).unwrap();
    let na = b.finish().unwrap();

    let mut c = vec![0u8; 2000];
    let mut b = PacketBuilder::datagram(&h, data.len(), &mut c).unwrap();
    b.push_payload(&data[..100]).unwrap();
    let (slot, mut hasher) = b.payload_slot();
    assert_eq!(slot.len(), 900);
    // Fill in chunks, hashing each right after it lands.
    for (dst, src) in slot.chunks_mut(128).zip(data[100..].chunks(128)) {
        dst.copy_from_slice(src);
        hasher.update(dst);
    }
    assert_eq!(b.payload_remaining(), 0);
    let nc = b.finish().unwrap();
    assert_eq!(a[..na], c[..nc]);
    assert_eq!(parse(&a[..na]).unwrap().payload, &data[..]);
}

#[test]
fn gsi_mad_packet() {
    let body = [0x5Au8; MAD_LEN];
    let h = gsi_headers(ip(), 0x12);
    let d = built(&h, &body);
    let p = parse(&d).unwrap();
    assert_eq!(p.bth.opcode, Opcode::UD_SEND_ONLY);
    assert_eq!(p.bth.dest_qp, GSI_QPN);
    assert_eq!(
        p.ext.deth,
        Some(Deth {
            qkey: GSI_QKEY,
            src_qp: 1
        })
    );
    assert_eq!(p.payload.len(), MAD_LEN);
}

// ---- parse errors ------------------------------------------------------

fn sample() -> Vec<u8> {
    built(&headers_for(Opcode::RDMA_WRITE_ONLY, 5), b"0123456")
}

#[test]
fn truncation_at_every_length() {
    let d = sample();
    for len in 0..d.len() {
        assert_eq!(parse(&d[..len]), Err(ParseError::Truncated), "len {len}");
    }
    let udp = &d[28..];
    for len in 0..16 {
        assert_eq!(
            parse_udp_payload(&ip(), &udp[..len]),
            Err(ParseError::Truncated),
            "len {len}"
        );
    }
    for len in 16..udp.len() {
        assert!(parse_udp_payload(&ip(), &udp[..len]).is_err(), "len {len}");
    }
}

#[test]
fn link_padding_after_datagram_is_ignored() {
    let mut d = sample();
    let n = d.len();
    d.extend_from_slice(&[0xEE; 6]);
    assert_eq!(parse(&d).unwrap().payload, b"0123456");
    assert_eq!(parse(&d).unwrap(), parse(&d[..n]).unwrap());
}

#[test]
fn every_single_byte_corruption_is_rejected_or_variant() {
    let d = sample();
    // TOS, TTL, UDP checksum and BTH byte 4 are variant: the ICRC masks
    // them (TOS/TTL still need a fixed IPv4 checksum).
    let variant = [1usize, 8, 26, 27, 32];
    for at in 0..d.len() {
        let mut e = d.clone();
        e[at] ^= 0x01;
        match parse(&e) {
            Ok(_) => assert!(variant.contains(&at), "byte {at} flip accepted"),
            Err(err) => {
                assert!(
                    !variant.contains(&at) || matches!(at, 1 | 8),
                    "byte {at}: {err:?}"
                );
                if at >= 28 {
                    assert_eq!(err, ParseError::BadIcrc, "byte {at}");
                }
            }
        }
    }
}

#[test]
fn variant_fields_do_not_affect_icrc() {
    let mut d = sample();
    d[1] = 0xB9; // DSCP/ECN, e.g. CE marked by a switch
    d[8] = 3; // TTL after routers
    d[26] = 0x12; // a UDP checksum someone filled in
    d[32] |= 0xC0; // FECN + BECN
    d[10..12].copy_from_slice(&[0, 0]);
    let c = ipv4_checksum(&d[..20]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    let p = parse(&d).unwrap();
    assert!(p.bth.fecn && p.bth.becn);
    assert_eq!(p.ip.as_v4().map(|f| f.tos), Some(0xB9));
}

#[test]
fn bad_icrc() {
    let mut d = sample();
    let n = d.len();
    d[n - 1] ^= 0x80;
    assert_eq!(parse(&d), Err(ParseError::BadIcrc));
    let mut d = sample();
    d[45] ^= 0x04; // inside the RETH
    assert_eq!(parse(&d), Err(ParseError::BadIcrc));
    // The IPv4 identification is invariant: a resent packet with a new ID
    // and only a fixed-up IPv4 checksum fails.
    let mut d = sample();
    d[5] ^= 1;
    d[10..12].copy_from_slice(&[0, 0]);
    let c = ipv4_checksum(&d[..20]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(parse(&d), Err(ParseError::BadIcrc));
    // The UDP-payload path with the wrong pseudo-header facts.
    let d = sample();
    let mut other = ip();
    other.ident ^= 1;
    assert_eq!(
        parse_udp_payload(&other, &d[28..]),
        Err(ParseError::BadIcrc)
    );
    other = ip();
    other.src_port ^= 1;
    assert_eq!(
        parse_udp_payload(&other, &d[28..]),
        Err(ParseError::BadIcrc)
    );
}

#[test]
fn ip_and_udp_header_errors() {
    let d = sample();
    let mut e = d.clone();
    e[0] = 0x55;
    assert_eq!(parse(&e), Err(ParseError::BadVersion));
    // Version 6 makes it an IPv6 header, whose payload length (the IPv4
    // identification, 0x4242) runs past the datagram.
    e[0] = 0x65;
    assert_eq!(parse(&e), Err(ParseError::Truncated));
    e[0] = 0x46;
    assert_eq!(parse(&e), Err(ParseError::BadIhl));
    e[0] = 0x44;
    assert_eq!(parse(&e), Err(ParseError::BadIhl));

    let mut e = d.clone();
    e[11] ^= 1;
    assert_eq!(parse(&e), Err(ParseError::BadIpChecksum));

    let mut e = d.clone();
    e[6] |= 0x20; // MF
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::Fragmented));
    let mut e = d.clone();
    e[7] = 1; // offset 8
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::Fragmented));

    let mut e = d.clone();
    e[9] = 6;
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::NotUdp));

    let mut e = d.clone();
    e[22..24].copy_from_slice(&4790u16.to_be_bytes());
    assert_eq!(parse(&e), Err(ParseError::NotUdp4791));

    let mut e = d.clone();
    e[25] -= 4;
    assert_eq!(parse(&e), Err(ParseError::LengthMismatch));

    let mut e = d.clone();
    e[2..4].copy_from_slice(&27u16.to_be_bytes());
    e[10..12].copy_from_slice(&[0, 0]);
    let c = ipv4_checksum(&e[..20]);
    e[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(parse(&e), Err(ParseError::LengthMismatch));

    // A shorter total length than the buffer, with UDP length to match:
    // the stated datagram is cut inside the ICRC.
    let mut e = d.clone();
    let short = (d.len() - 2) as u16;
    e[2..4].copy_from_slice(&short.to_be_bytes());
    e[24..26].copy_from_slice(&(short - 20).to_be_bytes());
    e[10..12].copy_from_slice(&[0, 0]);
    let c = ipv4_checksum(&e[..20]);
    e[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(parse(&e), Err(ParseError::BadIcrc));
}

#[test]
fn transport_header_errors() {
    // TVer != 0.
    let mut e = sample();
    e[29] |= 0x01;
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::BadVersion));

    // Opcodes this RNIC does not speak: UC, RD, reserved, CNP, vendor.
    for op in [0x15u8, 0x18, 0x1C, 0x20, 0x24, 0x40, 0x81, 0xE0, 0xFF] {
        let mut e = sample();
        e[28] = op;
        reseal(&mut e);
        assert_eq!(parse(&e), Err(ParseError::BadOpcode), "opcode {op:#x}");
    }

    // WRITE Only cut inside its RETH (no payload, pad 0).
    let h = headers_for(Opcode::RDMA_WRITE_ONLY, 5);
    let mut e = built(&h, b"");
    e.drain(28 + 12 + 8..e.len() - 4);
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::Truncated));

    // Reserved AETH syndrome on an ACK.
    let mut e = built(&headers_for(Opcode::ACKNOWLEDGE, 1), b"");
    e[40] = 0x45;
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::BadSyndrome));

    // An ACK with bytes after its AETH.
    let mut e = built(&headers_for(Opcode::ACKNOWLEDGE, 1), b"");
    e.splice(44..44, [0u8; 4]);
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::LengthMismatch));
}

#[test]
fn bad_pad() {
    // PadCnt on an opcode without payload.
    let mut e = built(&headers_for(Opcode::ACKNOWLEDGE, 1), b"");
    e[29] |= 0x10;
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::BadPad));

    // PadCnt larger than what follows the headers.
    let mut e = built(&headers_for(Opcode::SEND_ONLY, 1), b"");
    e[29] |= 0x30;
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::BadPad));

    // Payload + pad not a multiple of 4 (a pad byte removed).
    let mut e = built(&headers_for(Opcode::SEND_ONLY, 1), b"abcde");
    let n = e.len();
    e.remove(n - 5);
    reseal(&mut e);
    assert_eq!(parse(&e), Err(ParseError::BadPad));

    // A consistent PadCnt change is invisible to the wire layer: the pad
    // bytes become payload (their content is not checked).
    let mut e = built(&headers_for(Opcode::SEND_ONLY, 1), b"abcde");
    e[29] &= !0x30;
    reseal(&mut e);
    assert_eq!(parse(&e).unwrap().payload, b"abcde\0\0\0");
}

// ---- build errors ------------------------------------------------------

#[test]
fn buffer_too_small_at_every_length() {
    let h = headers_for(Opcode::RDMA_WRITE_ONLY_WITH_IMMEDIATE, 3);
    let data = payload(13);
    let full = datagram_len(&h, data.len()).unwrap();
    let udp = udp_payload_len(&h, data.len()).unwrap();
    for len in 0..full {
        let mut out = vec![0u8; len];
        assert_eq!(
            build(&h, &[&data], &mut out),
            Err(BuildError::BufferTooSmall),
            "len {len}"
        );
    }
    for len in 0..udp {
        let mut out = vec![0u8; len];
        assert_eq!(
            build_udp_payload(&h, &[&data], &mut out),
            Err(BuildError::BufferTooSmall),
            "len {len}"
        );
    }
    assert_eq!(build(&h, &[&data], &mut vec![0u8; full]), Ok(full));
    assert_eq!(
        build_udp_payload(&h, &[&data], &mut vec![0u8; udp]),
        Ok(udp)
    );
}

#[test]
fn build_rejects_bad_headers() {
    let mut out = [0u8; 256];
    let mut h = headers_for(Opcode::SEND_ONLY, 1);
    h.bth.opcode = Opcode(0x24);
    assert_eq!(build(&h, &[], &mut out), Err(BuildError::BadOpcode));

    let mut h = headers_for(Opcode::RDMA_WRITE_ONLY, 1);
    h.ext.reth = None;
    assert_eq!(build(&h, &[], &mut out), Err(BuildError::HeaderMismatch));
    let mut h = headers_for(Opcode::SEND_ONLY, 1);
    h.ext.imm = Some(1);
    assert_eq!(build(&h, &[], &mut out), Err(BuildError::HeaderMismatch));

    let h = headers_for(Opcode::RDMA_READ_REQUEST, 1);
    assert_eq!(
        build(&h, &[b"x"], &mut out),
        Err(BuildError::PayloadNotAllowed)
    );

    let mut h = headers_for(Opcode::SEND_ONLY, 1);
    h.bth.psn = 0x100_0000;
    assert_eq!(build(&h, &[], &mut out), Err(BuildError::FieldRange));
    let mut h = headers_for(Opcode::SEND_ONLY, 1);
    h.bth.dest_qp = 0x100_0000;
    assert_eq!(build(&h, &[], &mut out), Err(BuildError::FieldRange));
    let mut h = headers_for(Opcode::ACKNOWLEDGE, 1);
    h.ext.aeth = Some(Aeth {
        syndrome: Syndrome::ACK,
        msn: 0x100_0000,
    });
    assert_eq!(build(&h, &[], &mut out), Err(BuildError::FieldRange));

    let h = headers_for(Opcode::SEND_ONLY, 1);
    let big = vec![0u8; 65_536];
    let mut huge = vec![0u8; 70_000];
    assert_eq!(build(&h, &[&big], &mut huge), Err(BuildError::TooLong));
    assert_eq!(
        build_udp_payload(&h, &[&big], &mut huge),
        Err(BuildError::TooLong)
    );
    // Payload + pad is a multiple of 4, so the largest datagram is 65532.
    let max = 65_532 - 28 - 12 - 4;
    assert_eq!(build(&h, &[&big[..max]], &mut huge), Ok(65_532));
    assert_eq!(
        build(&h, &[&big[..=max]], &mut huge),
        Err(BuildError::TooLong)
    );
}

#[test]
fn payload_length_enforced() {
    let h = headers_for(Opcode::SEND_ONLY, 1);
    let mut out = [0u8; 256];
    let mut b = PacketBuilder::datagram(&h, 8, &mut out).unwrap();
    b.push_payload(b"1234").unwrap();
    assert_eq!(b.push_payload(b"56789"), Err(BuildError::PayloadLength));
    assert_eq!(b.payload_remaining(), 4);
    assert_eq!(b.finish(), Err(BuildError::PayloadLength));

    let mut b = PacketBuilder::udp_payload(&h, 8, &mut out).unwrap();
    let (slot, mut hasher) = b.payload_slot();
    slot[..4].copy_from_slice(b"abcd");
    hasher.update(&slot[..4]);
    assert_eq!(b.finish(), Err(BuildError::PayloadLength));
}

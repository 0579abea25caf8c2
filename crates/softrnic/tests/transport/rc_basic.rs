//! RC transport between two devices on a clean in-memory fabric: every
//! operation, byte-exact data and exact CQEs, between IPv4 nodes and (the
//! `_ipv6` tests) between IPv6 nodes.

use crate::common;
use hwq::{Doorbells, Verbs};

use common::*;
use hwq::wqe::{Access, SendOpcode, WqeFlags};
use hwq::{Cqe, CqeOpcode, CqeStatus};
use links::Faults;
use softrnic::qp::QpState;

const ALL: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

fn clean() -> Faults {
    Faults {
        delay_us: 5,
        ..Faults::default()
    }
}

fn setup(pmtu: u32, psn_a: u32, psn_b: u32) -> (World, Qp, Qp) {
    setup_on(false, pmtu, psn_a, psn_b)
}

/// Two connected QPs between IPv4 nodes, or IPv6 nodes when `v6`.
fn setup_on(v6: bool, pmtu: u32, psn_a: u32, psn_b: u32) -> (World, Qp, Qp) {
    let w = if v6 {
        World::new_v6(clean(), 4096, 16 << 20)
    } else {
        World::new(clean(), 4096, 16 << 20)
    };
    let qa = w.a.qp(64);
    let qb = w.b.qp(64);
    w.connect(&qa, &qb, pmtu, psn_a, psn_b, 8);
    (w, qa, qb)
}

fn wait_cqes(w: &mut World, qa: &mut Qp, qb: &mut Qp, sends: usize, recvs: usize) {
    w.run_until(200_000, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        qa.scq.seen.len() >= sends && qb.rcq.seen.len() >= recvs
    });
}

fn expect(c: &Cqe, wr_id: u64, op: CqeOpcode, status: CqeStatus, len: u32) {
    assert_eq!(
        (c.wr_id, c.op(), c.cqe_status(), c.byte_len),
        (wr_id, Some(op), status, len),
        "{c:?}"
    );
}

#[test]
fn send_receive_sizes_and_psn_wrap() {
    send_receive_sizes_and_psn_wrap_on(false);
}

#[test]
fn send_receive_sizes_and_psn_wrap_ipv6() {
    send_receive_sizes_and_psn_wrap_on(true);
}

fn send_receive_sizes_and_psn_wrap_on(v6: bool) {
    let sizes = [
        0usize,
        1,
        3,
        255,
        256,
        257,
        1023,
        1024,
        1025,
        3 * 1024 + 3,
        65_536,
        1 << 20,
    ];
    for (pmtu, psn) in [(1024, 0), (256, 0xFF_FFF0), (4096, 0xFF_FFFE)] {
        let (mut w, mut qa, mut qb) = setup_on(v6, pmtu, psn, psn ^ 0x5A5A);
        let src = w.a.register(2 << 20, Access::LOCAL_WRITE);
        let dst = w.b.register(2 << 20, Access::LOCAL_WRITE);
        for (i, &n) in sizes.iter().enumerate() {
            let data = pattern(i as u64, n);
            w.a.mem.fill(src.logical, &data);
            w.b.post_recv(&mut qb, 100 + i as u64, &[dst.sge(0, (2 << 20) as u32)]);
            // Three SGEs when the message is long enough.
            let sges = if n >= 3 {
                vec![
                    src.sge(0, 1),
                    src.sge(1, (n / 2 - 1) as u32),
                    src.sge(n as u64 / 2, (n - n / 2) as u32),
                ]
            } else {
                vec![src.sge(0, n as u32)]
            };
            w.a.post_send(&mut qa, wqe(SendOpcode::Send, i as u64, &sges));
            wait_cqes(&mut w, &mut qa, &mut qb, i + 1, i + 1);
            expect(
                &qa.scq.seen[i],
                i as u64,
                CqeOpcode::Send,
                CqeStatus::Success,
                n as u32,
            );
            let r = qb.rcq.seen[i];
            expect(
                &r,
                100 + i as u64,
                CqeOpcode::Receive,
                CqeStatus::Success,
                n as u32,
            );
            assert_eq!(
                (r.qpn, r.qp_context, r.flags),
                (qb.qpn.raw(), 0xC0DE_0000 + u64::from(w.b.pd.raw()), 0)
            );
            assert_eq!(qa.scq.seen[i].qpn, qa.qpn.raw());
            assert!(w.b.mem.get(dst.logical, n) == data, "pmtu {pmtu} size {n}");
        }
        assert_eq!(w.a.state(&qa), QpState::Connected);
        assert_eq!(w.b.state(&qb), QpState::Connected);
    }
}

#[test]
fn inline_send_with_solicited_event() {
    let (mut w, mut qa, mut qb) = setup(1024, 7, 9);
    let dst = w.b.register(4096, Access::LOCAL_WRITE);
    w.b.post_recv(&mut qb, 1, &[dst.sge(0, 4096)]);
    let mut s = wqe(SendOpcode::Send, 5, &[]);
    s.flags |= (WqeFlags::INLINE | WqeFlags::SOLICITED).bits();
    s.inline_area_mut()[..11].copy_from_slice(b"hello world");
    s.inline_len = 11;
    s.total_len = 11;
    w.a.post_send(&mut qa, s);
    wait_cqes(&mut w, &mut qa, &mut qb, 1, 1);
    expect(&qa.scq.seen[0], 5, CqeOpcode::Send, CqeStatus::Success, 11);
    expect(
        &qb.rcq.seen[0],
        1,
        CqeOpcode::Receive,
        CqeStatus::Success,
        11,
    );
    assert_eq!(qb.rcq.seen[0].flags, hwq::cqe::CQE_FLAG_SOLICITED);
    assert_eq!(w.b.mem.get(dst.logical, 11), b"hello world");
}

#[test]
fn write_and_read_sizes() {
    write_and_read_sizes_on(false);
}

#[test]
fn write_and_read_sizes_ipv6() {
    write_and_read_sizes_on(true);
}

fn write_and_read_sizes_on(v6: bool) {
    let sizes = [0usize, 1, 1023, 1024, 1025, 4099, 100_000, 1 << 20];
    let (mut w, mut qa, mut qb) = setup_on(v6, 1024, 0xFF_FFF8, 0xFF_FFFF);
    let local = w.a.register(3 << 20, Access::LOCAL_WRITE);
    let remote = w.b.register(2 << 20, ALL);
    let mut done = 0;
    for (i, &n) in sizes.iter().enumerate() {
        let data = pattern(1000 + i as u64, n);
        w.a.mem.fill(local.logical, &data);
        w.a.post_send(
            &mut qa,
            rdma(
                SendOpcode::Write,
                i as u64,
                &[local.sge(0, n as u32)],
                &remote,
                3,
            ),
        );
        done += 1;
        wait_cqes(&mut w, &mut qa, &mut qb, done, 0);
        expect(
            &qa.scq.seen[done - 1],
            i as u64,
            CqeOpcode::Write,
            CqeStatus::Success,
            n as u32,
        );
        assert!(w.b.mem.get(remote.logical + 3, n) == data, "write of {n}");
        // Read it back into a different place, in two SGEs.
        let back = pattern(2000 + i as u64, n);
        w.b.mem.fill(remote.logical + 3, &back);
        let half = (n / 2) as u32;
        let second = (1 << 20) + u64::from(half) + 64;
        let sges = [local.sge(1 << 20, half), local.sge(second, n as u32 - half)];
        w.a.post_send(
            &mut qa,
            rdma(SendOpcode::Read, 50 + i as u64, &sges, &remote, 3),
        );
        done += 1;
        wait_cqes(&mut w, &mut qa, &mut qb, done, 0);
        expect(
            &qa.scq.seen[done - 1],
            50 + i as u64,
            CqeOpcode::Read,
            CqeStatus::Success,
            n as u32,
        );
        let mut got = w.a.mem.get(local.logical + (1 << 20), half as usize);
        got.extend(w.a.mem.get(local.logical + second, n - half as usize));
        assert!(got == back, "read of {n}");
    }
    assert!(qb.rcq.seen.is_empty(), "WRITE and READ consume no receive");
}

#[derive(Default)]
struct Tap(std::sync::Mutex<Vec<(links::Direction, Vec<u8>)>>);
struct TapRef(std::sync::Arc<Tap>);
impl links::Capture for TapRef {
    fn capture(&self, d: links::Direction, datagram: &[u8]) {
        self.0.0.lock().unwrap().push((d, datagram.to_vec()));
    }
}

/// An IPv4 UDP payload cannot be checked: the ICRC covers the IPv4
/// identification and flags, which no UDP socket sees. The device refuses
/// it (counted malformed) rather than check it against a guessed header,
/// however well-formed it is.
#[test]
fn an_ipv4_udp_payload_is_refused_unchecked() {
    use softrnic::wire::opcode::Opcode;
    use softrnic::wire::{Bth, ExtHeaders, Headers, Ipv4UdpFields, build_udp_payload};
    use std::net::{IpAddr, SocketAddr};
    let (w, _qa, qb) = setup_on(false, 1024, 1, 2);
    let (IpAddr::V4(from), IpAddr::V4(to)) = (w.a.addr, w.b.addr) else {
        panic!("an IPv4 world");
    };
    let headers = Headers {
        ip: Ipv4UdpFields::new(from, to, 4791).for_packet(2).into(),
        bth: Bth::new(Opcode::SEND_ONLY, qb.qpn.raw(), 2),
        ext: ExtHeaders::default(),
    };
    let mut out = vec![0u8; 256];
    let n = build_udp_payload(&headers, &[&[5u8; 16]], &mut out).unwrap();
    let before = w.b.dev.stats();
    w.b.receive_udp_payload(
        SocketAddr::new(w.a.addr, 4791),
        SocketAddr::new(w.b.addr, 4791),
        &out[..n],
    );
    let after = w.b.dev.stats();
    assert_eq!(after.rx_malformed, before.rx_malformed + 1);
    assert_eq!(after.rx_bad_icrc, before.rx_bad_icrc);
}

/// A whole datagram (what raw sockets, the L2 port and the fabric carry)
/// is checked against the identification it arrived with, whatever it is
/// (a NIC's or rxe's changing ones): right for it, the packet is taken
/// (here: valid, for no QP, so dropped as nobody's); the same packet with
/// another identification and the same ICRC is a bad ICRC.
#[test]
fn a_datagram_is_checked_against_its_own_identification() {
    use softrnic::wire::opcode::Opcode;
    use softrnic::wire::{Bth, ExtHeaders, Headers, Ipv4UdpFields, build};
    use std::net::IpAddr;
    let (w, _qa, _qb) = setup_on(false, 1024, 1, 2);
    let (IpAddr::V4(from), IpAddr::V4(to)) = (w.a.addr, w.b.addr) else {
        panic!("an IPv4 world");
    };
    for ident in [0x1357u16, 0xBEEF, 1] {
        let mut ip = Ipv4UdpFields::new(from, to, 4791);
        ip.ident = ident;
        let headers = Headers {
            ip: ip.into(),
            bth: Bth::new(Opcode::SEND_ONLY, 0x00AB_CDEF, 3),
            ext: ExtHeaders::default(),
        };
        let mut d = vec![0u8; 256];
        let n = build(&headers, &[&[5u8; 16]], &mut d).unwrap();
        d.truncate(n);
        assert_eq!(u16::from_be_bytes([d[4], d[5]]), ident);
        let before = w.b.dev.stats();
        w.b.receive(&d);
        let after = w.b.dev.stats();
        assert_eq!(after.rx_dropped, before.rx_dropped + 1, "{ident:#x} taken");
        assert_eq!(after.rx_bad_icrc, before.rx_bad_icrc);
        // Another identification under the same ICRC (the header checksum
        // kept right): the ICRC no longer matches.
        d[4..6].copy_from_slice(&(ident ^ 0x0100).to_be_bytes());
        d[10..12].fill(0);
        let sum = softrnic::wire::ipv4_udp::ipv4_checksum(&d[..20]);
        d[10..12].copy_from_slice(&sum.to_be_bytes());
        w.b.receive(&d);
        assert_eq!(w.b.dev.stats().rx_bad_icrc, before.rx_bad_icrc + 1);
    }
}

/// Over IPv6 a UDP socket sees every field the ICRC covers (addresses,
/// ports, lengths: traffic class, flow label and hop limit are masked),
/// and the tap shows IPv6 datagrams.
#[test]
fn udp_payload_transport_and_capture_ipv6() {
    udp_payload_transport_and_capture_on(true);
}

fn udp_payload_transport_and_capture_on(v6: bool) {
    use links::Direction;
    use softrnic::wire::ip_udp::split_datagram;
    use std::net::SocketAddr;
    let (w, mut qa, mut qb) = setup_on(v6, 1024, 1, 2);
    let tap = std::sync::Arc::new(Tap::default());
    w.b.set_capture(Some(Box::new(TapRef(tap.clone()))));
    let src = w.a.register(8192, Access::LOCAL_WRITE);
    let dst = w.b.register(8192, Access::LOCAL_WRITE);
    let data = pattern(77, 3000);
    w.a.mem.fill(src.logical, &data);
    w.b.post_recv(&mut qb, 1, &[dst.sge(0, 8192)]);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 1, &[src.sge(0, 3000)]));
    // Carry every datagram as a UDP socket would: the receiver sees only
    // the UDP payload and the socket addresses.
    for _ in 0..1000 {
        w.a.poll();
        w.b.poll();
        w.clock.set(w.clock.now() + 10);
        while let Some((to, bytes)) = w.fabric.take_due(u64::MAX) {
            let from = softrnic::wire::parse(&bytes)
                .expect("a valid packet")
                .ip
                .src();
            let (at, payload) = split_datagram(&bytes).expect("IP and UDP headers");
            assert_eq!(at, SocketAddr::new(to, 4791));
            let node = if to == w.a.addr { &w.a } else { &w.b };
            node.receive_udp_payload(SocketAddr::new(from, 4791), at, payload);
        }
        qa.scq.drain();
        qb.rcq.drain();
        if !qa.scq.seen.is_empty() && !qb.rcq.seen.is_empty() {
            break;
        }
    }
    expect(
        &qa.scq.seen[0],
        1,
        CqeOpcode::Send,
        CqeStatus::Success,
        3000,
    );
    expect(
        &qb.rcq.seen[0],
        1,
        CqeOpcode::Receive,
        CqeStatus::Success,
        3000,
    );
    assert!(w.b.mem.get(dst.logical, 3000) == data);
    assert_eq!(w.b.dev.stats().rx_bad_icrc, 0);
    let captured = tap.0.lock().unwrap();
    let rx = captured
        .iter()
        .filter(|(d, _)| *d == Direction::Receive)
        .count();
    let tx = captured
        .iter()
        .filter(|(d, _)| *d == Direction::Transmit)
        .count();
    assert_eq!(rx, 3, "three SEND packets at PMTU 1024");
    assert!(tx >= 1, "at least the ACK");
    // Captured receives are whole datagrams of the nodes' IP version that
    // parse and verify.
    for (_, d) in captured.iter() {
        assert_eq!(d[0] >> 4, if v6 { 6 } else { 4 });
        assert!(softrnic::wire::parse(d).is_ok());
    }
}

#[test]
fn shared_receive_queue_feeds_sends() {
    use hwq::device::{QpSetup, ReceiveSource};
    use hwq::ring::ring;
    use hwq::{RecvWqe, SendWqe};
    let mut w = World::new(clean(), 4096, 8 << 20);
    let mut qa = w.a.qp(16);
    let (mut srq_p, srq_c) = ring::<RecvWqe>(16).unwrap();
    let srqn = w.b.dev.create_srq(w.b.pd, srq_c, 0).unwrap();
    let mut rcq = w.b.cq(64);
    let scq = w.b.cq(64);
    let (_sp, sc) = ring::<SendWqe>(16).unwrap();
    let qpn =
        w.b.dev
            .create_qp(QpSetup {
                pd: w.b.pd,
                send_cqn: scq.cqn,
                recv_cqn: rcq.cqn,
                sq: sc,
                rq: ReceiveSource::Shared(srqn),
                context: 5,
            })
            .unwrap();
    let qb = Qp {
        qpn,
        sq: ring::<SendWqe>(1).unwrap().0,
        rq: ring::<RecvWqe>(1).unwrap().0,
        scq,
        rcq: w.b.cq(4),
    };
    w.connect(&qa, &qb, 1024, 10, 20, 2);
    let src = w.a.register(8192, Access::LOCAL_WRITE);
    let dst = w.b.register(8192, Access::LOCAL_WRITE);
    for i in 0..3u64 {
        let mut r = RecvWqe {
            wr_id: 300 + i,
            sge_count: 1,
            ..RecvWqe::default()
        };
        r.sges[0] = dst.sge(i * 2048, 2048);
        srq_p.push(r).unwrap();
    }
    srq_p.publish();
    w.b.dev.srq_doorbell(srqn);
    for i in 0..3u64 {
        w.a.mem.fill(src.logical + i * 2048, &pattern(i, 2000));
        w.a.post_send(
            &mut qa,
            wqe(SendOpcode::Send, i, &[src.sge(i * 2048, 2000)]),
        );
    }
    w.run_until(10_000, |_| {
        qa.scq.drain();
        rcq.drain();
        qa.scq.seen.len() == 3 && rcq.seen.len() == 3
    });
    for i in 0..3u64 {
        expect(
            &rcq.seen[i as usize],
            300 + i,
            CqeOpcode::Receive,
            CqeStatus::Success,
            2000,
        );
        assert_eq!(rcq.seen[i as usize].qp_context, 5);
        assert!(w.b.mem.get(dst.logical + i * 2048, 2000) == pattern(i, 2000));
    }
}

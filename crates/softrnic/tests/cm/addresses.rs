//! A device with several addresses (`SoftRnic::set_addresses`): dual-stack
//! devices connect through connection management in both families at
//! once, an unspecified local address picks the source of the peer's
//! family, a removed address stops receiving (counted dropped) and its
//! connections carry on once it is back.

use crate::common;
use hwq::{Connections, Device};

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use crate::common::net::accept_params;
use crate::common::net::{Ev, Recorder};
use common::*;
use hwq::device::{ConnectParams, DeviceError, EventSink};
use hwq::wqe::{Access, SendOpcode};
use hwq::{ConnId, CqeOpcode, CqeStatus};
use links::Faults;
use softrnic::device::SoftRnic;
use softrnic::qp::{Path, QpState};

const STEPS: u64 = 200_000;

fn clean() -> Faults {
    Faults {
        delay_us: 10,
        ..Faults::default()
    }
}

fn recorder(dev: &SoftRnic) -> Arc<Recorder> {
    let r = Arc::new(Recorder::default());
    // Never dropped: the device may deliver to it until the process ends.
    std::mem::forget(r.clone());
    // SAFETY: the recorder lives for the rest of the process (see above)
    // and its `Arc` allocation does not move.
    dev.attach(unsafe { EventSink::new(&*r) }).unwrap();
    r
}

fn events(r: &Recorder) -> Vec<Ev> {
    r.cm.lock().unwrap().clone()
}

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Two dual-stack devices: A at 10.0.0.1 and fd00::1, B at fd00::2 and
/// 10.0.0.2 (IPv6 first: the order does not decide the family).
fn dual_stack() -> (World, Arc<Recorder>, Arc<Recorder>) {
    let w = World::new(clean(), 1024, 4 << 20);
    w.a.set_addresses(&[ADDR_A.into(), ADDR6_A.into()]);
    w.b.set_addresses(&[ADDR6_B.into(), ADDR_B.into()]);
    let (ra, rb) = (recorder(&w.a.dev), recorder(&w.b.dev));
    (w, ra, rb)
}

/// Connects `qa` on A from `local` to `remote` on B (which listens),
/// accepting onto `qb`; returns both connection ids, A's local address
/// and the addresses B's request reported.
fn connect(
    w: &mut World,
    (ra, rb): (&Recorder, &Recorder),
    (qa, qb): (&Qp, &Qp),
    local: SocketAddr,
    remote: SocketAddr,
) -> (ConnId, ConnId, SocketAddr, (SocketAddr, SocketAddr)) {
    let params = ConnectParams {
        local,
        remote,
        inbound_reads: 2,
        outbound_reads: 2,
        private_data: b"",
    };
    let (ca, bound) = w.a.dev.cm_connect(qa.qpn, &params).unwrap();
    let before = events(rb).len();
    w.run_until(STEPS, |_| events(rb).len() > before);
    let Some(Ev::ConnectRequest {
        conn_id: cb, info, ..
    }) = events(rb).pop()
    else {
        panic!("no request: {:?}", events(rb))
    };
    w.b.dev
        .cm_accept(cb, &accept_params(qb.qpn, 2, 2, b""))
        .unwrap();
    w.run_until(STEPS, |_| {
        events(ra)
            .iter()
            .any(|e| matches!(e, Ev::Replied { conn_id, .. } if *conn_id == ca))
    });
    w.a.dev.cm_establish(ca).unwrap();
    (ca, cb, bound, (info.local, info.remote))
}

/// A SEND of `len` bytes (pattern `id`) from `qa` into a receive on `qb`;
/// checks both completions and the bytes.
fn send(w: &mut World, (qa, qb): (&mut Qp, &mut Qp), id: u64, len: u32) {
    let src = w.a.register(u64::from(len), Access::LOCAL_WRITE);
    let dst = w.b.register(u64::from(len), Access::LOCAL_WRITE);
    let message = pattern(id, len as usize);
    w.a.mem.fill(src.logical, &message);
    let (sent, received) = (qa.scq.seen.len(), qb.rcq.seen.len());
    w.b.post_recv(qb, id, &[dst.sge(0, len)]);
    w.a.post_send(qa, wqe(SendOpcode::Send, id, &[src.sge(0, len)]));
    w.run_until(STEPS, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        qa.scq.seen.len() > sent && qb.rcq.seen.len() > received
    });
    let (s, r) = (qa.scq.seen[sent], qb.rcq.seen[received]);
    assert_eq!((s.wr_id, s.cqe_status()), (id, CqeStatus::Success));
    assert_eq!(
        (r.wr_id, r.op(), r.cqe_status(), r.byte_len),
        (id, Some(CqeOpcode::Receive), CqeStatus::Success, len)
    );
    assert_eq!(w.b.mem.get(dst.logical, len as usize), message);
}

#[test]
fn dual_stack_devices_listen_and_connect_in_both_families() {
    let (mut w, ra, rb) = dual_stack();
    // `::` is any address of both families; one port may be listened on
    // at two addresses, and a wildcard then conflicts with them.
    assert_eq!(w.b.dev.cm_listen(sa("[::]:445")).unwrap().1, sa("[::]:445"));
    w.b.dev.cm_listen(sa("10.0.0.2:446")).unwrap();
    w.b.dev.cm_listen(sa("[fd00::2]:446")).unwrap();
    for taken in ["0.0.0.0:446", "[::]:446", "[fd00::2]:446", "10.0.0.2:445"] {
        assert_eq!(
            w.b.dev.cm_listen(sa(taken)).map(|_| ()),
            Err(DeviceError::AddressInUse),
            "{taken}"
        );
    }
    let (mut qa4, mut qb4) = (w.a.qp(8), w.b.qp(8));
    let (mut qa6, mut qb6) = (w.a.qp(8), w.b.qp(8));
    let (mut qa6b, mut qb6b) = (w.a.qp(8), w.b.qp(8));
    let (_, _, local4, seen4) = connect(
        &mut w,
        (&ra, &rb),
        (&qa4, &qb4),
        sa("[::]:0"),
        sa("10.0.0.2:445"),
    );
    assert_eq!(local4.ip(), IpAddr::V4(ADDR_A), "`::` to IPv4: A's IPv4");
    assert_eq!(seen4, (sa("10.0.0.2:445"), local4));
    let (_, _, local6, seen6) = connect(
        &mut w,
        (&ra, &rb),
        (&qa6, &qb6),
        sa("[::]:0"),
        sa("[fd00::2]:445"),
    );
    assert_eq!(local6.ip(), IpAddr::V6(ADDR6_A), "`::` to IPv6: A's IPv6");
    assert_eq!(seen6, (sa("[fd00::2]:445"), local6));
    // The listener on B's IPv6 address takes the request for port 446
    // there; A binds its own IPv6 address explicitly.
    let (_, _, local6b, seen6b) = connect(
        &mut w,
        (&ra, &rb),
        (&qa6b, &qb6b),
        sa("[fd00::1]:0"),
        sa("[fd00::2]:446"),
    );
    assert_eq!(local6b.ip(), IpAddr::V6(ADDR6_A));
    assert_eq!(seen6b.0, sa("[fd00::2]:446"));
    // Traffic in both families at once (a QP takes only its own pair of
    // addresses: A's IPv6 QP sent from A's IPv6 address).
    send(&mut w, (&mut qa4, &mut qb4), 1, 3000);
    send(&mut w, (&mut qa6, &mut qb6), 2, 3000);
    send(&mut w, (&mut qa6b, &mut qb6b), 3, 100);
    assert_eq!(w.a.dev.stats().rx_dropped + w.b.dev.stats().rx_dropped, 0);
    assert_eq!(
        w.a.dev.stats().rx_malformed + w.b.dev.stats().rx_malformed,
        0
    );
}

#[test]
fn an_unspecified_local_address_picks_the_source_of_the_peers_family() {
    let w = World::new(clean(), 1024, 4 << 20);
    let link_local: IpAddr = "fe80::1".parse().unwrap();
    w.a.set_addresses(&[link_local, ADDR6_A.into(), ADDR_A.into()]);
    let qa = w.a.qp(8);
    let connect = |local: &str, remote: &str| {
        let params = ConnectParams {
            local: sa(local),
            remote: sa(remote),
            inbound_reads: 1,
            outbound_reads: 1,
            private_data: b"",
        };
        let (id, bound) = w.a.dev.cm_connect(qa.qpn, &params)?;
        // Frees the QP for the next attempt.
        w.a.dev.cm_release(id);
        Ok(bound.ip())
    };
    // The longest shared prefix: fd00::1 for fd00::2, fe80::1 for a
    // link-local peer; the first IPv6 address for one sharing no bit.
    assert_eq!(connect("[::]:0", "[fd00::2]:1"), Ok(ADDR6_A.into()));
    assert_eq!(connect("[::]:0", "[fe80::2]:1"), Ok(link_local));
    assert_eq!(connect("[::]:0", "[2001:db8::1]:1"), Ok(link_local));
    assert_eq!(connect("[::]:0", "10.0.0.2:1"), Ok(ADDR_A.into()));
    assert_eq!(connect("0.0.0.0:0", "10.0.0.2:1"), Ok(ADDR_A.into()));
    assert_eq!(connect("[fe80::1]:0", "[fd00::2]:1"), Ok(link_local));
    // Refused: the IPv4 wildcard to an IPv6 peer, an own address of the
    // other family, an address not the device's.
    for (local, remote) in [
        ("0.0.0.0:0", "[fd00::2]:1"),
        ("10.0.0.1:0", "[fd00::2]:1"),
        ("[fd00::1]:0", "10.0.0.2:1"),
        ("10.0.0.9:0", "10.0.0.2:1"),
    ] {
        assert_eq!(
            connect(local, remote),
            Err(DeviceError::InvalidAddress),
            "{local} -> {remote}"
        );
    }
    // Without IPv6 addresses IPv6 peers are unreachable, and `::` binds
    // a listener to IPv4 only.
    w.a.dev.set_addresses(&[ADDR_A.into()]).unwrap();
    for (local, remote) in [("[::]:0", "[fd00::2]:1"), ("[fd00::1]:0", "[fd00::2]:1")] {
        assert_eq!(
            connect(local, remote),
            Err(DeviceError::InvalidAddress),
            "{local} -> {remote}"
        );
    }
    assert_eq!(w.a.dev.cm_listen(sa("[::]:7")).unwrap().1, sa("0.0.0.0:7"));
    assert_eq!(
        w.a.dev.cm_listen(sa("[fd00::1]:8")).map(|_| ()),
        Err(DeviceError::InvalidAddress)
    );
    // No address at all: nothing to listen on or connect from.
    w.a.dev.set_addresses(&[]).unwrap();
    assert!(w.a.dev.addresses().is_empty());
    assert_eq!(
        w.a.dev.cm_listen(sa("[::]:9")).map(|_| ()),
        Err(DeviceError::InvalidAddress)
    );
    assert_eq!(
        connect("[::]:0", "10.0.0.2:1"),
        Err(DeviceError::InvalidAddress)
    );
    // Unusable addresses leave the set as it was.
    assert_eq!(
        w.a.dev
            .set_addresses(&[ADDR_A.into(), Ipv4Addr::BROADCAST.into()]),
        Err(DeviceError::InvalidAddress)
    );
    assert!(w.a.dev.addresses().is_empty());
}

#[test]
fn the_engines_connect_picks_and_checks_its_source_too() {
    let w = World::new(clean(), 1024, 4 << 20);
    let link_local: IpAddr = "fe80::1".parse().unwrap();
    w.a.set_addresses(&[ADDR_A.into(), link_local, ADDR6_A.into()]);
    let path = |remote: &str| Path {
        remote: sa(remote),
        remote_qpn: 9,
        pmtu: 1024,
        send_psn: 0,
        recv_psn: 0,
        outbound_reads: 1,
        inbound_reads: 1,
    };
    let mut q = w.a.qp(8);
    let other: IpAddr = "fd00::9".parse().unwrap();
    assert_eq!(
        w.a.dev
            .connect_qp_from(q.qpn.raw(), other, path("[fd00::2]:4791")),
        Err(DeviceError::InvalidAddress),
        "not the device's"
    );
    assert_eq!(
        w.a.dev
            .connect_qp_from(q.qpn.raw(), ADDR_A.into(), path("[fd00::2]:4791")),
        Err(DeviceError::InvalidAddress),
        "another family"
    );
    w.a.dev
        .connect_qp(q.qpn.raw(), path("[fd00::2]:4791"))
        .unwrap();
    assert_eq!(w.a.state(&q), QpState::Connected);
    // Its packets leave from fd00::1.
    let buf = w.a.register(64, Access::LOCAL_WRITE);
    w.a.post_send(&mut q, wqe(SendOpcode::Send, 1, &[buf.sge(0, 64)]));
    w.a.poll();
    let (to, bytes) = w.fabric.take_due(u64::MAX).expect("a packet in flight");
    let p = softrnic::wire::parse(&bytes).unwrap();
    assert_eq!((to, p.ip.src()), (IpAddr::V6(ADDR6_B), IpAddr::V6(ADDR6_A)));
    // A device with no IPv6 address cannot connect a QP to an IPv6 peer.
    w.b.set_addresses(&[ADDR_B.into()]);
    let qb = w.b.qp(8);
    assert_eq!(
        w.b.dev.connect_qp(qb.qpn.raw(), path("[fd00::1]:4791")),
        Err(DeviceError::InvalidAddress)
    );
}

#[test]
fn a_removed_address_drops_its_packets_and_its_connections_resume_when_it_is_back() {
    let (mut w, ra, rb) = dual_stack();
    w.b.dev.cm_listen(sa("[::]:445")).unwrap();
    let (mut qa4, mut qb4) = (w.a.qp(8), w.b.qp(8));
    let (mut qa6, mut qb6) = (w.a.qp(8), w.b.qp(8));
    connect(
        &mut w,
        (&ra, &rb),
        (&qa4, &qb4),
        sa("[::]:0"),
        sa("10.0.0.2:445"),
    );
    connect(
        &mut w,
        (&ra, &rb),
        (&qa6, &qb6),
        sa("[::]:0"),
        sa("[fd00::2]:445"),
    );
    send(&mut w, (&mut qa6, &mut qb6), 1, 2000);

    // B loses its IPv6 address (the fabric still delivers to it).
    w.b.dev.set_addresses(&[ADDR_B.into()]).unwrap();
    assert_eq!(w.b.dev.addresses().as_slice(), [IpAddr::V4(ADDR_B)]);
    assert!(!w.b.dev.has_address(ADDR6_B.into()));
    let dropped = w.b.dev.stats().rx_dropped;
    let src = w.a.register(2000, Access::LOCAL_WRITE);
    let dst = w.b.register(2000, Access::LOCAL_WRITE);
    let message = pattern(2, 2000);
    w.a.mem.fill(src.logical, &message);
    w.b.post_recv(&mut qb6, 2, &[dst.sge(0, 2000)]);
    w.a.post_send(&mut qa6, wqe(SendOpcode::Send, 2, &[src.sge(0, 2000)]));
    // The packet and two retransmissions reach B and are dropped.
    w.run_until(STEPS, |w| w.b.dev.stats().rx_dropped >= dropped + 3);
    assert!(w.a.dev.stats().retransmitted >= 2);
    qa6.scq.drain();
    qb6.rcq.drain();
    assert_eq!(
        (qa6.scq.seen.len(), qb6.rcq.seen.len()),
        (1, 1),
        "nothing new"
    );
    assert_eq!(
        (w.a.state(&qa6), w.b.state(&qb6)),
        (QpState::Connected, QpState::Connected),
        "the connection is left alone"
    );
    // The IPv4 connection is not affected.
    send(&mut w, (&mut qa4, &mut qb4), 3, 500);
    // New connections to or from the removed address are refused.
    assert_eq!(
        w.b.dev.cm_listen(sa("[fd00::2]:500")).map(|_| ()),
        Err(DeviceError::InvalidAddress)
    );

    // Back: the next retransmission gets through.
    w.b.set_addresses(&[ADDR_B.into(), ADDR6_B.into()]);
    w.run_until(STEPS, |_| {
        qa6.scq.drain();
        qb6.rcq.drain();
        qa6.scq.seen.len() > 1 && qb6.rcq.seen.len() > 1
    });
    assert_eq!(
        (qa6.scq.seen[1].wr_id, qa6.scq.seen[1].cqe_status()),
        (2, CqeStatus::Success)
    );
    assert_eq!(qb6.rcq.seen[1].cqe_status(), CqeStatus::Success);
    assert_eq!(w.b.mem.get(dst.logical, 2000), message);
    send(&mut w, (&mut qa6, &mut qb6), 4, 100);
}

#[test]
fn a_request_to_a_removed_address_is_dropped_until_it_is_back() {
    let (mut w, _ra, rb) = dual_stack();
    w.b.dev.cm_listen(sa("[::]:445")).unwrap();
    w.b.dev.set_addresses(&[ADDR_B.into()]).unwrap();
    let qa = w.a.qp(8);
    let params = ConnectParams {
        local: sa("[::]:0"),
        remote: sa("[fd00::2]:445"),
        inbound_reads: 1,
        outbound_reads: 1,
        private_data: b"",
    };
    // A still has IPv6: it may try.
    w.a.dev.cm_connect(qa.qpn, &params).unwrap();
    w.run_until(STEPS, |w| w.b.dev.stats().rx_dropped >= 2);
    assert!(
        events(&rb).is_empty(),
        "no request while the address is gone"
    );
    assert_eq!(w.b.dev.stats().cm_packets, 0);
    // Back before A's retries run out: the next REQ is heard.
    w.b.set_addresses(&[ADDR6_B.into(), ADDR_B.into()]);
    w.run_until(STEPS, |_| !events(&rb).is_empty());
    let Some(Ev::ConnectRequest { info, .. }) = events(&rb).pop() else {
        panic!("{:?}", events(&rb))
    };
    assert_eq!(info.local, sa("[fd00::2]:445"));
    assert_eq!(info.remote.ip(), IpAddr::V6(ADDR6_A));
}

//! Connection management on a clean fabric: the handshake, rejects,
//! listeners and ports, disconnects, loopback.

use hwq::{Connections, Device};

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use crate::common::net::accept_params;
use crate::common::net::{Ev, Net, Node};
use hwq::device::{ConnectionInfo, DeviceError};
use hwq::{ConnId, ListenId, Qpn};
use links::Faults;

const STEPS: usize = 10_000;

fn clean() -> Faults {
    Faults {
        delay_us: 10,
        ..Faults::default()
    }
}

/// The single ConnectRequest `node` received (panics otherwise).
fn the_request(node: &Node) -> (ListenId, ConnId, ConnectionInfo, Vec<u8>) {
    let reqs = node.requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    match reqs.into_iter().next() {
        Some(Ev::ConnectRequest {
            listen_id,
            conn_id,
            info,
            data,
        }) => (listen_id, conn_id, info, data),
        _ => unreachable!(),
    }
}

/// Connects node 0 to a listener on node 1 and completes the handshake;
/// returns (active conn, passive conn).
fn connect(net: &Net, port: u16) -> (ConnId, ConnId) {
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let (qa, qb) = (a.qp(), b.qp());
    let before = b.requests().len();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(port), 4, 4, b"hi"))
        .unwrap();
    net.run_until(STEPS, |_| b.requests().len() > before);
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
        unreachable!()
    };
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 4, 4, b"ok"))
        .unwrap();
    net.run_until(STEPS, |_| {
        a.events_of(ca)
            .iter()
            .any(|e| matches!(e, Ev::Replied { .. }))
    });
    a.rnic.cm_establish(ca).unwrap();
    net.run_until(STEPS, |_| {
        b.events_of(cb).contains(&Ev::Established { conn_id: cb })
    });
    (ca, cb)
}

#[test]
fn connect_accept_establish_with_private_data_and_read_limits() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let (lid, bound) = b.rnic.cm_listen(b.at(445)).unwrap();
    assert_eq!(bound, b.at(445));
    let (qa, qb) = (a.qp(), b.qp());

    let request_data: Vec<u8> = (1..=56).collect();
    // The initiator asks IRD 8, ORD 100 (capped at 16).
    let (ca, local) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 8, 100, &request_data))
        .unwrap();
    let SocketAddr::V4(local4) = local else {
        panic!()
    };
    assert_eq!(*local4.ip(), a.addr);
    assert!(
        (49152..=65535).contains(&local4.port()),
        "ephemeral local port {local}"
    );

    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (listen_id, cb, info, data) = the_request(b);
    assert_eq!(listen_id, lid);
    assert_eq!(
        info,
        ConnectionInfo {
            local: b.at(445),
            remote: local,
            inbound_reads: 8,
            outbound_reads: 16
        }
    );
    assert_eq!(data, request_data, "all 56 bytes of consumer data arrive");

    // The acceptor asks IRD 16, ORD 2: it serves min(16, initiator ORD 16)
    // and issues min(2, initiator IRD 8).
    // The most an acceptor may send: the adapter's accept/reject limit.
    let reply_data = [0xA5u8; 148];
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 16, 2, &reply_data))
        .unwrap();
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    let Ev::Replied { info, data, .. } = &a.events_of(ca)[0] else {
        panic!("{:?}", a.events_of(ca))
    };
    assert_eq!(
        *info,
        ConnectionInfo {
            local,
            remote: b.at(445),
            inbound_reads: 2,
            outbound_reads: 16
        }
    );
    assert_eq!(data.as_slice(), reply_data.as_slice());
    assert!(b.events_of(cb).len() == 1, "no Established before the RTU");

    a.rnic.cm_establish(ca).unwrap();
    assert_eq!(
        a.rnic.cm_establish(ca),
        Err(DeviceError::InvalidState),
        "once"
    );
    net.run_until(STEPS, |_| b.events_of(cb).len() == 2);
    assert_eq!(b.events_of(cb)[1], Ev::Established { conn_id: cb });
    net.settle(STEPS, 10_000_000);
    assert_eq!(a.events_of(ca).len(), 1);
    assert_eq!(b.events_of(cb).len(), 2);
    assert_eq!(a.rnic.cm_stats().retransmitted, 0);
}

#[test]
fn shorter_private_data_is_zero_padded_to_the_field() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(1)).unwrap();
    let qa = a.qp();
    a.rnic
        .cm_connect(qa.qpn, &a.params(b.at(1), 1, 1, b"abc"))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (_, _, _, data) = the_request(b);
    assert_eq!(
        data.len(),
        56,
        "IB CM carries no length: the whole field arrives"
    );
    assert_eq!(&data[..3], b"abc");
    assert!(data[3..].iter().all(|&x| x == 0));
}

#[test]
fn private_data_limits() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(7)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    assert_eq!(
        a.rnic
            .cm_connect(qa.qpn, &a.params(b.at(7), 1, 1, &[0; 57]))
            .map(|_| ()),
        Err(DeviceError::InvalidParameter)
    );
    a.rnic
        .cm_connect(qa.qpn, &a.params(b.at(7), 1, 1, &[0; 56]))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (_, cb, _, _) = the_request(b);
    assert_eq!(
        b.rnic
            .cm_accept(cb, &accept_params(qb.qpn, 1, 1, &[0; 149])),
        Err(DeviceError::InvalidParameter)
    );
    assert_eq!(
        b.rnic.cm_reject(cb, &[0; 149]),
        Err(DeviceError::InvalidParameter)
    );
    let caps = b.rnic.caps();
    assert_eq!((caps.max_connect_data, caps.max_accept_data), (56, 148));
    b.rnic.cm_reject(cb, &[0; 148]).unwrap();
}

#[test]
fn consumer_reject_delivers_private_data() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(80)).unwrap();
    let qa = a.qp();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(80), 1, 1, b"please"))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (_, cb, _, _) = the_request(b);
    b.rnic.cm_reject(cb, b"go away").unwrap();
    assert_eq!(b.rnic.cm_reject(cb, b""), Err(DeviceError::InvalidState));
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    let Ev::Rejected {
        by_consumer, data, ..
    } = &a.events_of(ca)[0]
    else {
        panic!()
    };
    assert!(*by_consumer);
    assert_eq!(data.len(), 148);
    assert_eq!(&data[..7], b"go away");
    net.settle(STEPS, 10_000_000);
    assert_eq!(a.events_of(ca).len(), 1);
    assert_eq!(
        b.events_of(cb).len(),
        1,
        "the rejecter gets no event of its own"
    );
}

#[test]
fn initiator_rejects_after_the_reply() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(80)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(80), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (_, cb, _, _) = the_request(b);
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    a.rnic.cm_reject(ca, b"changed my mind").unwrap();
    net.run_until(STEPS, |_| b.events_of(cb).len() == 2);
    assert_eq!(
        b.events_of(cb)[1],
        Ev::Failed {
            conn_id: cb,
            timed_out: false
        }
    );
}

#[test]
fn no_listener_is_a_reject_not_by_the_consumer() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let qa = a.qp();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(9999), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    assert!(matches!(
        a.events_of(ca)[0],
        Ev::Rejected {
            by_consumer: false,
            ..
        }
    ));
    assert!(b.cm_events().is_empty());
    assert_eq!(b.rnic.cm_stats().no_listener, 1);
}

#[test]
fn paused_listener_refuses_and_resumed_accepts() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let (lid, _) = b.rnic.cm_listen(b.at(4000)).unwrap();
    b.rnic.cm_pause_listener(lid, true);
    let qa = a.qp();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(4000), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    assert!(matches!(
        a.events_of(ca)[0],
        Ev::Rejected {
            by_consumer: false,
            ..
        }
    ));
    assert!(b.requests().is_empty());
    a.rnic.cm_release(ca);

    b.rnic.cm_pause_listener(lid, false);
    let qa2 = a.qp();
    a.rnic
        .cm_connect(qa2.qpn, &a.params(b.at(4000), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    assert_eq!(the_request(b).0, lid);
}

#[test]
fn stopped_listener_vanishes_and_frees_its_port() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let (lid, _) = b.rnic.cm_listen(b.at(4001)).unwrap();
    b.rnic.cm_stop_listener(lid);
    let qa = a.qp();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(4001), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    assert!(matches!(
        a.events_of(ca)[0],
        Ev::Rejected {
            by_consumer: false,
            ..
        }
    ));
    let (lid2, _) = b.rnic.cm_listen(b.at(4001)).unwrap();
    assert_ne!(lid2, lid, "a stale listener id never names the new one");
    b.rnic.cm_pause_listener(lid, true); // stale: no effect
    let qa2 = a.qp();
    a.rnic
        .cm_connect(qa2.qpn, &a.params(b.at(4001), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    assert_eq!(the_request(b).0, lid2);
}

#[test]
fn listen_addresses_ports_and_conflicts() {
    let net = Net::new(2, clean());
    let b = &net.nodes[1];
    let any = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
    let (_, e1) = b.rnic.cm_listen(any).unwrap();
    let (_, e2) = b.rnic.cm_listen(b.at(0)).unwrap();
    for e in [e1, e2] {
        assert!((49152..=65535).contains(&e.port()), "{e}");
    }
    assert_ne!(e1.port(), e2.port());
    assert_eq!(e1.ip(), Ipv4Addr::UNSPECIFIED);
    assert_eq!(e2.ip(), b.addr);
    // The wildcard and the device's address share the port space.
    assert_eq!(
        b.rnic.cm_listen(b.at(e1.port())),
        Err(DeviceError::AddressInUse)
    );
    assert_eq!(
        b.rnic.cm_listen(SocketAddr::V4(SocketAddrV4::new(
            Ipv4Addr::UNSPECIFIED,
            e2.port()
        ))),
        Err(DeviceError::AddressInUse)
    );
    b.rnic.cm_listen(b.at(445)).unwrap();
    assert_eq!(b.rnic.cm_listen(b.at(445)), Err(DeviceError::AddressInUse));
    // Not our address, or IPv6.
    assert_eq!(
        b.rnic.cm_listen(net.nodes[0].at(446)),
        Err(DeviceError::InvalidAddress)
    );
    assert_eq!(
        b.rnic.cm_listen("[fe80::1]:446".parse().unwrap()),
        Err(DeviceError::InvalidAddress)
    );
}

#[test]
fn ephemeral_ports_are_distinct_and_recycled() {
    let net = Net::new(1, clean());
    let n = &net.nodes[0];
    let mut ids = Vec::new();
    let mut ports = Vec::new();
    loop {
        match n.rnic.cm_listen(n.at(0)) {
            Ok((id, bound)) => {
                assert!((49152..=65535).contains(&bound.port()), "{bound}");
                ids.push(id);
                ports.push(bound.port());
            }
            Err(DeviceError::NoResources) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(ids.len(), 256, "the listener table is full");
    let mut sorted = ports.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), ports.len(), "distinct ports");
    // A stopped listener gives its port back: many cycles never run out.
    for id in ids {
        n.rnic.cm_stop_listener(id);
    }
    for _ in 0..40_000 {
        let (id, _) = n.rnic.cm_listen(n.at(0)).unwrap();
        n.rnic.cm_stop_listener(id);
    }
    // An outbound connection from port 0 gets one too.
    let qp = n.qp();
    let remote = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 9, 9, 9), 1));
    let (_, local) = n
        .rnic
        .cm_connect(qp.qpn, &n.params(remote, 1, 1, b""))
        .unwrap();
    assert!((49152..=65535).contains(&local.port()));
}

#[test]
fn disconnect_from_the_initiator() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (ca, cb) = connect(&net, 445);
    a.rnic.cm_disconnect(ca).unwrap();
    assert_eq!(a.rnic.cm_disconnect(ca), Err(DeviceError::InvalidState));
    net.settle(STEPS, 10_000_000);
    assert_eq!(
        a.events_of(ca).last(),
        Some(&Ev::DisconnectDone { conn_id: ca })
    );
    assert_eq!(
        b.events_of(cb).last(),
        Some(&Ev::Disconnected { conn_id: cb })
    );
    let count = |n: &Node, c: ConnId| {
        n.events_of(c)
            .iter()
            .filter(|e| matches!(e, Ev::Disconnected { .. } | Ev::DisconnectDone { .. }))
            .count()
    };
    assert_eq!((count(a, ca), count(b, cb)), (1, 1));
    // The peer completes its own disconnect at once.
    b.rnic.cm_disconnect(cb).unwrap();
    net.settle(STEPS, 10_000_000);
    assert_eq!(
        b.events_of(cb).last(),
        Some(&Ev::DisconnectDone { conn_id: cb })
    );
    assert_eq!(
        b.events_of(cb)
            .iter()
            .filter(|e| matches!(e, Ev::Disconnected { .. }))
            .count(),
        1
    );
    assert_eq!(
        a.rnic.cm_stats().retransmitted + b.rnic.cm_stats().retransmitted,
        0
    );
}

#[test]
fn disconnect_from_the_acceptor() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (ca, cb) = connect(&net, 445);
    b.rnic.cm_disconnect(cb).unwrap();
    net.settle(STEPS, 10_000_000);
    assert_eq!(
        b.events_of(cb).last(),
        Some(&Ev::DisconnectDone { conn_id: cb })
    );
    assert_eq!(
        a.events_of(ca).last(),
        Some(&Ev::Disconnected { conn_id: ca })
    );
    assert_eq!(
        a.events_of(ca)
            .iter()
            .filter(|e| matches!(e, Ev::Disconnected { .. }))
            .count(),
        1
    );
}

#[test]
fn crossed_disconnects_both_complete_without_a_disconnect_event() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (ca, cb) = connect(&net, 445);
    a.rnic.cm_disconnect(ca).unwrap();
    b.rnic.cm_disconnect(cb).unwrap();
    net.settle(STEPS, 10_000_000);
    assert_eq!(
        a.events_of(ca).last(),
        Some(&Ev::DisconnectDone { conn_id: ca })
    );
    assert_eq!(
        b.events_of(cb).last(),
        Some(&Ev::DisconnectDone { conn_id: cb })
    );
    for (n, c) in [(a, ca), (b, cb)] {
        assert!(
            !n.events_of(c)
                .iter()
                .any(|e| matches!(e, Ev::Disconnected { .. }))
        );
    }
}

#[test]
fn release_of_an_unaccepted_request_rejects_it() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let qa = a.qp();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (_, cb, _, _) = the_request(b);
    b.rnic.cm_release(cb);
    assert_eq!(
        b.rnic.cm_accept(cb, &accept_params(b.qp().qpn, 1, 1, b"")),
        Err(DeviceError::NoSuchObject)
    );
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    assert!(matches!(
        a.events_of(ca)[0],
        Ev::Rejected {
            by_consumer: true,
            ..
        }
    ));
}

#[test]
fn release_of_an_established_connection_disconnects_the_peer() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (ca, cb) = connect(&net, 445);
    a.rnic.cm_release(ca);
    net.settle(STEPS, 10_000_000);
    assert_eq!(
        b.events_of(cb).last(),
        Some(&Ev::Disconnected { conn_id: cb })
    );
    assert_eq!(
        a.events_of(ca).len(),
        1,
        "a released connection reports nothing more"
    );
}

#[test]
fn initiator_gives_up_before_the_reply() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let qa = a.qp();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (_, cb, _, _) = the_request(b);
    a.rnic.cm_release(ca);
    net.run_until(STEPS, |_| b.events_of(cb).len() == 2);
    assert_eq!(
        b.events_of(cb)[1],
        Ev::Failed {
            conn_id: cb,
            timed_out: false
        }
    );
    assert_eq!(
        b.rnic.cm_accept(cb, &accept_params(b.qp().qpn, 1, 1, b"")),
        Err(DeviceError::InvalidState)
    );
}

#[test]
fn loopback_connection_to_own_address() {
    let net = Net::new(1, clean());
    let n = &net.nodes[0];
    let (_, bound) = n.rnic.cm_listen(n.at(0)).unwrap();
    let (q1, q2) = (n.qp(), n.qp());
    let (ca, local) = n
        .rnic
        .cm_connect(q1.qpn, &n.params(bound, 2, 2, b"self"))
        .unwrap();
    net.run_until(STEPS, |_| !n.requests().is_empty());
    let (_, cb, info, data) = the_request(n);
    assert_ne!(ca, cb);
    assert_eq!((info.local, info.remote), (bound, local));
    assert_eq!(&data[..4], b"self");
    n.rnic
        .cm_accept(cb, &accept_params(q2.qpn, 2, 2, b"me too"))
        .unwrap();
    net.run_until(STEPS, |_| {
        n.events_of(ca)
            .iter()
            .any(|e| matches!(e, Ev::Replied { .. }))
    });
    n.rnic.cm_establish(ca).unwrap();
    net.run_until(STEPS, |_| {
        n.events_of(cb).contains(&Ev::Established { conn_id: cb })
    });
    n.rnic.cm_disconnect(cb).unwrap();
    net.settle(STEPS, 10_000_000);
    assert_eq!(
        n.events_of(cb).last(),
        Some(&Ev::DisconnectDone { conn_id: cb })
    );
    assert_eq!(
        n.events_of(ca).last(),
        Some(&Ev::Disconnected { conn_id: ca })
    );
}

#[test]
fn command_checks() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let qa = a.qp();
    // Unknown QP, IPv6 peer, another device's local address.
    assert_eq!(
        a.rnic
            .cm_connect(Qpn::from_raw(999), &a.params(b.at(445), 1, 1, b""))
            .map(|_| ()),
        Err(DeviceError::NoSuchObject)
    );
    let v6: SocketAddr = "[fe80::2]:445".parse().unwrap();
    assert_eq!(
        a.rnic
            .cm_connect(qa.qpn, &a.params(v6, 1, 1, b""))
            .map(|_| ()),
        Err(DeviceError::InvalidAddress)
    );
    let mut p = a.params(b.at(445), 1, 1, b"");
    p.local = b.at(0);
    assert_eq!(
        a.rnic.cm_connect(qa.qpn, &p).map(|_| ()),
        Err(DeviceError::InvalidAddress)
    );
    // An explicit local port; the same 4-tuple twice is refused; one QP,
    // one connection.
    let mut p = a.params(b.at(445), 1, 1, b"");
    p.local = a.at(5000);
    let (ca, local) = a.rnic.cm_connect(qa.qpn, &p).unwrap();
    assert_eq!(local, a.at(5000));
    assert_eq!(
        a.rnic
            .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
            .map(|_| ()),
        Err(DeviceError::InvalidState)
    );
    let qa2 = a.qp();
    assert_eq!(
        a.rnic.cm_connect(qa2.qpn, &p).map(|_| ()),
        Err(DeviceError::AddressInUse)
    );
    // Commands out of order.
    assert_eq!(a.rnic.cm_establish(ca), Err(DeviceError::InvalidState));
    assert_eq!(
        a.rnic.cm_accept(ca, &accept_params(qa2.qpn, 1, 1, b"")),
        Err(DeviceError::InvalidState)
    );
    assert_eq!(a.rnic.cm_reject(ca, b""), Err(DeviceError::InvalidState));
    assert_eq!(
        a.rnic.cm_establish(ConnId::from_raw(12345)),
        Err(DeviceError::NoSuchObject)
    );
    a.rnic.cm_release(ConnId::from_raw(12345)); // unknown: ignored
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let (_, cb, info, _) = the_request(b);
    assert_eq!(info.remote, a.at(5000));
    // The acceptor's QP must be unbound.
    assert_eq!(
        b.rnic
            .cm_accept(cb, &accept_params(Qpn::from_raw(999), 1, 1, b"")),
        Err(DeviceError::NoSuchObject)
    );
}

/// The device's own NDK counters: a connection is an outbound connect on
/// the initiator and an accept on the listener's side; a `cm_connect`
/// refused before anything was sent and a connect nobody listens for are
/// each a connect failure of the initiator; neither side counts the
/// other's outcome.
#[test]
fn stats_count_connections_and_failed_attempts() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    connect(&net, 445);
    let (sa, sb) = (a.rnic.stats(), b.rnic.stats());
    assert_eq!((sa.connects, sa.accepts), (1, 0), "the initiator connected");
    assert_eq!((sb.connects, sb.accepts), (0, 1), "the listener accepted");
    assert_eq!((sa.connect_failures, sb.connect_failures), (0, 0));

    // An unspecified peer: refused before anything was sent.
    let qa = a.qp();
    let unreachable = SocketAddr::from(([0, 0, 0, 0], 445));
    assert_eq!(
        a.rnic.cm_connect(qa.qpn, &a.params(unreachable, 1, 1, b"")),
        Err(DeviceError::InvalidAddress)
    );
    assert_eq!(a.rnic.stats().connect_failures, 1, "refused by the device");

    // Nobody listens: the peer's REJ fails the attempt.
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(9999), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    let (sa, sb) = (a.rnic.stats(), b.rnic.stats());
    assert_eq!(sa.connect_failures, 2, "refused by the peer");
    assert_eq!((sa.connects, sa.accepts), (1, 0));
    assert_eq!((sb.connects, sb.accepts, sb.connect_failures), (0, 1, 0));
}

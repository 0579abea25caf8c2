//! Connection management on a faulty fabric: lost and duplicated messages,
//! peers that vanish, consumers that take their time.

use hwq::Connections;

use crate::common::net::accept_params;
use hwq::ConnId;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use crate::common::net::{Ev, Net, Node};
use links::Faults;
use softrnic::cm::{CM_RESPONSE_TIMEOUT, MAX_CM_RETRIES, answer_wait_us};

const STEPS: usize = 100_000;

fn clean() -> Faults {
    Faults {
        delay_us: 10,
        ..Faults::default()
    }
}

fn replied(n: &Node, c: ConnId) -> bool {
    n.events_of(c)
        .iter()
        .any(|e| matches!(e, Ev::Replied { .. }))
}

#[test]
fn lost_req_is_retransmitted_and_still_connects() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    net.faults.set_faults(Faults {
        loss: 1.0,
        ..clean()
    });
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b"again"))
        .unwrap();
    // The runtime takes the REQ (its device woke it) into the loss.
    assert_eq!(net.pump(), 1);
    net.faults.set_faults(clean());
    assert_eq!(net.faults.stats().lost, 1);
    let start = net.now();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    assert!(
        net.now() - start >= answer_wait_us(CM_RESPONSE_TIMEOUT),
        "waited a REQ timeout"
    );
    assert_eq!(a.rnic.cm_stats().retransmitted, 1);
    let Some(Ev::ConnectRequest {
        conn_id: cb, data, ..
    }) = b.requests().pop()
    else {
        panic!()
    };
    assert_eq!(&data[..5], b"again");
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| replied(a, ca));
    a.rnic.cm_establish(ca).unwrap();
    net.run_until(STEPS, |_| {
        b.events_of(cb).contains(&Ev::Established { conn_id: cb })
    });
}

#[test]
fn lost_rep_and_rtu_are_recovered() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
        panic!()
    };
    // The REP is lost: the acceptor retransmits it (the initiator's REQ
    // retransmission would also bring it back).
    net.faults.set_faults(Faults {
        loss: 1.0,
        ..clean()
    });
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b"rep"))
        .unwrap();
    // The runtime takes the REP (its device woke it) into the loss.
    assert_eq!(net.pump(), 1);
    assert_eq!(net.faults.stats().lost, 1, "the REP was dropped");
    net.faults.set_faults(clean());
    net.run_until(STEPS, |_| replied(a, ca));
    // The RTU is lost: the acceptor's REP retransmission makes the
    // initiator send it again.
    net.faults.set_faults(Faults {
        loss: 1.0,
        ..clean()
    });
    a.rnic.cm_establish(ca).unwrap();
    assert_eq!(net.pump(), 1);
    assert_eq!(net.faults.stats().lost, 2, "the RTU was dropped");
    net.faults.set_faults(clean());
    net.run_until(STEPS, |_| {
        b.events_of(cb).contains(&Ev::Established { conn_id: cb })
    });
    net.settle(STEPS, 60_000_000);
    assert_eq!(
        a.events_of(ca)
            .iter()
            .filter(|e| matches!(e, Ev::Replied { .. }))
            .count(),
        1
    );
    assert_eq!(
        b.events_of(cb)
            .iter()
            .filter(|e| matches!(e, Ev::Established { .. }))
            .count(),
        1
    );
    assert!(
        a.events_of(ca)
            .iter()
            .all(|e| !matches!(e, Ev::Failed { .. } | Ev::Disconnected { .. }))
    );
}

#[test]
fn peer_gone_fails_with_timeout() {
    let net = Net::new(1, clean());
    let a = &net.nodes[0];
    let qa = a.qp();
    let nowhere = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 99), 445));
    let start = net.now();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(nowhere, 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    assert_eq!(
        a.events_of(ca),
        [Ev::Failed {
            conn_id: ca,
            timed_out: true
        }]
    );
    let elapsed = net.now() - start;
    let expected = answer_wait_us(CM_RESPONSE_TIMEOUT) * (u64::from(MAX_CM_RETRIES) + 1);
    assert_eq!(elapsed, expected);
    assert_eq!(a.rnic.cm_stats().retransmitted, u64::from(MAX_CM_RETRIES));
    // Nothing more is armed for it until release.
    net.settle(STEPS, 600_000_000);
    assert_eq!(a.events_of(ca).len(), 1);
    a.rnic.cm_release(ca);
    net.settle(STEPS, 600_000_000);
    assert_eq!(a.rnic.next_timer_us(), None);
}

#[test]
fn duplicate_req_does_not_create_two_connections() {
    // Every packet arrives twice.
    let net = Net::new(
        2,
        Faults {
            duplicate: 1.0,
            reorder_window_us: 50,
            seed: 7,
            ..clean()
        },
    );
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    net.settle(STEPS, 1_000);
    assert_eq!(b.requests().len(), 1);
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
        panic!()
    };
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| replied(a, ca));
    a.rnic.cm_establish(ca).unwrap();
    net.run_until(STEPS, |_| {
        b.events_of(cb).contains(&Ev::Established { conn_id: cb })
    });
    a.rnic.cm_disconnect(ca).unwrap();
    net.settle(STEPS, 60_000_000);
    assert_eq!(b.requests().len(), 1);
    assert_eq!(
        a.events_of(ca)
            .iter()
            .filter(|e| matches!(e, Ev::Replied { .. }))
            .count(),
        1
    );
    assert_eq!(
        b.events_of(cb),
        [
            b.requests()[0].clone(),
            Ev::Established { conn_id: cb },
            Ev::Disconnected { conn_id: cb }
        ]
    );
    assert_eq!(
        a.events_of(ca).last(),
        Some(&Ev::DisconnectDone { conn_id: ca })
    );
    assert!(b.rnic.cm_stats().duplicates >= 1);
}

#[test]
fn a_repeated_req_resends_the_rep() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
        panic!()
    };
    // Lose every REP for a while: the initiator's retransmitted REQs (the
    // acceptor's own retransmitted REPs as well) are what bring it across.
    net.faults.set_faults(Faults {
        loss: 1.0,
        ..clean()
    });
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    // The runtime takes the REP (its device woke it) into the loss.
    assert_eq!(net.pump(), 1);
    assert_eq!(net.faults.stats().lost, 1, "the REP was dropped");
    net.faults.set_faults(clean());
    net.run_until(STEPS, |_| replied(a, ca));
    assert_eq!(b.requests().len(), 1);
}

#[test]
fn slow_acceptor_is_covered_by_mra() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
        panic!()
    };
    // The consumer sits on the request longer than all REQ retries take:
    // the first retransmitted REQ draws an MRA, which stretches the wait.
    let plain_give_up = answer_wait_us(CM_RESPONSE_TIMEOUT) * (u64::from(MAX_CM_RETRIES) + 1);
    let until = net.now() + plain_give_up + 1_000_000;
    net.run_until(STEPS, |n| n.now() >= until);
    assert!(a.events_of(ca).is_empty(), "{:?}", a.events_of(ca));
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| replied(a, ca));
    assert_eq!(b.requests().len(), 1);
}

#[test]
fn initiator_that_never_completes_times_out_the_acceptor() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
        panic!()
    };
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| replied(a, ca));
    // The initiator's consumer never calls establish.
    net.run_until(STEPS, |_| b.events_of(cb).len() == 2);
    assert_eq!(
        b.events_of(cb)[1],
        Ev::Failed {
            conn_id: cb,
            timed_out: true
        }
    );
    net.run_until(STEPS, |_| a.events_of(ca).len() == 2);
    assert_eq!(
        a.events_of(ca)[1],
        Ev::Failed {
            conn_id: ca,
            timed_out: true
        }
    );
    assert_eq!(a.rnic.cm_establish(ca), Err(hwq::DeviceError::InvalidState));
}

#[test]
fn disconnect_to_a_vanished_peer_completes_after_retries() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (qa, qb) = (a.qp(), b.qp());
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
        panic!()
    };
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 1, 1, b""))
        .unwrap();
    net.run_until(STEPS, |_| replied(a, ca));
    a.rnic.cm_establish(ca).unwrap();
    net.run_until(STEPS, |_| b.events_of(cb).len() == 2);
    // Every packet is lost from now on.
    net.faults.set_faults(Faults {
        loss: 1.0,
        ..clean()
    });
    a.rnic.cm_disconnect(ca).unwrap();
    net.run_until(STEPS, |_| a.events_of(ca).len() == 2);
    assert_eq!(a.events_of(ca)[1], Ev::DisconnectDone { conn_id: ca });
    assert_eq!(b.events_of(cb).len(), 2, "the peer heard nothing");
}

#[test]
fn lossy_reordering_fabric_connects_and_disconnects_every_time() {
    for seed in 0..20 {
        let faults = Faults {
            loss: 0.2,
            duplicate: 0.1,
            reorder: 0.2,
            reorder_window_us: 300,
            delay_us: 50,
            seed,
        };
        let net = Net::new(2, faults);
        let (a, b) = (&net.nodes[0], &net.nodes[1]);
        b.rnic.cm_listen(b.at(445)).unwrap();
        let (qa, qb) = (a.qp(), b.qp());
        let (ca, _) = a
            .rnic
            .cm_connect(qa.qpn, &a.params(b.at(445), 3, 5, b"x"))
            .unwrap();
        net.run_until(STEPS, |_| {
            !b.requests().is_empty() || !a.events_of(ca).is_empty()
        });
        let Some(Ev::ConnectRequest { conn_id: cb, .. }) = b.requests().pop() else {
            // Six REQs all lost (0.2^6): the attempt times out, correctly.
            assert_eq!(
                a.events_of(ca),
                [Ev::Failed {
                    conn_id: ca,
                    timed_out: true
                }],
                "seed {seed}"
            );
            continue;
        };
        b.rnic
            .cm_accept(cb, &accept_params(qb.qpn, 5, 3, b"y"))
            .unwrap();
        net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
        assert!(replied(a, ca), "seed {seed}: {:?}", a.events_of(ca));
        a.rnic.cm_establish(ca).unwrap();
        net.run_until(STEPS, |_| b.events_of(cb).len() >= 2);
        assert_eq!(
            b.events_of(cb)[1],
            Ev::Established { conn_id: cb },
            "seed {seed}"
        );
        b.rnic.cm_disconnect(cb).unwrap();
        net.settle(STEPS, 120_000_000);
        assert_eq!(b.requests().len(), 1, "seed {seed}");
        assert_eq!(
            b.events_of(cb).last(),
            Some(&Ev::DisconnectDone { conn_id: cb }),
            "seed {seed}"
        );
        let ends: Vec<_> = a
            .events_of(ca)
            .into_iter()
            .filter(|e| !matches!(e, Ev::Replied { .. }))
            .collect();
        assert!(ends.len() <= 1, "seed {seed}: {ends:?}");
        // If every DREQ was lost the initiator never hears of it; else once.
        assert!(
            ends.iter().all(|e| *e == Ev::Disconnected { conn_id: ca }),
            "seed {seed}: {ends:?}"
        );
    }
}

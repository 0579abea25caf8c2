//! End to end: two devices connect through connection management alone
//! (no hand-made paths), move bytes with SEND/RECV and an RDMA READ (the
//! negotiated read limits in use), then disconnect; between IPv4 nodes and
//! between IPv6 nodes.

use crate::common;
use hwq::{Connections, Device, Verbs};

use std::net::SocketAddr;
use std::sync::Arc;

use crate::common::net::accept_params;
use crate::common::net::{Ev, Recorder};
use common::*;
use hwq::device::{ConnectParams, EventSink};
use hwq::wqe::{Access, SendOpcode};
use hwq::{CqeOpcode, CqeStatus};
use links::Faults;
use softrnic::device::SoftRnic;
use softrnic::qp::QpState;

const STEPS: u64 = 200_000;

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

fn run(faults: Faults) {
    run_on(false, faults);
}

fn run_on(v6: bool, faults: Faults) {
    let mut w = if v6 {
        World::new_v6(faults, 1024, 4 << 20)
    } else {
        World::new(faults, 1024, 4 << 20)
    };
    let (ra, rb) = (recorder(&w.a.dev), recorder(&w.b.dev));
    let service = SocketAddr::new(w.b.addr, 445);
    w.b.dev.cm_listen(service).unwrap();
    let (mut qa, mut qb) = (w.a.qp(16), w.b.qp(16));
    let all = Access::LOCAL_WRITE.union(Access::REMOTE_READ);
    let (src, dst) = (w.a.register(8192, all), w.b.register(8192, all));
    // A receive posted before the connection exists.
    w.b.post_recv(&mut qb, 1, &[dst.sge(0, 8192)]);

    let params = ConnectParams {
        local: SocketAddr::new(w.a.addr, 0),
        remote: service,
        inbound_reads: 4,
        outbound_reads: 2,
        private_data: b"e2e",
    };
    let (ca, _) = w.a.dev.cm_connect(qa.qpn, &params).unwrap();
    w.run_until(STEPS, |_| {
        events(&rb)
            .iter()
            .any(|e| matches!(e, Ev::ConnectRequest { .. }))
    });
    let Some(Ev::ConnectRequest {
        conn_id: cb, info, ..
    }) = events(&rb).pop()
    else {
        panic!()
    };
    // The acceptor sees both ends in the nodes' family.
    assert_eq!((info.local, info.remote.ip()), (service, w.a.addr));
    w.b.dev
        .cm_accept(cb, &accept_params(qb.qpn, 8, 8, b"welcome"))
        .unwrap();
    w.run_until(STEPS, |_| {
        events(&ra).iter().any(|e| matches!(e, Ev::Replied { .. }))
    });
    let Some(Ev::Replied { info, .. }) = events(&ra).pop() else {
        panic!()
    };
    assert_eq!((info.local.ip(), info.remote), (w.a.addr, service));
    // A serves min(4, B's ORD 8) reads and issues min(2, B's IRD 8).
    assert_eq!((info.inbound_reads, info.outbound_reads), (4, 2));
    assert_eq!(w.a.state(&qa), QpState::Init, "connected only at establish");
    w.a.dev.cm_establish(ca).unwrap();
    assert_eq!(w.a.state(&qa), QpState::Connected);

    // The initiator sends at once, before the acceptor heard the RTU.
    let message = pattern(42, 3000);
    w.a.mem.fill(src.logical, &message);
    w.a.post_send(&mut qa, wqe(SendOpcode::Send, 7, &[src.sge(0, 3000)]));
    w.run_until(STEPS, |_| {
        qa.scq.drain();
        qb.rcq.drain();
        !qa.scq.seen.is_empty() && !qb.rcq.seen.is_empty()
    });
    assert!(events(&rb).contains(&Ev::Established { conn_id: cb }));
    assert_eq!(w.b.state(&qb), QpState::Connected);
    let (s, r) = (qa.scq.seen[0], qb.rcq.seen[0]);
    assert_eq!(
        (s.wr_id, s.op(), s.cqe_status()),
        (7, Some(CqeOpcode::Send), CqeStatus::Success)
    );
    assert_eq!(
        (r.wr_id, r.op(), r.cqe_status(), r.byte_len),
        (1, Some(CqeOpcode::Receive), CqeStatus::Success, 3000)
    );
    assert_eq!(w.b.mem.get(dst.logical, 3000), message);

    // The acceptor reads back from the initiator (its ORD is 4).
    let back = pattern(43, 5000);
    w.a.mem.fill(src.logical, &back);
    w.b.post_send(
        &mut qb,
        rdma(SendOpcode::Read, 8, &[dst.sge(0, 5000)], &src, 0),
    );
    w.run_until(STEPS, |_| {
        qb.scq.drain();
        !qb.scq.seen.is_empty()
    });
    assert_eq!(qb.scq.seen[0].cqe_status(), CqeStatus::Success);
    assert_eq!(w.b.mem.get(dst.logical, 5000), back);

    // Disconnect: the peer hears it once, the QPs are left to the driver.
    w.b.dev.cm_disconnect(cb).unwrap();
    w.run_until(STEPS, |_| {
        events(&rb).contains(&Ev::DisconnectDone { conn_id: cb })
    });
    w.settle(STEPS);
    let a_ends: Vec<_> = events(&ra)
        .into_iter()
        .filter(|e| matches!(e, Ev::Disconnected { .. }))
        .collect();
    assert_eq!(a_ends, [Ev::Disconnected { conn_id: ca }]);
    assert_eq!(w.a.state(&qa), QpState::Connected, "the CM never flushes");
    w.a.dev.flush_qp(qa.qpn);
    assert_eq!(w.a.state(&qa), QpState::Error);
}

#[test]
fn connect_send_read_disconnect() {
    run(Faults {
        delay_us: 10,
        ..Faults::default()
    });
}

#[test]
fn connect_send_read_disconnect_on_a_lossy_fabric() {
    for seed in 1..=5 {
        run(Faults {
            loss: 0.05,
            duplicate: 0.05,
            reorder: 0.05,
            reorder_window_us: 200,
            delay_us: 20,
            seed,
        });
    }
}

#[test]
fn connect_send_read_disconnect_ipv6() {
    run_on(
        true,
        Faults {
            delay_us: 10,
            ..Faults::default()
        },
    );
}

#[test]
fn connect_send_read_disconnect_ipv6_on_a_lossy_fabric() {
    for seed in 1..=3 {
        run_on(
            true,
            Faults {
                loss: 0.05,
                duplicate: 0.05,
                reorder: 0.05,
                reorder_window_us: 200,
                delay_us: 20,
                seed,
            },
        );
    }
}

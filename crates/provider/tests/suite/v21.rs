//! NDKPI 2.x through the dispatch tables: which versions are served at
//! which, the connector table of each major, `NdkCompleteConnectEx` /
//! `NdkAcceptEx` and the reason their extended disconnect callback
//! receives, and `NDK_RESULT_EX.ProviderErrorCode`. Every test runs on the
//! scripted device and on the software RNIC over the in-memory fabric and
//! UDP (and in the kernel bottle's suite); the `_ipv6` test runs a body
//! on an IPv6 adapter (`Env::on_v6`).
//!
//! A test opens a second `NDK_ADAPTER` at 2.x on the device of its `Env`
//! and points the `Env` at it ([`at_version`]), so the harness's helpers
//! create every object on the 2.x adapter; [`finish_at`] closes it and
//! restores the original.

use hwq::CqeStatus;
use ndkpi::*;
use provider::connector::DisconnectReason;
use testkit::adapter::*;

/// Opens `major.minor` on `env`'s device and makes it the adapter the
/// harness uses; returns the original adapter for [`finish_at`].
fn at_version(env: &mut Env, major: u16, minor: u16) -> *mut NDK_ADAPTER {
    let original = env.adapter;
    env.adapter = env
        .open_another(major, minor)
        .unwrap_or_else(|s| panic!("open {major}.{minor}: {s:#x}"));
    original
}

/// Closes the adapter [`at_version`] opened and finishes with the original.
fn finish_at(mut env: Env, original: *mut NDK_ADAPTER) {
    assert_eq!(env.close_adapter(env.adapter), STATUS_SUCCESS);
    env.adapter = original;
    env.finish();
}

fn version_of<T>(object: *mut T) -> (u16, u16) {
    let h = read_header(object);
    (h.Version.Major, h.Version.Minor)
}

/// The bytes of a connector's dispatch table (the 2.1 size).
fn table_bytes(c: *mut NDK_CONNECTOR) -> Vec<u8> {
    let t = connector_table(c);
    // SAFETY: every connector table of the provider is a whole
    // `NDK_CONNECTOR_DISPATCH` static.
    unsafe {
        std::slice::from_raw_parts(
            std::ptr::from_ref(t).cast::<u8>(),
            size_of::<NDK_CONNECTOR_DISPATCH>(),
        )
    }
    .to_vec()
}

/// A connection between QPs `a` and `b` made with the 2.1 entries:
/// `NdkAcceptEx` on the passive side, `NdkCompleteConnectEx` on the active
/// side, each with a recorder of disconnect reasons.
fn link_ex(env: &Env, a: *mut NDK_QP, b: *mut NDK_QP) -> Link {
    let listen_events = Recorder::new();
    let listener = env.create_listener(listen_events);
    let port = fresh_port();
    assert_eq!(listen(listener, &env.addr(port)), STATUS_SUCCESS);
    let active = env.create_connector();
    let connected = Recorder::new();
    assert_eq!(
        connect(active, a, &env.addr(0), &env.addr(port), b"v2", connected),
        STATUS_PENDING
    );
    env.pump(|| listen_events.count() >= 1);
    let passive = listen_events.calls()[0].object as *mut NDK_CONNECTOR;
    let (accepted, passive_disc, active_disc) = (Recorder::new(), Recorder::new(), Recorder::new());
    assert_eq!(
        accept_ex(passive, b, b"v2 ok", passive_disc, accepted),
        STATUS_PENDING
    );
    env.pump(|| connected.count() >= 1);
    assert_eq!(connected.statuses(), vec![STATUS_SUCCESS]);
    assert_eq!(complete_connect_ex(active, active_disc), STATUS_SUCCESS);
    env.pump(|| accepted.count() >= 1);
    assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS]);
    Link {
        listener,
        active,
        passive,
        listen_events,
        active_disc,
        passive_disc,
    }
}

/// `connector` disconnects gracefully; `peer_disc` must then get exactly
/// one extended disconnect event, with `reason`, and `own_disc` none.
fn disconnect_and_expect(
    env: &Env,
    connector: *mut NDK_CONNECTOR,
    own_disc: &Recorder,
    peer_disc: &Recorder,
    reason: DisconnectReason,
) {
    let done = Recorder::new();
    assert_eq!(disconnect(connector, done), STATUS_PENDING);
    env.pump(|| done.count() >= 1 && peer_disc.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_SUCCESS]);
    env.settle();
    assert_eq!(
        peer_disc.statuses(),
        vec![reason as u32 as NTSTATUS],
        "one event, with the reason"
    );
    assert_eq!(own_disc.count(), 0, "no event for our own disconnect");
}

/// A WRITE through a token nobody registered, after a good one: both
/// completions, read with `NdkGetCqResultsEx`, in order.
fn good_and_bad_write(env: &Env) -> Vec<NDK_RESULT_EX> {
    let pair = env.connected_pair(8, 1, 0);
    let (a, remote) = (pair.active_qp, pair.remote());
    assert_eq!(
        write(a.qp, 1, &[a.sg(0, 8)], remote.va, remote.token, 0),
        STATUS_SUCCESS
    );
    assert_eq!(
        write(
            a.qp,
            2,
            &[a.sg(0, 8)],
            remote.va,
            remote.token ^ 0x00FF_FF00,
            0
        ),
        STATUS_SUCCESS
    );
    if env.is_scripted() {
        env.complete_sends(&a, 1);
        env.dev().complete_next_send(a.qpn, CqeStatus::RemoteAccess);
    }
    let r = env.results_ex(a.cq, 2);
    pair.close();
    r
}

backend_tests! {

fn versions_2_0_and_2_1_are_served_at_2_1(b: Backend) {
    let mut env = Env::on(b);
    for minor in [0, 1] {
        let a = env.open_another(2, minor).expect("accepted");
        assert_eq!(version_of(a), (2, 1), "2.{minor}");
        assert_eq!(read_header(a).ObjectType, NdkObjectTypeAdapter);
        assert_eq!(env.close_adapter(a), STATUS_SUCCESS);
    }
    // Every object of a 2.x adapter carries the version; so does its info.
    let original = at_version(&mut env, 2, 0);
    let info = env.info();
    assert_eq!((info.Version.Major, info.Version.Minor), (2, 1));
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 1, 0);
    let c = env.create_connector();
    let l = env.create_listener(Recorder::new());
    for v in [version_of(s.pd), version_of(s.cq), version_of(s.qp), version_of(c), version_of(l)] {
        assert_eq!(v, (2, 1));
    }
    for o in [header(c), header(l), header(s.qp), header(s.cq), header(s.pd)] {
        close_now(o);
    }
    finish_at(env, original);
}

fn the_connector_table_follows_the_adapters_major(b: Backend) {
    let mut env = Env::on(b);
    let c1 = env.create_connector();
    let original = at_version(&mut env, 2, 1);
    let c2 = env.create_connector();
    let (t1, t2) = (connector_table(c1), connector_table(c2));
    // 2.x: the 2.1 entries are there.
    assert!(t2.NdkCompleteConnectEx.is_some() && t2.NdkAcceptEx.is_some());
    // 1.x: the 1.2 table, byte for byte the first 88 bytes of the 2.1 one,
    // and nothing where 2.1 put its two entries.
    assert!(t1.NdkCompleteConnectEx.is_none() && t1.NdkAcceptEx.is_none());
    let (b1, b2) = (table_bytes(c1), table_bytes(c2));
    assert_eq!(NDK_CONNECTOR_DISPATCH_1_SIZE, 88);
    assert_eq!(b1[..88], b2[..88], "the same eleven 1.x entries");
    assert!(b1[88..].iter().all(|&x| x == 0));
    assert_eq!((version_of(c1), version_of(c2)), ((1, 2), (2, 1)));
    // Both tables are the provider's: each entry accepts its connector.
    for c in [c1, c2] {
        let mut buf = [0u8; 16];
        let mut len = 16u32;
        let f = connector_table(c).NdkGetLocalAddress.unwrap();
        // SAFETY: our connector, a 16-byte buffer.
        let st = unsafe { f(c, buf.as_mut_ptr().cast(), &raw mut len) };
        assert_eq!(st, STATUS_INVALID_DEVICE_STATE, "not connected, not a stranger");
    }
    close_now(c1);
    close_now(c2);
    finish_at(env, original);
}

fn accept_ex_and_complete_connect_ex_report_the_peers_disconnect(b: Backend) {
    accept_ex_and_complete_connect_ex_report_the_peers_disconnect_on(Env::on(b));
}

fn accept_ex_and_complete_connect_ex_report_the_peers_disconnect_ipv6(b: Backend) {
    accept_ex_and_complete_connect_ex_report_the_peers_disconnect_on(Env::on_v6(b));
}

fn a_failed_qp_makes_the_disconnect_a_transport_error(b: Backend) {
    let mut env = Env::on(b);
    let original = at_version(&mut env, 2, 1);
    let notify = Recorder::new();
    let (a, p) = (env.qp_setup(notify, 8, 1, 0), env.qp_setup(notify, 8, 1, 0));
    let link = link_ex(&env, a.qp, p.qp);
    // The active QP fails: a WRITE through a token the peer never issued.
    assert_eq!(write(a.qp, 9, &[a.sg(0, 8)], a.scratch.va, 0x00DE_AD01, 0), STATUS_SUCCESS);
    if env.is_scripted() {
        env.dev().complete_next_send(a.qpn, CqeStatus::RemoteAccess);
        env.dev().fail_qp(a.qpn);
    }
    let r = env.results_ex(a.cq, 1);
    assert_eq!(
        (r[0].RequestContext as usize, r[0].Status, r[0].ProviderErrorCode),
        (9, STATUS_REMOTE_RESOURCES, CqeStatus::RemoteAccess as u32)
    );
    // The device reported the QP in error before anything the peer sends
    // later (it delivers QP errors ahead of connection events): now the
    // peer leaves a connection whose QP had failed.
    disconnect_and_expect(
        &env,
        link.passive,
        link.passive_disc,
        link.active_disc,
        DisconnectReason::TransportError,
    );
    link.close();
    for s in [a, p] {
        close_now(s.qp);
        close_now(s.cq);
        close_now(s.pd);
    }
    finish_at(env, original);
}

fn provider_error_codes_are_for_2_x_consumers_only(b: Backend) {
    let mut env = Env::on(b);
    // 1.2: ProviderErrorCode is padding, left 0 even for a failure.
    let r = good_and_bad_write(&env);
    assert_eq!(
        r.iter().map(|x| (x.RequestContext as usize, x.Status, x.ProviderErrorCode)).collect::<Vec<_>>(),
        vec![(1, STATUS_SUCCESS, 0), (2, STATUS_REMOTE_RESOURCES, 0)]
    );
    // 2.1: 0 for the success, the device's status for the failure.
    let original = at_version(&mut env, 2, 1);
    let r = good_and_bad_write(&env);
    assert_eq!(
        r.iter().map(|x| (x.RequestContext as usize, x.Status, x.ProviderErrorCode)).collect::<Vec<_>>(),
        vec![
            (1, STATUS_SUCCESS, 0),
            (2, STATUS_REMOTE_RESOURCES, CqeStatus::RemoteAccess as u32)
        ]
    );
    finish_at(env, original);
}

}

#[allow(clippy::too_many_lines)]
fn accept_ex_and_complete_connect_ex_report_the_peers_disconnect_on(mut env: Env) {
    let original = at_version(&mut env, 2, 1);
    let notify = Recorder::new();
    let (a, p) = (env.qp_setup(notify, 8, 1, 0), env.qp_setup(notify, 8, 1, 0));
    let link = link_ex(&env, a.qp, p.qp);
    // A 2.1 connection carries data like any other.
    p.post_receives(7, 1, 16);
    a.scratch.fill(0, b"over ndkpi 2.1!!");
    assert_eq!(send(a.qp, 1, &[a.sg(0, 16)], 0), STATUS_SUCCESS);
    if env.is_scripted() {
        env.complete_sends(&a, 1);
        env.dev()
            .complete_next_recv(p.qpn, CqeStatus::Success, 16, 0);
    }
    let r = env.results_ex(p.cq, 1);
    assert_eq!(
        (r[0].Status, r[0].BytesTransferred, r[0].ProviderErrorCode),
        (STATUS_SUCCESS, 16, 0)
    );
    assert_eq!(env.results_ex(a.cq, 1)[0].Status, STATUS_SUCCESS);
    // The active side leaves: the passive side's NdkAcceptEx callback.
    disconnect_and_expect(
        &env,
        link.active,
        link.active_disc,
        link.passive_disc,
        DisconnectReason::PeerDisconnected,
    );
    link.close();
    // The passive side leaves: the active side's NdkCompleteConnectEx
    // callback.
    let (a2, p2) = (env.qp_setup(notify, 8, 1, 0), env.qp_setup(notify, 8, 1, 0));
    let link2 = link_ex(&env, a2.qp, p2.qp);
    disconnect_and_expect(
        &env,
        link2.passive,
        link2.passive_disc,
        link2.active_disc,
        DisconnectReason::PeerDisconnected,
    );
    link2.close();
    for s in [a, p, a2, p2] {
        close_now(s.qp);
        close_now(s.cq);
        close_now(s.pd);
    }
    finish_at(env, original);
}

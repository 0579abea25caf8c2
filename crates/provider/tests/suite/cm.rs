//! Connection management through the connector, listener and shared
//! endpoint dispatch tables: connect / accept / complete, private data and
//! NdkGetConnectionData, addresses, reject, refusal, disconnect and the
//! disconnect event, listener pause, shared endpoints, IPv6. Every test
//! runs on the scripted device and on the software RNIC over the in-memory
//! fabric and UDP (connections to the adapter's own address). The `_ipv6`
//! tests run the same bodies on an IPv6 adapter (`Env::on_v6`:
//! `SOCKADDR_IN6` addresses, the scripted device's IPv6 address, the RNIC
//! at `mem:NAME/[fd00::8:N]` or `udp:[::1]`, the bottled driver's V with
//! an IPv6 address on its interface, RoCEv2 over IPv6);
//! `an_ipv6_adapter_takes_its_own_family` checks an IPv6 adapter's address
//! rules, and `ipv6_addresses_use_the_windows_family` that an IPv4 RNIC
//! adapter refuses IPv6 addresses (`STATUS_INVALID_ADDRESS`) while the
//! scripted device, which owns one address of each family, takes both.
//!
//! Within `accept_fails_when_the_initiator_leaves_after_the_reply`, the
//! handshake-timeout step is scripted-only (it injects the timeout event;
//! the RNIC's CM reaches it only after seconds of retries).

use std::ptr;

use hwq::CqeStatus;
use ndkpi::*;
use testkit::adapter::*;
use testkit::scripted::{ADDR_V6, OwnedCmEvent};

fn connection_data(
    c: *mut NDK_CONNECTOR,
    buf: Option<&mut [u8]>,
    len: &mut u32,
) -> (NTSTATUS, u32, u32) {
    let f = connector_table(c).NdkGetConnectionData.unwrap();
    let (mut ird, mut ord) = (0u32, 0u32);
    let data = buf.map_or(ptr::null_mut(), |b| b.as_mut_ptr().cast());
    // SAFETY: our connector; `data` holds `*len` bytes or is null.
    let st = unsafe { f(c, &raw mut ird, &raw mut ord, data, len) };
    (st, ird, ord)
}

fn address(f: NDK_FN_GET_LOCAL_ADDRESS, c: *mut NDK_CONNECTOR, buf: &mut [u8]) -> (NTSTATUS, u32) {
    let mut len = buf.len() as u32;
    let p = if buf.is_empty() {
        ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    };
    // SAFETY: our connector; `p` holds `len` bytes or is null.
    let st = unsafe { f.unwrap()(c, p, &raw mut len) };
    (st, len)
}

/// A connect in flight: `listener` listens on `port` of the adapter,
/// `active` connects `qp` to it with private data `data`, and `passive` is
/// the connector the listener's connect event handed over.
struct Request {
    listener: *mut NDK_LISTENER,
    active: *mut NDK_CONNECTOR,
    passive: *mut NDK_CONNECTOR,
    /// The active connect's completion.
    done: &'static Recorder,
    /// The listener's connect events.
    events: &'static Recorder,
}

fn request(env: &Env, qp: *mut NDK_QP, port: u16, data: &[u8]) -> Request {
    let events = Recorder::new();
    let listener = env.create_listener(events);
    assert_eq!(listen(listener, &env.addr(port)), STATUS_SUCCESS);
    let active = env.create_connector();
    let done = Recorder::new();
    assert_eq!(
        connect(active, qp, &env.addr(0), &env.addr(port), data, done),
        STATUS_PENDING
    );
    env.pump(|| events.count() >= 1);
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    Request {
        listener,
        active,
        passive,
        done,
        events,
    }
}

backend_tests! {

fn connect_accept_and_post_between_the_two(b: Backend) {
    connect_accept_and_post_between_the_two_on(Env::on(b));
}

fn connect_accept_and_post_between_the_two_ipv6(b: Backend) {
    connect_accept_and_post_between_the_two_on(Env::on_v6(b));
}

fn connection_data_rules_on_both_sides(b: Backend) {
    connection_data_rules_on_both_sides_on(Env::on(b));
}

fn connection_data_rules_on_both_sides_ipv6(b: Backend) {
    connection_data_rules_on_both_sides_on(Env::on_v6(b));
}

fn private_data_limits(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let c = env.create_connector();
    let max = env.info().MaxCallerData as usize;
    let data = vec![1u8; max + 1];
    let done = Recorder::new();
    assert_eq!(
        connect(
            c,
            a.qp,
            &env.addr(0),
            &env.addr(1),
            &data,
            done
        ),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(done.count(), 0);
    for o in [header(c), header(a.qp), header(a.cq), header(a.pd)] {
        close_now(o);
    }
    env.finish();
}

fn local_and_peer_addresses(b: Backend) {
    local_and_peer_addresses_on(Env::on(b));
}

fn local_and_peer_addresses_ipv6(b: Backend) {
    local_and_peer_addresses_on(Env::on_v6(b));
}

fn listen_on_port_zero_picks_one(b: Backend) {
    listen_on_port_zero_picks_one_on(Env::on(b));
}

fn listen_on_port_zero_picks_one_ipv6(b: Backend) {
    listen_on_port_zero_picks_one_on(Env::on_v6(b));
}

fn listen_address_errors(b: Backend) {
    let env = Env::on(b);
    let events = Recorder::new();
    let a = env.create_listener(events);
    let b = env.create_listener(events);
    assert_eq!(listen(a, &env.addr(8000)), STATUS_SUCCESS);
    assert_eq!(listen(b, &env.addr(8000)), STATUS_SHARING_VIOLATION);
    assert_eq!(
        listen(b, &SockAddr::v4([203, 0, 113, 9], 8000)),
        STATUS_INVALID_ADDRESS
    );
    // A malformed address: too short, unknown family.
    let f = listener_table(b).NdkListen.unwrap();
    let addr = env.addr(1);
    // SAFETY: our listener and an address truncated to 8 bytes.
    let st = unsafe { f(b, addr.ptr(), 8, None, ptr::null_mut()) };
    assert_eq!(st, STATUS_INVALID_PARAMETER);
    let mut odd = env.addr(1);
    if let SockAddr::V4(ref mut s) = odd {
        s.sin_family = 99;
    }
    // SAFETY: as above, full length.
    let st = unsafe { f(b, odd.ptr(), 16, None, ptr::null_mut()) };
    assert_eq!(st, STATUS_INVALID_ADDRESS);
    close_now(a);
    close_now(b);
    env.finish();
}

fn connecting_to_nobody_is_refused(b: Backend) {
    connecting_to_nobody_is_refused_on(Env::on(b));
}

fn connecting_to_nobody_is_refused_ipv6(b: Backend) {
    connecting_to_nobody_is_refused_on(Env::on_v6(b));
}

fn a_rejected_request_refuses_the_connect(b: Backend) {
    a_rejected_request_refuses_the_connect_on(Env::on(b));
}

fn a_rejected_request_refuses_the_connect_ipv6(b: Backend) {
    a_rejected_request_refuses_the_connect_on(Env::on_v6(b));
}

fn closing_an_unaccepted_connector_rejects_it(b: Backend) {
    closing_an_unaccepted_connector_rejects_it_on(Env::on(b));
}

fn closing_an_unaccepted_connector_rejects_it_ipv6(b: Backend) {
    closing_an_unaccepted_connector_rejects_it_on(Env::on_v6(b));
}

fn accept_after_the_initiator_gave_up_is_aborted(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let b = env.qp_setup(notify, 4, 1, 0);
    let req = request(&env, a.qp, 6200, &[]);
    let (l, c, passive, done) = (req.listener, req.active, req.passive, &req.done);
    close_now(c); // the initiator abandons (its pending connect is cancelled)
    assert_eq!(done.statuses(), vec![STATUS_CANCELLED]);
    // The abandonment reaches the passive side (on the RNIC as a REJ on
    // the wire): its request no longer offers connection data.
    env.pump(|| connection_data(passive, None, &mut 0).0 == STATUS_INVALID_DEVICE_STATE);
    assert_eq!(
        connection_data(passive, None, &mut 0).0,
        STATUS_INVALID_DEVICE_STATE
    );
    let (acc, disc) = (Recorder::new(), Recorder::new());
    assert_eq!(
        accept(passive, b.qp, &[], disc, acc),
        STATUS_CONNECTION_ABORTED
    );
    assert_eq!(acc.count(), 0, "an inline failure has no callback");
    for o in [
        header(passive),
        header(l),
        header(a.qp),
        header(b.qp),
        header(a.cq),
        header(b.cq),
        header(a.pd),
        header(b.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

fn accept_fails_when_the_initiator_leaves_after_the_reply(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let b = env.qp_setup(notify, 4, 1, 0);
    let req = request(&env, a.qp, 6300, &[]);
    let (l, c, passive, done) = (req.listener, req.active, req.passive, &req.done);
    let (acc, disc) = (Recorder::new(), Recorder::new());
    assert_eq!(accept(passive, b.qp, &[], disc, acc), STATUS_PENDING);
    env.pump(|| done.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_SUCCESS]);
    // The initiator rejects after reading the reply.
    assert_eq!(reject(c, &[]), STATUS_SUCCESS);
    env.pump(|| acc.count() >= 1);
    assert_eq!(acc.statuses(), vec![STATUS_CONNECTION_ABORTED]);
    if env.is_scripted() {
        // A handshake timeout reads as IO_TIMEOUT (device-reported; the
        // RNIC's CM gives up only after its retries, seconds later).
        handshake_timeout(&env, notify);
    }
    for o in [
        header(passive),
        header(c),
        header(l),
        header(a.qp),
        header(b.qp),
        header(a.cq),
        header(b.cq),
        header(a.pd),
        header(b.pd),
    ] {
        close_now(o);
    }
    env.finish();
}


fn disconnect_flushes_and_the_peer_gets_one_event(b: Backend) {
    disconnect_flushes_and_the_peer_gets_one_event_on(Env::on(b));
}

fn disconnect_flushes_and_the_peer_gets_one_event_ipv6(b: Backend) {
    disconnect_flushes_and_the_peer_gets_one_event_on(Env::on_v6(b));
}

fn listener_pause_refuses_until_resumed(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let events = Recorder::new();
    let l = env.create_listener(events);
    assert_eq!(listen(l, &env.addr(6400)), STATUS_SUCCESS);
    let pause = listener_table(l).NdkControlConnectEvents.unwrap();
    // SAFETY: our listener.
    unsafe { pause(l, 1) };
    let c = env.create_connector();
    let done = Recorder::new();
    assert_eq!(
        connect(
            c,
            a.qp,
            &env.addr(0),
            &env.addr(6400),
            &[],
            done
        ),
        STATUS_PENDING
    );
    env.pump(|| done.count() >= 1);
    assert_eq!(
        (events.count(), done.statuses()),
        (0, vec![STATUS_CONNECTION_REFUSED])
    );
    // SAFETY: our listener.
    unsafe { pause(l, 0) };
    let c2 = env.create_connector();
    let done2 = Recorder::new();
    assert_eq!(
        connect(
            c2,
            a.qp,
            &env.addr(0),
            &env.addr(6400),
            &[],
            done2
        ),
        STATUS_PENDING
    );
    env.pump(|| events.count() >= 1);
    assert_eq!(events.count(), 1);
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    for o in [
        header(passive),
        header(c2),
        header(c),
        header(l),
        header(a.qp),
        header(a.cq),
        header(a.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

fn a_closing_listener_stops_at_once(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let events = Recorder::new();
    let l = env.create_listener(events);
    assert_eq!(listen(l, &env.addr(6500)), STATUS_SUCCESS);
    close_now(l);
    let c = env.create_connector();
    let done = Recorder::new();
    assert_eq!(
        connect(
            c,
            a.qp,
            &env.addr(0),
            &env.addr(6500),
            &[],
            done
        ),
        STATUS_PENDING
    );
    env.pump(|| done.count() >= 1);
    assert_eq!(
        (events.count(), done.statuses()),
        (0, vec![STATUS_CONNECTION_REFUSED])
    );
    for o in [header(c), header(a.qp), header(a.cq), header(a.pd)] {
        close_now(o);
    }
    env.finish();
}

fn shared_endpoints_reserve_addresses(b: Backend) {
    shared_endpoints_reserve_addresses_on(Env::on(b));
}

fn shared_endpoints_reserve_addresses_ipv6(b: Backend) {
    shared_endpoints_reserve_addresses_on(Env::on_v6(b));
}

fn a_qp_serves_one_connector(b: Backend) {
    let env = Env::on(b);
    let pair = env.connected_pair(4, 1, 0);
    let c = env.create_connector();
    let done = Recorder::new();
    assert_eq!(
        connect(
            c,
            pair.active_qp.qp,
            &env.addr(0),
            &env.addr(1),
            &[],
            done
        ),
        STATUS_INVALID_DEVICE_STATE
    );
    assert_eq!(done.count(), 0);
    close_now(c);
    // The QP still serves its own connection.
    let (a, p) = (pair.active_qp, pair.passive_qp);
    assert_eq!(receive(a.qp, 1, &[a.sg(0, 4)]), STATUS_SUCCESS);
    if env.is_scripted() {
        env.dev().complete_next_recv(a.qpn, CqeStatus::Success, 4, 0);
    } else {
        assert_eq!(send(p.qp, 2, &[p.sg(0, 4)], 0), STATUS_SUCCESS);
    }
    let r = env.results(a.cq, 1);
    assert_eq!(
        (r[0].Status, r[0].RequestContext as usize, r[0].BytesTransferred),
        (STATUS_SUCCESS, 1, 4)
    );
    pair.close();
    env.finish();
}


fn an_ipv6_adapter_takes_its_own_family(b: Backend) {
    let env = Env::on_v6(b);
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let events = Recorder::new();
    // `[::]` listens on any of the adapter's addresses, and says so.
    let any = env.create_listener(events);
    assert_eq!(listen(any, &SockAddr::v6([0; 16], 7200)), STATUS_SUCCESS);
    let mut buf = [0u8; 28];
    let mut len = 28;
    let f = listener_table(any).NdkGetLocalAddress.unwrap();
    // SAFETY: our listener and a 28-byte buffer.
    let st = unsafe { f(any, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!((st, len), (STATUS_SUCCESS, 28));
    assert_eq!(u16::from_le_bytes([buf[0], buf[1]]), AF_INET6);
    assert_eq!((port_of(&buf), &buf[8..24]), (7200, &[0u8; 16][..]));
    // An IPv6 address the adapter does not own is refused; on the RNIC
    // (one IPv6 address) so are the IPv4 wildcard and IPv4 addresses.
    let l = env.create_listener(events);
    let mut other = env.v6();
    other[15] ^= 0x80;
    assert_eq!(listen(l, &SockAddr::v6(other, 7201)), STATUS_INVALID_ADDRESS);
    if !env.is_scripted() {
        for v4 in [[0; 4], [192, 0, 2, 1]] {
            assert_eq!(listen(l, &SockAddr::v4(v4, 7201)), STATUS_INVALID_ADDRESS);
        }
        let mut mapped = [0u8; 16];
        mapped[10..12].copy_from_slice(&[0xFF, 0xFF]);
        mapped[12..].copy_from_slice(&[192, 0, 2, 1]);
        assert_eq!(listen(l, &SockAddr::v6(mapped, 7201)), STATUS_INVALID_ADDRESS);
    }
    // A connection has one family: a specific local address of one and a
    // peer of the other is refused on every device, with no callback.
    let c = env.create_connector();
    let done = Recorder::new();
    for (local, remote) in [
        (env.addr(0), SockAddr::v4([192, 0, 2, 1], 7200)),
        (SockAddr::v4([192, 0, 2, 1], 0), env.addr(7200)),
    ] {
        assert_eq!(
            connect(c, a.qp, &local, &remote, &[], done),
            STATUS_INVALID_ADDRESS
        );
    }
    // From `[::]`: the adapter binds its own IPv6 address.
    assert_eq!(
        connect(c, a.qp, &SockAddr::v6([0; 16], 0), &env.addr(7200), b"v6", done),
        STATUS_PENDING
    );
    env.pump(|| events.count() >= 1);
    assert_eq!(events.count(), 1, "the [::] listener took the request");
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    let mut local = [0u8; 28];
    assert_eq!(
        address(connector_table(c).NdkGetLocalAddress, c, &mut local),
        (STATUS_SUCCESS, 28)
    );
    assert_eq!(&local[8..24], &env.v6(), "the adapter's own address");
    let mut peer = [0u8; 28];
    assert_eq!(
        address(connector_table(passive).NdkGetPeerAddress, passive, &mut peer),
        (STATUS_SUCCESS, 28)
    );
    assert_eq!(
        (u16::from_le_bytes([peer[0], peer[1]]), &peer[8..24], port_of(&peer)),
        (AF_INET6, &env.v6()[..], port_of(&local))
    );
    assert_eq!(reject(passive, b""), STATUS_SUCCESS);
    env.pump(|| done.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_CONNECTION_REFUSED]);
    for o in [
        header(passive),
        header(c),
        header(l),
        header(any),
        header(a.qp),
        header(a.cq),
        header(a.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

fn ipv6_addresses_use_the_windows_family(b: Backend) {
    let env = Env::on(b);
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let b = env.qp_setup(notify, 4, 1, 0);
    let events = Recorder::new();
    let l = env.create_listener(events);
    // An IPv4 RNIC adapter owns no IPv6 address (not even its own
    // IPv4-mapped): refused. The scripted device owns one of each family.
    let (v6, listened, connecting) = if env.is_scripted() {
        (ADDR_V6.octets(), STATUS_SUCCESS, STATUS_PENDING)
    } else {
        (env.v6(), STATUS_INVALID_ADDRESS, STATUS_INVALID_ADDRESS)
    };
    assert_eq!(listen(l, &SockAddr::v6(v6, 7100)), listened);
    let c = env.create_connector();
    let done = Recorder::new();
    assert_eq!(
        connect(
            c,
            a.qp,
            &SockAddr::v6([0; 16], 0),
            &SockAddr::v6(v6, 7100),
            &[],
            done
        ),
        connecting
    );
    if !env.is_scripted() {
        assert_eq!(done.count(), 0);
        for o in [
            header(c),
            header(l),
            header(a.qp),
            header(b.qp),
            header(a.cq),
            header(b.cq),
            header(a.pd),
            header(b.pd),
        ] {
            close_now(o);
        }
        env.finish();
        return;
    }
    env.dev().deliver_events();
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    let mut buf = [0u8; 28];
    assert_eq!(
        address(
            connector_table(passive).NdkGetLocalAddress,
            passive,
            &mut buf
        ),
        (STATUS_SUCCESS, 28)
    );
    assert_eq!(
        u16::from_le_bytes([buf[0], buf[1]]),
        23,
        "AF_INET6 on Windows"
    );
    assert_eq!(port_of(&buf), 7100);
    assert_eq!(&buf[8..24], &ADDR_V6.octets());
    let mut short = [0u8; 16];
    assert_eq!(
        address(
            connector_table(passive).NdkGetLocalAddress,
            passive,
            &mut short
        ),
        (STATUS_BUFFER_TOO_SMALL, 28)
    );
    let (acc, disc) = (Recorder::new(), Recorder::new());
    assert_eq!(accept(passive, b.qp, &[], disc, acc), STATUS_PENDING);
    env.dev().deliver_events();
    assert_eq!(complete_connect(c, Recorder::new()), STATUS_SUCCESS);
    env.dev().deliver_events();
    assert_eq!(acc.statuses(), vec![STATUS_SUCCESS]);
    for o in [
        header(passive),
        header(c),
        header(l),
        header(a.qp),
        header(b.qp),
        header(a.cq),
        header(b.cq),
        header(a.pd),
        header(b.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

}

#[allow(clippy::too_many_lines)]
fn connect_accept_and_post_between_the_two_on(env: Env) {
    let pair = env.connected_pair(8, 2, 0);
    let (a, b) = (pair.active_qp, pair.passive_qp);
    if env.is_scripted() {
        for s in [a, b] {
            assert_eq!(
                env.dev().qp_state(s.qpn),
                Some(testkit::scripted::QpState::Connected)
            );
        }
    }
    // Each side sends to the other: both QPs are connected, to each other.
    a.scratch.fill(0, b"from the active.");
    b.scratch.fill(0, b"from the passive");
    a.post_receives(10, 1, 16);
    b.post_receives(20, 1, 16);
    assert_eq!(send(a.qp, 1, &[a.sg(0, 16)], 0), STATUS_SUCCESS);
    assert_eq!(send(b.qp, 2, &[b.sg(0, 16)], 0), STATUS_SUCCESS);
    if !env.is_scripted() {
        for (s, from) in [(a, &b"from the passive"[..]), (b, &b"from the active."[..])] {
            let mut r = env.results(s.cq, 2);
            r.sort_by_key(|x| x.RequestContext as usize);
            assert!(r.iter().all(|x| x.Status == STATUS_SUCCESS), "{r:?}");
            assert_eq!(r[1].BytesTransferred, 16);
            assert_eq!(s.scratch.bytes(Scratch::LEN / 2, 16), from);
        }
    }
    assert_eq!(pair.listen_events.count(), 1, "one connect event");
    pair.close();
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn connection_data_rules_on_both_sides_on(env: Env) {
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let b = env.qp_setup(notify, 4, 1, 0);
    let events = Recorder::new();
    let l = env.create_listener(events);
    assert_eq!(listen(l, &env.addr(7000)), STATUS_SUCCESS);
    let active = env.create_connector();
    let done = Recorder::new();
    // Connection data before anything happened: wrong state.
    let mut len = 0;
    assert_eq!(
        connection_data(active, None, &mut len).0,
        STATUS_INVALID_DEVICE_STATE
    );
    assert_eq!(
        connect(
            active,
            a.qp,
            &env.addr(0),
            &env.addr(7000),
            b"0123456789",
            done
        ),
        STATUS_PENDING
    );
    env.pump(|| events.count() >= 1);
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    // The RNIC carries private data in fixed-size CM fields: it reports
    // the consumer's part of the field (the data, then zeros), as IB/RoCE
    // adapters do: exactly the advertised limits, never more.
    let (req_len, rep_len) = if env.is_scripted() {
        (10, 3)
    } else {
        (env.info().MaxCallerData, env.info().MaxCalleeData)
    };
    // NULL buffer and *len == 0: success and the size.
    let mut len = 0;
    let (st, ird, ord) = connection_data(passive, None, &mut len);
    assert_eq!((st, len), (STATUS_SUCCESS, req_len));
    assert_eq!(
        (ird, ord),
        (8, 8),
        "the initiator's limits, capped by the adapter"
    );
    // NULL buffer with a length: invalid.
    let mut len = 4;
    assert_eq!(
        connection_data(passive, None, &mut len).0,
        STATUS_INVALID_PARAMETER
    );
    // Short buffer: what fits, BUFFER_TOO_SMALL, the full size.
    let mut small = [0u8; 4];
    let mut len = 4;
    assert_eq!(
        connection_data(passive, Some(&mut small), &mut len).0,
        STATUS_BUFFER_TOO_SMALL
    );
    assert_eq!((&small, len), (b"0123", req_len));
    let mut big = [0u8; 256];
    let mut len = 256;
    assert_eq!(
        connection_data(passive, Some(&mut big), &mut len).0,
        STATUS_SUCCESS
    );
    assert_eq!((&big[..10], len), (&b"0123456789"[..], req_len));
    assert!(big[10..].iter().all(|&x| x == 0));
    // Accept with data; the active side reads it after its connect completes.
    let (accepted, disc) = (Recorder::new(), Recorder::new());
    assert_eq!(
        accept(passive, b.qp, b"ok!", disc, accepted),
        STATUS_PENDING
    );
    let mut len = 0;
    let (st, ird, ord) = connection_data(passive, None, &mut len);
    assert_eq!(
        (st, len, ird, ord),
        (STATUS_SUCCESS, req_len, 8, 8),
        "the same answer after Accept"
    );
    env.pump(|| done.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_SUCCESS]);
    let mut buf = [0u8; 256];
    let mut len = 256;
    let (st, ird, ord) = connection_data(active, Some(&mut buf), &mut len);
    assert_eq!(
        (st, &buf[..3], len, ird, ord),
        (STATUS_SUCCESS, &b"ok!"[..], rep_len, 8, 8)
    );
    assert!(buf[3..].iter().all(|&x| x == 0));
    assert_eq!(complete_connect(active, Recorder::new()), STATUS_SUCCESS);
    env.pump(|| accepted.count() >= 1);
    assert_eq!(accepted.statuses(), vec![STATUS_SUCCESS]);
    for o in [
        header(active),
        header(passive),
        header(l),
        header(a.qp),
        header(b.qp),
        header(a.cq),
        header(b.cq),
        header(a.pd),
        header(b.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

/// How the adapter's own addresses come back from the provider: family,
/// bytes (16 for `SOCKADDR_IN`, 28 for `SOCKADDR_IN6`), where the address
/// lies in them and what it is.
fn written_form(env: &Env) -> (u16, u32, std::ops::Range<usize>, Vec<u8>) {
    match env.ip6 {
        Some(ip6) => (AF_INET6, 28, 8..24, ip6.to_vec()),
        None => (AF_INET, 16, 4..8, env.ip.to_vec()),
    }
}

#[allow(clippy::too_many_lines)]
fn local_and_peer_addresses_on(env: Env) {
    let (family, n, at, own) = written_form(&env);
    let pair = env.connected_pair(4, 1, 0);
    let t = connector_table(pair.active);
    let (st, len) = address(t.NdkGetLocalAddress, pair.active, &mut []);
    assert_eq!((st, len), (STATUS_BUFFER_TOO_SMALL, n));
    let mut whole = [0u8; 28];
    let buf = &mut whole[..n as usize];
    assert_eq!(
        address(t.NdkGetLocalAddress, pair.active, buf),
        (STATUS_SUCCESS, n)
    );
    assert_eq!(u16::from_le_bytes([buf[0], buf[1]]), family);
    assert_eq!(&buf[at.clone()], &own[..]);
    let active_port = port_of(buf);
    assert!(active_port >= 49152, "an ephemeral port was chosen");
    assert_eq!(
        address(t.NdkGetPeerAddress, pair.active, buf),
        (STATUS_SUCCESS, n)
    );
    assert_eq!(
        (u16::from_le_bytes([buf[0], buf[1]]), &buf[at.clone()]),
        (family, &own[..])
    );
    let listen_port = port_of(buf);
    let pt = connector_table(pair.passive);
    assert_eq!(
        address(pt.NdkGetLocalAddress, pair.passive, buf),
        (STATUS_SUCCESS, n)
    );
    assert_eq!(
        (u16::from_le_bytes([buf[0], buf[1]]), &buf[at.clone()]),
        (family, &own[..])
    );
    assert_eq!(port_of(buf), listen_port);
    assert_eq!(
        address(pt.NdkGetPeerAddress, pair.passive, buf),
        (STATUS_SUCCESS, n)
    );
    assert_eq!(
        (u16::from_le_bytes([buf[0], buf[1]]), &buf[at.clone()]),
        (family, &own[..])
    );
    assert_eq!(port_of(buf), active_port);
    // The listener reports where it listens.
    let f = listener_table(pair.listener).NdkGetLocalAddress.unwrap();
    let mut len = n;
    // SAFETY: our listener and a buffer of `n` bytes.
    let st = unsafe { f(pair.listener, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!(
        (st, len, port_of(buf), &buf[at.clone()]),
        (STATUS_SUCCESS, n, listen_port, &own[..])
    );
    // A fresh connector has no addresses yet.
    let c = env.create_connector();
    assert_eq!(
        address(connector_table(c).NdkGetLocalAddress, c, buf).0,
        STATUS_INVALID_DEVICE_STATE
    );
    close_now(c);
    pair.close();
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn listen_on_port_zero_picks_one_on(env: Env) {
    let (family, n, at, own) = written_form(&env);
    let events = Recorder::new();
    let l = env.create_listener(events);
    assert_eq!(listen(l, &env.addr(0)), STATUS_SUCCESS);
    let mut buf = [0u8; 28];
    let mut len = n;
    let f = listener_table(l).NdkGetLocalAddress.unwrap();
    // SAFETY: our listener and a 28-byte buffer described as `n` bytes.
    let st = unsafe { f(l, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!((st, len), (STATUS_SUCCESS, n));
    assert_eq!(
        (u16::from_le_bytes([buf[0], buf[1]]), &buf[at]),
        (family, &own[..])
    );
    assert!(port_of(&buf) >= 49152);
    assert_eq!(
        listen(l, &env.addr(9)),
        STATUS_INVALID_DEVICE_STATE,
        "already listening"
    );
    close_now(l);
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn connecting_to_nobody_is_refused_on(env: Env) {
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let c = env.create_connector();
    let done = Recorder::new();
    assert_eq!(
        connect(c, a.qp, &env.addr(0), &env.addr(4444), &[], done),
        STATUS_PENDING
    );
    env.pump(|| done.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_CONNECTION_REFUSED]);
    assert_eq!(
        complete_connect(c, Recorder::new()),
        STATUS_CONNECTION_INVALID,
        "nothing to complete"
    );
    // The QP was never connected: it can connect again with a new connector.
    let req = request(&env, a.qp, 4444, &[]);
    assert_eq!(req.events.count(), 1);
    let (l, c2, passive, done2) = (req.listener, req.active, req.passive, &req.done);
    // The pending connect first: closing the passive side first sends a
    // REJ, which may refuse the connect before its close cancels it.
    for o in [
        header(c2),
        header(passive),
        header(c),
        header(l),
        header(a.qp),
        header(a.cq),
        header(a.pd),
    ] {
        close_now(o);
    }
    env.pump(|| done2.count() >= 1);
    assert_eq!(
        done2.statuses(),
        vec![STATUS_CANCELLED],
        "closing a connector cancels its pending connect"
    );
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn a_rejected_request_refuses_the_connect_on(env: Env) {
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let req = request(&env, a.qp, 6000, b"hi");
    let (l, c, passive, done) = (req.listener, req.active, req.passive, &req.done);
    assert_eq!(reject(passive, b"no"), STATUS_SUCCESS);
    assert_eq!(
        reject(passive, b"no"),
        STATUS_INVALID_DEVICE_STATE,
        "only once"
    );
    env.pump(|| done.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_CONNECTION_REFUSED]);
    for o in [
        header(passive),
        header(c),
        header(l),
        header(a.qp),
        header(a.cq),
        header(a.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn closing_an_unaccepted_connector_rejects_it_on(env: Env) {
    let notify = Recorder::new();
    let a = env.qp_setup(notify, 4, 1, 0);
    let req = request(&env, a.qp, 6100, &[]);
    let (l, c, passive, done) = (req.listener, req.active, req.passive, &req.done);
    close_now(passive);
    env.pump(|| done.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_CONNECTION_REFUSED]);
    for o in [
        header(c),
        header(l),
        header(a.qp),
        header(a.cq),
        header(a.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

#[allow(clippy::too_many_lines)]
fn disconnect_flushes_and_the_peer_gets_one_event_on(env: Env) {
    let pair = env.connected_pair(8, 1, 0);
    let (a, b) = (pair.active_qp, pair.passive_qp);
    let sg = [a.sg(0, 4)];
    assert_eq!(receive(a.qp, 11, &sg), STATUS_SUCCESS);
    assert_eq!(receive(b.qp, 22, &[b.sg(0, 4)]), STATUS_SUCCESS);
    let done = Recorder::new();
    assert_eq!(disconnect(pair.active, done), STATUS_PENDING);
    env.pump(|| done.count() >= 1 && pair.passive_disc.count() >= 1);
    assert_eq!(done.statuses(), vec![STATUS_SUCCESS]);
    assert_eq!(pair.passive_disc.count(), 1, "the peer's disconnect event");
    assert_eq!(
        pair.active_disc.count(),
        0,
        "no event for our own disconnect"
    );
    // Our QP was flushed after the graceful close; the peer's was not.
    let r = env.results(a.cq, 1);
    assert_eq!(
        r.iter()
            .map(|x| (x.RequestContext as usize, x.Status))
            .collect::<Vec<_>>(),
        vec![(11, STATUS_CANCELLED)]
    );
    env.settle();
    assert!(
        results(b.cq, 8).is_empty(),
        "a peer disconnect flushes nothing"
    );
    assert_eq!(send(a.qp, 1, &sg, 0), STATUS_CONNECTION_INVALID);
    assert_eq!(send(b.qp, 1, &sg, 0), STATUS_CONNECTION_INVALID);
    // Further events for the same connection do not repeat the callback.
    if env.is_scripted() {
        let dev = env.dev();
        if let Some(c) = dev.conn_peer(*dev.conn_ids().first().unwrap()) {
            dev.fire_cm_event(OwnedCmEvent::Disconnected { conn_id: c });
        }
        for id in dev.conn_ids() {
            dev.fire_cm_event(OwnedCmEvent::Disconnected { conn_id: id });
        }
    } else {
        env.settle();
    }
    assert_eq!(pair.passive_disc.count(), 1, "exactly once");
    assert_eq!(
        disconnect(pair.active, done),
        STATUS_CONNECTION_INVALID,
        "already disconnected"
    );
    // The peer's own disconnect now completes at once.
    let done_b = Recorder::new();
    let st = disconnect(pair.passive, done_b);
    if st == STATUS_PENDING {
        env.pump(|| done_b.count() >= 1);
        assert_eq!(done_b.statuses(), vec![STATUS_SUCCESS]);
    } else {
        assert_eq!(st, STATUS_SUCCESS);
        assert_eq!(done_b.count(), 0);
    }
    pair.close();
    env.finish();
}

#[allow(clippy::too_many_lines)]
#[allow(clippy::many_single_char_names)]
fn shared_endpoints_reserve_addresses_on(env: Env) {
    let (family, n, at, own) = written_form(&env);
    let a = env.try_create_endpoint(&env.addr(0)).unwrap();
    let mut buf = [0u8; 28];
    let mut len = n;
    let f = endpoint_table(a).NdkGetLocalAddress.unwrap();
    // SAFETY: our endpoint, a 28-byte buffer described as `n` bytes.
    let st = unsafe { f(a, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!((st, len), (STATUS_SUCCESS, n));
    assert_eq!(
        (u16::from_le_bytes([buf[0], buf[1]]), &buf[at.clone()]),
        (family, &own[..])
    );
    let port = port_of(&buf);
    assert!(port >= 49152);
    assert_eq!(
        env.try_create_endpoint(&env.addr(port)).err(),
        Some(STATUS_SHARING_VIOLATION)
    );
    let b = env.try_create_endpoint(&env.addr(0)).unwrap();
    let mut len = 4;
    // SAFETY: our endpoint; a short length.
    let st = unsafe { f(b, buf.as_mut_ptr().cast(), &raw mut len) };
    assert_eq!(st, STATUS_BUFFER_TOO_SMALL);
    assert_eq!(len, n);
    close_now(a);
    // Released: the port can be taken again.
    let c = env.try_create_endpoint(&env.addr(port)).unwrap();
    // Connect through it: the connection uses the endpoint's address.
    let notify = Recorder::new();
    let s = env.qp_setup(notify, 4, 1, 0);
    let events = Recorder::new();
    let l = env.create_listener(events);
    assert_eq!(listen(l, &env.addr(6600)), STATUS_SUCCESS);
    let conn = env.create_connector();
    let done = Recorder::new();
    let g = connector_table(conn).NdkConnectWithSharedEndpoint.unwrap();
    let dst = env.addr(6600);
    // SAFETY: our connector, QP and endpoint; valid address.
    let st = unsafe {
        g(
            conn,
            s.qp,
            c,
            dst.ptr(),
            dst.len(),
            1,
            1,
            ptr::null_mut(),
            0,
            Some(request_cb),
            done.ctx(),
        )
    };
    assert_eq!(st, STATUS_PENDING);
    env.pump(|| events.count() >= 1);
    let passive = events.calls()[0].object as *mut NDK_CONNECTOR;
    let mut peer = [0u8; 28];
    assert_eq!(
        address(
            connector_table(passive).NdkGetPeerAddress,
            passive,
            &mut peer[..n as usize]
        ),
        (STATUS_SUCCESS, n)
    );
    assert_eq!(
        (u16::from_le_bytes([peer[0], peer[1]]), &peer[at]),
        (family, &own[..])
    );
    assert_eq!(port_of(&peer), port);
    for o in [
        header(passive),
        header(conn),
        header(l),
        header(c),
        header(b),
        header(s.qp),
        header(s.cq),
        header(s.pd),
    ] {
        close_now(o);
    }
    env.finish();
}

fn handshake_timeout(env: &Env, notify: &Recorder) {
    let c2 = env.create_connector();
    let a2 = env.qp_setup(notify, 4, 1, 0);
    let done2 = Recorder::new();
    assert_eq!(
        connect(c2, a2.qp, &env.addr(0), &env.addr(1), &[], done2),
        STATUS_PENDING
    );
    let conn = *env.dev().conn_ids().last().unwrap();
    // Drop the queued refusal and report a timeout instead.
    assert_eq!(env.dev().discard_events().len(), 1);
    env.dev().fire_cm_event(OwnedCmEvent::Failed {
        conn_id: conn,
        timed_out: true,
    });
    assert_eq!(done2.statuses(), vec![STATUS_IO_TIMEOUT]);
    env.dev().deliver_events();
    assert_eq!(done2.count(), 1, "completed once");
    for o in [header(c2), header(a2.qp), header(a2.cq), header(a2.pd)] {
        close_now(o);
    }
}

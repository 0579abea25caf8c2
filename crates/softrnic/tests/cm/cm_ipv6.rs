//! Connection management between IPv6 devices: what goes on the wire (an
//! IPv6 datagram whose REQ carries the IPv6 addresses themselves as GIDs
//! and an RDMA CM header of IP version 6 with 16-byte addresses), the
//! addresses reported to the consumer, and which addresses an IPv6 (and
//! an IPv4) device takes.

use hwq::Connections;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::common::net::accept_params;
use crate::common::net::{Ev, Net, addr, addr6};
use hwq::device::DeviceError;
use links::Faults;
use softrnic::arrival::Arrival;
use softrnic::wire::cma::PORT_SPACE_TCP;
use softrnic::wire::{
    CmMessage, CmaHeader, IpUdpFields, Mad, ROCEV2_PORT, ReqMsg, build, gsi_headers,
    ip_service_port, parse, parse_cm,
};
use zerocopy::{FromBytes, IntoBytes};

const STEPS: usize = 10_000;

fn clean() -> Faults {
    Faults {
        delay_us: 10,
        ..Faults::default()
    }
}

/// The next datagram in flight (taken off the fabric, not delivered),
/// once every device's runtime took what it sent.
fn take_in_flight(net: &Net) -> (IpAddr, Vec<u8>) {
    net.pump();
    net.fabric.take_due(u64::MAX).expect("a datagram in flight")
}

#[test]
fn a_req_between_ipv6_devices_carries_ipv6_gids_and_an_ipv6_cma_header() {
    let net = Net::new_v6(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let (qa, qb) = (a.qp(), b.qp());
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (ca, local) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 2, 2, b"six"))
        .unwrap();
    assert_eq!(local.ip(), IpAddr::V6(addr6(0)));
    assert!((49152..=65535).contains(&local.port()), "{local}");

    let (to, bytes) = take_in_flight(&net);
    assert_eq!(to, IpAddr::V6(addr6(1)));
    assert_eq!(bytes[0] >> 4, 6, "an IPv6 datagram");
    let p = parse(&bytes).expect("the REQ parses and its ICRC verifies");
    assert_eq!(
        (p.ip.src(), p.ip.dst(), p.ip.dst_port()),
        (a.addr, b.addr, ROCEV2_PORT)
    );
    let Ok((_, CmMessage::Req(req))) = parse_cm(p.payload) else {
        panic!("not a REQ")
    };
    let path = req.primary_path();
    assert_eq!(
        path.local_gid(),
        addr6(0).octets(),
        "GID = the IPv6 address"
    );
    assert_eq!(path.remote_gid(), addr6(1).octets());
    assert_eq!(
        ip_service_port(req.service_id()),
        Some((PORT_SPACE_TCP, 445))
    );
    let (cma, consumer) = CmaHeader::parse(req.private_data()).unwrap();
    assert_eq!(cma.as_bytes()[1], 0x60, "IP version 6 in bits 7..4");
    assert_eq!(cma.src_addr(), addr6(0).octets());
    assert_eq!(cma.dst_addr(), addr6(1).octets());
    assert_eq!(cma.src_port(), local.port());
    assert_eq!(&consumer[..3], b"six");

    // Delivered, the REQ reaches the listener with IPv6 addresses; the
    // handshake completes as over IPv4.
    b.receive(net.now(), Arrival::Datagram(&bytes));
    net.run_until(STEPS, |_| !b.requests().is_empty());
    let Some(Ev::ConnectRequest {
        conn_id: cb,
        info,
        data,
        ..
    }) = b.requests().pop()
    else {
        unreachable!()
    };
    assert_eq!((info.local, info.remote), (b.at(445), local));
    assert_eq!(&data[..3], b"six");
    b.rnic
        .cm_accept(cb, &accept_params(qb.qpn, 2, 2, b"ok"))
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
    // Every CM datagram of the handshake was IPv6.
    assert_eq!(a.rnic.stats().rx_malformed + b.rnic.stats().rx_malformed, 0);
}

/// A REQ whose RDMA CM header names the other IP version than the packet
/// it came in is refused (REJ, invalid service ID), not half-mapped.
#[test]
fn a_req_whose_cma_header_says_ipv4_over_ipv6_is_rejected() {
    let net = Net::new_v6(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let qa = a.qp();
    b.rnic.cm_listen(b.at(445)).unwrap();
    let (ca, _) = a
        .rnic
        .cm_connect(qa.qpn, &a.params(b.at(445), 1, 1, b""))
        .unwrap();
    let (_, bytes) = take_in_flight(&net);
    let p = parse(&bytes).unwrap();
    let mut mad = Mad::read_from_bytes(p.payload).unwrap();
    let req = ReqMsg::mut_from_bytes(&mut mad.data).unwrap();
    req.private_data_mut()[1] = 0x40;
    let headers = gsi_headers(p.ip, p.bth.psn);
    let mut out = vec![0u8; 512];
    let n = build(&headers, &[mad.as_bytes()], &mut out).unwrap();
    b.receive(net.now(), Arrival::Datagram(&out[..n]));
    net.run_until(STEPS, |_| !a.events_of(ca).is_empty());
    assert!(b.requests().is_empty(), "no request reached the listener");
    assert_eq!(
        a.events_of(ca),
        [Ev::Rejected {
            conn_id: ca,
            by_consumer: false,
            data: vec![0; 148]
        }]
    );
}

#[test]
fn an_ipv6_device_takes_its_own_and_the_unspecified_ipv6_address() {
    let net = Net::new_v6(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    // Listen: its own address, and `::` (reported as `::`).
    assert_eq!(b.rnic.cm_listen(b.at(445)).unwrap().1, b.at(445));
    let any: SocketAddr = "[::]:446".parse().unwrap();
    assert_eq!(b.rnic.cm_listen(any).unwrap().1, any);
    let (_, eph) = b.rnic.cm_listen("[::]:0".parse().unwrap()).unwrap();
    assert_eq!(eph.ip(), IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    assert!((49152..=65535).contains(&eph.port()));
    // Refused: the IPv4 wildcard (IPv4 only), an IPv4 address, another
    // IPv6 address, its own address IPv4-mapped.
    for refused in [
        "0.0.0.0:447",
        "10.0.0.1:447",
        "[fd00::9]:447",
        "[::ffff:10.0.0.1]:447",
    ] {
        assert_eq!(
            b.rnic.cm_listen(refused.parse().unwrap()).map(|_| ()),
            Err(DeviceError::InvalidAddress),
            "{refused}"
        );
    }
    // Connect: peers of the device's family only, unicast, with a port.
    let qa = a.qp();
    for remote in [
        "10.0.0.2:445",
        "[::ffff:10.0.0.2]:445",
        "[::]:445",
        "[ff02::1]:445",
        "[fd00::2]:0",
    ] {
        assert_eq!(
            a.rnic
                .cm_connect(qa.qpn, &a.params(remote.parse().unwrap(), 1, 1, b""))
                .map(|_| ()),
            Err(DeviceError::InvalidAddress),
            "{remote}"
        );
    }
    // A local address: its own or `::`; not 0.0.0.0 or another address.
    for local in ["0.0.0.0:0", "[fd00::9]:0"] {
        let mut p = a.params(b.at(445), 1, 1, b"");
        p.local = local.parse().unwrap();
        assert_eq!(
            a.rnic.cm_connect(qa.qpn, &p).map(|_| ()),
            Err(DeviceError::InvalidAddress),
            "{local}"
        );
    }
    let mut p = a.params(b.at(445), 1, 1, b"");
    p.local = "[::]:0".parse().unwrap();
    let (_, local) = a.rnic.cm_connect(qa.qpn, &p).unwrap();
    assert_eq!(local.ip(), a.addr, "`::` binds the device's own address");
    net.run_until(STEPS, |_| !b.requests().is_empty());
    assert_eq!(b.requests().len(), 1);
}

/// An IPv4 device keeps its rules: `::` still means "any" for a listen,
/// and an IPv6 peer, even an IPv4-mapped one, is refused.
#[test]
fn an_ipv4_device_refuses_ipv6_peers() {
    let net = Net::new(2, clean());
    let (a, b) = (&net.nodes[0], &net.nodes[1]);
    let (_, bound) = b.rnic.cm_listen("[::]:445".parse().unwrap()).unwrap();
    assert_eq!(bound, SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 445));
    let qa = a.qp();
    for remote in ["[::ffff:10.0.0.2]:445", "[fd00::2]:445"] {
        assert_eq!(
            a.rnic
                .cm_connect(qa.qpn, &a.params(remote.parse().unwrap(), 1, 1, b""))
                .map(|_| ()),
            Err(DeviceError::InvalidAddress),
            "{remote}"
        );
    }
    assert_eq!(
        b.rnic
            .cm_listen(SocketAddr::new(addr6(1).into(), 446))
            .map(|_| ()),
        Err(DeviceError::InvalidAddress)
    );
}

/// An IPv4 and an IPv6 device on one fabric: neither can address the
/// other, and a datagram of the wrong family reaches nobody.
#[test]
fn families_do_not_mix_on_one_fabric() {
    let net = Net::at(&[addr(0).into(), addr6(1).into()], &[1024, 1024], clean());
    let (v4, v6) = (&net.nodes[0], &net.nodes[1]);
    v6.rnic.cm_listen(v6.at(445)).unwrap();
    let q = v4.qp();
    assert_eq!(
        v4.rnic
            .cm_connect(q.qpn, &v4.params(v6.at(445), 1, 1, b""))
            .map(|_| ()),
        Err(DeviceError::InvalidAddress)
    );
    // A hand-made IPv4 REQ to the IPv6 device's port: not its address.
    let ip = IpUdpFields::new(v4.addr, Ipv4Addr::new(10, 0, 0, 2).into(), ROCEV2_PORT).unwrap();
    let mut out = vec![0u8; 512];
    let n = build(
        &gsi_headers(ip, 0),
        &[Mad::cm(1, &cm_req()).as_bytes()],
        &mut out,
    )
    .unwrap();
    v6.receive(net.now(), Arrival::Datagram(&out[..n]));
    assert_eq!(v6.rnic.stats().rx_dropped, 1);
    assert!(v6.requests().is_empty());
}

fn cm_req() -> ReqMsg {
    use zerocopy::FromZeros;
    ReqMsg::new_zeroed()
}

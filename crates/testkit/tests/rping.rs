//! The test kit's rping, client against server, on librsndk adapters:
//! over UDP on loopback (IPv4) and over the in-memory fabric (IPv4 and
//! IPv6), at sizes from 64 bytes to rping's largest, every ping
//! validated and its text checked against rping's generator.

use std::net::{IpAddr, SocketAddr};

use testkit::rping::{
    HostAdapter, PingText, RpingOptions, RpingServer, rping_client, rping_server, shown,
};

/// rping's texts of `count` pings of `size` bytes, as `-v` shows them.
fn texts(size: u32, count: u32) -> Vec<String> {
    let mut g = PingText::new();
    (0..count)
        .map(|p| {
            let mut b = vec![0; size as usize];
            g.fill(p as i32, &mut b);
            shown(&b)
        })
        .collect()
}

/// A server on `server` and a client on `client` (addresses `at` and
/// `from`), `count` pings of each size.
fn ping_pong(server: &str, client: &str, at: SocketAddr, from: IpAddr, sizes: &[u32], count: u32) {
    let server = HostAdapter::open(server);
    let client = HostAdapter::open(client);
    for &size in sizes {
        let opts = RpingOptions::new(size, count);
        let listening = RpingServer::listen(&server.rping(), at, &opts).unwrap();
        let served = std::thread::spawn(move || listening.serve());
        let pinged = rping_client(&client.rping(), Some(from), at, &opts);
        let served = served.join().unwrap();
        let pinged = pinged.unwrap_or_else(|e| panic!("client, {size} bytes: {e}"));
        let served = served.unwrap_or_else(|e| panic!("server, {size} bytes: {e}"));
        assert_eq!(pinged.rounds, u64::from(count), "client rounds at {size}");
        assert!(pinged.validated);
        assert!(!pinged.peer_disconnected);
        assert_eq!(served.rounds, u64::from(count), "server rounds at {size}");
        assert!(
            served.peer_disconnected,
            "the server ends with the client's disconnect"
        );
        assert_eq!(pinged.bytes, 2 * u64::from(size) * u64::from(count));
        assert_eq!(served.bytes, pinged.bytes);
        let want = texts(size, count);
        let client_lines: Vec<String> = want.iter().map(|t| format!("ping data: {t}")).collect();
        let server_lines: Vec<String> = want
            .iter()
            .map(|t| format!("server ping data: {t}"))
            .collect();
        assert_eq!(pinged.lines, client_lines, "client's texts at {size}");
        assert_eq!(served.lines, server_lines, "server's texts at {size}");
    }
}

const SIZES: &[u32] = &[64, 1000, 4096, 20_000, 65_535];

#[test]
fn rping_over_udp_loopback_ipv4() {
    ping_pong(
        "udp:127.0.21.1",
        "udp:127.0.21.2",
        "127.0.21.1:7174".parse().unwrap(),
        "127.0.21.2".parse().unwrap(),
        SIZES,
        20,
    );
}

#[test]
fn rping_over_the_memory_fabric_ipv4() {
    ping_pong(
        "mem:rping4/127.0.21.11",
        "mem:rping4/127.0.21.12",
        "127.0.21.11:7174".parse().unwrap(),
        "127.0.21.12".parse().unwrap(),
        SIZES,
        20,
    );
}

#[test]
fn rping_over_the_memory_fabric_ipv6() {
    ping_pong(
        "mem:rping6/[fd00::21:1]",
        "mem:rping6/[fd00::21:2]",
        "[fd00::21:1]:7174".parse().unwrap(),
        "fd00::21:2".parse().unwrap(),
        SIZES,
        20,
    );
}

/// A client whose pings are larger than the server's buffer: the server
/// says so and the client hears of a disconnect before its count.
#[test]
fn a_server_smaller_than_the_ping_refuses_it() {
    let server = HostAdapter::open("mem:rpingsmall/127.0.21.21");
    let client = HostAdapter::open("mem:rpingsmall/127.0.21.22");
    let at: SocketAddr = "127.0.21.21:7174".parse().unwrap();
    let listening = RpingServer::listen(&server.rping(), at, &RpingOptions::new(64, 1)).unwrap();
    let served = std::thread::spawn(move || listening.serve());
    let pinged = rping_client(&client.rping(), None, at, &RpingOptions::new(1000, 3));
    let e = served.join().unwrap().unwrap_err();
    assert!(e.contains("the client's ping is 1000 bytes"), "{e}");
    let e = pinged.unwrap_err();
    assert!(e.contains("disconnected after 0 of 3 pings"), "{e}");
}

#[test]
fn sizes_outside_rpings_range_are_refused() {
    let a = HostAdapter::open("mem:rpingsizes/127.0.21.31");
    let at: SocketAddr = "127.0.21.31:7174".parse().unwrap();
    for size in [22, 65_536] {
        let e = rping_server(&a.rping(), at, &RpingOptions::new(size, 1)).unwrap_err();
        assert!(e.contains("valid range is 23 to 65535"), "{e}");
    }
}

//! librdmacm's rping (`testkit::rping`) between two bottled `rsndk.sys`
//! adapters on the bottle's emulated Ethernet, IPv4 and IPv6: the same
//! client and server the interop lab points at Linux rxe's `rping`,
//! memory described by the bottle's physical pages (`bottle_mdl`), every
//! ping validated and its text checked against rping's generator.

use std::net::SocketAddr;

use testkit::adapter::bottle;
use testkit::rping::{PingText, RpingAdapter, RpingOptions, RpingServer, rping_client, shown};

/// rping's `-v` text of `count` pings of `size` bytes.
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

#[test]
fn rping_between_bottled_adapters_in_both_families() {
    for v6 in [false, true] {
        let (a, ndk_a) = bottle::open(v6);
        let (b, ndk_b) = bottle::open(v6);
        // One byte under a path MTU, several packets, and rping's largest.
        for (size, port) in [(1000u32, 7174u16), (5000, 7175), (65_535, 7176)] {
            let at = SocketAddr::new(b.ip, port);
            let opts = RpingOptions::new(size, 10);
            let listening = RpingServer::listen(&RpingAdapter::bottled(ndk_b), at, &opts)
                .unwrap_or_else(|e| panic!("listen on {at}: {e}"));
            let served = std::thread::spawn(move || listening.serve());
            let pinged = rping_client(&RpingAdapter::bottled(ndk_a), Some(a.ip), at, &opts);
            let served = served.join().unwrap();
            let pinged = pinged.unwrap_or_else(|e| panic!("client to {at}, {size} B: {e}"));
            let served = served.unwrap_or_else(|e| panic!("server {at}, {size} B: {e}"));
            assert_eq!((pinged.rounds, served.rounds), (10, 10), "rounds at {size}");
            assert!(pinged.validated && served.peer_disconnected);
            let want: Vec<String> = texts(size, 10)
                .into_iter()
                .map(|t| format!("ping data: {t}"))
                .collect();
            assert_eq!(pinged.lines, want, "client's texts at {size}");
        }
        bottle::close_adapter(a, ndk_a);
        bottle::close_adapter(b, ndk_b);
        bottle::halt(a);
        bottle::halt(b);
    }
}

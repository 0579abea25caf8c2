//! An IPv4 port against a peer that is not rsndk: datagrams a raw socket
//! of the test sends, with nonzero identifications that change packet to
//! packet as rxe's and a NIC's do, and ICRCs computed here (not by
//! softrnic) over those real headers, are accepted; one whose ICRC is
//! wrong is dropped and counted.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use links::{Clock, Link};
use socket2::{Domain, Protocol, Socket, Type};
use softrnic::arrival::Arrival;
use softrnic::device::{DeviceConfig, SoftRnic};

use super::{UdpLink, UdpPort};
use crate::busy::SharedWaker;
use crate::clock::HostClock;
use crate::platform::HostDma;
use crate::test_loopback::loopback;
use crate::waker::ThreadWaker;

/// A UD SEND Only to QP1 (a MAD, all zeros but its base version) from
/// `src` to `dst`:4791 with identification `ident`, its ICRC computed
/// here over the masked pseudo-header (IBTA Annex A17).
fn mad_datagram(src: Ipv4Addr, dst: Ipv4Addr, ident: u16, psn: u32) -> Vec<u8> {
    let mut bth_on = Vec::new();
    // BTH: UD SEND Only (0x64), P_Key 0xFFFF, QP 1, PSN.
    bth_on.extend_from_slice(&[0x64, 0, 0xFF, 0xFF, 0, 0, 0, 1]);
    bth_on.extend_from_slice(&(psn & 0xFF_FFFF).to_be_bytes());
    // DETH: the GSI Q_Key, source QP 1.
    bth_on.extend_from_slice(&0x8001_0000u32.to_be_bytes());
    bth_on.extend_from_slice(&1u32.to_be_bytes());
    let mut mad = [0u8; 256];
    mad[0] = 1;
    bth_on.extend_from_slice(&mad);
    let udp_len = u16::try_from(8 + bth_on.len() + 4).unwrap();
    let total = 20 + udp_len;
    let mut d = vec![0x45, 0];
    d.extend_from_slice(&total.to_be_bytes());
    d.extend_from_slice(&ident.to_be_bytes());
    d.extend_from_slice(&[0x40, 0, 64, 17, 0, 0]);
    d.extend_from_slice(&src.octets());
    d.extend_from_slice(&dst.octets());
    d.extend_from_slice(&4791u16.to_be_bytes());
    d.extend_from_slice(&4791u16.to_be_bytes());
    d.extend_from_slice(&udp_len.to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(&bth_on);
    let mut masked = d.clone();
    masked[1] = 0xFF; // TOS
    masked[8] = 0xFF; // TTL
    masked[10..12].copy_from_slice(&[0xFF, 0xFF]); // header checksum
    masked[26..28].copy_from_slice(&[0xFF, 0xFF]); // UDP checksum
    masked[28 + 4] = 0xFF; // BTH resv8a
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xFF; 8]);
    h.update(&masked);
    d.extend_from_slice(&h.finalize().to_le_bytes());
    d
}

#[test]
fn a_foreign_peers_changing_identifications_are_checked_as_they_arrived() {
    let (at, peer_at) = (loopback(30), loopback(31));
    let port = Arc::new(UdpPort::bind(at).unwrap());
    let link = UdpLink(port.clone());
    let waker = Arc::new(ThreadWaker::default());
    // SAFETY: the test registers no memory and posts no work request, so
    // the device never makes a DMA access.
    let dma = unsafe { HostDma::new() };
    let rnic = SoftRnic::new(
        DeviceConfig::new(at, 1024),
        Box::new(dma),
        Box::new(port.routes()),
        HostClock.now_us(),
        Box::new(SharedWaker::new(
            waker,
            Arc::new(crate::busy::BusyPoll::new(true)),
        )),
    )
    .unwrap();
    let peer = Socket::new(
        Domain::IPV4,
        Type::RAW,
        Some(Protocol::from(libc::IPPROTO_RAW)),
    )
    .expect("a raw socket (the test needs CAP_NET_RAW)");
    let to = socket2::SockAddr::from(SocketAddrV4::new(at, 0));
    let idents = [0x1357u16, 0xBEEF, 0x0001];
    for (i, &ident) in idents.iter().enumerate() {
        let d = mad_datagram(peer_at, at, ident, i as u32);
        peer.send_to(&d, &to).unwrap();
    }
    let mut bad = mad_datagram(peer_at, at, 0x2468, 9);
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    peer.send_to(&bad, &to).unwrap();

    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while rnic.stats().rx_packets < 4 {
        assert!(Instant::now() < deadline, "4 datagrams: {:?}", rnic.stats());
        link.receive(&mut |arrival| {
            if let Arrival::Datagram(d) = arrival {
                seen.push(u16::from_be_bytes([d[4], d[5]]));
                rnic.receive(HostClock.now_us(), Arrival::Datagram(d));
            }
        });
        std::thread::sleep(Duration::from_millis(1));
    }
    let stats = rnic.stats();
    assert_eq!(
        seen,
        [0x1357, 0xBEEF, 0x0001, 0x2468],
        "the identifications as sent"
    );
    assert_eq!(
        stats.cm_packets, 3,
        "the three good ones reached QP1: {stats:?}"
    );
    assert_eq!(stats.rx_bad_icrc, 1, "the bad one was counted: {stats:?}");
    assert_eq!(stats.rx_malformed, 0, "{stats:?}");
}

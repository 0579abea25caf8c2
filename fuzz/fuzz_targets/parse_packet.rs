//! libFuzzer target: the software RNIC's packet parser on arbitrary bytes.
//!
//! The first input byte picks a mode; the rest is the packet:
//!
//! * even: the bytes as they are, tried as a whole IP datagram (IPv4 or
//!   IPv6, by the version nibble), as a bare UDP payload (BTH through
//!   ICRC) over IPv4 and over IPv6, and as a CM MAD;
//! * odd: the bytes with their IPv4 version/IHL, both length fields, the
//!   IPv4 checksum and the ICRC made valid first (with bit 1 of the mode
//!   also set: as an IPv6 datagram, its version, next header, both length
//!   fields and the ICRC made valid), so the fuzzer spends its time in the
//!   transport headers rather than failing the ICRC.
//!
//! The parser must never panic; a datagram it accepts must describe itself
//! consistently (lengths add up) and must survive a rebuild: building the
//! parsed headers and payload again and parsing the result gives the same
//! headers and payload.

#![no_main]

use std::net::{Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use softrnic::wire::icrc::{ipv4_datagram_icrc, ipv6_datagram_icrc};
use softrnic::wire::ipv4_udp::ipv4_checksum;
use softrnic::wire::{
    Headers, Ipv4UdpFields, Ipv6UdpFields, build, icrc_to_wire, parse, parse_cm, parse_udp_payload,
};

/// Makes the outer checks of an IPv6 datagram pass.
fn seal_v6(d: &mut [u8]) {
    let n = d.len();
    if !(48 + 12 + 4..=40 + usize::from(u16::MAX)).contains(&n) {
        return;
    }
    d[0] = 0x60 | (d[0] & 0x0F);
    d[6] = 17;
    let len = ((n - 40) as u16).to_be_bytes();
    d[4..6].copy_from_slice(&len);
    d[44..46].copy_from_slice(&len);
    if let Some(icrc) = ipv6_datagram_icrc(&d[..n - 4]) {
        d[n - 4..].copy_from_slice(&icrc_to_wire(icrc));
    }
}

/// Makes the outer checks of a datagram pass (see the module docs).
fn seal(d: &mut [u8]) {
    let n = d.len();
    if !(28 + 12 + 4..=usize::from(u16::MAX)).contains(&n) {
        return;
    }
    d[0] = 0x45;
    d[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    d[24..26].copy_from_slice(&((n - 20) as u16).to_be_bytes());
    d[10..12].fill(0);
    let sum = ipv4_checksum(&d[..20]);
    d[10..12].copy_from_slice(&sum.to_be_bytes());
    if let Some(icrc) = ipv4_datagram_icrc(&d[..n - 4]) {
        d[n - 4..].copy_from_slice(&icrc_to_wire(icrc));
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let mut data = rest.to_vec();
    match mode & 3 {
        1 => seal(&mut data),
        3 => seal_v6(&mut data),
        _ => {}
    }
    if let Ok(p) = parse(&data) {
        let be16 = |at: usize| usize::from(u16::from_be_bytes([data[at], data[at + 1]]));
        let total = if p.ip.as_v6().is_some() {
            40 + be16(4)
        } else {
            be16(2)
        };
        let pad = usize::from(p.bth.pad_count);
        assert_eq!(
            p.ip.header_len() + p.info.header_len() + p.payload.len() + pad + 4,
            total
        );
        let headers = Headers {
            ip: p.ip,
            bth: p.bth,
            ext: p.ext,
        };
        let mut out = vec![0u8; total + 64];
        let n = build(&headers, &[p.payload], &mut out).expect("parsed headers rebuild");
        let again = parse(&out[..n]).expect("rebuilt packet parses");
        assert_eq!(again.bth, p.bth);
        assert_eq!(again.ext, p.ext);
        assert_eq!(again.payload, p.payload);
    }
    let ip = Ipv4UdpFields::new(
        Ipv4Addr::new(127, 0, 0, 1),
        Ipv4Addr::new(127, 0, 0, 2),
        4791,
    );
    if let Ok(p) = parse_udp_payload(&ip, &data) {
        let pad = usize::from(p.bth.pad_count);
        assert_eq!(p.info.header_len() + p.payload.len() + pad + 4, data.len());
    }
    let ip6 = Ipv6UdpFields::new(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 4791);
    if let Ok(p) = parse_udp_payload(&ip6, &data) {
        let pad = usize::from(p.bth.pad_count);
        assert_eq!(p.info.header_len() + p.payload.len() + pad + 4, data.len());
    }
    let _ = parse_cm(&data);
});

//! The bottle's packet capture: every datagram its sockets send and
//! receive, written to a pcap file (link type Ethernet) with Ethernet,
//! IPv4 and UDP headers synthesised around the payload, so Wireshark and
//! tshark decode the RoCEv2 traffic (`--disable-heuristic
//! rpcrdma_infiniband` keeps the RPC-over-RDMA heuristic from claiming
//! SEND payloads).
//!
//! The synthesised headers follow the convention rsndk uses for
//! datagrams carried by UDP sockets (`Ipv4UdpFields::for_socket` in
//! softrnic): identification 0, don't-fragment set, TOS 0, TTL 64, a valid
//! header checksum and UDP checksum 0, so the ICRC the peers computed
//! matches the headers in the file. MAC addresses are locally
//! administered and derived from the IPv4 address (02-52-a-b-c-d), as the
//! host's capture does.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// pcap magic (microsecond timestamps), written little-endian.
const MAGIC: u32 = 0xA1B2_C3D4;
/// Link type Ethernet.
const LINKTYPE_ETHERNET: u32 = 1;
/// Largest frame recorded.
const SNAPLEN: u32 = 262_144;
const ETHERTYPE_IPV4: u16 = 0x0800;
const IPPROTO_UDP: u8 = 17;
const TTL: u8 = 64;
const DONT_FRAGMENT: u16 = 0x4000;
/// Ethernet + IPv4 + UDP header bytes before the payload.
pub const HEADERS: usize = 14 + 20 + 8;

/// Whether a capture runs (checked before taking the lock).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static FILE: Mutex<Option<BufWriter<File>>> = Mutex::new(None);

fn file() -> MutexGuard<'static, Option<BufWriter<File>>> {
    FILE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts a capture into `path` (truncated) or, with `None`, stops the
/// running one and flushes it.
pub fn set(path: Option<PathBuf>) -> io::Result<()> {
    let mut current = file();
    ACTIVE.store(false, Ordering::Release);
    if let Some(mut old) = current.take() {
        old.flush()?;
    }
    let Some(path) = path else {
        return Ok(());
    };
    let mut out = BufWriter::new(File::create(path)?);
    let mut header = Vec::with_capacity(24);
    header.extend_from_slice(&MAGIC.to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&0i32.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&SNAPLEN.to_le_bytes());
    header.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    out.write_all(&header)?;
    *current = Some(out);
    ACTIVE.store(true, Ordering::Release);
    Ok(())
}

/// A locally administered MAC address for an IPv4 address.
fn mac_for(addr: SocketAddrV4) -> [u8; 6] {
    let [a, b, c, d] = addr.ip().octets();
    [0x02, 0x52, a, b, c, d]
}

/// The Internet checksum of a header.
fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// The Ethernet, IPv4 and UDP headers of a datagram of `payload` bytes
/// from `src` to `dst`; `None` when it would not fit an IPv4 datagram.
pub fn headers(src: SocketAddrV4, dst: SocketAddrV4, payload: usize) -> Option<[u8; HEADERS]> {
    let udp_len = u16::try_from(8 + payload).ok()?;
    let ip_len = u16::try_from(28 + payload).ok()?;
    let mut h = [0u8; HEADERS];
    h[0..6].copy_from_slice(&mac_for(dst));
    h[6..12].copy_from_slice(&mac_for(src));
    h[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip = &mut h[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[6..8].copy_from_slice(&DONT_FRAGMENT.to_be_bytes());
    ip[8] = TTL;
    ip[9] = IPPROTO_UDP;
    ip[12..16].copy_from_slice(&src.ip().octets());
    ip[16..20].copy_from_slice(&dst.ip().octets());
    let sum = checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let udp = &mut h[34..42];
    udp[0..2].copy_from_slice(&src.port().to_be_bytes());
    udp[2..4].copy_from_slice(&dst.port().to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    Some(h)
}

/// Records one datagram of `payload` from `src` to `dst`, if a capture
/// runs. A write error ends the capture's usefulness, never the traffic.
pub fn record(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) {
    if !ACTIVE.load(Ordering::Acquire) {
        return;
    }
    let Some(h) = headers(src, dst, payload.len()) else {
        return;
    };
    let frame = (HEADERS + payload.len()) as u32;
    let kept = payload.len().min(SNAPLEN as usize - HEADERS);
    let mut current = file();
    // Stamped under the lock, so the file's records are in time order.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut record = Vec::with_capacity(16);
    record.extend_from_slice(&(now.as_secs() as u32).to_le_bytes());
    record.extend_from_slice(&now.subsec_micros().to_le_bytes());
    record.extend_from_slice(&frame.min(SNAPLEN).to_le_bytes());
    record.extend_from_slice(&frame.to_le_bytes());
    if let Some(out) = current.as_mut() {
        let _ = out
            .write_all(&record)
            .and_then(|()| out.write_all(&h))
            .and_then(|()| out.write_all(&payload[..kept]));
    }
}

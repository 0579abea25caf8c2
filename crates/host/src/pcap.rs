//! Packet capture: every RoCEv2 datagram an adapter sends or receives,
//! written to a pcap file with Ethernet framing (EtherType IPv4 or IPv6,
//! by the datagram's version) so Wireshark and tshark decode it as
//! IPv4/UDP 4791 or IPv6/UDP 4791 → InfiniBand (RoCEv2).
//!
//! ```sh
//! tshark -r capture.pcap --disable-heuristic rpcrdma_infiniband -Y infiniband
//! ```
//! (tshark's RPC-over-RDMA heuristic otherwise claims arbitrary SEND payloads.)

use std::fs::File;
use std::io::{self, BufWriter};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};

/// Ethernet header length.
const ETH_LEN: usize = 14;
/// EtherType of IPv4.
const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
const ETHERTYPE_IPV6: u16 = 0x86DD;

/// A locally administered MAC address derived from an IP address (an
/// IPv4 address whole, an IPv6 one's last four bytes), so each adapter has
/// a stable, distinct address in captures.
fn mac_for(ip: IpAddr) -> [u8; 6] {
    let [a, b, c, d] = match ip {
        IpAddr::V4(v4) => v4.octets(),
        IpAddr::V6(v6) => {
            let [.., a, b, c, d] = v6.octets();
            [a, b, c, d]
        }
    };
    [0x02, 0x52, a, b, c, d]
}

/// The source and destination addresses and the EtherType of an IPv4 or
/// IPv6 datagram; `None` when too short or of another version.
fn addresses(datagram: &[u8]) -> Option<(IpAddr, IpAddr, u16)> {
    match datagram.first()? >> 4 {
        4 => {
            let src: [u8; 4] = datagram.get(12..16)?.try_into().ok()?;
            let dst: [u8; 4] = datagram.get(16..20)?.try_into().ok()?;
            Some((src.into(), dst.into(), ETHERTYPE_IPV4))
        }
        6 => {
            let src: [u8; 16] = datagram.get(8..24)?.try_into().ok()?;
            let dst: [u8; 16] = datagram.get(24..40)?.try_into().ok()?;
            Some((src.into(), dst.into(), ETHERTYPE_IPV6))
        }
        _ => None,
    }
}

/// A pcap file being written. Shareable between threads; buffered packets
/// reach the file when the capture is dropped.
#[derive(Debug)]
pub struct PcapCapture {
    writer: Mutex<PcapWriter<BufWriter<File>>>,
    epoch: SystemTime,
    start: Instant,
}

impl PcapCapture {
    /// Creates (truncates) `path` and writes the pcap header.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = BufWriter::new(File::create(path)?);
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(file, header).map_err(io::Error::other)?;
        Ok(Self {
            writer: Mutex::new(writer),
            epoch: SystemTime::now(),
            start: Instant::now(),
        })
    }

    /// Records one IPv4 or IPv6 datagram (IP header through ICRC); one of
    /// neither version is not recorded.
    pub fn record(&self, datagram: &[u8]) {
        let Some((src, dst, ethertype)) = addresses(datagram) else {
            return;
        };
        let mut frame = Vec::with_capacity(ETH_LEN + datagram.len());
        frame.extend_from_slice(&mac_for(dst));
        frame.extend_from_slice(&mac_for(src));
        frame.extend_from_slice(&ethertype.to_be_bytes());
        frame.extend_from_slice(datagram);
        let stamp =
            self.epoch.duration_since(UNIX_EPOCH).unwrap_or_default() + self.start.elapsed();
        let packet = PcapPacket::new(stamp, frame.len() as u32, &frame);
        let mut writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A full disk must not stop the adapter; the capture just ends short.
        let _ = writer.write_packet(&packet);
    }
}

impl links::Capture for PcapCapture {
    fn capture(&self, _direction: links::Direction, datagram: &[u8]) {
        self.record(datagram);
    }
}

/// A shared capture handed to a device (the host keeps its own handle).
#[derive(Debug, Clone)]
pub struct SharedCapture(pub std::sync::Arc<PcapCapture>);

impl links::Capture for SharedCapture {
    fn capture(&self, _direction: links::Direction, datagram: &[u8]) {
        self.0.record(datagram);
    }
}

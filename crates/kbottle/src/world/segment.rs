//! The emulated Ethernet segment the bottled NICs sit on: an in-process
//! learning switch. Nothing leaves the process, unless a port is joined
//! to a Linux tap ([`Segment::join_tap`], in [`crate::world::tap`]).
//!
//! - A frame from a port is captured (if a capture runs), checked against
//!   the segment's MTU (a frame longer than `MTU + 14`, or `MTU + 18` with
//!   an 802.1Q tag, is dropped and counted, as a switch drops giants;
//!   shorter than an Ethernet header, dropped as a runt), its source MAC
//!   learnt, then forwarded: broadcast and multicast to every other port,
//!   unicast to the port owning the destination MAC (configured when the
//!   port attached, or learnt), unknown unicast flooded to every other
//!   port. A frame never goes back to the port it came from.
//! - Forwarding only queues the frame on the receiving ports
//!   ([`Station::deliver`]): each NIC takes it on its own thread, never
//!   inside the sender's call stack. Receive filtering (directed,
//!   multicast list, broadcast, promiscuous) is the NIC's.
//! - Optional deterministic loss: one frame in N is dropped (counted).
//!
//! Captures are classic pcap files (little-endian, microsecond stamps,
//! `LINKTYPE_ETHERNET`), every frame the
//! switch accepted, in order, each written to the file as it passes
//! (unbuffered: the file is complete whenever it is read); tshark reads
//! them.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

/// Length of an Ethernet header (destination, source, EtherType).
pub const ETH_HEADER: usize = 14;
/// Length of an 802.1Q tag.
const VLAN_TAG: usize = 4;
/// EtherType of an 802.1Q tag.
const ETHERTYPE_VLAN: u16 = 0x8100;
/// The default MTU of a segment (Ethernet).
pub const DEFAULT_MTU: u32 = 1500;
/// The broadcast MAC address.
pub const BROADCAST: [u8; 6] = [0xFF; 6];

/// The bottle's number for one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SegmentId(pub u32);

/// One port of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId(pub u32);

/// What sits on a port: takes frames the switch forwards to it (queues
/// them, or hands them to a tap; never calls back into the segment from
/// `deliver`).
pub trait Station: Send + Sync {
    /// A frame for this port.
    fn deliver(&self, frame: Arc<[u8]>);
}

/// What a segment has done since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentStats {
    /// Frames offered by ports.
    pub offered: u64,
    /// Frames accepted (captured and forwarded).
    pub forwarded: u64,
    /// Copies handed to receiving ports.
    pub deliveries: u64,
    /// Frames longer than the MTU allows, dropped.
    pub oversize: u64,
    /// Frames shorter than an Ethernet header, dropped.
    pub runts: u64,
    /// Frames dropped by the loss setting.
    pub lost: u64,
}

struct Port {
    /// The MAC the port owns (none for an uplink, which only learns).
    mac: Option<[u8; 6]>,
    station: Arc<dyn Station>,
}

struct Capture {
    writer: PcapWriter<File>,
}

struct Inner {
    ports: BTreeMap<u32, Port>,
    /// MAC → port: configured at attach, or learnt from source addresses.
    table: HashMap<[u8; 6], u32>,
    next_port: u32,
    capture: Option<Capture>,
    stats: SegmentStats,
    /// Drop one frame in this many (0: none).
    loss_one_in: u32,
}

/// One Ethernet segment.
pub struct Segment {
    id: SegmentId,
    mtu: u32,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("id", &self.id)
            .field("mtu", &self.mtu)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `mac` is a group (multicast or broadcast) address.
pub fn is_group(mac: &[u8; 6]) -> bool {
    mac[0] & 1 != 0
}

/// The destination and source MACs of `frame` (at least a header long).
fn addresses(frame: &[u8]) -> Option<([u8; 6], [u8; 6])> {
    let dst = frame.get(0..6)?.try_into().ok()?;
    let src = frame.get(6..12)?.try_into().ok()?;
    Some((dst, src))
}

impl Segment {
    /// A segment of `mtu` (the largest IP datagram a frame carries).
    pub fn new(id: SegmentId, mtu: u32) -> Self {
        Self {
            id,
            mtu,
            inner: Mutex::new(Inner {
                ports: BTreeMap::new(),
                table: HashMap::new(),
                next_port: 1,
                capture: None,
                stats: SegmentStats::default(),
                loss_one_in: 0,
            }),
        }
    }

    /// Its number.
    pub fn id(&self) -> SegmentId {
        self.id
    }

    /// Its MTU.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Attaches `station`, owner of `mac` (unicast to `mac` goes to it).
    pub fn attach(&self, mac: [u8; 6], station: Arc<dyn Station>) -> PortId {
        let mut inner = lock(&self.inner);
        let id = inner.next_port;
        inner.next_port += 1;
        inner.ports.insert(
            id,
            Port {
                mac: Some(mac),
                station,
            },
        );
        inner.table.insert(mac, id);
        PortId(id)
    }

    /// Attaches `station` as an uplink: a port that owns no MAC of its
    /// own (a real segment behind it, as [`crate::world::tap`] joins), reached
    /// by unicast only to the addresses learnt from its frames.
    pub fn attach_uplink(&self, station: Arc<dyn Station>) -> PortId {
        let mut inner = lock(&self.inner);
        let id = inner.next_port;
        inner.next_port += 1;
        inner.ports.insert(id, Port { mac: None, station });
        PortId(id)
    }

    /// Detaches a port (and forgets what was learnt of it).
    pub fn detach(&self, port: PortId) {
        let mut inner = lock(&self.inner);
        inner.ports.remove(&port.0);
        inner.table.retain(|_, p| *p != port.0);
    }

    /// The MAC a port was attached with (none for an uplink).
    pub fn port_mac(&self, port: PortId) -> Option<[u8; 6]> {
        lock(&self.inner).ports.get(&port.0).and_then(|p| p.mac)
    }

    /// From now on drops one frame in `one_in` (counted among the frames
    /// offered; 0: no loss).
    pub fn set_loss(&self, one_in: u32) {
        lock(&self.inner).loss_one_in = one_in;
    }

    /// What the segment has done.
    pub fn stats(&self) -> SegmentStats {
        lock(&self.inner).stats
    }

    /// Starts capturing every forwarded frame to a new pcap file at
    /// `path` (replacing a running capture, which is flushed).
    pub fn start_capture(&self, path: &Path) -> io::Result<()> {
        let file = File::create(path)?;
        // The classic microsecond, little-endian format every reader
        // takes.
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::MicroSecond,
            endianness: Endianness::Little,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(file, header).map_err(io::Error::other)?;
        let old = lock(&self.inner).capture.replace(Capture { writer });
        drop(old.map(|c| c.writer.into_writer()));
        Ok(())
    }

    /// Ends the capture (its file is complete when this returns).
    pub fn stop_capture(&self) -> io::Result<()> {
        let capture = lock(&self.inner).capture.take();
        if let Some(c) = capture {
            let mut file = c.writer.into_writer();
            io::Write::flush(&mut file)?;
        }
        Ok(())
    }

    /// The largest frame like `frame` the segment forwards: `MTU + 14`,
    /// or `MTU + 18` when `frame` carries an 802.1Q tag.
    pub fn max_frame(&self, frame: &[u8]) -> usize {
        let tagged = frame.get(12..14) == Some(&ETHERTYPE_VLAN.to_be_bytes()[..]);
        self.mtu as usize + ETH_HEADER + if tagged { VLAN_TAG } else { 0 }
    }

    /// A frame from `from`: dropped, or captured and queued on the ports
    /// it goes to. Returns how many ports it was queued on.
    pub fn transmit(&self, from: PortId, frame: &[u8]) -> usize {
        let mut inner = lock(&self.inner);
        if !inner.ports.contains_key(&from.0) {
            return 0;
        }
        inner.stats.offered += 1;
        let Some((dst, src)) = addresses(frame).filter(|_| frame.len() >= ETH_HEADER) else {
            inner.stats.runts += 1;
            return 0;
        };
        if frame.len() > self.max_frame(frame) {
            inner.stats.oversize += 1;
            return 0;
        }
        let loss = inner.loss_one_in;
        if loss != 0 && inner.stats.offered % u64::from(loss) == 0 {
            inner.stats.lost += 1;
            return 0;
        }
        if let Some(c) = inner.capture.as_mut() {
            let stamp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let packet = PcapPacket::new(stamp, frame.len() as u32, frame);
            // A full disk ends the capture short; the segment goes on.
            let _ = c.writer.write_packet(&packet);
        }
        inner.stats.forwarded += 1;
        if !is_group(&src) {
            inner.table.insert(src, from.0);
        }
        let targets: Vec<Arc<dyn Station>> = if is_group(&dst) {
            inner
                .ports
                .iter()
                .filter(|(id, _)| **id != from.0)
                .map(|(_, p)| Arc::clone(&p.station))
                .collect()
        } else {
            match inner.table.get(&dst).copied() {
                Some(port) if port == from.0 => Vec::new(),
                Some(port) => inner
                    .ports
                    .get(&port)
                    .map(|p| vec![Arc::clone(&p.station)])
                    .unwrap_or_default(),
                None => inner
                    .ports
                    .iter()
                    .filter(|(id, _)| **id != from.0)
                    .map(|(_, p)| Arc::clone(&p.station))
                    .collect(),
            }
        };
        inner.stats.deliveries += targets.len() as u64;
        drop(inner);
        let shared: Arc<[u8]> = Arc::from(frame);
        for station in &targets {
            station.deliver(Arc::clone(&shared));
        }
        targets.len()
    }
}

/// Every segment of the process, by number.
static SEGMENTS: Mutex<BTreeMap<u32, Arc<Segment>>> = Mutex::new(BTreeMap::new());

/// A new segment of `mtu`.
pub fn create(mtu: u32) -> SegmentId {
    let mut all = lock(&SEGMENTS);
    let id = all.keys().next_back().map_or(1, |last| last + 1);
    all.insert(id, Arc::new(Segment::new(SegmentId(id), mtu)));
    SegmentId(id)
}

/// The segment numbered `id`.
pub fn get(id: SegmentId) -> Option<Arc<Segment>> {
    lock(&SEGMENTS).get(&id.0).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A station that keeps what it is given.
    #[derive(Default)]
    struct Inbox(Mutex<Vec<Vec<u8>>>);

    impl Station for Inbox {
        fn deliver(&self, frame: Arc<[u8]>) {
            lock(&self.0).push(frame.to_vec());
        }
    }

    impl Inbox {
        fn take(&self) -> Vec<Vec<u8>> {
            std::mem::take(&mut *lock(&self.0))
        }
    }

    fn mac(n: u8) -> [u8; 6] {
        [0x02, 0, 0, 0, 0, n]
    }

    fn frame(dst: [u8; 6], src: [u8; 6], len: usize) -> Vec<u8> {
        let mut f = Vec::with_capacity(len);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&0x0800u16.to_be_bytes());
        f.resize(len, 0xAB);
        f
    }

    fn three() -> (Segment, Vec<(PortId, Arc<Inbox>)>) {
        let s = Segment::new(SegmentId(99), DEFAULT_MTU);
        let ports = (1..=3)
            .map(|n| {
                let inbox = Arc::new(Inbox::default());
                (s.attach(mac(n), inbox.clone()), inbox)
            })
            .collect();
        (s, ports)
    }

    #[test]
    fn unicast_goes_to_the_owner_only_and_group_frames_to_all_others() {
        let (s, p) = three();
        assert_eq!(s.transmit(p[0].0, &frame(mac(2), mac(1), 60)), 1);
        assert_eq!(p[1].1.take().len(), 1);
        assert!(p[0].1.take().is_empty() && p[2].1.take().is_empty());

        assert_eq!(s.transmit(p[0].0, &frame(BROADCAST, mac(1), 60)), 2);
        let multicast = [0x33, 0x33, 0xFF, 0, 0, 2];
        assert_eq!(s.transmit(p[2].0, &frame(multicast, mac(3), 60)), 2);
        assert_eq!(p[0].1.take().len(), 1);
        assert_eq!(p[1].1.take().len(), 2);
        assert_eq!(p[2].1.take().len(), 1);
        // To itself: nowhere.
        assert_eq!(s.transmit(p[0].0, &frame(mac(1), mac(1), 60)), 0);
    }

    #[test]
    fn unknown_unicast_floods_and_learnt_addresses_are_used() {
        let (s, p) = three();
        let stranger = mac(9);
        assert_eq!(s.transmit(p[0].0, &frame(stranger, mac(1), 60)), 2);
        // Port 3 sends from the stranger's address: learnt.
        assert_eq!(s.transmit(p[2].0, &frame(mac(1), stranger, 60)), 1);
        for (_, inbox) in &p {
            inbox.take();
        }
        assert_eq!(s.transmit(p[0].0, &frame(stranger, mac(1), 60)), 1);
        assert_eq!(p[2].1.take().len(), 1);
        assert!(p[1].1.take().is_empty());
        // Detached: forgotten, so flooded to the rest.
        s.detach(p[2].0);
        assert_eq!(s.transmit(p[0].0, &frame(stranger, mac(1), 60)), 1);
        assert_eq!(p[1].1.take().len(), 1);
        assert_eq!(s.transmit(p[2].0, &frame(mac(1), mac(3), 60)), 0);
    }

    #[test]
    fn oversize_and_runt_frames_are_dropped_and_counted() {
        let (s, p) = three();
        let max = DEFAULT_MTU as usize + ETH_HEADER;
        assert_eq!(s.transmit(p[0].0, &frame(mac(2), mac(1), max)), 1);
        assert_eq!(s.transmit(p[0].0, &frame(mac(2), mac(1), max + 1)), 0);
        let mut tagged = frame(mac(2), mac(1), max + VLAN_TAG);
        tagged[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        assert_eq!(s.transmit(p[0].0, &tagged), 1);
        assert_eq!(s.transmit(p[0].0, &tagged[..10]), 0);
        let stats = s.stats();
        assert_eq!(
            (stats.offered, stats.forwarded, stats.oversize, stats.runts),
            (4, 2, 1, 1)
        );
        assert_eq!(p[1].1.take().len(), 2);
    }

    #[test]
    fn loss_drops_one_frame_in_n() {
        let (s, p) = three();
        s.set_loss(3);
        let delivered: usize = (0..9)
            .map(|_| s.transmit(p[0].0, &frame(mac(2), mac(1), 60)))
            .sum();
        assert_eq!(delivered, 6);
        assert_eq!(s.stats().lost, 3);
    }

    #[test]
    fn the_capture_holds_every_forwarded_frame_in_order() {
        let (s, p) = three();
        let path = std::env::temp_dir().join(format!("kbottle-seg-{}.pcap", std::process::id()));
        s.start_capture(&path).unwrap();
        let sent = [
            frame(mac(2), mac(1), 60),
            frame(BROADCAST, mac(3), 100),
            frame(mac(2), mac(1), 5000),
        ];
        for f in &sent {
            s.transmit(p[0].0, f);
        }
        s.stop_capture().unwrap();
        let file = File::open(&path).unwrap();
        let mut reader = pcap_file::pcap::PcapReader::new(file).unwrap();
        assert_eq!(reader.header().datalink, DataLink::ETHERNET);
        assert_eq!(reader.header().ts_resolution, TsResolution::MicroSecond);
        let mut got = Vec::new();
        while let Some(packet) = reader.next_packet() {
            got.push(packet.unwrap().data.to_vec());
        }
        std::fs::remove_file(&path).ok();
        assert_eq!(
            got,
            sent[..2].to_vec(),
            "the oversize frame is not on the wire"
        );
    }
}

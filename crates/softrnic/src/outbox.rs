//! The outbox: what the queue pairs' state machines and connection
//! management send, recorded while they hold their QP's table slot (or
//! the CM's state), and taken by the runtime in its transmit turn
//! ([`crate::transmit`]) once they let go. No packet leaves while a QP
//! slot lock is held.
//!
//! What is recorded (`Record`):
//! * a datagram built whole at record time (ACKs and NAKs, READ requests,
//!   inline SENDs: no payload in registered memory, or a small one; CM
//!   MADs), in the outbox's byte store; and READ responses that must leave
//!   before a SEND with invalidate kills their key, whose payload is read
//!   now, while the key still grants it (those of them already recorded as
//!   segments and not yet taken are built in place then, `Outbox::settle`);
//! * `Segments`: a run of SEND, WRITE or READ response packets whose
//!   payload is still in registered memory. A requester's keys were checked
//!   when its WQE started; a segment's are checked once more, when it is
//!   taken: as its payload is read into the runtime's buffer, or over the
//!   rest of the run before it is handed out as one [`crate::train::Train`]
//!   (when the runtime's carriage takes trains). A segment whose key died
//!   in between is not sent: a requester's first is reported, and its WQE
//!   fails with `LocalProtection` in order; a READ response is sent again
//!   when the requester asks again, meeting the responder's checks.
//!
//! Packets are taken in the order they were recorded. Each QP outbox
//! serves a fixed share of the QPs (by QP number) and the engine holds it
//! from before it locks such a QP until the QP's work is done, so one QP's
//! packets are recorded in the order its state machines produced them
//! (PSN order), whichever thread ran them.
//!
//! Everything is allocated once, with the device. A full outbox (more
//! than `ENTRIES` entries or its byte store) stops the QP that would
//! record (`Outbox::has_room`), which is parked until a transmit turn
//! empties an outbox; the few packets that go whatever the room (fatal
//! and stale-READ NAKs, READ responses ahead of an invalidation, MADs)
//! are counted and dropped if it is full, as a full wire may drop them.

use alloc::vec::Vec;
use core::cell::RefCell;

use hwq::TryArc;

use crate::memory::DeviceMemory;
use crate::stats::Counters;
use crate::train::{Framing, Origin, Segment, Segments, Train, build_segment};
use crate::transmit::{Carriage, MAX_DATAGRAM, SendFailure, Transmit};

/// Entries one outbox holds: more than a QP records in one turn of the
/// engine ([`crate::engine::POLL_BUDGET`] packets and a few ACKs).
pub(crate) const ENTRIES: usize = 128;

/// Bytes of built datagrams one outbox holds.
const BYTES: usize = 64 * 1024;

/// One thing to send, as recorded.
#[derive(Clone, Copy, Debug)]
// Entries sit in a vector allocated once; boxing the description would
// allocate per packet.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    /// A datagram built at record time: `len` bytes at `at` of the byte
    /// store.
    Datagram { at: usize, len: usize },
    /// Packets whose payload is still in registered memory; the first
    /// `sent` of them already left.
    Segments { segs: Segments, sent: u32 },
    /// Datagrams built from a `Segments` entry before its key died
    /// ([`Outbox::settle`]): each a 2-byte length and its bytes, from `at`
    /// (the next to send) to `end` of the byte store.
    Built { at: usize, end: usize },
}

/// A recorded [`Record`] and whether it is sent again.
#[derive(Clone, Copy, Debug)]
struct Entry {
    what: Record,
    resend: bool,
}

/// What [`Outbox::datagram`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// Built and recorded.
    Yes,
    /// The build refused (nothing recorded).
    Refused,
    /// The outbox is full (nothing built).
    Full,
}

#[derive(Debug)]
struct Store {
    entries: Vec<Entry>,
    /// First entry not yet (wholly) sent.
    head: usize,
    /// The byte store of built datagrams (`BYTES` long; empty when
    /// sealed).
    bytes: Vec<u8>,
    /// Bytes of `bytes` in use.
    used: usize,
}

/// Packets recorded for the runtime to take ([`crate::outbox`]). Used by one thread
/// at a time (the engine holds it under a lock); the state machines
/// record through a shared reference in their `qp::Context`.
#[derive(Debug)]
pub(crate) struct Outbox {
    store: RefCell<Store>,
}

impl Outbox {
    /// An empty outbox, all its memory allocated. `None` when memory ran
    /// out.
    pub(crate) fn new() -> Option<Self> {
        let mut entries = Vec::new();
        entries.try_reserve_exact(ENTRIES).ok()?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(BYTES).ok()?;
        bytes.resize(BYTES, 0);
        Some(Self {
            store: RefCell::new(Store {
                entries,
                head: 0,
                bytes,
                used: 0,
            }),
        })
    }

    /// An outbox with no room at all, which costs nothing to make: for work
    /// that sends nothing (a state machine that would send stops as for a
    /// full outbox, [`crate::qp`]'s `outbox_has_room`).
    pub(crate) fn sealed() -> Self {
        Self {
            store: RefCell::new(Store {
                entries: Vec::new(),
                head: 0,
                bytes: Vec::new(),
                used: 0,
            }),
        }
    }

    /// Whether it is a sealed outbox ([`Outbox::sealed`]).
    pub(crate) fn is_sealed(&self) -> bool {
        self.store.borrow().bytes.is_empty()
    }

    /// Whether one more entry of any kind fits.
    pub(crate) fn has_room(&self) -> bool {
        let s = self.store.borrow();
        s.entries.len() < s.entries.capacity().min(ENTRIES)
            && s.bytes.len().saturating_sub(s.used) >= MAX_DATAGRAM
    }

    /// Entries recorded and not yet wholly sent.
    pub(crate) fn pending(&self) -> usize {
        let s = self.store.borrow();
        s.entries.len() - s.head
    }

    /// Records a datagram `build` writes into the byte store (returning
    /// its length, or `None` to record nothing).
    pub(crate) fn datagram(
        &self,
        resend: bool,
        build: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) -> Recorded {
        if !self.has_room() {
            return Recorded::Full;
        }
        let mut s = self.store.borrow_mut();
        let at = s.used;
        let Some(slot) = s.bytes.get_mut(at..at + MAX_DATAGRAM) else {
            return Recorded::Full;
        };
        let Some(len) = build(slot).filter(|&n| n <= MAX_DATAGRAM) else {
            return Recorded::Refused;
        };
        s.used += len;
        s.entries.push(Entry {
            what: Record::Datagram { at, len },
            resend,
        });
        Recorded::Yes
    }

    /// Records the packets `segs` describes, their payload left where it
    /// is; `false` (nothing recorded) if the outbox is full.
    pub(crate) fn segments(&self, segs: &Segments, resend: bool) -> bool {
        if !self.has_room() {
            return false;
        }
        self.store.borrow_mut().entries.push(Entry {
            what: Record::Segments {
                segs: *segs,
                sent: 0,
            },
            resend,
        });
        true
    }

    /// Builds every waiting packet whose payload `dying` says is about to
    /// become unreadable (a key a SEND with invalidate kills) into the
    /// byte store now, in its place in the order, so it still leaves. An
    /// entry that does not fit whole stays as it is (its packets are lost
    /// when the key dies, as a full link would drop them). Returns how many
    /// packets were unreadable already (not sent).
    pub(crate) fn settle(&self, mem: &DeviceMemory, dying: impl Fn(&Segments) -> bool) -> u64 {
        let mut unreadable = 0;
        let mut s = self.store.borrow_mut();
        let Store {
            entries,
            head,
            bytes,
            used,
            ..
        } = &mut *s;
        for entry in entries.iter_mut().skip(*head) {
            let Record::Segments { segs, sent } = entry.what else {
                continue;
            };
            let left = segs.count.saturating_sub(sent) as usize;
            if !dying(&segs) || bytes.len().saturating_sub(*used) < left * (2 + MAX_DATAGRAM) {
                continue;
            }
            let start = *used;
            let mut at = start;
            for i in sent..segs.count {
                let seg = segs.segment(i);
                let headers = segs.headers(&seg);
                let Some(slot) = bytes.get_mut(at + 2..at + 2 + MAX_DATAGRAM) else {
                    break;
                };
                let Some(n) = build_segment(mem, &segs, &seg, &headers, Framing::Datagram, slot)
                else {
                    // Already unreadable: not sent, as the drain would find.
                    unreadable += 1;
                    continue;
                };
                if let Some(len) = bytes.get_mut(at..at + 2) {
                    len.copy_from_slice(&(n as u16).to_le_bytes());
                }
                at += 2 + n;
            }
            *used = at;
            entry.what = Record::Built { at: start, end: at };
        }
        unreadable
    }

    /// Takes the next packet recorded, in order, built into `buf` as
    /// `carriage` says, or the rest of a segments entry as one train if
    /// `carriage` takes trains. A segment's keys are checked here, once:
    /// as its payload is read from `mem` into the packet, or over the
    /// whole run before it is handed out as a train. One whose source a
    /// requester can no longer read is not sent (counted in `stats`; the
    /// first such is reported in `gone`, for the QP to fail the WQE) and
    /// the next is taken. `None`: nothing is left, and the outbox is empty
    /// again.
    pub(crate) fn next(
        &self,
        buf: &mut [u8],
        carriage: Carriage,
        mem: &TryArc<DeviceMemory>,
        stats: &Counters,
        gone: &mut Option<SendFailure>,
    ) -> Option<Transmit> {
        let mut s = self.store.borrow_mut();
        let Store {
            entries,
            head,
            bytes,
            used,
            ..
        } = &mut *s;
        while let Some(entry) = entries.get_mut(*head) {
            let resend = entry.resend;
            let out = match &mut entry.what {
                Record::Datagram { at, len } => {
                    *head += 1;
                    copy_out(bytes.get(*at..*at + *len), buf)
                }
                // Settled with nothing built (every packet was unreadable
                // already): nothing to send. Its stale bytes are no packet.
                Record::Built { at, end } if *at >= *end => {
                    *head += 1;
                    None
                }
                Record::Built { at, end } => {
                    let len = bytes
                        .get(*at..*at + 2)
                        .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])));
                    let out = copy_out(bytes.get(*at + 2..*at + 2 + len), buf);
                    *at += 2 + len;
                    if *at >= *end {
                        *head += 1;
                    }
                    out
                }
                Record::Segments { segs, sent } if carriage.trains => {
                    let run = segs.skip(*sent);
                    *head += 1;
                    if !run.source_readable(mem) {
                        stats.tx_source_gone.add(u64::from(run.count));
                        if gone.is_none() {
                            *gone = source_gone(&run, &run.segment(0));
                        }
                        clear_if_taken(entries, head, used);
                        continue;
                    }
                    let train = Train::new(mem.clone(), &run);
                    let n = u64::from(train.segments());
                    stats.tx_packets.add(n);
                    if resend {
                        stats.retransmitted.add(n);
                    }
                    clear_if_taken(entries, head, used);
                    return Some(Transmit::Train(train));
                }
                Record::Segments { segs, sent } => {
                    let seg = segs.segment(*sent);
                    *sent += 1;
                    if *sent >= segs.count {
                        *head += 1;
                    }
                    let headers = segs.headers(&seg);
                    let dest = segs.ip.destination();
                    let payload = carriage.ipv6_udp_payloads && dest.is_ipv6();
                    let framing = if payload {
                        Framing::UdpPayload
                    } else {
                        Framing::Datagram
                    };
                    match build_segment(mem, segs, &seg, &headers, framing, buf) {
                        Some(len) if payload => Some(Transmit::UdpPayload { dest, len }),
                        Some(len) => Some(Transmit::Datagram(len)),
                        None => {
                            stats.tx_source_gone.inc();
                            if gone.is_none() {
                                *gone = source_gone(segs, &seg);
                            }
                            None
                        }
                    }
                }
            };
            if let Some(out) = out {
                stats.tx_packets.inc();
                stats.retransmitted.inc_if(resend);
                clear_if_taken(entries, head, used);
                return Some(out);
            }
        }
        clear_if_taken(entries, head, used);
        None
    }
}

/// The report of segment `seg` of `segs`, whose payload could not be read
/// from a requester's gather list (a key died under a started message);
/// `None` for a READ response (the requester's retry meets the
/// responder's checks again).
fn source_gone(segs: &Segments, seg: &Segment) -> Option<SendFailure> {
    matches!(segs.origin, Origin::Gather { .. }).then(|| SendFailure {
        dst: segs.ip.dst(),
        dest_qp: segs.dest_qp,
        psn: seg.psn,
        opcode: seg.opcode.0,
    })
}

/// Empties the outbox once everything recorded was taken, at once: a
/// runtime that stops right after the last packet leaves it with room, so
/// no QP parks on an outbox with nothing left to take.
fn clear_if_taken(entries: &mut Vec<Entry>, head: &mut usize, used: &mut usize) {
    if *head >= entries.len() {
        entries.clear();
        *head = 0;
        *used = 0;
    }
}

/// Copies a recorded datagram into the runtime's `buf`; `None` (nothing
/// sent) if it does not fit, which a buffer of [`MAX_DATAGRAM`] bytes
/// always does.
fn copy_out(datagram: Option<&[u8]>, buf: &mut [u8]) -> Option<Transmit> {
    let datagram = datagram?;
    buf.get_mut(..datagram.len())?.copy_from_slice(datagram);
    Some(Transmit::Datagram(datagram.len()))
}

#[cfg(test)]
mod tests {
    extern crate std;

    use alloc::boxed::Box;
    use alloc::vec;
    use alloc::vec::Vec;
    use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    use std::sync::Mutex;

    use hwq::device::Registration;
    use hwq::wqe::Access;
    use hwq::{DmaAccess, DmaFault, MemoryKey, Pdn, TryArc};

    use super::{ENTRIES, Outbox, Recorded};
    use crate::memory::{DeviceMemory, KeyKind, KeyLock, KeyTable};
    use crate::stats::Counters;
    use crate::train::{Kind, Origin, Segments};
    use crate::transmit::{Carriage, MAX_DATAGRAM, SendFailure, Transmit};
    use crate::wire::{self, IpUdpFields, Operation};

    /// Host memory: `RAM` bytes at logical address `BASE`.
    struct Ram(Mutex<Vec<u8>>);

    const BASE: u64 = 0x10_0000;
    const RAM: usize = 4096;
    /// Where the registered page is, as the peer names it.
    const VA: u64 = 0x7700_0000;
    const PD: u32 = 3;
    /// Payload bytes per segment.
    const PMTU: u32 = 256;

    impl DmaAccess for Ram {
        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
            let fault = DmaFault {
                addr,
                len: buf.len(),
            };
            let at = usize::try_from(addr.checked_sub(BASE).ok_or(fault)?).unwrap();
            let ram = self.0.lock().unwrap();
            buf.copy_from_slice(ram.get(at..at + buf.len()).ok_or(fault)?);
            Ok(())
        }

        fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
            Err(DmaFault {
                addr,
                len: data.len(),
            })
        }
    }

    /// The bytes at offset `i` of the registered page.
    fn byte(i: usize) -> u8 {
        (i * 7 + 3) as u8
    }

    /// Memory with one page (`byte(i)` at offset `i`) registered at `VA`
    /// for remote reads; its key.
    fn memory() -> (TryArc<DeviceMemory>, MemoryKey) {
        let ram = (0..RAM).map(byte).collect();
        let mut keys = KeyTable::new(4).unwrap();
        let entry = keys.alloc(KeyKind::Region, PD).unwrap();
        let reg = Registration {
            pd: Pdn::from_raw(PD),
            access: Access::REMOTE_READ,
            va: VA,
            length: RAM as u64,
            first_byte_offset: 0,
            pages: &[BASE],
        };
        let key = keys.register(entry, &reg).unwrap();
        let mem = TryArc::try_new(DeviceMemory {
            keys: KeyLock::new(keys),
            dma: Box::new(Ram(Mutex::new(ram))),
        })
        .unwrap();
        (mem, key)
    }

    /// The responses to a READ of `count` segments of the page from
    /// offset 0, for `to`, starting at PSN 100.
    fn responses(key: MemoryKey, to: IpAddr, count: u32) -> Segments {
        let from = match to {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
        };
        Segments {
            pd: PD,
            origin: Origin::Remote { rkey: key.0 },
            at: VA,
            len: u64::from(count * PMTU),
            pmtu: PMTU,
            ip: IpUdpFields::new(from, to, 49152).unwrap(),
            dest_qp: 0x42,
            first_psn: 100,
            count,
            kind: Kind::ReadResponse { msn: 1 },
            opens: true,
            closes: true,
            ack_req: false,
        }
    }

    const V4: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    const V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2));

    const DATAGRAMS: Carriage = Carriage {
        ipv6_udp_payloads: false,
        trains: false,
    };
    const TRAINS: Carriage = Carriage {
        ipv6_udp_payloads: false,
        trains: true,
    };
    const PAYLOADS: Carriage = Carriage {
        ipv6_udp_payloads: true,
        trains: false,
    };

    /// A SEND of `count` segments gathered from the page from offset 0,
    /// for `to`, starting at PSN 200.
    fn sends(key: MemoryKey, to: IpAddr, count: u32) -> Segments {
        let mut sges = [hwq::Sge::default(); hwq::wqe::MAX_SGE];
        sges[0] = hwq::Sge {
            addr: VA,
            length: count * PMTU,
            key: key.0,
        };
        Segments {
            origin: Origin::Gather { count: 1, sges },
            at: 0,
            first_psn: 200,
            kind: Kind::Send {
                invalidate: None,
                solicited: false,
            },
            ack_req: true,
            ..responses(key, to, count)
        }
    }

    /// Records datagram `i`: `i + 1` bytes of value `i`.
    fn record(out: &Outbox, i: u8) -> Recorded {
        out.datagram(false, |slot| {
            let n = usize::from(i) + 1;
            slot.get_mut(..n)?.fill(i);
            Some(n)
        })
    }

    /// Takes the next packet as a whole datagram (its bytes).
    fn take(out: &Outbox, mem: &TryArc<DeviceMemory>, stats: &Counters) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        match out.next(&mut buf, DATAGRAMS, mem, stats, &mut None)? {
            Transmit::Datagram(len) => Some(buf[..len].to_vec()),
            other => panic!("a datagram carriage got {other:?}"),
        }
    }

    /// Checks that `datagram` is READ response `i` (PSN, ICRC, payload
    /// from the page).
    fn is_response(datagram: &[u8], i: u32) {
        let p = wire::parse(datagram).expect("it parses and its ICRC verifies");
        assert_eq!(p.info.operation, Operation::ReadResponse);
        assert_eq!((p.bth.psn, p.bth.dest_qp), (100 + i, 0x42));
        let at = (i * PMTU) as usize;
        let want: Vec<u8> = (at..at + PMTU as usize).map(byte).collect();
        assert_eq!(p.payload, want.as_slice(), "segment {i}");
    }

    #[test]
    fn hands_out_in_order_and_keeps_what_was_not_taken() {
        let (mem, _) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        for i in 0..5 {
            assert_eq!(record(&out, i), Recorded::Yes);
        }
        assert_eq!(out.datagram(false, |_| None), Recorded::Refused);
        assert_eq!(out.pending(), 5);
        // The runtime takes three, then has no room.
        let mut got: Vec<Vec<u8>> = (0..3).map(|_| take(&out, &mem, &stats).unwrap()).collect();
        assert_eq!(out.pending(), 2, "two wait for the next turn");
        // Recorded behind the two that wait, and taken after them.
        assert_eq!(record(&out, 5), Recorded::Yes);
        got.extend(core::iter::from_fn(|| take(&out, &mem, &stats)));
        assert_eq!(out.pending(), 0);
        let want: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; usize::from(i) + 1]).collect();
        assert_eq!(got, want);
        assert_eq!(stats.tx_packets.get(), 6);
        assert_eq!(stats.retransmitted.get(), 0);
        // Empty: nothing more, however often asked.
        assert!(take(&out, &mem, &stats).is_none());
        assert_eq!(stats.tx_packets.get(), 6);
    }

    #[test]
    fn resends_are_counted_as_they_are_taken() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        assert_eq!(
            out.datagram(true, |slot| Some(slot.len().min(9))),
            Recorded::Yes
        );
        assert!(out.segments(&responses(key, V4, 3), true));
        assert_eq!(stats.retransmitted.get(), 0, "not before they leave");
        assert!(take(&out, &mem, &stats).is_some());
        assert_eq!(stats.retransmitted.get(), 1);
        while take(&out, &mem, &stats).is_some() {}
        assert_eq!((stats.tx_packets.get(), stats.retransmitted.get()), (4, 4));
    }

    #[test]
    fn a_sealed_outbox_has_no_room() {
        let out = Outbox::sealed();
        assert!(out.is_sealed());
        assert!(!out.has_room());
        assert_eq!(record(&out, 1), Recorded::Full);
        let (_, key) = memory();
        assert!(!out.segments(&responses(key, V4, 1), false));
        assert_eq!(out.pending(), 0);
        assert!(!Outbox::new().unwrap().is_sealed());
    }

    #[test]
    fn a_full_outbox_records_nothing_until_emptied() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        let mut recorded = 0;
        while out.has_room() {
            assert_eq!(record(&out, 7), Recorded::Yes);
            recorded += 1;
        }
        assert_eq!(recorded, ENTRIES);
        assert_eq!(record(&out, 7), Recorded::Full);
        assert!(!out.segments(&responses(key, V4, 1), false));
        // Taking some makes no room: the entries are freed together once
        // the runtime took them all.
        for _ in 0..ENTRIES - 1 {
            assert!(take(&out, &mem, &stats).is_some());
        }
        assert!(!out.has_room());
        assert_eq!(record(&out, 7), Recorded::Full);
        assert_eq!(out.pending(), 1);
        assert_eq!(take(&out, &mem, &stats), Some(vec![7; 8]));
        assert!(take(&out, &mem, &stats).is_none());
        assert!(out.has_room());
        assert_eq!(stats.tx_packets.get(), ENTRIES as u64);
        assert_eq!(record(&out, 3), Recorded::Yes);
        assert_eq!(take(&out, &mem, &stats), Some(vec![3; 4]));
    }

    #[test]
    fn a_full_byte_store_records_nothing_until_emptied() {
        let (mem, _) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        let mut recorded = 0;
        while out.datagram(false, |slot| Some(slot.len())) == Recorded::Yes {
            recorded += 1;
        }
        assert!(recorded > 0 && recorded < ENTRIES, "{recorded}");
        assert!(!out.has_room());
        while take(&out, &mem, &stats).is_some() {}
        assert!(out.has_room());
        assert_eq!(stats.tx_packets.get(), recorded as u64);
    }

    #[test]
    fn segments_are_built_per_packet_for_a_datagram_carriage() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        assert_eq!(record(&out, 1), Recorded::Yes);
        assert!(out.segments(&responses(key, V4, 4), false));
        assert_eq!(record(&out, 2), Recorded::Yes);
        assert_eq!(take(&out, &mem, &stats), Some(vec![1; 2]));
        for i in 0..4 {
            is_response(&take(&out, &mem, &stats).expect("segment"), i);
        }
        assert_eq!(
            take(&out, &mem, &stats),
            Some(vec![2; 3]),
            "then what followed"
        );
        assert!(take(&out, &mem, &stats).is_none());
        assert_eq!((stats.tx_packets.get(), stats.tx_source_gone.get()), (6, 0));
    }

    #[test]
    fn the_rest_of_a_run_leaves_as_one_train_for_a_carriage_that_takes_trains() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        assert!(out.segments(&responses(key, V4, 4), false));
        assert_eq!(record(&out, 9), Recorded::Yes);
        // One packet, then the runtime takes trains: the other three leave
        // as one train, the same packets.
        is_response(&take(&out, &mem, &stats).unwrap(), 0);
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let Some(Transmit::Train(train)) = out.next(&mut buf, TRAINS, &mem, &stats, &mut None)
        else {
            panic!("expected a train");
        };
        assert_eq!((train.segments(), train.dst()), (3, V4));
        assert_eq!(stats.tx_packets.get(), 4, "a train counts its packets");
        for i in 0..3 {
            let mut d = Vec::new();
            let n = train.build(i, &mut d).expect("its source is readable");
            is_response(&d[..n], i + 1);
        }
        // A datagram recorded whole is one whatever the carriage.
        let Some(Transmit::Datagram(n)) = out.next(&mut buf, TRAINS, &mem, &stats, &mut None)
        else {
            panic!("expected the datagram");
        };
        assert_eq!(buf[..n], [9; 10]);
        assert!(
            out.next(&mut buf, TRAINS, &mem, &stats, &mut None)
                .is_none()
        );
        assert_eq!(out.pending(), 0);
    }

    #[test]
    fn packets_to_ipv6_leave_as_udp_payloads_only_if_the_carriage_says_so() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        assert!(out.segments(&responses(key, V6, 2), false));
        assert!(out.segments(&responses(key, V4, 1), false));
        assert!(out.segments(&responses(key, V6, 1), false));
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let Some(Transmit::UdpPayload { dest, len }) =
            out.next(&mut buf, PAYLOADS, &mem, &stats, &mut None)
        else {
            panic!("expected a UDP payload");
        };
        assert_eq!(dest, SocketAddr::new(V6, 4791));
        let fields = responses(key, V6, 2).ip.for_packet(100);
        let p = wire::parse_udp_payload(&fields, &buf[..len]).expect("the payload verifies");
        assert_eq!((p.bth.psn, p.payload.len()), (100, PMTU as usize));
        // The same run, taken by a runtime that wants datagrams: one.
        let Some(Transmit::Datagram(n)) = out.next(&mut buf, DATAGRAMS, &mem, &stats, &mut None)
        else {
            panic!("expected a datagram");
        };
        assert_eq!(buf[0] >> 4, 6);
        is_response(&buf[..n], 1);
        // IPv4 packets are whole datagrams whatever the carriage.
        let Some(Transmit::Datagram(n)) = out.next(&mut buf, PAYLOADS, &mem, &stats, &mut None)
        else {
            panic!("expected an IPv4 datagram");
        };
        assert_eq!(buf[0] >> 4, 4);
        is_response(&buf[..n], 0);
        assert!(matches!(
            out.next(&mut buf, PAYLOADS, &mem, &stats, &mut None),
            Some(Transmit::UdpPayload { .. })
        ));
        assert!(
            out.next(&mut buf, PAYLOADS, &mem, &stats, &mut None)
                .is_none()
        );
    }

    #[test]
    fn segments_whose_key_died_are_skipped_unless_settled_first() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        assert!(out.segments(&responses(key, V4, 3), false));
        assert_eq!(record(&out, 4), Recorded::Yes);
        // One left before the key dies.
        is_response(&take(&out, &mem, &stats).unwrap(), 0);
        mem.keys.update(|k| k.deregister(key)).unwrap();
        // The other two are not sent; what follows them is.
        assert_eq!(take(&out, &mem, &stats), Some(vec![4; 5]));
        assert!(take(&out, &mem, &stats).is_none());
        assert_eq!((stats.tx_packets.get(), stats.tx_source_gone.get()), (2, 2));
    }

    #[test]
    fn a_sends_dead_gather_key_is_checked_once_at_the_take_and_reported() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        // Built packet by packet: the first leaves, then the key dies.
        let out = Outbox::new().unwrap();
        assert!(out.segments(&sends(key, V4, 3), false));
        let mut gone = None;
        assert!(matches!(
            out.next(&mut buf, DATAGRAMS, &mem, &stats, &mut gone),
            Some(Transmit::Datagram(_))
        ));
        assert_eq!(gone, None);
        mem.keys.update(|k| k.deregister(key)).unwrap();
        assert!(
            out.next(&mut buf, DATAGRAMS, &mem, &stats, &mut gone)
                .is_none()
        );
        // The first packet that could not be read is the one reported.
        assert_eq!(
            gone,
            Some(SendFailure {
                dst: V4,
                dest_qp: 0x42,
                psn: 201,
                opcode: wire::Opcode::SEND_MIDDLE.0,
            })
        );
        assert_eq!((stats.tx_packets.get(), stats.tx_source_gone.get()), (1, 2));
        // As one train: the run's keys are checked before it is handed
        // out, and a dead one hands out nothing.
        let out = Outbox::new().unwrap();
        assert!(out.segments(&sends(key, V4, 3), false));
        let mut gone = None;
        assert!(
            out.next(&mut buf, TRAINS, &mem, &stats, &mut gone)
                .is_none()
        );
        assert_eq!(gone.map(|g| g.psn), Some(200));
        assert_eq!((stats.tx_packets.get(), stats.tx_source_gone.get()), (1, 5));
        // A READ response's dead key is the requester's retry's to meet:
        // not reported.
        let out = Outbox::new().unwrap();
        assert!(out.segments(&responses(key, V4, 1), false));
        let mut gone = None;
        assert!(
            out.next(&mut buf, DATAGRAMS, &mem, &stats, &mut gone)
                .is_none()
        );
        assert_eq!(gone, None);
    }

    #[test]
    fn settled_segments_leave_as_built_entries_after_their_key_died() {
        let (mem, key) = memory();
        let stats = Counters::default();
        let out = Outbox::new().unwrap();
        assert_eq!(record(&out, 1), Recorded::Yes);
        let segs = responses(key, V4, 4);
        assert!(out.segments(&segs, false));
        let other = Segments {
            dest_qp: 0x43,
            ..responses(key, V4, 2)
        };
        assert!(out.segments(&other, false));
        assert_eq!(take(&out, &mem, &stats), Some(vec![1; 2]));
        is_response(&take(&out, &mem, &stats).unwrap(), 0);
        // The key is about to die: the three of the run not yet taken are
        // built now, in their place; the other run is left as it is.
        let unreadable = out.settle(&mem, |s| s.dest_qp == 0x42);
        assert_eq!(unreadable, 0);
        assert_eq!(out.pending(), 2);
        mem.keys.update(|k| k.deregister(key)).unwrap();
        // A runtime taking trains gets the built ones as datagrams, in
        // order, and nothing of the other run (its key died unsettled).
        let mut buf = vec![0u8; MAX_DATAGRAM];
        for i in 1..4 {
            let Some(Transmit::Datagram(n)) =
                out.next(&mut buf, DATAGRAMS, &mem, &stats, &mut None)
            else {
                panic!("expected built response {i}");
            };
            is_response(&buf[..n], i);
        }
        let before = stats.tx_source_gone.get();
        assert!(
            out.next(&mut buf, DATAGRAMS, &mem, &stats, &mut None)
                .is_none()
        );
        assert_eq!(stats.tx_source_gone.get(), before + 2);
        assert_eq!(stats.tx_packets.get(), 5);
        // Settling a dead key's run builds nothing and says so.
        let out = Outbox::new().unwrap();
        assert!(out.segments(&segs, false));
        assert_eq!(out.settle(&mem, |_| true), 4);
        assert!(take(&out, &mem, &stats).is_none());
    }
}

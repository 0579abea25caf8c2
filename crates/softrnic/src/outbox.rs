//! The outbox: what the queue pairs' state machines send, recorded while
//! they hold their QP's table slot, and put on the link by the engine
//! once it has let the slot go. No packet reaches the [`crate::link::Link`]
//! while a QP slot lock is held (connection management's MADs, which no
//! QP slot covers, leave at once).
//!
//! What is recorded (`Transmit`):
//! * a datagram built whole at record time (ACKs and NAKs, READ requests,
//!   inline SENDs: no payload in registered memory, or a small one), in
//!   the outbox's byte store; and READ responses that must leave before a
//!   SEND with invalidate kills their key, whose payload is read now, while
//!   the key still grants it (those of them already recorded as segments
//!   and waiting for link room are built in place then, `Outbox::settle`);
//! * `Segments`: a run of SEND, WRITE or READ response packets whose
//!   payload is still in registered memory. The sender checked its key when
//!   it recorded them; the drain builds each packet (the key checked again
//!   as the payload is read: a segment whose key died in between is not
//!   sent, and the RC transport sends it again) straight into the link's
//!   send buffer when the link lends one (a UDP socket's batch), else into
//!   the outbox's scratch datagram, or hands the run to the link as one
//!   [`crate::train::Train`] when its transmit token says it carries
//!   trains there.
//!
//! The drain goes in the order things were recorded, asking the link
//! before every packet whether it has room
//! ([`crate::link::Link::can_transmit`]); a link without room stops it,
//! and the rest waits in the outbox (in order, nothing dropped) for the
//! next drain, which the link's [`crate::device::SoftRnic::link_ready`]
//! brings. Each outbox serves a fixed share of the QPs (by QP number) and
//! the engine holds it from before it locks such a QP until the drain is
//! done, so one QP's packets leave in the order its state machines
//! recorded them (PSN order), whichever thread ran them.
//!
//! Everything is allocated once, with the device. A full outbox (more
//! than `ENTRIES` entries or its byte store) stops the QP that would
//! record as a link without room does (`Outbox::has_room`), and it
//! resumes after the drain; the few packets that go whatever the link's
//! room (fatal and stale-READ NAKs, READ responses ahead of an
//! invalidation) are counted and dropped if it is full, as a full link
//! may drop them.

use alloc::vec::Vec;
use core::cell::RefCell;

use hwq::TryArc;

use crate::link::{Token, Transmitter};
use crate::memory::DeviceMemory;
use crate::train::{Framing, Segments, build_segment};
use crate::wire::udp_payload_len;

/// Largest datagram the transport builds: IPv6 (40; IPv4 is 20) + UDP +
/// BTH + RETH + ImmDt + 4096 bytes of payload + pad + ICRC (4183),
/// rounded up.
const MAX_DATAGRAM: usize = 4096 + 128;

const _: () = assert!(
    crate::wire::ip_udp::MAX_IP_UDP_HEADER_LEN + 12 + 16 + 4 + 4096 + 3 + 4 <= MAX_DATAGRAM
);

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
pub(crate) enum Transmit {
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

/// A recorded [`Transmit`] and whether it is sent again.
#[derive(Clone, Copy, Debug)]
struct Entry {
    what: Transmit,
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
    /// Where a segment is built when the link lends no buffer.
    scratch: Vec<u8>,
}

/// Packets recorded for the link ([`crate::outbox`]). Used by one thread
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
        let mut scratch = Vec::new();
        scratch.try_reserve_exact(MAX_DATAGRAM).ok()?;
        scratch.resize(MAX_DATAGRAM, 0);
        Some(Self {
            store: RefCell::new(Store {
                entries,
                head: 0,
                bytes,
                used: 0,
                scratch,
            }),
        })
    }

    /// An outbox with no room at all, which costs nothing to make: for work
    /// that sends nothing (a state machine that would send stops as for a
    /// link without room, [`crate::qp`]'s `link_has_room`).
    pub(crate) fn sealed() -> Self {
        Self {
            store: RefCell::new(Store {
                entries: Vec::new(),
                head: 0,
                bytes: Vec::new(),
                used: 0,
                scratch: Vec::new(),
            }),
        }
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
            what: Transmit::Datagram { at, len },
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
            what: Transmit::Segments {
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
            let Transmit::Segments { segs, sent } = entry.what else {
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
            entry.what = Transmit::Built { at: start, end: at };
        }
        unreadable
    }

    /// Puts what was recorded on the link through `tx`, in order, reading
    /// segments' payload from `mem`; stops before a packet the link has no
    /// room for, keeping it and the rest for the next drain. Returns
    /// whether anything is left.
    pub(crate) fn drain(&self, tx: &Transmitter<'_>, mem: &TryArc<DeviceMemory>) -> bool {
        let mut s = self.store.borrow_mut();
        let Store {
            entries,
            head,
            bytes,
            used,
            scratch,
        } = &mut *s;
        while let Some(entry) = entries.get_mut(*head) {
            let resend = entry.resend;
            match &mut entry.what {
                Transmit::Datagram { at, len } => {
                    if !tx.can_transmit() {
                        return true;
                    }
                    if let Some(datagram) = bytes.get(*at..*at + *len) {
                        tx.packet(datagram, resend);
                    }
                }
                Transmit::Segments { segs, sent } => {
                    if !send_segments(tx, mem, segs, sent, resend, scratch) {
                        return true;
                    }
                }
                Transmit::Built { at, end } => {
                    while *at < *end {
                        if !tx.can_transmit() {
                            return true;
                        }
                        let len = bytes
                            .get(*at..*at + 2)
                            .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])));
                        if let Some(datagram) = bytes.get(*at + 2..*at + 2 + len) {
                            tx.packet(datagram, resend);
                        }
                        *at += 2 + len;
                    }
                }
            }
            *head += 1;
        }
        entries.clear();
        *head = 0;
        *used = 0;
        false
    }
}

/// Sends the packets of `segs` from the `sent`th on: as one train if the
/// link's token for their destination says so, else one datagram each.
/// `false` if the link ran out of room first (`sent` says how far it got).
fn send_segments(
    tx: &Transmitter<'_>,
    mem: &TryArc<DeviceMemory>,
    segs: &Segments,
    sent: &mut u32,
    resend: bool,
    scratch: &mut Vec<u8>,
) -> bool {
    while *sent < segs.count {
        if !tx.can_transmit() {
            return false;
        }
        if let Token::Train(token) = tx.token(segs.ip.dst()) {
            token.send(mem.clone(), &segs.skip(*sent), resend);
            *sent = segs.count;
            return true;
        }
        let seg = segs.segment(*sent);
        let headers = segs.headers(&seg);
        let mut built = None;
        // Built where the link sends it from, if it lends its buffer;
        // else in the scratch datagram and handed over.
        let lent = udp_payload_len(&headers, seg.len).is_ok_and(|len| {
            tx.udp_payload_with(segs.ip.destination(), len, &mut |slot| {
                built = build_segment(mem, segs, &seg, &headers, Framing::UdpPayload, slot);
                built
            })
        });
        if lent {
            tx.stats.retransmitted.inc_if(resend && built.is_some());
        } else {
            built = build_segment(mem, segs, &seg, &headers, Framing::Datagram, scratch);
            if let Some(n) = built {
                tx.buf(scratch, n, resend);
            }
        }
        tx.stats.tx_source_gone.inc_if(built.is_none());
        *sent += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    extern crate std;

    use alloc::boxed::Box;
    use alloc::vec::Vec;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use hwq::{DmaAccess, DmaFault, TryArc};

    use super::{ENTRIES, Outbox, Recorded};
    use crate::link::{Link, Transmitter};
    use crate::memory::{DeviceMemory, KeyLock, KeyTable};
    use crate::stats::Counters;

    /// A link that takes `room` datagrams, then says it has no room.
    #[derive(Default)]
    struct Ring {
        sent: Mutex<Vec<Vec<u8>>>,
        room: AtomicUsize,
    }

    impl Link for Ring {
        fn transmit(&self, datagram: &[u8]) {
            assert!(self.can_transmit(), "given a datagram it had no room for");
            self.room.fetch_sub(1, Ordering::SeqCst);
            self.sent.lock().unwrap().push(datagram.to_vec());
        }

        fn can_transmit(&self) -> bool {
            self.room.load(Ordering::SeqCst) > 0
        }
    }

    struct NoDma;

    impl DmaAccess for NoDma {
        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
            Err(DmaFault {
                addr,
                len: buf.len(),
            })
        }

        fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
            Err(DmaFault {
                addr,
                len: data.len(),
            })
        }
    }

    fn memory() -> TryArc<DeviceMemory> {
        TryArc::try_new(DeviceMemory {
            keys: KeyLock::new(KeyTable::new(4).unwrap()),
            dma: Box::new(NoDma),
        })
        .unwrap()
    }

    /// Records datagram `i`: `i + 1` bytes of value `i`.
    fn record(out: &Outbox, i: u8) -> Recorded {
        out.datagram(false, |slot| {
            let n = usize::from(i) + 1;
            slot.get_mut(..n)?.fill(i);
            Some(n)
        })
    }

    #[test]
    fn drains_in_order_and_keeps_what_the_link_has_no_room_for() {
        let (ring, stats, mem) = (Ring::default(), Counters::default(), memory());
        let tx = Transmitter {
            link: &ring,
            stats: &stats,
        };
        let out = Outbox::new().unwrap();
        for i in 0..5 {
            assert_eq!(record(&out, i), Recorded::Yes);
        }
        assert_eq!(out.datagram(false, |_| None), Recorded::Refused);
        assert_eq!(out.pending(), 5);
        ring.room.store(3, Ordering::SeqCst);
        assert!(out.drain(&tx, &mem), "two datagrams must wait for room");
        assert_eq!(out.pending(), 2);
        // Recorded behind the two that wait, and sent after them.
        assert_eq!(record(&out, 5), Recorded::Yes);
        ring.room.store(10, Ordering::SeqCst);
        assert!(!out.drain(&tx, &mem));
        assert_eq!(out.pending(), 0);
        let sent = ring.sent.lock().unwrap().clone();
        let want: Vec<Vec<u8>> = (0..6u8)
            .map(|i| alloc::vec![i; usize::from(i) + 1])
            .collect();
        assert_eq!(sent, want);
        assert_eq!(stats.tx_packets.get(), 6);
    }

    #[test]
    fn a_sealed_outbox_has_no_room() {
        let out = Outbox::sealed();
        assert!(!out.has_room());
        assert_eq!(record(&out, 1), Recorded::Full);
        assert_eq!(out.pending(), 0);
    }

    #[test]
    fn a_full_outbox_records_nothing_until_drained() {
        let (ring, stats, mem) = (Ring::default(), Counters::default(), memory());
        let tx = Transmitter {
            link: &ring,
            stats: &stats,
        };
        let out = Outbox::new().unwrap();
        let mut recorded = 0;
        while out.has_room() {
            assert_eq!(record(&out, 7), Recorded::Yes);
            recorded += 1;
        }
        assert_eq!(recorded, ENTRIES);
        assert_eq!(record(&out, 7), Recorded::Full);
        ring.room.store(usize::MAX, Ordering::SeqCst);
        assert!(!out.drain(&tx, &mem));
        assert!(out.has_room());
        assert_eq!(ring.sent.lock().unwrap().len(), ENTRIES);
    }
}

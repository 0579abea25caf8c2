//! Trains: consecutive packets of one READ response stream, or of one
//! SEND or RDMA WRITE message, that an in-memory link carries as a single
//! entry, with their payload left in the sender's memory.
//!
//! On a wire every response carries a copy of its payload and an ICRC. Two
//! devices on one machine's memory (the in-memory fabric) need neither: the
//! receiving device can copy each segment straight from the sender's
//! buffer (the responder's for READ responses, the requester's gather list
//! for SENDs and WRITEs) into its own, one copy as a NIC's DMA from its
//! receive buffer would be, and memory does not corrupt bits on the way. That is
//! what segmentation offload is to a virtual switch: a burst of packets
//! travels as one descriptor and is cut into packets only where packets
//! are needed.
//!
//! What stays per packet: PSNs, opcodes (First/Middle/Last/Only), the
//! extension headers of the first and last (AETH, RETH, IETH), and every
//! check the receiver makes of each packet. The sender checks the run's
//! keys when the train is handed out; the receiver checks them again (under the
//! sender's key table lock) for every segment it places, so a key
//! invalidated while the train was in flight places nothing: that segment
//! is lost, and the RC transport sends it again (a resend then meets the
//! dead key: a READ is refused, a SEND or WRITE fails locally). Where packets
//! are needed (a packet tap, a harness that takes datagrams) a segment is
//! materialized: headers, payload read from the source, ICRC.
//!
//! A link carries trains only between devices that reach memory through
//! one DMA address space (one process, one machine) and only while it
//! injects no faults, whose model is per packet.
//!
//! Senders describe what they send once, as `Segments` (what the
//! packets are, the first PSN, how many, the PMTU, where the payload is),
//! whichever way it then leaves: the requester's SEND and WRITE packets
//! and the responder's READ responses take their headers from the same
//! description whether they are built into datagrams or carried as a
//! train. Receivers walk what arrived, a packet or a train, one packet at
//! a time (`Arrived::each`).

use alloc::vec::Vec;
use core::net::IpAddr;
use hwq::TryArc;

use hwq::wqe::MAX_SGE;
use hwq::{MemoryKey, Sge};

#[cfg(doc)]
use crate::memory::KeyLock;
use crate::memory::sg::{self, SgError, walk};
use crate::memory::{Chunks, CrossingPin, DeviceMemory, KeyTable, Need};
use crate::wire::{
    Bth, Carrying, ExtHeaders, Headers, IpUdpFields, Opcode, Packet, PacketBuilder, Reth,
    datagram_len, psn_add, read_response_framing, request_opcode,
};

/// Most packets one train stands for: 1 MiB at a 4096-byte PMTU. The
/// receiver places a train in one go holding the QP, so this bounds how
/// long other work on its device waits (a 1 MiB copy: tens of µs).
pub(crate) const MAX_TRAIN_SEGMENTS: u32 = 256;

/// What a train's packets are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// READ responses; the first and last carry an AETH with this MSN.
    ReadResponse { msn: u32 },
    /// An RDMA WRITE; its first packet carries this RETH.
    Write { reth: Reth },
    /// A SEND; its last packet carries the solicited flag and, to
    /// invalidate a key at the receiver, an IETH.
    Send {
        invalidate: Option<u32>,
        solicited: bool,
    },
}

/// Where the payload is, in the sender's memory.
#[derive(Clone, Copy, Debug)]
// Boxing the gather list would allocate per train; a READ response's
// description only writes the small variant.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Origin {
    /// Under a remote key (a READ's source, checked for remote read).
    Remote { rkey: u32 },
    /// The first `count` entries of the requester's gather list `sges`
    /// (each checked for local read); segment addresses are byte offsets
    /// into its message.
    Gather { count: u8, sges: [Sge; MAX_SGE] },
}

/// A run of packets whose payload stays at the sender.
#[derive(Clone)]
pub struct Train {
    /// The sender's memory the payload is read from.
    source: TryArc<DeviceMemory>,
    /// The packets it stands for.
    segs: Segments,
}

impl core::fmt::Debug for Train {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Train")
            .field("kind", &self.segs.kind)
            .field("dst", &self.segs.ip.dst())
            .field("dest_qp", &self.segs.dest_qp)
            .field("first_psn", &self.segs.first_psn)
            .field("count", &self.segs.count)
            .field("len", &self.segs.len)
            .finish_non_exhaustive()
    }
}

/// One segment of a train, as its packet would carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub psn: u32,
    pub opcode: Opcode,
    /// It opens its message or stream.
    pub first: bool,
    /// It closes it.
    pub last: bool,
    /// Address (remote key) or message offset (gather list) of its payload.
    pub at: u64,
    /// Payload bytes.
    pub len: usize,
}

impl Segment {
    /// Whether it ends a message (Last or Only).
    pub(crate) fn ends_message(&self) -> bool {
        self.last
    }
}

/// Where a packet's payload is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Payload<'a> {
    /// In the packet.
    Bytes(&'a [u8]),
    /// Still at the sender (segment of a train).
    Train(&'a Train, Segment),
}

impl Payload<'_> {
    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Bytes(b) => b.len(),
            Self::Train(_, seg) => seg.len,
        }
    }
}

/// What one arrival for a QP carries: a packet, or a train standing for
/// several; [`Arrived::each`] walks it one packet at a time, so a
/// receiver handles both alike.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arrived<'a> {
    /// One packet, its payload in it.
    Packet(&'a Packet<'a>),
    /// A train's segments, their payload still at the sender.
    Train(&'a Train),
}

impl Arrived<'_> {
    /// Calls `f` with each packet in PSN order (its headers, and where its
    /// payload is) while `f` returns `true`.
    pub(crate) fn each(&self, mut f: impl FnMut(&Packet<'_>, Payload<'_>) -> bool) {
        match *self {
            Arrived::Packet(p) => {
                f(p, Payload::Bytes(p.payload));
            }
            Arrived::Train(train) => {
                for i in 0..train.segments() {
                    let seg = train.segment(i);
                    let headers = train.headers(&seg);
                    let Some(info) = headers.bth.opcode.info() else {
                        return;
                    };
                    let p = Packet {
                        ip: headers.ip,
                        bth: headers.bth,
                        info,
                        ext: headers.ext,
                        payload: &[],
                        icrc: 0,
                    };
                    if !f(&p, Payload::Train(train, seg)) {
                        return;
                    }
                }
            }
        }
    }
}

/// A run of consecutive packets of one message or READ response stream,
/// described once: what they are, the first PSN, how many, the PMTU, and
/// where their payload is at the sender. A sender describes what it sends
/// this way whether the link then carries it as a train or it is built
/// into datagrams here; a receiver meets each packet of it as
/// [`Segments::segment`] and [`Segments::headers`] say.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segments {
    /// Protection domain of the sender's QP.
    pub(crate) pd: u32,
    /// Where the payload is.
    pub(crate) origin: Origin,
    /// Address (remote key) or message offset (gather list) of the first
    /// segment's payload.
    pub(crate) at: u64,
    /// Payload bytes of all segments together.
    pub(crate) len: u64,
    /// Payload bytes per segment (the last may carry fewer).
    pub(crate) pmtu: u32,
    /// IP/UDP facts of the sender's connection.
    pub(crate) ip: IpUdpFields,
    /// The receiver's QP.
    pub(crate) dest_qp: u32,
    /// PSN of the first segment.
    pub(crate) first_psn: u32,
    /// Segments.
    pub(crate) count: u32,
    /// What the packets are.
    pub(crate) kind: Kind,
    /// The first segment opens its message or stream (First or Only).
    pub(crate) opens: bool,
    /// The last segment closes it (Last or Only).
    pub(crate) closes: bool,
    /// The last segment asks for an acknowledgement (requests).
    pub(crate) ack_req: bool,
}

impl Segments {
    /// Whether a requester's gather list still grants the read of every
    /// segment's payload (`mem`'s keys now): the one check of a run handed
    /// out as a train, whose payload the receiver reads. A READ response
    /// stream's remote key is the responder's to check: true.
    pub(crate) fn source_readable(&self, mem: &DeviceMemory) -> bool {
        match &self.origin {
            Origin::Remote { .. } => true,
            Origin::Gather { count, sges } => sges.get(..usize::from(*count)).is_some_and(|sges| {
                let keys = mem.keys.read();
                sg::with_gather_chunks(&keys, self.pd, sges, self.at, self.len as usize, |_, _| {
                    true
                })
            }),
        }
    }

    /// Segment `i` (`i < count`).
    pub(crate) fn segment(&self, i: u32) -> Segment {
        let first = self.opens && i == 0;
        let last = self.closes && i + 1 == self.count;
        let opcode = match (self.kind, first, last) {
            (Kind::ReadResponse { msn }, first, last) => read_response_framing(first, last, msn).0,
            (Kind::Write { .. }, first, last) => request_opcode(Carrying::Write, first, last),
            (Kind::Send { invalidate, .. }, first, last) => {
                let what = if invalidate.is_some() {
                    Carrying::SendInvalidate
                } else {
                    Carrying::Send
                };
                request_opcode(what, first, last)
            }
        };
        let skip = u64::from(i) * u64::from(self.pmtu);
        Segment {
            psn: psn_add(self.first_psn, i),
            opcode,
            first,
            last,
            at: self.at.wrapping_add(skip),
            len: self.len.saturating_sub(skip).min(u64::from(self.pmtu)) as usize,
        }
    }

    /// The headers of segment `seg`'s packet.
    pub(crate) fn headers(&self, seg: &Segment) -> Headers {
        let mut bth = Bth::new(seg.opcode, self.dest_qp, seg.psn);
        let mut ext = ExtHeaders::NONE;
        match self.kind {
            Kind::ReadResponse { msn } => {
                ext.aeth = read_response_framing(seg.first, seg.last, msn).1;
            }
            Kind::Write { reth } => ext.reth = seg.first.then_some(reth),
            Kind::Send {
                invalidate,
                solicited,
            } => {
                ext.ieth = invalidate.filter(|_| seg.last);
                bth.solicited = solicited && seg.last;
            }
        }
        let last_of_train = seg.psn == psn_add(self.first_psn, self.count.saturating_sub(1));
        bth.ack_req = self.ack_req && last_of_train;
        Headers {
            ip: self.ip.for_packet(seg.psn),
            bth,
            ext,
        }
    }

    /// The same run without its first `n` segments (`n <= count`).
    pub(crate) fn skip(&self, n: u32) -> Self {
        if n == 0 {
            return *self;
        }
        let step = u64::from(n) * u64::from(self.pmtu);
        Self {
            at: self.at.wrapping_add(step),
            len: self.len.saturating_sub(step),
            first_psn: psn_add(self.first_psn, n),
            count: self.count.saturating_sub(n),
            opens: false,
            ..*self
        }
    }
}

impl Train {
    /// A train of the packets described by `segs`, reading from `source`.
    pub(crate) fn new(source: TryArc<DeviceMemory>, segs: &Segments) -> Self {
        Self {
            source,
            segs: *segs,
        }
    }

    /// IP destination (the receiving device).
    pub fn dst(&self) -> IpAddr {
        self.segs.ip.dst()
    }

    /// IP source (the sending device).
    pub fn src(&self) -> IpAddr {
        self.segs.ip.src()
    }

    /// The receiver's QP number.
    pub fn dest_qp(&self) -> u32 {
        self.segs.dest_qp
    }

    /// Number of packets it stands for.
    pub fn segments(&self) -> u32 {
        self.segs.count
    }

    /// Payload bytes of all segments.
    pub fn payload_len(&self) -> u64 {
        self.segs.len
    }

    /// Whether it carries READ responses (else requests).
    pub fn is_read_response(&self) -> bool {
        matches!(self.segs.kind, Kind::ReadResponse { .. })
    }

    /// Segment `i` (`i < segments()`).
    pub(crate) fn segment(&self, i: u32) -> Segment {
        self.segs.segment(i)
    }

    /// The headers of segment `seg`'s packet.
    pub(crate) fn headers(&self, seg: &Segment) -> Headers {
        self.segs.headers(seg)
    }

    /// Calls `copy` with (source logical address, bytes) for each piece of
    /// segment `seg`'s payload, in order, holding the source's key table,
    /// after its key (or every key of the gather list) was found to grant
    /// the whole segment. `false` (nothing called) if it no longer does,
    /// or `copy` stopped.
    pub(crate) fn read_source(&self, seg: &Segment, copy: impl FnMut(u64, usize) -> bool) -> bool {
        let keys = self.source.keys.read();
        match &self.segs.origin {
            Origin::Remote { rkey } => sg::with_remote_chunks(
                &keys,
                self.segs.pd,
                *rkey,
                seg.at,
                seg.len,
                Need::RemoteRead,
                copy,
            ),
            Origin::Gather { count, sges } => {
                let sges = sges.get(..usize::from(*count)).unwrap_or_default();
                sg::with_gather_chunks(&keys, self.segs.pd, sges, seg.at, seg.len, copy)
            }
        }
    }

    /// Pins the source memory for a crossing ([`KeyLock::pin_crossing`]):
    /// taken before [`Train::source_chunks`] checks the source key, it
    /// makes any change of the source's key table wait until the copy of
    /// what that check granted has ended.
    pub(crate) fn pin_source(&self) -> CrossingPin<'_> {
        self.source.keys.pin_crossing()
    }

    /// The source pieces (logical address, bytes) of segment `seg`'s
    /// payload from byte `skip` of it, in order, into `out`, as many as fit:
    /// how many were written and the bytes they cover. Checked under the
    /// source's key table (and no other), which is released on return: the
    /// caller holds a [`Train::pin_source`] pin from before this call until
    /// it has copied them. `None` if the key (or a key of the gather list)
    /// no longer grants the rest of the segment.
    pub(crate) fn source_chunks(
        &self,
        seg: &Segment,
        skip: usize,
        out: &mut [(u64, usize)],
    ) -> Option<(usize, usize)> {
        let rest = Segment {
            at: seg.at.wrapping_add(skip as u64),
            len: seg.len.checked_sub(skip)?,
            ..*seg
        };
        let (mut count, mut bytes, mut full) = (0usize, 0usize, false);
        let granted = self.read_source(&rest, |addr, n| {
            let Some(slot) = out.get_mut(count) else {
                full = true;
                return false;
            };
            *slot = (addr, n);
            count += 1;
            bytes += n;
            true
        });
        (granted || full).then_some((count, bytes))
    }

    /// Builds segment `i` as the datagram it stands for (headers, payload
    /// read from the source, ICRC) in `out`, resized to fit; its length,
    /// or `None` if the source key no longer grants the read.
    pub fn build(&self, i: u32, out: &mut Vec<u8>) -> Option<usize> {
        if i >= self.segs.count {
            return None;
        }
        let seg = self.segment(i);
        let headers = self.headers(&seg);
        let total = datagram_len(&headers, seg.len).ok()?;
        if out.len() < total {
            out.resize(total, 0);
        }
        let mut b = PacketBuilder::datagram(&headers, seg.len, out).ok()?;
        {
            let (slot, mut hasher) = b.payload_slot();
            let mut at = 0usize;
            let dma = &*self.source.dma;
            let read = self.read_source(&seg, |addr, n| {
                let Some(piece) = slot.get_mut(at..at + n) else {
                    return false;
                };
                if dma.read(addr, piece).is_err() {
                    return false;
                }
                hasher.update(piece);
                at += n;
                true
            });
            if !read {
                return None;
            }
        }
        b.finish().ok()
    }

    /// Drops the first segment (it was handed out as a datagram): the
    /// train now starts at the next one. `false` if none is left.
    pub fn advance(&mut self) -> bool {
        if self.segs.count <= 1 {
            self.segs.count = 0;
            return false;
        }
        let step = u64::from(self.segs.pmtu).min(self.segs.len);
        self.segs.at = self.segs.at.wrapping_add(step);
        self.segs.len -= step;
        self.segs.first_psn = psn_add(self.segs.first_psn, 1);
        self.segs.count -= 1;
        self.segs.opens = false;
        true
    }
}

/// What a packet is built as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// A whole IP datagram.
    Datagram,
    /// The UDP payload (BTH through ICRC), as a UDP socket sends it.
    UdpPayload,
}

/// Builds segment `seg` of `segs` (its `headers`) with its payload read
/// from `mem`, framed as `framing`, into `out`; its length, or `None` if
/// the source key (or a key of the gather list) no longer grants the read
/// (or `out` is too short).
pub(crate) fn build_segment(
    mem: &DeviceMemory,
    segs: &Segments,
    seg: &Segment,
    headers: &Headers,
    framing: Framing,
    out: &mut [u8],
) -> Option<usize> {
    let sges = match &segs.origin {
        Origin::Remote { rkey } => {
            return build_read_response(
                mem, segs.pd, *rkey, seg.at, headers, seg.len, framing, out,
            );
        }
        Origin::Gather { count, sges } => sges.get(..usize::from(*count))?,
    };
    let mut b = match framing {
        Framing::Datagram => PacketBuilder::datagram(headers, seg.len, out),
        Framing::UdpPayload => PacketBuilder::udp_payload(headers, seg.len, out),
    }
    .ok()?;
    {
        let keys = mem.keys.read();
        let (slot, mut hasher) = b.payload_slot();
        let dst = slot.get_mut(..seg.len)?;
        sg::gather(&keys, &*mem.dma, segs.pd, sges, seg.at, dst, |c| {
            hasher.update(c);
        })
        .ok()?;
    }
    b.finish().ok()
}

/// Builds the READ response `headers` with `plen` payload bytes read from
/// `va` under `rkey` of `mem` into `out`; its length, or `None` if the key
/// does not grant the read (or `out` is too short).
#[allow(clippy::too_many_arguments)] // one packet's every fact, no natural group
pub(crate) fn build_read_response(
    mem: &DeviceMemory,
    pd: u32,
    rkey: u32,
    va: u64,
    headers: &Headers,
    plen: usize,
    framing: Framing,
    out: &mut [u8],
) -> Option<usize> {
    let mut b = match framing {
        Framing::Datagram => PacketBuilder::datagram(headers, plen, out),
        Framing::UdpPayload => PacketBuilder::udp_payload(headers, plen, out),
    }
    .ok()?;
    {
        let keys = mem.keys.read();
        let (slot, mut hasher) = b.payload_slot();
        let dst = slot.get_mut(..plen)?;
        sg::read_remote(&keys, &*mem.dma, pd, rkey, va, dst, |c| {
            hasher.update(c);
        })
        .ok()?;
    }
    b.finish().ok()
}

/// Source pieces resolved per round of [`scatter_train`]: a segment of
/// one PMTU spans at most two pages of one key, so one round is the rule.
const SOURCE_PIECES: usize = 16;

/// Places train segment `seg` (payload still at the sender) at message
/// byte `offset` of `sges` in `mem` (the receiver's memory), each piece of
/// which must grant `need`. In rounds of up to [`SOURCE_PIECES`] source
/// pieces, the sender's key is checked and its pieces resolved under the
/// sender's key table alone, and the bytes are copied straight from the
/// sender's memory into the receiver's under the receiver's key table
/// alone (its pieces checked as they are written). The first round's hold
/// of the receiver's table checks every destination piece first, so a bad
/// destination places no byte; a segment of one round (the rule) takes
/// the receiver's table once.
///
/// Why this is safe without holding both tables: the receiver's memory is
/// written only under its table held shared, right after its key was found
/// to grant the range; deregistration and invalidation take that table
/// exclusively, so they come first (the check fails, nothing more is
/// written) or wait until the write ends. The sender's memory is read
/// after its table was let go, but under a crossing pin taken before its
/// check: a change of the sender's table that came first fails the check,
/// and one that came after waits for the pin ([`KeyLock::update`]), so no
/// byte is read from memory a completed deregistration gave back. Two
/// tables are never held at once because reader/writer spin locks prefer
/// writers (an `EX_SPIN_LOCK` does): two engines each holding its own
/// table and waiting for the other's while a writer waits on each would
/// deadlock, and on loopback the sender's table is the receiver's.
///
/// `Ok(false)`: the source no longer grants the read. The rounds before it
/// may have placed bytes (read while the key was valid); the segment
/// counts as lost all the same and its resend places it whole again, or
/// meets the dead key.
pub(crate) fn scatter_train(
    mem: &DeviceMemory,
    pd: u32,
    sges: &[Sge],
    offset: u64,
    need: Need,
    train: &Train,
    seg: &Segment,
) -> Result<bool, SgError> {
    // Every destination piece, checked under the first round's hold of
    // the receiver's table, before any byte is placed.
    let check_destination = |keys: &KeyTable| {
        walk(sges, offset, seg.len, |sge, addr, take, _| {
            keys.check(MemoryKey(sge.key), pd, addr, take, need)
                .map(|_| ())
                .map_err(|_| SgError::Protection)
        })
    };
    let dma = &*mem.dma;
    let _pin = train.pin_source();
    let mut pieces = [(0u64, 0usize); SOURCE_PIECES];
    let mut done = 0usize;
    while done < seg.len {
        let resolved = train.source_chunks(seg, done, &mut pieces);
        let keys = mem.keys.read();
        if done == 0 {
            // A bad destination is reported before a dead source.
            check_destination(&keys)?;
        }
        let Some((count, bytes)) = resolved else {
            return Ok(false);
        };
        if bytes == 0 {
            // A source that resolves no byte of a non-empty rest cannot
            // be placed; never loop on it.
            return Err(SgError::Length);
        }
        let mut at = offset + done as u64;
        for &(source, len) in pieces.get(..count).unwrap_or_default() {
            let mut from = source;
            walk(sges, at, len, |sge, addr, take, _| {
                let range = keys
                    .check(MemoryKey(sge.key), pd, addr, take, need)
                    .map_err(|_| SgError::Protection)?;
                for (to, n) in Chunks::new(range) {
                    dma.copy(from, to, n).map_err(|_| SgError::Protection)?;
                    from += n as u64;
                }
                Ok(())
            })?;
            at += len as u64;
        }
        done += bytes;
    }
    Ok(true)
}

/// Places a SEND or WRITE train segment `seg` (payload still at the
/// requester) at `va` of remote key `rkey` (a peer's WRITE): a one-piece
/// [`scatter_train`] needing remote write.
pub(crate) fn write_remote_train(
    mem: &DeviceMemory,
    pd: u32,
    rkey: u32,
    va: u64,
    train: &Train,
    seg: &Segment,
) -> Result<bool, SgError> {
    let target = Sge {
        addr: va,
        length: u32::try_from(seg.len).map_err(|_| SgError::Length)?,
        key: rkey,
    };
    scatter_train(mem, pd, &[target], 0, Need::RemoteWrite, train, seg)
}

/// Scatters a packet's payload (in the packet, or a train segment still
/// at the sender) into `mem` (local memory) at message byte `offset` of
/// `sges`, taking its key table for the time it needs it. `Ok(false)`: a
/// train's source no longer grants the read ([`scatter_train`]).
pub(crate) fn scatter_payload(
    mem: &DeviceMemory,
    pd: u32,
    sges: &[Sge],
    offset: u64,
    payload: Payload<'_>,
) -> Result<bool, SgError> {
    match payload {
        Payload::Bytes(data) => {
            sg::scatter(&mem.keys.read(), &*mem.dma, pd, sges, offset, data).map(|()| true)
        }
        Payload::Train(train, ref seg) => {
            scatter_train(mem, pd, sges, offset, Need::LocalWrite, train, seg)
        }
    }
}

//! READ response trains: consecutive READ response packets of one stream
//! that an in-memory link carries as a single entry, with their payload
//! left in the responder's memory.
//!
//! On a wire every response carries a copy of its payload and an ICRC. Two
//! devices on one machine's memory (the in-memory fabric) need neither: the
//! receiving device can copy each segment straight from the responder's
//! buffer into the READ's buffers, one copy as a NIC's DMA from its receive
//! buffer would be, and memory does not corrupt bits on the way. That is
//! what segmentation offload is to a virtual switch: a burst of packets
//! travels as one descriptor and is cut into packets only where packets
//! are needed.
//!
//! What stays per packet: PSNs, opcodes (First/Middle/Last/Only), the AETH
//! of the first and last, and every check the requester makes of each
//! response. The responder checked its key when it accepted the READ; the
//! receiver checks it again (under the responder's key table lock) for
//! every segment it places, so a key invalidated while the train was in
//! flight places nothing: that segment is lost, and the RC transport asks
//! again (a replay then meets the dead key and is refused). Where packets
//! are needed (a packet tap, a harness that takes datagrams) a segment is
//! materialized: headers, payload read from the source, ICRC.
//!
//! A link carries trains only between devices that reach memory through
//! one DMA address space (one process, one machine) and only while it
//! injects no faults, whose model is per packet.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

use crate::memory::{DeviceMemory, Need};
use crate::qp::sg;
use crate::wire::{
    Aeth, Bth, ExtHeaders, Headers, Ipv4UdpFields, Opcode, PSN_MASK, PacketBuilder, Syndrome,
    datagram_len, psn_add,
};

/// A run of READ response packets whose payload stays at the source.
#[derive(Clone)]
pub struct ReadTrain {
    /// The responder's memory the payload is read from.
    source: Arc<DeviceMemory>,
    /// Protection domain of the responder's QP.
    pd: u32,
    /// The READ's remote key.
    rkey: u32,
    /// Address of the first segment's payload.
    va: u64,
    /// Payload bytes of all segments together.
    len: u64,
    /// Payload bytes per segment (the last may carry fewer).
    pmtu: u32,
    /// IPv4/UDP facts of the responder's connection.
    ip: Ipv4UdpFields,
    /// The requester's QP.
    dest_qp: u32,
    /// PSN of the first segment.
    first_psn: u32,
    /// Segments.
    count: u32,
    /// The first segment opens its response stream (First or Only).
    opens: bool,
    /// The last segment closes it (Last or Only).
    closes: bool,
    /// MSN of the AETH the opening and closing segments carry.
    msn: u32,
}

impl core::fmt::Debug for ReadTrain {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReadTrain")
            .field("dst", &self.ip.dst)
            .field("dest_qp", &self.dest_qp)
            .field("first_psn", &self.first_psn)
            .field("count", &self.count)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// One segment of a train, as its packet would carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub psn: u32,
    pub opcode: Opcode,
    pub aeth: Option<Aeth>,
    /// Address of its payload at the source.
    pub va: u64,
    /// Payload bytes.
    pub len: usize,
}

impl Segment {
    /// Whether it ends a message (Last or Only).
    pub(crate) fn ends_message(&self) -> bool {
        self.opcode == Opcode::RDMA_READ_RESPONSE_LAST
            || self.opcode == Opcode::RDMA_READ_RESPONSE_ONLY
    }
}

/// Where a train's segments come from: the responder's stream.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TrainSource {
    pub pd: u32,
    pub rkey: u32,
    pub va: u64,
    pub len: u64,
    pub pmtu: u32,
    pub ip: Ipv4UdpFields,
    pub dest_qp: u32,
    pub first_psn: u32,
    pub count: u32,
    pub opens: bool,
    pub closes: bool,
    pub msn: u32,
}

impl ReadTrain {
    /// A train of the responses described by `s`, reading from `source`.
    pub(crate) fn new(source: Arc<DeviceMemory>, s: TrainSource) -> Self {
        Self {
            source,
            pd: s.pd,
            rkey: s.rkey,
            va: s.va,
            len: s.len,
            pmtu: s.pmtu,
            ip: s.ip,
            dest_qp: s.dest_qp,
            first_psn: s.first_psn,
            count: s.count,
            opens: s.opens,
            closes: s.closes,
            msn: s.msn,
        }
    }

    /// IPv4 destination (the requester's device).
    pub fn dst(&self) -> Ipv4Addr {
        self.ip.dst
    }

    /// IPv4 source (the responder's device).
    pub fn src(&self) -> Ipv4Addr {
        self.ip.src
    }

    /// The requester's QP number.
    pub fn dest_qp(&self) -> u32 {
        self.dest_qp
    }

    /// Number of packets it stands for.
    pub fn segments(&self) -> u32 {
        self.count
    }

    /// Payload bytes of all segments.
    pub fn payload_len(&self) -> u64 {
        self.len
    }

    /// Segment `i` (`i < segments()`).
    pub(crate) fn segment(&self, i: u32) -> Segment {
        let first = self.opens && i == 0;
        let last = self.closes && i + 1 == self.count;
        let opcode = match (first, last) {
            (true, true) => Opcode::RDMA_READ_RESPONSE_ONLY,
            (true, false) => Opcode::RDMA_READ_RESPONSE_FIRST,
            (false, false) => Opcode::RDMA_READ_RESPONSE_MIDDLE,
            (false, true) => Opcode::RDMA_READ_RESPONSE_LAST,
        };
        let skip = u64::from(i) * u64::from(self.pmtu);
        Segment {
            psn: psn_add(self.first_psn, i),
            opcode,
            aeth: (first || last).then_some(Aeth {
                syndrome: Syndrome::ACK,
                msn: self.msn & PSN_MASK,
            }),
            va: self.va.wrapping_add(skip),
            len: self.len.saturating_sub(skip).min(u64::from(self.pmtu)) as usize,
        }
    }

    /// Copies segment `seg`'s payload from the source: `copy` is called
    /// with (source logical address, bytes) for each piece, in order,
    /// holding the source's key table, after the key was found to grant
    /// the whole segment. `false` (nothing copied) if it no longer does.
    pub(crate) fn read_source(&self, seg: &Segment, copy: impl FnMut(u64, usize) -> bool) -> bool {
        sg::with_remote_chunks(
            &self.source.keys.read(),
            self.pd,
            self.rkey,
            seg.va,
            seg.len,
            Need::RemoteRead,
            copy,
        )
    }

    /// Builds segment `i` as the datagram it stands for (headers, payload
    /// read from the source, ICRC) in `out`, resized to fit; its length,
    /// or `None` if the source key no longer grants the read.
    pub fn build(&self, i: u32, out: &mut Vec<u8>) -> Option<usize> {
        if i >= self.count {
            return None;
        }
        let seg = self.segment(i);
        let headers = self.headers(&seg);
        let total = datagram_len(&headers, seg.len).ok()?;
        if out.len() < total {
            out.resize(total, 0);
        }
        build_read_response(
            &self.source,
            self.pd,
            self.rkey,
            seg.va,
            &headers,
            seg.len,
            Framing::Ipv4,
            out,
        )
    }

    /// The headers of segment `seg`.
    fn headers(&self, seg: &Segment) -> Headers {
        Headers {
            ip: self.ip,
            bth: Bth::new(seg.opcode, self.dest_qp, seg.psn),
            ext: ExtHeaders {
                aeth: seg.aeth,
                ..ExtHeaders::NONE
            },
        }
    }

    /// Drops the first segment (it was handed out as a datagram): the
    /// train now starts at the next one. `false` if none is left.
    pub(crate) fn advance(&mut self) -> bool {
        if self.count <= 1 {
            self.count = 0;
            return false;
        }
        let step = u64::from(self.pmtu).min(self.len);
        self.va = self.va.wrapping_add(step);
        self.len -= step;
        self.first_psn = psn_add(self.first_psn, 1);
        self.count -= 1;
        self.opens = false;
        true
    }
}

/// What a packet is built as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// A whole IPv4 datagram.
    Ipv4,
    /// The UDP payload (BTH through ICRC), as a UDP socket sends it.
    UdpPayload,
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
        Framing::Ipv4 => PacketBuilder::ipv4(headers, plen, out),
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

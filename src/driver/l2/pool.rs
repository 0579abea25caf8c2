//! The L2 port's send frames: [`FRAMES`] NET_BUFFER_LISTs, each with one
//! NET_BUFFER over an MDL of non-paged memory as long as the longest frame
//! the link carries ([`frame_bytes`]), all allocated when the port is
//! created, so that sending a frame allocates nothing: a frame is claimed,
//! filled in place, sent, and given back when its send completes (or at
//! once if it could not be sent).
//!
//! [`FRAMES`] is what a NIC's transmit ring holds: the RNIC sends bursts
//! (a READ response is a run of packets) larger than that. So the pool
//! says when it has no room ([`SendPool::has_room`], the sink's
//! `FrameSink::has_room`), and the pump stops taking the RNIC's packets
//! instead of building frames the pool would have to drop; once
//! [`RESUME_AT`] frames are free again, the give-back that frees enough
//! says so ([`GivenBack::RoomAgain`]) and the port kicks the engine, whose
//! pass pumps again, as a NIC driver stops its queue when the ring is full
//! and wakes it from the transmit completion.
//!
//! Frames free to claim are counted (`free`): a claim takes one from the
//! count before it looks for an idle frame, a give-back adds one after
//! its frame is idle, so the count never says more than there is.
//!
//! The frames themselves (the NBL pool, the lists, their MDLs and bytes,
//! each owned through a `busy` flag: no lock, legal at any IRQL up to
//! DISPATCH_LEVEL) are the kit's [`SendFrames`]; this file is the ring's
//! policy: the free count, the search, the stop and the resume.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ndkpi::NTSTATUS;

use softrnic::l2::MAX_DATAGRAM_LEN;
use softrnic::wire::ethernet::ETHERNET_HEADER_LEN;

use crate::driver::kit::nbl::{ClaimedFrame, Nbl, SendFrames};
use crate::driver::kit::ndis::BindingHandle;

/// Send frames of a port: the RNIC's packets in flight to the NIC at most
/// (a packet finding none free is dropped; RC retransmits it).
pub const FRAMES: usize = 256;
/// Free frames a pool that ran out needs before it says it has room again:
/// a quarter of the ring, so a stopped sender resumes with a batch to send
/// rather than one frame per completion.
pub const RESUME_AT: usize = FRAMES / 4;
/// The shortest frame buffer: room for any ARP or neighbour discovery
/// frame the port builds, whatever the link MTU says.
const MIN_FRAME_BYTES: usize = 128;

/// Bytes of one frame for a link of MTU `link_mtu`: an Ethernet header and
/// the longest datagram the link carries, but no more than the longest
/// frame the port builds (the longest RoCEv2 datagram: IPv6, UDP, BTH,
/// extended headers, a 4096-byte path MTU payload, ICRC). The port drops
/// datagrams longer than the link MTU, so nothing it sends is longer
/// (unless the MTU grows after the port was made: such frames are dropped
/// and counted as send drops).
pub fn frame_bytes(link_mtu: u32) -> usize {
    (ETHERNET_HEADER_LEN + (link_mtu as usize).min(MAX_DATAGRAM_LEN)).max(MIN_FRAME_BYTES)
}
/// Shortest Ethernet frame without its FCS; shorter frames are padded
/// with zeros (IEEE 802.3 minimum frame of 64 bytes less the 4-byte FCS
/// the NIC appends).
pub const MIN_FRAME: usize = 60;

/// The frames and what is free of them.
pub struct SendPool {
    frames: SendFrames,
    next: AtomicUsize,
    /// Frames a claim may take: never more than the idle ones.
    free: AtomicUsize,
    /// The pool ran out and said so ([`SendPool::has_room`]): it has room
    /// again at [`RESUME_AT`] free frames, and the give-back that sees
    /// that clears this and reports it.
    stopped: AtomicBool,
}

impl core::fmt::Debug for SendPool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendPool")
            .field("frames", &self.frames.len())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

/// A claimed frame: its bytes are the holder's to fill until it is sent
/// or given back ([`Claimed::release`]). No `Drop`: a `Claimed` that goes
/// out of scope leaves its frame taken, which is what a sent frame needs
/// (its completion, [`SendPool::completed`], gives it back).
#[derive(Debug)]
pub struct Claimed<'a> {
    pool: &'a SendPool,
    frame: ClaimedFrame<'a>,
}

impl Claimed<'_> {
    /// Copies `bytes` into the frame (padded with zeros to [`MIN_FRAME`])
    /// and makes its list ready to send: one NET_BUFFER of that length,
    /// `Next` null, status cleared. The claim back (the frame still
    /// claimed) if `bytes` does not fit.
    pub fn fill(self, bytes: &[u8]) -> Result<Nbl, Self> {
        let pool = self.pool;
        self.frame
            .fill(bytes, MIN_FRAME)
            .map_err(|frame| Claimed { pool, frame })
    }

    /// Gives the frame back (it was not sent); whether the pool has room
    /// again after running out (tell the sender).
    pub fn release(self) -> bool {
        self.frame.release();
        self.pool.count_free()
    }
}

/// What a sent list's completion did ([`SendPool::completed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GivenBack {
    /// The list is not one of the pool's frames in flight: nothing changed.
    NotInFlight,
    /// Its frame is free again.
    Free,
    /// Its frame is free again, and the pool, which had run out, has room
    /// again: its sender is to be told.
    RoomAgain,
}

impl SendPool {
    /// Allocates the NBL pool on the binding `binding_handle` and
    /// [`FRAMES`] frames for a link of MTU `link_mtu` (`PASSIVE_LEVEL` or
    /// `DISPATCH_LEVEL`). Whatever was allocated when something fails is
    /// freed again.
    pub fn new(binding_handle: BindingHandle, link_mtu: u32) -> Result<Self, NTSTATUS> {
        let frames = SendFrames::new(binding_handle, FRAMES, frame_bytes(link_mtu))?;
        Ok(Self {
            frames,
            next: AtomicUsize::new(0),
            free: AtomicUsize::new(FRAMES),
            stopped: AtomicBool::new(false),
        })
    }

    /// Takes a free frame (any IRQL up to DISPATCH_LEVEL); `None` when all
    /// are in flight.
    pub fn claim(&self) -> Option<Claimed<'_>> {
        self.free
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .ok()?;
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let count = self.frames.len();
        let claimed = (0..count).find_map(|k| {
            let frame = self.frames.try_claim((start + k) % count)?;
            Some(Claimed { pool: self, frame })
        });
        if claimed.is_none() {
            // The idle frame counted for this claim went to another one
            // while the search passed it (it was freed behind the search):
            // the count goes back. Not a give-back that can end a stop:
            // the frames the others took come back with give-backs of
            // their own.
            self.free.fetch_add(1, Ordering::SeqCst);
        }
        claimed
    }

    /// Whether a frame is free for the RNIC's next packet (any IRQL up to
    /// DISPATCH_LEVEL; two atomic loads unless it just ran out). A pool
    /// that ran out says no until [`RESUME_AT`] frames are free again;
    /// the give-back that sees that reports [`GivenBack::RoomAgain`], or
    /// `release` `true`, after every `false` said here.
    pub fn has_room(&self) -> bool {
        let stopped = self.stopped.load(Ordering::SeqCst);
        let free = self.free.load(Ordering::SeqCst);
        if stopped {
            return free >= RESUME_AT;
        }
        if free > 0 {
            return true;
        }
        self.stopped.store(true, Ordering::SeqCst);
        // Give-backs between the look and the stop did not see it: look
        // again (a give-back after the stop sees it; the count and the
        // flag are sequentially consistent).
        self.free.load(Ordering::SeqCst) >= RESUME_AT
    }

    /// Counts a frame free again (after its `busy` flag was cleared);
    /// whether that ends a stop ([`SendPool::has_room`]).
    fn count_free(&self) -> bool {
        let free = self.free.fetch_add(1, Ordering::SeqCst) + 1;
        free >= RESUME_AT
            && self.stopped.load(Ordering::SeqCst)
            && self.stopped.swap(false, Ordering::SeqCst)
    }

    /// Whether `nbl` is one of this pool's lists (by its pool, as NDIS
    /// records it; any IRQL up to DISPATCH_LEVEL).
    pub fn owns(&self, nbl: &Nbl) -> bool {
        self.frames.owns(nbl)
    }

    /// A sent list came back: its frame is free again (unless the list is
    /// not one of this pool's frames in flight).
    pub fn completed(&self, nbl: Nbl) -> GivenBack {
        if !self.frames.give_back(nbl) {
            return GivenBack::NotInFlight;
        }
        if self.count_free() {
            GivenBack::RoomAgain
        } else {
            GivenBack::Free
        }
    }

    /// Frames claimed or in flight now.
    pub fn in_flight(&self) -> usize {
        self.frames.in_flight()
    }
}

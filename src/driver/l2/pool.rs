//! The L2 port's send frames: [`FRAMES`] NET_BUFFER_LISTs, each with one
//! NET_BUFFER over an MDL of non-paged memory as long as the longest frame
//! the link carries ([`frame_bytes`]), all allocated when the port is
//! created, so that sending a frame allocates nothing: a frame is claimed,
//! filled in place, sent, and given back when its send completes (or at
//! once if it could not be sent).
//!
//! [`FRAMES`] is what a NIC's transmit ring holds: the RNIC sends bursts
//! (a READ response is a run of packets) larger than that. So the pool
//! says when it has no room ([`SendPool::has_room`], the RNIC's
//! `Link::can_transmit`), and the RNIC stops instead of building frames
//! the pool would have to drop; once [`RESUME_AT`] frames are free again,
//! the give-back that frees enough says so ([`GivenBack::RoomAgain`]) and
//! the port tells the RNIC, as a NIC driver stops its queue when the ring
//! is full and wakes it from the transmit completion.
//!
//! Frames free to claim are counted (`free`): a claim takes one from the
//! count before it looks for an idle frame, a give-back adds one after
//! its frame is idle, so the count never says more than there is.
//!
//! Frames are owned through a `busy` flag each (claimed with an acquire
//! compare-exchange, released with a release store): no lock, legal at
//! any IRQL up to DISPATCH_LEVEL. A frame's NBL records its index in
//! `ProtocolReserved[0]` (the sending protocol's to use while it owns the
//! list), so a completion finds its frame without a search.

use alloc::vec::Vec;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ndis::{
    IoAllocateMdl, IoFreeMdl, MmBuildMdlForNonPagedPool, NDIS_HANDLE, NDIS_PROTOCOL_ID_DEFAULT,
    NET_BUFFER_LIST, NET_BUFFER_LIST_POOL_PARAMETERS, NdisAllocateNetBufferAndNetBufferList,
    NdisAllocateNetBufferListPool, NdisFreeNetBufferList, NdisFreeNetBufferListPool,
    NdisGetPoolFromNetBufferList,
};
use ndkpi::{MDL, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};

use softrnic::l2::MAX_DATAGRAM_LEN;
use softrnic::wire::ethernet::ETHERNET_HEADER_LEN;

use crate::driver::alloc::{POOL_TAG, PageBuffer};

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

/// One preallocated frame.
struct Frame {
    nbl: NonNull<NET_BUFFER_LIST>,
    mdl: NonNull<MDL>,
    data: *mut u8,
    /// Bytes at `data`.
    capacity: usize,
    busy: AtomicBool,
}

/// The frames and the NBL pool they came from.
pub struct SendPool {
    pool: NDIS_HANDLE,
    frames: Vec<Frame>,
    next: AtomicUsize,
    /// Frames a claim may take: never more than the idle ones.
    free: AtomicUsize,
    /// The pool ran out and said so ([`SendPool::has_room`]): it has room
    /// again at [`RESUME_AT`] free frames, and the give-back that sees
    /// that clears this and reports it.
    stopped: AtomicBool,
    /// The frames' bytes, freed after the MDLs and NBLs over them (field
    /// order: dropped after `frames`, whose owner frees those in `Drop`).
    memory: PageBuffer,
}

impl core::fmt::Debug for SendPool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendPool")
            .field("frames", &self.frames.len())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

// SAFETY: the pool handle is an opaque token NDIS allows on any processor;
// a frame's NBL, MDL and bytes are touched only by the holder of its
// `busy` flag (or by NDIS while it is sent); everything else is atomic or
// immutable after `new`.
unsafe impl Send for SendPool {}
// SAFETY: shared access claims frames through their atomic `busy` flag
// (acquire) and releases them with a release store, so one processor at a
// time owns a frame's memory; the vector itself is never written after
// `new`.
unsafe impl Sync for SendPool {}

/// A claimed frame: its bytes are the holder's to fill until it is sent
/// or given back ([`Claimed::release`]). No `Drop`: a `Claimed` that goes
/// out of scope leaves its frame taken, which is what a sent frame needs
/// (its completion, [`SendPool::completed`], gives it back).
pub struct Claimed<'a> {
    pool: &'a SendPool,
    frame: &'a Frame,
    index: usize,
}

impl core::fmt::Debug for Claimed<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Claimed")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl Claimed<'_> {
    /// Copies `bytes` into the frame (padded with zeros to [`MIN_FRAME`])
    /// and makes its list ready to send: one NET_BUFFER of that length,
    /// `Next` null, status cleared. `None` (the frame still claimed) if
    /// `bytes` does not fit.
    pub fn fill(&self, bytes: &[u8]) -> Option<NonNull<NET_BUFFER_LIST>> {
        let frame = self.frame;
        if bytes.len() > frame.capacity {
            return None;
        }
        let length = bytes.len().max(MIN_FRAME);
        // SAFETY: the frame is claimed (its `busy` flag is ours), so its
        // `capacity` bytes are ours alone until it is sent or released;
        // `bytes` (at most `capacity`) is the caller's, no overlap.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), frame.data, bytes.len()) };
        // SAFETY: the frame is claimed, so its bytes are ours until it is
        // sent or released; `bytes.len()..length` lies inside the frame
        // (`length <= max(capacity, MIN_FRAME) = capacity`, as `capacity`
        // is at least MIN_FRAME_BYTES).
        unsafe {
            ptr::write_bytes(
                frame.data.wrapping_add(bytes.len()),
                0,
                length - bytes.len(),
            );
        };
        let nbl = frame.nbl;
        // SAFETY: the claimed frame's list is ours (not in flight: it is
        // given back only after its completion, or was never sent).
        let list = unsafe { &mut *nbl.as_ptr() };
        list.Next = ptr::null_mut();
        list.Status = 0;
        let nb = NonNull::new(list.FirstNetBuffer)?;
        // SAFETY: the list's one NET_BUFFER, allocated with it over the
        // frame's MDL, ours with the list.
        let nb = unsafe { &mut *nb.as_ptr() };
        nb.Next = ptr::null_mut();
        nb.set_data_length(length as u32);
        Some(nbl)
    }

    /// Gives the frame back (it was not sent); whether the pool has room
    /// again after running out (tell the sender).
    pub fn release(self) -> bool {
        self.frame.busy.store(false, Ordering::Release);
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
    pub fn new(binding_handle: NDIS_HANDLE, link_mtu: u32) -> Result<Self, NTSTATUS> {
        let capacity = frame_bytes(link_mtu);
        let memory = PageBuffer::zeroed(FRAMES * capacity).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let mut frames = Vec::new();
        frames
            .try_reserve_exact(FRAMES)
            .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        // Lists with one NET_BUFFER each and no preallocated data: the data
        // is the frame's MDL (NdisAllocateNetBufferAndNetBufferList).
        let params =
            NET_BUFFER_LIST_POOL_PARAMETERS::new(NDIS_PROTOCOL_ID_DEFAULT, true, 0, POOL_TAG, 0);
        // SAFETY: <= DISPATCH_LEVEL; an open binding's handle (the caller's
        // contract); the parameters live for the call and carry a
        // revision-1 header whose size NDIS reads.
        let pool = unsafe { NdisAllocateNetBufferListPool(binding_handle, &raw const params) };
        if pool.is_null() {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        // From here `Drop` frees the pool and every frame pushed so far.
        let mut this = Self {
            pool,
            frames,
            next: AtomicUsize::new(0),
            // None until allocated below.
            free: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            memory,
        };
        for index in 0..FRAMES {
            let frame = this.allocate_frame(index, capacity)?;
            // Capacity is reserved: no reallocation.
            this.frames.push(frame);
        }
        this.free.store(FRAMES, Ordering::SeqCst);
        Ok(this)
    }

    /// Frame `index` of `capacity` bytes: an MDL over its bytes and a list
    /// over the MDL.
    fn allocate_frame(&self, index: usize, capacity: usize) -> Result<Frame, NTSTATUS> {
        // Inside the buffer of FRAMES * capacity bytes.
        let data = self.memory.as_ptr().wrapping_add(index * capacity);
        // SAFETY: `data` is `capacity` bytes of non-paged pool owned by this
        // pool; no IRP, no quota.
        let mdl = unsafe { IoAllocateMdl(data.cast(), capacity as u32, 0, 0, ptr::null_mut()) };
        let mdl = NonNull::new(mdl).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        // SAFETY: the MDL describes non-paged pool (`data`), as the
        // routine requires; it fills the PFNs and `MappedSystemVa`.
        unsafe { MmBuildMdlForNonPagedPool(mdl.as_ptr()) };
        // SAFETY: <= DISPATCH_LEVEL; a pool made with fAllocateNetBuffer
        // and DataSize 0, as this routine requires; the MDL chain (one
        // MDL) holds `capacity` bytes from offset 0.
        let nbl = unsafe {
            NdisAllocateNetBufferAndNetBufferList(self.pool, 0, 0, mdl.as_ptr(), 0, capacity)
        };
        let Some(nbl) = NonNull::new(nbl) else {
            // SAFETY: allocated above and not yet in a frame or a list.
            unsafe { IoFreeMdl(mdl.as_ptr()) };
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        };
        // SAFETY: a list just allocated, not yet shared with anyone.
        unsafe { (*nbl.as_ptr()).ProtocolReserved[0] = index as *mut core::ffi::c_void };
        Ok(Frame {
            nbl,
            mdl,
            data,
            capacity,
            busy: AtomicBool::new(false),
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
            let index = (start + k) % count;
            let frame = self.frames.get(index)?;
            frame
                .busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
                .then_some(Claimed {
                    pool: self,
                    frame,
                    index,
                })
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
    pub fn owns(&self, nbl: &NET_BUFFER_LIST) -> bool {
        // SAFETY: <= DISPATCH_LEVEL; `nbl` is a live list the caller holds.
        let pool = unsafe { NdisGetPoolFromNetBufferList(ptr::from_ref(nbl)) };
        pool == self.pool
    }

    /// A sent list came back: its frame is free again (unless the list is
    /// not one of this pool's frames in flight).
    pub fn completed(&self, nbl: NonNull<NET_BUFFER_LIST>) -> GivenBack {
        // SAFETY: the caller hands back a completed list of this pool,
        // which is ours again; reading the index we stored.
        let index = unsafe { (*nbl.as_ptr()).ProtocolReserved[0] } as usize;
        let Some(frame) = self.frames.get(index) else {
            return GivenBack::NotInFlight;
        };
        if frame.nbl != nbl || !frame.busy.load(Ordering::Acquire) {
            return GivenBack::NotInFlight;
        }
        frame.busy.store(false, Ordering::Release);
        if self.count_free() {
            GivenBack::RoomAgain
        } else {
            GivenBack::Free
        }
    }

    /// Frames claimed or in flight now.
    pub fn in_flight(&self) -> usize {
        self.frames
            .iter()
            .filter(|f| f.busy.load(Ordering::Acquire))
            .count()
    }
}

impl Drop for SendPool {
    /// Frees every list, MDL and the pool (`<= DISPATCH_LEVEL`). The owner
    /// has waited until no frame is in flight ([`SendPool::in_flight`] 0:
    /// the binding's send rundown), so NDIS holds none of them.
    fn drop(&mut self) {
        for frame in &self.frames {
            // SAFETY: allocated from this pool in `allocate_frame`, not in
            // flight (the owner's contract), freed once here.
            unsafe { NdisFreeNetBufferList(frame.nbl.as_ptr()) };
            // SAFETY: the MDL the list was over, no longer referenced by
            // any list (freed just above); allocated by IoAllocateMdl.
            unsafe { IoFreeMdl(frame.mdl.as_ptr()) };
        }
        // SAFETY: every list of the pool was freed above; allocated in
        // `new` and freed once.
        unsafe { NdisFreeNetBufferListPool(self.pool) };
    }
}

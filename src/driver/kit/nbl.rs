//! NET_BUFFER_LISTs and their ownership.
//!
//! An [`Nbl`] is one list the driver holds, detached from any chain: taken
//! off a chain NDIS handed it, or one of its own pool's. An [`NblChain`]
//! is a chain it holds, built by pushing `Nbl`s or handed over by NDIS.
//! Neither is `Clone`, and every call that gives lists to NDIS
//! ([`send`], [`complete_sends`], [`return_received`], [`indicate_one`])
//! consumes them, so a list the driver held goes back exactly once; a
//! list lent for a call (`NDIS_RECEIVE_FLAGS_RESOURCES`) is NDIS's again
//! when the call returns, relinked as it came by pushing it back in order.

use core::ptr::{self, NonNull};

use ndis::{
    IoAllocateMdl, IoFreeMdl, MmBuildMdlForNonPagedPool, NDIS_HANDLE, NDIS_PORT_NUMBER,
    NDIS_PROTOCOL_ID_DEFAULT, NDIS_RECEIVE_FLAGS_RESOURCES, NET_BUFFER, NET_BUFFER_LIST,
    NET_BUFFER_LIST_POOL_PARAMETERS, NdisAllocateNetBufferAndNetBufferList,
    NdisAllocateNetBufferListContext, NdisAllocateNetBufferListPool, NdisFreeNetBufferList,
    NdisFreeNetBufferListContext, NdisFreeNetBufferListPool, NdisGetDataBuffer,
    NdisGetPoolFromNetBufferList, NdisMIndicateReceiveNetBufferLists,
    NdisMSendNetBufferListsComplete, NdisReturnNetBufferLists, NdisSendNetBufferLists,
};
use ndkpi::{NDIS_STATUS, NDIS_STATUS_SUCCESS, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, ULONG};

use super::kernel::ClaimFlag;
use super::memory::POOL_TAG;
use super::ndis::{AdapterHandle, BindingHandle};

/// One NBL the driver holds, its `Next` null.
#[derive(Debug)]
pub struct Nbl(NonNull<NET_BUFFER_LIST>);

// SAFETY: an NBL the driver holds is its alone until given back (this
// type's invariant), from any processor.
unsafe impl Send for Nbl {}

impl Nbl {
    /// An NBL the caller holds, detached (`Next` null).
    ///
    /// # Safety
    /// `nbl` is a live NBL the caller holds until it gives it back, and
    /// nobody else reaches it meanwhile.
    pub(super) unsafe fn from_raw(nbl: NonNull<NET_BUFFER_LIST>) -> Self {
        Self(nbl)
    }

    /// Gives up the value for the list's address (the list is handed on).
    fn into_raw(self) -> NonNull<NET_BUFFER_LIST> {
        self.0
    }

    pub(super) fn as_ptr(&self) -> *mut NET_BUFFER_LIST {
        self.0.as_ptr()
    }

    /// The list's header fields.
    pub fn header(&self) -> &NET_BUFFER_LIST {
        // SAFETY: a live NBL this value holds (type invariant); shared for
        // as long as `self` is borrowed.
        unsafe { self.0.as_ref() }
    }

    fn header_mut(&mut self) -> &mut NET_BUFFER_LIST {
        // SAFETY: a live NBL this value holds alone (type invariant);
        // `&mut self` makes this the only reference.
        unsafe { self.0.as_mut() }
    }

    /// The status NDIS or the sender set.
    pub fn status(&self) -> NDIS_STATUS {
        self.header().Status
    }

    /// Sets the status it completes with.
    pub fn set_status(&mut self, status: NDIS_STATUS) {
        self.header_mut().Status = status;
    }

    /// Its one frame, if it holds exactly one (a receive indication
    /// carries one frame per list).
    pub fn single_frame(&self) -> Option<Frame<'_>> {
        let mut frames = self.frames();
        let first = frames.next()?;
        frames.next().is_none().then_some(first)
    }

    /// Its frames (`NET_BUFFER`s), in order.
    pub fn frames(&self) -> Frames<'_> {
        Frames {
            at: self.header().FirstNetBuffer,
            nbl: core::marker::PhantomData,
        }
    }

    /// Makes the NBL a send of `binding` (`<= DISPATCH_LEVEL`): the
    /// sender's `SourceHandle` is kept in a context area of the NBL (taken
    /// from the space the sender reserved when it has some, as the MUX
    /// sample's `IM_NBL_ENTRY`) and the binding's put in its place, so
    /// NDIS routes the completion to the binding. NDIS's status when no
    /// context could be allocated (nothing changed then).
    pub fn take_source(&mut self, binding: BindingHandle) -> Result<(), NDIS_STATUS> {
        // SAFETY: <= DISPATCH_LEVEL; an NBL this value holds; a size that
        // is a multiple of MEMORY_ALLOCATION_ALIGNMENT.
        let status = unsafe {
            NdisAllocateNetBufferListContext(self.as_ptr(), SEND_CONTEXT_SIZE, 0, POOL_TAG)
        };
        if status != NDIS_STATUS_SUCCESS {
            return Err(status);
        }
        let previous_source = self.header().SourceHandle;
        let context = self.context_data();
        // SAFETY: the context just allocated, SEND_CONTEXT_SIZE bytes,
        // 16-byte aligned (NDIS aligns context data to
        // MEMORY_ALLOCATION_ALIGNMENT), the NBL's and ours until
        // `give_back_source`.
        unsafe { context.write(SendContext { previous_source }) };
        self.set_source(binding);
        Ok(())
    }

    /// Undoes [`Nbl::take_source`] after P completed the send: the
    /// sender's `SourceHandle` back, the context area freed.
    ///
    /// Only for an NBL `take_source` succeeded on (every pass-through NBL
    /// P completes): `ProtocolSendNetBufferListsComplete` tells the
    /// driver's own (pool) NBLs apart before it calls this.
    pub fn give_back_source(&mut self) {
        let context = self.context_data();
        // SAFETY: written by `take_source`, untouched since (the caller's
        // contract above).
        let previous_source = unsafe { context.read().previous_source };
        // SAFETY: <= DISPATCH_LEVEL; frees exactly what `take_source`
        // allocated.
        unsafe { NdisFreeNetBufferListContext(self.as_ptr(), SEND_CONTEXT_SIZE) };
        self.header_mut().SourceHandle = previous_source;
    }

    /// Sets `SourceHandle` to `binding` (a protocol's send carries its
    /// binding handle).
    pub fn set_source(&mut self, binding: BindingHandle) {
        self.header_mut().SourceHandle = binding.raw();
    }

    /// The start of the NBL's used context area
    /// (`NET_BUFFER_LIST_CONTEXT_DATA_START`); only meaningful after a
    /// successful context allocation.
    fn context_data(&self) -> *mut SendContext {
        let context = self.header().Context;
        // SAFETY: the callers allocated a context block first, so
        // `Context` points to NDIS's header; the used data starts
        // `data_start_offset` bytes into it.
        let offset = unsafe { (*context).data_start_offset() };
        context.cast::<u8>().wrapping_add(offset).cast()
    }
}

/// What a sent NBL carries in its context area while P has it (the
/// sample's `IM_NBL_ENTRY`), padded to `MEMORY_ALLOCATION_ALIGNMENT`.
#[repr(C, align(16))]
struct SendContext {
    /// The sender's `SourceHandle`, restored on completion.
    previous_source: NDIS_HANDLE,
}

/// Bytes of context each sent NBL takes.
const SEND_CONTEXT_SIZE: u16 = size_of::<SendContext>() as u16;

/// The frames of an [`Nbl`].
#[derive(Debug)]
pub struct Frames<'a> {
    at: *mut NET_BUFFER,
    nbl: core::marker::PhantomData<&'a Nbl>,
}

impl<'a> Iterator for Frames<'a> {
    type Item = Frame<'a>;

    fn next(&mut self) -> Option<Frame<'a>> {
        let nb = NonNull::new(self.at)?;
        // SAFETY: a NET_BUFFER of a list the borrowed `Nbl` holds, alive
        // while it is borrowed.
        let nb_ref = unsafe { nb.as_ref() };
        self.at = nb_ref.Next;
        Some(Frame(nb_ref))
    }
}

/// One frame (`NET_BUFFER`) of a held NBL.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a>(&'a NET_BUFFER);

impl<'a> Frame<'a> {
    /// Its bytes where they are, if contiguous and mapped
    /// (`NdisGetDataBuffer` without storage, `<= DISPATCH_LEVEL`).
    pub fn contiguous(self) -> Option<&'a [u8]> {
        let length = self.len();
        let nb = ptr::from_ref(self.0).cast_mut();
        // SAFETY: <= DISPATCH_LEVEL; a live NET_BUFFER of `length` bytes; a
        // null Storage makes NDIS return null rather than copy.
        let at = unsafe { NdisGetDataBuffer(nb, length, ptr::null_mut(), 1, 0) };
        let at = NonNull::new(at.cast::<u8>())?;
        // SAFETY: NDIS returned `length` contiguous, mapped bytes of the
        // frame, valid while the list is held (`'a`).
        Some(unsafe { core::slice::from_raw_parts(at.as_ptr(), length as usize) })
    }

    /// Its bytes as one slice: in place when contiguous, else copied into
    /// `storage` (`NdisGetDataBuffer`, `<= DISPATCH_LEVEL`); `None` when
    /// `storage` is too short for a split frame or NDIS could not map it.
    pub fn copied_into<'r>(self, storage: &'r mut [u8]) -> Option<&'r [u8]>
    where
        'a: 'r,
    {
        let length = self.len();
        if storage.len() < length as usize {
            return None;
        }
        let nb = ptr::from_ref(self.0).cast_mut();
        // SAFETY: <= DISPATCH_LEVEL; a live NET_BUFFER of `length` bytes;
        // `storage` holds at least `length` bytes should NDIS copy.
        let at = unsafe { NdisGetDataBuffer(nb, length, storage.as_mut_ptr().cast(), 1, 0) };
        let at = NonNull::new(at.cast::<u8>())?;
        // SAFETY: NDIS returned `length` contiguous bytes at `at`: the frame
        // itself (valid for `'a`) or `storage` (borrowed for `'r`), both
        // outliving `'r`.
        Some(unsafe { core::slice::from_raw_parts(at.as_ptr(), length as usize) })
    }

    /// Its length in bytes.
    pub fn len(self) -> u32 {
        self.0.data_length()
    }

    /// Its first `N` bytes (`NdisGetDataBuffer`, copied when they are not
    /// contiguous; `<= DISPATCH_LEVEL`); `None` when it is shorter or
    /// cannot be mapped now.
    pub fn first_bytes<const N: usize>(self) -> Option<[u8; N]> {
        if (self.len() as usize) < N {
            return None;
        }
        let mut storage = [0u8; N];
        let nb = ptr::from_ref(self.0).cast_mut();
        // SAFETY: <= DISPATCH_LEVEL; a live NET_BUFFER of at least N bytes
        // (checked); `storage` holds N bytes should NDIS copy.
        let at = unsafe { NdisGetDataBuffer(nb, N as ULONG, storage.as_mut_ptr().cast(), 1, 0) };
        let at = NonNull::new(at.cast::<[u8; N]>())?;
        // SAFETY: NdisGetDataBuffer returned N contiguous, readable bytes.
        Some(unsafe { at.read_unaligned() })
    }
}

/// A chain of NBLs the driver holds.
#[derive(Debug)]
pub struct NblChain {
    head: *mut NET_BUFFER_LIST,
    tail: *mut NET_BUFFER_LIST,
    count: u32,
}

// SAFETY: as for `Nbl`: the NBLs are the driver's alone while held.
unsafe impl Send for NblChain {}

impl Default for NblChain {
    fn default() -> Self {
        Self::new()
    }
}

impl NblChain {
    /// An empty chain.
    pub const fn new() -> Self {
        Self {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
            count: 0,
        }
    }

    /// The chain NDIS handed a handler.
    ///
    /// # Safety
    /// Every NBL of the chain is the caller's for the call (lent) or until
    /// it gives it back (given), and nobody else reaches it meanwhile.
    pub(in crate::driver) unsafe fn from_ndis(head: NonNull<NET_BUFFER_LIST>) -> Self {
        let mut count = 0;
        let mut tail = head.as_ptr();
        let mut at = head.as_ptr();
        while let Some(nbl) = NonNull::new(at) {
            count += 1;
            tail = nbl.as_ptr();
            // SAFETY: an NBL of the caller's chain (this function's
            // contract).
            at = unsafe { nbl.as_ref() }.Next;
        }
        Self {
            head: head.as_ptr(),
            tail,
            count,
        }
    }

    /// NBLs in the chain.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Appends `nbl`.
    pub fn push(&mut self, nbl: Nbl) {
        let nbl = nbl.into_raw().as_ptr();
        match NonNull::new(self.tail) {
            // SAFETY: the tail is an NBL this chain holds; linking it is
            // what building a chain means.
            Some(tail) => unsafe { (*tail.as_ptr()).Next = nbl },
            None => self.head = nbl,
        }
        self.tail = nbl;
        self.count += 1;
    }

    /// Takes the first NBL off the chain (its `Next` cleared).
    pub fn pop(&mut self) -> Option<Nbl> {
        let nbl = NonNull::new(self.head)?;
        // SAFETY: an NBL this chain holds: nobody else reads or writes it.
        let rest = unsafe { (*nbl.as_ptr()).Next };
        // SAFETY: the same held NBL; unlinking it is the holder's to do.
        unsafe { (*nbl.as_ptr()).Next = ptr::null_mut() };
        self.head = rest;
        if rest.is_null() {
            self.tail = ptr::null_mut();
        }
        self.count -= 1;
        Some(Nbl(nbl))
    }

    /// Each NBL, in order.
    pub fn for_each(&mut self, mut f: impl FnMut(&mut Nbl)) {
        let mut at = self.head;
        while let Some(nbl) = NonNull::new(at) {
            let mut held = Nbl(nbl);
            f(&mut held);
            // SAFETY: an NBL this chain holds (`f` borrowed it, it is
            // still linked here).
            at = unsafe { nbl.as_ref() }.Next;
        }
    }

    /// The head for NDIS, `None` when empty; the chain is given away.
    fn into_head(self) -> Option<NonNull<NET_BUFFER_LIST>> {
        NonNull::new(self.head)
    }
}

/// Sends `chain` down `binding` (`NdisSendNetBufferLists`,
/// `<= DISPATCH_LEVEL` as `flags` tell); each NBL's `SourceHandle` is the
/// binding's ([`Nbl::take_source`], [`Nbl::set_source`]) and comes back
/// through `ProtocolSendNetBufferListsComplete`. The binding is open while
/// the sends are out (the binding counts them; its close waits).
pub fn send(binding: BindingHandle, chain: NblChain, port: NDIS_PORT_NUMBER, flags: ULONG) {
    let Some(head) = chain.into_head() else {
        return;
    };
    // SAFETY: <= DISPATCH_LEVEL (told by the flags); the open binding
    // (counted sends keep the close waiting); a chain the driver held,
    // given to NDIS once here.
    unsafe { NdisSendNetBufferLists(binding.raw(), head.as_ptr(), port, flags) };
}

/// Completes sends TCP/IP made on V (`NdisMSendNetBufferListsComplete`,
/// `<= DISPATCH_LEVEL` as `flags` tell), each with its own status.
pub fn complete_sends(adapter: AdapterHandle, chain: NblChain, flags: ULONG) {
    let Some(head) = chain.into_head() else {
        return;
    };
    // SAFETY: <= DISPATCH_LEVEL (told by `flags`); V's handle (V's halt
    // waits for its sends); NBLs sent on V that V held, completed once.
    unsafe { NdisMSendNetBufferListsComplete(adapter.raw(), head.as_ptr(), flags) };
}

/// Returns received NBLs to P (`NdisReturnNetBufferLists`,
/// `<= DISPATCH_LEVEL` as `flags` tell).
pub fn return_received(binding: BindingHandle, chain: NblChain, flags: ULONG) {
    let Some(head) = chain.into_head() else {
        return;
    };
    // SAFETY: <= DISPATCH_LEVEL (told by `flags`); the open binding (V's
    // halt and the binding's close wait for received NBLs out); P's NBLs
    // given to the driver, returned once.
    unsafe { NdisReturnNetBufferLists(binding.raw(), head.as_ptr(), flags) };
}

/// Indicates `nbl` up on V (`NdisMIndicateReceiveNetBufferLists`, one
/// NBL, `<= DISPATCH_LEVEL` as `flags` tell). With
/// `NDIS_RECEIVE_FLAGS_RESOURCES` TCP/IP may not keep it: it is back when
/// this returns; otherwise TCP/IP has it until
/// `MiniportReturnNetBufferLists` (`None`).
pub fn indicate_one(
    adapter: AdapterHandle,
    nbl: Nbl,
    port: NDIS_PORT_NUMBER,
    flags: ULONG,
) -> Option<Nbl> {
    // SAFETY: <= DISPATCH_LEVEL (told by the flags); V's handle (its
    // users hold V's rundown); one held NBL, `Next` null.
    unsafe { NdisMIndicateReceiveNetBufferLists(adapter.raw(), nbl.as_ptr(), port, 1, flags) };
    (flags & NDIS_RECEIVE_FLAGS_RESOURCES != 0).then_some(nbl)
}

/// Preallocated send frames on a binding: an NBL pool and `count` lists,
/// each with one NET_BUFFER over an MDL of `capacity` bytes of non-paged
/// memory (`NdisAllocateNetBufferAndNetBufferList`), so that sending a
/// frame allocates nothing. A frame is claimed ([`SendFrames::try_claim`],
/// an acquire compare-exchange on its `busy` flag, legal at any IRQL up to
/// `DISPATCH_LEVEL`), filled in place into an [`Nbl`], and given back
/// ([`SendFrames::give_back`]) when its send completed or could not be
/// made. A frame's NBL records its index in `ProtocolReserved[0]` (the
/// sending protocol's to use while it owns the list), so a give-back finds
/// its frame without a search.
pub struct SendFrames {
    pool: NDIS_HANDLE,
    frames: alloc::vec::Vec<SendFrame>,
    /// The frames' bytes, freed after the MDLs and NBLs over them (field
    /// order: dropped after `frames`, freed in `Drop` before).
    memory: super::memory::PageBuffer,
}

/// One preallocated frame.
struct SendFrame {
    nbl: NonNull<NET_BUFFER_LIST>,
    mdl: NonNull<ndkpi::MDL>,
    data: *mut u8,
    /// Bytes at `data`.
    capacity: usize,
    busy: ClaimFlag,
}

impl core::fmt::Debug for SendFrames {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendFrames")
            .field("frames", &self.frames.len())
            .finish_non_exhaustive()
    }
}

// SAFETY: the pool handle is an opaque token NDIS allows on any processor;
// a frame's NBL, MDL and bytes are touched only by the holder of its
// `busy` flag (or by NDIS while it is sent); the rest is immutable after
// `new`.
unsafe impl Send for SendFrames {}
// SAFETY: shared access claims frames through their atomic `busy` flag
// (acquire) and gives them back with a release store, so one processor at
// a time owns a frame's memory; the vector is never written after `new`.
unsafe impl Sync for SendFrames {}

/// A claimed frame (see [`SendFrames::try_claim`]). No `Drop`: a claim
/// that goes out of scope leaves its frame taken; give it back with
/// [`ClaimedFrame::release`].
#[derive(Debug)]
pub struct ClaimedFrame<'a> {
    frames: &'a SendFrames,
    index: usize,
}

impl SendFrames {
    /// Allocates the NBL pool on `binding` and `count` frames of
    /// `capacity` bytes (`<= DISPATCH_LEVEL`). Whatever was allocated when
    /// something fails is freed again.
    pub fn new(binding: BindingHandle, count: usize, capacity: usize) -> Result<Self, NTSTATUS> {
        let memory = super::memory::PageBuffer::zeroed(count * capacity)
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let mut frames = alloc::vec::Vec::new();
        frames
            .try_reserve_exact(count)
            .map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        // Lists with one NET_BUFFER each and no preallocated data: the data
        // is the frame's MDL (NdisAllocateNetBufferAndNetBufferList).
        let params =
            NET_BUFFER_LIST_POOL_PARAMETERS::new(NDIS_PROTOCOL_ID_DEFAULT, true, 0, POOL_TAG, 0);
        // SAFETY: <= DISPATCH_LEVEL; an open binding's handle; the
        // parameters live for the call and carry a revision-1 header whose
        // size NDIS reads.
        let pool = unsafe { NdisAllocateNetBufferListPool(binding.raw(), &raw const params) };
        if pool.is_null() {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        // From here `Drop` frees the pool and every frame pushed so far.
        let mut this = Self {
            pool,
            frames,
            memory,
        };
        for index in 0..count {
            let frame = this.allocate_frame(index, capacity)?;
            // Capacity is reserved: no reallocation.
            this.frames.push(frame);
        }
        Ok(this)
    }

    /// Frame `index` of `capacity` bytes: an MDL over its bytes and a list
    /// over the MDL.
    fn allocate_frame(&self, index: usize, capacity: usize) -> Result<SendFrame, NTSTATUS> {
        // Inside the buffer of count * capacity bytes.
        let data = self.memory.as_ptr().wrapping_add(index * capacity);
        // SAFETY: `data` is `capacity` bytes of non-paged pool owned by
        // this value; no IRP, no quota.
        let mdl = unsafe { IoAllocateMdl(data.cast(), capacity as u32, 0, 0, ptr::null_mut()) };
        let mdl = NonNull::new(mdl).ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        // SAFETY: the MDL describes non-paged pool (`data`), as the routine
        // requires; it fills the PFNs and `MappedSystemVa`.
        unsafe { MmBuildMdlForNonPagedPool(mdl.as_ptr()) };
        // SAFETY: <= DISPATCH_LEVEL; a pool made with fAllocateNetBuffer and
        // DataSize 0, as this routine requires; the MDL chain (one MDL)
        // holds `capacity` bytes from offset 0.
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
        Ok(SendFrame {
            nbl,
            mdl,
            data,
            capacity,
            busy: ClaimFlag::new(),
        })
    }

    /// Frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Frame `index`, unless it is claimed or in flight (or past the end).
    pub fn try_claim(&self, index: usize) -> Option<ClaimedFrame<'_>> {
        self.frames
            .get(index)?
            .busy
            .try_claim()
            .then_some(ClaimedFrame {
                frames: self,
                index,
            })
    }

    /// Whether `nbl` is one of these lists (by its pool, as NDIS records
    /// it; any IRQL up to `DISPATCH_LEVEL`).
    pub fn owns(&self, nbl: &Nbl) -> bool {
        // SAFETY: <= DISPATCH_LEVEL; `nbl` is a live list the caller holds.
        let pool = unsafe { NdisGetPoolFromNetBufferList(nbl.as_ptr()) };
        pool == self.pool
    }

    /// A list of these frames is back (its send completed, or could not be
    /// made): its frame is free again. `false` (nothing changed) if it is
    /// not one of these frames claimed or in flight.
    pub fn give_back(&self, nbl: Nbl) -> bool {
        let index = nbl.header().ProtocolReserved[0] as usize;
        let nbl = nbl.into_raw();
        let Some(frame) = self.frames.get(index) else {
            return false;
        };
        if frame.nbl != nbl || !frame.busy.is_claimed() {
            return false;
        }
        frame.busy.release();
        true
    }

    /// Frames claimed or in flight now.
    pub fn in_flight(&self) -> usize {
        self.frames.iter().filter(|f| f.busy.is_claimed()).count()
    }
}

impl ClaimedFrame<'_> {
    /// Copies `bytes` into the frame (padded with zeros to `min_len`) and
    /// makes its list ready to send: one NET_BUFFER of that length, `Next`
    /// null, status cleared. The claim back if `bytes` (or `min_len`) does
    /// not fit.
    pub fn fill(self, bytes: &[u8], min_len: usize) -> Result<Nbl, Self> {
        let frame = &self.frames.frames[self.index];
        let length = bytes.len().max(min_len);
        if length > frame.capacity {
            return Err(self);
        }
        // SAFETY: the frame is claimed (its `busy` flag is ours), so its
        // `capacity` bytes are ours alone until it is sent or given back;
        // `bytes` (at most `capacity`) is the caller's, no overlap.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), frame.data, bytes.len()) };
        // SAFETY: as above; `bytes.len()..length` lies inside the frame
        // (`length <= capacity`, checked).
        unsafe {
            ptr::write_bytes(
                frame.data.wrapping_add(bytes.len()),
                0,
                length - bytes.len(),
            );
        };
        // SAFETY: the claimed frame's list is ours (not in flight: it is
        // given back only after its completion, or was never sent).
        let list = unsafe { &mut *frame.nbl.as_ptr() };
        list.Next = ptr::null_mut();
        list.Status = 0;
        let Some(nb) = NonNull::new(list.FirstNetBuffer) else {
            return Err(self);
        };
        // SAFETY: the list's one NET_BUFFER, allocated with it over the
        // frame's MDL, ours with the list.
        let nb = unsafe { &mut *nb.as_ptr() };
        nb.Next = ptr::null_mut();
        nb.set_data_length(length as u32);
        // SAFETY: the list is this claim's (busy flag held) until it is
        // given back through `give_back`, which takes the Nbl.
        Ok(unsafe { Nbl::from_raw(frame.nbl) })
    }

    /// Gives the frame back unsent.
    pub fn release(self) {
        self.frames.frames[self.index].busy.release();
    }
}

impl Drop for SendFrames {
    /// Frees every list, MDL and the pool (`<= DISPATCH_LEVEL`) once no
    /// frame is claimed or in flight (the owner waits for that first: the
    /// binding's send rundown). Should one still be out, nothing is freed
    /// (leaked rather than freed under NDIS).
    fn drop(&mut self) {
        if self.in_flight() != 0 {
            return;
        }
        for frame in &self.frames {
            // SAFETY: allocated from this pool in `allocate_frame`, neither
            // claimed nor in flight (checked above), freed once here.
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

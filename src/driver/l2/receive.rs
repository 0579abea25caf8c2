//! A received frame as one contiguous byte slice, whatever its MDLs.
//!
//! `NdisGetDataBuffer` hands out the frame in place when its bytes are
//! contiguous in mapped memory (the usual case: one receive buffer per
//! frame). Otherwise the frame is copied into one of [`BOUNCE_BUFFERS`]
//! preallocated bounce buffers of [`BOUNCE_BYTES`]; a longer frame cannot
//! be a RoCEv2 frame the RNIC takes, and is left alone (passed up).
//!
//! A bounce buffer is held only at DISPATCH_LEVEL (the caller raises
//! first) for one frame's copy and classification, so a holder is never
//! preempted and a processor finding all of them busy spins only while
//! other processors finish one frame each.

use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, Ordering};

use ndis::{DISPATCH_LEVEL, NET_BUFFER, NET_BUFFER_LIST, NdisGetDataBuffer};
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};

use crate::driver::alloc::PageBuffer;
use crate::driver::irql;

/// Bounce buffers, i.e. processors that can classify a split frame at once.
pub const BOUNCE_BUFFERS: usize = 8;
/// Bytes of one bounce buffer: the longest RoCEv2 frame (an Ethernet
/// header and the longest RoCEv2 datagram). Tagged frames are never the
/// RNIC's (the port passes them up), so no room for a tag is needed.
pub const BOUNCE_BYTES: usize = softrnic::l2::MAX_FRAME_LEN;

/// The bounce buffers of a port.
pub struct Bounce {
    memory: PageBuffer,
    busy: [AtomicBool; BOUNCE_BUFFERS],
}

impl core::fmt::Debug for Bounce {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Bounce").finish_non_exhaustive()
    }
}

// SAFETY: buffer `k` is used only by the holder of `busy[k]` (acquire
// compare-exchange, release store); the rest is immutable after `new`.
unsafe impl Send for Bounce {}
// SAFETY: shared access reaches buffer `k` only through `busy[k]`
// (acquire compare-exchange to take it, release store to give it back),
// so each buffer has one user at a time; the rest is immutable.
unsafe impl Sync for Bounce {}

impl Bounce {
    /// Allocates the buffers (`<= DISPATCH_LEVEL`).
    pub fn new() -> Result<Self, NTSTATUS> {
        Ok(Self {
            memory: PageBuffer::zeroed(BOUNCE_BUFFERS * BOUNCE_BYTES)
                .ok_or(STATUS_INSUFFICIENT_RESOURCES)?,
            busy: [const { AtomicBool::new(false) }; BOUNCE_BUFFERS],
        })
    }

    /// Runs `f` on the frame of `nbl` (its first NET_BUFFER) as one slice;
    /// `None` if the list holds no frame, more than one, or one that is
    /// split and longer than [`BOUNCE_BYTES`], or NDIS could not map it.
    /// At DISPATCH_LEVEL only (the caller raised).
    pub fn with_frame<R>(&self, nbl: &NET_BUFFER_LIST, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        debug_assert!(irql::current() >= DISPATCH_LEVEL);
        let nb = NonNull::new(nbl.FirstNetBuffer)?;
        // SAFETY: a received list's NET_BUFFER, valid while the caller
        // holds the list (the indication's duration).
        let nb_ref = unsafe { nb.as_ref() };
        if !nb_ref.Next.is_null() {
            // A receive indication carries one frame per list.
            return None;
        }
        let length = nb_ref.data_length();
        if length == 0 {
            return None;
        }
        if let Some(bytes) = in_place(nbl, nb, length) {
            return Some(f(bytes));
        }
        if length as usize > BOUNCE_BYTES {
            return None;
        }
        let k = self.claim();
        let storage = self.memory.as_ptr().wrapping_add(k * BOUNCE_BYTES);
        // SAFETY: <= DISPATCH_LEVEL; the live NET_BUFFER holds `length`
        // bytes; `storage` is bounce buffer `k` (BOUNCE_BYTES >= length),
        // ours until released below.
        let at = unsafe { NdisGetDataBuffer(nb.as_ptr(), length, storage.cast(), 1, 0) };
        let result = NonNull::new(at.cast::<u8>()).map(|at| {
            // SAFETY: NdisGetDataBuffer returned `length` contiguous bytes
            // at `at` (the bounce buffer, or the frame itself), valid while
            // the list is held and the buffer claimed, both past `f`.
            let bytes = unsafe { core::slice::from_raw_parts(at.as_ptr(), length as usize) };
            f(bytes)
        });
        if let Some(flag) = self.busy.get(k) {
            flag.store(false, Ordering::Release);
        }
        result
    }

    /// Takes a free bounce buffer, spinning while all are busy (holders
    /// run at DISPATCH_LEVEL for one frame).
    fn claim(&self) -> usize {
        loop {
            for (k, flag) in self.busy.iter().enumerate() {
                if flag
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return k;
                }
            }
            core::hint::spin_loop();
        }
    }
}

/// The `length` bytes of `nb`, the first NET_BUFFER of `list`, where they
/// are, if contiguous and mapped; borrowed for as long as the list.
fn in_place(list: &NET_BUFFER_LIST, nb: NonNull<NET_BUFFER>, length: u32) -> Option<&[u8]> {
    debug_assert!(list.FirstNetBuffer == nb.as_ptr());
    // SAFETY: <= DISPATCH_LEVEL; a live NET_BUFFER of at least `length`
    // bytes; a null Storage makes NDIS return null rather than copy.
    let at = unsafe { NdisGetDataBuffer(nb.as_ptr(), length, ptr::null_mut(), 1, 0) };
    let at = NonNull::new(at.cast::<u8>())?;
    // SAFETY: NDIS returned a pointer to `length` contiguous, mapped bytes
    // of the frame, valid while the caller holds the list.
    Some(unsafe { core::slice::from_raw_parts(at.as_ptr(), length as usize) })
}

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

use ndis::DISPATCH_LEVEL;
use ndkpi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES};

use crate::driver::irql;
use crate::driver::kit::memory::SlotBuffers;
use crate::driver::kit::nbl::Nbl;

/// Bounce buffers, i.e. processors that can classify a split frame at once.
pub const BOUNCE_BUFFERS: usize = 8;
/// Bytes of one bounce buffer: the longest RoCEv2 frame (an Ethernet
/// header and the longest RoCEv2 datagram). Tagged frames are never the
/// RNIC's (the port passes them up), so no room for a tag is needed.
pub const BOUNCE_BYTES: usize = softrnic::l2::MAX_FRAME_LEN;

/// The bounce buffers of a port.
#[derive(Debug)]
pub struct Bounce {
    buffers: SlotBuffers<BOUNCE_BUFFERS>,
}

impl Bounce {
    /// Allocates the buffers (`<= DISPATCH_LEVEL`).
    pub fn new() -> Result<Self, NTSTATUS> {
        Ok(Self {
            buffers: SlotBuffers::zeroed(BOUNCE_BYTES).ok_or(STATUS_INSUFFICIENT_RESOURCES)?,
        })
    }

    /// Runs `f` on the frame of `nbl` (its first NET_BUFFER) as one slice;
    /// `None` if the list holds no frame, more than one, or one that is
    /// split and longer than [`BOUNCE_BYTES`], or NDIS could not map it.
    /// At DISPATCH_LEVEL only (the caller raised).
    pub fn with_frame<R>(&self, nbl: &Nbl, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        debug_assert!(irql::current() >= DISPATCH_LEVEL);
        // A receive indication carries one frame per list.
        let frame = nbl.single_frame()?;
        let length = frame.len();
        if length == 0 {
            return None;
        }
        if let Some(bytes) = frame.contiguous() {
            return Some(f(bytes));
        }
        if length as usize > BOUNCE_BYTES {
            return None;
        }
        let mut buffer = self.claim();
        // The bounce buffer (BOUNCE_BYTES >= length), ours until the guard
        // drops after `f`.
        frame.copied_into(buffer.bytes()).map(f)
    }

    /// Takes a free bounce buffer, spinning while all are busy (holders
    /// run at DISPATCH_LEVEL for one frame).
    fn claim(&self) -> crate::driver::kit::memory::SlotGuard<'_, BOUNCE_BUFFERS> {
        loop {
            for k in 0..BOUNCE_BUFFERS {
                if let Some(guard) = self.buffers.try_claim(k) {
                    return guard;
                }
            }
            core::hint::spin_loop();
        }
    }
}

//! `NET_BUFFER_LIST`s as NDIS allocates them, with the real x64 layouts of
//! crates/ndis, and the ledger of who holds each one.
//!
//! Every list the bottle knows was allocated here: from a driver's pool
//! (`NdisAllocateNetBufferList*`, [`super::nblpool`]) or built by the
//! bottle ([`build`]: the NIC's receive buffers, the frames the stack
//! above V sends). Each has a stack of [`Holder`]s: who allocated it at
//! the bottom, then one entry per hand-over that must come back (sent down
//! a binding, indicated up a binding, sent to V, indicated by V). A
//! hand-over pushes; its completion pops and must find itself on top: a
//! list completed or returned twice, to the wrong party, or never, shows.
//!
//! A list's memory: the `NET_BUFFER_LIST`, its preallocated `NET_BUFFER`,
//! its context blocks (`NET_BUFFER_LIST_CONTEXT` headers with their data)
//! and, for a list the bottle built or a pool with `DataSize`, a data
//! buffer described by an MDL as `MmBuildMdlForNonPagedPool` builds it.
//! Freed lists stay mapped for a while (a quarantine), so a late access
//! reads stale memory rather than another list.
//!
//! Reading a list's bytes ([`frame_of`]) walks its `NET_BUFFER`s and MDL
//! chains through the MDLs' page frame numbers, as a NIC's DMA would: an
//! MDL whose pages are neither locked nor from non-paged pool is refused.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use ndis::{MEMORY_ALLOCATION_ALIGNMENT, NET_BUFFER, NET_BUFFER_LIST, NET_BUFFER_LIST_CONTEXT};
use ndkpi::{MDL, MDL_PAGES_LOCKED, MDL_SOURCE_IS_NONPAGED_POOL, mdl_pfn_array};

use crate::kernel::mm::{self, OwnedMdl};

/// Who holds a list, or one hand-over of it that must come back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Holder {
    /// Allocated by the driver from one of its pools.
    Driver,
    /// Built by the bottle ([`build`]).
    Bottle,
    /// Sent down binding `.0` (`NdisSendNetBufferLists`), not completed.
    SentOnBinding(usize),
    /// Indicated up binding `.0` by the NIC, not returned.
    IndicatedOnBinding(usize),
    /// Handed to miniport adapter `.0`'s `MiniportSendNetBufferLists`,
    /// not completed.
    SentToMiniport(usize),
    /// Indicated by miniport adapter `.0`, not returned.
    IndicatedByMiniport(usize),
}

/// Why a ledger operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerError {
    /// Not a list NDIS (the bottle) allocated, or one already freed.
    Unknown(usize),
    /// The top holder is not the one the operation expects.
    WrongHolder {
        /// The list.
        nbl: usize,
        /// What was expected on top.
        expected: Holder,
        /// The whole stack, bottom first.
        found: Vec<Holder>,
    },
}

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(nbl) => write!(
                f,
                "{nbl:#x} is not a live NET_BUFFER_LIST allocated by NDIS (never allocated, or freed)"
            ),
            Self::WrongHolder {
                nbl,
                expected,
                found,
            } => write!(
                f,
                "NET_BUFFER_LIST {nbl:#x}: expected {expected:?} to hold it, its holders are {found:?}"
            ),
        }
    }
}

/// A context block: a `NET_BUFFER_LIST_CONTEXT` header and its data, in
/// 16-byte units so the data is `MEMORY_ALLOCATION_ALIGNMENT`-aligned.
struct ContextBlock(*mut [u128]);

impl ContextBlock {
    /// A block with `size` bytes of data, `offset` of them unused (the
    /// backfill in front of the used part).
    fn new(size: u16, offset: u16, next: *mut NET_BUFFER_LIST_CONTEXT) -> Self {
        let header = size_of::<NET_BUFFER_LIST_CONTEXT>();
        let units = (header + usize::from(size)).div_ceil(16);
        let block: Box<[u128]> = vec![0u128; units].into_boxed_slice();
        let raw = Box::into_raw(block);
        let ctx = raw.cast::<NET_BUFFER_LIST_CONTEXT>();
        // SAFETY: `raw` is a fresh, 16-aligned allocation of at least the
        // header's size (`units` covers it), owned by this block.
        unsafe {
            ctx.write(NET_BUFFER_LIST_CONTEXT {
                Next: next,
                Size: size,
                Offset: offset,
                ContextDataAlign: ndis::MEMORY_ALLOCATION_ALIGNED([]),
                ContextData: [],
            });
        };
        Self(raw)
    }

    fn header(&self) -> *mut NET_BUFFER_LIST_CONTEXT {
        self.0.cast()
    }
}

impl Drop for ContextBlock {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from Box::into_raw in `new` and is dropped
        // once, here.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

/// A data buffer and the MDL describing it.
struct DataBuffer {
    mdl: OwnedMdl,
    bytes: *mut [u8],
}

impl DataBuffer {
    /// A buffer of `capacity` bytes whose MDL describes `len` of them.
    fn new(len: usize, capacity: usize) -> Self {
        let capacity = capacity.max(len).max(1);
        let bytes = Box::into_raw(vec![0u8; capacity].into_boxed_slice());
        let mdl = OwnedMdl::describe(bytes.cast::<u8>(), capacity);
        let data = Self { mdl, bytes };
        data.describe(len);
        data
    }

    /// Bytes it holds.
    fn capacity(&self) -> usize {
        self.bytes.len()
    }

    /// Makes its MDL describe the first `len` bytes (at most the
    /// capacity: the page array covers all of it).
    fn describe(&self, len: usize) {
        let mdl = self.mdl.as_ptr();
        // SAFETY: the buffer's own MDL (harness memory nobody else holds
        // while the list is being built).
        unsafe { (*mdl).ByteCount = len.min(self.capacity()) as u32 };
    }

    /// Copies `frame` to the start of the buffer (at most its capacity).
    fn fill(&mut self, frame: &[u8]) {
        // SAFETY: the buffer is owned by this DataBuffer; nobody else
        // holds it while the list is being built.
        let bytes = unsafe { &mut *self.bytes };
        let n = frame.len().min(bytes.len());
        bytes[..n].copy_from_slice(&frame[..n]);
    }
}

impl Drop for DataBuffer {
    fn drop(&mut self) {
        // SAFETY: `self.bytes` came from Box::into_raw in `new` and is
        // dropped once, here (the MDL describing it is dropped first, as
        // fields drop in order).
        drop(unsafe { Box::from_raw(self.bytes) });
    }
}

/// The memory of one list.
struct Parts {
    nbl: *mut NET_BUFFER_LIST,
    nb: Option<*mut NET_BUFFER>,
    contexts: Vec<ContextBlock>,
    data: Option<DataBuffer>,
}

impl Drop for Parts {
    fn drop(&mut self) {
        // SAFETY: `nbl` came from Box::into_raw in `allocate` and is
        // dropped once, here.
        drop(unsafe { Box::from_raw(self.nbl) });
        if let Some(nb) = self.nb {
            // SAFETY: `nb` came from Box::into_raw in `allocate` and is
            // dropped once, here.
            drop(unsafe { Box::from_raw(nb) });
        }
    }
}

/// What a list looked like when it was handed over (the NET_BUFFER chain,
/// each buffer's MDL chain, offset and length, and its context), to check
/// it comes back as it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// `Context`.
    pub context: usize,
    /// Per `NET_BUFFER`: (address, `MdlChain`, `CurrentMdl`,
    /// `DataOffset`, data length).
    pub buffers: Vec<(usize, usize, usize, u32, u32)>,
}

struct Record {
    parts: Parts,
    pool: usize,
    holders: Vec<Holder>,
    /// The shape when the first hand-over was pushed, per depth.
    shapes: Vec<Shape>,
    /// Sizes given to `NdisAllocateNetBufferListContext`, not yet freed.
    context_pushes: Vec<u16>,
}

// SAFETY: the raw pointers in a record point to memory the record owns
// (allocated here, freed on drop); moving the record between threads
// moves that ownership. The driver may access the same memory from any
// thread, as it may in the kernel.
unsafe impl Send for Record {}

#[derive(Default)]
struct Ledger {
    lists: HashMap<usize, Record>,
    /// Freed lists kept mapped (oldest first).
    quarantine: VecDeque<Parts>,
    /// Lists the bottle built, out of quarantine, ready to be built again
    /// (what a NIC's receive buffers are).
    spares: Vec<Parts>,
    /// How many live lists each holder appears in.
    counts: HashMap<Holder, usize>,
}

impl Ledger {
    fn count(&mut self, h: Holder, up: bool) {
        let n = self.counts.entry(h).or_insert(0);
        if up {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
        }
    }
}

// SAFETY: as for Record: quarantined parts are owned memory nobody
// dereferences from Rust.
unsafe impl Send for Ledger {}

/// How many freed lists stay mapped.
const QUARANTINE: usize = 512;
/// How many bottle lists wait to be built again at most.
const SPARES: usize = 4096;
/// The smallest data buffer of a bottle list (an Ethernet frame with a
/// tag fits), so that spares fit most frames.
const MIN_BOTTLE_DATA: usize = 2048;

static LEDGER: Mutex<Option<Ledger>> = Mutex::new(None);

fn ledger() -> MutexGuard<'static, Option<Ledger>> {
    LEDGER.lock().unwrap_or_else(PoisonError::into_inner)
}

fn with<R>(f: impl FnOnce(&mut Ledger) -> R) -> R {
    f(ledger().get_or_insert_with(Ledger::default))
}

/// What a new list is given.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allocation {
    /// The pool handle it is stamped with.
    pub pool: usize,
    /// Its first holder.
    pub holder: Holder,
    /// Used context bytes to preallocate (0: no context block unless
    /// `backfill`).
    pub context_size: u16,
    /// Unused context bytes in front of the used part.
    pub backfill: u16,
    /// Whether it comes with a `NET_BUFFER`.
    pub with_buffer: bool,
    /// With a buffer: a data buffer of this many bytes (0: none; the
    /// buffer then describes `mdl_chain`).
    pub data_size: usize,
    /// With a buffer and no data: the MDL chain, offset and length it
    /// describes.
    pub mdl_chain: *mut MDL,
    /// Offset into `mdl_chain`.
    pub data_offset: u32,
    /// Bytes described.
    pub data_length: u32,
}

/// Allocates a list as NDIS does; its address.
pub(crate) fn allocate(a: &Allocation) -> *mut NET_BUFFER_LIST {
    allocate_filled(a, None)
}

/// [`allocate`], with `frame` copied into its data buffer.
fn allocate_filled(a: &Allocation, frame: Option<&[u8]>) -> *mut NET_BUFFER_LIST {
    with(|l| {
        let parts = match l.spares.iter().rposition(|p| spare_fits(p, a)) {
            Some(i) => reuse(l.spares.swap_remove(i), a),
            None => fresh_parts(a),
        };
        if let (Some(data), Some(frame)) = (parts.data.as_ref(), frame) {
            let data = std::ptr::from_ref(data).cast_mut();
            // SAFETY: the parts are owned here and not yet published.
            unsafe { (*data).fill(frame) };
        }
        let nbl = parts.nbl;
        l.count(a.holder, true);
        l.lists.insert(
            nbl as usize,
            Record {
                parts,
                pool: a.pool,
                holders: vec![a.holder],
                shapes: Vec::new(),
                context_pushes: Vec::new(),
            },
        );
        nbl
    })
}

/// Whether spare `p` can be built again as `a` asks.
fn spare_fits(p: &Parts, a: &Allocation) -> bool {
    a.pool == bottle_pool()
        && a.with_buffer
        && a.data_size != 0
        && p.data.as_ref().is_some_and(|d| d.capacity() >= a.data_size)
        && p.contexts.first().is_some_and(|c| {
            // SAFETY: the spare's own context block.
            let size = unsafe { (*c.header()).Size };
            size == a.context_size.saturating_add(a.backfill)
        })
}

/// A spare list made new again, as `a` asks (see [`spare_fits`]).
fn reuse(mut parts: Parts, a: &Allocation) -> Parts {
    parts.contexts.truncate(1);
    let context = parts
        .contexts
        .first()
        .map_or(std::ptr::null_mut(), ContextBlock::header);
    if !context.is_null() {
        // SAFETY: the spare's own context block, not published.
        unsafe {
            context.write(NET_BUFFER_LIST_CONTEXT {
                Next: std::ptr::null_mut(),
                Size: a.context_size.saturating_add(a.backfill),
                Offset: a.backfill,
                ContextDataAlign: ndis::MEMORY_ALLOCATION_ALIGNED([]),
                ContextData: [],
            });
        };
    }
    let chain = parts.data.as_ref().map_or(std::ptr::null_mut(), |d| {
        d.describe(a.data_size);
        d.mdl.as_ptr()
    });
    if let Some(nb) = parts.nb {
        let mut buffer = NET_BUFFER::new(chain, 0, a.data_size as u32);
        buffer.NdisPoolHandle = a.pool as *mut _;
        // SAFETY: the spare's own NET_BUFFER, not published.
        unsafe { nb.write(buffer) };
    }
    let mut list = NET_BUFFER_LIST::new(parts.nb.unwrap_or(std::ptr::null_mut()));
    list.Context = context;
    list.NdisPoolHandle = a.pool as *mut _;
    // SAFETY: the spare's own NET_BUFFER_LIST, not published.
    unsafe { parts.nbl.write(list) };
    parts
}

/// New memory for a list, as `a` asks.
fn fresh_parts(a: &Allocation) -> Parts {
    let mut contexts = Vec::new();
    if a.context_size != 0 || a.backfill != 0 {
        let size = a.context_size.saturating_add(a.backfill);
        contexts.push(ContextBlock::new(size, a.backfill, std::ptr::null_mut()));
    }
    let mut data = None;
    let mut nb = None;
    if a.with_buffer {
        let (chain, offset, length) = if a.data_size != 0 {
            let capacity = if a.pool == bottle_pool() {
                a.data_size.max(MIN_BOTTLE_DATA)
            } else {
                a.data_size
            };
            let buffer = DataBuffer::new(a.data_size, capacity);
            let chain = buffer.mdl.as_ptr();
            data = Some(buffer);
            (chain, 0, a.data_size as u32)
        } else {
            (a.mdl_chain, a.data_offset, a.data_length)
        };
        let mut buffer = NET_BUFFER::new(chain, offset, length);
        if let Some((mdl, in_mdl)) = current_mdl(chain, offset) {
            buffer.CurrentMdl = mdl;
            buffer.CurrentMdlOffset = in_mdl;
        }
        buffer.NdisPoolHandle = a.pool as *mut _;
        nb = Some(Box::into_raw(Box::new(buffer)));
    }
    let mut list = NET_BUFFER_LIST::new(nb.unwrap_or(std::ptr::null_mut()));
    list.Context = contexts
        .first()
        .map_or(std::ptr::null_mut(), ContextBlock::header);
    list.NdisPoolHandle = a.pool as *mut _;
    Parts {
        nbl: Box::into_raw(Box::new(list)),
        nb,
        contexts,
        data,
    }
}

/// The MDL of `chain` holding byte `offset`, and the offset in it (walks
/// `ByteCount`s); `None` past the chain's end.
fn current_mdl(chain: *mut MDL, offset: u32) -> Option<(*mut MDL, u32)> {
    let mut mdl = chain;
    let mut left = offset;
    while !mdl.is_null() {
        // SAFETY: a non-null MDL of a chain the caller vouches for (the
        // driver's, or the bottle's own).
        let count = unsafe { (*mdl).ByteCount };
        if left < count {
            return Some((mdl, left));
        }
        left -= count;
        // SAFETY: as above: a valid MDL; `Next` links the chain.
        mdl = unsafe { (*mdl).Next };
    }
    None
}

/// Frees a list: its memory goes to the quarantine. `holder` must be its
/// only holder.
pub(crate) fn release(nbl: usize, holder: Holder) -> Result<usize, LedgerError> {
    with(|l| {
        let record = l.lists.get(&nbl).ok_or(LedgerError::Unknown(nbl))?;
        if record.holders != [holder] {
            return Err(LedgerError::WrongHolder {
                nbl,
                expected: holder,
                found: record.holders.clone(),
            });
        }
        let record = l.lists.remove(&nbl).ok_or(LedgerError::Unknown(nbl))?;
        l.count(holder, false);
        let bottle = record.pool == bottle_pool();
        l.quarantine.push_back(record.parts);
        while l.quarantine.len() > QUARANTINE {
            if let Some(old) = l.quarantine.pop_front()
                && bottle
                && old.data.is_some()
                && l.spares.len() < SPARES
            {
                l.spares.push(old);
            }
        }
        Ok(record.pool)
    })
}

/// Hands `nbl` over to `to`: pushes it on its holders, remembering its
/// shape.
pub fn push(nbl: usize, to: Holder) -> Result<(), LedgerError> {
    let shape = shape_of(nbl);
    with(|l| {
        let record = l.lists.get_mut(&nbl).ok_or(LedgerError::Unknown(nbl))?;
        record.holders.push(to);
        record.shapes.push(shape);
        l.count(to, true);
        Ok(())
    })
}

/// [`push`], refused (`WrongHolder`, nothing pushed) when `to` already
/// holds `nbl` (handed over twice without coming back).
pub fn push_once(nbl: usize, to: Holder) -> Result<(), LedgerError> {
    let shape = shape_of(nbl);
    with(|l| {
        let record = l.lists.get_mut(&nbl).ok_or(LedgerError::Unknown(nbl))?;
        if record.holders.contains(&to) {
            return Err(LedgerError::WrongHolder {
                nbl,
                expected: to,
                found: record.holders.clone(),
            });
        }
        record.holders.push(to);
        record.shapes.push(shape);
        l.count(to, true);
        Ok(())
    })
}

/// How many live lists `h` holds (or holds a hand-over of).
pub fn count_held(h: Holder) -> usize {
    with(|l| l.counts.get(&h).copied().unwrap_or(0))
}

/// Takes `nbl` back from `from`, which must be on top of its holders; the
/// shape it had when it was handed over.
pub fn pop(nbl: usize, from: Holder) -> Result<Shape, LedgerError> {
    with(|l| {
        let record = l.lists.get_mut(&nbl).ok_or(LedgerError::Unknown(nbl))?;
        if record.holders.len() < 2 || record.holders.last() != Some(&from) {
            return Err(LedgerError::WrongHolder {
                nbl,
                expected: from,
                found: record.holders.clone(),
            });
        }
        record.holders.pop();
        let shape = record.shapes.pop().unwrap_or_else(|| Shape {
            context: 0,
            buffers: Vec::new(),
        });
        l.count(from, false);
        Ok(shape)
    })
}

/// The holders of `nbl`, bottom first (`None`: not a live list).
pub fn holders(nbl: usize) -> Option<Vec<Holder>> {
    with(|l| l.lists.get(&nbl).map(|r| r.holders.clone()))
}

/// The pool handle `nbl` was allocated from (`None`: not a live list).
pub fn pool_of(nbl: usize) -> Option<usize> {
    with(|l| l.lists.get(&nbl).map(|r| r.pool))
}

/// Live lists of `pool`.
pub fn live_in_pool(pool: usize) -> usize {
    with(|l| l.lists.values().filter(|r| r.pool == pool).count())
}

/// Live lists whose holders include `h`.
pub fn held_by(h: Holder) -> Vec<usize> {
    with(|l| {
        l.lists
            .iter()
            .filter(|(_, r)| r.holders.contains(&h))
            .map(|(a, _)| *a)
            .collect()
    })
}

/// Forgets every list (a new machine). Their memory is leaked on purpose:
/// a previous machine's driver may still touch it.
pub(crate) fn reset() {
    if let Some(old) = ledger().replace(Ledger::default()) {
        std::mem::forget(old);
    }
}

/// The shape of `nbl` now (reads the live list; an unknown address gives
/// an empty shape).
pub fn shape_of(nbl: usize) -> Shape {
    if holders(nbl).is_none() {
        return Shape {
            context: 0,
            buffers: Vec::new(),
        };
    }
    let list = nbl as *const NET_BUFFER_LIST;
    // SAFETY: a live list of the ledger: its memory is allocated until it
    // is released.
    let list = unsafe { list.read() };
    let (context, mut nb) = (list.Context as usize, list.FirstNetBuffer);
    let mut buffers = Vec::new();
    while !nb.is_null() && buffers.len() < MAX_BUFFERS {
        // SAFETY: a NET_BUFFER of a live list (the driver keeps the chain
        // valid while it owns the list; the bottle's are its own).
        let b = unsafe { *nb };
        buffers.push((
            nb as usize,
            b.MdlChain as usize,
            b.CurrentMdl as usize,
            b.DataOffset,
            b.data_length(),
        ));
        nb = b.Next;
    }
    Shape { context, buffers }
}

/// How many `NET_BUFFER`s of one list the bottle follows (a loop in the
/// chain would otherwise never end).
const MAX_BUFFERS: usize = 4096;

/// Why a list's bytes cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The list has no `NET_BUFFER`.
    NoBuffer,
    /// An MDL's pages are neither locked nor from non-paged pool (its
    /// page numbers mean nothing).
    UnlockedMdl(usize),
    /// The chain ends before the data does.
    ShortChain {
        /// Data bytes the buffer claims.
        wanted: u32,
        /// Bytes the chain holds from the data start.
        found: u32,
    },
    /// The `NET_BUFFER` chain does not end.
    TooManyBuffers,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoBuffer => write!(f, "the NET_BUFFER_LIST has no NET_BUFFER"),
            Self::UnlockedMdl(m) => write!(
                f,
                "MDL {m:#x} describes pages that are neither locked nor non-paged pool"
            ),
            Self::ShortChain { wanted, found } => write!(
                f,
                "the NET_BUFFER claims {wanted} data bytes, its MDL chain holds {found} from the data start"
            ),
            Self::TooManyBuffers => write!(f, "the NET_BUFFER chain does not end"),
        }
    }
}

/// Copies `len` bytes at `offset` of one MDL through its page frame
/// numbers into `out`.
///
/// # Safety
/// `mdl` is a valid MDL; `offset + len <= ByteCount`.
unsafe fn read_mdl(
    mdl: *mut MDL,
    offset: u32,
    len: u32,
    out: &mut Vec<u8>,
) -> Result<(), ReadError> {
    // SAFETY: a valid MDL (caller).
    let m = unsafe { &*mdl };
    if m.MdlFlags & (MDL_PAGES_LOCKED | MDL_SOURCE_IS_NONPAGED_POOL) == 0 {
        return Err(ReadError::UnlockedMdl(mdl as usize));
    }
    let pfns = mdl_pfn_array(mdl);
    let mut at = m.ByteOffset as usize + offset as usize;
    let end = at + len as usize;
    while at < end {
        let page = at / PAGE;
        let in_page = at % PAGE;
        let n = (PAGE - in_page).min(end - at);
        // SAFETY: the MDL's page array has an entry for every page of its
        // range (it is locked or non-paged: the array was filled).
        let pfn = unsafe { pfns.wrapping_add(page).read() };
        let va = mm::va_of((pfn as u64) << 12) + in_page;
        // SAFETY: the page `pfn` names is mapped memory of this process
        // (physical = virtual + PHYS_OFFSET), and `n` bytes stay in it.
        let bytes = unsafe { std::slice::from_raw_parts(va as *const u8, n) };
        out.extend_from_slice(bytes);
        at += n;
    }
    Ok(())
}

const PAGE: usize = 4096;

/// The data of one `NET_BUFFER`, read through its MDLs.
///
/// # Safety
/// `nb` is a valid `NET_BUFFER` whose MDL chain is valid.
pub unsafe fn buffer_bytes(nb: *const NET_BUFFER) -> Result<Vec<u8>, ReadError> {
    // SAFETY: a valid NET_BUFFER (caller).
    let b = unsafe { *nb };
    let wanted = b.data_length();
    let mut out = Vec::with_capacity(wanted as usize);
    let mut mdl = b.CurrentMdl;
    let mut offset = b.CurrentMdlOffset;
    while (out.len() as u32) < wanted && !mdl.is_null() {
        // SAFETY: an MDL of the buffer's chain (caller).
        let count = unsafe { (*mdl).ByteCount };
        if offset < count {
            let n = (count - offset).min(wanted - out.len() as u32);
            // SAFETY: a valid MDL; `offset + n <= ByteCount`.
            unsafe { read_mdl(mdl, offset, n, &mut out) }?;
        }
        offset = 0;
        // SAFETY: as above; `Next` links the chain.
        mdl = unsafe { (*mdl).Next };
    }
    if (out.len() as u32) < wanted {
        return Err(ReadError::ShortChain {
            wanted,
            found: out.len() as u32,
        });
    }
    Ok(out)
}

/// The bytes of every `NET_BUFFER` of `nbl`, in order.
///
/// # Safety
/// `nbl` is a valid list whose buffers and MDLs are valid (one the
/// caller holds).
pub unsafe fn frames_of(nbl: *const NET_BUFFER_LIST) -> Result<Vec<Vec<u8>>, ReadError> {
    // SAFETY: a valid list (caller).
    let mut nb = unsafe { (*nbl).FirstNetBuffer };
    if nb.is_null() {
        return Err(ReadError::NoBuffer);
    }
    let mut frames = Vec::new();
    while !nb.is_null() {
        if frames.len() >= MAX_BUFFERS {
            return Err(ReadError::TooManyBuffers);
        }
        // SAFETY: a buffer of the list (caller).
        frames.push(unsafe { buffer_bytes(nb) }?);
        // SAFETY: as above.
        nb = unsafe { (*nb).Next };
    }
    Ok(frames)
}

/// The frame of the first `NET_BUFFER` of `nbl`.
///
/// # Safety
/// As for [`frames_of`].
pub unsafe fn frame_of(nbl: *const NET_BUFFER_LIST) -> Result<Vec<u8>, ReadError> {
    // SAFETY: the caller's contract is frames_of's.
    let mut frames = unsafe { frames_of(nbl) }?;
    Ok(frames.swap_remove(0))
}

/// The pool handle of the bottle's own lists: what
/// `NdisGetPoolFromNetBufferList` answers for them.
pub fn bottle_pool() -> usize {
    // A stable, unique address nobody allocates from: this static.
    std::ptr::from_ref(&BOTTLE_POOL_TAG) as usize
}

static BOTTLE_POOL_TAG: [u64; 2] = [0; 2];

/// Context backfill of a list the bottle builds (room for an
/// intermediate driver's `NdisAllocateNetBufferListContext`).
const BOTTLE_CONTEXT_BACKFILL: u16 = 64;

/// A list with one `NET_BUFFER` holding `frame` (one MDL over a
/// bottle buffer), held by the bottle ([`Holder::Bottle`]).
pub fn build(frame: &[u8]) -> *mut NET_BUFFER_LIST {
    allocate_filled(
        &Allocation {
            pool: bottle_pool(),
            holder: Holder::Bottle,
            context_size: 0,
            backfill: BOTTLE_CONTEXT_BACKFILL,
            with_buffer: true,
            data_size: frame.len(),
            mdl_chain: std::ptr::null_mut(),
            data_offset: 0,
            data_length: 0,
        },
        Some(frame),
    )
}

/// A chain of bottle lists, one per frame, linked through `Next` (null
/// for no frames).
pub fn build_chain(frames: &[&[u8]]) -> *mut NET_BUFFER_LIST {
    let mut head: *mut NET_BUFFER_LIST = std::ptr::null_mut();
    for frame in frames.iter().rev() {
        let nbl = build(frame);
        // SAFETY: a list just built, held by the bottle.
        unsafe { (*nbl).Next = head };
        head = nbl;
    }
    head
}

/// Frees a list [`build`] made, which the bottle holds again (every
/// hand-over came back).
pub fn free(nbl: *mut NET_BUFFER_LIST) -> Result<(), LedgerError> {
    release(nbl as usize, Holder::Bottle).map(|_| ())
}

/// Live lists the bottle built.
pub fn bottle_lists() -> usize {
    live_in_pool(bottle_pool())
}

/// The `Next` of `nbl`.
///
/// # Safety
/// `nbl` is a valid list.
pub unsafe fn next(nbl: *const NET_BUFFER_LIST) -> *mut NET_BUFFER_LIST {
    // SAFETY: a valid list (caller).
    unsafe { (*nbl).Next }
}

/// The lists of a chain, in order (at most `limit`).
///
/// # Safety
/// `head` is null or a valid chain.
pub unsafe fn chain(head: *mut NET_BUFFER_LIST, limit: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = head;
    while !at.is_null() && out.len() < limit {
        out.push(at as usize);
        // SAFETY: a list of the chain (caller).
        at = unsafe { (*at).Next };
    }
    out
}

/// Records a context allocation of `size` bytes on `nbl`, adding a
/// block of `size + backfill` bytes in front of its context chain when
/// `new_block` (what `NdisAllocateNetBufferListContext` does when the
/// backfill is short). False for an unknown list.
pub(crate) fn push_context(nbl: usize, size: u16, backfill: u16, new_block: bool) -> bool {
    with(|l| {
        let Some(record) = l.lists.get_mut(&nbl) else {
            return false;
        };
        if new_block || record.parts.contexts.is_empty() {
            let list = record.parts.nbl;
            // SAFETY: a live list of the ledger (its memory is ours).
            let outer = unsafe { (*list).Context };
            let block = ContextBlock::new(size.saturating_add(backfill), backfill, outer);
            // SAFETY: as above.
            unsafe { (*list).Context = block.header() };
            record.parts.contexts.push(block);
        }
        record.context_pushes.push(size);
        true
    })
}

/// Takes back the latest context allocation of `nbl`, which must be of
/// `size` bytes: the sizes allocated, newest first, on a mismatch.
pub(crate) fn pop_context(nbl: usize, size: u16) -> Result<(), Vec<u16>> {
    with(|l| {
        let Some(record) = l.lists.get_mut(&nbl) else {
            return Err(Vec::new());
        };
        if record.context_pushes.last() != Some(&size) {
            return Err(record.context_pushes.iter().rev().copied().collect());
        }
        record.context_pushes.pop();
        Ok(())
    })
}

/// Frees the context block `ctx` of `nbl` if it was added by
/// [`push_context`] (the list's `Context` must already skip it).
pub(crate) fn drop_context_block(nbl: usize, ctx: usize) {
    with(|l| {
        if let Some(record) = l.lists.get_mut(&nbl) {
            // The list's first block (from its allocation) lives as long
            // as the list.
            if let Some(i) = record
                .parts
                .contexts
                .iter()
                .skip(1)
                .position(|b| b.header() as usize == ctx)
            {
                record.parts.contexts.remove(i + 1);
            }
        }
    });
}

/// Whether `ctx` is a context block [`push_context`] added to `nbl`.
pub(crate) fn is_pushed_block(nbl: usize, ctx: usize) -> bool {
    with(|l| {
        l.lists.get(&nbl).is_some_and(|r| {
            r.parts
                .contexts
                .iter()
                .skip(1)
                .any(|b| b.header() as usize == ctx)
        })
    })
}

/// Sizes of context allocations on `nbl` not yet freed (newest last).
pub fn context_allocations(nbl: usize) -> Vec<u16> {
    with(|l| {
        l.lists
            .get(&nbl)
            .map(|r| r.context_pushes.clone())
            .unwrap_or_default()
    })
}

const _: () = assert!(MEMORY_ALLOCATION_ALIGNMENT == 16);

//! `NET_BUFFER_LIST` pools and the list imports (`ndis/nblapi.h`):
//! `NdisAllocateNetBufferListPool`, `NdisFreeNetBufferListPool`,
//! `NdisAllocateNetBufferList`, `NdisAllocateNetBufferAndNetBufferList`,
//! `NdisFreeNetBufferList`, `NdisGetPoolFromNetBufferList`,
//! `NdisGetDataBuffer`, `NdisAllocateNetBufferListContext` and
//! `NdisFreeNetBufferListContext`, all `<= DISPATCH_LEVEL`.
//!
//! Lists live in the ledger of [`super::nbl`]. What NDIS documents as a
//! precondition and returns a status for gets that status (a list
//! allocation with a `ContextSize` that is not a multiple of
//! `MEMORY_ALLOCATION_ALIGNMENT`, or from a pool of the wrong kind, gets
//! null); what would corrupt NDIS's state is a bug check: an unknown pool
//! or list 0x50 (as for every NDIS handle), a pool freed with lists still
//! allocated, a list freed while handed to someone, or a context freed
//! out of order 0x7C / 0x27 (the bottle files every list ownership fault
//! under NDIS's leaked-NBL case). Allocations are fault points of the
//! low-resources simulation.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use ndis::{
    MEMORY_ALLOCATION_ALIGNMENT, NDIS_HANDLE, NDIS_OBJECT_HEADER, NDIS_OBJECT_TYPE_DEFAULT,
    NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1,
    NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_2, NDIS_STATUS_INVALID_PARAMETER,
    NDIS_STATUS_RESOURCES, NDIS_STATUS_SUCCESS, NET_BUFFER, NET_BUFFER_LIST,
    NET_BUFFER_LIST_CONTEXT, NET_BUFFER_LIST_POOL_PARAMETERS,
};
use ndkpi::{
    MDL, MDL_MAPPED_TO_SYSTEM_VA, MDL_SOURCE_IS_NONPAGED_POOL, NDIS_STATUS, PVOID, ULONG, USHORT,
};

use super::checks::{
    NDIS_BUGCHECK_LEAKED_NBL, bad_header, check_header, guarded, invalid_handle, ndis_bugcheck,
    require_dispatch_or_below,
};
use super::nbl::{self, Allocation, Holder};
use super::state::{self, Handle};
use crate::kernel::verifier;

/// One pool.
#[derive(Debug)]
struct Pool {
    handle: Handle,
    /// The NDIS handle it was allocated for.
    owner: usize,
    /// Preallocated context bytes per list.
    context_size: u16,
    /// Lists come with a `NET_BUFFER`.
    with_buffer: bool,
    /// Data bytes preallocated per buffer.
    data_size: u32,
}

#[derive(Debug, Default)]
struct Pools {
    live: HashMap<usize, Pool>,
    /// Freed pool handles, kept so their addresses are not reused.
    retired: Vec<Handle>,
}

static POOLS: Mutex<Option<Pools>> = Mutex::new(None);

fn pools() -> MutexGuard<'static, Option<Pools>> {
    POOLS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn with<R>(f: impl FnOnce(&mut Pools) -> R) -> R {
    f(pools().get_or_insert_with(Pools::default))
}

/// Forgets every pool (a new machine).
pub(crate) fn reset() {
    if let Some(old) = pools().replace(Pools::default()) {
        // A previous machine's driver may still hold the handles.
        std::mem::forget(old);
    }
}

/// A pool allocated and not freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LivePool {
    /// Its handle.
    pub pool: usize,
    /// The NDIS handle it was allocated for.
    pub owner: usize,
    /// Lists of it still allocated.
    pub lists: usize,
}

/// Pools allocated and never freed.
pub fn live_pools() -> Vec<LivePool> {
    let pools: Vec<(usize, usize)> = with(|p| p.live.iter().map(|(h, p)| (*h, p.owner)).collect());
    pools
        .into_iter()
        .map(|(pool, owner)| LivePool {
            pool,
            owner,
            lists: nbl::live_in_pool(pool),
        })
        .collect()
}

/// The documented alignment of context sizes.
fn aligned(n: u16) -> bool {
    usize::from(n) % MEMORY_ALLOCATION_ALIGNMENT == 0
}

/// An ownership fault of a list: 0x7C / 0x27.
fn list_fault(api: &str, nbl: usize, what: &str) -> ! {
    ndis_bugcheck(NDIS_BUGCHECK_LEAKED_NBL, nbl, 0, format!("{api}: {what}"))
}

/// `NdisAllocateNetBufferListPool`: a pool for the driver, adapter or
/// binding handle `NdisHandle`; null when out of resources or when the
/// parameters are not valid.
pub unsafe extern "win64" fn NdisAllocateNetBufferListPool(
    NdisHandle: NDIS_HANDLE,
    Parameters: *const NET_BUFFER_LIST_POOL_PARAMETERS,
) -> NDIS_HANDLE {
    const API: &str = "NdisAllocateNetBufferListPool";
    guarded(API, || {
        require_dispatch_or_below(API, NdisAllocateNetBufferListPool as *const ());
        let owner = NdisHandle as usize;
        if !state::with(|n| n.is_ndis_handle(owner)) {
            invalid_handle(API, owner, "NDIS driver, adapter or binding");
        }
        if Parameters.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: non-null; the parameters start with their header.
        let header = unsafe { Parameters.cast::<NDIS_OBJECT_HEADER>().read_unaligned() };
        if let Err(fault) = check_header(
            header,
            NDIS_OBJECT_TYPE_DEFAULT,
            &[
                NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_1,
                NDIS_SIZEOF_NET_BUFFER_LIST_POOL_PARAMETERS_REVISION_2,
            ],
        ) {
            bad_header(
                API,
                owner,
                Parameters as usize,
                "NET_BUFFER_LIST_POOL_PARAMETERS",
                header,
                fault,
            );
        }
        // SAFETY: a revision-1 structure at least (checked): every field
        // through DataSize is readable; Flags only with revision 2.
        let mut params = unsafe { Parameters.read_unaligned() };
        if header.Revision < 2 {
            params.Flags = 0;
        }
        let with_buffer = params.fAllocateNetBuffer != 0;
        if !aligned(params.ContextSize) || (!with_buffer && params.DataSize != 0) {
            return std::ptr::null_mut();
        }
        if verifier::fault_point(API) {
            return std::ptr::null_mut();
        }
        let handle = Handle::new();
        let addr = handle.addr();
        with(|p| {
            p.live.insert(
                addr,
                Pool {
                    handle,
                    owner,
                    context_size: params.ContextSize,
                    with_buffer,
                    data_size: params.DataSize,
                },
            );
        });
        addr as NDIS_HANDLE
    })
}

/// `NdisFreeNetBufferListPool`: every list of the pool must be freed.
pub unsafe extern "win64" fn NdisFreeNetBufferListPool(PoolHandle: NDIS_HANDLE) {
    const API: &str = "NdisFreeNetBufferListPool";
    guarded(API, || {
        require_dispatch_or_below(API, NdisFreeNetBufferListPool as *const ());
        let pool = PoolHandle as usize;
        if !with(|p| p.live.contains_key(&pool)) {
            invalid_handle(API, pool, "NET_BUFFER_LIST pool");
        }
        let live = nbl::live_in_pool(pool);
        if live != 0 {
            ndis_bugcheck(
                NDIS_BUGCHECK_LEAKED_NBL,
                pool,
                live,
                format!("{API}: pool {pool:#x} freed with {live} NET_BUFFER_LISTs still allocated"),
            );
        }
        with(|p| {
            if let Some(old) = p.live.remove(&pool) {
                p.retired.push(old.handle);
            }
        });
    });
}

/// The pool's allocation parameters, or a 0x50 for an unknown handle.
fn pool_of(api: &str, pool: usize) -> (u16, bool, u32) {
    let Some(found) = with(|p| {
        p.live
            .get(&pool)
            .map(|p| (p.context_size, p.with_buffer, p.data_size))
    }) else {
        invalid_handle(api, pool, "NET_BUFFER_LIST pool");
    };
    found
}

/// `NdisAllocateNetBufferList`: a list (with its `NET_BUFFER`, MDL and
/// data if the pool preallocates them).
pub unsafe extern "win64" fn NdisAllocateNetBufferList(
    PoolHandle: NDIS_HANDLE,
    ContextSize: USHORT,
    ContextBackFill: USHORT,
) -> *mut NET_BUFFER_LIST {
    const API: &str = "NdisAllocateNetBufferList";
    guarded(API, || {
        require_dispatch_or_below(API, NdisAllocateNetBufferList as *const ());
        let pool = PoolHandle as usize;
        let (pool_context, with_buffer, data_size) = pool_of(API, pool);
        if !aligned(ContextSize) || !aligned(ContextBackFill) {
            return std::ptr::null_mut();
        }
        if verifier::fault_point(API) {
            return std::ptr::null_mut();
        }
        nbl::allocate(&Allocation {
            pool,
            holder: Holder::Driver,
            context_size: ContextSize.saturating_add(pool_context),
            backfill: ContextBackFill,
            with_buffer,
            data_size: data_size as usize,
            mdl_chain: std::ptr::null_mut(),
            data_offset: 0,
            data_length: 0,
        })
    })
}

/// `NdisAllocateNetBufferAndNetBufferList`: a list with one `NET_BUFFER`
/// over `MdlChain`, from a pool made with `fAllocateNetBuffer` and no
/// `DataSize`.
pub unsafe extern "win64" fn NdisAllocateNetBufferAndNetBufferList(
    PoolHandle: NDIS_HANDLE,
    ContextSize: USHORT,
    ContextBackFill: USHORT,
    MdlChain: *mut MDL,
    DataOffset: ULONG,
    DataLength: usize,
) -> *mut NET_BUFFER_LIST {
    const API: &str = "NdisAllocateNetBufferAndNetBufferList";
    guarded(API, || {
        require_dispatch_or_below(API, NdisAllocateNetBufferAndNetBufferList as *const ());
        let pool = PoolHandle as usize;
        let (pool_context, with_buffer, data_size) = pool_of(API, pool);
        if !with_buffer
            || data_size != 0
            || !aligned(ContextSize)
            || !aligned(ContextBackFill)
            || DataLength > u32::MAX as usize
        {
            return std::ptr::null_mut();
        }
        if verifier::fault_point(API) {
            return std::ptr::null_mut();
        }
        nbl::allocate(&Allocation {
            pool,
            holder: Holder::Driver,
            context_size: ContextSize.saturating_add(pool_context),
            backfill: ContextBackFill,
            with_buffer: true,
            data_size: 0,
            mdl_chain: MdlChain,
            data_offset: DataOffset,
            data_length: DataLength as u32,
        })
    })
}

/// `NdisFreeNetBufferList`: the driver must hold the list (nothing handed
/// out) and have freed the contexts it allocated on it.
pub unsafe extern "win64" fn NdisFreeNetBufferList(NetBufferList: *mut NET_BUFFER_LIST) {
    const API: &str = "NdisFreeNetBufferList";
    guarded(API, || {
        require_dispatch_or_below(API, NdisFreeNetBufferList as *const ());
        let list = NetBufferList as usize;
        let Some(holders) = nbl::holders(list) else {
            invalid_handle(API, list, "NET_BUFFER_LIST");
        };
        if nbl::pool_of(list) == Some(nbl::bottle_pool()) {
            list_fault(
                API,
                list,
                &format!(
                    "NET_BUFFER_LIST {list:#x} belongs to another driver (its pool is not the caller's)"
                ),
            );
        }
        if holders != [Holder::Driver] {
            list_fault(
                API,
                list,
                &format!("NET_BUFFER_LIST {list:#x} freed while handed out (holders {holders:?})"),
            );
        }
        let contexts = nbl::context_allocations(list);
        if !contexts.is_empty() {
            list_fault(
                API,
                list,
                &format!(
                    "NET_BUFFER_LIST {list:#x} freed with contexts of {contexts:?} bytes still allocated"
                ),
            );
        }
        if let Err(e) = nbl::release(list, Holder::Driver) {
            list_fault(API, list, &e.to_string());
        }
    });
}

/// `NdisGetPoolFromNetBufferList`.
pub unsafe extern "win64" fn NdisGetPoolFromNetBufferList(
    NetBufferList: *const NET_BUFFER_LIST,
) -> NDIS_HANDLE {
    const API: &str = "NdisGetPoolFromNetBufferList";
    guarded(API, || {
        require_dispatch_or_below(API, NdisGetPoolFromNetBufferList as *const ());
        let list = NetBufferList as usize;
        let Some(pool) = nbl::pool_of(list) else {
            invalid_handle(API, list, "NET_BUFFER_LIST");
        };
        pool as NDIS_HANDLE
    })
}

/// Where `len` bytes at `offset` of `mdl` are, if they are contiguous in
/// one MDL with a system address (mapped or non-paged pool).
///
/// # Safety
/// `mdl` is a valid MDL.
unsafe fn in_place(mdl: *mut MDL, offset: u32, len: u32) -> Option<*mut u8> {
    // SAFETY: a valid MDL (caller).
    let m = unsafe { &*mdl };
    let fits = u64::from(offset) + u64::from(len) <= u64::from(m.ByteCount);
    let mapped = m.MdlFlags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL) != 0;
    (fits && mapped && !m.MappedSystemVa.is_null())
        .then(|| m.MappedSystemVa.cast::<u8>().wrapping_add(offset as usize))
}

/// `NdisGetDataBuffer`: `BytesNeeded` contiguous bytes at the buffer's
/// data start, in place when they are contiguous and aligned as asked
/// (`address % AlignMultiple == AlignOffset`), else copied to `Storage`
/// (null when `Storage` is null or the buffer is shorter).
pub unsafe extern "win64" fn NdisGetDataBuffer(
    NetBuffer: *mut NET_BUFFER,
    BytesNeeded: ULONG,
    Storage: PVOID,
    AlignMultiple: ULONG,
    AlignOffset: ULONG,
) -> PVOID {
    const API: &str = "NdisGetDataBuffer";
    guarded(API, || {
        require_dispatch_or_below(API, NdisGetDataBuffer as *const ());
        if NetBuffer.is_null() {
            invalid_handle(API, 0, "NET_BUFFER");
        }
        // SAFETY: the driver's NET_BUFFER (non-null), which it holds.
        let b = unsafe { NetBuffer.read() };
        if BytesNeeded == 0 || b.data_length() < BytesNeeded || b.CurrentMdl.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: the buffer's current MDL (non-null), valid while the
        // driver holds the buffer.
        let here = unsafe { in_place(b.CurrentMdl, b.CurrentMdlOffset, BytesNeeded) };
        let multiple = AlignMultiple.max(1) as usize;
        if let Some(p) =
            here.filter(|p| (*p as usize) % multiple == AlignOffset as usize % multiple)
        {
            return p.cast();
        }
        if Storage.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: as above: a valid buffer with a valid MDL chain.
        let Ok(bytes) = (unsafe { nbl::buffer_bytes(NetBuffer) }) else {
            return std::ptr::null_mut();
        };
        let n = BytesNeeded as usize;
        // SAFETY: `Storage` holds at least BytesNeeded bytes (the
        // caller's contract); `bytes` has at least as many (the buffer's
        // length was checked).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), Storage.cast::<u8>(), n) };
        Storage
    })
}

/// `NdisAllocateNetBufferListContext`: `ContextSize` more bytes of
/// context in front of the list's used context, from its backfill or from
/// a new block with `ContextBackFill` bytes of backfill.
pub unsafe extern "win64" fn NdisAllocateNetBufferListContext(
    NetBufferList: *mut NET_BUFFER_LIST,
    ContextSize: USHORT,
    ContextBackFill: USHORT,
    _PoolTag: ULONG,
) -> NDIS_STATUS {
    const API: &str = "NdisAllocateNetBufferListContext";
    guarded(API, || {
        require_dispatch_or_below(API, NdisAllocateNetBufferListContext as *const ());
        let list = NetBufferList as usize;
        if nbl::holders(list).is_none() {
            invalid_handle(API, list, "NET_BUFFER_LIST");
        }
        if ContextSize == 0 || !aligned(ContextSize) || !aligned(ContextBackFill) {
            return NDIS_STATUS_INVALID_PARAMETER;
        }
        // SAFETY: a live list of the ledger (checked).
        let ctx = unsafe { (*NetBufferList).Context };
        if !ctx.is_null() {
            // SAFETY: the list's context block, allocated by the ledger.
            let offset = unsafe { (*ctx).Offset };
            if offset >= ContextSize {
                // SAFETY: as above.
                unsafe { (*ctx).Offset = offset - ContextSize };
                nbl::push_context(list, ContextSize, 0, false);
                return NDIS_STATUS_SUCCESS;
            }
        }
        if verifier::fault_point(API) {
            return NDIS_STATUS_RESOURCES;
        }
        nbl::push_context(list, ContextSize, ContextBackFill, true);
        NDIS_STATUS_SUCCESS
    })
}

/// `NdisFreeNetBufferListContext`: gives back the latest
/// `NdisAllocateNetBufferListContext` of `ContextSize` bytes.
pub unsafe extern "win64" fn NdisFreeNetBufferListContext(
    NetBufferList: *mut NET_BUFFER_LIST,
    ContextSize: USHORT,
) {
    const API: &str = "NdisFreeNetBufferListContext";
    guarded(API, || {
        require_dispatch_or_below(API, NdisFreeNetBufferListContext as *const ());
        let list = NetBufferList as usize;
        if nbl::holders(list).is_none() {
            invalid_handle(API, list, "NET_BUFFER_LIST");
        }
        if let Err(allocated) = nbl::pop_context(list, ContextSize) {
            list_fault(
                API,
                list,
                &format!(
                    "{ContextSize} context bytes freed on NET_BUFFER_LIST {list:#x}; its context \
                     allocations, newest first, are {allocated:?}"
                ),
            );
        }
        // SAFETY: a live list of the ledger (checked).
        let ctx: *mut NET_BUFFER_LIST_CONTEXT = unsafe { (*NetBufferList).Context };
        if ctx.is_null() {
            list_fault(
                API,
                list,
                &format!("NET_BUFFER_LIST {list:#x} has no context"),
            );
        }
        // SAFETY: the list's context block, allocated by the ledger.
        let block = unsafe { ctx.read() };
        let (size, offset, next) = (block.Size, block.Offset, block.Next);
        let freed = offset.saturating_add(ContextSize);
        if freed > size {
            list_fault(
                API,
                list,
                &format!(
                    "{ContextSize} context bytes freed, the block holds {} in use",
                    size - offset
                ),
            );
        }
        // SAFETY: as above.
        unsafe { (*ctx).Offset = freed };
        if freed == size && nbl::is_pushed_block(list, ctx as usize) {
            // The block an allocation added is empty again: NDIS unlinks
            // and frees it.
            // SAFETY: a live list (checked).
            unsafe { (*NetBufferList).Context = next };
            nbl::drop_context_block(list, ctx as usize);
        }
    });
}

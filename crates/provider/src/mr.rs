//! Memory regions: regular registration (`NdkRegisterMr`) and fast-register
//! regions (`NdkInitializeFastRegisterMr` + the `NdkFastRegister` work
//! request, whose checks happen here at post time).
//!
//! A region's local and remote token are the same device key. A regular
//! registration gets a new variant of the key each time (`NdkRegisterMr`
//! after `NdkDeregisterMr`), so a token of an earlier registration stops
//! working.
//!
//! A fast-register MR's token is fixed once the MR is initialised
//! (`NdkInitializeFastRegisterMr`): every later `NdkFastRegister` registers
//! under the same token, readable before and after the post returns.
//! Kernel consumers rely on that: they read the token once, at setup, and
//! hand it to peers for every I/O that reuses the MR. What keeps a stale
//! use safe without a token change is the registration's state in the
//! device's key table: an invalidation (`NdkInvalidate`, a peer's send
//! with invalidate, a read with local invalidate) marks the entry invalid,
//! and every access through the token (local or remote) is refused until
//! the next `NdkFastRegister` validates it again over its new pages. The
//! trade-off against hardware that rotates the key byte on each
//! registration: a peer that keeps using a token *after* the consumer has
//! registered the MR again reaches the new registration instead of being
//! refused. A conforming peer cannot do that: the consumer re-registers
//! only after the peer has signalled the end of its use (its send with
//! invalidate, or a message the consumer waited for), and on a reliable
//! connection every RDMA operation the peer issued before that message is
//! executed before it. Transport duplicates do not change that: a
//! duplicate SEND or WRITE is only acknowledged, never executed again; a
//! duplicate READ is refused while the entry is invalid, and one the
//! responder answers after the next registration goes to a requester whose
//! READ has completed and which discards the answer. The token works only
//! for QPs of the MR's PD, as before.

use core::sync::atomic::{AtomicU32, Ordering};

use hwq::device::Registration;
use hwq::wqe::Access;
use hwq::{MemoryKey, TryArc};
use ndkpi::{
    NDK_MR, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NDK_MR_FLAG_ALLOW_REMOTE_READ,
    NDK_MR_FLAG_ALLOW_REMOTE_WRITE, NDK_MR_FLAG_RDMA_READ_SINK, NTSTATUS, PAGE_SIZE,
    STATUS_ACCESS_VIOLATION, STATUS_IMPLEMENTATION_LIMIT, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_DEVICE_REQUEST, STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_PARAMETER,
};

use crate::abi::{self, MdlChain, NdkCell, NdkObject};
use crate::device::Raised;
use crate::info;
use crate::lock::SpinLock;
use crate::mdl;
use crate::object::{Dep, Life, Object};
use crate::pd::Pd;
use crate::platform::{LockClass, Platform};
use crate::pool::{self, Charge, PoolVec, tags};
use crate::status;

static STATE_LOCK: LockClass = LockClass::new("mr.state");

const PAGE: u64 = PAGE_SIZE as u64;

/// A registered address range and its rights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First virtual address (an index, never dereferenced).
    pub va: u64,
    /// Bytes.
    pub length: u64,
    /// Rights.
    pub access: Access,
}

impl Region {
    /// Whether `[va, va + length)` lies inside the region.
    pub fn contains(&self, va: u64, length: u64) -> bool {
        va >= self.va
            && va
                .checked_add(length)
                .is_some_and(|end| end <= self.va + self.length)
    }
}

#[derive(Debug)]
struct FastState {
    max_pages: u32,
    remote_access: bool,
    /// The page list the device reads for the next fast registration.
    pages: PoolVec<u64>,
}

impl FastState {
    /// The page list as the owner of its device mapping.
    fn list_owner(&self) -> usize {
        self.pages.as_ptr() as usize
    }
}

/// Maps the page list of `fast` for the device ([`Platform::dma_map`]),
/// page by page of its provider memory.
fn map_page_list(platform: &'static dyn Platform, fast: &FastState) -> Result<(), NTSTATUS> {
    let va = fast.pages.as_ptr() as usize;
    let len = core::mem::size_of_val(&fast.pages[..]);
    let first = va / PAGE_SIZE * PAGE_SIZE;
    let count = mdl::span_pages(va as u64, len as u64) as usize;
    let mut logical =
        PoolVec::with_capacity(platform, tags::MR, count).map_err(status::alloc_error)?;
    for k in 0..count {
        let page = first + k * PAGE_SIZE;
        let at = page.max(va);
        let n = (page + PAGE_SIZE).min(va + len) - at;
        let address = platform
            .logical_of(at, n)
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let _ = logical.push(address / PAGE * PAGE);
    }
    if platform.dma_map(fast.list_owner(), &mut logical.iter().copied()) {
        Ok(())
    } else {
        Err(STATUS_INSUFFICIENT_RESOURCES)
    }
}

#[derive(Debug, Default)]
struct MrState {
    /// `NdkRegisterMr` registration, or the current fast registration.
    region: Option<Region>,
    fast: Option<FastState>,
}

/// A fast registration as the QP's post path asks for it.
#[derive(Debug)]
pub struct FastRegisterRequest<'a> {
    /// Logical addresses of the pages.
    pub pages: &'a [u64],
    /// Offset of the first byte in the first page.
    pub fbo: u32,
    /// Bytes.
    pub length: u64,
    /// The region's first virtual address.
    pub va: u64,
    /// Rights to grant.
    pub access: Access,
}

/// What the post path puts in the WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastRegisterGrant {
    /// The region's key (the MR's token, the same for every fast
    /// registration).
    pub key: MemoryKey,
    /// Logical address of the page list.
    pub page_list: u64,
}

/// A memory region.
#[repr(C)]
pub struct Mr {
    ndk: NdkCell<NDK_MR>,
    life: Life,
    pd: Dep<Pd>,
    fast: bool,
    /// The current token (local and remote).
    token: AtomicU32,
    state: SpinLock<MrState>,
    _charge: Charge,
}

impl Object for Mr {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.pd.get().adapter().platform()
    }

    fn teardown(&self) {
        self.device().free_key(self.key());
        // The device no longer reaches the registration or the page list:
        // their mappings go (the page list's memory goes with the object).
        let platform = self.platform();
        platform.dma_unmap(self.owner());
        if let Some(fast) = &self.state.lock().fast {
            platform.dma_unmap(fast.list_owner());
        }
    }

    fn release_antecedents(&self) {
        self.pd.release();
    }
}

impl core::fmt::Debug for Mr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Mr")
            .field("fast", &self.fast)
            .field("token", &self.token.load(Ordering::Relaxed))
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

/// Decodes `NDK_MR_FLAG_*` (unknown bits, or the remote-write bit without
/// local write, are refused).
pub fn mr_access(flags: u32) -> Option<Access> {
    const KNOWN: u32 = NDK_MR_FLAG_ALLOW_LOCAL_WRITE
        | NDK_MR_FLAG_ALLOW_REMOTE_READ
        | NDK_MR_FLAG_ALLOW_REMOTE_WRITE
        | NDK_MR_FLAG_RDMA_READ_SINK;
    if flags & !KNOWN != 0 {
        return None;
    }
    let remote_write_bit = NDK_MR_FLAG_ALLOW_REMOTE_WRITE & !NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
    let mut access = Access::empty();
    if flags & remote_write_bit != 0 {
        if flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE == 0 {
            return None;
        }
        access |= Access::REMOTE_WRITE;
    }
    if flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE != 0 {
        access |= Access::LOCAL_WRITE;
    }
    if flags & NDK_MR_FLAG_ALLOW_REMOTE_READ != 0 {
        access |= Access::REMOTE_READ;
    }
    if flags & NDK_MR_FLAG_RDMA_READ_SINK != 0 {
        access |= Access::READ_SINK;
    }
    Some(access)
}

impl Mr {
    pub(crate) fn create(pd: &Pd, fast: bool) -> Result<TryArc<Self>, NTSTATUS> {
        let adapter = pd.adapter();
        let ctx = adapter.ctx();
        let key = ctx
            .device()
            .alloc_key(pd.pdn(), false)
            .map_err(status::device_error)?;
        let platform = adapter.platform();
        pool::try_arc(platform, tags::MR, |charge| Self {
            ndk: NdkCell::new(Mr::ndk(adapter.version())),
            life: Life::new(platform),
            pd: Dep::new(&abi::arc(pd)),
            fast,
            token: AtomicU32::new(key.0),
            state: SpinLock::new(platform, &STATE_LOCK, MrState::default()),
            _charge: charge,
        })
        .map_err(|e| {
            ctx.device().free_key(key);
            status::alloc_error(e)
        })
    }

    /// The device, raised for a command ([`crate::device::DeviceContext::device`]).
    fn device(&self) -> Raised<'_> {
        self.pd.get().adapter().ctx().device()
    }

    /// This MR as the owner of its registration's device mapping.
    fn owner(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// The current key.
    pub fn key(&self) -> MemoryKey {
        MemoryKey(self.token.load(Ordering::Acquire))
    }

    /// Whether this is a fast-register MR.
    pub fn is_fast(&self) -> bool {
        self.fast
    }

    /// The PD.
    pub fn pd(&self) -> &TryArc<Pd> {
        self.pd.get()
    }

    /// The registered region (regular MRs after `NdkRegisterMr`).
    pub fn registered_region(&self) -> Option<Region> {
        if self.fast {
            return None;
        }
        self.state.lock().region
    }

    /// `NdkRegisterMr` of the `length` bytes `chain` describes.
    pub(crate) fn register(
        &self,
        chain: MdlChain<'_>,
        length: usize,
        flags: u32,
    ) -> Result<(), NTSTATUS> {
        if self.fast {
            return Err(STATUS_INVALID_DEVICE_REQUEST);
        }
        let access = mr_access(flags).ok_or(STATUS_INVALID_PARAMETER)?;
        let adapter = self.pd.get().adapter();
        let length = length as u64;
        if length == 0 || length > info::max_registration(adapter.ctx().caps()) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let platform = adapter.platform();
        let span = mdl::walk(platform, chain, length, |_| {})?;
        let mut pages =
            PoolVec::with_capacity(platform, tags::MR, span.pages).map_err(status::alloc_error)?;
        // The same chain again, unchanged (the consumer does not touch it
        // while the registration runs).
        mdl::walk(platform, chain, length, |p| {
            let _ = pages.push(p);
        })?;
        let mut state = self.state.lock();
        if state.region.is_some() {
            return Err(STATUS_INVALID_DEVICE_STATE);
        }
        // Mapped once here, for the registration's life: the device's
        // copies only look the pages up.
        if !platform.dma_map(self.owner(), &mut pages.iter().copied()) {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        let key = self
            .device()
            .register(
                self.key(),
                &Registration {
                    pd: self.pd.get().pdn(),
                    access,
                    va: span.va,
                    length,
                    first_byte_offset: span.fbo,
                    pages: &pages,
                },
            )
            .map_err(|e| {
                platform.dma_unmap(self.owner());
                status::device_error(e)
            })?;
        self.token.store(key.0, Ordering::Release);
        state.region = Some(Region {
            va: span.va,
            length,
            access,
        });
        Ok(())
    }

    /// `NdkDeregisterMr`.
    pub(crate) fn deregister(&self) -> Result<(), NTSTATUS> {
        if self.fast {
            return Err(STATUS_INVALID_DEVICE_REQUEST);
        }
        let mut state = self.state.lock();
        if state.region.is_none() {
            return Err(STATUS_INVALID_DEVICE_STATE);
        }
        self.device()
            .deregister(self.key())
            .map_err(status::device_error)?;
        state.region = None;
        self.platform().dma_unmap(self.owner());
        Ok(())
    }

    /// `NdkInitializeFastRegisterMr`.
    pub(crate) fn initialize_fast_register(
        &self,
        max_pages: u32,
        remote_access: bool,
    ) -> Result<(), NTSTATUS> {
        if !self.fast {
            return Err(STATUS_INVALID_DEVICE_REQUEST);
        }
        let adapter = self.pd.get().adapter();
        if max_pages == 0 {
            return Err(STATUS_INVALID_PARAMETER);
        }
        if max_pages > adapter.ctx().caps().max_fast_register_pages {
            return Err(STATUS_IMPLEMENTATION_LIMIT);
        }
        let platform = adapter.platform();
        let pages = PoolVec::filled(platform, tags::MR, max_pages as usize, 0u64)
            .map_err(status::alloc_error)?;
        let fast = FastState {
            max_pages,
            remote_access,
            pages,
        };
        // The device reads the page list at every fast registration: map
        // it once, for the list's life.
        map_page_list(platform, &fast)?;
        if let Err(e) = self
            .device()
            .init_fast_register(self.key(), max_pages, remote_access)
        {
            platform.dma_unmap(fast.list_owner());
            return Err(status::device_error(e));
        }
        let old = self.state.lock().fast.replace(fast);
        if let Some(old) = old {
            platform.dma_unmap(old.list_owner());
        }
        Ok(())
    }

    /// Validates and commits a fast registration at post time: the page
    /// list is copied into the MR's page buffer; the registration keeps the
    /// MR's token (see the module docs). The caller has already made sure
    /// the SQ has a free slot, so a success here is always followed by the
    /// WQE.
    pub(crate) fn fast_register(
        &self,
        platform: &dyn Platform,
        req: &FastRegisterRequest<'_>,
    ) -> Result<FastRegisterGrant, NTSTATUS> {
        if !self.fast {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let count = req.pages.len() as u64;
        let caps = *self.pd.get().adapter().ctx().caps();
        if count == 0
            || u64::from(req.fbo) >= PAGE
            || req.length == 0
            || req.length > count * PAGE - u64::from(req.fbo)
            || req.length > info::max_registration(&caps)
            || req.va % PAGE != u64::from(req.fbo)
            || req.pages.iter().any(|p| p % PAGE != 0)
        {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let remote = req
            .access
            .intersects(Access::REMOTE_READ | Access::REMOTE_WRITE);
        let mut state = self.state.lock();
        let fast = state.fast.as_mut().ok_or(STATUS_INVALID_PARAMETER)?;
        if count > u64::from(fast.max_pages) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        if remote && !fast.remote_access {
            return Err(STATUS_ACCESS_VIOLATION);
        }
        let list = fast
            .pages
            .get_mut(..req.pages.len())
            .ok_or(STATUS_INVALID_PARAMETER)?;
        list.copy_from_slice(req.pages);
        let page_list = platform
            .logical_of(list.as_ptr() as usize, core::mem::size_of_val(list))
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        let key = self.key();
        state.region = Some(Region {
            va: req.va,
            length: req.length,
            access: req.access,
        });
        Ok(FastRegisterGrant { key, page_list })
    }
}

//! Memory windows: created on a PD, bound to a range of a registered MR by
//! the `NdkBind` work request (checks and key rotation at post time, in
//! `Mw::bind`), unbound by `NdkInvalidate` or a peer's
//! send-and-invalidate.
//!
//! A bound window keeps its MR open (MR → MW antecedence): the binding holds
//! a [`Dep`] on the MR until the window is rebound, invalidated or closed.

use core::sync::atomic::{AtomicU32, Ordering};

use hwq::wqe::Access;
use hwq::{MemoryKey, TryArc};
use ndkpi::{NDK_MW, NTSTATUS, STATUS_ACCESS_VIOLATION, STATUS_INVALID_PARAMETER};

use crate::abi::{self, NdkCell, NdkObject};
use crate::info;
use crate::lock::SpinLock;
use crate::mr::Mr;
use crate::object::{Dep, Life, Object};
use crate::pd::Pd;
use crate::platform::{LockClass, Platform};
use crate::pool::{self, Charge, tags};
use crate::status;

static BINDING_LOCK: LockClass = LockClass::new("mw.binding");

/// What the post path puts in a bind WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindGrant {
    /// The window's new key.
    pub key: MemoryKey,
    /// The MR's key.
    pub mr_key: MemoryKey,
}

/// A memory window.
#[repr(C)]
pub struct Mw {
    ndk: NdkCell<NDK_MW>,
    life: Life,
    pd: Dep<Pd>,
    token: AtomicU32,
    binding: SpinLock<Option<Dep<Mr>>>,
    _charge: Charge,
}

impl Object for Mw {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.pd.get().adapter().platform()
    }

    fn teardown(&self) {
        self.pd.get().adapter().ctx().device().free_key(self.key());
    }

    fn release_antecedents(&self) {
        self.unbind();
        self.pd.release();
    }
}

impl core::fmt::Debug for Mw {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Mw")
            .field("token", &self.token.load(Ordering::Relaxed))
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl Mw {
    pub(crate) fn create(pd: &Pd) -> Result<TryArc<Self>, NTSTATUS> {
        let adapter = pd.adapter();
        let ctx = adapter.ctx();
        let key = ctx
            .device()
            .alloc_key(pd.pdn(), true)
            .map_err(status::device_error)?;
        let platform = adapter.platform();
        pool::try_arc(platform, tags::MW, |charge| Self {
            ndk: NdkCell::new(Mw::ndk(adapter.version())),
            life: Life::new(platform),
            pd: Dep::new(&abi::arc(pd)),
            token: AtomicU32::new(key.0),
            binding: SpinLock::new(platform, &BINDING_LOCK, None),
            _charge: charge,
        })
        .map_err(|e| {
            ctx.device().free_key(key);
            status::alloc_error(e)
        })
    }

    /// The current key.
    pub fn key(&self) -> MemoryKey {
        MemoryKey(self.token.load(Ordering::Acquire))
    }

    /// Checks a bind of `[va, va + length)` of `mr` with `access` and, if it
    /// is allowed, rotates the window's key (readable from now on). The
    /// caller has made sure the SQ has a free slot and then calls
    /// [`Mw::set_binding`].
    pub(crate) fn bind(
        &self,
        mr: &Mr,
        va: u64,
        length: u64,
        access: Access,
    ) -> Result<BindGrant, NTSTATUS> {
        let region = mr.registered_region().ok_or(STATUS_INVALID_PARAMETER)?;
        if !TryArc::ptr_eq(mr.pd(), self.pd.get()) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let caps = self.pd.get().adapter().ctx().caps();
        if length > info::max_registration(caps) || !region.contains(va, length) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        if access.contains(Access::REMOTE_WRITE) && !region.access.contains(Access::LOCAL_WRITE) {
            return Err(STATUS_ACCESS_VIOLATION);
        }
        let key = self.key().next_variant();
        self.token.store(key.0, Ordering::Release);
        Ok(BindGrant {
            key,
            mr_key: mr.key(),
        })
    }

    /// Records that the window is bound to `mr` (keeping the MR open).
    pub(crate) fn set_binding(&self, mr: &Mr) {
        let old = self.binding.lock().replace(Dep::new(&abi::arc(mr)));
        // Released outside the lock: it may finish a closing MR.
        drop(old);
    }

    /// Forgets the binding (invalidate, close).
    pub(crate) fn unbind(&self) {
        let old = self.binding.lock().take();
        drop(old);
    }
}

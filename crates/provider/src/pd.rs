//! Protection domains: the parent of MRs, MWs, QPs and SRQs, and the owner
//! of the privileged memory token.

use hwq::{MemoryKey, Pdn, TryArc};
use ndkpi::{NDK_PD, NTSTATUS};

use crate::abi::{self, NdkCell, NdkObject};
use crate::adapter::Adapter;
use crate::object::{Dep, Life, Object};
use crate::platform::Platform;
use crate::pool::{self, Charge, tags};
use crate::status;

/// A protection domain.
#[repr(C)]
pub struct Pd {
    ndk: NdkCell<NDK_PD>,
    life: Life,
    adapter: Dep<Adapter>,
    pdn: Pdn,
    privileged: MemoryKey,
    _charge: Charge,
}

impl Object for Pd {
    fn life(&self) -> &Life {
        &self.life
    }

    fn platform(&self) -> &'static dyn Platform {
        self.adapter.get().platform()
    }

    fn teardown(&self) {
        self.adapter.get().ctx().device().destroy_pd(self.pdn);
    }

    fn release_antecedents(&self) {
        self.adapter.release();
    }
}

impl core::fmt::Debug for Pd {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pd")
            .field("pdn", &self.pdn)
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl Pd {
    pub(crate) fn create(adapter: &Adapter) -> Result<TryArc<Self>, NTSTATUS> {
        let ctx = adapter.ctx();
        let (pdn, privileged) = ctx.device().create_pd().map_err(status::device_error)?;
        let platform = adapter.platform();
        pool::try_arc(platform, tags::PD, |charge| Self {
            ndk: NdkCell::new(Pd::ndk(adapter.version())),
            life: Life::new(platform),
            adapter: Dep::new(&abi::arc(adapter)),
            pdn,
            privileged,
            _charge: charge,
        })
        .map_err(|e| {
            ctx.device().destroy_pd(pdn);
            status::alloc_error(e)
        })
    }

    /// The device's PD number.
    pub fn pdn(&self) -> Pdn {
        self.pdn
    }

    /// The privileged key: local access by logical address.
    pub fn privileged_key(&self) -> MemoryKey {
        self.privileged
    }

    /// The adapter.
    pub fn adapter(&self) -> &TryArc<Adapter> {
        self.adapter.get()
    }
}

//! Protection domains: the parent of MRs, MWs, QPs and SRQs, and the owner
//! of the privileged memory token.

use core::ffi::c_void;

use hwq::{MemoryKey, Pdn, TryArc};
use ndkpi::{
    NDK_ADAPTER, NDK_FN_CLOSE_COMPLETION, NDK_FN_CREATE_COMPLETION, NDK_OBJECT_HEADER, NDK_PD,
    NDK_PD_DISPATCH, NTSTATUS, NdkObjectTypePd, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER,
    STATUS_SUCCESS,
};

use crate::abi::{self, NdkCell, NdkObject};
use crate::adapter::{self, Adapter, adapter_arg};
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

// SAFETY: `#[repr(C)]` with the NDK object first; built only by `create`,
// inside a `TryArc`.
unsafe impl NdkObject for Pd {
    type Ndk = NDK_PD;
    const TYPE: i32 = NdkObjectTypePd;
    fn dispatch_table() -> *const c_void {
        (&raw const DISPATCH).cast()
    }
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
    fn create(adapter: &Adapter) -> Result<TryArc<Self>, NTSTATUS> {
        let device = adapter.ctx().device();
        let (pdn, privileged) = device.create_pd().map_err(status::device_error)?;
        let platform = adapter.platform();
        pool::try_arc(platform, tags::PD, |charge| Self {
            ndk: NdkCell::new(NDK_PD {
                Header: abi::header(adapter.version(), NdkObjectTypePd),
                Dispatch: &raw const DISPATCH,
            }),
            life: Life::new(platform),
            adapter: Dep::new(&abi::arc(adapter)),
            pdn,
            privileged,
            _charge: charge,
        })
        .map_err(|e| {
            device.destroy_pd(pdn);
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

/// Resolves a PD argument.
///
/// # Safety
/// As [`abi::object`].
pub(crate) unsafe fn pd_arg<'a>(pd: *mut NDK_PD) -> Option<&'a Pd> {
    // SAFETY: forwarded.
    unsafe { abi::object::<Pd>(pd) }
}

/// `NdkCreatePd`: completes synchronously.
pub(crate) unsafe extern "win64" fn create_pd(
    adapter: *mut NDK_ADAPTER,
    _completion: NDK_FN_CREATE_COMPLETION,
    _context: *mut c_void,
    out: *mut *mut NDK_PD,
) -> NTSTATUS {
    // SAFETY: the consumer passes the adapter it opened.
    let Some(adapter) = (unsafe { adapter_arg(adapter) }) else {
        return STATUS_INVALID_HANDLE;
    };
    if out.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    match Pd::create(adapter) {
        Ok(pd) => {
            // SAFETY: non-null out-pointer of the consumer.
            unsafe { abi::write_out(out, abi::into_handle(pd)) };
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

unsafe extern "win64" fn close_pd(
    pd: *mut NDK_OBJECT_HEADER,
    completion: NDK_FN_CLOSE_COMPLETION,
    context: *mut c_void,
) -> NTSTATUS {
    // SAFETY: the consumer closes an object it owns, once.
    unsafe { abi::close::<Pd>(pd, completion, context) }
}

unsafe extern "win64" fn get_privileged_memory_region_token(pd: *mut NDK_PD, token: *mut u32) {
    // SAFETY: the consumer passes its open PD.
    let Some(pd) = (unsafe { pd_arg(pd) }) else {
        return;
    };
    // SAFETY: the consumer's out-pointer (null ignored).
    unsafe { abi::write_out(token, pd.privileged.0) };
}

/// The PD dispatch table.
pub static DISPATCH: NDK_PD_DISPATCH = NDK_PD_DISPATCH {
    NdkClosePd: Some(close_pd),
    NdkQueryExtension: Some(adapter::query_extension),
    NdkCreateMr: Some(crate::mr::create_mr),
    NdkCreateMw: Some(crate::mw::create_mw),
    NdkCreateSrq: Some(crate::srq::create_srq),
    NdkCreateQp: Some(crate::qp::create::create_qp),
    NdkCreateQpWithSrq: Some(crate::qp::create::create_qp_with_srq),
    NdkGetPrivilegedMemoryRegionToken: Some(get_privileged_memory_region_token),
};

//! Protection domains, memory regions, registered buffers and logical
//! address mappings.

use std::ptr;

use ndkpi::{
    FALSE, NDK_CQ, NDK_LOGICAL_ADDRESS, NDK_LOGICAL_ADDRESS_MAPPING, NDK_MR, NDK_MR_DISPATCH,
    NDK_OBJECT_HEADER, NDK_PD, NDK_PD_DISPATCH, NDK_QP, STATUS_BUFFER_TOO_SMALL, TRUE,
};

use super::signal::{Signal, create_done, request_done};
use super::{
    Adapter, Buffer, Cq, Mdl, OBJECT_TIMEOUT, Qp, QpLimits, check, close_object, dispatch_table,
    entry,
};
use crate::error::{Error, Result};

dispatch_table!(pd_table, NDK_PD, NDK_PD_DISPATCH);
dispatch_table!(mr_table, NDK_MR, NDK_MR_DISPATCH);

/// A protection domain.
#[derive(Debug)]
pub struct Pd {
    raw: *mut NDK_PD,
    /// Its adapter's [`Adapter::pfn_offset`].
    pfn_offset: u64,
}

// SAFETY: PD entry points may be called from any thread.
unsafe impl Send for Pd {}
// SAFETY: as above, concurrently too.
unsafe impl Sync for Pd {}

impl Pd {
    pub(super) fn from_raw(raw: *mut NDK_PD, pfn_offset: u64) -> Result<Self> {
        if raw.is_null() {
            return Err(Error::msg("NdkCreatePd returned no PD"));
        }
        Ok(Self { raw, pfn_offset })
    }

    /// `NdkCreateMr`, for `NdkRegisterMr` or (if `fast`) fast registration.
    pub fn create_mr(&self, fast: bool) -> Result<Mr> {
        let f = entry(pd_table(self.raw).NdkCreateMr, "NdkCreateMr")?;
        let signal = Signal::new();
        let context = signal.context();
        let mut mr: *mut NDK_MR = ptr::null_mut();
        // SAFETY: our PD, a `Signal` context and a valid out-pointer.
        let status = unsafe {
            f(
                self.raw,
                if fast { TRUE } else { FALSE },
                Some(create_done),
                context,
                &raw mut mr,
            )
        };
        let (status, object) = signal.settle(status, context, OBJECT_TIMEOUT, "NdkCreateMr")?;
        check("NdkCreateMr", status)?;
        let mr = if object == 0 {
            mr
        } else {
            object as *mut NDK_MR
        };
        if mr.is_null() {
            return Err(Error::msg("NdkCreateMr returned no MR"));
        }
        Ok(Mr { raw: mr })
    }

    /// `NdkCreateQp`.
    pub fn create_qp(
        &self,
        receive_cq: &Cq,
        initiator_cq: &Cq,
        context: usize,
        limits: QpLimits,
    ) -> Result<Qp> {
        let f = entry(pd_table(self.raw).NdkCreateQp, "NdkCreateQp")?;
        let signal = Signal::new();
        let ctx = signal.context();
        let mut qp: *mut NDK_QP = ptr::null_mut();
        let (rcq, icq): (*mut NDK_CQ, *mut NDK_CQ) = (receive_cq.raw(), initiator_cq.raw());
        // SAFETY: our PD and CQs, a `Signal` completion context, a valid
        // out-pointer; the QP context is an opaque number.
        let status = unsafe {
            f(
                self.raw,
                rcq,
                icq,
                context as *mut _,
                limits.receive_depth,
                limits.initiator_depth,
                limits.receive_sge,
                limits.initiator_sge,
                limits.inline_size,
                Some(create_done),
                ctx,
                &raw mut qp,
            )
        };
        let (status, object) = signal.settle(status, ctx, OBJECT_TIMEOUT, "NdkCreateQp")?;
        check("NdkCreateQp", status)?;
        let qp = if object == 0 {
            qp
        } else {
            object as *mut NDK_QP
        };
        Qp::from_raw(qp)
    }

    /// A buffer of `len` bytes registered with `NDK_MR_FLAG_*` `flags`.
    pub fn register(&self, len: usize, flags: u32) -> Result<Region> {
        let buf = Buffer::new(len)?;
        let mdl = Mdl::new(&buf, 0, buf.len(), self.pfn_offset)?;
        let mr = self.create_mr(false)?;
        mr.register(&mdl, buf.len(), flags)?;
        let local_token = mr.local_token()?;
        let remote_token = mr.remote_token()?;
        Ok(Region {
            _mr: mr,
            _mdl: mdl,
            buf,
            local_token,
            remote_token,
        })
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        close_object(
            pd_table(self.raw).NdkClosePd,
            self.raw.cast::<NDK_OBJECT_HEADER>(),
            "NdkClosePd",
        );
    }
}

/// A memory region.
#[derive(Debug)]
pub struct Mr {
    raw: *mut NDK_MR,
}

// SAFETY: MR entry points may be called from any thread.
unsafe impl Send for Mr {}
// SAFETY: token reads may run concurrently.
unsafe impl Sync for Mr {}

impl Mr {
    /// The raw object.
    pub fn raw(&self) -> *mut NDK_MR {
        self.raw
    }

    /// `NdkRegisterMr` of `len` bytes described by `mdl`, which (with its
    /// memory) must outlive the registration.
    pub fn register(&self, mdl: &Mdl, len: usize, flags: u32) -> Result<()> {
        let f = entry(mr_table(self.raw).NdkRegisterMr, "NdkRegisterMr")?;
        let signal = Signal::new();
        let context = signal.context();
        // SAFETY: our MR; the MDL chain describes `len` bytes of live
        // memory; a `Signal` context.
        let status = unsafe {
            f(
                self.raw,
                mdl.as_ptr(),
                len,
                flags,
                Some(request_done),
                context,
            )
        };
        let (status, _) = signal.settle(status, context, OBJECT_TIMEOUT, "NdkRegisterMr")?;
        check("NdkRegisterMr", status)
    }

    /// `NdkInitializeFastRegisterMr` for up to `pages` pages.
    pub fn init_fast_register(&self, pages: u32, remote: bool) -> Result<()> {
        let f = entry(
            mr_table(self.raw).NdkInitializeFastRegisterMr,
            "NdkInitializeFastRegisterMr",
        )?;
        let signal = Signal::new();
        let context = signal.context();
        // SAFETY: our MR and a `Signal` context.
        let status = unsafe {
            f(
                self.raw,
                pages,
                if remote { TRUE } else { FALSE },
                Some(request_done),
                context,
            )
        };
        let (status, _) = signal.settle(
            status,
            context,
            OBJECT_TIMEOUT,
            "NdkInitializeFastRegisterMr",
        )?;
        check("NdkInitializeFastRegisterMr", status)
    }

    /// `NdkGetLocalTokenFromMr`.
    pub fn local_token(&self) -> Result<u32> {
        let f = entry(
            mr_table(self.raw).NdkGetLocalTokenFromMr,
            "NdkGetLocalTokenFromMr",
        )?;
        // SAFETY: our MR.
        Ok(unsafe { f(self.raw) })
    }

    /// `NdkGetRemoteTokenFromMr`.
    pub fn remote_token(&self) -> Result<u32> {
        let f = entry(
            mr_table(self.raw).NdkGetRemoteTokenFromMr,
            "NdkGetRemoteTokenFromMr",
        )?;
        // SAFETY: our MR.
        Ok(unsafe { f(self.raw) })
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        close_object(
            mr_table(self.raw).NdkCloseMr,
            self.raw.cast::<NDK_OBJECT_HEADER>(),
            "NdkCloseMr",
        );
    }
}

/// A buffer registered with `NdkRegisterMr`. Field order is drop order:
/// the MR closes before its MDL and memory go.
#[derive(Debug)]
pub struct Region {
    _mr: Mr,
    _mdl: Mdl,
    /// The memory.
    pub buf: Buffer,
    /// Token for local SGEs.
    pub local_token: u32,
    /// Token the peer uses for RDMA.
    pub remote_token: u32,
}

impl Region {
    /// Address of byte `offset`.
    pub fn addr(&self, offset: usize) -> u64 {
        self.buf.addr() + offset as u64
    }
}

// A mapping is {AdapterContext: 8 bytes, AdapterPageCount: u32 +
// padding}, then the page array: `Lam` reads it as the u64 words it is.
const _: () = assert!(
    std::mem::offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount) == 8
        && std::mem::offset_of!(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) == 16
);

/// A logical address mapping of a buffer (`NdkBuildLAM`): the adapter
/// page addresses that `NdkFastRegister` takes. Released on drop.
#[derive(Debug)]
pub struct Lam {
    adapter: *mut ndkpi::NDK_ADAPTER,
    release: ndkpi::NDK_FN_RELEASE_LAM,
    storage: Vec<u64>,
    pages: usize,
    /// Offset of the first byte in the first page.
    pub fbo: u32,
}

// SAFETY: the mapping is plain memory owned here; the adapter outlives it
// (its owner drops it first).
unsafe impl Send for Lam {}

impl Lam {
    /// `NdkBuildLAM` for `len` bytes at `offset` of `buffer`.
    pub fn build(adapter: &Adapter, buffer: &Buffer, offset: usize, len: usize) -> Result<Self> {
        let table = adapter.dispatch();
        let build = entry(table.NdkBuildLAM, "NdkBuildLAM")?;
        let mdl = Mdl::new(buffer, offset, len, adapter.pfn_offset())?;
        let pages = (offset % ndkpi::PAGE_SIZE + len).div_ceil(ndkpi::PAGE_SIZE) + 1;
        let bytes = NDK_LOGICAL_ADDRESS_MAPPING::size_for(pages as u32);
        // u64 storage keeps the mapping 8-byte aligned.
        let mut storage = vec![0u64; bytes.div_ceil(8)];
        let mut size = bytes as u32;
        let mut fbo = 0u32;
        let signal = Signal::new();
        let context = signal.context();
        // SAFETY: our adapter; the MDL describes live memory; the mapping
        // buffer holds `size` bytes; valid out-pointers; a `Signal` context.
        let status = unsafe {
            build(
                adapter.raw(),
                mdl.as_ptr(),
                len,
                Some(request_done),
                context,
                storage.as_mut_ptr().cast(),
                &raw mut size,
                &raw mut fbo,
            )
        };
        let (status, _) = signal.settle(status, context, OBJECT_TIMEOUT, "NdkBuildLAM")?;
        if status == STATUS_BUFFER_TOO_SMALL {
            return Err(Error::ndk("NdkBuildLAM", status).context(format!(
                "the mapping needs {size} bytes, {bytes} were offered"
            )));
        }
        check("NdkBuildLAM", status)?;
        // The header's page count is the low half of word 1 (see below).
        let count = (storage[1] & u64::from(u32::MAX)) as usize;
        if count > pages {
            return Err(Error::msg(format!(
                "NdkBuildLAM reported {count} pages for a {pages}-page buffer"
            )));
        }
        Ok(Self {
            adapter: adapter.raw(),
            release: table.NdkReleaseLAM,
            storage,
            pages: count,
            fbo,
        })
    }

    /// The adapter page addresses.
    pub fn pages(&self) -> Vec<NDK_LOGICAL_ADDRESS> {
        self.storage[2..2 + self.pages]
            .iter()
            .map(|&w| w as NDK_LOGICAL_ADDRESS)
            .collect()
    }
}

impl Drop for Lam {
    fn drop(&mut self) {
        if let Some(f) = self.release {
            // SAFETY: a mapping built on this adapter, released once, after
            // every WR that used it completed (its owner's rule).
            unsafe { f(self.adapter, self.storage.as_mut_ptr().cast()) };
        }
    }
}

//! Queue pairs and their work requests.

use std::ffi::c_void;

use ndkpi::{
    NDK_LOGICAL_ADDRESS, NDK_OBJECT_HEADER, NDK_QP, NDK_QP_DISPATCH, NDK_SGE, STATUS_SUCCESS,
};

use super::{Mr, close_object, dispatch_table, entry};
use crate::error::{Error, Result};

dispatch_table!(table, NDK_QP, NDK_QP_DISPATCH);

/// The sizes a QP is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpLimits {
    /// Receive queue depth.
    pub receive_depth: u32,
    /// Send (initiator) queue depth.
    pub initiator_depth: u32,
    /// SGEs per receive.
    pub receive_sge: u32,
    /// SGEs per send, read or write.
    pub initiator_sge: u32,
    /// Inline bytes per send.
    pub inline_size: u32,
}

/// A queue pair. Posts take `&self`: NDK allows the send and receive
/// queues of one QP to be posted concurrently, and the tool posts each
/// queue from one thread only.
#[derive(Debug)]
pub struct Qp {
    raw: *mut NDK_QP,
}

// SAFETY: QP entry points may be called from any thread.
unsafe impl Send for Qp {}
// SAFETY: the tool posts each queue of a QP from a single thread (the NDK
// rule), and the two queues may be posted concurrently.
unsafe impl Sync for Qp {}

fn posted(function: &str, status: i32) -> Result<()> {
    if status == STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::ndk(function, status))
    }
}

fn sge_count(sges: &[NDK_SGE]) -> u32 {
    u32::try_from(sges.len()).unwrap_or(u32::MAX)
}

fn ctx(request: u64) -> *mut c_void {
    request as usize as *mut c_void
}

impl Qp {
    pub(super) fn from_raw(raw: *mut NDK_QP) -> Result<Self> {
        if raw.is_null() {
            return Err(Error::msg("NdkCreateQp returned no QP"));
        }
        Ok(Self { raw })
    }

    /// The raw object.
    pub fn raw(&self) -> *mut NDK_QP {
        self.raw
    }

    /// `NdkReceive`.
    pub fn receive(&self, request: u64, sges: &[NDK_SGE]) -> Result<()> {
        let f = entry(table(self.raw).NdkReceive, "NdkReceive")?;
        // SAFETY: our QP; the SGE array is read during the call only; the
        // buffers it names are registered memory that outlives the QP.
        let status = unsafe { f(self.raw, ctx(request), sges.as_ptr(), sge_count(sges)) };
        posted("NdkReceive", status)
    }

    /// `NdkSend`.
    pub fn send(&self, request: u64, sges: &[NDK_SGE], flags: u32) -> Result<()> {
        let f = entry(table(self.raw).NdkSend, "NdkSend")?;
        // SAFETY: as for `receive`.
        let status = unsafe {
            f(
                self.raw,
                ctx(request),
                sges.as_ptr(),
                sge_count(sges),
                flags,
            )
        };
        posted("NdkSend", status)
    }

    /// `NdkSendAndInvalidate`: a send that invalidates the peer's
    /// `remote_token`.
    pub fn send_and_invalidate(
        &self,
        request: u64,
        sges: &[NDK_SGE],
        flags: u32,
        remote_token: u32,
    ) -> Result<()> {
        let f = entry(table(self.raw).NdkSendAndInvalidate, "NdkSendAndInvalidate")?;
        // SAFETY: as for `receive`.
        let status = unsafe {
            f(
                self.raw,
                ctx(request),
                sges.as_ptr(),
                sge_count(sges),
                flags,
                remote_token,
            )
        };
        posted("NdkSendAndInvalidate", status)
    }

    /// `NdkRead` from the peer's `remote_address` / `remote_token`.
    pub fn read(
        &self,
        request: u64,
        sges: &[NDK_SGE],
        remote_address: u64,
        remote_token: u32,
        flags: u32,
    ) -> Result<()> {
        let f = entry(table(self.raw).NdkRead, "NdkRead")?;
        // SAFETY: as for `receive`.
        let status = unsafe {
            f(
                self.raw,
                ctx(request),
                sges.as_ptr(),
                sge_count(sges),
                remote_address,
                remote_token,
                flags,
            )
        };
        posted("NdkRead", status)
    }

    /// `NdkWrite` to the peer's `remote_address` / `remote_token`.
    pub fn write(
        &self,
        request: u64,
        sges: &[NDK_SGE],
        remote_address: u64,
        remote_token: u32,
        flags: u32,
    ) -> Result<()> {
        let f = entry(table(self.raw).NdkWrite, "NdkWrite")?;
        // SAFETY: as for `receive`.
        let status = unsafe {
            f(
                self.raw,
                ctx(request),
                sges.as_ptr(),
                sge_count(sges),
                remote_address,
                remote_token,
                flags,
            )
        };
        posted("NdkWrite", status)
    }

    /// `NdkFastRegister`: maps `pages` (adapter logical addresses of
    /// page-aligned pages) into `mr`, `length` bytes from `fbo` in the
    /// first page, addressed from `base`.
    pub fn fast_register(
        &self,
        request: u64,
        mr: &Mr,
        pages: &[NDK_LOGICAL_ADDRESS],
        fbo: u32,
        length: usize,
        base: u64,
        flags: u32,
    ) -> Result<()> {
        let f = entry(table(self.raw).NdkFastRegister, "NdkFastRegister")?;
        let count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
        // SAFETY: our QP and MR; the page array is read during the call;
        // the pages are a live buffer that outlives the registration.
        let status = unsafe {
            f(
                self.raw,
                ctx(request),
                mr.raw(),
                count,
                pages.as_ptr(),
                fbo,
                length,
                base as usize as *mut c_void,
                flags,
            )
        };
        posted("NdkFastRegister", status)
    }

    /// `NdkInvalidate` of a fast-registered MR.
    pub fn invalidate(&self, request: u64, mr: &Mr, flags: u32) -> Result<()> {
        let f = entry(table(self.raw).NdkInvalidate, "NdkInvalidate")?;
        // SAFETY: our QP and MR.
        let status = unsafe {
            f(
                self.raw,
                ctx(request),
                mr.raw().cast::<NDK_OBJECT_HEADER>(),
                flags,
            )
        };
        posted("NdkInvalidate", status)
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        close_object(
            table(self.raw).NdkCloseQp,
            self.raw.cast::<NDK_OBJECT_HEADER>(),
            "NdkCloseQp",
        );
    }
}

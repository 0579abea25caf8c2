//! Client memory for SMB2 READ/WRITE over the SMB Direct RDMA channel:
//! one buffer with its page mapping and a fast-register MR. Each I/O
//! registers it afresh (a new token: [MS-SMBD] 3.1.4.3 / the NDK
//! FastRegister, deferred so the SMB2 request's send rings it), and the
//! server's Send-with-Invalidate of that token (RDMA_V1_INVALIDATE)
//! ends the registration, which [`RdmaBuffer::invalidated`] checks.

use ndkpi::{
    NDK_LOGICAL_ADDRESS, NDK_OP_FLAG_ALLOW_LOCAL_WRITE, NDK_OP_FLAG_ALLOW_REMOTE_READ,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE, NDK_OP_FLAG_DEFER, NDK_OP_FLAG_SILENT_SUCCESS, PAGE_SIZE,
};

use crate::error::{Error, Result};
use crate::link::tag;
use crate::ndk::{Adapter, Buffer, Lam, Mr, Pd, Qp};
use crate::smbd::proto::BufferDescriptor;

/// A registered I/O buffer. Field order is drop order: the MR and the
/// mapping go before the memory they describe. Never drop one between
/// [`RdmaBuffer::register`] and the send that carries its descriptor: the
/// registration is deferred, and a later send would ring a FastRegister
/// of freed pages (it completes with STATUS_ACCESS_VIOLATION and the
/// connection fails).
#[derive(Debug)]
pub struct RdmaBuffer {
    mr: Mr,
    lam: Lam,
    pages: Vec<NDK_LOGICAL_ADDRESS>,
    buf: Buffer,
    len: usize,
    /// The token of the live registration, if any.
    live: Option<u32>,
}

impl RdmaBuffer {
    /// `len` bytes, reachable through one descriptor: at most the
    /// adapter's FRMRPageCount pages.
    pub fn new(adapter: &Adapter, pd: &Pd, len: usize) -> Result<Self> {
        let frmr_pages = adapter.info().FRMRPageCount as usize;
        let pages = len.div_ceil(PAGE_SIZE);
        if len == 0 || pages > frmr_pages {
            return Err(Error::msg(format!(
                "an RDMA buffer of {len} bytes needs {pages} pages; one fast registration maps 1..={frmr_pages}"
            )));
        }
        let buf = Buffer::new(len)?;
        let lam = Lam::build(adapter, &buf, 0, len)?;
        let mr = pd.create_mr(true)?;
        mr.init_fast_register(pages as u32, true)?;
        Ok(Self {
            pages: lam.pages(),
            mr,
            lam,
            buf,
            len,
            live: None,
        })
    }

    /// Fast-registers the buffer for the server's RDMA READ (an SMB2
    /// WRITE) or RDMA WRITE (`remote_write`, an SMB2 READ), deferred and
    /// unsignalled: the next send on `qp` carries it. Returns the
    /// descriptor for the request.
    pub fn register(
        &mut self,
        qp: &Qp,
        remote_write: bool,
        request: u64,
    ) -> Result<BufferDescriptor> {
        if let Some(token) = self.live {
            return Err(Error::msg(format!(
                "RDMA buffer still registered (token {token:#x}): the server never invalidated it"
            )));
        }
        let access = if remote_write {
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_LOCAL_WRITE
        } else {
            NDK_OP_FLAG_ALLOW_REMOTE_READ
        };
        let base = self.buf.addr();
        qp.fast_register(
            tag::FR | request,
            &self.mr,
            &self.pages,
            self.lam.fbo,
            self.len,
            base,
            access | NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS,
        )?;
        let token = self.mr.remote_token()?;
        self.live = Some(token);
        Ok(BufferDescriptor {
            offset: base,
            token,
            length: self.len as u32,
        })
    }

    /// The response arrived; `invalidated` is the token its receive
    /// invalidated (ReceiveAndInvalidate), which must be ours.
    pub fn invalidated(&mut self, invalidated: Option<u32>) -> Result<()> {
        if invalidated.is_none() || invalidated != self.live {
            return Err(Error::msg(format!(
                "SMB2 RDMA_V1_INVALIDATE: the response invalidated {invalidated:x?}, the I/O registered {:x?}",
                self.live
            )));
        }
        self.live = None;
        Ok(())
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.buf.bytes(0, self.len)
    }

    /// The bytes, to fill before a WRITE.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.buf.bytes_mut(0, self.len)
    }
}

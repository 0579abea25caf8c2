//! Client memory for SMB2 READ/WRITE over the SMB Direct RDMA channel:
//! one buffer with its page mapping, cut into segments of at most one
//! fast registration each (the adapter's FRMRPageCount pages), one MR
//! per segment. Each I/O registers every segment afresh (new tokens:
//! [MS-SMBD] 3.1.4.3 / the NDK FastRegister, deferred so the SMB2
//! request's send rings them) and describes them with one
//! SMB_DIRECT_BUFFER_DESCRIPTOR_V1 each, in buffer order.
//!
//! With SMB2_CHANNEL_RDMA_V1_INVALIDATE the server invalidates ONE token
//! with its response's Send-with-Invalidate: the first descriptor's.
//! ksmbd (Linux 6.1.192, fs/smb/server/smb2pdu.c:6451-6454,
//! smb2_set_remote_key_for_rdma) sets `work->remote_key =
//! le32_to_cpu(desc->token)` of `desc[0]` only. The client invalidates
//! the other segments itself ([`RdmaBuffer::invalidated`] posts one
//! signalled NdkInvalidate each) and reuses the buffer only once every
//! one of those completed ([`RdmaBuffer::locally_invalidated`]).
//!
//! ksmbd 6.1.192 takes several descriptors: `smb_direct_rdma_xmit`
//! (fs/smb/server/transport_rdma.c:1346-1477) walks them in order, cuts
//! its own buffer into pieces of each descriptor's length (a zero length
//! is EINVAL, :1375; a descriptor longer than what is left is shortened,
//! :1378-1381), builds one rdma_rw context per descriptor and posts them
//! all in one chain (:1456). The whole I/O must fit
//! `max_rdma_rw_size` (8 MiB, :1364), and it waits for RDMA read/write
//! credits: one per 256 pages of each descriptor's piece (:1004-1008;
//! 256 = min(the device's max_fast_reg_page_list_len, 256), :1693-1697),
//! 9 per connection (ceil(8 MiB / 255 pages), :1724-1728). Its RDMA
//! channel READ/WRITE size check is that 8 MiB (smb2pdu.c:6523/6780),
//! not the NEGOTIATE MaxReadSize/MaxWriteSize of 4 MiB it grants
//! (smb2pdu.c:1245-1246, SMB3_DEFAULT_IOSIZE); the client keeps to both.
//! Older ksmbd (the 2022 "validate buffer descriptor structures" change,
//! before multiple descriptors were handled) refused any count but one
//! with EINVAL: against such a server keep `--size` within one fast
//! registration.

use ndkpi::{
    NDK_LOGICAL_ADDRESS, NDK_OP_FLAG_ALLOW_LOCAL_WRITE, NDK_OP_FLAG_ALLOW_REMOTE_READ,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE, NDK_OP_FLAG_DEFER, NDK_OP_FLAG_SILENT_SUCCESS, PAGE_SIZE,
};

use crate::error::{Error, Result};
use crate::link::tag;
use crate::ndk::{Adapter, Buffer, Lam, Mr, Pd, Qp};
use crate::smbd::proto::BufferDescriptor;

/// Bits of a local invalidation's request context below the buffer
/// number: the segment (an I/O has far fewer than 2^16).
const SEGMENT_BITS: u32 = 16;

/// The request context of the local invalidation of `segment` of buffer
/// `buffer` (an [`tag::INV`] context).
pub fn invalidate_context(buffer: usize, segment: usize) -> u64 {
    tag::INV | ((buffer as u64) << SEGMENT_BITS) | segment as u64
}

/// The (buffer, segment) of a local invalidation's context.
pub fn invalidate_target(context: u64) -> (usize, usize) {
    let index = tag::index(context);
    (index >> SEGMENT_BITS, index & ((1 << SEGMENT_BITS) - 1))
}

/// One fast registration's share of the buffer.
#[derive(Debug)]
struct Segment {
    mr: Mr,
    /// Pages of the buffer's mapping this segment maps.
    first_page: usize,
    pages: usize,
    /// Offset of its first byte in the buffer.
    at: usize,
    len: usize,
    /// The token of the live registration, if any.
    live: Option<u32>,
    /// A local invalidation was posted and has not completed.
    invalidating: bool,
}

/// A registered I/O buffer. Field order is drop order: the MRs and the
/// mapping go before the memory they describe. Never drop one between
/// [`RdmaBuffer::register`] and the send that carries its descriptors:
/// the registrations are deferred, and a later send would ring a
/// FastRegister of freed pages (it completes with
/// STATUS_ACCESS_VIOLATION and the connection fails).
#[derive(Debug)]
pub struct RdmaBuffer {
    segments: Vec<Segment>,
    lam: Lam,
    pages: Vec<NDK_LOGICAL_ADDRESS>,
    buf: Buffer,
    len: usize,
}

impl RdmaBuffer {
    /// `len` bytes in as many segments of the adapter's FRMRPageCount
    /// pages as it takes.
    #[cfg(test)]
    pub fn new(adapter: &Adapter, pd: &Pd, len: usize) -> Result<Self> {
        Self::with_segment_pages(adapter, pd, len, adapter.info().FRMRPageCount as usize)
    }

    /// `len` bytes in segments of at most `segment_pages` pages (at most
    /// the adapter's FRMRPageCount).
    pub fn with_segment_pages(
        adapter: &Adapter,
        pd: &Pd,
        len: usize,
        segment_pages: usize,
    ) -> Result<Self> {
        let frmr_pages = adapter.info().FRMRPageCount as usize;
        if len == 0 || segment_pages == 0 || segment_pages > frmr_pages {
            return Err(Error::msg(format!(
                "an RDMA buffer of {len} bytes in segments of {segment_pages} pages: one fast registration maps 1..={frmr_pages} pages, and the buffer needs a byte"
            )));
        }
        let buf = Buffer::new(len)?;
        let lam = Lam::build(adapter, &buf, 0, len)?;
        let pages = lam.pages();
        let fbo = lam.fbo as usize;
        let mut segments = Vec::with_capacity(pages.len().div_ceil(segment_pages));
        let mut first_page = 0;
        let mut at = 0;
        while at < len {
            let n = segment_pages.min(pages.len() - first_page);
            // The first segment starts `fbo` into its first page (0: the
            // buffer is page aligned); the others start on a page.
            let start_in_page = if first_page == 0 { fbo } else { 0 };
            let seg_len = (n * PAGE_SIZE - start_in_page).min(len - at);
            if n == 0 || seg_len == 0 {
                return Err(Error::msg(format!(
                    "NdkBuildLAM mapped {} pages for {len} bytes: too few",
                    pages.len()
                )));
            }
            let mr = pd.create_mr(true)?;
            mr.init_fast_register(n as u32, true)?;
            segments.push(Segment {
                mr,
                first_page,
                pages: n,
                at,
                len: seg_len,
                live: None,
                invalidating: false,
            });
            first_page += n;
            at += seg_len;
        }
        Ok(Self {
            segments,
            lam,
            pages,
            buf,
            len,
        })
    }

    /// Descriptors (fast registrations) per I/O.
    pub fn segments(&self) -> usize {
        self.segments.len()
    }

    /// Every registration ended (remotely or locally, completed): the
    /// buffer may be registered again.
    pub fn is_free(&self) -> bool {
        self.segments
            .iter()
            .all(|s| s.live.is_none() && !s.invalidating)
    }

    /// Fast-registers every segment for the server's RDMA READ (an SMB2
    /// WRITE) or RDMA WRITE (`remote_write`, an SMB2 READ), deferred and
    /// unsignalled: the next send on `qp` carries them. Returns one
    /// descriptor per segment, in buffer order.
    pub fn register(
        &mut self,
        qp: &Qp,
        remote_write: bool,
        request: u64,
    ) -> Result<Vec<BufferDescriptor>> {
        if let Some(s) = self.segments.iter().find(|s| s.live.is_some()) {
            return Err(Error::msg(format!(
                "RDMA buffer still registered (token {:#x}): neither the server nor we invalidated it",
                s.live.unwrap_or_default()
            )));
        }
        if self.segments.iter().any(|s| s.invalidating) {
            return Err(Error::msg(
                "RDMA buffer registered again before its local invalidations completed",
            ));
        }
        let access = if remote_write {
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_LOCAL_WRITE
        } else {
            NDK_OP_FLAG_ALLOW_REMOTE_READ
        };
        let base = self.buf.addr();
        let mut descriptors = Vec::with_capacity(self.segments.len());
        for s in &mut self.segments {
            let fbo = if s.first_page == 0 { self.lam.fbo } else { 0 };
            let offset = base + s.at as u64;
            qp.fast_register(
                tag::FR | request,
                &s.mr,
                &self.pages[s.first_page..s.first_page + s.pages],
                fbo,
                s.len,
                offset,
                access | NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS,
            )?;
            let token = s.mr.remote_token()?;
            s.live = Some(token);
            descriptors.push(BufferDescriptor {
                offset,
                token,
                length: s.len as u32,
            });
        }
        Ok(descriptors)
    }

    /// The response arrived; `invalidated` is the token its receive
    /// invalidated (ReceiveAndInvalidate), which must be the first
    /// descriptor's. Posts a signalled NdkInvalidate on `qp` for every
    /// other segment (contexts from [`invalidate_context`] with
    /// `buffer`) and returns how many: each must complete, reported to
    /// [`RdmaBuffer::locally_invalidated`], before the buffer is free.
    pub fn invalidated(
        &mut self,
        qp: &Qp,
        buffer: usize,
        invalidated: Option<u32>,
    ) -> Result<usize> {
        let first = self.segments.first().and_then(|s| s.live);
        if invalidated.is_none() || invalidated != first {
            return Err(Error::msg(format!(
                "SMB2 RDMA_V1_INVALIDATE: the response invalidated {invalidated:x?}, the I/O's first descriptor has token {first:x?} (registered: {:x?})",
                self.segments.iter().map(|s| s.live).collect::<Vec<_>>()
            )));
        }
        let mut posted = 0;
        for (i, s) in self.segments.iter_mut().enumerate() {
            let Some(token) = s.live.take() else {
                continue;
            };
            if i == 0 {
                continue;
            }
            qp.invalidate(invalidate_context(buffer, i), &s.mr, 0)
                .map_err(|e| e.context(format!("local invalidation of token {token:#x}")))?;
            s.invalidating = true;
            posted += 1;
        }
        Ok(posted)
    }

    /// The local invalidation of `segment` completed (successfully: the
    /// caller checked its status). Returns whether the buffer is free.
    pub fn locally_invalidated(&mut self, segment: usize) -> Result<bool> {
        match self.segments.get_mut(segment) {
            Some(s) if s.invalidating => {
                s.invalidating = false;
                Ok(self.is_free())
            }
            _ => Err(Error::msg(format!(
                "a local invalidation completed for segment {segment}, which none was posted for"
            ))),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalidate_contexts_round_trip() {
        for (b, s) in [(0, 1), (7, 3), (1000, 65_535)] {
            let c = invalidate_context(b, s);
            assert_eq!(tag::kind(c), tag::INV);
            assert_eq!(invalidate_target(c), (b, s));
        }
    }
}

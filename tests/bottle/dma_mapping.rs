//! Issue 23, item 5: no mapping call on the per-packet path. The driver
//! used to map and unmap the consumer's pages (`MmMapLockedPagesSpecifyCache`
//! / `MmUnmapLockedPages`) around every copy at `DISPATCH_LEVEL`, which
//! Driver Verifier's low-resources simulation fails mid-transfer and which
//! costs a TLB-flush IPI per unmap. Registered memory (an MR, a LAM) is
//! now mapped when it is registered and unmapped when it is released;
//! the copies only look it up.

use std::ptr;

use kbottle::mm;
use ndkpi::*;
use testkit::adapter::*;

use crate::common::{child_passes, is_child};
use crate::defects::{Buffer, Pair, boot, complete, unload_clean};

/// A LAM the test keeps: its buffer (header and page array) and the MDL
/// it was built from.
struct Lam {
    words: Vec<u64>,
    _mdl: mm::OwnedMdl,
    fbo: u32,
}

impl Lam {
    /// `NdkBuildLAM` over `len` bytes of `buffer` on `adapter`.
    fn build(adapter: *mut NDK_ADAPTER, buffer: &Buffer, len: usize) -> Self {
        let mdl = mm::OwnedMdl::describe(buffer.va as *mut u8, len);
        let pages = len.div_ceil(4096) + 1;
        let mut words = vec![0u64; NDK_LOGICAL_ADDRESS_MAPPING::size_for(pages as u32) / 8 + 1];
        let mut size = (words.len() * 8) as u32;
        let mut fbo = 0u32;
        let f = adapter_table(adapter).NdkBuildLAM.unwrap();
        // SAFETY: an open adapter of the bottled provider, an MDL over the
        // leaked buffer, a LAM buffer of `size` bytes, NULL completion.
        let status = unsafe {
            f(
                adapter,
                mdl.as_ptr(),
                len,
                None,
                ptr::null_mut(),
                words.as_mut_ptr().cast(),
                &raw mut size,
                &raw mut fbo,
            )
        };
        assert_eq!(status, STATUS_SUCCESS, "NdkBuildLAM");
        Self {
            words,
            _mdl: mdl,
            fbo,
        }
    }

    /// The logical addresses of its pages.
    fn pages(&self) -> &[u64] {
        let count = self.words[1] as u32 as usize;
        &self.words[2..2 + count]
    }

    /// A local SGE over `len` bytes from the start, under the privileged
    /// `token`. The pages must be consecutive logical addresses (they are
    /// in the bottle, whose buffers are one physical run).
    fn sge(&self, len: usize, token: u32) -> NDK_SGE {
        let pages = self.pages();
        assert!(
            pages.windows(2).all(|w| w[1] == w[0] + 4096),
            "the LAM's pages are one run: {pages:x?}"
        );
        sge(pages[0] + u64::from(self.fbo), len as u32, token)
    }

    /// `NdkReleaseLAM`.
    fn release(mut self, adapter: *mut NDK_ADAPTER) {
        let f = adapter_table(adapter).NdkReleaseLAM.unwrap();
        // SAFETY: a LAM built on this adapter, released once.
        unsafe { f(adapter, self.words.as_mut_ptr().cast()) };
    }
}

/// RDMA WRITEs and READs of 1 MiB between a LAM (privileged token) on one
/// side and an MR on the other make no `MmMapLockedPagesSpecifyCache`
/// call: registering maps, transferring only copies. Before the fix every
/// copy mapped (hundreds of calls for these transfers).
#[test]
fn transfers_through_registrations_make_no_mapping_call() {
    const LEN: usize = 1 << 20;
    const ROUNDS: usize = 3;
    if !is_child() {
        child_passes("dma_mapping::transfers_through_registrations_make_no_mapping_call");
        return;
    }
    let machine = boot();
    let pair = Pair::new(&machine, None, 8, LEN);
    let source = Buffer::new(LEN, 0);
    let pattern: Vec<u8> = (0..LEN).map(|i| (i * 13 + i / 4096) as u8).collect();
    // SAFETY: the leaked source buffer, no request in flight on it.
    unsafe { ptr::copy_nonoverlapping(pattern.as_ptr(), source.va as *mut u8, LEN) };
    let sink = Buffer::new(LEN, 0);
    let source_lam = Lam::build(pair.a.adapter, &source, LEN);
    let sink_lam = Lam::build(pair.a.adapter, &sink, LEN);

    let before = mm::map_calls();
    for round in 0..ROUNDS {
        let id = 2 * round + 1;
        let sges = [source_lam.sge(LEN, pair.qa.token)];
        let status = write(
            pair.qa.qp,
            id,
            &sges,
            pair.region.va as u64,
            pair.region_token,
            0,
        );
        assert_eq!(status, STATUS_SUCCESS, "NdkWrite");
        assert_eq!(complete(pair.qa.cq, 1), vec![id]);
        let sges = [sink_lam.sge(LEN, pair.qa.token)];
        let status = read(
            pair.qa.qp,
            id + 1,
            &sges,
            pair.region.va as u64,
            pair.region_token,
            0,
        );
        assert_eq!(status, STATUS_SUCCESS, "NdkRead");
        assert_eq!(complete(pair.qa.cq, 1), vec![id + 1]);
    }
    let during = mm::map_calls() - before;
    assert!(pair.region.bytes() == pattern, "the WRITEs landed");
    assert!(sink.bytes() == pattern, "the READs brought them back");
    assert_eq!(
        during, 0,
        "{ROUNDS} x (1 MiB RDMA WRITE + READ) between a LAM and an MR made {during} MmMapLockedPagesSpecifyCache calls"
    );

    source_lam.release(pair.a.adapter);
    sink_lam.release(pair.a.adapter);
    pair.close_and_halt(&machine);
    unload_clean(machine);
}

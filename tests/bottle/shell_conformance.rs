//! What the review of the Windows shell against the WDK documentation and
//! the MUX sample asked of V besides its teardown (issue 23, item 5), each
//! checked on the real `rsndk.sys` in the bottle and each failing on the
//! image without its fix.
//!
//! Tests that boot their own machine run in a child process.

use kbottle::mm;
use ndkpi::*;

use crate::common::{child_passes, is_child};
use crate::defects::{Buffer, Pair, boot, complete, unload_clean};
use crate::ndk::close_wait;
use testkit::adapter::*;

/// Pages an unaligned 1 MiB buffer spans: SMB Direct registers its I/O
/// buffers, which need not start on a page, with one fast registration.
const UNALIGNED_MIB_PAGES: u32 = 257;

/// The `NDK_ADAPTER_INFO` an open NDK adapter reports.
fn adapter_info(adapter: *mut NDK_ADAPTER) -> NDK_ADAPTER_INFO {
    let mut info = NDK_ADAPTER_INFO::default();
    let mut size = size_of::<NDK_ADAPTER_INFO>() as u32;
    let f = adapter_table(adapter).NdkQueryAdapterInfo.unwrap();
    // SAFETY: an open adapter of the bottled provider; a full-size buffer.
    let status = unsafe { f(adapter, &raw mut info, &raw mut size) };
    assert_eq!(status, STATUS_SUCCESS, "NdkQueryAdapterInfo");
    info
}

/// V reports `FRMRPageCount` 512 (in its NDK attributes and to an open
/// adapter), and a 1 MiB buffer that starts 0x100 bytes into a page (257
/// pages) takes one fast registration, through which an RDMA WRITE of the
/// whole MiB lands. Failed before the fix: 256 pages, and
/// `NdkInitializeFastRegisterMr` for 257 answered
/// `STATUS_IMPLEMENTATION_LIMIT`.
#[test]
fn an_unaligned_mebibyte_takes_one_fast_registration() {
    const LEN: usize = 1 << 20;
    const OFFSET: usize = 0x100;
    if !is_child() {
        child_passes("shell_conformance::an_unaligned_mebibyte_takes_one_fast_registration");
        return;
    }
    let machine = boot();
    let pair = Pair::new(&machine, None, 8, 4096);
    let attributes = machine.ndk_attributes(pair.ids[1]).expect("NDK attributes");
    assert_eq!(attributes.info.FRMRPageCount, 512, "NDK attributes");
    assert_eq!(
        adapter_info(pair.b.adapter).FRMRPageCount,
        512,
        "NdkQueryAdapterInfo"
    );

    // The sink on the second adapter: LEN bytes from OFFSET into a page.
    let sink = Buffer::new(LEN + 3 * 4096, 0);
    let start = sink.va.next_multiple_of(4096) + OFFSET;
    let pages: Vec<NDK_LOGICAL_ADDRESS> = (0..UNALIGNED_MIB_PAGES as usize)
        .map(|k| mm::phys_of(start - OFFSET + k * 4096) as NDK_LOGICAL_ADDRESS)
        .collect();
    let fr = create_mr(pair.qb.pd, true);
    assert_eq!(
        init_fast_register(fr, UNALIGNED_MIB_PAGES, true),
        STATUS_SUCCESS,
        "NdkInitializeFastRegisterMr for {UNALIGNED_MIB_PAGES} pages"
    );
    assert_eq!(
        fast_register(
            pair.qb.qp,
            7,
            fr,
            &pages,
            OFFSET as u32,
            LEN,
            start as u64,
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
        ),
        STATUS_SUCCESS,
        "NdkFastRegister"
    );
    assert_eq!(complete(pair.qb.cq, 1), vec![7]);
    let token = mr_tokens(fr).1;

    let pattern: Vec<u8> = (0..LEN).map(|i| (i * 13 + i / 4096) as u8).collect();
    let source = Buffer::new(LEN, 0);
    // SAFETY: the leaked source buffer, no request in flight on it.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), source.va as *mut u8, LEN) };
    let sges = [source.local(0, LEN, pair.qa.token)];
    assert_eq!(
        write(pair.qa.qp, 8, &sges, start as u64, token, 0),
        STATUS_SUCCESS,
        "NdkWrite"
    );
    assert_eq!(complete(pair.qa.cq, 1), vec![8]);
    let at = start - sink.va;
    assert!(
        sink.bytes()[at..at + LEN] == pattern[..],
        "the WRITE landed through the fast registration"
    );
    close_wait(fr);
    assert!(kbottle::verifier::bugchecks().is_empty());
    pair.close_and_halt(&machine);
    unload_clean(machine);
}

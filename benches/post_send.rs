//! The cost of one `NdkSend` as a kernel consumer pays it: the call through
//! the QP dispatch table, flag and SGE validation, the WQE write into the
//! send ring, the producer-index publish and the doorbell. One 64-byte SGE,
//! no device work: the device is the scripted test device, whose doorbell
//! only counts, and completions are drained outside the timed region.
//!
//! `floor/copy64_atomic_store` is what any such post costs at least: a
//! 64-byte copy into a slot plus one release store, measured the same way.
//!
//! The platform is the checked `HostPlatform` (per-thread IRQL, lock-order
//! tracking), on purpose: it is the only Linux platform, and the one every
//! host adapter runs on (`RsNdkOpenAdapter`, ndkperf), so this is what a
//! post costs there. Its bookkeeping is part of the figure: the SQ spin
//! lock reports raise, acquire, release and lower to it (a thread's only
//! lock at DISPATCH_LEVEL is recorded on a short path; nesting takes the
//! full checks). The driver's kernel platform does only the IRQL raise and
//! lower in release builds. One locked read-modify-write instruction is
//! inherent: the SQ lock's test-and-set (the scripted doorbell counts with
//! a plain store).
//!
//! Run: `cargo bench --bench post_send`

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_main};
use hwq::CqeStatus;
use ndkpi::{NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NDK_SGE, STATUS_SUCCESS};
use testkit::adapter::{Env, mr_tokens, qp_table, registered_mr, results, sge};

/// Posts per timed batch: below the CQ depth of the test setup (64), so the
/// batch's completions always fit before they are drained.
const BATCH: u64 = 32;

fn post_send(c: &mut Criterion) {
    let env = Env::new();
    let pair = env.connected_pair(BATCH as u32, 1, 0);
    let qp = pair.active_qp.qp;
    let qpn = pair.active_qp.qpn;
    let cq = pair.active_qp.cq;
    let buf = [0x5Au8; 64];
    let (mr, _mdl) = registered_mr(pair.active_qp.pd, &buf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    let (lkey, _) = mr_tokens(mr);
    let sges: [NDK_SGE; 1] = [sge(buf.as_ptr() as u64, 64, lkey)];
    let send = qp_table(qp).NdkSend.expect("NdkSend");
    let drain = |n: u64| {
        for _ in 0..n {
            env.dev()
                .complete_next_send(qpn, CqeStatus::Success)
                .expect("a posted WQE");
        }
        let done = results(cq, n as usize);
        assert_eq!(done.len() as u64, n);
        assert!(done.iter().all(|r| r.Status == STATUS_SUCCESS));
    };

    c.bench_function("post_send/NdkSend_1sge_64B", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(BATCH);
                let mut failures = 0u32;
                let start = Instant::now();
                for i in 0..n {
                    // SAFETY: a connected QP of ours and a valid SGE list.
                    let status = unsafe { send(qp, i as usize as _, sges.as_ptr(), 1, 0) };
                    failures += u32::from(status != STATUS_SUCCESS);
                }
                total += start.elapsed();
                assert_eq!(failures, 0, "every timed post succeeded");
                drain(n);
                left -= n;
            }
            total
        });
    });

    // The floor: copy a 64-byte WQE-sized record into a ring slot and
    // publish it with one release store.
    let mut slots = vec![[0u8; 64]; BATCH as usize];
    let producer = AtomicU32::new(0);
    let record = [0xA5u8; 64];
    c.bench_function("floor/copy64_atomic_store", |b| {
        let mut head = 0u32;
        b.iter(|| {
            let slot = &mut slots[(head as usize) % BATCH as usize];
            *slot = black_box(record);
            head = head.wrapping_add(1);
            producer.store(head, Ordering::Release);
        });
    });
    black_box(&slots);
}

// In a private module: criterion_group! generates an undocumented public
// function, which missing_docs would flag at the crate root.
mod group {
    criterion::criterion_group!(benches, super::post_send);
}
criterion_main!(group::benches);

//! The low-resources sweep (Driver Verifier's systematic low-resources
//! simulation, made exhaustive): the scenario "boot → add an adapter →
//! open an NDK adapter → create a PD, a CQ and a QP through the dispatch
//! tables → close them all → halt → unload" is run once with no fault to
//! count its fault points (every allocating import: pool, MDLs, IRPs,
//! mappings, work items, configuration, sockets), then once per fault
//! point `n` with `FaultPlan::FailNth(n)`. Each run must end with every
//! step either succeeding or failing with `STATUS_INSUFFICIENT_RESOURCES`
//! (`NDIS_STATUS_RESOURCES`, the same value) — or, for the NDK open of an
//! adapter whose socket could not be opened, `NDIS_STATUS_ADAPTER_NOT_READY`
//! (the driver handled the failure by leaving NDK unavailable) — and with a
//! report that shows nothing left and no bugcheck.
//!
//! All runs share one child process, booting a fresh machine each time
//! (boot after unload is supported). When the fault points are too many
//! for [`BUDGET`], every k-th point is run, k chosen from the baseline's
//! duration so the sweep fits; the test prints k. A watchdog thread ends
//! the child if a run hangs, naming the fault point.

use std::net::Ipv4Addr;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kbottle::Machine;
use kbottle::machine::{BootError, Report};
use kbottle::verifier::{self, FaultPlan};
use ndkpi::{
    NDIS_STATUS_ADAPTER_NOT_READY, NDK_ADAPTER, NDK_CQ, NDK_PD, NDK_QP, NDK_VERSION_1_2, NTSTATUS,
    STATUS_INSUFFICIENT_RESOURCES, STATUS_PENDING, STATUS_SUCCESS,
};

use crate::common::{child_passes, image, is_child, keywords};
use crate::provider_util::{Recorder, adapter_table, close, cq_cb, create_cb, create_qp};

/// Time the sweep may take (the whole test stays under about a minute).
const BUDGET: Duration = Duration::from_secs(45);
/// A single run that takes longer than this is hung.
const RUN_LIMIT: Duration = Duration::from_secs(60);
/// How long the worker thread may stay busy after an adapter is added.
const IDLE: Duration = Duration::from_secs(10);
/// How long a pended close may take.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// The fault point the current run fails (0 = the baseline), for the hang
/// watchdog's message.
static CURRENT: AtomicU64 = AtomicU64::new(0);
/// When the current run started (ms since the sweep began).
static STARTED_MS: AtomicU64 = AtomicU64::new(0);

/// The sweep's adapter address: 127.0.48.0/20 is for child processes (the
/// parent's shared machine uses the common block), one /24 per process id
/// modulo 16, and .100 in it for this test. Every run reuses it: each run
/// closes its socket before the next binds.
fn address() -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 48 + (std::process::id() % 16) as u8, 100)
}

/// What one run did.
#[derive(Debug)]
struct Run {
    /// Each step that ran and its status (0 = success).
    steps: Vec<(&'static str, NTSTATUS)>,
    /// Whether the adapter raised `NetEventNDKEnable`.
    ndk_ready: bool,
    /// What unload (or the failed DriverEntry) left.
    report: Report,
}

/// Closes an NDK object, waiting for a pended close.
fn close_object<T>(object: *mut T, what: &'static str, steps: &mut Vec<(&'static str, NTSTATUS)>) {
    let rec = Recorder::new();
    let status = close(object, rec);
    let status = if status == STATUS_PENDING {
        let deadline = Instant::now() + CLOSE_WAIT;
        while rec.count() == 0 {
            assert!(
                Instant::now() < deadline,
                "{what}: pended close never completed"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        rec.statuses()[0]
    } else {
        status
    };
    steps.push((what, status));
}

/// Creates a PD, a CQ and a QP on `adapter` and closes what was created.
fn ndk_objects(adapter: *mut NDK_ADAPTER, steps: &mut Vec<(&'static str, NTSTATUS)>) {
    let table = adapter_table(adapter);
    let mut pd: *mut NDK_PD = ptr::null_mut();
    let create_pd = table.NdkCreatePd.unwrap();
    // SAFETY: an open adapter of the bottled provider; a valid out-pointer.
    let status = unsafe { create_pd(adapter, Some(create_cb), ptr::null_mut(), &raw mut pd) };
    steps.push(("NdkCreatePd", status));
    if status != STATUS_SUCCESS {
        return;
    }
    let notify = Recorder::new();
    let mut cq: *mut NDK_CQ = ptr::null_mut();
    let create_cq = table.NdkCreateCq.unwrap();
    // SAFETY: as above; the notification context is a Recorder that lives
    // for the whole test binary.
    let status = unsafe {
        create_cq(
            adapter,
            64,
            Some(cq_cb),
            notify.ctx(),
            ptr::null_mut(),
            Some(create_cb),
            ptr::null_mut(),
            &raw mut cq,
        )
    };
    steps.push(("NdkCreateCq", status));
    if status == STATUS_SUCCESS {
        let qp: Result<*mut NDK_QP, NTSTATUS> = create_qp(pd, cq, cq, 0x10_0001, 16, 16, 2, 2, 0);
        steps.push(("NdkCreateQp", qp.err().unwrap_or(STATUS_SUCCESS)));
        if let Ok(qp) = qp {
            close_object(qp, "close QP", steps);
        }
        close_object(cq, "close CQ", steps);
    }
    close_object(pd, "close PD", steps);
}

/// The scenario, with whatever fault plan is set.
fn scenario() -> Run {
    let mut steps = Vec::new();
    let machine = match Machine::boot(&image()) {
        Ok(machine) => machine,
        Err(BootError::DriverEntry { status, report }) => {
            steps.push(("DriverEntry", status));
            return Run {
                steps,
                ndk_ready: false,
                report,
            };
        }
        Err(e) => panic!("boot: {e}"),
    };
    steps.push(("DriverEntry", STATUS_SUCCESS));
    let mut ndk_ready = false;
    match machine.add_adapter(&keywords(address())) {
        Err(status) => steps.push(("MiniportInitializeEx", status)),
        Ok(a) => {
            steps.push(("MiniportInitializeEx", STATUS_SUCCESS));
            // The socket opens (or fails to) in a work item.
            assert!(machine.wait_idle(IDLE), "the worker thread stayed busy");
            ndk_ready = machine.wait_ndk_ready(a, Duration::ZERO);
            match machine.open_ndk(a, NDK_VERSION_1_2) {
                Err(status) => steps.push(("OpenNDKAdapter", status)),
                Ok(adapter) => {
                    steps.push(("OpenNDKAdapter", STATUS_SUCCESS));
                    ndk_objects(adapter, &mut steps);
                    machine.close_ndk(a, adapter);
                }
            }
            machine.halt(a);
        }
    }
    Run {
        steps,
        ndk_ready,
        report: machine.unload(),
    }
}

/// Checks one run: documented statuses only, nothing left, no bugcheck.
fn check(n: u64, run: &Run) {
    let injected = verifier::faults_injected();
    for &(step, status) in &run.steps {
        let documented = status == STATUS_SUCCESS
            || status == STATUS_INSUFFICIENT_RESOURCES
            || (step == "OpenNDKAdapter"
                && status == NDIS_STATUS_ADAPTER_NOT_READY
                && !run.ndk_ready);
        assert!(
            documented,
            "fault point {n} (failed: {injected:?}): {step} returned {:#010x}; run: {run:?}",
            status as u32
        );
    }
    assert!(
        run.report.is_clean(),
        "fault point {n} (failed: {injected:?}) left: {}; steps: {:?}",
        run.report,
        run.steps
    );
}

/// Ends the process if a run takes longer than [`RUN_LIMIT`].
fn start_hang_watchdog(sweep_start: Instant) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = sweep_start.elapsed().as_millis() as u64;
            let started = STARTED_MS.load(Ordering::SeqCst);
            if now.saturating_sub(started) > RUN_LIMIT.as_millis() as u64 {
                eprintln!(
                    "low-resources run for fault point {} hung for {RUN_LIMIT:?} (failed: {:?})",
                    CURRENT.load(Ordering::SeqCst),
                    verifier::faults_injected()
                );
                std::process::abort();
            }
        }
    });
}

#[test]
fn every_fault_point_fails_cleanly() {
    if !is_child() {
        child_passes("low_resources::every_fault_point_fails_cleanly");
        return;
    }
    let sweep_start = Instant::now();
    start_hang_watchdog(sweep_start);

    verifier::set_fault_plan(FaultPlan::Off);
    let baseline = scenario();
    let count = verifier::fault_points_seen();
    let baseline_time = sweep_start.elapsed();
    assert!(
        baseline.ndk_ready && baseline.steps.iter().all(|&(_, s)| s == STATUS_SUCCESS),
        "the scenario must succeed without faults: {baseline:?}"
    );
    check(0, &baseline);
    assert!(count > 0, "the scenario reached no fault point");

    let affordable = (BUDGET.as_secs_f64() / baseline_time.as_secs_f64().max(0.001)) as u64;
    let step = count.div_ceil(affordable.max(1)).max(1);
    println!(
        "low-resources sweep: {count} fault points, baseline {baseline_time:?}, running every {step}{}",
        if step == 1 { " (all)" } else { "th (sampled)" }
    );
    let mut runs = 0u64;
    for n in (1..=count).step_by(step as usize) {
        CURRENT.store(n, Ordering::SeqCst);
        STARTED_MS.store(sweep_start.elapsed().as_millis() as u64, Ordering::SeqCst);
        verifier::set_fault_plan(FaultPlan::FailNth(n));
        let run = scenario();
        check(n, &run);
        runs += 1;
    }
    verifier::set_fault_plan(FaultPlan::Off);
    println!(
        "low-resources sweep: {runs} runs clean in {:?}",
        sweep_start.elapsed()
    );
}

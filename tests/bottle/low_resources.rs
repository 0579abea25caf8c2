//! The low-resources sweep (Driver Verifier's systematic low-resources
//! simulation, made exhaustive): the scenario "boot (miniport, protocol,
//! association) → a NIC appears and the driver binds to it (V
//! initialised) → the stack gives V's interface an address → open an NDK
//! adapter → listen at that address (once the driver serves it) → create
//! a PD, a CQ and a QP through the dispatch tables; register an MR, build
//! a LAM and initialise a fast-register MR (each mapped for the device
//! when it is made) → release and close them all →
//! unbind → unload" is run once with no fault to count its fault points
//! (every allocating import: pool, MDLs, mappings, work items,
//! configuration, NBL pools and lists, bindings, IP helper registrations
//! and tables), then once per fault point `n` with `FaultPlan::FailNth(n)`.
//! Each run must end with every step either succeeding or failing with
//! `STATUS_INSUFFICIENT_RESOURCES` (`NDIS_STATUS_RESOURCES`, the same
//! value), and with a report that shows nothing left and no bugcheck. One
//! failure is documented as recoverable instead: an address table the
//! driver could not read (`GetUnicastIpAddressTable` failed) keeps its
//! previous addresses until the next change notification, so when that
//! fault left V's address unserved, a second address is added and the
//! first must then be served.
//!
//! The runs share a child process, booting a fresh machine each time
//! (boot after unload is supported). A run that ends the process (a
//! bugcheck aborts it; a watchdog thread aborts a run that hangs) is
//! recorded with the bugcheck's report and the sweep resumes in a new
//! child after it, so one test run lists every fault point that goes
//! wrong. When the fault points are too many for [`BUDGET`], every k-th
//! point is run, k chosen from the baseline's duration so the sweep fits;
//! the test prints k.

use std::net::IpAddr;
use std::process::Command;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kbottle::Machine;
use kbottle::machine::{AdapterId, BootError, Report};
use kbottle::mm;
use kbottle::verifier::{self, FaultPlan};
use ndkpi::{
    NDK_ADAPTER, NDK_CQ, NDK_LISTENER, NDK_MR, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NDK_PD, NDK_QP,
    NDK_VERSION_1_2, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_ADDRESS,
    STATUS_PENDING, STATUS_SUCCESS,
};

use crate::common::{image, is_child, keywords};
use testkit::adapter::bottle::PREFIX_V4;
use testkit::adapter::{
    Recorder, SockAddr, adapter_table, close, connect_cb, cq_cb, create_cb, create_qp,
    listener_table, mr_table, pd_table, request_cb,
};

/// Time the sweep may take (the whole test stays under about a minute).
const BUDGET: Duration = Duration::from_secs(45);
/// A single run that takes longer than this is hung.
const RUN_LIMIT: Duration = Duration::from_secs(10);
/// How long the worker thread may stay busy after an adapter is added.
const IDLE: Duration = Duration::from_secs(10);
/// How long a pended close may take.
const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// How long the driver may take to serve an address the stack gave V.
const SERVE_WAIT: Duration = Duration::from_secs(3);

/// The fault point the current run fails (0 = the baseline), for the hang
/// watchdog's message.
static CURRENT: AtomicU64 = AtomicU64::new(0);
/// When the current run started (ms since the sweep began).
static STARTED_MS: AtomicU64 = AtomicU64::new(0);

/// The sweep's adapter addresses (every run boots its own machine, so
/// they are free again in each): in 198.18.0.0/16 like
/// `kbottle::shared::fresh_address`'s, the second one added only to bring
/// a notification.
const ADDRESSES: [[u8; 4]; 2] = [[198, 18, 200, 1], [198, 18, 200, 2]];

/// What one run did.
#[derive(Debug)]
struct Run {
    /// Each step that ran and its status (0 = success).
    steps: Vec<(&'static str, NTSTATUS)>,
    /// The NDK attributes said enabled.
    ndk_enabled: bool,
    /// What unload (or the failed DriverEntry) left.
    report: Report,
}

/// The final status of a call that may pend.
fn settled(status: NTSTATUS, rec: &Recorder, what: &str) -> NTSTATUS {
    if status != STATUS_PENDING {
        return status;
    }
    let deadline = Instant::now() + CLOSE_WAIT;
    while rec.count() == 0 {
        assert!(Instant::now() < deadline, "{what}: never completed");
        std::thread::sleep(Duration::from_millis(1));
    }
    rec.statuses()[0]
}

/// Closes an NDK object, waiting for a pended close.
fn close_object<T>(object: *mut T, what: &'static str, steps: &mut Vec<(&'static str, NTSTATUS)>) {
    let rec = Recorder::new();
    let status = settled(close(object, rec), rec, what);
    steps.push((what, status));
}

/// `NdkListen` at `ip` on a new listener of `adapter` (closed again), until
/// it is not refused with `STATUS_INVALID_ADDRESS` or [`SERVE_WAIT`] is
/// over: the last status (of the listener's creation if that failed).
fn listen_at(adapter: *mut NDK_ADAPTER, ip: IpAddr) -> NTSTATUS {
    let deadline = Instant::now() + SERVE_WAIT;
    loop {
        let events = Recorder::new();
        let created = Recorder::new();
        let mut l: *mut NDK_LISTENER = ptr::null_mut();
        let f = adapter_table(adapter).NdkCreateListener.unwrap();
        // SAFETY: an open adapter of the bottled provider, a valid
        // out-pointer; the recorders live for the whole test binary.
        let status = unsafe {
            f(
                adapter,
                Some(connect_cb),
                events.ctx(),
                Some(create_cb),
                created.ctx(),
                &raw mut l,
            )
        };
        let status = settled(status, created, "NdkCreateListener");
        if status != STATUS_SUCCESS {
            return status;
        }
        let listened = Recorder::new();
        let at = SockAddr::ip(ip, 0);
        let f = listener_table(l).NdkListen.unwrap();
        // SAFETY: our listener and a valid address.
        let status = unsafe { f(l, at.ptr(), at.len(), Some(request_cb), listened.ctx()) };
        let status = settled(status, listened, "NdkListen");
        let closed = Recorder::new();
        let closing = settled(close(l, closed), closed, "close listener");
        assert_eq!(closing, STATUS_SUCCESS, "close of a listener");
        if status != STATUS_INVALID_ADDRESS || Instant::now() >= deadline {
            return status;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Gives V's interface `ip` in the stack and waits (bounded) until the
/// stack prefers it; whether it does.
fn add_address(machine: &Machine, a: AdapterId, ip: IpAddr) -> bool {
    machine
        .add_address(a, ip, PREFIX_V4)
        .unwrap_or_else(|e| panic!("add_address {ip}: {e}"));
    machine.wait_address_preferred(a, ip, SERVE_WAIT)
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
    // SAFETY: `adapter` is an open adapter of the bottled provider; `cq` a
    // valid out-pointer; the notification context is a Recorder that lives
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
    memory_objects(adapter, pd, steps);
    close_object(pd, "close PD", steps);
}

/// Registers an MR (then deregisters it), builds a LAM (then releases
/// it) and initialises a fast-register MR on `pd`, closing the MRs: each
/// registration maps its pages for the device when it is made, so its
/// mapping calls are fault points of their own.
fn memory_objects(
    adapter: *mut NDK_ADAPTER,
    pd: *mut NDK_PD,
    steps: &mut Vec<(&'static str, NTSTATUS)>,
) {
    const LEN: usize = 5 * 4096 - 0x123;
    let buf: &'static mut [u8] = Box::leak(vec![0u8; LEN + 0x123].into_boxed_slice());
    // Starting inside a page, so the registration spans one page more.
    let va = buf.as_mut_ptr().wrapping_add(0x123);
    let create_mr = pd_table(pd).NdkCreateMr.unwrap();
    for fast in [false, true] {
        let mut mr: *mut NDK_MR = ptr::null_mut();
        // SAFETY: an open PD of the bottled provider; a valid out-pointer.
        let status = unsafe {
            create_mr(
                pd,
                u8::from(fast),
                Some(create_cb),
                ptr::null_mut(),
                &raw mut mr,
            )
        };
        steps.push(("NdkCreateMr", status));
        if status != STATUS_SUCCESS {
            continue;
        }
        if fast {
            let rec = Recorder::new();
            let init = mr_table(mr).NdkInitializeFastRegisterMr.unwrap();
            // SAFETY: our fast-register MR; the recorder lives for the
            // whole test binary.
            let status = unsafe { init(mr, 8, 1, Some(request_cb), rec.ctx()) };
            let status = settled(status, rec, "NdkInitializeFastRegisterMr");
            steps.push(("NdkInitializeFastRegisterMr", status));
        } else {
            let mdl = mm::OwnedMdl::describe(va, LEN);
            let rec = Recorder::new();
            let register = mr_table(mr).NdkRegisterMr.unwrap();
            // SAFETY: our MR, an MDL over the leaked buffer; the recorder
            // lives for the whole test binary.
            let status = unsafe {
                register(
                    mr,
                    mdl.as_ptr(),
                    LEN,
                    NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                    Some(request_cb),
                    rec.ctx(),
                )
            };
            let status = settled(status, rec, "NdkRegisterMr");
            steps.push(("NdkRegisterMr", status));
            if status == STATUS_SUCCESS {
                let rec = Recorder::new();
                let deregister = mr_table(mr).NdkDeregisterMr.unwrap();
                // SAFETY: our registered MR; the recorder lives on.
                let status = unsafe { deregister(mr, Some(request_cb), rec.ctx()) };
                steps.push(("NdkDeregisterMr", settled(status, rec, "NdkDeregisterMr")));
            }
        }
        close_object(mr, "close MR", steps);
    }
    let mdl = mm::OwnedMdl::describe(va, LEN);
    let mut lam = vec![0u64; 16];
    let mut size = (lam.len() * 8) as u32;
    let mut fbo = 0u32;
    let build = adapter_table(adapter).NdkBuildLAM.unwrap();
    // SAFETY: an open adapter of the bottled provider, an MDL over the
    // leaked buffer, a LAM buffer of `size` bytes, NULL completion.
    let status = unsafe {
        build(
            adapter,
            mdl.as_ptr(),
            LEN,
            None,
            ptr::null_mut(),
            lam.as_mut_ptr().cast(),
            &raw mut size,
            &raw mut fbo,
        )
    };
    steps.push(("NdkBuildLAM", status));
    if status == STATUS_SUCCESS {
        let release = adapter_table(adapter).NdkReleaseLAM.unwrap();
        // SAFETY: the LAM just built on this adapter, released once.
        unsafe { release(adapter, lam.as_mut_ptr().cast()) };
    }
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
                ndk_enabled: false,
                report: *report,
            };
        }
        Err(e) => panic!("boot: {e}"),
    };
    steps.push(("DriverEntry", STATUS_SUCCESS));
    let mut ndk_enabled = false;
    match machine.add_adapter(&keywords()) {
        Err(status) => steps.push(("bind / MiniportInitializeEx", status)),
        Ok(a) => {
            steps.push(("bind / MiniportInitializeEx", STATUS_SUCCESS));
            assert!(machine.wait_idle(IDLE), "the worker thread stayed busy");
            ndk_enabled = machine.ndk_attributes(a).is_some_and(|n| n.enabled);
            let ip = IpAddr::from(ADDRESSES[0]);
            assert!(add_address(&machine, a, ip), "{ip} never preferred");
            match machine.open_ndk(a, NDK_VERSION_1_2) {
                Err(status) => steps.push(("OpenNDKAdapter", status)),
                Ok(adapter) => {
                    steps.push(("OpenNDKAdapter", STATUS_SUCCESS));
                    let status = listen_at(adapter, ip);
                    steps.push(("NdkListen at V's address", status));
                    if status == STATUS_INVALID_ADDRESS {
                        // The documented recovery: the next notification
                        // reads the whole table again.
                        let next = IpAddr::from(ADDRESSES[1]);
                        assert!(add_address(&machine, a, next), "{next} never preferred");
                        steps.push(("NdkListen after the next change", listen_at(adapter, ip)));
                    }
                    ndk_objects(adapter, &mut steps);
                    machine.close_ndk(a, adapter);
                }
            }
            machine.halt(a);
        }
    }
    Run {
        steps,
        ndk_enabled,
        report: machine.unload(),
    }
}

/// Checks one run: documented statuses only, nothing left, no bugcheck;
/// what is wrong, if anything.
fn check(n: u64, run: &Run) -> Option<String> {
    let injected = verifier::faults_injected();
    let table_failed = injected.contains(&"GetUnicastIpAddressTable");
    for &(step, status) in &run.steps {
        let documented = status == STATUS_SUCCESS
            || status == STATUS_INSUFFICIENT_RESOURCES
            || (step == "NdkListen at V's address"
                && status == STATUS_INVALID_ADDRESS
                && table_failed);
        if !documented {
            return Some(format!(
                "fault point {n} (failed: {injected:?}): {step} returned {:#010x}; steps: {:?}",
                status as u32, run.steps
            ));
        }
    }
    (!run.report.is_clean()).then(|| {
        format!(
            "fault point {n} (failed: {injected:?}) left: {}; steps: {:?}",
            run.report, run.steps
        )
    })
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
                    "*** low-resources run for fault point {} hung for {RUN_LIMIT:?} (failed: {:?})",
                    CURRENT.load(Ordering::SeqCst),
                    verifier::faults_injected()
                );
                std::process::abort();
            }
        }
    });
}

/// Environment of a sweep child: the first fault point to run.
const FROM_ENV: &str = "RSNDK_LOW_RESOURCES_FROM";
/// Environment of a sweep child: the stride between fault points (unset
/// in the first child, which chooses it from the baseline's duration).
const STEP_ENV: &str = "RSNDK_LOW_RESOURCES_STEP";

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Marks the child's report lines on stdout.
const MARK: &str = "@@low-resources@@ ";

/// The child's side: the baseline, then the fault points from `FROM_ENV`
/// on, reporting on stdout (`sweep COUNT STEP`, `run N`, `problem TEXT`,
/// `done`, each after [`MARK`]) so that the parent can resume after a run
/// that ended the process.
fn sweep_in_child() {
    let sweep_start = Instant::now();
    start_hang_watchdog(sweep_start);

    verifier::set_fault_plan(FaultPlan::Off);
    let baseline = scenario();
    let count = verifier::fault_points_seen();
    let baseline_time = sweep_start.elapsed();
    assert!(
        baseline.ndk_enabled && baseline.steps.iter().all(|&(_, s)| s == STATUS_SUCCESS),
        "the scenario must succeed without faults: {baseline:?}"
    );
    if let Some(problem) = check(0, &baseline) {
        panic!("without faults: {problem}");
    }
    assert!(count > 0, "the scenario reached no fault point");
    let step = env_u64(STEP_ENV).unwrap_or_else(|| {
        let affordable = (BUDGET.as_secs_f64() / baseline_time.as_secs_f64().max(0.001)) as u64;
        count.div_ceil(affordable.max(1)).max(1)
    });
    println!("{MARK}sweep {count} {step}");
    let from = env_u64(FROM_ENV).unwrap_or(1).max(1);
    for n in (from..=count).step_by(step as usize) {
        CURRENT.store(n, Ordering::SeqCst);
        STARTED_MS.store(sweep_start.elapsed().as_millis() as u64, Ordering::SeqCst);
        verifier::set_fault_plan(FaultPlan::FailNth(n));
        println!("{MARK}run {n}");
        let run = scenario();
        if let Some(problem) = check(n, &run) {
            println!("{MARK}problem {problem}");
        }
    }
    verifier::set_fault_plan(FaultPlan::Off);
    println!("{MARK}done");
}

/// What one child reported.
#[derive(Debug, Default)]
struct ChildReport {
    count: Option<u64>,
    step: Option<u64>,
    last_run: Option<u64>,
    runs: u64,
    problems: Vec<String>,
    done: bool,
}

/// Runs the sweep in a child from fault point `from` (with `step`, once
/// known) and reads what it reported.
fn sweep_child(from: u64, step: Option<u64>) -> (ChildReport, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut command = Command::new(exe);
    command
        .args([
            "low_resources::every_fault_point_fails_cleanly",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        // What `common::in_child` sets: the child runs the test's body.
        .env("RSNDK_BOTTLE_CHILD", "1")
        .env("RSNDK_SYS", image())
        .env(FROM_ENV, from.to_string());
    if let Some(step) = step {
        command.env(STEP_ENV, step.to_string());
    }
    let out = command.output().expect("running the sweep child");
    let mut report = ChildReport::default();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The harness may print its own text before a line on the same line.
    for line in stdout
        .lines()
        .filter_map(|l| l.split_once(MARK).map(|(_, r)| r))
    {
        if let Some(rest) = line.strip_prefix("sweep ") {
            let mut it = rest.split(' ').filter_map(|w| w.parse().ok());
            report.count = it.next();
            report.step = it.next();
        } else if let Some(n) = line.strip_prefix("run ") {
            report.last_run = n.parse().ok();
            report.runs += 1;
        } else if let Some(problem) = line.strip_prefix("problem ") {
            report.problems.push(problem.to_owned());
        } else if line == "done" {
            report.done = true;
        }
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let bugcheck: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("***") || l.contains("panicked"))
        .take(6)
        .collect();
    (report, bugcheck.join(" / "))
}

#[test]
fn every_fault_point_fails_cleanly() {
    if is_child() {
        sweep_in_child();
        return;
    }
    let started = Instant::now();
    let mut from = 1;
    let mut step = None;
    let mut runs = 0;
    let mut problems = Vec::new();
    loop {
        let (report, died) = sweep_child(from, step);
        runs += report.runs;
        problems.extend(report.problems);
        let (Some(count), Some(s)) = (report.count, report.step) else {
            panic!("the sweep's baseline failed: {died}");
        };
        step = Some(s);
        if report.done {
            println!(
                "low-resources sweep: {count} fault points, every {s}{}, {runs} runs in {:?}",
                if s == 1 { " (all)" } else { "th (sampled)" },
                started.elapsed()
            );
            break;
        }
        // The run after `last_run` ended the process (a bugcheck or a
        // hang): record it and resume after it.
        let n = report.last_run.unwrap_or(from);
        problems.push(format!("fault point {n} ended the process: {died}"));
        from = n + s;
        if from > count {
            break;
        }
        if started.elapsed() > BUDGET + 2 * RUN_LIMIT {
            problems.push(format!(
                "sweep stopped before fault point {from} of {count}: out of time"
            ));
            break;
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {runs} low-resources runs went wrong:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

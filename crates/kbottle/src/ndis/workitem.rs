//! NDIS I/O work items (`NdisAllocateIoWorkItem`, `NdisQueueIoWorkItem`,
//! `NdisFreeIoWorkItem`) and the system worker thread that runs them: one
//! OS thread, registered as the processor "worker", that runs queued
//! routines in order at PASSIVE_LEVEL, as the kernel's delayed work queue
//! does. Queuing an item that is already queued, or freeing one that is
//! queued, is bug check 0xE4 (`WORKER_INVALID`); a routine that returns at
//! a raised IRQL is 0xE1.

// Each import's safety contract is its WDK documentation, and the caller is
// the driver; the per-function docs say what the bottle checks instead.
#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::VecDeque;
use std::ptr;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use ndis::{NDIS_HANDLE, NDIS_IO_WORKITEM_ROUTINE, PASSIVE_LEVEL};
use ndkpi::PVOID;

use super::checks::{
    WORKER_INVALID, WORKER_THREAD_RETURNED_AT_BAD_IRQL, guarded, invalid_handle,
    require_dispatch_or_below,
};
use super::state::{self, Handle, WorkItem};
use crate::kernel::{cpu, verifier};

/// `DelayedWorkQueue`, the queue NDIS I/O work items go to (0xE4's P3).
const DELAYED_WORK_QUEUE: u64 = 1;

/// Something for the worker thread to run.
enum Job {
    /// A driver work item: its handle, routine and context.
    Item {
        handle: usize,
        routine: ndis::NDIS_IO_WORKITEM_FUNCTION,
        context: usize,
    },
    /// Bottle-side work that must run on a system thread (e.g. returning
    /// received lists to the miniport).
    Internal(Box<dyn FnOnce() + Send>),
}

struct Queue {
    jobs: VecDeque<Job>,
    running: bool,
    stop: bool,
    alive: bool,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    jobs: VecDeque::new(),
    running: false,
    stop: false,
    alive: false,
});
static WAKE: Condvar = Condvar::new();

fn queue() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the system worker thread (at boot).
pub fn start() {
    let mut q = queue();
    if q.alive {
        return;
    }
    q.jobs.clear();
    q.stop = false;
    q.running = false;
    q.alive = true;
    drop(q);
    thread::Builder::new()
        .name("ndis-worker".to_owned())
        .spawn(worker)
        .expect("spawning the system worker thread");
}

/// Stops the worker thread after the job it is running (at unload). The
/// work items still queued are dropped unrun; their number is returned.
/// Gives up waiting after `timeout` (a routine that never returns).
pub fn stop(timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    let mut q = queue();
    let dropped = q
        .jobs
        .iter()
        .filter(|j| matches!(j, Job::Item { .. }))
        .count();
    q.jobs.clear();
    q.stop = true;
    WAKE.notify_all();
    while q.alive {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        q = WAKE
            .wait_timeout(q, deadline - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    dropped
}

/// Whether the worker thread is still alive (after [`stop`]: a routine
/// that did not return).
pub fn worker_alive() -> bool {
    queue().alive
}

/// Waits until nothing is queued or running; whether that happened
/// within `timeout`.
pub fn wait_idle(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut q = queue();
    while !q.jobs.is_empty() || q.running {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        q = WAKE
            .wait_timeout(q, deadline - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    true
}

/// Driver work items queued and not yet started.
pub fn queued_items() -> usize {
    queue()
        .jobs
        .iter()
        .filter(|j| matches!(j, Job::Item { .. }))
        .count()
}

/// Runs `job` on the worker thread, after what is queued.
pub fn run_on_worker(job: impl FnOnce() + Send + 'static) {
    let mut q = queue();
    q.jobs.push_back(Job::Internal(Box::new(job)));
    WAKE.notify_all();
}

fn worker() {
    cpu::enter("worker");
    loop {
        let job = {
            let mut q = queue();
            loop {
                if q.stop {
                    q.alive = false;
                    WAKE.notify_all();
                    return;
                }
                if let Some(job) = q.jobs.pop_front() {
                    q.running = true;
                    break job;
                }
                q = WAKE.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
        };
        match job {
            Job::Item {
                handle,
                routine,
                context,
            } => run_item(handle, routine, context),
            Job::Internal(f) => f(),
        }
        let mut q = queue();
        q.running = false;
        WAKE.notify_all();
        drop(q);
        state::changed();
    }
}

fn run_item(handle: usize, routine: ndis::NDIS_IO_WORKITEM_FUNCTION, context: usize) {
    // Dequeued: from here the routine may requeue or free its own item.
    state::with(|n| {
        if let Some(item) = n.work_items.get_mut(&handle) {
            item.queued = false;
        }
    });
    let entered = cpu::current();
    debug_assert_eq!(
        entered, PASSIVE_LEVEL,
        "the worker thread runs at PASSIVE_LEVEL"
    );
    // SAFETY: the routine and context the driver queued, called as the
    // kernel calls an I/O work item routine: PASSIVE_LEVEL, system thread.
    unsafe { routine(context as PVOID, handle as NDIS_HANDLE) };
    let irql = cpu::current();
    if irql != entered {
        verifier::bugcheck(
            WORKER_THREAD_RETURNED_AT_BAD_IRQL,
            [
                routine as usize as u64,
                u64::from(irql),
                context as u64,
                handle as u64,
            ],
            format!(
                "work item routine {:#x} returned at IRQL {irql}",
                routine as usize
            ),
        );
    }
}

/// `NdisAllocateIoWorkItem` (<= DISPATCH_LEVEL): a work item bound to an
/// adapter or driver handle; null when out of resources.
pub unsafe extern "win64" fn NdisAllocateIoWorkItem(NdisObjectHandle: NDIS_HANDLE) -> NDIS_HANDLE {
    const API: &str = "NdisAllocateIoWorkItem";
    guarded(API, || {
        require_dispatch_or_below(API, NdisAllocateIoWorkItem as *const ());
        let owner = NdisObjectHandle as usize;
        let valid = state::with(|n| n.is_driver(owner) || n.live_adapter(owner).is_some());
        if !valid {
            verifier::bugcheck(
                WORKER_INVALID,
                [3, 0, owner as u64, 0],
                format!("{API}: {owner:#x} is not a live miniport adapter or driver handle"),
            );
        }
        if verifier::fault_point(API) {
            return ptr::null_mut();
        }
        let handle = Handle::new();
        let addr = handle.addr();
        state::with(|n| {
            n.work_items.insert(
                addr,
                WorkItem {
                    handle,
                    owner,
                    queued: false,
                },
            );
        });
        addr as NDIS_HANDLE
    })
}

/// `NdisQueueIoWorkItem` (<= DISPATCH_LEVEL): `Routine` runs on the
/// system worker thread at PASSIVE_LEVEL.
pub unsafe extern "win64" fn NdisQueueIoWorkItem(
    NdisIoWorkItemHandle: NDIS_HANDLE,
    Routine: NDIS_IO_WORKITEM_ROUTINE,
    WorkItemContext: PVOID,
) {
    const API: &str = "NdisQueueIoWorkItem";
    guarded(API, || {
        require_dispatch_or_below(API, NdisQueueIoWorkItem as *const ());
        let handle = NdisIoWorkItemHandle as usize;
        if !state::with(|n| n.work_items.contains_key(&handle)) {
            invalid_handle(API, handle, "work item");
        }
        let Some(routine) = Routine else {
            verifier::bugcheck(
                WORKER_INVALID,
                [7, handle as u64, DELAYED_WORK_QUEUE, 0],
                format!("{API}: work item {handle:#x} queued with a null routine"),
            );
        };
        // Test and set in one step, so two racing queuers cannot both win.
        let was_queued = state::with(|n| {
            n.work_items
                .get_mut(&handle)
                .is_none_or(|item| std::mem::replace(&mut item.queued, true))
        });
        if was_queued {
            verifier::bugcheck(
                WORKER_INVALID,
                [1, handle as u64, DELAYED_WORK_QUEUE, 0],
                format!("{API}: work item {handle:#x} is already queued (or was freed meanwhile)"),
            );
        }
        let mut q = queue();
        q.jobs.push_back(Job::Item {
            handle,
            routine,
            context: WorkItemContext as usize,
        });
        WAKE.notify_all();
    });
}

/// `NdisFreeIoWorkItem` (<= DISPATCH_LEVEL). Freeing a queued item is
/// bug check 0xE4 / 2.
pub unsafe extern "win64" fn NdisFreeIoWorkItem(NdisIoWorkItemHandle: NDIS_HANDLE) {
    const API: &str = "NdisFreeIoWorkItem";
    guarded(API, || {
        require_dispatch_or_below(API, NdisFreeIoWorkItem as *const ());
        let handle = NdisIoWorkItemHandle as usize;
        let Some(was_queued) = state::with(|n| n.work_items.get(&handle).map(|w| w.queued)) else {
            invalid_handle(API, handle, "work item");
        };
        if was_queued {
            let routine = queue()
                .jobs
                .iter()
                .find_map(|j| match j {
                    Job::Item {
                        handle: h, routine, ..
                    } if *h == handle => Some(*routine as usize),
                    _ => None,
                })
                .unwrap_or(0);
            verifier::bugcheck(
                WORKER_INVALID,
                [2, handle as u64, routine as u64, 0],
                format!("{API}: work item {handle:#x} is still queued"),
            );
        }
        state::with(|n| {
            if let Some(item) = n.work_items.remove(&handle) {
                n.retired.push(item.handle);
            }
        });
    });
}

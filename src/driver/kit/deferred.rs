//! Deferred work as an owner that cannot be freed while anything of it is
//! queued: a DPC, a timer that queues it, and an NDIS I/O work item, all
//! bound to one target ([`Deferred`]).
//!
//! The kernel keeps pointers to the DPC and the timer, and NDIS to the
//! work item's context, so the three live with their target in one pinned
//! box whose address is their context. Dropping it (`PASSIVE_LEVEL`)
//! first closes it (queueing and arming become no-ops), then waits out
//! everything that may still run or fire, in the order the kernel needs:
//! 1. closed: nothing new is queued or armed from now on;
//! 2. `KeFlushQueuedDpcs`: every DPC run that started before has returned
//!    (and with it whatever it queued or armed before it saw the close);
//! 3. the work routine is neither queued nor running;
//! 4. `KeCancelTimer`;
//! 5. `KeRemoveQueueDpc`;
//! 6. `KeFlushQueuedDpcs` again (a run the timer queued before step 4 has
//!    returned);
//!
//! then the work item is freed. [`Deferred::close`] does steps 1-6
//! earlier for an owner that must know everything stopped before it lets
//! other things go.
//!
//! An owner can also have the IP Helper's unicast address notifications
//! queue its work item ([`Deferred::notify_address_changes`]); closing
//! cancels them before anything else.
//!
//! The work item carries task bits ([`Deferred::queue_work`]): a request
//! while the routine is queued or running is only recorded, and the
//! routine takes it before it lets go of the item, so the item is queued
//! at most once at a time and no request is lost.

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::marker::PhantomPinned;
use core::pin::Pin;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

use ndis::{
    AF_UNSPEC, CancelMibChangeNotify2, MIB_NOTIFICATION_TYPE, MIB_UNICASTIPADDRESS_ROW,
    NotifyUnicastIpAddressChange,
};
use ndis::{
    KDPC, KTIMER, KeCancelTimer, KeFlushQueuedDpcs, KeInitializeDpc, KeInitializeTimerEx,
    KeInsertQueueDpc, KeRemoveQueueDpc, KeSetTimer, NDIS_HANDLE, NdisAllocateIoWorkItem,
    NdisFreeIoWorkItem, NdisQueueIoWorkItem, NotificationTimer,
};
use ndkpi::{NTSTATUS, PVOID};

use hwq::TryArc;

use super::kernel;
use super::memory::try_box;
use super::ndis::{AdapterHandle, Handle};

/// `work` bit: the work item is queued or its routine runs.
const WORK_QUEUED: u32 = 1 << 31;

/// What a [`Deferred`] runs.
pub trait DeferredRoutines: Send + Sync + Sized {
    /// When the routine finds new tasks after running some: `true` queues
    /// the item again and returns (a system worker thread is shared, so a
    /// routine that loops for as long as work keeps coming holds up every
    /// other work item), `false` runs them in the same call.
    const REQUEUE: bool;

    /// Whether the DPC and the timer are used at all; when not, they are
    /// never queued or armed ([`Deferred::queue_dpc`] and
    /// [`Deferred::set_timer`] do nothing) and closing skips them.
    const USES_DPC: bool;

    /// The DPC (`DISPATCH_LEVEL`), for [`Deferred::queue_dpc`] and the
    /// timer. Not called once the owner is closed.
    fn dpc(this: &Deferred<Self>);

    /// The work routine (`PASSIVE_LEVEL`) for the task bits `tasks` asked
    /// for since its last run.
    fn work(this: &Deferred<Self>, tasks: u32);
}

/// A DPC, a timer and a work item bound to `target`, pinned in a box.
pub struct Deferred<T: DeferredRoutines> {
    dpc: UnsafeCell<KDPC>,
    timer: UnsafeCell<KTIMER>,
    work_item: Handle<WorkItem>,
    /// Task bits asked for, plus [`WORK_QUEUED`].
    work: AtomicU32,
    closed: AtomicBool,
    /// The IP Helper's notification registration that queues the work
    /// item, while registered ([`Deferred::notify_address_changes`]).
    notification: AtomicPtr<c_void>,
    /// The task bits the notification asks for.
    notification_tasks: AtomicU32,
    /// [`Deferred::close`] ran to its end.
    stopped: AtomicBool,
    target: T,
    /// The kernel and NDIS hold this box's address.
    _pinned: PhantomPinned,
}

/// The kind of [`Handle`] of an NDIS I/O work item.
#[derive(Debug)]
pub enum WorkItem {}

impl<T: DeferredRoutines> core::fmt::Debug for Deferred<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Deferred")
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// SAFETY: the KDPC and KTIMER are only handed to the kernel, which
// synchronises them itself; the work item handle is an opaque token NDIS
// allows on any thread; the other fields are atomics and a `Send + Sync`
// target.
unsafe impl<T: DeferredRoutines> Send for Deferred<T> {}
// SAFETY: shared use hands the KDPC and KTIMER to the kernel, which
// synchronises them, uses atomics, and shares the `Sync` target.
unsafe impl<T: DeferredRoutines> Sync for Deferred<T> {}

impl<T: DeferredRoutines> Deferred<T> {
    /// A DPC, timer and work item (bound to the NDIS adapter `adapter`)
    /// for `target`, in a pinned box (`PASSIVE_LEVEL`); `None` when memory
    /// ran out.
    pub fn create(adapter: AdapterHandle, target: T) -> Option<Pin<Box<Self>>> {
        let work_item = Self::allocate_work_item(adapter)?;
        let deferred = match try_box(Self::with(work_item, target)) {
            Ok(deferred) => deferred,
            Err(unplaced) => {
                Self::discard(unplaced);
                return None;
            }
        };
        // The box does not move from here on (pinned below).
        deferred.bind();
        Some(Box::into_pin(deferred))
    }

    /// [`Deferred::create`] shared: the kernel objects live in the
    /// `TryArc`'s allocation, which never moves (a `TryArc` gives no way
    /// to move its value out).
    pub fn create_shared(adapter: AdapterHandle, target: T) -> Option<TryArc<Self>> {
        let work_item = Self::allocate_work_item(adapter)?;
        let deferred = match TryArc::try_new(Self::with(work_item, target)) {
            Ok(deferred) => deferred,
            Err((_, unplaced)) => {
                Self::discard(unplaced);
                return None;
            }
        };
        deferred.bind();
        Some(deferred)
    }

    /// Gives back the work item of an owner that never got its place (its
    /// DPC and timer were never initialised, so no `Drop`, which closes
    /// them); the target drops.
    fn discard(unplaced: Self) {
        let work_item = unplaced.work_item;
        let unplaced = core::mem::ManuallyDrop::new(unplaced);
        // SAFETY: the target is read out once from a value that is never
        // dropped or used again (ManuallyDrop).
        drop(unsafe { ptr::read(&raw const unplaced.target) });
        // SAFETY: allocated by `allocate_work_item`, never queued.
        unsafe { NdisFreeIoWorkItem(work_item.raw()) };
    }

    fn allocate_work_item(adapter: AdapterHandle) -> Option<Handle<WorkItem>> {
        // SAFETY: <= DISPATCH_LEVEL; the caller's live adapter handle
        // (an `AdapterHandle` is one NDIS gave and has not taken back).
        let work_item = unsafe { NdisAllocateIoWorkItem(adapter.raw()) };
        Handle::from_ndis(work_item)
    }

    fn with(work_item: Handle<WorkItem>, target: T) -> Self {
        Self {
            dpc: UnsafeCell::new(KDPC::zeroed()),
            timer: UnsafeCell::new(KTIMER::zeroed()),
            work_item,
            work: AtomicU32::new(0),
            closed: AtomicBool::new(false),
            notification: AtomicPtr::new(ptr::null_mut()),
            notification_tasks: AtomicU32::new(0),
            stopped: AtomicBool::new(false),
            target,
            _pinned: PhantomPinned,
        }
    }

    /// Initialises the DPC and the timer for this owner at its final
    /// address (the callers' allocation never moves).
    fn bind(&self) {
        let context: PVOID = ptr::from_ref::<Self>(self).cast_mut().cast();
        // SAFETY: the DPC object is in an allocation that does not move
        // (the callers' invariant); the context is this owner, valid until
        // `close` has flushed the DPC (the owner's drop closes it first).
        unsafe { KeInitializeDpc(self.dpc.get(), run_dpc::<T>, context) };
        // SAFETY: a zeroed timer of this owner, initialised once.
        unsafe { KeInitializeTimerEx(self.timer.get(), NotificationTimer) };
    }

    /// The target.
    pub fn target(&self) -> &T {
        &self.target
    }

    /// Whether [`Deferred::close`] began.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Queues the DPC (any IRQL up to `DISPATCH_LEVEL`); a no-op once
    /// closed, and while it is queued.
    pub fn queue_dpc(&self) {
        if !T::USES_DPC || self.is_closed() {
            return;
        }
        // SAFETY: an initialised DPC in a live, pinned owner; `close`
        // removes and flushes it before the owner goes.
        unsafe { KeInsertQueueDpc(self.dpc.get(), ptr::null_mut(), ptr::null_mut()) };
    }

    /// Arms the timer to queue the DPC in `due_100ns` (relative, 100 ns
    /// units; re-arming replaces the due time). A no-op once closed.
    pub fn set_timer(&self, due_100ns: u64) {
        if !T::USES_DPC || self.is_closed() {
            return;
        }
        let due = -(due_100ns.min(i64::MAX as u64) as i64);
        // SAFETY: the initialised timer and DPC of a live, pinned owner;
        // `close` cancels the timer before the owner goes.
        unsafe { KeSetTimer(self.timer.get(), due, self.dpc.get()) };
    }

    /// Asks the work routine to run for `tasks` (nonzero bits below bit
    /// 31; `<= DISPATCH_LEVEL`): queues the item unless it is queued or
    /// its routine runs, which then sees the new bits before it lets go. A
    /// no-op once closed.
    pub fn queue_work(&self, tasks: u32) {
        if self.is_closed() {
            return;
        }
        let old = self
            .work
            .fetch_or((tasks & !WORK_QUEUED) | WORK_QUEUED, Ordering::AcqRel);
        if old & WORK_QUEUED != 0 {
            return;
        }
        self.queue_item();
    }

    /// Whether the work routine is queued or runs.
    pub fn work_busy(&self) -> bool {
        self.work.load(Ordering::Acquire) & WORK_QUEUED != 0
    }

    /// Waits until the work routine is neither queued nor running
    /// (`PASSIVE_LEVEL`).
    pub fn wait_work(&self) {
        while self.work_busy() {
            kernel::wait_briefly();
        }
    }

    fn queue_item(&self) {
        let context: PVOID = ptr::from_ref(self).cast_mut().cast();
        // SAFETY: <= DISPATCH_LEVEL; this owner's work item, not queued now
        // (WORK_QUEUED was clear, or the routine is the one running and
        // NDIS dequeued it to run it); the owner outlives the routine
        // (`close` waits for WORK_QUEUED to clear).
        unsafe { NdisQueueIoWorkItem(self.work_item.raw(), run_work::<T>, context) };
    }

    /// The routine of the work item: runs the tasks asked for, and either
    /// runs again for new ones or queues the item again for them
    /// ([`DeferredRoutines::REQUEUE`]); drops [`WORK_QUEUED`] when none is
    /// left, touching nothing after (the owner may go right then).
    fn run_work(&self) {
        let mut ran = false;
        loop {
            let state = self.work.load(Ordering::Acquire);
            let tasks = state & !WORK_QUEUED;
            if tasks == 0 {
                if self
                    .work
                    .compare_exchange(state, 0, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            if ran && T::REQUEUE {
                // The flag stays set: the owner keeps waiting, and the
                // next run takes the tasks.
                self.queue_item();
                return;
            }
            if self
                .work
                .compare_exchange(state, WORK_QUEUED, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            T::work(self, tasks);
            ran = true;
        }
    }

    /// Has the IP Helper queue the work item for `tasks` on every change of
    /// the unicast address table, IPv4 and IPv6, and once at once with the
    /// table as it is (`NotifyUnicastIpAddressChange`, `AF_UNSPEC`, with
    /// the initial notification; `PASSIVE_LEVEL`). [`Deferred::close`]
    /// cancels it first. NTSTATUS of the registration on failure.
    pub fn notify_address_changes(&self, tasks: u32) -> Result<(), NTSTATUS> {
        self.notification_tasks.store(tasks, Ordering::Release);
        let context: PVOID = ptr::from_ref(self).cast_mut().cast();
        let mut handle: *mut c_void = ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; the context is this owner, which does not
        // move (the callers' allocations never do) and cancels the
        // registration in `close`, waiting for a running callback, before
        // it can go; the callback matches
        // PUNICAST_IPADDRESS_CHANGE_CALLBACK.
        let status = unsafe {
            NotifyUnicastIpAddressChange(
                AF_UNSPEC,
                Some(address_changed::<T>),
                context,
                1,
                &raw mut handle,
            )
        };
        if status < 0 {
            return Err(status);
        }
        self.notification.store(handle, Ordering::Release);
        Ok(())
    }

    /// Cancels the address notification, if registered (`PASSIVE_LEVEL`,
    /// never from the callback): when this returns no callback runs or
    /// will run.
    fn cancel_notification(&self) -> Result<(), NTSTATUS> {
        let handle = self.notification.swap(ptr::null_mut(), Ordering::AcqRel);
        if handle.is_null() {
            return Ok(());
        }
        // SAFETY: PASSIVE_LEVEL, outside the callback; the handle of our
        // registration, cancelled once (the swap took it). It waits for a
        // callback in progress.
        let status = unsafe { CancelMibChangeNotify2(handle) };
        if status < 0 { Err(status) } else { Ok(()) }
    }

    /// Stops everything (`PASSIVE_LEVEL`): when it returns the DPC is
    /// neither queued nor running, the timer is not armed, the work
    /// routine neither queued nor running, the address notification
    /// cancelled, and none of them can start again (module docs for the
    /// order). Idempotent. The status of a failed cancel of the
    /// notification (everything else is stopped anyway).
    pub fn close(&self) -> Result<(), NTSTATUS> {
        if self.stopped.load(Ordering::Acquire) {
            return Ok(());
        }
        // No callback queues the work item once this returns.
        let cancelled = self.cancel_notification();
        self.closed.store(true, Ordering::SeqCst);
        if !T::USES_DPC {
            self.wait_work();
            self.stopped.store(true, Ordering::Release);
            return cancelled;
        }
        // SAFETY: PASSIVE_LEVEL (this function's contract).
        unsafe { KeFlushQueuedDpcs() };
        self.wait_work();
        // SAFETY: the initialised timer of a live owner.
        unsafe { KeCancelTimer(self.timer.get()) };
        // SAFETY: the initialised DPC of a live owner.
        unsafe { KeRemoveQueueDpc(self.dpc.get()) };
        // SAFETY: PASSIVE_LEVEL (this function's contract).
        unsafe { KeFlushQueuedDpcs() };
        self.stopped.store(true, Ordering::Release);
        cancelled
    }
}

impl<T: DeferredRoutines> Drop for Deferred<T> {
    /// Closes the owner unless that was done (`PASSIVE_LEVEL` then), and
    /// frees the work item, which nothing has queued any more.
    fn drop(&mut self) {
        // A failed cancel (which the IP Helper documents for a bad handle
        // only) was the owner's to report from its own `close`.
        let _ = self.close();
        // SAFETY: allocated in `create`; not queued and its routine has
        // returned (`close` waited for the flag; nothing queues it after).
        unsafe { NdisFreeIoWorkItem(self.work_item.raw()) };
    }
}

/// The DPC routine (`DISPATCH_LEVEL`), for both the queue and the timer.
unsafe extern "win64" fn run_dpc<T: DeferredRoutines>(
    _dpc: *mut KDPC,
    context: PVOID,
    _a1: PVOID,
    _a2: PVOID,
) {
    // SAFETY: the context registered in `create` is the pinned owner,
    // alive until `close` has flushed this DPC.
    let this = unsafe { &*context.cast::<Deferred<T>>() };
    if !this.is_closed() {
        T::dpc(this);
    }
}

/// The work item's routine (`PASSIVE_LEVEL`).
unsafe extern "win64" fn run_work<T: DeferredRoutines>(context: PVOID, _item: NDIS_HANDLE) {
    // SAFETY: the owner queued itself and `close` waits for this routine to
    // drop WORK_QUEUED before the owner can go.
    let this = unsafe { &*context.cast::<Deferred<T>>() };
    this.run_work();
}

/// `PUNICAST_IPADDRESS_CHANGE_CALLBACK` (serialised; at an IRQL Microsoft
/// does not document, so only `<= DISPATCH_LEVEL` work here): whatever
/// changed, the work routine runs for the notification's tasks.
unsafe extern "win64" fn address_changed<T: DeferredRoutines>(
    context: PVOID,
    _row: *mut MIB_UNICASTIPADDRESS_ROW,
    _kind: MIB_NOTIFICATION_TYPE,
) {
    // SAFETY: the context registered in `notify_address_changes` is the
    // owner, alive until `close` cancelled the registration, which waits
    // for this callback to return.
    let this = unsafe { &*context.cast::<Deferred<T>>() };
    this.queue_work(this.notification_tasks.load(Ordering::Acquire));
}

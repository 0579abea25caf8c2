//! Unicast address change notifications: `NotifyUnicastIpAddressChange`
//! registrations and their delivery.
//!
//! Each registration has a queue and a thread of its own, a processor at
//! PASSIVE_LEVEL that calls the driver's callback once per queued change,
//! one at a time ("the invocation of the callback function ... is
//! serialized"). The stack's address changes reach every registration of
//! the change's family through an observer on [`crate::tcpip::global`],
//! in the order the table took them. The initial notification, when asked
//! for, is queued before the call returns, so it may run before the
//! caller has stored its handle, as on Windows.
//!
//! Microsoft documents no IRQL for the callback. The bottle calls it at
//! PASSIVE_LEVEL unless a test asks for another level
//! ([`deliver_at`], e.g. DISPATCH_LEVEL: the worst a driver must expect
//! from a kernel callback it is not told about).
//!
//! `CancelMibChangeNotify2` drops what is queued, waits for a running
//! callback to return and ends the thread. Called from the handle's own
//! callback it would wait for itself (a deadlock, the documentation warns):
//! the bottle reports it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{self, ThreadId};

use ndis::{
    MIB_NOTIFICATION_TYPE, MIB_UNICASTIPADDRESS_ROW, MibAddInstance, MibDeleteInstance,
    MibInitialNotification, MibParameterNotification, PASSIVE_LEVEL,
};

use super::iphelper_rows::{Family, key_row};
use crate::kernel::cpu;
use crate::tcpip::{self, AddressChange, ChangeKind};

/// The callback type (`PUNICAST_IPADDRESS_CHANGE_CALLBACK`, non-null).
pub type Callback = unsafe extern "win64" fn(
    CallerContext: *mut core::ffi::c_void,
    Row: *mut MIB_UNICASTIPADDRESS_ROW,
    NotificationType: MIB_NOTIFICATION_TYPE,
);

/// One queued notification: its type and, but for the initial one, the
/// row's key.
type Event = (MIB_NOTIFICATION_TYPE, Option<MIB_UNICASTIPADDRESS_ROW>);

struct Registration {
    family: Family,
    callback: Callback,
    context: usize,
    queue: VecDeque<Event>,
    /// The thread that delivers (set when it starts).
    worker: Option<ThreadId>,
    /// A callback runs now.
    running: bool,
    cancelled: bool,
    /// The thread has ended.
    exited: bool,
}

#[derive(Default)]
struct Registry {
    /// By handle (the address of a block in `handles`).
    live: BTreeMap<usize, Registration>,
    /// The memory behind every handle ever given out, so none is reused.
    #[expect(
        clippy::vec_box,
        reason = "a handle is the stable address of its own block"
    )]
    handles: Vec<Box<u64>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
static CHANGED: Condvar = Condvar::new();
static OBSERVING: OnceLock<u64> = OnceLock::new();

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    f(registry().get_or_insert_with(Registry::default))
}

fn notification_type(kind: ChangeKind) -> MIB_NOTIFICATION_TYPE {
    match kind {
        ChangeKind::Parameter => MibParameterNotification,
        ChangeKind::Added => MibAddInstance,
        ChangeKind::Deleted => MibDeleteInstance,
    }
}

/// Queues `change` for every live registration of its family (called by
/// the stack, under its lock: it only queues).
fn observe(change: &AddressChange) {
    let event = (notification_type(change.kind), Some(key_row(&change.row)));
    with(|r| {
        for reg in r.live.values_mut() {
            if !reg.cancelled && reg.family.holds(change.row.address.ip) {
                reg.queue.push_back(event);
            }
        }
    });
    CHANGED.notify_all();
}

/// Registrations not cancelled: a driver unloaded with one never called
/// `CancelMibChangeNotify2` (and its callback could still be called).
pub fn open() -> usize {
    with(|r| r.live.values().filter(|reg| !reg.cancelled).count())
}

/// Registers `callback`; the handle. The initial notification is queued
/// first if `initial`.
pub fn register(family: Family, callback: Callback, context: usize, initial: bool) -> usize {
    OBSERVING.get_or_init(|| tcpip::global().subscribe(Box::new(observe)));
    let handle = with(|r| {
        let block = Box::new(0u64);
        let handle = std::ptr::from_ref::<u64>(&block) as usize;
        r.handles.push(block);
        let mut queue = VecDeque::new();
        if initial {
            queue.push_back((MibInitialNotification, None));
        }
        r.live.insert(
            handle,
            Registration {
                family,
                callback,
                context,
                queue,
                worker: None,
                running: false,
                cancelled: false,
                exited: false,
            },
        );
        handle
    });
    let spawned = thread::Builder::new()
        .name(format!("netio-notify-{handle:x}"))
        .spawn(move || deliver(handle));
    if let Err(e) = spawned {
        // No thread: nothing will be delivered; the registration stays so
        // that its cancel still works.
        eprintln!("[kbottle netio] cannot start a notification thread: {e}");
        with(|r| {
            if let Some(reg) = r.live.get_mut(&handle) {
                reg.exited = true;
            }
        });
    }
    handle
}

/// The delivery thread of registration `handle`.
fn deliver(handle: usize) {
    cpu::enter(&format!("netio notify {handle:#x}"));
    let mut guard = registry();
    loop {
        let r = guard.get_or_insert_with(Registry::default);
        let Some(reg) = r.live.get_mut(&handle) else {
            return;
        };
        reg.worker = Some(thread::current().id());
        if reg.cancelled {
            reg.exited = true;
            drop(guard);
            CHANGED.notify_all();
            return;
        }
        let Some((kind, row)) = reg.queue.pop_front() else {
            guard = CHANGED.wait(guard).unwrap_or_else(PoisonError::into_inner);
            continue;
        };
        reg.running = true;
        let (callback, context) = (reg.callback, reg.context);
        drop(guard);
        call(callback, context, kind, row);
        guard = registry();
        if let Some(reg) = guard
            .get_or_insert_with(Registry::default)
            .live
            .get_mut(&handle)
        {
            reg.running = false;
        }
        CHANGED.notify_all();
    }
}

/// The IRQL callbacks are delivered at ([`deliver_at`]).
static CALLBACK_IRQL: AtomicU8 = AtomicU8::new(PASSIVE_LEVEL);

/// From now on every unicast address change callback of this process runs
/// at `irql` (PASSIVE_LEVEL or DISPATCH_LEVEL).
pub fn deliver_at(irql: ndis::KIRQL) {
    CALLBACK_IRQL.store(irql, Ordering::SeqCst);
}

/// Calls the driver's callback at the delivery IRQL ([`deliver_at`]) with
/// a row that lives for the call only (the memory "is managed by the
/// operating system").
fn call(
    callback: Callback,
    context: usize,
    kind: MIB_NOTIFICATION_TYPE,
    row: Option<MIB_UNICASTIPADDRESS_ROW>,
) {
    let mut row = row.map(Box::new);
    let row_ptr = row
        .as_deref_mut()
        .map_or(std::ptr::null_mut(), std::ptr::from_mut);
    let at = CALLBACK_IRQL.load(Ordering::SeqCst);
    let old = cpu::raise(at);
    // SAFETY: the driver's PUNICAST_IPADDRESS_CHANGE_CALLBACK, called at
    // the delivery IRQL on this processor with the context it registered
    // and a row (or null for the initial notification) valid for the call.
    unsafe { callback(context as *mut _, row_ptr, kind) };
    let irql = cpu::current();
    if irql != at {
        crate::ndis::checks::returned_at_raised_irql(
            "the unicast address change callback",
            callback as usize,
            at,
        );
    }
    cpu::lower(old);
    drop(row);
}

/// Why a cancel was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum CancelError {
    /// Not a live handle (never given out, or cancelled already).
    Unknown,
    /// Called from the handle's own callback: it would wait for itself.
    FromOwnCallback,
}

/// Cancels registration `handle`: nothing queued is delivered, a running
/// callback is waited for, the thread ends.
pub fn cancel(handle: usize) -> Result<(), CancelError> {
    let me = thread::current().id();
    let mut guard = registry();
    {
        let r = guard.get_or_insert_with(Registry::default);
        let Some(reg) = r.live.get_mut(&handle).filter(|reg| !reg.cancelled) else {
            return Err(CancelError::Unknown);
        };
        if reg.worker == Some(me) {
            return Err(CancelError::FromOwnCallback);
        }
        reg.cancelled = true;
        reg.queue.clear();
    }
    CHANGED.notify_all();
    loop {
        let r = guard.get_or_insert_with(Registry::default);
        let done = r
            .live
            .get(&handle)
            .is_none_or(|reg| reg.exited && !reg.running);
        if done {
            r.live.remove(&handle);
            return Ok(());
        }
        guard = CHANGED.wait(guard).unwrap_or_else(PoisonError::into_inner);
    }
}

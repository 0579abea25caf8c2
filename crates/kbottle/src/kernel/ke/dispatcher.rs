//! Timers, events and waits: the dispatcher objects, their side table,
//! and the timer thread.

#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

use ndis::{KDPC, KTIMER, LARGE_INTEGER};
use ndkpi::{BOOLEAN, NTSTATUS, PVOID};

use super::dpc::insert_dpc;
use super::layout::{
    DispatcherHeader, EVENT_NOTIFICATION_OBJECT, EVENT_SYNCHRONIZATION_OBJECT, KtimerLayout,
    TIMER_NOTIFICATION_OBJECT, TIMER_SYNCHRONIZATION_OBJECT, instant_of, store_signal_state,
    system_time,
};
use super::stall::{TIMER_FIRES, hook, hooked_on_return};
use super::{STATUS_SUCCESS, STATUS_TIMEOUT, require_irql_at_most, uninitialised};
use crate::kernel::cpu::{self, DISPATCH_LEVEL};
use crate::kernel::dpc_queue::dpcs;
use crate::kernel::verifier::{
    self, DRIVER_VERIFIER_DETECTED_VIOLATION, TIMER_OR_DPC_INVALID, UNMODELLED, firewall,
};
use crate::sync::lock;

#[derive(Debug)]
pub(super) enum Object {
    Event {
        synchronization: bool,
        signalled: bool,
    },
    Timer {
        synchronization: bool,
        signalled: bool,
        /// (due, sequence, DPC or 0).
        armed: Option<(Instant, u64, usize)>,
    },
}

#[derive(Debug, Default)]
pub(super) struct Objects {
    pub(super) table: HashMap<usize, Object>,
    /// Armed timers by due time: (due, sequence, timer).
    pub(super) heap: BTreeSet<(Instant, u64, usize)>,
    pub(super) next_seq: u64,
}

pub(super) static OBJECTS: OnceLock<Mutex<Objects>> = OnceLock::new();
/// Signalled on every object state change (waiters re-check).
pub(super) static WAIT_CV: Condvar = Condvar::new();
/// Signalled when the earliest timer may have changed.
pub(super) static TIMER_CV: Condvar = Condvar::new();
pub(super) static TIMER_THREAD: OnceLock<()> = OnceLock::new();

pub(super) fn objects() -> std::sync::MutexGuard<'static, Objects> {
    lock(OBJECTS.get_or_init(Mutex::default))
}

/// Binds an object the driver did not initialise through an import from
/// its header type (Wine's lazy binding), or None.
pub(super) fn bind_lazily(addr: usize) -> Option<Object> {
    // SAFETY: the driver passed `addr` as a dispatcher object; reading
    // its header (0x18 bytes) is what the kernel would do.
    let header = unsafe { (addr as *const DispatcherHeader).read_volatile() };
    let signalled = header.signal_state != 0;
    match header.kind {
        EVENT_NOTIFICATION_OBJECT | EVENT_SYNCHRONIZATION_OBJECT if header.size == 6 => {
            Some(Object::Event {
                synchronization: header.kind == EVENT_SYNCHRONIZATION_OBJECT,
                signalled,
            })
        }
        TIMER_NOTIFICATION_OBJECT | TIMER_SYNCHRONIZATION_OBJECT if header.size == 16 => {
            Some(Object::Timer {
                synchronization: header.kind == TIMER_SYNCHRONIZATION_OBJECT,
                signalled,
                armed: None,
            })
        }
        _ => None,
    }
}

/// Binds `addr` lazily unless the table knows it; false if it is no
/// object the bottle models.
pub(super) fn ensure_bound(objs: &mut Objects, addr: usize) -> bool {
    if let std::collections::hash_map::Entry::Vacant(e) = objs.table.entry(addr) {
        match bind_lazily(addr) {
            Some(o) => {
                e.insert(o);
            }
            None => return false,
        }
    }
    true
}

pub(super) fn ensure_timer_thread() {
    TIMER_THREAD.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("kbottle-timer".into())
            .spawn(timer_loop);
        if let Err(e) = spawned {
            eprintln!("kbottle: cannot start the timer thread: {e}");
        }
    });
}

pub(super) fn timer_loop() {
    cpu::enter("timer");
    let mut objs = objects();
    loop {
        let Some(&(due, seq, timer)) = objs.heap.first() else {
            objs = TIMER_CV
                .wait(objs)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            continue;
        };
        let now = Instant::now();
        if due > now {
            objs = TIMER_CV
                .wait_timeout(objs, due - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
            continue;
        }
        objs.heap.remove(&(due, seq, timer));
        let mut dpc = 0;
        if let Some(Object::Timer {
            signalled, armed, ..
        }) = objs.table.get_mut(&timer)
            && armed.is_some_and(|(_, s, _)| s == seq)
        {
            dpc = armed.map_or(0, |(_, _, d)| d);
            *armed = None;
            *signalled = true;
            // SAFETY: an armed timer's memory stays valid until it fires or
            // is cancelled (freeing it armed is caught by pool).
            unsafe { store_signal_state(timer, true) };
        }
        drop(objs);
        WAIT_CV.notify_all();
        TIMER_FIRES.fetch_add(1, Ordering::SeqCst);
        if dpc != 0 {
            let time = system_time();
            cpu::run_at_dispatch(|| {
                insert_dpc(
                    dpc,
                    time as u32 as usize,
                    (time >> 32) as u32 as usize,
                    "timer expiry",
                )
            });
        }
        objs = objects();
    }
}

/// Timers armed now.
pub fn armed_timers() -> usize {
    objects()
        .table
        .values()
        .filter(|o| matches!(o, Object::Timer { armed: Some(_), .. }))
        .count()
}

/// `KeInitializeTimerEx`.
pub unsafe extern "win64" fn KeInitializeTimerEx(Timer: *mut KTIMER, Type: i32) {
    firewall("KeInitializeTimerEx", || {
        require_irql_at_most(DISPATCH_LEVEL, "KeInitializeTimerEx");
        let timer = Timer as usize;
        let synchronization = Type == 1;
        if timer == 0 || !(0..=1).contains(&Type) {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, timer as u64, Type as u64, 0],
                format!("KeInitializeTimerEx({timer:#x}, {Type}): bad timer or type"),
            );
        }
        let mut objs = objects();
        if matches!(
            objs.table.get(&timer),
            Some(Object::Timer { armed: Some(_), .. })
        ) {
            drop(objs);
            verifier::bugcheck(
                TIMER_OR_DPC_INVALID,
                [0, timer as u64, timer as u64, timer as u64 + 0x40],
                format!("KeInitializeTimerEx on timer {timer:#x} while it is armed"),
            );
        }
        // SAFETY: the caller passes a writable KTIMER of 0x40 bytes.
        unsafe {
            Timer.cast::<KtimerLayout>().write(KtimerLayout {
                header: DispatcherHeader {
                    kind: if synchronization {
                        TIMER_SYNCHRONIZATION_OBJECT
                    } else {
                        TIMER_NOTIFICATION_OBJECT
                    },
                    signalling: 0,
                    size: 16,
                    reserved: 0,
                    signal_state: 0,
                    wait_list_head: [timer + 8, timer + 8],
                },
                due_time: 0,
                timer_list_entry: [0, 0],
                dpc: 0,
                processor: 0,
                period: 0,
            });
        };
        objs.table.insert(
            timer,
            Object::Timer {
                synchronization,
                signalled: false,
                armed: None,
            },
        );
    });
}

/// `KeSetTimer`: arms (or re-arms, replacing the due time) the timer;
/// TRUE if it was armed.
pub unsafe extern "win64" fn KeSetTimer(
    Timer: *mut KTIMER,
    DueTime: LARGE_INTEGER,
    Dpc: *mut KDPC,
) -> BOOLEAN {
    firewall("KeSetTimer", || {
        hook("KeSetTimer");
        require_irql_at_most(DISPATCH_LEVEL, "KeSetTimer");
        let timer = Timer as usize;
        let dpc = Dpc as usize;
        if dpc != 0 && !dpcs().objects.contains_key(&dpc) {
            uninitialised("KDPC", dpc, "KeSetTimer");
        }
        ensure_timer_thread();
        let due = instant_of(DueTime);
        let mut objs = objects();
        if !ensure_bound(&mut objs, timer) {
            drop(objs);
            uninitialised("KTIMER", timer, "KeSetTimer");
        }
        let seq = objs.next_seq;
        objs.next_seq += 1;
        let Some(Object::Timer {
            signalled, armed, ..
        }) = objs.table.get_mut(&timer)
        else {
            drop(objs);
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, timer as u64, 0, 0],
                format!("KeSetTimer on {timer:#x}, which is an event"),
            );
        };
        let was = armed.replace((due, seq, dpc));
        *signalled = false;
        // SAFETY: an initialised KTIMER the driver owns.
        unsafe { store_signal_state(timer, false) };
        // SAFETY: `timer` is an initialised KTIMER the driver owns (bound in the
        // object table above, whose lock `objs` holds); DueTime is its i64 at 0x18.
        unsafe { ((timer + 0x18) as *mut i64).write_volatile(DueTime) };
        // SAFETY: `timer` is an initialised KTIMER the driver owns (bound in the
        // object table above, whose lock `objs` holds); Dpc is its pointer at 0x30.
        unsafe { ((timer + 0x30) as *mut usize).write_volatile(dpc) };
        if let Some((old_due, old_seq, _)) = was {
            objs.heap.remove(&(old_due, old_seq, timer));
        }
        objs.heap.insert((due, seq, timer));
        drop(objs);
        TIMER_CV.notify_all();
        u8::from(was.is_some())
    })
}

/// `KeCancelTimer`: TRUE if the timer was armed.
pub unsafe extern "win64" fn KeCancelTimer(Timer: *mut KTIMER) -> BOOLEAN {
    firewall("KeCancelTimer", || {
        hooked_on_return("KeCancelTimer", || cancel_timer(Timer))
    })
}

pub(super) fn cancel_timer(timer: *mut KTIMER) -> BOOLEAN {
    {
        require_irql_at_most(DISPATCH_LEVEL, "KeCancelTimer");
        let timer = timer as usize;
        let mut objs = objects();
        let was = match objs.table.get_mut(&timer) {
            Some(Object::Timer { armed, .. }) => armed.take(),
            _ => None,
        };
        if let Some((due, seq, _)) = was {
            objs.heap.remove(&(due, seq, timer));
        }
        u8::from(was.is_some())
    }
}

/// `KeInitializeEvent`.
pub unsafe extern "win64" fn KeInitializeEvent(
    Event: *mut ndis::KEVENT,
    Type: i32,
    State: BOOLEAN,
) {
    firewall("KeInitializeEvent", || {
        let event = Event as usize;
        if event == 0 || !(0..=1).contains(&Type) {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, event as u64, Type as u64, 0],
                format!("KeInitializeEvent({event:#x}, {Type}): bad event or type"),
            );
        }
        // SAFETY: the caller passes a writable KEVENT of 0x18 bytes.
        unsafe {
            Event.cast::<DispatcherHeader>().write(DispatcherHeader {
                kind: Type as u8,
                signalling: 0,
                size: 6,
                reserved: 0,
                signal_state: i32::from(State != 0),
                wait_list_head: [event + 8, event + 8],
            });
        };
        objects().table.insert(
            event,
            Object::Event {
                synchronization: Type == 1,
                signalled: State != 0,
            },
        );
    });
}

/// `KeSetEvent`: signals; returns the previous state.
pub unsafe extern "win64" fn KeSetEvent(
    Event: *mut ndis::KEVENT,
    Increment: i32,
    Wait: BOOLEAN,
) -> i32 {
    let _ = (Increment, Wait);
    firewall("KeSetEvent", || {
        hook("KeSetEvent");
        let event = Event as usize;
        let irql = cpu::current();
        if irql > DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x80, u64::from(irql), event as u64, 0],
                format!("KeSetEvent at IRQL {irql}"),
            );
        }
        let mut objs = objects();
        if !ensure_bound(&mut objs, event) {
            drop(objs);
            uninitialised("KEVENT", event, "KeSetEvent");
        }
        let Some(Object::Event { signalled, .. }) = objs.table.get_mut(&event) else {
            drop(objs);
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, event as u64, 0, 0],
                format!("KeSetEvent on {event:#x}, which is a timer"),
            );
        };
        let previous = *signalled;
        *signalled = true;
        // SAFETY: an initialised KEVENT the driver owns.
        unsafe { store_signal_state(event, true) };
        drop(objs);
        WAIT_CV.notify_all();
        i32::from(previous)
    })
}

/// The IRQL rules of a wait: > DISPATCH 0xC4/0x120; at DISPATCH with no
/// timeout 0x121, with a nonzero one 0x122.
pub(super) fn check_wait_irql(object: usize, timeout: Option<i64>, api: &str) {
    let irql = cpu::current();
    let p1 = if irql > DISPATCH_LEVEL {
        0x120
    } else if irql == DISPATCH_LEVEL && timeout.is_none() {
        0x121
    } else if irql == DISPATCH_LEVEL && timeout != Some(0) {
        0x122
    } else {
        return;
    };
    verifier::bugcheck(
        DRIVER_VERIFIER_DETECTED_VIOLATION,
        [
            p1,
            u64::from(irql),
            object as u64,
            timeout.unwrap_or(0) as u64,
        ],
        format!("{api} at IRQL {irql} with timeout {timeout:?} (100 ns units)"),
    );
}

/// `KeWaitForSingleObject` on an event or timer: `STATUS_SUCCESS` or
/// `STATUS_TIMEOUT`.
pub unsafe extern "win64" fn KeWaitForSingleObject(
    Object: PVOID,
    WaitReason: i32,
    WaitMode: i8,
    Alertable: BOOLEAN,
    Timeout: *mut LARGE_INTEGER,
) -> NTSTATUS {
    let _ = (WaitReason, Alertable);
    firewall("KeWaitForSingleObject", || {
        hook("KeWaitForSingleObject");
        let object = Object as usize;
        let timeout = (!Timeout.is_null()).then(|| {
            // SAFETY: a non-null Timeout points to a LARGE_INTEGER.
            unsafe { Timeout.read_unaligned() }
        });
        check_wait_irql(object, timeout, "KeWaitForSingleObject");
        if WaitMode != ndis::KernelMode {
            verifier::bugcheck(
                UNMODELLED,
                [object as u64, WaitMode as u64, 0, 0],
                "KeWaitForSingleObject with UserMode: the bottle models kernel-mode waits only",
            );
        }
        let deadline = timeout.map(instant_of);
        let mut objs = objects();
        if !ensure_bound(&mut objs, object) {
            {
                drop(objs);
                verifier::bugcheck(
                    UNMODELLED,
                    [object as u64, 0, 0, 0],
                    format!(
                        "KeWaitForSingleObject on {object:#x}: not an event or timer the bottle knows"
                    ),
                );
            }
        }
        loop {
            match objs.table.get_mut(&object) {
                Some(
                    Object::Event {
                        synchronization,
                        signalled,
                    }
                    | Object::Timer {
                        synchronization,
                        signalled,
                        ..
                    },
                ) if *signalled => {
                    if *synchronization {
                        *signalled = false;
                        // SAFETY: the object the driver waits on is valid
                        // for the wait.
                        unsafe { store_signal_state(object, false) };
                    }
                    return STATUS_SUCCESS;
                }
                Some(_) => {}
                None => {
                    drop(objs);
                    verifier::bugcheck(
                        DRIVER_VERIFIER_DETECTED_VIOLATION,
                        [0x16, object as u64, 0, 0],
                        format!("object {object:#x} was freed during a wait on it"),
                    );
                }
            }
            let now = Instant::now();
            objs = match deadline {
                Some(d) if d <= now => return STATUS_TIMEOUT,
                Some(d) => {
                    WAIT_CV
                        .wait_timeout(objs, d - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
                None => WAIT_CV
                    .wait(objs)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            };
        }
    })
}

/// `KeDelayExecutionThread`: sleeps (`<= APC_LEVEL`).
pub unsafe extern "win64" fn KeDelayExecutionThread(
    WaitMode: i8,
    Alertable: BOOLEAN,
    Interval: *mut LARGE_INTEGER,
) -> NTSTATUS {
    let _ = (WaitMode, Alertable);
    firewall("KeDelayExecutionThread", || {
        hook("KeDelayExecutionThread");
        if Interval.is_null() {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, 0, 0, 0],
                "KeDelayExecutionThread with a null Interval",
            );
        }
        // SAFETY: a non-null Interval points to a LARGE_INTEGER.
        let interval = unsafe { Interval.read_unaligned() };
        let irql = cpu::current();
        if irql >= DISPATCH_LEVEL {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [
                    if irql > DISPATCH_LEVEL { 0x120 } else { 0x122 },
                    u64::from(irql),
                    0,
                    interval as u64,
                ],
                format!("KeDelayExecutionThread at IRQL {irql} (allowed: <= APC_LEVEL)"),
            );
        }
        let until = instant_of(interval);
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
        STATUS_SUCCESS
    })
}

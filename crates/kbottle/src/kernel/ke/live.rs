//! Live kernel objects in a memory range (pool free and unload checks).

use std::ops::Range;

use super::dispatcher::{Object, objects};
use super::spinlock::SPIN_LOCKS;
use crate::kernel::dpc_queue::{DpcState, dpcs};
use crate::sync::lock;

/// What [`live_objects_in`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveKind {
    /// An armed `KTIMER`.
    ArmedTimer,
    /// A queued `KDPC`.
    QueuedDpc,
    /// A held `KSPIN_LOCK`.
    HeldSpinLock,
    /// A `KDPC` an armed timer (elsewhere) will queue when it fires.
    TimerDpc,
}

/// A live kernel object in a memory range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveObject {
    /// What it is.
    pub kind: LiveKind,
    /// Its address.
    pub addr: usize,
    /// For a DPC or a timer with a DPC: the deferred routine.
    pub routine: Option<usize>,
}

/// Armed timers, queued DPCs, held spin locks and DPCs an armed timer
/// will queue, inside `range`.
pub fn live_objects_in(range: Range<usize>) -> Vec<LiveObject> {
    let mut out = Vec::new();
    let routine_of = |st: &DpcState, dpc: usize| st.objects.get(&dpc).map(|o| o.routine);
    {
        let st = dpcs();
        for (&addr, o) in &st.objects {
            if range.contains(&addr) && o.queued.is_some() {
                out.push(LiveObject {
                    kind: LiveKind::QueuedDpc,
                    addr,
                    routine: Some(o.routine),
                });
            }
        }
        let objs = objects();
        for (&addr, o) in &objs.table {
            let Object::Timer {
                armed: Some((_, _, dpc)),
                ..
            } = o
            else {
                continue;
            };
            if range.contains(&addr) {
                out.push(LiveObject {
                    kind: LiveKind::ArmedTimer,
                    addr,
                    routine: routine_of(&st, *dpc),
                });
            } else if *dpc != 0 && range.contains(dpc) {
                out.push(LiveObject {
                    kind: LiveKind::TimerDpc,
                    addr: *dpc,
                    routine: routine_of(&st, *dpc),
                });
            }
        }
    }
    for &(addr, _, _) in lock(&SPIN_LOCKS).iter() {
        if range.contains(&addr) {
            out.push(LiveObject {
                kind: LiveKind::HeldSpinLock,
                addr,
                routine: None,
            });
        }
    }
    out.sort_by_key(|o| o.addr);
    out
}

/// Queued DPCs and armed timers whose routine lies inside `range` (an
/// image being unloaded: 0xC7 P1 2).
pub fn routines_in(range: Range<usize>) -> Vec<LiveObject> {
    live_objects_in(0..usize::MAX)
        .into_iter()
        .filter(|o| o.routine.is_some_and(|r| range.contains(&r)))
        .collect()
}

/// Forgets every object inside `range` that is not live (its memory is
/// being freed or unmapped), so a later object at the same address
/// starts fresh.
pub fn forget_objects_in(range: Range<usize>) {
    super::lock_order::forget(range.clone());
    dpcs()
        .objects
        .retain(|a, o| !range.contains(a) || o.queued.is_some());
    objects()
        .table
        .retain(|a, o| !range.contains(a) || matches!(o, Object::Timer { armed: Some(_), .. }));
}

//! DPCs: `KeInitializeDpc`, `KeInsertQueueDpc`, `KeRemoveQueueDpc`,
//! `KeFlushQueuedDpcs`, over the per-processor queues (`dpc_queue`, with
//! the processor) that `cpu::lower` drains.

#![expect(
    clippy::missing_safety_doc,
    reason = "imports follow the WDK contract of the same name"
)]

use std::collections::VecDeque;
use std::time::Duration;

use ndis::{KDEFERRED_ROUTINE, KDPC};
use ndkpi::{BOOLEAN, PVOID};

use super::layout::{DPC_DATA, DPC_OBJECT, DPC_SYSTEM_ARGUMENT1, KdpcLayout, MEDIUM_IMPORTANCE};
use super::stall::{hook, hooked_on_return};
use super::{require_irql_at_most, uninitialised};
use crate::kernel::cpu::{self, DISPATCH_LEVEL};
use crate::kernel::dpc_queue::{DPC_CV, DpcObject, dpcs};
use crate::kernel::verifier::{
    self, DRIVER_VERIFIER_DETECTED_VIOLATION, TIMER_OR_DPC_INVALID, firewall,
};

/// Queues `dpc` on this processor; false if it is queued anywhere. Runs
/// it (and anything else queued here) at once when below
/// `DISPATCH_LEVEL`.
pub(super) fn insert_dpc(dpc: usize, sa1: usize, sa2: usize, api: &str) -> bool {
    let p = cpu::this();
    {
        let mut st = dpcs();
        let seq = st.next_seq;
        let Some(obj) = st.objects.get_mut(&dpc) else {
            drop(st);
            uninitialised("KDPC", dpc, api);
        };
        if obj.queued.is_some() {
            return false;
        }
        obj.queued = Some((p.id, seq, sa1, sa2));
        st.next_seq += 1;
        st.queues.entry(p.id).or_default().push_back((dpc, seq));
        // SAFETY: `dpc` is an initialised KDPC the driver owns (it is in
        // the table); SystemArgument1/2 are consecutive words at 0x28.
        unsafe { ((dpc + DPC_SYSTEM_ARGUMENT1) as *mut [usize; 2]).write_volatile([sa1, sa2]) };
        // SAFETY: `dpc` is an initialised KDPC the driver owns (found in the DPC
        // table, whose lock `st` holds); DpcData (0x38) is non-null while queued.
        unsafe { ((dpc + DPC_DATA) as *mut usize).write_volatile(1) };
    }
    if cpu::current() < DISPATCH_LEVEL {
        cpu::run_at_dispatch(|| ());
    }
    true
}

/// DPCs queued now (all processors).
pub fn queued_dpcs() -> usize {
    dpcs().queues.values().map(VecDeque::len).sum()
}

/// `KeInitializeDpc`.
pub unsafe extern "win64" fn KeInitializeDpc(
    Dpc: *mut KDPC,
    DeferredRoutine: Option<KDEFERRED_ROUTINE>,
    DeferredContext: PVOID,
) {
    firewall("KeInitializeDpc", || {
        let dpc = Dpc as usize;
        let routine = DeferredRoutine.map_or(0, |f| f as usize);
        if dpc == 0 || routine == 0 {
            verifier::bugcheck(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [0x16, dpc as u64, routine as u64, 0],
                "KeInitializeDpc with a null DPC or routine",
            );
        }
        let mut st = dpcs();
        if st.objects.get(&dpc).is_some_and(|o| o.queued.is_some()) {
            drop(st);
            verifier::bugcheck(
                TIMER_OR_DPC_INVALID,
                [1, dpc as u64, dpc as u64, dpc as u64 + 0x40],
                format!("KeInitializeDpc on DPC {dpc:#x} while it is queued"),
            );
        }
        // SAFETY: the caller passes a writable KDPC of 0x40 bytes.
        unsafe {
            Dpc.cast::<KdpcLayout>().write(KdpcLayout {
                kind: DPC_OBJECT,
                importance: MEDIUM_IMPORTANCE,
                number: 0,
                reserved: 0,
                dpc_list_entry: 0,
                processor_history: 0,
                deferred_routine: routine,
                deferred_context: DeferredContext as usize,
                system_argument1: 0,
                system_argument2: 0,
                dpc_data: 0,
            });
        };
        st.objects.insert(
            dpc,
            DpcObject {
                routine,
                context: DeferredContext as usize,
                queued: None,
            },
        );
    });
}

/// `KeInsertQueueDpc`: TRUE if queued, FALSE if it already was.
pub unsafe extern "win64" fn KeInsertQueueDpc(
    Dpc: *mut KDPC,
    SystemArgument1: PVOID,
    SystemArgument2: PVOID,
) -> BOOLEAN {
    firewall("KeInsertQueueDpc", || {
        hook("KeInsertQueueDpc");
        u8::from(insert_dpc(
            Dpc as usize,
            SystemArgument1 as usize,
            SystemArgument2 as usize,
            "KeInsertQueueDpc",
        ))
    })
}

/// `KeRemoveQueueDpc`: TRUE if it was queued.
pub unsafe extern "win64" fn KeRemoveQueueDpc(Dpc: *mut KDPC) -> BOOLEAN {
    firewall("KeRemoveQueueDpc", || {
        hooked_on_return("KeRemoveQueueDpc", || remove_dpc(Dpc as usize))
    })
}

pub(super) fn remove_dpc(dpc: usize) -> BOOLEAN {
    let mut st = dpcs();
    let Some(obj) = st.objects.get_mut(&dpc) else {
        drop(st);
        uninitialised("KDPC", dpc, "KeRemoveQueueDpc");
    };
    let Some((proc_id, seq, _, _)) = obj.queued.take() else {
        return 0;
    };
    if let Some(q) = st.queues.get_mut(&proc_id) {
        q.retain(|&(d, s)| !(d == dpc && s == seq));
    }
    // SAFETY: an initialised KDPC the driver owns; DpcData cleared.
    unsafe { ((dpc + DPC_DATA) as *mut usize).write_volatile(0) };
    drop(st);
    DPC_CV.notify_all();
    1
}

/// `KeFlushQueuedDpcs` (`PASSIVE_LEVEL`): returns when every DPC queued or
/// running at the time of the call has run or been removed, on every
/// processor (not stopped by a bugcheck).
pub unsafe extern "win64" fn KeFlushQueuedDpcs() {
    firewall("KeFlushQueuedDpcs", || {
        hook("KeFlushQueuedDpcs");
        require_irql_at_most(cpu::PASSIVE_LEVEL, "KeFlushQueuedDpcs");
        let mut st = dpcs();
        let horizon = st.next_seq;
        loop {
            let pending = st
                .queues
                .iter()
                .any(|(id, q)| q.iter().any(|&(_, s)| s < horizon) && !cpu::is_halted(*id))
                || st
                    .running
                    .iter()
                    .any(|(id, &(_, s))| s < horizon && !cpu::is_halted(*id));
            if !pending {
                return;
            }
            st = DPC_CV
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    });
}

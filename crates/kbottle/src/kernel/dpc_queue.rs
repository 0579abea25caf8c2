//! The per-processor DPC queues and the DPC objects they hold, and the
//! drain that runs a processor's queue at `DISPATCH_LEVEL` when
//! [`super::cpu::lower`] drops below it. Kept with the processor, under
//! ke's DPC imports ([`super::ke`]: `KeInsertQueueDpc` and the rest put
//! DPCs here), as the queue belongs to the processor while the imports
//! are the driver's view of it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use ndis::{KDEFERRED_ROUTINE, KDPC};
use ndkpi::PVOID;

use super::ke::layout::DPC_DATA;
use super::processor::{self, DISPATCH_LEVEL, Processor};
use super::verifier::{self, IRQL_UNEXPECTED_VALUE};
use crate::sync::lock;

/// DPC routines run so far.
pub(crate) static DPC_RUNS: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
pub(crate) struct DpcObject {
    pub(crate) routine: usize,
    pub(crate) context: usize,
    /// (processor, sequence number, SystemArgument1, SystemArgument2).
    pub(crate) queued: Option<(u32, u64, usize, usize)>,
}

#[derive(Debug, Default)]
pub(crate) struct DpcState {
    pub(crate) objects: HashMap<usize, DpcObject>,
    pub(crate) queues: HashMap<u32, VecDeque<(usize, u64)>>,
    /// Per processor: the DPC running there and its sequence number.
    pub(crate) running: HashMap<u32, (usize, u64)>,
    pub(crate) next_seq: u64,
}

pub(crate) static DPCS: OnceLock<Mutex<DpcState>> = OnceLock::new();
pub(crate) static DPC_CV: Condvar = Condvar::new();

pub(crate) fn dpcs() -> std::sync::MutexGuard<'static, DpcState> {
    lock(DPCS.get_or_init(Mutex::default))
}

/// Runs every DPC queued on processor `p` (the caller is `p`, at
/// `DISPATCH_LEVEL`, lowering below it).
pub(crate) fn drain_dpcs(p: &Arc<Processor>) {
    loop {
        let (dpc, seq, routine, context, sa1, sa2) = {
            let mut st = dpcs();
            let Some((dpc, seq)) = st.queues.get_mut(&p.id).and_then(VecDeque::pop_front) else {
                return;
            };
            let Some(obj) = st.objects.get_mut(&dpc) else {
                continue;
            };
            let Some((_, _, sa1, sa2)) = obj.queued.take() else {
                continue;
            };
            let (routine, context) = (obj.routine, obj.context);
            st.running.insert(p.id, (dpc, seq));
            // SAFETY: a queued KDPC is driver memory that must stay valid
            // until it runs (freeing it while queued is caught by pool).
            unsafe { ((dpc + DPC_DATA) as *mut usize).write_volatile(0) };
            (dpc, seq, routine, context, sa1, sa2)
        };
        let _ = seq;
        processor::set_in_dpc(p, true);
        // SAFETY: `routine` came from KeInitializeDpc, a KDEFERRED_ROUTINE
        // of the loaded image (non-null: checked there).
        let f: KDEFERRED_ROUTINE =
            unsafe { std::mem::transmute::<usize, KDEFERRED_ROUTINE>(routine) };
        // SAFETY: the DPC contract: called at DISPATCH_LEVEL with its
        // object, context and the two insertion arguments.
        unsafe {
            f(
                dpc as *mut KDPC,
                context as PVOID,
                sa1 as PVOID,
                sa2 as PVOID,
            );
        }
        processor::set_in_dpc(p, false);
        DPC_RUNS.fetch_add(1, Ordering::SeqCst);
        let now = processor::current();
        if now != DISPATCH_LEVEL {
            verifier::bugcheck(
                IRQL_UNEXPECTED_VALUE,
                [
                    (u64::from(now) << 16) | (u64::from(DISPATCH_LEVEL) << 8) | 0xFE,
                    routine as u64,
                    dpc as u64,
                    0,
                ],
                format!(
                    "DPC routine {} returned at IRQL {now}, not DISPATCH_LEVEL",
                    crate::loader::pe::describe(routine)
                ),
            );
        }
        dpcs().running.remove(&p.id);
        DPC_CV.notify_all();
    }
}

/// Whether no DPC is queued or running anywhere.
pub(crate) fn dpcs_idle() -> bool {
    let st = dpcs();
    st.running.is_empty() && st.queues.values().all(VecDeque::is_empty)
}

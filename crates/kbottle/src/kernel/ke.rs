//! The kernel's dispatcher services: DPCs, timers, events, waits, spin
//! locks, IRQL, time, processor numbers, `KeBugCheckEx`, `DbgBreakPoint`.
//!
//! Kernel objects live in driver memory; the bottle keeps their state in
//! side tables keyed by address and also fills the real header fields
//! (`Type`, `Size`, `SignalState`, the KDPC routine and arguments), so an
//! inline macro reading them sees sane values. An object the driver never
//! initialised through an import is bound lazily from its header type, as
//! Wine does, or is a violation.
//!
//! DPC model: a DPC is queued on the processor that inserts it. Inserted
//! below `DISPATCH_LEVEL` it runs at once, on that thread, at
//! `DISPATCH_LEVEL`, before `KeInsertQueueDpc` returns (what a processor
//! does when the DISPATCH software interrupt is unmasked); inserted at or
//! above, it runs when that processor lowers below `DISPATCH_LEVEL`.
//! Timers fire on one timer thread (processor "timer"), which queues the
//! timer's DPC there and runs it at `DISPATCH_LEVEL`.
//!
//! Files: `dpc` (the DPC imports, over the per-processor queues of
//! `kernel::dpc_queue`), `dispatcher`
//! (timers, events, waits, the timer thread), `spinlock` (spin locks and
//! the IRQL imports), `ex_spinlock` (reader/writer spin locks),
//! `lock_order` (Verifier's deadlock detection over spin locks), `system`
//! (time, processor numbers, bug checks), `live` (live objects in a memory
//! range), `stall` (call counters and the test stall), `layout` (the x64
//! object layouts the bottle fills in).

mod dispatcher;
mod dpc;
mod ex_spinlock;
pub(super) mod layout;
mod live;
mod lock_order;
mod spinlock;
mod stall;
mod system;

pub use dispatcher::*;
pub use dpc::*;
pub use ex_spinlock::*;
pub use layout::system_time;
pub use live::*;
pub use lock_order::{OrderViolation, lock_order_edges};
pub use spinlock::*;
pub use stall::*;
pub use system::*;

use ndis::KIRQL;
use ndkpi::NTSTATUS;

use crate::export;
use crate::export::Export;
use crate::kernel::cpu;
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION};

/// `STATUS_SUCCESS`.
pub const STATUS_SUCCESS: NTSTATUS = 0;
/// `STATUS_TIMEOUT`.
pub const STATUS_TIMEOUT: NTSTATUS = 0x102;
/// Performance counter frequency (10 MHz).
pub const PERFORMANCE_FREQUENCY: i64 = 10_000_000;

/// 0xC4/0xE5 ("a kernel API at the incorrect IRQL") unless the current
/// IRQL is at most `max`.
pub(crate) fn require_irql_at_most(max: KIRQL, api: &str) -> KIRQL {
    let irql = cpu::current();
    if irql > max {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0xE5, u64::from(irql), 0, 0],
            format!("{api} called at IRQL {irql} (allowed: <= {max})"),
        );
    }
    irql
}

/// 0xC4/0x1002: an object used before its `KeInitialize*` call.
pub(crate) fn uninitialised(kind: &str, addr: usize, api: &str) -> ! {
    verifier::bugcheck(
        DRIVER_VERIFIER_DETECTED_VIOLATION,
        [0x1002, addr as u64, 0, 0],
        format!("{api}: {kind} at {addr:#x} was never initialised"),
    )
}

/// Every ke import.
pub fn exports() -> Vec<Export> {
    vec![
        export!("ntoskrnl.exe", KeInitializeDpc),
        export!("ntoskrnl.exe", KeInsertQueueDpc),
        export!("ntoskrnl.exe", KeRemoveQueueDpc),
        export!("ntoskrnl.exe", KeFlushQueuedDpcs),
        export!("ntoskrnl.exe", KeInitializeTimerEx),
        export!("ntoskrnl.exe", KeSetTimer),
        export!("ntoskrnl.exe", KeCancelTimer),
        export!("ntoskrnl.exe", KeInitializeEvent),
        export!("ntoskrnl.exe", KeSetEvent),
        export!("ntoskrnl.exe", KeWaitForSingleObject),
        export!("ntoskrnl.exe", KeDelayExecutionThread),
        export!("ntoskrnl.exe", KeQueryPerformanceCounter),
        // wdm.h declares it NTHALAPI: drivers import it from HAL.dll.
        export!("HAL.dll", "KeQueryPerformanceCounter" => KeQueryPerformanceCounter),
        export!("ntoskrnl.exe", KeGetCurrentProcessorNumberEx),
        export!("ntoskrnl.exe", KeBugCheckEx),
        export!("ntoskrnl.exe", DbgBreakPoint),
        export!("ntoskrnl.exe", KfRaiseIrql),
        export!("ntoskrnl.exe", KeLowerIrql),
        export!("ntoskrnl.exe", KeGetCurrentIrql),
        export!("ntoskrnl.exe", KeAcquireSpinLockRaiseToDpc),
        export!("ntoskrnl.exe", KeReleaseSpinLock),
        export!("ntoskrnl.exe", ExAcquireSpinLockShared),
        export!("ntoskrnl.exe", ExReleaseSpinLockShared),
        export!("ntoskrnl.exe", ExAcquireSpinLockExclusive),
        export!("ntoskrnl.exe", ExReleaseSpinLockExclusive),
    ]
}

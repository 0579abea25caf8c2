//! The IRQL of the calling processor: `KfRaiseIrql`, `KeLowerIrql` and
//! the way into driver code at `DISPATCH_LEVEL`. Lowering below
//! `DISPATCH_LEVEL` runs the processor's queued DPCs (`dpc_queue`); the
//! first raise to `DISPATCH_LEVEL` starts the DPC watchdog (`watchdog`),
//! which only ever counts time spent there. The processors themselves are
//! `processor`, whose public names this module also carries
//! (`kbottle::cpu::current`).

use super::processor::set_irql;
pub use super::processor::{
    APC_LEVEL, DISPATCH_LEVEL, HIGH_LEVEL, KIRQL, PASSIVE_LEVEL, PROFILE_LEVEL, current,
    current_name, current_number, enter, in_dpc, processor_count,
};
pub(crate) use super::processor::{is_halted, now_ns, pause_watchdog, this};
use super::{dpc_queue, watchdog};
use crate::kernel::verifier::{self, DRIVER_VERIFIER_DETECTED_VIOLATION, IRQL_UNEXPECTED_VALUE};

/// `KfRaiseIrql`: raises to `new` and returns the previous IRQL. Raising to
/// a lower level or above `HIGH_LEVEL` is 0xC4/0x30.
pub fn raise(new: KIRQL) -> KIRQL {
    let p = this();
    let old = p.irql();
    if new < old || new > HIGH_LEVEL {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x30, u64::from(old), u64::from(new), 0],
            format!("KeRaiseIrql/KfRaiseIrql to {new} from IRQL {old}: not a raise"),
        );
    }
    if new >= DISPATCH_LEVEL {
        watchdog::start();
    }
    set_irql(&p, new);
    old
}

/// `KeLowerIrql`: lowers to `new`. Raising through it, or lowering below
/// `DISPATCH_LEVEL` inside a DPC, is 0xC4/0x31. Dropping below
/// `DISPATCH_LEVEL` first runs this processor's queued DPCs at
/// `DISPATCH_LEVEL`.
pub fn lower(new: KIRQL) {
    let p = this();
    let old = p.irql();
    if new > old || new > HIGH_LEVEL {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x31, u64::from(old), u64::from(new), 0],
            format!("KeLowerIrql to {new} from IRQL {old}: not a lowering"),
        );
    }
    if new < DISPATCH_LEVEL && p.in_dpc_routine() {
        verifier::bugcheck(
            DRIVER_VERIFIER_DETECTED_VIOLATION,
            [0x31, u64::from(old), u64::from(new), 1],
            format!("KeLowerIrql to {new} inside a DPC routine"),
        );
    }
    if new < DISPATCH_LEVEL && old >= DISPATCH_LEVEL {
        set_irql(&p, DISPATCH_LEVEL);
        dpc_queue::drain_dpcs(&p);
    }
    set_irql(&p, new);
}

/// Raises to `DISPATCH_LEVEL`, runs `f`, checks it returned at
/// `DISPATCH_LEVEL` (0xC8 otherwise) and lowers back, delivering DPCs
/// queued meanwhile: how a timer expiry, a network receive or a DPC
/// delivery enters the driver. Already at `DISPATCH_LEVEL`, `f` just runs.
pub fn run_at_dispatch<R>(f: impl FnOnce() -> R) -> R {
    let old = raise(DISPATCH_LEVEL);
    let r = f();
    let now = current();
    if now != DISPATCH_LEVEL {
        verifier::bugcheck(
            IRQL_UNEXPECTED_VALUE,
            [
                (u64::from(now) << 16) | (u64::from(DISPATCH_LEVEL) << 8) | 0xFF,
                0,
                0,
                0,
            ],
            format!("driver code entered at DISPATCH_LEVEL returned at IRQL {now}"),
        );
    }
    lower(old);
    r
}

/// Whether no DPC is queued or running on any processor
/// (`KeFlushQueuedDpcs` waits for the DPCs queued before it; this is the
/// stricter "all quiet" test).
pub fn is_processor_idle_everywhere() -> bool {
    dpc_queue::dpcs_idle()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raise_and_lower_track_the_level() {
        std::thread::spawn(|| {
            enter("cpu-test");
            assert_eq!(current(), PASSIVE_LEVEL);
            assert_eq!(raise(DISPATCH_LEVEL), PASSIVE_LEVEL);
            assert_eq!(current(), DISPATCH_LEVEL);
            lower(PASSIVE_LEVEL);
            assert_eq!(current(), PASSIVE_LEVEL);
            assert_eq!(current_name(), "cpu-test");
            assert_eq!(run_at_dispatch(current), DISPATCH_LEVEL);
        })
        .join()
        .unwrap();
    }
}

//! The DPC watchdog: a thread that looks at every processor each 10 ms
//! and files 0x133 `DPC_WATCHDOG_VIOLATION` for one that ran one DPC, or
//! stayed at or above `DISPATCH_LEVEL`, longer than the limits of
//! [`super::verifier::set_watchdog_limits`]; under `Policy::Park` it then
//! stops that processor. It sits above the processors, the verifier and
//! the park signal it uses, and below [`super::cpu`], whose first raise to
//! `DISPATCH_LEVEL` starts it.

use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::processor;
use super::verifier::{
    CUMULATIVE_LIMIT_NS, DPC_WATCHDOG_VIOLATION, Policy, SINGLE_LIMIT_NS, policy, record,
};

static WATCHDOG: OnceLock<()> = OnceLock::new();

/// Starts the watchdog thread once (the first raise to `DISPATCH_LEVEL`
/// does it: before that no processor has time there to count).
pub(crate) fn start() {
    WATCHDOG.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("kbottle-watchdog".into())
            .spawn(watchdog_loop);
        if let Err(e) = spawned {
            eprintln!("kbottle: cannot start the DPC watchdog: {e}");
        }
    });
}

fn watchdog_loop() {
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let single = SINGLE_LIMIT_NS.load(Ordering::SeqCst);
        let cumulative = CUMULATIVE_LIMIT_NS.load(Ordering::SeqCst);
        for p in processor::watch_list() {
            let (kind, spent, limit) = if p.in_dpc_ns > single {
                (0, p.in_dpc_ns, single)
            } else if p.at_dispatch_ns > cumulative {
                (1, p.at_dispatch_ns, cumulative)
            } else {
                continue;
            };
            // Ticks of 100 ns, as the watchdog parameters count time.
            let rule = if kind == 0 {
                format!(
                    "DPC watchdog: one DPC ran {} ms on processor {} (limit {} ms)",
                    spent / 1_000_000,
                    p.name,
                    limit / 1_000_000
                )
            } else {
                format!(
                    "DPC watchdog: processor {} stayed at IRQL >= DISPATCH_LEVEL for {} ms (limit {} ms)",
                    p.name,
                    spent / 1_000_000,
                    limit / 1_000_000
                )
            };
            let params = if kind == 0 {
                [0, spent / 100, limit / 100, 0]
            } else {
                [1, limit / 100, 0, 0]
            };
            record(DPC_WATCHDOG_VIOLATION, params, rule, p.name.clone(), false);
            if policy() == Policy::Abort {
                std::process::abort();
            }
            processor::stop_processor(p.id);
        }
    }
}

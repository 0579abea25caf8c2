//! Time from the performance counter (`KeQueryPerformanceCounter`): one
//! monotonic source for the provider (`now_ns`) and the software RNIC's
//! timers (`now_us`, which the engine's DPC and the receive path read and
//! pass to the device: it keeps no clock). Callable at any IRQL.

use core::sync::atomic::{AtomicI64, Ordering};

use super::kit::kernel;

/// Counter ticks per second, read once (the frequency never changes
/// while the system runs).
static FREQUENCY: AtomicI64 = AtomicI64::new(0);

fn ticks_and_frequency() -> (u64, u64) {
    let mut freq = FREQUENCY.load(Ordering::Relaxed);
    let ticks = if freq > 0 {
        kernel::performance_counter()
    } else {
        let (t, f) = kernel::performance_counter_and_frequency();
        freq = f;
        FREQUENCY.store(freq, Ordering::Relaxed);
        t
    };
    (ticks.max(0) as u64, freq.max(1) as u64)
}

/// Monotonic time in `unit`ths of a second (1e9: ns, 1e6: µs).
fn now(unit: u64) -> u64 {
    let (ticks, freq) = ticks_and_frequency();
    let scaled = u128::from(ticks) * u128::from(unit) / u128::from(freq);
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

/// Nanoseconds since boot.
pub fn now_ns() -> u64 {
    now(1_000_000_000)
}

/// Microseconds since boot: the software RNIC's time, which its runtime
/// (the engine's DPC, the L2 port's receive path) reads and passes in.
pub fn now_us() -> u64 {
    now(1_000_000)
}

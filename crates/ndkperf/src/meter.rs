//! `--duration`'s interval lines: operations and their latencies counted
//! as they complete by a run's client threads ([`Meter`]) and printed by
//! a thread of their own ([`with_intervals`]), for `bw`, `lat` and `tcp`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::stats::Samples;

/// Completed operations and the latencies not yet taken by an interval.
#[derive(Debug, Default)]
pub struct Meter {
    // One lock for both, so that an interval's count and its latencies
    // cover the same operations.
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    ops: u64,
    latencies: Samples,
}

impl Meter {
    /// A meter with nothing counted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one completed operation that took `latency`.
    pub fn record(&self, latency: Duration) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.ops += 1;
        s.latencies.push(latency);
    }

    /// Operations completed so far.
    pub fn ops(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ops
    }

    /// Operations completed so far and the latencies recorded since the
    /// last call (which it empties).
    pub fn take(&self) -> (u64, Samples) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (s.ops, std::mem::take(&mut s.latencies))
    }
}

/// How `--duration`'s interval lines are made.
#[derive(Debug, Clone, Copy)]
pub struct IntervalLines {
    /// `--interval`.
    pub every: Duration,
    /// Print them (not for JSON output, which only returns them).
    pub show: bool,
    /// Bandwidth in Gb/s.
    pub gbits: bool,
    /// Bytes per operation.
    pub size: u64,
    /// The operations are round trips (`lat`: p50 and p99 shown) rather
    /// than operations in flight at a depth (`bw`: completion p50).
    pub round_trips: bool,
    /// Multiplies each latency (0.5: round trip to one-way).
    pub scale: f64,
}

/// Runs `run` with a [`Meter`] when `lines` asks for interval lines,
/// printing them on a thread of their own while it runs; returns what
/// `run` returned and the lines (JSON).
pub fn with_intervals<T>(
    lines: Option<IntervalLines>,
    run: impl FnOnce(Option<&Meter>) -> T,
) -> (T, Vec<Value>) {
    let meter = Meter::new();
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        let reporter = lines.map(|l| {
            let (meter, finished) = (&meter, &finished);
            s.spawn(move || report_intervals(meter, finished, &l))
        });
        let out = run(lines.is_some().then_some(&meter));
        finished.store(true, Ordering::Release);
        let intervals = reporter
            .map(|r| r.join().unwrap_or_default())
            .unwrap_or_default();
        (out, intervals)
    })
}

/// Every `lines.every`, the operations completed in it, their bandwidth
/// and their latency, printed (table) and returned (JSON), until
/// `finished`.
fn report_intervals(meter: &Meter, finished: &AtomicBool, lines: &IntervalLines) -> Vec<Value> {
    let mut out = Vec::new();
    // The first interval starts with the first completion (after the
    // connections are up).
    while meter.ops() == 0 {
        if finished.load(Ordering::Acquire) {
            return out;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // The operations before this first look count into the first interval.
    let start = Instant::now();
    let (mut last_t, mut last_n) = (start, 0);
    let mut next = start + lines.every;
    loop {
        let stop = finished.load(Ordering::Acquire);
        if !stop && Instant::now() < next {
            std::thread::sleep(Duration::from_millis(5).min(lines.every));
            continue;
        }
        let now = Instant::now();
        let (n, latencies) = meter.take();
        let secs = (now - last_t).as_secs_f64().max(1e-9);
        let ops = n - last_n;
        if ops > 0 || !stop {
            out.push(interval_line(
                lines,
                (now - start).as_secs_f64(),
                secs,
                ops,
                &latencies,
            ));
        }
        if stop {
            return out;
        }
        (last_t, last_n) = (now, n);
        next += lines.every;
    }
}

/// One interval, `ops` operations in `secs` ending `at` seconds into the
/// run: printed if `lines.show`, returned as JSON.
fn interval_line(
    lines: &IntervalLines,
    at: f64,
    secs: f64,
    ops: u64,
    latencies: &Samples,
) -> Value {
    let gbps = (ops * lines.size) as f64 / secs / 1e9;
    let l = latencies.summary(lines.scale);
    if lines.show {
        let (rate, unit) = if lines.gbits {
            (gbps * 8.0, "Gb/s")
        } else {
            (gbps, "GB/s")
        };
        let latency = if lines.round_trips {
            format!("p50 {:8.2} us  p99 {:8.2} us", l.p50, l.p99)
        } else {
            format!("c_p50 {:8.2} us", l.p50)
        };
        println!(
            " [{at:7.2} s] {ops:>10} ops in {secs:5.2} s  {rate:9.3} {unit}  {:12.0} ops/s  {latency}",
            ops as f64 / secs
        );
    }
    let mut line = json!({"t_s": at, "seconds": secs, "ops": ops, "gbytes_per_sec": gbps});
    if lines.round_trips {
        line["p50_us"] = json!(l.p50);
        line["p99_us"] = json!(l.p99);
    } else {
        line["completion_p50_us"] = json!(l.p50);
    }
    line
}

//! Results and how they are shown: a perftest-like table (`ib_send_bw` /
//! `ib_send_lat` columns) or one JSON object per result.

use std::io::Write;

use serde::Serialize;

use crate::stats::Summary;

/// What kind of table a result belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Bandwidth: window of outstanding operations.
    Bw,
    /// Latency: one operation at a time.
    Lat,
    /// A sweep row: bandwidth and latency at one size.
    Sweep,
    /// SMB Direct I/O workload.
    Smbd,
}

/// One measured result.
#[derive(Debug, Clone, Serialize)]
pub struct PerfResult {
    /// `bw`, `lat`, `sweep` or `smbd`.
    pub test: Kind,
    /// `send`, `read`, `write`, `tcp`, `memcpy`, `smbd-read`, ...
    pub op: String,
    /// `mem`, `udp`, `tcp` or `cpu`.
    pub transport: String,
    /// Message (or I/O) size in bytes.
    pub size: u64,
    /// Completed operations.
    pub iterations: u64,
    /// Outstanding operations allowed.
    pub depth: u32,
    /// Scatter/gather entries per operation.
    pub sge: u32,
    /// Payload bytes moved.
    pub bytes: u64,
    /// Wall time of the measured part.
    pub seconds: f64,
    /// Payload bandwidth in 10^9 bytes per second.
    pub gbytes_per_sec: f64,
    /// Operations per second.
    pub msgs_per_sec: f64,
    /// Latency minimum, microseconds.
    pub lat_min_us: f64,
    /// Latency mean.
    pub lat_avg_us: f64,
    /// Latency median.
    pub lat_p50_us: f64,
    /// Latency 99th percentile.
    pub lat_p99_us: f64,
    /// Latency maximum.
    pub lat_max_us: f64,
    /// How latency was measured: `one-way` (round trip / 2),
    /// `completion` (post to completion) or `io` (request to response).
    pub lat_kind: &'static str,
    /// Error completions and verification mismatches.
    pub errors: u64,
    /// Every byte was checked at the target and matched.
    pub verified: bool,
    /// Workload-specific counters (SMB Direct credits, fragments, ...).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl PerfResult {
    /// A result for `iterations` operations of `size` bytes in `seconds`.
    pub fn new(
        test: Kind,
        op: &str,
        transport: &str,
        size: u64,
        iterations: u64,
        seconds: f64,
    ) -> Self {
        let bytes = size.saturating_mul(iterations);
        let secs = seconds.max(1e-9);
        Self {
            test,
            op: op.to_owned(),
            transport: transport.to_owned(),
            size,
            iterations,
            depth: 1,
            sge: 1,
            bytes,
            seconds,
            gbytes_per_sec: bytes as f64 / secs / 1e9,
            msgs_per_sec: iterations as f64 / secs,
            lat_min_us: 0.0,
            lat_avg_us: 0.0,
            lat_p50_us: 0.0,
            lat_p99_us: 0.0,
            lat_max_us: 0.0,
            lat_kind: "completion",
            errors: 0,
            verified: false,
            extra: serde_json::Map::new(),
        }
    }

    /// Sets the latency columns.
    #[must_use]
    pub fn with_latency(mut self, s: Summary, kind: &'static str) -> Self {
        self.lat_min_us = s.min;
        self.lat_avg_us = s.avg;
        self.lat_p50_us = s.p50;
        self.lat_p99_us = s.p99;
        self.lat_max_us = s.max;
        self.lat_kind = kind;
        self
    }

    /// Adds a workload-specific counter.
    pub fn set_extra(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.extra.insert(key.to_owned(), value.into());
    }
}

const RULE: &str =
    "---------------------------------------------------------------------------------------";

/// Prints results as a table or JSON lines.
#[derive(Debug)]
pub struct Printer {
    json: bool,
    header_done: bool,
    banner: Vec<String>,
}

impl Printer {
    /// A printer; `banner` lines describe the run above the table.
    pub fn new(json: bool, banner: Vec<String>) -> Self {
        Self {
            json,
            header_done: false,
            banner,
        }
    }

    /// Prints one result (the table header before the first one).
    pub fn row(&mut self, r: &PerfResult) {
        let mut out = std::io::stdout().lock();
        if self.json {
            // A result is plain data: serialising it cannot fail.
            let line = serde_json::to_string(r).unwrap_or_default();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
            return;
        }
        if !self.header_done {
            self.header_done = true;
            let _ = writeln!(out, "{RULE}");
            for line in &self.banner {
                let _ = writeln!(out, " {line}");
            }
            let _ = writeln!(out, "{RULE}");
            let _ = writeln!(out, "{}", header(r.test));
        }
        let _ = writeln!(out, "{}", format_row(r));
        let _ = out.flush();
    }

    /// Prints the closing rule of the table (nothing for JSON).
    pub fn finish(&self) {
        if !self.json && self.header_done {
            println!("{RULE}");
        }
    }
}

fn header(kind: Kind) -> String {
    match kind {
        Kind::Bw | Kind::Sweep => format!(
            " {:<10} {:<13} {:>16}   {:>13}   {:>12}   {:>12}",
            "#bytes",
            "#iterations",
            "BW average[GB/s]",
            "MsgRate[Mpps]",
            "t_p50[usec]",
            "t_p99[usec]"
        ),
        Kind::Lat => format!(
            " {:<10} {:<13} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "#bytes",
            "#iterations",
            "t_min[usec]",
            "t_p50[usec]",
            "t_p99[usec]",
            "t_max[usec]",
            "t_avg[usec]"
        ),
        Kind::Smbd => format!(
            " {:<10} {:<10} {:<9} {:>10} {:>10} {:>12} {:>12}",
            "#bytes", "#ios", "mix", "GB/s", "IOPS", "t_p50[usec]", "t_p99[usec]"
        ),
    }
}

fn format_row(r: &PerfResult) -> String {
    match r.test {
        Kind::Bw | Kind::Sweep => format!(
            " {:<10} {:<13} {:>16.3}   {:>13.6}   {:>12.2}   {:>12.2}",
            r.size,
            r.iterations,
            r.gbytes_per_sec,
            r.msgs_per_sec / 1e6,
            r.lat_p50_us,
            r.lat_p99_us
        ),
        Kind::Lat => format!(
            " {:<10} {:<13} {:>12.2} {:>12.2} {:>12.2} {:>12.2} {:>12.2}",
            r.size,
            r.iterations,
            r.lat_min_us,
            r.lat_p50_us,
            r.lat_p99_us,
            r.lat_max_us,
            r.lat_avg_us
        ),
        Kind::Smbd => format!(
            " {:<10} {:<10} {:<9} {:>10.3} {:>10.0} {:>12.2} {:>12.2}",
            r.size,
            r.iterations,
            r.op.trim_start_matches("smbd-"),
            r.gbytes_per_sec,
            r.msgs_per_sec,
            r.lat_p50_us,
            r.lat_p99_us
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_from_size_iterations_and_time() {
        let r = PerfResult::new(Kind::Bw, "send", "mem", 1 << 20, 1000, 0.5);
        assert_eq!(r.bytes, 1000 << 20);
        assert!((r.gbytes_per_sec - 2.097_152).abs() < 1e-6);
        assert!((r.msgs_per_sec - 2000.0).abs() < 1e-9);
        let json = serde_json::to_value(&r).unwrap();
        for key in [
            "op",
            "size",
            "iterations",
            "bytes",
            "seconds",
            "gbytes_per_sec",
            "msgs_per_sec",
            "lat_p50_us",
            "lat_p99_us",
            "errors",
            "verified",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(format_row(&r).contains("1048576"));
    }
}

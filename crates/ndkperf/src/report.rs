//! Results and how they are shown: a perftest-like table (`ib_send_bw` /
//! `ib_send_lat` columns) or one JSON object per result.

use std::io::Write;

use serde::Serialize;

use crate::cpu::SideCpu;
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
    /// Payload bandwidth in 10^9 bytes per second (decimal, while sizes
    /// such as 1M are binary: 2^20 bytes).
    pub gbytes_per_sec: f64,
    /// The same in 10^9 bits per second.
    pub gbits_per_sec: f64,
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
    /// Latency 99.9th percentile.
    pub lat_p999_us: f64,
    /// Latency standard deviation.
    pub lat_stdev_us: f64,
    /// Latency maximum.
    pub lat_max_us: f64,
    /// How latency was measured: `one-way` (round trip / 2),
    /// `completion` (post to completion) or `io` (request to response).
    pub lat_kind: &'static str,
    /// Error completions and verification mismatches.
    pub errors: u64,
    /// Every byte was checked at the target and matched.
    pub verified: bool,
    /// Bytes checked against the pattern (both sides; 0 without
    /// `--verify`).
    pub bytes_checked: u64,
    /// Ctrl-C stopped the run: the figures are of what was measured
    /// until then (`iterations` of `iterations_requested`).
    pub interrupted: bool,
    /// Operations asked for (`--iters`; 0 for `--duration`).
    pub iterations_requested: u64,
    /// The client side's CPU use, percent of one core over the measured
    /// time: its consumer threads and its adapters' engine threads.
    pub cpu_client_pct: f64,
    /// The part of `cpu_client_pct` that is engine threads.
    pub cpu_client_engine_pct: f64,
    /// The server side's CPU use, percent of one core over its time
    /// serving.
    pub cpu_server_pct: f64,
    /// The part of `cpu_server_pct` that is engine threads.
    pub cpu_server_engine_pct: f64,
    /// CPU seconds of both sides together.
    pub cpu_seconds: f64,
    /// CPU seconds of both sides per 10^9 payload bytes moved.
    pub cpu_seconds_per_gb: f64,
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
            gbits_per_sec: bytes as f64 * 8.0 / secs / 1e9,
            msgs_per_sec: iterations as f64 / secs,
            lat_min_us: 0.0,
            lat_avg_us: 0.0,
            lat_p50_us: 0.0,
            lat_p99_us: 0.0,
            lat_p999_us: 0.0,
            lat_stdev_us: 0.0,
            lat_max_us: 0.0,
            lat_kind: "completion",
            errors: 0,
            verified: false,
            bytes_checked: 0,
            interrupted: false,
            iterations_requested: iterations,
            cpu_client_pct: 0.0,
            cpu_client_engine_pct: 0.0,
            cpu_server_pct: 0.0,
            cpu_server_engine_pct: 0.0,
            cpu_seconds: 0.0,
            cpu_seconds_per_gb: 0.0,
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
        self.lat_p999_us = s.p999;
        self.lat_stdev_us = s.stdev;
        self.lat_max_us = s.max;
        self.lat_kind = kind;
        self
    }

    /// Sets the CPU columns from each side's CPU time.
    pub fn set_cpu(&mut self, client: SideCpu, server: SideCpu) {
        self.cpu_client_pct = SideCpu::percent(client.total_ns(), client.wall_ns);
        self.cpu_client_engine_pct = SideCpu::percent(client.engine_ns, client.wall_ns);
        self.cpu_server_pct = SideCpu::percent(server.total_ns(), server.wall_ns);
        self.cpu_server_engine_pct = SideCpu::percent(server.engine_ns, server.wall_ns);
        self.cpu_seconds = (client.total_ns() + server.total_ns()) as f64 / 1e9;
        self.cpu_seconds_per_gb = if self.bytes == 0 {
            0.0
        } else {
            self.cpu_seconds / (self.bytes as f64 / 1e9)
        };
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
    gbits: bool,
    header_done: bool,
    banner: Vec<String>,
}

impl Printer {
    /// A printer; `banner` lines describe the run above the table.
    pub fn new(json: bool, banner: Vec<String>) -> Self {
        Self {
            json,
            gbits: false,
            header_done: false,
            banner,
        }
    }

    /// Bandwidth in Gb/s (10^9 bits per second) instead of GB/s.
    #[must_use]
    pub fn gbits(mut self, on: bool) -> Self {
        self.gbits = on;
        self
    }

    /// Prints a line below the table's rows (nothing for JSON).
    pub fn note(&self, line: &str) {
        if !self.json {
            println!(" {line}");
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
            let _ = writeln!(out, "{}", header(r.test, self.gbits));
        }
        let _ = writeln!(out, "{}", format_row(r, self.gbits));
        let _ = out.flush();
    }

    /// Prints the closing rule of the table and what its units mean
    /// (nothing for JSON).
    pub fn finish(&self) {
        if !self.json && self.header_done {
            println!("{RULE}");
            println!(
                " {} = 10^9 {} per second; sizes (4K, 1M, 1G) are binary: 2^10, 2^20, 2^30 bytes",
                if self.gbits { "Gb/s" } else { "GB/s" },
                if self.gbits { "bits" } else { "bytes" },
            );
            println!(
                " CPU%: percent of one core over the measured time, consumer and engine threads of the side (cli: client, srv: server); CPU-s/GB: CPU seconds of both sides per 10^9 bytes"
            );
        }
    }
}

/// The bandwidth column's title and value.
fn bandwidth(r: &PerfResult, gbits: bool) -> f64 {
    if gbits {
        r.gbits_per_sec
    } else {
        r.gbytes_per_sec
    }
}

const CPU_HEADER: &str = "  CPU cli%  CPU srv%  CPU-s/GB";

fn cpu_columns(r: &PerfResult) -> String {
    format!(
        "  {:>8.1}  {:>8.1}  {:>8.3}",
        r.cpu_client_pct, r.cpu_server_pct, r.cpu_seconds_per_gb
    )
}

fn header(kind: Kind, gbits: bool) -> String {
    let bw = if gbits {
        "BW average[Gb/s]"
    } else {
        "BW average[GB/s]"
    };
    let row = match kind {
        Kind::Bw => format!(
            " {:<12} {:<13} {:>16}   {:>13}   {:>13}   {:>13}",
            "#bytes", "#iterations", bw, "MsgRate[Mpps]", "c_p50[usec]", "c_p99[usec]"
        ),
        Kind::Sweep => format!(
            " {:<12} {:<13} {:>16}   {:>13}   {:>13}   {:>13}",
            "#bytes", "#iterations", bw, "MsgRate[Mpps]", "d1_p50[usec]", "d1_p99[usec]"
        ),
        Kind::Lat => format!(
            " {:<12} {:<13} {:>12} {:>12} {:>12} {:>13} {:>12} {:>12} {:>13}",
            "#bytes",
            "#iterations",
            "t_min[usec]",
            "t_p50[usec]",
            "t_p99[usec]",
            "t_p99.9[usec]",
            "t_max[usec]",
            "t_avg[usec]",
            "t_stdev[usec]"
        ),
        Kind::Smbd => format!(
            " {:<12} {:<10} {:<9} {:>10} {:>10} {:>12} {:>12}",
            "#bytes",
            "#ios",
            "mix",
            if gbits { "Gb/s" } else { "GB/s" },
            "IOPS",
            "t_p50[usec]",
            "t_p99[usec]"
        ),
    };
    format!("{row}{CPU_HEADER}")
}

fn format_row(r: &PerfResult, gbits: bool) -> String {
    let row = match r.test {
        Kind::Bw | Kind::Sweep => format!(
            " {:<12} {:<13} {:>16.3}   {:>13.6}   {:>13.2}   {:>13.2}",
            r.size,
            r.iterations,
            bandwidth(r, gbits),
            r.msgs_per_sec / 1e6,
            r.lat_p50_us,
            r.lat_p99_us
        ),
        Kind::Lat => format!(
            " {:<12} {:<13} {:>12.2} {:>12.2} {:>12.2} {:>13.2} {:>12.2} {:>12.2} {:>13.2}",
            r.size,
            r.iterations,
            r.lat_min_us,
            r.lat_p50_us,
            r.lat_p99_us,
            r.lat_p999_us,
            r.lat_max_us,
            r.lat_avg_us,
            r.lat_stdev_us
        ),
        Kind::Smbd => format!(
            " {:<12} {:<10} {:<9} {:>10.3} {:>10.0} {:>12.2} {:>12.2}",
            r.size,
            r.iterations,
            r.op.trim_start_matches("smbd-"),
            bandwidth(r, gbits),
            r.msgs_per_sec,
            r.lat_p50_us,
            r.lat_p99_us
        ),
    };
    format!("{row}{}", cpu_columns(r))
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
        assert!(format_row(&r, false).contains("1048576"));
        assert!(json.get("cpu_seconds_per_gb").is_some());
        // A 1 GiB size keeps a space before the next column.
        let big = PerfResult::new(Kind::Bw, "send", "mem", 1 << 30, 1_000_000, 1.0);
        assert!(format_row(&big, false).starts_with(" 1073741824   1000000 "));
    }

    #[test]
    fn gbits_are_eight_times_gbytes_and_cpu_per_gb_follows_from_cpu_time() {
        let mut r = PerfResult::new(Kind::Bw, "read", "udp", 1 << 20, 1000, 0.5);
        assert!((r.gbits_per_sec - 8.0 * r.gbytes_per_sec).abs() < 1e-9);
        assert!(header(Kind::Bw, true).contains("[Gb/s]"));
        assert!(header(Kind::Bw, false).contains("[GB/s]"));
        let row_bits = format_row(&r, true);
        assert!(
            row_bits.contains(&format!("{:.3}", r.gbits_per_sec)),
            "{row_bits}"
        );
        let client = SideCpu {
            consumer_ns: 400_000_000,
            engine_ns: 100_000_000,
            wall_ns: 500_000_000,
        };
        let server = SideCpu {
            consumer_ns: 50_000_000,
            engine_ns: 200_000_000,
            wall_ns: 500_000_000,
        };
        r.set_cpu(client, server);
        assert!((r.cpu_client_pct - 100.0).abs() < 1e-9);
        assert!((r.cpu_client_engine_pct - 20.0).abs() < 1e-9);
        assert!((r.cpu_server_pct - 50.0).abs() < 1e-9);
        assert!((r.cpu_seconds - 0.75).abs() < 1e-9);
        // 1000 MiB = 1.048576 GB.
        assert!((r.cpu_seconds_per_gb - 0.75 / 1.048_576).abs() < 1e-9);
        assert!(format_row(&r, false).ends_with("   100.0      50.0     0.715"));
    }
}

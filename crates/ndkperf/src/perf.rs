//! `bw`, `lat` and `sweep`: running the workloads of [`crate::bench`] in
//! one process (two adapters, two threads) or as one side of a
//! two-process run, and turning outcomes into results.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bench::{Control, Outcome, Params, Test, UNTIL_STOPPED, run_client, serve};
use crate::cpu::SideCpu;
use crate::error::{Error, Result};
use crate::interrupt;
use crate::link::listen;
use crate::meter::{IntervalLines, with_intervals};
use crate::ndk::{Adapter, Listener, show_duration};
use crate::report::{Kind, PerfResult, Printer};
use crate::setup::{self, Pair, Role};
use ndkperf_cli::{FabricArgs, Op, PerfArgs, SweepArgs, TransportKind};

/// How long a one-process run's server waits for its client.
const SERVER_WAIT: Duration = Duration::from_secs(60);

/// A seed per run, so that stale data never passes verification.
fn seed() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    t ^ std::process::id()
}

/// The address `i` after `base` (`--threads`' client adapters).
fn nth_addr(base: Ipv4Addr, i: u32) -> Result<Ipv4Addr> {
    u32::from(base)
        .checked_add(i)
        .map(Ipv4Addr::from)
        .ok_or_else(|| Error::msg(format!("no address {i} after {base}")))
}

/// How a run is shaped: connections and how they are bounded.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Connections per client adapter (`--qps`).
    qps: u32,
    /// Client adapters (`--threads`).
    threads: u32,
    /// `--duration`.
    duration: Option<Duration>,
    /// `--interval`.
    interval: Duration,
    /// Progress bar and interval lines (not for JSON).
    show: bool,
    /// Interval lines in Gb/s.
    gbits: bool,
}

impl Shape {
    fn connections(&self) -> u32 {
        self.qps * self.threads
    }

    fn single() -> Self {
        Self {
            qps: 1,
            threads: 1,
            duration: None,
            interval: Duration::from_secs(1),
            show: false,
            gbits: false,
        }
    }
}

/// The client side of a run: its adapters and where the server is.
struct Clients {
    adapters: Vec<(Arc<Adapter>, Ipv4Addr)>,
    server: SocketAddrV4,
    timeout: Duration,
}

impl Clients {
    /// `--client`'s adapters (`--threads` of them) towards a `--server`
    /// process at `server`, which may be another machine: this side's
    /// addresses must be this machine's.
    fn open(a: &PerfArgs, transport: TransportKind, server: Ipv4Addr) -> Result<Self> {
        if let Some(path) = &a.fabric.pcap {
            setup::check_pcap_path(path)?;
        }
        let mut adapters = Vec::new();
        for i in 0..a.threads {
            let addr = nth_addr(a.fabric.client_addr, i)?;
            setup::check_local(addr.into(), "--client-addr")?;
            let config = setup::config(&a.fabric, transport, Role::Client, addr);
            adapters.push((Arc::new(Adapter::open(&config)?), addr));
        }
        Ok(Self {
            adapters,
            server: SocketAddrV4::new(server, a.fabric.port()),
            timeout: a.fabric.timeout,
        })
    }

    /// Runs `p` over every connection of `shape` at once; `on_error` is
    /// called when a client fails (to release a waiting server).
    fn run(
        &self,
        p: &Params,
        shape: &Shape,
        intervals: &mut Vec<Value>,
        on_error: &(dyn Fn() + Sync),
    ) -> Result<Vec<Outcome>> {
        let lines = shape.duration.map(|_| IntervalLines {
            every: shape.interval,
            show: shape.show,
            gbits: shape.gbits,
            size: p.size,
            round_trips: p.test == Test::Lat,
            scale: if p.test == Test::Lat && p.op == Op::Send {
                0.5
            } else {
                1.0
            },
        });
        let (outs, lines) = with_intervals(lines, |meter| {
            let ctl = Control {
                duration: shape.duration,
                meter,
                progress: shape.show && shape.connections() == 1,
            };
            std::thread::scope(|s| {
                (0..shape.connections())
                    .map(|i| {
                        let (adapter, addr) = &self.adapters[(i / shape.qps) as usize];
                        let ctl = &ctl;
                        s.spawn(move || {
                            let out = run_client(adapter, *addr, self.server, p, self.timeout, ctl);
                            if out.is_err() {
                                on_error();
                            }
                            out
                        })
                    })
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(Error::msg("a client thread failed")))
                    })
                    .collect::<Vec<Result<Outcome>>>()
            })
        });
        intervals.extend(lines);
        outs.into_iter().collect()
    }
}

/// One process, both sides: the server adapter listens and serves each
/// run on scoped threads while the client adapters run it.
/// Field order is drop order: the listener closes before its adapter.
struct Local {
    listener: Listener,
    pair: Pair,
    clients: Clients,
}

impl Local {
    fn open(fabric: &FabricArgs, threads: u32) -> Result<Self> {
        let pair = Pair::open(fabric)?;
        let listener = listen(&pair.server, fabric.server_addr, fabric.port())?;
        let mut adapters = vec![(pair.client.clone(), fabric.client_addr)];
        let transport = setup::transport(fabric, false)?;
        for i in 1..threads {
            let addr = nth_addr(fabric.client_addr, i)?;
            if addr == fabric.server_addr {
                return Err(Error::msg(format!(
                    "--threads {threads}: client address {addr} is the server's (--server-addr)"
                )));
            }
            setup::check_adapter_addr(transport, addr, "--threads' client address")?;
            let config = setup::config(fabric, transport, Role::Client, addr);
            adapters.push((Arc::new(Adapter::open(&config)?), addr));
        }
        Ok(Self {
            listener,
            pair,
            clients: Clients {
                adapters,
                server: SocketAddrV4::new(fabric.server_addr, fabric.port()),
                timeout: fabric.timeout,
            },
        })
    }

    fn run(&self, p: &Params, shape: &Shape, intervals: &mut Vec<Value>) -> Result<Vec<Outcome>> {
        let n = shape.connections();
        std::thread::scope(|s| {
            let serving = s.spawn(|| -> Result<()> {
                let mut served = Vec::new();
                for _ in 0..n {
                    let Some(connector) = self.listener.next(SERVER_WAIT)? else {
                        return Err(Error::msg(format!(
                            "no client connected within {}",
                            show_duration(SERVER_WAIT)
                        )));
                    };
                    let adapter = &self.pair.server;
                    served.push(s.spawn(move || serve(adapter, connector)));
                }
                for h in served {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::msg("a server thread failed")))?;
                }
                Ok(())
            });
            let client = self
                .clients
                .run(p, shape, intervals, &|| self.listener.cancel_waits());
            let served = serving
                .join()
                .unwrap_or_else(|_| Err(Error::msg("the server thread failed")));
            crate::error::trace!("client: {:?}", client.as_ref().map(|_| ()));
            crate::error::trace!("server: {:?}", served);
            match (client, served) {
                (Ok(out), Ok(())) => Ok(out),
                (Err(e), Ok(())) => Err(e),
                (Err(e), Err(s)) => Err(Error::msg(format!("{e} (server side: {s})"))),
                (Ok(_), Err(e)) => Err(e.context("server side")),
            }
        })
    }

    /// One connection, one run (sweep).
    fn run_one(&self, p: &Params, show: bool) -> Result<Outcome> {
        let shape = Shape {
            show,
            ..Shape::single()
        };
        let mut outs = self.run(p, &shape, &mut Vec::new())?;
        outs.pop()
            .ok_or_else(|| Error::msg("the run produced no outcome"))
    }
}

/// The result row of several connections' outcomes of one run: their
/// operations and bytes summed over the span from the first start to
/// the last end, their latency samples pooled, each side's CPU time
/// (engine time once per adapter).
pub fn result_of_all(outs: &[Outcome], kind: Kind, transport: &str) -> Result<PerfResult> {
    let first = outs
        .first()
        .ok_or_else(|| Error::msg("the run produced no outcome"))?;
    let p = &first.params;
    let start = outs.iter().map(|o| o.span.0).min().unwrap_or(first.span.0);
    let end = outs.iter().map(|o| o.span.1).max().unwrap_or(first.span.1);
    let completed: u64 = outs.iter().map(|o| o.completed).sum();
    let mut samples = crate::stats::Samples::default();
    for o in outs {
        samples.extend(&o.samples);
    }
    let one_way = p.test == Test::Lat && p.op == Op::Send;
    let scale = if one_way { 0.5 } else { 1.0 };
    let seconds = (end - start).as_secs_f64();
    let mut r = PerfResult::new(kind, p.op.name(), transport, p.size, completed, seconds)
        .with_latency(
            samples.summary(scale),
            if one_way { "one-way" } else { "completion" },
        );
    r.depth = p.depth;
    r.sge = p.sge;
    r.errors = outs.iter().map(|o| o.mismatches).sum();
    r.bytes_checked = outs.iter().map(|o| o.checked).sum();
    r.verified = p.verify && r.errors == 0 && r.bytes_checked > 0;
    r.interrupted = outs.iter().any(|o| o.interrupted);
    r.iterations_requested = if p.iters == UNTIL_STOPPED {
        0
    } else {
        p.iters * outs.len() as u64
    };
    let mut engines: Vec<(usize, u64)> = Vec::new();
    for o in outs {
        match engines.iter_mut().find(|(a, _)| *a == o.client_adapter) {
            Some((_, ns)) => *ns = (*ns).max(o.client_cpu.engine_ns),
            None => engines.push((o.client_adapter, o.client_cpu.engine_ns)),
        }
    }
    let wall_ns = u64::try_from((end - start).as_nanos()).unwrap_or(u64::MAX);
    let client = SideCpu {
        consumer_ns: outs.iter().map(|o| o.client_cpu.consumer_ns).sum(),
        engine_ns: engines.iter().map(|e| e.1).sum(),
        wall_ns,
    };
    // One server adapter: its engine time over overlapping connections
    // is the longest connection's.
    let server = SideCpu {
        consumer_ns: outs.iter().map(|o| o.server_cpu.consumer_ns).sum(),
        engine_ns: outs
            .iter()
            .map(|o| o.server_cpu.engine_ns)
            .max()
            .unwrap_or(0),
        wall_ns: outs.iter().map(|o| o.server_cpu.wall_ns).max().unwrap_or(0),
    };
    r.set_cpu(client, server);
    r.set_extra("cq_sleeps", outs.iter().map(|o| o.sleeps).sum::<u64>());
    if outs.len() > 1 {
        r.set_extra("connections", outs.len());
    }
    Ok(r)
}

/// The result row of an outcome.
pub fn result_of(out: &Outcome, kind: Kind, transport: &str) -> PerfResult {
    // One outcome always makes a row.
    result_of_all(std::slice::from_ref(out), kind, transport)
        .unwrap_or_else(|_| PerfResult::new(kind, "", transport, 0, 0, 0.0))
}

fn params(test: Test, a: &PerfArgs, depth: Option<u32>) -> Params {
    Params {
        test,
        op: a.op,
        size: a.size.unwrap_or(match test {
            Test::Bw => 64 << 10,
            Test::Lat => 64,
        }),
        iters: if a.duration.is_some() {
            UNTIL_STOPPED
        } else {
            a.iters.unwrap_or(1000)
        },
        depth: match test {
            Test::Bw => depth.unwrap_or(16),
            Test::Lat => 1,
        },
        sge: a.sge,
        verify: a.verify,
        seed: seed(),
    }
}

fn banner(
    p: &Params,
    transport: TransportKind,
    fabric: &FabricArgs,
    two_process: bool,
) -> Vec<String> {
    let what = match (p.test, p.op) {
        (Test::Bw, Op::Send) => "Send BW",
        (Test::Bw, Op::Read) => "RDMA Read BW",
        (Test::Bw, Op::Write) => "RDMA Write BW",
        (Test::Lat, Op::Send) => "Send latency (ping-pong, one-way = RTT/2)",
        (Test::Lat, Op::Read) => "RDMA Read latency (post to completion)",
        (Test::Lat, Op::Write) => "RDMA Write latency (post to completion)",
    };
    let mut v = vec![
        format!("ndkperf {what}"),
        format!(
            "transport {} ({} -> {}:{}{}), pmtu {}",
            transport.name(),
            fabric.client_addr,
            fabric.server_addr,
            fabric.port(),
            if two_process { ", two processes" } else { "" },
            fabric.pmtu
        ),
        format!(
            "depth {}, sge {}, verify {}",
            p.depth,
            p.sge,
            if p.verify { "on" } else { "off" }
        ),
    ];
    if p.test == Test::Bw {
        v.push(format!(
            "c_p50/c_p99: each operation's post-to-completion time with {} in flight (queueing included; unloaded latency is lat's)",
            p.depth
        ));
    }
    if let Some(l) = fabric.loss {
        v.push(format!("injected loss {l}"));
    }
    v
}

/// The verification line: what was checked, where, and what went wrong.
fn verification_line(r: &PerfResult, p: &Params, retransmitted: Option<u64>) -> String {
    let retx = retransmitted.map_or_else(
        || "retransmissions not known".to_owned(),
        |n| format!("{n} packets retransmitted"),
    );
    if !p.verify {
        return format!(
            "verification: off (--verify checks the data); {} operations, {} error completions, {retx}",
            r.iterations, r.errors
        );
    }
    let how = match (p.test, p.op) {
        (_, Op::Read) => "the client checked every READ on completion",
        (Test::Bw, Op::Send) => "the server checked every SEND on arrival",
        (Test::Lat, Op::Send) => "the server checked every ping, the client every pong",
        (_, Op::Write) => {
            "the server checked the last WRITE into each slot at the end, as WRITEs do not notify the target"
        }
    };
    format!(
        "verification: {}: {} operations, {} bytes checked ({how}), {} bytes wrong, {retx}",
        if r.errors == 0 { "passed" } else { "FAILED" },
        r.iterations,
        r.bytes_checked,
        r.errors
    )
}

/// Median, min and max of one figure over the rounds.
fn spread(rows: &[PerfResult], f: impl Fn(&PerfResult) -> f64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = rows.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    };
    (median, v[0], v[n - 1])
}

/// A figure of a result: its JSON key, its label and how to read it.
type Figure = (&'static str, &'static str, fn(&PerfResult) -> f64);

/// After Ctrl-C: the line saying how much of the run the last of `rows`
/// measured (of `duration` or of its requested operations, round
/// `rows.len()` of `rounds`), under the table and, for JSON output, as
/// a last object `{"interrupted": true, "note": ...}`.
pub(crate) fn note_interrupted(
    printer: &Printer,
    json: bool,
    duration: Option<Duration>,
    rows: &[PerfResult],
    rounds: u32,
) {
    let Some(r) = rows.last() else { return };
    let line = match (duration, r.iterations_requested) {
        (Some(d), _) => format!(
            "INTERRUPTED (Ctrl-C) after {:.2} of {} s, {} operations, round {} of {rounds}: the figures are of the part measured",
            r.seconds,
            d.as_secs_f64(),
            r.iterations,
            rows.len(),
        ),
        (None, m) => format!(
            "INTERRUPTED (Ctrl-C) after {} of {m} operations, round {} of {rounds}: the figures are of the part measured",
            r.iterations,
            rows.len(),
        ),
    };
    printer.note(&line);
    if json {
        println!("{}", json!({"interrupted": true, "note": line}));
    }
}

/// `--rounds`' summary: median, min and max of the main figures of
/// `rows` (`what`'s rows: "rsndk", "tcp").
pub(crate) fn rounds_summary(rows: &[PerfResult], gbits: bool, what: &str) -> (Value, Vec<String>) {
    let figures: [Figure; 6] = [
        ("gbytes_per_sec", "GB/s", |r| r.gbytes_per_sec),
        ("gbits_per_sec", "Gb/s", |r| r.gbits_per_sec),
        ("msgs_per_sec", "msg/s", |r| r.msgs_per_sec),
        ("lat_p50_us", "p50[us]", |r| r.lat_p50_us),
        ("lat_p99_us", "p99[us]", |r| r.lat_p99_us),
        ("cpu_seconds_per_gb", "CPU-s/GB", |r| r.cpu_seconds_per_gb),
    ];
    let mut obj = serde_json::Map::new();
    obj.insert("summary".into(), "rounds".into());
    obj.insert("rounds".into(), rows.len().into());
    let mut lines = vec![format!(
        "{} rounds: median, min, max of the {what} rows above",
        rows.len()
    )];
    for (key, label, f) in figures {
        let (median, min, max) = spread(rows, f);
        obj.insert(
            key.into(),
            json!({"median": median, "min": min, "max": max}),
        );
        let shown = match key {
            "gbytes_per_sec" => !gbits,
            "gbits_per_sec" => gbits,
            _ => true,
        };
        if shown {
            lines.push(format!(
                "  {label:<9} median {median:>12.3}   min {min:>12.3}   max {max:>12.3}"
            ));
        }
    }
    (Value::Object(obj), lines)
}

/// The latency histogram's lines.
fn histogram_lines(outs: &[Outcome], one_way: bool) -> (Value, Vec<String>) {
    let mut all = crate::stats::Samples::default();
    for o in outs {
        all.extend(&o.samples);
    }
    let h = all.histogram(if one_way { 0.5 } else { 1.0 });
    let most = h.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    let mut lines = vec![format!(
        "latency histogram ({}, power-of-two buckets, us):",
        if one_way {
            "one-way"
        } else {
            "post to completion"
        }
    )];
    let mut prev = 0.0;
    for &(le, count) in &h {
        let bar = "#".repeat((count * 40).div_ceil(most) as usize);
        lines.push(format!("  {prev:>10.3} .. {le:>10.3}  {count:>10}  {bar}"));
        prev = le;
    }
    let v = h
        .iter()
        .map(|&(le, count)| json!({"le_us": le, "count": count}))
        .collect();
    (Value::Array(v), lines)
}

/// `bw` and `lat`.
pub fn perf(test: Test, a: &PerfArgs, depth: Option<u32>) -> Result<ExitCode> {
    let p = params(test, a, depth);
    let two_process = a.server.is_some() || a.client.is_some();
    let transport = setup::transport(&a.fabric, two_process)?;
    if let Some(server) = a.server {
        return serve_process(a, server.unwrap_or(a.fabric.server_addr));
    }
    if let Some(path) = &a.output {
        crate::output::check_path(path)?;
    }
    // From here on Ctrl-C stops the measurement rather than the process.
    interrupt::install();
    let show = !a.json;
    let shape = Shape {
        qps: a.qps,
        threads: a.threads,
        duration: a.duration,
        interval: a.interval,
        show,
        gbits: a.gbits,
    };
    let mut printer =
        Printer::new(a.json, banner(&p, transport, &a.fabric, two_process)).gbits(a.gbits);
    let mut local = None;
    let clients = if let Some(server) = a.client {
        Some(Clients::open(a, transport, server)?)
    } else {
        local = Some(Local::open(&a.fabric, a.threads)?);
        None
    };
    let kind = match test {
        Test::Bw => Kind::Bw,
        Test::Lat => Kind::Lat,
    };
    let mut rows = Vec::new();
    let mut baselines = Vec::new();
    let mut last = Vec::new();
    for round in 0..a.rounds {
        if interrupt::requested() {
            break;
        }
        let p = Params { seed: seed(), ..p };
        let mut intervals = Vec::new();
        let outs = match (&local, &clients) {
            (Some(l), _) => l.run(&p, &shape, &mut intervals)?,
            (None, Some(c)) => c.run(&p, &shape, &mut intervals, &|| ())?,
            (None, None) => unreachable!("either side is set up"),
        };
        let mut r = result_of_all(&outs, kind, transport.name())?;
        if a.rounds > 1 {
            r.set_extra("round", round + 1);
        }
        if !intervals.is_empty() {
            r.set_extra("intervals", intervals);
        }
        let adapters: Vec<&Arc<Adapter>> = match (&local, &clients) {
            (Some(l), _) => l.clients.adapters.iter().map(|x| &x.0).collect(),
            (None, Some(c)) => c.adapters.iter().map(|x| &x.0).collect(),
            (None, None) => Vec::new(),
        };
        for (k, v) in setup::device_counters(adapters[0]) {
            r.extra.insert(k, v);
        }
        let retransmitted = retransmissions(&adapters, local.as_ref().map(|l| &l.pair.server));
        r.set_extra("retransmitted_total", retransmitted);
        if a.histogram {
            let (h, _) = histogram_lines(&outs, p.test == Test::Lat && p.op == Op::Send);
            r.set_extra("histogram", h);
        }
        printer.row(&r);
        if a.tcp_baseline && !interrupt::requested() {
            let tcp = tcp_baseline(&p, r.iterations / u64::from(shape.connections()), a)?;
            printer.row(&tcp);
            printer.note("  (the row above: the same pattern over TCP loopback, --tcp-baseline)");
            baselines.push(tcp);
        }
        rows.push(r);
        last = outs;
    }
    printer.finish();
    if a.tcp_baseline {
        printer.note(crate::tcp::TCP_CPU);
    }
    end_of_run(a, &p, &printer, (&rows, &baselines), &last, transport)
}

/// `--tcp-baseline`: `p`'s pattern over TCP loopback, `iters` messages.
fn tcp_baseline(p: &Params, iters: u64, a: &PerfArgs) -> Result<PerfResult> {
    let args = ndkperf_cli::TcpArgs {
        mode: match p.test {
            Test::Bw => ndkperf_cli::TcpMode::Bw,
            Test::Lat => ndkperf_cli::TcpMode::Lat,
        },
        size: Some(p.size),
        iters: Some(iters.max(1)),
        duration: None,
        interval: Duration::from_secs(1),
        rounds: 1,
        depth: p.depth,
        verify: p.verify,
        json: true,
        gbits: a.gbits,
        server_addr: Ipv4Addr::LOCALHOST,
    };
    let (mut r, _) = crate::tcp::measure(&args)?;
    r.set_extra("baseline", true);
    Ok(r)
}

/// What follows the table: the verification line, the histogram, an
/// interruption, the rounds' summary, the `--output` file; the exit code.
fn end_of_run(
    a: &PerfArgs,
    p: &Params,
    printer: &Printer,
    (rows, baselines): (&[PerfResult], &[PerfResult]),
    last: &[Outcome],
    transport: TransportKind,
) -> Result<ExitCode> {
    let Some(r) = rows.last() else {
        eprintln!("ndkperf: interrupted before the first measurement");
        return Ok(ExitCode::from(interrupt::EXIT_INTERRUPTED));
    };
    let retx = r.extra.get("retransmitted_total").and_then(Value::as_u64);
    printer.note(&verification_line(r, p, retx));
    if a.histogram {
        let (_, lines) = histogram_lines(last, p.test == Test::Lat && p.op == Op::Send);
        for l in lines {
            printer.note(&l);
        }
    }
    let interrupted = interrupt::requested();
    if interrupted {
        note_interrupted(printer, a.json, a.duration, rows, a.rounds);
    }
    let summary = (rows.len() > 1).then(|| {
        let (v, lines) = rounds_summary(rows, a.gbits, "rsndk");
        for l in &lines {
            printer.note(l);
        }
        if a.json {
            println!("{v}");
        }
        v
    });
    if let Some(path) = &a.output {
        let meta = crate::output::metadata(transport.name());
        let all = [rows, baselines].concat();
        crate::output::write(path, a.format, &meta, &all, summary.as_ref())?;
        if !a.json {
            println!(" results written to {}", path.display());
        }
    }
    if interrupted {
        return Ok(ExitCode::from(interrupt::EXIT_INTERRUPTED));
    }
    Ok(finish(&[rows, baselines].concat()))
}

/// Packets the adapters of this process retransmitted.
fn retransmissions(clients: &[&Arc<Adapter>], server: Option<&Arc<Adapter>>) -> u64 {
    clients
        .iter()
        .copied()
        .chain(server)
        .filter_map(|a| {
            setup::device_counters(a)
                .get("retransmitted")
                .and_then(Value::as_u64)
        })
        .sum()
}

fn finish(results: &[PerfResult]) -> ExitCode {
    let bad: u64 = results.iter().map(|r| r.errors).sum();
    if bad > 0 {
        eprintln!("ndkperf: verification failed: {bad} bytes differ from what was sent");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `--server`: one adapter, one listener, every client that connects
/// served on a thread of its own, until `--server-timeout` passes
/// without a new client (by default never).
fn serve_process(a: &PerfArgs, addr: Ipv4Addr) -> Result<ExitCode> {
    setup::check_local(addr.into(), "--server")?;
    let adapter = Arc::new(Adapter::open(&setup::config(
        &a.fabric,
        TransportKind::Udp,
        Role::Server,
        addr,
    ))?);
    let listener = listen(&adapter, addr, a.fabric.port())?;
    println!(
        "ndkperf server: listening on {addr}:{} (udp){}",
        a.fabric.port(),
        a.server_timeout.map_or_else(
            || ", until stopped".to_owned(),
            |t| format!(", until {} without a client", show_duration(t))
        )
    );
    let served = AtomicU64::new(0);
    std::thread::scope(|s| -> Result<ExitCode> {
        let mut idle_since = Instant::now();
        loop {
            let Some(connector) = listener.next(Duration::from_millis(500))? else {
                if a.server_timeout.is_some_and(|t| idle_since.elapsed() >= t) {
                    println!(
                        "ndkperf server: no new client for {}, {} served: stopping",
                        show_duration(a.server_timeout.unwrap_or_default()),
                        served.load(Ordering::Relaxed)
                    );
                    return Ok(ExitCode::SUCCESS);
                }
                continue;
            };
            idle_since = Instant::now();
            let (adapter, served) = (&adapter, &served);
            s.spawn(move || {
                match serve(adapter, connector) {
                    Ok(line) => println!("ndkperf server: {line}"),
                    Err(e) => {
                        println!("ndkperf server: a client's run failed, still listening: {e}");
                    }
                }
                served.fetch_add(1, Ordering::Relaxed);
            });
        }
    })
}

/// `sweep`: every power of two from min to max size, bandwidth and
/// latency at each.
pub fn sweep(a: &SweepArgs) -> Result<ExitCode> {
    if a.min_size > a.max_size {
        return Err(Error::msg(format!(
            "--min-size {} is larger than --max-size {}",
            a.min_size, a.max_size
        )));
    }
    let transport = setup::transport(&a.fabric, false)?;
    if let Some(path) = &a.plot {
        crate::plot::check_path(path)?;
    }
    let local = Local::open(&a.fabric, 1)?;
    let sizes = sweep_sizes(a.min_size, a.max_size);
    let first = Params {
        test: Test::Bw,
        op: a.op,
        size: a.min_size,
        iters: a.iters,
        depth: a.depth,
        sge: a.sge,
        verify: a.verify,
        seed: seed(),
    };
    let mut lines = banner(&first, transport, &a.fabric, false);
    lines.retain(|l| !l.starts_with("c_p50"));
    lines.push(format!(
        "BW and CPU from runs at depth {}; d1_p50/d1_p99 from latency runs at depth 1 (one operation at a time)",
        a.depth
    ));
    let mut printer = Printer::new(a.json, lines).gbits(a.gbits);
    // From here on Ctrl-C stops the sweep rather than the process.
    interrupt::install();
    let mut rows = Vec::new();
    let mut cut_short = None;
    'sizes: for &size in &sizes {
        let bw = Params {
            size,
            iters: a.iters.min((a.max_bytes / size).max(8)),
            ..first
        };
        let lat = Params {
            test: Test::Lat,
            size,
            depth: 1,
            iters: a.iters.min((a.max_bytes / size).max(8)),
            ..first
        };
        let mut rounds = Vec::new();
        for _ in 0..a.rounds {
            if interrupt::requested() {
                cut_short = Some(size);
                break 'sizes;
            }
            let bw_out = local.run_one(&bw, !a.json)?;
            if bw_out.interrupted || interrupt::requested() {
                cut_short = Some(size);
                break 'sizes;
            }
            let lat_out = local.run_one(&lat, !a.json)?;
            if lat_out.interrupted {
                cut_short = Some(size);
                break 'sizes;
            }
            rounds.push(sweep_row(&bw_out, &lat_out, transport));
        }
        let r = if rounds.len() == 1 {
            rounds.remove(0)
        } else {
            median_row(&rounds, a.gbits)
        };
        printer.row(&r);
        rows.push(r);
    }
    if let Some(size) = cut_short {
        if rows.is_empty() {
            eprintln!("ndkperf: interrupted before the first size was measured");
            return Ok(ExitCode::from(interrupt::EXIT_INTERRUPTED));
        }
        printer.finish();
        let line = format!(
            "INTERRUPTED (Ctrl-C) after {} of {} sizes: the rows above are complete; {size} bytes was cut short and is left out, larger sizes were not run",
            rows.len(),
            sizes.len()
        );
        printer.note(&line);
        if a.json {
            println!("{}", json!({"interrupted": true, "note": line}));
        }
        draw_sweep(a, &rows, transport)?;
        return Ok(ExitCode::from(interrupt::EXIT_INTERRUPTED));
    }
    printer.finish();
    if a.rounds > 1 {
        printer.note(&format!(
            "each row: the median of {} rounds of each figure (JSON: extra.rounds, median/min/max)",
            a.rounds
        ));
    }
    draw_sweep(a, &rows, transport)?;
    Ok(finish(&rows))
}

/// The sweep's sizes: `min`, then each power of two above it up to `max`.
fn sweep_sizes(min: u64, max: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut size = min.next_power_of_two();
    if size != min {
        sizes.push(min);
    }
    while size <= max {
        sizes.push(size);
        size *= 2;
    }
    sizes
}

/// `--plot`: the sweep's rows as an SVG.
fn draw_sweep(a: &SweepArgs, rows: &[PerfResult], transport: TransportKind) -> Result<()> {
    if let Some(path) = &a.plot {
        crate::plot::draw(path, rows, a.op.name(), transport.name())?;
        if !a.json {
            println!(" plot written to {}", path.display());
        }
    }
    Ok(())
}

/// A sweep row: bandwidth and CPU of the `bw` run, latency of the
/// depth-1 `lat` run at the same size.
fn sweep_row(bw: &Outcome, lat: &Outcome, transport: TransportKind) -> PerfResult {
    let mut r = result_of(bw, Kind::Sweep, transport.name());
    let l = result_of(lat, Kind::Lat, transport.name());
    r.lat_min_us = l.lat_min_us;
    r.lat_avg_us = l.lat_avg_us;
    r.lat_p50_us = l.lat_p50_us;
    r.lat_p99_us = l.lat_p99_us;
    r.lat_p999_us = l.lat_p999_us;
    r.lat_stdev_us = l.lat_stdev_us;
    r.lat_max_us = l.lat_max_us;
    r.lat_kind = l.lat_kind;
    r.errors += l.errors;
    r.verified = r.verified && l.verified;
    r.set_extra("lat_iterations", lat.params.iters);
    r.set_extra("lat_depth", 1);
    r
}

/// `sweep --rounds`: one size's row whose figures are each the median of
/// `rounds` (same size and operations each), with their median, min and
/// max in `extra.rounds`. Seconds and the message rate follow from the
/// median bandwidth, so that bytes / seconds stays the row's bandwidth.
fn median_row(rounds: &[PerfResult], gbits: bool) -> PerfResult {
    let median = |f: fn(&PerfResult) -> f64| spread(rounds, f).0;
    let mut r = rounds[0].clone();
    r.gbytes_per_sec = median(|x| x.gbytes_per_sec);
    r.gbits_per_sec = r.gbytes_per_sec * 8.0;
    r.seconds = r.bytes as f64 / (r.gbytes_per_sec * 1e9);
    r.msgs_per_sec = r.iterations as f64 / r.seconds;
    r.lat_min_us = median(|x| x.lat_min_us);
    r.lat_avg_us = median(|x| x.lat_avg_us);
    r.lat_p50_us = median(|x| x.lat_p50_us);
    r.lat_p99_us = median(|x| x.lat_p99_us);
    r.lat_p999_us = median(|x| x.lat_p999_us);
    r.lat_stdev_us = median(|x| x.lat_stdev_us);
    r.lat_max_us = median(|x| x.lat_max_us);
    r.cpu_client_pct = median(|x| x.cpu_client_pct);
    r.cpu_client_engine_pct = median(|x| x.cpu_client_engine_pct);
    r.cpu_server_pct = median(|x| x.cpu_server_pct);
    r.cpu_server_engine_pct = median(|x| x.cpu_server_engine_pct);
    r.cpu_seconds_per_gb = median(|x| x.cpu_seconds_per_gb);
    r.cpu_seconds = r.cpu_seconds_per_gb * r.bytes as f64 / 1e9;
    r.errors = rounds.iter().map(|x| x.errors).sum();
    r.bytes_checked = rounds.iter().map(|x| x.bytes_checked).sum();
    r.verified = rounds.iter().all(|x| x.verified);
    let (mut spread, _) = rounds_summary(rounds, gbits, "sweep");
    if let Some(o) = spread.as_object_mut() {
        o.remove("summary");
    }
    r.set_extra("rounds", spread);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(gbps: f64) -> PerfResult {
        let mut r = PerfResult::new(Kind::Bw, "read", "mem", 1, 1, 1.0);
        r.gbytes_per_sec = gbps;
        r
    }

    #[test]
    fn rounds_report_median_min_and_max() {
        let rows: Vec<PerfResult> = [3.0, 1.0, 2.0, 5.0, 4.0].into_iter().map(row).collect();
        assert_eq!(spread(&rows, |r| r.gbytes_per_sec), (3.0, 1.0, 5.0));
        assert_eq!(spread(&rows[..4], |r| r.gbytes_per_sec), (2.5, 1.0, 5.0));
        let (v, lines) = rounds_summary(&rows, false, "rsndk");
        assert_eq!(v["rounds"], 5);
        assert_eq!(v["gbytes_per_sec"]["median"], 3.0);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("GB/s") && l.contains("median"))
        );
    }

    #[test]
    fn thread_addresses_follow_the_first() {
        assert_eq!(
            nth_addr(Ipv4Addr::new(127, 0, 0, 2), 3).unwrap(),
            Ipv4Addr::new(127, 0, 0, 5)
        );
        assert!(nth_addr(Ipv4Addr::BROADCAST, 1).is_err());
    }
}

//! `bw`, `lat` and `sweep`: running the workloads of [`crate::bench`] in
//! one process (two adapters, two threads) or as one side of a
//! two-process run, and turning outcomes into results.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::bench::{Outcome, Params, Test, run_client, serve_one};
use crate::error::{Error, Result};
use crate::link::listen;
use crate::ndk::{Adapter, Listener};
use crate::report::{Kind, PerfResult, Printer};
use crate::setup::{self, Pair, Role};
use ndkperf_cli::{FabricArgs, Op, PerfArgs, SweepArgs, TransportKind};

/// How long a `--server` process waits for its client.
const SERVER_WAIT: Duration = Duration::from_secs(60);

/// A seed per run, so that stale data never passes verification.
fn seed() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    t ^ std::process::id()
}

/// One process, both sides: the server adapter listens and serves each
/// run on a scoped thread while the client runs it.
/// Field order is drop order: the listener closes before its adapter.
struct Local {
    listener: Listener,
    pair: Pair,
    fabric: FabricArgs,
}

impl Local {
    fn open(fabric: &FabricArgs) -> Result<Self> {
        let pair = Pair::open(fabric)?;
        let listener = listen(&pair.server, fabric.server_addr, fabric.port())?;
        Ok(Self {
            listener,
            pair,
            fabric: fabric.clone(),
        })
    }

    fn run(&self, p: &Params, progress: bool) -> Result<Outcome> {
        let server = SocketAddrV4::new(self.fabric.server_addr, self.fabric.port());
        std::thread::scope(|s| {
            let serving = s.spawn(|| serve_one(&self.pair.server, &self.listener, SERVER_WAIT));
            let client = run_client(
                &self.pair.client,
                self.fabric.client_addr,
                server,
                p,
                self.fabric.timeout,
                progress,
            );
            if client.is_err() {
                self.listener.cancel_waits();
            }
            let served = serving
                .join()
                .unwrap_or_else(|_| Err(Error::msg("the server thread failed")));
            crate::error::trace!("client: {:?}", client.as_ref().map(|_| ()));
            crate::error::trace!("server: {:?}", served);
            match (client, served) {
                (Ok(out), Ok(_)) => Ok(out),
                (Err(e), Ok(_)) => Err(e),
                (Err(e), Err(s)) => Err(Error::msg(format!("{e} (server side: {s})"))),
                (Ok(_), Err(e)) => Err(e.context("server side")),
            }
        })
    }
}

/// The result row of an outcome.
pub fn result_of(out: &Outcome, kind: Kind, transport: &str) -> PerfResult {
    let p = &out.params;
    let one_way = p.test == Test::Lat && p.op == Op::Send;
    let mut r = PerfResult::new(kind, p.op.name(), transport, p.size, p.iters, out.seconds)
        .with_latency(
            out.samples.summary(if one_way { 0.5 } else { 1.0 }),
            if one_way { "one-way" } else { "completion" },
        );
    r.depth = p.depth;
    r.sge = p.sge;
    r.errors = out.mismatches;
    r.verified = p.verify && out.mismatches == 0 && out.checked > 0;
    r.set_extra("bytes_checked", out.checked);
    r.set_extra("cq_sleeps", out.sleeps);
    r
}

fn params(test: Test, a: &PerfArgs) -> Params {
    Params {
        test,
        op: a.op,
        size: a.size.unwrap_or(match test {
            Test::Bw => 64 << 10,
            Test::Lat => 64,
        }),
        iters: a.iters.unwrap_or(1000),
        depth: match test {
            Test::Bw => a.depth.unwrap_or(16),
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
    if let Some(l) = fabric.loss {
        v.push(format!("injected loss {l}"));
    }
    v
}

fn finish(results: &[PerfResult]) -> ExitCode {
    let bad: u64 = results.iter().map(|r| r.errors).sum();
    if bad > 0 {
        eprintln!("ndkperf: verification failed: {bad} bytes differ from what was sent");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `bw` and `lat`.
pub fn perf(test: Test, a: &PerfArgs) -> Result<ExitCode> {
    let p = params(test, a);
    let two_process = a.server.is_some() || a.client.is_some();
    let transport = setup::transport(&a.fabric, two_process)?;
    if let Some(server) = a.server {
        return serve_process(a, server.unwrap_or(a.fabric.server_addr));
    }
    let show = !a.json;
    let mut printer = Printer::new(a.json, banner(&p, transport, &a.fabric, two_process));
    let (out, client_adapter) = if let Some(server) = a.client {
        // The server may be another machine; this side's address must be
        // this machine's.
        setup::check_local(a.fabric.client_addr.into(), "--client-addr")?;
        if let Some(path) = &a.fabric.pcap {
            setup::check_pcap_path(path)?;
        }
        let adapter = Arc::new(Adapter::open(&setup::config(
            &a.fabric,
            transport,
            Role::Client,
            a.fabric.client_addr,
        ))?);
        let out = run_client(
            &adapter,
            a.fabric.client_addr,
            SocketAddrV4::new(server, a.fabric.port()),
            &p,
            a.fabric.timeout,
            show,
        )?;
        (out, adapter)
    } else {
        let local = Local::open(&a.fabric)?;
        let out = local.run(&p, show)?;
        (out, local.pair.client.clone())
    };
    let kind = match test {
        Test::Bw => Kind::Bw,
        Test::Lat => Kind::Lat,
    };
    let mut r = result_of(&out, kind, transport.name());
    for (k, v) in setup::device_counters(&client_adapter) {
        r.extra.insert(k, v);
    }
    printer.row(&r);
    printer.finish();
    Ok(finish(&[r]))
}

/// `--server`: one adapter, one listener, one run.
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
        "ndkperf server: listening on {addr}:{} (udp)",
        a.fabric.port()
    );
    let served = serve_one(&adapter, &listener, SERVER_WAIT)?;
    println!("ndkperf server: {served}");
    drop(listener);
    Ok(ExitCode::SUCCESS)
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
    let local = Local::open(&a.fabric)?;
    let mut sizes = Vec::new();
    let mut size = a.min_size.next_power_of_two();
    if size != a.min_size {
        sizes.push(a.min_size);
    }
    while size <= a.max_size {
        sizes.push(size);
        size *= 2;
    }
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
    let mut printer = Printer::new(a.json, banner(&first, transport, &a.fabric, false));
    let mut rows = Vec::new();
    for &size in &sizes {
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
        let bw_out = local.run(&bw, !a.json)?;
        let lat_out = local.run(&lat, !a.json)?;
        let mut r = result_of(&bw_out, Kind::Sweep, transport.name());
        let l = result_of(&lat_out, Kind::Lat, transport.name());
        r.lat_min_us = l.lat_min_us;
        r.lat_avg_us = l.lat_avg_us;
        r.lat_p50_us = l.lat_p50_us;
        r.lat_p99_us = l.lat_p99_us;
        r.lat_max_us = l.lat_max_us;
        r.lat_kind = l.lat_kind;
        r.errors += l.errors;
        r.verified = r.verified && l.verified;
        r.set_extra("lat_iterations", lat.iters);
        printer.row(&r);
        rows.push(r);
    }
    printer.finish();
    if let Some(path) = &a.plot {
        crate::plot::draw(path, &rows, a.op.name(), transport.name())?;
        if !a.json {
            println!(" plot written to {}", path.display());
        }
    }
    Ok(finish(&rows))
}

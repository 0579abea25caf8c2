//! `smbd`: an SMB Direct ([MS-SMBD]) transport between two adapters with
//! SMB2-style READ/WRITE I/O over RDMA on top, verified byte for byte.

pub mod client;
pub mod conn;
pub mod proto;
pub mod remote;
mod workload;

use std::net::SocketAddrV4;
use std::process::ExitCode;
use std::time::Duration;

use crate::cpu::{Mark, SideCpu};
use crate::error::{Error, Result};
use crate::link::listen;
use crate::report::{Kind, PerfResult, Printer};
use crate::setup::{self, Pair};
use conn::Config;
use ndkperf_cli::{Mix, SmbdArgs};
use workload::{ClientReport, Job, ServerReport, run_client, serve_one};

/// The largest I/O: 8 fast-register MRs of 1 MiB.
const MAX_IO: u64 = 8 << 20;

fn mix_name(m: Mix) -> &'static str {
    match m {
        Mix::Read => "read",
        Mix::Write => "write",
        Mix::Mixed => "mixed",
    }
}

/// `smbd`.
pub fn run(a: &SmbdArgs) -> Result<ExitCode> {
    if let Some(server) = a.server {
        return remote::run(a, server);
    }
    if a.io_size > MAX_IO {
        return Err(Error::msg(format!(
            "--io-size {} is larger than SMB Direct's usual maximum read/write size here (8M)",
            ndkperf_cli::units::format_size(a.io_size)
        )));
    }
    if !(128..=65_536).contains(&a.max_send_size) || !(128..=65_536).contains(&a.max_receive_size) {
        return Err(Error::msg(
            "--max-send-size and --max-receive-size must be from 128 to 64K",
        ));
    }
    let transport = setup::transport(&a.fabric, false)?;
    let verify = !a.no_verify;
    let config = Config {
        credits: a.credits,
        max_send_size: a.max_send_size as u32,
        max_receive_size: a.max_receive_size as u32,
        max_fragmented_size: 1 << 20,
        max_read_write_size: 1 << 20,
        keepalive: a.keepalive,
    };
    let job = Job {
        ops: a.ops,
        io_size: a.io_size as u32,
        depth: a.depth,
        mix: a.mix,
        verify,
        inline_threshold: a.inline_threshold.min(u64::from(u32::MAX)) as u32,
        seed: std::process::id(),
        fr_pages: a.fr_pages,
    };
    // Inline I/Os ride in one SMB2 message: it must fit the reassembly
    // limit.
    if !job_rdma(&job) && a.io_size + 0x80 > u64::from(config.max_fragmented_size) {
        return Err(Error::msg(
            "--inline-threshold is too large for 1M messages",
        ));
    }
    let pair = Pair::open(&a.fabric)?;
    let listener = listen(&pair.server, a.fabric.server_addr, a.fabric.port())?;
    let server_addr = SocketAddrV4::new(a.fabric.server_addr, a.fabric.port());
    // CPU from the connect to the end (the whole run: SMB Direct's
    // negotiation is part of what an SMB client pays).
    let engines = (
        Mark::now(pair.client.threads()),
        Mark::now(pair.server.threads()),
    );
    let client_mark = Mark::this_thread();
    let (client, server) = std::thread::scope(|s| {
        let serving = s.spawn(|| {
            let mark = Mark::this_thread();
            let served = serve_one(&pair.server, &listener, config, Duration::from_secs(60));
            served.map(|sv| (sv, SideCpu::since(&mark, Some(&engines.1))))
        });
        let c = run_client(
            &pair.client,
            a.fabric.client_addr,
            server_addr,
            &job,
            config,
            a.fabric.timeout,
            !a.json,
        );
        let c = c.map(|c| (c, SideCpu::since(&client_mark, Some(&engines.0))));
        if c.is_err() {
            listener.cancel_waits();
        }
        let sv = serving
            .join()
            .unwrap_or_else(|_| Err(Error::msg("the server thread failed")));
        (c, sv)
    });
    crate::error::trace!("smbd client: {:?}", client.as_ref().map(|_| ()));
    crate::error::trace!("smbd server: {:?}", server.as_ref().map(|_| ()));
    trace_devices(&pair);
    let ((c, client_cpu), (sv, server_cpu)) = match (client, server) {
        (Ok(c), Ok(sv)) => (c, sv),
        (Err(e), Ok(_)) => return Err(e),
        (Err(e), Err(s)) => return Err(Error::msg(format!("{e} (server side: {s})"))),
        (Ok(_), Err(e)) => return Err(e.context("server side")),
    };
    drop(listener);
    let mut r = result(a, &job, &c, &sv, transport.name());
    r.set_cpu(client_cpu, server_cpu);
    for (k, v) in setup::device_counters(&pair.client) {
        r.extra.insert(k, v);
    }
    let banner = banner(a, &job, &c, transport.name());
    let mut printer = Printer::new(a.json, banner).gbits(a.gbits);
    printer.row(&r);
    printer.finish();
    if r.errors > 0 {
        eprintln!(
            "ndkperf: verification failed: {} I/Os had wrong data",
            r.errors
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `NDKPERF_TRACE=1`: both devices' counters.
fn trace_devices(pair: &Pair) {
    for (side, adapter) in [("client", &pair.client), ("server", &pair.server)] {
        if let Some(rnic) = host::adapters::device_of(adapter.raw()) {
            crate::error::trace!("{side} device: {:?}", rnic.stats());
        }
    }
}

/// The lines above the table.
fn banner(a: &SmbdArgs, job: &Job, c: &ClientReport, transport: &str) -> Vec<String> {
    vec![
        format!(
            "ndkperf SMB Direct: SMB2 {} I/O of {} over {} ({} -> {}:{}), pmtu {}",
            mix_name(a.mix),
            ndkperf_cli::units::format_size(a.io_size),
            transport,
            a.fabric.client_addr,
            a.fabric.server_addr,
            a.fabric.port(),
            a.fabric.pmtu
        ),
        format!(
            "negotiated: send {} / receive {} / fragmented {} / read-write {}, credits {}, depth {}, {}, verify {}",
            c.sizes.0,
            c.sizes.1,
            c.sizes.2,
            c.sizes.3,
            a.credits,
            a.depth,
            if job_rdma(job) {
                "RDMA (FastRegister + READ/WRITE + SendAndInvalidate)"
            } else {
                "inline (fragmented)"
            },
            if job.verify { "on" } else { "off" }
        ),
    ]
}

/// The result row of a run, with SMB Direct's counters.
fn result(
    a: &SmbdArgs,
    job: &Job,
    c: &ClientReport,
    sv: &ServerReport,
    transport: &str,
) -> PerfResult {
    let mut r = PerfResult::new(
        Kind::Smbd,
        &format!("smbd-{}", mix_name(a.mix)),
        transport,
        a.io_size,
        c.ops,
        c.seconds,
    )
    .with_latency(c.samples.summary(1.0), "io");
    r.depth = a.depth;
    r.errors = c.bad_ios + sv.bad_writes;
    r.verified = job.verify && r.errors == 0;
    r.set_extra("iops", r.msgs_per_sec);
    r.set_extra("reads", c.reads);
    r.set_extra("writes", c.ops - c.reads);
    r.set_extra("bytes_checked", c.checked + sv.checked);
    r.bytes_checked = c.checked + sv.checked;
    r.set_extra("rdma", job_rdma(job));
    r.set_extra("fast_registers", c.fast_registers);
    r.set_extra("local_invalidates", c.local_invalidates);
    r.set_extra("remote_invalidations", c.stats.remote_invalidations);
    r.set_extra("server_send_and_invalidate", sv.stats.send_and_invalidate);
    r.set_extra("server_rdma_reads", sv.rdma_reads);
    r.set_extra("server_rdma_writes", sv.rdma_writes);
    r.set_extra("max_send_size", c.sizes.0);
    r.set_extra("max_receive_size", c.sizes.1);
    r.set_extra("max_fragmented_size", c.sizes.2);
    r.set_extra("max_read_write_size", c.sizes.3);
    r.set_extra("client_messages_sent", c.stats.messages_sent);
    r.set_extra("server_messages_sent", sv.stats.messages_sent);
    r.set_extra("client_fragmented_sent", c.stats.fragmented_sent);
    r.set_extra("server_fragmented_sent", sv.stats.fragmented_sent);
    r.set_extra("client_credits_granted", c.stats.credits_granted);
    r.set_extra("server_credits_granted", sv.stats.credits_granted);
    r.set_extra("empty_messages", c.stats.empty_sent + sv.stats.empty_sent);
    r.set_extra(
        "keepalives_sent",
        c.stats.keepalives_sent + sv.stats.keepalives_sent,
    );
    r.set_extra(
        "keepalives_answered",
        c.stats.keepalives_answered + sv.stats.keepalives_answered,
    );
    r.set_extra(
        "credit_stalls",
        c.stats.credit_stalls + sv.stats.credit_stalls,
    );
    r
}

fn job_rdma(job: &Job) -> bool {
    job.io_size >= job.inline_threshold
}

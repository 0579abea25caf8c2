//! `tcp`: the bandwidth and latency patterns over a TCP loopback
//! connection (the baseline SMB over TCP would get), and `memcpy`: one
//! core copying memory.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cpu::{Mark, SideCpu};
use crate::error::{Context, Error, Result};
use crate::progress::Progress;
use crate::report::{Kind, PerfResult, Printer};
use crate::setup::check_loopback;
use crate::stats::Samples;
use crate::verify::Pattern;
use ndkperf_cli::{MemcpyArgs, TcpArgs, TcpMode};

const SEED: u32 = 0x7c9;

/// What the receiving side checked.
#[derive(Debug, Default)]
struct Checked {
    mismatches: u64,
    bytes: u64,
}

fn server(
    listener: &TcpListener,
    mode: TcpMode,
    size: usize,
    iters: u64,
    verify: bool,
) -> Result<(Checked, SideCpu)> {
    let (mut s, _) = listener.accept().context("tcp accept")?;
    s.set_nodelay(true)?;
    let mark = Mark::this_thread();
    let pattern = Pattern::new(size, SEED);
    let mut buf = vec![0u8; size];
    let mut checked = Checked::default();
    for _ in 0..iters {
        s.read_exact(&mut buf).context("tcp server read")?;
        if verify {
            checked.mismatches += pattern.mismatches(0, &buf);
            checked.bytes += size as u64;
        }
        match mode {
            TcpMode::Bw => s.write_all(&[1]).context("tcp server ack")?,
            TcpMode::Lat => s.write_all(&buf).context("tcp server reply")?,
        }
    }
    Ok((checked, SideCpu::since(&mark, None)))
}

fn client(
    addr: SocketAddr,
    a: &TcpArgs,
    size: usize,
    iters: u64,
) -> Result<(f64, Samples, Checked, SideCpu)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).context("tcp connect")?;
    s.set_nodelay(true)?;
    let pattern = Pattern::new(size, SEED);
    let mut buf = vec![0u8; size];
    pattern.fill(0, &mut buf);
    let mut reply = vec![0u8; size];
    let mut samples = Samples::with_capacity(iters.min(1 << 22) as usize);
    let mut checked = Checked::default();
    let mut progress = Progress::new(iters, "tcp", a.json);
    let mark = Mark::this_thread();
    let start = Instant::now();
    match a.mode {
        TcpMode::Bw => {
            let mut sent_at = std::collections::VecDeque::with_capacity(a.depth as usize);
            let mut acks = [0u8; 4096];
            let mut acked = 0u64;
            for _ in 0..iters {
                while sent_at.len() >= a.depth as usize {
                    let n = s.read(&mut acks).context("tcp client ack")?;
                    if n == 0 {
                        return Err(Error::msg("tcp: the server closed the connection"));
                    }
                    let now = Instant::now();
                    for _ in 0..n {
                        if let Some(t0) = sent_at.pop_front() {
                            samples.push(now - t0);
                        }
                    }
                    acked += n as u64;
                    progress.inc(n as u64);
                }
                sent_at.push_back(Instant::now());
                s.write_all(&buf).context("tcp client write")?;
            }
            while acked < iters {
                let n = s.read(&mut acks).context("tcp client ack")?;
                if n == 0 {
                    return Err(Error::msg("tcp: the server closed the connection"));
                }
                let now = Instant::now();
                for _ in 0..n {
                    if let Some(t0) = sent_at.pop_front() {
                        samples.push(now - t0);
                    }
                }
                acked += n as u64;
                progress.inc(n as u64);
            }
        }
        TcpMode::Lat => {
            for _ in 0..iters {
                let t0 = Instant::now();
                s.write_all(&buf).context("tcp client write")?;
                s.read_exact(&mut reply).context("tcp client read")?;
                samples.push(t0.elapsed());
                if a.verify {
                    checked.mismatches += pattern.mismatches(0, &reply);
                    checked.bytes += size as u64;
                }
                progress.inc(1);
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu = SideCpu::since(&mark, None);
    progress.finish();
    Ok((seconds, samples, checked, cpu))
}

/// `tcp`.
pub fn tcp(a: &TcpArgs) -> Result<ExitCode> {
    let (r, addr) = measure(a)?;
    let depth = r.depth;
    let banner = vec![
        format!(
            "ndkperf TCP {} over loopback ({addr}), TCP_NODELAY",
            match a.mode {
                TcpMode::Bw => "bandwidth (window of --depth messages, 1-byte acks)",
                TcpMode::Lat => "latency (ping-pong, one-way = RTT/2)",
            }
        ),
        format!(
            "depth {depth}, verify {}",
            if a.verify { "on" } else { "off" }
        ),
        TCP_CPU.into(),
    ];
    let mut printer = Printer::new(a.json, banner).gbits(a.gbits);
    printer.row(&r);
    printer.finish();
    if r.errors > 0 {
        eprintln!("ndkperf: verification failed: {} bytes differ", r.errors);
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// How TCP's CPU columns are measured.
pub const TCP_CPU: &str = "TCP's CPU: each side's thread, user and system time (the kernel's TCP work is system time of the thread it runs on)";

/// Runs `a`'s pattern over TCP loopback; returns its row and the
/// listening address.
pub fn measure(a: &TcpArgs) -> Result<(PerfResult, SocketAddr)> {
    check_loopback(a.server_addr, "--server-addr")?;
    let size = a.size.unwrap_or(match a.mode {
        TcpMode::Bw => 64 << 10,
        TcpMode::Lat => 64,
    }) as usize;
    let iters = a.iters.unwrap_or(1000);
    let listener = TcpListener::bind((a.server_addr, 0))
        .with_context(|| format!("cannot listen on {}", a.server_addr))?;
    let addr = listener.local_addr()?;
    let (client_result, server_result) = std::thread::scope(|s| {
        let served = s.spawn(|| server(&listener, a.mode, size, iters, a.verify));
        let c = client(addr, a, size, iters);
        if c.is_err() {
            // Unblock the server if the client gave up early.
            let _ = TcpStream::connect(addr);
        }
        let sv = served
            .join()
            .unwrap_or_else(|_| Err(Error::msg("the tcp server thread failed")));
        (c, sv)
    });
    let (seconds, samples, mut checked, client_cpu) = client_result?;
    let (served, server_cpu) = server_result.context("tcp server")?;
    checked.mismatches += served.mismatches;
    checked.bytes += served.bytes;
    let (kind, lat_kind, scale, depth) = match a.mode {
        TcpMode::Bw => (Kind::Bw, "completion", 1.0, a.depth),
        TcpMode::Lat => (Kind::Lat, "one-way", 0.5, 1),
    };
    let mut r = PerfResult::new(kind, "tcp", "tcp", size as u64, iters, seconds)
        .with_latency(samples.summary(scale), lat_kind);
    r.depth = depth;
    r.errors = checked.mismatches;
    r.verified = a.verify && checked.mismatches == 0 && checked.bytes > 0;
    r.bytes_checked = checked.bytes;
    r.set_cpu(client_cpu, server_cpu);
    Ok((r, addr))
}

/// Single-thread memcpy bandwidth over `size`-byte buffers (source and
/// destination apart by more than the caches when they are large).
pub fn memcpy_bandwidth(size: usize, iters: u64) -> (f64, Samples, SideCpu) {
    let src: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let mut dst = vec![0u8; size];
    // Fault the destination in before timing.
    dst.copy_from_slice(&src);
    let mut samples = Samples::with_capacity(iters.min(1 << 22) as usize);
    let mark = Mark::this_thread();
    let start = Instant::now();
    for _ in 0..iters {
        let t0 = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        samples.push(t0.elapsed());
    }
    let seconds = start.elapsed().as_secs_f64();
    (seconds, samples, SideCpu::since(&mark, None))
}

/// `memcpy`.
pub fn memcpy(a: &MemcpyArgs) -> ExitCode {
    let (seconds, samples, cpu) = memcpy_bandwidth(a.size as usize, a.iters);
    let mut r = PerfResult::new(Kind::Bw, "memcpy", "cpu", a.size, a.iters, seconds)
        .with_latency(samples.summary(1.0), "completion");
    // One thread copies: it is the "client"; there is no other side.
    r.set_cpu(cpu, SideCpu::default());
    let mut printer = Printer::new(
        a.json,
        vec!["ndkperf memcpy: one thread copying between two buffers".into()],
    );
    printer.row(&r);
    printer.finish();
    ExitCode::SUCCESS
}

//! `tcp`: the bandwidth and latency patterns over a TCP loopback
//! connection (the baseline SMB over TCP would get), and `memcpy`: one
//! core copying memory.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::bench::{Control, UNTIL_STOPPED};
use crate::cpu::{Mark, SideCpu};
use crate::error::{Context, Error, Result};
use crate::interrupt;
use crate::meter::{IntervalLines, with_intervals};
use crate::perf::{note_interrupted, rounds_summary};
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
    verify: bool,
) -> Result<(Checked, SideCpu)> {
    let (mut s, _) = listener.accept().context("tcp accept")?;
    s.set_nodelay(true)?;
    let mark = Mark::this_thread();
    let pattern = Pattern::new(size, SEED);
    let mut buf = vec![0u8; size];
    let mut checked = Checked::default();
    // Until the client shuts its side down: it alone knows when the run
    // ends (--iters, --duration or Ctrl-C).
    while read_message(&mut s, &mut buf)? {
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

/// Reads one message into `buf`; false when the peer ended the stream
/// between messages.
fn read_message(s: &mut TcpStream, buf: &mut [u8]) -> Result<bool> {
    let n = loop {
        match s.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => break r.context("tcp server read")?,
        }
    };
    if n == 0 {
        return Ok(false);
    }
    s.read_exact(&mut buf[n..]).context("tcp server read")?;
    Ok(true)
}

/// What the client measured.
struct ClientRun {
    completed: u64,
    seconds: f64,
    samples: Samples,
    checked: Checked,
    cpu: SideCpu,
}

/// Reads acknowledgements (one byte per message) and records the
/// latency of each message they acknowledge.
fn read_acks(
    s: &mut TcpStream,
    sent_at: &mut VecDeque<Instant>,
    samples: &mut Samples,
    ctl: &Control<'_>,
) -> Result<u64> {
    let mut acks = [0u8; 4096];
    let n = s.read(&mut acks).context("tcp client ack")?;
    if n == 0 {
        return Err(Error::msg("tcp: the server closed the connection"));
    }
    let now = Instant::now();
    for _ in 0..n {
        if let Some(t0) = sent_at.pop_front() {
            samples.push(now - t0);
            ctl.record(now - t0);
        }
    }
    Ok(n as u64)
}

fn client(
    addr: SocketAddr,
    a: &TcpArgs,
    size: usize,
    iters: u64,
    ctl: &Control<'_>,
) -> Result<ClientRun> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).context("tcp connect")?;
    s.set_nodelay(true)?;
    let pattern = Pattern::new(size, SEED);
    let mut buf = vec![0u8; size];
    pattern.fill(0, &mut buf);
    let mut reply = vec![0u8; size];
    let mut samples = Samples::with_capacity(iters.min(1 << 22) as usize);
    let mut checked = Checked::default();
    let mut progress = Progress::new(iters, "tcp", !ctl.progress);
    let mark = Mark::this_thread();
    let start = Instant::now();
    let mut completed = 0u64;
    match a.mode {
        TcpMode::Bw => {
            let mut sent_at = VecDeque::with_capacity(a.depth as usize);
            let mut sent = 0u64;
            while !ctl.stop_after(sent, iters, start) {
                while sent_at.len() >= a.depth as usize {
                    let n = read_acks(&mut s, &mut sent_at, &mut samples, ctl)?;
                    completed += n;
                    progress.inc(n);
                }
                sent_at.push_back(Instant::now());
                s.write_all(&buf).context("tcp client write")?;
                sent += 1;
            }
            while completed < sent {
                let n = read_acks(&mut s, &mut sent_at, &mut samples, ctl)?;
                completed += n;
                progress.inc(n);
            }
        }
        TcpMode::Lat => {
            while !ctl.stop_after(completed, iters, start) {
                let t0 = Instant::now();
                s.write_all(&buf).context("tcp client write")?;
                s.read_exact(&mut reply).context("tcp client read")?;
                let rtt = t0.elapsed();
                samples.push(rtt);
                ctl.record(rtt);
                if a.verify {
                    checked.mismatches += pattern.mismatches(0, &reply);
                    checked.bytes += size as u64;
                }
                completed += 1;
                progress.inc(1);
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu = SideCpu::since(&mark, None);
    progress.finish();
    // The server reads until this end of the stream.
    s.shutdown(Shutdown::Write).context("tcp client shutdown")?;
    Ok(ClientRun {
        completed,
        seconds,
        samples,
        checked,
        cpu,
    })
}

/// `tcp`: `--rounds` measurements (each a fresh connection), each for
/// `--iters` messages or `--duration`, until Ctrl-C.
pub fn tcp(a: &TcpArgs) -> Result<ExitCode> {
    check_loopback(a.server_addr, "--server-addr")?;
    // From here on Ctrl-C stops the measurement rather than the process.
    interrupt::install();
    let mut printer: Option<Printer> = None;
    let mut rows = Vec::new();
    for round in 0..a.rounds {
        if interrupt::requested() {
            break;
        }
        let (mut r, addr) = measure(a)?;
        if a.rounds > 1 {
            r.set_extra("round", round + 1);
        }
        printer
            .get_or_insert_with(|| Printer::new(a.json, banner(a, addr, r.depth)).gbits(a.gbits))
            .row(&r);
        rows.push(r);
    }
    let Some(printer) = printer else {
        eprintln!("ndkperf: interrupted before the first measurement");
        return Ok(ExitCode::from(interrupt::EXIT_INTERRUPTED));
    };
    printer.finish();
    if interrupt::requested() {
        note_interrupted(&printer, a.json, a.duration, &rows, a.rounds);
    }
    if rows.len() > 1 {
        let (v, lines) = rounds_summary(&rows, a.gbits, "tcp");
        for l in &lines {
            printer.note(l);
        }
        if a.json {
            println!("{v}");
        }
    }
    if interrupt::requested() {
        return Ok(ExitCode::from(interrupt::EXIT_INTERRUPTED));
    }
    let errors: u64 = rows.iter().map(|r| r.errors).sum();
    if errors > 0 {
        eprintln!("ndkperf: verification failed: {errors} bytes differ");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines above `tcp`'s table.
fn banner(a: &TcpArgs, addr: SocketAddr, depth: u32) -> Vec<String> {
    vec![
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
    ]
}

/// How TCP's CPU columns are measured.
pub const TCP_CPU: &str = "TCP's CPU: each side's thread, user and system time (the kernel's TCP work is system time of the thread it runs on)";

/// Runs `a`'s pattern over TCP loopback (for `--iters` messages, or for
/// `--duration` with interval lines); returns its row and the listening
/// address.
pub fn measure(a: &TcpArgs) -> Result<(PerfResult, SocketAddr)> {
    check_loopback(a.server_addr, "--server-addr")?;
    let size = a.size.unwrap_or(match a.mode {
        TcpMode::Bw => 64 << 10,
        TcpMode::Lat => 64,
    }) as usize;
    let iters = match a.duration {
        Some(_) => UNTIL_STOPPED,
        None => a.iters.unwrap_or(1000),
    };
    let (kind, lat_kind, scale, depth) = match a.mode {
        TcpMode::Bw => (Kind::Bw, "completion", 1.0, a.depth),
        TcpMode::Lat => (Kind::Lat, "one-way", 0.5, 1),
    };
    let listener = TcpListener::bind((a.server_addr, 0))
        .with_context(|| format!("cannot listen on {}", a.server_addr))?;
    let addr = listener.local_addr()?;
    let lines = a.duration.map(|_| IntervalLines {
        every: a.interval,
        show: !a.json,
        gbits: a.gbits,
        size: size as u64,
        round_trips: a.mode == TcpMode::Lat,
        scale,
    });
    let ((client_result, server_result), intervals) = with_intervals(lines, |meter| {
        let ctl = Control {
            duration: a.duration,
            meter,
            // --duration's lines show the progress.
            progress: !a.json && a.duration.is_none(),
        };
        std::thread::scope(|s| {
            let served = s.spawn(|| server(&listener, a.mode, size, a.verify));
            let c = client(addr, a, size, iters, &ctl);
            if c.is_err() {
                // Unblock the server if the client never connected.
                let _ = TcpStream::connect(addr);
            }
            let sv = served
                .join()
                .unwrap_or_else(|_| Err(Error::msg("the tcp server thread failed")));
            (c, sv)
        })
    });
    let run = client_result?;
    let (served, server_cpu) = server_result.context("tcp server")?;
    let mut r = PerfResult::new(kind, "tcp", "tcp", size as u64, run.completed, run.seconds)
        .with_latency(run.samples.summary(scale), lat_kind);
    r.depth = depth;
    r.errors = run.checked.mismatches + served.mismatches;
    r.bytes_checked = run.checked.bytes + served.bytes;
    r.verified = a.verify && r.errors == 0 && r.bytes_checked > 0;
    r.interrupted = run.completed < iters && interrupt::requested();
    r.iterations_requested = if a.duration.is_some() { 0 } else { iters };
    r.set_cpu(run.cpu, server_cpu);
    if !intervals.is_empty() {
        r.set_extra("intervals", intervals);
    }
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

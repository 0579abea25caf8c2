//! `udp`: a ping-pong over two bare UDP sockets on loopback, the kernel's
//! floor under the UDP transport's ping-pong (`lat --transport udp`),
//! measured in the same run. Each side waits as a busy-polling consumer
//! of the RNIC does: a non-blocking receive, and a yield of the processor
//! between tries.

use std::io::ErrorKind;
use std::net::UdpSocket;
use std::process::ExitCode;
use std::time::Instant;

use crate::cpu::{Mark, SideCpu};
use crate::error::{Context, Error, Result};
use crate::progress::Progress;
use crate::report::{Kind, PerfResult, Printer};
use crate::setup::check_loopback;
use crate::stats::Samples;
use ndkperf_cli::UdpArgs;

/// Largest datagram payload over IPv4.
const MAX_PAYLOAD: u64 = 65_507;

/// Waits for one datagram of `len` bytes, spinning on a non-blocking
/// receive and yielding between tries.
fn receive(socket: &UdpSocket, buf: &mut [u8], len: usize) -> Result<()> {
    loop {
        match socket.recv(buf) {
            Ok(n) if n == len => return Ok(()),
            Ok(n) => {
                return Err(Error::msg(format!(
                    "udp: a datagram of {n} bytes arrived, {len} expected"
                )));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => return Err(e).context("udp receive"),
        }
    }
}

fn bound_pair(addr: std::net::Ipv4Addr) -> Result<(UdpSocket, UdpSocket)> {
    let open = || -> Result<UdpSocket> {
        let s = UdpSocket::bind((addr, 0)).with_context(|| format!("cannot bind {addr}"))?;
        s.set_nonblocking(true)?;
        Ok(s)
    };
    let (a, b) = (open()?, open()?);
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    Ok((a, b))
}

/// `udp`.
pub fn udp(a: &UdpArgs) -> Result<ExitCode> {
    check_loopback(a.server_addr, "--server-addr")?;
    if a.size == 0 || a.size > MAX_PAYLOAD {
        return Err(Error::msg(format!(
            "--size {} is not a UDP payload size (1 to {MAX_PAYLOAD} bytes)",
            a.size
        )));
    }
    let size = a.size as usize;
    let (client, server) = bound_pair(a.server_addr)?;
    let iters = a.iters;
    let (seconds, samples, cpu) =
        std::thread::scope(|s| -> Result<(f64, Samples, [SideCpu; 2])> {
            let echo = s.spawn(|| -> Result<SideCpu> {
                let mut buf = vec![0u8; size];
                let mark = Mark::this_thread();
                for _ in 0..iters {
                    receive(&server, &mut buf, size)?;
                    server.send(&buf).context("udp echo send")?;
                }
                Ok(SideCpu::since(&mark, None))
            });
            let mut buf = vec![0x5Au8; size];
            let mut samples = Samples::with_capacity(iters.min(1 << 22) as usize);
            let mut progress = Progress::new(iters, "udp", a.json);
            let mark = Mark::this_thread();
            let start = Instant::now();
            for _ in 0..iters {
                let t0 = Instant::now();
                client.send(&buf).context("udp send")?;
                receive(&client, &mut buf, size)?;
                samples.push(t0.elapsed());
                progress.inc(1);
            }
            let seconds = start.elapsed().as_secs_f64();
            let client_cpu = SideCpu::since(&mark, None);
            progress.finish();
            let server_cpu = echo
                .join()
                .unwrap_or_else(|_| Err(Error::msg("the udp echo thread failed")))?;
            Ok((seconds, samples, [client_cpu, server_cpu]))
        })?;
    let mut r = PerfResult::new(Kind::Lat, "udp", "udp", a.size, iters, seconds)
        .with_latency(samples.summary(0.5), "one-way");
    r.set_cpu(cpu[0], cpu[1]);
    let banner = vec![format!(
        "ndkperf UDP latency over loopback ({}), bare sockets, ping-pong, one-way = RTT/2",
        a.server_addr
    )];
    let mut printer = Printer::new(a.json, banner);
    printer.row(&r);
    printer.finish();
    Ok(ExitCode::SUCCESS)
}

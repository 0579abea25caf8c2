//! rsndk's SMB Direct client against Linux's, same server, same work:
//! guest 0's ksmbd share gets a file of [`MIB`] MiB written and read
//! back in 1 MiB I/Os, one in flight, by Linux's cifs client in guest 1
//! (`cache=none`, rsize = wsize = 1 MiB, over its rxe), by `ndkperf smbd
//! --server` on librsndk, and by the same client over the bottled
//! `rsndk.sys`. Each run is verified on the server's disk; throughput
//! and CPU per MB moved are printed side by side.
//!
//! CPU is counted where each client runs: ndkperf's process, the bottle's
//! (this test) process, and for cifs both the guest's own busy time and
//! its QEMU process's time on the host (under TCG that includes the
//! emulation, so only ratios within one column mean much). The server's
//! QEMU time per MB says what each client costs ksmbd.

// Tick, byte and microsecond counts of a short run: far below 2^52.
#![allow(clippy::cast_precision_loss)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use lab::{CifsMount, Guest, KsmbdConfig};

use crate::ndkperf_ping::{release_ndkperf, run_binary};
use crate::peer::serial;
use crate::smbd_bottle::{bottled_v, job, ndkperf_adapter, session, smbd_config, target};
use crate::smbd_ksmbd::{PasswordFile, args};
use crate::{check, shared_lab};

/// The file: 16 I/Os of 1 MiB each way.
const MIB: u32 = 16;

const MOUNTPOINT: &str = "/mnt/compare";

/// CPU time of process `pid` on this host (utime + stime).
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/stat: {e}"));
    // Fields after the command's closing parenthesis: state is field 3,
    // utime 14 and stime 15.
    let rest = &stat[stat.rfind(')').expect("a comm field") + 2..];
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|f| f.parse().expect("a tick count"))
        .collect();
    ticks(fields.iter().sum())
}

fn ticks(n: u64) -> Duration {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Duration::from_secs_f64(n as f64 / hz.max(1) as f64)
}

/// CPU time of `who` (`RUSAGE_SELF` or `RUSAGE_CHILDREN`, the waited-for
/// children).
fn rusage(who: libc::c_int) -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: a valid `who` and a writable rusage.
    let status = unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    assert_eq!(status, 0, "getrusage");
    // SAFETY: getrusage succeeded and filled it.
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The guest's busy CPU time (`/proc/stat` less idle and iowait), in
/// its own clock ticks (USER_HZ, 100 on Debian).
fn guest_busy(guest: &Guest) -> Duration {
    let stat = check(guest.run_ok("head -n 1 /proc/stat"));
    let fields: Vec<u64> = stat
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().expect("a jiffy count"))
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Duration::from_millis((total - idle) * 10)
}

/// One client's figures.
struct Row {
    client: &'static str,
    write_mb_s: f64,
    read_mb_s: f64,
    /// Host CPU of the client per MB moved (both directions).
    client_ms_per_mb: f64,
    /// The guest's own CPU per MB (cifs only).
    guest_ms_per_mb: Option<f64>,
    /// The server's QEMU process CPU per MB.
    server_ms_per_mb: f64,
}

fn moved_mb() -> f64 {
    2.0 * f64::from(MIB) * 1.048_576
}

fn per_mb(cpu: Duration) -> f64 {
    cpu.as_secs_f64() * 1000.0 / moved_mb()
}

fn rate(elapsed: Duration) -> f64 {
    f64::from(MIB) * 1.048_576 / elapsed.as_secs_f64()
}

fn linux_cifs(server: &Guest, client: &Guest, config: &KsmbdConfig) -> Row {
    let mount = CifsMount {
        server: server.ipv4().into(),
        share: config.share.clone(),
        mountpoint: MOUNTPOINT.into(),
        user: config.user.clone(),
        password: config.password.clone(),
        options: "rdma,vers=3.1.1,cache=none,rsize=1048576,wsize=1048576".into(),
    };
    check(client.run_ok(&format!(
        "dd if=/dev/urandom of=/tmp/compare bs=1M count={MIB} 2>/dev/null"
    )));
    let original = check(client.sha256("/tmp/compare"));
    check(client.mount_cifs(&mount));
    let timed = |script: &str| {
        let (guest, host, server_host) = (
            guest_busy(client),
            process_cpu(client.qemu_pid()),
            process_cpu(server.qemu_pid()),
        );
        let started = Instant::now();
        check(client.run_ok(script));
        (
            started.elapsed(),
            guest_busy(client).saturating_sub(guest),
            process_cpu(client.qemu_pid()).saturating_sub(host),
            process_cpu(server.qemu_pid()).saturating_sub(server_host),
        )
    };
    let write = timed(&format!(
        "dd if=/tmp/compare of={MOUNTPOINT}/cifs.dat bs=1M 2>/dev/null"
    ));
    let read = timed(&format!(
        "dd if={MOUNTPOINT}/cifs.dat of=/tmp/compare-back bs=1M 2>/dev/null"
    ));
    check(client.unmount(MOUNTPOINT));
    assert_eq!(
        check(server.sha256(&format!("{}/cifs.dat", config.share_path()))),
        original,
        "cifs: the server's copy differs from what was written"
    );
    assert_eq!(
        check(client.sha256("/tmp/compare-back")),
        original,
        "cifs: what was read back differs"
    );
    check(client.run_ok("rm -f /tmp/compare /tmp/compare-back"));
    Row {
        client: "Linux cifs (guest 1, kernel SMB Direct over rxe)",
        write_mb_s: rate(write.0),
        read_mb_s: rate(read.0),
        client_ms_per_mb: per_mb(write.2 + read.2),
        guest_ms_per_mb: Some(per_mb(write.1 + read.1)),
        server_ms_per_mb: per_mb(write.3 + read.3),
    }
}

/// The MB/s ndkperf printed for `op` (`smbd-write`, `smbd-read`).
fn json_rate(stdout: &str, op: &str) -> f64 {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["op"] == op)
        .and_then(|v| Some(v["bytes"].as_f64()? / v["seconds"].as_f64()? / 1e6))
        .unwrap_or_else(|| panic!("ndkperf printed no {op} row:\n{stdout}"))
}

/// `ndkperf smbd --server` built with `--release`; `busy_poll` false
/// adds `--no-busy-poll` (the RNIC thread sleeps on its sockets instead
/// of spinning).
fn ndkperf_host(server: &Guest, config: &KsmbdConfig, busy_poll: bool) -> Row {
    let password = PasswordFile::new("compare", &config.password);
    let bin = release_ndkperf();
    let count = MIB.to_string();
    let mut extra = vec![
        "--size",
        "1M",
        "--count",
        count.as_str(),
        "--depth",
        "1",
        "--json",
    ];
    if !busy_poll {
        extra.push("--no-busy-poll");
    }
    let (children, server_host) = (
        rusage(libc::RUSAGE_CHILDREN),
        process_cpu(server.qemu_pid()),
    );
    let out = run_binary(bin, &args(config, &password, &extra));
    let (client_cpu, server_cpu) = (
        rusage(libc::RUSAGE_CHILDREN).saturating_sub(children),
        process_cpu(server.qemu_pid()).saturating_sub(server_host),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ndkperf smbd --server: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let sha = serde_json::from_str::<serde_json::Value>(stdout.lines().next().unwrap_or(""))
        .ok()
        .and_then(|v| v["extra"]["sha256"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("ndkperf printed no sha256:\n{stdout}"));
    assert_eq!(
        check(server.sha256(&format!("{}/ndkperf.dat", config.share_path()))),
        sha,
        "ndkperf: the server's copy differs from what was written"
    );
    Row {
        client: if busy_poll {
            "ndkperf smbd --server (librsndk, UDP, busy poll)"
        } else {
            "ndkperf smbd --server (librsndk, UDP, --no-busy-poll)"
        },
        write_mb_s: json_rate(&stdout, "smbd-write"),
        read_mb_s: json_rate(&stdout, "smbd-read"),
        client_ms_per_mb: per_mb(client_cpu),
        guest_ms_per_mb: None,
        server_ms_per_mb: per_mb(server_cpu),
    }
}

fn bottled(server: &Guest, config: &KsmbdConfig) -> Row {
    const HOST_PART: u8 = 11;
    let v = bottled_v(HOST_PART);
    let adapter = ndkperf_adapter(&v);
    let s = session(server.ipv4(), &config.user, &config.password);
    let work = job(u64::from(MIB), 1, 21);
    let (own, server_host) = (rusage(libc::RUSAGE_SELF), process_cpu(server.qemu_pid()));
    let (report, _) = ndkperf::smbd::client::run::run_file_io(
        &adapter,
        &target(HOST_PART, &config.share),
        smbd_config(),
        &s,
        &work,
    )
    .unwrap_or_else(|e| panic!("bottled SMB client: {e}"));
    let (client_cpu, server_cpu) = (
        rusage(libc::RUSAGE_SELF).saturating_sub(own),
        process_cpu(server.qemu_pid()).saturating_sub(server_host),
    );
    drop(adapter);
    v.leave();
    assert_eq!(
        report.mismatched_bytes, 0,
        "bottled: bytes read back differ"
    );
    assert_eq!(
        check(server.sha256(&format!("{}/bottled.dat", config.share_path()))),
        ndkperf::smbd::remote::written_sha256(&work),
        "bottled: the server's copy differs from what was written"
    );
    let mb = report.bytes as f64 / 1e6;
    Row {
        client: "the same client over the bottled rsndk.sys",
        write_mb_s: mb / report.write_seconds,
        read_mb_s: mb / report.read_seconds,
        client_ms_per_mb: per_mb(client_cpu),
        guest_ms_per_mb: None,
        server_ms_per_mb: per_mb(server_cpu),
    }
}

#[test]
fn rsndk_and_linux_cifs_against_the_same_ksmbd_share() {
    let _serial = serial();
    let lab = shared_lab();
    let [server, client] = &lab.guests()[..2] else {
        panic!("the shared lab has fewer than two guests");
    };
    let config = KsmbdConfig {
        share: "compare".into(),
        user: "cmpuser".into(),
        password: "compare pass".into(),
    };
    check(server.start_ksmbd(&config));
    let rows = [
        linux_cifs(server, client, &config),
        ndkperf_host(server, &config, true),
        ndkperf_host(server, &config, false),
        bottled(server, &config),
    ];
    check(server.stop_ksmbd());
    let mut table = format!(
        "{MIB} x 1 MiB written then read back, depth 1, against ksmbd on rxe (TCG guests):\n  \
         {:<54} {:>8} {:>8} {:>14} {:>14} {:>14}\n",
        "client", "write", "read", "client CPU", "in-guest CPU", "server QEMU"
    );
    let _ = writeln!(
        table,
        "  {:<54} {:>8} {:>8} {:>14} {:>14} {:>14}",
        "", "MB/s", "MB/s", "ms/MB (host)", "ms/MB", "ms/MB"
    );
    for r in &rows {
        assert!(
            r.write_mb_s > 0.0 && r.read_mb_s > 0.0 && r.client_ms_per_mb > 0.0,
            "{}: nothing measured",
            r.client
        );
        let _ = writeln!(
            table,
            "  {:<54} {:>8.1} {:>8.1} {:>14.2} {:>14} {:>14.2}",
            r.client,
            r.write_mb_s,
            r.read_mb_s,
            r.client_ms_per_mb,
            r.guest_ms_per_mb
                .map_or_else(|| "-".to_owned(), |g| format!("{g:.2}")),
            r.server_ms_per_mb
        );
    }
    eprintln!("{table}");
}

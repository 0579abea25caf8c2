//! `ndkperf smbd --server ADDR`: the SMB 3 client ([`super::client`])
//! against a real SMB Direct server (ksmbd, Windows) over one UDP
//! adapter: sign in, write `--count` I/Os of `--size` to one file over
//! the RDMA channel, read them back, check every byte, sign out.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use ndkperf_cli::{SmbdArgs, TransportKind};
use sha2::{Digest as _, Sha256};

use super::client::connection::Config as SessionConfig;
use super::client::file_io::{FileIo, FileIoReport};
use super::client::negotiate::DIALECTS;
use super::client::ntlm::Credentials;
use super::client::run::{Target, run_file_io};
use super::conn::{Config, Stats};
use crate::cpu::{Mark, SideCpu};
use crate::error::{Context as _, Error, Result};
use crate::ndk::Adapter;
use crate::report::{Kind, PerfResult, Printer};
use crate::setup::{self, AdapterOptions};
use crate::verify::Pattern;

/// SMB's port ([MS-SMBD] 2.1: SMB Direct over RoCE listens on 445).
pub const SMB_PORT: u16 = 445;

/// The largest I/O the client offers to move: 16 MiB, the largest SMB
/// Direct MaxReadWriteSize ksmbd can be configured to (SMBD_MAX_IOSIZE,
/// Linux 6.1 fs/smb/server/transport_rdma.h:12; Windows grants 8 MiB).
/// An I/O takes one buffer descriptor (fast registration) per
/// FRMRPageCount pages; the server's NEGOTIATE grants bound it further
/// ([`super::client::file_io::check_io_size`], once connected).
const MAX_IO: u64 = 16 << 20;

/// What the flags ask for, checked.
#[derive(Debug)]
struct Plan {
    target: Target,
    credentials: Credentials,
    job: FileIo,
}

/// The password: the file's first line (without its line end).
pub fn read_password(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--password-file {}: cannot read it", path.display()))?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        return Err(Error::msg(format!(
            "--password-file {}: its first line is empty (it must hold the password)",
            path.display()
        )));
    }
    Ok(line.to_owned())
}

fn plan(a: &SmbdArgs, server: IpAddr) -> Result<Plan> {
    if a.fabric.transport == Some(TransportKind::Mem) {
        return Err(Error::msg(
            "--server reaches a real SMB Direct server over UDP: --transport mem cannot",
        ));
    }
    if a.fabric.loss.is_some() {
        return Err(Error::msg("--loss applies to --transport mem only"));
    }
    if a.io_size > MAX_IO {
        return Err(Error::msg(format!(
            "--size {} is larger than the {} this client moves per I/O (the largest SMB Direct MaxReadWriteSize)",
            ndkperf_cli::units::format_size(a.io_size),
            ndkperf_cli::units::format_size(MAX_IO)
        )));
    }
    let (Some(share), Some(user), Some(password_file)) = (&a.share, &a.user, &a.password_file)
    else {
        return Err(Error::msg(
            "--server needs --share, --user and --password-file",
        ));
    };
    if share.is_empty() || share.contains(['\\', '/']) {
        return Err(Error::msg(format!(
            "--share '{share}' is not a share name (no slashes)"
        )));
    }
    if a.file.is_empty() || a.file.starts_with(['\\', '/']) {
        return Err(Error::msg(format!(
            "--file '{}' is not a path inside the share",
            a.file
        )));
    }
    let password = read_password(password_file)?;
    let local = match (a.local, server) {
        (Some(l), _) => l,
        (None, IpAddr::V6(v6)) if v6.is_loopback() => {
            return Err(Error::msg(
                "--server ::1 needs --local: [::1] is the only IPv6 loopback address",
            ));
        }
        (None, _) => crate::ping::default_local(server)?,
    };
    if local.is_ipv4() != server.is_ipv4() {
        return Err(Error::msg(format!(
            "--server {server} and --local {local} are of different address families: give a --local of the server's family"
        )));
    }
    setup::check_local(local, "--local")?;
    if let Some(path) = &a.fabric.pcap {
        setup::check_pcap_path(path)?;
    }
    Ok(Plan {
        target: Target {
            local,
            server: SocketAddr::new(server, a.fabric.port.unwrap_or(SMB_PORT)),
            share: share.clone(),
            file: a.file.clone(),
            timeout: a.fabric.timeout,
        },
        credentials: Credentials {
            user: user.clone(),
            domain: String::new(),
            password,
            workstation: "NDKPERF".into(),
        },
        job: FileIo {
            io_size: a.io_size as usize,
            ops: a.ops,
            depth: a.depth as usize,
            seed: std::process::id(),
        },
    })
}

/// SHA-256 of the file the run writes (what `sha256sum` of the server's
/// copy must print).
pub fn written_sha256(job: &FileIo) -> String {
    let pattern = Pattern::new(job.io_size, job.seed);
    let mut hash = Sha256::new();
    for n in 0..job.ops {
        hash.update(pattern.expected(n));
    }
    hash.finalize()
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// `smbd --server ADDR`.
pub fn run(a: &SmbdArgs, server: IpAddr) -> Result<ExitCode> {
    let plan = plan(a, server)?;
    let options = AdapterOptions {
        pmtu: a.fabric.pmtu,
        loss: None,
        no_busy_poll: a.fabric.no_busy_poll,
        peer_sockets: a.fabric.peer_sockets,
        pcap: a.fabric.pcap.as_deref(),
    };
    let adapter = Arc::new(Adapter::open(&setup::config_string(
        TransportKind::Udp,
        plan.target.local,
        &options,
    ))?);
    let smbd = Config {
        credits: a.credits,
        max_send_size: a.max_send_size as u32,
        max_receive_size: a.max_receive_size as u32,
        max_fragmented_size: 1 << 20,
        max_read_write_size: MAX_IO as u32,
        keepalive: a.keepalive,
    };
    let mut client_guid = [0u8; 16];
    getrandom::fill(&mut client_guid)
        .map_err(|e| Error::msg(format!("no random ClientGuid: {e}")))?;
    let session = SessionConfig {
        server_name: server.to_string(),
        credentials: plan.credentials.clone(),
        dialects: DIALECTS.to_vec(),
        credit_target: 512,
        client_guid,
    };
    let consumer = Mark::this_thread();
    let engine = Mark::now(adapter.threads());
    let (report, stats) = run_file_io(&adapter, &plan.target, smbd, &session, &plan.job)
        .with_context(|| {
            format!(
                "SMB Direct to \\\\{}\\{} as {} (port {})",
                server,
                plan.target.share,
                plan.credentials.user,
                plan.target.server.port()
            )
        })?;
    let client_cpu = SideCpu::since(&consumer, Some(&engine));
    let sha = written_sha256(&plan.job);
    let banner = vec![
        format!(
            "ndkperf SMB Direct client: SMB 3 WRITE then READ of {} x {} on \\\\{}\\{}\\{} over udp ({} -> {}), pmtu {}",
            plan.job.ops,
            ndkperf_cli::units::format_size(a.io_size),
            server,
            plan.target.share,
            plan.target.file,
            plan.target.local,
            plan.target.server,
            a.fabric.pmtu
        ),
        format!(
            "SMB {}.{}.{}, signing {} by the server; RDMA channel (SMB2_CHANNEL_RDMA_V1_INVALIDATE, {} descriptor(s) of up to {} pages per I/O: the server invalidates the first, the client the others), depth {}, every byte read back checked",
            report.dialect >> 8,
            (report.dialect >> 4) & 0xF,
            report.dialect & 0xF,
            if report.server_requires_signing {
                "required"
            } else {
                "enabled"
            },
            report.descriptors_per_io,
            adapter.info().FRMRPageCount,
            plan.job.depth
        ),
        "CPU: this machine's side only, over the whole session (the server's is the server machine's); CPU-s/GB per both directions' bytes".into(),
    ];
    let mut printer = Printer::new(a.json, banner).gbits(a.gbits);
    for read in [false, true] {
        let mut r = row(a, &plan.job, &report, &stats, read);
        for (k, v) in setup::device_counters(&adapter) {
            r.extra.insert(k, v);
        }
        r.set_extra("sha256", sha.clone());
        r.set_cpu(client_cpu, SideCpu::default());
        r.cpu_seconds_per_gb = r.cpu_seconds / (2.0 * report.bytes as f64 / 1e9).max(1e-9);
        printer.row(&r);
    }
    printer.finish();
    if !a.json {
        println!("sha256 of the {} bytes written: {sha}", report.bytes);
    }
    if report.mismatched_bytes > 0 {
        eprintln!(
            "ndkperf: verification failed: {} bytes read back differ from those written",
            report.mismatched_bytes
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The result row of one direction.
fn row(a: &SmbdArgs, job: &FileIo, report: &FileIoReport, stats: &Stats, read: bool) -> PerfResult {
    let seconds = if read {
        report.read_seconds
    } else {
        report.write_seconds
    };
    let mut r = PerfResult::new(
        Kind::Smbd,
        if read { "smbd-read" } else { "smbd-write" },
        "udp",
        a.io_size,
        job.ops,
        seconds,
    )
    .with_latency(
        if read {
            report.read_latency
        } else {
            report.write_latency
        },
        "io",
    );
    r.depth = a.depth;
    if read {
        r.errors = report.mismatched_bytes;
        r.verified = report.mismatched_bytes == 0;
    }
    r.set_extra("iops", r.msgs_per_sec);
    r.set_extra("mb_per_sec", r.bytes as f64 / seconds.max(1e-9) / 1e6);
    r.set_extra("remote_invalidations", report.remote_invalidations);
    r.set_extra("local_invalidations", report.local_invalidations);
    r.set_extra("descriptors_per_io", report.descriptors_per_io);
    if read {
        r.set_extra(
            "length_prefixed_read_signatures",
            report.length_prefixed_signatures,
        );
    }
    r.set_extra("client_messages_sent", stats.messages_sent);
    r.set_extra("client_messages_received", stats.messages_received);
    r.set_extra("client_credits_granted", stats.credits_granted);
    r.set_extra("credit_stalls", stats.credit_stalls);
    r.set_extra("keepalives_sent", stats.keepalives_sent);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_is_the_first_line() {
        let dir = std::env::temp_dir().join(format!("ndkperf-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("pw");
        std::fs::write(&p, "lab pass,word\nignored\n").unwrap();
        assert_eq!(read_password(&p).unwrap(), "lab pass,word");
        std::fs::write(&p, "\n").unwrap();
        assert!(read_password(&p).unwrap_err().to_string().contains("empty"));
        let missing = dir.join("missing");
        assert!(
            read_password(&missing)
                .unwrap_err()
                .to_string()
                .contains("cannot read")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn written_sha256_hashes_the_slots_in_order() {
        let job = FileIo {
            io_size: 4096,
            ops: 3,
            depth: 1,
            seed: 5,
        };
        let pattern = Pattern::new(4096, 5);
        let mut all = Vec::new();
        for n in 0..3 {
            all.extend_from_slice(pattern.expected(n));
        }
        let want: String = Sha256::digest(&all)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .concat();
        assert_eq!(written_sha256(&job), want);
    }
}

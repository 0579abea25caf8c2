//! `ndkperf smbd --server` against Linux's ksmbd over SMB Direct on rxe:
//! the binary, as a user runs it, signs in to guest 0's share, writes a
//! few MiB over the RDMA channel, reads them back and checks them; the
//! server's copy on its disk has the SHA-256 the tool says it wrote: 1
//! MiB I/Os (one buffer descriptor each) at depth 1 and 4, 4 MiB I/Os
//! (four descriptors each: ksmbd invalidates the first, the client the
//! other three) and a run over IPv6. A wrong password ends in the
//! server's status and a nonzero exit.

use std::path::PathBuf;
use std::process::Output;
use std::time::Instant;

use lab::KsmbdConfig;

use crate::ndkperf_ping::run_ndkperf;
use crate::peer::{Family, serial};
use crate::{check, shared_lab};

/// I/Os of 1 MiB written and read back: a few MiB, under TCG a few
/// seconds each way.
const COUNT: u32 = 4;

/// I/Os of the run with four in flight.
const DEEP_COUNT: u32 = 8;

/// I/Os of 4 MiB (ksmbd's NEGOTIATE MaxReadSize/MaxWriteSize, four fast
/// registrations of 256 pages each).
const LARGE_COUNT: u32 = 3;

const FILE: &str = "ndkperf.dat";

/// A password file for this test (the host's filesystem is the
/// namespace's too), removed when dropped.
pub struct PasswordFile(PathBuf);

impl PasswordFile {
    pub fn new(name: &str, password: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("rsndk-smbd-{name}-{}.txt", std::process::id()));
        std::fs::write(&path, format!("{password}\n"))
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        Self(path)
    }
}

impl Drop for PasswordFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn args(config: &KsmbdConfig, password: &PasswordFile, extra: &[&str]) -> Vec<String> {
    args_over(Family::V4, config, password, extra)
}

/// [`args`] with the server's and our addresses of `family`.
fn args_over(
    family: Family,
    config: &KsmbdConfig,
    password: &PasswordFile,
    extra: &[&str],
) -> Vec<String> {
    let mut a: Vec<String> = [
        "smbd",
        "--server",
        &family.guest().to_string(),
        "--local",
        &family.lab_addr(1).to_string(),
        "--share",
        &config.share,
        "--user",
        &config.user,
        "--password-file",
        &password.0.to_string_lossy(),
        "--file",
        FILE,
        "--timeout",
        "10s",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    a.extend(extra.iter().map(|s| (*s).to_owned()));
    a
}

/// The SHA-256 the tool printed for what it wrote.
fn written_sha(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("sha256 of the "))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("the tool printed no sha256 line:\n{stdout}"))
        .to_owned()
}

/// tshark's view of the capture: SMB Direct and SMB2 inside RoCEv2,
/// nothing malformed. Returns the summary line.
pub fn decode(pcap: &std::path::Path) -> String {
    let decoded = check(lab::decode_check(pcap));
    let smb_direct = decoded.protocols.get("smb_direct").copied().unwrap_or(0);
    let smb2 = decoded.protocols.get("smb2").copied().unwrap_or(0);
    assert!(
        decoded.is_clean() && smb_direct > 0 && smb2 > 0,
        "tshark on {}: SMB Direct frames {smb_direct}, SMB2 frames {smb2}, malformed {:?}, errors {:?}, protocols {:?}",
        pcap.display(),
        decoded.malformed,
        decoded.expert_errors,
        decoded.protocols
    );
    format!(
        "capture of the first run: {} frames, {} RoCEv2, {smb_direct} SMB Direct, {smb2} SMB2, none malformed; BTH opcodes {:?}",
        decoded.frames,
        decoded.roce_frames(),
        decoded.ib_opcodes
    )
}

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// One `ndkperf smbd --server` run over `family` with `extra` flags that
/// must succeed, the file on ksmbd's disk having the SHA-256 the tool
/// printed; returns its stdout.
fn verified_run(
    family: Family,
    config: &KsmbdConfig,
    password: &PasswordFile,
    extra: &[&str],
    dmesg: &dyn Fn() -> String,
) -> String {
    let out = run_ndkperf(&args_over(family, config, password, extra));
    assert!(
        out.status.success(),
        "ndkperf smbd --server {extra:?} ({family:?}) against ksmbd: {}\nguest's kernel log:\n{}",
        text(&out),
        dmesg()
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let written = written_sha(&stdout);
    let on_server = check(
        shared_lab()
            .guest()
            .sha256(&format!("{}/{FILE}", config.share_path())),
    );
    assert_eq!(
        on_server, written,
        "{extra:?} ({family:?}): the file on ksmbd's disk differs from what ndkperf wrote:\n{stdout}"
    );
    stdout
}

#[test]
fn ndkperf_smbd_client_round_trips_a_file_through_ksmbd() {
    let _serial = serial();
    let lab = shared_lab();
    let server = lab.guest();
    let config = KsmbdConfig {
        share: "ndkshare".into(),
        user: "ndkuser".into(),
        password: "ndk pass,word".into(),
    };
    check(server.start_ksmbd(&config));
    let dmesg = || {
        server
            .run_ok("dmesg | grep -i -e ksmbd -e smb -e rdma -e rxe | tail -n 40")
            .unwrap_or_default()
    };

    let good = PasswordFile::new("good", &config.password);
    let pcap = lab.run_dir().join("smbd_ksmbd.pcap");
    let capture = check(lab.capture(lab.bridge(), &pcap));
    let started = Instant::now();
    let (count, deep_count, large_count) = (
        COUNT.to_string(),
        DEEP_COUNT.to_string(),
        LARGE_COUNT.to_string(),
    );
    let one_by_one = ["--size", "1M", "--count", &count, "--depth", "1"];
    let stdout = verified_run(Family::V4, &config, &good, &one_by_one, &dmesg);
    let elapsed = started.elapsed();
    let captured = check(capture.stop());
    let capture_summary = decode(&captured.path);

    // Several I/Os in flight: ksmbd's credits and out-of-order answers.
    let deep = ["--size", "1M", "--count", &deep_count, "--depth", "4"];
    let deep_stdout = verified_run(Family::V4, &config, &good, &deep, &dmesg);

    // I/Os of four fast registrations each: four descriptors per READ
    // and WRITE, one token invalidated by ksmbd, three by the client.
    let large = ["--size", "4M", "--count", &large_count, "--depth", "2"];
    let large_stdout = verified_run(Family::V4, &config, &good, &large, &dmesg);
    assert!(
        large_stdout.contains("4 descriptor(s) of up to 256 pages per I/O"),
        "4 MiB I/Os in four descriptors:\n{large_stdout}"
    );

    // Above ksmbd's NEGOTIATE grant (MaxReadSize/MaxWriteSize 4 MiB):
    // refused in one line before any I/O.
    let too_large = run_ndkperf(&args(&config, &good, &["--size", "8M", "--count", "1"]));
    let too_large_err = String::from_utf8_lossy(&too_large.stderr).into_owned();
    assert!(
        too_large.status.code() == Some(2)
            && too_large_err.lines().count() == 1
            && too_large_err.contains("--size 8M is more than the server takes per I/O (4M)"),
        "--size 8M against ksmbd's 4 MiB grant: {}",
        text(&too_large)
    );

    // The first run over IPv6 (fd77::1 -> fd77::2).
    let v6_stdout = verified_run(Family::V6, &config, &good, &one_by_one, &dmesg);

    let bad = PasswordFile::new("bad", "not the password");
    let refused = run_ndkperf(&args(&config, &bad, &["--size", "64K", "--count", "1"]));
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a wrong password must fail the run: {}",
        text(&refused)
    );
    assert!(
        stderr.contains("SESSION_SETUP") && stderr.contains("STATUS_LOGON_FAILURE"),
        "a wrong password must name the server's status: {}",
        text(&refused)
    );
    check(server.stop_ksmbd());
    eprintln!(
        "ndkperf smbd --server against ksmbd ({:.1} s in all):\n{stdout}at depth 4:\n{deep_stdout}4 MiB I/Os:\n{large_stdout}over IPv6:\n{v6_stdout}--size 8M: {}{capture_summary}",
        elapsed.as_secs_f64(),
        too_large_err
    );
}

#[test]
fn ndkperf_smbd_client_fails_cleanly_when_ksmbd_stops_mid_transfer() {
    let _serial = serial();
    let server = shared_lab().guest();
    let config = KsmbdConfig {
        share: "ndkstop".into(),
        user: "ndkuser".into(),
        password: "stop pass".into(),
    };
    check(server.start_ksmbd(&config));
    let good = PasswordFile::new("stop", &config.password);
    // 400 MiB: far longer than the wait below at TCG's tens of MB/s.
    let a = args(
        &config,
        &good,
        &["--size", "1M", "--count", "400", "--depth", "2"],
    );
    let started = Instant::now();
    let running = std::thread::spawn(move || run_ndkperf(&a));
    std::thread::sleep(std::time::Duration::from_secs(4));
    check(server.stop_ksmbd());
    let out = running.join().expect("the ndkperf thread");
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let log = server
        .run_ok("dmesg | grep -i -e ksmbd -e smb_direct | tail -n 20")
        .unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a server gone mid-transfer must fail the run: {}\nguest's kernel log:\n{log}",
        text(&out)
    );
    assert!(
        stderr.starts_with("ndkperf: SMB Direct to ") && stderr.lines().count() == 1,
        "one clear line expected: {}",
        text(&out)
    );
    assert!(
        elapsed.as_secs() < 40,
        "the run took {:.1} s to notice the server was gone",
        elapsed.as_secs_f64()
    );
    eprintln!(
        "ksmbd stopped mid-transfer: ndkperf ended after {:.1} s: {}",
        elapsed.as_secs_f64(),
        stderr.trim()
    );
}

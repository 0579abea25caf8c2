//! The bottled `rsndk.sys` as SMB Direct's provider against ksmbd:
//! ndkperf's SMB 3 client, driven as a library over an `NDK_ADAPTER` of
//! a bottled V joined to the lab's bridge, signs in to guest 0's share,
//! writes a file over the RDMA channel (ksmbd RDMA-READs our
//! fast-registered buffers, RDMA-WRITEs them for the READs, invalidates
//! each token remotely) and reads it back; the server's copy has the
//! SHA-256 of what was written. A wrong password and a server stopped
//! mid-transfer end in clear errors. Every run ends with the adapter
//! closed, the driver's pool and MDLs back where they were, and no
//! bugcheck.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lab::KsmbdConfig;
use ndkperf::ndk::Adapter;
use ndkperf::smbd::client::connection::Config as SessionConfig;
use ndkperf::smbd::client::file_io::{FileIo, FileIoReport};
use ndkperf::smbd::client::negotiate::DIALECTS;
use ndkperf::smbd::client::ntlm::Credentials;
use ndkperf::smbd::client::run::{Target, run_file_io};
use ndkperf::smbd::conn::Config as SmbdConfig;
use ndkperf::smbd::remote::{SMB_PORT, written_sha256};
use testkit::adapter::bottle::tap::TapV;

use crate::peer::{Family, serial};
use crate::{check, shared_lab};

const FILE: &str = "bottled.dat";

/// A bottled V on a new tap of the lab's bridge at `host_part`.
pub fn bottled_v(host_part: u8) -> TapV {
    let fd = check(shared_lab().create_tap(&format!("rssmbd{host_part}")));
    TapV::join(fd, &[(Family::V4.lab_addr(host_part), 24)])
}

/// An `NDK_ADAPTER` of `v` as ndkperf's adapter: the bottle's page
/// numbers, closed through the driver when the last holder drops it.
pub fn ndkperf_adapter(v: &TapV) -> Arc<Adapter> {
    let raw = v.open_ndk();
    let (machine, id) = (v.machine(), v.id);
    // SAFETY: `raw` was just opened on V, whose NDK entry points take
    // any thread; only the closure below closes it, before V leaves.
    let adapter = unsafe {
        Adapter::from_raw(
            raw,
            "rsndk.sys (bottled, on the lab's bridge)",
            kbottle::mm::PHYS_OFFSET >> 12,
            Box::new(move |a| machine.close_ndk(id, a)),
        )
    };
    Arc::new(adapter.unwrap_or_else(|e| panic!("adopting the bottled adapter: {e}")))
}

/// What the driver holds: pool by tag, MDLs and IRPs.
#[derive(Debug, PartialEq, Eq)]
struct Held {
    pool: BTreeMap<String, (usize, usize)>,
    blocks: Vec<kbottle::pool::PoolBlock>,
    mdls: usize,
    irps: usize,
}

impl Held {
    fn now() -> Self {
        Self {
            pool: kbottle::pool::outstanding_by_tag(),
            blocks: kbottle::pool::outstanding(),
            mdls: kbottle::mm::outstanding_mdls(),
            irps: kbottle::io::outstanding_irps(),
        }
    }

    /// Blocks held now and not in `before`, as `count x size B`.
    fn growth_over(&self, before: &Self) -> String {
        let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
        for b in self.blocks.iter().filter(|b| {
            !before
                .blocks
                .iter()
                .any(|o| o.addr == b.addr && o.size == b.size)
        }) {
            *sizes.entry(b.size).or_default() += 1;
        }
        if sizes.is_empty() {
            return "nothing".into();
        }
        sizes
            .iter()
            .map(|(size, n)| format!("{n} x {size} B"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Fails with what differs from `before`.
    fn expect_same_as(&self, before: &Self, when: &str) {
        let mut grown: Vec<String> = Vec::new();
        for (tag, now) in &self.pool {
            let was = before.pool.get(tag).copied().unwrap_or((0, 0));
            if *now != was {
                grown.push(format!("{tag}: {was:?} -> {now:?} (blocks, bytes)"));
            }
        }
        for (tag, was) in &before.pool {
            if !self.pool.contains_key(tag) {
                grown.push(format!("{tag}: {was:?} -> freed"));
            }
        }
        assert!(
            grown.is_empty() && self.mdls == before.mdls && self.irps == before.irps,
            "{when}: the driver does not hold what it held before the adapter opened: pool {grown:?} (new blocks: {}), MDLs {} -> {}, IRPs {} -> {}",
            self.growth_over(before),
            before.mdls,
            self.mdls,
            before.irps,
            self.irps
        );
        let bugchecks = kbottle::verifier::bugchecks();
        assert!(bugchecks.is_empty(), "{when}: bugchecks {bugchecks:?}");
    }
}

/// One short session on a fresh adapter of `v`, closed: the V's
/// one-time state (its neighbour entry for the server and the like) is
/// made, so what the driver holds afterwards is the baseline every later
/// session must return to. Returns it and what the first session kept.
fn warmed_baseline(v: &TapV, host_part: u8, config: &KsmbdConfig) -> (Held, String) {
    let cold = Held::now();
    let adapter = ndkperf_adapter(v);
    let s = session(shared_lab().guest().ipv4(), &config.user, &config.password);
    run_file_io(
        &adapter,
        &target(host_part, &config.share),
        smbd_config(),
        &s,
        &job(1, 1, 10),
    )
    .unwrap_or_else(|e| panic!("the warm-up session: {e}"));
    drop(adapter);
    let warm = Held::now();
    let kept = warm.growth_over(&cold);
    (warm, kept)
}

pub fn session(server: Ipv4Addr, user: &str, password: &str) -> SessionConfig {
    // Unique per session is all a ClientGuid must be.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let client_guid = nanos.to_le_bytes();
    SessionConfig {
        server_name: server.to_string(),
        credentials: Credentials {
            user: user.to_owned(),
            domain: String::new(),
            password: password.to_owned(),
            workstation: "RSNDKSYS".into(),
        },
        dialects: DIALECTS.to_vec(),
        credit_target: 512,
        client_guid,
    }
}

/// SMB Direct as `ndkperf smbd --server` offers it by default.
pub fn smbd_config() -> SmbdConfig {
    SmbdConfig {
        credits: 255,
        max_send_size: 1364,
        max_receive_size: 8192,
        max_fragmented_size: 1 << 20,
        max_read_write_size: 1 << 20,
        keepalive: Duration::from_secs(1),
    }
}

pub fn target(host_part: u8, share: &str) -> Target {
    Target {
        local: Family::V4.lab_addr(host_part),
        server: SocketAddr::V4(SocketAddrV4::new(shared_lab().guest().ipv4(), SMB_PORT)),
        share: share.to_owned(),
        file: FILE.to_owned(),
        timeout: Duration::from_secs(10),
    }
}

pub fn job(ops: u64, depth: usize, seed: u32) -> FileIo {
    FileIo {
        io_size: 1 << 20,
        ops,
        depth,
        seed,
    }
}

/// Runs `job` and checks the server's copy of the file; returns the
/// report and a line for the log.
// Byte counts of a few MiB: far below 2^52.
#[allow(clippy::cast_precision_loss)]
fn round_trip(
    adapter: &Arc<Adapter>,
    target: &Target,
    config: &KsmbdConfig,
    job: &FileIo,
) -> (FileIoReport, String) {
    let server = shared_lab().guest();
    let s = session(server.ipv4(), &config.user, &config.password);
    let started = Instant::now();
    let (report, stats) =
        run_file_io(adapter, target, smbd_config(), &s, job).unwrap_or_else(|e| {
            panic!(
                "bottled SMB client, {} x 1 MiB at depth {}: {e}\nguest's kernel log:\n{}",
                job.ops,
                job.depth,
                server
                    .run_ok("dmesg | grep -i -e ksmbd -e smb -e rdma | tail -n 30")
                    .unwrap_or_default()
            )
        });
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(report.mismatched_bytes, 0, "bytes read back differ");
    assert_eq!(
        report.remote_invalidations,
        2 * job.ops,
        "every response invalidates its I/O's token"
    );
    let on_server = check(server.sha256(&format!("{}/{FILE}", config.share_path())));
    assert_eq!(
        on_server,
        written_sha256(job),
        "the file on ksmbd's disk differs from what the bottled driver wrote"
    );
    let mb = report.bytes as f64 / 1e6;
    let line = format!(
        "{} x 1 MiB at depth {}: SMB {:#06x}, WRITE {:.1} MB/s, READ {:.1} MB/s, {} messages sent, {} received, {:.1} s in all",
        job.ops,
        job.depth,
        report.dialect,
        mb / report.write_seconds.max(1e-9),
        mb / report.read_seconds.max(1e-9),
        stats.messages_sent,
        stats.messages_received,
        elapsed
    );
    (report, line)
}

#[test]
fn bottled_smbd_client_round_trips_a_file_through_ksmbd() {
    let _serial = serial();
    let config = KsmbdConfig {
        share: "sysshare".into(),
        user: "sysuser".into(),
        password: "bottled pass".into(),
    };
    let server = shared_lab().guest();
    check(server.start_ksmbd(&config));
    let v = bottled_v(8);
    let (before, first_kept) = warmed_baseline(&v, 8, &config);
    let ndk_before = v.ndk_counters();
    let adapter = ndkperf_adapter(&v);
    let target = target(8, &config.share);
    let lab = shared_lab();
    let pcap = lab.run_dir().join("smbd_bottle.pcap");
    let capture = check(lab.capture(lab.bridge(), &pcap));
    let (_, single) = round_trip(&adapter, &target, &config, &job(4, 1, 11));
    let decoded = crate::smbd_ksmbd::decode(&check(capture.stop()).path);
    let (_, deep) = round_trip(&adapter, &target, &config, &job(8, 4, 12));

    let wrong = session(server.ipv4(), &config.user, "not the password");
    let refused = run_file_io(&adapter, &target, smbd_config(), &wrong, &job(1, 1, 13))
        .expect_err("a wrong password must fail the session")
        .to_string();
    assert!(
        refused.contains("SESSION_SETUP") && refused.contains("STATUS_LOGON_FAILURE"),
        "a wrong password must name the server's status: {refused}"
    );
    let ndk_after = v.ndk_counters();
    drop(adapter);
    Held::now().expect_same_as(&before, "after the adapter closed");
    check(server.stop_ksmbd());
    let tap = v.leave();
    eprintln!(
        "bottled rsndk.sys SMB Direct client against ksmbd:\n  {single}\n  {deep}\n  \
         wrong password: {refused}\n  {decoded}\n  the first session on V kept {first_kept}, later ones \
         nothing\n  rsndk.sys: RDMA frames in {} out {}, octets in {} out {}, \
         connection errors {}, CQ errors {}; tap {tap:?}",
        ndk_after.RDMAInFrames - ndk_before.RDMAInFrames,
        ndk_after.RDMAOutFrames - ndk_before.RDMAOutFrames,
        ndk_after.RDMAInOctets - ndk_before.RDMAInOctets,
        ndk_after.RDMAOutOctets - ndk_before.RDMAOutOctets,
        ndk_after.ConnectionError - ndk_before.ConnectionError,
        ndk_after.CQError - ndk_before.CQError,
    );
}

#[test]
fn bottled_smbd_client_fails_cleanly_when_ksmbd_stops_mid_transfer() {
    let _serial = serial();
    let config = KsmbdConfig {
        share: "sysstop".into(),
        user: "sysuser".into(),
        password: "stop pass".into(),
    };
    let server = shared_lab().guest();
    check(server.start_ksmbd(&config));
    let v = bottled_v(9);
    let (before, first_kept) = warmed_baseline(&v, 9, &config);
    let adapter = ndkperf_adapter(&v);
    let target = target(9, &config.share);
    let s = session(server.ipv4(), &config.user, &config.password);
    let started = Instant::now();
    // 400 MiB: far longer than the wait below at TCG's tens of MB/s.
    let running = {
        let adapter = Arc::clone(&adapter);
        std::thread::spawn(move || {
            run_file_io(&adapter, &target, smbd_config(), &s, &job(400, 2, 14)).map(|_| ())
        })
    };
    std::thread::sleep(Duration::from_secs(4));
    check(server.stop_ksmbd());
    let outcome = running.join().expect("the client thread");
    let elapsed = started.elapsed();
    let error = outcome
        .expect_err("a server gone mid-transfer must fail the run")
        .to_string();
    assert!(
        elapsed.as_secs() < 40,
        "the client took {:.1} s to notice the server was gone",
        elapsed.as_secs_f64()
    );
    drop(adapter);
    Held::now().expect_same_as(&before, "after the failed run's adapter closed");
    v.leave();
    eprintln!(
        "ksmbd stopped mid-transfer: the bottled client ended after {:.1} s: {error}; \
         the first session on V kept {first_kept}, the failed one nothing",
        elapsed.as_secs_f64()
    );
}

//! What every rsndk-against-rxe test shares: the serialising lock, the
//! guest's rping server and client, rxe's counters before and after, the
//! capture and its decode, and the report each test prints.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use softrnic::engine::EngineStats;

use crate::{check, shared_lab};

/// rping's ping sizes and counts of one run: 64 B to 64 KiB (rping's
/// largest, 65535), 300 pings in all.
pub const PLAN: [(u32, u32); 5] = [
    (64, 100),
    (1000, 80),
    (4096, 60),
    (16_384, 40),
    (65_535, 20),
];

/// A smaller plan for runs under injected faults (each fault costs a
/// retransmit timeout).
pub const FAULT_PLAN: [(u32, u32); 3] = [(1000, 60), (4096, 40), (65_535, 20)];

/// How long one rping run of a plan step may take under TCG.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The tests against the guest run one at a time: an rsndk adapter owns
/// its address's port 4791, rxe's counters are read as differences, and
/// the guest has one CPU.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The address family of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// Guest 0's address (rxe0 on its eth0).
    pub fn guest(self) -> IpAddr {
        let guest = shared_lab().guest();
        match self {
            Self::V4 => guest.ipv4().into(),
            Self::V6 => guest.ipv6().into(),
        }
    }

    /// The lab's address `host_part`: 10.77.0.N, or fd77::N written
    /// with N's decimal digits (as the lab numbers its guests).
    pub fn lab_addr(self, host_part: u8) -> IpAddr {
        match self {
            Self::V4 => std::net::Ipv4Addr::new(10, 77, 0, host_part).into(),
            Self::V6 => format!("fd77::{host_part}")
                .parse()
                .expect("an IPv6 address"),
        }
    }

    /// The configuration string of a librsndk UDP adapter at `addr`.
    pub fn udp_config(addr: IpAddr) -> String {
        match addr {
            IpAddr::V4(a) => format!("udp:{a}"),
            IpAddr::V6(a) => format!("udp:[{a}]"),
        }
    }
}

/// rping's server in guest 0 for `count` pings of `size` bytes on `port`
/// at `addr`, up and listening when this returns.
pub fn guest_server(addr: IpAddr, port: u16, size: u32, count: u32) -> lab::Background {
    let guest = shared_lab().guest();
    let server = check(guest.spawn(&format!(
        "exec rping -s -a {addr} -p {port} -C {count} -S {size} -V"
    )));
    wait_until_listening(guest);
    server
}

/// Whether a guest rping ended well: status 0, or the teardown race of
/// the guest's rping (rdma-core 44, Debian 12). There the CM event thread
/// calls `rdma_get_cm_event` again after the last event, and if the main
/// thread has destroyed the channel by then, it gets EBADF and calls
/// `exit(-1)`: status 255 after a run that succeeded. Upstream fixed it
/// in rdma-core 61 (f3ae6534a, "rping: terminate CM event thread before
/// exiting"). Only that exact ending is forgiven. It must come after
/// the connection's DISCONNECT event, and nothing else may have failed.
pub fn rping_ended_well(out: &lab::Output) -> bool {
    if out.success() {
        return true;
    }
    let stderr = out.stderr_text();
    let raced = out.status == 255
        && stderr.contains("DISCONNECT EVENT...")
        && stderr
            .trim_end()
            .ends_with("rdma_get_cm_event: Bad file descriptor")
        && stderr.lines().all(|line| {
            line.ends_with("DISCONNECT EVENT...")
                || line == "rdma_get_cm_event: Bad file descriptor"
                || line.trim().is_empty()
        });
    if raced {
        eprintln!(
            "guest rping: exit 255 from its CM thread's teardown race (rdma-core 44), after a run that succeeded"
        );
    }
    raced
}

/// Waits for `server` to end well; panics with its output otherwise.
pub fn expect_server_ok(server: lab::Background, what: &str) {
    let out = check(server.wait(RUN_TIMEOUT));
    assert!(
        rping_ended_well(&out),
        "{what}: guest rping server status {}: {}{}",
        out.status,
        out.stdout_text(),
        out.stderr_text()
    );
}

/// Runs the guest's rping client against `addr`:`port` and checks it
/// pinged `count` times, validated (`-V`), and exited 0.
pub fn guest_client(addr: IpAddr, port: u16, size: u32, count: u32) -> lab::Output {
    let guest = shared_lab().guest();
    let out = check(guest.run_timeout(
        &format!("rping -c -a {addr} -p {port} -C {count} -S {size} -V -v"),
        RUN_TIMEOUT,
    ));
    let pings = out.stdout_text().matches("ping data: rdma-ping-").count();
    assert!(
        rping_ended_well(&out) && pings == count as usize,
        "guest rping client to {addr}:{port} ({count} x {size} B): status {}, {pings} pings\n{}{}",
        out.status,
        out.stdout_text(),
        out.stderr_text()
    );
    out
}

/// Waits until an rdma_cm id listens in `guest` (rping's server is up).
pub fn wait_until_listening(guest: &lab::Guest) {
    for _ in 0..400 {
        let table = check(guest.run("rdma res show cm_id"));
        if table.stdout_text().contains("LISTEN") {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("rping's server never listened in {}", guest.name());
}

/// rxe's hardware counters of guest 0.
pub fn rxe_counters() -> BTreeMap<String, u64> {
    check(shared_lab().guest().rxe_counters())
}

/// The counters that moved between two readings.
pub fn counter_delta(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(name, &value)| {
            let moved = value.saturating_sub(before.get(name).copied().unwrap_or(0));
            (moved > 0).then(|| (name.clone(), moved))
        })
        .collect()
}

/// rxe's error counters, which a clean run leaves at zero: retries or
/// RNR retries exhausted, a send its network layer refused. (Its
/// `completer_retry_err` counts retransmission rounds, not failures.)
pub const RXE_FAILURES: [&str; 3] = ["retry_exceeded_err", "rnr_nak_retry_err", "send_err"];

/// tshark's expert message for an IPv6 UDP datagram whose checksum is 0.
const ZERO_UDP6_CHECKSUM: &str = "Illegal checksum value (0)";

/// A capture of the lab's bridge, decoded when finished.
pub struct BridgeCapture {
    capture: lab::Capture,
}

impl BridgeCapture {
    /// Starts capturing the bridge to `name`.pcap in the lab's run
    /// directory.
    pub fn start(name: &str) -> Self {
        let lab = shared_lab();
        let path: PathBuf = lab.run_dir().join(format!("{name}.pcap"));
        Self {
            capture: check(lab.capture(lab.bridge(), &path)),
        }
    }

    /// Stops, decodes with tshark, and checks RoCEv2 frames are there
    /// and none is malformed. Returns the summary line.
    pub fn finish(self) -> String {
        let stats = check(self.capture.stop());
        let mut summary = check(lab::decode_check(&stats.path));
        // rxe sends IPv6 RoCEv2 datagrams with a zero UDP checksum, as
        // Annex A17 has RoCEv2 senders do (the ICRC protects them); tshark
        // flags that as an error of IPv6's UDP. Anything else is one.
        let before = summary.expert_errors.len();
        summary
            .expert_errors
            .retain(|e| !e.ends_with(ZERO_UDP6_CHECKSUM));
        let zero_checksums = before - summary.expert_errors.len();
        assert!(
            summary.is_clean(),
            "tshark on {}: malformed frames {:?}, errors {:?}",
            stats.path.display(),
            summary.malformed,
            summary.expert_errors
        );
        assert!(
            summary.roce_frames() > 0,
            "no RoCEv2 frame in {}: {summary:?}",
            stats.path.display()
        );
        format!(
            "capture: {} frames, {} RoCEv2, none malformed ({zero_checksums} IPv6 datagrams \
             with RoCEv2's zero UDP checksum); BTH opcodes {:?}",
            summary.frames,
            summary.roce_frames(),
            summary.ib_opcodes
        )
    }
}

/// What rsndk's engine did in a run.
pub fn rsndk_summary(stats: &EngineStats) -> String {
    let share = percent(stats.retransmitted, stats.tx_packets);
    format!(
        "rsndk: tx {} packets ({} retransmitted, {share:.2}%), rx {} (bad ICRC {}, malformed {}), \
         timeouts {}, duplicates {}, out of sequence {}, sequence NAKs sent {} received {}",
        stats.tx_packets,
        stats.retransmitted,
        stats.rx_packets,
        stats.rx_bad_icrc,
        stats.rx_malformed,
        stats.timeouts,
        stats.duplicates,
        stats.out_of_sequence,
        stats.seq_naks_sent,
        stats.seq_naks_received,
    )
}

/// `part` as a percentage of `whole` (0 of nothing).
// Packet counts stay far below 2^52, where f64 is exact.
#[allow(clippy::cast_precision_loss)]
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::rping_ended_well;

    fn output(status: i32, stderr: &str) -> lab::Output {
        lab::Output {
            status,
            stdout: b"ping data: rdma-ping-0: ABC\n".to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }

    #[test]
    fn only_rpings_own_teardown_race_is_forgiven() {
        let raced = "client DISCONNECT EVENT...\nrdma_get_cm_event: Bad file descriptor\n";
        assert!(rping_ended_well(&output(0, "client DISCONNECT EVENT...\n")));
        assert!(rping_ended_well(&output(255, raced)));
        // Another status, no disconnect first, or any other complaint.
        assert!(!rping_ended_well(&output(1, raced)));
        assert!(!rping_ended_well(&output(
            255,
            "rdma_get_cm_event: Bad file descriptor\n"
        )));
        assert!(!rping_ended_well(&output(
            255,
            "cq completion failed status 12\nclient DISCONNECT EVENT...\n\
             rdma_get_cm_event: Bad file descriptor\n"
        )));
        assert!(!rping_ended_well(&output(
            255,
            "client DISCONNECT EVENT...\nwait for RDMA_WRITE_COMPLETE state 10\n"
        )));
    }
}

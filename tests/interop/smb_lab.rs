//! The lab's SMB reference check: Linux's own cifs client in guest 1
//! mounts guest 0's ksmbd share over SMB Direct on rxe, writes a file,
//! reads it back after a remount, and the server's copy on its disk has
//! the same SHA-256. This must work before rsndk's SMB client is blamed
//! for anything.

use std::time::{Duration, Instant};

use lab::{CifsMount, KsmbdConfig};

use crate::{check, shared_lab};

/// The file's size: a few MiB, several RDMA READs and WRITEs of 1 MiB.
const FILE_MIB: u32 = 8;

const MOUNTPOINT: &str = "/mnt/smb";

#[test]
fn linux_cifs_over_smb_direct_round_trips_a_file_through_ksmbd() {
    // Guest 0's rxe carries this test's traffic; its counters are compared.
    let _serial = crate::peer::serial();
    let lab = shared_lab();
    let [server, client] = &lab.guests()[..2] else {
        panic!("the shared lab has fewer than two guests");
    };
    let config = KsmbdConfig {
        share: "labshare".into(),
        user: "labuser".into(),
        password: "lab pass,word".into(),
    };
    // Started, stopped and started again: later tests restart it with
    // their own share and user.
    check(server.start_ksmbd(&config));
    check(server.stop_ksmbd());
    let started = Instant::now();
    check(server.start_ksmbd(&config));
    let ksmbd_start = started.elapsed();
    let mount = CifsMount {
        server: server.ipv4().into(),
        share: config.share.clone(),
        mountpoint: MOUNTPOINT.into(),
        user: config.user.clone(),
        password: config.password.clone(),
        options: "rdma,vers=3.1.1".into(),
    };

    check(client.run_ok(&format!(
        "dd if=/dev/urandom of=/tmp/smb-original bs=1M count={FILE_MIB} 2>/dev/null"
    )));
    let original = check(client.sha256("/tmp/smb-original"));
    let before = check(server.rxe_counters());

    if let Err(error) = client.mount_cifs(&mount) {
        let log = server.run_ok("dmesg | tail -n 30").unwrap_or_default();
        panic!("{error}\nserver's kernel log:\n{log}");
    }
    let transport = check(client.run_ok("cat /proc/fs/cifs/DebugData"));
    assert!(
        transport.contains("SMBDirect"),
        "the mount is not over SMB Direct; /proc/fs/cifs/DebugData:\n{transport}"
    );
    let write =
        timed(|| check(client.run_ok(&format!("cp /tmp/smb-original {MOUNTPOINT}/file && sync"))));
    check(client.unmount(MOUNTPOINT));
    let on_server = check(server.sha256(&format!("{}/file", config.share_path())));
    assert_eq!(
        on_server, original,
        "the file on the server's disk differs from what the client wrote"
    );

    // A fresh mount: the read comes over the wire, not from the page cache.
    check(client.mount_cifs(&mount));
    let read = timed(|| check(client.run_ok(&format!("cp {MOUNTPOINT}/file /tmp/smb-back"))));
    check(client.unmount(MOUNTPOINT));
    let back = check(client.sha256("/tmp/smb-back"));
    assert_eq!(
        back, original,
        "the file read back differs from the one written"
    );
    let after = check(server.rxe_counters());
    check(client.run_ok("rm -f /tmp/smb-original /tmp/smb-back"));
    check(server.stop_ksmbd());

    // Both transfers went through rxe: at least the file's bytes twice
    // over in packets of rxe's 1024-byte MTU.
    let delta = |name: &str| after.get(name).unwrap_or(&0) - before.get(name).unwrap_or(&0);
    let packets = delta("rcvd_pkts") + delta("sent_pkts");
    let minimum = u64::from(FILE_MIB) * 2 * 1024;
    assert!(
        packets >= minimum,
        "rxe0 of the server moved {packets} packets, fewer than the {minimum} the file needs: {before:?} -> {after:?}"
    );
    let rate = |elapsed: Duration| f64::from(FILE_MIB) * 1.048_576 / elapsed.as_secs_f64();
    eprintln!(
        "smb lab: ksmbd up in {:.1} s; Linux cifs over SMB Direct: {FILE_MIB} MiB written in {:.1} s ({:.1} MB/s), read in {:.1} s ({:.1} MB/s); server rxe0 packets {packets}",
        ksmbd_start.as_secs_f64(),
        write.as_secs_f64(),
        rate(write),
        read.as_secs_f64(),
        rate(read),
    );
}

fn timed(work: impl FnOnce() -> String) -> Duration {
    let started = Instant::now();
    work();
    started.elapsed()
}

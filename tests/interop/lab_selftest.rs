//! The lab itself: the guest boots with rxe0 ACTIVE, the reference peer
//! (rping over rxe) works, the namespace reaches the guest, captures
//! decode, and a dropped lab leaves nothing behind.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use crate::{check, shared_lab};

#[test]
fn the_guest_boots_with_rxe0_active_and_counters_readable() {
    let lab = shared_lab();
    let guest = lab.guest();
    let state = check(guest.run_ok("cat /sys/class/infiniband/rxe0/ports/1/state"));
    assert!(state.contains("ACTIVE"), "rxe0 port 1 state: {state}");
    let counters = check(guest.rxe_counters());
    for name in [
        "rcvd_pkts",
        "sent_pkts",
        "duplicate_request",
        "out_of_seq_request",
    ] {
        assert!(counters.contains_key(name), "no {name} in {counters:?}");
    }
    check(guest.qp_table());
    let address = check(guest.run_ok("ip -br addr show eth0"));
    assert!(
        address.contains("10.77.0.2/24") && address.contains("fd77::2/64"),
        "{address}"
    );
    assert!(guest.boot_time() > Duration::ZERO);
}

/// rping's server and client over rxe loopback inside guest 0: the
/// reference peer works before anything is blamed on rsndk.
#[test]
fn rping_over_rxe_loopback_in_the_guest() {
    // The rsndk tests' traffic must not cross this test's capture.
    let _serial = crate::peer::serial();
    let guest = shared_lab().guest();
    let server = check(guest.spawn("exec rping -s -a 10.77.0.2 -C 10 -S 4096 -V"));
    wait_until_listening(guest);
    let client = check(guest.run_timeout(
        "rping -c -a 10.77.0.2 -V -C 10 -S 4096 -v",
        Duration::from_secs(60),
    ));
    assert!(
        crate::peer::rping_ended_well(&client),
        "rping client: status {}: {}{}",
        client.status,
        client.stdout_text(),
        client.stderr_text()
    );
    assert_eq!(
        client
            .stdout_text()
            .matches("ping data: rdma-ping-")
            .count(),
        10
    );
    let server = check(server.wait(Duration::from_secs(30)));
    assert!(
        crate::peer::rping_ended_well(&server),
        "rping server: {}",
        server.stderr_text()
    );
}

#[test]
fn the_namespace_pings_the_guest_over_ipv4_and_ipv6() {
    let lab = shared_lab();
    let guest = lab.guest();
    for addr in [IpAddr::V4(guest.ipv4()), IpAddr::V6(guest.ipv6())] {
        let rtt = check(lab.ping(addr, Duration::from_secs(10)));
        eprintln!("ping {addr}: {:.2} ms", rtt.as_secs_f64() * 1e3);
    }
}

/// rping from guest 1 to guest 0 across the bridge, captured on guest 0's
/// tap: RoCEv2 frames of every kind rping makes, none malformed.
#[test]
fn a_captured_rping_between_guests_decodes_cleanly() {
    // The rsndk tests' traffic must not cross this test's capture.
    let _serial = crate::peer::serial();
    let lab = shared_lab();
    let (server_guest, client_guest) = (&lab.guests()[0], &lab.guests()[1]);
    let pcap = lab.run_dir().join("rping-between-guests.pcap");
    let capture = check(lab.capture(server_guest.tap(), &pcap));
    let server = check(server_guest.spawn("exec rping -s -a 10.77.0.2 -p 7175 -C 10 -S 4096 -V"));
    wait_until_listening(server_guest);
    let client = check(client_guest.run_timeout(
        "rping -c -a 10.77.0.2 -p 7175 -V -C 10 -S 4096",
        Duration::from_secs(60),
    ));
    assert!(
        crate::peer::rping_ended_well(&client),
        "rping client: {}{}",
        client.stdout_text(),
        client.stderr_text()
    );
    let server = check(server.wait(Duration::from_secs(30)));
    assert!(
        crate::peer::rping_ended_well(&server),
        "rping server: {}",
        server.stderr_text()
    );
    let stats = check(capture.stop());
    let summary = check(lab::decode_check(&stats.path));
    eprintln!("{} packets captured; {summary:?}", stats.packets);
    assert!(
        summary.is_clean(),
        "tshark: malformed {:?}, errors {:?}",
        summary.malformed,
        summary.expert_errors
    );
    assert!(summary.roce_frames() > 40, "{summary:?}");
    // CM MADs (UD SEND only), SENDs, RDMA READ requests and responses,
    // RDMA WRITEs of 4 KiB in 1 KiB packets, ACKs.
    for opcode in [100, 4, 12, 13, 15, 6, 8, 17] {
        assert!(
            summary.ib_opcodes.contains_key(&opcode),
            "no BTH opcode {opcode} in {:?}",
            summary.ib_opcodes
        );
    }
}

/// A lab of its own (netem would slow the shared lab's other tests):
/// netem inside the guest delays both directions; the namespace's own
/// netem works or says it is missing and what to use instead. Then the lab
/// is dropped: its QEMU is gone, its published name is gone, no process is
/// left in its namespace, its run directory is gone.
#[test]
fn netem_in_a_lab_of_its_own_which_leaves_nothing_behind_when_dropped() {
    let lab = check(lab::Lab::start(&lab::LabConfig::default()));
    check_netem(&lab);
    check(lab.netns().publish());
    let name = lab.name().to_owned();
    let qemu = lab.guest().qemu_pid();
    let namespace = check(
        std::fs::read_link(lab.netns().path())
            .map_err(|e| lab::Error::io("cannot read the namespace link", e)),
    );
    let run_dir = lab.run_dir().to_path_buf();
    assert!(Path::new("/run/netns").join(&name).exists());
    drop(lab);
    assert!(
        !Path::new(&format!("/proc/{qemu}")).exists(),
        "QEMU {qemu} survives its lab"
    );
    assert!(
        !Path::new("/run/netns").join(&name).exists(),
        "/run/netns/{name} survives"
    );
    assert!(!run_dir.exists(), "{} survives", run_dir.display());
    let holders: Vec<String> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| {
            std::fs::read_link(entry.path().join("ns/net")).is_ok_and(|link| link == namespace)
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        holders.is_empty(),
        "processes {holders:?} are still in {}",
        namespace.display()
    );
}

/// Waits until an rdma_cm id listens in `guest` (rping's server is up).
fn wait_until_listening(guest: &lab::Guest) {
    for _ in 0..200 {
        let table = check(guest.run("rdma res show cm_id"));
        if table.stdout_text().contains("LISTEN") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("rping's server never listened in {}", guest.name());
}

/// A tap of the test's own on the bridge carries Ethernet frames: an ARP
/// request for the guest from 10.77.0.3 gets the guest's reply.
#[test]
fn a_tap_of_our_own_reaches_the_guest() {
    use std::io::{Read, Write};
    let lab = shared_lab();
    let guest = lab.guest();
    let mut tap = std::fs::File::from(check(lab.create_tap("lab-selftest0")));
    let our_mac = [0x52, 0x54, 0x00, 0x77, 0x00, 0x03];
    let mut frame = vec![0xff; 6];
    frame.extend_from_slice(&our_mac);
    frame.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    frame.extend_from_slice(&our_mac);
    frame.extend_from_slice(&[10, 77, 0, 3]);
    frame.extend_from_slice(&[0; 6]);
    frame.extend_from_slice(&guest.ipv4().octets());
    let (replied, reply) = std::sync::mpsc::channel();
    let mut reader = tap.try_clone().expect("a second handle on the tap");
    std::thread::spawn(move || {
        let mut buffer = [0u8; 2048];
        while let Ok(length) = reader.read(&mut buffer) {
            // An ARP reply (op 2) addressed to us.
            if length >= 42
                && buffer[..6] == our_mac
                && buffer[12..14] == [0x08, 0x06]
                && buffer[20..22] == [0, 2]
            {
                let _ = replied.send(buffer[22..28].to_vec());
                return;
            }
        }
    });
    let mut answer = None;
    for _ in 0..20 {
        tap.write_all(&frame).expect("a frame written to the tap");
        if let Ok(mac) = reply.recv_timeout(Duration::from_millis(500)) {
            answer = Some(mac);
            break;
        }
    }
    let mac = answer.expect("no ARP reply from the guest on our tap");
    let text: Vec<String> = mac.iter().map(|byte| format!("{byte:02x}")).collect();
    assert_eq!(text.join(":"), guest.mac());
}

/// netem in `lab`'s guest: 150 ms out, 100 ms in, then cleared.
fn check_netem(lab: &lab::Lab) {
    let guest = lab.guest();
    let addr = IpAddr::V4(guest.ipv4());
    check(guest.netem("delay 150ms"));
    check(guest.netem_ingress("delay 100ms"));
    let delayed = check(lab.ping(addr, Duration::from_secs(10)));
    check(guest.netem_clear());
    assert!(
        delayed >= Duration::from_millis(250),
        "rtt {delayed:?} under netem 150 ms + 100 ms"
    );
    let clear = check(lab.ping(addr, Duration::from_secs(10)));
    assert!(
        clear < Duration::from_millis(250),
        "rtt {clear:?} after netem_clear"
    );
    match lab.netem(guest.tap(), "delay 1ms") {
        Ok(()) => check(
            lab.netns()
                .output(std::process::Command::new("tc").args([
                    "qdisc",
                    "del",
                    "dev",
                    guest.tap(),
                    "root",
                ]))
                .map(drop),
        ),
        Err(lab::Error::Missing(text)) => assert!(text.contains("Guest::netem"), "{text}"),
        Err(other) => panic!("{other}"),
    }
}

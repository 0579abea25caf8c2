//! What the review of the Windows shell against the WDK documentation and
//! the MUX sample asked of V besides its teardown (issue 23, item 5), each
//! checked on the real `rsndk.sys` in the bottle and each failing on the
//! image without its fix.
//!
//! Tests that boot their own machine run in a child process.

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::mm;
use kbottle::ndis::types::{
    NDIS_STATISTICS_BROADCAST_BYTES_RCV_SUPPORTED, NDIS_STATISTICS_BROADCAST_BYTES_XMIT_SUPPORTED,
    NDIS_STATISTICS_BROADCAST_FRAMES_RCV_SUPPORTED,
    NDIS_STATISTICS_BROADCAST_FRAMES_XMIT_SUPPORTED, NDIS_STATISTICS_BYTES_RCV_SUPPORTED,
    NDIS_STATISTICS_BYTES_XMIT_SUPPORTED, NDIS_STATISTICS_DIRECTED_BYTES_RCV_SUPPORTED,
    NDIS_STATISTICS_DIRECTED_BYTES_XMIT_SUPPORTED, NDIS_STATISTICS_DIRECTED_FRAMES_RCV_SUPPORTED,
    NDIS_STATISTICS_DIRECTED_FRAMES_XMIT_SUPPORTED,
    NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_RCV,
    NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_XMIT,
    NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_RCV,
    NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_XMIT, NDIS_STATISTICS_FLAGS_VALID_BYTES_RCV,
    NDIS_STATISTICS_FLAGS_VALID_BYTES_XMIT, NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_RCV,
    NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_XMIT,
    NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_RCV,
    NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_XMIT,
    NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_RCV,
    NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_XMIT,
    NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_RCV,
    NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_XMIT, NDIS_STATISTICS_FLAGS_VALID_RCV_DISCARDS,
    NDIS_STATISTICS_FLAGS_VALID_RCV_ERROR, NDIS_STATISTICS_FLAGS_VALID_XMIT_DISCARDS,
    NDIS_STATISTICS_FLAGS_VALID_XMIT_ERROR, NDIS_STATISTICS_INFO,
    NDIS_STATISTICS_MULTICAST_BYTES_RCV_SUPPORTED, NDIS_STATISTICS_MULTICAST_BYTES_XMIT_SUPPORTED,
    NDIS_STATISTICS_MULTICAST_FRAMES_RCV_SUPPORTED,
    NDIS_STATISTICS_MULTICAST_FRAMES_XMIT_SUPPORTED, NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED,
    NDIS_STATISTICS_RCV_ERROR_SUPPORTED, NDIS_STATISTICS_RCV_OK_SUPPORTED,
    NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED, NDIS_STATISTICS_XMIT_ERROR_SUPPORTED,
    NDIS_STATISTICS_XMIT_OK_SUPPORTED, NDIS_STATUS_REQUEST_ABORTED, OID_GEN_CURRENT_LOOKAHEAD,
    OID_GEN_RCV_OK, OID_GEN_STATISTICS, OID_GEN_XMIT_OK,
};
use kbottle::ndis::{eventlog, lower_oid, miniport};
use ndkpi::*;

use crate::common::{READY, adapter_with, child_passes, fresh_address, is_child, keywords};
use crate::defects::{Buffer, Pair, add_adapter, boot, complete, unload_clean};
use crate::ndk::close_wait;
use testkit::adapter::*;

/// Pages an unaligned 1 MiB buffer spans: SMB Direct registers its I/O
/// buffers, which need not start on a page, with one fast registration.
const UNALIGNED_MIB_PAGES: u32 = 257;

/// The `NDK_ADAPTER_INFO` an open NDK adapter reports.
fn adapter_info(adapter: *mut NDK_ADAPTER) -> NDK_ADAPTER_INFO {
    let mut info = NDK_ADAPTER_INFO::default();
    let mut size = size_of::<NDK_ADAPTER_INFO>() as u32;
    let f = adapter_table(adapter).NdkQueryAdapterInfo.unwrap();
    // SAFETY: an open adapter of the bottled provider; a full-size buffer.
    let status = unsafe { f(adapter, &raw mut info, &raw mut size) };
    assert_eq!(status, STATUS_SUCCESS, "NdkQueryAdapterInfo");
    info
}

/// V reports `FRMRPageCount` 512 (in its NDK attributes and to an open
/// adapter), and a 1 MiB buffer that starts 0x100 bytes into a page (257
/// pages) takes one fast registration, through which an RDMA WRITE of the
/// whole MiB lands. Failed before the fix: 256 pages, and
/// `NdkInitializeFastRegisterMr` for 257 answered
/// `STATUS_IMPLEMENTATION_LIMIT`.
#[test]
fn an_unaligned_mebibyte_takes_one_fast_registration() {
    const LEN: usize = 1 << 20;
    const OFFSET: usize = 0x100;
    if !is_child() {
        child_passes("shell_conformance::an_unaligned_mebibyte_takes_one_fast_registration");
        return;
    }
    let machine = boot();
    let pair = Pair::new(&machine, None, 8, 4096);
    let attributes = machine.ndk_attributes(pair.ids[1]).expect("NDK attributes");
    assert_eq!(attributes.info.FRMRPageCount, 512, "NDK attributes");
    assert_eq!(
        adapter_info(pair.b.adapter).FRMRPageCount,
        512,
        "NdkQueryAdapterInfo"
    );

    // The sink on the second adapter: LEN bytes from OFFSET into a page.
    let sink = Buffer::new(LEN + 3 * 4096, 0);
    let start = sink.va.next_multiple_of(4096) + OFFSET;
    let pages: Vec<NDK_LOGICAL_ADDRESS> = (0..UNALIGNED_MIB_PAGES as usize)
        .map(|k| mm::phys_of(start - OFFSET + k * 4096) as NDK_LOGICAL_ADDRESS)
        .collect();
    let fr = create_mr(pair.qb.pd, true);
    assert_eq!(
        init_fast_register(fr, UNALIGNED_MIB_PAGES, true),
        STATUS_SUCCESS,
        "NdkInitializeFastRegisterMr for {UNALIGNED_MIB_PAGES} pages"
    );
    assert_eq!(
        fast_register(
            pair.qb.qp,
            7,
            fr,
            &pages,
            OFFSET as u32,
            LEN,
            start as u64,
            NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
        ),
        STATUS_SUCCESS,
        "NdkFastRegister"
    );
    assert_eq!(complete(pair.qb.cq, 1), vec![7]);
    let token = mr_tokens(fr).1;

    let pattern: Vec<u8> = (0..LEN).map(|i| (i * 13 + i / 4096) as u8).collect();
    let source = Buffer::new(LEN, 0);
    // SAFETY: the leaked source buffer, no request in flight on it.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), source.va as *mut u8, LEN) };
    let sges = [source.local(0, LEN, pair.qa.token)];
    assert_eq!(
        write(pair.qa.qp, 8, &sges, start as u64, token, 0),
        STATUS_SUCCESS,
        "NdkWrite"
    );
    assert_eq!(complete(pair.qa.cq, 1), vec![8]);
    let at = start - sink.va;
    assert!(
        sink.bytes()[at..at + LEN] == pattern[..],
        "the WRITE landed through the fast registration"
    );
    close_wait(fr);
    assert!(kbottle::verifier::bugchecks().is_empty());
    pair.close_and_halt(&machine);
    unload_clean(machine);
}

/// Each `NDIS_STATISTICS_*_SUPPORTED` flag of V's general attributes that
/// `OID_GEN_STATISTICS` answers, with the `NDIS_STATISTICS_FLAGS_VALID_*`
/// flags that answer it.
const STATISTICS: [(u32, &str, u32); 20] = [
    (
        NDIS_STATISTICS_XMIT_OK_SUPPORTED,
        "XMIT_OK",
        NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_XMIT
            | NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_XMIT
            | NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_XMIT,
    ),
    (
        NDIS_STATISTICS_RCV_OK_SUPPORTED,
        "RCV_OK",
        NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_RCV
            | NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_RCV
            | NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_RCV,
    ),
    (
        NDIS_STATISTICS_XMIT_ERROR_SUPPORTED,
        "XMIT_ERROR",
        NDIS_STATISTICS_FLAGS_VALID_XMIT_ERROR,
    ),
    (
        NDIS_STATISTICS_RCV_ERROR_SUPPORTED,
        "RCV_ERROR",
        NDIS_STATISTICS_FLAGS_VALID_RCV_ERROR,
    ),
    (
        NDIS_STATISTICS_DIRECTED_BYTES_XMIT_SUPPORTED,
        "DIRECTED_BYTES_XMIT",
        NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_XMIT,
    ),
    (
        NDIS_STATISTICS_DIRECTED_FRAMES_XMIT_SUPPORTED,
        "DIRECTED_FRAMES_XMIT",
        NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_XMIT,
    ),
    (
        NDIS_STATISTICS_MULTICAST_BYTES_XMIT_SUPPORTED,
        "MULTICAST_BYTES_XMIT",
        NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_XMIT,
    ),
    (
        NDIS_STATISTICS_MULTICAST_FRAMES_XMIT_SUPPORTED,
        "MULTICAST_FRAMES_XMIT",
        NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_XMIT,
    ),
    (
        NDIS_STATISTICS_BROADCAST_BYTES_XMIT_SUPPORTED,
        "BROADCAST_BYTES_XMIT",
        NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_XMIT,
    ),
    (
        NDIS_STATISTICS_BROADCAST_FRAMES_XMIT_SUPPORTED,
        "BROADCAST_FRAMES_XMIT",
        NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_XMIT,
    ),
    (
        NDIS_STATISTICS_DIRECTED_BYTES_RCV_SUPPORTED,
        "DIRECTED_BYTES_RCV",
        NDIS_STATISTICS_FLAGS_VALID_DIRECTED_BYTES_RCV,
    ),
    (
        NDIS_STATISTICS_DIRECTED_FRAMES_RCV_SUPPORTED,
        "DIRECTED_FRAMES_RCV",
        NDIS_STATISTICS_FLAGS_VALID_DIRECTED_FRAMES_RCV,
    ),
    (
        NDIS_STATISTICS_MULTICAST_BYTES_RCV_SUPPORTED,
        "MULTICAST_BYTES_RCV",
        NDIS_STATISTICS_FLAGS_VALID_MULTICAST_BYTES_RCV,
    ),
    (
        NDIS_STATISTICS_MULTICAST_FRAMES_RCV_SUPPORTED,
        "MULTICAST_FRAMES_RCV",
        NDIS_STATISTICS_FLAGS_VALID_MULTICAST_FRAMES_RCV,
    ),
    (
        NDIS_STATISTICS_BROADCAST_BYTES_RCV_SUPPORTED,
        "BROADCAST_BYTES_RCV",
        NDIS_STATISTICS_FLAGS_VALID_BROADCAST_BYTES_RCV,
    ),
    (
        NDIS_STATISTICS_BROADCAST_FRAMES_RCV_SUPPORTED,
        "BROADCAST_FRAMES_RCV",
        NDIS_STATISTICS_FLAGS_VALID_BROADCAST_FRAMES_RCV,
    ),
    (
        NDIS_STATISTICS_BYTES_RCV_SUPPORTED,
        "BYTES_RCV",
        NDIS_STATISTICS_FLAGS_VALID_BYTES_RCV,
    ),
    (
        NDIS_STATISTICS_BYTES_XMIT_SUPPORTED,
        "BYTES_XMIT",
        NDIS_STATISTICS_FLAGS_VALID_BYTES_XMIT,
    ),
    (
        NDIS_STATISTICS_RCV_DISCARDS_SUPPORTED,
        "RCV_DISCARDS",
        NDIS_STATISTICS_FLAGS_VALID_RCV_DISCARDS,
    ),
    (
        NDIS_STATISTICS_XMIT_DISCARDS_SUPPORTED,
        "XMIT_DISCARDS",
        NDIS_STATISTICS_FLAGS_VALID_XMIT_DISCARDS,
    ),
];

/// `OID_GEN_STATISTICS` of adapter `a`.
fn statistics(machine: &Machine, a: AdapterId) -> NDIS_STATISTICS_INFO {
    let mut buf = vec![0u8; size_of::<NDIS_STATISTICS_INFO>()];
    let n = machine
        .oid_query(a, OID_GEN_STATISTICS, &mut buf)
        .unwrap_or_else(|s| panic!("OID_GEN_STATISTICS: {:#010x}", s as u32));
    assert_eq!(n, buf.len(), "OID_GEN_STATISTICS answer size");
    // SAFETY: a buffer of the structure's size, read unaligned.
    unsafe { buf.as_ptr().cast::<NDIS_STATISTICS_INFO>().read_unaligned() }
}

/// A 64-bit counter OID of adapter `a`.
fn counter(machine: &Machine, a: AdapterId, oid: u32) -> u64 {
    let mut buf = [0u8; 8];
    let n = machine
        .oid_query(a, oid, &mut buf)
        .unwrap_or_else(|s| panic!("OID {oid:#010x}: {:#010x}", s as u32));
    assert_eq!(n, 8, "OID {oid:#010x} answer size");
    u64::from_ne_bytes(buf)
}

/// V's general attributes advertise exactly the statistics
/// `OID_GEN_STATISTICS` fills (every `SUPPORTED` flag with a `VALID`
/// counterpart has it, and every `VALID` flag is advertised), as NDIS 6
/// asks of a miniport ("must support all statistics"); after pings
/// between two adapters the counters are what went through V: unicast
/// frames both ways, the ARP broadcast, octets of every class, and
/// `OID_GEN_XMIT_OK`/`OID_GEN_RCV_OK` the sums of the frame counters.
/// Failed before the fix: XMIT_OK/RCV_OK advertised, but only the discard
/// and error counters valid.
#[test]
fn statistics_advertised_are_the_statistics_filled() {
    let machine = crate::common::machine();
    let (a, _) = crate::common::adapter();
    let (b, ip_b) = crate::common::adapter();
    let advertised = machine
        .general_attributes(a)
        .expect("general attributes")
        .supported_statistics;
    let valid = statistics(machine, a).SupportedStatistics;
    let mut mismatches = Vec::new();
    let mut covered = 0;
    for (supported, name, flags) in &STATISTICS {
        covered |= flags;
        let advertises = advertised & supported != 0;
        let fills = valid & flags == *flags;
        if advertises != fills {
            mismatches.push(format!(
                "{name}: advertised {advertises}, filled (VALID {flags:#x}) {fills}"
            ));
        }
    }
    if valid & !covered != 0 {
        mismatches.push(format!(
            "VALID flags {:#x} not advertised",
            valid & !covered
        ));
    }
    assert!(
        mismatches.is_empty(),
        "advertised {advertised:#x}, valid {valid:#x}:\n{}",
        mismatches.join("\n")
    );
    assert!(
        advertised & NDIS_STATISTICS_XMIT_OK_SUPPORTED != 0
            && advertised & NDIS_STATISTICS_RCV_OK_SUPPORTED != 0,
        "V counts its frames: {advertised:#x}"
    );

    let before = statistics(machine, a);
    for _ in 0..3 {
        assert!(
            machine.ping(a, ip_b.into(), Duration::from_secs(5)),
            "ping {ip_b}"
        );
    }
    let after = statistics(machine, a);
    let grew = |name: &str, x: u64, y: u64| assert!(y > x, "{name} did not grow: {x} -> {y}");
    grew(
        "ifHCOutUcastPkts",
        before.ifHCOutUcastPkts,
        after.ifHCOutUcastPkts,
    );
    grew(
        "ifHCInUcastPkts",
        before.ifHCInUcastPkts,
        after.ifHCInUcastPkts,
    );
    grew(
        "ifHCOutUcastOctets",
        before.ifHCOutUcastOctets,
        after.ifHCOutUcastOctets,
    );
    grew(
        "ifHCInUcastOctets",
        before.ifHCInUcastOctets,
        after.ifHCInUcastOctets,
    );
    // The first ping resolved b's address: an ARP (or neighbour
    // solicitation) broadcast went out.
    assert!(
        after.ifHCOutBroadcastPkts + after.ifHCOutMulticastPkts > 0,
        "no broadcast or multicast frame out: {after:?}"
    );
    assert_eq!(
        after.ifHCOutOctets,
        after.ifHCOutUcastOctets + after.ifHCOutMulticastOctets + after.ifHCOutBroadcastOctets,
        "ifHCOutOctets"
    );
    assert_eq!(
        after.ifHCInOctets,
        after.ifHCInUcastOctets + after.ifHCInMulticastOctets + after.ifHCInBroadcastOctets,
        "ifHCInOctets"
    );
    // Nothing moves on a while V is idle between the queries below.
    let xmit_ok = counter(machine, a, OID_GEN_XMIT_OK);
    let rcv_ok = counter(machine, a, OID_GEN_RCV_OK);
    let now = statistics(machine, a);
    assert!(
        xmit_ok <= now.ifHCOutUcastPkts + now.ifHCOutMulticastPkts + now.ifHCOutBroadcastPkts,
        "OID_GEN_XMIT_OK {xmit_ok} against {now:?}"
    );
    assert!(
        rcv_ok <= now.ifHCInUcastPkts + now.ifHCInMulticastPkts + now.ifHCInBroadcastPkts,
        "OID_GEN_RCV_OK {rcv_ok} against {now:?}"
    );
    assert!(
        xmit_ok >= after.ifHCOutUcastPkts + after.ifHCOutMulticastPkts + after.ifHCOutBroadcastPkts
            && rcv_ok
                >= after.ifHCInUcastPkts + after.ifHCInMulticastPkts + after.ifHCInBroadcastPkts,
        "OID_GEN_XMIT_OK {xmit_ok} / OID_GEN_RCV_OK {rcv_ok} count frames as \
         OID_GEN_STATISTICS does: {after:?}"
    );
    let _ = b;
}

/// NDIS cancels an OID request V forwarded to P: V cancels the request it
/// forwarded (`NdisCancelOidRequest` with its `RequestId`, as the MUX
/// sample's `MPCancelOidRequest` does), P aborts it, and V's request
/// completes with `NDIS_STATUS_REQUEST_ABORTED`; V forwards the next one
/// normally. Failed before the fix: `MiniportCancelOidRequest` did
/// nothing and V's request stayed pending for as long as P held it.
#[test]
fn a_cancelled_oid_request_is_cancelled_at_p() {
    if !is_child() {
        child_passes("shell_conformance::a_cancelled_oid_request_is_cancelled_at_p");
        return;
    }
    let machine = Arc::new(boot());
    let (id, _) = add_adapter(&machine);
    let nic = machine.nic_of(id).expect("V's NIC");
    let mut lookahead = [0u8; 4];
    assert_eq!(
        machine.oid_query(id, OID_GEN_CURRENT_LOOKAHEAD, &mut lookahead),
        Ok(4)
    );
    lower_oid::hold_oid(nic, OID_GEN_CURRENT_LOOKAHEAD);
    let (done, outcome) = mpsc::channel();
    let setter = Arc::clone(&machine);
    std::thread::spawn(move || {
        let _ = done.send(setter.oid_set(id, OID_GEN_CURRENT_LOOKAHEAD, &lookahead));
    });
    let deadline = Instant::now() + READY;
    while lower_oid::held_requests(nic) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(lower_oid::held_requests(nic), 1, "V forwarded the set to P");
    assert!(
        outcome.try_recv().is_err(),
        "V's request completed while P held it"
    );
    assert!(
        miniport::cancel_oid_request(id.0),
        "V's request was pending"
    );
    let result = outcome.recv_timeout(Duration::from_secs(5));
    if result.is_err() {
        // Let P answer, so that this child ends without an NDIS watchdog.
        lower_oid::release_held(nic);
        let _ = outcome.recv_timeout(READY);
        panic!("the cancel did not reach P: V's request was still pending 5 s after it");
    }
    assert_eq!(
        result.expect("checked"),
        Err(NDIS_STATUS_REQUEST_ABORTED),
        "V's request completed as P aborted it"
    );
    assert_eq!(lower_oid::held_requests(nic), 0);
    lower_oid::release_held(nic);
    assert_eq!(
        machine.oid_set(id, OID_GEN_CURRENT_LOOKAHEAD, &lookahead),
        Ok(4),
        "the next request goes through"
    );
    assert!(kbottle::verifier::bugchecks().is_empty());
    machine.halt(id);
    let machine = Arc::into_inner(machine).expect("the setter thread ended");
    unload_clean(machine);
}

/// A `*NetworkDirectRoCEFrameSize` larger than P's MTU carries is capped,
/// and the cap is written to the system event log (`NdisWriteEventLogEntry`,
/// as the NDKPI INF requirements ask when the operational RoCE frame size
/// differs from the configured one): the configured size, the operational
/// one and P's MTU, as strings and as data. A frame size that fits logs
/// nothing. Failed before the fix: the size was capped silently.
#[test]
fn a_capped_roce_frame_size_is_logged() {
    if !is_child() {
        child_passes("shell_conformance::a_capped_roce_frame_size_is_logged");
        return;
    }
    let machine = boot();
    // 1500 bytes carry RoCEv2 frames of 1024 bytes of payload, not 2048.
    let segment = machine.add_segment_with_mtu(1500);
    let framed = |frame: u32| {
        let mut kw = keywords();
        kw.push(("*NetworkDirectRoCEFrameSize", Keyword::Int(frame)));
        adapter_with(&machine, segment, &kw, fresh_address().into())
    };
    let before = eventlog::entries().len();
    let capped = framed(4096);
    let logged = eventlog::entries()[before..].to_vec();
    assert_eq!(
        logged.len(),
        1,
        "one event for the capped adapter: {logged:?}"
    );
    // Warning severity, customer code 1 (the driver's event_log.rs).
    assert_eq!(logged[0].code as u32, 0xA000_0001, "{logged:?}");
    assert_eq!(logged[0].strings, ["4096", "1024", "1500"], "{logged:?}");
    let data: Vec<u8> = [4096u32, 1024, 1500]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(logged[0].data, data, "{logged:?}");

    let fits = framed(1024);
    assert_eq!(
        eventlog::entries().len(),
        before + 1,
        "nothing logged for a frame size that fits: {:?}",
        eventlog::entries()
    );
    assert!(kbottle::verifier::bugchecks().is_empty());
    machine.halt(capped);
    machine.halt(fits);
    unload_clean(machine);
}

/// Microsoft documents no IRQL for the unicast address change callback:
/// with the bottle delivering it at DISPATCH_LEVEL, V still learns its
/// addresses (the RNIC serves them: two adapters connect a QP and an RDMA
/// WRITE lands) and nothing bugchecks. Failed before the fix: the
/// callback read the table itself (`GetUnicastIpAddressTable`, which
/// needs `< DISPATCH_LEVEL`: 0xC4); the driver now reads it in a work
/// item at PASSIVE_LEVEL.
#[test]
fn addresses_are_learnt_whatever_the_callback_irql() {
    if !is_child() {
        child_passes("shell_conformance::addresses_are_learnt_whatever_the_callback_irql");
        return;
    }
    kbottle::netio::deliver_address_changes_at(kbottle::cpu::DISPATCH_LEVEL);
    let machine = boot();
    let pair = Pair::new(&machine, None, 8, 4096);
    let source = Buffer::new(4096, 0x3c);
    let sges = [source.local(0, 4096, pair.qa.token)];
    assert_eq!(
        write(
            pair.qa.qp,
            9,
            &sges,
            pair.region.va as u64,
            pair.region_token,
            0
        ),
        STATUS_SUCCESS,
        "NdkWrite"
    );
    assert_eq!(complete(pair.qa.cq, 1), vec![9]);
    assert!(
        pair.region.bytes().iter().all(|b| *b == 0x3c),
        "the WRITE landed"
    );
    assert!(kbottle::verifier::bugchecks().is_empty());
    pair.close_and_halt(&machine);
    unload_clean(machine);
}

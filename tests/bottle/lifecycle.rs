//! The NDIS lifecycle of the real rsndk.sys, driven as NDIS drives it:
//! `DriverEntry` → `NdisMRegisterMiniportDriver` (→ `MiniportSetOptions`,
//! NDK provider characteristics) → `MiniportInitializeEx` with registry
//! keywords (registration, general and NDK attributes) → `MiniportRestart`
//! → OIDs (the supported list, statistics, the NDK OIDs, NDK disable and
//! enable with their PnP events) → `OpenNDKAdapterHandler` (1.2, and
//! versions the provider must refuse) → sends → `MiniportPause` /
//! `MiniportRestart` → `CloseNDKAdapterHandler` → `MiniportHaltEx` →
//! `MiniportDriverUnload`, after which nothing may be left.
//!
//! Tests that unload run in a child process (kernel state is
//! process-global); the others use this process's shared machine.

use std::net::Ipv4Addr;
use std::time::Duration;

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::ndis::types::{
    NDIS_NDK_STATISTICS_INFO, NDIS_NDK_STATISTICS_INFO_REVISION_1, NDIS_OBJECT_HEADER,
    NDIS_OBJECT_TYPE_DEFAULT, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1,
    NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1, NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1,
    NDIS_SIZEOF_STATISTICS_INFO_REVISION_1, NDIS_STATISTICS_INFO, NDIS_STATISTICS_INFO_REVISION_1,
    NDIS_STATUS_BUFFER_TOO_SHORT, NDIS_STATUS_INVALID_LENGTH, NdisInterfaceInternal,
    NdisMedium802_3, NetEventNDKDisable, NetEventNDKEnable, OID_802_3_CURRENT_ADDRESS,
    OID_GEN_CURRENT_PACKET_FILTER, OID_GEN_MAXIMUM_FRAME_SIZE, OID_GEN_STATISTICS,
    OID_GEN_SUPPORTED_LIST, OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS, OID_NDK_SET_STATE,
    OID_NDK_STATISTICS,
};
use ndkpi::{
    NDIS_STATUS_ADAPTER_NOT_READY, NDIS_STATUS_BAD_VERSION, NDIS_STATUS_NOT_SUPPORTED,
    NDIS_STATUS_SUCCESS, NDK_ADAPTER, NDK_ADAPTER_INFO, NDK_VERSION, NDK_VERSION_1_2,
    NdkObjectTypeAdapter, STATUS_SUCCESS,
};

use crate::common::{READY, child_passes, fresh_address, image, is_child, keywords, machine};
use crate::provider_util::adapter_table;

/// How long a PnP event may take to follow the OID that caused it.
const EVENT: Duration = Duration::from_secs(10);

/// An address for adapter `n` of a child process. Children run while the
/// parent's shared machine holds addresses from the start of the common
/// block, so they take theirs from 127.0.48.0/20, one /24 per process id
/// modulo 16 (children running at the same time have nearby ids).
fn child_address(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 48 + (std::process::id() % 16) as u8, n)
}

/// Reads a plain-data NDIS structure from the start of an OID answer.
fn read<T: Copy>(answer: &[u8]) -> T {
    assert!(
        answer.len() >= size_of::<T>(),
        "answer of {} bytes",
        answer.len()
    );
    // SAFETY: at least size_of::<T>() bytes; T is a repr(C) structure of
    // integers, valid for any bytes.
    unsafe { answer.as_ptr().cast::<T>().read_unaligned() }
}

/// Queries `oid` with a buffer of `room` bytes; the answer.
fn query(machine: &Machine, a: AdapterId, oid: u32, room: usize) -> Vec<u8> {
    let mut buf = vec![0u8; room];
    let n = machine
        .oid_query(a, oid, &mut buf)
        .unwrap_or_else(|s| panic!("query {oid:#010x}: {:#010x}", s as u32));
    buf.truncate(n);
    buf
}

/// The adapter info an open NDK adapter reports.
fn adapter_info(adapter: *mut NDK_ADAPTER) -> NDK_ADAPTER_INFO {
    let mut info = NDK_ADAPTER_INFO::default();
    let mut size = size_of::<NDK_ADAPTER_INFO>() as u32;
    let f = adapter_table(adapter).NdkQueryAdapterInfo.unwrap();
    // SAFETY: an open adapter of the bottled provider; a full-size buffer.
    let status = unsafe { f(adapter, &raw mut info, &raw mut size) };
    assert_eq!(status, STATUS_SUCCESS);
    info
}

/// Sets `OID_NDK_SET_STATE` and waits for the PnP event it causes.
fn set_ndk_state(machine: &Machine, a: AdapterId, enabled: bool) {
    let before = machine.pnp_events(a).len();
    assert_eq!(
        machine.oid_set(a, OID_NDK_SET_STATE, &[u8::from(enabled)]),
        Ok(1)
    );
    let events = machine.wait_pnp_events(a, before + 1, EVENT);
    let expected = if enabled {
        NetEventNDKEnable
    } else {
        NetEventNDKDisable
    };
    assert_eq!(
        events.last(),
        Some(&expected),
        "PnP events after OID_NDK_SET_STATE({enabled}): {events:?}"
    );
}

/// The attributes `MiniportInitializeEx` set.
fn check_attributes(machine: &Machine, a: AdapterId) {
    let registration = machine
        .registration_attributes(a)
        .expect("registration attributes");
    assert_ne!(registration.context, 0);
    assert_eq!(registration.interface_type, NdisInterfaceInternal);
    let general = machine.general_attributes(a).expect("general attributes");
    assert_eq!(general.media_type, NdisMedium802_3);
    assert_eq!(general.mtu, 1500);
    assert_eq!(general.current_mac.len(), 6);
    let ndk = machine.ndk_attributes(a).expect("NDK attributes");
    assert!(ndk.enabled);
    assert!(ndk.capabilities.MaxQpCount > 0 && ndk.capabilities.MaxCqCount > 0);
    // The provider's highest version, which serves 1.2 consumers.
    assert!(
        ndk.info.Version >= NDK_VERSION_1_2,
        "{:?}",
        ndk.info.Version
    );
}

/// The supported-OID list (the same through the OID as in the general
/// attributes, with every NDK OID a provider must answer) and a few
/// general OIDs, buffer and unknown-OID answers included.
fn check_general_oids(machine: &Machine, a: AdapterId) {
    let general = machine.general_attributes(a).expect("general attributes");
    let list = query(machine, a, OID_GEN_SUPPORTED_LIST, 1024);
    let oids: Vec<u32> = list
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(oids, general.supported_oids);
    for oid in [
        OID_NDK_SET_STATE,
        OID_NDK_STATISTICS,
        OID_NDK_CONNECTIONS,
        OID_NDK_LOCAL_ENDPOINTS,
        OID_GEN_STATISTICS,
    ] {
        assert!(oids.contains(&oid), "{oid:#010x} not in the supported list");
    }
    let mut short = [0u8; 4];
    assert_eq!(
        machine.oid_query(a, OID_GEN_SUPPORTED_LIST, &mut short),
        Err(NDIS_STATUS_BUFFER_TOO_SHORT)
    );
    // OID_GEN_LINK_SPEED (legacy) is not answered.
    assert_eq!(
        machine.oid_query(a, 0x0001_0107, &mut [0u8; 8]),
        Err(NDIS_STATUS_NOT_SUPPORTED)
    );
    assert_eq!(
        query(machine, a, OID_802_3_CURRENT_ADDRESS, 6),
        general.current_mac
    );
    assert_eq!(
        query(machine, a, OID_GEN_MAXIMUM_FRAME_SIZE, 4),
        1500u32.to_ne_bytes()
    );
    assert_eq!(
        machine.oid_set(a, OID_GEN_CURRENT_PACKET_FILTER, &1u32.to_ne_bytes()),
        Ok(4)
    );
}

/// `OID_GEN_STATISTICS` after three discarded sends, `OID_NDK_STATISTICS`,
/// and the (empty) `OID_NDK_CONNECTIONS` / `OID_NDK_LOCAL_ENDPOINTS`.
fn check_statistics_oids(machine: &Machine, a: AdapterId) {
    let statuses = machine.send(a, 3, false);
    assert_eq!(statuses, vec![NDIS_STATUS_SUCCESS; 3]);
    let stats: NDIS_STATISTICS_INFO = read(&query(machine, a, OID_GEN_STATISTICS, 512));
    assert_eq!(
        stats.Header,
        NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            NDIS_STATISTICS_INFO_REVISION_1,
            NDIS_SIZEOF_STATISTICS_INFO_REVISION_1
        )
    );
    assert_eq!(stats.ifOutDiscards, 3, "the three sends were discarded");
    let ndk_stats: NDIS_NDK_STATISTICS_INFO = read(&query(machine, a, OID_NDK_STATISTICS, 512));
    assert_eq!(
        ndk_stats.Header,
        NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            NDIS_NDK_STATISTICS_INFO_REVISION_1,
            NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1
        )
    );
    for (oid, size) in [
        (
            OID_NDK_CONNECTIONS,
            NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(0),
        ),
        (
            OID_NDK_LOCAL_ENDPOINTS,
            NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(0),
        ),
    ] {
        let answer = query(machine, a, oid, 4096);
        assert_eq!(answer.len(), size);
        let header: NDIS_OBJECT_HEADER = read(&answer);
        assert_eq!(
            (header.Type, header.Revision, usize::from(header.Size)),
            (NDIS_OBJECT_TYPE_DEFAULT, 1, size)
        );
        let count = u32::from_ne_bytes(answer[8..12].try_into().unwrap());
        assert_eq!(count, 0, "no NDK connections or endpoints yet");
    }
}

/// NDK disabled: `NetEventNDKDisable` (raised from a work item, not inside
/// the OID) and opens refused; enabled again: `NetEventNDKEnable`.
fn check_ndk_set_state(machine: &Machine, a: AdapterId) {
    assert_eq!(
        machine.oid_set(a, OID_NDK_SET_STATE, &[]),
        Err(NDIS_STATUS_INVALID_LENGTH)
    );
    set_ndk_state(machine, a, false);
    assert_eq!(
        machine.open_ndk(a, NDK_VERSION_1_2).err(),
        Some(NDIS_STATUS_ADAPTER_NOT_READY)
    );
    set_ndk_state(machine, a, true);
}

/// `OpenNDKAdapter` at 1.2 (the open adapter says so), and versions the
/// provider does not serve refused with `NDIS_STATUS_BAD_VERSION`.
fn open_ndk_adapter(machine: &Machine, a: AdapterId) -> *mut NDK_ADAPTER {
    let ndk_adapter = machine
        .open_ndk(a, NDK_VERSION_1_2)
        .expect("OpenNDKAdapter 1.2");
    // SAFETY: the provider's open adapter; its header comes first.
    let header = unsafe { (*ndk_adapter).Header };
    assert_eq!(
        (header.ObjectType, header.Version),
        (NdkObjectTypeAdapter, NDK_VERSION_1_2)
    );
    assert_eq!(adapter_info(ndk_adapter).Version, NDK_VERSION_1_2);
    assert_eq!(
        machine.open_ndk(a, NDK_VERSION::new(9, 0)).err(),
        Some(NDIS_STATUS_BAD_VERSION)
    );
    assert_eq!(
        machine.open_ndk(a, NDK_VERSION::new(1, 99)).err(),
        Some(NDIS_STATUS_BAD_VERSION)
    );
    ndk_adapter
}

#[test]
fn full_lifecycle() {
    if !is_child() {
        child_passes("lifecycle::full_lifecycle");
        return;
    }
    let machine = Machine::boot(&image()).unwrap_or_else(|e| panic!("boot: {e}"));

    // MiniportInitializeEx with the INF's keywords, then MiniportRestart.
    let mut kw = keywords(child_address(1));
    kw.push(("*NetworkDirectRoCEFrameSize", Keyword::Int(2048)));
    let a = machine
        .add_adapter(&kw)
        .unwrap_or_else(|s| panic!("MiniportInitializeEx: {:#010x}", s as u32));
    assert!(
        machine.wait_ndk_ready(a, READY),
        "NetEventNDKEnable never came"
    );
    check_attributes(&machine, a);
    check_general_oids(&machine, a);
    check_statistics_oids(&machine, a);
    check_ndk_set_state(&machine, a);
    let ndk_adapter = open_ndk_adapter(&machine, a);

    // Pause and restart with the NDK adapter open; OIDs still answered
    // while paused (NDIS sends nothing then); sends after the restart
    // succeed again.
    assert_eq!(machine.pause(a), NDIS_STATUS_SUCCESS);
    assert_eq!(
        query(&machine, a, OID_GEN_MAXIMUM_FRAME_SIZE, 4),
        1500u32.to_ne_bytes()
    );
    assert_eq!(machine.restart(a), NDIS_STATUS_SUCCESS);
    assert_eq!(machine.send(a, 2, true), vec![NDIS_STATUS_SUCCESS; 2]);

    // CloseNDKAdapter, halt, unload: nothing left.
    machine.close_ndk(a, ndk_adapter);
    machine.halt(a);
    assert_eq!(machine.pnp_events(a).first(), Some(&NetEventNDKEnable));
    let report = machine.unload();
    assert!(
        report.pool_by_tag.is_empty(),
        "pool left: {:?}",
        report.pool_by_tag
    );
    assert_eq!(report.armed_timers, 0);
    assert_eq!(report.queued_dpcs, 0);
    assert_eq!(report.queued_work_items, 0);
    assert_eq!(report.open_sockets, 0);
    assert!(report.bugchecks.is_empty(), "{:?}", report.bugchecks);
    assert!(report.is_clean(), "left behind: {report}");
}

/// A second machine boots after the first unloads (a fresh mapping), and
/// a machine cannot boot while another is booted.
#[test]
fn boot_after_unload() {
    if !is_child() {
        child_passes("lifecycle::boot_after_unload");
        return;
    }
    let first = Machine::boot(&image()).unwrap_or_else(|e| panic!("boot: {e}"));
    assert!(matches!(
        Machine::boot(&image()),
        Err(kbottle::machine::BootError::AlreadyBooted)
    ));
    let a = first
        .add_adapter(&keywords(child_address(2)))
        .expect("adapter");
    assert!(first.wait_ndk_ready(a, READY));
    let report = first.unload();
    assert!(report.is_clean(), "first machine left: {report}");
    let second = Machine::boot(&image()).unwrap_or_else(|e| panic!("second boot: {e}"));
    assert!(!second.image_range().is_empty());
    let b = second
        .add_adapter(&keywords(child_address(3)))
        .expect("adapter");
    assert!(second.wait_ndk_ready(b, READY));
    let report = second.unload();
    assert!(report.is_clean(), "second machine left: {report}");
}

/// `*NetworkDirect` = 0: the NDK attributes say disabled, no NDK event is
/// raised and opens are refused; the adapter still answers OIDs.
#[test]
fn network_direct_keyword_off_keeps_ndk_disabled() {
    let machine = machine();
    let kw = vec![
        ("*NetworkDirect", Keyword::Int(0)),
        (
            "RsNdkIPv4Address",
            Keyword::Str(fresh_address().to_string()),
        ),
    ];
    let a = machine.add_adapter(&kw).expect("adapter");
    assert!(machine.wait_idle(READY));
    assert!(!machine.ndk_attributes(a).expect("NDK attributes").enabled);
    assert!(!machine.pnp_events(a).contains(&NetEventNDKEnable));
    assert_eq!(
        machine.open_ndk(a, NDK_VERSION_1_2).err(),
        Some(NDIS_STATUS_ADAPTER_NOT_READY)
    );
    assert_eq!(
        query(machine, a, OID_GEN_MAXIMUM_FRAME_SIZE, 4),
        1500u32.to_ne_bytes()
    );
    machine.halt(a);
}

/// Without `RsNdkIPv4Address` the adapter initialises (NDK enabled in its
/// attributes) but has no socket, so NDK never becomes ready.
#[test]
fn no_address_keyword_means_no_ndk() {
    let machine = machine();
    let a = machine
        .add_adapter(&[("*NetworkDirect", Keyword::Int(1))])
        .expect("adapter");
    assert!(machine.wait_idle(READY));
    assert!(!machine.wait_ndk_ready(a, Duration::from_millis(100)));
    assert_eq!(
        machine.open_ndk(a, NDK_VERSION_1_2).err(),
        Some(NDIS_STATUS_ADAPTER_NOT_READY)
    );
    machine.halt(a);
}

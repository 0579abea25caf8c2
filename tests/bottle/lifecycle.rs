//! The NDIS lifecycle of the real rsndk.sys, an NDIS MUX intermediate
//! driver, driven as NDIS drives it: `DriverEntry` →
//! `NdisMRegisterMiniportDriver` (intermediate; → `MiniportSetOptions`,
//! NDK provider characteristics), `NdisRegisterProtocolDriver`,
//! `NdisIMAssociateMiniport` → a NIC appears: `ProtocolBindAdapterEx` →
//! `NdisOpenAdapterEx` → `NdisIMInitializeDeviceInstanceEx` → V's
//! `MiniportInitializeEx` with its registry keywords (registration,
//! general and NDK attributes, V taking the NIC's MAC and MTU) →
//! `MiniportRestart` → OIDs (the supported list, statistics, the NDK OIDs,
//! NDK disable and enable with their PnP events) →
//! `OpenNDKAdapterHandler` (1.2, and versions the provider must refuse) →
//! V's address from the IP stack → sends while the binding is paused
//! (discarded and counted) → `MiniportPause` / `MiniportRestart` → IP
//! traffic through V → `CloseNDKAdapterHandler` → unbind (NDK disabled,
//! `MiniportHaltEx`, `NdisCloseAdapterEx`) → `MiniportDriverUnload`, after
//! which nothing may be left. An adapter serves NDK only at the addresses
//! its interface has: none until the stack gives it one.
//!
//! Tests that unload run in a child process (kernel state is
//! process-global); the others use this process's shared machine.

use std::net::IpAddr;
use std::time::Duration;

use kbottle::Machine;
use kbottle::machine::{AdapterId, Keyword};
use kbottle::ndis::types::{
    NDIS_NDK_STATISTICS_INFO, NDIS_NDK_STATISTICS_INFO_REVISION_1, NDIS_OBJECT_HEADER,
    NDIS_OBJECT_TYPE_DEFAULT, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1,
    NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1, NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1,
    NDIS_SIZEOF_STATISTICS_INFO_REVISION_1, NDIS_STATISTICS_INFO, NDIS_STATISTICS_INFO_REVISION_1,
    NDIS_STATUS_BUFFER_TOO_SHORT, NDIS_STATUS_INVALID_LENGTH, NDIS_STATUS_PAUSED,
    NdisInterfaceInternal, NdisMedium802_3, NetEventNDKDisable, NetEventNDKEnable,
    OID_802_3_CURRENT_ADDRESS, OID_GEN_CURRENT_PACKET_FILTER, OID_GEN_MAXIMUM_FRAME_SIZE,
    OID_GEN_STATISTICS, OID_GEN_SUPPORTED_LIST, OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS,
    OID_NDK_SET_STATE, OID_NDK_STATISTICS,
};
use ndkpi::{
    NDIS_STATUS_ADAPTER_NOT_READY, NDIS_STATUS_BAD_VERSION, NDIS_STATUS_NOT_SUPPORTED,
    NDIS_STATUS_SUCCESS, NDK_ADAPTER, NDK_ADAPTER_INFO, NDK_VERSION, NDK_VERSION_1_2,
    NdkObjectTypeAdapter, STATUS_CONNECTION_REFUSED, STATUS_INVALID_ADDRESS, STATUS_PENDING,
    STATUS_SUCCESS,
};

use crate::common::{
    READY, adapter, child_passes, fresh_address, give_address, image, is_child, keywords, machine,
    ndk_enabled, wait_served,
};
use crate::ndk::{Ndk, close_wait, finish};
use testkit::adapter::{
    Recorder, SockAddr, adapter_table, connect, create_qp, fresh_port, listen, reject,
};

/// How long a PnP event may take to follow the OID that caused it.
const EVENT: Duration = Duration::from_secs(10);
/// How long a ping may wait for its answer.
const PING: Duration = Duration::from_secs(5);

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
    // V takes the NIC's MTU (the segment's) and MAC.
    assert_eq!(general.mtu, 1500);
    assert_eq!(
        Some(general.current_mac.as_slice()),
        machine.nic_mac(a).as_ref().map(<[u8; 6]>::as_slice)
    );
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
    // OID_GEN_LINK_SPEED (legacy, as the MUX sample answers it): the
    // NIC's speed in 100 bit/s units; an OID nobody knows is not answered.
    let speed = u32::try_from(general.xmit_link_speed / 100).unwrap_or(u32::MAX);
    assert_eq!(query(machine, a, 0x0001_0107, 4), speed.to_ne_bytes());
    assert_eq!(
        machine.oid_query(a, 0x00FF_FF01, &mut [0u8; 8]),
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
    // The stack above V sets V's filter (directed, multicast, broadcast)
    // from its own thread once V is bound, as TCP/IP does after binding:
    // wait for it (bounded); setting it again goes down to the NIC and
    // reads back.
    let deadline = std::time::Instant::now() + READY;
    let filter = loop {
        let filter = query(machine, a, OID_GEN_CURRENT_PACKET_FILTER, 4);
        if filter != [0; 4] || std::time::Instant::now() > deadline {
            break filter;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(
        filter,
        0x0Bu32.to_ne_bytes(),
        "NDIS_PACKET_TYPE_DIRECTED | MULTICAST | BROADCAST"
    );
    assert_eq!(
        machine.oid_set(a, OID_GEN_CURRENT_PACKET_FILTER, &filter),
        Ok(4)
    );
    assert_eq!(query(machine, a, OID_GEN_CURRENT_PACKET_FILTER, 4), filter);
}

/// `OID_GEN_STATISTICS` after three (empty) sends V discarded (its binding
/// to the NIC paused: completed `NDIS_STATUS_PAUSED`), `OID_NDK_STATISTICS`, and
/// the (empty) `OID_NDK_CONNECTIONS` / `OID_NDK_LOCAL_ENDPOINTS`. The
/// stack above V may send frames of its own (neighbour discovery) while
/// the binding is paused: V discards those too, and the stack sees them
/// fail.
fn check_statistics_oids(machine: &Machine, a: AdapterId) {
    let out_discards = |machine: &Machine| {
        let stats: NDIS_STATISTICS_INFO = read(&query(machine, a, OID_GEN_STATISTICS, 512));
        stats.ifOutDiscards
    };
    // The stack's failures first: one V discards after this read is
    // counted by it, whenever the stack handed the frame over.
    let stack_failed = machine.upper_sends(a).failed;
    let discarded = out_discards(machine);
    assert_eq!(machine.pause_binding(a), NDIS_STATUS_SUCCESS);
    let statuses = machine.send(a, 3, false);
    assert_eq!(statuses, vec![NDIS_STATUS_PAUSED; 3]);
    assert_eq!(machine.restart_binding(a), NDIS_STATUS_SUCCESS);
    // Every list the stack had in V during the pause is back (bounded), so
    // each discard counted below has reached the stack's count.
    let deadline = std::time::Instant::now() + READY;
    while machine.upper_sends(a).outstanding != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let discarded = out_discards(machine) - discarded;
    let stack_failed = machine.upper_sends(a).failed - stack_failed;
    // V counts frames (NET_BUFFERs); the bottle's three lists carry none.
    assert!(
        discarded <= stack_failed,
        "{discarded} frames discarded: at most the {stack_failed} of the stack's that failed"
    );
    let stats: NDIS_STATISTICS_INFO = read(&query(machine, a, OID_GEN_STATISTICS, 512));
    assert_eq!(
        stats.Header,
        NDIS_OBJECT_HEADER::new(
            NDIS_OBJECT_TYPE_DEFAULT,
            NDIS_STATISTICS_INFO_REVISION_1,
            NDIS_SIZEOF_STATISTICS_INFO_REVISION_1
        )
    );
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

/// Both edges come from the one `DriverEntry` of the one service both
/// INFs install (rsndkp.inx, rsndk_mp.inx: `AddService = rsndkp`): the
/// intermediate miniport driver, and the protocol under the service's own
/// name (NDIS finds a protocol's bindings under its service key,
/// `Services\rsndkp\Parameters\Adapters`), associated with each other.
/// A second service would load a second image whose `DriverEntry` ran
/// again, which this boot would not show.
fn check_one_service(machine: &Machine) {
    let r = machine.registrations();
    assert_eq!(r.service, kbottle::machine::SERVICE);
    assert!(
        r.miniport_from_driver_entry && r.intermediate,
        "the intermediate miniport driver from DriverEntry: {r:?}"
    );
    assert!(
        r.protocol_from_driver_entry,
        "the protocol from DriverEntry: {r:?}"
    );
    assert_eq!(
        r.protocol_name.as_deref(),
        Some(r.service.as_str()),
        "the protocol's name is the service's"
    );
    assert!(r.associated, "NdisIMAssociateMiniport: {r:?}");
}

#[test]
fn full_lifecycle() {
    if !is_child() {
        child_passes("lifecycle::full_lifecycle");
        return;
    }
    let machine = Machine::boot(&image()).unwrap_or_else(|e| panic!("boot: {e}"));
    check_one_service(&machine);

    // A NIC, the bind, V's MiniportInitializeEx with the INF's keywords,
    // then MiniportRestart: NDK enabled from the start.
    let mut kw = keywords();
    kw.push(("*NetworkDirectRoCEFrameSize", Keyword::Int(2048)));
    let a = machine
        .add_adapter(&kw)
        .unwrap_or_else(|s| panic!("bind / MiniportInitializeEx: {:#010x}", s as u32));
    assert!(ndk_enabled(&machine, a), "V came up with NDK disabled");
    assert_eq!(
        machine.pnp_events(a),
        Vec::<i32>::new(),
        "no NDK event without a change"
    );
    check_attributes(&machine, a);
    check_general_oids(&machine, a);
    check_statistics_oids(&machine, a);
    check_ndk_set_state(&machine, a);
    let ndk_adapter = open_ndk_adapter(&machine, a);

    // Addresses from the stack; a second V on the segment to talk to.
    let ip: IpAddr = fresh_address().into();
    give_address(&machine, a, ip);
    let b = machine.add_adapter(&keywords()).expect("second adapter");
    let peer: IpAddr = fresh_address().into();
    give_address(&machine, b, peer);
    assert!(machine.ping(a, peer, PING), "{ip} -> {peer} through V");

    // Pause and restart with the NDK adapter open; OIDs still answered
    // while paused (NDIS sends nothing then); IP through V again after the
    // restart.
    assert_eq!(machine.pause(a), NDIS_STATUS_SUCCESS);
    assert_eq!(
        query(&machine, a, OID_GEN_MAXIMUM_FRAME_SIZE, 4),
        1500u32.to_ne_bytes()
    );
    assert_eq!(machine.restart(a), NDIS_STATUS_SUCCESS);
    assert!(
        machine.ping(a, peer, PING),
        "{ip} -> {peer} after the restart"
    );
    assert!(
        machine.ping(b, ip, PING),
        "{peer} -> {ip} after the restart"
    );

    // CloseNDKAdapter, unbind (NDK disabled first), unload: nothing left.
    machine.close_ndk(a, ndk_adapter);
    machine.halt(a);
    machine.halt(b);
    assert_eq!(
        machine.pnp_events(a),
        vec![NetEventNDKDisable, NetEventNDKEnable, NetEventNDKDisable],
        "OID_NDK_SET_STATE off and on, then the unbind's disable"
    );
    let report = machine.unload();
    assert!(
        report.pool_by_tag.is_empty(),
        "pool left: {:?}",
        report.pool_by_tag
    );
    assert_eq!(report.armed_timers, 0);
    assert_eq!(report.queued_dpcs, 0);
    assert_eq!(report.queued_work_items, 0);
    assert_eq!(report.nbl_pools, vec![]);
    assert_eq!(report.open_bindings, 0);
    assert_eq!((report.mib_tables, report.mib_notifications), (0, 0));
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
    let a = first.add_adapter(&keywords()).expect("adapter");
    give_address(&first, a, fresh_address().into());
    let report = first.unload();
    assert!(report.is_clean(), "first machine left: {report}");
    let second = Machine::boot(&image()).unwrap_or_else(|e| panic!("second boot: {e}"));
    assert!(!second.image_range().is_empty());
    let b = second.add_adapter(&keywords()).expect("adapter");
    give_address(&second, b, fresh_address().into());
    let report = second.unload();
    assert!(report.is_clean(), "second machine left: {report}");
}

/// `*NetworkDirect` = 0: the NDK attributes say disabled, no NDK event is
/// raised and opens are refused; the adapter still answers OIDs.
#[test]
fn network_direct_keyword_off_keeps_ndk_disabled() {
    let machine = machine();
    let kw = vec![("*NetworkDirect", Keyword::Int(0))];
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

/// V comes up NDK-enabled with no address on its interface: NDK adapters
/// open, but `NdkListen` and `NdkConnect` at an address V does not have
/// (specific or the wildcard) are refused with `STATUS_INVALID_ADDRESS`,
/// synchronously, nothing reaching the peer. Once the stack gives V the
/// address both work: a listener there, and a connect that reaches the
/// peer's listener and hears its reject; removed again, the address is
/// refused again.
#[test]
fn an_adapter_serves_ndk_only_at_its_interface_addresses() {
    let machine = machine();
    let a = machine.add_adapter(&keywords()).expect("adapter");
    assert!(ndk_enabled(machine, a));
    let ip = fresh_address();
    let (b, peer) = adapter();
    let open = |id, ip| Ndk {
        adapter: machine
            .open_ndk(id, NDK_VERSION_1_2)
            .expect("OpenNDKAdapter"),
        ip,
        bottled: true,
    };
    let (na, nb) = (open(a, ip), open(b, peer));
    let port = fresh_port();
    let peer_events = Recorder::new();
    let peer_listener = nb.create_listener(peer_events);
    assert_eq!(listen(peer_listener, &nb.addr(port)), STATUS_SUCCESS);

    let pd = na.create_pd();
    let cq = na.create_cq(16, Recorder::new());
    let qp = create_qp(pd, cq, cq, 0x1F00, 4, 4, 1, 1, 0).expect("NdkCreateQp");
    let events = Recorder::new();
    let l = na.create_listener(events);
    assert_eq!(listen(l, &na.addr(port)), STATUS_INVALID_ADDRESS);
    assert_eq!(
        listen(l, &SockAddr::v4([0; 4], port)),
        STATUS_INVALID_ADDRESS,
        "the wildcard with no IPv4 address"
    );
    close_wait(l);
    let c = na.create_connector();
    let done = Recorder::new();
    for from in [na.addr(0), SockAddr::v4([0; 4], 0)] {
        assert_eq!(
            connect(c, qp, &from, &nb.addr(port), b"", done),
            STATUS_INVALID_ADDRESS
        );
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!((done.count(), peer_events.count()), (0, 0));
    close_wait(c);

    give_address(machine, a, ip.into());
    let l = na.create_listener(events);
    assert_eq!(listen(l, &na.addr(port)), STATUS_SUCCESS);
    close_wait(l);
    let c = na.create_connector();
    let status = connect(c, qp, &na.addr(0), &nb.addr(port), b"", done);
    assert_eq!(status, STATUS_PENDING, "NdkConnect from {ip}");
    testkit::adapter::wait_until("the peer's connect event", || peer_events.count() >= 1);
    let passive = peer_events.calls()[0].object as *mut ndkpi::NDK_CONNECTOR;
    assert_eq!(reject(passive, b""), STATUS_SUCCESS);
    assert_eq!(
        finish(STATUS_PENDING, done, "the rejected connect"),
        STATUS_CONNECTION_REFUSED
    );
    close_wait(passive);
    close_wait(c);

    machine
        .remove_address(a, ip.into())
        .expect("remove_address");
    assert!(
        wait_served(machine, a, ip.into(), false, READY),
        "{ip} still served after its removal"
    );
    for o in [qp.cast::<u8>(), cq.cast(), pd.cast(), peer_listener.cast()] {
        close_wait(o);
    }
    machine.close_ndk(a, na.adapter);
    machine.close_ndk(b, nb.adapter);
    machine.halt(a);
    machine.halt(b);
}

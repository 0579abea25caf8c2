//! The IP Helper routines called through their win64 entry points, as
//! the driver calls them, over interfaces bound directly on the process's
//! stack (adapter numbers from 9000, which no machine of the test process
//! gives out: their frames go nowhere). Violations are checked in a child
//! process of the test binary, which must die with the bugcheck's report.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ndis::{
    AF_INET, AF_INET6, AF_UNSPEC, HANDLE, IpDadStatePreferred, IpDadStateTentative,
    IpPrefixOriginManual, IpPrefixOriginWellKnown, IpSuffixOriginLinkLayerAddress,
    IpSuffixOriginManual, MIB_NOTIFICATION_TYPE, MIB_UNICASTIPADDRESS_ROW,
    MIB_UNICASTIPADDRESS_TABLE, MibAddInstance, MibDeleteInstance, MibInitialNotification,
    MibParameterNotification, NET_LUID, PASSIVE_LEVEL,
};
use ndkpi::{NTSTATUS, PVOID, STATUS_INVALID_PARAMETER, STATUS_NOT_FOUND, STATUS_SUCCESS};

use super::iphelper::*;
use super::iphelper_rows::{INFINITE_LIFETIME, ip_of, sockaddr_of};
use crate::kernel::cpu;
use crate::tcpip::{self, InterfaceInfo, LOOPBACK_LUID};

const WAIT: Duration = Duration::from_secs(5);

/// The tests share the process's stack and the notification registry.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `GetUnicastIpAddressEntry` on `row` (`None`: a null row).
fn get_entry(row: Option<&mut MIB_UNICASTIPADDRESS_ROW>) -> NTSTATUS {
    let row = row.map_or(std::ptr::null_mut(), std::ptr::from_mut);
    // SAFETY: the export, with a row that is null or a live `&mut` of the
    // caller's for the call.
    unsafe { GetUnicastIpAddressEntry(row) }
}

/// `GetUnicastIpAddressTable` into `*out` (`None`: a null out-pointer).
fn get_table(family: u16, out: Option<&mut *mut MIB_UNICASTIPADDRESS_TABLE>) -> NTSTATUS {
    let out = out.map_or(std::ptr::null_mut(), std::ptr::from_mut);
    // SAFETY: the export, with an out-pointer that is null or a live
    // `&mut` of the caller's for the call.
    unsafe { GetUnicastIpAddressTable(family, out) }
}

/// `NotifyUnicastIpAddressChange` into `*out` (`None`: a null
/// out-pointer).
fn notify(
    family: u16,
    callback: ndis::PUNICAST_IPADDRESS_CHANGE_CALLBACK,
    context: usize,
    initial: bool,
    out: Option<&mut HANDLE>,
) -> NTSTATUS {
    let out = out.map_or(std::ptr::null_mut(), std::ptr::from_mut);
    // SAFETY: the export, with a callback of the right type (or none), an
    // opaque context and an out-pointer that is null or a live `&mut` of
    // the caller's.
    unsafe {
        NotifyUnicastIpAddressChange(family, callback, context as PVOID, u8::from(initial), out)
    }
}

/// `FreeMibTable(table)`.
fn free_table(table: *mut MIB_UNICASTIPADDRESS_TABLE) {
    // SAFETY: the export, which looks the pointer up among the tables it
    // gave out before it frees (or reports) anything; it never reads it.
    unsafe { FreeMibTable(table.cast()) }
}

/// `CancelMibChangeNotify2(handle)`.
fn cancel(handle: HANDLE) -> NTSTATUS {
    // SAFETY: the export; a handle is an opaque value NETIO checks.
    unsafe { CancelMibChangeNotify2(handle) }
}

fn luid_of(adapter: u32) -> u64 {
    (6 << 48) | (u64::from(adapter) << 24)
}

/// Binds adapter `n` (link up) on the process's stack.
fn bind(n: u32) {
    let info = InterfaceInfo {
        adapter: n,
        luid: luid_of(n),
        if_index: n - 8000,
        mac: [0x02, 0x52, 0x53, 0x90, (n >> 8) as u8, n as u8],
        mtu: 1500,
    };
    tcpip::global().bind(info, true).unwrap();
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The rows of a table, copied, and the table freed.
fn table(family: u16) -> (i32, Vec<MIB_UNICASTIPADDRESS_ROW>) {
    let mut t: *mut MIB_UNICASTIPADDRESS_TABLE = std::ptr::dangling_mut();
    let status = get_table(family, Some(&mut t));
    if status != STATUS_SUCCESS {
        assert!(t.is_null(), "a failed call leaves a null table");
        return (status, Vec::new());
    }
    // SAFETY: a table the call returned: a count then that many rows.
    let n = unsafe { (*t).NumEntries } as usize;
    let first = t
        .wrapping_byte_add(std::mem::offset_of!(MIB_UNICASTIPADDRESS_TABLE, Table))
        .cast::<MIB_UNICASTIPADDRESS_ROW>();
    // SAFETY: the n rows of the table, contiguous after the header.
    let rows = unsafe { std::slice::from_raw_parts(first, n) }.to_vec();
    free_table(t);
    (status, rows)
}

fn of_luid(
    rows: &[MIB_UNICASTIPADDRESS_ROW],
    luid: u64,
) -> Vec<(IpAddr, MIB_UNICASTIPADDRESS_ROW)> {
    rows.iter()
        .filter(|r| r.InterfaceLuid.Value == luid)
        .map(|r| (ip_of(&r.Address).unwrap(), *r))
        .collect()
}

#[test]
fn the_table_holds_loopback_and_every_interfaces_addresses_by_family() {
    let _s = serial();
    bind(9001);
    let v4 = IpAddr::V4(Ipv4Addr::new(198, 18, 90, 1));
    let v6: IpAddr = "fd00:5253::9001".parse().unwrap();
    tcpip::global().add_address(9001, v4, 15).unwrap();
    tcpip::global().add_address(9001, v6, 64).unwrap();
    let ll = IpAddr::V6(tcpip::global().link_local_v6(9001).unwrap());
    wait_for("DAD", || {
        tcpip::global()
            .rows_of(9001)
            .iter()
            .all(|r| r.address.dad == tcpip::DadState::Preferred)
    });
    let before = tables_outstanding();
    let (status, rows) = table(AF_UNSPEC);
    assert_eq!(status, STATUS_SUCCESS);
    assert_eq!(tables_outstanding(), before, "freed");
    let loopback: Vec<IpAddr> = of_luid(&rows, LOOPBACK_LUID)
        .iter()
        .map(|(ip, _)| *ip)
        .collect();
    assert_eq!(
        loopback,
        [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST)
        ]
    );
    let mine = of_luid(&rows, luid_of(9001));
    let ips: Vec<IpAddr> = mine.iter().map(|(ip, _)| *ip).collect();
    assert_eq!(ips, [ll, v4, v6]);
    for (ip, r) in &mine {
        assert_eq!(r.InterfaceIndex, 1001);
        assert_eq!(r.DadState, IpDadStatePreferred);
        assert_eq!(
            (r.ValidLifetime, r.PreferredLifetime),
            (INFINITE_LIFETIME, INFINITE_LIFETIME)
        );
        assert_eq!(r.SkipAsSource, 0);
        assert!(r.CreationTimeStamp > 0);
        if *ip == ll {
            assert_eq!(
                (r.PrefixOrigin, r.SuffixOrigin),
                (IpPrefixOriginWellKnown, IpSuffixOriginLinkLayerAddress)
            );
            assert_eq!((r.OnLinkPrefixLength, r.ScopeId.Value), (64, 1001));
            // SAFETY: an IPv6 row.
            assert_eq!(unsafe { r.Address.Ipv6 }.sin6_scope_id, 1001);
        } else {
            assert_eq!(
                (r.PrefixOrigin, r.SuffixOrigin),
                (IpPrefixOriginManual, IpSuffixOriginManual)
            );
            assert_eq!(r.ScopeId.Value, 0);
        }
    }
    assert_eq!(mine[1].1.OnLinkPrefixLength, 15);
    let (_, v4_rows) = table(AF_INET);
    assert!(v4_rows.iter().all(|r| ip_of(&r.Address).unwrap().is_ipv4()));
    assert_eq!(of_luid(&v4_rows, luid_of(9001)).len(), 1);
    let (_, v6_rows) = table(AF_INET6);
    assert!(v6_rows.iter().all(|r| ip_of(&r.Address).unwrap().is_ipv6()));
    assert_eq!(of_luid(&v6_rows, luid_of(9001)).len(), 2);
    tcpip::global().unbind(9001);
    assert!(of_luid(&table(AF_UNSPEC).1, luid_of(9001)).is_empty());
}

#[test]
fn get_entry_fills_a_row_from_its_key() {
    let _s = serial();
    bind(9002);
    let v4 = IpAddr::V4(Ipv4Addr::new(198, 18, 90, 2));
    tcpip::global().add_address(9002, v4, 24).unwrap();
    let mut row = MIB_UNICASTIPADDRESS_ROW {
        Address: sockaddr_of(v4, 0),
        InterfaceLuid: NET_LUID {
            Value: luid_of(9002),
        },
        ..MIB_UNICASTIPADDRESS_ROW::default()
    };
    assert_eq!(get_entry(Some(&mut row)), STATUS_SUCCESS);
    assert_eq!(
        (row.InterfaceIndex, row.OnLinkPrefixLength, row.DadState),
        (1002, 24, IpDadStatePreferred)
    );
    // By index alone.
    let mut by_index = MIB_UNICASTIPADDRESS_ROW {
        Address: sockaddr_of(v4, 0),
        InterfaceIndex: 1002,
        ..MIB_UNICASTIPADDRESS_ROW::default()
    };
    assert_eq!(get_entry(Some(&mut by_index)), STATUS_SUCCESS);
    assert_eq!(by_index.InterfaceLuid.Value, luid_of(9002));
    // Not on that interface, no such interface, no interface, no family.
    let mut other = MIB_UNICASTIPADDRESS_ROW {
        Address: sockaddr_of(IpAddr::V4(Ipv4Addr::new(198, 18, 90, 3)), 0),
        InterfaceIndex: 1002,
        ..MIB_UNICASTIPADDRESS_ROW::default()
    };
    assert_eq!(get_entry(Some(&mut other)), STATUS_NOT_FOUND);
    other.InterfaceIndex = 77;
    assert_eq!(get_entry(Some(&mut other)), STATUS_NOT_FOUND);
    other.InterfaceIndex = 0;
    assert_eq!(get_entry(Some(&mut other)), STATUS_INVALID_PARAMETER);
    let mut no_family = MIB_UNICASTIPADDRESS_ROW {
        InterfaceIndex: 1002,
        ..MIB_UNICASTIPADDRESS_ROW::default()
    };
    assert_eq!(get_entry(Some(&mut no_family)), STATUS_INVALID_PARAMETER);
    assert_eq!(get_entry(None), STATUS_INVALID_PARAMETER);
    tcpip::global().unbind(9002);
}

#[test]
fn bad_arguments_get_status_invalid_parameter() {
    let _s = serial();
    let mut t: *mut MIB_UNICASTIPADDRESS_TABLE = std::ptr::dangling_mut();
    assert_eq!(get_table(10, Some(&mut t)), STATUS_INVALID_PARAMETER);
    assert!(t.is_null());
    assert_eq!(get_table(AF_UNSPEC, None), STATUS_INVALID_PARAMETER);
    let mut h: HANDLE = std::ptr::dangling_mut();
    let status = notify(AF_UNSPEC, None, 0, true, Some(&mut h));
    assert_eq!(
        (status, h),
        (STATUS_INVALID_PARAMETER, std::ptr::null_mut())
    );
    let status = notify(7, Some(record), 0, true, Some(&mut h));
    assert_eq!(
        (status, h),
        (STATUS_INVALID_PARAMETER, std::ptr::null_mut())
    );
    let status = notify(AF_INET, Some(record), 0, true, None);
    assert_eq!(status, STATUS_INVALID_PARAMETER);
    assert_eq!(cancel(std::ptr::null_mut()), STATUS_INVALID_PARAMETER);
    free_table(std::ptr::null_mut());
}

/// What [`record`] saw: (context, notification type, key row or none,
/// IRQL, on the registering thread), in order.
type Seen = (
    usize,
    MIB_NOTIFICATION_TYPE,
    Option<MIB_UNICASTIPADDRESS_ROW>,
    u8,
    std::thread::ThreadId,
);
static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());
/// Callbacks running now, and the most that ever ran at once.
static INSIDE: AtomicUsize = AtomicUsize::new(0);
static MOST_INSIDE: AtomicUsize = AtomicUsize::new(0);
/// Delay of each callback, in ms.
static SLOW_MS: AtomicUsize = AtomicUsize::new(0);
/// Callbacks that returned.
static FINISHED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "win64" fn record(
    context: PVOID,
    row: *mut MIB_UNICASTIPADDRESS_ROW,
    kind: MIB_NOTIFICATION_TYPE,
) {
    let n = INSIDE.fetch_add(1, Ordering::SeqCst) + 1;
    MOST_INSIDE.fetch_max(n, Ordering::SeqCst);
    // SAFETY: the row NETIO passes is valid for the call (or null).
    let row = (!row.is_null()).then(|| unsafe { row.read() });
    SEEN.lock().unwrap_or_else(PoisonError::into_inner).push((
        context as usize,
        kind,
        row,
        cpu::current(),
        std::thread::current().id(),
    ));
    std::thread::sleep(Duration::from_millis(SLOW_MS.load(Ordering::SeqCst) as u64));
    INSIDE.fetch_sub(1, Ordering::SeqCst);
    FINISHED.fetch_add(1, Ordering::SeqCst);
}

/// What the registration with `context` saw: the initial notification
/// and the changes of adapter `adapter`'s interface (other tests of the
/// process may change others).
fn seen_of(context: usize, adapter: u32) -> Vec<Seen> {
    SEEN.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|s| s.0 == context)
        .filter(|s| {
            s.2.is_none_or(|r| r.InterfaceLuid.Value == luid_of(adapter))
        })
        .copied()
        .collect()
}

/// Callbacks that started, any registration.
fn started() -> usize {
    SEEN.lock().unwrap_or_else(PoisonError::into_inner).len()
}

fn register(family: u16, context: usize, initial: bool) -> HANDLE {
    let mut h: HANDLE = std::ptr::null_mut();
    let status = notify(family, Some(record), context, initial, Some(&mut h));
    assert_eq!(status, STATUS_SUCCESS);
    assert!(!h.is_null());
    h
}

#[test]
fn notifications_report_each_change_of_the_family_in_order_at_passive_level() {
    let _s = serial();
    let open_before = notifications_open();
    let h6 = register(AF_INET6, 0x6, true);
    let hall = register(AF_UNSPEC, 0xA, false);
    assert_eq!(notifications_open(), open_before + 2);
    wait_for("the initial notification", || {
        !seen_of(0x6, 9003).is_empty()
    });
    bind(9003);
    let ll = IpAddr::V6(tcpip::global().link_local_v6(9003).unwrap());
    let v4 = IpAddr::V4(Ipv4Addr::new(198, 18, 90, 3));
    tcpip::global().add_address(9003, v4, 24).unwrap();
    wait_for("the link-local preferred", || seen_of(0x6, 9003).len() >= 3);
    tcpip::global().remove_address(9003, v4).unwrap();
    tcpip::global().remove_address(9003, ll).unwrap();
    wait_for("everything on AF_UNSPEC", || seen_of(0xA, 9003).len() >= 5);
    // Each registration has its own callback thread: the AF_INET6 one may
    // still be delivering the deletion.
    wait_for("everything on AF_INET6", || seen_of(0x6, 9003).len() >= 4);
    let me = std::thread::current().id();
    let v6 = seen_of(0x6, 9003);
    assert_eq!(v6.len(), 4, "{v6:?}");
    assert_eq!((v6[0].1, v6[0].2.is_none()), (MibInitialNotification, true));
    let kinds: Vec<MIB_NOTIFICATION_TYPE> = v6.iter().map(|s| s.1).collect();
    assert_eq!(
        kinds,
        [
            MibInitialNotification,
            MibAddInstance,
            MibParameterNotification,
            MibDeleteInstance
        ]
    );
    for s in &v6[1..] {
        let row = s.2.expect("a row");
        assert_eq!(ip_of(&row.Address), Some(ll));
        assert_eq!(
            (row.InterfaceLuid.Value, row.InterfaceIndex),
            (luid_of(9003), 1003)
        );
        assert_eq!(
            (row.DadState, row.OnLinkPrefixLength),
            (0, 0),
            "only the key, as documented"
        );
    }
    let all = seen_of(0xA, 9003);
    let ips: Vec<(MIB_NOTIFICATION_TYPE, IpAddr)> = all
        .iter()
        .map(|s| (s.1, ip_of(&s.2.unwrap().Address).unwrap()))
        .collect();
    assert_eq!(
        ips,
        [
            (MibAddInstance, ll),
            (MibAddInstance, v4),
            (MibParameterNotification, ll),
            (MibDeleteInstance, v4),
            (MibDeleteInstance, ll),
        ]
    );
    for s in v6.iter().chain(&all) {
        assert_eq!(s.3, PASSIVE_LEVEL);
        assert_ne!(s.4, me, "delivered on NETIO's thread, not the caller's");
    }
    assert_eq!(cancel(h6), STATUS_SUCCESS);
    assert_eq!(cancel(hall), STATUS_SUCCESS);
    assert_eq!(notifications_open(), open_before);
    tcpip::global().unbind(9003);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(seen_of(0xA, 9003).len(), 5, "nothing after the cancel");
}

#[test]
fn callbacks_of_a_handle_never_overlap_and_cancel_waits_for_the_running_one() {
    let _s = serial();
    MOST_INSIDE.store(0, Ordering::SeqCst);
    SLOW_MS.store(20, Ordering::SeqCst);
    let h = register(AF_UNSPEC, 0xB, true);
    bind(9004);
    for i in 0..4u8 {
        tcpip::global()
            .add_address(9004, IpAddr::V4(Ipv4Addr::new(198, 18, 91, i + 1)), 24)
            .unwrap();
    }
    // The initial notification, the link-local's add and DAD end, four adds.
    wait_for("seven callbacks", || seen_of(0xB, 9004).len() >= 7);
    SLOW_MS.store(300, Ordering::SeqCst);
    tcpip::global()
        .remove_address(9004, IpAddr::V4(Ipv4Addr::new(198, 18, 91, 1)))
        .unwrap();
    wait_for("the slow callback to start", || {
        seen_of(0xB, 9004).len() == 8
    });
    let t = Instant::now();
    assert_eq!(cancel(h), STATUS_SUCCESS);
    assert!(
        t.elapsed() >= Duration::from_millis(100),
        "the cancel waited"
    );
    assert_eq!(
        INSIDE.load(Ordering::SeqCst),
        0,
        "no callback runs after the cancel"
    );
    assert_eq!(
        FINISHED.load(Ordering::SeqCst),
        started(),
        "every started callback returned"
    );
    assert_eq!(MOST_INSIDE.load(Ordering::SeqCst), 1, "serialised");
    SLOW_MS.store(0, Ordering::SeqCst);
    tcpip::global().unbind(9004);
}

// ---- violations, each in a child process that must die with its report

/// Runs the test `name` alone in a child process with `KBOTTLE_CHILD` set
/// and returns its stderr; the child must fail.
fn child_fails(name: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("KBOTTLE_CHILD", name)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "the child passed:\n{stderr}");
    stderr
}

fn in_child(name: &str) -> bool {
    std::env::var("KBOTTLE_CHILD").is_ok_and(|v| v == name)
}

static CANCELLED_INSIDE: Mutex<usize> = Mutex::new(0);

unsafe extern "win64" fn cancel_myself(
    _: PVOID,
    _: *mut MIB_UNICASTIPADDRESS_ROW,
    _: MIB_NOTIFICATION_TYPE,
) {
    let h = *CANCELLED_INSIDE
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    cancel(h as HANDLE);
}

#[test]
fn cancelling_from_its_own_callback_is_reported_as_the_deadlock_it_is() {
    const NAME: &str =
        "netio::iphelper_tests::cancelling_from_its_own_callback_is_reported_as_the_deadlock_it_is";
    if in_child(NAME) {
        let mut guard = CANCELLED_INSIDE.lock().unwrap();
        let mut h: HANDLE = std::ptr::null_mut();
        let status = notify(AF_UNSPEC, Some(cancel_myself), 0, true, Some(&mut h));
        assert_eq!(status, STATUS_SUCCESS);
        *guard = h as usize;
        drop(guard);
        std::thread::sleep(WAIT);
        return;
    }
    let report = child_fails(NAME);
    assert!(report.contains("kbottle BUGCHECK 0xC4 (0x1000"), "{report}");
    assert!(report.contains("own callback"), "{report}");
}

#[test]
fn cancelling_twice_is_a_stale_handle() {
    const NAME: &str = "netio::iphelper_tests::cancelling_twice_is_a_stale_handle";
    if in_child(NAME) {
        let h = register(AF_INET, 0xC, false);
        assert_eq!(cancel(h), STATUS_SUCCESS);
        cancel(h);
        return;
    }
    let report = child_fails(NAME);
    assert!(report.contains("kbottle BUGCHECK 0x1E"), "{report}");
    assert!(
        report.contains("not a live notification handle"),
        "{report}"
    );
}

#[test]
fn freeing_a_table_twice_is_reported() {
    const TWICE: &str = "netio::iphelper_tests::freeing_a_table_twice_is_reported";
    if in_child(TWICE) {
        let mut t: *mut MIB_UNICASTIPADDRESS_TABLE = std::ptr::null_mut();
        assert_eq!(get_table(AF_UNSPEC, Some(&mut t)), STATUS_SUCCESS);
        free_table(t);
        free_table(t);
        return;
    }
    let report = child_fails(TWICE);
    assert!(report.contains("kbottle BUGCHECK 0xC4 (0x13"), "{report}");
    assert!(report.contains("double free of MIB table"), "{report}");
}

#[test]
fn freeing_what_is_no_table_is_reported() {
    const NAME: &str = "netio::iphelper_tests::freeing_what_is_no_table_is_reported";
    if in_child(NAME) {
        let mut t: *mut MIB_UNICASTIPADDRESS_TABLE = std::ptr::null_mut();
        assert_eq!(get_table(AF_UNSPEC, Some(&mut t)), STATUS_SUCCESS);
        free_table(t.cast::<u8>().wrapping_add(8).cast());
        return;
    }
    let report = child_fails(NAME);
    assert!(report.contains("kbottle BUGCHECK 0xC4 (0x10"), "{report}");
    assert!(
        report.contains("not a table a Get*Table routine returned"),
        "{report}"
    );
}

#[test]
fn the_routines_check_their_irql() {
    const NAME: &str = "netio::iphelper_tests::the_routines_check_their_irql";
    if in_child(NAME) {
        cpu::run_at_dispatch(|| {
            let mut t: *mut MIB_UNICASTIPADDRESS_TABLE = std::ptr::null_mut();
            get_table(AF_UNSPEC, Some(&mut t));
        });
        return;
    }
    let report = child_fails(NAME);
    assert!(report.contains("kbottle BUGCHECK 0xC4 (0xe5"), "{report}");
    assert!(
        report.contains("GetUnicastIpAddressTable called at IRQL 2"),
        "{report}"
    );
}

#[test]
fn a_tentative_address_shows_in_the_table_until_its_dad_ends() {
    let _s = serial();
    bind(9005);
    let v6: IpAddr = "fd00:5253::9005".parse().unwrap();
    tcpip::global().add_address(9005, v6, 64).unwrap();
    let state = || {
        of_luid(&table(AF_INET6).1, luid_of(9005))
            .iter()
            .find(|(ip, _)| *ip == v6)
            .map(|(_, r)| r.DadState)
    };
    assert_eq!(state(), Some(IpDadStateTentative));
    wait_for("DAD to end", || state() == Some(IpDadStatePreferred));
    tcpip::global().unbind(9005);
    assert_eq!(state(), None);
}

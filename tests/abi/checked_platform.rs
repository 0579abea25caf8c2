//! The checked host platform catches each rule it enforces: every
//! `checker_catches_*` test breaks one rule on purpose (through the
//! provider's own lock, pool and callout code where it can) and expects
//! the violation to be recorded, naming what was involved. These tests use
//! platform instances in `Mode::Record` so the binary keeps running; one
//! test shows the default mode panics like a bugcheck.
//!
//! Addresses: 127.0.6.1 (mem fabric `lowres-leak`).

use std::ffi::{CString, c_void};
use std::net::Ipv4Addr;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ndkpi::{
    NDK_ADAPTER, NDK_ADAPTER_DISPATCH, NDK_CQ, NDK_CQ_DISPATCH, NDK_PD, NDK_PD_DISPATCH,
    NDK_VERSION, NTSTATUS, PVOID, STATUS_PENDING, STATUS_SUCCESS,
};
use provider::DeviceContext;
use provider::callout::RequestCompletion;
use provider::lock::SpinLock;
use provider::platform::{Irql, LockClass, Platform, PoolTag, PoolType};
use provider::pool::{Charge, tags};
use rsndk::checker::{Rule, Violation, lock_order_edges};
use rsndk::platform::HostPlatform;
use testkit::scripted::ScriptedDevice;

const TAG: PoolTag = PoolTag(*b"Chk1");

/// The violations of `rule` on `p` (at least one, or the test fails).
#[track_caller]
fn caught(p: &HostPlatform, rule: Rule) -> Vec<Violation> {
    let all = p.violations();
    let of_rule: Vec<Violation> = all.iter().filter(|v| v.rule == rule).cloned().collect();
    assert!(
        !of_rule.is_empty(),
        "expected a {} violation, saw {all:#?}",
        rule.name()
    );
    of_rule
}

/// The dispatch table of a live provider object.
fn dispatch<O, T>(object: *mut O) -> &'static T {
    // SAFETY: every NDK object starts with its header, then the pointer
    // to its dispatch table.
    let table = unsafe {
        object
            .wrapping_byte_add(size_of::<ndkpi::NDK_OBJECT_HEADER>())
            .cast::<*const T>()
            .read()
    };
    // SAFETY: the tables are the provider's statics.
    unsafe { &*table }
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

#[test]
fn checker_catches_paged_pool_at_dispatch() {
    let p = HostPlatform::recording();
    // Paged pool at PASSIVE and non-paged pool anywhere are fine.
    let paged = Charge::take_from(p, TAG, PoolType::Paged, 64).unwrap();
    let nonpaged = p.at_dispatch(|| Charge::take(p, TAG, 32).unwrap());
    assert!(p.violations().is_empty(), "{:?}", p.violations());

    let bad = p.at_dispatch(|| Charge::take_from(p, TAG, PoolType::Paged, 128).unwrap());
    let v = caught(p, Rule::PagedPoolAtDispatch);
    assert!(v[0].detail.contains("Chk1"), "names the tag: {}", v[0]);
    assert!(v[0].detail.contains("128 bytes"), "{}", v[0]);
    drop((paged, nonpaged, bad));
    assert!(p.outstanding().is_empty());
}

#[test]
fn checker_catches_blocking_wait_at_dispatch() {
    static HELD: LockClass = LockClass::new("test.wait_holder");
    let p = HostPlatform::recording();
    p.wait_briefly();
    assert!(p.violations().is_empty(), "waiting at PASSIVE is fine");

    p.at_dispatch(|| p.wait_briefly());
    caught(p, Rule::BlockingAtDispatch);

    // Waiting inside a provider spin lock: the lock raised the IRQL.
    let lock = leak(SpinLock::new(p, &HELD, 0u32));
    let guard = lock.lock();
    p.wait_briefly();
    drop(guard);
    let v = caught(p, Rule::BlockingAtDispatch);
    assert!(
        v.iter().any(|v| v.detail.contains("test.wait_holder")),
        "names the lock held: {v:?}"
    );
    assert_eq!(HostPlatform::irql(), Irql::Passive);
}

/// An adapter over a scripted device, on `p`.
fn scripted_adapter(
    p: &'static HostPlatform,
) -> (
    Arc<ScriptedDevice>,
    hwq::TryArc<DeviceContext>,
    *mut NDK_ADAPTER,
) {
    let dev = Arc::new(ScriptedDevice::with_default_caps());
    let ctx =
        DeviceContext::new(hwq::SharedDevice::from_arc(dev.clone()), p).expect("device context");
    let adapter =
        provider::open_adapter(&ctx, NDK_VERSION { Major: 1, Minor: 2 }).expect("open adapter");
    (dev, ctx, adapter)
}

#[test]
fn checker_catches_adapter_close_at_dispatch() {
    let p = HostPlatform::recording();
    let (_dev, ctx, adapter) = scripted_adapter(p);
    // SAFETY: our open adapter, closed once, nothing else running on it.
    let status = p.at_dispatch(|| unsafe { provider::close_adapter(adapter) });
    assert_eq!(status, STATUS_SUCCESS);
    let v = caught(p, Rule::PassiveOnlyAtDispatch);
    assert!(v[0].detail.contains("NdkCloseAdapter"), "{}", v[0]);
    ctx.detach();
    drop(ctx);
    assert!(p.outstanding().is_empty());
}

#[test]
fn checker_catches_spin_lock_acquired_at_passive() {
    static CLASS: LockClass = LockClass::new("test.no_raise");
    let p = HostPlatform::recording();
    // A lock implementation that forgot to raise the IRQL.
    p.lock_acquired(&CLASS, 0x1000);
    let v = caught(p, Rule::SpinLockIrql);
    assert!(v[0].detail.contains("test.no_raise"), "{}", v[0]);
    assert!(v[0].detail.contains("PASSIVE_LEVEL"), "{}", v[0]);
    p.lock_released(&CLASS, 0x1000);
    assert_eq!(caught(p, Rule::SpinLockIrql).len(), 2, "the release too");
    assert_eq!(HostPlatform::locks_held(), 0);
}

#[test]
fn checker_catches_irql_lowered_under_a_spin_lock() {
    static CLASS: LockClass = LockClass::new("test.lowered");
    let p = HostPlatform::recording();
    let lock = leak(SpinLock::new(p, &CLASS, ()));
    let guard = lock.lock();
    p.lower_irql(Irql::Passive);
    let v = caught(p, Rule::SpinLockIrql);
    assert!(v[0].detail.contains("test.lowered"), "{}", v[0]);
    // Back to where the guard expects to be, so it releases cleanly.
    let _ = p.raise_to_dispatch();
    drop(guard);
    assert_eq!(p.violations().len(), 1);
    assert_eq!(HostPlatform::irql(), Irql::Passive);
}

#[test]
fn checker_catches_out_of_order_release() {
    static OUTER: LockClass = LockClass::new("test.order_outer");
    static INNER: LockClass = LockClass::new("test.order_inner");
    let p = HostPlatform::recording();
    let outer = leak(SpinLock::new(p, &OUTER, ()));
    let inner = leak(SpinLock::new(p, &INNER, ()));
    let a = outer.lock();
    let b = inner.lock();
    drop(a);
    let v = caught(p, Rule::LockReleaseOrder);
    assert!(
        v[0].detail.contains("test.order_outer") && v[0].detail.contains("test.order_inner"),
        "{}",
        v[0]
    );
    // The early release also dropped the IRQL under the inner lock.
    caught(p, Rule::SpinLockIrql);
    drop(b);
    p.lower_irql(Irql::Passive);
    assert_eq!(HostPlatform::locks_held(), 0);

    // In order, nothing is reported.
    let before = p.violations().len();
    let a = outer.lock();
    let b = inner.lock();
    drop(b);
    drop(a);
    assert_eq!(p.violations().len(), before);
}

#[test]
fn checker_catches_lock_order_inversion() {
    static FIRST: LockClass = LockClass::new("test.inv_first");
    static SECOND: LockClass = LockClass::new("test.inv_second");
    let p = HostPlatform::recording();
    let first = leak(SpinLock::new(p, &FIRST, ()));
    let second = leak(SpinLock::new(p, &SECOND, ()));
    // One thread establishes FIRST -> SECOND...
    std::thread::scope(|s| {
        s.spawn(|| {
            let _a = first.lock();
            let _b = second.lock();
        });
    });
    assert!(p.violations().is_empty());
    assert!(lock_order_edges().contains(&("test.inv_first", "test.inv_second")));
    // ...another takes them the other way round: no deadlock happens in
    // this run, but the orders conflict.
    let b = second.lock();
    let a = first.lock();
    drop(a);
    drop(b);
    let v = caught(p, Rule::LockOrderInversion);
    assert!(
        v[0].detail
            .contains("cycle test.inv_second -> test.inv_first -> test.inv_second"),
        "names the cycle: {}",
        v[0]
    );
    assert!(
        !lock_order_edges().contains(&("test.inv_second", "test.inv_first")),
        "the inverting edge is not recorded"
    );
}

#[test]
fn checker_catches_lock_order_cycle_of_three() {
    static P: LockClass = LockClass::new("test.cyc_p");
    static Q: LockClass = LockClass::new("test.cyc_q");
    static R: LockClass = LockClass::new("test.cyc_r");
    let p = HostPlatform::recording();
    let (lp, lq, lr) = (
        leak(SpinLock::new(p, &P, ())),
        leak(SpinLock::new(p, &Q, ())),
        leak(SpinLock::new(p, &R, ())),
    );
    for (x, y) in [(lp, lq), (lq, lr)] {
        let _a = x.lock();
        let _b = y.lock();
    }
    assert!(p.violations().is_empty());
    {
        let _r = lr.lock();
        let _p = lp.lock();
    }
    let v = caught(p, Rule::LockOrderInversion);
    assert!(
        v[0].detail
            .contains("test.cyc_r -> test.cyc_p -> test.cyc_q -> test.cyc_r"),
        "{}",
        v[0]
    );
}

#[test]
fn checker_catches_same_class_nesting() {
    static PLAIN: LockClass = LockClass::new("test.plain");
    static NESTABLE: LockClass = LockClass::nestable("test.nestable");
    let p = HostPlatform::recording();
    let (n1, n2) = (
        leak(SpinLock::new(p, &NESTABLE, ())),
        leak(SpinLock::new(p, &NESTABLE, ())),
    );
    {
        let _a = n1.lock();
        let _b = n2.lock();
    }
    assert!(p.violations().is_empty(), "declared nestable");

    let (l1, l2) = (
        leak(SpinLock::new(p, &PLAIN, ())),
        leak(SpinLock::new(p, &PLAIN, ())),
    );
    {
        let _a = l1.lock();
        let _b = l2.lock();
    }
    let v = caught(p, Rule::SameClassNesting);
    assert!(v[0].detail.contains("test.plain"), "{}", v[0]);
}

#[test]
fn checker_catches_recursive_acquisition() {
    static CLASS: LockClass = LockClass::nestable("test.recursive");
    let p = HostPlatform::recording();
    // Spinning on a lock this thread holds never ends, so the platform
    // hooks are driven directly with one lock address.
    p.at_dispatch(|| {
        p.lock_acquired(&CLASS, 0x2000);
        p.lock_acquired(&CLASS, 0x2000);
        p.lock_released(&CLASS, 0x2000);
        p.lock_released(&CLASS, 0x2000);
    });
    caught(p, Rule::RecursiveLock);
    p.at_dispatch(|| p.lock_released(&CLASS, 0x2000));
    caught(p, Rule::LockNotHeld);
}

static CALLBACKS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "win64" fn count_cb(_ctx: PVOID, _status: NTSTATUS) {
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn checker_catches_callout_under_a_lock() {
    static CLASS: LockClass = LockClass::new("test.callout_holder");
    let p = HostPlatform::recording();
    let lock = leak(SpinLock::new(p, &CLASS, ()));
    let completion = RequestCompletion::new(Some(count_cb), ptr::null_mut());
    completion.complete(p, STATUS_SUCCESS);
    assert!(p.violations().is_empty());
    {
        let _g = lock.lock();
        completion.complete(p, STATUS_SUCCESS);
    }
    let v = caught(p, Rule::CalloutUnderLock);
    assert!(v[0].detail.contains("test.callout_holder"), "{}", v[0]);
    assert!(CALLBACKS.load(Ordering::SeqCst) >= 2);
}

#[test]
fn checker_catches_irql_lowered_without_a_raise() {
    let p = HostPlatform::recording();
    p.lower_irql(Irql::Passive);
    caught(p, Rule::IrqlMismatch);
}

#[test]
fn checker_catches_pool_released_twice() {
    let p = HostPlatform::recording();
    let c = Charge::take(p, TAG, 10).unwrap();
    drop(c);
    p.pool_release(TAG, PoolType::NonPaged, 10);
    let v = caught(p, Rule::PoolUnderflow);
    assert!(v[0].detail.contains("Chk1"), "{}", v[0]);
}

#[test]
fn checker_catches_pool_leaked_at_adapter_close() {
    let ip = Ipv4Addr::new(127, 0, 6, 1);
    let p = HostPlatform::recording();
    HostPlatform::use_for_device(ip, p);
    let config = CString::new(format!("mem:lowres-leak/{ip}")).unwrap();
    let mut adapter = ptr::null_mut();
    // SAFETY: a valid C string and out-pointer.
    let status = unsafe { rsndk::RsNdkOpenAdapter(config.as_ptr(), &raw mut adapter) };
    assert_eq!(status, STATUS_SUCCESS);
    assert!(!p.outstanding().is_empty(), "the device charged its pool");
    // A provider bug forgetting to give back a memory region's page list.
    std::mem::forget(Charge::take(p, tags::MR, 100).unwrap());
    // SAFETY: our adapter, closed once.
    let status = unsafe { rsndk::RsNdkCloseAdapter(adapter) };
    assert_eq!(status, STATUS_SUCCESS);
    let v = caught(p, Rule::PoolLeak);
    assert!(
        v[0].detail.contains("NkMr: 1 allocation(s), 100 bytes"),
        "names tag and count: {}",
        v[0]
    );
    assert_eq!(v.len(), 1, "only the forged leak: {v:?}");
    p.pool_release(tags::MR, PoolType::NonPaged, 100);
    assert!(p.outstanding().is_empty());
}

#[test]
#[should_panic(expected = "BLOCKING_WAIT_AT_DISPATCH_LEVEL")]
fn bugcheck_mode_panics_naming_the_rule() {
    let p = HostPlatform::leaked();
    p.at_dispatch(|| p.wait_briefly());
}

static NOTIFY_IRQL: AtomicU32 = AtomicU32::new(u32::MAX);

unsafe extern "win64" fn irql_cb(_ctx: PVOID, _status: NTSTATUS) {
    NOTIFY_IRQL.store(HostPlatform::irql() as u32, Ordering::SeqCst);
}

unsafe extern "win64" fn no_close(_ctx: *mut c_void) {}

/// Device events run as DPCs would, so callbacks made from them are held
/// to the DISPATCH_LEVEL rules.
#[test]
fn device_events_run_at_dispatch() {
    let p = HostPlatform::leaked();
    let (dev, ctx, adapter) = scripted_adapter(p);
    let table: &NDK_ADAPTER_DISPATCH = dispatch(adapter);
    let mut cq: *mut NDK_CQ = ptr::null_mut();
    // SAFETY: our adapter and a valid out-pointer.
    let status = unsafe {
        table.NdkCreateCq.unwrap()(
            adapter,
            16,
            Some(irql_cb),
            ptr::null_mut(),
            ptr::null_mut(),
            None,
            ptr::null_mut(),
            &raw mut cq,
        )
    };
    assert_eq!(status, STATUS_SUCCESS);
    let cq_table: &NDK_CQ_DISPATCH = dispatch(cq);
    // SAFETY: our CQ.
    unsafe { cq_table.NdkArmCq.unwrap()(cq, ndkpi::NDK_CQ_NOTIFY_ANY) };
    let cqn = dev.cqns()[0];
    dev.overflow_cq(cqn);
    dev.deliver_events();
    assert_eq!(
        NOTIFY_IRQL.load(Ordering::SeqCst),
        Irql::Dispatch as u32,
        "the CQ callback ran at DISPATCH_LEVEL"
    );
    assert_eq!(HostPlatform::irql(), Irql::Passive);
    // SAFETY: our CQ, closed once.
    let status =
        unsafe { cq_table.NdkCloseCq.unwrap()(cq.cast(), Some(no_close), ptr::null_mut()) };
    assert_eq!(status, STATUS_SUCCESS);
    // SAFETY: our adapter, closed once.
    assert_eq!(unsafe { provider::close_adapter(adapter) }, STATUS_SUCCESS);
    ctx.detach();
    drop(ctx);
    p.assert_clean();
}

#[test]
fn checker_catches_adapter_close_with_objects_open() {
    let p = HostPlatform::recording();
    p.set_close_wait_limit(Duration::from_millis(50));
    let (_dev, ctx, adapter) = scripted_adapter(p);
    let table: &NDK_ADAPTER_DISPATCH = dispatch(adapter);
    let mut pd: *mut NDK_PD = ptr::null_mut();
    // SAFETY: our adapter and a valid out-pointer.
    let status = unsafe { table.NdkCreatePd.unwrap()(adapter, None, ptr::null_mut(), &raw mut pd) };
    assert_eq!(status, STATUS_SUCCESS);
    let pd_handle = pd as usize;
    std::thread::scope(|s| {
        // The consumer forgot its PD: the close waits, the checker reports
        // it, and (so the test ends) the PD is closed late.
        s.spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !p.saw(Rule::CloseWithObjectsOutstanding) {
                assert!(Instant::now() < deadline, "no report");
                std::thread::sleep(Duration::from_millis(1));
            }
            let pd = pd_handle as *mut NDK_PD;
            let pd_table: &NDK_PD_DISPATCH = dispatch(pd);
            // SAFETY: our PD, closed once.
            let st =
                unsafe { pd_table.NdkClosePd.unwrap()(pd.cast(), Some(no_close), ptr::null_mut()) };
            assert!(st == STATUS_SUCCESS || st == STATUS_PENDING, "{st:#x}");
        });
        // SAFETY: our adapter, closed once.
        assert_eq!(unsafe { provider::close_adapter(adapter) }, STATUS_SUCCESS);
    });
    let v = caught(p, Rule::CloseWithObjectsOutstanding);
    assert!(
        v[0].detail.contains("NkPd: 1"),
        "names tag and count: {}",
        v[0]
    );
    ctx.detach();
    drop(ctx);
    assert!(p.outstanding().is_empty());
}

#[test]
fn checker_catches_bad_pool_tag() {
    let p = HostPlatform::recording();
    let good = Charge::take(p, tags::QP, 8).unwrap();
    assert!(p.violations().is_empty());
    let bad = Charge::take(p, PoolTag(*b"N\0 x"), 8).unwrap();
    let v = caught(p, Rule::BadPoolTag);
    assert!(v[0].detail.contains("4e, 00, 20, 78"), "{}", v[0]);
    drop((good, bad));
}

/// The device's reader/writer locks (`hwq::lock::SpinRwLock`, what
/// softrnic's `sync::RwLock` is) go through the same checks as the spin
/// locks, a shared hold counting as a hold: reading two locks of one class
/// nested (two devices' key tables: a deadlock once writers queue on both,
/// since the locks prefer writers) is same-class nesting, and shared or
/// exclusive holds taken in both orders against a spin lock are an
/// inversion. A shared hold also runs at `DISPATCH_LEVEL`.
#[test]
fn checker_catches_reader_writer_lock_nesting_and_inversion() {
    use hwq::lock::SpinRwLock;
    static TABLE: LockClass = LockClass::new("test.rw_table");
    static SLOT: LockClass = LockClass::new("test.rw_slot");
    let p = HostPlatform::recording();
    let (mine, theirs) = (
        leak(SpinRwLock::new(&TABLE, 1u32)),
        leak(SpinRwLock::new(&TABLE, 2u32)),
    );
    {
        let a = mine.read(p);
        assert_eq!(HostPlatform::irql(), Irql::Dispatch, "a shared hold raises");
        let b = theirs.read(p);
        assert_eq!(*a + *b, 3);
    }
    assert_eq!(HostPlatform::irql(), Irql::Passive, "released, lowered");
    let v = caught(p, Rule::SameClassNesting);
    assert!(v[0].detail.contains("test.rw_table"), "{}", v[0]);

    let p = HostPlatform::recording();
    let slot = leak(SpinLock::new(p, &SLOT, ()));
    {
        let _s = slot.lock();
        let _t = mine.read(p);
    }
    assert!(p.violations().is_empty(), "{:?}", p.violations());
    {
        let _t = mine.write(p);
        let _s = slot.lock();
    }
    let v = caught(p, Rule::LockOrderInversion);
    assert!(
        v[0].detail
            .contains("cycle test.rw_table -> test.rw_slot -> test.rw_table"),
        "{}",
        v[0]
    );
}

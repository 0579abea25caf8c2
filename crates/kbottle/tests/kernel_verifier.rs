//! Rules that stop the machine: each case runs on its own processor
//! thread under `Policy::Park`, which parks that thread at the bugcheck;
//! the test reads the recorded bugcheck (code, parameters, rule,
//! processor).
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(unsafe_code, non_snake_case)]

use std::time::{Duration, Instant};

use kbottle::verifier::{self, Bugcheck};

mod common;
use kbottle::{cpu, crt, io, ke, mm, pool};
use ndis::{KDPC, KSPIN_LOCK, KTIMER};

/// Runs `f` on a new processor and returns the bugcheck it hits (the
/// thread stays parked).
fn bugcheck_of(label: &str, f: impl FnOnce() + Send + 'static) -> Bugcheck {
    common::on_new_processor(label, f).unwrap_or_else(|| panic!("{label}: no bugcheck"))
}

type AllocFn = unsafe extern "win64" fn(u64, usize, u32) -> *mut u8;
type FreeFn = unsafe extern "win64" fn(*mut u8, u32);

fn alloc(size: usize) -> *mut u8 {
    let f =
        // SAFETY: ExAllocatePool2's thunk has this signature.
        unsafe { std::mem::transmute::<*const (), AllocFn>(pool::ExAllocatePool2 as *const ()) };
    // SAFETY: any arguments; the bottle checks them.
    unsafe {
        f(
            pool::POOL_FLAG_NON_PAGED,
            size,
            u32::from_le_bytes(*b"VrfT"),
        )
    }
}

fn free(p: *mut u8, tag: &[u8; 4]) {
    let f =
        // SAFETY: ExFreePoolWithTag's thunk has this signature.
        unsafe { std::mem::transmute::<*const (), FreeFn>(pool::ExFreePoolWithTag as *const ()) };
    // SAFETY: the bottle checks `p`.
    unsafe { f(p, u32::from_le_bytes(*tag)) };
}

#[test]
fn zero_byte_allocation() {
    let b = bugcheck_of("zero", || {
        alloc(0);
    });
    assert_eq!((b.code, b.params[0], b.params[3]), (0xC4, 0x00, 0));
}

#[test]
fn double_free() {
    let b = bugcheck_of("double-free", || {
        let p = alloc(32);
        free(p, b"VrfT");
        free(p, b"VrfT");
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x13));
    assert!(b.rule.contains("double free"), "{}", b.rule);
}

#[test]
fn free_with_the_wrong_tag() {
    let b = bugcheck_of("wrong-tag", || {
        let p = alloc(32);
        free(p, b"Othr");
    });
    assert_eq!((b.code, b.params[0]), (0xC2, 0x0A));
}

#[test]
fn freeing_pool_that_holds_an_armed_timer() {
    let b = bugcheck_of("armed-timer", || {
        let p = alloc(0x80);
        #[expect(clippy::cast_ptr_alignment, reason = "pool blocks are 16-byte aligned")]
        let t = p.wrapping_add(0x40).cast::<KTIMER>();
        // SAFETY: 0x40 bytes of pool hold the timer.
        unsafe { ke::KeInitializeTimerEx(t, 0) };
        // SAFETY: an initialised timer.
        unsafe { ke::KeSetTimer(t, -100_000_000, std::ptr::null_mut()) };
        free(p, b"VrfT");
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x15));
    assert!(b.rule.contains("armed timer"), "{}", b.rule);
}

unsafe extern "win64" fn nop_dpc(
    _: *mut KDPC,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
) {
}

#[test]
fn freeing_pool_that_holds_a_queued_dpc() {
    let b = bugcheck_of("queued-dpc", || {
        let p = alloc(0x40);
        #[expect(clippy::cast_ptr_alignment, reason = "pool blocks are 16-byte aligned")]
        let d = p.cast::<KDPC>();
        // SAFETY: 0x40 bytes of pool hold the DPC.
        unsafe { ke::KeInitializeDpc(d, Some(nop_dpc), std::ptr::null_mut()) };
        cpu::raise(cpu::DISPATCH_LEVEL);
        // SAFETY: an initialised DPC; queued, not run, at DISPATCH_LEVEL.
        unsafe { ke::KeInsertQueueDpc(d, std::ptr::null_mut(), std::ptr::null_mut()) };
        free(p, b"VrfT");
    });
    assert_eq!((b.code, b.params[0]), (0xC7, 1));
}

#[test]
fn raising_to_a_lower_level_and_lowering_to_a_higher_one() {
    let b = bugcheck_of("bad-raise", || {
        cpu::raise(cpu::DISPATCH_LEVEL);
        // SAFETY: the bad call under test.
        unsafe { ke::KfRaiseIrql(cpu::PASSIVE_LEVEL) };
    });
    assert_eq!(b.code, 0xC4);
    assert_eq!(&b.params[..3], &[0x30, 2, 0]);
    let b = bugcheck_of("bad-lower", || {
        // SAFETY: the bad call under test.
        unsafe { ke::KeLowerIrql(cpu::DISPATCH_LEVEL) };
    });
    assert_eq!(&b.params, &[0x31, 0, 2, 0]);
}

unsafe extern "win64" fn lowering_dpc(
    _: *mut KDPC,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
) {
    // SAFETY: the bad call under test: a DPC must not drop below DISPATCH.
    unsafe { ke::KeLowerIrql(cpu::PASSIVE_LEVEL) };
}

unsafe extern "win64" fn raising_dpc(
    _: *mut KDPC,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
) {
    // SAFETY: the bad call under test: returns above DISPATCH_LEVEL.
    unsafe { ke::KfRaiseIrql(5) };
}

fn run_dpc(routine: ndis::KDEFERRED_ROUTINE) {
    let d = Box::leak(Box::new(KDPC::zeroed()));
    // SAFETY: a leaked DPC.
    unsafe { ke::KeInitializeDpc(d, Some(routine), std::ptr::null_mut()) };
    // SAFETY: `d` was initialised just above and is leaked, so it outlives
    // its run, which happens at once (this thread is at PASSIVE_LEVEL).
    unsafe { ke::KeInsertQueueDpc(d, std::ptr::null_mut(), std::ptr::null_mut()) };
}

#[test]
fn a_dpc_must_stay_at_dispatch() {
    let b = bugcheck_of("dpc-lowers", || run_dpc(lowering_dpc));
    assert_eq!(&b.params, &[0x31, 2, 0, 1]);
    let b = bugcheck_of("dpc-raises", || run_dpc(raising_dpc));
    assert_eq!(b.code, 0xC8);
    assert_eq!(b.params[0] >> 8, (5 << 8) | 2, "current 5, expected 2");
}

#[test]
fn waiting_at_dispatch() {
    let b = bugcheck_of("wait-dispatch", || {
        let ev: *mut ndis::KEVENT = Box::leak(Box::new(ndis::KEVENT::zeroed()));
        // SAFETY: a leaked event.
        unsafe { ke::KeInitializeEvent(ev, 0, 0) };
        cpu::raise(cpu::DISPATCH_LEVEL);
        let mut t = -10_000i64;
        // SAFETY: the bad call under test.
        unsafe { ke::KeWaitForSingleObject(ev.cast(), 0, 0, 0, &raw mut t) };
    });
    assert_eq!((b.code, b.params[0], b.params[1]), (0xC4, 0x122, 2));
    let b = bugcheck_of("delay-dispatch", || {
        cpu::raise(cpu::DISPATCH_LEVEL);
        let mut t = -10_000i64;
        // SAFETY: the bad call under test.
        unsafe { ke::KeDelayExecutionThread(0, 0, &raw mut t) };
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x122));
}

#[test]
fn overlapping_memcpy() {
    let b = bugcheck_of("memcpy", || {
        let mut buf = [0u8; 16];
        let p = buf.as_mut_ptr();
        // SAFETY: the bad call under test (overlapping ranges).
        unsafe { crt::memcpy(p.wrapping_add(4), p, 8) };
    });
    assert_eq!((b.code, b.params[0], b.params[3]), (0xC4, 0xF0, 8));
}

#[test]
fn spin_lock_misuse() {
    let b = bugcheck_of("recursive-lock", || {
        let l: &'static mut KSPIN_LOCK = Box::leak(Box::new(0));
        let l = &raw mut *l;
        // SAFETY: a leaked, aligned lock.
        unsafe { ke::KeAcquireSpinLockRaiseToDpc(l) };
        // SAFETY: the bad call under test.
        unsafe { ke::KeAcquireSpinLockRaiseToDpc(l) };
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x1000));
    let b = bugcheck_of("release-unheld", || {
        let l: &'static mut KSPIN_LOCK = Box::leak(Box::new(0));
        cpu::raise(cpu::DISPATCH_LEVEL);
        // SAFETY: the bad call under test.
        unsafe { ke::KeReleaseSpinLock(l, 0) };
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x1007));
    let b = bugcheck_of("release-passive", || {
        let l: &'static mut KSPIN_LOCK = Box::leak(Box::new(0));
        // SAFETY: the bad call under test.
        unsafe { ke::KeReleaseSpinLock(l, 0) };
    });
    assert_eq!((b.code, b.params[0], b.params[1]), (0xC4, 0x32, 0));
    let b = bugcheck_of("acquire-above-dispatch", || {
        let l = new_lock() as *mut KSPIN_LOCK;
        cpu::raise(5);
        // SAFETY: the bad call under test (a spin lock at device IRQL).
        unsafe { ke::KeAcquireSpinLockRaiseToDpc(l) };
    });
    assert_eq!((b.code, b.params[0], b.params[1]), (0xC4, 0x42, 5));
}

/// The address of a leaked, aligned, free spin lock (an address, so
/// closures on other processors may carry it).
fn new_lock() -> usize {
    let l: &'static mut KSPIN_LOCK = Box::leak(Box::new(0));
    (&raw mut *l).addr()
}

/// Acquires the lock at `outer`, then the one at `inner`, and releases
/// both (last in, first out).
fn nest(outer: usize, inner: usize) {
    let (outer, inner) = (outer as *mut KSPIN_LOCK, inner as *mut KSPIN_LOCK);
    // SAFETY: leaked, aligned locks, released below in reverse order.
    let a = unsafe { ke::KeAcquireSpinLockRaiseToDpc(outer) };
    // SAFETY: as above.
    let b = unsafe { ke::KeAcquireSpinLockRaiseToDpc(inner) };
    // SAFETY: held, at the IRQL the acquire left.
    unsafe { ke::KeReleaseSpinLock(inner, b) };
    // SAFETY: held, at the IRQL the acquire left.
    unsafe { ke::KeReleaseSpinLock(outer, a) };
}

#[test]
fn lock_order_inversion_is_a_deadlock() {
    // Two code paths take A and B in opposite orders, one after the
    // other, never contending: Verifier reports the second one.
    let (a, b) = (new_lock(), new_lock());
    let bc = bugcheck_of("inversion", move || {
        nest(a, b);
        nest(b, a);
    });
    assert_eq!(
        (bc.code, bc.params),
        (0xC4, [0x1001, a as u64, b as u64, 0]),
        "{}",
        bc.rule
    );
    // The same through three locks and three processors.
    let (first, second, third) = (new_lock(), new_lock(), new_lock());
    std::thread::spawn(move || {
        cpu::enter("order-xy");
        nest(first, second);
    })
    .join()
    .expect("x then y is legal");
    std::thread::spawn(move || {
        cpu::enter("order-yz");
        nest(second, third);
    })
    .join()
    .expect("y then z is legal");
    let bc = bugcheck_of("inversion3", move || nest(third, first));
    assert_eq!(
        (bc.code, bc.params),
        (0xC4, [0x1001, first as u64, third as u64, 0]),
        "{}",
        bc.rule
    );
    assert!(bc.rule.contains("deadlock detected"), "{}", bc.rule);
}

#[test]
fn a_consistent_lock_order_is_legal_and_freed_locks_are_forgotten() {
    let (a, b) = (new_lock(), new_lock());
    std::thread::spawn(move || {
        cpu::enter("consistent");
        nest(a, b);
        nest(a, b);
    })
    .join()
    .expect("the same order twice is legal");
    assert!(ke::lock_order_edges().contains(&(a, b)));
    // A lock in pool memory leaves the graph when its block is freed, so
    // a later lock at the same address starts with no history.
    let block = alloc(16);
    // SAFETY: a fresh 16-byte pool block, aligned for a KSPIN_LOCK; zero
    // is a free lock.
    unsafe { block.cast::<KSPIN_LOCK>().write_unaligned(0) };
    let (pooled, held) = (block.addr(), new_lock());
    std::thread::spawn(move || {
        cpu::enter("pool-lock");
        nest(held, pooled);
    })
    .join()
    .expect("nesting a pool lock is legal");
    assert!(ke::lock_order_edges().contains(&(held, pooled)));
    free(block, b"VrfT");
    assert!(
        !ke::lock_order_edges()
            .iter()
            .any(|&(f, t)| f == pooled || t == pooled),
        "a freed lock stays in the lock-order graph"
    );
}

type BugCheckFn = unsafe extern "win64" fn(u32, usize, usize, usize, usize) -> !;

#[test]
fn ke_bug_check_ex_records_the_drivers_code() {
    let b = bugcheck_of("bugcheck-ex", || {
        let f =
            // SAFETY: KeBugCheckEx's thunk has this signature.
            unsafe { std::mem::transmute::<*const (), BugCheckFn>(ke::KeBugCheckEx as *const ()) };
        // SAFETY: never returns.
        unsafe { f(0xDEAD, 1, 2, 3, 4) };
    });
    assert_eq!((b.code, b.params), (0xDEAD, [1, 2, 3, 4]));
    assert!(b.rule.contains("KeBugCheckEx"), "{}", b.rule);
}

unsafe extern "win64" fn spinning_dpc(
    _: *mut KDPC,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
    _: *mut core::ffi::c_void,
) {
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// The watchdog tests change its global limits: one at a time.
static WATCHDOG: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn the_watchdog_stops_a_dpc_that_runs_too_long() {
    let _w = WATCHDOG
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    verifier::set_watchdog_limits(Duration::from_millis(200), Duration::from_secs(2));
    let start = Instant::now();
    let b = bugcheck_of("spinner", || run_dpc(spinning_dpc));
    assert_eq!((b.code, b.params[0]), (0x133, 0));
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(b.rule.contains("one DPC ran"), "{}", b.rule);
}

#[test]
fn the_watchdog_stops_a_processor_that_stays_at_dispatch() {
    let _w = WATCHDOG
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    verifier::set_watchdog_limits(Duration::from_secs(1), Duration::from_millis(300));
    let start = Instant::now();
    let b = bugcheck_of("at-dispatch", || {
        cpu::raise(cpu::DISPATCH_LEVEL);
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            std::hint::spin_loop();
        }
    });
    assert_eq!((b.code, b.params[0]), (0x133, 1));
    assert!(start.elapsed() < Duration::from_secs(5));
    verifier::set_watchdog_limits(Duration::from_secs(1), Duration::from_secs(2));
}

#[test]
fn freeing_pool_that_holds_the_dpc_of_an_armed_timer() {
    let b = bugcheck_of("timer-dpc", || {
        let p = alloc(0x40);
        #[expect(clippy::cast_ptr_alignment, reason = "pool blocks are 16-byte aligned")]
        let d = p.cast::<KDPC>();
        // SAFETY: 0x40 bytes of pool hold the DPC.
        unsafe { ke::KeInitializeDpc(d, Some(nop_dpc), std::ptr::null_mut()) };
        let t: *mut KTIMER = Box::leak(Box::new(KTIMER::zeroed()));
        // SAFETY: a leaked timer.
        unsafe { ke::KeInitializeTimerEx(t, 0) };
        // SAFETY: an initialised timer and DPC; fires in 10 s.
        unsafe { ke::KeSetTimer(t, -100_000_000, d) };
        free(p, b"VrfT");
    });
    assert_eq!((b.code, b.params[0]), (0xC7, 1));
    assert!(b.rule.contains("armed timer will queue"), "{}", b.rule);
}

/// A mapping MDL for `pages` pages of `buf`, marked locked, as the
/// driver's DMA window builds one.
fn locked_mdl(buf: *mut u8, pages: usize) -> *mut ndkpi::MDL {
    // SAFETY: computes sizes only.
    let mdl = unsafe {
        mm::IoAllocateMdl(
            buf.cast(),
            (pages * 4096) as u32,
            0,
            0,
            std::ptr::null_mut(),
        )
    };
    let pfns = ndkpi::mdl_pfn_array(mdl);
    for i in 0..pages {
        let pfn = ((mm::phys_of(buf as usize) >> 12) + i as u64) as usize;
        // SAFETY: room for `pages` PFNs.
        unsafe { pfns.wrapping_add(i).write(pfn) };
    }
    // SAFETY: our MDL.
    unsafe { (*mdl).MdlFlags |= ndkpi::MDL_PAGES_LOCKED };
    mdl
}

const NO_EXECUTE: u32 = 16 | 0x4000_0000;

fn map(mdl: *mut ndkpi::MDL, bugcheck_on_failure: u32, priority: u32) -> *mut core::ffi::c_void {
    // SAFETY: the bottle checks the MDL.
    unsafe {
        mm::MmMapLockedPagesSpecifyCache(
            mdl,
            0,
            1,
            std::ptr::null_mut(),
            bugcheck_on_failure,
            priority,
        )
    }
}

#[test]
fn mdl_misuse() {
    let b = bugcheck_of("free-mapped", || {
        let buf = alloc(8192);
        let mdl = locked_mdl(buf, 2);
        map(mdl, 0, NO_EXECUTE);
        // SAFETY: the bad call under test.
        unsafe { mm::IoFreeMdl(mdl) };
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0xB8));
    let b = bugcheck_of("map-twice", || {
        let mdl = locked_mdl(alloc(4096), 1);
        map(mdl, 0, NO_EXECUTE);
        map(mdl, 0, NO_EXECUTE);
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0xB2));
    let b = bugcheck_of("executable-mapping", || {
        map(locked_mdl(alloc(4096), 1), 0, 16);
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x2002));
    let b = bugcheck_of("bugcheck-on-failure", || {
        map(locked_mdl(alloc(4096), 1), 1, NO_EXECUTE);
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x82));
    let b = bugcheck_of("virtual-as-physical", || {
        let buf = alloc(4096);
        let mdl = locked_mdl(buf, 1);
        // The driver's classic mistake: a virtual address as a PFN source.
        // SAFETY: one PFN after the header.
        unsafe { ndkpi::mdl_pfn_array(mdl).write(buf as usize >> 12) };
        map(mdl, 0, NO_EXECUTE);
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x89));
    let b = bugcheck_of("unmap-unmapped", || {
        let buf = alloc(4096);
        let mdl = locked_mdl(buf, 1);
        // SAFETY: the bad call under test.
        unsafe { mm::MmUnmapLockedPages(buf.cast(), mdl) };
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0xB6));
    let b = bugcheck_of("free-locked", || {
        // SAFETY: the bad call under test: pages still marked locked.
        unsafe { mm::IoFreeMdl(locked_mdl(alloc(4096), 1)) };
    });
    assert_eq!((b.code, b.params[3]), (0xCB, 1));
}

unsafe extern "win64" fn raising_completion(
    _: *mut ndis::DEVICE_OBJECT,
    _: *mut ndis::IRP,
    _: *mut core::ffi::c_void,
) -> i32 {
    cpu::raise(5);
    ndis::STATUS_MORE_PROCESSING_REQUIRED
}

unsafe extern "win64" fn finishing_completion(
    _: *mut ndis::DEVICE_OBJECT,
    _: *mut ndis::IRP,
    _: *mut core::ffi::c_void,
) -> i32 {
    0
}

fn irp_with(routine: ndis::IO_COMPLETION_ROUTINE) -> *mut ndis::IRP {
    // SAFETY: one stack location.
    let irp = unsafe { io::IoAllocateIrp(1, 0) };
    // SAFETY: a fresh IRP.
    let next = unsafe { (*irp).next_stack_location() };
    // SAFETY: its only stack location.
    let loc = unsafe { &mut *next };
    loc.CompletionRoutine = Some(routine);
    loc.Control = ndis::SL_INVOKE_ON_SUCCESS | ndis::SL_INVOKE_ON_ERROR;
    irp
}

#[test]
fn irp_completion_rules() {
    let b = bugcheck_of("completion-irql", || {
        let irp = irp_with(raising_completion);
        // SAFETY: the next location was filled.
        unsafe { io::complete_as_lower_driver(irp, 0, 0) };
    });
    assert_eq!(
        (b.code, b.params[0], b.params[2], b.params[3]),
        (0xC4, 0xFA, 0, 5)
    );
    let b = bugcheck_of("completion-falls-through", || {
        let irp = irp_with(finishing_completion);
        // SAFETY: the next location was filled.
        unsafe { io::complete_as_lower_driver(irp, 0, 0) };
    });
    assert_eq!(b.code, 0xC9);
    let b = bugcheck_of("irp-as-pool", || {
        let irp = irp_with(finishing_completion);
        free(irp.cast(), b"VrfT");
    });
    assert_eq!((b.code, b.params[0]), (0xC4, 0x105));
}

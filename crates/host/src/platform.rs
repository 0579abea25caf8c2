//! The provider's [`Platform`] for Linux user space, checked.
//!
//! Kernel facilities are simulated just enough to run the provider in a
//! process and to catch its mistakes the way Driver Verifier would (the
//! rules are in [`crate::checker`]; a violation is recorded on the instance
//! and, by default, panics like a bugcheck):
//!
//! * **IRQL** is a thread-local level (PASSIVE or DISPATCH). Paged-pool
//!   allocations, blocking waits ([`Platform::wait_briefly`]) and
//!   `PASSIVE_LEVEL`-only functions ([`Platform::require_passive`]) are
//!   refused at DISPATCH.
//! * **Spin locks**: each thread's held locks form a stack; acquiring
//!   below DISPATCH, releasing out of order, re-acquiring, nesting a class
//!   not declared nestable and acquiring two classes in both orders (a
//!   process-wide order graph) are violations, and so is calling into the
//!   consumer ([`Platform::callout_begin`]) with a lock held.
//! * **Pool**: every charge is counted per 4-character tag so a test can
//!   assert that nothing is outstanding after it closed everything
//!   ([`HostPlatform::outstanding`], [`HostPlatform::check_no_leaks`]); the
//!   Nth charge can be made to fail on purpose
//!   ([`HostPlatform::fail_charge_after`]) to simulate low memory.
//! * **Memory**: logical addresses are host virtual addresses and an MDL's
//!   page frame number is `va >> 12`, so DMA and inline copies are plain
//!   memory copies.
//!
//! Tests that assert on pool accounting use their own instance
//! ([`HostPlatform::leaked`]) because tests in one binary run in parallel;
//! adapters opened by configuration string get the instance of their
//! device's address ([`HostPlatform::for_device`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicI32, AtomicUsize};

use hwq::DmaAccess;
use hwq::lock::{LockToken, SpinLockOps};
use provider::platform::{Irql, LockClass, Platform, PoolTag, PoolType};

use crate::checker::{LockTracker, Mode, Rule, Violation, Violations, locks_held};

mod devices;
mod dma;
mod pool;
mod waits;

pub use devices::DeviceLease;
pub use dma::HostDma;
pub use pool::PoolUsage;

thread_local! {
    static IRQL: Cell<Irql> = const { Cell::new(Irql::Passive) };
    static CALLOUT_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// When this thread's current run of back-to-back waits began, and
    /// when it last waited (a gap ends the run).
    static WAITING: Cell<Option<(Instant, Instant)>> = const { Cell::new(None) };
}

/// The Linux user-space platform.
#[derive(Debug)]
pub struct HostPlatform {
    pool: Mutex<Vec<PoolUsage>>,
    charges: AtomicU64,
    /// Charge number (1-based, counted from `charges` at arming time) that
    /// fails; 0: injection off.
    fail_at: AtomicU64,
    failures: AtomicU64,
    /// Devices running on this instance ([`DeviceLease`]).
    devices: AtomicU64,
    /// [`waits::CLOSE_WAIT_LIMIT`] unless changed, in milliseconds.
    close_wait_limit_ms: AtomicU64,
    /// The tag of the last charge refused by fault injection.
    last_refused: Mutex<Option<PoolTag>>,
    violations: Violations,
    dma: HostDma,
}

static GLOBAL: HostPlatform = HostPlatform::new();

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Default for HostPlatform {
    fn default() -> Self {
        Self::new()
    }
}

impl HostPlatform {
    /// A platform with empty accounting, no fault injection, and
    /// violations handled as bugchecks.
    pub const fn new() -> Self {
        Self::with_mode(Mode::Bugcheck)
    }

    /// A platform handling violations as `mode` says.
    pub const fn with_mode(mode: Mode) -> Self {
        Self {
            pool: Mutex::new(Vec::new()),
            charges: AtomicU64::new(0),
            fail_at: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            devices: AtomicU64::new(0),
            close_wait_limit_ms: AtomicU64::new(waits::CLOSE_WAIT_LIMIT.as_millis() as u64),
            last_refused: Mutex::new(None),
            violations: Violations::new(mode),
            // SAFETY: `Platform::dma` serves the provider and the devices
            // it drives, which pass only addresses of memory consumers
            // registered (live until deregistered, the NDK contract) or of
            // provider buffers they own.
            dma: unsafe { HostDma::new() },
        }
    }

    /// The process-wide instance.
    pub fn global() -> &'static Self {
        &GLOBAL
    }

    /// Makes the device's locks (softrnic's) the process-wide instance's
    /// checked spin locks, so its lock-order graph and IRQL rules cover
    /// them with the provider's, as Driver Verifier does in the kernel.
    /// Called before any device is made; later calls do nothing.
    pub fn check_device_locks() {
        softrnic::sync::use_lock_ops(&GLOBAL);
    }

    /// A fresh instance that lives for the rest of the process (one per
    /// test, so pool accounting is not shared with parallel tests).
    pub fn leaked() -> &'static Self {
        Box::leak(Box::new(Self::new()))
    }

    /// A fresh instance that records violations without panicking, for
    /// tests that break a rule on purpose.
    pub fn recording() -> &'static Self {
        Box::leak(Box::new(Self::with_mode(Mode::Record)))
    }

    /// Violations seen so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.violations.list()
    }

    /// Violations seen so far, emptying the list.
    pub fn take_violations(&self) -> Vec<Violation> {
        self.violations.take()
    }

    /// Whether a violation of `rule` was seen.
    pub fn saw(&self, rule: Rule) -> bool {
        self.violations.saw(rule)
    }

    /// What this instance does on a violation.
    pub fn mode(&self) -> Mode {
        self.violations.mode()
    }

    /// Changes what this instance does on a violation.
    pub fn set_mode(&self, mode: Mode) {
        self.violations.set_mode(mode);
    }

    /// Panics (with every violation listed) if any rule was broken on this
    /// instance. Test teardown calls it, outside any `extern` function.
    /// The calling thread must also be back at `PASSIVE_LEVEL` with no
    /// provider lock held (an entry point that returned raised, or with a
    /// lock, leaks it into its caller).
    #[track_caller]
    pub fn assert_no_violations(&self) {
        assert_eq!(
            (Self::irql(), locks_held()),
            (Irql::Passive, 0),
            "checked platform: the thread is left raised or holding {:?}",
            LockTracker::held_names()
        );
        let seen = self.violations();
        assert!(
            seen.is_empty(),
            "checked platform violations:\n{}",
            seen.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    /// [`HostPlatform::assert_no_violations`], and no pool outstanding.
    #[track_caller]
    pub fn assert_clean(&self) {
        self.assert_no_violations();
        let left = self.outstanding();
        assert!(left.is_empty(), "pool not released: {left:?}");
    }

    /// The current thread's simulated IRQL.
    pub fn irql() -> Irql {
        IRQL.with(Cell::get)
    }

    /// Provider locks the current thread holds.
    pub fn locks_held() -> u32 {
        u32::try_from(locks_held()).unwrap_or(u32::MAX)
    }

    /// Runs `f` at `DISPATCH_LEVEL` on this thread, as a DPC would (for
    /// tests that call NDK functions at DISPATCH_LEVEL).
    pub fn at_dispatch<R>(&self, f: impl FnOnce() -> R) -> R {
        let old = self.raise_to_dispatch();
        let r = f();
        self.lower_irql(old);
        r
    }

    /// [`Platform::lock_acquired`] with every check.
    #[cold]
    #[inline(never)]
    fn lock_acquired_checked(&self, class: &'static LockClass, lock: usize) {
        if Self::irql() != Irql::Dispatch {
            self.violations.report(
                Rule::SpinLockIrql,
                format!(
                    "spin lock {} acquired at PASSIVE_LEVEL (raise to DISPATCH_LEVEL first)",
                    class.name
                ),
            );
        }
        self.report_all(LockTracker::acquired(class, lock));
    }

    /// [`Platform::lock_released`] with every check.
    #[cold]
    #[inline(never)]
    fn lock_released_checked(&self, class: &'static LockClass, lock: usize) {
        if Self::irql() != Irql::Dispatch {
            self.violations.report(
                Rule::SpinLockIrql,
                format!(
                    "spin lock {} released at PASSIVE_LEVEL (held locks keep DISPATCH_LEVEL)",
                    class.name
                ),
            );
        }
        self.report_all(LockTracker::released(class, lock));
    }

    fn report_all(&self, found: Vec<(Rule, String)>) {
        for (rule, detail) in found {
            self.violations.report(rule, detail);
        }
    }
}

fn irql_name(irql: Irql) -> &'static str {
    match irql {
        Irql::Passive => "PASSIVE_LEVEL",
        Irql::Dispatch => "DISPATCH_LEVEL",
    }
}

/// The device's locks: the provider's spin lock ([`Platform::acquire_spin_lock`]),
/// with its IRQL raise and lock checks.
impl SpinLockOps for HostPlatform {
    fn acquire(&self, word: &AtomicUsize, class: &'static LockClass) -> LockToken {
        self.acquire_spin_lock(word, class)
    }

    fn release(&self, word: &AtomicUsize, class: &'static LockClass, token: LockToken) {
        self.release_spin_lock(word, class, token);
    }

    // Reader/writer locks: the same raise and the same checks (IRQL,
    // release order, re-acquire, class nesting, the order graph) as the
    // exclusive ones, a shared hold counting as a hold: writer-preferring,
    // the host's form can deadlock the way two nested readers can.

    fn acquire_shared(&self, word: &AtomicI32, class: &'static LockClass) -> LockToken {
        let old = self.raise_to_dispatch();
        hwq::lock::rw::read_lock(word);
        self.lock_acquired(class, core::ptr::from_ref(word).addr());
        LockToken(u32::from(old == Irql::Dispatch))
    }

    fn release_shared(&self, word: &AtomicI32, class: &'static LockClass, token: LockToken) {
        self.lock_released(class, core::ptr::from_ref(word).addr());
        hwq::lock::rw::read_unlock(word);
        self.lower_irql(irql_of(token));
    }

    fn acquire_exclusive(&self, word: &AtomicI32, class: &'static LockClass) -> LockToken {
        let old = self.raise_to_dispatch();
        hwq::lock::rw::write_lock(word);
        self.lock_acquired(class, core::ptr::from_ref(word).addr());
        LockToken(u32::from(old == Irql::Dispatch))
    }

    fn release_exclusive(&self, word: &AtomicI32, class: &'static LockClass, token: LockToken) {
        self.lock_released(class, core::ptr::from_ref(word).addr());
        hwq::lock::rw::write_unlock(word);
        self.lower_irql(irql_of(token));
    }
}

/// The IRQL a reader/writer acquire's token says it came from.
fn irql_of(token: LockToken) -> Irql {
    if token.0 == 0 {
        Irql::Passive
    } else {
        Irql::Dispatch
    }
}

impl Platform for HostPlatform {
    fn current_irql(&self) -> Irql {
        Self::irql()
    }

    fn raise_to_dispatch(&self) -> Irql {
        IRQL.with(|l| l.replace(Irql::Dispatch))
    }

    fn lower_irql(&self, old: Irql) {
        if Self::irql() != Irql::Dispatch {
            self.violations.report(
                Rule::IrqlMismatch,
                format!(
                    "lower_irql to {} at PASSIVE_LEVEL, without a raise",
                    irql_name(old)
                ),
            );
        }
        if old == Irql::Passive && locks_held() > 0 {
            self.violations.report(
                Rule::SpinLockIrql,
                format!(
                    "IRQL lowered to PASSIVE_LEVEL while holding spin lock(s) {}",
                    LockTracker::held_names().join(", ")
                ),
            );
        }
        IRQL.with(|l| l.set(old));
    }

    fn pool_charge(&self, tag: PoolTag, pool: PoolType, bytes: usize) -> bool {
        if !tag.0.iter().all(u8::is_ascii_graphic) {
            self.violations.report(
                Rule::BadPoolTag,
                format!("pool tag {:02x?} is not four printable characters", tag.0),
            );
        }
        if pool == PoolType::Paged && Self::irql() == Irql::Dispatch {
            self.violations.report(
                Rule::PagedPoolAtDispatch,
                format!(
                    "paged pool allocation of {bytes} bytes (tag {}) at DISPATCH_LEVEL",
                    tag.as_str()
                ),
            );
        }
        let n = self.charges.fetch_add(1, Ordering::SeqCst) + 1;
        if self
            .fail_at
            .compare_exchange(n, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.failures.fetch_add(1, Ordering::SeqCst);
            *self
                .last_refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(tag);
            return false;
        }
        self.account(tag, 1, i64::try_from(bytes).unwrap_or(i64::MAX));
        true
    }

    fn pool_release(&self, tag: PoolTag, _pool: PoolType, bytes: usize) {
        self.account(tag, -1, -i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    fn lock_acquired(&self, class: &'static LockClass, lock: usize) {
        // The common case, a thread's only lock at DISPATCH_LEVEL, has
        // nothing to report: recorded without the checks' frame.
        if Self::irql() == Irql::Dispatch && LockTracker::acquired_first(class, lock) {
            return;
        }
        self.lock_acquired_checked(class, lock);
    }

    fn lock_released(&self, class: &'static LockClass, lock: usize) {
        if Self::irql() == Irql::Dispatch && LockTracker::released_last(lock) {
            return;
        }
        self.lock_released_checked(class, lock);
    }

    fn require_passive(&self, what: &'static str) {
        // Entry to a function that may block: any wait from here on is a
        // new one for the hang guard.
        WAITING.with(|w| w.set(None));
        if Self::irql() != Irql::Passive {
            let held = LockTracker::held_names();
            self.violations.report(
                Rule::PassiveOnlyAtDispatch,
                if held.is_empty() {
                    format!("{what} called at DISPATCH_LEVEL")
                } else {
                    format!(
                        "{what} called at DISPATCH_LEVEL, holding spin lock(s) {}",
                        held.join(", ")
                    )
                },
            );
        }
    }

    fn callout_begin(&self) {
        if locks_held() > 0 {
            self.violations.report(
                Rule::CalloutUnderLock,
                format!(
                    "consumer callback called with provider lock(s) {} held",
                    LockTracker::held_names().join(", ")
                ),
            );
        }
        CALLOUT_DEPTH.with(|d| d.set(d.get() + 1));
    }

    fn callout_end(&self) {
        CALLOUT_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        if locks_held() > 0 {
            self.violations.report(
                Rule::CalloutUnderLock,
                format!(
                    "consumer callback returned with provider lock(s) {} held",
                    LockTracker::held_names().join(", ")
                ),
            );
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn pfn_to_logical(&self, pfn: u64) -> u64 {
        pfn << 12
    }

    fn logical_of(&self, va: usize, _len: usize) -> Option<u64> {
        Some(va as u64)
    }

    fn dma_map(&self, _owner: usize, _pages: &mut dyn ExactSizeIterator<Item = u64>) -> bool {
        // Logical addresses are host virtual addresses here: the device
        // reaches them without a mapping.
        true
    }

    fn dma_unmap(&self, _owner: usize) {}

    fn copy_from_va(&self, va: u64, buf: &mut [u8]) -> bool {
        self.dma.read(va, buf).is_ok()
    }

    fn dma(&self) -> &dyn DmaAccess {
        &self.dma
    }

    fn wait_briefly(&self) {
        if Self::irql() != Irql::Passive {
            let held = LockTracker::held_names();
            self.violations.report(
                Rule::BlockingAtDispatch,
                if held.is_empty() {
                    "blocking wait at DISPATCH_LEVEL".to_owned()
                } else {
                    format!(
                        "blocking wait at DISPATCH_LEVEL holding spin lock(s) {}",
                        held.join(", ")
                    )
                },
            );
        }
        self.check_wait_length();
        std::thread::sleep(Duration::from_micros(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwq::DmaFault;

    const TAG: PoolTag = PoolTag(*b"Test");

    /// The device's locks report to the checker once the host installs
    /// its checked spin lock for them: nesting two records an edge of the
    /// process-wide lock-order graph, and the holder is at DISPATCH_LEVEL.
    #[test]
    fn device_locks_are_checked_spin_locks() {
        static OUTER: LockClass = LockClass::new("test.device_outer");
        static INNER: LockClass = LockClass::new("test.device_inner");
        HostPlatform::check_device_locks();
        let outer = softrnic::sync::Mutex::new(&OUTER, 1);
        let inner = softrnic::sync::Mutex::new(&INNER, 2);
        {
            let a = outer.lock();
            let b = inner.lock();
            assert_eq!(*a + *b, 3);
            assert_eq!(HostPlatform::irql(), Irql::Dispatch);
            assert_eq!(
                LockTracker::held_names(),
                ["test.device_outer", "test.device_inner"]
            );
        }
        assert_eq!(HostPlatform::irql(), Irql::Passive);
        assert!(
            crate::checker::lock_order_edges()
                .contains(&("test.device_outer", "test.device_inner"))
        );
    }

    #[test]
    fn accounting_balances_per_tag() {
        let p = HostPlatform::leaked();
        assert!(p.pool_charge(TAG, PoolType::NonPaged, 100));
        assert!(p.pool_charge(TAG, PoolType::NonPaged, 28));
        assert_eq!(
            p.outstanding(),
            vec![PoolUsage {
                tag: TAG,
                count: 2,
                bytes: 128
            }]
        );
        p.pool_release(TAG, PoolType::NonPaged, 100);
        p.pool_release(TAG, PoolType::NonPaged, 28);
        assert!(p.outstanding().is_empty());
    }

    #[test]
    fn nth_charge_fails_once() {
        let p = HostPlatform::leaked();
        p.fail_charge_after(2);
        assert!(p.pool_charge(TAG, PoolType::NonPaged, 1));
        assert!(
            !p.pool_charge(TAG, PoolType::NonPaged, 1),
            "second charge from now fails"
        );
        assert!(p.pool_charge(TAG, PoolType::NonPaged, 1), "only once");
        assert_eq!(p.injected_failures(), 1);
        assert_eq!(
            p.outstanding()[0].count,
            2,
            "a refused charge is not counted"
        );
    }

    #[test]
    fn irql_raise_and_lower_pair() {
        let p = HostPlatform::leaked();
        assert_eq!(p.current_irql(), Irql::Passive);
        let old = p.raise_to_dispatch();
        assert_eq!((old, p.current_irql()), (Irql::Passive, Irql::Dispatch));
        let inner = p.raise_to_dispatch();
        p.lower_irql(inner);
        assert_eq!(
            p.current_irql(),
            Irql::Dispatch,
            "nested raise keeps DISPATCH"
        );
        p.lower_irql(old);
        assert_eq!(p.current_irql(), Irql::Passive);
    }

    #[test]
    #[should_panic(expected = "CALLBACK_WITH_SPIN_LOCK_HELD")]
    fn callout_under_a_lock_bugchecks() {
        static CLASS: LockClass = LockClass::new("test");
        let p = HostPlatform::leaked();
        let _old = p.raise_to_dispatch();
        p.lock_acquired(&CLASS, 1);
        p.callout_begin();
    }

    #[test]
    fn dma_and_inline_copies_use_host_addresses() {
        let p = HostPlatform::leaked();
        let src = *b"payload!";
        let mut dst = [0u8; 8];
        assert!(p.copy_from_va(src.as_ptr() as u64, &mut dst));
        assert_eq!(&dst, b"payload!");
        let mut sink = [0u8; 4];
        p.dma().write(sink.as_mut_ptr() as u64, b"abcd").unwrap();
        assert_eq!(&sink, b"abcd");
        assert!(!p.copy_from_va(0, &mut dst), "null is refused");
        assert_eq!(p.dma().read(0, &mut dst), Err(DmaFault { addr: 0, len: 8 }));
        assert_eq!(p.pfn_to_logical(0x1234), 0x123_4000);
    }
}

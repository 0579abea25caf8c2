//! The provider's [`Platform`] for Linux user space.
//!
//! Kernel facilities are simulated just enough to run the provider in a
//! process and to catch its mistakes the way Driver Verifier would:
//!
//! * **IRQL** is a thread-local level; raising and lowering must pair up.
//! * **Locks**: a thread-local count of provider locks held; calling into the
//!   consumer ([`Platform::callout_begin`]) with a lock held is a provider
//!   bug and panics (a bugcheck, in kernel terms).
//! * **Pool**: every charge is counted per tag so a test can assert that
//!   nothing is outstanding after it closed everything
//!   ([`HostPlatform::outstanding`]); a charge can be made to fail on
//!   purpose ([`HostPlatform::fail_charge_after`]).
//! * **Memory**: logical addresses are host virtual addresses and an MDL's
//!   page frame number is `va >> 12`, so DMA and inline copies are plain
//!   memory copies.
//!
//! Tests that assert on pool accounting should use their own instance
//! ([`HostPlatform::leaked`]) because tests in one binary run in parallel.

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hwq::{DmaAccess, DmaFault};
use provider::platform::{Irql, LockClass, Platform, PoolTag};

thread_local! {
    static IRQL: Cell<Irql> = const { Cell::new(Irql::Passive) };
    static LOCKS_HELD: Cell<u32> = const { Cell::new(0) };
    static CALLOUT_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Outstanding pool use under one tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolUsage {
    /// The tag.
    pub tag: PoolTag,
    /// Charges not yet released.
    pub count: i64,
    /// Bytes not yet released.
    pub bytes: i64,
}

/// Device access to host memory: a logical address is a host virtual
/// address.
#[derive(Debug, Default)]
pub struct HostDma;

impl HostDma {
    fn check(addr: u64, len: usize) -> Result<(), DmaFault> {
        // Null and wrapping ranges are never live consumer memory.
        if addr == 0 || addr.checked_add(len as u64).is_none() {
            return Err(DmaFault { addr, len });
        }
        Ok(())
    }
}

impl DmaAccess for HostDma {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        Self::check(addr, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        // SAFETY: the host contract: logical addresses handed to the device
        // are virtual addresses of live memory the consumer registered (or
        // provider memory), valid for `buf.len()` bytes; `buf` is our own
        // buffer and cannot overlap it.
        unsafe {
            core::ptr::copy_nonoverlapping(addr as usize as *const u8, buf.as_mut_ptr(), buf.len());
        };
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        Self::check(addr, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `read`: the consumer registered this range for the
        // device to write, and it stays live while the work request runs.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len());
        };
        Ok(())
    }
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
    /// A platform with empty accounting and no fault injection.
    pub const fn new() -> Self {
        Self {
            pool: Mutex::new(Vec::new()),
            charges: AtomicU64::new(0),
            fail_at: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            dma: HostDma,
        }
    }

    /// The process-wide instance.
    pub fn global() -> &'static Self {
        &GLOBAL
    }

    /// A fresh instance that lives for the rest of the process (one per
    /// test, so pool accounting is not shared with parallel tests).
    pub fn leaked() -> &'static Self {
        Box::leak(Box::new(Self::new()))
    }

    /// Pool use not yet released, per tag (tags with nothing outstanding
    /// are left out).
    pub fn outstanding(&self) -> Vec<PoolUsage> {
        self.pool
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|u| u.count != 0 || u.bytes != 0)
            .copied()
            .collect()
    }

    /// Charges made so far (successful or not).
    pub fn charges(&self) -> u64 {
        self.charges.load(Ordering::SeqCst)
    }

    /// Charges refused by fault injection so far.
    pub fn injected_failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }

    /// Makes the `n`th charge from now fail (`n` >= 1), once. `0` turns
    /// injection off.
    pub fn fail_charge_after(&self, n: u64) {
        let at = if n == 0 { 0 } else { self.charges() + n };
        self.fail_at.store(at, Ordering::SeqCst);
    }

    /// The current thread's simulated IRQL.
    pub fn irql() -> Irql {
        IRQL.with(Cell::get)
    }

    /// Provider locks the current thread holds.
    pub fn locks_held() -> u32 {
        LOCKS_HELD.with(Cell::get)
    }

    /// Runs `f` at `DISPATCH_LEVEL` on this thread, as a DPC would (for
    /// tests that call NDK functions at DISPATCH_LEVEL).
    pub fn at_dispatch<R>(&self, f: impl FnOnce() -> R) -> R {
        let old = self.raise_to_dispatch();
        let r = f();
        self.lower_irql(old);
        r
    }

    fn account(&self, tag: PoolTag, count: i64, bytes: i64) {
        let mut pool = self
            .pool
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(u) = pool.iter_mut().find(|u| u.tag == tag) {
            u.count += count;
            u.bytes += bytes;
        } else {
            pool.push(PoolUsage { tag, count, bytes });
        }
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
        IRQL.with(|l| {
            assert_eq!(
                l.get(),
                Irql::Dispatch,
                "lower_irql without a raise (IRQL_NOT_LESS_OR_EQUAL)"
            );
            l.set(old);
        });
    }

    fn pool_charge(&self, tag: PoolTag, bytes: usize) -> bool {
        let n = self.charges.fetch_add(1, Ordering::SeqCst) + 1;
        if self
            .fail_at
            .compare_exchange(n, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.failures.fetch_add(1, Ordering::SeqCst);
            return false;
        }
        self.account(tag, 1, bytes as i64);
        true
    }

    fn pool_release(&self, tag: PoolTag, bytes: usize) {
        self.account(tag, -1, -(bytes as i64));
    }

    fn lock_acquired(&self, class: &'static LockClass) {
        assert_eq!(
            Self::irql(),
            Irql::Dispatch,
            "spin lock {} held below DISPATCH_LEVEL",
            class.name
        );
        LOCKS_HELD.with(|n| n.set(n.get() + 1));
    }

    fn lock_released(&self, class: &'static LockClass) {
        LOCKS_HELD.with(|n| {
            assert!(n.get() > 0, "release of {} which is not held", class.name);
            n.set(n.get() - 1);
        });
    }

    fn callout_begin(&self) {
        let held = Self::locks_held();
        assert_eq!(
            held, 0,
            "consumer callback called with {held} provider lock(s) held"
        );
        CALLOUT_DEPTH.with(|d| d.set(d.get() + 1));
    }

    fn callout_end(&self) {
        CALLOUT_DEPTH.with(|d| {
            assert!(d.get() > 0, "callout_end without callout_begin");
            d.set(d.get() - 1);
        });
        let held = Self::locks_held();
        assert_eq!(
            held, 0,
            "consumer callback returned holding {held} provider lock(s)"
        );
    }

    fn now_ns(&self) -> u64 {
        epoch().elapsed().as_nanos() as u64
    }

    fn pfn_to_logical(&self, pfn: u64) -> u64 {
        pfn << 12
    }

    fn logical_of(&self, va: usize, _len: usize) -> Option<u64> {
        Some(va as u64)
    }

    fn copy_from_va(&self, va: u64, buf: &mut [u8]) -> bool {
        self.dma.read(va, buf).is_ok()
    }

    fn dma(&self) -> &dyn DmaAccess {
        &self.dma
    }

    fn wait_briefly(&self) {
        assert_eq!(Self::irql(), Irql::Passive, "waiting at DISPATCH_LEVEL");
        std::thread::sleep(Duration::from_micros(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: PoolTag = PoolTag(*b"Test");

    #[test]
    fn accounting_balances_per_tag() {
        let p = HostPlatform::leaked();
        assert!(p.pool_charge(TAG, 100));
        assert!(p.pool_charge(TAG, 28));
        assert_eq!(
            p.outstanding(),
            vec![PoolUsage {
                tag: TAG,
                count: 2,
                bytes: 128
            }]
        );
        p.pool_release(TAG, 100);
        p.pool_release(TAG, 28);
        assert!(p.outstanding().is_empty());
    }

    #[test]
    fn nth_charge_fails_once() {
        let p = HostPlatform::leaked();
        p.fail_charge_after(2);
        assert!(p.pool_charge(TAG, 1));
        assert!(!p.pool_charge(TAG, 1), "second charge from now fails");
        assert!(p.pool_charge(TAG, 1), "only once");
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
    #[should_panic(expected = "provider lock(s) held")]
    fn callout_under_a_lock_is_caught() {
        static CLASS: LockClass = LockClass::new("test");
        let p = HostPlatform::leaked();
        let _old = p.raise_to_dispatch();
        p.lock_acquired(&CLASS);
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

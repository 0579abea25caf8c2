//! The provider's [`Platform`] in the Windows kernel.
//!
//! * IRQL: the kernel's (`KfRaiseIrql`/`KeLowerIrql`, [`super::irql`]).
//!   The provider only distinguishes PASSIVE from DISPATCH, so a caller at
//!   APC_LEVEL is `Irql::Passive` to it; the exact level the outermost
//!   raise came from is kept per processor ([`SavedIrql`]) and restored by
//!   the matching lower, so an APC_LEVEL caller returns at APC_LEVEL.
//! * Pool: the provider's charges are counted (bytes and blocks
//!   outstanding) for the debugger; the memory itself (paged or not: all
//!   of it is non-paged here) comes from the global allocator ([`super::kit::memory`], tag `RsNk`), and Driver Verifier's
//!   low-resources simulation is what injects failures.
//! * Spin locks: a provider lock, and a device lock ([`KernelSpinLocks`],
//!   installed for softrnic in `DriverEntry`), is a `KSPIN_LOCK` taken with
//!   `KeAcquireSpinLockRaiseToDpc` and released with `KeReleaseSpinLock`
//!   (what `KeAcquireSpinLock` expands to), so Driver Verifier checks each
//!   one's IRQL and its order against every other driver lock. A device's
//!   reader/writer lock is an `EX_SPIN_LOCK` (`ExAcquireSpinLockShared` /
//!   `ExAcquireSpinLockExclusive` and their releases), checked the same.
//! * Locks and callouts: debug builds check that provider locks are taken
//!   at DISPATCH_LEVEL and that no consumer callback runs with one held
//!   (a per-processor count is exact here: a lock holder cannot migrate at
//!   DISPATCH_LEVEL); release builds leave that to Driver Verifier.
//! * Memory: logical = physical ([`super::dma`]); registrations are
//!   mapped for the device when they are made ([`super::dma_map`]).

use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU8, AtomicU32, AtomicUsize, Ordering};

use hwq::DmaAccess;
use hwq::lock::SpinLockOps;
use ndis::{
    DISPATCH_LEVEL, ExAcquireSpinLockExclusive, ExAcquireSpinLockShared,
    ExReleaseSpinLockExclusive, ExReleaseSpinLockShared, KIRQL, KeAcquireSpinLockRaiseToDpc,
    KeDelayExecutionThread, KeGetCurrentProcessorNumberEx, KeReleaseSpinLock, KernelMode,
    MmGetPhysicalAddress, PASSIVE_LEVEL,
};
use ndkpi::{PAGE_SHIFT, PAGE_SIZE};
use provider::platform::{Irql, LockClass, LockToken, Platform, PoolTag, PoolType};

use super::{clock, dma::KernelDma, dma_map::MAPPINGS, irql};

/// Processors whose provider-lock count is tracked in debug builds.
const TRACKED_CPUS: usize = 64;

/// Bound of a system-wide processor index (`KeGetCurrentProcessorNumberEx`):
/// `MAXIMUM_GROUPS` (32 on x64, the size of `KAFFINITY_EX`) times
/// `MAXIMUM_PROC_PER_GROUP` (64).
const MAX_PROCESSORS: usize = 32 * 64;

/// The IRQL each processor ran at before the provider's outermost raise
/// to DISPATCH_LEVEL that is still in effect there.
///
/// Why per processor is exact: between a raise from below DISPATCH_LEVEL
/// and its matching lower, the raising thread stays at DISPATCH_LEVEL on
/// that processor (no preemption, no migration), and nothing else that
/// runs there meanwhile (DPCs, interrupts) starts below DISPATCH_LEVEL, so
/// nothing else can record a level for it. Nested raises start at
/// DISPATCH_LEVEL and leave the entry alone.
struct SavedIrql([AtomicU8; MAX_PROCESSORS]);

impl SavedIrql {
    const fn new() -> Self {
        Self([const { AtomicU8::new(PASSIVE_LEVEL) }; MAX_PROCESSORS])
    }

    /// This processor's entry; call at DISPATCH_LEVEL only (so the
    /// processor cannot change under the caller). `None` for an index
    /// past [`MAX_PROCESSORS`], which no Windows release hands out.
    fn mine(&self) -> Option<&AtomicU8> {
        // SAFETY: any IRQL; a null PROCESSOR_NUMBER pointer is allowed.
        let cpu = unsafe { KeGetCurrentProcessorNumberEx(core::ptr::null_mut()) };
        self.0.get(cpu as usize)
    }
}

impl core::fmt::Debug for SavedIrql {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SavedIrql").finish_non_exhaustive()
    }
}

/// The kernel platform. One instance lives for the driver's life.
#[derive(Debug)]
pub struct KernelPlatform {
    dma: KernelDma,
    pool_bytes: AtomicI64,
    pool_blocks: AtomicI64,
    /// Provider locks held, by processor number modulo [`TRACKED_CPUS`]
    /// (debug builds).
    locks_held: [AtomicU32; TRACKED_CPUS],
    /// Where each processor's outermost provider raise came from.
    saved_irql: SavedIrql,
}

impl KernelPlatform {
    /// A platform over `dma`.
    pub fn new(dma: KernelDma) -> Self {
        Self {
            dma,
            pool_bytes: AtomicI64::new(0),
            pool_blocks: AtomicI64::new(0),
            locks_held: [const { AtomicU32::new(0) }; TRACKED_CPUS],
            saved_irql: SavedIrql::new(),
        }
    }

    /// Provider pool outstanding: (blocks, bytes).
    pub fn pool_outstanding(&self) -> (i64, i64) {
        (
            self.pool_blocks.load(Ordering::Relaxed),
            self.pool_bytes.load(Ordering::Relaxed),
        )
    }

    /// This processor's lock counter (only meaningful at DISPATCH_LEVEL).
    fn my_locks(&self) -> &AtomicU32 {
        // SAFETY: any IRQL; a null PROCESSOR_NUMBER pointer is allowed.
        let cpu = unsafe { ndis::KeGetCurrentProcessorNumberEx(core::ptr::null_mut()) };
        &self.locks_held[cpu as usize % TRACKED_CPUS]
    }
}

/// Kernel spin locks over lock words: `KeAcquireSpinLockRaiseToDpc` and
/// `KeReleaseSpinLock`, the token being the IRQL before the acquire.
#[derive(Debug)]
pub struct KernelSpinLocks;

impl SpinLockOps for KernelSpinLocks {
    fn acquire(&self, word: &AtomicUsize, _class: &'static LockClass) -> LockToken {
        // SAFETY: `word` is a KSPIN_LOCK (an aligned ULONG_PTR, zero when
        // free) inside a lock that outlives its guard; the kernel changes
        // it only atomically, as `AtomicUsize` expects; the driver takes
        // its locks at or below DISPATCH_LEVEL.
        let old = unsafe { KeAcquireSpinLockRaiseToDpc(word.as_ptr()) };
        LockToken(u32::from(old))
    }

    fn release(&self, word: &AtomicUsize, _class: &'static LockClass, token: LockToken) {
        let old = KIRQL::try_from(token.0).unwrap_or(DISPATCH_LEVEL);
        // SAFETY: this processor holds the lock (the guard releasing it
        // was made by `acquire` here, and a holder cannot migrate at
        // DISPATCH_LEVEL); `old` is the IRQL its acquire returned.
        unsafe { KeReleaseSpinLock(word.as_ptr(), old) };
    }

    fn acquire_shared(&self, word: &AtomicI32, _class: &'static LockClass) -> LockToken {
        // SAFETY: `word` is an EX_SPIN_LOCK (an aligned LONG, zero when
        // free) inside a lock that outlives its guard, changed only
        // atomically; the driver takes its locks at or below
        // DISPATCH_LEVEL.
        let old = unsafe { ExAcquireSpinLockShared(word.as_ptr()) };
        LockToken(u32::from(old))
    }

    fn release_shared(&self, word: &AtomicI32, _class: &'static LockClass, token: LockToken) {
        let old = KIRQL::try_from(token.0).unwrap_or(DISPATCH_LEVEL);
        // SAFETY: this processor holds the lock shared (its guard was made
        // by `acquire_shared` here; no migration at DISPATCH_LEVEL); `old`
        // is the IRQL that acquire returned.
        unsafe { ExReleaseSpinLockShared(word.as_ptr(), old) };
    }

    fn acquire_exclusive(&self, word: &AtomicI32, _class: &'static LockClass) -> LockToken {
        // SAFETY: as in `acquire_shared`.
        let old = unsafe { ExAcquireSpinLockExclusive(word.as_ptr()) };
        LockToken(u32::from(old))
    }

    fn release_exclusive(&self, word: &AtomicI32, _class: &'static LockClass, token: LockToken) {
        let old = KIRQL::try_from(token.0).unwrap_or(DISPATCH_LEVEL);
        // SAFETY: this processor holds the lock exclusively (its guard was
        // made by `acquire_exclusive` here); `old` is what that returned.
        unsafe { ExReleaseSpinLockExclusive(word.as_ptr(), old) };
    }
}

impl Platform for KernelPlatform {
    fn current_irql(&self) -> Irql {
        if irql::current() >= DISPATCH_LEVEL {
            Irql::Dispatch
        } else {
            Irql::Passive
        }
    }

    fn raise_to_dispatch(&self) -> Irql {
        let old = irql::raise_to_dispatch();
        if old >= DISPATCH_LEVEL {
            return Irql::Dispatch;
        }
        // Now at DISPATCH_LEVEL: this processor's entry is ours until the
        // matching lower (see `SavedIrql`).
        if let Some(saved) = self.saved_irql.mine() {
            saved.store(old, Ordering::Relaxed);
        }
        Irql::Passive
    }

    fn lower_irql(&self, old: Irql) {
        if old == Irql::Passive {
            // Still at DISPATCH_LEVEL on the processor that raised.
            let level: KIRQL = self
                .saved_irql
                .mine()
                .map_or(PASSIVE_LEVEL, |saved| saved.load(Ordering::Relaxed));
            irql::lower(level);
        }
    }

    fn pool_charge(&self, _tag: PoolTag, _pool: PoolType, bytes: usize) -> bool {
        self.pool_blocks.fetch_add(1, Ordering::Relaxed);
        self.pool_bytes.fetch_add(bytes as i64, Ordering::Relaxed);
        true
    }

    fn pool_release(&self, _tag: PoolTag, _pool: PoolType, bytes: usize) {
        self.pool_blocks.fetch_sub(1, Ordering::Relaxed);
        self.pool_bytes.fetch_sub(bytes as i64, Ordering::Relaxed);
    }

    fn acquire_spin_lock(&self, word: &AtomicUsize, class: &'static LockClass) -> LockToken {
        let token = KernelSpinLocks.acquire(word, class);
        self.lock_acquired(class, core::ptr::from_ref(word).addr());
        token
    }

    fn release_spin_lock(&self, word: &AtomicUsize, class: &'static LockClass, token: LockToken) {
        self.lock_released(class, core::ptr::from_ref(word).addr());
        KernelSpinLocks.release(word, class, token);
    }

    fn lock_acquired(&self, class: &'static LockClass, _lock: usize) {
        if cfg!(debug_assertions) {
            assert!(
                irql::current() >= DISPATCH_LEVEL,
                "provider lock {} taken below DISPATCH_LEVEL",
                class.name
            );
            self.my_locks().fetch_add(1, Ordering::Relaxed);
        }
    }

    fn lock_released(&self, _class: &'static LockClass, _lock: usize) {
        if cfg!(debug_assertions) {
            self.my_locks().fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn require_passive(&self, what: &'static str) {
        // PAGED_CODE() is checked builds only; so is this.
        if cfg!(debug_assertions) {
            assert!(
                irql::current() < DISPATCH_LEVEL,
                "{what} called at DISPATCH_LEVEL or above"
            );
        }
    }

    fn callout_begin(&self) {
        if cfg!(debug_assertions) && irql::current() >= DISPATCH_LEVEL {
            let held = self.my_locks().load(Ordering::Relaxed);
            assert!(
                held == 0,
                "consumer callback with {held} provider lock(s) held"
            );
        }
    }

    fn callout_end(&self) {}

    fn now_ns(&self) -> u64 {
        clock::now_ns()
    }

    fn pfn_to_logical(&self, pfn: u64) -> u64 {
        pfn << PAGE_SHIFT
    }

    fn logical_of(&self, va: usize, len: usize) -> Option<u64> {
        if va == 0 || len == 0 {
            return None;
        }
        // SAFETY: `va` is provider memory (non-paged pool), resident and
        // mapped, which is all MmGetPhysicalAddress needs.
        let first = unsafe { MmGetPhysicalAddress(va as *mut _) };
        let first = u64::try_from(first).ok().filter(|&p| p != 0)?;
        // The range must be physically contiguous page after page.
        let page = PAGE_SIZE as u64;
        let start_page = va as u64 / page;
        let last_page = (va as u64).checked_add(len as u64 - 1)? / page;
        for k in 1..=(last_page - start_page) {
            let at = (start_page + k) * page;
            // SAFETY: as above, for a later page of the same allocation.
            let phys = unsafe { MmGetPhysicalAddress(at as usize as *mut _) };
            if u64::try_from(phys).ok()? != (first & !(page - 1)) + k * page {
                return None;
            }
        }
        Some(first)
    }

    fn dma_map(&self, owner: usize, pages: &mut dyn ExactSizeIterator<Item = u64>) -> bool {
        MAPPINGS.map(owner, pages)
    }

    fn dma_unmap(&self, owner: usize) {
        MAPPINGS.unmap(owner);
    }

    fn copy_from_va(&self, va: u64, buf: &mut [u8]) -> bool {
        if va == 0 || va.checked_add(buf.len() as u64).is_none() {
            return false;
        }
        // SAFETY: an NDK consumer's inline-send buffer is a kernel virtual
        // address it keeps valid and resident while the post runs (the NDK
        // contract); `buf` is the provider's own slot.
        unsafe {
            core::ptr::copy_nonoverlapping(va as usize as *const u8, buf.as_mut_ptr(), buf.len());
        };
        true
    }

    fn dma(&self) -> &dyn DmaAccess {
        &self.dma
    }

    fn wait_briefly(&self) {
        // 50 µs, relative (negative), in 100 ns units.
        let mut interval: i64 = -500;
        // SAFETY: PASSIVE_LEVEL (the trait's contract for this method); a
        // valid interval; not alertable.
        unsafe { KeDelayExecutionThread(KernelMode, 0, &raw mut interval) };
    }
}

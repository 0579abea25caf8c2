//! The kernel services the provider needs, as one object-safe trait.
//!
//! On Windows the driver shell implements it over the kernel (KeRaiseIrql,
//! pool tags, Driver Verifier, DMA adapters); on Linux `host::platform`
//! implements it for user space so the same provider code runs in tests. The
//! provider only ever sees a `&'static dyn Platform`.

use core::sync::atomic::AtomicUsize;

use hwq::DmaAccess;

/// Interrupt request levels the provider distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Irql {
    /// `PASSIVE_LEVEL`: may block and wait.
    Passive,
    /// `DISPATCH_LEVEL`: spin locks held or DPC context; must not block.
    Dispatch,
}

/// A four-character pool tag, one per object kind, so leaks can be
/// attributed (`!poolused` on Windows, `HostPlatform::outstanding` on Linux).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolTag(pub [u8; 4]);

impl PoolTag {
    /// The tag as text (tags are ASCII by construction).
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("????")
    }
}

/// The pool an allocation comes from.
///
/// The provider's NDK entry points run at `IRQL <= DISPATCH_LEVEL`, so
/// everything they allocate is non-paged; paged pool is for code that only
/// ever runs at `PASSIVE_LEVEL`, and a checker treats a paged allocation at
/// `DISPATCH_LEVEL` as a bug (on Windows it faults once the page is out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolType {
    /// `NonPagedPoolNx`: usable at any IRQL.
    NonPaged,
    /// `PagedPool`: `PASSIVE_LEVEL` only.
    Paged,
}

pub use hwq::lock::{LockClass, LockToken};

/// Kernel services used by the provider. Every method may be called at
/// `DISPATCH_LEVEL` except [`Platform::wait_briefly`] and
/// [`Platform::require_passive`].
pub trait Platform: Send + Sync + core::fmt::Debug {
    /// The calling thread's IRQL.
    fn current_irql(&self) -> Irql;

    /// Raises the calling thread to `DISPATCH_LEVEL`; returns the previous
    /// level for [`Platform::lower_irql`].
    fn raise_to_dispatch(&self) -> Irql;

    /// Returns to the level a matching [`Platform::raise_to_dispatch`]
    /// reported.
    fn lower_irql(&self, old: Irql);

    /// Accounts `bytes` of `pool` under `tag` before the provider allocates
    /// them. `false` means the allocation must be treated as failed (low
    /// memory, or fault injection).
    fn pool_charge(&self, tag: PoolTag, pool: PoolType, bytes: usize) -> bool;

    /// Gives back a charge made by [`Platform::pool_charge`].
    fn pool_release(&self, tag: PoolTag, pool: PoolType, bytes: usize);

    /// Raises to `DISPATCH_LEVEL` and acquires the spin lock whose state
    /// is `word` (zero when free: a `KSPIN_LOCK` after
    /// `KeInitializeSpinLock`), of `class`, spinning while another thread
    /// holds it; what it returns goes to the matching
    /// [`Platform::release_spin_lock`].
    ///
    /// The kernel uses its own spin lock here, so Driver Verifier sees
    /// every acquire (lock order, IRQL) and the kernel's wait loop does
    /// what a spinning virtual processor should. This default, for user
    /// space, is a test-and-test-and-set lock that reports to
    /// [`Platform::lock_acquired`]: a user thread can be pre-empted while
    /// it holds the lock, and a queued (FIFO) lock would then make every
    /// waiter wait for that thread's turn as well.
    fn acquire_spin_lock(&self, word: &AtomicUsize, class: &'static LockClass) -> LockToken {
        let old = self.raise_to_dispatch();
        hwq::lock::test_and_set(word);
        self.lock_acquired(class, core::ptr::from_ref(word).addr());
        LockToken(u32::from(old == Irql::Dispatch))
    }

    /// Releases a spin lock [`Platform::acquire_spin_lock`] acquired and
    /// returns to the IRQL before it (`token`, what the acquire returned).
    fn release_spin_lock(&self, word: &AtomicUsize, class: &'static LockClass, token: LockToken) {
        self.lock_released(class, core::ptr::from_ref(word).addr());
        hwq::lock::clear(word);
        self.lower_irql(if token.0 == 0 {
            Irql::Passive
        } else {
            Irql::Dispatch
        });
    }

    /// The lock at address `lock`, of `class`, was just acquired by the
    /// calling thread (after raising to `DISPATCH_LEVEL`).
    fn lock_acquired(&self, class: &'static LockClass, lock: usize);

    /// The lock at address `lock`, of `class`, is about to be released by
    /// the calling thread (before lowering the IRQL).
    fn lock_released(&self, class: &'static LockClass, lock: usize);

    /// Marks code that must run at `PASSIVE_LEVEL` (what `PAGED_CODE()`
    /// asserts on Windows): called on entry to functions that block or may
    /// block, so a caller at `DISPATCH_LEVEL` is caught even on the runs
    /// where no wait happens (and so a checker knows a new wait begins).
    /// `what` names the function.
    fn require_passive(&self, what: &'static str);

    /// The provider is about to call into the consumer (a completion or
    /// event callback). A checker asserts no provider lock is held.
    fn callout_begin(&self);

    /// The consumer callback returned.
    fn callout_end(&self);

    /// Monotonic time in nanoseconds.
    fn now_ns(&self) -> u64;

    /// The device-visible (logical) address of physical page `pfn`.
    fn pfn_to_logical(&self, pfn: u64) -> u64;

    /// The logical address of `len` bytes of provider memory at virtual
    /// address `va` (a buffer the device reads by DMA, such as a
    /// fast-register page list), or `None` if the platform cannot give one
    /// contiguous logical range for it.
    fn logical_of(&self, va: usize, len: usize) -> Option<u64>;

    /// Makes the pages at the logical addresses `pages` yields
    /// (page-aligned, the pages of one registration in order) reachable by the device's DMA
    /// until [`Platform::dma_unmap`] of the same `owner` (a registration's
    /// address: an MR, a LAM, a fast-register page list). Called when the
    /// registration is made, so that the device's copies find the pages
    /// mapped and never map anything themselves. `false` if the system
    /// has no resources for it: the registration then fails with
    /// `STATUS_INSUFFICIENT_RESOURCES`. A second call for the same
    /// `owner` replaces the first.
    fn dma_map(&self, owner: usize, pages: &mut dyn ExactSizeIterator<Item = u64>) -> bool;

    /// Undoes [`Platform::dma_map`] for `owner` (nothing if it has no
    /// mapping), after the device has stopped using the pages.
    fn dma_unmap(&self, owner: usize);

    /// Copies `buf.len()` bytes from the consumer's virtual address `va`
    /// (inline send data, readable only while the post runs). `false` if the
    /// memory cannot be read.
    fn copy_from_va(&self, va: u64, buf: &mut [u8]) -> bool;

    /// The device's access to host memory by logical address.
    fn dma(&self) -> &dyn DmaAccess;

    /// `PASSIVE_LEVEL` only, no lock held: lets other threads make progress
    /// while the caller waits for something (adapter close waiting for
    /// callbacks). A blocking wait.
    fn wait_briefly(&self);
}

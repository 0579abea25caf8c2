//! The kernel services the provider needs, as one object-safe trait.
//!
//! On Windows the driver shell implements it over the kernel (KeRaiseIrql,
//! pool tags, Driver Verifier, DMA adapters); on Linux `host::platform`
//! implements it for user space so the same provider code runs in tests. The
//! provider only ever sees a `&'static dyn Platform`.

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

/// A class of locks, for a lock-order checker: every lock of one kind (all
/// SQ locks, all CQ state locks...) shares one `'static` class.
#[derive(Debug)]
pub struct LockClass {
    /// Human-readable name of the class.
    pub name: &'static str,
}

impl LockClass {
    /// A new class.
    pub const fn new(name: &'static str) -> Self {
        Self { name }
    }
}

/// Kernel services used by the provider. Every method may be called at
/// `DISPATCH_LEVEL` except [`Platform::wait_briefly`].
pub trait Platform: Send + Sync + core::fmt::Debug {
    /// The calling thread's IRQL.
    fn current_irql(&self) -> Irql;

    /// Raises the calling thread to `DISPATCH_LEVEL`; returns the previous
    /// level for [`Platform::lower_irql`].
    fn raise_to_dispatch(&self) -> Irql;

    /// Returns to the level a matching [`Platform::raise_to_dispatch`]
    /// reported.
    fn lower_irql(&self, old: Irql);

    /// Accounts `bytes` of non-paged pool under `tag` before the provider
    /// allocates them. `false` means the allocation must be treated as
    /// failed (low memory, or fault injection).
    fn pool_charge(&self, tag: PoolTag, bytes: usize) -> bool;

    /// Gives back a charge made by [`Platform::pool_charge`].
    fn pool_release(&self, tag: PoolTag, bytes: usize);

    /// A lock of `class` was just acquired by the calling thread.
    fn lock_acquired(&self, class: &'static LockClass);

    /// A lock of `class` is about to be released by the calling thread.
    fn lock_released(&self, class: &'static LockClass);

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

    /// Copies `buf.len()` bytes from the consumer's virtual address `va`
    /// (inline send data, readable only while the post runs). `false` if the
    /// memory cannot be read.
    fn copy_from_va(&self, va: u64, buf: &mut [u8]) -> bool;

    /// The device's access to host memory by logical address.
    fn dma(&self) -> &dyn DmaAccess;

    /// `PASSIVE_LEVEL` only: lets other threads make progress while the
    /// caller waits for something (adapter close waiting for callbacks).
    fn wait_briefly(&self);
}

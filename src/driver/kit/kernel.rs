//! The kernel's own primitives as safe functions and types: IRQL, the
//! performance counter, the processor number, a sleep, debugger output,
//! the bug check, physical addresses, and a `KSPIN_LOCK` that owns what it
//! guards.
//!
//! IRQL goes through the ntoskrnl imports (`KfRaiseIrql`, `KeLowerIrql`,
//! `KeGetCurrentIrql`; `wdm.h` makes them imports for Windows 8 and later
//! drivers): Driver Verifier checks every transition (0xC4/0x30, 0x31) and
//! a lowering is the point where pending DPCs run, exactly as the kernel
//! defines it. No CR8 access is in the image.

use core::cell::UnsafeCell;
use core::ffi::CStr;

use ndis::{
    DISPATCH_LEVEL, DPFLTR_IHVNETWORK_ID, KIRQL, KSPIN_LOCK, KeAcquireSpinLockRaiseToDpc,
    KeDelayExecutionThread, KeGetCurrentIrql, KeLowerIrql, KeQueryPerformanceCounter,
    KeReleaseSpinLock, KernelMode, KfRaiseIrql,
};
use ndkpi::ULONG;

/// The current IRQL (`KeGetCurrentIrql`).
pub fn current_irql() -> KIRQL {
    // SAFETY: KeGetCurrentIrql has no preconditions (any IRQL).
    unsafe { KeGetCurrentIrql() }
}

/// Raises to `DISPATCH_LEVEL` (`KfRaiseIrql(DISPATCH_LEVEL)`); returns the
/// previous level, exactly, for [`lower_irql`]. Callers run at or below
/// `DISPATCH_LEVEL` (every path of this driver does; raising from above
/// would be Verifier's 0xC4/0x30).
pub fn raise_to_dispatch() -> KIRQL {
    // SAFETY: the caller is at or below DISPATCH_LEVEL (this function's
    // contract), so this is a raise or a same-level call, both legal; the
    // caller pairs it with `lower_irql` on this processor, which it cannot
    // leave at DISPATCH_LEVEL.
    unsafe { KfRaiseIrql(DISPATCH_LEVEL) }
}

/// Returns to `old`, the level a matching [`raise_to_dispatch`] returned
/// (`KeLowerIrql`). Lowering below `DISPATCH_LEVEL` runs this processor's
/// pending DPCs.
pub fn lower_irql(old: KIRQL) {
    // SAFETY: `old` is what the matching raise returned, so it is not
    // above the current level (the raise left us at DISPATCH_LEVEL and
    // every nested raise/lower pair in between is balanced).
    unsafe { KeLowerIrql(old) };
}

/// The performance counter now (`KeQueryPerformanceCounter`, any IRQL).
pub fn performance_counter() -> i64 {
    // SAFETY: a null frequency pointer is allowed; any IRQL.
    unsafe { KeQueryPerformanceCounter(core::ptr::null_mut()) }
}

/// The performance counter now and its frequency in ticks per second.
pub fn performance_counter_and_frequency() -> (i64, i64) {
    let mut frequency = 0;
    // SAFETY: `frequency` is a valid LARGE_INTEGER to write; any IRQL.
    let ticks = unsafe { KeQueryPerformanceCounter(&raw mut frequency) };
    (ticks, frequency)
}

/// Sleeps the calling thread for `interval_100ns` (relative, in 100 ns
/// units; `KeDelayExecutionThread`, not alertable).
/// Callers run at `PASSIVE_LEVEL` (the kernel allows `<= APC_LEVEL`).
pub fn sleep(interval_100ns: u32) {
    let mut interval = -i64::from(interval_100ns);
    // SAFETY: every caller waits at PASSIVE_LEVEL (this function's
    // contract; Driver Verifier checks it); a valid relative interval;
    // not alertable.
    unsafe { KeDelayExecutionThread(KernelMode, 0, &raw mut interval) };
}

/// Waits a moment (50 us) at `PASSIVE_LEVEL`: the pause of every wait
/// loop of the driver's teardown and bring-up sequences.
pub fn wait_briefly() {
    sleep(500);
}

/// Prints the NUL-terminated `text` to the debugger at `level` under the
/// network component (`DbgPrintEx`, any IRQL `<= DIRQL`).
pub fn debug_print(level: ULONG, text: &CStr) {
    // SAFETY: "%s" with one NUL-terminated string argument that lives for
    // the call; DbgPrintEx may be called at any IRQL <= DIRQL.
    unsafe { ndis::DbgPrintEx(DPFLTR_IHVNETWORK_ID, level, c"%s".as_ptr(), text.as_ptr()) };
}

/// Breaks into the kernel debugger (`DbgBreakPoint`); without one
/// attached this is itself a bug check (KMODE_EXCEPTION_NOT_HANDLED), so
/// only debug builds, meant for machines with a kernel debugger, call it.
pub fn break_into_debugger() {
    // SAFETY: a breakpoint instruction; the callers are debug builds (see
    // above and docs/windows.md).
    unsafe { ndis::DbgBreakPoint() };
}

/// Stops the machine with bug check `code` and four parameters for the
/// dump (`KeBugCheckEx`, any IRQL).
pub fn bug_check(code: u32, parameters: [usize; 4]) -> ! {
    let [p1, p2, p3, p4] = parameters;
    // SAFETY: KeBugCheckEx may be called at any IRQL and does not return;
    // the parameters are plain numbers for the dump.
    unsafe { ndis::KeBugCheckEx(code, p1, p2, p3, p4) }
}

/// A kernel spin lock (`KSPIN_LOCK`, `KeAcquireSpinLockRaiseToDpc` /
/// `KeReleaseSpinLock`) and the value it guards, which only
/// [`SpinLock::locked`] reaches. Usable in a `static` (zero is an
/// initialised `KSPIN_LOCK`).
pub struct SpinLock<T> {
    lock: UnsafeCell<KSPIN_LOCK>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only with the lock held (one processor at
// a time), so sharing the lock shares `T` between threads one at a time,
// which `T: Send` allows; the lock word itself is the kernel's to change.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> core::fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SpinLock").finish_non_exhaustive()
    }
}

impl<T> SpinLock<T> {
    /// A free lock over `value`.
    pub const fn new(value: T) -> Self {
        Self {
            lock: UnsafeCell::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// Runs `f` with the lock held, at `DISPATCH_LEVEL` (callers run at
    /// `<= DISPATCH_LEVEL`). `f` must not take this lock again.
    pub fn locked<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: a valid spin lock (zero-initialised, never moved while
        // shared: it is reached through `&self`), acquired at
        // <= DISPATCH_LEVEL (every caller's IRQL).
        let old = unsafe { KeAcquireSpinLockRaiseToDpc(self.lock.get()) };
        // SAFETY: the lock is held: nobody else reaches the value until
        // the release below.
        let result = f(unsafe { &mut *self.value.get() });
        // SAFETY: acquired above on this processor (a holder cannot
        // migrate at DISPATCH_LEVEL), released once, with its IRQL.
        unsafe { KeReleaseSpinLock(self.lock.get(), old) };
        result
    }
}

/// A flag one user at a time holds, taken without waiting: the acquire
/// compare-exchange and release store behind every claimable resource of
/// the kit ([`Claimable`], the L2 port's send frames, slot buffers).
/// Legal at any IRQL; what a holder wrote before [`ClaimFlag::release`] is
/// seen by the next holder.
#[derive(Debug, Default)]
pub struct ClaimFlag(core::sync::atomic::AtomicBool);

impl ClaimFlag {
    /// A flag nobody holds.
    pub const fn new() -> Self {
        Self(core::sync::atomic::AtomicBool::new(false))
    }

    /// Takes the flag; `false` if someone holds it.
    pub fn try_claim(&self) -> bool {
        self.0
            .compare_exchange(
                false,
                true,
                core::sync::atomic::Ordering::Acquire,
                core::sync::atomic::Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Lets the flag go (its holder only).
    pub fn release(&self) {
        self.0.store(false, core::sync::atomic::Ordering::Release);
    }

    /// Whether someone holds it.
    pub fn is_claimed(&self) -> bool {
        self.0.load(core::sync::atomic::Ordering::Acquire)
    }
}

/// A value one user at a time may claim without waiting
/// ([`Claimable::try_claim`]): a try-lock for resources a caller can
/// look for elsewhere when this one is taken.
pub struct Claimable<T> {
    busy: ClaimFlag,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a claim, which one thread
// holds at a time (acquire compare-exchange, release store), so `T: Send`
// is all sharing needs.
unsafe impl<T: Send> Sync for Claimable<T> {}

impl<T> core::fmt::Debug for Claimable<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Claimable").finish_non_exhaustive()
    }
}

impl<T> Claimable<T> {
    /// An unclaimed value.
    pub const fn new(value: T) -> Self {
        Self {
            busy: ClaimFlag::new(),
            value: UnsafeCell::new(value),
        }
    }

    /// The value, unless someone holds it.
    pub fn try_claim(&self) -> Option<Claim<'_, T>> {
        self.busy.try_claim().then_some(Claim { owner: self })
    }
}

/// A held [`Claimable`]; dropping it lets the value go.
pub struct Claim<'a, T> {
    owner: &'a Claimable<T>,
}

impl<T> core::fmt::Debug for Claim<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Claim").finish_non_exhaustive()
    }
}

impl<T> core::ops::Deref for Claim<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this claim holds `busy`: nobody else reaches the value.
        unsafe { &*self.owner.value.get() }
    }
}

impl<T> core::ops::DerefMut for Claim<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this claim holds `busy`: nobody else reaches the value,
        // and `&mut self` makes this the only reference through it.
        unsafe { &mut *self.owner.value.get() }
    }
}

impl<T> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        self.owner.busy.release();
    }
}

/// A lock for `PASSIVE_LEVEL` sequences that may take long (bring-up and
/// teardown): a waiter sleeps ([`wait_briefly`]) instead of spinning at
/// `DISPATCH_LEVEL`. Usable in a `static`.
pub struct PassiveLock<T> {
    held: ClaimFlag,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, which one thread
// holds at a time (the flag's acquire claim and release store).
unsafe impl<T: Send> Sync for PassiveLock<T> {}

impl<T> core::fmt::Debug for PassiveLock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PassiveLock").finish_non_exhaustive()
    }
}

impl<T> PassiveLock<T> {
    /// A free lock over `value`.
    pub const fn new(value: T) -> Self {
        Self {
            held: ClaimFlag::new(),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock (`PASSIVE_LEVEL`), waiting while another holds it.
    pub fn lock(&self) -> PassiveGuard<'_, T> {
        while !self.held.try_claim() {
            wait_briefly();
        }
        PassiveGuard { lock: self }
    }
}

/// A held [`PassiveLock`].
pub struct PassiveGuard<'a, T> {
    lock: &'a PassiveLock<T>,
}

impl<T> core::fmt::Debug for PassiveGuard<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PassiveGuard").finish_non_exhaustive()
    }
}

impl<T> core::ops::Deref for PassiveGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock: nobody else reaches the value.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> core::ops::DerefMut for PassiveGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds the lock, and `&mut self` makes this the
        // only reference through it.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for PassiveGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.held.release();
    }
}

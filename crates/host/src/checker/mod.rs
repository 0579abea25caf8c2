//! The rules the checked [`HostPlatform`](crate::platform::HostPlatform)
//! enforces, in the spirit of Driver Verifier: what a violation is, and
//! what happens when one is seen.
//!
//! A violation is always recorded on the platform instance that saw it. In
//! [`Mode::Bugcheck`] (the default) it then panics with the rule's name,
//! as Windows would bugcheck. Provider code is usually entered through
//! `extern "win64"` dispatch functions, where a panic aborts the process:
//! that is the point of a bugcheck, but a test that breaks a rule on
//! purpose must survive it, so such tests use an instance in
//! [`Mode::Record`] and read [`Violations::list`] afterwards.

mod locks;

pub use locks::{HeldLock, LockTracker, lock_order_edges, locks_held};

use std::fmt;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicBool, Ordering};

/// One rule of the checked platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A paged-pool allocation at `DISPATCH_LEVEL`.
    PagedPoolAtDispatch,
    /// A blocking wait at `DISPATCH_LEVEL` or with a spin lock held.
    BlockingAtDispatch,
    /// A `PASSIVE_LEVEL`-only function entered at `DISPATCH_LEVEL`.
    PassiveOnlyAtDispatch,
    /// A spin lock acquired or released below `DISPATCH_LEVEL`, or the IRQL
    /// lowered below `DISPATCH_LEVEL` with one held.
    SpinLockIrql,
    /// An IRQL lowered without a matching raise.
    IrqlMismatch,
    /// A spin lock released while one acquired after it is still held.
    LockReleaseOrder,
    /// A spin lock released by a thread that does not hold it.
    LockNotHeld,
    /// A spin lock acquired again by the thread holding it (a deadlock).
    RecursiveLock,
    /// Two locks of one class held at once, the class not declared
    /// nestable.
    SameClassNesting,
    /// Two lock classes acquired in both orders (a potential deadlock).
    LockOrderInversion,
    /// A call into the consumer with a provider lock held.
    CalloutUnderLock,
    /// A pool tag that is not four printable ASCII characters (Windows
    /// tools could not show whose memory it is).
    BadPoolTag,
    /// More pool released under a tag than was charged.
    PoolUnderflow,
    /// Pool still charged when the adapter (device) closed.
    PoolLeak,
    /// An adapter close kept waiting for objects the consumer never
    /// closed (the hang guard of [`Platform::wait_briefly`] loops).
    ///
    /// [`Platform::wait_briefly`]: provider::platform::Platform::wait_briefly
    CloseWithObjectsOutstanding,
}

impl Rule {
    /// A bugcheck-style name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::PagedPoolAtDispatch => "PAGED_POOL_AT_DISPATCH_LEVEL",
            Self::BlockingAtDispatch => "BLOCKING_WAIT_AT_DISPATCH_LEVEL",
            Self::PassiveOnlyAtDispatch => "PASSIVE_ONLY_CODE_AT_DISPATCH_LEVEL",
            Self::SpinLockIrql => "SPIN_LOCK_AT_WRONG_IRQL",
            Self::IrqlMismatch => "IRQL_NOT_RAISED",
            Self::LockReleaseOrder => "SPIN_LOCK_RELEASED_OUT_OF_ORDER",
            Self::LockNotHeld => "SPIN_LOCK_NOT_OWNED",
            Self::RecursiveLock => "SPIN_LOCK_ALREADY_OWNED",
            Self::SameClassNesting => "SPIN_LOCK_CLASS_NESTED",
            Self::LockOrderInversion => "LOCK_ORDER_INVERSION",
            Self::CalloutUnderLock => "CALLBACK_WITH_SPIN_LOCK_HELD",
            Self::BadPoolTag => "BAD_POOL_TAG",
            Self::PoolUnderflow => "POOL_RELEASED_TWICE",
            Self::PoolLeak => "POOL_LEAKED_AT_CLOSE",
            Self::CloseWithObjectsOutstanding => "CLOSE_WITH_OBJECTS_OUTSTANDING",
        }
    }
}

/// A recorded violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule broken.
    pub rule: Rule,
    /// What happened, naming the locks, tags or functions involved.
    pub detail: String,
    /// The thread it happened on (test threads carry the test's name).
    pub thread: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "checked platform: {}: {} (thread {})",
            self.rule.name(),
            self.detail,
            self.thread
        )
    }
}

/// What the platform does when it sees a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Record it, then panic (the default).
    Bugcheck,
    /// Record it and carry on (tests that break rules on purpose).
    Record,
}

/// The violations one platform instance saw.
#[derive(Debug)]
pub struct Violations {
    seen: Mutex<Vec<Violation>>,
    record_only: AtomicBool,
}

impl Default for Violations {
    fn default() -> Self {
        Self::new(Mode::Bugcheck)
    }
}

impl Violations {
    /// An empty list reacting as `mode` says.
    pub const fn new(mode: Mode) -> Self {
        Self {
            seen: Mutex::new(Vec::new()),
            record_only: AtomicBool::new(matches!(mode, Mode::Record)),
        }
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        if self.record_only.load(Ordering::SeqCst) {
            Mode::Record
        } else {
            Mode::Bugcheck
        }
    }

    /// Changes the mode.
    pub fn set_mode(&self, mode: Mode) {
        self.record_only
            .store(matches!(mode, Mode::Record), Ordering::SeqCst);
    }

    /// Records a violation of `rule`; panics in [`Mode::Bugcheck`].
    pub fn report(&self, rule: Rule, detail: String) {
        let thread = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_owned();
        let v = Violation {
            rule,
            detail,
            thread,
        };
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(v.clone());
        // A bugcheck: stop right here, naming the rule.
        assert!(self.mode() != Mode::Bugcheck, "{v}");
    }

    /// Everything recorded so far.
    pub fn list(&self) -> Vec<Violation> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Everything recorded so far, emptying the list.
    pub fn take(&self) -> Vec<Violation> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether a violation of `rule` was recorded.
    pub fn saw(&self, rule: Rule) -> bool {
        self.list().iter().any(|v| v.rule == rule)
    }
}

//! Object lifetime: the NDK close rules as reference counts.
//!
//! Every NDK object's *logical* life is a count ([`Life`]):
//!
//! * 1 for the consumer's handle (dropped by its close call),
//! * 1 per open successor (a QP counts on its CQs, PD and SRQ; an MW on the
//!   MR it is bound to; every child on its parent) — held through a [`Dep`],
//! * 1 per consumer callback in flight on the object (a [`Busy`] guard) and
//!   per pending asynchronous request.
//!
//! Whoever drops the count to zero *finishes* the object ([`Object::finish`]):
//! it tears down the device state, calls the close completion if the close
//! returned `STATUS_PENDING`, and only then releases the object's own
//! antecedents. That order gives the NDK guarantees: a close completion is the
//! last callback of its object, and an antecedent's close completes only
//! after every successor's close completion has returned. When the close call
//! itself drops the count to zero it finishes synchronously and returns
//! `STATUS_SUCCESS` without a callback.
//!
//! The *memory* of an object is a separate `TryArc` count: tables, successors
//! and in-flight events hold clones, so a late device event for a finished
//! object still reads valid memory (and finds it closed).

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hwq::TryArc;

use crate::callout::{self, CloseCompletion};
use crate::lock::SpinLock;
use crate::platform::{LockClass, Platform};

static LIFE_LOCK: LockClass = LockClass::new("object.life");

/// The logical life of an object (see the module documentation).
pub struct Life {
    refs: AtomicUsize,
    closing: AtomicBool,
    finished: AtomicBool,
    completion: SpinLock<Option<CloseCompletion>>,
}

impl Life {
    /// A live object with the consumer's reference.
    pub fn new(platform: &'static dyn Platform) -> Self {
        Self {
            refs: AtomicUsize::new(1),
            closing: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            completion: SpinLock::new(platform, &LIFE_LOCK, None),
        }
    }

    /// Whether the consumer has called close.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Whether the object has been finished (everything released).
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Takes a reference that must be given back with [`Life::release`].
    pub(crate) fn acquire(&self) {
        self.refs.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes a reference only if the count has not reached zero (a
    /// finished object cannot be revived).
    pub(crate) fn try_acquire(&self) -> bool {
        let mut current = self.refs.load(Ordering::Relaxed);
        while current != 0 {
            match self.refs.compare_exchange_weak(
                current,
                current + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(seen) => current = seen,
            }
        }
        false
    }

    /// Gives back one reference; true when it was the last (the caller must
    /// finish the object).
    pub(crate) fn release(&self) -> bool {
        if self.refs.fetch_sub(1, Ordering::Release) == 1 {
            core::sync::atomic::fence(Ordering::Acquire);
            self.finished.store(true, Ordering::Release);
            return true;
        }
        false
    }

    /// The consumer's close: records the completion and drops the consumer's
    /// reference. True when that was the last reference: the caller finishes
    /// synchronously and returns `STATUS_SUCCESS` (the completion is not
    /// called). False: `STATUS_PENDING`; the finisher calls the completion.
    pub fn begin_close(&self, completion: Option<CloseCompletion>) -> bool {
        *self.completion.lock() = completion;
        self.closing.store(true, Ordering::Release);
        if self.release() {
            self.completion.lock().take();
            return true;
        }
        false
    }

    /// The close completion to call when finishing, if the close pended.
    pub fn take_completion(&self) -> Option<CloseCompletion> {
        self.completion.lock().take()
    }
}

impl fmt::Debug for Life {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Life")
            .field("refs", &self.refs.load(Ordering::Relaxed))
            .field("closing", &self.is_closing())
            .finish_non_exhaustive()
    }
}

/// An NDK object with a [`Life`].
pub trait Object: Send + Sync + Sized {
    /// The object's life.
    fn life(&self) -> &Life;

    /// The platform (for callouts).
    fn platform(&self) -> &'static dyn Platform;

    /// Runs when the consumer calls close, before its reference is
    /// dropped: starts cancelling the object's work (NDK requires a close to
    /// do so itself). Default: nothing.
    fn on_close(&self) {}

    /// Tears down device state and the object's links in device tables.
    /// Runs once, when the life count reaches zero, before the close
    /// completion is called.
    fn teardown(&self);

    /// Releases the object's antecedents ([`Dep::release`]). Runs once,
    /// after the close completion returned.
    fn release_antecedents(&self);

    /// Teardown, close completion, antecedents: in that order.
    fn finish(&self) {
        self.teardown();
        if let Some(completion) = self.life().take_completion() {
            callout::close_completion(self.platform(), completion);
        }
        self.release_antecedents();
    }
}

/// A successor's hold on an antecedent: keeps its memory (a `TryArc`) and
/// its life (one reference). Released explicitly when the successor
/// finishes, or on drop.
pub struct Dep<T: Object> {
    target: TryArc<T>,
    held: AtomicBool,
}

impl<T: Object> Dep<T> {
    /// Takes a reference on `target`'s life.
    pub fn new(target: &TryArc<T>) -> Self {
        target.life().acquire();
        Self {
            target: target.clone(),
            held: AtomicBool::new(true),
        }
    }

    /// The antecedent (its memory stays valid as long as this `Dep`).
    pub fn get(&self) -> &TryArc<T> {
        &self.target
    }

    /// Gives the life reference back (once); finishes the antecedent if it
    /// was the last.
    pub fn release(&self) {
        if self.held.swap(false, Ordering::AcqRel) && self.target.life().release() {
            self.target.finish();
        }
    }
}

impl<T: Object> Drop for Dep<T> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<T: Object + fmt::Debug> fmt::Debug for Dep<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Dep")
            .field(&TryArc::as_ptr(&self.target))
            .finish()
    }
}

/// A callback (or asynchronous request) in flight on an object: while it
/// exists the object's close cannot complete.
pub struct Busy<T: Object> {
    target: TryArc<T>,
}

impl<T: Object> Busy<T> {
    /// Enters the object if it is open (not closing); `None` otherwise, in
    /// which case no new callback may start.
    pub fn enter(target: &TryArc<T>) -> Option<Self> {
        if !target.life().try_acquire() {
            return None;
        }
        let busy = Self {
            target: target.clone(),
        };
        if target.life().is_closing() {
            // Closing raced with us: give the reference back (finishing the
            // object if it was the last) and start nothing.
            drop(busy);
            return None;
        }
        Some(busy)
    }

    /// Takes a reference unconditionally (the object is known to be open,
    /// e.g. inside one of its own calls): for asynchronous requests.
    pub fn hold(target: &TryArc<T>) -> Self {
        target.life().acquire();
        Self {
            target: target.clone(),
        }
    }

    /// The object.
    pub fn get(&self) -> &TryArc<T> {
        &self.target
    }
}

impl<T: Object> Drop for Busy<T> {
    fn drop(&mut self) {
        if self.target.life().release() {
            self.target.finish();
        }
    }
}

impl<T: Object> fmt::Debug for Busy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Busy")
            .field(&TryArc::as_ptr(&self.target))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPlatform;
    use core::sync::atomic::AtomicU32;

    /// An object that counts its teardown and antecedent releases.
    struct Node {
        life: Life,
        platform: &'static TestPlatform,
        parent: Option<Dep<Node>>,
        torn_down: AtomicU32,
        released: AtomicU32,
    }

    impl Object for Node {
        fn life(&self) -> &Life {
            &self.life
        }
        fn platform(&self) -> &'static dyn Platform {
            self.platform
        }
        fn teardown(&self) {
            self.torn_down.fetch_add(1, Ordering::SeqCst);
        }
        fn release_antecedents(&self) {
            self.released.fetch_add(1, Ordering::SeqCst);
            if let Some(p) = &self.parent {
                p.release();
            }
        }
    }

    fn node(p: &'static TestPlatform, parent: Option<&TryArc<Node>>) -> TryArc<Node> {
        TryArc::try_new_or_drop(Node {
            life: Life::new(p),
            platform: p,
            parent: parent.map(Dep::new),
            torn_down: AtomicU32::new(0),
            released: AtomicU32::new(0),
        })
        .unwrap()
    }

    static CLOSED: AtomicU32 = AtomicU32::new(0);
    extern "win64" fn on_close(ctx: *mut core::ffi::c_void) {
        CLOSED.fetch_add(ctx as u32, Ordering::SeqCst);
    }

    #[test]
    fn close_without_successors_finishes_synchronously() {
        let p = TestPlatform::leaked();
        let n = node(p, None);
        let done = callout::close_from(Some(on_close), 1000 as *mut core::ffi::c_void)
            .expect("a callback was given");
        let before = CLOSED.load(Ordering::SeqCst);
        assert!(
            n.life.begin_close(Some(done)),
            "finished by the close itself"
        );
        n.finish();
        assert_eq!(
            CLOSED.load(Ordering::SeqCst),
            before,
            "no completion for a synchronous close"
        );
        assert_eq!(n.torn_down.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn antecedent_finishes_after_the_last_successor() {
        let p = TestPlatform::leaked();
        let parent = node(p, None);
        let child = node(p, Some(&parent));
        assert!(!parent.life.begin_close(None), "pending: a child is open");
        assert_eq!(parent.torn_down.load(Ordering::SeqCst), 0);
        assert!(child.life.begin_close(None));
        child.finish();
        assert_eq!(parent.torn_down.load(Ordering::SeqCst), 1);
        assert_eq!(parent.released.load(Ordering::SeqCst), 1);
        // Releasing twice is harmless.
        child.release_antecedents();
        assert_eq!(parent.torn_down.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn busy_blocks_close_and_refuses_after_it() {
        let p = TestPlatform::leaked();
        let n = node(p, None);
        let busy = Busy::enter(&n).expect("open object");
        assert!(
            !n.life.begin_close(None),
            "a callback in flight keeps it open"
        );
        assert!(Busy::enter(&n).is_none(), "no new callbacks once closing");
        assert_eq!(n.torn_down.load(Ordering::SeqCst), 0);
        drop(busy);
        assert_eq!(
            n.torn_down.load(Ordering::SeqCst),
            1,
            "the last release finishes"
        );
        assert!(n.life.is_finished());
        assert!(
            Busy::enter(&n).is_none(),
            "a finished object cannot be revived"
        );
    }
}

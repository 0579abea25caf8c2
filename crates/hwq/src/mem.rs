//! A fallible, atomically reference-counted allocation.
//!
//! `alloc::sync::Arc::new` aborts when the allocator fails, and in a kernel an
//! abort is a bugcheck. Rings, queue objects and NDK objects are therefore
//! allocated through [`TryArc::try_new`], which reports failure as
//! [`AllocError`] so the caller can return `STATUS_INSUFFICIENT_RESOURCES`.
//!
//! [`TryArc::into_raw`] / [`TryArc::from_raw`] let the provider hand the
//! address of the payload to a kernel consumer (an `NDK_QP*` is the address of
//! our QP object) and take ownership back when the consumer closes it.

use core::alloc::Layout;
use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::NonNull;

use crate::sync::{AtomicUsize, Ordering, fence};

/// The allocator could not satisfy a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocError;

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("memory allocation failed")
    }
}

#[repr(C)]
struct Inner<T> {
    count: AtomicUsize,
    value: T,
}

/// A shared, reference-counted pointer whose allocation may fail.
pub struct TryArc<T> {
    inner: NonNull<Inner<T>>,
    _owns: PhantomData<Inner<T>>,
}

// SAFETY: like `Arc`, a `TryArc<T>` gives shared access to `T` from any thread
// and may drop `T` on any thread, so it is `Send`/`Sync` exactly when `T` is
// both `Send` and `Sync`.
unsafe impl<T: Send + Sync> Send for TryArc<T> {}
// SAFETY: see the `Send` impl above.
unsafe impl<T: Send + Sync> Sync for TryArc<T> {}

impl<T> TryArc<T> {
    /// Moves `value` into a new shared allocation, or gives it back with the
    /// error if memory is exhausted.
    pub fn try_new(value: T) -> Result<Self, (AllocError, T)> {
        let layout = Layout::new::<Inner<T>>();
        // SAFETY: `Inner<T>` contains an `AtomicUsize`, so `layout` is never
        // zero-sized, which is the only precondition of `alloc`.
        let raw = unsafe { alloc::alloc::alloc(layout) }.cast::<Inner<T>>();
        let Some(inner) = NonNull::new(raw) else {
            return Err((AllocError, value));
        };
        let init = Inner {
            count: AtomicUsize::new(1),
            value,
        };
        // SAFETY: `inner` was just allocated with the layout of `Inner<T>`,
        // so it is valid for a write and properly aligned; nothing else can
        // observe it yet.
        unsafe { inner.as_ptr().write(init) };
        Ok(Self {
            inner,
            _owns: PhantomData,
        })
    }

    /// Like [`TryArc::try_new`], dropping the value on failure.
    pub fn try_new_or_drop(value: T) -> Result<Self, AllocError> {
        Self::try_new(value).map_err(|(e, _)| e)
    }

    fn inner(&self) -> &Inner<T> {
        // SAFETY: while this handle exists the count is at least one, so the
        // allocation is live and initialised.
        unsafe { self.inner.as_ref() }
    }

    /// Gives up this handle's reference and returns the payload's address.
    /// The reference is owned by whoever holds the pointer until it is passed
    /// to [`TryArc::from_raw`].
    pub fn into_raw(this: Self) -> *const T {
        let inner = this.inner.as_ptr();
        core::mem::forget(this);
        // SAFETY: `inner` points to a live `Inner<T>`; taking the address of a
        // field creates no reference.
        unsafe { &raw const (*inner).value }
    }

    /// Takes back a reference given up by [`TryArc::into_raw`].
    ///
    /// # Safety
    /// `ptr` must come from [`TryArc::into_raw`] for the same `T`, and the
    /// reference it carries must not have been taken back already.
    pub unsafe fn from_raw(ptr: *const T) -> Self {
        let offset = core::mem::offset_of!(Inner<T>, value);
        // SAFETY: per the contract `ptr` is the `value` field of a live
        // `Inner<T>`, so stepping back by that field's offset stays inside
        // the same allocation and yields its start.
        let inner = unsafe { ptr.byte_sub(offset) }
            .cast::<Inner<T>>()
            .cast_mut();
        // SAFETY: derived from a non-null pointer into a live allocation.
        let inner = unsafe { NonNull::new_unchecked(inner) };
        Self {
            inner,
            _owns: PhantomData,
        }
    }

    /// Creates a new handle from the payload address of a live `TryArc`
    /// without consuming the reference that address carries.
    ///
    /// # Safety
    /// `ptr` must be the payload address of a `TryArc<T>` that stays alive
    /// for the duration of this call.
    pub unsafe fn clone_from_raw(ptr: *const T) -> Self {
        // SAFETY: the caller guarantees a live TryArc owns `ptr`; the temporary
        // handle is forgotten below, so its reference is not dropped.
        let borrowed = core::mem::ManuallyDrop::new(unsafe { Self::from_raw(ptr) });
        TryArc::clone(&borrowed)
    }

    /// The address of the payload (the same value [`TryArc::into_raw`] gives).
    pub fn as_ptr(this: &Self) -> *const T {
        &raw const this.inner().value
    }

    /// Whether two handles point to the same allocation.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.inner == b.inner
    }

    /// The number of handles (and raw references) currently alive.
    pub fn strong_count(this: &Self) -> usize {
        this.inner().count.load(Ordering::Acquire)
    }
}

impl<T> Clone for TryArc<T> {
    fn clone(&self) -> Self {
        // Relaxed suffices for an increment: the new handle is derived from an
        // existing one, which already synchronises with the allocation.
        self.inner().count.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: self.inner,
            _owns: PhantomData,
        }
    }
}

impl<T> Deref for TryArc<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner().value
    }
}

impl<T> Drop for TryArc<T> {
    fn drop(&mut self) {
        // Release publishes this handle's writes to whoever frees the value;
        // the acquire fence below makes every other handle's writes visible
        // before the destructor runs.
        if self.inner().count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let layout = Layout::new::<Inner<T>>();
        // SAFETY: this was the last reference, so nothing else can reach the
        // allocation; it holds an initialised `Inner<T>`.
        unsafe { core::ptr::drop_in_place(self.inner.as_ptr()) };
        // SAFETY: allocated in `try_new` with exactly this layout, and the
        // value inside has just been dropped.
        unsafe { alloc::alloc::dealloc(self.inner.as_ptr().cast(), layout) };
    }
}

impl<T: fmt::Debug> fmt::Debug for TryArc<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use core::sync::atomic::AtomicU32;

    struct CountsDrops<'a>(&'a AtomicU32);
    impl Drop for CountsDrops<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn drops_once_after_last_handle() {
        let drops = AtomicU32::new(0);
        let a = TryArc::try_new_or_drop(CountsDrops(&drops)).unwrap();
        let b = a.clone();
        assert_eq!(TryArc::strong_count(&a), 2);
        drop(a);
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(b);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn raw_round_trip_keeps_the_reference() {
        let a = TryArc::try_new_or_drop(7u64).unwrap();
        let b = a.clone();
        let raw = TryArc::into_raw(b);
        assert_eq!(raw, TryArc::as_ptr(&a));
        // SAFETY: `raw` came from into_raw and `a` keeps it alive.
        let c = unsafe { TryArc::clone_from_raw(raw) };
        assert_eq!(TryArc::strong_count(&a), 3);
        drop(c);
        // SAFETY: `raw` still carries the reference given up by into_raw.
        let b = unsafe { TryArc::from_raw(raw) };
        assert_eq!(*b, 7);
        assert!(TryArc::ptr_eq(&a, &b));
        drop(b);
        assert_eq!(TryArc::strong_count(&a), 1);
    }
}

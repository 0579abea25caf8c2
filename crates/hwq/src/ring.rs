//! Single-producer/single-consumer rings of fixed-size slots in shared memory.
//!
//! One side owns the [`Producer`], the other the [`Consumer`]; neither handle
//! is `Clone`, so the type system enforces the single-producer,
//! single-consumer discipline that makes the protocol lock-free:
//!
//! 1. The producer writes a slot it owns (between the consumer's *released*
//!    index and its own *published* index plus capacity), then publishes the
//!    new producer index with `Release` ordering.
//! 2. The consumer loads the producer index with `Acquire`, which makes every
//!    slot below it readable. It may read any slot in
//!    `[released, published)` as often as it likes: a device re-reads work
//!    requests it must retransmit instead of copying them.
//! 3. When the consumer is done with the oldest slots it stores the new
//!    released index with `Release`; the producer loads it with `Acquire`
//!    before writing those slots again.
//!
//! Indices are free-running `u32` counters (compared with wrapping
//! arithmetic); the slot of index `i` is `i & mask`. A ring has a *limit*,
//! the number of slots that may be outstanding at once, which is the queue
//! depth the consumer of the NDK API asked for; the slot array is that limit
//! rounded up to a power of two.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::mem::{AllocError, TryArc};
use crate::sync::{AtomicU32, Ordering, UnsafeCell};

/// The largest ring this contract supports (slots).
pub const MAX_RING_DEPTH: u32 = 1 << 20;

/// A push found no free slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingFull;

/// A ring could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// Depth zero or above [`MAX_RING_DEPTH`].
    InvalidDepth,
    /// Memory for the slots could not be allocated.
    NoMemory,
}

impl From<AllocError> for RingError {
    fn from(_: AllocError) -> Self {
        Self::NoMemory
    }
}

/// Keeps the producer's and the consumer's index on separate cache lines so
/// the two sides do not invalidate each other's line on every update.
#[repr(align(64))]
struct CachePadded<T>(T);

struct Shared<T> {
    slots: Box<[UnsafeCell<T>]>,
    mask: u32,
    limit: u32,
    /// Producer index: slots below it hold published entries.
    published: CachePadded<AtomicU32>,
    /// Consumer index: slots below it are free for the producer again.
    released: CachePadded<AtomicU32>,
}

// SAFETY: slots are only written by the unique `Producer` and only while the
// slot is outside `[released, published)`, and only read by the unique
// `Consumer` while inside it; the atomics order those accesses. Sharing
// `Shared<T>` between the two threads is therefore sound when `T` may be sent.
unsafe impl<T: Send> Sync for Shared<T> {}
// SAFETY: see above; `Shared<T>` owns its `T`s.
unsafe impl<T: Send> Send for Shared<T> {}

impl<T> Shared<T> {
    fn slot(&self, index: u32) -> &UnsafeCell<T> {
        // `mask + 1 == slots.len()`, so the masked index is always in bounds;
        // `get` keeps even a broken invariant from becoming a panic.
        let i = (index & self.mask) as usize;
        self.slots.get(i).unwrap_or_else(|| &self.slots[0])
    }
}

/// Creates a ring allowing `depth` outstanding entries.
pub fn ring<T: Copy + Default>(depth: u32) -> Result<(Producer<T>, Consumer<T>), RingError> {
    if depth == 0 || depth > MAX_RING_DEPTH {
        return Err(RingError::InvalidDepth);
    }
    let size = depth.next_power_of_two();
    let mut slots = Vec::new();
    slots
        .try_reserve_exact(size as usize)
        .map_err(|_| RingError::NoMemory)?;
    slots.extend((0..size).map(|_| UnsafeCell::new(T::default())));
    let shared = Shared {
        slots: slots.into_boxed_slice(),
        mask: size - 1,
        limit: depth,
        published: CachePadded(AtomicU32::new(0)),
        released: CachePadded(AtomicU32::new(0)),
    };
    let shared = TryArc::try_new_or_drop(shared)?;
    let producer = Producer {
        shared: shared.clone(),
        head: 0,
        released_cache: 0,
    };
    let consumer = Consumer {
        shared,
        released: 0,
        published_cache: 0,
    };
    Ok((producer, consumer))
}

/// The writing end of a ring.
pub struct Producer<T> {
    shared: TryArc<Shared<T>>,
    /// Next index to write; equals the published index after `publish`.
    head: u32,
    /// Last value read from the consumer's released index.
    released_cache: u32,
}

impl<T: Copy> Producer<T> {
    /// How many entries may be outstanding at once.
    pub fn depth(&self) -> u32 {
        self.shared.limit
    }

    /// Entries written (published or not) that the consumer has not released.
    pub fn outstanding(&mut self) -> u32 {
        self.refresh();
        self.head.wrapping_sub(self.released_cache)
    }

    /// Free slots, after looking at the consumer's progress.
    pub fn free(&mut self) -> u32 {
        self.shared.limit - self.outstanding()
    }

    fn refresh(&mut self) {
        self.released_cache = self.shared.released.0.load(Ordering::Acquire);
    }

    /// Writes the next entry in place without publishing it. `fill` receives
    /// the slot's previous contents and must set every field it relies on.
    pub fn push_with(&mut self, fill: impl FnOnce(&mut T)) -> Result<u32, RingFull> {
        self.try_push_with(RingFull, |slot| {
            fill(slot);
            Ok(())
        })
    }

    /// Like [`Producer::push_with`] for a fill that may fail: on `Err` the
    /// entry is not pushed (the slot stays free, whatever `fill` wrote into
    /// it, since nothing was published). `full` is returned when no slot is
    /// free.
    pub fn try_push_with<E>(
        &mut self,
        full: E,
        fill: impl FnOnce(&mut T) -> Result<(), E>,
    ) -> Result<u32, E> {
        if self.head.wrapping_sub(self.released_cache) >= self.shared.limit {
            self.refresh();
            if self.head.wrapping_sub(self.released_cache) >= self.shared.limit {
                return Err(full);
            }
        }
        let index = self.head;
        self.shared.slot(index).with_mut(|slot| {
            // SAFETY: `index` is outside `[released, published)` (checked
            // above against an Acquire load of `released`), so the consumer
            // neither reads nor will read this slot until we publish; we are
            // the only producer, so nobody else writes it.
            fill(unsafe { &mut *slot })
        })?;
        self.head = index.wrapping_add(1);
        Ok(index)
    }

    /// Writes `value` as the next entry without publishing it.
    pub fn push(&mut self, value: T) -> Result<u32, RingFull> {
        self.push_with(|slot| *slot = value)
    }

    /// Makes every pushed entry visible to the consumer; returns the new
    /// producer index.
    pub fn publish(&mut self) -> u32 {
        self.shared.published.0.store(self.head, Ordering::Release);
        self.head
    }

    /// The index the next push will use.
    pub fn head(&self) -> u32 {
        self.head
    }
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("head", &self.head)
            .field("limit", &self.shared.limit)
            .finish_non_exhaustive()
    }
}

/// The reading end of a ring.
pub struct Consumer<T> {
    shared: TryArc<Shared<T>>,
    /// Oldest index not yet released.
    released: u32,
    /// Last value read from the producer's published index.
    published_cache: u32,
}

impl<T: Copy> Consumer<T> {
    /// How many entries may be outstanding at once.
    pub fn depth(&self) -> u32 {
        self.shared.limit
    }

    /// Looks at the producer's index and returns the index one past the
    /// newest published entry.
    pub fn refresh(&mut self) -> u32 {
        self.published_cache = self.shared.published.0.load(Ordering::Acquire);
        self.published_cache
    }

    /// The published index as of the last [`Consumer::refresh`].
    pub fn published(&self) -> u32 {
        self.published_cache
    }

    /// Oldest entry not yet released.
    pub fn released(&self) -> u32 {
        self.released
    }

    /// Published entries not yet released (as of the last refresh).
    pub fn len(&self) -> u32 {
        self.published_cache.wrapping_sub(self.released)
    }

    /// Whether no published entry is waiting (as of the last refresh).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `index` is published and not yet released.
    pub fn contains(&self, index: u32) -> bool {
        index.wrapping_sub(self.released) < self.len()
    }

    /// Reads the entry at absolute index `index`, if it is published and not
    /// released. Reading the same entry again is allowed.
    pub fn read(&self, index: u32) -> Option<T> {
        self.read_with(index, |entry| *entry)
    }

    /// Like [`Consumer::read`], inspecting the entry in place.
    pub fn read_with<R>(&self, index: u32, f: impl FnOnce(&T) -> R) -> Option<R> {
        if !self.contains(index) {
            return None;
        }
        Some(self.shared.slot(index).with(|slot| {
            // SAFETY: `index` lies in `[released, published)`: the producer
            // published it with Release (we loaded it with Acquire in
            // `refresh`) and will not write it again until we release it.
            f(unsafe { &*slot })
        }))
    }

    /// Hands the oldest `count` entries back to the producer. Releasing more
    /// than is published is refused (returns `false`) and changes nothing.
    pub fn release(&mut self, count: u32) -> bool {
        if count > self.len() {
            return false;
        }
        self.released = self.released.wrapping_add(count);
        self.shared
            .released
            .0
            .store(self.released, Ordering::Release);
        true
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("released", &self.released)
            .field("published", &self.published_cache)
            .field("limit", &self.shared.limit)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn depth_bounds_outstanding_entries_not_capacity() {
        let (mut p, mut c) = ring::<u64>(3).unwrap();
        for v in 0..3 {
            p.push(v).unwrap();
        }
        assert_eq!(p.push(9), Err(RingFull));
        assert_eq!(c.refresh(), 0, "nothing visible before publish");
        p.publish();
        assert_eq!(c.refresh(), 3);
        assert_eq!(c.read(1), Some(1));
        assert_eq!(c.read(3), None);
        assert!(c.release(1));
        assert_eq!(p.free(), 1);
        p.push(3).unwrap();
        p.publish();
        c.refresh();
        assert_eq!((c.read(0), c.read(3)), (None, Some(3)));
    }

    #[test]
    fn indices_wrap_around_u32() {
        let (mut p, mut c) = ring::<u32>(4).unwrap();
        p.head = u32::MAX - 1;
        p.released_cache = u32::MAX - 1;
        c.released = u32::MAX - 1;
        c.shared.released.0.store(u32::MAX - 1, Ordering::Relaxed);
        for v in 0..4 {
            p.push(v).unwrap();
        }
        p.publish();
        c.refresh();
        assert_eq!(c.len(), 4);
        assert_eq!(c.read(u32::MAX - 1), Some(0));
        assert_eq!(c.read(1), Some(3));
        assert!(c.release(4));
        assert_eq!(p.free(), 4);
    }

    #[test]
    fn a_failed_fill_pushes_nothing() {
        let (mut p, mut c) = ring::<u8>(1).unwrap();
        assert_eq!(
            p.try_push_with(0u8, |v| {
                *v = 7;
                Err(9)
            }),
            Err(9)
        );
        assert_eq!(p.head(), 0);
        assert_eq!(
            p.try_push_with(0u8, |v| {
                *v = 5;
                Ok(())
            }),
            Ok(0)
        );
        assert_eq!(p.try_push_with(1u8, |_| Ok(())), Err(1), "full");
        p.publish();
        c.refresh();
        assert_eq!(c.read(0), Some(5));
    }

    #[test]
    fn over_release_is_refused() {
        let (mut p, mut c) = ring::<u8>(2).unwrap();
        p.push(1).unwrap();
        p.publish();
        c.refresh();
        assert!(!c.release(2));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn invalid_depths_are_rejected() {
        assert_eq!(ring::<u8>(0).err(), Some(RingError::InvalidDepth));
        assert_eq!(
            ring::<u8>(MAX_RING_DEPTH + 1).err(),
            Some(RingError::InvalidDepth)
        );
    }
}

//! Accounted, fallible allocation.
//!
//! Every byte the provider allocates is first charged to the platform under
//! the pool tag of the object kind that owns it ([`Charge`]); the charge is
//! given back when the owner drops. A refused charge (`pool_charge` returns
//! false: low memory or injected fault) and a failed allocation both surface
//! as [`AllocError`], which callers turn into
//! `STATUS_INSUFFICIENT_RESOURCES`. Nothing here aborts on allocation
//! failure, and nothing here is used on a posting or polling path.

use alloc::vec::Vec;
use core::fmt;
use core::ops::{Deref, DerefMut};

use hwq::ring::{Consumer, Producer, RingError};
use hwq::{AllocError, TryArc};

use crate::platform::{Platform, PoolTag, PoolType};

/// Pool tags, one per object kind.
pub mod tags {
    use crate::platform::PoolTag;

    /// Device context.
    pub const DEVICE: PoolTag = PoolTag(*b"NkDv");
    /// Adapter.
    pub const ADAPTER: PoolTag = PoolTag(*b"NkAd");
    /// Protection domain.
    pub const PD: PoolTag = PoolTag(*b"NkPd");
    /// Completion queue (object and ring).
    pub const CQ: PoolTag = PoolTag(*b"NkCq");
    /// Memory region (object, page lists).
    pub const MR: PoolTag = PoolTag(*b"NkMr");
    /// Memory window.
    pub const MW: PoolTag = PoolTag(*b"NkMw");
    /// Shared receive queue.
    pub const SRQ: PoolTag = PoolTag(*b"NkSq");
    /// Queue pair (object and rings).
    pub const QP: PoolTag = PoolTag(*b"NkQp");
    /// Connector (object, private data).
    pub const CONNECTOR: PoolTag = PoolTag(*b"NkCo");
    /// Listener.
    pub const LISTENER: PoolTag = PoolTag(*b"NkLi");
    /// Shared endpoint.
    pub const SHARED_ENDPOINT: PoolTag = PoolTag(*b"NkSe");
    /// Object tables of the device context.
    pub const TABLE: PoolTag = PoolTag(*b"NkTb");
}

/// Bytes charged to the platform; released on drop.
pub struct Charge {
    platform: &'static dyn Platform,
    tag: PoolTag,
    pool: PoolType,
    bytes: usize,
}

impl Charge {
    /// Charges `bytes` of non-paged pool under `tag` (what every NDK
    /// object uses: its entry points run at `DISPATCH_LEVEL` too).
    pub fn take(
        platform: &'static dyn Platform,
        tag: PoolTag,
        bytes: usize,
    ) -> Result<Self, AllocError> {
        Self::take_from(platform, tag, PoolType::NonPaged, bytes)
    }

    /// Charges `bytes` of `pool` under `tag`.
    pub fn take_from(
        platform: &'static dyn Platform,
        tag: PoolTag,
        pool: PoolType,
        bytes: usize,
    ) -> Result<Self, AllocError> {
        if platform.pool_charge(tag, pool, bytes) {
            Ok(Self {
                platform,
                tag,
                pool,
                bytes,
            })
        } else {
            Err(AllocError)
        }
    }

    /// The charged size.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.platform.pool_release(self.tag, self.pool, self.bytes);
    }
}

impl fmt::Debug for Charge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Charge")
            .field("tag", &self.tag.as_str())
            .field("pool", &self.pool)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

/// Allocates a `TryArc<T>` whose value carries its own charge: `make`
/// receives the charge and must store it in the value, so the bytes are
/// released exactly when the last reference drops.
pub fn try_arc<T>(
    platform: &'static dyn Platform,
    tag: PoolTag,
    make: impl FnOnce(Charge) -> T,
) -> Result<TryArc<T>, AllocError> {
    // The reference count sits in front of the value.
    let charge = Charge::take(platform, tag, size_of::<T>() + size_of::<usize>())?;
    TryArc::try_new_or_drop(make(charge))
}

/// A vector with a fixed capacity reserved (and charged) up front; it never
/// reallocates.
pub struct PoolVec<T> {
    items: Vec<T>,
    _charge: Charge,
}

impl<T> PoolVec<T> {
    /// An empty vector able to hold `capacity` items.
    pub fn with_capacity(
        platform: &'static dyn Platform,
        tag: PoolTag,
        capacity: usize,
    ) -> Result<Self, AllocError> {
        let bytes = capacity.checked_mul(size_of::<T>()).ok_or(AllocError)?;
        let charge = Charge::take(platform, tag, bytes)?;
        let mut items = Vec::new();
        items.try_reserve_exact(capacity).map_err(|_| AllocError)?;
        Ok(Self {
            items,
            _charge: charge,
        })
    }

    /// A vector holding a copy of `src`.
    pub fn from_slice(
        platform: &'static dyn Platform,
        tag: PoolTag,
        src: &[T],
    ) -> Result<Self, AllocError>
    where
        T: Clone,
    {
        let mut v = Self::with_capacity(platform, tag, src.len())?;
        v.items.extend_from_slice(src);
        Ok(v)
    }

    /// A vector of `len` copies of `value`.
    pub fn filled(
        platform: &'static dyn Platform,
        tag: PoolTag,
        len: usize,
        value: T,
    ) -> Result<Self, AllocError>
    where
        T: Clone,
    {
        let mut v = Self::with_capacity(platform, tag, len)?;
        v.items.resize(len, value);
        Ok(v)
    }

    /// Appends `item` if capacity remains; gives it back otherwise.
    pub fn push(&mut self, item: T) -> Result<(), T> {
        if self.items.len() == self.items.capacity() {
            return Err(item);
        }
        self.items.push(item);
        Ok(())
    }

    /// Inserts `item` at `index` if capacity remains (and `index <= len`).
    pub fn insert(&mut self, index: usize, item: T) -> Result<(), T> {
        if self.items.len() == self.items.capacity() || index > self.items.len() {
            return Err(item);
        }
        self.items.insert(index, item);
        Ok(())
    }

    /// Removes and returns the item at `index`.
    pub fn remove(&mut self, index: usize) -> Option<T> {
        (index < self.items.len()).then(|| self.items.remove(index))
    }

    /// Items the vector can hold without reallocating.
    pub fn capacity(&self) -> usize {
        self.items.capacity()
    }

    /// Drops every item (keeps the capacity).
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Shortens the vector to `len` items.
    pub fn truncate(&mut self, len: usize) {
        self.items.truncate(len);
    }
}

impl<T> Deref for PoolVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> DerefMut for PoolVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items
    }
}

impl<T: fmt::Debug> fmt::Debug for PoolVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items.iter()).finish()
    }
}

/// A work ring with its memory charged: the slots plus the shared indices.
pub fn ring<T: Copy + Default>(
    platform: &'static dyn Platform,
    tag: PoolTag,
    depth: u32,
) -> Result<(Producer<T>, Consumer<T>, Charge), RingError> {
    if depth == 0 || depth > hwq::ring::MAX_RING_DEPTH {
        return Err(RingError::InvalidDepth);
    }
    let slots = depth.next_power_of_two() as usize;
    // Two cache-line-padded indices, the slot box and the count.
    let bytes = slots * size_of::<T>() + 3 * 64;
    let charge = Charge::take(platform, tag, bytes)?;
    let (producer, consumer) = hwq::ring::ring(depth)?;
    Ok((producer, consumer, charge))
}

//! Number → object tables of the device context.
//!
//! The device names queues and connections by number in its events; these
//! tables turn a number back into an object. Entries hold `TryArc` clones, so
//! an event that races with a close finds either a live object (whose
//! [`crate::object::Life`] then refuses new callbacks if it is closing) or
//! nothing, never freed memory.
//!
//! A table is a sorted vector (binary search on lookup, which runs on event
//! paths); growing it allocates, which only happens on create paths and may
//! fail.

use hwq::{AllocError, TryArc};

use crate::lock::SpinLock;
use crate::platform::{LockClass, Platform};
use crate::pool::{PoolVec, tags};

static TABLE_LOCK: LockClass = LockClass::new("device.table");

const INITIAL_CAPACITY: usize = 8;

/// The sorted entries.
type Entries<K, T> = PoolVec<(K, TryArc<T>)>;

/// A table of objects by number (`K`: the device's id type).
#[derive(Debug)]
pub struct IdTable<T, K = u32> {
    platform: &'static dyn Platform,
    entries: SpinLock<Option<Entries<K, T>>>,
}

impl<T, K: Copy + Ord> IdTable<T, K> {
    /// An empty table (allocates nothing until the first insert).
    pub fn new(platform: &'static dyn Platform) -> Self {
        Self {
            platform,
            entries: SpinLock::new(platform, &TABLE_LOCK, None),
        }
    }

    /// Adds `id → object`. Fails if memory for a larger table cannot be had
    /// (or if `id` is already present, which a device never does).
    pub fn insert(&self, id: K, object: TryArc<T>) -> Result<(), AllocError> {
        let mut object = Some(object);
        loop {
            self.ensure_room()?;
            let mut guard = self.entries.lock();
            let Some(v) = guard.as_mut() else { continue };
            let Err(index) = v.binary_search_by_key(&id, |e| e.0) else {
                return Err(AllocError);
            };
            let Some(entry) = object.take() else {
                return Err(AllocError);
            };
            match v.insert(index, (id, entry)) {
                Ok(()) => return Ok(()),
                // Full after all (a racing insert): try again. The entry is
                // not the last reference, so dropping it here is harmless,
                // but keep it for the retry.
                Err((_, entry)) => object = Some(entry),
            }
        }
    }

    /// Runs `make` under the table lock and inserts what it returns, so
    /// that an event for the new number (which may arrive on another thread
    /// as soon as the device assigned it) cannot miss the entry: the event
    /// path's lookup waits for the lock. `make` must not block (device
    /// commands qualify) and runs once.
    pub fn insert_with<E>(
        &self,
        make: impl FnOnce() -> Result<(K, TryArc<T>), E>,
        no_memory: impl FnOnce() -> E,
    ) -> Result<K, E> {
        let mut make = Some(make);
        loop {
            if self.ensure_room().is_err() {
                return Err(no_memory());
            }
            let mut guard = self.entries.lock();
            let Some(v) = guard.as_mut() else { continue };
            if v.len() == v.capacity() {
                continue;
            }
            let Some(make) = make.take() else {
                return Err(no_memory());
            };
            let (id, object) = make()?;
            let index = match v.binary_search_by_key(&id, |e| e.0) {
                Ok(i) | Err(i) => i,
            };
            // Room was checked under this same lock.
            let _ = v.insert(index, (id, object));
            return Ok(id);
        }
    }

    /// Makes sure one more entry fits (growing outside the lock).
    fn ensure_room(&self) -> Result<(), AllocError> {
        loop {
            let capacity = {
                let guard = self.entries.lock();
                match guard.as_ref() {
                    Some(v) if v.len() < v.capacity() => return Ok(()),
                    Some(v) => v.capacity() * 2,
                    None => INITIAL_CAPACITY,
                }
            };
            let mut bigger = PoolVec::with_capacity(self.platform, tags::TABLE, capacity)?;
            let old = {
                let mut guard = self.entries.lock();
                if guard.as_ref().map_or(0, PoolVec::capacity) >= capacity {
                    None
                } else {
                    if let Some(v) = guard.as_ref() {
                        for e in v.iter() {
                            let _ = bigger.push((e.0, e.1.clone()));
                        }
                    }
                    guard.replace(bigger)
                }
            };
            drop(old);
        }
    }

    /// The object numbered `id`, if any.
    pub fn get(&self, id: K) -> Option<TryArc<T>> {
        let guard = self.entries.lock();
        let v = guard.as_ref()?;
        let i = v.binary_search_by_key(&id, |e| e.0).ok()?;
        Some(v[i].1.clone())
    }

    /// Removes `id`; returns the entry (drop it outside any lock).
    pub fn remove(&self, id: K) -> Option<TryArc<T>> {
        let mut guard = self.entries.lock();
        let v = guard.as_mut()?;
        let i = v.binary_search_by_key(&id, |e| e.0).ok()?;
        v.remove(i).map(|e| e.1)
    }

    /// Calls `visit` with each entry, in number order, under the table
    /// lock (so at `DISPATCH_LEVEL`): `visit` gets borrows only, must not
    /// block, and may take an object's own lock but no table lock.
    pub(crate) fn for_each(&self, mut visit: impl FnMut(K, &T)) {
        let guard = self.entries.lock();
        if let Some(v) = guard.as_ref() {
            for (id, object) in v.iter() {
                visit(*id, object);
            }
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.lock().as_ref().map_or(0, |v| v.len())
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the table and frees its memory; returns nothing (entries are
    /// dropped after the lock is released).
    pub fn clear(&self) {
        let old = self.entries.lock().take();
        drop(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPlatform;
    use core::sync::atomic::Ordering;

    #[test]
    fn grows_finds_removes_and_accounts() {
        let p = TestPlatform::leaked();
        let t = IdTable::<u32>::new(p);
        for id in (0..40).rev() {
            t.insert(id * 3, TryArc::try_new_or_drop(id).unwrap())
                .unwrap();
        }
        assert_eq!(t.len(), 40);
        assert_eq!(t.get(39 * 3).map(|v| *v), Some(39));
        assert!(t.get(1).is_none());
        assert!(
            t.insert(3, TryArc::try_new_or_drop(0).unwrap()).is_err(),
            "duplicate id"
        );
        assert_eq!(t.remove(3).map(|v| *v), Some(1));
        assert!(t.get(3).is_none());
        let made = t.insert_with(
            || Ok::<_, ()>((7, TryArc::try_new_or_drop(70).unwrap())),
            || (),
        );
        assert_eq!(made, Ok(7));
        assert_eq!(t.get(7).map(|v| *v), Some(70));
        assert_eq!(
            t.insert_with(|| Err::<(u32, TryArc<u32>), _>(5), || 6),
            Err(5)
        );
        t.clear();
        assert!(t.is_empty());
        assert_eq!(p.bytes.load(Ordering::SeqCst), 0, "table memory released");
    }

    #[test]
    fn growth_failure_is_reported() {
        let p = TestPlatform::leaked();
        let t = IdTable::<u32>::new(p);
        p.fail_at.store(1, Ordering::SeqCst);
        assert!(t.insert(1, TryArc::try_new_or_drop(1).unwrap()).is_err());
        assert!(t.insert(1, TryArc::try_new_or_drop(1).unwrap()).is_ok());
    }
}

//! Object tables indexed by number (QPN, CQN, SRQN, PD), each slot behind
//! its own spin lock so work on different objects never contends.

use alloc::vec::Vec;

use hwq::lock::LockClass;

use crate::sync::Mutex;

/// A table slot. Nestable: a command holds one table's slot while it
/// takes another table's (a QP's and its CQ's), in one order the code
/// keeps; the kernel's deadlock detection checks it per lock.
static SLOT_LOCK: LockClass = LockClass::nestable("softrnic table slot");
/// A table's free list.
static FREE_LOCK: LockClass = LockClass::new("softrnic table free list");

/// A table of objects with numbers in `first..first + capacity`.
#[derive(Debug)]
pub struct Table<T> {
    first: u32,
    slots: Vec<Mutex<Option<T>>>,
    free: Mutex<Vec<u32>>,
}

impl<T> Table<T> {
    /// A table for `capacity` objects numbered from `first`. Allocates once.
    pub fn new(first: u32, capacity: u32) -> Option<Self> {
        let mut slots = Vec::new();
        slots.try_reserve_exact(capacity as usize).ok()?;
        slots.resize_with(capacity as usize, || Mutex::new(&SLOT_LOCK, None));
        let mut free = Vec::new();
        free.try_reserve_exact(capacity as usize).ok()?;
        free.extend((0..capacity).rev().map(|i| first + i));
        Some(Self {
            first,
            slots,
            free: Mutex::new(&FREE_LOCK, free),
        })
    }

    fn slot(&self, n: u32) -> Option<&Mutex<Option<T>>> {
        self.slots.get(n.checked_sub(self.first)? as usize)
    }

    /// Stores `value` under a fresh number.
    pub fn insert(&self, value: T) -> Option<u32> {
        let n = self.free.lock().pop()?;
        if let Some(slot) = self.slot(n) {
            *slot.lock() = Some(value);
        }
        Some(n)
    }

    /// Takes the object out and frees its number.
    pub fn remove(&self, n: u32) -> Option<T> {
        let value = self.slot(n)?.lock().take()?;
        // Room for every number was reserved in `new`.
        self.free.lock().push(n);
        Some(value)
    }

    /// Runs `f` on object `n` under its lock.
    pub fn with<R>(&self, n: u32, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut guard = self.slot(n)?.lock();
        guard.as_mut().map(f)
    }

    /// Whether `n` names a live object.
    pub fn contains(&self, n: u32) -> bool {
        self.slot(n).is_some_and(|s| s.lock().is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_recycled_and_bounded() {
        let t = Table::new(16, 2).unwrap();
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert_eq!((a, b), (16, 17));
        assert_eq!(t.insert("c"), None);
        assert_eq!(t.with(a, |v| *v), Some("a"));
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.remove(a), None);
        assert_eq!(t.with(15, |v| *v), None);
        assert_eq!(t.with(99, |v| *v), None);
        assert_eq!(t.insert("d"), Some(16));
    }
}

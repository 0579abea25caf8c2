//! Memory protection: the device's key table and address translation.
//!
//! Every byte the device moves is named by a memory key and a virtual (or,
//! for a privileged key, logical) address. Before any DMA the key is checked
//! for existence, validity, its variant (a stale token fails), protection
//! domain, access rights and bounds; only then is the range translated to
//! logical-address chunks. A failed check touches no memory.

use alloc::boxed::Box;

use core::sync::atomic::{AtomicU32, Ordering};
use hwq::DmaAccess;

use hwq::lock::{LockClass, SpinRwReadGuard};

use crate::sync::RwLock;

/// Every device's key table.
pub(crate) static KEY_TABLE_LOCK: LockClass = LockClass::new("softrnic key table");

mod keys;
pub(crate) mod sg;
mod translate;

pub use keys::{KeyError, KeyKind, KeyTable, Need, PAGE_SIZE, Resolved};
pub use translate::{Chunks, copy_from_host, copy_to_host};

/// How a device reaches memory: its key table and its DMA access. Shared
/// (an `Arc`) with the trains in flight from it, which read
/// the source memory only when the receiving device places them, after
/// this key table's check at that moment (a crossing pin of [`KeyLock`]).
pub struct DeviceMemory {
    /// The memory keys.
    pub keys: KeyLock,
    /// DMA to host memory.
    pub dma: Box<dyn DmaAccess>,
}

/// The key table's reader/writer lock, and the count of trains reading
/// this memory for another device without holding it ("crossings").
///
/// Why crossings: a train's payload is copied straight from the sender's
/// memory into the receiver's, and the receiving engine may hold only one
/// key table at a time (two engines each holding its own table and
/// waiting for the other's, while a writer waits on each, deadlock under
/// writer-preferring locks such as an `EX_SPIN_LOCK`). So the receiver
/// checks the sender's key under the sender's table, lets go of it, and
/// copies under its own; a crossing pin, taken before that check, makes
/// every change of the sender's table ([`KeyLock::update`]) wait, after
/// releasing the table, until the copies that passed a check made before
/// the change have ended. A deregistration therefore returns only when no
/// byte of the memory it released is still being read.
#[derive(Debug)]
pub struct KeyLock {
    table: RwLock<KeyTable>,
    crossings: AtomicU32,
}

impl KeyLock {
    /// A lock over `table`, with no crossing.
    pub const fn new(table: KeyTable) -> Self {
        Self {
            table: RwLock::new(&KEY_TABLE_LOCK, table),
            crossings: AtomicU32::new(0),
        }
    }

    /// Spins until the table is held shared.
    pub fn read(&self) -> SpinRwReadGuard<'_, KeyTable> {
        self.table.read()
    }

    /// Changes the table with `change`, holding it exclusively; then,
    /// holding nothing, waits until the crossings pinned before the change
    /// have ended (none can pass a check of what `change` removed).
    pub fn update<R>(&self, change: impl FnOnce(&mut KeyTable) -> R) -> R {
        let result = change(&mut self.table.write());
        while self.crossings.load(Ordering::Acquire) != 0 {
            core::hint::spin_loop();
        }
        result
    }

    /// Counts a crossing until the pin is dropped. Take it before the
    /// check that grants the read: a change made after that check then
    /// waits for the pin ([`KeyLock::update`]).
    pub(crate) fn pin_crossing(&self) -> CrossingPin<'_> {
        self.crossings.fetch_add(1, Ordering::AcqRel);
        CrossingPin(&self.crossings)
    }
}

/// One crossing in progress ([`KeyLock::pin_crossing`]).
pub(crate) struct CrossingPin<'a>(&'a AtomicU32);

impl Drop for CrossingPin<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

impl core::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeviceMemory").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use core::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::{KeyLock, KeyTable};

    #[test]
    fn a_change_of_the_table_waits_for_the_crossings_pinned_before_it() {
        let lock = Arc::new(KeyLock::new(KeyTable::new(4).unwrap()));
        let pin = lock.pin_crossing();
        let changed = Arc::new(AtomicBool::new(false));
        let changer = {
            let (lock, changed) = (Arc::clone(&lock), Arc::clone(&changed));
            std::thread::spawn(move || {
                lock.update(KeyTable::revoke_all);
                changed.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        // The table itself is free again: a reader is not held up.
        drop(lock.read());
        assert!(
            !changed.load(Ordering::SeqCst),
            "the change returned while a crossing pinned before it was still copying"
        );
        drop(pin);
        changer.join().unwrap();
        assert!(changed.load(Ordering::SeqCst));
        // With no crossing, a change returns at once.
        lock.update(KeyTable::revoke_all);
    }
}

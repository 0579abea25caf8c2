//! Memory protection: the device's key table and address translation.
//!
//! Every byte the device moves is named by a memory key and a virtual (or,
//! for a privileged key, logical) address. Before any DMA the key is checked
//! for existence, validity, its variant (a stale token fails), protection
//! domain, access rights and bounds; only then is the range translated to
//! logical-address chunks. A failed check touches no memory.

use alloc::boxed::Box;

use hwq::DmaAccess;
use hwq::lock::LockClass;

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
/// the source memory only when the receiving device places them, under
/// this key table's check at that moment.
pub struct DeviceMemory {
    /// The memory keys.
    pub keys: RwLock<KeyTable>,
    /// DMA to host memory.
    pub dma: Box<dyn DmaAccess>,
}

impl core::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeviceMemory").finish_non_exhaustive()
    }
}

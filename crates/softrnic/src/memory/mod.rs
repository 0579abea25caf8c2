//! Memory protection: the device's key table and address translation.
//!
//! Every byte the device moves is named by a memory key and a virtual (or,
//! for a privileged key, logical) address. Before any DMA the key is checked
//! for existence, validity, its variant (a stale token fails), protection
//! domain, access rights and bounds; only then is the range translated to
//! logical-address chunks. A failed check touches no memory.

mod keys;
mod translate;

pub use keys::{KeyError, KeyKind, KeyTable, Need, PAGE_SIZE, Resolved};
pub use translate::{Chunks, copy_from_host, copy_to_host};

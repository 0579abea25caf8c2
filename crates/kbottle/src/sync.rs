//! Locking the bottle's own tables. A leaf: every room locks, none needs
//! another room for it.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex even if a thread panicked while holding it: the bottle's
/// tables stay usable for the report.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

//! The image cache: where it lives, its lock, and its keys.
//!
//! CI runs on a fresh clone each time, so the cache lives outside the tree
//! (`$RSNDK_LAB_CACHE`, else `$XDG_CACHE_HOME/rsndk-lab`, else
//! `$HOME/.cache/rsndk-lab`). Finished images are directories that appear by
//! an atomic rename and never change (but for their manifest's mtime, the
//! time of their last use); builders hold an exclusive `flock` on `lock` so
//! two test processes build once between them, and [`crate::prune`] runs
//! under it.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The cache directory (not created).
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RSNDK_LAB_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join("rsndk-lab");
    }
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty());
    home.map_or_else(|| PathBuf::from("/root"), PathBuf::from)
        .join(".cache")
        .join("rsndk-lab")
}

/// An exclusive lock on a cache directory, released on drop.
#[derive(Debug)]
pub struct CacheLock {
    file: File,
}

impl CacheLock {
    /// Waits for and takes the lock of `dir` (created if needed).
    pub fn acquire(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create cache {}", dir.display()), e))?;
        let path = dir.join("lock");
        let file = open_lock_file(&path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        loop {
            // SAFETY: the descriptor is open (owned by `file`); flock has no
            // memory effects.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(Self { file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(Error::io(format!("cannot lock {}", path.display()), err));
            }
        }
    }

    /// Takes the lock of `dir` if nobody holds it; `None` if someone does
    /// (or the cache cannot be opened: the caller only wanted it in
    /// passing).
    pub fn try_acquire(dir: &Path) -> Option<Self> {
        let file = open_lock_file(&dir.join("lock")).ok()?;
        // SAFETY: the descriptor is open (owned by `file`); flock has no
        // memory effects.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        (rc == 0).then_some(Self { file })
    }
}

/// Opens (creating, never truncating) the lock file at `path`.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

impl Drop for CacheLock {
    fn drop(&mut self) {
        // SAFETY: the descriptor is still open; unlocking cannot fail in a
        // way we could act on (closing the file unlocks anyway).
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// A stable 64-bit FNV-1a hash (std's hasher is not stable across
/// releases), for cache keys.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}

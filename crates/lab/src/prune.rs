//! What the image cache lets go, so that it holds what the lab uses and
//! not every kernel and package version it has ever used.
//!
//! Pruning runs at every preparation, under the cache's lock (no other
//! process is building then; a preparation that finds the lock taken does
//! not prune), and removes:
//! - images and SMB module builds of another kernel release than the
//!   prepared image's: every image ships the kernel `linux-image-amd64`
//!   depends on now, so a newer Debian kernel supersedes them all;
//! - images, SMB module builds and resolutions not used for
//!   [`UNUSED_FOR`] (each use sets its mtime: [`mark_used`]), such as those
//!   of an older lab's layout;
//! - every package the prepared image and its SMB modules are not built
//!   from (a kernel's source alone is 140 MB): the next build of another
//!   spec downloads its own again;
//! - build directories of processes that died while building.
//!
//! Entries are recognised by their names (`<release>-<16 hex digits>`,
//! `<16 hex digits>`, `*.deb`, `build-<pid>`, `smb-build-<pid>`); anything
//! else in the cache is left alone.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long an unused image, module build or resolution is kept.
pub const UNUSED_FOR: Duration = Duration::from_secs(14 * 24 * 60 * 60);

/// What one pruning removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Cache entries removed (an image, a module build, a package, ...).
    pub entries: usize,
    /// The bytes they held.
    pub bytes: u64,
}

/// Notes that the entry whose marker file is `marker` (an image's or a
/// module build's `manifest`, a resolution) was just used. A marker that
/// cannot be touched (a read-only cache) only makes the entry look older.
pub fn mark_used(marker: &Path) {
    if let Ok(file) = File::options().append(true).open(marker) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Prunes `cache` for an image of `kernel_release` built from the
/// packages `used_debs` (file names in `debs/`). The caller holds the
/// cache's lock. Removal is best effort: what cannot be removed stays
/// for the next pruning.
pub fn prune_locked(
    cache: &Path,
    kernel_release: &str,
    used_debs: &BTreeSet<String>,
    now: SystemTime,
) -> Pruned {
    let mut pruned = Pruned::default();
    let unused = |marker: &Path| {
        std::fs::metadata(marker)
            .and_then(|meta| meta.modified())
            .map_or(true, |modified| {
                now.duration_since(modified).unwrap_or_default() > UNUSED_FOR
            })
    };
    for kind in ["images", "smb-modules"] {
        for (name, path) in entries(&cache.join(kind)) {
            let Some((release, key)) = name.rsplit_once('-') else {
                continue;
            };
            if is_key(key) && (release != kernel_release || unused(&path.join("manifest"))) {
                remove(&path, &mut pruned);
            }
        }
    }
    for (name, path) in entries(&cache.join("resolved")) {
        if is_key(&name) && unused(&path) {
            remove(&path, &mut pruned);
        }
    }
    for (name, path) in entries(&cache.join("debs")) {
        if path.extension().is_some_and(|ext| ext == "deb") && !used_debs.contains(&name) {
            remove(&path, &mut pruned);
        }
    }
    let me = std::process::id().to_string();
    for (name, path) in entries(cache) {
        let pid = name
            .strip_prefix("smb-build-")
            .or_else(|| name.strip_prefix("build-"));
        if pid.is_some_and(|pid| pid != me && pid.parse::<u32>().is_ok()) {
            remove(&path, &mut pruned);
        }
    }
    pruned
}

/// A cache key as the cache names entries: 16 lowercase hex digits.
fn is_key(text: &str) -> bool {
    text.len() == 16
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// The entries of `dir` with UTF-8 names (none if it cannot be read).
fn entries(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    std::fs::read_dir(dir)
        .map(|read| {
            read.filter_map(std::result::Result::ok)
                .filter_map(|entry| Some((entry.file_name().into_string().ok()?, entry.path())))
                .collect()
        })
        .unwrap_or_default()
}

/// Removes a file or a directory tree, adding what it held to `pruned`.
fn remove(path: &Path, pruned: &mut Pruned) {
    let bytes = size_of(path);
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    if removed.is_ok() {
        pruned.entries += 1;
        pruned.bytes += bytes;
    }
}

/// The bytes of the files under `path` (symbolic links not followed).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    entries(path).iter().map(|(_, child)| size_of(child)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache directory of this test's own, removed when dropped.
    struct TestCache(std::path::PathBuf);

    impl TestCache {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("lab-prune-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        /// Writes `bytes` bytes at `relative`, last modified `age` ago.
        fn file(&self, relative: &str, bytes: usize, age: Duration) {
            let path = self.0.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, vec![0_u8; bytes]).unwrap();
            File::options()
                .append(true)
                .open(&path)
                .unwrap()
                .set_modified(SystemTime::now() - age)
                .unwrap();
        }

        fn has(&self, relative: &str) -> bool {
            self.0.join(relative).exists()
        }
    }

    impl Drop for TestCache {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const NEW: &str = "6.1.0-57-amd64";
    const FRESH: Duration = Duration::from_secs(60);
    const STALE: Duration = Duration::from_secs(15 * 24 * 60 * 60);

    #[test]
    fn a_new_kernel_supersedes_the_old_ones_and_unused_entries_age_out() {
        let cache = TestCache::new("sweep");
        let image = |release: &str, key: &str, age| {
            cache.file(&format!("images/{release}-{key}/manifest"), 10, age);
            cache.file(&format!("images/{release}-{key}/vmlinuz"), 1000, age);
        };
        image(NEW, "ee8628f4256edcef", FRESH); // just built
        image(NEW, "08b27f1ef55938cd", FRESH); // another spec's, in use
        image(NEW, "3a29934387880878", STALE); // an older layout's
        image("6.1.0-56-amd64", "9c7b0302cad263f5", FRESH); // the old kernel's
        cache.file(
            "smb-modules/6.1.0-56-amd64-1cc1ce08ebf78fe8/manifest",
            10,
            FRESH,
        );
        cache.file(
            "smb-modules/6.1.0-57-amd64-2f4b5de87bdbedbb/manifest",
            10,
            FRESH,
        );
        cache.file("resolved/4695297ae822dc22", 10, FRESH);
        cache.file("resolved/568af3fc6a9deb71", 10, STALE);
        cache.file("debs/linux-source-6.1_6.1.192-3_all.deb", 300, STALE);
        cache.file("debs/linux-source-6.1_6.1.192-2_all.deb", 200, FRESH);
        cache.file("debs/dash_0.5.12-2_amd64.deb", 50, FRESH);
        cache.file("build-4000000000/out/vmlinuz", 70, FRESH);
        cache.file(
            &format!("build-{}/out/vmlinuz", std::process::id()),
            70,
            FRESH,
        );
        // Not the cache's names: left alone.
        cache.file("images/notes.txt", 5, STALE);
        cache.file("images/6.1.0-56-amd64-NOTAKEY/manifest", 5, STALE);
        cache.file("lock", 0, STALE);

        let used: BTreeSet<String> = [
            "linux-source-6.1_6.1.192-3_all.deb",
            "dash_0.5.12-2_amd64.deb",
        ]
        .map(String::from)
        .into();
        let pruned = prune_locked(&cache.0, NEW, &used, SystemTime::now());

        for kept in [
            "images/6.1.0-57-amd64-ee8628f4256edcef/vmlinuz",
            "images/6.1.0-57-amd64-08b27f1ef55938cd/vmlinuz",
            "smb-modules/6.1.0-57-amd64-2f4b5de87bdbedbb/manifest",
            "resolved/4695297ae822dc22",
            "debs/linux-source-6.1_6.1.192-3_all.deb",
            "debs/dash_0.5.12-2_amd64.deb",
            &format!("build-{}/out/vmlinuz", std::process::id()),
            "images/notes.txt",
            "images/6.1.0-56-amd64-NOTAKEY/manifest",
            "lock",
        ] {
            assert!(cache.has(kept), "{kept} was removed");
        }
        for gone in [
            "images/6.1.0-57-amd64-3a29934387880878",
            "images/6.1.0-56-amd64-9c7b0302cad263f5",
            "smb-modules/6.1.0-56-amd64-1cc1ce08ebf78fe8",
            "resolved/568af3fc6a9deb71",
            "debs/linux-source-6.1_6.1.192-2_all.deb",
            "build-4000000000",
        ] {
            assert!(!cache.has(gone), "{gone} was kept");
        }
        assert_eq!(
            pruned,
            Pruned {
                entries: 6,
                bytes: 1010 + 1010 + 10 + 10 + 200 + 70
            }
        );
    }

    #[test]
    fn a_use_keeps_an_entry_from_ageing_out() {
        let cache = TestCache::new("use");
        let manifest = format!("images/{NEW}-08b27f1ef55938cd/manifest");
        cache.file(&manifest, 10, STALE);
        mark_used(&cache.0.join(&manifest));
        let pruned = prune_locked(&cache.0, NEW, &BTreeSet::new(), SystemTime::now());
        assert_eq!(pruned, Pruned::default());
        assert!(cache.has(&manifest));
        // Without the use it goes.
        cache.file(&manifest, 10, STALE);
        let pruned = prune_locked(&cache.0, NEW, &BTreeSet::new(), SystemTime::now());
        assert_eq!(pruned.entries, 1);
        assert!(!cache.has(&format!("images/{NEW}-08b27f1ef55938cd")));
    }

    #[test]
    fn an_empty_or_missing_cache_prunes_nothing() {
        let cache = TestCache::new("empty");
        let nothing = prune_locked(&cache.0, NEW, &BTreeSet::new(), SystemTime::now());
        assert_eq!(nothing, Pruned::default());
        let missing = prune_locked(
            &cache.0.join("not-there"),
            NEW,
            &BTreeSet::new(),
            SystemTime::now(),
        );
        assert_eq!(missing, Pruned::default());
    }
}

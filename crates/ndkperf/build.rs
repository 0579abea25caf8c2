//! Records the git commit the tool is built from (`NDKPERF_GIT_COMMIT`,
//! empty outside a git checkout) for `--output`'s run metadata. An
//! `NDKPERF_GIT_COMMIT` in the build's environment wins (a build from a
//! source tarball can say where it came from).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=NDKPERF_GIT_COMMIT");
    let commit = std::env::var("NDKPERF_GIT_COMMIT")
        .ok()
        .or_else(head_commit)
        .unwrap_or_default();
    println!("cargo:rustc-env=NDKPERF_GIT_COMMIT={commit}");
}

/// The commit of HEAD, read from `.git` without running git: HEAD names a
/// ref (loose, or in packed-refs) or holds the commit itself. In a linked
/// worktree `.git` is a file naming the worktree's git directory, whose
/// `commondir` holds the refs.
fn head_commit() -> Option<String> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let dot_git = manifest
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    let git = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let dir = PathBuf::from(text.trim().strip_prefix("gitdir: ")?);
        if dir.is_absolute() {
            dir
        } else {
            dot_git.parent()?.join(dir)
        }
    };
    let common = std::fs::read_to_string(git.join("commondir"))
        .ok()
        .map_or_else(|| git.clone(), |c| git.join(c.trim()));
    let head_path = git.join("HEAD");
    println!("cargo:rerun-if-changed={}", head_path.display());
    let head = std::fs::read_to_string(&head_path).ok()?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned());
    };
    for dir in [&git, &common] {
        let loose = dir.join(name);
        println!("cargo:rerun-if-changed={}", loose.display());
        if let Ok(text) = std::fs::read_to_string(&loose) {
            return Some(text.trim().to_owned());
        }
    }
    packed_ref(&common.join("packed-refs"), name)
}

fn packed_ref(path: &Path, name: &str) -> Option<String> {
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (commit, r) = l.split_once(' ')?;
        (r == name).then(|| commit.to_owned())
    })
}

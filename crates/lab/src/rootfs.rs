//! The guest's root file system, assembled from unpacked packages: whole
//! packages (less their documentation), then every library their ELF files
//! need (PT_INTERP and DT_NEEDED, recursively), looked up in all the
//! downloaded packages. Paths are merged-/usr (`/lib` is `/usr/lib`, ...).

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::cpio::CpioWriter;
use crate::elf;
use crate::error::{Error, Result};

/// One node of the tree.
#[derive(Debug)]
enum Node {
    Dir,
    /// A file copied from the host, with its permission bits.
    File {
        source: PathBuf,
        mode: u32,
    },
    /// A file whose contents the lab generates.
    Data {
        bytes: Vec<u8>,
        mode: u32,
    },
    Symlink(String),
    /// A character device `major:minor`.
    CharDevice(u32, u32),
}

/// Where a guest path comes from: which package, which host file.
#[derive(Debug, Clone)]
struct Source {
    package: String,
    host: PathBuf,
}

/// Directories that hold documentation or service files a busybox guest
/// does not use, and tc's ATM plugin (it needs libatm1, which iproute2 only
/// recommends).
const SKIPPED: &[&str] = &[
    "usr/lib/x86_64-linux-gnu/tc/q_atm.so",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/lintian",
    "usr/share/locale",
    "usr/share/bash-completion",
    "usr/share/zsh",
    "usr/lib/systemd",
    "etc/init.d",
    "etc/apparmor.d",
];

/// Where DT_NEEDED libraries are looked for when no RUNPATH has them.
const LIBRARY_DIRS: &[&str] = &["usr/lib/x86_64-linux-gnu", "usr/lib", "usr/lib64"];

/// The tree being assembled, with the index of every downloaded file.
#[derive(Debug, Default)]
pub struct RootFs {
    nodes: BTreeMap<String, Node>,
    index: BTreeMap<String, Source>,
    /// ELF files added but not yet scanned for what they need.
    unscanned: VecDeque<String>,
}

/// `path` (relative, `/`-separated) in the merged-/usr layout.
pub fn merged_usr(path: &str) -> String {
    let path = path.trim_start_matches("./").trim_start_matches('/');
    for top in ["bin", "sbin", "lib", "lib64"] {
        if path == top {
            return format!("usr/{top}");
        }
        if let Some(rest) = path.strip_prefix(top).and_then(|r| r.strip_prefix('/')) {
            return format!("usr/{top}/{rest}");
        }
    }
    path.to_owned()
}

/// `path` with `.` and `..` components resolved lexically.
fn lexical(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

impl RootFs {
    /// A tree with the merged-/usr top-level links.
    pub fn new() -> Self {
        let mut tree = Self::default();
        for top in ["bin", "sbin", "lib", "lib64"] {
            tree.nodes
                .insert(top.to_owned(), Node::Symlink(format!("usr/{top}")));
        }
        tree
    }

    /// Indexes every file of the package unpacked at `root`.
    pub fn index_package(&mut self, package: &str, root: &Path) -> Result<()> {
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| Error::io(format!("cannot list {}", dir.display()), e))?;
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(format!("in {}", dir.display()), e))?;
                let host = entry.path();
                let kind = entry
                    .file_type()
                    .map_err(|e| Error::io(format!("cannot stat {}", host.display()), e))?;
                if kind.is_dir() {
                    pending.push(host.clone());
                }
                let relative = host
                    .strip_prefix(root)
                    .map_err(|_| Error::Image(format!("{} escapes its root", host.display())))?;
                self.index
                    .entry(merged_usr(&relative.to_string_lossy()))
                    .or_insert(Source {
                        package: package.to_owned(),
                        host,
                    });
            }
        }
        Ok(())
    }

    /// Adds every file of `package` outside [`SKIPPED`].
    pub fn add_package(&mut self, package: &str) -> Result<()> {
        let paths: Vec<String> = self
            .index
            .iter()
            .filter(|(path, source)| {
                source.package == package
                    && !SKIPPED
                        .iter()
                        .any(|skip| path.as_str() == *skip || path.starts_with(&format!("{skip}/")))
            })
            .map(|(path, _)| path.clone())
            .collect();
        if paths.is_empty() {
            return Err(Error::Image(format!("package {package} was not unpacked")));
        }
        for path in paths {
            self.add_path(&path, false)?;
        }
        Ok(())
    }

    /// Adds the downloaded file at guest path `path` (merged-/usr), the
    /// target of a symlink too. A dangling symlink is an error if `strict`.
    pub fn add_path(&mut self, path: &str, strict: bool) -> Result<()> {
        let mut pending = vec![path.to_owned()];
        while let Some(path) = pending.pop() {
            if self.nodes.contains_key(&path) {
                continue;
            }
            let Some(source) = self.index.get(&path).cloned() else {
                if strict {
                    return Err(Error::Image(format!(
                        "/{path} is in none of the downloaded packages"
                    )));
                }
                continue;
            };
            let meta = std::fs::symlink_metadata(&source.host)
                .map_err(|e| Error::io(format!("cannot stat {}", source.host.display()), e))?;
            self.add_parents(&path);
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&source.host)
                    .map_err(|e| Error::io(format!("cannot read {}", source.host.display()), e))?;
                let target = target.to_string_lossy();
                let resolved = if target.starts_with('/') {
                    merged_usr(&lexical(&target))
                } else {
                    let parent = path.rsplit_once('/').map_or("", |(dir, _)| dir);
                    merged_usr(&lexical(&format!("{parent}/{target}")))
                };
                // Absolute: the link moved to its merged-/usr place.
                self.nodes
                    .insert(path.clone(), Node::Symlink(format!("/{resolved}")));
                pending.push(resolved);
            } else if meta.is_dir() {
                self.nodes.insert(path, Node::Dir);
            } else {
                let mode = meta.permissions().mode() & 0o7777;
                // Kernel modules are ELF too, but need nothing from user space.
                let is_module = Path::new(&path).extension().is_some_and(|ext| ext == "ko");
                if !is_module && is_elf_file(&source.host) {
                    self.unscanned.push_back(path.clone());
                }
                self.nodes.insert(
                    path,
                    Node::File {
                        source: source.host,
                        mode,
                    },
                );
            }
        }
        Ok(())
    }

    /// Adds a generated file.
    pub fn add_data(&mut self, path: &str, mode: u32, bytes: impl Into<Vec<u8>>) {
        self.add_parents(path);
        self.nodes.insert(
            path.to_owned(),
            Node::Data {
                bytes: bytes.into(),
                mode,
            },
        );
    }

    /// Adds a symlink.
    pub fn add_symlink(&mut self, path: &str, target: &str) {
        self.add_parents(path);
        self.nodes
            .insert(path.to_owned(), Node::Symlink(target.to_owned()));
    }

    /// Adds an empty directory.
    pub fn add_dir(&mut self, path: &str) {
        self.add_parents(path);
        self.nodes.insert(path.to_owned(), Node::Dir);
    }

    /// Adds a character device node.
    pub fn add_char_device(&mut self, path: &str, major: u32, minor: u32) {
        self.add_parents(path);
        self.nodes
            .insert(path.to_owned(), Node::CharDevice(major, minor));
    }

    fn add_parents(&mut self, path: &str) {
        let mut prefix = String::new();
        let parents: Vec<&str> = path.split('/').collect();
        for part in &parents[..parents.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            self.nodes.entry(prefix.clone()).or_insert(Node::Dir);
        }
    }

    /// Adds the libraries `sonames` (what `who` needs), found like DT_NEEDED.
    pub fn add_libraries(&mut self, sonames: &[String], who: &str) -> Result<()> {
        let dirs: Vec<String> = LIBRARY_DIRS.iter().map(|dir| (*dir).to_owned()).collect();
        for soname in sonames {
            self.add_library(soname, &dirs, who)?;
        }
        Ok(())
    }

    fn add_library(&mut self, library: &str, dirs: &[String], who: &str) -> Result<()> {
        let found = dirs
            .iter()
            .map(|dir| format!("{dir}/{library}"))
            .find(|candidate| self.index.contains_key(candidate));
        let Some(found) = found else {
            return Err(Error::Image(format!(
                "{who} needs {library}, which none of the downloaded packages provides (looked in {}); add the package that ships it to the image's packages",
                dirs.join(", ")
            )));
        };
        self.add_path(&found, true)
    }

    /// Adds what every added ELF file needs, until nothing is missing; an
    /// error names the file and the library no package provides.
    pub fn add_needed_libraries(&mut self) -> Result<()> {
        while let Some(path) = self.unscanned.pop_front() {
            let Some(Node::File { source, .. }) = self.nodes.get(&path) else {
                continue;
            };
            let bytes = std::fs::read(source)
                .map_err(|e| Error::io(format!("cannot read {}", source.display()), e))?;
            let needs = elf::needs(&bytes, &path).map_err(Error::Image)?;
            if let Some(interpreter) = &needs.interpreter {
                self.add_path(&merged_usr(&lexical(interpreter)), true)
                    .map_err(|e| Error::Image(format!("/{path} needs its interpreter: {e}")))?;
            }
            let origin = path.rsplit_once('/').map_or("", |(dir, _)| dir);
            let mut dirs: Vec<String> = needs
                .search_paths
                .iter()
                .map(|dir| merged_usr(&lexical(&dir.replace("$ORIGIN", origin))))
                .collect();
            dirs.extend(LIBRARY_DIRS.iter().map(|dir| (*dir).to_owned()));
            for library in &needs.libraries {
                self.add_library(library, &dirs, &format!("/{path}"))?;
            }
        }
        Ok(())
    }

    /// The number of entries.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Writes the tree as a newc cpio archive to `out`.
    pub fn write_cpio<W: Write>(&self, out: W) -> Result<W> {
        let mut cpio = CpioWriter::new(out);
        let write_error = |e| Error::io("cannot write the initramfs", e);
        for (path, node) in &self.nodes {
            match node {
                Node::Dir => cpio.dir(path, 0o755),
                Node::File { source, mode } => {
                    let bytes = std::fs::read(source)
                        .map_err(|e| Error::io(format!("cannot read {}", source.display()), e))?;
                    cpio.file(path, *mode, &bytes)
                }
                Node::Data { bytes, mode } => cpio.file(path, *mode, bytes),
                Node::Symlink(target) => cpio.symlink(path, target),
                Node::CharDevice(major, minor) => cpio.char_device(path, 0o600, *major, *minor),
            }
            .map_err(write_error)?;
        }
        cpio.finish().map_err(write_error)
    }
}

fn is_elf_file(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok_and(|()| elf::is_elf(&magic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_directories_move_under_usr() {
        assert_eq!(
            merged_usr("lib/x86_64-linux-gnu/libc.so.6"),
            "usr/lib/x86_64-linux-gnu/libc.so.6"
        );
        assert_eq!(merged_usr("/sbin/tc"), "usr/sbin/tc");
        assert_eq!(merged_usr("library/x"), "library/x");
        assert_eq!(merged_usr("etc/libibverbs.d"), "etc/libibverbs.d");
    }

    #[test]
    fn dot_dot_resolves_lexically() {
        assert_eq!(lexical("usr/lib/x/../../../lib/y"), "lib/y");
        assert_eq!(lexical("/a/./b"), "a/b");
    }
}

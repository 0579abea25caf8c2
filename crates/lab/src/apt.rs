//! Debian packages for the guest: resolved with `apt-cache`, fetched with
//! `apt-get download`, unpacked with `dpkg-deb -x`. Nothing is installed on
//! the host.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::host;

/// A package at the version `apt-get download` fetches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Package {
    /// Its name, e.g. `rdmacm-utils`.
    pub name: String,
    /// Its candidate version, e.g. `44.0-2`.
    pub version: String,
    /// Its architecture, e.g. `amd64` or `all`.
    pub architecture: String,
}

impl Package {
    /// The file `apt-get download` writes (an epoch's `:` becomes `%3a`).
    pub fn deb_file_name(&self) -> String {
        format!(
            "{}_{}_{}.deb",
            self.name,
            self.version.replace(':', "%3a"),
            self.architecture
        )
    }
}

/// Runs `apt-get update` when the package lists are missing (a fresh
/// machine), so `apt-cache` can resolve anything.
pub fn ensure_lists() -> Result<()> {
    let lists = Path::new("/var/lib/apt/lists");
    let has_lists = std::fs::read_dir(lists).is_ok_and(|entries| {
        entries
            .filter_map(std::result::Result::ok)
            .any(|entry| entry.file_name().to_string_lossy().contains("_Packages"))
    });
    if !has_lists {
        host::run(host::command(host::APT_GET)?.args(["update", "-qq"]))?;
    }
    Ok(())
}

/// A fingerprint of everything apt's choice of candidate versions depends
/// on (the package lists, sources, pinning, installed packages): while it
/// is unchanged, a resolution done before still holds.
pub fn lists_fingerprint() -> String {
    let mut text = String::new();
    let mut note = |path: &Path| {
        if let Ok(meta) = path.metadata() {
            let modified = meta
                .modified()
                .ok()
                .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "{} {} {}",
                path.display(),
                meta.len(),
                modified.as_nanos()
            );
        }
    };
    for dir in [
        "/var/lib/apt/lists",
        "/etc/apt/sources.list.d",
        "/etc/apt/preferences.d",
    ] {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(std::result::Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_file() && !path.ends_with("lock"))
            .collect();
        files.sort();
        for file in files {
            note(&file);
        }
    }
    for file in [
        "/etc/apt/sources.list",
        "/etc/apt/preferences",
        "/var/lib/dpkg/status",
    ] {
        note(Path::new(file));
    }
    text
}

/// The kernel package `linux-image-amd64` currently depends on, e.g.
/// `linux-image-6.1.0-56-amd64`.
pub fn kernel_package() -> Result<String> {
    let text = host::run(host::command(host::APT_CACHE)?.args([
        "depends",
        "--important",
        "linux-image-amd64",
    ]))?;
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("Depends: "))
        .find(|name| name.starts_with("linux-image-") && !name.starts_with('<'))
        .map(str::to_owned)
        .ok_or_else(|| {
            Error::Image(format!(
                "linux-image-amd64 names no kernel package (apt-cache depends said: {}); run apt-get update",
                text.trim()
            ))
        })
}

/// `roots` and everything they need through Depends and Pre-Depends,
/// recursively; of alternatives the first real package (or the first
/// provider of a virtual one).
pub fn depends_closure(roots: &[String]) -> Result<BTreeSet<String>> {
    let mut closure: BTreeSet<String> = roots.iter().cloned().collect();
    let mut frontier: Vec<String> = roots.to_vec();
    while !frontier.is_empty() {
        let text = host::run(
            host::command(host::APT_CACHE)?
                .args(["depends", "--important", "--no-recommends", "--no-suggests"])
                .args(&frontier),
        )?;
        frontier.clear();
        for name in parse_depends(&text)? {
            if closure.insert(name.clone()) {
                frontier.push(name);
            }
        }
    }
    Ok(closure)
}

/// One alternative of a dependency line.
struct Choice {
    name: String,
    is_virtual: bool,
    providers: Vec<String>,
}

/// The packages named by `apt-cache depends --important` output, one per
/// dependency group.
fn parse_depends(text: &str) -> Result<Vec<String>> {
    let mut chosen = Vec::new();
    let mut group: Vec<Choice> = Vec::new();
    let mut group_closed = false;
    for line in text.lines() {
        let dependency = line
            .get(1..)
            .and_then(|rest| rest.trim_start_matches([' ', '|']).split_once(": "))
            .filter(|(kind, _)| matches!(*kind, "Depends" | "PreDepends"));
        if let Some((_, name)) = dependency {
            if group_closed {
                chosen.push(choose(&group)?);
                group.clear();
            }
            let name = name.trim();
            let is_virtual = name.starts_with('<');
            group.push(Choice {
                name: strip_arch(name.trim_matches(['<', '>'])),
                is_virtual,
                providers: Vec::new(),
            });
            group_closed = !line.starts_with(" |");
        } else if line.starts_with("    ") {
            if let Some(choice) = group.last_mut() {
                choice.providers.push(strip_arch(line.trim()));
            }
        } else if !group.is_empty() {
            chosen.push(choose(&group)?);
            group.clear();
            group_closed = false;
        }
    }
    if !group.is_empty() {
        chosen.push(choose(&group)?);
    }
    Ok(chosen)
}

fn strip_arch(name: &str) -> String {
    name.split(':').next().unwrap_or(name).to_owned()
}

fn choose(group: &[Choice]) -> Result<String> {
    group
        .iter()
        .find(|choice| !choice.is_virtual)
        .map(|choice| choice.name.clone())
        .or_else(|| {
            group
                .iter()
                .find_map(|choice| choice.providers.first().cloned())
        })
        .ok_or_else(|| {
            let names: Vec<&str> = group.iter().map(|choice| choice.name.as_str()).collect();
            Error::Image(format!(
                "no package provides {}; run apt-get update",
                names.join(" | ")
            ))
        })
}

/// The candidate version of each of `names`.
pub fn candidates(names: &BTreeSet<String>) -> Result<Vec<Package>> {
    let text = host::run(
        host::command(host::APT_CACHE)?
            .args(["show", "--no-all-versions"])
            .args(names),
    )?;
    let mut found: BTreeMap<String, Package> = BTreeMap::new();
    for record in text.split("\n\n") {
        let field = |key: &str| {
            record
                .lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix(": "))
                .map(str::to_owned)
        };
        if let (Some(name), Some(version), Some(architecture)) =
            (field("Package"), field("Version"), field("Architecture"))
        {
            found.entry(name.clone()).or_insert(Package {
                name,
                version,
                architecture,
            });
        }
    }
    names
        .iter()
        .map(|name| {
            found.remove(name).ok_or_else(|| {
                Error::Image(format!(
                    "apt-cache has no candidate version of {name}; run apt-get update"
                ))
            })
        })
        .collect()
}

/// Downloads each of `packages` not yet in `debs_dir`.
pub fn download(packages: &[Package], debs_dir: &Path) -> Result<()> {
    let missing: Vec<&Package> = packages
        .iter()
        .filter(|package| !debs_dir.join(package.deb_file_name()).is_file())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let partial = debs_dir.join(format!(".partial-{}", std::process::id()));
    std::fs::create_dir_all(&partial)
        .map_err(|e| Error::io(format!("cannot create {}", partial.display()), e))?;
    let mut apt = host::command(host::APT_GET)?;
    // apt-get refuses to drop to its sandbox user in a root-owned cache dir.
    apt.current_dir(&partial)
        .args(["-q", "-o", "APT::Sandbox::User=root", "download"])
        .args(
            missing
                .iter()
                .map(|package| format!("{}={}", package.name, package.version)),
        );
    let downloaded = host::run(&mut apt);
    for entry in std::fs::read_dir(&partial)
        .map_err(|e| Error::io(format!("cannot list {}", partial.display()), e))?
        .filter_map(std::result::Result::ok)
    {
        let _ = std::fs::rename(entry.path(), debs_dir.join(entry.file_name()));
    }
    let _ = std::fs::remove_dir_all(&partial);
    downloaded.map_err(|error| {
        Error::Image(format!(
            "downloading the guest's packages failed (check the network to the Debian mirror and `apt-get update`): {error}"
        ))
    })?;
    for package in missing {
        if !debs_dir.join(package.deb_file_name()).is_file() {
            return Err(Error::Image(format!(
                "apt-get download did not produce {}",
                package.deb_file_name()
            )));
        }
    }
    Ok(())
}

/// Unpacks `deb` into `root` with `dpkg-deb -x`.
pub fn unpack(deb: &Path, root: &Path) -> Result<()> {
    std::fs::create_dir_all(root)
        .map_err(|e| Error::io(format!("cannot create {}", root.display()), e))?;
    host::run(host::command(host::DPKG_DEB)?.arg("-x").arg(deb).arg(root))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternatives_take_the_first_real_package() {
        let text = "iproute2\n |Depends: debconf\n  Depends: <debconf-2.0>\n    cdebconf\n    debconf\n  Depends: libbpf1\ntcpdump\n  Depends: libc6:amd64\n  PreDepends: <virt>\n    provider\n";
        assert_eq!(
            parse_depends(text).unwrap(),
            ["debconf", "libbpf1", "libc6", "provider"]
        );
    }

    #[test]
    fn a_virtual_package_without_provider_is_an_error() {
        assert!(parse_depends("x\n  Depends: <nothing>\n").is_err());
    }

    #[test]
    fn epochs_are_escaped_in_file_names() {
        let package = Package {
            name: "busybox-static".into(),
            version: "1:1.35.0-4".into(),
            architecture: "amd64".into(),
        };
        assert_eq!(
            package.deb_file_name(),
            "busybox-static_1%3a1.35.0-4_amd64.deb"
        );
    }
}

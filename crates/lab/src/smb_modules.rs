//! `ksmbd.ko` and `cifs.ko` with SMB Direct, for the guest's kernel.
//!
//! Debian 12 builds its kernels without `CONFIG_SMB_SERVER_SMBDIRECT` and
//! `CONFIG_CIFS_SMB_DIRECT`, so its stock modules speak SMB over TCP only.
//! This rebuilds just `fs/smb/server` and `fs/smb/client` out of tree from
//! Debian's `linux-source-6.1` at the guest kernel's own version, against
//! `linux-headers-RELEASE` (and the common headers and `linux-kbuild-6.1`
//! they depend on), with those options on, using the host's `gcc-12` (the
//! compiler the headers name). Nothing is installed: the packages are
//! `apt-get download`ed and unpacked under the cache. The modules carry
//! the guest kernel's vermagic and load unsigned (the kernel only taints).
//!
//! Two fixes to Debian's ksmbd 6.1.192 and a dual-stack SMB Direct
//! listener are made to the unpacked source ([`SOURCE_EDITS`]); the result is cached by the packages' versions, the
//! edits and the build's options ([`cache_key`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::apt::{self, Package};
use crate::cache;
use crate::error::{Error, Result};
use crate::host;
use crate::prune;
use crate::source_edit::SourceEdit;

/// Bumped when the build changes in a way the key's text does not show.
const BUILD_VERSION: u32 = 1;

/// The edits made to the kernel source before building.
pub const SOURCE_EDITS: [SourceEdit; 6] = [
    // ksmbd-tools 3.4.7 (Debian 12) lays out `struct
    // ksmbd_share_config_response` with `reserved[112]` and no
    // `payload_sz`; Debian's kernel 6.1.192 has a stable backport with
    // `reserved[111]` then `payload_sz`, so the module reads the tools'
    // last reserved word (zero) as the payload's size, rejects every
    // reply's length and fails every share (IPC$ too) with
    // BAD_NETWORK_NAME. The module is built to the tools' layout rather
    // than the tools to the module's: the tools are a user-space binary
    // package we ship as Debian built it, the module we build anyway. The
    // tools' payload is everything after the fixed struct, so the module
    // takes its size from the message's length.
    SourceEdit {
        file: "fs/smb/server/transport_ipc.c",
        anchor: "\t\tif (entry->msg_sz < sizeof(struct ksmbd_share_config_response))\n\t\t\treturn -EINVAL;\n",
        insert: "\t\t/* rsndk lab: ksmbd-tools 3.4.7 sends reserved[112], no payload_sz. */\n\t\tresp->payload_sz = entry->msg_sz - sizeof(struct ksmbd_share_config_response);\n",
        why: "share-config IPC reply in ksmbd-tools 3.4.7's layout",
    },
    // The first file open of a mount passes a NULL opinfo to opinfo_put
    // and oopses; later kernels return early on NULL.
    SourceEdit {
        file: "fs/smb/server/oplock.c",
        anchor: "void opinfo_put(struct oplock_info *opinfo)\n{\n",
        insert: "\tif (!opinfo)\n\t\treturn;\n\n",
        why: "NULL opinfo in opinfo_put",
    },
    // ksmbd's SMB Direct listener binds AF_INET INADDR_ANY
    // (transport_rdma.c:2158-2171, smb_direct_listen; mainline too), and
    // rdma_cm makes an AF_INET listener IPv4-only (cma.c:3989-3990 sets
    // afonly; cma_match_private_data, cma.c:1690-1698, then refuses a
    // RoCEv2 REQ over IPv6): SMB Direct over IPv6 is refused
    // (STATUS_CONNECTION_REFUSED). The lab binds in6addr_any instead,
    // which takes both families (the guest's bindv6only is 0), so
    // clients are tested over IPv6 too. The first edit declares the IPv6
    // address, the second binds it and skips the IPv4 bind (`if (0)`
    // guards the original statement that follows).
    SourceEdit {
        file: "fs/smb/server/transport_rdma.c",
        anchor: "\t\t.sin_port\t\t= htons(port),\n\t};\n",
        insert: "\t/* rsndk lab: SMB Direct over IPv6 and IPv4 alike. */\n\tstruct sockaddr_in6 sin6 = {\n\t\t.sin6_family\t\t= AF_INET6,\n\t\t.sin6_port\t\t= htons(port),\n\t};\n",
        why: "SMB Direct listener on in6addr_any: its address",
    },
    SourceEdit {
        file: "fs/smb/server/transport_rdma.c",
        anchor: "\t\treturn PTR_ERR(cm_id);\n\t}\n\n",
        insert: "\t/* rsndk lab: bind in6addr_any, not the IPv4-only sin below. */\n\tret = rdma_bind_addr(cm_id, (struct sockaddr *)&sin6);\n\tif (0)\n",
        why: "SMB Direct listener on in6addr_any: its bind",
    },
    // `stop_sessions` (connection.c:488-510, run by `ksmbd.control
    // --shutdown`) lets go of conn_list_lock to shut each connection down
    // and then follows that connection's list link, which the connection's
    // own thread may have unlinked and freed meanwhile. With a connection
    // still closing from the test before (a transfer cut by a stop), the
    // next start's shutdown oopsed at ksmbd_conn_transport_destroy+0x3c
    // reading conn->transport from 0xdead000000000088 (LIST_POISON1 less
    // the list link's offset) and hung every later start in D state.
    // The lab shuts each connection down once (the first edit skips those
    // already exiting, which only stop_sessions marks) and rescans the list
    // from its head after every unlock (the second).
    SourceEdit {
        file: "fs/smb/server/connection.c",
        anchor: "\tlist_for_each_entry(conn, &conn_list, conns_list) {\n\t\tt = conn->transport;\n",
        insert: "\t\t/* rsndk lab: shut each connection down once (rescan below). */\n\t\tif (ksmbd_conn_exiting(conn))\n\t\t\tcontinue;\n",
        why: "stop_sessions: skip connections already shut down",
    },
    SourceEdit {
        file: "fs/smb/server/connection.c",
        anchor: "\t\t\tt->ops->shutdown(t);\n\t\t\tdown_read(&conn_list_lock);\n",
        insert: "\t\t\t/* rsndk lab: conn may be freed while unlocked: rescan. */\n\t\t\tup_read(&conn_list_lock);\n\t\t\tgoto again;\n",
        why: "stop_sessions: rescan after each unlocked shutdown",
    },
];

/// One module directory of the source and the Kbuild options it is built with.
struct ModuleBuild {
    /// The directory under the source root, given to Kbuild as `M=`.
    dir: &'static str,
    /// The module file Kbuild leaves there.
    module: &'static str,
    /// `CONFIG_*=VALUE` words for make (Kbuild's Makefiles read them).
    make_options: &'static [&'static str],
    /// The same options for the C code (the headers' `autoconf.h` lacks them).
    defines: &'static str,
}

const BUILDS: [ModuleBuild; 2] = [
    ModuleBuild {
        dir: "fs/smb/server",
        module: "ksmbd.ko",
        make_options: &["CONFIG_SMB_SERVER=m", "CONFIG_SMB_SERVER_SMBDIRECT=y"],
        defines: "-DCONFIG_SMB_SERVER_SMBDIRECT=1",
    },
    ModuleBuild {
        dir: "fs/smb/client",
        module: "cifs.ko",
        make_options: &["CONFIG_CIFS=m", "CONFIG_CIFS_SMB_DIRECT=y"],
        defines: "-DCONFIG_CIFS_SMB_DIRECT=1",
    },
];

/// The source files the build needs out of the kernel source tarball:
/// the two module directories and their shared code, `fs/internal.h`
/// (ksmbd's vfs.c includes it), and what `scripts/asn1_compiler` (for
/// ksmbd's SPNEGO parsers; the headers lack it) is built from.
const SOURCE_MEMBERS: [&str; 4] = [
    "fs/smb/*",
    "fs/internal.h",
    "scripts/asn1_compiler.c",
    "include/linux/asn1*",
];

/// The built modules in the cache.
#[derive(Debug, Clone)]
pub struct SmbModules {
    /// `ksmbd.ko` (SMB Direct on), stripped of debug information.
    pub ksmbd: PathBuf,
    /// `cifs.ko` (SMB Direct on), stripped of debug information.
    pub cifs: PathBuf,
    /// Whether this call built them (false: they were cached).
    pub built: bool,
    /// How long finding or building them took.
    pub elapsed: Duration,
}

/// The packages the build needs, at versions matching `kernel` (the
/// `linux-image-*` package): `linux-source-X.Y` and `linux-headers-RELEASE`
/// at the kernel's version, and what the headers depend on (the common
/// headers at their exact version, `linux-kbuild-X.Y` at its candidate).
pub fn build_packages(kernel: &Package, release: &str) -> Result<Vec<Package>> {
    let series = kernel_series(&kernel.version).ok_or_else(|| {
        Error::Image(format!(
            "cannot tell the kernel series of {} {}",
            kernel.name, kernel.version
        ))
    })?;
    let (source, _) = show_exact(&format!("linux-source-{series}"), &kernel.version)?;
    let (headers, depends) = show_exact(&format!("linux-headers-{release}"), &kernel.version)?;
    let mut packages = vec![source, headers];
    let mut candidates = std::collections::BTreeSet::new();
    for (name, exact) in parse_depends_field(&depends) {
        if name.starts_with("linux-headers-") {
            let version = exact.ok_or_else(|| {
                Error::Image(format!(
                    "linux-headers-{release} depends on {name} at no exact version"
                ))
            })?;
            packages.push(show_exact(&name, &version)?.0);
        } else if name.starts_with("linux-kbuild-") {
            candidates.insert(name);
        }
    }
    packages.extend(apt::candidates(&candidates)?);
    packages.sort();
    Ok(packages)
}

/// `6.1.192-2` → `6.1`.
fn kernel_series(version: &str) -> Option<String> {
    let upstream = version.split(['-', '+', '~']).next()?;
    let mut parts = upstream.split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    Some(format!("{major}.{minor}"))
}

/// The package `name` at exactly `version`, and its Depends field.
fn show_exact(name: &str, version: &str) -> Result<(Package, String)> {
    let text = host::run(
        host::command(host::APT_CACHE)?
            .arg("show")
            .arg(format!("{name}={version}")),
    )
    .map_err(|error| {
        Error::Image(format!(
            "apt has no {name} at version {version} (the guest kernel's; run apt-get update): {error}"
        ))
    })?;
    let record = text.split("\n\n").next().unwrap_or_default();
    let field = |key: &str| {
        record
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(": "))
            .map(str::to_owned)
    };
    let architecture = field("Architecture").ok_or_else(|| {
        Error::Image(format!(
            "apt-cache show {name}={version} has no Architecture"
        ))
    })?;
    let package = Package {
        name: name.to_owned(),
        version: version.to_owned(),
        architecture,
    };
    Ok((package, field("Depends").unwrap_or_default()))
}

/// The first alternative of each dependency of a Depends field, with its
/// version if the relation is `=`.
fn parse_depends_field(field: &str) -> Vec<(String, Option<String>)> {
    field
        .split(',')
        .filter_map(|group| {
            let first = group.split('|').next()?.trim();
            let (name, relation) = match first.split_once('(') {
                Some((name, relation)) => (name.trim(), Some(relation.trim_end_matches(')'))),
                None => (first, None),
            };
            let exact = relation
                .and_then(|relation| relation.trim().strip_prefix('='))
                .map(|version| version.trim().to_owned());
            let name = name.split(':').next().unwrap_or(name);
            (!name.is_empty()).then(|| (name.to_owned(), exact))
        })
        .collect()
}

/// The text the modules' cache key hashes: the build packages, the
/// edits and the Kbuild options.
pub fn key_text(packages: &[Package]) -> String {
    let mut text = format!("smb modules {BUILD_VERSION}\n");
    for package in packages {
        let _ = writeln!(
            text,
            "{} {} {}",
            package.name, package.version, package.architecture
        );
    }
    for edit in &SOURCE_EDITS {
        text.push_str(&edit.describe());
    }
    for build in &BUILDS {
        let _ = writeln!(
            text,
            "build {} {} {}",
            build.dir,
            build.make_options.join(" "),
            build.defines
        );
    }
    text
}

/// The modules' cache key.
pub fn cache_key(packages: &[Package]) -> u64 {
    cache::fnv1a(key_text(packages).as_bytes())
}

/// Finds the modules for `packages` in `cache`, or downloads the packages
/// into `debs` and builds them. The caller holds the cache's lock.
pub fn prepare_locked(
    cache: &Path,
    release: &str,
    packages: &[Package],
    debs: &Path,
) -> Result<SmbModules> {
    let started = Instant::now();
    let dir = cache
        .join("smb-modules")
        .join(format!("{release}-{:016x}", cache_key(packages)));
    let modules = |built| SmbModules {
        ksmbd: dir.join("ksmbd.ko"),
        cifs: dir.join("cifs.ko"),
        built,
        elapsed: started.elapsed(),
    };
    if dir.join("manifest").is_file() {
        prune::mark_used(&dir.join("manifest"));
        return Ok(modules(false));
    }
    for tool in [host::MAKE, host::GCC, host::TAR, host::XZ, host::STRIP] {
        host::find(tool)?;
    }
    apt::download(packages, debs)?;
    let work = cache.join(format!("smb-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let result = build(release, packages, debs, &work).and_then(|()| {
        let out = work.join("out");
        let manifest = format!(
            "{}built in {:.1} s\n",
            key_text(packages),
            started.elapsed().as_secs_f64()
        );
        std::fs::write(out.join("manifest"), manifest)
            .map_err(|e| Error::io("cannot write the SMB modules' manifest", e))?;
        std::fs::create_dir_all(cache.join("smb-modules"))
            .map_err(|e| Error::io("cannot create the smb-modules directory", e))?;
        std::fs::rename(&out, &dir)
            .map_err(|e| Error::io(format!("cannot move the modules to {}", dir.display()), e))
    });
    let _ = std::fs::remove_dir_all(&work);
    result?;
    Ok(modules(true))
}

/// Unpacks, edits and builds under `work`; the stripped modules end in
/// `work/out`.
fn build(release: &str, packages: &[Package], debs: &Path, work: &Path) -> Result<()> {
    let root = work.join("root");
    for package in packages {
        apt::unpack(&debs.join(package.deb_file_name()), &root)?;
    }
    let tarball = find_source_tarball(&root.join("usr/src"))?;
    let top = tarball
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".tar.xz"))
        .ok_or_else(|| Error::Image(format!("odd tarball name {}", tarball.display())))?
        .to_owned();
    let mut tar = host::command(host::TAR)?;
    tar.arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(work)
        .arg("--wildcards")
        .args(
            SOURCE_MEMBERS
                .iter()
                .map(|member| format!("{top}/{member}")),
        );
    host::run(&mut tar)?;
    let source = work.join(&top);
    for edit in &SOURCE_EDITS {
        edit.apply(&source)?;
    }

    let headers = root
        .join("usr/src")
        .join(format!("linux-headers-{release}"));
    point_headers_makefile_at(&headers, &root)?;
    // Kbuild runs `$(objtree)/scripts/asn1_compiler`; `scripts` is the
    // headers' link into linux-kbuild's unpacked copy.
    host::run(
        host::command(host::GCC)?
            .args(["-O2", "-o"])
            .arg(headers.join("scripts/asn1_compiler"))
            .arg("-I")
            .arg(source.join("include"))
            .arg(source.join("scripts/asn1_compiler.c")),
    )?;

    let out = work.join("out");
    std::fs::create_dir_all(&out)
        .map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
    let jobs = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    for module in &BUILDS {
        let dir = source.join(module.dir);
        let mut make = host::command(host::MAKE)?;
        make.env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .arg("-C")
            .arg(&headers)
            .arg(format!("M={}", dir.display()))
            .arg(format!("-j{jobs}"))
            .args(module.make_options)
            .arg(format!("KCFLAGS={}", module.defines))
            .arg("modules");
        run_build(&mut make, module.module)?;
        host::run(
            host::command(host::STRIP)?
                .arg("--strip-debug")
                .arg("-o")
                .arg(out.join(module.module))
                .arg(dir.join(module.module)),
        )?;
    }
    Ok(())
}

/// Runs a Kbuild; its error keeps the output's last lines (the compiler's
/// message), not the whole log.
fn run_build(make: &mut Command, module: &str) -> Result<()> {
    host::run(make).map(drop).map_err(|error| {
        let text = error.to_string();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Error::Image(format!("building {module} failed:\n{}", tail.join("\n")))
    })
}

fn find_source_tarball(dir: &Path) -> Result<PathBuf> {
    std::fs::read_dir(dir)
        .map_err(|e| Error::io(format!("cannot list {}", dir.display()), e))?
        .filter_map(std::result::Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("linux-source-") && name.ends_with(".tar.xz"))
        })
        .ok_or_else(|| Error::Image(format!("no linux-source-*.tar.xz in {}", dir.display())))
}

/// The headers' Makefile includes the common headers' by absolute path
/// (`/usr/src/...`, where dpkg would have put them); it must name the
/// unpacked copy under `root`.
fn point_headers_makefile_at(headers: &Path, root: &Path) -> Result<()> {
    let path = headers.join("Makefile");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let rewritten = rewrite_include(&text, root).ok_or_else(|| {
        Error::Image(format!(
            "{} is not the one-line `include /usr/src/...` Debian ships: {text}",
            path.display()
        ))
    })?;
    std::fs::write(&path, rewritten)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

fn rewrite_include(text: &str, root: &Path) -> Option<String> {
    let target = text.trim().strip_prefix("include /usr/src/")?;
    (!target.contains(char::is_whitespace))
        .then(|| format!("include {}/usr/src/{target}\n", root.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_of_a_debian_kernel_version() {
        assert_eq!(kernel_series("6.1.192-2").as_deref(), Some("6.1"));
        assert_eq!(kernel_series("6.12.38-1~bpo12+1").as_deref(), Some("6.12"));
        assert_eq!(kernel_series("6"), None);
    }

    #[test]
    fn depends_keep_exact_versions_only() {
        let field = "linux-headers-6.1.0-56-common (= 6.1.192-2), linux-kbuild-6.1 (>= 6.1.192-2), linux-compiler-gcc-12-x86 | gcc";
        assert_eq!(
            parse_depends_field(field),
            [
                (
                    "linux-headers-6.1.0-56-common".to_owned(),
                    Some("6.1.192-2".to_owned())
                ),
                ("linux-kbuild-6.1".to_owned(), None),
                ("linux-compiler-gcc-12-x86".to_owned(), None),
            ]
        );
    }

    #[test]
    fn the_headers_makefile_is_pointed_at_the_unpacked_copy() {
        let text = "include /usr/src/linux-headers-6.1.0-56-common/Makefile\n";
        assert_eq!(
            rewrite_include(text, Path::new("/c/root")).as_deref(),
            Some("include /c/root/usr/src/linux-headers-6.1.0-56-common/Makefile\n")
        );
        assert_eq!(rewrite_include("all:\n\tmake\n", Path::new("/r")), None);
    }

    #[test]
    fn the_edits_apply_to_debians_text() {
        let ipc = "\t} else if (x) {\n\t\tif (entry->msg_sz < sizeof(struct ksmbd_share_config_response))\n\t\t\treturn -EINVAL;\n\n\t\tif (strnlen(a, b) == b)\n";
        let edited = SOURCE_EDITS[0].apply_to(ipc).unwrap();
        assert!(edited.contains(
            "return -EINVAL;\n\t\t/* rsndk lab: ksmbd-tools 3.4.7 sends reserved[112], no payload_sz. */\n\t\tresp->payload_sz = entry->msg_sz - sizeof(struct ksmbd_share_config_response);\n\n\t\tif (strnlen"
        ), "{edited}");
        let oplock = "void opinfo_put(struct oplock_info *opinfo)\n{\n\tif (!atomic_dec_and_test(&opinfo->refcount))\n";
        assert_eq!(
            SOURCE_EDITS[1].apply_to(oplock).unwrap(),
            "void opinfo_put(struct oplock_info *opinfo)\n{\n\tif (!opinfo)\n\t\treturn;\n\n\tif (!atomic_dec_and_test(&opinfo->refcount))\n"
        );
    }

    #[test]
    fn stop_sessions_never_follows_a_link_it_let_go_of() {
        // connection.c:488-510 of Debian's 6.1.192 source.
        let stop = "static void stop_sessions(void)\n{\n\tstruct ksmbd_conn *conn;\n\tstruct ksmbd_transport *t;\n\nagain:\n\tdown_read(&conn_list_lock);\n\tlist_for_each_entry(conn, &conn_list, conns_list) {\n\t\tt = conn->transport;\n\t\tksmbd_conn_set_exiting(conn);\n\t\tif (t->ops->shutdown) {\n\t\t\tup_read(&conn_list_lock);\n\t\t\tt->ops->shutdown(t);\n\t\t\tdown_read(&conn_list_lock);\n\t\t}\n\t}\n\tup_read(&conn_list_lock);\n";
        let edited = SOURCE_EDITS[5]
            .apply_to(&SOURCE_EDITS[4].apply_to(stop).unwrap())
            .unwrap();
        assert!(
            edited.contains("\t\tt = conn->transport;\n\t\t/* rsndk lab: shut each connection down once (rescan below). */\n\t\tif (ksmbd_conn_exiting(conn))\n\t\t\tcontinue;\n\t\tksmbd_conn_set_exiting(conn);\n"),
            "{edited}"
        );
        assert!(
            edited.contains("\t\t\tdown_read(&conn_list_lock);\n\t\t\t/* rsndk lab: conn may be freed while unlocked: rescan. */\n\t\t\tup_read(&conn_list_lock);\n\t\t\tgoto again;\n\t\t}\n"),
            "{edited}"
        );
    }

    #[test]
    fn the_listener_binds_in6addr_any() {
        let listen = "static int smb_direct_listen(int port)\n{\n\tint ret;\n\tstruct rdma_cm_id *cm_id;\n\tstruct sockaddr_in sin = {\n\t\t.sin_family\t\t= AF_INET,\n\t\t.sin_addr.s_addr\t= htonl(INADDR_ANY),\n\t\t.sin_port\t\t= htons(port),\n\t};\n\n\tcm_id = rdma_create_id(&init_net, smb_direct_listen_handler,\n\t\t\t       &smb_direct_listener, RDMA_PS_TCP, IB_QPT_RC);\n\tif (IS_ERR(cm_id)) {\n\t\tpr_err(\"Can't create cm id: %ld\\n\", PTR_ERR(cm_id));\n\t\treturn PTR_ERR(cm_id);\n\t}\n\n\tret = rdma_bind_addr(cm_id, (struct sockaddr *)&sin);\n\tif (ret) {\n";
        let edited = SOURCE_EDITS[3]
            .apply_to(&SOURCE_EDITS[2].apply_to(listen).unwrap())
            .unwrap();
        assert!(
            edited.contains("\t.sin_port\t\t= htons(port),\n\t};\n\t/* rsndk lab: SMB Direct over IPv6 and IPv4 alike. */\n\tstruct sockaddr_in6 sin6 = {\n\t\t.sin6_family\t\t= AF_INET6,\n\t\t.sin6_port\t\t= htons(port),\n\t};\n\n\tcm_id = "),
            "{edited}"
        );
        assert!(
            edited.contains("\t}\n\n\t/* rsndk lab: bind in6addr_any, not the IPv4-only sin below. */\n\tret = rdma_bind_addr(cm_id, (struct sockaddr *)&sin6);\n\tif (0)\n\tret = rdma_bind_addr(cm_id, (struct sockaddr *)&sin);\n\tif (ret) {\n"),
            "{edited}"
        );
    }

    #[test]
    fn the_key_changes_with_a_version() {
        let package = |version: &str| Package {
            name: "linux-source-6.1".into(),
            version: version.into(),
            architecture: "all".into(),
        };
        assert_ne!(
            cache_key(&[package("6.1.192-2")]),
            cache_key(&[package("6.1.192-3")])
        );
    }
}

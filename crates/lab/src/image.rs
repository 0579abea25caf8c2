//! The guest image: a Debian kernel and an initramfs built from Debian
//! packages, cached by the packages' versions.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::apt::{self, Package};
use crate::cache::{self, CacheLock};
use crate::elf;
use crate::error::{Error, Result};
use crate::guest_files;
use crate::host;
use crate::prune::{self, Pruned};
use crate::rootfs::RootFs;
use crate::smb_modules::{self, SmbModules};

/// Bumped when the image's layout changes in a way the scripts do not show.
const LAYOUT_VERSION: u32 = 2;

/// Bumped when dependency resolution changes (cached resolutions are
/// then redone).
const RESOLVER_VERSION: u32 = 3;

/// Packages shipped whole with [`ImageSpec::smb`].
const SMB_PACKAGES: [&str; 1] = ["ksmbd-tools"];

/// Single files shipped with [`ImageSpec::smb`], by package: mount.cifs
/// needs only libc and libcap-ng, the rest of cifs-utils Samba's libraries.
const SMB_FILES: [(&str, &str); 1] = [("cifs-utils", "usr/sbin/mount.cifs")];

/// The guest's lists of the SMB modules to insmod, in order, after what
/// each depends on (modules loaded at boot among them are skipped).
pub const KSMBD_MODULE_LIST: &str = "etc/lab/modules-ksmbd";
/// See [`KSMBD_MODULE_LIST`].
pub const CIFS_MODULE_LIST: &str = "etc/lab/modules-cifs";

/// Crypto modules ksmbd and cifs ask for by name at run time (their
/// `softdep`s: SMB3 signing's AES-CMAC, encryption's CCM and GCM,
/// SHA-512 for 3.1.1's preauth integrity, ECB for NTLM; CTR and GHASH,
/// which CCM and GCM instantiate by name), listed before them: the guest
/// has no `modules.dep` for the kernel's `request_module`.
const SMB_CRYPTO_MODULES: [&str; 7] = [
    "cmac",
    "ctr",
    "ghash_generic",
    "ccm",
    "gcm",
    "sha512_generic",
    "ecb",
];

/// Where the built SMB modules go in the guest, under `lib/modules/RELEASE`.
const SMB_MODULES_DIR: &str = "extra";

/// What goes into the guest image.
#[derive(Debug, Clone)]
pub struct ImageSpec {
    /// Packages shipped whole (less documentation). Their Depends and
    /// Pre-Depends are downloaded too, and what their ELF files need is
    /// taken from those. The kernel (`linux-image-amd64`'s current
    /// dependency) is added by the lab.
    pub packages: Vec<String>,
    /// Libraries that programs `dlopen` rather than link (so no DT_NEEDED
    /// names them), resolved like DT_NEEDED: glibc loads `libgcc_s.so.1`
    /// for `pthread_exit` (rping's threads end with it).
    pub dlopened: Vec<String>,
    /// Kernel modules loaded at boot in this order, each after the modules
    /// its `.modinfo` says it depends on; built-in ones are skipped.
    pub modules: Vec<String>,
    /// SMB with SMB Direct: `ksmbd.ko` and `cifs.ko` rebuilt with it
    /// ([`crate::smb_modules`]), ksmbd-tools and `mount.cifs`. The modules
    /// are listed in [`KSMBD_MODULE_LIST`] and [`CIFS_MODULE_LIST`] and
    /// loaded on demand, not at boot.
    pub smb: bool,
}

impl Default for ImageSpec {
    fn default() -> Self {
        let strings = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect();
        Self {
            packages: strings(&[
                "busybox-static",
                // /bin/sh: busybox's ash prefers its own applets to the
                // packages' programs (iproute2's ip, kmod) whatever PATH says.
                "dash",
                "kmod",
                "iproute2",
                "libibverbs1",
                "ibverbs-providers",
                "librdmacm1",
                "rdmacm-utils",
                "ibverbs-utils",
                "perftest",
                "tcpdump",
            ]),
            dlopened: strings(&["libgcc_s.so.1"]),
            modules: strings(&[
                "virtio_pci",
                "virtio_net",
                "virtio_console",
                "9pnet_virtio",
                "9p",
                "crc32_generic",
                "rdma_rxe",
                "ib_uverbs",
                "rdma_ucm",
                "sch_netem",
                "sch_ingress",
                "ifb",
                "act_mirred",
                "cls_matchall",
            ]),
            smb: true,
        }
    }
}

/// A prepared guest image in the cache.
#[derive(Debug, Clone)]
pub struct Image {
    /// The image's cache directory.
    pub dir: PathBuf,
    /// The kernel (`vmlinuz`).
    pub kernel: PathBuf,
    /// The initramfs (gzip-compressed newc cpio).
    pub initrd: PathBuf,
    /// The kernel's release, e.g. `6.1.0-56-amd64`.
    pub kernel_release: String,
    /// Every package downloaded for the image, at the versions used.
    pub packages: Vec<Package>,
    /// Whether this call built the image (false: it was cached).
    pub built: bool,
    /// How long preparing took (resolution, and download and build if not cached).
    pub elapsed: Duration,
    /// How long building the SMB modules took, if this call built them.
    pub smb_modules_built_in: Option<Duration>,
    /// The packages the SMB modules were built from (empty without
    /// [`ImageSpec::smb`]).
    pub smb_build_packages: Vec<Package>,
    /// What this call removed from the cache ([`prune`]; nothing when
    /// another process held the cache).
    pub pruned: Pruned,
}

/// What [`resolve`] found.
#[derive(Debug, Clone)]
struct Resolution {
    kernel_package: String,
    packages: Vec<Package>,
    /// The SMB modules' build packages (empty without [`ImageSpec::smb`]).
    smb_build: Vec<Package>,
}

/// Builds the image of `spec` into the cache, or finds it there.
pub fn prepare(spec: &ImageSpec) -> Result<Image> {
    let started = Instant::now();
    for tool in [host::APT_GET, host::APT_CACHE, host::DPKG_DEB] {
        host::find(tool)?;
    }
    apt::ensure_lists()?;
    let cache = cache::cache_dir();
    let Resolution {
        kernel_package,
        packages,
        smb_build,
    } = resolve(spec, &cache)?;
    let kernel_release = kernel_package
        .strip_prefix("linux-image-")
        .unwrap_or(&kernel_package)
        .to_owned();

    let key = cache_key(spec, &packages, &smb_build);
    let dir = cache
        .join("images")
        .join(format!("{kernel_release}-{key:016x}"));
    let used_debs: BTreeSet<String> = packages
        .iter()
        .chain(&smb_build)
        .map(Package::deb_file_name)
        .collect();
    let prune = || prune::prune_locked(&cache, &kernel_release, &used_debs, SystemTime::now());
    let image = |built, smb_modules_built_in, pruned| Image {
        kernel: dir.join("vmlinuz"),
        initrd: dir.join("initrd.gz"),
        dir: dir.clone(),
        kernel_release: kernel_release.clone(),
        packages: packages.clone(),
        built,
        elapsed: started.elapsed(),
        smb_modules_built_in,
        pruned,
        smb_build_packages: smb_build.clone(),
    };
    if dir.join("manifest").is_file() {
        prune::mark_used(&dir.join("manifest"));
        // In passing: while another process builds, its own pruning
        // follows.
        let pruned = CacheLock::try_acquire(&cache)
            .map(|_lock| prune())
            .unwrap_or_default();
        return Ok(image(false, None, pruned));
    }
    let _lock = CacheLock::acquire(&cache)?;
    if dir.join("manifest").is_file() {
        prune::mark_used(&dir.join("manifest"));
        return Ok(image(false, None, prune()));
    }
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs)
        .map_err(|e| Error::io(format!("cannot create {}", debs.display()), e))?;
    apt::download(&packages, &debs)?;
    let smb_modules = if spec.smb {
        Some(smb_modules::prepare_locked(
            &cache,
            &kernel_release,
            &smb_build,
            &debs,
        )?)
    } else {
        None
    };

    let work = cache.join(format!("build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let built = build(
        spec,
        &packages,
        &kernel_package,
        &kernel_release,
        &debs,
        &work,
        smb_modules.as_ref(),
    );
    let result = built.and_then(|()| {
        std::fs::create_dir_all(dir.parent().unwrap_or(&cache))
            .map_err(|e| Error::io("cannot create the images directory", e))?;
        std::fs::rename(work.join("out"), &dir)
            .map_err(|e| Error::io(format!("cannot move the image to {}", dir.display()), e))
    });
    let _ = std::fs::remove_dir_all(&work);
    result?;
    let smb_built_in = smb_modules
        .filter(|modules| modules.built)
        .map(|modules| modules.elapsed);
    Ok(image(true, smb_built_in, prune()))
}

/// The kernel package, every package of the image at its candidate
/// version, and the SMB modules' build packages. Asking apt takes seconds
/// (a dozen `apt-cache` runs), so the answer is kept in the cache under
/// the fingerprint of apt's lists ([`apt::lists_fingerprint`]) and the
/// spec: `apt-get update` or a new spec resolves again.
fn resolve(spec: &ImageSpec, cache: &Path) -> Result<Resolution> {
    // The resolver's own version: a fix to it resolves again.
    let mut key_text = format!("resolver {RESOLVER_VERSION}\n{}", apt::lists_fingerprint());
    let _ = writeln!(key_text, "ship {}", spec.packages.join(" "));
    let _ = writeln!(key_text, "smb {}", spec.smb);
    let path = cache
        .join("resolved")
        .join(format!("{:016x}", cache::fnv1a(key_text.as_bytes())));
    if let Some(resolved) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| parse_resolution(&text))
    {
        prune::mark_used(&path);
        return Ok(resolved);
    }
    let kernel_package = apt::kernel_package()?;
    let mut roots = spec.packages.clone();
    if spec.smb {
        roots.extend(SMB_PACKAGES.iter().map(|name| (*name).to_owned()));
    }
    let mut names = apt::depends_closure(&roots)?;
    names.insert(kernel_package.clone());
    if spec.smb {
        // Only single files of these are shipped: their own Depends are
        // not needed (what the files link is found like any DT_NEEDED).
        names.extend(SMB_FILES.iter().map(|(package, _)| (*package).to_owned()));
    }
    let packages = apt::candidates(&names)?;
    let smb_build = if spec.smb {
        let kernel = packages
            .iter()
            .find(|package| package.name == kernel_package)
            .ok_or_else(|| Error::Image(format!("no candidate version of {kernel_package}")))?;
        let release = kernel_package
            .strip_prefix("linux-image-")
            .unwrap_or(&kernel_package);
        smb_modules::build_packages(kernel, release)?
    } else {
        Vec::new()
    };
    let mut text = format!("kernel {kernel_package}\n");
    for (kind, list) in [("package", &packages), ("build", &smb_build)] {
        for package in list {
            let _ = writeln!(
                text,
                "{kind} {} {} {}",
                package.name, package.version, package.architecture
            );
        }
    }
    // Written whole then renamed: a concurrent reader sees all or nothing.
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::create_dir_all(cache.join("resolved"))
        .and_then(|()| std::fs::write(&temporary, text))
        .and_then(|()| std::fs::rename(&temporary, &path));
    if let Err(error) = written {
        return Err(Error::io(format!("cannot write {}", path.display()), error));
    }
    Ok(Resolution {
        kernel_package,
        packages,
        smb_build,
    })
}

/// A resolution written by [`resolve`]; None if it is damaged.
fn parse_resolution(text: &str) -> Option<Resolution> {
    let mut kernel = None;
    let mut packages = Vec::new();
    let mut smb_build = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["kernel", name] => kernel = Some((*name).to_owned()),
            [kind @ ("package" | "build"), name, version, architecture] => {
                let package = Package {
                    name: (*name).to_owned(),
                    version: (*version).to_owned(),
                    architecture: (*architecture).to_owned(),
                };
                if *kind == "package" {
                    packages.push(package);
                } else {
                    smb_build.push(package);
                }
            }
            _ => return None,
        }
    }
    let kernel_package = kernel?;
    packages
        .iter()
        .any(|package| package.name == kernel_package)
        .then_some(Resolution {
            kernel_package,
            packages,
            smb_build,
        })
}

fn cache_key(spec: &ImageSpec, packages: &[Package], smb_build: &[Package]) -> u64 {
    let mut text = format!("layout {LAYOUT_VERSION}\n");
    for package in packages {
        let _ = writeln!(
            text,
            "{} {} {}",
            package.name, package.version, package.architecture
        );
    }
    let _ = writeln!(text, "ship {}", spec.packages.join(" "));
    let _ = writeln!(text, "modules {}", spec.modules.join(" "));
    let _ = writeln!(text, "dlopened {}", spec.dlopened.join(" "));
    if spec.smb {
        text.push_str(&smb_modules::key_text(smb_build));
        let _ = writeln!(
            text,
            "smb {SMB_PACKAGES:?} {SMB_FILES:?} {SMB_CRYPTO_MODULES:?} {SMB_MODULES_DIR}"
        );
    }
    for script in guest_files::all() {
        text.push_str(script);
    }
    cache::fnv1a(text.as_bytes())
}

/// Unpacks the packages under `work/pkgs`, assembles the tree, writes
/// `work/out/{vmlinuz,initrd.gz,manifest}`.
fn build(
    spec: &ImageSpec,
    packages: &[Package],
    kernel_package: &str,
    kernel_release: &str,
    debs: &Path,
    work: &Path,
    smb_modules: Option<&SmbModules>,
) -> Result<()> {
    let unpacked = work.join("pkgs");
    unpack_all(packages, debs, &unpacked)?;
    let kernel_root = unpacked.join(kernel_package);
    let mut extra_modules = Vec::new();
    if let Some(modules) = smb_modules {
        // Into the unpacked kernel package, so they are indexed with it.
        let dir = kernel_root
            .join("lib/modules")
            .join(kernel_release)
            .join(SMB_MODULES_DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        for (name, built) in [("ksmbd.ko", &modules.ksmbd), ("cifs.ko", &modules.cifs)] {
            std::fs::copy(built, dir.join(name))
                .map_err(|e| Error::io(format!("cannot copy {}", built.display()), e))?;
            extra_modules.push(format!("{SMB_MODULES_DIR}/{name}"));
        }
    }
    let mut tree = RootFs::new();
    for package in packages {
        tree.index_package(&package.name, &unpacked.join(&package.name))?;
    }
    for package in &spec.packages {
        tree.add_package(package)?;
    }
    let modules = module_load_order(&kernel_root, kernel_release, &spec.modules, &[])?;
    let modules_dir = format!("usr/lib/modules/{kernel_release}");
    for module in &modules {
        tree.add_path(&format!("{modules_dir}/{module}"), true)?;
    }
    if spec.smb {
        for (list, module) in [(KSMBD_MODULE_LIST, "ksmbd"), (CIFS_MODULE_LIST, "cifs")] {
            let wanted: Vec<String> = SMB_CRYPTO_MODULES
                .iter()
                .chain(&[module])
                .map(|name| (*name).to_owned())
                .collect();
            let order = module_load_order(&kernel_root, kernel_release, &wanted, &extra_modules)?;
            for file in &order {
                tree.add_path(&format!("{modules_dir}/{file}"), true)?;
            }
            tree.add_data(list, 0o644, order.join("\n") + "\n");
        }
        for package in SMB_PACKAGES {
            tree.add_package(package)?;
        }
        for (_, path) in SMB_FILES {
            tree.add_path(path, true)?;
        }
    }
    for listing in ["modules.builtin", "modules.order"] {
        tree.add_path(&format!("{modules_dir}/{listing}"), true)?;
    }
    tree.add_data("etc/lab/modules", 0o644, modules.join("\n") + "\n");
    tree.add_libraries(&spec.dlopened, "the image's dlopened list")?;
    tree.add_needed_libraries()?;
    add_guest_files(&mut tree);

    let out = work.join("out");
    std::fs::create_dir_all(&out)
        .map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
    let vmlinuz = kernel_root
        .join("boot")
        .join(format!("vmlinuz-{kernel_release}"));
    std::fs::copy(&vmlinuz, out.join("vmlinuz"))
        .map_err(|e| Error::io(format!("cannot copy {}", vmlinuz.display()), e))?;
    let initrd = out.join("initrd.gz");
    let file = File::create(&initrd)
        .map_err(|e| Error::io(format!("cannot create {}", initrd.display()), e))?;
    let gzip = flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::fast());
    tree.write_cpio(gzip)?
        .finish()
        .and_then(|mut buffered| buffered.flush())
        .map_err(|e| Error::io(format!("cannot write {}", initrd.display()), e))?;
    let mut manifest = format!(
        "kernel {kernel_release}\nentries {}\nmodules {}\n",
        tree.len(),
        modules.join(" ")
    );
    for package in packages {
        let _ = writeln!(manifest, "package {} {}", package.name, package.version);
    }
    std::fs::write(out.join("manifest"), manifest)
        .map_err(|e| Error::io("cannot write the image manifest", e))
}

/// Unpacks each package into `into/NAME`, two at a time (the kernel's is
/// the slow one).
fn unpack_all(packages: &[Package], debs: &Path, into: &Path) -> Result<()> {
    let (first, second) = packages.split_at(packages.len() / 2);
    std::thread::scope(|scope| {
        let worker = |half: &[Package]| -> Result<()> {
            for package in half {
                apt::unpack(
                    &debs.join(package.deb_file_name()),
                    &into.join(&package.name),
                )?;
            }
            Ok(())
        };
        let other = scope.spawn(move || worker(second));
        let mine = worker(first);
        let theirs = other
            .join()
            .unwrap_or_else(|_| Err(Error::Image("an unpacking thread panicked".into())));
        mine.and(theirs)
    })
}

/// The module files (relative to `lib/modules/RELEASE`) to insmod, in order.
/// `extra` are module files (relative to `lib/modules/RELEASE`) not in the
/// kernel package's `modules.order`; they replace stock modules of the
/// same name.
fn module_load_order(
    kernel_root: &Path,
    release: &str,
    wanted: &[String],
    extra: &[String],
) -> Result<Vec<String>> {
    let base = kernel_root.join("lib/modules").join(release);
    let builtin_text = std::fs::read_to_string(base.join("modules.builtin"))
        .map_err(|e| Error::io(format!("cannot read {}/modules.builtin", base.display()), e))?;
    let builtin: BTreeSet<String> = builtin_text.lines().map(module_name).collect();
    let order_text = std::fs::read_to_string(base.join("modules.order"))
        .map_err(|e| Error::io(format!("cannot read {}/modules.order", base.display()), e))?;
    let files: BTreeMap<String, String> = order_text
        .lines()
        .chain(extra.iter().map(String::as_str))
        .map(|path| (module_name(path), path.to_owned()))
        .collect();
    let mut order = Vec::new();
    let mut visiting = BTreeSet::new();
    for name in wanted {
        visit(
            &base,
            &builtin,
            &files,
            name,
            &mut visiting,
            &mut order,
            release,
        )?;
    }
    Ok(order)
}

#[allow(clippy::too_many_arguments)]
fn visit(
    base: &Path,
    builtin: &BTreeSet<String>,
    files: &BTreeMap<String, String>,
    name: &str,
    visiting: &mut BTreeSet<String>,
    order: &mut Vec<String>,
    release: &str,
) -> Result<()> {
    let name = name.replace('-', "_");
    if builtin.contains(&name) || !visiting.insert(name.clone()) {
        return Ok(());
    }
    let file = files.get(&name).ok_or_else(|| {
        Error::Image(format!(
            "kernel module {name} is neither built into nor shipped with kernel {release}"
        ))
    })?;
    let bytes = std::fs::read(base.join(file))
        .map_err(|e| Error::io(format!("cannot read module {file}"), e))?;
    for dependency in elf::module_depends(&bytes, file).map_err(Error::Image)? {
        visit(base, builtin, files, &dependency, visiting, order, release)?;
    }
    order.push(file.clone());
    Ok(())
}

/// `kernel/drivers/x/foo-bar.ko` → `foo_bar`.
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file).replace('-', "_")
}

fn add_guest_files(tree: &mut RootFs) {
    tree.add_symlink("init", "/usr/bin/busybox");
    // The scripts' and the console's shell (dash, whose `sh` link is made
    // by dpkg's alternatives on a real system), and the console's
    // controlling-terminal helper, before rcS installs the other applets.
    tree.add_symlink("usr/bin/sh", "dash");
    tree.add_symlink("usr/bin/cttyhack", "busybox");
    tree.add_char_device("dev/console", 5, 1);
    for dir in ["proc", "sys", "dev", "tmp", "run", "root", "lab", "var/tmp"] {
        tree.add_dir(dir);
    }
    tree.add_data("etc/inittab", 0o644, guest_files::INITTAB);
    tree.add_data("etc/lab/rcS", 0o755, guest_files::RC_S);
    tree.add_data("etc/lab/agent", 0o755, guest_files::AGENT);
    tree.add_data("etc/lab/run-one", 0o755, guest_files::RUN_ONE);
    tree.add_data("etc/passwd", 0o644, guest_files::PASSWD);
    tree.add_data("etc/group", 0o644, guest_files::GROUP);
    tree.add_data("etc/profile", 0o644, guest_files::PROFILE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_use_underscores() {
        assert_eq!(
            module_name("kernel/arch/x86/crypto/crc32-pclmul.ko"),
            "crc32_pclmul"
        );
        assert_eq!(module_name("kernel/net/9p/9pnet_virtio.ko"), "9pnet_virtio");
    }
}

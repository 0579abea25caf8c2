//! The package build: the images from cargo, the stamped INFs, the test
//! signatures and their check, the scripts, the zip.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::layout::{self, Binary};
use crate::sign::{self, TestSigning, ToolError};
use crate::stamp::{self, Stamp};
use crate::zip::ZipWriter;

/// Why the package could not be made.
#[derive(Debug)]
pub enum BuildError {
    /// A binary's crate is not in this tree.
    MissingCrate(Binary),
    /// A file the package needs is not there.
    MissingFile(PathBuf, &'static str),
    /// A tool (cargo, openssl, osslsigncode) failed.
    Tool(ToolError),
    /// An INF could not be stamped.
    Stamp(&'static str, stamp::StampError),
    /// Reading or writing a file failed.
    Io(PathBuf, std::io::Error),
    /// A signed image's PE checksum is wrong (or it is no PE image).
    Checksum(PathBuf, String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingCrate(b) => write!(
                f,
                "{} is built by cargo package `{}` ({}), which is not in this tree yet; \
                 the package cannot be made without it (rsndkp.inf names it)",
                b.file, b.package, b.manifest
            ),
            Self::MissingFile(path, what) => write!(f, "{what}: {} is missing", path.display()),
            Self::Tool(e) => write!(f, "{e}"),
            Self::Stamp(inf, e) => write!(f, "stamping {inf}: {e}"),
            Self::Io(path, e) => write!(f, "{}: {e}", path.display()),
            Self::Checksum(path, why) => {
                write!(f, "{}: PE checksum after signing: {why}", path.display())
            }
        }
    }
}

impl std::error::Error for BuildError {}

impl From<ToolError> for BuildError {
    fn from(e: ToolError) -> Self {
        Self::Tool(e)
    }
}

/// Where the package goes and what it is made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The repository root (the workspace).
    pub root: PathBuf,
    /// Build the images first (`cargo build --release --target ...`).
    pub build: bool,
}

/// What was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Made {
    /// The package directory.
    pub dir: PathBuf,
    /// Its zip.
    pub zip: PathBuf,
    /// `osslsigncode verify`'s report per signed file.
    pub verified: Vec<(String, String)>,
}

fn io<T>(path: &Path, r: std::io::Result<T>) -> Result<T, BuildError> {
    r.map_err(|e| BuildError::Io(path.to_owned(), e))
}

/// The release output directory of the Windows target.
pub fn release_dir(root: &Path) -> PathBuf {
    root.join("target").join(layout::TARGET).join("release")
}

/// Makes `target/rsndk-package/` and `target/rsndk-package.zip`.
pub fn make(options: &Options) -> Result<Made, BuildError> {
    let root = &options.root;
    for binary in layout::BINARIES {
        if !root.join(binary.manifest).is_file() {
            return Err(BuildError::MissingCrate(binary));
        }
    }
    if options.build {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .current_dir(root)
            .args(["build", "--release", "--target", layout::TARGET]);
        for binary in layout::BINARIES {
            command.args(["-p", binary.package]);
        }
        sign::run("cargo build (images)", &mut command)?;
    }
    let release = release_dir(root);
    let target = root.join("target");
    let dir = target.join("rsndk-package");
    if dir.exists() {
        io(&dir, std::fs::remove_dir_all(&dir))?;
    }
    io(&dir, std::fs::create_dir_all(&dir))?;
    let stamp = Stamp::now();

    for binary in layout::BINARIES {
        for (from, to, what) in [
            (binary.linked, binary.file, "linked image"),
            (binary.pdb, binary.pdb, "PDB"),
        ] {
            let source = release.join(from);
            if !source.is_file() {
                return Err(BuildError::MissingFile(source, what));
            }
            io(&source, std::fs::copy(&source, dir.join(to)))?;
        }
    }
    for inf in [layout::PROTOCOL_INF, layout::MINIPORT_INF] {
        let source = root.join(inf.source);
        let text = io(&source, std::fs::read_to_string(&source))?;
        let stamped = stamp::stamp(&text, layout::ARCH, layout::CATALOG, &stamp)
            .map_err(|e| BuildError::Stamp(inf.source, e))?;
        let out = dir.join(inf.stamped);
        io(&out, std::fs::write(&out, stamped))?;
    }
    for (name, text) in layout::SCRIPTS {
        let out = dir.join(name);
        io(&out, std::fs::write(&out, text.replace('\n', "\r\n")))?;
    }

    let signing = sign::make_test_signing(&signing_dir(root), &stamp)?;
    sign::to_der(&signing.ca_pem, &dir.join(layout::CA_CER))?;
    sign::to_der(&signing.signer_pem, &dir.join(layout::SIGNER_CER))?;
    let verified = sign_all(&signing, &dir)?;

    let zip = target.join("rsndk-package.zip");
    write_zip(&dir, &zip, &stamp)?;
    Ok(Made { dir, zip, verified })
}

/// Where one build's test CA and signing key stay (outside the package).
pub fn signing_dir(root: &Path) -> PathBuf {
    root.join("target").join("rsndk-package-signing")
}

/// Signs `catalog` (made by inf2cat on Windows from the last package)
/// with that package's test certificate and verifies it; the report.
pub fn sign_catalog(root: &Path, catalog: &Path) -> Result<String, BuildError> {
    let dir = signing_dir(root);
    let signing = TestSigning {
        ca_pem: dir.join("ca.pem"),
        signer_pem: dir.join("signer.pem"),
        signer_key: dir.join("signer.key"),
    };
    for path in [&signing.ca_pem, &signing.signer_pem, &signing.signer_key] {
        if !path.is_file() {
            return Err(BuildError::MissingFile(
                path.clone(),
                "the test certificate of the last package build (make the package first)",
            ));
        }
    }
    if !catalog.is_file() {
        return Err(BuildError::MissingFile(catalog.to_owned(), "catalog"));
    }
    sign::sign(&signing, catalog, "rsndk (test signed)")?;
    Ok(sign::verify(&signing.ca_pem, catalog)?)
}

/// Signs every binary of the package and verifies each signature.
fn sign_all(signing: &TestSigning, dir: &Path) -> Result<Vec<(String, String)>, BuildError> {
    let mut verified = Vec::new();
    for binary in layout::BINARIES {
        let file = dir.join(binary.file);
        sign::sign(signing, &file, "rsndk (test signed)")?;
        let report = sign::verify(&signing.ca_pem, &file)?;
        let image = io(&file, std::fs::read(&file))?;
        match crate::pe::checksums(&image) {
            Ok((stored, computed)) if stored == computed => {}
            Ok((stored, computed)) => {
                return Err(BuildError::Checksum(
                    file,
                    format!("{stored:#x}, computed {computed:#x}"),
                ));
            }
            Err(why) => return Err(BuildError::Checksum(file, why.to_owned())),
        }
        verified.push((binary.file.to_owned(), report));
    }
    Ok(verified)
}

/// Zips `dir`'s files (flat) under a folder of the same name.
fn write_zip(dir: &Path, zip: &Path, stamp: &Stamp) -> Result<(), BuildError> {
    let folder = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut names: Vec<PathBuf> = io(dir, std::fs::read_dir(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    let file = io(zip, std::fs::File::create(zip))?;
    let mut writer = ZipWriter::new(std::io::BufWriter::new(file), stamp);
    for path in names {
        let data = io(&path, std::fs::read(&path))?;
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        io(zip, writer.add(&format!("{folder}/{name}"), &data))?;
    }
    io(zip, writer.finish()).map(drop)
}

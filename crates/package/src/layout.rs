//! What the package holds and where its parts come from: one place for
//! the packaging tool, its install scripts and the INF test.

/// The Windows target both images are built for.
pub const TARGET: &str = "x86_64-pc-windows-msvc";
/// The architecture stampinf writes for `$ARCH$` on that target.
pub const ARCH: &str = "amd64";
/// The catalog both INFs name (`CatalogFile`); made by inf2cat on Windows.
pub const CATALOG: &str = "rsndk.cat";
/// The one service of both edges.
pub const SERVICE: &str = "rsndkp";
/// The protocol edge's component id (`netcfg -c p -i`).
pub const PROTOCOL_ID: &str = "RSNDK_MUXP";
/// The virtual miniport's hardware id (installed by the notify object).
pub const MINIPORT_ID: &str = "RSNDK_MUXMP";

/// An INF source and the name its stamped copy has in the package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfFile {
    /// The `.inx` at the repository root.
    pub source: &'static str,
    /// The stamped `.inf`.
    pub stamped: &'static str,
}

/// The protocol edge's INF (Class NetTrans), installed with netcfg.
pub const PROTOCOL_INF: InfFile = InfFile {
    source: "rsndkp.inx",
    stamped: "rsndkp.inf",
};
/// The virtual miniport's INF (Class Net), staged by the protocol's CopyInf.
pub const MINIPORT_INF: InfFile = InfFile {
    source: "rsndk_mp.inx",
    stamped: "rsndk_mp.inf",
};

/// A binary of the package and the cargo package that builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binary {
    /// Its name in the package (the one the INFs copy).
    pub file: &'static str,
    /// The cargo package whose cdylib it is.
    pub package: &'static str,
    /// That package's manifest, relative to the repository root.
    pub manifest: &'static str,
    /// What the linker names the cdylib (`<lib name>.dll`).
    pub linked: &'static str,
    /// Its PDB as the linker names it.
    pub pdb: &'static str,
}

/// rsndk.sys: the driver, the root package's cdylib renamed as Windows
/// loads a kernel image.
pub const DRIVER: Binary = Binary {
    file: "rsndk.sys",
    package: "rsndk",
    manifest: "Cargo.toml",
    linked: "rsndk.dll",
    pdb: "rsndk.pdb",
};
/// rsndknotify.dll: the notify object (crate crates/notify).
pub const NOTIFY: Binary = Binary {
    file: "rsndknotify.dll",
    package: "rsndknotify",
    manifest: "crates/notify/Cargo.toml",
    linked: "rsndknotify.dll",
    pdb: "rsndknotify.pdb",
};
/// Every binary the INFs name.
pub const BINARIES: [Binary; 2] = [DRIVER, NOTIFY];

/// The install and removal scripts, copied as they are.
pub const SCRIPTS: [(&str, &str); 2] = [
    ("install.ps1", include_str!("../scripts/install.ps1")),
    ("remove.ps1", include_str!("../scripts/remove.ps1")),
];

/// The test CA's certificate in the package (DER), imported to Root.
pub const CA_CER: &str = "rsndk-test-ca.cer";
/// The signing certificate in the package (DER), imported to
/// TrustedPublisher.
pub const SIGNER_CER: &str = "rsndk-test-signer.cer";

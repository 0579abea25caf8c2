//! The image under test: the real `rsndk.sys`, linked for
//! `x86_64-pc-windows-msvc` on this machine (no WDK: rust-lld and the
//! flags in `.cargo/config.toml`).
//!
//! [`rsndk_sys`] is what the bottle boots: `$RSNDK_SYS` when set, else the
//! `bottle` profile (release code generation with debug assertions and
//! overflow checks, like a checked build of a C driver). [`release_image`]
//! is the production profile, the image an installer would ship; the PE
//! conformance tests read both.
//!
//! Each is built at most once per process, by a nested `cargo build` with
//! its own target directory, `target/kbottle`. It cannot share `target/`:
//! the outer `cargo test` holds the lock on `target/` for as long as the
//! test binaries run, so a nested cargo on the same directory would wait
//! for that lock forever.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The kernel driver's target triple.
const TARGET: &str = "x86_64-pc-windows-msvc";

/// Names an image to boot instead of building one (child test processes
/// get the parent's image this way).
const OVERRIDE_ENV: &str = "RSNDK_SYS";

/// The image the bottle boots: `$RSNDK_SYS` if set (and not empty), else
/// the `bottle` profile built once per process.
///
/// # Panics
/// If `$RSNDK_SYS` names no file, or the build fails (the message holds
/// cargo's stderr).
pub fn rsndk_sys() -> PathBuf {
    static BOTTLE: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = std::env::var_os(OVERRIDE_ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{OVERRIDE_ENV}={} names no file",
            path.display()
        );
        return path;
    }
    BOTTLE.get_or_init(|| build(Profile::Bottle)).clone()
}

/// The production image (`cargo build --release`), built once per
/// process. Not affected by `$RSNDK_SYS`.
///
/// # Panics
/// If the build fails (the message holds cargo's stderr).
pub fn release_image() -> PathBuf {
    static RELEASE: OnceLock<PathBuf> = OnceLock::new();
    RELEASE.get_or_init(|| build(Profile::Release)).clone()
}

/// The cargo profiles an image is built with.
#[derive(Clone, Copy, Debug)]
enum Profile {
    /// `[profile.bottle]` of the root manifest.
    Bottle,
    /// `[profile.release]`, what ships.
    Release,
}

impl Profile {
    /// The cargo arguments selecting the profile.
    fn args(self) -> &'static [&'static str] {
        match self {
            Profile::Bottle => &["--profile", "bottle"],
            Profile::Release => &["--release"],
        }
    }

    /// The directory under `<target dir>/<triple>/` the profile writes.
    fn dir(self) -> &'static str {
        match self {
            Profile::Bottle => "bottle",
            Profile::Release => "release",
        }
    }
}

/// The workspace root: this crate lives in `<root>/crates/kbottle`.
fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/kbottle has a workspace root two levels up")
}

/// The target directory of the nested builds (see the module doc).
fn target_dir() -> PathBuf {
    workspace_root().join("target").join("kbottle")
}

/// Builds the driver with `profile`, copies `rsndk.dll` to `rsndk.sys`
/// beside it (the name Windows loads it under) and returns the `.sys`.
fn build(profile: Profile) -> PathBuf {
    let root = workspace_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&cargo);
    command
        .current_dir(root)
        .args(["build", "--target", TARGET, "-p", "rsndk"])
        .args(profile.args())
        .env("CARGO_TARGET_DIR", target_dir())
        // The image's code generation and link flags come from
        // `.cargo/config.toml`'s target table alone. RUSTFLAGS meant for
        // the host test build (sanitizers, `--cfg loom`) would replace
        // them, and the image would lose /DRIVER, /ENTRY and the rest.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", cargo.to_string_lossy()));
    assert!(
        output.status.success(),
        "building rsndk.sys ({profile:?} profile) failed ({}; the image needs \
         `rustup target add {TARGET}`):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = target_dir().join(TARGET).join(profile.dir());
    let dll = dir.join("rsndk.dll");
    let sys = dir.join("rsndk.sys");
    // Copy under a name of this process, then rename: another test
    // process copying at the same moment never exposes a half-written
    // image.
    let partial = dir.join(format!("rsndk.sys.{}.partial", std::process::id()));
    std::fs::copy(&dll, &partial)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", dll.display(), partial.display()));
    std::fs::rename(&partial, &sys)
        .unwrap_or_else(|e| panic!("renaming {} to {}: {e}", partial.display(), sys.display()));
    sys
}

//! The real `rsndknotify.dll` driven through its COM interfaces under
//! Wine (wine64): `crates/notify/harness` is a Windows console program
//! that loads the DLL, gets the class factory, creates the notify object
//! and runs one opt-in cycle against a fake netcfg (enable the binding to
//! an Ethernet NIC: V installed, TCP/IP disabled on it, `UpperBindings`
//! written to the registry at `ApplyRegistryChanges`; a second session
//! loads the record, disabling the binding removes V, restores TCP/IP and
//! deletes the record), then checks that every reference the DLL took was
//! given back and that the DLL can unload. `regsvr32` registers and
//! unregisters the class.
//!
//! This checks the COM layer's ABI (vtable slots, reference counting,
//! CoTaskMem strings, registry calls) in a real PE loader; what netcfg
//! itself does around the object is for a Windows run.
//!
//! Both images are built by nested cargo runs into `target/notify-wine`
//! (the outer `cargo test` holds the lock of `target/`); the Wine prefix
//! lives there too.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TARGET: &str = "x86_64-pc-windows-msvc";
/// The class the DLL registers (rsndkp.inx's `Ndi\ClsID`).
const CLSID: &str = "{400C38E6-72D6-4ACC-BEAE-154C2D0F41E9}";

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/notify has a workspace root two levels up")
}

fn work_dir() -> PathBuf {
    workspace_root().join("target").join("notify-wine")
}

/// wine64: on PATH, or where Debian's package puts it.
fn wine64() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("wine64"))
            .find(|candidate| candidate.is_file())
    });
    on_path
        .or_else(|| Some(PathBuf::from("/usr/lib/wine/wine64")).filter(|p| p.is_file()))
        .expect("wine64 is missing: this test runs the DLL under Wine (apt-get install wine64)")
}

/// `cargo build --release --target x86_64-pc-windows-msvc` of `args`,
/// into the work directory; panics with cargo's stderr on failure.
fn build(args: &[&str], what: &str) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .current_dir(workspace_root())
        .args(["build", "--release", "--target", TARGET])
        .args(args)
        .env("CARGO_TARGET_DIR", work_dir().join("build"))
        // The link flags come from .cargo/config.toml and the build
        // scripts alone.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("running cargo");
    assert!(
        output.status.success(),
        "building {what} failed ({}; it needs `rustup target add {TARGET}`):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Both images side by side in `<work>/run`, as Windows finds a DLL next
/// to the program that loads it.
fn images() -> PathBuf {
    build(&["-p", "rsndknotify"], "rsndknotify.dll");
    build(
        &["--manifest-path", "crates/notify/harness/Cargo.toml"],
        "the Wine harness",
    );
    let built = work_dir().join("build").join(TARGET).join("release");
    let run = work_dir().join("run");
    std::fs::create_dir_all(&run).expect("creating the run directory");
    for name in ["rsndknotify.dll", "rsndknotify-harness.exe"] {
        std::fs::copy(built.join(name), run.join(name))
            .unwrap_or_else(|e| panic!("copying {name}: {e}"));
    }
    run
}

/// Runs a Windows program under wine64 in this test's prefix.
fn wine(program: &str, args: &[&str], dir: &Path) -> Output {
    let prefix = work_dir().join("prefix");
    std::fs::create_dir_all(&prefix).expect("creating the Wine prefix directory");
    Command::new(wine64())
        .current_dir(dir)
        .arg(program)
        .args(args)
        .env("WINEPREFIX", &prefix)
        .env("WINEDEBUG", "-all")
        // No display: Wine must not try to start a desktop.
        .env_remove("DISPLAY")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
        .output()
        .expect("running wine64")
}

fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

// One test: the builds, the prefix and the registry are shared.
#[test]
fn the_dll_serves_a_notify_cycle_and_registers_under_wine() {
    let run = images();

    let harness = wine("rsndknotify-harness.exe", &[], &run);
    let report = text(&harness);
    assert!(harness.status.success(), "the harness failed:\n{report}");
    assert!(
        String::from_utf8_lossy(&harness.stdout).contains("harness: all checks passed"),
        "the harness did not finish:\n{report}"
    );

    let dll = run.join("rsndknotify.dll");
    let dll = format!("Z:{}", dll.display()).replace('/', "\\");
    let register = wine("regsvr32", &[&dll], &run);
    assert!(register.status.success(), "regsvr32:\n{}", text(&register));
    let server_key = format!("HKLM\\Software\\Classes\\CLSID\\{CLSID}\\InprocServer32");
    let query = wine("reg", &["query", &server_key], &run);
    let listing = String::from_utf8_lossy(&query.stdout).to_string();
    assert!(query.status.success(), "reg query:\n{}", text(&query));
    assert!(
        listing
            .to_ascii_lowercase()
            .contains(&dll.to_ascii_lowercase()),
        "InprocServer32 does not name the DLL:\n{listing}"
    );
    assert!(
        listing.contains("ThreadingModel") && listing.contains("Both"),
        "no ThreadingModel Both:\n{listing}"
    );

    let unregister = wine("regsvr32", &["/u", &dll], &run);
    assert!(
        unregister.status.success(),
        "regsvr32 /u:\n{}",
        text(&unregister)
    );
    let gone = wine(
        "reg",
        &["query", &format!("HKLM\\Software\\Classes\\CLSID\\{CLSID}")],
        &run,
    );
    assert!(
        !gone.status.success(),
        "the class key is still there:\n{}",
        text(&gone)
    );
}

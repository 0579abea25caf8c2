//! Builds a C program against `include/rsndk_host.h` and `librsndk.so` and
//! runs it: the entry points must be exported with C linkage and behave as
//! the header documents.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>`, where cargo leaves `librsndk.so` beside `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

#[test]
fn c_consumer_links_and_gets_documented_statuses() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib_dir = profile_dir();
    // `cargo test` builds the library only as an rlib for the tests; build
    // the cdylib a C program links against (a no-op when it is current).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let profile_args: &[&str] = if cfg!(debug_assertions) {
        &[]
    } else {
        &["--release"]
    };
    let built = Command::new(cargo)
        .args(["build", "--quiet", "-p", "rsndk", "--lib"])
        .args(profile_args)
        .current_dir(&root)
        .status()
        .expect("run cargo build");
    assert!(built.success(), "building librsndk.so failed");
    assert!(
        lib_dir.join("librsndk.so").exists(),
        "librsndk.so not found in {}",
        lib_dir.display()
    );
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = out_dir.join("open_adapter");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("tests/c/open_adapter.c"))
        .arg("-L")
        .arg(&lib_dir)
        .arg("-lrsndk")
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling the C consumer failed");
    let output = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &lib_dir)
        .output()
        .expect("run the C consumer");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "C consumer reported failures:\n{stdout}"
    );
    assert!(stdout.contains("0 failures"), "{stdout}");
}

//! `cargo run -p rsndk-package [-- --no-build]`: builds rsndk.sys and
//! rsndknotify.dll for Windows (unless `--no-build`), then writes
//! `target/rsndk-package/` and its zip: both images test-signed and
//! verified, both INFs stamped, the PDBs, the test certificates, the
//! install and removal scripts.
//!
//! `cargo run -p rsndk-package -- --sign-catalog FILE.cat`: signs a
//! catalog inf2cat made on Windows from that package with the same test
//! certificate, then verifies it.

use std::path::PathBuf;
use std::process::ExitCode;

use rsndk_package::build::{self, Options};

const USAGE: &str = "usage: rsndk-package [--no-build] | --sign-catalog FILE.cat";

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => make(root, true),
        ["--no-build"] => make(root, false),
        ["--sign-catalog", catalog] => build::sign_catalog(&root, &PathBuf::from(catalog))
            .map(|report| println!("== osslsigncode verify {catalog}\n{}", report.trim_end())),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsndk-package: {e}");
            ExitCode::FAILURE
        }
    }
}

fn make(root: PathBuf, build_images: bool) -> Result<(), build::BuildError> {
    let made = build::make(&Options {
        root,
        build: build_images,
    })?;
    for (file, report) in &made.verified {
        println!("== osslsigncode verify {file}\n{}", report.trim_end());
    }
    println!("package: {}", made.dir.display());
    println!("zip:     {}", made.zip.display());
    Ok(())
}

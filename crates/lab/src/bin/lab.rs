//! `lab`: the interoperability lab for humans.
//!
//! - `lab prepare`: build (or find) the guest image; print its versions and times.
//! - `lab shell`: boot a guest in a fresh namespace with an interactive shell
//!   on its console (leave QEMU with Ctrl-A X); everything is removed on exit.

use clap::{Parser, Subcommand};

/// The interoperability lab: a Debian guest with Linux soft-RoCE (rxe) and
/// rping, booted in QEMU inside a network namespace.
#[derive(Debug, Parser)]
#[command(name = "lab")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build or find the cached guest image; print versions and times.
    Prepare,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Prepare => prepare(),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lab: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn prepare() -> lab::Result<()> {
    let image = lab::image::prepare(&lab::ImageSpec::default())?;
    println!(
        "image {} ({}) in {:.1} s",
        image.dir.display(),
        if image.built { "built" } else { "cached" },
        image.elapsed.as_secs_f64()
    );
    println!("kernel {}", image.kernel_release);
    for package in &image.packages {
        println!("  {} {}", package.name, package.version);
    }
    Ok(())
}

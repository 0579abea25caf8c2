//! `lab`: the interoperability lab for humans.
//!
//! - `lab prepare`: build (or find) the guest image; print its versions and times.
//! - `lab shell`: boot a guest in a fresh namespace with an interactive shell
//!   on its console (leave QEMU with Ctrl-A X); everything is removed on exit.

// clap's builder API: its derive output carries `#[allow(clippy::restriction)]`,
// which the workspace's `forbid` of two unsafe-code lints rejects.
use std::io::Write;

use clap::{Arg, Command, value_parser};

fn cli() -> Command {
    Command::new("lab")
        .about("The interoperability lab: a Debian guest with Linux soft-RoCE (rxe) and rping, booted in QEMU inside a network namespace")
        .subcommand_required(true)
        .subcommand(Command::new("prepare").about("Build or find the cached guest image; print versions and times"))
        .subcommand(
            Command::new("shell")
                .about("Boot a guest in a new namespace with a shell on its console (Ctrl-A X leaves QEMU); the namespace is removed on exit")
                .arg(
                    Arg::new("memory")
                        .long("memory")
                        .help("Memory of the guest in MiB")
                        .value_parser(value_parser!(u32))
                        .default_value("1024"),
                ),
        )
}

fn main() -> std::process::ExitCode {
    let matches = cli().get_matches();
    let result = match matches.subcommand() {
        Some(("shell", args)) => shell(args.get_one::<u32>("memory").copied().unwrap_or(1024)),
        _ => prepare(),
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
    let mut out = std::io::stdout().lock();
    // A closed stdout (`lab prepare | head`) is not an error of the lab.
    let _ = writeln!(
        out,
        "image {} ({}) in {:.1} s",
        image.dir.display(),
        if image.built { "built" } else { "cached" },
        image.elapsed.as_secs_f64()
    );
    if image.pruned.entries > 0 {
        let _ = writeln!(
            out,
            "pruned {} superseded or unused cache entries ({} MB)",
            image.pruned.entries,
            image.pruned.bytes.div_ceil(1_000_000)
        );
    }
    let _ = writeln!(out, "kernel {}", image.kernel_release);
    for package in &image.packages {
        let _ = writeln!(out, "  {} {}", package.name, package.version);
    }
    if let Some(elapsed) = image.smb_modules_built_in {
        let _ = writeln!(
            out,
            "ksmbd.ko and cifs.ko with SMB Direct built in {:.1} s",
            elapsed.as_secs_f64()
        );
    }
    if !image.smb_build_packages.is_empty() {
        let _ = writeln!(out, "SMB modules built from");
    }
    for package in &image.smb_build_packages {
        let _ = writeln!(out, "  {} {}", package.name, package.version);
    }
    Ok(())
}

fn shell(memory_mib: u32) -> lab::Result<()> {
    let config = lab::LabConfig {
        guests: 0,
        ..lab::LabConfig::default()
    };
    let lab = lab::Lab::start(&config)?;
    lab.netns().publish()?;
    eprintln!(
        "lab: namespace {} (ip netns exec {} ...), bridge {} with 10.77.0.1/24 and fd77::1/64; accelerator {:?}; image {}",
        lab.name(),
        lab.name(),
        lab.bridge(),
        lab.accel(),
        lab.image().dir.display()
    );
    eprintln!("lab: booting; the guest is 10.77.0.2 / fd77::2 with rxe0 on eth0; Ctrl-A X quits");
    let guest_config = lab::GuestConfig {
        memory_mib,
        console: lab::Console::Terminal,
        ..lab::GuestConfig::default()
    };
    let guest = lab::Guest::boot(
        lab.netns(),
        lab.image(),
        lab.accel(),
        lab.run_dir(),
        0,
        &guest_config,
    )?;
    eprintln!(
        "lab: guest ready after {:.1} s",
        guest.boot_time().as_secs_f64()
    );
    let status = guest.wait_exit()?;
    drop(guest);
    drop(lab);
    eprintln!("lab: QEMU exited ({status}); namespace removed");
    Ok(())
}

//! ndkperf: bandwidth, latency and SMB Direct style workloads over rsndk
//! adapters, driven through the NDK dispatch tables exactly as a kernel
//! consumer drives an NDK provider.
//!
//! Errors (bad flags, unreachable peers, taken addresses) print one line,
//! `ndkperf: ...`, and exit with code 2; a failed verification exits
//! with 1.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

use ndkperf::error::Result;
use ndkperf::{bench, info, perf, ping, smbd, tcp, udp};
use ndkperf_cli::{Cli, Command};

/// Exit code of every error that ends a run.
const EXIT_ERROR: u8 = 2;

/// A panic is a bug of the tool: one line, no backtrace.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(ToString::to_string)
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let _ = writeln!(
            std::io::stderr(),
            "ndkperf: internal error: {}{place}",
            what.lines().next().unwrap_or("")
        );
        std::process::exit(101);
    }));
}

/// clap's multi-line error as one line.
fn one_line(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let mut parts = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("For more information") || line.starts_with("Usage:")
        {
            continue;
        }
        parts.push(line.strip_prefix("error: ").unwrap_or(line).to_owned());
    }
    parts.join(" ")
}

fn run(cli: &Cli) -> Result<ExitCode> {
    match &cli.command {
        Command::Bw(a) => perf::perf(bench::Test::Bw, &a.perf, a.depth),
        Command::Lat(a) => perf::perf(bench::Test::Lat, a, None),
        Command::Sweep(a) => perf::sweep(a),
        Command::Smbd(a) => smbd::run(a),
        Command::Tcp(a) => tcp::tcp(a),
        Command::Udp(a) => udp::udp(a),
        Command::Memcpy(a) => Ok(tcp::memcpy(a)),
        Command::Info(a) => info::run(a),
        Command::Ping(a) => ping::run(a),
    }
}

fn main() -> ExitCode {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(EXIT_ERROR)
                } else {
                    ExitCode::SUCCESS
                };
            }
            _ => {
                eprintln!("ndkperf: {}", one_line(&e));
                return ExitCode::from(EXIT_ERROR);
            }
        },
    };
    match run(&cli) {
        Ok(code) => code,
        // Ctrl-C before anything was measured (while connecting).
        Err(e) if ndkperf::interrupt::requested() => {
            eprintln!("ndkperf: {e}");
            ExitCode::from(ndkperf::interrupt::EXIT_INTERRUPTED)
        }
        Err(e) => {
            eprintln!("ndkperf: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

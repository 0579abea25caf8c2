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
use ndkperf::{bench, ndk, perf, ping, smbd, tcp, udp};
use ndkperf_cli::{Cli, Command, InfoArgs};

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

fn info(a: &InfoArgs) -> Result<ExitCode> {
    let adapter = ndk::Adapter::open(&a.config)?;
    let i = *adapter.info();
    let fields: Vec<(&str, String)> = vec![
        (
            "version",
            format!("{}.{}", i.Version.Major, i.Version.Minor),
        ),
        ("vendor_id", format!("{:#x}", i.VendorId)),
        ("device_id", format!("{:#x}", i.DeviceId)),
        ("max_registration_size", i.MaxRegistrationSize.to_string()),
        ("max_window_size", i.MaxWindowSize.to_string()),
        ("frmr_page_count", i.FRMRPageCount.to_string()),
        (
            "max_initiator_request_sge",
            i.MaxInitiatorRequestSge.to_string(),
        ),
        (
            "max_receive_request_sge",
            i.MaxReceiveRequestSge.to_string(),
        ),
        ("max_read_request_sge", i.MaxReadRequestSge.to_string()),
        ("max_transfer_length", i.MaxTransferLength.to_string()),
        ("max_inline_data_size", i.MaxInlineDataSize.to_string()),
        ("max_inbound_read_limit", i.MaxInboundReadLimit.to_string()),
        (
            "max_outbound_read_limit",
            i.MaxOutboundReadLimit.to_string(),
        ),
        (
            "max_receive_queue_depth",
            i.MaxReceiveQueueDepth.to_string(),
        ),
        (
            "max_initiator_queue_depth",
            i.MaxInitiatorQueueDepth.to_string(),
        ),
        ("max_srq_depth", i.MaxSrqDepth.to_string()),
        ("max_cq_depth", i.MaxCqDepth.to_string()),
        (
            "large_request_threshold",
            i.LargeRequestThreshold.to_string(),
        ),
        ("max_caller_data", i.MaxCallerData.to_string()),
        ("max_callee_data", i.MaxCalleeData.to_string()),
        ("adapter_flags", format!("{:#x}", i.AdapterFlags)),
        ("rdma_technology", i.RdmaTechnology.to_string()),
    ];
    if a.json {
        let map: serde_json::Map<String, serde_json::Value> = fields
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into()))
            .collect();
        println!("{}", serde_json::Value::Object(map));
    } else {
        println!("adapter {}", adapter.config());
        for (k, v) in fields {
            println!("  {k:<28} {v}");
        }
    }
    Ok(ExitCode::SUCCESS)
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
        Command::Info(a) => info(a),
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
        Err(e) => {
            eprintln!("ndkperf: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

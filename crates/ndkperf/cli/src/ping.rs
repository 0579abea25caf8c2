//! Flags of `ndkperf ping`: librdmacm's `rping` (rdma-core
//! `librdmacm/examples/rping.c`) over rsndk adapters. The short flags are
//! rping's own (`-s -c -a -I -p -C -S -v -V`), so an rping command line
//! works unchanged.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args};

use crate::TransportKind;
use crate::units::{parse_duration, parse_size};

/// rping's default port (`cb->port = htobe16(7174)` in rping.c `main`).
pub const RPING_PORT: u16 = 7174;

/// rping's default ping size (`cb->size = 64` in rping.c `main`).
pub const RPING_DEFAULT_SIZE: u32 = 64;

/// rping's smallest ping size, `RPING_MIN_BUFSIZE` = `sizeof(stringify(
/// INT_MAX)) + sizeof(RPING_MSG_FMT)`. rping.c includes no header that
/// defines `INT_MAX` (checked with gcc 12 and glibc 2.36, Debian 12's,
/// against every header rping.c and rdma-core's `rdma_cma.h`/`verbs.h`
/// pull in for C), so the macro stringifies to `"INT_MAX"`: 8 + 15 = 23,
/// not the 26 its author meant.
pub const RPING_MIN_SIZE: u32 = 23;

/// rping's largest ping size: its check is `size > RPING_BUFSIZE - 1`
/// with `RPING_BUFSIZE` 64 KiB, so 65535 (its message says 65536, which
/// it refuses).
pub const RPING_MAX_SIZE: u32 = 64 * 1024 - 1;

/// `-S`: a size with an optional unit, in rping's range.
fn parse_ping_size(text: &str) -> Result<u32, String> {
    let bytes = parse_size(text)?;
    match u32::try_from(bytes) {
        Ok(v @ RPING_MIN_SIZE..=RPING_MAX_SIZE) => Ok(v),
        _ => Err(format!(
            "invalid size {bytes} (valid range is {RPING_MIN_SIZE} to {RPING_MAX_SIZE}, as rping's)"
        )),
    }
}

/// `-C`: a count of pings, 0 for no limit (rping's default).
fn parse_ping_count(text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| format!("invalid count '{text}' (a whole number; 0 pings forever)"))
}

/// Flags of `ping`.
// Each bool is one of rping's (or the tool's) on/off flags.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("side").args(["server", "client"])))]
#[command(disable_version_flag = true)]
pub struct PingArgs {
    /// Server side (rping -s): listen, then answer one client's pings
    /// until it disconnects.
    #[arg(short = 's', long)]
    pub server: bool,
    /// Client side (rping -c): connect to --addr and ping it.
    #[arg(short = 'c', long)]
    pub client: bool,
    /// Server: the address to listen on, this machine's (default
    /// 127.0.0.1). Client: the server's address (required). Without
    /// --server/--client (both sides in this process): the server's
    /// adapter (default 127.0.0.1).
    #[arg(short = 'a', long, value_name = "IP")]
    pub addr: Option<IpAddr>,
    /// The client's own address, this machine's (rping -I). Default: for
    /// a loopback server 127.0.0.2 (or 127.0.0.1 if the server is
    /// 127.0.0.2), else the source address of the route to the server.
    #[arg(short = 'I', long, value_name = "IP")]
    pub local: Option<IpAddr>,
    /// The rdma_cm port (RDMA_PS_TCP: IB CM service ID 0x106_0000 | port).
    #[arg(short = 'p', long, default_value_t = RPING_PORT)]
    pub port: u16,
    /// Pings (client); 0 pings until the server goes away. The server
    /// accepts and ignores it, as rping's does.
    #[arg(short = 'C', long, default_value = "0", value_parser = parse_ping_count)]
    pub count: u32,
    /// Ping size in bytes, 23 to 65535 as rping's. The server's buffer is
    /// its own -S: it must be at least the client's.
    #[arg(short = 'S', long, default_value_t = RPING_DEFAULT_SIZE, value_parser = parse_ping_size)]
    pub size: u32,
    /// Print each ping's data (client: `ping data: ...`, server: `server
    /// ping data: ...`).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Validate each ping: the data written back equals the data read
    /// (client).
    #[arg(short = 'V', long)]
    pub validate: bool,
    /// udp: RoCEv2 over UDP 4791 (default); mem: both sides in this
    /// process on an in-memory fabric (no --server/--client).
    #[arg(long, value_enum)]
    pub transport: Option<TransportKind>,
    /// Path MTU in bytes the adapter offers: 256, 512, 1024, 2048 or 4096.
    #[arg(long, default_value = "4096", value_parser = crate::parse_pmtu_value)]
    pub pmtu: u32,
    /// Write every packet of this side's adapter (the client's in one
    /// process) to this pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Leave all device work to the adapter's engine thread.
    #[arg(long)]
    pub no_busy_poll: bool,
    /// Send from a socket connected to the peer (udp only).
    #[arg(long)]
    pub peer_sockets: bool,
    /// How long the client waits for the server to accept [default: 10s],
    /// and the server for a client [default: no limit, as rping's].
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// The end-of-run report as one JSON object.
    #[arg(long)]
    pub json: bool,
}
